// The persistent ping-pong (families/f16_wgmma.lua, persistent=1; sm_90a):
// the turns of cuda/fwd_wgmma_pingpong.cuh looped over work units, one block
// per SM.  A unit is one BM-row block of one head, row blocks fastest, the
// longest causal rows first.  The blocks take units in order from a counter
// in the workspace, each its next one when it starts the last: units run in
// the order a grid of one block per unit would run them, so the units in
// flight share heads and their K and V stay in L2 (a fixed order let the
// blocks drift apart over causal rows of unequal length: 468 vs 587 TOPS).
// The producer tells the consumers which unit comes next through unit_slot;
// while one unit's last P V and output run, it already loads the next unit's
// Q and K/V.  The ring's slots and phases are counted over all units (g).
//
// DEFERRED (no causal mask, registers to spare): each unit's output is
// normalized and packed when the unit ends and stored after the next unit's
// first softmax, so the stores leave under the other warpgroup's MMAs instead
// of between this warpgroup's units.  D=128 N=4096: 1.633 vs 1.659 ms, N=16384
// 6.22 vs 6.30; under causal 0.956 vs 0.948 ms, slower, so causal stores at
// once (H200, 2026-11-29).  Stored right after S(0) was issued, before the
// softmax, it was 1.5% slower: the softmax's shuffles queued behind the
// stores.
//
// SPLIT (split=1; no causal mask, so DEFERRED): units split along the keys
// when a problem has fewer of them than the launch has blocks (the runtime
// launches at most one wave, up to MAX_SPLIT blocks a unit): n_work units
// would leave the other blocks' SMs idle for the whole call.  Each unit is
// cut into `split` pieces of consecutive key tiles (at most gridDim.x pieces
// in all, each of MIN_PIECE_TILES tiles or more, at most MAX_SPLIT a unit: the
// warp that completes a unit reads every piece back); a piece ends with
// finish_piece (cuda/wgmma_split.cuh) instead of the unit's output, and the
// blocks take items (whole units, or pieces) instead of units.  Splitting
// only the last wave of a large problem measured 0.8-1% slower on the H200
// (the blocks drift apart and absorb that wave; 2026-11-29), so a problem
// with a wave's worth of units or more is not split; the split-capable
// kernel is 1.6% slower where it does not split (H200, D=128), hence a knob
// that the default sets by the problem's size.
//
// Reads the header's constants as cuda/fwd_wgmma_pingpong.cuh does,
// DEFERRED, SPLIT, MAX_SPLIT and MAX_PIECES (the most blocks that split; the
// workspace holds this many pieces: blocks/wgmma_common.lua,
// split_workspace); and the blocks before it: prelude, tma_mbarrier,
// wgmma_f16, softmax, epilogue with its deferred part, wgmma_split,
// tma_block, wgmma_ring, wgmma_f16_tile, wgmma_turns.

extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {
  // Shared memory: Q, then the ring's K and V slots, then the barriers.
  extern __shared__ __align__(1024) u8 smem[];
  GridBlock b;                         // cuda/wgmma_ring.cuh: tiles, barriers, copies; set_work places the unit
  place_ring(b, smem, a);
  const int warp = b.warp;

  // The work units.  Two more barriers' worth of shared memory: bar_q_empty
  // (every consumer thread is done with the unit's S = Q K^T, so Q's buffer
  // and the unit slot can take the next unit) and unit_slot.  The counters
  // (next unit, blocks done) start at zero (the workspace is allocated
  // zeroed) and the last block to finish taking units zeroes them.
  const u32 bar_q_empty = b.bar_q + 8 * (1 + 3 * STAGES), unit_slot = bar_q_empty + 8;
  unsigned *sched = (unsigned *)a.ws;  // [0] units handed out past the first wave, [1] blocks done
  const int m_blocks = (a.seq_q + BM - 1) / BM, n_work = m_blocks * a.heads_q * a.batch;
  // The items the blocks take: with SPLIT, fewer units than blocks (and no
  // more blocks than the workspace has pieces for), `split` pieces a unit;
  // else the units whole.
  constexpr int MIN_PIECE_TILES = 4;
  const int split = SPLIT && n_work > 0 && n_work < (int)gridDim.x && (int)gridDim.x <= MAX_PIECES
                        ? max(1, min(min((int)gridDim.x / n_work, key_tiles(0, a) / MIN_PIECE_TILES), MAX_SPLIT)) : 1;
  const int n_full = split > 1 ? 0 : n_work, n_items = split > 1 ? n_work * split : n_work;
  int tile0 = 0, piece = -1, split_unit = 0;   // the current item: its first key tile; its piece (-1: a whole unit)
  // Makes item w the current one: unit u, or (SPLIT) its piece `piece`,
  // whose key tiles start at tile0.
  auto set_work = [&](int w) {
    int u = w;
    if constexpr (SPLIT) {
      tile0 = 0;
      piece = -1;
      if (w >= n_full) {
        split_unit = (w - n_full) / split;
        piece = (w - n_full) % split;
        u = n_full + split_unit;
      }
    }
    const int mb = u % m_blocks, hb = u / m_blocks;
    const int m_block = CAUSAL ? m_blocks - 1 - mb : mb;   // causal: the longest rows first, as a grid would run them
    b.head = hb % a.heads_q;
    b.batch = hb / a.heads_q;
    b.kv_head = b.head / a.gqa;
    b.m0 = m_block * BM;
    b.n_tiles = key_tiles(b.m0, a);
    if constexpr (SPLIT) {
      if (piece >= 0) {
        tile0 = piece * b.n_tiles / split;
        b.n_tiles = (piece + 1) * b.n_tiles / split - tile0;
      }
    }
  };
  if (threadIdx.x == 0) mbar_init(bar_q_empty, CONSUMERS * 128);   // fenced with the ring's below
  init_ring(b);   // the ring's barriers, then the block sees them
  __syncthreads();

  // The producer: for each item, once the consumers are done with the last
  // one's Q, it writes the item to unit_slot and loads its Q (an item that
  // sees no key, or the end, only arrives on bar_q), then its K/V tiles
  // from tile0.
  if (warp < 4) {                      // producer warpgroup
    producer_registers();
    if (threadIdx.x == 0) {
      int g = 0, units = 0;            // K/V tiles loaded, units handed to the consumers
      for (int w = blockIdx.x;; units++) {
        if (units > 0) mbar_wait(bar_q_empty, (units - 1) & 1);   // the last unit's S products are done
        asm volatile("st.shared.u32 [%0], %1;" :: "r"(unit_slot), "r"(w) : "memory");
        if (w >= n_items) { mbar_arrive(b.bar_q); break; }        // the end, read by the consumers
        // The next unit, asked for now so the answer is back by the last load.
        const int next = (int)atomicAdd(&sched[0], 1u) + gridDim.x;
        set_work(w);
        if (b.n_tiles > 0) b.load_q();
        else mbar_arrive(b.bar_q);
        for (int t = 0; t < b.n_tiles; t++, g++) {
          const int slot = g % STAGES;
          if (g >= STAGES) mbar_wait(b.bar_empty(slot), (g / STAGES - 1) & 1);   // tile g - STAGES released
          b.load_kv_into(tile0 + t, slot);
        }
        w = next;
      }
      // Every block asks past the end exactly once, so the last to finish
      // asking knows no block will read the counter again: it zeroes both
      // for the next launch on this workspace.
      if (atomicAdd(&sched[1], 1u) == gridDim.x - 1) { atomicExch(&sched[0], 0u); atomicExch(&sched[1], 0u); }
    }
  } else {                             // consumer warpgroups, taking turns
    consumer_registers();
    const ConsumerWarp c = consumer_warp(b);   // cuda/wgmma_f16_tile.cuh: its rows and descriptors
    float o[1][DT][4], row_max[1][2], row_sum[1][2];
    // DEFERRED: the last unit's output, waiting to be stored.
    bool pending = false;              // a unit's output waits to be stored
    u32 pending_out[2][DT];            // its rows, normalized and packed
    float pending_lse[2];
    u16 *pending_o = nullptr;
    float *pending_lse_head = nullptr;
    int pending_row0 = 0;
    auto store_pending = [&] {
      if constexpr (DEFERRED)
        if (pending) store_output(pending_out, pending_lse, pending_o, a.o_ss, pending_lse_head, pending_row0, a.seq_q);
    };
    int g = 0;                         // the ring position of this unit, as the producer counts it
    for (int units = 0;; units++) {
      mbar_wait(b.bar_q, units & 1);   // Q has landed, or the unit sees no key, or the end
      int w;
      asm volatile("ld.shared.u32 %0, [%1];" : "=r"(w) : "r"(unit_slot) : "memory");
      if (w >= n_items) break;
      set_work(w);
      const int warp_row0 = b.m0 + c.row_in_block;
      init_accumulators(o, row_max, row_sum);
      if (b.n_tiles == 0) {            // nothing to read: the slot is free, the output is 0
        mbar_arrive(bar_q_empty);
        store_pending();
      } else {
        take_turns(o, row_max, row_sum, c.d, b, g, tile0, b.n_tiles, c.wg, warp_row0, a,
                   [&] { mbar_arrive(bar_q_empty); },   // Q is free for the next unit
                   store_pending);
      }
      // The unit's output: stored now, or packed to be stored during the
      // next unit; a piece's partial rows go to the workspace.
      u16 *o_head = (u16 *)a.o + b.batch * a.o_sb + b.head * a.o_sh;
      float *lse_head = a.lse + ((i64)b.batch * a.heads_q + b.head) * a.seq_q;
      if (SPLIT && piece >= 0) {
        pending = false;
        finish_piece(o, row_max, row_sum, a, split_unit, piece, split, c.wg * 4 + warp % 4, o_head, lse_head, warp_row0);
      } else if constexpr (DEFERRED) {
        pack_output(pending_out, pending_lse, o, row_max, row_sum);
        pending = true;
        pending_o = o_head;
        pending_lse_head = lse_head;
        pending_row0 = warp_row0;
      } else {
        write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
      }
      g += b.n_tiles;
    }
    store_pending();
  }
}
