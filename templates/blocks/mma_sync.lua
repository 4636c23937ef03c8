-- The mma.sync building block (cuda/mma_sync.cuh): ldmatrix and the m16n8k16
-- product.  .constants(p) is the constant it reads (p.dtype: bf16 or f16
-- operands), .text the functions; require("blocks.mma_sync")(p) is both.
local U = require("util")
local TEXT = U.cuda("cuda/mma_sync.cuh")

local M = { text = TEXT }
function M.constants(p)
  return string.format("constexpr bool MMA_BF16 = %s;   // mma.sync operands bf16, else fp16\n",
                       tostring(p.dtype == "bf16"))
end
return setmetatable(M, { __call = function(_, p) return M.constants(p) .. TEXT end })
