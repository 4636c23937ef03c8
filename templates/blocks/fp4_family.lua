-- The FP4 attention families (nvfp4, mxfp4, nvfp4-int8qk) from one template.
-- families/<name>.lua only picks { kind = nvfp4|mxfp4, qk = fp4|int8 }.
--
-- Launch plan (one workspace, kernels in order):
--   kmean (smooth_k)  K's channel mean, fp64 sums          blocks/fp4_quant.lua
--   quant_kv          K (minus the mean) along head_dim; V^T along keys
--   quant_q           Q along head_dim (and q . mean when lse and smooth_k)
--   attention         FlashAttention-2 loop over key tiles, below
--
-- variant=wgmma (sm_90a, the default there up to head_dim 128): another
-- kernel, blocks/fp4_wgmma.lua and cuda/fwd_fp4_wgmma.cuh, over bf16
-- operands the same quantization kernels write exactly dequantized.
-- Two targets from the mma.sync kernel below (variant=mma):
--   arch != sm_120a (Hopper sm_90a, sm_80+): exact emulation.  Each key tile
--     lands packed in shared memory, all threads dequantize it once to bf16
--     (E2M1 x UE4M3 has at most 6 significant bits and E2M1 x UE8M0 is a
--     power-of-two scaling: both exact in bf16), and the f16 family's
--     ldmatrix + mma.sync m16n8k16 bf16 path runs on the result.
--   sm_120a: the packed tiles feed mma.sync ... block_scale m16n8k64 straight
--     from shared memory (blocks/fp4_mma.lua); P is requantized to FP4 in
--     registers (blocks/fp4_p.lua).
-- nvfp4-int8qk scores come from mma.sync m16n8k32 s8 on both targets.
--
-- P and s1.  P^ * s2 goes through the MMA; s1 (per row and per tile, fp32)
-- is applied after it.  Scaling O by alpha/s1 before and s1 after would
-- divide by s1, which underflows to 0 or a subnormal when a tile's largest
-- P~ is tiny against the running max; so each 16-channel slice of O gets a
-- fresh fp32 temporary over the tile's keys, then O += s1 * temporary (one
-- fma).  That is 8 extra registers per 16 query rows, not a second O.  The
-- row sum l accumulates the unquantized P~ (blocks/softmax.lua), as numerics
-- does in p_tile mode.
--
-- Where Blackwell and the emulation may differ (both match numerics up to
-- fp32 summation order; they need not match each other bit for bit):
--   * Inside the block-scaled MMA the hardware forms 64 products of E2M1
--     pairs times SF_A * SF_B and sums them with an internal order and width
--     NVIDIA does not document; the emulation sums exact bf16 products over
--     k16 in the tensor core and then in fp32, per k16 step.
--   * Block scales: the emulation applies them before the MMA (exact
--     products), Blackwell inside it.  UE8M0 scales down to 2^-127 make
--     subnormal products on both sides; the emulation keeps them (no ftz),
--     the hardware's treatment of subnormal scaled products is undocumented.
--   * S = Q K^T: emulation reduces over round_up(D, 16) columns, Blackwell over
--     round_up(D, 64); the extra columns are zero codes, so only the order differs.
-- Unchanged between the two: quantization (same kernels), P~ (same ex2), the
-- P codes and scales, the s1 fold, l, the epilogue.
--
-- Workspace (sections 256-byte aligned, offsets in ws_off[]; BHq/BHkv =
-- batch * heads; NQ, NK = seq_q, seq_k rounded up to QROWS, KROWS; DP =
-- head_dim rounded up to 64; DV = head_dim rounded up to 16; PB = 16 | 32):
--   0 QC  Q codes   [BHq][NQ][DP/2] bytes (int8: [BHq][NQ][DP] int8)
--   1 QS  Q scales  [BHq][NQ][SPK] bytes, SPK = DP/PB rounded up to 4
--                   (int8: fp32 [BHq][NQ/128])
--   2 KC  K codes   [BHkv][NK][DP/2]  (int8: [BHkv][NK][DP])
--   3 KS  K scales  [BHkv][NK][SPK]   (int8: fp32 [BHkv][NK/64])
--   4 VC  V^T codes [BHkv][DV][NK/2]: row c is channel c along the keys
--   5 VS  V scales  [BHkv][NK/PB][DV]: key block major, so a key tile's
--                   scales are one contiguous run
--   6 MEAN K mean   fp32 [BHkv][DP] (smooth_k)
--   7 CORR q . mean fp32 [BHq][NQ]  (smooth_k with lse)
-- Code and scale bytes follow numerics/ (mx_fp4_quantize: element 2i in the
-- low nibble of byte i); padding rows, columns and keys hold code 0, scale 0.
local U = require("util")

