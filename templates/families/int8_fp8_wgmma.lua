-- Family int8-fp8, variant wgmma (sm_90a): SageAttention2's quantization on
-- Hopper's warpgroup MMAs, FlashAttention-3 style.  The stats and quant
-- kernels of blocks/attn_int8.lua run first, unchanged, and fill the same
-- workspace (Q8 per 16 rows pre-scaled to base 2, K8 - mean per 16 keys, V^T
-- in E4M3 per channel with permuted keys); then the attention kernel:
--   TMA brings Q8 (once), K8 and V^T tiles (a `stages`-deep ring, mbarriers)
--   from the workspace sections q8, k8 and v8t;
--   S = Q8 K8^T is a wgmma m64n<BN>k32 s8 (both from shared memory), scaled
--   by the row block's Q scale and each 16-key group's K scale;
--   the online softmax runs on S's s32 fragments (softmax_acc: dequantize,
--   subtract the max and scale P by 448 in one FFMA and the exponent);
--   P*448 -> E4M3 in registers, each tile's P V^T is a wgmma m64n<DV>k32
--   e4m3 with A = P from registers and B = V^T from shared memory, into its
--   own fp32 accumulator that is added to O (issue_pv says why); with
--   v_terms=2 a second k-loop over V's second E4M3 term adds into it;
--   V's channel scale in the epilogue (blocks/pv_fp8.lua), where the 448 of
--   P cancels against the row sum's.
-- Layouts and descriptors: blocks/wgmma_int8.lua.
--
-- As in families/f16_wgmma.lua, `warps` picks the kernel: 4 * consumers runs
-- every warpgroup as a consumer (thread 0 also issues the copies, a block
-- barrier per key tile frees the ring slot); 4 * consumers + 4 adds a TMA
-- producer warpgroup (full/empty mbarriers per slot, setmaxnreg).
-- block_m = 64 * consumers.
--
-- Called by families/int8_fp8.lua for variant=wgmma: check, smem_bytes,
-- register_estimate, prior, default, render, launches.
local U = require("util")
local WG = {}

-- The mma variant's module: its workspace layout and quantization kernels
-- are reused as they are (same sections, same padding to block_m/block_n).
local MMA = require("blocks.attn_int8")("int8-fp8", "fp8")

local WS_NAMES = { "WS_Q8", "WS_K8", "WS_QSCALE", "WS_KSCALE", "WS_KMEAN", "WS_VSCALE", "WS_V8T", "WS_CORR" }

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

-- rowsum_mma's B operand: 8 rows (P V's N = 8 columns) of up to 128 key
-- bytes, one swizzle atom.  Row 0 holds E4M3 ones and rows 1-7 zeros, so
-- column 0 of P times it is each row's sum and the other columns are 0: the
-- lane holding column 0 gets the sum and its quad's other lanes nothing,
-- which is the per-lane partial sum the epilogue adds across the quad.  Row
-- 0's chunks are not moved by any swizzle (row index 0), so bytes 0..BN-1.
local ONES_BYTES = 1024

-- Several consumer warpgroups without a producer (and not the ring,
-- overlap=3) share the TMA ring through release counters (KERNEL_SHARED).
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
  l.released = l.total                       -- KERNEL_SHARED's release counters, a u32 a slot
  if shares_ring(t) then l.total = l.total + 4 * t.stages end
  return l
end

-- Blocks an SM that shared memory holds: each takes its layout, 1024 bytes
-- of alignment slack (WG.smem_bytes) and the 1 KB the SM reserves a block.
local SM_SHARED, BLOCK_EXTRA = 228 * 1024, 2048
local function blocks_by_smem(t) return SM_SHARED // (layout(t).total + BLOCK_EXTRA) end

