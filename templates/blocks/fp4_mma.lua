-- The FP4 families' tensor-core products (cuda/fp4_mma.cuh): mma_fp4, the
-- sm_120a block-scaled m16n8k64; mma_s8, nvfp4-int8qk's m16n8k32 s8; the
-- shared-memory word loads.  It reads MXFP4 (blocks/fp4_formats.lua), so
-- .constants() is empty; require("blocks.fp4_mma")(p) is the text.
local U = require("util")
local TEXT = U.cuda("cuda/fp4_mma.cuh")

local M = { text = TEXT }
function M.constants() return "" end
return setmetatable(M, { __call = function() return TEXT end })