return function(cfg)
local F = {}
local KIND, QK = cfg.kind, cfg.qk
local PB = KIND == "mxfp4" and 32 or 16
local IBQ, IBK = 128, 64                       -- INT8 scale blocks (numerics' defaults)
local WG = require("blocks.fp4_wgmma")(cfg)    -- variant=wgmma (sm_90a): its own kernel
local function wgmma(t) return t.variant == "wgmma" end

local function native(t) return t.arch == "sm_120a" end
local function dp(t) return U.round_up(t.head_dim, 64) end
local function dv(t) return U.round_up(t.head_dim, 16) end
local function kd(t) return U.round_up(t.head_dim, 16) // 16 end
local function spk(t) return U.round_up(dp(t) // PB, 4) end
local function qcb(t) return QK == "int8" and dp(t) or dp(t) // 2 end      -- code bytes per Q/K row
local function qsb(t) return QK == "int8" and 0 or spk(t) end            -- scale bytes per Q/K row in smem
local function mt(t) return t.block_m // (16 * t.warps) end
-- Emulated FP4 scores keep Q's bf16 fragments in registers up to D = 128;
-- above that they are read from a shared bf16 copy at every k-step.
local function q_resident(t) return kd(t) <= 8 end
local function dequant_qk(t) return QK == "fp4" and not native(t) end

local function layout(t)
  local L = {}
  L.QP = qcb(t) + 16                          -- shared row pitch of code tiles: +16 bytes spreads banks
  L.VP = t.block_n // 2 + 16
  L.RS = kd(t) * 16 + 8                       -- bf16 row pitch of dequantized Q/K tiles (ldmatrix)
  L.RSV = t.block_n + 8                       -- bf16 row pitch of the dequantized V^T tile
  L.q_tile = t.block_m * (L.QP + qsb(t))
  L.slot = t.block_n * (L.QP + qsb(t)) + dv(t) * L.VP + (t.block_n // PB) * dv(t)
  local scratch = 0
  if not native(t) then scratch = dv(t) * L.RSV * 2 end
  if dequant_qk(t) then
    local kv = t.block_n * L.RS * 2 + dv(t) * L.RSV * 2
    local q = t.block_m * L.RS * 2
    L.sq_bytes = q_resident(t) and 0 or q  -- a Q copy that lives through the loop
    scratch = q_resident(t) and math.max(q, kv) or kv
  end
  L.sq_bytes = L.sq_bytes or 0
  L.scratch = scratch
  return L
end

-- Illegal combinations are rejected by name, here, before anything renders.
local function check(t)
  local why = wgmma(t) and WG.check(t) or nil
  if wgmma(t) then
    if why then error("invalid configuration: " .. why, 0) end
    return
  end
  if t.block_n % PB ~= 0 or t.block_n < 32 then
    why = string.format("block_n=%d: %s needs a multiple of %d and at least 32 (V^T tiles load 16-byte rows)",
                        t.block_n, t.family, math.max(PB, 16))
  elseif native(t) and t.block_n % 64 ~= 0 then
    why = string.format("block_n=%d with arch=%s: the k64 block-scaled MMA over keys needs a multiple of 64",
                        t.block_n, t.arch)
  end
  if why then error("invalid configuration: " .. why, 0) end
end

-- The rows-per-warp rule (space.lua) for mma.sync tiles; the wgmma kernel's own.
function F.check(t)
  if wgmma(t) then return WG.check(t) end
  return require("space").check_rows_per_warp(t)
end

function F.smem_bytes(t)
  check(t)
  if wgmma(t) then return WG.smem_bytes(t) end
  local L = layout(t)
  return L.q_tile + t.stages * L.slot + L.sq_bytes + L.scratch
end

function F.register_estimate(t)
  check(t)
  if wgmma(t) then return WG.register_estimate(t) end
  local m, bn = mt(t), t.block_n
  local q
  if QK == "int8" then q = U.round_up(t.head_dim, 32) // 32 * 4 + 2
  elseif native(t) then q = dp(t) // 64 * 5
  else q = q_resident(t) and kd(t) * 4 or 0 end
  local pa = native(t) and (bn // 16 + bn // 64) or bn // 4
  return m * (q + dv(t) // 2 + bn // 2 + pa + 8) + 40
end

-- One 16-row tile per warp (the emulation's P quantization and O already take
-- most of the registers); the k64 MMA over keys needs block_n = 64 on sm_120a.
-- The emulation (sm_90a) takes 32-key tiles at every head dim: its attention
-- kernel is a cold plan's slowest compile, and 64-key tiles took 1.9-2.1 s
-- of NVRTC at D=128 on the H200 machine, 32-key ones 0.9-1.5 s.  Where ptxas
-- then fits the kernel in 128 registers (D=64; nvfp4-int8qk D=80) two blocks
-- share an SM and it runs a third faster; elsewhere (D=80-128) 7-14% slower
-- (H200, 2026-11-30), which a tuned plan may take back.
-- sm_90a up to head_dim 128, with every tile knob left open: the wgmma
-- kernel (fwd_fp4_wgmma.cuh); a table that names its tile describes an
-- mma.sync one, as for f16.
function F.default(t)
  local open = t.block_m == nil and t.block_n == nil and t.warps == nil and t.stages == nil
  if t.variant == "wgmma" or (t.variant == nil and open and t.arch == "sm_90a" and dv(t) <= 128) then
    return WG.default(t)
  end
  local bn = native(t) and 64 or 32
  if dv(t) > 128 then return { variant = "mma", block_m = 64, block_n = bn, warps = 4, stages = 2 } end
  return { variant = "mma", block_m = 128, block_n = bn, warps = 8, stages = 2 }
end

function F.prior(t)
  if wgmma(t) then return WG.prior(t) end
  local ok, smem = pcall(F.smem_bytes, t)
  if not ok then return -1 end
  return U.occupancy_prior(t, smem, F.register_estimate(t))
end

-- ---------------------------------------------------------------- kernel
-- Tile copies: packed rows of the workspace into shared memory, 16-byte
-- cp.async chunks (every size and offset here is a multiple of 16).
local COPY = [[
// rows x bytes from global (row pitch gp) to shared (row pitch sp).
MX_INLINE void copy_rows(u8 *dst, int sp, const u8 *src, i64 gp, int rows, int bytes) {
  const int per_row = bytes / 16;
  for (int c = threadIdx.x; c < rows * per_row; c += THREADS) {
    const int r = c / per_row, j = c % per_row;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(dst + r * sp + j * 16)), "l"(src + r * gp + j * 16));
  }
}
MX_INLINE void st_shared_v4(void *p, u32 x, u32 y, u32 z, u32 w) {
  asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};" :: "r"(smem_addr(p)), "r"(x), "r"(y), "r"(z), "r"(w));
}
// Eight FP4 codes (one u32, lowest nibble first) times their scale, as bf16.
MX_INLINE void dequant8(u16 *dst, u32 c, float s) {
  st_shared_v4(dst, pack_bf16(e2m1_value(c) * s, e2m1_value(c >> 4) * s),
               pack_bf16(e2m1_value(c >> 8) * s, e2m1_value(c >> 12) * s),
               pack_bf16(e2m1_value(c >> 16) * s, e2m1_value(c >> 20) * s),
               pack_bf16(e2m1_value(c >> 24) * s, e2m1_value(c >> 28) * s));
}
// Shared slot of one key tile: [K codes][K scales][V^T codes][V scales].
struct Slot { u8 *kc, *ks, *vc, *vs; };
MX_INLINE Slot slot_at(u8 *base) {
  Slot s;
  s.kc = base; s.ks = s.kc + BN * QP; s.vc = s.ks + BN * QSB; s.vs = s.vc + DV * VP;
  return s;
}
MX_INLINE void load_kv_tile(const mx_kernel_args &a, u8 *base, i64 kv_bh, int nk, int tile) {
  const Slot s = slot_at(base);
  copy_rows(s.kc, QP, ws_at(a, WS_KC) + (kv_bh * nk + (i64)tile * BN) * QCB, QCB, BN, QCB);
  if (QSB) copy_rows(s.ks, 0, ws_at(a, WS_KS) + (kv_bh * nk + (i64)tile * BN) * QSB, 0, 1, BN * QSB);
  copy_rows(s.vc, VP, ws_at(a, WS_VC) + kv_bh * DV * (nk / 2) + (i64)tile * (BN / 2), nk / 2, DV, BN / 2);
  copy_rows(s.vs, 0, ws_at(a, WS_VS) + (kv_bh * (nk / PB) + (i64)tile * (BN / PB)) * DV, 0, 1, (BN / PB) * DV);
}
]]

-- The Q operand, the score product S = Q K^T, per QK mode and target.
local QK_FP4_EMULATED = [[
// Q: packed tile -> bf16 rows in shared (all threads) -> ldmatrix fragments.
struct QOperand { u32 f[MT][Q_RESIDENT ? KD : 1][4]; const u16 *tile; };
MX_INLINE void dequant_rows(u16 *dst, const u8 *codes, const u8 *scales, int rows) {
  for (int u = threadIdx.x; u < rows * KD * 2; u += THREADS) {
    const int r = u / (KD * 2), c8 = u % (KD * 2);
    dequant8(dst + r * RS + c8 * 8, lds32(codes + r * QP + c8 * 4), scale_value(scales[r * QSB + c8 * 8 / PB]));
  }
}
MX_INLINE void load_q_operand(QOperand &q, const mx_kernel_args &a, const u8 *sq, u16 *sq_bf16, i64 q_bh, int m0) {
  dequant_rows(sq_bf16, sq, sq + BM * QP, BM);
  __syncthreads();
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  q.tile = sq_bf16 + warp * MT * 16 * RS;
  if (Q_RESIDENT)
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int kd = 0; kd < KD; kd++)
        ldsm_x4(q.f[mt][Q_RESIDENT ? kd : 0], smem_addr(q.tile + (mt * 16 + lane % 16) * RS + kd * 16 + (lane / 16) * 8));
}
// K: the tile's bf16 copy is made by dequantize_kv (all threads) beforehand.
MX_INLINE void qk_product(float (&s)[MT][NT][4], const QOperand &q, const Slot &, const u16 *kt,
                          const mx_kernel_args &, i64, int) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kd = 0; kd < KD; kd++) {
    u32 qf[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      if (Q_RESIDENT) for (int i = 0; i < 4; i++) qf[mt][i] = q.f[mt][Q_RESIDENT ? kd : 0][i];
      else ldsm_x4(qf[mt], smem_addr(q.tile + (mt * 16 + lane % 16) * RS + kd * 16 + (lane / 16) * 8));
    }
#pragma unroll
    for (int nn = 0; nn < BN / 16; nn++) {
      u32 b[4];
      ldsm_x4(b, smem_addr(kt + (nn * 16 + lane % 8 + (lane / 16) * 8) * RS + kd * 16 + ((lane / 8) % 2) * 8));
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        mma_16816(s[mt][2 * nn], qf[mt], b[0], b[1]);
        mma_16816(s[mt][2 * nn + 1], qf[mt], b[2], b[3]);
      }
    }
  }
}
]]

