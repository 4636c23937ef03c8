// E4M3 conversions shared by the FP8 quantizers (cuda/quant_fp8v.cuh, the
// decode schedule's cuda/decode_quant.cuh).
// E4M3 codes of two values, `lo` in the low byte: RNE, saturating to +-448,
// NaN -> NaN (0x7F).
MX_INLINE u32 to_e4m3x2(float lo, float hi) {
  u16 r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}
// Two E4M3 codes' values as an f16 pair (exact: 4 significant bits, 2^-9 and up).
MX_INLINE u32 e4m3x2_to_f16x2(u32 codes) {
  u32 h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"((u16)codes));
  return h2;
}
// Two E4M3 codes' values in f32.
MX_INLINE void from_e4m3x2(u32 codes, float &lo, float &hi) {
  const u32 h2 = e4m3x2_to_f16x2(codes);
  asm("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }" : "=f"(lo), "=f"(hi) : "r"(h2));
}
