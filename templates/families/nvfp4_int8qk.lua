-- Family nvfp4-int8qk: scores in INT8 (SageAttention's per-block scales: 128
-- query rows, 64 keys; smooth-K), P and V in NVFP4 with the two-level P
-- scale.  The design notes' deployment rule: FP4 scores break on peaked
-- attention, INT8 scores do not.  Scores: mma.sync m16n8k32 s8 on every
-- target; P.V as in nvfp4 (emulated, or kind::mxf4nvf4 on sm_120a).
-- See blocks/fp4_family.lua.
return require("blocks.fp4_family")({ kind = "nvfp4", qk = "int8" })
