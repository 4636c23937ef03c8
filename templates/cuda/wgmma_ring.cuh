// The TMA ring's barriers (f16's wgmma kernels).  The barriers are 8 bytes
// each from bar_q: Q's, then full_k[STAGES], full_v[STAGES] and
// empty[STAGES] (the kernels' bar_k, bar_v and bar_empty).  Reads the
// kernel's STAGES and CONSUMERS.

// Thread 0 initialises them: Q's and each slot's full K and V wait for one
// arrival (the copies' issuer, with their bytes), each slot's empty barrier
// for every consumer thread; and prefetches the tensor maps.  The caller's
// __syncthreads() makes them visible to the block.
MX_INLINE void init_ring(u32 bar_q, const void *map_q, const void *map_k, const void *map_v) {
  if (threadIdx.x == 0) {
    tma_prefetch_map(map_q); tma_prefetch_map(map_k); tma_prefetch_map(map_v);
    mbar_init(bar_q, 1);
    for (int s = 0; s < STAGES; s++) {
      mbar_init(bar_q + 8 * (1 + s), 1);
      mbar_init(bar_q + 8 * (1 + STAGES + s), 1);
      mbar_init(bar_q + 8 * (1 + 2 * STAGES + s), CONSUMERS * 128);   // every consumer thread releases the slot
    }
    mbar_init_fence();
  }
}

