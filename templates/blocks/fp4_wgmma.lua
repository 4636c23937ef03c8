-- The FP4 families' Hopper schedule (variant=wgmma, sm_90a): the f16 wgmma
-- kernel's structure (a TMA producer warpgroup, 64-row consumer warpgroups,
-- a K/V ring on full/empty mbarriers) over operands the quantization pass has
-- already dequantized exactly to bf16 in the workspace.  The kernel itself is
-- templates/cuda/fwd_fp4_wgmma.cuh; this file decides its constants, its
-- shared memory and its launch plan.
--
-- Why it is exact: an NVFP4 value is an E2M1 element (2 significant bits)
-- times a UE4M3 scale (4), an MXFP4 one an E2M1 element times a power of
-- two: both products are exact in bf16 (8), so bf16 wgmma forms the same
-- products as the native block-scaled MMA and only the order of the fp32
-- sums differs.  nvfp4-int8qk's Q and K codes (|c| <= 127) are exact in bf16
-- too, and their products (|c c'| <= 16129) summed over D <= 256 columns stay
-- below 2^24, so every partial sum the tensor core forms in fp32 is an
-- exact integer: S = (Qc Kc^T) * s_q * s_k is the int32 product of the mma
-- variant, bit for bit.  bf16 rather than the s8 wgmma: one MMA instruction
-- and one shared-memory layout for all three families, at twice the bytes of
-- Q and K per tile (the kernel is bound by P's quantization, not by loads).
--
-- Workspace (as blocks/fp4_family.lua, but sections 0, 2 and 4 hold bf16
-- operands instead of packed codes; the scales are written as before, so the
-- tests read them bit for bit; NQ, NK: rows rounded up to the tiles):
--   0 Q  [BHq][NQ][D_PAD] bf16: E2M1 x scale (int8: the codes)
--   2 K  [BHkv][NK][D_PAD] bf16 (smooth-K: of K minus its channel mean)
--   4 V  [BHkv][NK][D_PAD] bf16: quantized along the keys (V^T's blocks),
--        stored key-major, the MN-major B operand of P V
--   1, 3, 5, 6, 7 as in blocks/fp4_family.lua
local U = require("util")
local R = require("rules")
local WC = require("blocks.wgmma_common")

local BLOCK, RING = U.cuda("cuda/tma_block.cuh"), U.cuda("cuda/wgmma_ring.cuh")   -- the block, its copies
local TILE = U.cuda("cuda/wgmma_f16_tile.cuh")   -- issue_qk, pack_p
local CUDA = U.cuda("cuda/fwd_fp4_wgmma.cuh")
local ENTRY = U.cuda("cuda/fwd_fp4_wgmma_entry.cuh")   -- the extern "C" kernel that calls it

return function(cfg)
local G = {}
local KIND, QK = cfg.kind, cfg.qk
local PB = KIND == "mxfp4" and 32 or 16
local IBQ, IBK = 128, 64

local function d_pad(t) return U.round_up(t.head_dim, 16) end
local function dp(t) return U.round_up(t.head_dim, 64) end
local function spk(t) return U.round_up(dp(t) // PB, 4) end
local function consumers(t) return t.block_m // 64 end
local function producer(t) return t.warps == 4 * consumers(t) + 4 end
local function panel_cols(t)
  local x = d_pad(t)
  if x % 64 == 0 then return 64 elseif x % 32 == 0 then return 32 else return 16 end
end
local SWIZZLE_MODE = { [64] = 1, [32] = 2, [16] = 3 }

-- Three consumer warpgroups get 160 registers a thread: at D_PAD = 128 P V
-- then runs by halves, its temporary 32 registers instead of 64.
local function pv_halves(t) return consumers(t) == 3 and d_pad(t) == 128 end

local function gcd(a, b) while b ~= 0 do a, b = b, a % b end return a end
local function lcm(a, b) return a // gcd(a, b) * b end
-- Workspace rows: whole tiles, and (int8) whole INT8 scale blocks.
function G.rows(t)
  if QK == "int8" then return lcm(t.block_m, IBQ), lcm(t.block_n, IBK) end
  return t.block_m, t.block_n
end

-- The rules (rules.lua).  O, P V's per-tile temporary (s_p1 is applied
-- after the MMA), P and S take D_PAD/2 + D_PAD/2 + BN/4 + BN/2 registers a
-- thread; past D_PAD = 128 that does not fit beside a producer, so those
-- head dims keep variant=mma.
G.rules = {
  { need = { arch = "sm_90a" }, why = "warpgroup MMA and TMA" },
  { need = { head_dim = R.at_most(128) },
    why = "O and a P V temporary in registers; variant=mma above" },
  { text = "block_m=64|128 (192: head_dim <= 64, or 128 with block_n=64): 64 query rows per consumer warpgroup",
    check = function(t)
      local three = d_pad(t) <= 64 or (d_pad(t) == 128 and t.block_n == 64)
      if t.block_m % 64 ~= 0 or t.block_m > 192 or (t.block_m == 192 and not three) then
        return string.format("variant=wgmma: block_m=%d must be 64 or 128 (192: head_dim <= 64, or 128 with block_n=64): 64 query rows per consumer warpgroup", t.block_m)
      end
    end },
  { text = "warps = 4*consumers + 4 (a TMA producer warpgroup)",
    check = function(t)
      if not producer(t) then
        return string.format("variant=wgmma: block_m=%d needs warps=%d (a TMA producer warpgroup and one warpgroup per 64 rows), not warps=%d",
                             t.block_m, 4 * consumers(t) + 4, t.warps)
      end
    end },
  { need = { block_n = { 64, 128 } } },
  { need = { stages = R.at_least(2) }, why = "a TMA ring" },
}

function G.check(t) return R.first_broken(G.rules, t, t.family .. " variant=wgmma") end

local function layout(t)
  local l = { q = 0, q_bytes = t.block_m * d_pad(t) * 2, kv_bytes = t.block_n * d_pad(t) * 2 }
  l.k = l.q_bytes
  l.v = l.k + t.stages * l.kv_bytes
  l.bar = l.v + t.stages * l.kv_bytes
  l.total = l.bar + 8 * (1 + 3 * t.stages)
  return l
end
function G.smem_bytes(t) return layout(t).total + 1024 end

-- Live at once: O and S in the softmax, then O, P and the P V temporary.
function G.register_estimate(t)
  local tmp = pv_halves(t) and 32 or d_pad(t) // 2
  return math.max(d_pad(t) // 2 + t.block_n // 2, d_pad(t) // 2 + tmp + t.block_n // 4) + 40
end

-- Three consumer warpgroups where they fit (D_PAD <= 64 with 128-key tiles,
-- D_PAD = 128 with 64-key tiles and P V by halves), else two; two stages.
-- B4 H32 N4096 on the H200 (2026-12-02), nvfp4: D=128 7.09 ms against 7.91
-- (block_m=128 block_n=128), 8.38 (128/64), 12.3 (64/128); D=64 5.47 against
-- 6.65 (128/128) and 7.06 (128/64, three stages); mxfp4 and nvfp4-int8qk alike.
-- Once P's block scale was branch-free the tiles drew level (D=128: 4.91 ms
-- against 4.92 for 128/128 and 4.91 with three stages; D=64 3.95 against
-- 3.97 for 192/64), and issuing S(t+1) before tile t's quantization (two
-- consumers, 64-key tiles) lost: 5.98 ms at D=128, 5.59 at D=96 against 5.03.
function G.default(t)
  local x = d_pad(t)
  if x <= 64 then return { variant = "wgmma", block_m = 192, warps = 16, block_n = 128, stages = 2 } end
  if x == 128 then return { variant = "wgmma", block_m = 192, warps = 16, block_n = 64, stages = 2 } end
  return { variant = "wgmma", block_m = 128, warps = 12, block_n = 128, stages = 2 }
end

function G.prior(t)
  if G.check(t) then return -1 end
  if G.smem_bytes(t) > 227 * 1024 then return -1 end
  local reuse = (t.block_m * t.block_n) / (t.block_m + t.block_n)
  return 100 * reuse
end

function G.render(t, name, canonical, blocks)
  local l, w = layout(t), panel_cols(t)
  local regs_p, regs_c = WC.register_split(consumers(t), true)
  local qrows, krows = G.rows(t)
  local p = { kind = KIND, qk = QK, native = false, dtype = t.dtype }
  local constants = U.fill([[
typedef signed char i8;
constexpr int D = ${D}, D_PAD = ${D_PAD}, DP = ${DP}, DV = D_PAD, SPK = ${SPK};
constexpr int BM = ${BM}, BN = ${BN}, WARPS = ${WARPS}, THREADS = WARPS * 32, STAGES = ${STAGES};
constexpr int CONSUMERS = BM / 64;      // warpgroups that compute, 64 query rows each; warpgroup 0 loads
constexpr bool PRODUCER = true;        // warpgroup 0 only issues TMA copies
constexpr int REGS_PRODUCER = ${REGS_P}, REGS_CONSUMER = ${REGS_C};   // setmaxnreg targets (0: none)
constexpr int W = ${W}, ROW_BYTES = 2 * W, PANELS = D_PAD / W;   // swizzle panels of W columns
constexpr int Q_BYTES = ${Q_BYTES}, KV_BYTES = ${KV_BYTES};
constexpr int SM_Q = ${SM_Q}, SM_K = ${SM_K}, SM_V = ${SM_V}, SM_BAR = ${SM_BAR};
constexpr int MT = 1, KD = D_PAD / 16, NT = BN / 8, DT = D_PAD / 8;
constexpr int QROWS = ${QROWS}, KROWS = ${KROWS};   // workspace rows are padded to these
constexpr int IBQ = ${IBQ}, IBK = ${IBK};           // INT8 scale blocks (nvfp4-int8qk)
constexpr bool CAUSAL = ${CAUSAL}, WRITE_LSE = ${LSE}, SMOOTH_K = ${SMOOTH}, TWO_LEVEL = ${TWO_LEVEL};
constexpr bool INT8_QK = ${INT8}, BF16_OPS = true;  // the quantization pass writes bf16 operands
constexpr bool MMA_BF16 = true;        // so the products take bf16 (cuda/wgmma_f16_tile.cuh)
constexpr bool PV_HALVES = ${HALVES};  // P V by 64-column panels (three consumers at D_PAD = 128)
]], { D = t.head_dim, D_PAD = d_pad(t), DP = dp(t), SPK = spk(t), BM = t.block_m, BN = t.block_n,
      WARPS = t.warps, STAGES = t.stages, REGS_P = regs_p, REGS_C = regs_c, W = w,
      Q_BYTES = l.q_bytes, KV_BYTES = l.kv_bytes, SM_Q = l.q, SM_K = l.k, SM_V = l.v, SM_BAR = l.bar,
      QROWS = qrows, KROWS = krows, IBQ = IBQ, IBK = IBK,
      CAUSAL = t.causal == 1, LSE = t.lse == 1, SMOOTH = t.smooth_k == 1, TWO_LEVEL = t.p_scale == "two-level",
      INT8 = QK == "int8", HALVES = pv_halves(t) })
  return table.concat({
    require("blocks.fp4_quant").source_start(t, p, constants, name, canonical),
    require("blocks.tma_mbarrier")(t),
    require("blocks.wgmma_f16")({ dtype = "bf16", bn = t.block_n, d_pad = d_pad(t), swizzle_mode = SWIZZLE_MODE[w] }),
    require("blocks.softmax")(t),
    require("blocks.epilogue")(t),
    BLOCK,
    RING,
    TILE,
    CUDA,
    ENTRY,
  }, "\n")
end

-- Workspace sections and launches; `base` is the mma variant's plan for the
-- same table (its quantization kernels and grids), whose sections 0, 2 and 4
-- this replaces by the bf16 operands and to which this adds the TMA maps.
function G.launches(t, pr, name, base_sizes)
  local qrows, krows = G.rows(t)
  local nq, nk = U.round_up(pr.seq_q, qrows), U.round_up(pr.seq_k, krows)
  local bhq, bhk = pr.batch * pr.heads_q, pr.batch * pr.heads_kv
  local sizes = {}
  for i, s in ipairs(base_sizes(nq, nk)) do sizes[i] = s end
  sizes[1] = bhq * nq * d_pad(t) * 2
  sizes[3] = bhk * nk * d_pad(t) * 2
  sizes[5] = bhk * nk * d_pad(t) * 2
  local off, total = {}, 0
  for i, s in ipairs(sizes) do off[i] = total; total = total + U.round_up(s, 256) end
  local w = panel_cols(t)
  return {
    workspace = total, ws_off = off, nq = nq, nk = nk,
    attention = { name = name, grid = { U.ceil_div(pr.seq_q, t.block_m), pr.heads_q, pr.batch },
                  block = 32 * t.warps, smem = G.smem_bytes(t) },
    tmaps = {
      { slot = 0, section = 0, elem_bytes = 2, cols = d_pad(t), rows = nq, heads = pr.heads_q, batch = pr.batch,
        box_cols = w, box_rows = t.block_m, swizzle = 2 * w },
      { slot = 1, section = 2, elem_bytes = 2, cols = d_pad(t), rows = nk, heads = pr.heads_kv, batch = pr.batch,
        box_cols = w, box_rows = t.block_n, swizzle = 2 * w },
      { slot = 2, section = 4, elem_bytes = 2, cols = d_pad(t), rows = nk, heads = pr.heads_kv, batch = pr.batch,
        box_cols = w, box_rows = t.block_n, swizzle = 2 * w },
    },
  }
end

return G
end
