-- The warpgroup MMA building block of int8-fp8's wgmma variant
-- (cuda/wgmma_int8.cuh after cuda/wgmma_sync.cuh): descriptors, fences,
-- S = Q8 K8^T and P V.  It reads no constant (the MMA widths come from the
-- accumulators' types), so .constants() is empty;
-- require("blocks.wgmma_int8")() is the text.
local U = require("util")
local TEXT = U.cuda("cuda/wgmma_sync.cuh") .. U.cuda("cuda/wgmma_int8.cuh")   -- fences, then the products
return setmetatable({ text = TEXT, constants = function() return "" end }, { __call = function() return TEXT end })
