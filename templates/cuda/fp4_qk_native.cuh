// The Q operand and S = Q K^T on sm_120a: packed E2M1 fragments and scale
// registers into mma_fp4 (cuda/fp4_mma.cuh).  Reads MT, DP, NT, QP, QSB, BM, PB.
// Q: packed E2M1 fragments and scale registers straight from shared memory.
struct QOperand { u32 f[MT][DP / 64][4], sc[MT][DP / 64]; };
MX_INLINE u32 scale_reg(const u8 *row_scales, int kc) {   // the scales of one k64 chunk
  return PB == 16 ? lds32(row_scales + kc * 4) : lds16(row_scales + kc * 2);
}
MX_INLINE void load_q_operand(QOperand &q, const mx_kernel_args &, const u8 *sq, u16 *, i64, int) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int kc = 0; kc < DP / 64; kc++) {
      const u8 *row = sq + (warp * MT * 16 + mt * 16 + g) * QP + kc * 32 + 4 * t;
      q.f[mt][kc][0] = lds32(row);
      q.f[mt][kc][1] = lds32(row + 8 * QP);
      q.f[mt][kc][2] = lds32(row + 16);
      q.f[mt][kc][3] = lds32(row + 8 * QP + 16);
      q.sc[mt][kc] = scale_reg(sq + BM * QP + (warp * MT * 16 + mt * 16 + g + 8 * (t & 1)) * QSB, kc);
    }
}
MX_INLINE void qk_product(float (&s)[MT][NT][4], const QOperand &q, const Slot &sl, const u16 *,
                          const mx_kernel_args &, i64, int) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kc = 0; kc < DP / 64; kc++)
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
      const u8 *key = sl.kc + (nt * 8 + g) * QP + kc * 32 + 4 * t;
      const u32 sb = scale_reg(sl.ks + (nt * 8 + g) * QSB, kc);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) mma_fp4(s[mt][nt], q.f[mt][kc], lds32(key), lds32(key + 16), q.sc[mt][kc], sb);
    }
}
// The kernel's loop names dequant_rows under a false DEQUANT_QK.
MX_INLINE void dequant_rows(u16 *, const u8 *, const u8 *, int) {}