local QK_FP4_NATIVE = [[
// Q: packed E2M1 fragments and scale registers straight from shared memory.
struct QOperand { u32 f[MT][DP / 64][4], sc[MT][DP / 64]; };
MX_INLINE u32 scale_reg(const u8 *row_scales, int kc) {   // the scales of one k64 chunk
  return PB == 16 ? lds32(row_scales + kc * 4) : lds16(row_scales + kc * 2);
}
MX_INLINE void load_q_operand(QOperand &q, const mx_kernel_args &, const u8 *sq, u16 *, i64, int) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int kc = 0; kc < DP / 64; kc++) {
      const u8 *row = sq + (warp * MT * 16 + mt * 16 + g) * QP + kc * 32 + 4 * t;
      q.f[mt][kc][0] = lds32(row);
      q.f[mt][kc][1] = lds32(row + 8 * QP);
      q.f[mt][kc][2] = lds32(row + 16);
      q.f[mt][kc][3] = lds32(row + 8 * QP + 16);
      q.sc[mt][kc] = scale_reg(sq + BM * QP + (warp * MT * 16 + mt * 16 + g + 8 * (t & 1)) * QSB, kc);
    }
}
MX_INLINE void qk_product(float (&s)[MT][NT][4], const QOperand &q, const Slot &sl, const u16 *,
                          const mx_kernel_args &, i64, int) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kc = 0; kc < DP / 64; kc++)
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
      const u8 *key = sl.kc + (nt * 8 + g) * QP + kc * 32 + 4 * t;
      const u32 sb = scale_reg(sl.ks + (nt * 8 + g) * QSB, kc);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) mma_fp4(s[mt][nt], q.f[mt][kc], lds32(key), lds32(key + 16), q.sc[mt][kc], sb);
    }
}
]]

