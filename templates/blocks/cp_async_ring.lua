-- The cp.async K/V ring of the mma.sync kernels (cuda/cp_async_ring.cuh):
-- kv_ring_start and kv_ring_next.  It reads only STAGES, so .constants(p)
-- is empty; require("blocks.cp_async_ring")() is the text.
local U = require("util")
local TEXT = U.cuda("cuda/cp_async_ring.cuh")

local M = { text = TEXT }
function M.constants() return "" end
return setmetatable(M, { __call = function() return TEXT end })
