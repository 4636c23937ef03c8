-- What the warpgroup-MMA families share: the warpgroup rules
-- (check_warpgroups), setmaxnreg's split (register_split), the split units'
-- workspace (split_workspace; f16's cuda/fwd_wgmma_split.cuh), and the wgmma
-- fences and register pins (SYNC, cuda/wgmma_sync.cuh).  f16's kernels are
-- CUDA files (families/f16_wgmma.lua); the text below them (the set-up of
-- the TMA ring's barriers, the producer warpgroup, the consumers' state, the
-- skeleton of the overlap=0 kernels that a family fills with its loads and
-- attend_tile) is int8-fp8's (families/int8_fp8_wgmma.lua), until its
-- kernels are CUDA files too.
local C = {}

-- The wgmma fences, commit and wait, and the accumulators' register pins
-- (cuda/wgmma_sync.cuh): the 8-bit block (blocks/wgmma_int8.lua) reads them here.
C.SYNC = require("util").cuda("cuda/wgmma_sync.cuh")

C.RING_INIT = [[
  if (threadIdx.x == 0) {
    tma_prefetch_map(map_q); tma_prefetch_map(map_k); tma_prefetch_map(map_v);
    mbar_init(bar_q, 1);
    for (int s = 0; s < STAGES; s++) {
      mbar_init(bar_k(s), 1);
      mbar_init(bar_v(s), 1);
      mbar_init(bar_empty(s), CONSUMERS * 128);   // every consumer thread releases the slot
    }
    mbar_init_fence();
  }
  __syncthreads();
]]

-- The producer warpgroup of a warp-specialized kernel: it gives its registers
-- to the consumers, and one thread issues Q's copy and then each key tile's,
-- waiting on a slot's `empty` barrier before refilling it.  (The caller's
-- text continues with "} else {" and the consumers.)
C.PRODUCER = [[
  if (warp < 4) {                      // producer warpgroup
    if (REGS_PRODUCER) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(REGS_PRODUCER));
    if (threadIdx.x == 0) {
      load_q();
      for (int t = 0; t < n_tiles; t++) {
        const int slot = t % STAGES;
        if (t >= STAGES) mbar_wait(bar_empty(slot), (t / STAGES - 1) & 1);   // tile t - STAGES released
        load_kv(t);
      }
    }
]]

-- The start of every kernel's set-up: the shared-memory carve-up and its
-- barriers, which block this is, and how many key tiles it sees.  ${where}:
-- the family's own per-block values (lines, or ""), needed before its loads.
C.SMEM_SETUP = [[
  extern __shared__ __align__(1024) u8 smem[];
  // Swizzled tiles need 1024-byte alignment (the 128B pattern spans 8 rows).
  const u32 base = (smem_addr(smem) + 1023u) & ~1023u;
  const u32 sQ = base + SM_Q, sK = base + SM_K, sV = base + SM_V;
  const u32 bar_q = base + SM_BAR;     // then full_k[STAGES], full_v[STAGES], empty[STAGES]
  auto bar_k = [&](int s) { return bar_q + 8 * (1 + s); };
  auto bar_v = [&](int s) { return bar_q + 8 * (1 + STAGES + s); };
  auto bar_empty = [&](int s) { return bar_q + 8 * (1 + 2 * STAGES + s); };
  // Broadcast from lane 0 so that the compiler knows it is the same in every
  // lane: a branch on it is then a uniform branch, which the warps that fail
  // it jump over whole (the copies' issue below).
  const int warp = __shfl_sync(0xffffffffu, threadIdx.x / 32, 0);
]]
C.BLOCK_SETUP = C.SMEM_SETUP .. [[
  const int m_block = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z, kv_head = head / a.gqa;
  const int m0 = m_block * BM;
${where}  const void *map_q = &a.tmap[0], *map_k = &a.tmap[1], *map_v = &a.tmap[2];

  const int n_tiles = key_tiles(m0, a);   // all keys, or (causal) up to the last row's diagonal

]]

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

-- A consumer warpgroup's running state for its 64 rows: O, row max, row sum
-- (STATE_DECL), set for a new row block by STATE_INIT (both unindented);
-- CONSUMER_STATE declares and sets it.
C.STATE_DECL = "float o[1][DT][4], row_max[1][2], row_sum[1][2];\n"
C.STATE_INIT = [[
#pragma unroll
for (int dt = 0; dt < DT; dt++) o[0][dt][0] = o[0][dt][1] = o[0][dt][2] = o[0][dt][3] = 0.f;
row_max[0][0] = row_max[0][1] = MX_NEG_INF;
row_sum[0][0] = row_sum[0][1] = 0.f;
]]
C.CONSUMER_STATE = require("util").indent(C.STATE_DECL .. C.STATE_INIT, "  "):gsub("  #pragma", "#pragma")

