-- Quantization kernels of the INT8 families, run before the attention kernel
-- and sharing its workspace (layout in blocks/attn_int8.lua):
--   stats: per (batch, kv head, channel) K's mean over the whole sequence
--          (smooth-K) and, for FP8 V, V's absolute maximum -> V's scale;
--   quant: Q -> INT8 per 16 rows (Q pre-multiplied by sm_scale*log2(e), so
--          scores come out in base 2), K - mean -> INT8 per 16 keys, and for
--          FP8 V, V -> E4M3 per channel, transposed and key-permuted.
-- Every rounding follows numerics/numerics.h bit for bit: fp32 division with
-- div.rn (never x * (1/scale)), amax with fmaxf (NaN ignored), RNE codes,
-- a zero scale gives zero codes.  Padding (rows past the sequence, columns
-- past D) is written as code 0, so the attention kernel loads without bounds.
local U = require("util")

local load_in = {
  bf16 = "MX_INLINE float ld_in(const u16 *p) { return __int_as_float((int)((u32)*p << 16)); }",
  f16 = [[MX_INLINE float ld_in(const u16 *p) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(*p)); return f; }]],
}

return function(p)
  return U.fill([[
// ---- quantization helpers -------------------------------------------------
${LOAD_IN}
MX_INLINE float div_rn(float a, float b) { float r; asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
MX_INLINE float abs_f(float x) { float r; asm("abs.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
// INT8 code in the low byte: round half to even, clamp to [-127, 127]; NaN -> 0 (cvt's rule).
MX_INLINE u32 to_int8(float x) {
  int i;
  asm("cvt.rni.s32.f32 %0, %1;" : "=r"(i) : "f"(x));
  i = i > 127 ? 127 : i < -127 ? -127 : i;
  return (u32)i & 0xffu;
}
MX_INLINE float warp_max(float x) {
#pragma unroll
  for (int s = 16; s > 0; s /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, s));
  return x;
}
MX_INLINE float warp_sum(float x) {
#pragma unroll
  for (int s = 16; s > 0; s /= 2) x += __shfl_xor_sync(0xffffffffu, x, s);
  return x;
}
MX_INLINE int pad_q(int n) { return (n + BM - 1) / BM * BM; }   // Q rows in the workspace
MX_INLINE int pad_k(int n) { return (n + BN - 1) / BN * BN; }   // keys in the workspace

// One warp quantizes 16 rows [row0, row0 + 16) of a [seq, D] slice (rows at or
// past `rows` are padding) with one scale: x = in * mul - mean[c].
MX_INLINE void quantize_rows(const u16 *src, i64 ss, int row0, int rows, float mul, const float *mean,
                             u8 *dst, float *scale_out) {
  const int lane = threadIdx.x % 32;
  auto x_at = [&](int r, int c) {
    const float x = ld_in(src + (i64)(row0 + r) * ss + c) * mul;
    return mean ? x - mean[c] : x;
  };
  // Step 1: the block's absolute maximum -> its scale.
  float amax = 0.f;
  for (int i = lane; i < 16 * D; i += 32)
    if (row0 + i / D < rows) amax = fmaxf(amax, abs_f(x_at(i / D, i % D)));
  const float scale = div_rn(warp_max(amax), 127.f);
  if (lane == 0) *scale_out = scale;
  // Step 2: codes, four per 32-bit store; padding is 0.
  for (int i = lane; i < 16 * D32 / 4; i += 32) {
    const int r = i / (D32 / 4), c0 = i % (D32 / 4) * 4;
    u32 word = 0;
#pragma unroll
    for (int j = 0; j < 4; j++)
      if (scale > 0.f && row0 + r < rows && c0 + j < D) word |= to_int8(div_rn(x_at(r, c0 + j), scale)) << (8 * j);
    *(u32 *)(dst + r * D32 + c0) = word;
  }
}

// corr[r] = q_r . mean for the 16 rows (q already in base-2 units): the smooth-K
// term that softmax cancels, needed only for the LSE.
MX_INLINE void smooth_k_correction(const u16 *src, i64 ss, int row0, int rows, float mul, const float *mean,
                                   float *corr) {
  const int lane = threadIdx.x % 32;
  for (int r = 0; r < 16; r++) {
    float dot = 0.f;
    if (row0 + r < rows)
      for (int c = lane; c < D; c += 32) dot += ld_in(src + (i64)(row0 + r) * ss + c) * mul * mean[c];
    dot = warp_sum(dot);
    if (lane == 0) corr[r] = dot;
  }
}
]], { LOAD_IN = load_in[p.dtype] })
end
