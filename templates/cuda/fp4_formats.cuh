// ---- FP4 formats (device twins of numerics/) ----
// Device twins of numerics/formats.c and numerics/quant.c for the FP4
// families: the E2M1 element code, the block scale (UE4M3 for NVFP4, UE8M0
// for MXFP4) and their decoders.  Every function must give the code the CPU
// oracle gives, bit for bit, so the rules are written out here rather than
// taken from cvt instructions: Hopper has no e2m1 cvt at all, and
// cvt.rn.satfinite.e4m3x2 would differ from numerics on NaN inputs.
// No --use_fast_math: `/` is div.rn.f32 and denormals are kept, as numerics
// assumes (x / scale, never x * (1 / scale)).
// Reads PB (elements per scale block), MXFP4 (UE8M0 scales, else UE4M3) and
// IN_BF16 (inputs are bf16, else fp16): blocks/fp4_formats.lua's header.

// E2M1 code of x: round to nearest, ties to the even code, saturate at 6,
// keep the sign (also of -0 and of values that round to 0), NaN -> +6 (0x7).
// The thresholds are the midpoints of 0, .5, 1, 1.5, 2, 3, 4, 6; a strict `>`
// is a tie that goes down to the even code, `>=` one that goes up.
MX_INLINE u32 e2m1_code(float x) {
  if (x != x) return 7u;
  const float m = fabsf(x);
  const u32 c = (m > 0.25f) + (m >= 0.75f) + (m > 1.25f) + (m >= 1.75f) + (m > 2.5f) + (m >= 3.5f) + (m > 5.0f);
  return c | (__float_as_uint(x) >> 31) << 3;
}

// Value of an E2M1 code, built from its bits: codes 2..7 are normal
// (exponent (c >> 1) - 1, one mantissa bit), code 1 is 0.5, code 0 is 0.
MX_INLINE float e2m1_value(u32 c) {
  const u32 m = c & 7u;
  const u32 bits = m >= 2u ? ((m >> 1) + 126u) << 23 | (m & 1u) << 22 : (m ? 0x3F000000u : 0u);
  return __uint_as_float(bits | (c & 8u) << 28);
}

// UE4M3 code of a scale x (numerics mx_f32_to_ue4m3): NaN -> 0x7F, x <= 0 -> 0,
// x >= 448 (and +inf) saturates to 448 (0x7E); subnormals have quantum 2^-9;
// normals round the fp32 mantissa to 3 bits, ties to even (a carry into the
// exponent is the right answer).
MX_INLINE u32 ue4m3_code(float x) {
  if (x != x) return 0x7Fu;
  if (!(x > 0.f)) return 0u;
  if (x >= 448.f) return 0x7Eu;
  if (x < 0.015625f) return (u32)__float2int_rn(x * 512.f);   // x * 2^9 is exact
  u32 u = __float_as_uint(x);
  u += 0x7FFFFu + ((u >> 20) & 1u);
  return ((u >> 23) - 120u) << 3 | ((u >> 20) & 7u);
}
MX_INLINE float ue4m3_value(u32 c) {
  const u32 e = (c >> 3) & 15u, m = c & 7u;
  return e ? __uint_as_float((e + 120u) << 23 | m << 20) : (float)m * 0.001953125f;
}

// The block scale of a block whose largest magnitude is amax (amax >= 0, or
// NaN: fmax_nan keeps a NaN element; the quantization kernels turn an
// infinite amax into NaN first).  A NaN amax gives the NaN code (numerics
// mx_nvfp4_scale_for_amax, mx_ue8m0_scale_for_amax), and scale_value of it is
// NaN, so the whole block dequantizes to NaN.  scale_value_raw skips that
// test for P's scales, where a NaN reaches O through s1 and the row sum
// anyway (cuda/fp4_p.cuh), so the softmax loop pays nothing for it.
//   NVFP4: e4m3(amax / 6), amax / 6 rounded in fp32 first as numerics does.
//   MXFP4: OCP MX v1.0, 2^(floor(log2 amax) - 2), read off amax's exponent
//   field (numerics/quant.c mx_ue8m0_scale_for_amax).  Codes below 0 clamp to
//   0 (2^-127); NaN and +inf give 0xFF (NaN).  amax / scale lies in [4, 8), so
//   elements above 6 * scale saturate to 6: that is the rule numerics chose.
MX_INLINE u32 block_scale_code(float amax) {
  if constexpr (MXFP4) {
    const u32 e = __float_as_uint(amax) >> 23;          // biased exponent; amax >= 0
    if (e == 255u) return 0xFFu;                        // NaN or +inf: the NaN code
    return e > 2u ? e - 2u : 0u;
  } else {
    return ue4m3_code(amax / 6.0f);
  }
}
// MXFP4: 2^(code - 127); code 0 is the fp32 subnormal 2^-127, 0xFF is NaN (raw: +inf).
MX_INLINE float scale_value_raw(u32 code) {
  if constexpr (MXFP4) return __uint_as_float(code ? code << 23 : 0x00400000u);
  else return ue4m3_value(code);
}
MX_INLINE float scale_value(u32 code) {
  return code == (MXFP4 ? 0xFFu : 0x7Fu) ? __int_as_float(0x7fffffff) : scale_value_raw(code);
}

// An input element as fp32 (bf16 and f16 widen exactly).
MX_INLINE float load_in(const u16 *p) {
  const u16 h = *p;
  if constexpr (IN_BF16) {
    return __uint_as_float((u32)h << 16);
  } else {
    float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
  }
}
