-- Online softmax, accumulators and masking (cuda/softmax.cuh).  It reads
-- only the kernel's shape constants, so .constants() is empty.
-- require("blocks.softmax")(t) is the text; t.exp_poly routes part of the
-- scores' exponentials through blocks/exp2.lua's polynomial.
local U = require("util")
local E = require("blocks.exp2")
local TEXT = U.cuda("cuda/softmax.cuh")

local M = { text = TEXT }
function M.constants() return "" end
return setmetatable(M, { __call = function(_, t) return E.functions(t) .. E.apply(TEXT, t) end })