local QK_INT8 = [[
// Q: int8 fragments from shared memory and each row's block scale.
constexpr int K8 = (D + 31) / 32;           // k32 steps
struct QOperand { u32 f[MT][K8][4]; float scale[MT][2]; };
MX_INLINE void load_q_operand(QOperand &q, const mx_kernel_args &a, const u8 *sq, u16 *, i64 q_bh, int m0) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float *qs = (const float *)ws_at(a, WS_QS) + q_bh * (q_rows(a) / IBQ);
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    const int r = warp * MT * 16 + mt * 16 + g;
#pragma unroll
    for (int ks = 0; ks < K8; ks++) {
      const u8 *row = sq + r * QP + ks * 32 + 4 * t;
      q.f[mt][ks][0] = lds32(row);
      q.f[mt][ks][1] = lds32(row + 8 * QP);
      q.f[mt][ks][2] = lds32(row + 16);
      q.f[mt][ks][3] = lds32(row + 8 * QP + 16);
    }
    q.scale[mt][0] = qs[(m0 + r) / IBQ];
    q.scale[mt][1] = qs[(m0 + r + 8) / IBQ];
  }
}
// S = (Qi8 Ki8^T) * q_scale * k_scale: integer products, exact in s32.
MX_INLINE void qk_product(float (&s)[MT][NT][4], const QOperand &q, const Slot &sl, const u16 *,
                          const mx_kernel_args &a, i64 kv_bh, int tile) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float *ks = (const float *)ws_at(a, WS_KS) + kv_bh * (k_rows(a) / IBK);
