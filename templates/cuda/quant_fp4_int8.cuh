// INT8 rows (nvfp4-int8qk): SageAttention's per-block scales, one CTA per
// block of IB rows of one head: amax over the block, scale = amax / 127,
// q = round-half-even(x / scale) clamped to +-127, NaN -> 0; a NaN or an
// infinity in the block makes the scale NaN (fmax_nan, nan_if_inf) and the codes 0.  x / scale is
// cuda/scale_recip.cuh's rule, as numerics' mx_div_by_scale, not a
// division: the two differ in the last bit, which sends a code the other way
// next to a tie, in ~5% of one-row blocks of bf16 inputs (x = amax / 2 is
// 127 x / amax = 63.5: the division gives 63.4999962, code 63, the rule 64).
// One Q code off moves every score of its row, enough to flip P's FP4 codes:
// the H200 showed 7e-3 rel-L1 against the pipeline reference on a one-row
// query.
// Follows cuda/scale_recip.cuh and cuda/quant_fp4.cuh.  Reads IBQ, IBK and
// KERNEL_NAME_quant_kv and KERNEL_NAME_quant_q (their symbols).

// Rows [r0, r0 + IB) of a [rows, D] slice into int8 rows of DP bytes (or,
// BF16_OPS, the codes as bf16 rows of D_PAD elements: |code| <= 127 is
// exact); the block's fp32 scale goes to *scale.  Called by all 256 threads.
constexpr int CODE_COLS = BF16_OPS ? D_PAD : DP;
template <int IB>
MX_INLINE void quantize_int8_block(const u16 *g, i64 ss, int rows, const float *mean, int r0, u8 *codes, float *scale) {
  __shared__ float warp_max[8];
  float amax = 0.f;
  for (int i = threadIdx.x; i < IB * D; i += 256) {
    const int row = r0 + i / D, col = i % D;
    if (row < rows) amax = fmax_nan(amax, fabsf(load_in(g + (i64)row * ss + col) - (mean ? mean[col] : 0.f)));
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) amax = fmax_nan(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
  __syncthreads();
  amax = warp_max[0];
  for (int w = 1; w < 8; w++) amax = fmax_nan(amax, warp_max[w]);
  const float s = nan_if_inf(amax / 127.0f);
  const scale_recip inv = scale_reciprocal(s);
  if (threadIdx.x == 0) *scale = s;
  for (int i = threadIdx.x; i < IB * CODE_COLS; i += 256) {
    const int row = r0 + i / CODE_COLS, col = i % CODE_COLS;
    u32 c = 0;
    if (row < rows && col < D && s > 0.f)
      c = to_int8(div_by_scale(load_in(g + (i64)row * ss + col) - (mean ? mean[col] : 0.f), inv));
    if (BF16_OPS) ((u16 *)codes)[i] = to_bf16((float)(i8)c);
    else ((i8 *)codes)[i] = (i8)c;
  }
}

// blockIdx.y == 0: K blocks of IBK rows; 1: V^T (FP4, as in the FP4 families).
extern "C" __global__ void __launch_bounds__(256) KERNEL_NAME_quant_kv(const mx_kernel_args a) {
  const int nk = k_rows(a);
  if (blockIdx.y == 0) {
    const int blocks = nk / IBK, bh = blockIdx.x / blocks, kb = blockIdx.x % blocks;
    if (bh >= a.batch * a.heads_kv) return;
    const u16 *k = (const u16 *)a.k + (bh / a.heads_kv) * a.k_sb + (bh % a.heads_kv) * a.k_sh;
    const float *mean = SMOOTH_K ? (const float *)ws_at(a, WS_MEAN) + (i64)bh * DP : nullptr;
    quantize_int8_block<IBK>(k, a.k_ss, a.seq_k, mean, kb * IBK, ws_at(a, WS_KC) + ((i64)bh * nk + kb * IBK) * CODE_COLS * (BF16_OPS ? 2 : 1),
                             (float *)ws_at(a, WS_KS) + (i64)bh * blocks + kb);
    return;
  }
  const int bhs = a.batch * a.heads_kv;
  for (i64 id = (i64)blockIdx.x * 256 + threadIdx.x; id < (i64)bhs * (nk / PB) * DV; id += (i64)gridDim.x * 256) {
    const int c = (int)(id % DV);
    const i64 rest = id / DV;
    const int kb = (int)(rest % (nk / PB)), bh = (int)(rest / (nk / PB));
    quantize_vt_block(a, nk, bh, kb, c);
  }
}

extern "C" __global__ void __launch_bounds__(256) KERNEL_NAME_quant_q(const mx_kernel_args a) {
  const int nq = q_rows(a), blocks = nq / IBQ, bh = blockIdx.x / blocks, qb = blockIdx.x % blocks;
  const int b = bh / a.heads_q, h = bh % a.heads_q;
  const u16 *q = (const u16 *)a.q + b * a.q_sb + h * a.q_sh;
  quantize_int8_block<IBQ>(q, a.q_ss, a.seq_q, nullptr, qb * IBQ, ws_at(a, WS_QC) + ((i64)bh * nq + qb * IBQ) * CODE_COLS * (BF16_OPS ? 2 : 1),
                           (float *)ws_at(a, WS_QS) + (i64)bh * blocks + qb);
  if (SMOOTH_K && WRITE_LSE && threadIdx.x < IBQ)
    store_correction(a, q, b * a.heads_kv + h / a.gqa, qb * IBQ + threadIdx.x, (i64)bh * nq + qb * IBQ + threadIdx.x);
}
