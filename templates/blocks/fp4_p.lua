-- P, the softmax operand of P.V, quantized to FP4 in registers, one key tile
-- at a time (cuda/fp4_p.cuh's row and block scales, then quantize_p:
-- cuda/fp4_p_emulated.cuh's bf16 fragments of m16n8k16 on sm_80/sm_90a, or
-- cuda/fp4_p_native.cuh's packed E2M1 fragments and scale registers of the
-- sm_120a m16n8k64).  It reads only the kernel's constants, so .constants()
-- is empty; require("blocks.fp4_p")(p) is the text for p.native.
local U = require("util")
local COMMON = U.cuda("cuda/fp4_p.cuh")
local EMULATED = U.cuda("cuda/fp4_p_emulated.cuh")
local NATIVE = U.cuda("cuda/fp4_p_native.cuh")

local M = {}
function M.constants() return "" end
function M.text(p) return COMMON .. (p.native and NATIVE or EMULATED) end
return setmetatable(M, { __call = function(_, p) return M.text(p) end })
