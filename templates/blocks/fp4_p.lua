-- P, the softmax operand of P.V, quantized to FP4 in registers, one key tile
-- at a time (numerics: mx_ref_pipeline_attention with p_tile = block_n).
-- s[][][] holds P~ = exp2(S - running max) in the mma accumulator layout:
-- lane 4g+t has rows g and g+8, keys 2t and 2t+1 of every 8-key tile, so a
-- block of 16 (NVFP4) or 32 (MXFP4) consecutive keys lives in the four lanes
-- of a quad and its max is one quad shuffle-max.
--
-- Two-level (default): s1 = rowmax(P~ of this tile) / 2688 in fp32, the row
-- max over the tile's keys (reusing the softmax's quad reduction pattern);
-- P2 = P~ / s1; s2 = scale(blockmax(P2)); P^ = e2m1(P2 / s2).  The product
-- uses P^ * s2 and s1 is folded into the accumulator after the MMA.
-- Direct: s1 = 1, P2 = P~ (for comparison only).
-- Divisions are div.rn.f32, as numerics/ divides, so codes match the oracle
-- whenever P~ does (P~ itself comes from ex2.approx, the oracle's from exp()).
local U = require("util")

local COMMON = [[
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
]]

-- Hopper / sm_80: P^ * s2 as bf16 A fragments of m16n8k16 (exact: at most
-- 2 + 4 significant bits), laid out as the f16 family packs P.
local EMULATED = [[
MX_INLINE void quantize_p(float (&s)[MT][NT][4], u32 (&pa)[MT][BN / 16][4], float (&s1)[MT][2]) {
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      s1[mt][h] = p_row_scale(s, mt, h);
#pragma unroll
      for (int blk = 0; blk < BN / PB; blk++) {
        const float s2 = scale_value_raw(p_block_scale(s, mt, h, blk, s1[mt][h]));
#pragma unroll
        for (int nt = blk * (PB / 8); nt < (blk + 1) * (PB / 8); nt++)
#pragma unroll
          for (int e = 2 * h; e < 2 * h + 2; e++)
            s[mt][nt][e] = s2 > 0.f ? e2m1_value(e2m1_code(s[mt][nt][e] / s2)) * s2 : 0.f;
      }
    }
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      pa[mt][kk][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      pa[mt][kk][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      pa[mt][kk][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      pa[mt][kk][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
}
]]

-- Blackwell: packed E2M1 A fragments of m16n8k64 plus the scale register.
-- The accumulator gives lane t keys 2t, 2t+1 of each 8-key tile; the A
-- fragment wants lane t to hold keys 8t..8t+7 (and 32+8t..) of the k64
-- chunk, i.e. the whole of tile t.  A byte holds one lane's two keys of one
-- tile, so this is a 4x4 byte transpose inside the quad.  Keys stay in their
-- natural order, so a k16 (k32) chunk of the MMA is exactly one P block and
-- one V^T block of consecutive keys, as numerics defines them.
local NATIVE = [[
// Byte j of the result is byte (lane % 4) of lane j's w (lanes of one quad).
MX_INLINE u32 quad_transpose_bytes(u32 w) {
  const int lane = threadIdx.x % 32, t = lane % 4;
  u32 r = 0;
#pragma unroll
  for (int j = 0; j < 4; j++) r |= ((__shfl_sync(0xffffffffu, w, (lane & ~3) | j) >> (8 * t)) & 0xFFu) << (8 * j);
  return r;
}

MX_INLINE void quantize_p(float (&s)[MT][NT][4], u32 (&pa)[MT][BN / 64][4], u32 (&psc)[MT][BN / 64],
                          float (&s1)[MT][2]) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    u32 w[2][NT / 4], sc[2][BN / PB];   // [row half][4 tiles] code bytes; scale codes
#pragma unroll
    for (int h = 0; h < 2; h++) {
      s1[mt][h] = p_row_scale(s, mt, h);
#pragma unroll
      for (int j = 0; j < NT / 4; j++) w[h][j] = 0;
#pragma unroll
      for (int blk = 0; blk < BN / PB; blk++) {
        sc[h][blk] = p_block_scale(s, mt, h, blk, s1[mt][h]);
        const float s2 = scale_value_raw(sc[h][blk]);
#pragma unroll
        for (int nt = blk * (PB / 8); nt < (blk + 1) * (PB / 8); nt++) {
          const u32 lo = s2 > 0.f ? e2m1_code(s[mt][nt][2 * h] / s2) : 0u;
          const u32 hi = s2 > 0.f ? e2m1_code(s[mt][nt][2 * h + 1] / s2) : 0u;
          w[h][nt / 4] |= (lo | hi << 4) << (8 * (nt % 4));
        }
      }
    }
#pragma unroll
    for (int kc = 0; kc < BN / 64; kc++) {
      pa[mt][kc][0] = quad_transpose_bytes(w[0][2 * kc]);       // row g,   keys 8t..8t+7
      pa[mt][kc][1] = quad_transpose_bytes(w[1][2 * kc]);       // row g+8
      pa[mt][kc][2] = quad_transpose_bytes(w[0][2 * kc + 1]);   // row g,   keys 32+8t..
      pa[mt][kc][3] = quad_transpose_bytes(w[1][2 * kc + 1]);   // row g+8
      // Scale register: lane t=0 carries row g's blocks, t=1 row g+8's (thread-id 0).
      const int h = t & 1;
      u32 r = 0;
#pragma unroll
      for (int i = 0; i < 64 / PB; i++) r |= sc[h][kc * (64 / PB) + i] << (8 * i);
      psc[mt][kc] = r;
    }
  }
}
]]

return function(p)
  return COMMON .. (p.native and NATIVE or EMULATED)
end
