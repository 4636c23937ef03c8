-- Family f16: exact attention on the bf16/fp16 tensor cores, FlashAttention-2
-- style (online softmax, fp32 accumulation).  Each warp owns 16*MT query rows
-- and sweeps all keys; K and V tiles stream through a cp.async ring of
-- `stages` buffers.  The MMA, the loads, the softmax and the epilogue are
-- blocks/ files, so a Hopper variant can swap the MMA and the pipeline.
local U = require("util")
local S = require("space")
local F = {}

-- The Hopper variant lives in its own file; loaded here so the template hash covers it.
local WG = require("families.f16_wgmma")
-- The decode schedule (few query rows, split keys): its own file too.
local DEC = require("families.f16_decode")

local function d_pad(t) return U.round_up(t.head_dim, 16) end
local function row_stride(t) return d_pad(t) + 8 end  -- 16-byte pad: ldmatrix rows hit distinct banks

function F.check(t)
  if t.variant == "decode" then return DEC.check(t) end
  if t.kv_splits ~= 1 then
    return string.format("kv_splits=%d: only variant=decode cuts the keys into pieces (variant=%s)", t.kv_splits,
                         tostring(t.variant))
  end
  if t.variant == "wgmma" then return WG.check(t) end
  return S.check_rows_per_warp(t)
end

function F.smem_bytes(t)
  if t.variant == "decode" then return DEC.smem_bytes(t) end
  if t.variant == "wgmma" then return WG.smem_bytes(t) end
  return (t.block_m + 2 * t.stages * t.block_n) * row_stride(t) * 2
end

