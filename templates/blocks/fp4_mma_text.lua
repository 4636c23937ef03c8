-- The CUDA text of the FP4 families' mma.sync kernel (variant=mma: the
-- emulation on sm_80..sm_90a and the native block-scaled forms on sm_120a),
-- kept apart from blocks/fp4_family.lua, which decides what goes in it.
-- Pieces: COPY (tile loads), the Q operand and S = Q K^T per target and QK
-- mode (QK_FP4_EMULATED, QK_FP4_NATIVE, QK_INT8), O += s1 * (P^ s2) V^
-- (PV_EMULATED, PV_NATIVE) and the kernel (KERNEL, ${NAME} to fill).
local T = {}

-- Tile copies: packed rows of the workspace into shared memory, 16-byte
-- cp.async chunks (every size and offset here is a multiple of 16).
T.COPY = [[
// rows x bytes from global (row pitch gp) to shared (row pitch sp).
MX_INLINE void copy_rows(u8 *dst, int sp, const u8 *src, i64 gp, int rows, int bytes) {
  const int per_row = bytes / 16;
  for (int c = threadIdx.x; c < rows * per_row; c += THREADS) {
    const int r = c / per_row, j = c % per_row;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(dst + r * sp + j * 16)), "l"(src + r * gp + j * 16));
  }
}
MX_INLINE void st_shared_v4(void *p, u32 x, u32 y, u32 z, u32 w) {
  asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};" :: "r"(smem_addr(p)), "r"(x), "r"(y), "r"(z), "r"(w));
}
// Eight FP4 codes (one u32, lowest nibble first) times their scale, as bf16.
MX_INLINE void dequant8(u16 *dst, u32 c, float s) {
  st_shared_v4(dst, pack_bf16(e2m1_value(c) * s, e2m1_value(c >> 4) * s),
               pack_bf16(e2m1_value(c >> 8) * s, e2m1_value(c >> 12) * s),
               pack_bf16(e2m1_value(c >> 16) * s, e2m1_value(c >> 20) * s),
               pack_bf16(e2m1_value(c >> 24) * s, e2m1_value(c >> 28) * s));
}
// Shared slot of one key tile: [K codes][K scales][V^T codes][V scales].
struct Slot { u8 *kc, *ks, *vc, *vs; };
MX_INLINE Slot slot_at(u8 *base) {
  Slot s;
  s.kc = base; s.ks = s.kc + BN * QP; s.vc = s.ks + BN * QSB; s.vs = s.vc + DV * VP;
  return s;
}
MX_INLINE void load_kv_tile(const mx_kernel_args &a, u8 *base, i64 kv_bh, int nk, int tile) {
  const Slot s = slot_at(base);
  copy_rows(s.kc, QP, ws_at(a, WS_KC) + (kv_bh * nk + (i64)tile * BN) * QCB, QCB, BN, QCB);
  if (QSB) copy_rows(s.ks, 0, ws_at(a, WS_KS) + (kv_bh * nk + (i64)tile * BN) * QSB, 0, 1, BN * QSB);
  copy_rows(s.vc, VP, ws_at(a, WS_VC) + kv_bh * DV * (nk / 2) + (i64)tile * (BN / 2), nk / 2, DV, BN / 2);
  copy_rows(s.vs, 0, ws_at(a, WS_VS) + (kv_bh * (nk / PB) + (i64)tile * (BN / PB)) * DV, 0, 1, (BN / PB) * DV);
}
]]

-- The Q operand, the score product S = Q K^T, per QK mode and target.
T.QK_FP4_EMULATED = [[
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
        mma_16816(s[mt][2 * nn], qf[mt], b[0], b[1]);
        mma_16816(s[mt][2 * nn + 1], qf[mt], b[2], b[3]);
      }
    }
  }
}
]]

T.QK_FP4_NATIVE = [[
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
]]

T.QK_INT8 = [[
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
]]

-- O += s1 * (P^ s2) V^ per tile, per 16 (emulated) or 8 (native) channels.
T.PV_EMULATED = [[
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
        mma_16816(acc[mt][0], pa[mt][kk], b[0], b[1]);
        mma_16816(acc[mt][1], pa[mt][kk], b[2], b[3]);
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
]]

T.PV_NATIVE = [[
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
]]

