-- Family int8-fp8: S = Q K^T on the INT8 tensor cores (per-16-row/-key scales,
-- smooth-K), P.V on the FP8 tensor cores: P*448 and V (per-channel scale) in
-- E4M3, f32 accumulation.  SageAttention2's kernel on mma.sync, sm_89+.  The
-- kernels and the workspace are described in blocks/attn_int8.lua.
return require("blocks.attn_int8")("int8-fp8", "fp8")
