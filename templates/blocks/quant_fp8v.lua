-- FP8 V: V -> E4M3 per channel, transposed and key-permuted, for the quant kernel
-- (cuda/quant_fp8v.cuh, after the E4M3 conversions of cuda/e4m3.cuh).  It
-- reads the constants of the kernel it is part of, so .constants() is empty;
-- require("blocks.quant_fp8v")() is the text.
local U = require("util")
local TEXT = U.cuda("cuda/e4m3.cuh") .. "\n" .. U.cuda("cuda/quant_fp8v.cuh")
return setmetatable({ text = TEXT, constants = function() return "" end }, { __call = function() return TEXT end })
