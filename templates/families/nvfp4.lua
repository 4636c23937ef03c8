-- Family nvfp4: Q, K, P, V in NVFP4 (E2M1 elements, one UE4M3 scale per 16),
-- P with the two-level scale, smooth-K.  Exact emulation on sm_80..sm_90a
-- (dequantize to bf16, mma.sync m16n8k16), native block-scaled
-- mma.sync kind::mxf4nvf4 m16n8k64 on sm_120a.  Design, workspace layout and
-- where the two targets may differ: blocks/fp4_family.lua.
return require("blocks.fp4_family")({ kind = "nvfp4", qk = "fp4" })
