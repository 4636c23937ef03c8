-- x / scale as every quantizer computes it, numerics/ and kernels alike
-- (numerics.h, mx_div_by_scale, says why): (x * k) * inv with
-- inv = 1 / (scale * k), k = 2^100 for tiny scales, else 1.  A multiply per
-- element instead of a division; the price is that it differs from x / scale
-- in the last bit, so every quantizer of one operand must use this same rule
-- or a code lands on the other side of a rounding tie.
return [[
MX_INLINE float div_rn(float a, float b) { float r; asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
struct scale_recip { float k, inv; };
MX_INLINE scale_recip scale_reciprocal(float scale) {
  const float k = scale < 0x1p-100f ? 0x1p100f : 1.f;
  return { k, div_rn(1.f, __fmul_rn(scale, k)) };
}
MX_INLINE float div_by_scale(float x, scale_recip r) { return __fmul_rn(__fmul_rn(x, r.k), r.inv); }
]]
