-- O += P V in fp16, the int8-f16 family's second product (cuda/pv_f16.cuh).
-- .constants(p) is what it reads (p.dtype: bf16 V is converted to fp16),
-- .text the functions; require("blocks.pv_f16")(p) is both.
local U = require("util")
local TEXT = U.cuda("cuda/pv_f16.cuh")

local M = { text = TEXT }
function M.constants(p)
  return string.format("constexpr bool IN_BF16 = %s;   // Q, K and V are bf16, else fp16\n", tostring(p.dtype == "bf16"))
end
return setmetatable(M, { __call = function(_, p) return M.constants(p) .. TEXT end })
