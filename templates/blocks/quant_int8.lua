-- The INT8 families' quantization helpers (cuda/quant_int8.cuh, after
-- cuda/scale_recip.cuh): loads of 16-row blocks, block and per-thread-group
-- scales, the codes, the smooth-K term.  .constants(p) is what they read
-- (p.dtype, p.align), .text the functions; require("blocks.quant_int8")(p)
-- is both.
local U = require("util")
local TEXT = require("blocks.scale_recip") .. U.cuda("cuda/quant_int8.cuh")

local M = { text = TEXT }
function M.constants(p)
  return string.format("constexpr bool IN_BF16 = %s;   // Q, K and V are bf16, else fp16\n" ..
                       "constexpr int VEC = %d;   // elements a quantization pass loads at once (the plan's alignment)\n",
                       tostring(p.dtype == "bf16"), p.align)
end
return setmetatable(M, { __call = function(_, p) return M.constants(p) .. TEXT end })
