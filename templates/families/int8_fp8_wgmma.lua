-- Family int8-fp8, variant wgmma (sm_90a): SageAttention2's quantization on
-- Hopper's warpgroup MMAs, FlashAttention-3 style.  The stats and quant
-- kernels of blocks/attn_int8.lua run first, unchanged, and fill the same
-- workspace; then the attention kernel, which TMA feeds from the workspace
-- sections q8, k8 and v8t (cuda/fwd_int8_fp8_wgmma.cuh says what it computes).
-- The kernels are CUDA files, one a schedule, which this file picks and
-- configures with a header of constants (WG.render):
--   cuda/fwd_int8_fp8_wgmma.cuh  block_m = 64 * consumers, warps = 4 *
--       consumers (every warpgroup consumes, a block barrier a key tile) or
--       4 * consumers + 4 (a TMA producer warpgroup);
--   cuda/fwd_int8_fp8_ring.cuh   several consumers without a producer share
--       the ring through release counters;
--   cuda/fwd_int8_fp8_ring3.cuh  overlap=3: three consumers take turns on
--       the tensor pipe;
-- each over cuda/attend_int8_fp8.cuh's key tile and cuda/wgmma_int8.cuh's
-- descriptors and MMAs.
--
-- Called by families/int8_fp8.lua for variant=wgmma: check, smem_bytes,
-- register_estimate, prior, default, render, launches.
local U = require("util")
local R = require("rules")
local WC = require("blocks.wgmma_common")
local WG = {}

-- The mma variant's module: its workspace layout and quantization kernels
-- are reused as they are (same sections, same padding to block_m/block_n).
local MMA = require("blocks.attn_int8")("int8-fp8", "fp8")

local function d32(t) return U.round_up(t.head_dim, 32) end
local function dv(t) return U.round_up(t.head_dim, 16) end
local function consumers(t) return t.block_m // 64 end
-- A tile's P V has its own fp32 accumulator (issue_pv says why): above 128
-- channels it is computed in two column slices, one accumulator's worth each.
local function pv_slices(t) return dv(t) > 128 and 2 or 1 end
local function has_producer(t) return t.warps == 4 * consumers(t) + 4 end

-- Q8/K8 panel width in bytes (= int8 elements): the widest swizzle atom that
-- divides D32.  V^T's panel is one key tile, block_n bytes.
local function panel_qk(t)
  local d = d32(t)
  if d % 128 == 0 then return 128 elseif d % 64 == 0 then return 64 else return 32 end
end
local SWIZZLE_MODE = { [128] = 1, [64] = 2, [32] = 3 }   -- descriptor bits 62-63

-- V^T's ring slots.  Two V terms double V^T's tile (32 KB at D=128,
-- BN=128), and a slot per stage would leave room for two blocks per SM where
-- one term has three, which the kernel needs to hide its softmax
-- (bench/NOTES.md: -22 to -25%).  So the one-warpgroup kernel keeps V^T in
-- one slot, refilled at the top of each iteration (load_next): the copy of
-- V(t) runs under S(t) and its softmax, and the block fits three per SM.
local function v_slots(t)
  if t.v_terms == 2 and not has_producer(t) and consumers(t) == 1 and t.overlap == 0 then return 1 end
  return t.stages
end

-- rowsum_mma's B operand, a swizzle atom of ones and zeros (the header says why).
local ONES_BYTES = 1024

-- Several consumer warpgroups without a producer (and not the ring,
-- overlap=3) share the TMA ring through release counters (cuda/fwd_int8_fp8_ring.cuh).
local function shares_ring(t) return consumers(t) > 1 and not has_producer(t) and t.overlap == 0 end