function WG.check(t)
  if t.arch ~= "sm_90a" then
    return string.format("variant=wgmma needs arch=sm_90a (warpgroup MMA and TMA), not arch=%s", t.arch)
  end
  local why = require("blocks.wgmma_common").check_warpgroups(t, d32(t), shares_ring(t))
  if why then return why end
  if t.block_n % 32 ~= 0 then
    return string.format("variant=wgmma needs block_n a multiple of 32 (the k32 FP8 MMA reduces 32 keys; V^T's panel is a tile's keys), not block_n=%d",
                         t.block_n)
  end
  if t.stages < 2 then
    return string.format("variant=wgmma needs stages>=2 (a TMA ring), not stages=%d", t.stages)
  end
  if t.v_terms == 2 and dv(t) > 128 then
    return string.format("variant=wgmma: v_terms=2 needs head_dim<=128 (V^T's two terms, 2*%d channel rows, are one TMA box of at most 256 rows), not head_dim=%d",
                         dv(t), t.head_dim)
  end
  if d32(t) > 128 and t.block_n > 64 then
    return string.format("variant=wgmma: head_dim=%d needs block_n<=64 (O and S of block_n=%d overflow the consumers' registers)",
                         t.head_dim, t.block_n)
  end
  local blocks = t.blocks_per_sm or 0
  if blocks > 0 and blocks_by_smem(t) < blocks then
    return string.format("variant=wgmma: blocks_per_sm=%d needs %d bytes of shared memory a block or less, not %d (fewer stages or a narrower block_n)",
                         blocks, SM_SHARED // blocks - BLOCK_EXTRA, layout(t).total)
  end
end

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
  -- (KERNEL_SHARED): under the board's 700 W cap they spend less energy a
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
    -- pipe (overlap=3: KERNEL_RING): 1-3% faster than the shared ring there,
    -- 2% slower at 4096 (H200, 2026-11-30; 8192 not measured).
    if shared and (seq_k == nil or seq_k >= 16384) then
      return { variant = "wgmma", overlap = 3, block_m = 192, warps = 12, block_n = 128, stages = 3, rowsum_mma = 1 }
    end
    if shared and seq_k >= 4096 then
      return { variant = "wgmma", block_m = 192, warps = 12, block_n = 128, stages = 3, rowsum_mma = 1 }
    end
    return { variant = "wgmma", block_m = 64, warps = 4, block_n = 128, stages = 2, rowsum_mma = rowsum }
  end
  return { variant = "wgmma", block_m = 64, warps = 8, block_n = 64, stages = 3 }
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
  -- the shared ring (KERNEL_SHARED) and the ring measured faster than the
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

-- The int8/e4m3 operands' pieces of a key tile (attend_tile's).
local PIECES = [[
// The tile's key scale a thread meets: its group's, (k mod 8) / 2 = lane % 4,
// of the tile's 128-key window.  The window's four by one broadcast load from
// a uniform address (a per-thread address held a 64-bit pointer across the
// loop: registers the four-block kernels do not have), then the thread's by
// its lane % 4.
MX_INLINE void load_kscale(float (&kscale)[KS_N], const float *ks, int t) {
  float w[4];
  asm("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(w[0]), "=f"(w[1]), "=f"(w[2]), "=f"(w[3]) : "l"(ks + t * BN / 128 * 4));
  const int i = threadIdx.x % 4;
  kscale[0] = i < 2 ? (i == 0 ? w[0] : w[1]) : (i == 2 ? w[2] : w[3]);
}

// S = Q8 K8^T for the K8 tile `desc_k` points at: KQ k32 steps, one commit
// group; step kq is 32 bytes into panel kq / (WQK / 32).
MX_INLINE void issue_qk(int (&acc)[1][NT][4], u64 desc_q, u64 desc_k) {
  wgmma_fence();
#pragma unroll
  for (int kq = 0; kq < KQ; kq++) {
    const int panel = kq / (WQK / 32), step = (kq % (WQK / 32)) * 32;
    const u64 da = desc_q + (panel * BM * WQK + step) / 16, db = desc_k + (panel * BN * WQK + step) / 16;
    wgmma_qk(acc, da, db, kq > 0);
  }
  wgmma_commit();
}

// Scores in base 2: the thread's Q scale times each key group's K scale.
// The int -> float conversion is exact (exact_s32_to_f32 says why and how),
// so the product rounds once, as (float)acc * scale would.
MX_INLINE void dequant_scores(float (&s)[1][NT][4], const int (&acc)[1][NT][4], float qscale,
                              const float (&kscale)[KS_N]) {
#pragma unroll
  for (int nt = 0; nt < NT; nt++) {
    const float scale = qscale * kscale[nt / NT_G];
#pragma unroll
    for (int e = 0; e < 4; e++) s[0][nt][e] = exact_s32_to_f32(acc[0][nt][e]) * scale;
  }
}

// The online softmax of a key tile that needs no mask, straight from S's s32
// accumulators in as few instructions per score as we could: the kernel is
// bound by issue (bench/NOTES.md), and converting, dequantizing, subtracting
// the max and scaling P onto E4M3's range each cost one per score before.
//  - The row max is taken over each key group's integers and scaled once
//    per group: the scales are positive, so max(acc) * scale is the largest
//    product, rounded as each product would be.  A thread's scores share
//    one scale (KS_N = 1): one group.  The group's maximum goes to
//    fp32 by cvt (one I2FP, exact below 2^24): the magic-number conversion
//    costs two instructions where no FFMA absorbs its subtraction.
//  - Conversion, dequantization and minus-max are one FFMA: the bits
//    0x4B400000 + acc are the float 1.5*2^23 + acc (exact_s32_to_f32 says
//    why), times scale, minus c = 1.5*2^23 * scale + max - log2(448).
//  - The log2(448) makes each exponential P*448, E4M3's range, with no
//    multiply; the row sum carries the same factor, which cancels in O / l
//    (pv_finish's unit is 1; the epilogue takes log2 448 back out of the LSE).
// The price: c rounds to fp32, so an exponent is off by up to about one INT8
// product unit (scale): ~1e-4 relative in P where E4M3 rounds by up to 6%
// and the INT8 quantization moves a score by many units.
constexpr float LOG2_448 = 8.8073549220576f;
MX_INLINE void softmax_acc(float (&s)[1][NT][4], const int (&acc)[1][NT][4], float (&row_max)[1][2],
                           float (&row_sum)[1][2], float (&alphas)[1][2], float qscale, const float (&kscale)[KS_N]) {
#pragma unroll
  for (int h = 0; h < 2; h++) {
    float m = MX_NEG_INF;
#pragma unroll
    for (int g = 0; g < KS_N; g++) {
      int top = acc[0][g * NT_G][2 * h];
#pragma unroll
      for (int nt = g * NT_G; nt < (g + 1) * NT_G; nt++) top = max(top, max(acc[0][nt][2 * h], acc[0][nt][2 * h + 1]));
      m = fmaxf(m, __int2float_rn(top) * (qscale * kscale[g]));
    }
    m = fmaxf(row_max[0][h], quad_max(m));   // finite: the tile has a key for every row
    alphas[0][h] = fast_exp2(row_max[0][h] - m);
    row_max[0][h] = m;
    float sum = 0.f;
#pragma unroll
    for (int g = 0; g < KS_N; g++) {
      // c from kscale rather than scale: one product fewer live at a time.
      const float scale = qscale * kscale[g], c = fmaf(12582912.f * qscale, kscale[g], m - LOG2_448);
#pragma unroll
      for (int nt = g * NT_G; nt < (g + 1) * NT_G; nt++)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; e++) {
          s[0][nt][e] = __int_as_float(0x4B400000 + acc[0][nt][e]);
          s[0][nt][e] = fast_exp2(fmaf(s[0][nt][e], scale, -c));
          sum += s[0][nt][e];
        }
    }
    row_sum[0][h] = row_sum[0][h] * alphas[0][h] + sum;
  }
}

// The online softmax of key tile t into s (P times 448, as softmax_acc's)
// and alphas (O's factors, rescale_o).  The few tiles with padding keys or,
// under causal, keys past a row's diagonal take the plain way: dequantize,
// mask with -inf, softmax_tile with the same log2 448 shift.
MX_INLINE void softmax_tile_acc(float (&s)[1][NT][4], const int (&acc)[1][NT][4], int t, int warp_row0,
                                const mx_kernel_args &a, float (&row_max)[1][2], float (&row_sum)[1][2],
                                float (&alphas)[1][2], float qscale, const float (&kscale)[KS_N]) {
  if (tile_needs_mask(t, warp_row0, a)) {
    dequant_scores(s, acc, qscale, kscale);
    mask_scores(s, warp_row0, t * BN, a.seq_k, a.causal_offset);
    softmax_tile(s, row_max, row_sum, alphas, 1.f, LOG2_448);
  } else {
    softmax_acc(s, acc, row_max, row_sum, alphas, qscale, kscale);
  }
}

// P*448 (softmax_acc's exponentials) -> E4M3, the A fragment of k32
// step kk from S chunks 4kk..4kk+3 (key order of V^T's permutation,
// blocks/pv_fp8.lua).
MX_INLINE void pack_p(u32 (&pa)[BN / 32][4], const float (&s)[1][NT][4]) {
#pragma unroll
  for (int kk = 0; kk < BN / 32; kk++) {
    const int j = 4 * kk;
    pa[kk][0] = pack_e4m3x4(s[0][j][0], s[0][j][1], s[0][j + 1][0], s[0][j + 1][1], 1.f);
    pa[kk][1] = pack_e4m3x4(s[0][j][2], s[0][j][3], s[0][j + 1][2], s[0][j + 1][3], 1.f);
    pa[kk][2] = pack_e4m3x4(s[0][j + 2][0], s[0][j + 2][1], s[0][j + 3][0], s[0][j + 3][1], 1.f);
    pa[kk][3] = pack_e4m3x4(s[0][j + 2][2], s[0][j + 2][3], s[0][j + 3][2], s[0][j + 3][3], 1.f);
#pragma unroll
    for (int i = 0; i < 4; i++) reg_fence(pa[kk][i]);
  }
}

// PV = P V for the V^T tile `desc_v` points at: BN/32 k32 steps, each 32
// bytes (keys) along V^T's rows; one commit group.  PV starts from zero on
// every tile and add_pv folds it into O in fp32: Hopper's FP8 MMAs keep only
// ~14 mantissa bits when they add to their accumulator (DeepSeek-V3 measured
// it for FP8 GEMMs; SageAttention2 accumulates P V the same two-level way),
// so O accumulated in place across a row drifts from the reference: on the
// H200 at 16384 keys, 2.8e-3 rel-L1 in place vs 2.4e-4 this way (f16 output;
// gpu_int8_wgmma test_long_rows).  The mma.sync variant keeps accumulating in
// place: its m16n8k32 FP8 MMA measured 1.9e-4 there, no drift.
//
// With V_TERMS = 2 the tile's V^T holds a second term's DV rows after the
// first's (the first's rounding error, on the same channel scale): its k32
// steps add into the same accumulator, so P V is P (hi + lo) at the cost of
// twice the MMAs and no register.
MX_INLINE void issue_pv(float (&pv)[1][PV_DT][4], const u32 (&pa)[BN / 32][4], u64 desc_v) {
  reg_fence(pv);
  wgmma_fence();
#pragma unroll
  for (int term = 0; term < V_TERMS; term++)
#pragma unroll
    for (int kk = 0; kk < BN / 32; kk++)
      wgmma_pv(pv, pa[kk], desc_v + (term * DV * BN + kk * 32) / 16, term > 0 || kk > 0);
  wgmma_commit();
}

// rowsum_mma: the tile's row sums as the tensor cores see P, E4M3 (the
// values P V weighs V by), times ONES' column of ones: BN/32 m64n8k32 steps
// into their own accumulator, committed with P V's group.  Lane 4g of a quad
// gets rows g and g+8's sums in ls[0][0][0] and [2]; the others get 0, the
// per-lane partial sums the epilogue adds across the quad.  It takes the
// softmax's FADD a score (64 of ~570 instructions a warp and a tile at
// BN=128) off the issue slots, which bound the kernel (bench/NOTES.md), for
// BN/32 MMAs of 8 columns; and O / l then divides by the sum of the weights
// that O used.
MX_INLINE void issue_rowsum(float (&ls)[1][1][4], const u32 (&pa)[BN / 32][4], u64 desc_ones) {
  reg_fence(ls);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BN / 32; kk++) wgmma_rowsum(ls, pa[kk], desc_ones + kk * 32 / 16, kk > 0);
}

// O += PV in fp32 (see issue_pv) for column slice `slice`.
MX_INLINE void add_pv(float (&o)[1][DT][4], const float (&pv)[1][PV_DT][4], int slice) {
#pragma unroll
  for (int dt = 0; dt < PV_DT; dt++)
#pragma unroll
    for (int e = 0; e < 4; e++) o[0][slice * PV_DT + dt][e] += pv[0][dt][e];
}

// O = O * alpha + PV for column slice `slice`: the rescale and the fold in
// one FFMA a value.  The kernel is bound by issue (bench/NOTES.md), and a
// separate rescale costs an FMUL a value on every tile where a row's max
// moved; after the P V wait the fold costs as many instructions either way.
// On the H200 (2026-11-29): 1.6% faster at D=128 N=16384,
// 2.3% at N=4096, but 2% slower at D=64, whose short P V leaves the
// separate rescale under the MMA for free (FOLD_RESCALE).
constexpr bool FOLD_RESCALE = DV > 64;
MX_INLINE void fold_pv(float (&o)[1][DT][4], const float (&pv)[1][PV_DT][4], const float (&alphas)[1][2], int slice) {
#pragma unroll
  for (int dt = 0; dt < PV_DT; dt++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      float &x = o[0][slice * PV_DT + dt][e];
      x = fmaf(x, alphas[0][e / 2], pv[0][dt][e]);
    }
}
]]

