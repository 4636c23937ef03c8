-- The FP4 element and scale formats (cuda/fp4_formats.cuh): E2M1 codes, the
-- UE4M3 / UE8M0 block scales and their decoders, the input load.
-- .constants(p) is what the file reads (p.kind, p.dtype), .text the
-- functions; require("blocks.fp4_formats")(p) is both.
local U = require("util")
local TEXT = U.cuda("cuda/fp4_formats.cuh")

local M = { text = TEXT }
function M.constants(p)
  return string.format("constexpr int PB = %d;                 // elements per FP4 scale block\n" ..
                       "constexpr bool MXFP4 = %s;   // UE8M0 block scales (else NVFP4's UE4M3)\n" ..
                       "constexpr bool IN_BF16 = %s;   // Q, K and V are bf16, else fp16\n",
                       p.kind == "mxfp4" and 32 or 16, tostring(p.kind == "mxfp4"), tostring(p.dtype == "bf16"))
end
return setmetatable(M, { __call = function(_, p) return M.constants(p) .. TEXT end })