#pragma unroll
  for (int nt = 0; nt < NT; nt++) {
    int acc[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0;
#pragma unroll
    for (int k8 = 0; k8 < K8; k8++) {
      const u8 *key = sl.kc + (nt * 8 + g) * QP + k8 * 32 + 4 * t;
      const u32 b0 = lds32(key), b1 = lds32(key + 16);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) mma_s8(acc[mt], q.f[mt][k8], b0, b1);
    }
    const float kscale = ks[(tile * BN + nt * 8) / IBK];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int e = 0; e < 4; e++) s[mt][nt][e] = (float)acc[mt][e] * q.scale[mt][e / 2] * kscale;
  }
}
]]

-- O += s1 * (P^ s2) V^ per tile, per 16 (emulated) or 8 (native) channels.
local PV_EMULATED = [[
typedef u32 POperand[MT][BN / 16][4];
MX_INLINE void quantize_p_operand(float (&s)[MT][NT][4], POperand &pa, float (&s1)[MT][2]) { quantize_p(s, pa, s1); }
// V^T tile -> bf16 [DV][RSV] (all threads); then ldmatrix as for K.
MX_INLINE void dequantize_v(u16 *dst, const Slot &sl) {
  for (int u = threadIdx.x; u < DV * (BN / 8); u += THREADS) {
    const int c = u / (BN / 8), k8 = u % (BN / 8);
    dequant8(dst + c * RSV + k8 * 8, lds32(sl.vc + c * VP + k8 * 4), scale_value(sl.vs[(k8 * 8 / PB) * DV + c]));
  }
}
MX_INLINE void pv_product(float (&o)[MT][DT][4], const POperand &pa, const float (&s1)[MT][2], const Slot &,
                          const u16 *vt) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int dd = 0; dd < DV / 16; dd++) {
    float acc[MT][2][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int j = 0; j < 2; j++) acc[mt][j][0] = acc[mt][j][1] = acc[mt][j][2] = acc[mt][j][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      u32 b[4];
      ldsm_x4(b, smem_addr(vt + (dd * 16 + lane % 8 + (lane / 16) * 8) * RSV + kk * 16 + ((lane / 8) % 2) * 8));
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        mma_16816(acc[mt][0], pa[mt][kk], b[0], b[1]);
        mma_16816(acc[mt][1], pa[mt][kk], b[2], b[3]);
      }
    }
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int j = 0; j < 2; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) o[mt][2 * dd + j][e] = fmaf(acc[mt][j][e], s1[mt][e / 2], o[mt][2 * dd + j][e]);
  }
}
]]

