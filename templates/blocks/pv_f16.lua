-- O += P V in fp16, the int8-f16 family's second product (cuda/pv_f16.cuh).
-- It reads IN_BF16, which blocks/quant_int8.lua's constants define (the two
-- come together), so .constants() is empty; require("blocks.pv_f16")() is
-- the text.
local U = require("util")
local TEXT = U.cuda("cuda/pv_f16.cuh")

local M = { text = TEXT }
function M.constants() return "" end
return setmetatable(M, { __call = function() return TEXT end })
