-- Pieces every warpgroup-MMA kernel shares, as text: the wgmma fences and
-- the register pins around them, the set-up of the TMA ring's barriers
-- (Q's, each slot's full K and V, and each slot's empty barrier that every
-- consumer thread arrives on), the producer warpgroup, and the skeleton of
-- the overlap=0 kernels that a family fills with its loads and attend_tile.
local C = {}

C.SYNC = [[
MX_INLINE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
MX_INLINE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N> MX_INLINE void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }
// Pins accumulator registers in program order against the fences and waits:
// the compiler must not move their reads or writes across an async MMA.
template <int C> MX_INLINE void reg_fence(float (&d)[1][C][4]) {
#pragma unroll
  for (int j = 0; j < C; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) asm volatile("" : "+f"(d[0][j][e]) :: "memory");
}
]]

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

-- The set-up of a persistent kernel (persistent=1) after C.SMEM_SETUP: the
-- grid has at most one block per resident slot (the runtime clamps it), and
-- the blocks take work units in order from a counter in the workspace, each
-- its next one when it starts the last: units run in the order a grid of
-- one block per unit would run them, so the units in flight share heads and
-- their K and V stay in L2 (a fixed order let the blocks drift apart over
-- causal rows of unequal length: 468 vs 587 TOPS).  A unit is one BM-row
-- block of one head, row blocks fastest, the longest causal rows first.
-- set_work(w) makes w the current unit.  Two more barriers' worth of shared
-- memory: bar_q_empty (every consumer thread is done with the unit's S = Q
-- K^T, so Q's buffer and the unit slot can take the next unit) and
-- unit_slot, where the producer tells the consumers which unit comes next.
-- The counters (next unit, blocks done) start at zero (the workspace is
-- allocated zeroed) and the last block to finish taking units zeroes them.
C.WORK_SETUP = [[
  const void *map_q = &a.tmap[0], *map_k = &a.tmap[1], *map_v = &a.tmap[2];
  const u32 bar_q_empty = bar_q + 8 * (1 + 3 * STAGES), unit_slot = bar_q_empty + 8;
  unsigned *sched = (unsigned *)a.ws;  // [0] units handed out past the first wave, [1] blocks done
  const int m_blocks = (a.seq_q + BM - 1) / BM, n_work = m_blocks * a.heads_q * a.batch;
  int m_block = 0, head = 0, batch = 0, kv_head = 0, m0 = 0, n_tiles = 0;
${SPLIT_SETUP}  auto set_work = [&](int w) {
${SPLIT_ITEM}    const int mb = ${UNIT} % m_blocks, hb = ${UNIT} / m_blocks;
    m_block = CAUSAL ? m_blocks - 1 - mb : mb;   // causal: the longest rows first, as a grid would run them
    head = hb % a.heads_q;
    batch = hb / a.heads_q;
    kv_head = head / a.gqa;
    m0 = m_block * BM;
    n_tiles = key_tiles(m0, a);
${SPLIT_RANGE}  };
  if (threadIdx.x == 0) mbar_init(bar_q_empty, CONSUMERS * 128);   // RING_INIT fences it
]]

-- The persistent producer: for each unit, once the consumers are done with
-- the last one's Q, it writes the unit to unit_slot and loads its Q (a unit
-- that sees no key, or the end, only arrives on bar_q), then its K/V tiles,
-- the ring's slots and phases counted over all units (g).
C.PRODUCER_PERSISTENT = [[
  if (warp < 4) {                      // producer warpgroup
    if (REGS_PRODUCER) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(REGS_PRODUCER));
    if (threadIdx.x == 0) {
      int g = 0, units = 0;            // K/V tiles loaded, units handed to the consumers
      for (int w = blockIdx.x;; units++) {
        if (units > 0) mbar_wait(bar_q_empty, (units - 1) & 1);   // the last unit's S products are done
        asm volatile("st.shared.u32 [%0], %1;" :: "r"(unit_slot), "r"(w) : "memory");
        if (w >= ${N_ITEMS}) { mbar_arrive(bar_q); break; }           // the end, read by the consumers
        // The next unit, asked for now so the answer is back by the last load.
        const int next = (int)atomicAdd(&sched[0], 1u) + gridDim.x;
        set_work(w);
        if (n_tiles > 0) load_q(); else mbar_arrive(bar_q);
        for (int t = 0; t < n_tiles; t++, g++) {
          const int slot = g % STAGES;
          if (g >= STAGES) mbar_wait(bar_empty(slot), (g / STAGES - 1) & 1);   // tile g - STAGES released
          load_kv_at(${TILE0}t, slot);
        }
        w = next;
      }
      // Every block asks past the end exactly once, so the last to finish
      // asking knows no block will read the counter again: it zeroes both
      // for the next launch on this workspace.
      if (atomicAdd(&sched[1], 1u) == gridDim.x - 1) { atomicExch(&sched[0], 0u); atomicExch(&sched[1], 0u); }
    }
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

-- Units split along the keys (the knob split=1: the non-causal persistent
-- kernel of families/f16_wgmma.lua) when a problem has fewer units than the
-- launch has blocks (launches() asks for up to MAX_SPLIT blocks a unit; the
-- runtime launches at most one wave): n_work units would leave the other
-- blocks' SMs idle for the whole call.  Each unit is cut into `split` pieces
-- of consecutive key tiles (at most gridDim.x pieces in all, each of
-- MIN_PIECE_TILES tiles or more, at most MAX_SPLIT a unit: the warp that
-- completes a unit reads every piece back); a piece ends with finish_piece
-- (C.SPLIT_FINISH) instead of the unit's output.  Splitting only the last
-- wave of a large problem measured 0.8-1% slower on the H200 (the blocks
-- drift apart and absorb that wave; 2026-11-29), so a problem
-- with a wave's worth of units or more is not split; and the split-capable
-- kernel is 1.6% slower where it does not split (H200, D=128), hence a knob
-- that the default sets by the problem's size (WG.default).
local SPLIT_SETUP = [[
  constexpr int MIN_PIECE_TILES = 4, MAX_SPLIT = ${MAX_SPLIT};
  const int split = n_work > 0 && n_work < (int)gridDim.x && (int)gridDim.x <= MAX_PIECES
                        ? max(1, min(min((int)gridDim.x / n_work, key_tiles(0, a) / MIN_PIECE_TILES), MAX_SPLIT)) : 1;
  const int n_full = split > 1 ? 0 : n_work, n_items = split > 1 ? n_work * split : n_work;
  int tile0 = 0, piece = -1, split_unit = 0;   // the current item: its first key tile; its piece (-1: a whole unit)
]]
local SPLIT_ITEM = [[
    int u = w;
    tile0 = 0;
    piece = -1;
    if (w >= n_full) {
      split_unit = (w - n_full) / split;
      piece = (w - n_full) % split;
      u = n_full + split_unit;
    }
]]
local SPLIT_RANGE = [[
    if (piece >= 0) {
      tile0 = piece * n_tiles / split;
      n_tiles = (piece + 1) * n_tiles / split - tile0;
    }
]]

function C.work_setup(split)
  if not split then return require("util").fill(C.WORK_SETUP, { SPLIT_SETUP = "", SPLIT_ITEM = "", UNIT = "w", SPLIT_RANGE = "" }) end
  return require("util").fill(C.WORK_SETUP, { SPLIT_SETUP = require("util").fill(SPLIT_SETUP, { MAX_SPLIT = C.SPLIT_MAX }),
                                              SPLIT_ITEM = SPLIT_ITEM, UNIT = "u", SPLIT_RANGE = SPLIT_RANGE })
end

function C.producer_persistent(split)
  return require("util").fill(C.PRODUCER_PERSISTENT, { N_ITEMS = split and "n_items" or "n_work", TILE0 = split and "tile0 + " or "" })
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

C.SPLIT_FINISH = [[
constexpr int MAX_PIECES = ${MAX_PIECES};
// A piece's end: its partial O, row max and row sum go to the workspace; the
// warp whose arrival completes the unit's pieces adds them up, each scaled by
// exp2(its max - the common max), and writes the rows (write_output).
MX_INLINE void finish_piece(float (&o)[1][DT][4], const float (&row_max)[1][2], const float (&row_sum)[1][2],
                            const mx_kernel_args &a, int split_unit, int piece, int split, int cwarp,
                            u16 *o_head, float *lse_head, int row0) {
  constexpr int VALS = 4 * DT + 4;     // O, then the row max and sum of both row halves
  const int lane = threadIdx.x % 32;
  unsigned *count = (unsigned *)((u8 *)a.ws + 256) + split_unit * CONSUMERS * 4 + cwarp;
  float *parts = (float *)((u8 *)a.ws + 256 + MAX_PIECES * CONSUMERS * 4 * 4);
  auto part = [&](int p) { return parts + ((i64)(split_unit * split + p) * CONSUMERS * 4 + cwarp) * VALS * 32 + lane; };
  float *mine = part(piece);
#pragma unroll
  for (int dt = 0; dt < DT; dt++)
#pragma unroll
    for (int e = 0; e < 4; e++) mine[(dt * 4 + e) * 32] = o[0][dt][e];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    mine[(4 * DT + h) * 32] = row_max[0][h];
    mine[(4 * DT + 2 + h) * 32] = row_sum[0][h];
  }
  __threadfence();                     // this lane's partial, before its warp counts it
  __syncwarp();
  unsigned before = 0;
  if (lane == 0) before = atomicAdd(count, 1u);
  if (__shfl_sync(0xffffffffu, before, 0) != (unsigned)split - 1) return;
  __threadfence();                     // the other pieces' partials, after their counts
  float m[1][2] = {{MX_NEG_INF, MX_NEG_INF}}, l[1][2] = {{0.f, 0.f}};
  for (int p = 0; p < split; p++)
#pragma unroll
    for (int h = 0; h < 2; h++) m[0][h] = fmaxf(m[0][h], __ldcg(part(p) + (4 * DT + h) * 32));
#pragma unroll
  for (int dt = 0; dt < DT; dt++) o[0][dt][0] = o[0][dt][1] = o[0][dt][2] = o[0][dt][3] = 0.f;
  for (int p = 0; p < split; p++) {
    const float *theirs = part(p);
    float f[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const float mp = __ldcg(theirs + (4 * DT + h) * 32);
      f[h] = mp == MX_NEG_INF ? 0.f : fast_exp2(mp - m[0][h]);
      l[0][h] += f[h] * __ldcg(theirs + (4 * DT + 2 + h) * 32);
    }
#pragma unroll
    for (int dt = 0; dt < DT; dt++)
#pragma unroll
      for (int e = 0; e < 4; e++) o[0][dt][e] += f[e / 2] * __ldcg(theirs + (dt * 4 + e) * 32);
  }
  if (lane == 0) *count = 0u;          // zero for the next launch on this workspace
  write_output(o, m, l, o_head, a.o_ss, lse_head, row0, a.seq_q);
}
]]

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
