-- Online softmax, accumulators and masking (cuda/softmax.cuh).  It reads
-- only the kernel's shape constants, so .constants() is empty;
-- require("blocks.softmax")(t) is the text.
local U = require("util")
local TEXT = U.cuda("cuda/softmax.cuh")

local M = { text = TEXT }
function M.constants() return "" end
return setmetatable(M, { __call = function() return TEXT end })