-- Layout of the dynamic shared memory, in bytes from a 1024-aligned base.
-- Every tile is a multiple of 512 bytes and each panel a multiple of its
-- swizzle atom (8 rows x W bytes), so panels start on atom boundaries.
local function layout(t)
  local l = { q_bytes = t.block_m * d32(t), k_bytes = t.block_n * d32(t), v_bytes = t.v_terms * dv(t) * t.block_n }
  l.q = 0
  l.k = U.round_up(l.q_bytes, 1024)
  l.v = l.k + t.stages * l.k_bytes
  local v_end = l.v + v_slots(t) * l.v_bytes
  l.ones = U.round_up(v_end, 1024)   -- rowsum_mma's B tile: one 8-row atom
  l.bar = U.round_up((t.rowsum_mma or 0) == 1 and l.ones + ONES_BYTES or v_end, 8)
  l.total = l.bar + 8 * (1 + 3 * t.stages)   -- q, full_k, full_v, empty
  l.released = l.total                       -- the shared ring's release counters, a u32 a slot
  if shares_ring(t) then l.total = l.total + 4 * t.stages end
  return l
end

-- Blocks an SM that shared memory holds: each takes its layout, 1024 bytes
-- of alignment slack (WG.smem_bytes) and the 1 KB the SM reserves a block.
local SM_SHARED, BLOCK_EXTRA = 228 * 1024, 2048
local function blocks_by_smem(t) return SM_SHARED // (layout(t).total + BLOCK_EXTRA) end

