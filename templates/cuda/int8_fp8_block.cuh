// A block of every int8-fp8 wgmma schedule (cuda/fwd_int8_fp8_wgmma.cuh,
// fwd_int8_fp8_ring.cuh, fwd_int8_fp8_ring3.cuh): where its tiles and
// barriers sit in shared memory, which rows, head and keys it owns, and the
// TMA copies that fill its ring.  block_start also writes rowsum_mma's B
// tile, initializes the barriers and waits for the quantization kernels, so
// a schedule begins at its own warp roles.  Reads BM, BN, STAGES, CONSUMERS,
// THREADS, V_SLOTS, WQK, PANELS_QK, Q_BYTES, K_BYTES, V_BYTES, SM_*, ONES_BYTES,
// ROWSUM_MMA and CAUSAL.
struct Block {
  u32 base, sQ, sK, sV;
  u32 bar_q;                 // then full_k[STAGES], full_v[STAGES], empty[STAGES]
  int warp;                  // from lane 0: a uniform branch (block_start says why)
  int head, batch, kv_head, m0, nqp, nkp;
  i64 qh, kh;                // (batch, head) and (batch, KV head) as one index
  int n_tiles;               // all keys, or (causal) up to the last row's diagonal
  const void *map_q, *map_k, *map_v;

  MX_INLINE u32 bar_k(int s) const { return bar_q + 8 * (1 + s); }
  MX_INLINE u32 bar_v(int s) const { return bar_q + 8 * (1 + STAGES + s); }
  MX_INLINE u32 bar_empty(int s) const { return bar_q + 8 * (1 + 2 * STAGES + s); }
  // V^T of tile `tile` into V slot tile % V_SLOTS: one box (V_TERMS * DV
  // channel rows x BN keys).  The workspace is padded to whole tiles, so
  // every box is in bounds and brings all its bytes.
  MX_INLINE void load_v(int tile) const {
    const int s = tile % V_SLOTS;
    mbar_expect_tx(bar_v(s), V_BYTES);
    tma_load_4d(sV + s * V_BYTES, map_v, tile * BN, 0, kv_head, batch, bar_v(s));
  }
  // K8 of tile `tile` into ring slot tile % STAGES, a box per K panel, and
  // its V^T into the same slot when V has one per stage.
  MX_INLINE void load_kv(int tile) const {
    const int s = tile % STAGES;
    mbar_expect_tx(bar_k(s), K_BYTES);
#pragma unroll
    for (int p = 0; p < PANELS_QK; p++)
      tma_load_4d(sK + s * K_BYTES + p * BN * WQK, map_k, p * WQK, tile * BN, kv_head, batch, bar_k(s));
    if (V_SLOTS == STAGES) load_v(tile);
  }
  MX_INLINE void load_q() const {
    mbar_expect_tx(bar_q, Q_BYTES);
#pragma unroll
    for (int p = 0; p < PANELS_QK; p++) tma_load_4d(sQ + p * BM * WQK, map_q, p * WQK, m0, head, batch, bar_q);
  }
};

// Grid (nqp / BM, heads_q, batch).  Causal grids run the heaviest query blocks first.
MX_INLINE Block block_start(u8 *smem, const mx_kernel_args &a) {
  Block b;
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
  b.nqp = pad_q(a.seq_q), b.nkp = pad_k(a.seq_k);
  b.qh = (i64)b.batch * a.heads_q + b.head, b.kh = (i64)b.batch * a.heads_kv + b.kv_head;
  b.map_q = &a.tmap[0], b.map_k = &a.tmap[1], b.map_v = &a.tmap[2];
  b.n_tiles = key_tiles(b.m0, a);
  // rowsum_mma's B tile (ONES_BYTES in the header says why row 0 only):
  // written here by the generic proxy, read by wgmma through the async one,
  // so each writer fences before the block barrier below.
  if (ROWSUM_MMA) {
    const u32 ones = b.base + SM_ONES;
    for (int i = threadIdx.x; i < ONES_BYTES / 16; i += THREADS)
      asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};" :: "r"(ones + 16 * i), "r"(16 * i < BN ? 0x38383838u : 0u)
                   : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  if (threadIdx.x == 0) {
    tma_prefetch_map(b.map_q); tma_prefetch_map(b.map_k); tma_prefetch_map(b.map_v);
    mbar_init(b.bar_q, 1);
    for (int s = 0; s < STAGES; s++) {
      mbar_init(b.bar_k(s), 1);
      mbar_init(b.bar_v(s), 1);
      mbar_init(b.bar_empty(s), CONSUMERS * 128);   // every consumer thread releases the slot
    }
    mbar_init_fence();
  }
  __syncthreads();
  wait_for_previous_kernel();          // the quant kernels' Q8, K8, V^T and scales (a "pdl" launch)
  return b;
}
