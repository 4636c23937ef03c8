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

-- The mma.sync f16 kernel's output through shared memory (p.staged; needs
-- align=8 and the kernel's RS): each warp stages its normalized rows in its
-- own Q rows, which no other warp reads and which are dead after the last
-- tile, then stores 16-byte chunks, each warp instruction two whole 256-byte
-- rows, instead of 4-byte stores that each fill half of eight 32-byte sectors.
local STAGED = [[
MX_INLINE void write_output_staged(const float (&o)[MT][DT][4], const float (&row_max)[MT][2], const float (&row_sum)[MT][2],
                                   u32 stage, u16 *o_head, i64 o_ss, float *lse_head, int row0, int seq_q) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const float l = quad_sum(row_sum[mt][h]);
      const float inv = l != 0.f ? 1.f / l : 0.f;   // a row that saw no key is all zeros; a NaN l stays NaN
      const int r = mt * 16 + lane / 4 + 8 * h;
#pragma unroll
      for (int dt = 0; dt < DT; dt++) {
        const u32 x = pack_${OUT}(o[mt][dt][2 * h] * inv, o[mt][dt][2 * h + 1] * inv);
        asm volatile("st.shared.u32 [%0], %1;" :: "r"(stage + (r * RS + dt * 8 + (lane % 4) * 2) * 2), "r"(x) : "memory");
      }
      if (WRITE_LSE && lane % 4 == 0 && row0 + r < seq_q) lse_head[row0 + r] = row_lse(row_max[mt][h], l);
    }
  __syncwarp();
  constexpr int CHUNKS = D / 8;        // 16-byte chunks of a row (align=8: D % 8 == 0)
#pragma unroll 4
  for (int i = lane; i < MT * 16 * CHUNKS; i += 32) {
    const int r = i / CHUNKS, c = i % CHUNKS;
    if (row0 + r >= seq_q) continue;
    u32 x0, x1, x2, x3;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(x0), "=r"(x1), "=r"(x2), "=r"(x3) : "r"(stage + (r * RS + c * 8) * 2) : "memory");
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};"
                 :: "l"(o_head + (i64)(row0 + r) * o_ss + c * 8), "r"(x0), "r"(x1), "r"(x2), "r"(x3) : "memory");
  }
}
]]

-- A row's natural-log LSE from its base-2 max and its sum (-inf for a row
-- that saw no key), shared by both forms.
local ROW_LSE = [[
MX_INLINE float row_lse(float m, float l) { return l != 0.f ? (m + fast_log2(l)) * 0.6931471805599453f : MX_NEG_INF; }
]]

-- The output of the persistent wgmma kernel without a causal mask in two
-- steps (one 64-row warpgroup tile, align=8; blocks/wgmma_overlap.lua,
-- persistent_kernel_deferred): pack_output normalizes O into packed pairs
-- when a unit ends, store_output stores them during the next unit.  The
-- store reads only the packed registers: reading O there, defined by the
-- last P V's wgmma, made ptxas wait for the new unit's S product (C7517)
-- and serialize every wgmma.
local DEFERRED = [[
MX_INLINE void pack_output(u32 (&packed)[2][DT], float (&lse)[2], const float (&o)[1][DT][4],
                           const float (&row_max)[1][2], const float (&row_sum)[1][2]) {
  float sums[2];
#pragma unroll
  for (int h = 0; h < 2; h++) sums[h] = quad_sum(row_sum[0][h]);
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const float l = sums[h];
    const float inv = l != 0.f ? 1.f / l : 0.f;   // a row that saw no key is all zeros; a NaN l stays NaN
#pragma unroll
    for (int dt = 0; dt < DT; dt++) packed[h][dt] = pack_${OUT}(o[0][dt][2 * h] * inv, o[0][dt][2 * h + 1] * inv);
    lse[h] = WRITE_LSE ? row_lse(row_max[0][h], l) : 0.f;
  }
}
MX_INLINE void store_output(const u32 (&packed)[2][DT], const float (&lse)[2], u16 *o_head, i64 o_ss, float *lse_head,
                            int row0, int seq_q) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int row = row0 + lane / 4 + 8 * h;
    u16 *out = o_head + row * o_ss;
#pragma unroll
    for (int dt = 0; dt < DT; dt++)
      if (row < seq_q && dt * 8 < D) *(u32 *)(out + dt * 8 + (lane % 4) * 2) = packed[h][dt];
    if (WRITE_LSE && lane % 4 == 0 && row < seq_q) lse_head[row] = lse[h];
  }
}
]]

return function(p)
  local store = p.align >= 2 and store_pair.wide or store_pair.narrow
  local staged = p.staged and U.fill(STAGED, { OUT = p.out_dtype }) or ""
  local deferred = p.persistent_deferred and U.fill(DEFERRED, { OUT = p.out_dtype }) or ""
  return ROW_LSE .. staged .. deferred .. U.fill([[
MX_INLINE void write_output(const float (&o)[MT][DT][4], const float (&row_max)[MT][2], const float (&row_sum)[MT][2],
                            u16 *o_head, i64 o_ss, float *lse_head, int row0, int seq_q) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const float l = quad_sum(row_sum[mt][h]);
      const float inv = l != 0.f ? 1.f / l : 0.f;   // a row that saw no key is all zeros; a NaN l stays NaN
      const int row = row0 + mt * 16 + lane / 4 + 8 * h;
      if (row >= seq_q) continue;
      u16 *out = o_head + row * o_ss;
#pragma unroll
      for (int dt = 0; dt < DT; dt++) {
        const int col = dt * 8 + (lane % 4) * 2;
]] .. store .. [[

      }
      if (WRITE_LSE && lane % 4 == 0) lse_head[row] = row_lse(row_max[mt][h], l);
    }
}
]], { OUT = p.out_dtype })
end