-- One key tile for one warpgroup, in two halves: tile_scores (S = Q K^T,
-- the softmax, P packed) and tile_pv (O += P V).  attend_tile runs both, for
-- the overlap=0 kernels; the ring (overlap=3) runs tile_pv(t-1) and the
-- issue of tile_scores(t) in one turn.  The hook after_issue runs once a
-- half's MMAs are issued, before their wait (the ring hands its turn on
-- after S's; a no-op lambda elsewhere).
local ATTEND = [[
// S = Q K^T (dequantized, base 2), mask, online softmax for key tile t, whose
// K8 sits in the ring slot desc_k points at (its barrier bar_k); P packed
// into pa, O's factor into alphas.  ks: this head's K scales.
template <class F>
MX_INLINE void tile_scores(u32 (&pa)[BN / 32][4], float (&alphas)[1][2], float (&row_max)[1][2], float (&row_sum)[1][2],
                           u64 desc_q, u64 desc_k, u32 bar_k, u32 parity, int t, int warp_row0, float qscale,
                           const float *ks, const mx_kernel_args &a, F after_issue) {
  // Issued before the wait so their latency hides behind it.
  float kscale[KS_N];
  load_kscale(kscale, ks, t);

  int acc[1][NT][4];
  mbar_wait(bar_k, parity);
  issue_qk(acc, desc_q, desc_k);
  after_issue();
  wgmma_wait<0>();
  reg_fence(acc);
  float s[1][NT][4];
  // With rowsum_mma the softmax's own sums go to `unused` (and the compiler
  // drops them); row_sum takes the MMA's in tile_pv.
  float unused[1][2] = {{0.f, 0.f}};
  softmax_tile_acc(s, acc, t, warp_row0, a, row_max, ROWSUM_MMA ? unused : row_sum, alphas, qscale, kscale);
  pack_p(pa, s);
}

// O += P V for the tile whose V^T sits where desc_v points (its barrier
// bar_v, phase v_parity), O scaled by alphas first; with rowsum_mma also the
// row sums from P times the ones tile.
template <class F>
MX_INLINE void tile_pv(float (&o)[1][DT][4], float (&row_sum)[1][2], const u32 (&pa)[BN / 32][4],
                       const float (&alphas)[1][2], u64 desc_v, u32 bar_v, u32 v_parity, u64 desc_ones, F after_issue) {
  float ls[1][1][4];
  mbar_wait(bar_v, v_parity);
  float pv[1][PV_DT][4];
#pragma unroll
  for (int slice = 0; slice < PV_SLICES; slice++) {   // V^T rows (channels) PV_N * slice on
    if (ROWSUM_MMA && slice == 0) issue_rowsum(ls, pa, desc_ones);
    issue_pv(pv, pa, desc_v + slice * (PV_N * BN / 16));
    if (slice == 0) after_issue();
    if (!FOLD_RESCALE && slice == 0) rescale_o(o, alphas);   // under the MMA: P V has its own accumulator
    wgmma_wait<0>();
    reg_fence(pv);
    if (FOLD_RESCALE) fold_pv(o, pv, alphas, slice);
    else add_pv(o, pv, slice);
  }
  if (ROWSUM_MMA) {
    reg_fence(ls);
    row_sum[0][0] = fmaf(row_sum[0][0], alphas[0][0], ls[0][0][0]);
    row_sum[0][1] = fmaf(row_sum[0][1], alphas[0][1], ls[0][0][2]);
  }
}

// Both halves of key tile t (the overlap=0 kernels).
MX_INLINE void attend_tile(float (&o)[1][DT][4], float (&row_max)[1][2], float (&row_sum)[1][2], u64 desc_q,
                           u64 desc_k, u64 desc_v, u32 bar_k, u32 bar_v, u32 parity, int t, int warp_row0,
                           float qscale, const float *ks, u64 desc_ones, const mx_kernel_args &a) {
  u32 pa[BN / 32][4];
  float alphas[1][2];
  tile_scores(pa, alphas, row_max, row_sum, desc_q, desc_k, bar_k, parity, t, warp_row0, qscale, ks, a, [] {});
  tile_pv(o, row_sum, pa, alphas, desc_v, bar_v, V_SLOTS == 1 ? t & 1 : parity, desc_ones, [] {});
}
]]

