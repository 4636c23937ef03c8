// The persistent ping-pong with split work units (families/f16_wgmma.lua,
// split=1; sm_90a): cuda/fwd_wgmma_persistent.cuh's deferred-output kernel
// whose units split along the keys when a problem has fewer of them than the
// launch has blocks (the runtime launches at most one wave, up to MAX_SPLIT
// blocks a unit): n_work units would leave the other blocks' SMs idle for
// the whole call.  Each unit is cut into `split` pieces of consecutive key
// tiles (at most gridDim.x pieces in all, each of MIN_PIECE_TILES tiles or
// more, at most MAX_SPLIT a unit: the warp that completes a unit reads every
// piece back); a piece ends with finish_piece (cuda/wgmma_split.cuh) instead
// of the unit's output, and the blocks take items (whole units, or pieces)
// instead of units.  Splitting only the last wave of a large problem
// measured 0.8-1% slower on the H200 (the blocks drift apart and absorb that
// wave; 2026-11-29), so a problem with a wave's worth of units or more is not
// split; the split-capable kernel is 1.6% slower where it does not split
// (H200, D=128), hence a knob that the default sets by the problem's size.
//
// Its own file rather than `if constexpr` in fwd_wgmma_persistent.cuh: the
// split's locals (split, tile0, piece...), even unused, moved the SASS of
// the kernel without them.
//
// Reads the header's constants as cuda/fwd_wgmma_persistent.cuh does,
// MAX_SPLIT and MAX_PIECES (the most blocks that split; the workspace holds
// this many pieces: blocks/wgmma_common.lua, split_workspace); and the blocks
// before it as fwd_wgmma_persistent.cuh, with wgmma_split.

extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {
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

  // The work units and their barriers, as in cuda/fwd_wgmma_persistent.cuh.
  const void *map_q = &a.tmap[0], *map_k = &a.tmap[1], *map_v = &a.tmap[2];
  const u32 bar_q_empty = bar_q + 8 * (1 + 3 * STAGES), unit_slot = bar_q_empty + 8;
  unsigned *sched = (unsigned *)a.ws;  // [0] units handed out past the first wave, [1] blocks done
  const int m_blocks = (a.seq_q + BM - 1) / BM, n_work = m_blocks * a.heads_q * a.batch;
  int m_block = 0, head = 0, batch = 0, kv_head = 0, m0 = 0, n_tiles = 0;
  // The items the blocks take: with fewer units than blocks (and no more
  // blocks than the workspace has pieces for), `split` pieces a unit, else
  // the units whole.
  constexpr int MIN_PIECE_TILES = 4;
  const int split = n_work > 0 && n_work < (int)gridDim.x && (int)gridDim.x <= MAX_PIECES
                        ? max(1, min(min((int)gridDim.x / n_work, key_tiles(0, a) / MIN_PIECE_TILES), MAX_SPLIT)) : 1;
  const int n_full = split > 1 ? 0 : n_work, n_items = split > 1 ? n_work * split : n_work;
  int tile0 = 0, piece = -1, split_unit = 0;   // the current item: its first key tile; its piece (-1: a whole unit)
  // Makes item w the current one: unit u, or its piece `piece`, whose key
  // tiles start at tile0.
  auto set_work = [&](int w) {
    int u = w;
    tile0 = 0;
    piece = -1;
    if (w >= n_full) {
      split_unit = (w - n_full) / split;
      piece = (w - n_full) % split;
      u = n_full + split_unit;
    }
    const int mb = u % m_blocks, hb = u / m_blocks;
    m_block = CAUSAL ? m_blocks - 1 - mb : mb;   // causal: the longest rows first, as a grid would run them
    head = hb % a.heads_q;
    batch = hb / a.heads_q;
    kv_head = head / a.gqa;
    m0 = m_block * BM;
    n_tiles = key_tiles(m0, a);
    if (piece >= 0) {
      tile0 = piece * n_tiles / split;
      n_tiles = (piece + 1) * n_tiles / split - tile0;
    }
  };
  if (threadIdx.x == 0) mbar_init(bar_q_empty, CONSUMERS * 128);   // fenced with the ring's below
  // Load K and V tile `tile` into ring slot `s`: one box per panel.
  auto load_kv_at = [&](int tile, int s) { load_kv_tile(bar_k(s), bar_v(s), sK, sV, map_k, map_v, tile, s, kv_head, batch); };
  auto load_q = [&]() { load_q_tile(bar_q, sQ, map_q, m0, head, batch); };

  init_ring(bar_q, map_q, map_k, map_v);   // the ring's barriers, then the block sees them
  __syncthreads();

  // The producer: for each item, once the consumers are done with the last
  // one's Q, it writes the item to unit_slot and loads its Q, then its K/V
  // tiles from tile0.
  if (warp < 4) {                      // producer warpgroup
    if (REGS_PRODUCER) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(REGS_PRODUCER));
    if (threadIdx.x == 0) {
      int g = 0, units = 0;            // K/V tiles loaded, units handed to the consumers
      for (int w = blockIdx.x;; units++) {
        if (units > 0) mbar_wait(bar_q_empty, (units - 1) & 1);   // the last unit's S products are done
        asm volatile("st.shared.u32 [%0], %1;" :: "r"(unit_slot), "r"(w) : "memory");
        if (w >= n_items) { mbar_arrive(bar_q); break; }           // the end, read by the consumers
        // The next unit, asked for now so the answer is back by the last load.
        const int next = (int)atomicAdd(&sched[0], 1u) + gridDim.x;
        set_work(w);
        if (n_tiles > 0) load_q(); else mbar_arrive(bar_q);
        for (int t = 0; t < n_tiles; t++, g++) {
          const int slot = g % STAGES;
          if (g >= STAGES) mbar_wait(bar_empty(slot), (g / STAGES - 1) & 1);   // tile g - STAGES released
          load_kv_at(tile0 + t, slot);
        }
        w = next;
      }
      // Every block asks past the end exactly once, so the last to finish
      // asking knows no block will read the counter again: it zeroes both
      // for the next launch on this workspace.
      if (atomicAdd(&sched[1], 1u) == gridDim.x - 1) { atomicExch(&sched[0], 0u); atomicExch(&sched[1], 0u); }
    }
  } else {                             // consumer warpgroups, taking turns
    if (REGS_CONSUMER) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(REGS_CONSUMER));
    const int wg = warp / 4 - (PRODUCER ? 1 : 0);          // consumer warpgroup index
    // Descriptors of this warpgroup's 64 Q rows and of ring slot 0's K and V;
    // a k-step or a slot only adds to the start address (the low 14 bits).
    const u64 desc_q = smem_desc(sQ + wg * 64 * ROW_BYTES, 16, 8 * ROW_BYTES);
    const u64 desc_k = smem_desc(sK, 16, 8 * ROW_BYTES);
    const u64 desc_v = smem_desc(sV, BN * ROW_BYTES, 8 * ROW_BYTES);
    float o[1][DT][4], row_max[1][2], row_sum[1][2];
    bool pending = false;                // a unit's output waits to be stored
    u32 pending_out[2][DT];              // its rows, normalized and packed
    float pending_lse[2];
    u16 *pending_o = nullptr;
    float *pending_lse_head = nullptr;
    int pending_row0 = 0;
    int g = 0;                         // the ring position of this unit, as the producer counts it
    for (int units = 0;; units++) {
      mbar_wait(bar_q, units & 1);     // Q has landed, or the unit sees no key, or the end
      int w;
      asm volatile("ld.shared.u32 %0, [%1];" : "=r"(w) : "r"(unit_slot) : "memory");
      if (w >= n_items) break;
      set_work(w);
      const int warp_row0 = m0 + wg * 64 + (warp % 4) * 16;
      init_accumulators(o, row_max, row_sum);
      if (n_tiles == 0) {              // nothing to read: the slot is free, the output is 0
        mbar_arrive(bar_q_empty);
        if (pending) store_output(pending_out, pending_lse, pending_o, a.o_ss, pending_lse_head, pending_row0, a.seq_q);
      }
      if (n_tiles > 0) {
        float s[1][NT][4], alpha[2];
        u32 pa[BN / 16][4];
        if (wg == 1) sched_pass(wg);     // kick-off: warpgroup 0 takes the first turn

        // Turn 0: S(0) only.
        mbar_wait(bar_k(g % STAGES), (g / STAGES) & 1);
        sched_wait(wg);
        issue_qk(s, desc_q, desc_k + g % STAGES * KV_BYTES / 16);
        if (wg == 0 || n_tiles > 1) sched_pass(wg);   // warpgroup 1 does not pass after its last turn
        wgmma_wait<0>();
        reg_fence(s);
        if (n_tiles == 1) mbar_arrive(bar_q_empty);   // Q is free for the next unit
        mask_tile(s, tile0, warp_row0, a);
        softmax_scores(s, row_max, row_sum, alpha, a.scale_log2);
        alpha[0] = alpha[1] = 1.f;       // O is still 0: nothing to rescale
        if (pending) store_output(pending_out, pending_lse, pending_o, a.o_ss, pending_lse_head, pending_row0, a.seq_q);

        for (int t = 1; t < n_tiles; t++) {
          const int slot = (g + t) % STAGES, prev = (g + t - 1) % STAGES;
          wgmma_wait<0>();
          reg_fence(o);
          if (t > 1) {
            mbar_arrive(bar_empty((g + t - 2) % STAGES));   // this thread's MMAs on that slot are complete
          }
          rescale_o(o, alpha);
          pack_p(pa, s);
          mbar_wait(bar_k(slot), ((g + t) / STAGES) & 1);
          mbar_wait(bar_v(prev), ((g + t - 1) / STAGES) & 1);
          sched_wait(wg);
          issue_qk(s, desc_q, desc_k + slot * KV_BYTES / 16);                 // S(t) = Q K(t)^T
          issue_pv(o, pa, desc_v + prev * KV_BYTES / 16);                     // O += P(t-1) V(t-1)
          if (wg == 0 || t + 1 < n_tiles) sched_pass(wg);
          wgmma_wait<1>();               // S(t) is done; P(t-1) V(t-1) may still run
          reg_fence(s);
          if (t + 1 == n_tiles) mbar_arrive(bar_q_empty);
          mask_tile(s, tile0 + t, warp_row0, a);
          softmax_scores(s, row_max, row_sum, alpha, a.scale_log2);
        }

        // The last P V, outside the turns.
        wgmma_wait<0>();
        reg_fence(o);
        if (n_tiles > 1) {
          mbar_arrive(bar_empty((g + n_tiles - 2) % STAGES));   // this thread's MMAs on that slot are complete
        }
        rescale_o(o, alpha);
        pack_p(pa, s);
        const int last = (g + n_tiles - 1) % STAGES;
        mbar_wait(bar_v(last), ((g + n_tiles - 1) / STAGES) & 1);
        issue_pv(o, pa, desc_v + last * KV_BYTES / 16);
        wgmma_wait<0>();
        reg_fence(o);
        mbar_arrive(bar_empty(last));
      }
      if (piece < 0) {
        pack_output(pending_out, pending_lse, o, row_max, row_sum);
        pending = true;
        pending_o = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
        pending_lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
        pending_row0 = warp_row0;
      } else {
        pending = false;
        finish_piece(o, row_max, row_sum, a, split_unit, piece, split, wg * 4 + warp % 4,
                     (u16 *)a.o + batch * a.o_sb + head * a.o_sh, a.lse + ((i64)batch * a.heads_q + head) * a.seq_q,
                     warp_row0);
      }
      g += n_tiles;
    }
    if (pending) store_output(pending_out, pending_lse, pending_o, a.o_ss, pending_lse_head, pending_row0, a.seq_q);
  }
}
