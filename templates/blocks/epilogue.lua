-- The epilogue (cuda/epilogue.cuh): O normalized into the output type, the
-- LSE.  .constants(p) is what it reads (p.out_dtype, p.align), .text the
-- functions; require("blocks.epilogue")(p) is both.
local U = require("util")
local TEXT = U.cuda("cuda/epilogue.cuh")

local M = { text = TEXT }
function M.constants(p)
  return string.format("constexpr bool OUT_BF16 = %s;   // O is bf16, else fp16\n" ..
                       "constexpr bool STORE_PAIRS = %s;   // align >= 2: a pair of outputs is one 4-byte store\n",
                       tostring(p.out_dtype == "bf16"), tostring(p.align >= 2))
end
return setmetatable(M, { __call = function(_, p) return M.constants(p) .. TEXT end })
