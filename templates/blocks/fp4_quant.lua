-- The quantization kernels that run before the FP4 attention kernel, writing
-- the workspace it reads (layout in blocks/fp4_family.lua).  Their output is
-- bit-identical to numerics/ (mx_fp4_quantize, mx_channel_mean,
-- mx_subtract_mean, mx_int8_quantize_blocks), only laid out for tile loads:
-- rows padded to whole tiles, head dims padded to the k64 of the Blackwell
-- MMA, V^T's scales stored key-block-major so that a key tile's scales are
-- one contiguous run.  Padding is written too (codes 0, scales 0): a tile
-- load never reads memory the kernels did not write, so no NaN can leak in.
--
--   kmean    (smooth_k only) K's channel mean per kv head, fp64 sums
--   quant_kv K rows (minus the mean) along head_dim; V^T rows along keys
--   quant_q  Q rows along head_dim; with lse and smooth_k also q . mean
local U = require("util")

local COMMON = [[
// ---- workspace sections (byte offsets in a.ws_off) ----
enum { WS_QC = 0, WS_QS = 1, WS_KC = 2, WS_KS = 3, WS_VC = 4, WS_VS = 5, WS_MEAN = 6, WS_CORR = 7 };
MX_INLINE u8 *ws_at(const mx_kernel_args &a, int section) { return (u8 *)a.ws + a.ws_off[section]; }
MX_INLINE int q_rows(const mx_kernel_args &a) { return (a.seq_q + QROWS - 1) / QROWS * QROWS; }
MX_INLINE int k_rows(const mx_kernel_args &a) { return (a.seq_k + KROWS - 1) / KROWS * KROWS; }
]]

-- Channel means of K (numerics mx_channel_mean): 32 channels x 8 row groups
-- per block.  The fp64 sum of bf16/f16 values is exact for any realistic
-- length, so the order of summation cannot change the fp32 mean.
local KMEAN = [[
extern "C" __global__ void __launch_bounds__(256) ${NAME}_kmean(const mx_kernel_args a) {
  __shared__ double part[8][32];
  const int bh = blockIdx.x, c = blockIdx.y * 32 + threadIdx.x % 32, rg = threadIdx.x / 32;
  const u16 *k = (const u16 *)a.k + (bh / a.heads_kv) * a.k_sb + (bh % a.heads_kv) * a.k_sh;
  double sum = 0;
  if (c < D)
    for (int r = rg; r < a.seq_k; r += 8) {
      const float x = load_in(k + (i64)r * a.k_ss + c);
      sum += finite_f(x) ? x : 0.f;    // a NaN or infinite key counts as 0, as numerics' mean
    }
  part[rg][threadIdx.x % 32] = sum;
  __syncthreads();
  if (rg != 0) return;
  for (int j = 1; j < 8; j++) sum += part[j][threadIdx.x % 32];
  float *mean = (float *)ws_at(a, WS_MEAN) + (i64)bh * DP;
  mean[c] = c < D ? (float)(sum / a.seq_k) : 0.f;   // padding channels: 0
}
]]

-- FP4 rows: one thread per block of PB elements; writes PB/2 code bytes and
-- one scale byte (numerics quantize_fp4_block).
local FP4_ROWS = [[
// Quantizes x[0..PB) into PB/8 words of codes (element 8w+i in nibble i of
// word w); returns the scale code.  A zero scale makes every code +0, and so
// does a NaN one (a NaN or an infinity in the block: fmax_nan keeps it).
MX_INLINE u32 quantize_block(const float (&x)[PB], u32 (&words)[PB / 8]) {
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < PB; i++) amax = fmax_nan(amax, fabsf(x[i]));
  const u32 sc = block_scale_code(finite_f(amax) ? amax : __int_as_float(0x7fffffff));   // +inf: NaN too
  const float s = scale_value(sc);
#pragma unroll
  for (int w = 0; w < PB / 8; w++) {
    u32 word = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) word |= (s > 0.f ? e2m1_code(x[8 * w + i] / s) : 0u) << (4 * i);
    words[w] = word;
  }
  return sc;
}
// The packed form: PB/2 bytes at dst (element 2i in the low nibble of byte i).
MX_INLINE void store_codes(u8 *dst, const u32 (&words)[PB / 8]) {
#pragma unroll
  for (int w = 0; w < PB / 8; w++) ((u32 *)dst)[w] = words[w];
}
// The dequantized form (BF16_OPS): element i of the block, E2M1 value times
// the scale, to dst[i * stride] for i < n.  Exact in bf16 (at most 2 + 4
// significant bits; a power of two for MXFP4); a NaN scale makes the block
// NaN, as the mma variant's dequantization in shared memory does.
// A whole block along a row (stride 1, dst 32-byte aligned) goes out as
// 16-byte stores: element by element, a warp's stores of Q and K rows wrote
// 2 bytes of each 32-byte sector at a time (0.15 ms of an H200 for Q at B1
// H32 N4096 D128, 3x the read).
MX_INLINE void store_dequantized(u16 *dst, i64 stride, int n, const u32 (&words)[PB / 8], u32 sc) {
  const float s = scale_value(sc);
  auto value = [&](int i) { return e2m1_value(words[i / 8] >> (4 * (i % 8))) * s; };
  if (stride == 1 && n >= PB) {
#pragma unroll
    for (int w = 0; w < PB / 8; w++)
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};"
                   :: "l"(dst + 8 * w), "r"(pack_bf16(value(8 * w), value(8 * w + 1))),
                      "r"(pack_bf16(value(8 * w + 2), value(8 * w + 3))), "r"(pack_bf16(value(8 * w + 4), value(8 * w + 5))),
                      "r"(pack_bf16(value(8 * w + 6), value(8 * w + 7))) : "memory");
    return;
  }