-- The overlap=0 kernels of a family whose attend_tile(o, row_max, row_sum,
-- desc_q, desc_k, desc_v, bar_k, bar_v, parity, t, warp_row0, ..., a) runs one
-- key tile.  Hooks besides ${NAME}, ${SETUP}, ${CONSUME} and ${EPILOGUE}:
--   preamble        text before the kernel ("" for none)
--   k_step, v_step  a ring slot's size in descriptor units (16 bytes)
--   args            attend_tile's family arguments before `a` ("" for none)
--   min_blocks      blocks per SM that ptxas must fit the registers of (KERNEL)
--   load_next, v_slot  (KERNEL) the copies issued at the top of iteration t
--                   and V's ring slot
-- C.fill fills the defaults of min_blocks (1), load_next and v_slot (K and V
-- share the ring, as the producer's).
-- Step 1: every warp consumes; one lane of warp 0 also issues the copies,
-- refilling a slot after the block barrier that ends the iteration which read
-- it.  `warp == 0 && elect_one()`, not `threadIdx.x == 0`: under the latter
-- the compiler predicated the issuing code (with a loop that makes the copy's
-- operands uniform) in every warp, ~55 of int8-fp8's ~640 instructions a warp
-- and a tile, and 11% of its stall samples (H200, 2026-11-29).
C.KERNEL = [[
${preamble}extern "C" __global__ void __launch_bounds__(THREADS, ${min_blocks}) ${NAME}(const __grid_constant__ mx_kernel_args a) {
${SETUP}
  if (warp == 0 && elect_one()) {
    load_q();
    for (int s = 0; s < STAGES - 1 && s < n_tiles; s++) load_kv(s);
  }
${CONSUME}
  for (int t = 0; t < n_tiles; t++) {
    ${load_next}
    const int slot = t % STAGES;
    attend_tile(o, row_max, row_sum, desc_q, desc_k + slot * ${k_step}, desc_v + ${v_slot} * ${v_step},
                bar_k(slot), bar_v(${v_slot}), (t / STAGES) & 1, t, warp_row0, ${args}a);
    __syncthreads();                   // every warpgroup is done with this slot
  }
${EPILOGUE}
}
]]

-- Step 2: warp specialization.  Warpgroup 0 only issues copies (one thread),
-- waiting on each slot's `empty` barrier before refilling it, and gives its
-- registers to the consumers (setmaxnreg); the consumer warpgroups never
-- meet at a block barrier, so one's softmax overlaps the other's MMAs.
C.KERNEL_WS = [[
${preamble}extern "C" __global__ void __launch_bounds__(THREADS, 1) ${NAME}(const __grid_constant__ mx_kernel_args a) {
${SETUP}
]] .. C.PRODUCER .. [[
  } else {                             // consumer warpgroups
    if (REGS_CONSUMER) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(REGS_CONSUMER));
${CONSUME}
    for (int t = 0; t < n_tiles; t++) {
      const int slot = t % STAGES;
      attend_tile(o, row_max, row_sum, desc_q, desc_k + slot * ${k_step}, desc_v + slot * ${v_step},
                  bar_k(slot), bar_v(slot), (t / STAGES) & 1, t, warp_row0, ${args}a);
      mbar_arrive(bar_empty(slot));    // this thread's MMAs on the slot are complete
    }
${EPILOGUE}
  }
}
]]

-- C.KERNEL, C.KERNEL_WS or another skeleton filled with the hooks in h, the
-- KERNEL hooks a family leaves out taking their defaults.
function C.fill(text, h)
  local v = { load_next = "if (warp == 0 && t + STAGES - 1 < n_tiles && elect_one()) load_kv(t + STAGES - 1);", v_slot = "slot",
              min_blocks = 1 }
  for k, x in pairs(h) do v[k] = x end
  return require("util").fill(text, v)
end

-- The last lines of every kernel's epilogue: O (and the LSE) to memory.
C.WRITE_OUTPUT = [[
  u16 *o_head = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
  float *lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
  write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
]]

return C
