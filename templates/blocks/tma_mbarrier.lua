-- Hopper's bulk tensor copy engine (TMA) and the transaction barriers it
-- completes on.  A copy names a tensor map (the CUtensorMap the runtime
-- encodes per run into mx_kernel_args.tmap, passed as a __grid_constant__
-- parameter so its generic address is a valid descriptor address), a box
-- origin {d0, row0, head, batch}, a shared-memory destination and an mbarrier.
-- The barrier's phase flips once its one arrival (arrive.expect_tx, made by
-- the issuing thread) has happened and the copies have delivered the expected
-- bytes; consumers wait on the phase's parity.
-- The functions are cuda/tma_mbarrier.cuh; they read no constant, so
-- .constants() is empty.  require("blocks.tma_mbarrier")() is the text, as
-- is .text.
local TEXT = require("util").cuda("cuda/tma_mbarrier.cuh")
local M = { text = TEXT }
function M.constants() return "" end
return setmetatable(M, { __call = function() return TEXT end })
