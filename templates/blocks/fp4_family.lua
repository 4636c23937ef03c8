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
local R = require("rules")
local S = require("space")
-- The mma.sync kernel's CUDA files (cuda/fwd_fp4_mma.cuh and the pieces it
-- calls, one file per target and QK mode), read here so that they enter the
-- template hash.
local CU = {
  tiles = U.cuda("cuda/fp4_tiles.cuh"),
  qk_emulated = U.cuda("cuda/fp4_qk_emulated.cuh"),
  qk_native = U.cuda("cuda/fp4_qk_native.cuh"),
  qk_int8 = U.cuda("cuda/fp4_qk_int8.cuh"),
  pv_emulated = U.cuda("cuda/fp4_pv_emulated.cuh"),
  pv_native = U.cuda("cuda/fp4_pv_native.cuh"),
  kernel = U.cuda("cuda/fwd_fp4_mma.cuh"),
}

return function(cfg)
local F = {}
local KIND, QK = cfg.kind, cfg.qk
local PB = KIND == "mxfp4" and 32 or 16
local IBQ, IBK = 128, 64                       -- INT8 scale blocks (numerics' defaults)
local WG = require("blocks.fp4_wgmma")(cfg)   -- variant=wgmma (sm_90a): its own kernel
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

-- The schedules' rules (rules.lua): mma.sync tiles of whole scale blocks
-- here, the wgmma kernel's in blocks/fp4_wgmma.lua.
F.schedules = {
  mma = {
    S.POW2_TILES, S.ROWS_PER_WARP,
    { need = { block_n = R.multiple_of(PB) }, why = "whole " .. KIND .. " scale blocks of " .. PB .. " keys" },
    { need = { block_n = R.at_least(32) }, why = "V^T tiles load 16-byte rows" },
    { when = { arch = "sm_120a" }, need = { block_n = R.multiple_of(64) },
      why = "the k64 block-scaled MMA over keys" },
  },
  wgmma = WG.rules,
}

function F.smem_bytes(t)
  if wgmma(t) then return WG.smem_bytes(t) end
  local L = layout(t)
  return L.q_tile + t.stages * L.slot + L.sq_bytes + L.scratch
end

function F.register_estimate(t)
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
  local qk_block = QK == "int8" and CU.qk_int8 or native(t) and CU.qk_native or CU.qk_emulated
  return table.concat({
    require("blocks.fp4_quant").source_start(t, p, constants, name, canonical),
    require("blocks.mma_sync")({ dtype = "bf16" }),
    require("blocks.fp4_mma")(p),
    CU.tiles,
    qk_block,
    require("blocks.softmax")(t),
    require("blocks.fp4_p")(p),
    native(t) and CU.pv_native or CU.pv_emulated,
    require("blocks.epilogue")(t),
    CU.kernel,
  }, "\n")
end

local function align256(x) return U.round_up(x, 256) end

-- Workspace sections and launch geometry for a problem (numbers in `pr`).
function F.launches(t, pr, canonical)
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
