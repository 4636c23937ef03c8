-- Family f16, variant decode: a few query rows against a long KV cache
-- (templates/cuda/fwd_decode.cuh says how: packed query heads, split keys, a
-- cp.async ring, a combine kernel).  This file only checks the knobs,
-- computes the constants and the launch plan, and concatenates.
--
-- Knobs it reads: block_m (packed rows a block: gqa * seq_q of them per KV
-- head), block_n (keys a tile), warps, stages, q_regs, kv_splits (pieces the
-- keys are cut into).  Called by families/f16.lua for variant=decode.
local U = require("util")
local DEC = {}

local SOURCE = U.cuda("cuda/fwd_decode.cuh")

-- Queries at or below which the heuristic default runs this schedule.
-- (The bench's decode rows: Nq 1, 4 and 16.)
DEC.MAX_SEQ_Q = 16
-- Blocks of 4 or 8 warps that fit on an SM by shared memory at D=128
-- (64-key tiles, 3 stages: 109 KB a block), for the split heuristic.
local RESIDENT = 2
local COMBINE_WARPS = 4

local function d_pad(t) return U.round_up(t.head_dim, 16) end
local function row_stride(t) return d_pad(t) + 8 end   -- 16-byte pad: ldmatrix rows hit distinct banks
local function row_warps(t) return t.block_m // 16 end
local function key_warps(t) return t.warps // row_warps(t) end

local function layout(t)
  local dp, rs = d_pad(t), row_stride(t)
  local kw, bm = key_warps(t), t.block_m
  local l = { q = 0, tile = t.block_n * rs * 2, red_stride = dp + 8 }
  l.k = U.round_up(bm * rs * 2, 128)
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

function DEC.check(t)
  if t.align ~= 8 then
    return string.format("variant=decode needs align=8 (16-byte cp.async rows), not align=%d", t.align)
  end
  if t.overlap ~= 0 or t.persistent ~= 0 or t.split ~= 0 then
    return "variant=decode: overlap, persistent and split are wgmma knobs (keep them 0; kv_splits cuts the keys)"
  end
  if t.block_m > 64 then
    return string.format("variant=decode: block_m=%d packed rows a block, at most 64 (16 a warp)", t.block_m)
  end
  if t.warps ~= 4 and t.warps ~= 8 then
    return string.format("variant=decode needs warps=4 or 8, not warps=%d", t.warps)
  end
  if t.warps % row_warps(t) ~= 0 then
    return string.format("variant=decode: block_m=%d needs %d warps of 16 rows, which must divide warps=%d",
                         t.block_m, row_warps(t), t.warps)
  end
  local kpw = t.block_n // key_warps(t)
  if kpw < 16 or t.block_n % key_warps(t) ~= 0 or kpw % 16 ~= 0 or t.block_n > 128 then
    return string.format("variant=decode: block_n=%d split over %d key warps must give each a multiple of 16 keys (block_n <= 128)",
                         t.block_n, key_warps(t))
  end
  if t.stages < 2 then
    return string.format("variant=decode needs stages>=2 (a cp.async ring), not stages=%d", t.stages)
  end
end

function DEC.smem_bytes(t) return layout(t).total end

function DEC.register_estimate(t)
  local dp = d_pad(t)
  local kpw = t.block_n // key_warps(t)
  -- O, the scores, Q's fragments when kept, addressing and softmax state.
  return dp // 2 + kpw // 2 + (t.q_regs == 1 and dp // 4 or 4) + 40
end

-- Pieces for the keys: the fewest (a power of two) whose blocks fill the
-- GPU's block slots three times, each piece keeping at least 8 key tiles.
-- B8 Hkv8 Nk32768 on 132 SMs: 64 row tiles x 16 pieces = 1024 blocks.
function DEC.splits(pr, rows, block_m, block_n)
  if not (pr and pr.batch and pr.heads_kv and pr.seq_k) then return 8 end
  local units = pr.batch * pr.heads_kv * U.ceil_div(rows, block_m)
  local slots = (pr.sms or 132) * RESIDENT
  local tiles = U.ceil_div(pr.seq_k, block_n)
  local splits = 1
  while splits < 64 and units * splits < 3 * slots and tiles >= 16 * splits do splits = splits * 2 end
  return splits
end

-- The heuristic default: packed rows gqa * seq_q to the smallest of 16, 32
-- or 64 rows a block; 64-key tiles in a 3-deep ring; the splits above.
function DEC.default(t, pr)
  local gqa = t.gqa or (pr and pr.heads_q and pr.heads_kv and pr.heads_q // pr.heads_kv) or 1
  local rows = gqa * ((pr and pr.seq_q) or 1)
  local bm = rows <= 16 and 16 or rows <= 32 and 32 or 64
  local warps = bm == 64 and 8 or 4
  local bn = 64
  return { variant = "decode", q_regs = d_pad(t) <= 128 and 1 or 0, block_m = bm, block_n = bn, warps = warps,
           stages = 3, kv_splits = DEC.splits(pr, rows, bm, bn) }
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
  return string.format("mxattn_f16_d%d_%s", t.head_dim, U.short_hash(canonical))
end

-- The kernels' entry points: the schedule's device functions under the
-- names the launch plan gives.
local ENTRY = [[
extern "C" __global__ void __launch_bounds__(THREADS) ${NAME}(const __grid_constant__ mx_kernel_args a) {
  decode_attend(a);
}
extern "C" __global__ void __launch_bounds__(COMBINE_WARPS * 32) ${NAME}_combine(const __grid_constant__ mx_kernel_args a) {
  decode_combine(a);
}
]]

function DEC.render(t, canonical)
  local l = layout(t)
  local constants = U.fill([[
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
]], { D = t.head_dim, D_PAD = d_pad(t), RS = row_stride(t), BM = t.block_m, BN = t.block_n, WARPS = t.warps,
      STAGES = t.stages, SPLITS = t.kv_splits, COMBINE_WARPS = COMBINE_WARPS, TILE = l.tile,
      SM_Q = l.q, SM_K = l.k, SM_V = l.v, RED_STRIDE = l.red_stride, SM_RED_O = l.red_o, SM_RED_M = l.red_m,
      SM_RED_L = l.red_l, SM_ROW_LSE = l.row_lse, SM_ROW_OFF = l.row_off, SM_ROW_IDX = l.row_idx,
      CAUSAL = t.causal == 1, LSE = t.lse == 1, Q_REGS = t.q_regs == 1, OUT_BF16 = t.out_dtype == "bf16" })
  return table.concat({
    "// mxattn generated kernel. Do not edit: re-render with `mxattn gen`.\n// params: " .. canonical .. "\n",
    require("blocks.prelude")(t),
    constants,
    require("blocks.mma_sync")(t),
    SOURCE,
    U.fill(ENTRY, { NAME = DEC.kernel_name(t, canonical) }),
  }, "\n")
end

-- Grid: x = piece * row_tiles + row tile, y = KV head, z = batch; then the
-- combine kernel (one warp a row) as a programmatic dependent, where the
-- keys are cut.  Workspace: the pieces' O rows (fp32) and base-2 LSEs.
function DEC.launches(t, pr, canonical)
  local gqa = pr.heads_q // math.max(pr.heads_kv or pr.heads_q, 1)
  local rows = gqa * pr.seq_q
  local name = DEC.kernel_name(t, canonical)
  local kernels = { { name = name, grid = { U.ceil_div(rows, t.block_m) * t.kv_splits, pr.heads_kv or pr.heads_q, pr.batch },
                      block = 32 * t.warps, smem = DEC.smem_bytes(t) } }
  local total = pr.batch * pr.heads_q * pr.seq_q
  local workspace = 0
  if t.kv_splits > 1 then
    kernels[2] = { name = name .. "_combine", grid = { U.ceil_div(total, COMBINE_WARPS), 1, 1 },
                   block = 32 * COMBINE_WARPS, smem = 0, pdl = true }
    workspace = t.kv_splits * total * (t.head_dim + 1) * 4
  end
  return { workspace = workspace, kernels = kernels }
end

return DEC
