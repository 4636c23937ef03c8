-- Family int8-f16: S = Q K^T on the INT8 tensor cores (per-16-row/-key scales,
-- smooth-K), P.V in fp16 (P and V fp16, f32 accumulation).  SageAttention's
-- first kernel on mma.sync, sm_80+.  The kernels and the workspace are
-- described in blocks/attn_int8.lua.
return require("blocks.attn_int8")("int8-f16", "f16")
