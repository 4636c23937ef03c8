-- FlashAttention-3's two overlaps for the consumer warpgroups of f16's
-- ping-pong and persistent kernels (cuda/fwd_wgmma_pingpong.cuh,
-- fwd_wgmma_persistent.cuh; overlap=1): the turns on the tensor cores
-- (sched_wait, sched_pass) and the softmax split around a turn
-- (softmax_scores, rescale_o), in cuda/wgmma_turns.cuh, which says how they
-- work.  .constants(p) is the constant it reads (p.sched_bar: the first of
-- the two named barrier ids, not 0: __syncthreads), .text the functions;
-- require("blocks.wgmma_overlap")(p) is both.
local U = require("util")
local TEXT = U.cuda("cuda/wgmma_turns.cuh")

local M = { text = TEXT }
function M.constants(p)
  return string.format("constexpr int SCHED_BAR = %d;   // named barriers SCHED_BAR + consumer warpgroup\n", p.sched_bar)
end
return setmetatable(M, { __call = function(_, p) return M.constants(p) .. TEXT end })
