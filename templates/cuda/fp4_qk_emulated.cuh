// The Q operand and S = Q K^T of the FP4 emulation (nvfp4, mxfp4 off
// sm_120a): both dequantized to bf16 in shared memory, then ldmatrix and
// mma.sync m16n8k16.  Reads MT, KD, RS, QP, QSB, BM, BN, PB, Q_RESIDENT.
// Q: packed tile -> bf16 rows in shared (all threads) -> ldmatrix fragments.
struct QOperand { u32 f[MT][Q_RESIDENT ? KD : 1][4]; const u16 *tile; };
MX_INLINE void dequant_rows(u16 *dst, const u8 *codes, const u8 *scales, int rows) {
  for (int u = threadIdx.x; u < rows * KD * 2; u += THREADS) {
    const int r = u / (KD * 2), c8 = u % (KD * 2);
    dequant8(dst + r * RS + c8 * 8, lds32(codes + r * QP + c8 * 4), scale_value(scales[r * QSB + c8 * 8 / PB]));
  }
}
MX_INLINE void load_q_operand(QOperand &q, const mx_kernel_args &a, const u8 *sq, u16 *sq_bf16, i64 q_bh, int m0) {
  dequant_rows(sq_bf16, sq, sq + BM * QP, BM);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  q.tile = sq_bf16 + warp * MT * 16 * RS;
  if (Q_RESIDENT)
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int kd = 0; kd < KD; kd++)
        ldsm_x4(q.f[mt][Q_RESIDENT ? kd : 0], smem_addr(q.tile + (mt * 16 + lane % 16) * RS + kd * 16 + (lane / 16) * 8));
}
// K: the tile's bf16 copy is made by dequantize_kv (all threads) beforehand.
MX_INLINE void qk_product(float (&s)[MT][NT][4], const QOperand &q, const Slot &, const u16 *kt,
                          const mx_kernel_args &, i64, int) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kd = 0; kd < KD; kd++) {
    u32 qf[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      if (Q_RESIDENT) for (int i = 0; i < 4; i++) qf[mt][i] = q.f[mt][Q_RESIDENT ? kd : 0][i];
      else ldsm_x4(qf[mt], smem_addr(q.tile + (mt * 16 + lane % 16) * RS + kd * 16 + (lane / 16) * 8));
    }
#pragma unroll
    for (int nn = 0; nn < BN / 16; nn++) {
      u32 b[4];
      ldsm_x4(b, smem_addr(kt + (nn * 16 + lane % 8 + (lane / 16) * 8) * RS + kd * 16 + ((lane / 8) % 2) * 8));
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        mma_16816_x2(s[mt][2 * nn], s[mt][2 * nn + 1], qf[mt], b);
      }
    }
  }
}
