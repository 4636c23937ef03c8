-- The quantization kernels that run before the FP4 attention kernel, writing
-- the workspace it reads (layout in blocks/fp4_family.lua), bit-identical to
-- numerics/ (cuda/quant_fp4.cuh says how):
--   kmean    (smooth_k only) K's channel mean per kv head, fp64 sums
--   quant_kv K rows (minus the mean) along head_dim; V^T rows along keys
--   quant_q  Q rows along head_dim; with lse and smooth_k also q . mean
-- cuda/quant_fp4.cuh holds the helpers and kmean; quant_kv and quant_q are
-- cuda/quant_fp4_rows.cuh's (FP4 Q and K) or cuda/quant_fp4_int8.cuh's
-- (nvfp4-int8qk: SageAttention's INT8 blocks, after cuda/scale_recip.cuh).
-- require("blocks.fp4_quant")(p, name) is the kernels' symbols (#defines of
-- name_kmean, name_quant_kv, name_quant_q) and the text for p.qk.
local U = require("util")
local COMMON = U.cuda("cuda/quant_fp4.cuh")
local FP4_ROWS = U.cuda("cuda/quant_fp4_rows.cuh")
local INT8_ROWS = require("blocks.scale_recip") .. "\n" .. U.cuda("cuda/quant_fp4_int8.cuh")

local M = {}
function M.constants(name)
  return U.fill("#define KERNEL_NAME_kmean ${NAME}_kmean\n#define KERNEL_NAME_quant_kv ${NAME}_quant_kv\n" ..
                "#define KERNEL_NAME_quant_q ${NAME}_quant_q\n", { NAME = name })
end
function M.text(p) return COMMON .. "\n" .. (p.qk == "int8" and INT8_ROWS or FP4_ROWS) end
setmetatable(M, { __call = function(_, p, name) return M.constants(name) .. M.text(p) end })

-- What both FP4 attention kernels' sources (blocks/fp4_family.lua's mma
-- variant, blocks/fp4_wgmma.lua) begin with: the banner, the prelude, the
-- kernel's constants and symbol, the formats and these quantization kernels.
function M.source_start(t, p, constants, name, canonical)
  return table.concat({ U.banner(canonical), require("blocks.prelude")(t), constants .. "#define KERNEL_NAME " .. name .. "\n",
                        require("blocks.fp4_formats")(p), M(p, name) }, "\n")
end
return M
