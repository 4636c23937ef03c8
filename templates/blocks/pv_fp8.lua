-- O += P V on the FP8 tensor cores (P and V in E4M3)
-- (cuda/pv_fp8.cuh).  It reads the constants of the kernel it is part of, so
-- .constants() is empty; require("blocks.pv_fp8")() is the text.
local U = require("util")
local TEXT = U.cuda("cuda/pv_fp8.cuh")
return setmetatable({ text = TEXT, constants = function() return "" end }, { __call = function() return TEXT end })
