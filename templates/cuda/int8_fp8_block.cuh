// A block of every int8-fp8 wgmma schedule (cuda/fwd_int8_fp8_wgmma.cuh,
// fwd_int8_fp8_ring.cuh, fwd_int8_fp8_ring3.cuh): where its tiles and
// barriers sit in shared memory, which rows, head and keys it owns, and the
// TMA copies that fill its ring.  block_start also writes rowsum_mma's B
// tile, initializes the barriers and waits for the quantization kernels, so
// a schedule begins at its own warp roles.  cuda/tma_block.cuh's block
// with int8-fp8's copies; reads what that does and BN, THREADS, V_SLOTS,
// WQK, PANELS_QK, Q_BYTES, K_BYTES, V_BYTES, SM_ONES, ONES_BYTES and
// ROWSUM_MMA.
struct Block : TmaBlock {
  int nqp, nkp;
  i64 qh, kh;                // (batch, head) and (batch, KV head) as one index

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
  place_block(b, smem, a);              // cuda/tma_block.cuh
  b.nqp = pad_q(a.seq_q), b.nkp = pad_k(a.seq_k);
  b.qh = (i64)b.batch * a.heads_q + b.head, b.kh = (i64)b.batch * a.heads_kv + b.kv_head;
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
  init_ring(b);
  __syncthreads();
  wait_for_previous_kernel();          // the quant kernels' Q8, K8, V^T and scales (a "pdl" launch)
  return b;
}

// A consumer warp's own: its warpgroup, its 16 rows, their Q scale pair
// (per-thread groups, cuda/quant_int8.cuh), its KV head's K scales, and the
// descriptors of its warpgroup's 64 Q rows and of ring slot 0's K8 and V^T;
// a k-step or a slot only adds to the start address (the low 14 bits).
struct Consumer {
  int wg, warp_row0;         // a 16-row group: one Q scale
  float qscale;
  const float *ks;
  u64 desc_q, desc_k, desc_v, desc_ones;   // desc_ones: rowsum_mma's B
};

MX_INLINE Consumer consumer_start(const Block &b, const mx_kernel_args &a) {
  Consumer c;
  c.wg = b.warp / 4 - (PRODUCER ? 1 : 0);
  c.warp_row0 = b.m0 + c.wg * 64 + (b.warp % 4) * 16;
  c.qscale = ((const float *)ws_at(a, WS_QSCALE))[b.qh * qscales_a_head(b.nqp) + (c.warp_row0 / 2 + threadIdx.x % 32 / 4)];
  c.ks = (const float *)ws_at(a, WS_KSCALE) + b.kh * kscales_a_head(b.nkp);
  c.desc_q = smem_desc(b.sQ + c.wg * 64 * WQK, 8 * WQK, SWZ_QK);
  c.desc_k = smem_desc(b.sK, 8 * WQK, SWZ_QK);
  c.desc_v = smem_desc(b.sV, 8 * BN, SWZ_V);
  c.desc_ones = smem_desc(b.base + SM_ONES, 8 * BN, SWZ_V);
  return c;
}
