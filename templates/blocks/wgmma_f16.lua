-- The warpgroup MMA building block (sm_90a): shared-memory matrix descriptors
-- and the two products of attention, each one wgmma.mma_async per 16-deep
-- k-step for a warpgroup's 64 query rows.
--
-- Accumulator (and register-A) layout of m64nN, from the PTX ISA's wgmma
-- fragment figures: warp w of the warpgroup owns rows 16w..16w+15; lane
-- 4g+t holds, for each 8-column chunk j, d[j][0..1] = (row g, cols 8j+2t, +1)
-- and d[j][2..3] = (row g+8, same cols): the mma.sync m16n8 pattern, so the
-- softmax and epilogue blocks of the mma.sync family apply unchanged with
-- MT = 1.  The A fragment of a k16 step from registers is the same pattern
-- over 16 columns, so P's bf16/f16 pairs are packed straight from S.
--
-- Shared-memory tiles are what TMA writes with a 2W-byte swizzle (W = 64, 32
-- or 16 elements per panel row: 128B, 64B or 32B swizzle).  A tile of R rows
-- x D_PAD columns is D_PAD/W panels, each R rows of 2W bytes.  The swizzle
-- XORs address bits [4, 4+log2(2W/16)) (the 16-byte chunk in the row) with
-- bits [7, ...) (the 128-byte line): for 128B, chunk c of row r sits at chunk
-- c ^ (r % 8).  TMA and wgmma both apply it to the absolute shared address,
-- so panels start on 8-row (16W-byte) boundaries and the descriptor's
-- base-offset field stays 0.
--
-- Descriptor (PTX ISA "matrix descriptor"): bits 0-13 start address >> 4,
-- 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4, 62-63
-- swizzle (1 = 128B, 2 = 64B, 3 = 32B).
--   K-major (Q as A, K as B of S = Q K^T; rows of d-contiguous elements):
--     SBO = 8 rows * 2W bytes (next 8-row group); LBO unused with a swizzle
--     (encoded 1); a k16 step is +32 bytes inside a panel, a new panel every
--     W/16 steps.
--   MN-major (V as B of O = P V, imm-trans-b = 1; V rows are keys with d
--     contiguous, i.e. N contiguous): LBO = bytes from one W-column panel to
--     the next along N (= the panel size), SBO = 8 key rows * 2W bytes; a
--     k16 step is +16 rows.
local U = require("util")

local function operand_list(n, fmt, first)
  local t = {}
  for i = 0, n - 1 do t[#t + 1] = string.format(fmt, first + i) end
  return table.concat(t, ", ")
end

-- "+f"(d[0][j][e]) for every accumulator register, in fragment order.
local function acc_constraints(chunks)
  local t = {}
  for j = 0, chunks - 1 do
    for e = 0, 3 do t[#t + 1] = string.format('"+f"(d[0][%d][%d])', j, e) end
  end
  return table.concat(t, ", ")
end

-- d (+)= A(smem) * B(smem)^T, m64 n`n` k16, both operands K-major.
local function mma_ss(name, n, dtype)
  local regs = n // 2
  return string.format([[
MX_INLINE void %s(float (&d)[1][%d][4], u64 desc_a, u64 desc_b, int accumulate) {
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %%%d, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, %%%d, %%%d, p, 1, 1, 0, 0; }"
               : %s
               : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
]], name, n // 8, regs + 2, n, dtype, dtype, operand_list(regs, "%%%d", 0), regs, regs + 1,
    acc_constraints(n // 8))
end

-- d += A(registers) * B(smem), m64 n`n` k16, B MN-major (imm-trans-b = 1).
local function mma_rs(name, n, dtype)
  local regs = n // 2
  return string.format([[
MX_INLINE void %s(float (&d)[1][%d][4], const u32 (&a)[4], u64 desc_b) {
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %%%d, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, {%s}, %%%d, p, 1, 1, 1; }"
               : %s
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
]], name, n // 8, regs + 5, n, dtype, dtype, operand_list(regs, "%%%d", 0), operand_list(4, "%%%d", regs),
    regs + 4, acc_constraints(n // 8))
end

-- The fixed text: the descriptor (cuda/wgmma_f16.cuh, reading SWIZZLE_MODE),
-- the fences, waits and register pins (cuda/wgmma_sync.cuh, shared with the
-- 8-bit wgmma block).
-- The two products' wrappers are written here because their asm lists one
-- operand per accumulator register, N/2 of them, which CUDA cannot spell by a
-- constant (CUTLASS writes out every N instead).
local DESC, SYNC = U.cuda("cuda/wgmma_f16.cuh"), U.cuda("cuda/wgmma_sync.cuh")

-- p: p.dtype (bf16 or f16), p.bn (N of S), p.d_pad (N of O), p.swizzle_mode
-- (1|2|3).  .constants(p) is the constant the text reads, .text(p) the
-- functions; require("blocks.wgmma_f16")(p) is both.
local M = {}
function M.constants(p) return string.format("constexpr u64 SWIZZLE_MODE = %d;\n", p.swizzle_mode) end
function M.text(p) return DESC .. SYNC .. mma_ss("wgmma_qk", p.bn, p.dtype) .. mma_rs("wgmma_pv", p.d_pad, p.dtype) end
return setmetatable(M, { __call = function(_, p) return M.constants(p) .. M.text(p) end })