local PV_NATIVE = [[
struct POperand { u32 f[MT][BN / 64][4], sc[MT][BN / 64]; };
MX_INLINE void quantize_p_operand(float (&s)[MT][NT][4], POperand &p, float (&s1)[MT][2]) { quantize_p(s, p.f, p.sc, s1); }
MX_INLINE void dequantize_v(u16 *, const Slot &) {}
MX_INLINE void pv_product(float (&o)[MT][DT][4], const POperand &p, const float (&s1)[MT][2], const Slot &sl,
                          const u16 *) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int dt = 0; dt < DT; dt++) {
    const int c = dt * 8 + g;                  // channel = column n of B
    float acc[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.f;
#pragma unroll
    for (int kc = 0; kc < BN / 64; kc++) {
      const u8 *row = sl.vc + c * VP + kc * 32 + 4 * t;
      u32 sb = 0;                              // V blocks kc*64/PB.. of channel c, read by lane 4g only
#pragma unroll
      for (int i = 0; i < 64 / PB; i++) sb |= (u32)sl.vs[(kc * (64 / PB) + i) * DV + c] << (8 * i);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) mma_fp4(acc[mt], p.f[mt][kc], lds32(row), lds32(row + 16), p.sc[mt][kc], sb);
    }
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int e = 0; e < 4; e++) o[mt][dt][e] = fmaf(acc[mt][e], s1[mt][e / 2], o[mt][dt][e]);
  }
}
]]

local KERNEL = [[
// Q, K, V quantized in the workspace by the kernels above; O and the LSE as
// the f16 family writes them.  Grid: (query blocks, heads_q, batch).
extern "C" __global__ void __launch_bounds__(THREADS) ${NAME}(const mx_kernel_args a) {
  extern __shared__ __align__(16) u8 smem[];
  u8 *sq = smem, *ring = sq + Q_TILE_BYTES;
  u16 *sq_bf16 = (u16 *)(ring + STAGES * SLOT_BYTES);            // persistent Q copy (D > 128) ...
  u16 *scratch = (u16 *)((u8 *)sq_bf16 + SQ_BYTES);              // ... and the dequantized K/V tile
  if (Q_RESIDENT) sq_bf16 = scratch;                             // Q's copy only lives until the loop
  u16 *kt = scratch, *vt = scratch + (DEQUANT_QK ? BN * RS : 0);
  const int warp = threadIdx.x / 32;
  const int m_block = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z, kv_head = head / a.gqa;
  const int m0 = m_block * BM, warp_row0 = m0 + warp * MT * 16, nq = q_rows(a), nk = k_rows(a);
  const i64 q_bh = (i64)batch * a.heads_q + head, kv_bh = (i64)batch * a.heads_kv + kv_head;

  const int n_tiles = key_tiles(m0, a);   // all keys, or (causal) up to the last row's diagonal

  // Q: packed tile -> shared -> operand, once.
  copy_rows(sq, QP, ws_at(a, WS_QC) + (q_bh * nq + m0) * QCB, QCB, BM, QCB);
  if (QSB) copy_rows(sq + BM * QP, 0, ws_at(a, WS_QS) + (q_bh * nq + m0) * QSB, 0, 1, BM * QSB);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  QOperand qop;
  load_q_operand(qop, a, sq, sq_bf16, q_bh, m0);

  float o[MT][DT][4], row_max[MT][2], row_sum[MT][2];
  init_accumulators(o, row_max, row_sum);

#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < n_tiles) load_kv_tile(a, ring + s * SLOT_BYTES, kv_bh, nk, s);
    cp_async_commit();
  }

  for (int t = 0; t < n_tiles; t++) {
    if (t + STAGES - 1 < n_tiles) load_kv_tile(a, ring + ((t + STAGES - 1) % STAGES) * SLOT_BYTES, kv_bh, nk, t + STAGES - 1);
    cp_async_commit();                 // possibly empty: keeps the group count uniform
    cp_async_wait<STAGES - 1>();       // tile t has landed
    __syncthreads();                   // ... for every thread; the previous tile's readers are done
    const Slot sl = slot_at(ring + (t % STAGES) * SLOT_BYTES);

    // Emulation: dequantize the tile once for the whole block.
    if (DEQUANT_QK) dequant_rows(kt, sl.kc, sl.ks, BN);
    dequantize_v(vt, sl);
    if (!NATIVE) __syncthreads();

    // S = Q K^T
    float s[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int nt = 0; nt < NT; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
    qk_product(s, qop, sl, kt, a, kv_bh, t);

    // Mask the tile's tail and, under causal, keys past the diagonal.
    mask_tile(s, t, warp_row0, a);

    // Row max, P~ = exp2(S - max), l += sum P~ (unquantized), O *= alpha.
    // The scores are scaled to base 2 first, so the row max is one of them
    // exactly and its P~ is exactly 1: with the fused form exp2(s*c - max)
    // the rounding of s*c leaves P~ a hair under 1 at times, which moves an
    // MXFP4 block's power-of-two scale down by 2x (floor(log2 amax)) and
    // saturates the block's largest probability from 1 to 0.75.
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) s[mt][nt][e] *= a.scale_log2;
    online_softmax(s, row_max, row_sum, o, 1.f);

    // P~ -> P^ (FP4, two-level or direct scale), then O += s1 * (P^ s2) V^.
    POperand pop;
    float s1[MT][2];
    quantize_p_operand(s, pop, s1);
    pv_product(o, pop, s1, sl, vt);
    __syncthreads();                   // the slot and the bf16 tiles are rewritten next
  }

  // Smooth-K dropped q . mean from every score of a row; it cancels in the
  // softmax and comes back into the LSE (base 2 here, as row_max is).
  if (SMOOTH_K && WRITE_LSE) {
    const float *corr = (const float *)ws_at(a, WS_CORR) + q_bh * nq;
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int h = 0; h < 2; h++) row_max[mt][h] += corr[warp_row0 + mt * 16 + lane / 4 + 8 * h] * a.scale_log2;
  }
  u16 *o_head = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
  float *lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
  write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
}
]]

