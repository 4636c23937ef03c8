-- Family int8-fp8: S = Q K^T on the INT8 tensor cores (per-16-row/-key scales,
-- smooth-K), P.V on the FP8 tensor cores: P*448 and V (per-channel scale) in
-- E4M3, f32 accumulation.  SageAttention2's kernel on mma.sync, sm_89+.  The
-- kernels and the workspace are described in blocks/attn_int8.lua.
--
-- variant=wgmma (sm_90a) is families/int8_fp8_wgmma.lua: the same
-- quantization kernels and workspace, attention on warpgroup MMAs fed by TMA.
-- Checked on the H200 (gpu_int8_wgmma), it is the default there.
local F = require("blocks.attn_int8")("int8-fp8", "fp8")

-- Loaded here so the template hash covers it.
local WG = require("families.int8_fp8_wgmma")
local U = require("util")

local mma = { smem_bytes = F.smem_bytes, register_estimate = F.register_estimate, default = F.default,
              prior = F.prior, render = F.render, launches = F.launches }

-- The mma.sync schedule reads none of the wgmma kernel's knobs.
local mma_rules = {
  { need = { v_terms = 1 }, why = "only variant=wgmma reads V's second E4M3 term" },
  { need = { rowsum_mma = 0, blocks_per_sm = 0 }, why = "knobs of variant=wgmma" },
}
for _, r in ipairs(F.schedules.mma) do mma_rules[#mma_rules + 1] = r end
F.schedules = { mma = mma_rules, wgmma = WG.rules }

function F.smem_bytes(t)
  if t.variant == "wgmma" then return WG.smem_bytes(t) end
  return mma.smem_bytes(t)
end

function F.register_estimate(t)
  if t.variant == "wgmma" then return WG.register_estimate(t) end
  return mma.register_estimate(t)
end

-- On sm_90a a table that leaves every knob open gets the wgmma default (knobs
-- given without a variant describe an mma.sync tile); elsewhere mma.
function F.default(t, pr)
  local open = t.block_m == nil and t.block_n == nil and t.warps == nil and t.stages == nil
  local hopper_fast = t.arch == "sm_90a" and t.variant == nil and open
  if t.variant == "wgmma" or hopper_fast then return WG.default(t, pr) end
  return mma.default(t)
end

function F.prior(t, pr)
  if t.variant == "wgmma" then return WG.prior(t) * U.size_fit(t, pr) end
  return mma.prior(t)
end

function F.render(t, canonical)
  if t.variant == "wgmma" then return WG.render(t, canonical) end
  return mma.render(t, canonical)
end

function F.launches(t, pr, canonical)
  if t.variant == "wgmma" then return WG.launches(t, pr, canonical) end
  return mma.launches(t, pr, canonical)
end

return F
