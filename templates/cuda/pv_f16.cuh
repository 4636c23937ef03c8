// O += P V with P and V in fp16 (mma.sync m16n8k16 f16, f32 accumulate), the
// int8-f16 family's second product.  V comes from the caller's tensor through
// the cp.async ring as in cuda/fwd_mma.cuh; bf16 V (IN_BF16) is converted to
// fp16 in registers after ldmatrix (bf16 -> f32 is exact, f32 -> f16 rounds to
// nearest even, as the reference's MX_V_F16 does), so the ring and its sync
// stay as they are.  Reads IN_BF16 (blocks/quant_int8.lua defines it) and the
// kernel's MT, NT, DT, BN, D_PAD, RS.

// vt: the V tile, BN keys x D_PAD halves (row stride RS).
MX_INLINE void pv_tile(float (&o)[MT][DT][4], const float (&s)[MT][NT][4], const u16 *vt) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < BN / 16; kk++) {
    u32 pa[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      pa[mt][0] = pack_f16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      pa[mt][1] = pack_f16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      pa[mt][2] = pack_f16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      pa[mt][3] = pack_f16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
#pragma unroll
    for (int dd = 0; dd < D_PAD / 16; dd++) {
      u32 b[4];
      ldsm_x4_trans(b, smem_addr(vt + (kk * 16 + lane % 8 + ((lane / 8) % 2) * 8) * RS + dd * 16 + (lane / 16) * 8));
      if constexpr (IN_BF16)
#pragma unroll
        for (int i = 0; i < 4; i++) b[i] = pack_f16(__int_as_float((int)(b[i] << 16)), __int_as_float((int)(b[i] & 0xffff0000u)));
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        mma_16816_x2(o[mt][2 * dd], o[mt][2 * dd + 1], pa[mt], b);
      }
    }
  }
}
MX_INLINE void pv_finish(float (&)[MT][DT][4], const float *) {}

// V stays in fp16 here: the quant kernel's V step (FP8 V's transpose) is empty.
MX_INLINE void quantize_v_transposed(const u16 *, i64, int, int, const float *, u8 *, int) {}
