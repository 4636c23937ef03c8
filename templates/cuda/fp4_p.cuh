// P, the softmax operand of P.V, quantized to FP4 in registers, one key tile
// at a time (numerics: mx_ref_pipeline_attention with p_tile = block_n).
// s[][][] holds P~ = exp2(S - running max) in the mma accumulator layout:
// lane 4g+t has rows g and g+8, keys 2t and 2t+1 of every 8-key tile, so a
// block of 16 (NVFP4) or 32 (MXFP4) consecutive keys lives in the four lanes
// of a quad and its max is one quad shuffle-max.
//
// Two-level (default): s1 = rowmax(P~ of this tile) / 2688 in fp32, the row
// max over the tile's keys (reusing the softmax's quad reduction pattern);
// P2 = P~ / s1; s2 = scale(blockmax(P2)); P^ = e2m1(P2 / s2).  The product
// uses P^ * s2 and s1 is folded into the accumulator after the MMA.
// Direct: s1 = 1, P2 = P~ (for comparison only).
// Divisions are div.rn.f32, as numerics/ divides, so codes match the oracle
// whenever P~ does (P~ itself comes from ex2.approx, the oracle's from exp()).
// Reads MT, NT, BN, TWO_LEVEL (the kernel's header), PB and the scale rule
// (cuda/fp4_formats.cuh); cuda/fp4_p_emulated.cuh or cuda/fp4_p_native.cuh
// follows with quantize_p.

// Level 1: the row's pre-scale (0 for a row with no visible key in this tile,
// whose P2 and codes are then all 0, as numerics does; NaN when a P~ is,
// i.e. a score was: then P^ is 0 and the fold of s1 makes O NaN).  The maxima
// keep NaN (fmax_nan, one instruction as fmaxf), so a NaN P~ gives its block
// the NaN scale code, the MMA's (native) to honour; either way the row sum
// is NaN, and the epilogue makes the row NaN from it.
MX_INLINE float p_row_scale(const float (&s)[MT][NT][4], int mt, int h) {
  float m = 0.f;
#pragma unroll
  for (int nt = 0; nt < NT; nt++) m = fmax_nan(m, fmax_nan(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
  return TWO_LEVEL ? quad_max_nan(m) / 2688.0f : 1.f;
}

// Level 2 for block `blk` of row half h: divides by s1 in place and returns
// the block's scale code (the same in the four lanes of the quad).
MX_INLINE u32 p_block_scale(float (&s)[MT][NT][4], int mt, int h, int blk, float s1) {
  float amax = 0.f;
#pragma unroll
  for (int nt = blk * (PB / 8); nt < (blk + 1) * (PB / 8); nt++)
#pragma unroll
    for (int e = 2 * h; e < 2 * h + 2; e++) {
      if (TWO_LEVEL) s[mt][nt][e] = s1 > 0.f ? s[mt][nt][e] / s1 : 0.f;
      amax = fmax_nan(amax, s[mt][nt][e]);
    }
  return block_scale_code(quad_max_nan(amax));
}
