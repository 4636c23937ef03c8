-- The three kernels that run before an INT8 family's attention kernel
-- (cuda/quant_kernels.cuh): stats, quant_kv, quant_q.  They use the helpers
-- of blocks/quant_int8.lua (and quant_fp8v.lua for FP8 V) and the workspace
-- sections of blocks/attn_int8.lua.
local U = require("util")
local TEXT = U.cuda("cuda/quant_kernels.cuh")

-- A quant warp loads its rows, then computes, then stores, so the pass waits
-- on memory unless many warps share an SM.  At D=32 and 64 six blocks an SM
-- fit in 80 registers without spills; at D=40, 48, 56, whose rows end in
-- padding, 8-96 bytes spill.  int8-fp8 D=64 N=4096 B=4 H=32: 153 -> 135 us
-- (bench/NOTES.md, 2026-11-29).  Above, the compiler's choice: at D=128 it
-- then took 94 registers (five blocks); forcing six spilled and
-- measured slower, and even a minimum of one block changed its register
-- heuristic (int8-f16: 96 -> 108), so no minimum is written there.  Since
-- the pass codes padding a word at a time (2026-11-29) it takes 80
-- (int8-fp8) and 70 (int8-f16) on its own.
-- D=96 joins D=32 and 64 since a lane keeps three mean sets there, not six
-- (quant_int8's MEAN_PERIOD): 80 registers without spills in both families
-- (127 before; without the minimum ptxas picks 80 and spills 4 bytes in
-- int8-fp8).  Not yet timed on a GPU.  PER_THREAD's blocks are twice the
-- size (eight warps), so half the blocks give the same 768 threads an SM.
-- The quant kernel's warps a block: with per-thread groups a 128-key window
-- of K (eight 16-key blocks), else four 16-row blocks.
local function quant_warps(per_thread) return per_thread and 8 or 4 end

-- The minimum of blocks an SM in the launch bounds (0: none).
local function quant_min_blocks(head_dim, per_thread)
  if head_dim <= 96 and head_dim % 32 == 0 then return 768 // (32 * quant_warps(per_thread)) end
  return 0
end

local function constants(p)
  return U.fill([[
#define KERNEL_NAME_stats ${NAME}_stats
#define KERNEL_NAME_quant_kv ${NAME}_quant_kv
#define KERNEL_NAME_quant_q ${NAME}_quant_q
constexpr int QUANT_WARPS = ${WARPS}, QUANT_THREADS = 32 * QUANT_WARPS;   // the launch plan reads quant_warps too
constexpr int QUANT_MIN_BLOCKS = ${MIN_BLOCKS};
]], { NAME = p.name, WARPS = quant_warps(p.per_thread), MIN_BLOCKS = quant_min_blocks(p.head_dim, p.per_thread) })
end

-- require("blocks.quant_kernels")(p) is the kernels after their constants,
-- p: name (the attention kernel's symbol, theirs are it plus a suffix),
-- head_dim, per_thread (the kernels' PER_THREAD); .constants(p) and .text
-- apart; .warps(per_thread) is their block's warps, for the launch plan.
local M = { warps = quant_warps, constants = constants, text = TEXT }
return setmetatable(M, { __call = function(_, p) return constants(p) .. TEXT end })