-- The int8-fp8 wgmma schedules' rules (rules.lua): one-warpgroup blocks,
-- the shared K/V ring of several consumers, the three-consumer ring
-- (overlap=3) and four one-warpgroup blocks an SM (blocks_per_sm=4).
WG.rules = {
  { need = { arch = "sm_90a" }, why = "warpgroup MMA and TMA" },
  { text = WC.WARPGROUP_RULE, check = function(t) return WC.check_warpgroups(t, d32(t), shares_ring(t)) end },
  { need = { block_n = { 32, 64, 128 } },
    why = "the k32 FP8 MMA reduces 32 keys; V^T's panel is a tile's keys, split by powers of two" },
  { need = { stages = R.at_least(2) }, why = "a TMA ring" },
  { when = { v_terms = 2 }, need = { head_dim = R.at_most(128) },
    why = "V^T's two terms, 2*head_dim channel rows, are one TMA box of at most 256 rows" },
  { when = { head_dim = R.above(128) }, need = { block_n = R.at_most(64) },
    why = "O and S of wider tiles overflow the consumers' registers" },
  { need = { overlap = { 0, 3 } }, why = "3: three consumer warpgroups pass the tensor pipe around" },
  { when = { overlap = 3 }, need = { block_m = 192, warps = 12, head_dim = R.at_most(128) },
    why = "three consumer warpgroups and no producer, one P V slice a turn" },
  { when = { blocks_per_sm = 4 }, need = { block_m = 64, warps = 4, overlap = 0, head_dim = R.at_most(64) },
    why = "one warpgroup a block; 128 registers a thread spill above head_dim 64" },
  { when = { blocks_per_sm = 4 }, text = "blocks_per_sm=4: four blocks' shared memory fit an SM",
    check = function(t)
      if blocks_by_smem(t) < t.blocks_per_sm then
        return string.format("variant=wgmma: blocks_per_sm=%d needs %d bytes of shared memory a block or less, not %d (fewer stages or a narrower block_n)",
                             t.blocks_per_sm, SM_SHARED // t.blocks_per_sm - BLOCK_EXTRA, layout(t).total)
      end
    end },
}

function WG.check(t) return R.first_broken(WG.rules, t, "int8-fp8 variant=wgmma") end

-- + 1024: the runtime base is only 16-byte aligned; the kernel rounds it up.
function WG.smem_bytes(t)
  local why = WG.check(t)
  if why then error("invalid configuration: " .. why, 0) end
  return layout(t).total + 1024
end

-- Blocks per SM the one-warpgroup kernel is compiled for: as many as shared
-- memory holds, at most three.  Three warpgroups per SM hide the softmax
-- (WG.default says how much that measured), and ptxas left to itself can
-- land a few registers past the 168 that three need (softmax_acc's two
-- paths: 172 at D=128), halving the SM's warpgroups for nothing.  Four
-- cap the registers at 128, which spills above D=64; up to it the knob
-- blocks_per_sm asks for four (the softmax's dependent chains want
-- more warps to interleave: the H200's stall samples, 2026-11-29).
local function min_blocks(t)
  if consumers(t) > 1 or has_producer(t) then return 1 end
  if (t.blocks_per_sm or 0) > 0 then return t.blocks_per_sm end   -- WG.check: shared memory holds them
  return math.max(1, math.min(3, blocks_by_smem(t)))
end

function WG.register_estimate(t)
  -- O accumulators, S (s32 then fp32), P's E4M3 registers, K scales, softmax state, descriptors and addressing.
  -- A tile's P V accumulator takes S's registers once S is packed.  A screen against the 255
  -- limit, not an allocation.
  return dv(t) // 2 + t.block_n // 2 + t.block_n // 8 + t.block_n // 16 + 40
end

-- The fastest checked tables on the H200 (gpu_int8_wgmma's speed lines,
-- 2026-11-29, end to end at B=4 H=32): one consumer warpgroup with 128-key
-- tiles.  Above D=64, two stages beat three (D=128: 577 vs 514 TOPS at
-- N=4096, 714 vs 661 at N=16384, +9% causal): 72 KB of shared memory instead
-- of 104 lets three blocks share an SM, and three independent warpgroups hide
-- the softmax better than a deeper ring.  At D=64 both fit three blocks and
-- three stages are as fast or a little faster (causal 288 vs 276).  Up to D=64, four blocks an SM
-- (blocks_per_sm=4: 128 registers, no spills) beat three by 5% end to end
-- (H200, 2026-11-30, D=64 N=4096/16384, causal both): more warps
-- to interleave the softmax's dependent instructions.  (A table that names
-- its own tile or overlap keeps blocks_per_sm=0 unless it asks: the knob
-- holds for one tile only.)
-- rowsum_mma (the row sums by the tensor cores) measured 2.3-2.9% faster at
-- D=64 and 1.3-2.2% at D=128 without a mask, 0.9% at D=64 causal, and 1.9%
-- slower at D=128 N=4096 causal (one round on the H200, 2026-11-30):
-- on by default except there.
function WG.default(t, pr)
  local open = t.block_m == nil and t.warps == nil and t.block_n == nil and t.stages == nil and t.overlap == nil
  local rowsum = open and not (t.causal == 1 and d32(t) > 64) and 1 or 0
  -- Without a mask and with long rows, consumers share each K/V tile
  -- (cuda/fwd_int8_fp8_ring.cuh): under the board's 700 W cap they spend less energy a
  -- tile (a third or a quarter of the L2-to-SM traffic) and run at a higher
  -- clock (1.82-1.87 GHz where the one-warpgroup blocks run 1.70-1.75), though
  -- 3-7% slower in short bursts at boost clock (H200, 2026-11-30).  Three at D=128: +6-7% at N=16384, +1-3% at N=4096; four at D=64:
  -- +3% at N=16384, -4.5% at N=4096; causal slower at N=4096 (D=128 -7%).
  -- Short query runs keep the 64-row blocks as f16 does (a 192-row block pads
  -- a 1024-row head by 12%), and so do problems with fewer than two waves of
  -- shared blocks (one an SM): there the 64-row blocks reach 3-4x the SMs.
  -- Sizes unknown (pr nil): the long choice.
  local seq_q, seq_k = pr and pr.seq_q, pr and pr.seq_k
  local long_queries = seq_q == nil or seq_q >= 2048
  local function waves_of(bm)   -- blocks of bm rows over the GPU's SMs; nil when unknown
    if not (seq_q and pr.sms and pr.sms > 0) then return nil end
    return U.ceil_div(seq_q, bm) * (pr.heads_q or 1) * (pr.batch or 1) / pr.sms
  end
  local shared = open and t.causal ~= 1 and long_queries
  if d32(t) <= 64 then
    shared = shared and (waves_of(256) or 2) >= 2
    if shared and (seq_k == nil or seq_k >= 8192) then   -- 8192 itself not measured
      return { variant = "wgmma", block_m = 256, warps = 16, block_n = 128, stages = 3, rowsum_mma = 1 }
    end
    return { variant = "wgmma", block_m = 64, warps = 4, block_n = 128, stages = 3, blocks_per_sm = open and 4 or 0,
             rowsum_mma = rowsum }
  end
  if d32(t) <= 128 then
    shared = shared and (waves_of(192) or 2) >= 2
    -- From 16384 keys the same three warpgroups take turns on the tensor
    -- pipe (overlap=3: cuda/fwd_int8_fp8_ring3.cuh): 1-3% faster than the shared ring there,
    -- 2% slower at 4096 (H200, 2026-11-30; 8192 not measured).
    if shared and (seq_k == nil or seq_k >= 16384) then
      return { variant = "wgmma", overlap = 3, block_m = 192, warps = 12, block_n = 128, stages = 3, rowsum_mma = 1 }
    end
    if shared and seq_k >= 4096 then
      return { variant = "wgmma", block_m = 192, warps = 12, block_n = 128, stages = 3, rowsum_mma = 1 }
    end
    return { variant = "wgmma", block_m = 64, warps = 4, block_n = 128, stages = 2, rowsum_mma = rowsum }
  end
  -- Above D=128, two consumer warpgroups of 64 rows behind the producer,
  -- 64-key tiles, the row sums by MMA: 1.33-1.42x the one-consumer 64x64
  -- tile at D 160/192/256 N=4096, causal or not (H200, 2026-12-02:
  -- 2.384 / 2.671 / 3.077 ms against 3.397 / 3.604 / 4.097; bench/NOTES.md).
  return { variant = "wgmma", block_m = 128, warps = 12, block_n = 64, stages = 2, rowsum_mma = open and 1 or 0 }
end

-- Checked on the H200: wgmma runs 1.5-2.3x the mma.sync plan, so its
-- candidates rank above every mma one (the factor 100; mma priors are < 1000).
function WG.prior(t)
  local by_smem = math.min(SM_SHARED // math.max(WG.smem_bytes(t), 1), 2)
  local reuse = (t.block_m * t.block_n) / (t.block_m + t.block_n)
  -- Three consumers (block_m=192) measured 4-25% slower than the default's
  -- one-warpgroup blocks at D=64 (H200, 2026-11-29), and the ring
  -- (overlap=3) 12% slower than the shared ring at D=64 (H200, 2026-11-30).
  -- Ranked below every one-warpgroup tile, except above D=64:
  -- the shared ring and the ring measured faster than the
  -- one-warpgroup blocks under the power cap without a mask (WG.default),
  -- each by 1-3% where the other is slower: ranked above them, the shared
  -- ring a hair first, so the tuner tries both early.
  local wide = d32(t) > 64
  local three = consumers(t) == 3 and (shares_ring(t) and wide and 1.2 or t.overlap == 3 and wide and 1.19 or 0.3) or 1
  -- blocks_per_sm: four at 128-key tiles measured 5% faster than the same
  -- tile without it at D=64 (H200, 2026-11-30).
  local more_blocks = (t.blocks_per_sm or 0) == 4 and 1.05 or 1
  -- rowsum_mma: 1-3% faster than the same tile without it (WG.default).
  local summed = (t.rowsum_mma or 0) == 1 and 1.02 or 1
  return 100 * by_smem * reuse * (has_producer(t) and 1.5 or 1) * three * more_blocks * summed
end

function WG.kernel_name(t, canonical) return MMA.kernel_name(t, canonical) end

-- The schedules, one CUDA file each (the header below picks one), and the
-- per-tile device functions they share.
local ATTEND = U.cuda("cuda/attend_int8_fp8.cuh")
local TMA_BLOCK = U.cuda("cuda/tma_block.cuh")     -- the block's tiles and barriers
local BLOCK = U.cuda("cuda/int8_fp8_block.cuh")   -- and its copies
local KERNEL = { one = U.cuda("cuda/fwd_int8_fp8_wgmma.cuh"), shared = U.cuda("cuda/fwd_int8_fp8_ring.cuh"),
                 ring = U.cuda("cuda/fwd_int8_fp8_ring3.cuh") }
local function schedule(t)
  if t.overlap == 3 then return "ring" end
  if shares_ring(t) then return "shared" end
  return "one"   -- one warpgroup (or several meeting at a block barrier), or a producer's
end

function WG.render(t, canonical)
  local why = WG.check(t)
  if why then error("invalid configuration: " .. why, 0) end
  local l, w = layout(t), panel_qk(t)
  local ws_producer = has_producer(t)
  local regs_p, regs_c = WC.register_split(consumers(t), ws_producer)
  local name = WG.kernel_name(t, canonical)
  local constants = U.fill([[
#define KERNEL_NAME ${NAME}
constexpr int D = ${D}, D32 = ${D32}, DV = ${DV}, D_PAD = DV;
constexpr int BM = ${BM}, BN = ${BN}, WARPS = ${WARPS}, THREADS = WARPS * 32, STAGES = ${STAGES};
constexpr int CONSUMERS = BM / 64;      // warpgroups that compute, 64 query rows each
constexpr bool PRODUCER = ${PRODUCER};  // warpgroup 0 only issues TMA copies
constexpr int REGS_PRODUCER = ${REGS_P}, REGS_CONSUMER = ${REGS_C};   // setmaxnreg targets (0: none)
constexpr int MIN_BLOCKS = ${MIN_BLOCKS};   // blocks an SM the registers must fit (min_blocks says why)
constexpr int WQK = ${WQK}, PANELS_QK = D32 / WQK;   // Q8/K8 swizzle panels of WQK bytes (int8 channels)
constexpr u64 SWZ_QK = ${SWZ_QK}, SWZ_V = ${SWZ_V};  // descriptor swizzle fields: Q8/K8, V^T (one BN-byte panel)
constexpr int Q_BYTES = ${Q_BYTES}, K_BYTES = ${K_BYTES}, V_BYTES = ${V_BYTES};
constexpr int SM_Q = ${SM_Q}, SM_K = ${SM_K}, SM_V = ${SM_V}, SM_ONES = ${SM_ONES}, SM_BAR = ${SM_BAR}, SM_RELEASED = ${SM_RELEASED};
constexpr bool ROWSUM_MMA = ${ROWSUM_MMA};  // the row sums by MMA (issue_rowsum)
// Its B tile at SM_ONES: 8 rows (P V's N = 8 columns) of up to 128 key
// bytes, one swizzle atom.  Row 0 holds E4M3 ones and rows 1-7 zeros, so
// column 0 of P times it is each row's sum and the other columns are 0: the
// lane holding column 0 gets the sum and its quad's other lanes nothing,
// which is the per-lane partial sum the epilogue adds across the quad.  Row
// 0's chunks are not moved by any swizzle (row index 0), so bytes 0..BN-1.
constexpr int ONES_BYTES = ${ONES_BYTES};
constexpr int MT = 1;                   // one 64-row warpgroup tile: 16 rows per warp
constexpr int KQ = D32 / 32;            // k32 steps of S = Q K^T
constexpr int NT = BN / 8;              // 8-key chunks of S
constexpr int DT = DV / 8;              // 8-column chunks of O
constexpr int PV_SLICES = ${PV_SLICES}, PV_N = DV / PV_SLICES, PV_DT = PV_N / 8;   // a tile's P V: column slices
constexpr int RSV = BN + 16;            // (cuda/pv_fp8.cuh's mma.sync tile; unused here)
constexpr bool CAUSAL = ${CAUSAL}, WRITE_LSE = ${LSE}, SMOOTH_K = ${SMOOTH_K}, FP8_V = true;
constexpr int V_TERMS = ${V_TERMS};     // E4M3 terms of V (issue_pv)
// INT8 scales in SageAttention2's per-thread groups (cuda/quant_int8.cuh;
// PER_THREAD is the quant kernels'): a thread meets KS_N = 1 K scale a key
// tile, over all NT_G = NT of its 8-key chunks.
constexpr bool PER_THREAD = true;
constexpr int KS_N = 1, NT_G = NT;
constexpr int V_SLOTS = ${V_SLOTS};     // V^T ring slots: STAGES, or 1 (v_slots says when)
enum { ${WS} };                         // workspace sections
]], { NAME = name, D = t.head_dim, D32 = d32(t), DV = dv(t), BM = t.block_m, BN = t.block_n, WARPS = t.warps,
      STAGES = t.stages, PRODUCER = ws_producer, REGS_P = regs_p, REGS_C = regs_c, MIN_BLOCKS = min_blocks(t),
      WQK = w, SWZ_QK = SWIZZLE_MODE[w], SWZ_V = SWIZZLE_MODE[t.block_n] or 3, Q_BYTES = l.q_bytes,
      K_BYTES = l.k_bytes, V_BYTES = l.v_bytes, SM_Q = l.q, SM_K = l.k, SM_V = l.v, SM_ONES = l.ones,
      SM_BAR = l.bar, SM_RELEASED = l.released, ROWSUM_MMA = t.rowsum_mma == 1, ONES_BYTES = ONES_BYTES,
      CAUSAL = t.causal == 1, LSE = t.lse == 1, SMOOTH_K = t.smooth_k == 1, V_TERMS = t.v_terms,
      V_SLOTS = v_slots(t), PV_SLICES = pv_slices(t), WS = MMA.WS_ENUM })
  return table.concat({
    U.banner(canonical),
    require("blocks.prelude")(t),
    constants,
    require("blocks.mma_sync")({ dtype = "f16" }),   -- ldmatrix, for pv_fp8's (unused) mma.sync tile
    require("blocks.quant_int8")(t),
    require("blocks.quant_fp8v")(t),
    require("blocks.pv_fp8")(t),                       -- pack_e4m3x4 and pv_finish
    require("blocks.quant_kernels")({ name = name, head_dim = t.head_dim, per_thread = true }),
    require("blocks.tma_mbarrier")(t),
    require("blocks.wgmma_int8")(),
    require("blocks.softmax")(t, { split = true }),   -- rescale_o
    require("blocks.epilogue")(t),
    ATTEND,
    TMA_BLOCK,
    BLOCK,
    KERNEL[schedule(t)],
  }, "\n")
end

-- The mma variant's plan (stats, quant_q, quant_kv, attention; the same workspace) with
-- this kernel's block and shared memory, plus the TMA maps over the q8, k8
-- and v8t sections ([batch][heads][rows][cols] bytes, cols innermost).
function WG.launches(t, pr, canonical)
  local plan = MMA.launches(t, pr, canonical)
  local attn = plan.kernels[#plan.kernels]
  attn.block, attn.smem = 32 * t.warps, WG.smem_bytes(t)
  local nqp, nkp = U.round_up(pr.seq_q, t.block_m), U.round_up(pr.seq_k, t.block_n)
  local w = panel_qk(t)
  plan.tmaps = {
    { slot = 0, section = 0, elem_bytes = 1, cols = d32(t), rows = nqp, heads = pr.heads_q, batch = pr.batch,
      box_cols = w, box_rows = t.block_m, swizzle = w },
    { slot = 1, section = 1, elem_bytes = 1, cols = d32(t), rows = nkp, heads = pr.heads_kv, batch = pr.batch,
      box_cols = w, box_rows = t.block_n, swizzle = w },
    { slot = 2, section = 6, elem_bytes = 1, cols = nkp, rows = t.v_terms * dv(t), heads = pr.heads_kv,
      batch = pr.batch, box_cols = t.block_n, box_rows = t.v_terms * dv(t), swizzle = t.block_n },
  }
  return plan
end

return WG
