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
// split=1 (few units cut along the keys) is cuda/fwd_wgmma_split.cuh.
//
// Reads the header's constants as cuda/fwd_wgmma_pingpong.cuh does and
// DEFERRED; and the blocks before it: prelude, tma_mbarrier, wgmma_f16,
// softmax, epilogue with its deferred part, wgmma_ring, wgmma_f16_tile,
// wgmma_turns.

extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {
  // Shared memory: Q, then the ring's K and V slots, then the barriers.
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


  // The work units.  Two more barriers' worth of shared memory: bar_q_empty
  // (every consumer thread is done with the unit's S = Q K^T, so Q's buffer
  // and the unit slot can take the next unit) and unit_slot.  The counters
  // (next unit, blocks done) start at zero (the workspace is allocated
  // zeroed) and the last block to finish taking units zeroes them.
  const void *map_q = &a.tmap[0], *map_k = &a.tmap[1], *map_v = &a.tmap[2];
  const u32 bar_q_empty = bar_q + 8 * (1 + 3 * STAGES), unit_slot = bar_q_empty + 8;
  unsigned *sched = (unsigned *)a.ws;  // [0] units handed out past the first wave, [1] blocks done
  const int m_blocks = (a.seq_q + BM - 1) / BM, n_work = m_blocks * a.heads_q * a.batch;
  int m_block = 0, head = 0, batch = 0, kv_head = 0, m0 = 0, n_tiles = 0;
  // Makes unit w the current one.
  auto set_work = [&](int w) {
    const int mb = w % m_blocks, hb = w / m_blocks;
    m_block = CAUSAL ? m_blocks - 1 - mb : mb;   // causal: the longest rows first, as a grid would run them
    head = hb % a.heads_q;
    batch = hb / a.heads_q;
    kv_head = head / a.gqa;
    m0 = m_block * BM;
    n_tiles = key_tiles(m0, a);
  };
  if (threadIdx.x == 0) mbar_init(bar_q_empty, CONSUMERS * 128);   // fenced with the ring's below

  // Load K and V tile `tile` into ring slot `s`: one box per panel.
  auto load_kv_at = [&](int tile, int s) { load_kv_tile(bar_k(s), bar_v(s), sK, sV, map_k, map_v, tile, s, kv_head, batch); };
  auto load_q = [&]() { load_q_tile(bar_q, sQ, map_q, m0, head, batch); };

  // The ring's barriers: Q's, each slot's full K and V, and each slot's
  // empty barrier that every consumer thread arrives on (init_ring's text,
  // cuda/wgmma_ring.cuh: the call moved this kernel's SASS).
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

  // The producer: for each item, once the consumers are done with the last
  // one's Q, it writes the item to unit_slot and loads its Q (an item that
  // sees no key, or the end, only arrives on bar_q), then its K/V tiles.
  if (warp < 4) {                      // producer warpgroup
    if (REGS_PRODUCER) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(REGS_PRODUCER));
    if (threadIdx.x == 0) {
      int g = 0, units = 0;            // K/V tiles loaded, units handed to the consumers
      for (int w = blockIdx.x;; units++) {
        if (units > 0) mbar_wait(bar_q_empty, (units - 1) & 1);   // the last unit's S products are done
        asm volatile("st.shared.u32 [%0], %1;" :: "r"(unit_slot), "r"(w) : "memory");
        if (w >= n_work) { mbar_arrive(bar_q); break; }           // the end, read by the consumers
        // The next unit, asked for now so the answer is back by the last load.
        const int next = (int)atomicAdd(&sched[0], 1u) + gridDim.x;
        set_work(w);
        if (n_tiles > 0) load_q(); else mbar_arrive(bar_q);
        for (int t = 0; t < n_tiles; t++, g++) {
          const int slot = g % STAGES;
          if (g >= STAGES) mbar_wait(bar_empty(slot), (g / STAGES - 1) & 1);   // tile g - STAGES released
          load_kv_at(t, slot);
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
    // DEFERRED: the last unit's output, waiting to be stored.
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
      if (w >= n_work) break;
      set_work(w);
      const int warp_row0 = m0 + wg * 64 + (warp % 4) * 16;
      // init_accumulators' text (cuda/softmax.cuh): the call moved this kernel's SASS.
#pragma unroll
      for (int dt = 0; dt < DT; dt++) o[0][dt][0] = o[0][dt][1] = o[0][dt][2] = o[0][dt][3] = 0.f;
      row_max[0][0] = row_max[0][1] = MX_NEG_INF;
      row_sum[0][0] = row_sum[0][1] = 0.f;
      if (n_tiles == 0) {              // nothing to read: the slot is free, the output is 0
        mbar_arrive(bar_q_empty);
        if constexpr (DEFERRED) if (pending) store_output(pending_out, pending_lse, pending_o, a.o_ss, pending_lse_head, pending_row0, a.seq_q);
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
        mask_tile(s, 0, warp_row0, a);
        softmax_scores(s, row_max, row_sum, alpha, a.scale_log2);
        alpha[0] = alpha[1] = 1.f;       // O is still 0: nothing to rescale
        if constexpr (DEFERRED) if (pending) store_output(pending_out, pending_lse, pending_o, a.o_ss, pending_lse_head, pending_row0, a.seq_q);   // the last unit's output, under the other warpgroup's MMAs

        for (int t = 1; t < n_tiles; t++) {
          const int slot = (g + t) % STAGES, prev = (g + t - 1) % STAGES;
          // Close the last turn's P V: wait for it, release its slot, then
          // rescale O by S(t-1)'s alpha and pack P(t-1).
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
          mask_tile(s, t, warp_row0, a);
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
      // The unit's output: stored now, or packed to be stored during the
      // next unit.
      if constexpr (!DEFERRED) {
        u16 *o_head = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
        float *lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
        write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
      } else {
        pack_output(pending_out, pending_lse, o, row_max, row_sum);
        pending = true;
        pending_o = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
        pending_lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
        pending_row0 = warp_row0;
      }
      g += n_tiles;
    }
    if constexpr (DEFERRED) if (pending) store_output(pending_out, pending_lse, pending_o, a.o_ss, pending_lse_head, pending_row0, a.seq_q);
  }
}