local function family_stem(t) return (t.family:gsub("-", "_")) end

function F.kernel_name(t, canonical)
  return string.format("mxattn_%s_d%d_%s", family_stem(t), t.head_dim, U.short_hash(canonical))
end

local function rows(t)
  local qrows = QK == "int8" and math.max(t.block_m, IBQ) or t.block_m
  local krows = QK == "int8" and math.max(t.block_n, IBK) or t.block_n
  return qrows, krows
end

function F.render(t, canonical)
  check(t)
  if wgmma(t) then return WG.render(t, F.kernel_name(t, canonical), canonical) end
  local L = layout(t)
  local qrows, krows = rows(t)
  local p = { kind = KIND, qk = QK, native = native(t), dtype = t.dtype }
  local constants = U.fill([[
typedef signed char i8;
constexpr int D = ${D}, DP = ${DP}, DV = ${DV}, KD = ${KD}, SPK = ${SPK};
constexpr int BM = ${BM}, BN = ${BN}, WARPS = ${WARPS}, THREADS = WARPS * 32, STAGES = ${STAGES};
constexpr int MT = BM / (16 * WARPS);   // 16-row MMA tiles per warp
constexpr int NT = BN / 8;              // 8-key score tiles
constexpr int DT = DV / 8;              // 8-column output tiles
constexpr int QROWS = ${QROWS}, KROWS = ${KROWS};   // workspace rows are padded to these
constexpr int IBQ = ${IBQ}, IBK = ${IBK};           // INT8 scale blocks (nvfp4-int8qk)
constexpr int QCB = ${QCB}, QSB = ${QSB};           // code / scale bytes per Q or K row
constexpr int QP = ${QP}, VP = ${VP}, RS = ${RS}, RSV = ${RSV};   // shared row pitches
constexpr int Q_TILE_BYTES = ${QTILE}, SLOT_BYTES = ${SLOT}, SQ_BYTES = ${SQB};
constexpr bool CAUSAL = ${CAUSAL}, WRITE_LSE = ${LSE}, SMOOTH_K = ${SMOOTH}, TWO_LEVEL = ${TWO_LEVEL};
constexpr bool NATIVE = ${NATIVE}, DEQUANT_QK = ${DEQUANT}, Q_RESIDENT = ${QRES};
constexpr bool BF16_OPS = false;        // the quantization pass writes packed codes
constexpr int D_PAD = DV;
]], { D = t.head_dim, DP = dp(t), DV = dv(t), KD = kd(t), SPK = spk(t), BM = t.block_m, BN = t.block_n,
      WARPS = t.warps, STAGES = t.stages, QROWS = qrows, KROWS = krows, IBQ = IBQ, IBK = IBK,
      QCB = qcb(t), QSB = qsb(t), QP = L.QP, VP = L.VP, RS = L.RS, RSV = L.RSV,
      QTILE = L.q_tile, SLOT = L.slot, SQB = L.sq_bytes,
      CAUSAL = t.causal == 1, LSE = t.lse == 1, SMOOTH = t.smooth_k == 1, TWO_LEVEL = t.p_scale == "two-level",
      NATIVE = native(t), DEQUANT = dequant_qk(t), QRES = q_resident(t) })
  local name = F.kernel_name(t, canonical)
  local qk_block
  if QK == "int8" then qk_block = QK_INT8
  elseif native(t) then qk_block = QK_FP4_NATIVE
  else qk_block = QK_FP4_EMULATED end
  if not dequant_qk(t) then
    -- dequant_rows is referenced by the generic loop body (under a false constant).
    qk_block = qk_block .. "MX_INLINE void dequant_rows(u16 *, const u8 *, const u8 *, int) {}\n"
  end
  return table.concat({
    "// mxattn generated kernel. Do not edit: re-render with `mxattn gen`.\n// params: " .. canonical .. "\n",
    require("blocks.prelude")(t),
    constants,
    require("blocks.fp4_formats")(p),
    require("blocks.fp4_quant")(p, name),
    require("blocks.mma_sync")({ dtype = "bf16" }),
    require("blocks.fp4_mma")(p),
    COPY,
    qk_block,
    require("blocks.softmax")(t),
    require("blocks.fp4_p")(p),
    native(t) and PV_NATIVE or PV_EMULATED,
    require("blocks.epilogue")(t),
    U.fill(KERNEL, { NAME = name }),
  }, "\n")
