-- Online softmax (FlashAttention-2) over one key tile, in base 2: scores are
-- scaled by sm_scale*log2(e) so each exponential is one ex2 instruction.
-- row_max and row_sum are per thread for its rows g and g+8; row_sum stays a
-- per-thread partial sum (the four lanes of a row are summed once, at the end).

-- The common head of every form: accumulators and masking.
local U = require("util")

local HEAD = [[
// O = 0, no row has seen a key yet (max -inf, sum 0).
MX_INLINE void init_accumulators(float (&o)[MT][DT][4], float (&row_max)[MT][2], float (&row_sum)[MT][2]) {
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
#pragma unroll
    for (int dt = 0; dt < DT; dt++) o[mt][dt][0] = o[mt][dt][1] = o[mt][dt][2] = o[mt][dt][3] = 0.f;
    row_max[mt][0] = row_max[mt][1] = MX_NEG_INF;
    row_sum[mt][0] = row_sum[mt][1] = 0.f;
  }
}

// Key tiles a block of BM rows from m0 sees: all of seq_k, or (causal) up
// to its last row's diagonal.
MX_INLINE int key_tiles(int m0, const mx_kernel_args &a) {
  int n_end = a.seq_k;
  if (CAUSAL && m0 + BM + a.causal_offset < n_end) n_end = m0 + BM + a.causal_offset;
  return n_end > 0 ? (n_end + BN - 1) / BN : 0;
}

// Does key tile t need mask_scores for the rows from warp_row0?  Its last key
// is past seq_k, or (causal) past the first row's diagonal; the other tiles
// skip the per-score compares.
MX_INLINE bool tile_needs_mask(int t, int warp_row0, const mx_kernel_args &a) {
  return (t + 1) * BN > a.seq_k || (CAUSAL && (t + 1) * BN - 1 > warp_row0 + a.causal_offset);
}

// Masks scores of keys past seq_k, and (causal) past each row's diagonal.
MX_INLINE void mask_scores(float (&s)[MT][NT][4], int row0, int key0, int seq_k, int causal_offset) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int row = row0 + mt * 16 + lane / 4 + 8 * (e / 2);
        const int key = key0 + nt * 8 + (lane % 4) * 2 + (e % 2);
        if (key >= seq_k || (CAUSAL && key > row + causal_offset)) s[mt][nt][e] = MX_NEG_INF;
      }
}

// Key tile t's masking for the rows from warp_row0, only where it needs it.
MX_INLINE void mask_tile(float (&s)[MT][NT][4], int t, int warp_row0, const mx_kernel_args &a) {
  if (tile_needs_mask(t, warp_row0, a))
    mask_scores(s, warp_row0, t * BN, a.seq_k, a.causal_offset);
}

]]

-- A warp's rows, up to each row's alpha = exp2(old_max - new_max); shared
-- as text by both forms below.
local ROWS = [[
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      float m = MX_NEG_INF;
#pragma unroll
      for (int nt = 0; nt < NT; nt++) m = fmaxf(m, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
      m = fmaxf(row_max[mt][h], quad_max(m) * scale_log2);
      // A row that has seen only masked keys keeps max -inf; subtracting 0
      // instead keeps exp2 at 0 rather than NaN.
      const float base = m == MX_NEG_INF ? 0.f : m;
      const float alpha = fast_exp2(row_max[mt][h] - base);
      row_max[mt][h] = m;
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; e++) {
          s[mt][nt][e] = fast_exp2(fmaf(s[mt][nt][e], scale_log2, ${MINUS_BASE}));
          sum += s[mt][nt][e];
        }
      row_sum[mt][h] = row_sum[mt][h] * alpha + sum;
]]

local ONLINE = [[
// Turns scores into probabilities against the running row maximum, rescales
// the running sum and the output accumulator by exp2(old_max - new_max).
MX_INLINE void online_softmax(float (&s)[MT][NT][4], float (&row_max)[MT][2], float (&row_sum)[MT][2],
                              float (&o)[MT][DT][4], float scale_log2) {
]] .. U.fill(ROWS, { MINUS_BASE = "-base" }) .. [[
      // Once a row's maximum settles (most tiles after the first few), alpha
      // is exactly 1: skip the DT*2 multiplies when no lane of the warp needs them.
      if (__any_sync(0xffffffffu, alpha != 1.f))
#pragma unroll
        for (int dt = 0; dt < DT; dt++) { o[mt][dt][2 * h] *= alpha; o[mt][dt][2 * h + 1] *= alpha; }
    }
}
]]

-- The same step in two, one vote per tile: a kernel can pack P between the
-- exponentials and O's rescale, so its fp32 scores are dead by the time O is
-- touched (S, P and O never all hold registers).  Opt-in, so the sources of
-- the kernels that do not use it stay as they were (and keep their cache keys).
local SPLIT = [[

// online_softmax without touching O: each row's factor for O lands in alphas.
// P comes out times 2^shift (and the row sum with it), for a kernel that
// wants P on a wider range than [0, 1] at no cost (families/int8_fp8_wgmma.lua).
MX_INLINE void softmax_tile(float (&s)[MT][NT][4], float (&row_max)[MT][2], float (&row_sum)[MT][2],
                            float (&alphas)[MT][2], float scale_log2, float shift = 0.f) {
]] .. U.fill(ROWS, { MINUS_BASE = "shift - base" }) .. [[
      alphas[mt][h] = alpha;
    }
}
// O *= alphas, skipped when no lane of the warp has a row whose maximum moved.
MX_INLINE void rescale_o(float (&o)[MT][DT][4], const float (&alphas)[MT][2]) {
  bool needed = false;
#pragma unroll
  for (int mt = 0; mt < MT; mt++) needed |= alphas[mt][0] != 1.f || alphas[mt][1] != 1.f;
  if (__any_sync(0xffffffffu, needed))
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int dt = 0; dt < DT; dt++)
#pragma unroll
        for (int e = 0; e < 4; e++) o[mt][dt][e] *= alphas[mt][e / 2];
}
]]

-- opts.split: also emit softmax_tile and rescale_o.
return function(t, opts)
  return HEAD .. ONLINE .. (opts and opts.split and SPLIT or "")
end