-- What both kernels do first: where things are, which keys this block sees.
local WC = require("blocks.wgmma_common")
local SETUP = U.fill(WC.BLOCK_SETUP, { where = [[
  const int nqp = pad_q(a.seq_q), nkp = pad_k(a.seq_k);
  const i64 qh = (i64)batch * a.heads_q + head, kh = (i64)batch * a.heads_kv + kv_head;
]] }) .. [[
  // V^T of tile `tile` into V slot tile % V_SLOTS: one box (V_TERMS * DV
  // channel rows x BN keys).  The workspace is padded to whole tiles, so
  // every box is in bounds and brings all its bytes.
  auto load_v = [&](int tile) {
    const int s = tile % V_SLOTS;
    mbar_expect_tx(bar_v(s), V_BYTES);
    tma_load_4d(sV + s * V_BYTES, map_v, tile * BN, 0, kv_head, batch, bar_v(s));
  };
  // K8 of tile `tile` into ring slot tile % STAGES, a box per K panel, and
  // its V^T into the same slot when V has one per stage.
  auto load_kv = [&](int tile) {
    const int s = tile % STAGES;
    mbar_expect_tx(bar_k(s), K_BYTES);
#pragma unroll
    for (int p = 0; p < PANELS_QK; p++)
      tma_load_4d(sK + s * K_BYTES + p * BN * WQK, map_k, p * WQK, tile * BN, kv_head, batch, bar_k(s));
    if (V_SLOTS == STAGES) load_v(tile);
  };
  // The copies at the top of iteration t of the one-warpgroup kernel: K (and
  // V) of tile t + STAGES - 1; with one V slot, also V of tile t itself into
  // the slot that the last iteration's block barrier has just freed.  Its
  // copy then runs under S(t) = Q K(t)^T and the softmax.
  auto load_next = [&](int t, int n_tiles) {
    if (t + STAGES - 1 < n_tiles) load_kv(t + STAGES - 1);
    if (V_SLOTS == 1) load_v(t);
  };
  auto load_q = [&]() {
    mbar_expect_tx(bar_q, Q_BYTES);
#pragma unroll
    for (int p = 0; p < PANELS_QK; p++) tma_load_4d(sQ + p * BM * WQK, map_q, p * WQK, m0, head, batch, bar_q);
  };
  // rowsum_mma's B tile (ONES_BYTES in the template says why row 0 only):
  // written here by the generic proxy, read by wgmma through the async one,
  // so each writer fences before RING_INIT's block barrier.
  if (ROWSUM_MMA) {
    const u32 ones = base + SM_ONES;
    for (int i = threadIdx.x; i < ONES_BYTES / 16; i += THREADS)
      asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};" :: "r"(ones + 16 * i), "r"(16 * i < BN ? 0x38383838u : 0u)
                   : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }

]] .. WC.RING_INIT .. [[
  wait_for_previous_kernel();          // the quant kernels' Q8, K8, V^T and scales (a "pdl" launch)
]]

