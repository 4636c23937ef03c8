// The copies into the TMA ring (cuda/tma_block.cuh) of f16's wgmma kernels
// and the FP4 one: bf16/fp16 tiles in swizzle panels of W columns.  Reads
// the kernel's STAGES, BM, BN, W, ROW_BYTES, PANELS, Q_BYTES and KV_BYTES;
// the copies are cuda/tma_mbarrier.cuh's.

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

// A block of f16's wgmma kernels and the FP4 wgmma kernel:
// cuda/tma_block.cuh's block with the copies that fill its ring.
struct GridBlock : TmaBlock {
  // K and V tile `tile` into ring slot `s`: one box per panel.
  MX_INLINE void load_kv_into(int tile, int s) const {
    load_kv_tile(bar_k(s), bar_v(s), sK, sV, map_k, map_v, tile, s, kv_head, batch);
  }
  // The grid kernels' ring: tile t always in slot t % STAGES.
  MX_INLINE void load_kv(int tile) const { load_kv_into(tile, tile % STAGES); }
  MX_INLINE void load_q() const { load_q_tile(bar_q, sQ, map_q, m0, head, batch); }
};

// The block's unit, then the ring's barriers, which the block then sees.
MX_INLINE GridBlock grid_block_start(u8 *smem, const mx_kernel_args &a) {
  GridBlock b;
  place_block(b, smem, a);
  b.n_tiles = key_tiles(b.m0, a);
  init_ring(b);
  __syncthreads();
  return b;
}
