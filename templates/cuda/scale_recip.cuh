// x / scale as every quantizer computes it, numerics/ and kernels alike
// (numerics.h, mx_div_by_scale, says why): (x * k) * inv with
// inv = 1 / (scale * k), k = 2^100 for tiny scales, else 1.  A multiply per
// element instead of a division; the price is that it differs from x / scale
// in the last bit, so every quantizer of one operand must use this same rule
// or a code lands on the other side of a rounding tie.  Then the INT8 code of
// that quotient, the one rule of the INT8 quantizers (cuda/quant_int8.cuh,
// nvfp4-int8qk's in blocks/fp4_quant.lua).
MX_INLINE float div_rn(float a, float b) { float r; asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
struct scale_recip { float k, inv; };
MX_INLINE scale_recip scale_reciprocal(float scale) {
  const float k = scale < 0x1p-100f ? 0x1p100f : 1.f;
  return { k, div_rn(1.f, __fmul_rn(scale, k)) };
}
MX_INLINE float div_by_scale(float x, scale_recip r) { return __fmul_rn(__fmul_rn(x, r.k), r.inv); }
// INT8 code in the low byte: round half to even, clamp to [-127, 127]; NaN -> 0 (cvt's rule).
MX_INLINE u32 to_int8(float x) {
  int i;
  asm("cvt.rni.s32.f32 %0, %1;" : "=r"(i) : "f"(x));
  i = i > 127 ? 127 : i < -127 ? -127 : i;
  return (u32)i & 0xffu;
}
