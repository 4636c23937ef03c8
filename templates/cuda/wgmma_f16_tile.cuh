// The bf16/fp16 operands' pieces of a consumer warpgroup's key tile
// (families/f16_wgmma.lua): S = Q K^T and O += P V as one commit group each,
// and P packed from S's accumulators into P V's A operand.  Reads the
// kernel's BM, BN, KD, NT, DT, W, ROW_BYTES and MMA_BF16 (the FP4 wgmma
// kernel's too, whose operands are bf16); the products are
// blocks/wgmma_f16.lua's wgmma_qk and wgmma_pv.

// Two floats in the product's operand type, `lo` in the low half.
MX_INLINE u32 pack_in(float lo, float hi) {
  if constexpr (MMA_BF16) return pack_bf16(lo, hi);
  else return pack_f16(lo, hi);
}

// Descriptors of consumer warpgroup wg's 64 Q rows and of ring slot 0's K
// and V (K-major Q and K; V MN-major: LBO is one panel of BN key rows); a
// k-step or a slot only adds to the start address (the low 14 bits).
struct Descs { u64 q, k, v; };
MX_INLINE Descs ring_descs(u32 sQ, u32 sK, u32 sV, int wg) {
  return { smem_desc(sQ + wg * 64 * ROW_BYTES, 16, 8 * ROW_BYTES), smem_desc(sK, 16, 8 * ROW_BYTES),
           smem_desc(sV, BN * ROW_BYTES, 8 * ROW_BYTES) };
}

// A consumer warp: its warpgroup (counted after the producer's, where there
// is one), its block's first row of the warp's 16 (the unit's m0 plus it, in
// the persistent kernels) and the ring's descriptors for its rows.
struct ConsumerWarp { int wg, row_in_block; Descs d; };
MX_INLINE ConsumerWarp consumer_warp(const TmaBlock &b) {
  const int wg = b.warp / 4 - (PRODUCER ? 1 : 0);
  return { wg, wg * 64 + (b.warp % 4) * 16, ring_descs(b.sQ, b.sK, b.sV, wg) };
}

// S = Q K^T for the K tile `desc_k` points at: D_PAD/16 k-steps, one commit group.
MX_INLINE void issue_qk(float (&s)[1][NT][4], u64 desc_q, u64 desc_k) {
  reg_fence(s);
  wgmma_fence();
#pragma unroll
  for (int kd = 0; kd < KD; kd++) {
    const int panel = kd / (W / 16), step = (kd % (W / 16)) * 32;
    wgmma_qk(s, desc_q + (panel * BM * ROW_BYTES + step) / 16, desc_k + (panel * BN * ROW_BYTES + step) / 16, kd > 0);
  }
  wgmma_commit();
}

// O += P V for the V tile `desc_v` points at: BN/16 k-steps, one commit group.
MX_INLINE void issue_pv(float (&o)[1][DT][4], const u32 (&pa)[BN / 16][4], u64 desc_v) {
  reg_fence(o);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BN / 16; kk++) wgmma_pv(o, pa[kk], desc_v + kk * 16 * ROW_BYTES / 16);
  wgmma_commit();
}

// P to the A operand in registers: k16 step kk covers S chunks 2kk, 2kk+1.
MX_INLINE void pack_p(u32 (&pa)[BN / 16][4], const float (&s)[1][NT][4]) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; kk++) {
    pa[kk][0] = pack_in(s[0][2 * kk][0], s[0][2 * kk][1]);
    pa[kk][1] = pack_in(s[0][2 * kk][2], s[0][2 * kk][3]);
    pa[kk][2] = pack_in(s[0][2 * kk + 1][0], s[0][2 * kk + 1][1]);
    pa[kk][3] = pack_in(s[0][2 * kk + 1][2], s[0][2 * kk + 1][3]);
#pragma unroll
    for (int i = 0; i < 4; i++) reg_fence(pa[kk][i]);
  }
}
