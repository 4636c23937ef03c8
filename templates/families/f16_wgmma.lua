-- Family f16, variant wgmma (sm_90a): FlashAttention-3 style.  Each consumer
-- warpgroup owns 64 query rows; S = Q K^T is a warpgroup MMA with Q and K in
-- shared memory, the online softmax runs on S's accumulator fragments, and
-- O += P V takes P from registers and V from shared memory.  Q (once) and the
-- K and V tiles (a `stages`-deep ring) arrive by TMA, completing on mbarriers.
--
-- overlap=0 is cuda/fwd_wgmma.cuh, whose two schedules `warps` picks (no
-- extra knob): warps = 4 * consumers runs step 1 (every warpgroup consumes,
-- one lane also issues the copies, a block barrier per key tile frees the
-- ring slot); warps = 4 * consumers + 4 adds a producer warpgroup (step 2,
-- FlashAttention-3's warp specialization: full and empty mbarriers per slot,
-- setmaxnreg moves registers to the consumers, no block barrier in the
-- loop).  block_m = 64 * consumers.  overlap=1 ping-pongs two consumer
-- warpgroups (cuda/fwd_wgmma_pingpong.cuh), persistent=1 loops it over work
-- units (cuda/fwd_wgmma_persistent.cuh), split=1 splits few units along the
-- keys (the same file's SPLIT).
--
-- Called by families/f16.lua for variant=wgmma: check, smem_bytes,
-- register_estimate, prior, default, render, launches.
local U = require("util")
local R = require("rules")
local WC = require("blocks.wgmma_common")
local WG = {}

local function d_pad(t) return U.round_up(t.head_dim, 16) end

-- Panel width W in elements: the widest swizzle atom (64, 32 or 16 elements,
-- i.e. 128, 64 or 32 bytes per row) that divides D_PAD, so a tile is whole
-- panels with no wasted columns (FlashAttention-3 picks its atom the same way).
local function panel_cols(t)
  local dp = d_pad(t)
  if dp % 64 == 0 then return 64 elseif dp % 32 == 0 then return 32 else return 16 end
end
local SWIZZLE_MODE = { [64] = 1, [32] = 2, [16] = 3 }   -- descriptor bits 62-63

local function consumers(t) return t.block_m // 64 end

-- The f16 wgmma schedules' rules (rules.lua): one-warpgroup blocks, the
-- producer / consumer ping-pong (overlap=1), its persistent loop and the
-- key split of a persistent unit.
WG.rules = {
  { need = { arch = "sm_90a" }, why = "warpgroup MMA and TMA" },
  { need = { align = 8 }, why = "TMA and wgmma move 16-byte rows" },
  { need = { q_regs = 0 }, why = "the MMA reads Q from shared memory" },
  { text = WC.WARPGROUP_RULE, check = function(t) return WC.check_warpgroups(t, d_pad(t)) end },
  { need = { stages = R.at_least(2) }, why = "a TMA ring" },
  { need = { overlap = { 0, 1 } }, why = "1: two consumer warpgroups take turns" },
  { when = { overlap = 1 }, need = { block_m = 128, warps = 12 },
    why = "two consumer warpgroups ping-pong behind a producer warpgroup" },
  { when = { persistent = 1 }, need = { overlap = 1 }, why = "only the ping-pong schedule loops over work units" },
  { when = { split = 1 }, need = { persistent = 1, causal = 0 },
    why = "the persistent kernel splits its work units along the keys, without a causal mask" },
  { when = { split = 1 }, text = "split=1: head_dim/2 + block_n/2 + 32 <= 160 (a piece's output beside O and S)",
    check = function(t)
      if not WG.deferred_output(t) then
        return string.format("split=1: head_dim=%d with block_n=%d leaves no registers for a piece's output beside O and S (head_dim/2 + block_n/2 + 32 <= 160)",
                             t.head_dim, t.block_n)
      end
    end },
}

-- Layout of the dynamic shared memory, in bytes from a 1024-aligned base.
local function layout(t)
  local dp = d_pad(t)
  local l = { q = 0, q_bytes = t.block_m * dp * 2, kv_bytes = t.block_n * dp * 2 }
  l.k = l.q_bytes
  l.v = l.k + t.stages * l.kv_bytes
  l.bar = l.v + t.stages * l.kv_bytes
  l.total = l.bar + 8 * (1 + 3 * t.stages)   -- q, full_k, full_v, empty
  if t.persistent == 1 then l.total = l.total + 16 end   -- q_empty, unit_slot
  return l
end

-- + 1024: the runtime base is only 16-byte aligned; the kernel rounds it up.
function WG.smem_bytes(t) return layout(t).total + 1024 end

function WG.register_estimate(t)
  -- O and S accumulators, P's packed halves, softmax state, descriptors and addressing.
  return d_pad(t) // 2 + t.block_n // 2 + t.block_n // 4 + 40
end

-- The winners on an H200 (bench/NOTES.md): a producer warpgroup and two
-- consumers for D=128, a producer and three consumers for D<=64 (with
-- shorter queries, one consumer).  pr: the problem's sizes, or nil.
function WG.default(t, pr)
  local dp = d_pad(t)
  -- Up to D=64 three consumer warpgroups share one K/V stream behind a
  -- producer (block_m=192): 498 vs 460 TOPS at N=16384, 483 vs 442 causal,
  -- 464 vs 445 at N=4096 (404 vs 407 causal), where three 64-row blocks per
  -- SM each streamed all of K and V (2.1x cuDNN's L2 reads) and the SM's
  -- clock sagged in sustained runs: best/mean of 100 launches 16.0/17.5 ms
  -- against 16.8/19.4 (H200, 2026-11-29; bench/NOTES.md).  Without
  -- the producer (warps=12) it is 10-18% slower.  Shorter queries keep the
  -- 64-row blocks, three to an SM: a 192-row block pads a 1024-row head by
  -- 12% (4096: 3%), and with a few rows (decoding) its idle warpgroups
  -- would still stream every key tile while taking a whole SM.  Measured at
  -- N >= 4096; 2048 pads by 3% as 4096 does.
  -- Few keys (cross-attention over text tokens) keep the 64-row blocks too:
  -- a 192-row block then does one key tile and waits on its loads, while
  -- three 64-row blocks an SM overlap theirs.  B2 H16 Nq=4096 (H200,
  -- 2026-12-02), ms against the 192-row block: 77 keys in one 96-key tile
  -- (the tuner's pick) 0.0266 against 0.0376 (0.95x cuDNN, was 0.66x); 256
  -- and 1024 keys in 128-key tiles 0.0349 / 0.0857 against 0.0456 / 0.0999
  -- (96-key tiles there: 0.0383 / 0.0927).
  local long_queries = pr == nil or pr.seq_q == nil or pr.seq_q >= 2048
  local long_keys = pr == nil or pr.seq_k == nil or pr.seq_k >= 2048
  if dp <= 64 and long_queries and long_keys then
    return { variant = "wgmma", q_regs = 0, block_m = 192, warps = 16, stages = 2, block_n = 128 }
  end
  if dp <= 64 then
    local bn = pr and pr.seq_k and pr.seq_k <= 96 and 96 or 128
    return { variant = "wgmma", q_regs = 0, block_m = 64, warps = 4, stages = 2, block_n = bn }
  end
  -- Ping-pong of the two consumer warpgroups (overlap=1): 643 vs 599 TOPS at
  -- D=128 N=4096, 571 vs 516 causal (gpu_wgmma on the H200, 2026-11-29).
  -- (A table that names its own tile keeps overlap=0 unless it asks.)
  local open = t.block_m == nil and t.warps == nil and t.block_n == nil and t.stages == nil
  -- The persistent kernel (one block per SM looping over row blocks, the
  -- next one's loads under the last one's output): 499 vs 470 TOPS at D=128
  -- N=1024, 573 vs 569 at N=4096, 607 vs 601 at N=16384.  Under causal, with
  -- the units taken in order from a counter (a fixed stride let the blocks
  -- drift apart and K/V out of L2: 468 vs 587), 344.5 vs 334.0 at N=1024,
  -- 511.2 vs 506.5 at N=4096, 588.0 vs 584.2 at N=16384 (three interleaved
  -- rounds).  176-key tiles measured level with 128 at N >= 4096 and 10%
  -- slower at N=1024.  (H200, 2026-11-29: the block_n and persistent sweeps,
  -- the dynamic order and causal; bench/NOTES.md.)
  -- split=1 where a problem's row blocks leave at least half of the SMs
  -- idle (pr.sms: the plan's GPU): +10% at B=1 H=8 N=1024 (64 units on 132
  -- SMs, 0.0219 vs 0.0242 ms), while the split-capable kernel is 1.6%
  -- slower where it does not split (H200, D=128, 2026-11-29).
  -- Up to 96 keys (77 text tokens) take one 96-key tile, two stages deep
  -- (a third would hold nothing): B2 H16 Nq=4096 Nk=77 D=128, 0.0458 ms
  -- against 0.0483 in the tuner, 0.0470 against 0.0499 in the bench (H200,
  -- 2026-12-02, bench/results/h200/cross_key_buckets.md).
  local few_keys = open and pr and pr.seq_k and pr.seq_k <= 96
  if dp <= 128 then
    local loops = open and t.overlap ~= 0
    local units = pr and pr.sms and pr.seq_q and U.ceil_div(pr.seq_q, 128) * (pr.heads_q or 1) * (pr.batch or 1)
    local split = loops and t.causal ~= 1 and units ~= nil and 2 * units <= pr.sms
    return { variant = "wgmma", q_regs = 0, overlap = open and 1 or 0, persistent = loops and 1 or 0,
             split = split and 1 or 0, block_m = 128, warps = 12, stages = few_keys and 2 or 3,
             block_n = few_keys and 96 or 128 }
  end
  return { variant = "wgmma", q_regs = 0, block_m = 128, warps = 12, stages = 2, block_n = 64 }
end

-- Larger key tiles amortise the softmax's fixed costs, and a producer
-- warpgroup frees the consumers from the loads.  Checked on the H200
-- (gpu_wgmma, 2026-11-29): wgmma runs 2-2.4x the mma.sync kernel, so its
-- candidates rank above every mma one (the factor 100).
function WG.prior(t)
  -- Blocks per SM: shared memory and registers (a producer warpgroup's
  -- setmaxnreg split averages 168 a thread; 65536 registers per SM).
  local regs = t.warps == 12 and 168 or t.warps == 16 and 128 or math.min(255, WG.register_estimate(t))
  local by_regs = 65536 // (32 * t.warps * (regs + 7) // 8 * 8)
  local by_smem = math.min((228 * 1024) // math.max(WG.smem_bytes(t), 1), 2, math.max(by_regs, 1))
  local reuse = (t.block_m * t.block_n) / (t.block_m + t.block_n)
  -- overlap=1: not timed yet; ranked just above the same tile without it so
  -- the tuner tries it early.
  -- persistent=1: measured 1-6% ahead of the same tile (WG.default).
  local persistent = t.persistent ~= 1 and 1 or 1.02
  return 100 * by_smem * reuse * (t.warps == 4 * consumers(t) + 4 and 1.5 or 1) * (t.overlap == 1 and 1.1 or 1) * persistent
end

-- The kernels are CUDA files, one a schedule: cuda/fwd_wgmma.cuh (overlap=0:
-- steps 1 and 2), cuda/fwd_wgmma_pingpong.cuh (overlap=1),
-- cuda/fwd_wgmma_persistent.cuh (persistent=1, with or without the deferred
-- output, split=1 or not), over the blocks they call.
-- render writes the constants they read in a header before them.
local PRELUDE, TMA = require("blocks.prelude"), require("blocks.tma_mbarrier")
local WGMMA, TURNS = require("blocks.wgmma_f16"), require("blocks.wgmma_overlap")
local SOFTMAX, EPILOGUE = require("blocks.softmax"), require("blocks.epilogue")
local TILE, SPLIT = U.cuda("cuda/wgmma_f16_tile.cuh"), U.cuda("cuda/wgmma_split.cuh")
local BLOCK, RING = U.cuda("cuda/tma_block.cuh"), U.cuda("cuda/wgmma_ring.cuh")
local KERNEL = { grid = U.cuda("cuda/fwd_wgmma.cuh"), pingpong = U.cuda("cuda/fwd_wgmma_pingpong.cuh"),
                 persistent = U.cuda("cuda/fwd_wgmma_persistent.cuh") }

-- The late store holds the packed output (32 registers) through the next
-- unit's first tile; beside O and S that fits up to 160 of the consumers'
-- 240 (D=128 with 176-key tiles spilled 12-60 bytes).  No causal mask.
local function deferred_output(t)
  return t.persistent == 1 and t.causal ~= 1 and d_pad(t) // 2 + t.block_n // 2 + 32 <= 160
end
WG.deferred_output = deferred_output

function WG.kernel_name(t, canonical)
  return string.format("mxattn_f16_d%d_%s", t.head_dim, U.short_hash(canonical))
end

local function has_producer(t) return t.warps == 4 * consumers(t) + 4 end

function WG.render(t, canonical)
  local l, w = layout(t), panel_cols(t)
  local ws = has_producer(t)
  local regs_p, regs_c = WC.register_split(consumers(t), ws)
  local schedule = t.persistent == 1 and "persistent" or t.overlap == 1 and "pingpong" or "grid"
  local deferred = deferred_output(t)
  local mma = { dtype = t.dtype, bn = t.block_n, d_pad = d_pad(t), swizzle_mode = SWIZZLE_MODE[w] }
  local header = U.fill([[
#define KERNEL_NAME ${NAME}
constexpr int D = ${D}, D_PAD = ${D_PAD};
constexpr int BM = ${BM}, BN = ${BN}, WARPS = ${WARPS}, THREADS = WARPS * 32, STAGES = ${STAGES};
constexpr int CONSUMERS = BM / 64;      // warpgroups that compute, 64 query rows each
constexpr bool PRODUCER = ${PRODUCER};  // warpgroup 0 only issues TMA copies
constexpr int REGS_PRODUCER = ${REGS_P}, REGS_CONSUMER = ${REGS_C};   // setmaxnreg targets (0: none)
constexpr int W = ${W}, ROW_BYTES = 2 * W, PANELS = D_PAD / W;   // swizzle panels of W columns
constexpr int Q_BYTES = ${Q_BYTES}, KV_BYTES = ${KV_BYTES};
constexpr int SM_Q = ${SM_Q}, SM_K = ${SM_K}, SM_V = ${SM_V}, SM_BAR = ${SM_BAR};
constexpr int MT = 1;                   // one 64-row warpgroup tile: 16 rows per warp
constexpr int KD = D_PAD / 16;          // k-steps of S = Q K^T
constexpr int NT = BN / 8;              // 8-key chunks of S
constexpr int DT = D_PAD / 8;           // 8-column chunks of O
constexpr bool CAUSAL = ${CAUSAL}, WRITE_LSE = ${LSE};
constexpr bool MMA_BF16 = ${BF16};      // the products' operands (and P) bf16, else fp16
]], { NAME = WG.kernel_name(t, canonical), D = t.head_dim, D_PAD = d_pad(t), BM = t.block_m, BN = t.block_n,
      WARPS = t.warps, STAGES = t.stages, PRODUCER = ws, REGS_P = regs_p, REGS_C = regs_c,
      W = w, Q_BYTES = l.q_bytes, KV_BYTES = l.kv_bytes, SM_Q = l.q, SM_K = l.k, SM_V = l.v, SM_BAR = l.bar,
      CAUSAL = t.causal == 1, LSE = t.lse == 1, BF16 = t.dtype == "bf16" })
  if schedule == "persistent" then
    header = header .. U.fill([[
constexpr bool DEFERRED = ${DEFERRED};  // a unit's output stored during the next unit
constexpr bool SPLIT = ${SPLIT};     // few units cut along the keys
constexpr int MAX_SPLIT = ${MAX_SPLIT}, MAX_PIECES = ${MAX_PIECES};   // pieces a unit, pieces in all at most
]], { DEFERRED = deferred, SPLIT = t.split == 1, MAX_SPLIT = WC.SPLIT_MAX, MAX_PIECES = WC.SPLIT_MAX_PIECES })
  end
  if schedule ~= "grid" then header = header .. TURNS.constants({ sched_bar = 1 }) end
  header = header .. EPILOGUE.constants(t) .. WGMMA.constants(mma)
  local parts = {
    U.banner(canonical),
    PRELUDE.text, header, TMA.text, WGMMA.text(mma), SOFTMAX.text, EPILOGUE.text,
  }
  -- The persistent kernel names the deferred output's and the split's
  -- functions in every form (a discarded `if constexpr` branch outside a
  -- template still looks its names up).
  if schedule == "persistent" then
    parts[#parts + 1] = EPILOGUE.deferred
    parts[#parts + 1] = SPLIT
  end
  parts[#parts + 1] = BLOCK
  parts[#parts + 1] = RING
  parts[#parts + 1] = TILE
  if schedule ~= "grid" then parts[#parts + 1] = TURNS.text end
  parts[#parts + 1] = KERNEL[schedule]
  return table.concat(parts, "\n")
end

function WG.launches(t, pr, canonical)
  local w = panel_cols(t)
  local m_blocks = U.ceil_div(pr.seq_q, t.block_m)
  -- A persistent kernel names every work unit along x; the runtime launches
  -- at most `resident` blocks per SM of them and each block loops.  With
  -- split=1 it asks for up to C.SPLIT_MAX blocks a unit: the kernel splits
  -- when the runtime launches more blocks than there are units.
  local n_work, split = m_blocks * pr.heads_q * pr.batch, t.split == 1
  local grid = t.persistent == 1 and { n_work * (split and WC.SPLIT_MAX or 1), 1, 1 } or { m_blocks, pr.heads_q, pr.batch }
  return {
    -- The persistent kernel's two unit counters, and the split's pieces.
    workspace = split and WC.split_workspace(d_pad(t), consumers(t)) or t.persistent == 1 and 8 or 0,
    kernels = { { name = WG.kernel_name(t, canonical), grid = grid, block = 32 * t.warps, smem = WG.smem_bytes(t),
                  resident = t.persistent == 1 and 1 or nil } },
    tmaps = {
      { slot = 0, tensor = "q", box_cols = w, box_rows = t.block_m, swizzle = 2 * w },
      { slot = 1, tensor = "k", box_cols = w, box_rows = t.block_n, swizzle = 2 * w },
      { slot = 2, tensor = "v", box_cols = w, box_rows = t.block_n, swizzle = 2 * w },
    },
  }
end

return WG