-- The consumer side: one warpgroup's 64 rows over every key tile.
local CONSUME = [[
  const int wg = warp / 4 - (PRODUCER ? 1 : 0);          // consumer warpgroup index
  const int warp_row0 = m0 + wg * 64 + (warp % 4) * 16;  // a 16-row group: one Q scale
  // The thread's Q scale: its rows' pair (per-thread groups, blocks/quant_int8.lua).
  const float qscale = ((const float *)ws_at(a, WS_QSCALE))[qh * qscales_a_head(nqp) + (warp_row0 / 2 + threadIdx.x % 32 / 4)];
  const float *ks = (const float *)ws_at(a, WS_KSCALE) + kh * kscales_a_head(nkp);
]] .. WC.CONSUMER_STATE .. [[
  // Descriptors of this warpgroup's 64 Q rows and of ring slot 0's K8 and
  // V^T; a k-step or a slot only adds to the start address (the low 14 bits).
  const u64 desc_q = smem_desc(sQ + wg * 64 * WQK, 8 * WQK, SWZ_QK);
  const u64 desc_k = smem_desc(sK, 8 * WQK, SWZ_QK);
  const u64 desc_v = smem_desc(sV, 8 * BN, SWZ_V);
  const u64 desc_ones = smem_desc(base + SM_ONES, 8 * BN, SWZ_V);   // rowsum_mma's B
  mbar_wait(bar_q, 0);
]]

