// The Q operand and S = Q K^T of nvfp4-int8qk (both targets): int8
// fragments into mma_s8 (cuda/fp4_mma.cuh), times the block scales.  Reads
// D, MT, NT, QP, BN, IBQ, IBK.
// Q: int8 fragments from shared memory and each row's block scale.
constexpr int K8 = (D + 31) / 32;           // k32 steps
struct QOperand { u32 f[MT][K8][4]; float scale[MT][2]; };
MX_INLINE void load_q_operand(QOperand &q, const mx_kernel_args &a, const u8 *sq, u16 *, i64 q_bh, int m0) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float *qs = (const float *)ws_at(a, WS_QS) + q_bh * (q_rows(a) / IBQ);
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    const int r = warp * MT * 16 + mt * 16 + g;
#pragma unroll
    for (int ks = 0; ks < K8; ks++) {
      const u8 *row = sq + r * QP + ks * 32 + 4 * t;
      q.f[mt][ks][0] = lds32(row);
      q.f[mt][ks][1] = lds32(row + 8 * QP);
      q.f[mt][ks][2] = lds32(row + 16);
      q.f[mt][ks][3] = lds32(row + 8 * QP + 16);
    }
    q.scale[mt][0] = qs[(m0 + r) / IBQ];
    q.scale[mt][1] = qs[(m0 + r + 8) / IBQ];
  }
}
// S = (Qi8 Ki8^T) * q_scale * k_scale: integer products, exact in s32.
MX_INLINE void qk_product(float (&s)[MT][NT][4], const QOperand &q, const Slot &sl, const u16 *,
                          const mx_kernel_args &a, i64 kv_bh, int tile) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float *ks = (const float *)ws_at(a, WS_KS) + kv_bh * (k_rows(a) / IBK);
#pragma unroll
  for (int nt = 0; nt < NT; nt++) {
    int acc[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0;
#pragma unroll
    for (int k8 = 0; k8 < K8; k8++) {
      const u8 *key = sl.kc + (nt * 8 + g) * QP + k8 * 32 + 4 * t;
      const u32 b0 = lds32(key), b1 = lds32(key + 16);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) mma_s8(acc[mt], q.f[mt][k8], b0, b1);
    }
    const float kscale = ks[(tile * BN + nt * 8) / IBK];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int e = 0; e < 4; e++) s[mt][nt][e] = (float)acc[mt][e] * q.scale[mt][e / 2] * kscale;
  }
}
// The kernel's loop names dequant_rows under a false DEQUANT_QK.
MX_INLINE void dequant_rows(u16 *, const u8 *, const u8 *, int) {}
