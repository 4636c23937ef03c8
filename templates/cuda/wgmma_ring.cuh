// The TMA ring of f16's wgmma kernels: its barriers and the copies into it.
// The barriers are 8 bytes each from bar_q: Q's, then full_k[STAGES],
// full_v[STAGES] and empty[STAGES] (the kernels' bar_k, bar_v and
// bar_empty).  Reads the kernel's STAGES, CONSUMERS, BM, BN, W, ROW_BYTES,
// PANELS, Q_BYTES and KV_BYTES; the copies are cuda/tma_mbarrier.cuh's.

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


// K and V tile `tile` into ring slot s, one box per panel, each completing
// on the slot's full barrier (bar_k, bar_v) with the bytes it expects.
MX_INLINE void load_kv_tile(u32 bar_k, u32 bar_v, u32 sK, u32 sV, const void *map_k, const void *map_v, int tile, int s,
                            int kv_head, int batch) {
  mbar_expect_tx(bar_k, KV_BYTES);
#pragma unroll
  for (int p = 0; p < PANELS; p++)
    tma_load_4d(sK + s * KV_BYTES + p * BN * ROW_BYTES, map_k, p * W, tile * BN, kv_head, batch, bar_k);
  mbar_expect_tx(bar_v, KV_BYTES);
#pragma unroll
  for (int p = 0; p < PANELS; p++)
    tma_load_4d(sV + s * KV_BYTES + p * BN * ROW_BYTES, map_v, p * W, tile * BN, kv_head, batch, bar_v);
}

// The block's BM query rows from m0 into Q's buffer, completing on bar_q.
MX_INLINE void load_q_tile(u32 bar_q, u32 sQ, const void *map_q, int m0, int head, int batch) {
  mbar_expect_tx(bar_q, Q_BYTES);
#pragma unroll
  for (int p = 0; p < PANELS; p++) tma_load_4d(sQ + p * BM * ROW_BYTES, map_q, p * W, m0, head, batch, bar_q);
}
