// The ping-pong (families/f16_wgmma.lua, overlap=1; sm_90a): step 2 of
// cuda/fwd_wgmma.cuh (a producer warpgroup and two consumers) with the two
// consumer warpgroups taking turns on the tensor cores (cuda/wgmma_turns.cuh:
// sched_wait, sched_pass).
//
// Intra-warpgroup overlap.  Turn t issues S(t) = Q K(t)^T and then
// O += P(t-1) V(t-1) as two commit groups; wgmma.wait_group 1 lets the
// softmax of S(t) start while P(t-1) V(t-1) still runs.  The softmax is
// split: softmax_scores updates the row max and sum and returns the factor
// alpha by which O must shrink; rescale_o applies it once the P V group is
// done (wait_group 0).  Live across a turn: O, S(t) and P(t-1) packed.
//
// Where that wait stands.  At the end of the loop body (after the softmax)
// ptxas hoisted it above the softmax, which then ran after P V instead of
// under it (ncu on the H200: 14% of the consumers' samples stalled on it).
// So the wait, O's rescale and P's packing head the next turn instead, where
// the loop's back edge keeps them after the softmax: +3.5-4% for the f16
// kernels (H200, 2026-11-29; bench/NOTES.md).  S(t) then holds P(t) across
// the turn boundary.
//
// Turn 0 issues S(0) only, turn t >= 1 S(t) and P(t-1) V(t-1), the last P V
// runs outside the turns.  Both warpgroups walk all n_tiles (masking what
// their rows do not see), so they take the same number of turns.
//
// Reads the header's constants as cuda/fwd_wgmma.cuh does (PRODUCER true,
// CONSUMERS 2), SCHED_BAR, and KERNEL_NAME; and the blocks before it:
// prelude, tma_mbarrier, wgmma_f16, softmax, epilogue, wgmma_ring, wgmma_f16_tile,
// wgmma_turns.

extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {
  // Shared memory: Q, then the ring's K and V slots, then the barriers.
  extern __shared__ __align__(1024) u8 smem[];
  const GridBlock b = grid_block_start(smem, a);   // cuda/wgmma_ring.cuh: tiles, barriers, copies
  const u32 sQ = b.sQ, sK = b.sK, sV = b.sV, bar_q = b.bar_q;
  const int warp = b.warp, head = b.head, batch = b.batch, m0 = b.m0, n_tiles = b.n_tiles;

  if (warp < 4) {                      // producer warpgroup
    if (REGS_PRODUCER) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(REGS_PRODUCER));
    if (threadIdx.x == 0) {
      b.load_q();
      for (int t = 0; t < n_tiles; t++) {
        const int slot = t % STAGES;
        if (t >= STAGES) mbar_wait(b.bar_empty(slot), (t / STAGES - 1) & 1);   // tile t - STAGES released
        b.load_kv(t);
      }
    }
  } else {                             // consumer warpgroups, taking turns
    if (REGS_CONSUMER) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(REGS_CONSUMER));
    const int wg = warp / 4 - (PRODUCER ? 1 : 0);          // consumer warpgroup index
    const int warp_row0 = m0 + wg * 64 + (warp % 4) * 16;
    float o[1][DT][4], row_max[1][2], row_sum[1][2];
    init_accumulators(o, row_max, row_sum);
    // Descriptors of this warpgroup's 64 Q rows and of ring slot 0's K and V;
    // a k-step or a slot only adds to the start address (the low 14 bits).
    const u64 desc_q = smem_desc(sQ + wg * 64 * ROW_BYTES, 16, 8 * ROW_BYTES);
    const u64 desc_k = smem_desc(sK, 16, 8 * ROW_BYTES);
    const u64 desc_v = smem_desc(sV, BN * ROW_BYTES, 8 * ROW_BYTES);
    mbar_wait(bar_q, 0);

    if (n_tiles > 0) {
      float s[1][NT][4], alpha[2];
      u32 pa[BN / 16][4];
      if (wg == 1) sched_pass(wg);     // kick-off: warpgroup 0 takes the first turn

      // Turn 0: S(0) only.
      mbar_wait(b.bar_k(0), 0);
      sched_wait(wg);
      issue_qk(s, desc_q, desc_k);
      if (wg == 0 || n_tiles > 1) sched_pass(wg);   // warpgroup 1 does not pass after its last turn
      wgmma_wait<0>();
      reg_fence(s);
      mask_tile(s, 0, warp_row0, a);
      softmax_scores(s, row_max, row_sum, alpha, a.scale_log2);
      alpha[0] = alpha[1] = 1.f;       // O is still 0: nothing to rescale

      for (int t = 1; t < n_tiles; t++) {
        const int slot = t % STAGES, prev = (t - 1) % STAGES;
        // Close the last turn's P V: wait for it, release its slot, then
        // rescale O by S(t-1)'s alpha and pack P(t-1).
        wgmma_wait<0>();
        reg_fence(o);
        if (t > 1) {
          mbar_arrive(b.bar_empty((t - 2) % STAGES));   // this thread's MMAs on that slot are complete
        }
        rescale_o(o, alpha);
        pack_p(pa, s);
        mbar_wait(b.bar_k(slot), (t / STAGES) & 1);
        mbar_wait(b.bar_v(prev), ((t - 1) / STAGES) & 1);
        sched_wait(wg);
        issue_qk(s, desc_q, desc_k + slot * KV_BYTES / 16);                 // S(t) = Q K(t)^T
        issue_pv(o, pa, desc_v + prev * KV_BYTES / 16);                     // O += P(t-1) V(t-1)
        if (wg == 0 || t + 1 < n_tiles) sched_pass(wg);
        wgmma_wait<1>();               // S(t) is done; P(t-1) V(t-1) may still run
        reg_fence(s);
        mask_tile(s, t, warp_row0, a);
        softmax_scores(s, row_max, row_sum, alpha, a.scale_log2);
      }

      // The last P V, outside the turns.
      wgmma_wait<0>();
      reg_fence(o);
      if (n_tiles > 1) {
        mbar_arrive(b.bar_empty((n_tiles - 2) % STAGES));   // this thread's MMAs on that slot are complete
      }
      rescale_o(o, alpha);
      pack_p(pa, s);
      const int last = (n_tiles - 1) % STAGES;
      mbar_wait(b.bar_v(last), ((n_tiles - 1) / STAGES) & 1);
      issue_pv(o, pa, desc_v + last * KV_BYTES / 16);
      wgmma_wait<0>();
      reg_fence(o);
      mbar_arrive(b.bar_empty(last));
    }
    u16 *o_head = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
    float *lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
    write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
  }
}
