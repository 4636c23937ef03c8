-- Epilogue: O = acc / row_sum in the output type, and optionally the natural-
-- log LSE.  Rows past seq_q and columns past D are not written.
local U = require("util")

local store_pair = {
  -- align >= 2: D and every stride are even, so a pair is one 4-byte store.
  wide = [[
      if (col < D) *(u32 *)(out + col) = pack_${OUT}(o[mt][dt][2 * h] * inv, o[mt][dt][2 * h + 1] * inv);]],
  narrow = [[
      if (col < D) out[col] = to_${OUT}(o[mt][dt][2 * h] * inv);
      if (col + 1 < D) out[col + 1] = to_${OUT}(o[mt][dt][2 * h + 1] * inv);]],
}

return function(p)
  local store = p.align >= 2 and store_pair.wide or store_pair.narrow
  return U.fill([[
MX_INLINE void write_output(const float (&o)[MT][DT][4], const float (&row_max)[MT][2], const float (&row_sum)[MT][2],
                            u16 *o_head, i64 o_ss, float *lse_head, int row0, int seq_q) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const float l = quad_sum(row_sum[mt][h]);
      const float inv = l > 0.f ? 1.f / l : 0.f;   // a row that saw no key is all zeros
      const int row = row0 + mt * 16 + lane / 4 + 8 * h;
      if (row >= seq_q) continue;
      u16 *out = o_head + row * o_ss;
#pragma unroll
      for (int dt = 0; dt < DT; dt++) {
        const int col = dt * 8 + (lane % 4) * 2;
]] .. store .. [[

      }
      if (WRITE_LSE && lane % 4 == 0)
        lse_head[row] = l > 0.f ? (row_max[mt][h] + fast_log2(l)) * 0.6931471805599453f : MX_NEG_INF;
    }
}
]], { OUT = p.out_dtype })
end
