-- Tile loads, global -> shared by cp.async (cuda/load.cuh).  .constants(p)
-- is the constant it reads (p.align: the copy width), .text the functions;
-- require("blocks.load")(p) is both.
local U = require("util")
local TEXT = U.cuda("cuda/load.cuh")

local M = { text = TEXT }
function M.constants(p)
  return string.format("constexpr int ALIGN = %d;   // elements per vector access (8, 4, 2 or 1)\n", p.align)
end
return setmetatable(M, { __call = function(_, p) return M.constants(p) .. TEXT end })
