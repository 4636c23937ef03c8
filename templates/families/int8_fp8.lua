-- Family int8-fp8: S = Q K^T on the INT8 tensor cores (per-16-row/-key scales,
-- smooth-K), P.V on the FP8 tensor cores: P*448 and V (per-channel scale) in
-- E4M3, f32 accumulation.  SageAttention2's kernel on mma.sync, sm_89+.  The
-- kernels and the workspace are described in blocks/attn_int8.lua.
--
-- variant=wgmma (sm_90a) is families/int8_fp8_wgmma.lua: the same
-- quantization kernels and workspace, attention on warpgroup MMAs fed by TMA.
-- Checked on the H200 (gpu_int8_wgmma), it is the default there.
--
-- variant=decode is families/decode.lua with every tile quantized in shared
-- memory as it lands (cuda/decode_quant.cuh): no pass over the KV cache, one
-- launch (two with pieces).  The default up to 16 query rows.
local F = require("blocks.attn_int8")("int8-fp8", "fp8")

-- Loaded here so the template hash covers them.
local WG = require("families.int8_fp8_wgmma")
local DEC = require("families.decode")
local U = require("util")

local mma = { smem_bytes = F.smem_bytes, register_estimate = F.register_estimate, default = F.default,
              prior = F.prior, render = F.render, launches = F.launches }

-- The mma.sync schedule reads none of the wgmma kernel's knobs.
local mma_rules = {
  { need = { v_terms = 1 }, why = "only variant=wgmma reads V's second E4M3 term" },
  { need = { rowsum_mma = 0, blocks_per_sm = 0 }, why = "knobs of variant=wgmma" },
}
for _, r in ipairs(F.schedules.mma) do mma_rules[#mma_rules + 1] = r end
local decode_rules = {
  { need = { arch = { "sm_89", "sm_90a", "sm_100a", "sm_120a" } }, why = "E4M3 conversions (cvt ... e4m3x2)" },
  { need = { v_terms = 1, rowsum_mma = 0, blocks_per_sm = 0 }, why = "knobs of variant=wgmma" },
}
for _, r in ipairs(DEC.rules) do decode_rules[#decode_rules + 1] = r end
F.schedules = { mma = mma_rules, wgmma = WG.rules, decode = decode_rules }

function F.smem_bytes(t)
  if t.variant == "decode" then return DEC.smem_bytes(t) end
  if t.variant == "wgmma" then return WG.smem_bytes(t) end
  return mma.smem_bytes(t)
end

function F.register_estimate(t)
  if t.variant == "decode" then return DEC.register_estimate(t) end
  if t.variant == "wgmma" then return WG.register_estimate(t) end
  return mma.register_estimate(t)
end

-- The decode schedule's own test of whether a setting can win (f16's).
function F.candidate(t, pr)
  if t.variant == "decode" then return DEC.candidate(t, pr) end
  return true
end

-- On sm_90a a table that leaves every knob open gets the wgmma default (knobs
-- given without a variant describe an mma.sync tile); elsewhere mma.
-- A few query rows get the decode schedule wherever E4M3 converts (sm_89
-- and up) and the rows can be read 16 bytes at a time, up to head_dim 128,
-- where they pack into one 16-row tile: there it reads K/V at 2.1-2.3 TB/s
-- on the H200 (B16 Hq32 D128, Hkv 8 and 32, Nq 1-16), where the quantization
-- passes and the prefill kernel read 1.1-1.5; at 64 packed rows (Hkv8 Nq16)
-- its 64-row tile read 0.6 against their 1.07 (bench/NOTES.md, 2026-12-03).
function F.default(t, pr)
  local open = t.block_m == nil and t.block_n == nil and t.warps == nil and t.stages == nil
  local fp8_arch = t.arch == "sm_89" or t.arch == "sm_90a" or t.arch == "sm_100a" or t.arch == "sm_120a"
  local decoding = fp8_arch and t.align == 8 and t.variant == nil and open and t.kv_splits == nil and pr ~= nil
                   and pr.seq_q ~= nil and pr.seq_q <= DEC.MAX_SEQ_Q and U.round_up(t.head_dim, 16) <= 128
                   and (t.v_terms or 1) == 1 and DEC.packed_rows(t, pr) <= 16
  if t.variant == "decode" or decoding then return DEC.default(t, pr) end
  local hopper_fast = t.arch == "sm_90a" and t.variant == nil and open
  if t.variant == "wgmma" or hopper_fast then return WG.default(t, pr) end
  return mma.default(t)
end

-- The decode tiles rank first for a few query rows (DEC.prior) and last
-- otherwise: without the sizes, below the mma.sync tiles too.
function F.prior(t, pr)
  if t.variant == "decode" then
    if pr and pr.seq_q and pr.seq_q <= DEC.MAX_SEQ_Q then return DEC.prior(t, pr) end
    return DEC.prior(t, pr) * 1e-9
  end
  if t.variant == "wgmma" then return WG.prior(t) * U.size_fit(t, pr) end
  return mma.prior(t)
end

function F.render(t, canonical)
  if t.variant == "decode" then return DEC.render(t, canonical) end
  if t.variant == "wgmma" then return WG.render(t, canonical) end
  return mma.render(t, canonical)
end

function F.launches(t, pr, canonical)
  if t.variant == "decode" then return DEC.launches(t, pr, canonical) end
  if t.variant == "wgmma" then return WG.launches(t, pr, canonical) end
  return mma.launches(t, pr, canonical)
end

return F
