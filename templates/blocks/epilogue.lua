-- The epilogue (cuda/epilogue.cuh): O normalized into the output type, the
-- LSE.  .constants(p) is what it reads (p.out_dtype, p.align), .text the
-- functions; require("blocks.epilogue")(p) is both, and with
-- p.persistent_deferred also cuda/epilogue_deferred.cuh (the persistent
-- wgmma kernel's output in two steps; only that kernel calls it).
local U = require("util")
local TEXT, DEFERRED = U.cuda("cuda/epilogue.cuh"), U.cuda("cuda/epilogue_deferred.cuh")

local M = { text = TEXT, deferred = DEFERRED }
function M.constants(p)
  return string.format("constexpr bool OUT_BF16 = %s;   // O is bf16, else fp16\n" ..
                       "constexpr bool STORE_PAIRS = %s;   // align >= 2: a pair of outputs is one 4-byte store\n",
                       tostring(p.out_dtype == "bf16"), tostring(p.align >= 2))
end
return setmetatable(M, { __call = function(_, p)
  return M.constants(p) .. TEXT .. (p.persistent_deferred and "\n" .. DEFERRED or "")
end })
