-- What the warpgroup-MMA families share (their kernels are CUDA files:
-- families/f16_wgmma.lua, families/int8_fp8_wgmma.lua): the warpgroup rules
-- (check_warpgroups), setmaxnreg's split (register_split) and the split
-- units' workspace (split_workspace; f16's cuda/fwd_wgmma_persistent.cuh, SPLIT).
local C = {}

-- The warpgroup rules both wgmma families share: 64 query rows per consumer
-- warpgroup, at most three, and warps = 4 * consumers, or that plus a TMA
-- producer warpgroup.  Three consumers share one K/V stream (a third of the
-- L2 reads of three 64-row blocks); their registers, 168 a thread or 160
-- beside a producer (24 + 3 x 160 of 128 at launch), are enough for D <= 64
-- (`d`: the head dim as the family pads it).  A family that runs the tile
-- as a shared ring (`shared_ring`: int8-fp8's consumers without a producer,
-- whose S is 8-bit and whose P V has its own accumulator) fits three up to
-- D=128 and four (block_m=256) up to D=64; overlap=3's ring fits three up to
-- D=128 too.  The message, or nil.
C.WARPGROUP_RULE = "block_m = 64*consumers (at most 3); warps = 4*consumers, or that + 4 (a TMA producer " ..
                   "warpgroup); three consumers up to head_dim 64 (int8-fp8's shared ring: 128, and four up to 64)"
function C.check_warpgroups(t, d, shared_ring)
  if t.block_m % 64 ~= 0 or t.block_m > (shared_ring and d <= 64 and 256 or 192) then
    return string.format("variant=wgmma: block_m=%d must be 64, 128 or 192 (64 query rows per consumer warpgroup; 256: int8-fp8's shared ring up to head_dim 64)", t.block_m)
  end
  local c = t.block_m // 64
  local most_d = shared_ring and 128 or 64
  if c == 3 and d > most_d and t.overlap ~= 3 then
    return string.format("variant=wgmma: block_m=192 (three consumer warpgroups) needs head_dim <= %d, not %d", most_d, t.head_dim)
  end
  if t.warps ~= 4 * c and t.warps ~= 4 * c + 4 then
    return string.format("variant=wgmma: block_m=%d needs warps=%d (a warpgroup of 4 warps per 64 rows) or %d (plus a TMA producer warpgroup), not warps=%d",
                         t.block_m, 4 * c, 4 * c + 4, t.warps)
  end
end

-- setmaxnreg's targets (producer, consumer; 0, 0: none) for a block of
-- `consumers` warpgroups and, if `producer`, one more that only issues
-- copies.  With 3 warpgroups (384 threads, 168 registers each at entry):
-- 24 + 2 x 240 keeps the block's 64512; with 4 (512 threads, 128 each):
-- 24 + 3 x 160 = 504 of 512.  Two warpgroups already get 255.
function C.register_split(consumers, producer)
  if producer and consumers == 2 then return 24, 240 end
  if producer and consumers == 3 then return 24, 160 end
  return 0, 0
end

-- Workspace of the split: the scheduler's two counters, then a counter per
-- split unit and consumer warp (zero between launches: the warp that
-- completes a unit resets its own), then each piece's partial O, row max and
-- row sum, in each consumer thread's register order (lane fastest).
function C.split_workspace(d_pad, consumers)
  local warps = 4 * consumers
  local counters = C.SPLIT_MAX_PIECES * warps * 4
  local partials = C.SPLIT_MAX_PIECES * warps * 32 * (4 * (d_pad // 8) + 4) * 4
  return 256 + counters + partials
end
C.SPLIT_MAX_PIECES = 160   -- >= the SMs of any sm_90a part; more blocks than this do not split
C.SPLIT_MAX = 8            -- pieces a unit at most

return C