local EPILOGUE = [[
  pv_finish(o, (const float *)ws_at(a, WS_VSCALE) + kh * D32, 1.f);   // P's 448 cancels in O / l
  // Smooth-K: softmax cancels the per-row term q.mean, so O ignores it; the
  // LSE does not, so it goes back into the row max (which only the LSE reads).
  if (WRITE_LSE && SMOOTH_K) {
    float corr[2];
    const float *ws_corr = (const float *)ws_at(a, WS_CORR) + qh * nqp;
#pragma unroll
    for (int h = 0; h < 2; h++) corr[h] = ws_corr[warp_row0 + threadIdx.x % 32 / 4 + 8 * h];
#pragma unroll
    for (int h = 0; h < 2; h++) row_max[0][h] += corr[h];
  }
  // The row sum carries P's factor 448 (softmax_acc); the LSE must not.
  if (WRITE_LSE) row_max[0][0] -= LOG2_448, row_max[0][1] -= LOG2_448;
]] .. WC.WRITE_OUTPUT

local GRID_NOTE = "// Grid (nqp / BM, heads_q, batch).  Causal grids run the heaviest query blocks first.\n"

-- Step 4 (overlap=3): three consumer warpgroups of one block (block_m=192,
-- warps=12, no producer) take turns on the tensor pipe, a token passed
-- around named barriers RING_BAR + w (256 threads: the warpgroup's own 128
-- bar.sync, the previous one's 128 bar.arrive).  A warpgroup's turn for tile
-- t issues P(t-1) V(t-1), waits for it and folds it into O, then issues S(t)
-- and passes the token on; S(t)'s wait and the softmax run outside the turn,
-- under the other two warpgroups' turns (each a P V and an S: 512 tensor
-- clocks at BN=128, D=128).  The block's turns run A(t), B(t), C(t), A(t+1):
-- warpgroup 2 kicks off (an arrive on warpgroup 0's barrier) and skips the
-- block's last pass, so each barrier sees as many arrives as syncs; each
-- warpgroup's last turn is its last P V.  The ring's slots are freed through
-- the empty mbarriers (a block barrier would put the warpgroups back in
-- step); warpgroup 2, whose turn has each tile's last P V, refills them as
-- it passes the token.  Three free blocks an SM measured ~1040 clocks a
-- tile, the tensor pipe's and MUFU's sum (bench/NOTES.md, "The next lever").
-- The first form of the ring, a turn for each S and each P V (A.S(t),
-- B.PV(t-1), C.S(t), A.PV(t), ...), gave each softmax two half turns (512
-- clocks) where it takes ~1000, and measured 7-8% slower than this one at
-- D=128 and 10% at D=64 (H200, 2026-11-30); this one measured
-- 1-3% faster than the shared ring at D=128 N=16384 and 2% slower at
-- N=4096 (the same runs; WG.default).
local RING = [[
constexpr int RING_BAR = 1;   // named barriers RING_BAR + consumer warpgroup (0 is __syncthreads')
MX_INLINE void ring_wait(int wg) { asm volatile("bar.sync %0, 256;" :: "r"(RING_BAR + wg) : "memory"); }
MX_INLINE void ring_pass(int wg) {
  asm volatile("bar.arrive %0, 256;" :: "r"(RING_BAR + (wg + 1) % CONSUMERS) : "memory");
}
]]
local KERNEL_RING = GRID_NOTE .. RING .. [[
extern "C" __global__ void __launch_bounds__(THREADS, 1) ${NAME}(const __grid_constant__ mx_kernel_args a) {
${SETUP}
  if (warp == 0 && elect_one()) {
    load_q();
    for (int s = 0; s < STAGES && s < n_tiles; s++) load_kv(s);
  }
${CONSUME}
  const bool refills = warp == 8 && elect_one();   // warpgroup 2's: its turn holds each tile's last P V
  int t = 0;                                         // the loop's, read by pass (the refill after S(t)'s issue)
  const auto pass = [&] {
    ring_pass(wg);
    if (refills && t > 0 && t - 1 + STAGES < n_tiles) {
      mbar_wait(bar_empty((t - 1) % STAGES), ((t - 1) / STAGES) & 1);
      load_kv(t - 1 + STAGES);
    }
  };
  if (wg == 2) ring_pass(wg);                        // the kick-off: warpgroup 0 takes the first turn
  u32 pa[BN / 32][4];
  float alphas[1][2];
  for (; t <= n_tiles; t++) {
    ring_wait(wg);
    if (t > 0) {
      const int ps = (t - 1) % STAGES;
      tile_pv(o, row_sum, pa, alphas, desc_v + ps * (V_BYTES / 16), bar_v(ps), ((t - 1) / STAGES) & 1, desc_ones, [] {});
      mbar_arrive(bar_empty(ps));                    // this thread is done with the slot's K and V
    }
    if (t == n_tiles) {
      if (wg != 2) ring_pass(wg);                    // warpgroup 2's would be one pass too many
      break;
    }
    const int slot = t % STAGES;
    tile_scores(pa, alphas, row_max, row_sum, desc_q, desc_k + slot * (K_BYTES / 16), bar_k(slot), (t / STAGES) & 1, t,
                warp_row0, qscale, ks, a, pass);
  }
${EPILOGUE}
}
]]

-- Step 2b (int8-fp8, block_m=128|192|256 without a producer): the consumer
-- warpgroups share each K/V tile (a third of the L2-to-SM traffic of three
-- one-warpgroup blocks at block_m=192, a quarter at 256) without meeting at
-- a block barrier.
-- Each warp, once its wait for the tile's P V has returned (attend_tile's
-- last MMA wait: the slot's reads are complete), adds one to the slot's
-- release counter with acq_rel order, and the warp that brings the count to
-- a use's last arrival refills the slot with tile t + STAGES: nobody waits
-- for the slowest warpgroup but the tile STAGES ahead, so the warpgroups
-- drift apart by up to STAGES - 1 tiles and their softmaxes need not meet.
-- (The one-warpgroup kernel's block barrier is a warpgroup's own; f16's
-- multi-consumer kernels keep theirs.)  Warpgroups whose 64 rows all lie
-- past the queries leave at once and count out of the releases.
local KERNEL_SHARED = GRID_NOTE .. [[
// A warp is done with a ring slot's tile: one more on the slot's count
// (acq_rel: this warp's reads of the slot, complete at its MMA wait, happen
// before the refill that the last arrival issues).  The count before it.
MX_INLINE u32 release_slot(u32 counter) {
  u32 old;
  asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;" : "=r"(old) : "r"(counter) : "memory");
  return old;
}
extern "C" __global__ void __launch_bounds__(THREADS, 1) ${NAME}(const __grid_constant__ mx_kernel_args a) {
${SETUP}
  const u32 released = base + SM_RELEASED;     // a u32 a slot: warps done with the slot's current tile
  if (threadIdx.x < STAGES) asm volatile("st.shared.u32 [%0], 0;" :: "r"(released + 4 * threadIdx.x) : "memory");
  __syncthreads();
  const int live = min(CONSUMERS, (a.seq_q - m0 + 63) / 64);   // >= 1: m0 < seq_q
${FIRST_LOADS}
  if (warp / 4 >= live) return;                // rows past the queries (never warpgroup 0, whose warp 0 loads)
${CONSUME}${LOOP_STATE}
  for (int t = 0; t < n_tiles; t++) {
    const int slot = t % STAGES;
    attend_tile(o, row_max, row_sum, desc_q, desc_k + slot * (K_BYTES / 16), desc_v + slot * (V_BYTES / 16),
                bar_k(slot), bar_v(slot), (t / STAGES) & 1, t, warp_row0, qscale, ks, desc_ones, a);
${RELEASE}
  }
${EPILOGUE}
}
]]

-- KERNEL_SHARED's hooks.
local SHARED_HOOKS = {
  FIRST_LOADS = [[
  if (warp == 0 && elect_one()) {
    load_q();
    for (int s = 0; s < STAGES && s < n_tiles; s++) load_kv(s);
  }]],
  -- last_count: the count before the last arrival of the current use of
  -- tile t's slot, one more use every STAGES tiles.  A remainder by the
  -- run-time live (count % (4 * live)) cost ~20 instructions a warp and a
  -- tile; last_release(t, live) spends a multiply instead, which ptxas
  -- scheduled 3.4% slower at D=128 N=16384, the running count 0.5% (and
  -- 2.2% faster at N=4096; H200, 2026-11-30).
  LOOP_STATE = "\n  u32 last_count = 4 * live - 1;",
  RELEASE = [[
    if (t + STAGES < n_tiles && elect_one() && release_slot(released + 4 * slot) == last_count)
      load_kv(t + STAGES);
    if (slot == STAGES - 1) last_count += 4 * live;]],
}
function WG.kernel_name(t, canonical) return MMA.kernel_name(t, canonical) end

function WG.render(t, canonical)
  local why = WG.check(t)
  if why then error("invalid configuration: " .. why, 0) end
  local l, w = layout(t), panel_qk(t)
  local ws_producer = has_producer(t)
  local regs_p, regs_c = WC.register_split(consumers(t), ws_producer)
  local name = WG.kernel_name(t, canonical)
  local ws = {}
  for i, n in ipairs(WS_NAMES) do ws[#ws + 1] = string.format("%s = %d", n, i - 1) end
  local constants = U.fill([[
constexpr int D = ${D}, D32 = ${D32}, DV = ${DV}, D_PAD = DV;
constexpr int BM = ${BM}, BN = ${BN}, WARPS = ${WARPS}, THREADS = WARPS * 32, STAGES = ${STAGES};
constexpr int CONSUMERS = BM / 64;      // warpgroups that compute, 64 query rows each
constexpr bool PRODUCER = ${PRODUCER};  // warpgroup 0 only issues TMA copies
constexpr int REGS_PRODUCER = ${REGS_P}, REGS_CONSUMER = ${REGS_C};   // setmaxnreg targets (0: none)
constexpr int WQK = ${WQK}, PANELS_QK = D32 / WQK;   // Q8/K8 swizzle panels of WQK bytes (int8 channels)
constexpr u64 SWZ_QK = ${SWZ_QK}, SWZ_V = ${SWZ_V};  // descriptor swizzle fields: Q8/K8, V^T (one BN-byte panel)
constexpr int Q_BYTES = ${Q_BYTES}, K_BYTES = ${K_BYTES}, V_BYTES = ${V_BYTES};
constexpr int SM_Q = ${SM_Q}, SM_K = ${SM_K}, SM_V = ${SM_V}, SM_ONES = ${SM_ONES}, SM_BAR = ${SM_BAR}, SM_RELEASED = ${SM_RELEASED};
constexpr bool ROWSUM_MMA = ${ROWSUM_MMA};  // the row sums by MMA (issue_rowsum)
constexpr int ONES_BYTES = ${ONES_BYTES};   // its B tile at SM_ONES
constexpr int MT = 1;                   // one 64-row warpgroup tile: 16 rows per warp
constexpr int KQ = D32 / 32;            // k32 steps of S = Q K^T
constexpr int NT = BN / 8;              // 8-key chunks of S
constexpr int DT = DV / 8;              // 8-column chunks of O
constexpr int PV_SLICES = ${PV_SLICES}, PV_N = DV / PV_SLICES, PV_DT = PV_N / 8;   // a tile's P V: column slices
constexpr int RSV = BN + 16;            // (blocks/pv_fp8.lua's mma.sync tile; unused here)
constexpr bool CAUSAL = ${CAUSAL}, WRITE_LSE = ${LSE}, SMOOTH_K = ${SMOOTH_K}, FP8_V = true;
constexpr int V_TERMS = ${V_TERMS};     // E4M3 terms of V (issue_pv)
// INT8 scales in SageAttention2's per-thread groups (blocks/quant_int8.lua;
// PER_THREAD is the quant kernels'): a thread meets KS_N = 1 K scale a key
// tile, over all NT_G = NT of its 8-key chunks.
constexpr bool PER_THREAD = true;
constexpr int KS_N = 1, NT_G = NT;
constexpr int V_SLOTS = ${V_SLOTS};     // V^T ring slots: STAGES, or 1 (v_slots says when)
enum { ${WS} };                         // workspace sections
]], { D = t.head_dim, D32 = d32(t), DV = dv(t), BM = t.block_m, BN = t.block_n, WARPS = t.warps, STAGES = t.stages,
      PRODUCER = ws_producer, REGS_P = regs_p, REGS_C = regs_c, WQK = w, SWZ_QK = SWIZZLE_MODE[w],
      SWZ_V = SWIZZLE_MODE[t.block_n] or 3, Q_BYTES = l.q_bytes, K_BYTES = l.k_bytes, V_BYTES = l.v_bytes,
      SM_Q = l.q, SM_K = l.k, SM_V = l.v, SM_ONES = l.ones, SM_BAR = l.bar, SM_RELEASED = l.released, ROWSUM_MMA = t.rowsum_mma == 1, ONES_BYTES = ONES_BYTES, CAUSAL = t.causal == 1, LSE = t.lse == 1,
      SMOOTH_K = t.smooth_k == 1, V_TERMS = t.v_terms, V_SLOTS = v_slots(t), PV_SLICES = pv_slices(t),
      WS = table.concat(ws, ", ") })
  local hooks = { NAME = name, SETUP = SETUP, CONSUME = CONSUME, EPILOGUE = EPILOGUE, preamble = GRID_NOTE,
                  k_step = "K_BYTES / 16", v_step = "V_BYTES / 16", args = "qscale, ks, desc_ones, ",
                  min_blocks = min_blocks(t), v_slot = "(slot % V_SLOTS)",
                  load_next = "if (warp == 0 && elect_one()) load_next(t, n_tiles);" }
  for k, v in pairs(SHARED_HOOKS) do hooks[k] = v end
  local kernel = WC.fill(t.overlap == 3 and KERNEL_RING or ws_producer and WC.KERNEL_WS
                        or shares_ring(t) and KERNEL_SHARED or WC.KERNEL, hooks)
  return table.concat({
    "// mxattn generated kernels. Do not edit: re-render with `mxattn gen`.\n// params: " .. canonical .. "\n",
    require("blocks.prelude")(t),
    constants,
    require("blocks.mma_sync")({ dtype = "f16" }),   -- ldmatrix, for pv_fp8's (unused) mma.sync tile
    require("blocks.quant_int8")(t),
    require("blocks.quant_fp8v")(t),
    require("blocks.pv_fp8")(t),                       -- pack_e4m3x4 and pv_finish
    require("blocks.quant_kernels")({ name = name, head_dim = t.head_dim, per_thread = true }),
    require("blocks.tma_mbarrier")(t),
    require("blocks.wgmma_int8")({ bn = t.block_n, dv = dv(t) // pv_slices(t) }),
    require("blocks.softmax")(t, { split = true }),   -- rescale_o
    require("blocks.epilogue")(t),
    PIECES,
    ATTEND,
    kernel,
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