#pragma unroll
  for (int i = 0; i < PB; i++)
    if (i < n) dst[i * stride] = to_bf16(value(i));
}

// Block `blk` of row `row` of a [rows, D] slice at g (seq stride ss), minus
// `mean` (NULL: none), into a packed row of DP/2 bytes and SPK scale bytes,
// or (BF16_OPS) a bf16 row of D_PAD elements at `codes`.
MX_INLINE void quantize_row_block(const u16 *g, i64 ss, int rows, const float *mean, int row, int blk,
                                  u8 *codes, u8 *scales) {
  float x[PB];
#pragma unroll
  for (int i = 0; i < PB; i++) {
    const int col = blk * PB + i;
    x[i] = 0.f;
    if (row < rows && col < D) {
      x[i] = load_in(g + (i64)row * ss + col);
      if (mean) x[i] = x[i] - mean[col];             // fp32, as mx_subtract_mean
    }
  }
  u32 words[PB / 8];
  const u32 sc = quantize_block(x, words);
  scales[blk] = (u8)sc;
  if (!BF16_OPS) store_codes(codes + blk * (PB / 2), words);
  else if (blk * PB < D_PAD) store_dequantized((u16 *)codes + blk * PB, 1, D_PAD - blk * PB, words, sc);
  if (blk == 0)
    for (int j = DP / PB; j < SPK; j++) scales[j] = 0;   // scale padding
}
// Bytes of one Q or K row in the workspace: packed codes, or bf16 operands.
constexpr int ROW_CODE_BYTES = BF16_OPS ? 2 * D_PAD : DP / 2;

// V^T's block `kb` (keys kb*PB..) of channel c of KV head bh into its PB/2
// code bytes and scale byte; keys past seq_k and channels past D count as 0.
// BF16_OPS: the block's values go to V's bf16 rows [key][D_PAD] instead.
MX_INLINE void quantize_vt_block(const mx_kernel_args &a, int nk, int bh, int kb, int c) {
  const u16 *v = (const u16 *)a.v + (bh / a.heads_kv) * a.v_sb + (bh % a.heads_kv) * a.v_sh;
  float x[PB];
#pragma unroll
  for (int i = 0; i < PB; i++) {
    const int key = kb * PB + i;
    x[i] = key < a.seq_k && c < D ? load_in(v + (i64)key * a.v_ss + c) : 0.f;
  }
  u32 words[PB / 8];
  const u32 sc = quantize_block(x, words);
  ws_at(a, WS_VS)[((i64)bh * (nk / PB) + kb) * DV + c] = (u8)sc;
  if (BF16_OPS)
    store_dequantized((u16 *)ws_at(a, WS_VC) + ((i64)bh * nk + kb * PB) * D_PAD + c, D_PAD, PB, words, sc);
  else
    store_codes(ws_at(a, WS_VC) + ((i64)bh * DV + c) * (nk / 2) + kb * (PB / 2), words);
}
]]

local FP4_QUANT_KV = [[
// blockIdx.y == 0: K rows; 1: V^T rows (channel fastest, so that a warp's
// reads of one key are contiguous).
extern "C" __global__ void __launch_bounds__(256) ${NAME}_quant_kv(const mx_kernel_args a) {
  const int nk = k_rows(a), bhs = a.batch * a.heads_kv;
  const i64 id = (i64)blockIdx.x * 256 + threadIdx.x;
  if (blockIdx.y == 0) {
    const int blk = (int)(id % (DP / PB));
    const i64 rest = id / (DP / PB);
    const int row = (int)(rest % nk), bh = (int)(rest / nk);
    if (bh >= bhs) return;
    const u16 *k = (const u16 *)a.k + (bh / a.heads_kv) * a.k_sb + (bh % a.heads_kv) * a.k_sh;
    const float *mean = SMOOTH_K ? (const float *)ws_at(a, WS_MEAN) + (i64)bh * DP : nullptr;
    const i64 r = (i64)bh * nk + row;
    quantize_row_block(k, a.k_ss, a.seq_k, mean, row, blk, ws_at(a, WS_KC) + r * ROW_CODE_BYTES, ws_at(a, WS_KS) + r * SPK);
  } else {
    const int c = (int)(id % DV);
    const i64 rest = id / DV;
    const int kb = (int)(rest % (nk / PB)), bh = (int)(rest / (nk / PB));
    if (bh >= bhs) return;
    quantize_vt_block(a, nk, bh, kb, c);
  }
}
]]

