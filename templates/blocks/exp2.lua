-- The exponentials of the scores, in part on the FMA and integer pipes (knob
-- exp_poly).  ex2.approx issues at 16 per clock per SM, the softmax's only
-- instruction that slow (P's packs run at 31-62, the packed f16x2 ex2 is two
-- MUFU ops: bench/NOTES.md, 2026-11-29); with 8-bit MMAs at twice
-- bf16's rate the exponentials take as long as the tile's MMAs in the
-- int8-fp8 kernel.  exp_poly = k sends k of every four 8-key score columns through
-- poly_exp2 instead, which costs ~10 full-rate instructions.  P is rounded to
-- E4M3 (3 mantissa bits) right after, so the polynomial's 1e-4 is far below
-- P's own rounding; the row sum takes the same values, so softmax stays
-- normalised to them.
local U = require("util")

local E = {}

local FUNCTIONS = [[
// 2^x for x < 128 (scores reach log2 448 above the row max at most) without ex2: x = j + f with j = rint(x) (adding 1.5*2^23
// rounds to an integer and leaves j in the low mantissa bits) and |f| <= 1/2;
// 2^f by a degree-3 polynomial (relative error 1.0e-4, exactly 1 at f = 0),
// then j added to the exponent field.  Below -125 (a masked score is -inf)
// the result is 0, as ex2.approx.ftz gives.
MX_INLINE float poly_exp2(float x) {
  const float xc = fmaxf(x, -125.f);
  const float t = xc + 12582912.f;
  const float f = xc - (t - 12582912.f);
  const float p = fmaf(fmaf(fmaf(0.055006489f, f, 0.242206356f), f, 0.693282685f), f, 1.f);
  const float r = __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
  return x < -125.f ? 0.f : r;
}
// exp2 of a score in 8-key column nt (a compile-time index in every caller):
// the first ${POLY} of every four columns take the polynomial.
MX_INLINE float score_exp2(int nt, float x) { return nt % 4 < ${POLY} ? poly_exp2(x) : fast_exp2(x); }
]]

-- The device functions, or "" when the knob is off.
function E.functions(t)
  if not t or (t.exp_poly or 0) == 0 then return "" end
  return U.fill(FUNCTIONS, { POLY = t.exp_poly })
end

-- text with each score's ex2 routed through score_exp2 when the knob is on;
-- untouched otherwise (so kernels without it keep their source and cache key).
function E.apply(text, t)
  if not t or (t.exp_poly or 0) == 0 then return text end
  local out, n = text:gsub("fast_exp2%(fmaf%(s%[", "score_exp2(nt, fmaf(s[")
  assert(n > 0, "exp2.apply: no score exponential in the text")
  return out
end

return E
