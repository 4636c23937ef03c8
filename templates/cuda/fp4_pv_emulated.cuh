// O += s1 * (P^ s2) V^ per tile and 16 channels, the emulation: V^T
// dequantized to bf16 in shared memory, P^ s2 as bf16 fragments
// (cuda/fp4_p_emulated.cuh), mma.sync m16n8k16; s1 is folded in after the
// MMA (blocks/fp4_family.lua says why).  Reads MT, NT, BN, DV, DT, RSV, VP, PB.
typedef u32 POperand[MT][BN / 16][4];
MX_INLINE void quantize_p_operand(float (&s)[MT][NT][4], POperand &pa, float (&s1)[MT][2]) { quantize_p(s, pa, s1); }
// V^T tile -> bf16 [DV][RSV] (all threads); then ldmatrix as for K.
MX_INLINE void dequantize_v(u16 *dst, const Slot &sl) {
  for (int u = threadIdx.x; u < DV * (BN / 8); u += THREADS) {
    const int c = u / (BN / 8), k8 = u % (BN / 8);
    dequant8(dst + c * RSV + k8 * 8, lds32(sl.vc + c * VP + k8 * 4), scale_value(sl.vs[(k8 * 8 / PB) * DV + c]));
  }
}
MX_INLINE void pv_product(float (&o)[MT][DT][4], const POperand &pa, const float (&s1)[MT][2], const Slot &,
                          const u16 *vt) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int dd = 0; dd < DV / 16; dd++) {
    float acc[MT][2][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int j = 0; j < 2; j++) acc[mt][j][0] = acc[mt][j][1] = acc[mt][j][2] = acc[mt][j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      u32 b[4];
      ldsm_x4(b, smem_addr(vt + (dd * 16 + lane % 8 + (lane / 16) * 8) * RSV + kk * 16 + ((lane / 8) % 2) * 8));
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        mma_16816_x2(acc[mt][0], acc[mt][1], pa[mt][kk], b);
      }
    }
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int j = 0; j < 2; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) o[mt][2 * dd + j][e] = fmaf(acc[mt][j][e], s1[mt][e / 2], o[mt][2 * dd + j][e]);
  }
}