end

local function align256(x) return U.round_up(x, 256) end

-- Workspace sections and launch geometry for a problem (numbers in `pr`).
function F.launches(t, pr, canonical)
  check(t)
  local L = layout(t)
  local qrows, krows = rows(t)
  if wgmma(t) then qrows, krows = WG.rows(t) end
  local nq, nk = U.round_up(pr.seq_q, qrows), U.round_up(pr.seq_k, krows)
  local bhq, bhk = pr.batch * pr.heads_q, pr.batch * pr.heads_kv
  local function sizes_for(nq, nk)
    return {
      bhq * nq * qcb(t),
      QK == "int8" and bhq * (nq // IBQ) * 4 or bhq * nq * spk(t),
      bhk * nk * qcb(t),
      QK == "int8" and bhk * (nk // IBK) * 4 or bhk * nk * spk(t),
      bhk * dv(t) * nk // 2,
      bhk * (nk // PB) * dv(t),
      t.smooth_k == 1 and bhk * dp(t) * 4 or 0,
      (t.smooth_k == 1 and t.lse == 1) and bhq * nq * 4 or 0,
    }
  end
  local name = F.kernel_name(t, canonical)
  local wg = wgmma(t) and WG.launches(t, pr, name, sizes_for) or nil
  local off, total = {}, 0
  if wg then off, total = wg.ws_off, wg.workspace
  else
    for i, s in ipairs(sizes_for(nq, nk)) do off[i] = total; total = total + align256(s) end
  end
  local kernels = {}
  if t.smooth_k == 1 then
    kernels[#kernels + 1] = { name = name .. "_kmean", grid = { bhk, dp(t) // 32, 1 }, block = 256, smem = 0 }
  end
  if QK == "int8" then
    kernels[#kernels + 1] = { name = name .. "_quant_kv", grid = { bhk * (nk // IBK), 2, 1 }, block = 256, smem = 0 }
    kernels[#kernels + 1] = { name = name .. "_quant_q", grid = { bhq * (nq // IBQ), 1, 1 }, block = 256, smem = 0 }
  else
    local kv = math.max(bhk * nk * (dp(t) // PB), bhk * (nk // PB) * dv(t))
    kernels[#kernels + 1] = { name = name .. "_quant_kv", grid = { U.ceil_div(kv, 256), 2, 1 }, block = 256, smem = 0 }
    kernels[#kernels + 1] = { name = name .. "_quant_q", grid = { U.ceil_div(bhq * nq * (dp(t) // PB), 256), 1, 1 },
                              block = 256, smem = 0 }
  end
  if wg then
    kernels[#kernels + 1] = wg.attention
    return { workspace = total, ws_off = off, kernels = kernels, tmaps = wg.tmaps }
  end
  kernels[#kernels + 1] = { name = name, grid = { U.ceil_div(pr.seq_q, t.block_m), pr.heads_q, pr.batch },
                            block = 32 * t.warps, smem = F.smem_bytes(t) }
  return { workspace = total, ws_off = off, kernels = kernels }
end

return F
end