function F.register_estimate(t)
  if t.variant == "decode" then return DEC.register_estimate(t) end
  if t.variant == "wgmma" then return WG.register_estimate(t) end
  local mt = t.block_m // (16 * t.warps)
  local dp = d_pad(t)
  -- Q fragments (when kept) + O accumulators + S/P tile, plus addressing and softmax state.
  local q = t.q_regs == 1 and dp // 4 or 4
  return mt * (q + dp // 2 + t.block_n // 2) + 32
end

-- The heuristic default: a good first guess before any tuning.  mma.sync
-- tiles: D<=64 the winner of `mxattn tune` on an H200 at N=4096 (32-row warp
-- tiles); 64<D<=128 FlashAttention-2's own tile, 128x64 with 4 warps and Q
-- reloaded from shared memory, which beat the tuner's earlier 256x32x8 pick
-- in one bench run (H200, 2026-11-29; bench/NOTES.md: D=128 0.87-0.95x SDPA
-- flash vs 0.69-0.85x; D=80 1.09-1.14x vs 0.76-0.89x).
function F.default(t, pr)
  -- On Hopper the warpgroup MMA is the fast path wherever TMA can move the rows.
  -- Knobs given without a variant describe an mma.sync tile, so only a table
  -- that leaves every knob open gets the wgmma default.
  local open = t.block_m == nil and t.block_n == nil and t.warps == nil and t.stages == nil and t.q_regs == nil
  -- (Head dims under 64 compile for wgmma but have not been checked on a GPU.)
  local hopper_fast = t.arch == "sm_90a" and t.align == 8 and t.variant == nil and open
                      and d_pad(t) >= 64
  -- A few query rows against the keys (decoding): the split-key schedule,
  -- whose blocks fill the GPU where the prefill tiles launch one block per
  -- head and row block (B8 Hq32 Hkv8 Nq=1 Nk=32768 D=128: K/V read at
  -- 1.37 TB/s by the wgmma kernel, cuDNN 4.09).  H200, B16 Hq32 D128, K/V
  -- TB/s: Nq=1 3.73-4.33 (0.94-0.97x cuDNN); Nq=4 and 16, bottom-right,
  -- 3.32-4.30 (1.37-5.0x cuDNN, which takes the mask as a tensor).
  local decoding = t.align == 8 and t.variant == nil and open and t.kv_splits == nil and pr ~= nil
                   and pr.seq_q ~= nil and pr.seq_q <= DEC.MAX_SEQ_Q and d_pad(t) <= 128
  if t.variant == "decode" or decoding then return DEC.default(t, pr) end
  if t.variant == "wgmma" or hopper_fast then return WG.default(t, pr) end
  local dp = d_pad(t)
  if dp <= 64 then return { variant = "mma", q_regs = 1, block_m = 128, block_n = 64, warps = 4, stages = 2 } end
  if dp <= 128 then return { variant = "mma", q_regs = 0, block_m = 128, block_n = 64, warps = 4, stages = 2 } end
  return { variant = "mma", q_regs = 1, block_m = 64, block_n = 32, warps = 4, stages = 2 }
end

-- Cheap analytic prior for ranking candidates before timing: blocks that fit
-- on an SM times the reuse a tile buys.  Only the order matters.
function F.prior(t, pr)
  if t.variant == "decode" then return DEC.prior(t, pr) end
  if t.variant == "wgmma" then return WG.prior(t) end
  return U.occupancy_prior(t, F.smem_bytes(t), F.register_estimate(t))
end

local RING = require("blocks.cp_async_ring")

local KERNEL = [[
// Q, K, V: [seq, D] slices of one (batch, head); O likewise.  Grid: (query
// blocks, heads_q, batch).  Causal grids run the heaviest query blocks first.
extern "C" __global__ void __launch_bounds__(THREADS) ${NAME}(const mx_kernel_args a) {
  extern __shared__ __align__(16) u16 smem[];
  // Shared tiles by 32-bit shared address: fragment addresses are a per-lane
  // base plus compile-time offsets, not 64-bit generic pointers.
  const u32 sQ = smem_addr(smem), sK = sQ + BM * RS * 2, sV = sK + STAGES * BN * RS * 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m_block = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z, kv_head = head / a.gqa;
  const int m0 = m_block * BM, warp_row0 = m0 + warp * MT * 16;
  const u16 *q = (const u16 *)a.q + batch * a.q_sb + head * a.q_sh;
  const u16 *k = (const u16 *)a.k + batch * a.k_sb + kv_head * a.k_sh;
  const u16 *v = (const u16 *)a.v + batch * a.v_sb + kv_head * a.v_sh;

  const int n_tiles = key_tiles(m0, a);   // all keys, or (causal) up to the last row's diagonal

  // Q: global -> shared (-> registers), once.  Its copy is in flight together
  // with the ring's first K/V tiles: a block waits for one memory latency
  // before its first tile, not two (with 16 key tiles a block, N=1024, that
  // start is a visible share of the block's time).
  load_tile<BM>(sQ, q, a.q_ss, m0, a.seq_q);
  cp_async_commit();
  // Each lane's ldmatrix row within a fragment (byte offsets; the x4 forms'
  // four 8x8 matrices are lanes 0-7, 8-15, 16-23, 24-31).
  const u32 q_lane = sQ + ((warp * MT * 16 + lane % 16) * RS + (lane / 16) * 8) * 2;
  const u32 k_lane = ((lane % 8 + (lane / 16) * 8) * RS + (lane / 8) % 2 * 8) * 2;
  const u32 v_lane = ((lane % 8 + (lane / 8) % 2 * 8) * RS + (lane / 16) * 8) * 2;
  // Q's A fragments: kept in registers (Q_REGS), or reloaded from shared
  // memory at each k-step, which frees MT*KD*4 registers for a taller warp tile.
  auto q_fragment = [&](u32 (&f)[4], int mt, int kd) { ldsm_x4(f, q_lane + (mt * 16 * RS + kd * 16) * 2); };
  auto load_kv = [&](int tile) {
    const int buf = tile % STAGES;
    load_tile<BN>(sK + buf * BN * RS * 2, k, a.k_ss, tile * BN, a.seq_k);
    load_tile<BN>(sV + buf * BN * RS * 2, v, a.v_ss, tile * BN, a.seq_k);
  };
]] .. RING.prologue .. [[
  cp_async_wait<STAGES - 1>();         // Q has landed (the prologue's K/V tiles may not have)
  __syncthreads();
  u32 qf[MT][KD][4];
  if (Q_REGS)
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int kd = 0; kd < KD; kd++) q_fragment(qf[mt][kd], mt, kd);

  float o[MT][DT][4], row_max[MT][2], row_sum[MT][2];
  init_accumulators(o, row_max, row_sum);
]] .. RING.loop .. [[
    const u32 kt = sK + k_lane + t % STAGES * BN * RS * 2, vt = sV + v_lane + t % STAGES * BN * RS * 2;

    // S = Q K^T
    float s[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int nt = 0; nt < NT; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
#pragma unroll
    for (int kd = 0; kd < KD; kd++) {
      u32 qk[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        if (Q_REGS) { qk[mt][0] = qf[mt][kd][0]; qk[mt][1] = qf[mt][kd][1]; qk[mt][2] = qf[mt][kd][2]; qk[mt][3] = qf[mt][kd][3]; }
        else q_fragment(qk[mt], mt, kd);
      }
#pragma unroll
      for (int nn = 0; nn < BN / 16; nn++) {
        u32 b[4];
        ldsm_x4(b, kt + (nn * 16 * RS + kd * 16) * 2);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma_16816(s[mt][2 * nn], qk[mt], b[0], b[1]);
          mma_16816(s[mt][2 * nn + 1], qk[mt], b[2], b[3]);
        }
      }
    }

    // Mask the tile's tail and, under causal, keys past the diagonal.
    mask_tile(s, t, warp_row0, a);

    // P in the A operand's layout, packed before O's rescale so the tile's
    // fp32 scores are dead by the time O is touched (at D=128, 128x64 with
    // 4 warps, O is 128 registers a thread and S 64).
    float alpha[MT][2];
    softmax_tile(s, row_max, row_sum, alpha, a.scale_log2);
    u32 p[MT][BN / 16][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int kk = 0; kk < BN / 16; kk++) {
        p[mt][kk][0] = pack_in(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        p[mt][kk][1] = pack_in(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        p[mt][kk][2] = pack_in(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        p[mt][kk][3] = pack_in(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
    rescale_o(o, alpha);

    // O += P V
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
      for (int dd = 0; dd < D_PAD / 16; dd++) {
        u32 b[4];
        ldsm_x4_trans(b, vt + (kk * 16 * RS + dd * 16) * 2);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
          mma_16816(o[mt][2 * dd], p[mt][kk], b[0], b[1]);
          mma_16816(o[mt][2 * dd + 1], p[mt][kk], b[2], b[3]);
        }
      }
    __syncthreads();                   // the buffer is refilled next iteration
  }

  u16 *o_head = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
  float *lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
  ${WRITE}
}
]]
-- 16-byte rows (align=8): O through this warp's Q rows in shared memory.
local WRITE = {
  staged = "write_output_staged(o, row_max, row_sum, sQ + warp * MT * 16 * RS * 2, o_head, a.o_ss, lse_head, warp_row0,\n" ..
           "                      a.seq_q);",
  direct = "write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);",
}

function F.kernel_name(t, canonical)
  return string.format("mxattn_f16_d%d_%s", t.head_dim, U.short_hash(canonical))
end

function F.render(t, canonical)
  if t.variant == "decode" then return DEC.render(t, canonical) end
  if t.variant == "wgmma" then return WG.render(t, canonical) end
  local constants = U.fill([[
constexpr int D = ${D}, D_PAD = ${D_PAD}, RS = ${RS};
constexpr int BM = ${BM}, BN = ${BN}, WARPS = ${WARPS}, THREADS = WARPS * 32, STAGES = ${STAGES};
constexpr int MT = BM / (16 * WARPS);   // 16-row MMA tiles per warp
constexpr int KD = D_PAD / 16;          // k-steps of S = Q K^T
constexpr int NT = BN / 8;              // 8-key score tiles
constexpr int DT = D_PAD / 8;           // 8-column output tiles
constexpr bool CAUSAL = ${CAUSAL}, WRITE_LSE = ${LSE}, Q_REGS = ${Q_REGS};
]], { Q_REGS = t.q_regs == 1, D = t.head_dim, D_PAD = d_pad(t), RS = row_stride(t), BM = t.block_m, BN = t.block_n,
      WARPS = t.warps, STAGES = t.stages, CAUSAL = t.causal == 1, LSE = t.lse == 1 })
  return table.concat({
    "// mxattn generated kernel. Do not edit: re-render with `mxattn gen`.\n// params: " .. canonical .. "\n",
    require("blocks.prelude")(t),
    constants,
    require("blocks.load")(t),
    require("blocks.mma_sync")(t),
    require("blocks.softmax")(t, { split = true }),
    require("blocks.epilogue")(setmetatable({ staged = t.align == 8 }, { __index = t })),
    U.fill(KERNEL, { NAME = F.kernel_name(t, canonical), WRITE = t.align == 8 and WRITE.staged or WRITE.direct }),
  }, "\n")
end

-- Launch geometry for a problem (numbers in `pr`).
function F.launches(t, pr, canonical)
  if t.variant == "decode" then return DEC.launches(t, pr, canonical) end
  if t.variant == "wgmma" then return WG.launches(t, pr, canonical) end
  return {
    workspace = 0,
    kernels = { { name = F.kernel_name(t, canonical), grid = { U.ceil_div(pr.seq_q, t.block_m), pr.heads_q, pr.batch },
                  block = 32 * t.warps, smem = F.smem_bytes(t) } },
  }
end

return F
