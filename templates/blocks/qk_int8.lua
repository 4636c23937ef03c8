-- S = Q8 K8^T on the INT8 tensor cores, dequantized in base 2
-- (cuda/qk_int8.cuh).  It reads the constants of the kernel it is part of, so
-- .constants() is empty; require("blocks.qk_int8")() is the text.
local U = require("util")
local TEXT = U.cuda("cuda/qk_int8.cuh")
return setmetatable({ text = TEXT, constants = function() return "" end }, { __call = function() return TEXT end })