T.KERNEL = [[
// Q, K, V quantized in the workspace by the kernels above; O and the LSE as
// the f16 family writes them.  Grid: (query blocks, heads_q, batch).
extern "C" __global__ void __launch_bounds__(THREADS) ${NAME}(const mx_kernel_args a) {
  extern __shared__ __align__(16) u8 smem[];
  u8 *sq = smem, *ring = sq + Q_TILE_BYTES;
  u16 *sq_bf16 = (u16 *)(ring + STAGES * SLOT_BYTES);            // persistent Q copy (D > 128) ...
  u16 *scratch = (u16 *)((u8 *)sq_bf16 + SQ_BYTES);              // ... and the dequantized K/V tile
  if (Q_RESIDENT) sq_bf16 = scratch;                             // Q's copy only lives until the loop
  u16 *kt = scratch, *vt = scratch + (DEQUANT_QK ? BN * RS : 0);
  const int warp = threadIdx.x / 32;
  const int m_block = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z, kv_head = head / a.gqa;
  const int m0 = m_block * BM, warp_row0 = m0 + warp * MT * 16, nq = q_rows(a), nk = k_rows(a);
  const i64 q_bh = (i64)batch * a.heads_q + head, kv_bh = (i64)batch * a.heads_kv + kv_head;

  const int n_tiles = key_tiles(m0, a);   // all keys, or (causal) up to the last row's diagonal

  // Q: packed tile -> shared -> operand, once.
  copy_rows(sq, QP, ws_at(a, WS_QC) + (q_bh * nq + m0) * QCB, QCB, BM, QCB);
  if (QSB) copy_rows(sq + BM * QP, 0, ws_at(a, WS_QS) + (q_bh * nq + m0) * QSB, 0, 1, BM * QSB);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  QOperand qop;
  load_q_operand(qop, a, sq, sq_bf16, q_bh, m0);

  float o[MT][DT][4], row_max[MT][2], row_sum[MT][2];
  init_accumulators(o, row_max, row_sum);

#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < n_tiles) load_kv_tile(a, ring + s * SLOT_BYTES, kv_bh, nk, s);
    cp_async_commit();
  }

  for (int t = 0; t < n_tiles; t++) {
    if (t + STAGES - 1 < n_tiles) load_kv_tile(a, ring + ((t + STAGES - 1) % STAGES) * SLOT_BYTES, kv_bh, nk, t + STAGES - 1);
    cp_async_commit();                 // possibly empty: keeps the group count uniform
    cp_async_wait<STAGES - 1>();       // tile t has landed
    __syncthreads();                   // ... for every thread; the previous tile's readers are done
    const Slot sl = slot_at(ring + (t % STAGES) * SLOT_BYTES);

    // Emulation: dequantize the tile once for the whole block.
    if (DEQUANT_QK) dequant_rows(kt, sl.kc, sl.ks, BN);
    dequantize_v(vt, sl);
    if (!NATIVE) __syncthreads();

    // S = Q K^T
    float s[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int nt = 0; nt < NT; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
    qk_product(s, qop, sl, kt, a, kv_bh, t);

    // Mask the tile's tail and, under causal, keys past the diagonal.
    mask_tile(s, t, warp_row0, a);

    // Row max, P~ = exp2(S - max), l += sum P~ (unquantized), O *= alpha.
    // The scores are scaled to base 2 first, so the row max is one of them
    // exactly and its P~ is exactly 1: with the fused form exp2(s*c - max)
    // the rounding of s*c leaves P~ a hair under 1 at times, which moves an
    // MXFP4 block's power-of-two scale down by 2x (floor(log2 amax)) and
    // saturates the block's largest probability from 1 to 0.75.
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) s[mt][nt][e] *= a.scale_log2;
    online_softmax(s, row_max, row_sum, o, 1.f);

    // P~ -> P^ (FP4, two-level or direct scale), then O += s1 * (P^ s2) V^.
    POperand pop;
    float s1[MT][2];
    quantize_p_operand(s, pop, s1);
    pv_product(o, pop, s1, sl, vt);
    __syncthreads();                   // the slot and the bf16 tiles are rewritten next
  }

  // Smooth-K dropped q . mean from every score of a row; it cancels in the
  // softmax and comes back into the LSE (base 2 here, as row_max is).
  if (SMOOTH_K && WRITE_LSE) {
    const float *corr = (const float *)ws_at(a, WS_CORR) + q_bh * nq;
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int h = 0; h < 2; h++) row_max[mt][h] += corr[warp_row0 + mt * 16 + lane / 4 + 8 * h] * a.scale_log2;
  }
  u16 *o_head = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
  float *lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
  write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
}
]]

return T