local FP4_QUANT_Q = [[
extern "C" __global__ void __launch_bounds__(256) ${NAME}_quant_q(const mx_kernel_args a) {
  const int nq = q_rows(a);
  const i64 id = (i64)blockIdx.x * 256 + threadIdx.x;
  const int blk = (int)(id % (DP / PB));
  const i64 rest = id / (DP / PB);
  const int row = (int)(rest % nq), bh = (int)(rest / nq);
  if (bh >= a.batch * a.heads_q) return;
  const int b = bh / a.heads_q, h = bh % a.heads_q;
  const u16 *q = (const u16 *)a.q + b * a.q_sb + h * a.q_sh;
  const i64 r = (i64)bh * nq + row;
  quantize_row_block(q, a.q_ss, a.seq_q, nullptr, row, blk, ws_at(a, WS_QC) + r * ROW_CODE_BYTES, ws_at(a, WS_QS) + r * SPK);
  if (SMOOTH_K && WRITE_LSE && blk == 0) store_correction(a, q, b * a.heads_kv + h / a.gqa, row, r);
}
]]

-- INT8 rows (nvfp4-int8qk): SageAttention's per-block scales, one CTA per
-- block of IB rows of one head: amax over the block, scale = amax / 127,
-- q = round-half-even(x / scale) clamped to +-127, NaN -> 0; a NaN or an
-- infinity in the block makes the scale NaN (fmax_nan, nan_if_inf) and the codes 0.  x / scale is
-- blocks/scale_recip.lua's rule, as numerics' mx_div_by_scale, not a
-- division: the two differ in the last bit, which sends a code the other way
-- next to a tie, in ~5% of one-row blocks of bf16 inputs (x = amax / 2 is
-- 127 x / amax = 63.5: the division gives 63.4999962, code 63, the rule 64).
-- One Q code off moves every score of its row, enough to flip P's FP4 codes:
-- the H200 showed 7e-3 rel-L1 against the pipeline reference on a one-row
-- query.
local INT8_ROWS = [[
${SCALE_RECIP}
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
extern "C" __global__ void __launch_bounds__(256) ${NAME}_quant_kv(const mx_kernel_args a) {
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

extern "C" __global__ void __launch_bounds__(256) ${NAME}_quant_q(const mx_kernel_args a) {
  const int nq = q_rows(a), blocks = nq / IBQ, bh = blockIdx.x / blocks, qb = blockIdx.x % blocks;
  const int b = bh / a.heads_q, h = bh % a.heads_q;
  const u16 *q = (const u16 *)a.q + b * a.q_sb + h * a.q_sh;
  quantize_int8_block<IBQ>(q, a.q_ss, a.seq_q, nullptr, qb * IBQ, ws_at(a, WS_QC) + ((i64)bh * nq + qb * IBQ) * CODE_COLS * (BF16_OPS ? 2 : 1),
                           (float *)ws_at(a, WS_QS) + (i64)bh * blocks + qb);
  if (SMOOTH_K && WRITE_LSE && threadIdx.x < IBQ)
    store_correction(a, q, b * a.heads_kv + h / a.gqa, qb * IBQ + threadIdx.x, (i64)bh * nq + qb * IBQ + threadIdx.x);
}
]]

-- q . mean for the LSE (numerics mx_smooth_k_correction, here in fp32): the
-- kernels drop it from the scores, where it cancels, and add it to the LSE.
local CORRECTION = [[
MX_INLINE void store_correction(const mx_kernel_args &a, const u16 *q, int kv_bh, int row, i64 r) {
  const float *mean = (const float *)ws_at(a, WS_MEAN) + (i64)kv_bh * DP;
  float dot = 0.f;
  if (row < a.seq_q)
    for (int c = 0; c < D; c++) dot = fmaf(load_in(q + (i64)row * a.q_ss + c), mean[c], dot);
  ((float *)ws_at(a, WS_CORR))[r] = dot;
}
]]

return function(p, name)
  local parts = { COMMON, CORRECTION, U.fill(KMEAN, { NAME = name }), FP4_ROWS }
  if p.qk == "int8" then
    parts[#parts + 1] = U.fill(INT8_ROWS, { NAME = name, SCALE_RECIP = require("blocks.scale_recip") })
  else
    parts[#parts + 1] = U.fill(FP4_QUANT_KV, { NAME = name })
    parts[#parts + 1] = U.fill(FP4_QUANT_Q, { NAME = name })
  end
  return table.concat(parts, "\n")
end
