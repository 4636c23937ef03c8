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

// A block of the grid kernels (cuda/fwd_wgmma.cuh, fwd_wgmma_pingpong.cuh):
// where its tiles and barriers sit in shared memory, which query rows, head
// and keys it owns, and the copies that fill its ring.  grid_block_start
// also initialises the ring's barriers and lets the block see them.  Reads
// SM_Q, SM_K, SM_V, SM_BAR and CAUSAL besides the constants above.
struct GridBlock {
  u32 base, sQ, sK, sV, bar_q;
  int warp;                  // from lane 0: a uniform branch (grid_block_start says why)
  int head, batch, kv_head, m0;
  int n_tiles;               // all keys, or (causal) up to the last row's diagonal
  const void *map_q, *map_k, *map_v;

  MX_INLINE u32 bar_k(int s) const { return bar_q + 8 * (1 + s); }
  MX_INLINE u32 bar_v(int s) const { return bar_q + 8 * (1 + STAGES + s); }
  MX_INLINE u32 bar_empty(int s) const { return bar_q + 8 * (1 + 2 * STAGES + s); }
  // K and V tile `tile` into ring slot tile % STAGES: one box per panel.
  MX_INLINE void load_kv(int tile) const {
    const int s = tile % STAGES;
    load_kv_tile(bar_k(s), bar_v(s), sK, sV, map_k, map_v, tile, s, kv_head, batch);
  }
  MX_INLINE void load_q() const { load_q_tile(bar_q, sQ, map_q, m0, head, batch); }
};

// Grid (nqp / BM, heads_q, batch).  Causal grids run the heaviest query blocks first.
MX_INLINE GridBlock grid_block_start(u8 *smem, const mx_kernel_args &a) {
  GridBlock b;
  // Swizzled tiles need 1024-byte alignment (the 128B pattern spans 8 rows).
  b.base = (smem_addr(smem) + 1023u) & ~1023u;
  b.sQ = b.base + SM_Q, b.sK = b.base + SM_K, b.sV = b.base + SM_V;
  b.bar_q = b.base + SM_BAR;
  // Broadcast from lane 0 so that the compiler knows it is the same in every
  // lane: a branch on it is then a uniform branch, which the warps that fail
  // it jump over whole (the copies' issue).
  b.warp = __shfl_sync(0xffffffffu, threadIdx.x / 32, 0);
  const int m_block = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  b.head = blockIdx.y, b.batch = blockIdx.z, b.kv_head = b.head / a.gqa;
  b.m0 = m_block * BM;
  b.map_q = &a.tmap[0], b.map_k = &a.tmap[1], b.map_v = &a.tmap[2];
  b.n_tiles = key_tiles(b.m0, a);
  init_ring(b.bar_q, b.map_q, b.map_k, b.map_v);
  __syncthreads();
  return b;
}
