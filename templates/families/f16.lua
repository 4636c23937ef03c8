-- Family f16: exact attention on the bf16/fp16 tensor cores, FlashAttention-2
-- style (online softmax, fp32 accumulation).  Each warp owns 16*MT query rows
-- and sweeps all keys; K and V tiles stream through a cp.async ring of
-- `stages` buffers.  The kernel is cuda/fwd_mma.cuh; the MMA, the loads, the
-- softmax and the epilogue are CUDA blocks (cuda/*.cuh, each with a blocks/
-- module that names the constants it reads), shared with the other families.
local U = require("util")
local S = require("space")
local F = {}

-- The Hopper variant lives in its own file; loaded here so the template hash covers it.
local WG = require("families.f16_wgmma")
-- The decode schedule (few query rows, split keys): its own file too.
local DEC = require("families.decode")

local function d_pad(t) return U.round_up(t.head_dim, 16) end
local function row_stride(t) return d_pad(t) + 8 end  -- 16-byte pad: ldmatrix rows hit distinct banks

-- The schedules and their rules (rules.lua): the mma.sync forward here, the
-- wgmma ones and the decode one in their files.
F.schedules = {
  mma = { S.POW2_TILES, S.ROWS_PER_WARP },
  wgmma = WG.rules,
  decode = DEC.rules,
}

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
  -- Head dims under 64 too: B4 H32 N 4096 / 16384, causal or not, the wgmma
  -- default ran 1.14-1.33x cuDNN at D=32 and 1.03-1.23x at D=48, where the
  -- mma.sync tile ran 0.95-1.02x and 0.69-0.76x (H200, 2026-12-02;
  -- tests/gpu_wgmma.c checks D 8-56).
  local hopper_fast = t.arch == "sm_90a" and t.align == 8 and t.variant == nil and open
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

-- Whether a legal setting is worth timing for the problem's sizes pr (the
-- decode schedule's own test; every other schedule always is).
function F.candidate(t, pr)
  if t.variant == "decode" then return DEC.candidate(t, pr) end
  return true
end

-- Cheap analytic prior for ranking candidates before timing: blocks that fit
-- on an SM times the reuse a tile buys.  Only the order matters.
function F.prior(t, pr)
  if t.variant == "decode" then return DEC.prior(t, pr) end
  if t.variant == "wgmma" then return WG.prior(t) * U.size_fit(t, pr) end
  return U.occupancy_prior(t, F.smem_bytes(t), F.register_estimate(t))
end

-- The mma.sync kernel is cuda/fwd_mma.cuh over the blocks it calls; render
-- writes the constants they read in a header before them.
local BLOCKS = { require("blocks.prelude"), require("blocks.load"), require("blocks.mma_sync"),
                 require("blocks.softmax"), require("blocks.epilogue") }
local KERNEL = U.cuda("cuda/fwd_mma.cuh")

function F.kernel_name(t, canonical)
  return string.format("mxattn_f16_d%d_%s", t.head_dim, U.short_hash(canonical))
end

local function render_mma(t, canonical)
  local header = { U.banner(canonical),
                   U.fill([[
#define KERNEL_NAME ${NAME}
constexpr int D = ${D}, D_PAD = ${D_PAD}, RS = ${RS};
constexpr int BM = ${BM}, BN = ${BN}, WARPS = ${WARPS}, THREADS = WARPS * 32, STAGES = ${STAGES};
constexpr int MT = BM / (16 * WARPS);   // 16-row MMA tiles per warp
constexpr int KD = D_PAD / 16;          // k-steps of S = Q K^T
constexpr int NT = BN / 8;              // 8-key score tiles
constexpr int DT = D_PAD / 8;           // 8-column output tiles
constexpr bool CAUSAL = ${CAUSAL}, WRITE_LSE = ${LSE}, Q_REGS = ${Q_REGS};
]], { NAME = F.kernel_name(t, canonical), D = t.head_dim, D_PAD = d_pad(t), RS = row_stride(t), BM = t.block_m,
      BN = t.block_n, WARPS = t.warps, STAGES = t.stages, CAUSAL = t.causal == 1, LSE = t.lse == 1,
      Q_REGS = t.q_regs == 1 }) }
  for _, b in ipairs(BLOCKS) do header[#header + 1] = b.constants and b.constants(t) or "" end
  local parts = { table.concat(header) }
  for _, b in ipairs(BLOCKS) do parts[#parts + 1] = b.text end
  parts[#parts + 1] = KERNEL
  return table.concat(parts, "\n")
end

function F.render(t, canonical)
  if t.variant == "decode" then return DEC.render(t, canonical) end
  if t.variant == "wgmma" then return WG.render(t, canonical) end
  return render_mma(t, canonical)
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
