-- Family mxfp4: Q, K, P, V in MXFP4 (E2M1 elements, one UE8M0 scale per 32;
-- the scale is OCP's 2^(floor(log2 amax) - 2), numerics' rule, so elements
-- above 6 * scale saturate).  P keeps the two-level scale (a near no-op with
-- E8M0's range, kept so the kernels share code, as numerics does).
-- sm_120a: mma.sync kind::mxf4 scale_vec::2X.  See blocks/fp4_family.lua.
return require("blocks.fp4_family")({ kind = "mxfp4", qk = "fp4" })
