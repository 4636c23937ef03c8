-- Variant decode of families f16 and int8-fp8: a few query rows against a
-- long KV cache (templates/cuda/fwd_decode.cuh says how: packed query heads,
-- split keys, a cp.async ring, a combine kernel; int8-fp8 quantizes each
-- tile in shared memory as it lands, cuda/decode_quant.cuh).  This file only
-- checks the knobs, computes the constants and the launch plan, and
-- concatenates.
--
-- Knobs it reads: block_m (packed rows a block: gqa * seq_q of them per KV
-- head), block_n (keys a tile), warps, stages, q_regs (f16; int8-fp8 keeps
-- Q's codes in registers up to head_dim 128), kv_splits (pieces the keys are
-- cut into).  Called by families/f16.lua and families/int8_fp8.lua for
-- variant=decode.
local U = require("util")
local R = require("rules")
local S = require("space")
local DEC = {}

local SOURCE = U.cuda("cuda/fwd_decode.cuh")
local QUANT_SOURCE = U.cuda("cuda/e4m3.cuh") .. "\n" .. U.cuda("cuda/decode_quant.cuh")

-- Queries at or below which the heuristic default runs this schedule.
-- (The bench's decode rows: Nq 1, 4 and 16.)
DEC.MAX_SEQ_Q = 16
local COMBINE_WARPS = 4
-- A piece keeps at least this many key tiles: its start (Q and the ring's
-- first tiles, one memory latency) and its merge stay a small share.
local MIN_PIECE_TILES = 8

local function d_pad(t) return U.round_up(t.head_dim, 16) end
local function row_stride(t) return d_pad(t) + 8 end   -- 16-byte pad: ldmatrix rows hit distinct banks
local function row_warps(t) return t.block_m // 16 end
local function key_warps(t) return t.warps // row_warps(t) end
local function quantized(t) return t.family == "int8-fp8" end
-- Q's fragments in registers: f16's knob; int8-fp8's codes up to D 128
-- (their shared memory is then the blocks' state once the tiles come).
local function q_regs(t)
  if quantized(t) then return d_pad(t) <= 128 end
  return t.q_regs == 1
end

local function layout(t)
  local dp, rs = d_pad(t), row_stride(t)
  local kw, bm = key_warps(t), t.block_m
  local l = { q = 0, tile = t.block_n * rs * 2, red_stride = dp + 8 }
  local at = bm * rs * 2
  -- int8-fp8's quantized state (cuda/decode_quant.cuh names each); f16
  -- compiles the same functions, never called, with every offset 0.
  local fields = { "qsc", "kmean", "vsd", "kpart" }
  for _, f in ipairs(fields) do l[f] = 0 end
  l.qc = 0
  if quantized(t) then
    local blocks = t.block_n // 16
    local sizes = { qsc = bm * 4, kmean = blocks * dp * 4, vsd = blocks * dp * 4, kpart = blocks * row_warps(t) * 4 }
    for _, f in ipairs(fields) do
      at = U.round_up(at, 16)
      l[f] = at
      at = at + sizes[f]
    end
    -- Q's codes held in registers live in shared memory only until the
    -- first tile's means: they share the blocks' state.
    if q_regs(t) then
      l.qc = l.kmean
      at = math.max(at, l.qc + bm * rs * 2)
    else
      l.qc = U.round_up(at, 16)
      at = l.qc + bm * rs * 2
    end
  end
  l.k = U.round_up(at, 128)
  l.v = l.k + t.stages * l.tile
  local ring_end = l.v + t.stages * l.tile
  -- After the last tile the ring holds the key warps' partial rows.
  l.red_o = l.k
  l.red_m = l.red_o + kw * bm * l.red_stride * 4
  l.red_l = l.red_m + kw * bm * 4
  l.row_lse = l.red_l + kw * bm * 4
  l.row_off = U.round_up(l.row_lse + bm * 4, 8)
  l.row_idx = l.row_off + bm * 8
  l.total = math.max(ring_end, l.row_idx + bm * 4)
  return l
end

-- A block's packed query rows at most: 16 a warp, four row warps.
DEC.MAX_ROWS = 64

-- A problem's packed query rows: a KV group's query heads times seq_q
-- (pr: the problem's sizes; gqa from the table where it names one).
local function packed_rows(t, pr)
  local gqa = t.gqa or (pr and pr.heads_q and pr.heads_kv and pr.heads_q // pr.heads_kv) or 1
  return gqa * ((pr and pr.seq_q) or 1)
end

-- The decode schedule's rules (rules.lua).
DEC.rules = {
  { need = { align = 8 }, why = "16-byte cp.async rows" },
  { need = { block_m = R.at_most(DEC.MAX_ROWS) }, why = "a KV group's packed query rows, 16 a warp" },
  { need = { warps = { 4, 8 } } },
  { text = "block_m/16 row warps divide warps",
    check = function(t)
      if t.warps % row_warps(t) ~= 0 then
        return string.format("variant=decode: block_m=%d needs %d warps of 16 rows, which must divide warps=%d",
                             t.block_m, row_warps(t), t.warps)
      end
    end },
  { text = "block_n <= 128, split over the key warps (warps / (block_m/16)) in multiples of 16 keys",
    check = function(t)
      local kpw = t.block_n // key_warps(t)
      if kpw < 16 or t.block_n % key_warps(t) ~= 0 or kpw % 16 ~= 0 or t.block_n > 128 then
        return string.format("variant=decode: block_n=%d split over %d key warps must give each a multiple of 16 keys (block_n <= 128)",
                             t.block_n, key_warps(t))
      end
    end },
  { need = { stages = R.at_least(2) }, why = "a cp.async ring" },
  S.POW2_TILES,
}

DEC.packed_rows = packed_rows

-- Worth timing only where the problem's packed rows fit one block: above
-- that the decode schedule cannot win (the tuner's list leaves it out).
function DEC.candidate(t, pr)
  if not (pr and pr.seq_q) then return true end
  return packed_rows(t, pr) <= DEC.MAX_ROWS
end

function DEC.smem_bytes(t) return layout(t).total end

function DEC.register_estimate(t)
  local dp = d_pad(t)
  local kpw = t.block_n // key_warps(t)
  -- O, the scores, Q's fragments when kept, addressing and softmax state
  -- (ptxas: 168 at D=128 with 16 keys a warp, 127 at D=64 with 32);
  -- int8-fp8 holds a lane's 4 channels of 16 keys while it quantizes them.
  return dp // 2 + kpw // 2 + (q_regs(t) and dp // 4 or 4) + 64 + (quantized(t) and 32 or 0)
end

-- Blocks of table t an SM holds, by shared memory and registers.
function DEC.resident(t)
  local by_smem = (228 * 1024) // (DEC.smem_bytes(t) + 1024)
  local by_regs = 65536 // (U.round_up(DEC.register_estimate(t), 8) * 32 * t.warps)
  return math.max(1, math.min(by_smem, by_regs, 32 // t.warps))
end

-- Pieces for the keys: of the kv_splits values whose pieces keep at least
-- MIN_PIECE_TILES key tiles, the one whose blocks fill the GPU's block
-- slots most evenly (blocks / (waves * slots)); the fewest pieces of those
-- within 3% of the best.  Without the sizes, one piece: a knob at its
-- declared default is left out of the canonical text, so what a plan builds
-- from "variant=decode ..." (filled in again without sizes) must be what
-- the sized default meant by leaving kv_splits out.  Measured on the H200 (B16 Hq32, Nq=1, D=128,
-- 64-key tiles, 3 stages: 2 blocks an SM): a partial last wave is what
-- costs, Hkv8 Nk32768 at 4.18 TB/s with 2 pieces (256 blocks, one wave)
-- and 3.79 with 3 (384: 1.45 waves), Hkv8 Nk8192 3.96 with 2 and 3.54
-- with 3; beyond that, more pieces only cost their starts and merges
-- (Hkv8 Nk8192: 3.72 at 8, 3.47 at 16, 2.88 at 48).
function DEC.splits(t, pr, rows)
  if not (pr and pr.batch and pr.heads_kv and pr.seq_k) then return 1 end
  local units = pr.batch * pr.heads_kv * U.ceil_div(rows, t.block_m)
  local slots = (pr.sms or 132) * DEC.resident(t)
  local tiles = U.ceil_div(pr.seq_k, t.block_n)
  local best, best_fill = 1, 0
  for _, s in ipairs(require("space").by_name.kv_splits.values) do
    if s == 1 or tiles >= MIN_PIECE_TILES * s then
      local blocks = units * s
      local fill = blocks / (U.ceil_div(blocks, slots) * slots)
      if fill > best_fill + 0.03 then best, best_fill = s, fill end
    end
  end
  return best
end

-- The heuristic default: packed rows gqa * seq_q to the smallest of 16, 32
-- or 64 rows a block, 4 warps; 64-key tiles in a 3-deep ring where two
-- blocks still fit an SM, else 2-deep; the pieces above.  B16 Hq32 Hkv8
-- Nq16 (64 rows a block), H200: 4 warps and 2 stages (two blocks an SM)
-- 3.58 and 3.81 TB/s at Nk 8192 and 32768, where 8 warps and 3 stages (one
-- block: 121 KB) read 2.64 and 2.48.
function DEC.default(t, pr)
  local rows = packed_rows(t, pr)
  local bm = rows <= 16 and 16 or rows <= 32 and 32 or 64
  local knobs = { variant = "decode", block_m = bm, block_n = 64, warps = 4, stages = 3 }
  if not quantized(t) then knobs.q_regs = d_pad(t) <= 128 and 1 or 0 end
  local probe = setmetatable({}, { __index = function(_, k) if knobs[k] ~= nil then return knobs[k] end return t[k] end })
  if DEC.resident(probe) < 2 then knobs.stages = 2 end
  knobs.kv_splits = DEC.splits(probe, pr, rows)
  return knobs
end

-- Only the order matters.  For a few query rows (pr: the problem's sizes)
-- the decode tiles rank above every other kernel, nearest the heuristic's
-- rows a block and pieces first; otherwise below the wgmma tiles (x100),
-- which win at prefill.
function DEC.prior(t, pr)
  local base = U.occupancy_prior(t, DEC.smem_bytes(t), DEC.register_estimate(t))
  if not (pr and pr.seq_q and pr.seq_q <= DEC.MAX_SEQ_Q) then return base / 4 end
  local want = DEC.default(t, pr)
  local off = math.abs(math.log(t.kv_splits / want.kv_splits, 2)) + 2 * math.abs(math.log(t.block_m / want.block_m, 2))
  return 1e6 / (1 + off) + base
end

function DEC.kernel_name(t, canonical)
  return string.format("mxattn_%s_decode_d%d_%s", t.family:gsub("-", "_"), t.head_dim, U.short_hash(canonical))
end

-- The kernels' entry points: the schedule's device functions under the
-- names the launch plan gives.
function DEC.render(t, canonical)
  local l = layout(t)
  local constants = U.fill([[
#define KERNEL_NAME ${NAME}
#define COMBINE_NAME ${NAME}_combine
constexpr int D = ${D}, D_PAD = ${D_PAD}, RS = ${RS};
constexpr int BM = ${BM}, BN = ${BN}, WARPS = ${WARPS}, THREADS = WARPS * 32, STAGES = ${STAGES};
constexpr int ROW_WARPS = BM / 16;            // warps of 16 packed rows
constexpr int KEY_WARPS = WARPS / ROW_WARPS;  // warps that share a row group, each KPW keys of a tile
constexpr int KPW = BN / KEY_WARPS;
constexpr int KD = D_PAD / 16;                // k-steps of S = Q K^T
constexpr int NT = KPW / 8;                   // 8-key score tiles a warp
constexpr int DT = D_PAD / 8;                 // 8-column output tiles
constexpr int SPLITS = ${SPLITS};             // pieces the keys are cut into (1: no combine kernel)
constexpr int COMBINE_WARPS = ${COMBINE_WARPS};
constexpr int TILE_BYTES = ${TILE};
constexpr int SM_Q = ${SM_Q}, SM_K = ${SM_K}, SM_V = ${SM_V};
constexpr int RED_STRIDE = ${RED_STRIDE};
constexpr int SM_RED_O = ${SM_RED_O}, SM_RED_M = ${SM_RED_M}, SM_RED_L = ${SM_RED_L};
constexpr int SM_ROW_LSE = ${SM_ROW_LSE}, SM_ROW_OFF = ${SM_ROW_OFF}, SM_ROW_IDX = ${SM_ROW_IDX};
constexpr bool CAUSAL = ${CAUSAL}, WRITE_LSE = ${LSE}, Q_REGS = ${Q_REGS}, OUT_BF16 = ${OUT_BF16};
constexpr bool QUANT = ${QUANT}, IN_BF16 = ${IN_BF16};   // int8-fp8: tiles quantized as they land
constexpr int SM_QC = ${SM_QC}, SM_QSC = ${SM_QSC}, SM_KMEAN = ${SM_KMEAN}, SM_VSD = ${SM_VSD}, SM_KPART = ${SM_KPART};
]], { NAME = DEC.kernel_name(t, canonical), D = t.head_dim, D_PAD = d_pad(t), RS = row_stride(t), BM = t.block_m, BN = t.block_n, WARPS = t.warps,
      STAGES = t.stages, SPLITS = t.kv_splits, COMBINE_WARPS = COMBINE_WARPS, TILE = l.tile,
      SM_Q = l.q, SM_K = l.k, SM_V = l.v, RED_STRIDE = l.red_stride, SM_RED_O = l.red_o, SM_RED_M = l.red_m,
      SM_RED_L = l.red_l, SM_ROW_LSE = l.row_lse, SM_ROW_OFF = l.row_off, SM_ROW_IDX = l.row_idx,
      CAUSAL = t.causal == 1, LSE = t.lse == 1, Q_REGS = q_regs(t), OUT_BF16 = t.out_dtype == "bf16",
      QUANT = quantized(t), IN_BF16 = t.dtype == "bf16", SM_QC = l.qc, SM_QSC = l.qsc,
      SM_KMEAN = l.kmean, SM_VSD = l.vsd, SM_KPART = l.kpart })
  -- int8-fp8's products run on fp16 values of its codes.
  local mma_t = quantized(t) and setmetatable({ dtype = "f16" }, { __index = t }) or t
  return table.concat({
    U.banner(canonical),
    require("blocks.prelude")(t),
    constants,
    require("blocks.mma_sync")(mma_t),
    require("blocks.scale_recip"),
    QUANT_SOURCE,
    SOURCE,
  }, "\n")
end

-- Grid: x = piece * row_tiles + row tile, y = KV head, z = batch; then,
-- where the keys are cut, the combine kernel (one warp a row) as a
-- programmatic dependent; the first is the plan's main kernel, whose
-- registers and spills are reported.  Workspace: the pieces' O rows (fp32)
-- and base-2 LSEs.
function DEC.launches(t, pr, canonical)
  local gqa = pr.heads_q // math.max(pr.heads_kv or pr.heads_q, 1)
  local rows = gqa * pr.seq_q
  local name = DEC.kernel_name(t, canonical)
  local kernels = { { name = name, grid = { U.ceil_div(rows, t.block_m) * t.kv_splits, pr.heads_kv or pr.heads_q, pr.batch },
                      block = 32 * t.warps, smem = DEC.smem_bytes(t) } }
  local total = pr.batch * pr.heads_q * pr.seq_q
  local workspace = 0
  if t.kv_splits > 1 then
    workspace = t.kv_splits * total * (t.head_dim + 1) * 4
    kernels[2] = { name = name .. "_combine", grid = { U.ceil_div(total, COMBINE_WARPS), 1, 1 },
                   block = 32 * COMBINE_WARPS, smem = 0, pdl = true }
  end
  return { workspace = workspace, main = 1, kernels = kernels }
end

return DEC
