-- The INT8-QK attention families (int8-f16, int8-fp8): everything but the
-- P.V product, which the family picks ("f16" or "fp8").  Returns a family
-- module (smem_bytes, register_estimate, default, prior, render, launches).
--
-- Launch plan, four kernels sharing one workspace:
--   1 stats     K's channel mean (smooth-K) and, for FP8 V, V's channel amax
--   2 quant_q   Q -> INT8 (per 16 rows, pre-scaled to base 2)
--   3 quant_kv  K - mean -> INT8 (per 16 keys), FP8 V -> E4M3 V^T (per
--               channel, keys permuted)
--   4 attention S = Q8 K8^T (m16n8k32 s8), online softmax, P.V, epilogue
--
-- Workspace sections (ws_off[i], each 256-byte aligned).  nqp = seq_q rounded
-- up to block_m, nkp = seq_k rounded up to block_n, D32 = head_dim rounded up
-- to 32 (the k32 MMA), DV = head_dim rounded up to 16; Hq/Hkv heads, B batch:
--   0 q8      int8 [B][Hq][nqp][D32]
--   1 k8      int8 [B][Hkv][nkp][D32]
--   2 qscale  f32  [B][Hq][nqp/16]   (includes sm_scale*log2(e)); int8-fp8: [nqp/2]
--   3 kscale  f32  [B][Hkv][nkp/16]  int8-fp8: [ceil(nkp/128)*4]
-- (int8-fp8 quantizes Q and K in SageAttention2's per-thread groups, the rows
-- and keys one thread of an MMA fragment holds: blocks/quant_int8.lua.)
--   4 kmean   f32  [B][Hkv][D32]     (0 past D, or without smooth_k)
--   5 vscale  f32  [B][Hkv][D32]     (int8-fp8: amax/448; else empty)
--   6 v8t     e4m3 [B][Hkv][v_terms*DV][nkp] (int8-fp8: V^T, permuted keys, then
--             with v_terms=2 the second term's rows; else empty)
--   7 corr    f32  [B][Hq][nqp]      (q.mean in base 2, for the LSE)
-- Padding rows/columns hold code 0 and scale 0, written by the quant kernel.
local U = require("util")
local R = require("rules")
local S = require("space")

-- The sections as the kernels' enum, the wgmma variant's too (F.WS_ENUM).
local WS_NAMES = { "WS_Q8", "WS_K8", "WS_QSCALE", "WS_KSCALE", "WS_KMEAN", "WS_VSCALE", "WS_V8T", "WS_CORR" }
local WS_ENUM = {}
for i, n in ipairs(WS_NAMES) do WS_ENUM[i] = string.format("%s = %d", n, i - 1) end
WS_ENUM = table.concat(WS_ENUM, ", ")

local function d32(t) return U.round_up(t.head_dim, 32) end
local function dv(t) return U.round_up(t.head_dim, 16) end

-- The attention kernel (the quant kernels are blocks/quant_kernels.lua's).
local KERNEL = U.cuda("cuda/fwd_int8_mma.cuh")
local PRELUDE, MMA, LOAD, PV_F16 = require("blocks.prelude"), require("blocks.mma_sync"), require("blocks.load"),
                                   require("blocks.pv_f16")
local SOFTMAX, EPILOGUE = require("blocks.softmax"), require("blocks.epilogue")
local QUANT, QUANT_KERNELS = require("blocks.quant_int8"), require("blocks.quant_kernels")
local QUANT_FP8V, PV_FP8, QK_INT8 = require("blocks.quant_fp8v"), require("blocks.pv_fp8"), require("blocks.qk_int8")

-- What differs between the two P.V products.
local PV = {
  f16 = { v_tile_bytes = function(t) return t.block_n * (dv(t) + 8) * 2 end },
  fp8 = { v_tile_bytes = function(t) return dv(t) * (t.block_n + 16) end },
}

return function(family, pv_kind)
  local F = { WS_ENUM = WS_ENUM }
  local pv = PV[pv_kind]
  -- int8-fp8 quantizes Q and K in SageAttention2's per-thread groups (as
  -- accurate as 16-row/16-key blocks or better on the CPU reference, and one
  -- Q and one K scale a thread and a key tile); int8-f16 keeps its blocks.
  local per_thread = pv_kind == "fp8"
  local quant_warps = QUANT_KERNELS.warps(per_thread)   -- its launch's block
  local stem = family:gsub("-", "_")

  -- The mma.sync schedule's rules (rules.lua); FP8's P V MMA needs sm_89
  -- and reduces 32 keys.
  local rules = { S.POW2_TILES, S.ROWS_PER_WARP }
  if pv_kind == "fp8" then
    rules[#rules + 1] = { need = { arch = { "sm_89", "sm_90a", "sm_100a", "sm_120a" } }, why = "FP8 tensor cores" }
    rules[#rules + 1] = { need = { block_n = R.multiple_of(32) }, why = "the FP8 P V MMA reduces 32 keys" }
  end
  F.schedules = { mma = rules }

  function F.smem_bytes(t)
    local bn = t.block_n
    return t.block_m * (d32(t) + 16) + t.stages * (bn * (d32(t) + 16) + pv.v_tile_bytes(t) + (per_thread and 4 or bn // 16) * 4)
  end

  function F.register_estimate(t)
    local mt = t.block_m // (16 * t.warps)
    -- Q fragments + O accumulators + S tile (and its int accumulators) + addressing and softmax state.
    return mt * (d32(t) // 8 + dv(t) // 2 + t.block_n // 2) + 40
  end

  function F.default(t)
    -- The winners of `mxattn tune` on an H200 at N=4096 (bench/NOTES.md);
    -- FP8 P.V holds more live fragments, so it keeps block_n 32 at D=128.
    if d32(t) <= 64 then
      return { variant = "mma", block_m = 128, block_n = 64, warps = 4, stages = pv_kind == "f16" and 1 or 2 }
    end
    if d32(t) <= 128 then return { variant = "mma", block_m = 128, block_n = 32, warps = 4, stages = 2 } end
    return { variant = "mma", block_m = 64, block_n = 32, warps = 4, stages = 2 }
  end

  function F.prior(t)
    return U.occupancy_prior(t, F.smem_bytes(t), F.register_estimate(t))
  end

  function F.kernel_name(t, canonical)
    return string.format("mxattn_%s_d%d_%s", stem, t.head_dim, U.short_hash(canonical))
  end

  function F.render(t, canonical)
    local name = F.kernel_name(t, canonical)
    local header = U.fill([[
#define KERNEL_NAME ${NAME}
constexpr int D = ${D}, D32 = ${D32}, DV = ${DV}, D_PAD = DV;
constexpr int RSQ = D32 + 16;           // Q8/K8 tile row, bytes: 16-byte pad keeps ldmatrix conflict-free
constexpr int RS = D_PAD + 8;           // fp16 V tile row, halves
constexpr int RSV = ${BN} + 16;         // FP8 V^T tile row, bytes
constexpr int BM = ${BM}, BN = ${BN}, WARPS = ${WARPS}, THREADS = WARPS * 32, STAGES = ${STAGES};
constexpr int MT = BM / (16 * WARPS);   // 16-row MMA tiles per warp
constexpr int KQ = D32 / 32;            // k-steps of S = Q K^T
constexpr int NT = BN / 8;              // 8-key score tiles
constexpr int DT = DV / 8;              // 8-column output tiles
constexpr int V_TILE_BYTES = ${VTB};
constexpr bool CAUSAL = ${CAUSAL}, WRITE_LSE = ${LSE}, SMOOTH_K = ${SMOOTH_K}, FP8_V = ${FP8_V};
constexpr int V_TERMS = 1;              // E4M3 terms of V (two: variant=wgmma only)
constexpr bool PER_THREAD = ${PER_THREAD};  // INT8 scales in per-thread groups (cuda/quant_int8.cuh)
constexpr int KS_TILE = PER_THREAD ? 4 : BN / 16;   // K scales of a key tile in shared memory
enum { ${WS} };                         // workspace sections
]], { NAME = name, D = t.head_dim, D32 = d32(t), DV = dv(t), BM = t.block_m, BN = t.block_n, WARPS = t.warps,
      STAGES = t.stages, VTB = pv.v_tile_bytes(t), CAUSAL = t.causal == 1, LSE = t.lse == 1,
      SMOOTH_K = t.smooth_k == 1, FP8_V = pv_kind == "fp8", PER_THREAD = per_thread, WS = WS_ENUM })
    local mma = { dtype = "f16" }   -- ldmatrix, and the fp16 MMA of int8-f16's P.V
    -- The quant kernels' constants come with them (quant_kernels(...)), so
    -- the helpers and quant kernels read as in int8-fp8's wgmma source.
    local parts = {
      U.banner(canonical),
      header .. MMA.constants(mma) .. QUANT.constants(t) .. LOAD.constants(t) .. EPILOGUE.constants(t),
      PRELUDE.text,
      MMA.text,
      QUANT.text,
    }
    if pv_kind == "fp8" then
      parts[#parts + 1] = QUANT_FP8V.text
      parts[#parts + 1] = PV_FP8.text
    else
      parts[#parts + 1] = PV_F16.text
    end
    parts[#parts + 1] = QUANT_KERNELS({ name = name, head_dim = t.head_dim, per_thread = per_thread })
    parts[#parts + 1] = LOAD.text
    parts[#parts + 1] = QK_INT8.text
    parts[#parts + 1] = SOFTMAX(t)
    parts[#parts + 1] = EPILOGUE.text
    parts[#parts + 1] = KERNEL
    return table.concat(parts, "\n")
  end

  -- Workspace sections for a problem, in bytes, each 256-byte aligned.
  function F.workspace(t, pr)
    local nqp, nkp = U.round_up(pr.seq_q, t.block_m), U.round_up(pr.seq_k, t.block_n)
    local b, hq, hkv = pr.batch, pr.heads_q, pr.heads_kv
    local fp8 = pv_kind == "fp8" and 1 or 0
    local qscales = per_thread and nqp // 2 or nqp // 16
    local kscales = per_thread and U.ceil_div(nkp, 128) * 4 or nkp // 16
    local sizes = {
      b * hq * nqp * d32(t), b * hkv * nkp * d32(t), b * hq * qscales * 4, b * hkv * kscales * 4,
      b * hkv * d32(t) * 4, fp8 * b * hkv * d32(t) * 4, fp8 * b * hkv * (t.v_terms or 1) * dv(t) * nkp,
      b * hq * nqp * 4,
    }
    local off, at = {}, 0
    for i, n in ipairs(sizes) do off[i] = at; at = at + U.round_up(n, 256) end
    return at, off
  end

  function F.launches(t, pr, canonical)
    local name = F.kernel_name(t, canonical)
    local bytes, off = F.workspace(t, pr)
    local nqp, nkp = U.round_up(pr.seq_q, t.block_m), U.round_up(pr.seq_k, t.block_n)
    local function quant(suffix, rows, heads)
      return { name = name .. suffix, grid = { math.max(U.ceil_div(rows, 16 * quant_warps), 1), heads, pr.batch },
               block = 32 * quant_warps, smem = 0, pdl = true }
    end
    -- Every kernel after the stats kernel is a "pdl" launch (templates/mxattn.lua):
    -- it may start while the kernel before it finishes, and waits for it where
    -- it first reads what that kernel wrote (wait_for_previous_kernel).
    local kernels = { { name = name .. "_stats", grid = { d32(t) // 32, pr.heads_kv, pr.batch }, block = 256, smem = 0 } }
    if nqp > 0 then kernels[#kernels + 1] = quant("_quant_q", nqp, pr.heads_q) end
    kernels[#kernels + 1] = quant("_quant_kv", nkp, pr.heads_kv)
    kernels[#kernels + 1] = { name = name, grid = { math.max(nqp // t.block_m, 1), pr.heads_q, pr.batch },
                              block = 32 * t.warps, smem = F.smem_bytes(t), pdl = true }
    return { workspace = bytes, ws_off = off, kernels = kernels }
  end

  return F
end
