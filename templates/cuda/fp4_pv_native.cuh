// O += s1 * (P^ s2) V^ per tile and 8 channels on sm_120a: packed P^ and
// V^T fragments and their scales into mma_fp4 (cuda/fp4_p_native.cuh,
// cuda/fp4_mma.cuh); s1 is folded in after the MMA.  Reads MT, NT, BN, DV,
// DT, VP, PB.
struct POperand { u32 f[MT][BN / 64][4], sc[MT][BN / 64]; };
MX_INLINE void quantize_p_operand(float (&s)[MT][NT][4], POperand &p, float (&s1)[MT][2]) { quantize_p(s, p.f, p.sc, s1); }
MX_INLINE void dequantize_v(u16 *, const Slot &) {}
MX_INLINE void pv_product(float (&o)[MT][DT][4], const POperand &p, const float (&s1)[MT][2], const Slot &sl,
                          const u16 *) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int dt = 0; dt < DT; dt++) {
    const int c = dt * 8 + g;                  // channel = column n of B
    float acc[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.f;
#pragma unroll
    for (int kc = 0; kc < BN / 64; kc++) {
      const u8 *row = sl.vc + c * VP + kc * 32 + 4 * t;
      u32 sb = 0;                              // V blocks kc*64/PB.. of channel c, read by lane 4g only
#pragma unroll
      for (int i = 0; i < 64 / PB; i++) sb |= (u32)sl.vs[(kc * (64 / PB) + i) * DV + c] << (8 * i);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) mma_fp4(acc[mt], p.f[mt][kc], lds32(row), lds32(row + 16), p.sc[mt][kc], sb);
    }
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int e = 0; e < 4; e++) o[mt][dt][e] = fmaf(acc[mt][e], s1[mt][e / 2], o[mt][dt][e]);
  }
}
