-- The warpgroup MMA building block of the int8-fp8 family's wgmma variant
-- (sm_90a): shared-memory matrix descriptors and the two products of
-- attention for a warpgroup's 64 query rows, one wgmma.mma_async per k32 step.
--   S  = Q8 K8^T   m64n<BN>k32 .s32.s8.s8, A = Q8 and B = K8 from shared
--                  memory, both K-major (rows of D32 int8 channels);
--   O (+)= P V     m64n<DV>k32 .f32.e4m3.e4m3, A = P*448 from registers,
--                  B = V^T from shared memory, K-major (rows of keys).  FP8
--                  wgmma has no transpose for B: that is why V^T exists.
--
-- Register layouts (PTX ISA, "Matrix Fragments for wgmma.mma_async.m64nNk32";
-- CUTLASS's ALayout_64x32 and CLayout_64xN say the same): warp w of the
-- warpgroup owns rows 16w..16w+15; lane 4g+t holds
--   A (8-bit, 4 registers of 4 bytes, lowest k in the lowest byte):
--     a0 = row g,   k 4t..4t+3     a1 = row g+8, k 4t..4t+3
--     a2 = row g,   k 16+4t..      a3 = row g+8, k 16+4t..
--   D (.s32 or .f32, N/2 registers): for each 8-column chunk j,
--     d[j][0..1] = row g, cols 8j+2t, +1;  d[j][2..3] = row g+8, same cols.
-- Per warp, both are exactly mma.sync m16n8k32's A and m16n8's C, so the
-- softmax and epilogue blocks apply with MT = 1, and P's fragment is packed
-- from S as blocks/pv_fp8.lua packs it, in the key order V^T is stored in
-- (blocks/quant_fp8v.lua: stored position 4t+i of a 16-key group holds key
-- 2t + (i&1) + 8*(i>>1)).
--
-- Shared-memory tiles are what TMA writes with a W-byte swizzle (W = 128, 64
-- or 32 bytes = int8/e4m3 elements per panel row).  A tile of R rows x C
-- bytes is C/W panels of R rows x W bytes; the swizzle XORs the 16-byte chunk
-- of a row with the row's index mod (W/16), over 8-row atoms of 8W bytes.
-- Panels start on atom boundaries, so the descriptor's base offset stays 0.
--
-- Descriptor (PTX ISA "matrix descriptor"): bits 0-13 start address >> 4,
-- 16-29 leading byte offset >> 4 (unused by swizzled K-major: 1), 32-45
-- stride byte offset >> 4 (K-major: the next 8-row group, 8 * W bytes),
-- 62-63 swizzle (1 = 128B, 2 = 64B, 3 = 32B).  A k32 step is 32 bytes along
-- the row, inside one panel: +2 on the start address field.
local U = require("util")

local function operand_list(n, fmt, first)
  local t = {}
  for i = 0, n - 1 do t[#t + 1] = string.format(fmt, first + i) end
  return table.concat(t, ", ")
end

-- kind: "r" or "f", each read and written ("+").
local function acc_constraints(chunks, kind)
  local t = {}
  for j = 0, chunks - 1 do
    for e = 0, 3 do t[#t + 1] = string.format('"+%s"(d[0][%d][%d])', kind, j, e) end
  end
  return table.concat(t, ", ")
end

-- d (+)= A(smem) * B(smem)^T, m64 n`n` k32, s8 x s8 -> s32, both K-major.
local function mma_qk(n)
  local regs = n // 2
  return string.format([[
MX_INLINE void wgmma_qk(int (&d)[1][%d][4], u64 desc_a, u64 desc_b, int accumulate) {
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %%%d, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n%dk32.s32.s8.s8 {%s}, %%%d, %%%d, p; }"
               : %s
               : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
]], n // 8, regs + 2, n, operand_list(regs, "%%%d", 0), regs, regs + 1, acc_constraints(n // 8, "r"))
end

-- d (+)= A(registers) * B(smem), m64 n`n` k32, e4m3 x e4m3 -> f32, B K-major.
local function mma_pv(n, name)
  local regs = n // 2
  return string.format([[
MX_INLINE void %s(float (&d)[1][%d][4], const u32 (&a)[4], u64 desc_b, int accumulate) {
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %%%d, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n%dk32.f32.e4m3.e4m3 {%s}, {%s}, %%%d, p, 1, 1; }"
               : %s
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}
]], name or "wgmma_pv", n // 8, regs + 5, n, operand_list(regs, "%%%d", 0), operand_list(4, "%%%d", regs), regs + 4,
    acc_constraints(n // 8, "f"))
end

-- p.bn: N of S (keys per tile); p.dv: N of P V (O's columns, or a slice of them).
-- wgmma_rowsum: P times an 8-column B (rowsum_mma's product).
return function(p)
  return [[
// mode: the swizzle field (SWZ_QK, SWZ_V: 1 = 128B, 2 = 64B, 3 = 32B).
MX_INLINE u64 smem_desc(u32 addr, u32 sbo, u64 mode) {
  return (u64)((addr >> 4) & 0x3FFF) | ((u64)1 << 16) | ((u64)((sbo >> 4) & 0x3FFF) << 32) | (mode << 62);
}
]] .. require("blocks.wgmma_common").SYNC .. [[
template <int C> MX_INLINE void reg_fence(int (&d)[1][C][4]) {
#pragma unroll
  for (int j = 0; j < C; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) asm volatile("" : "+r"(d[0][j][e]) :: "memory");
}
MX_INLINE void reg_fence(u32 &x) { asm volatile("" : "+r"(x) :: "memory"); }
]] .. mma_qk(p.bn) .. mma_pv(p.dv) .. mma_pv(8, "wgmma_rowsum")
end
