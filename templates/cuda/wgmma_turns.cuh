// The ping-pong's pieces (cuda/fwd_wgmma_pingpong.cuh and
// fwd_wgmma_persistent.cuh): the turns on the tensor cores of the two consumer
// warpgroups, and the online softmax split in two around a turn.  Reads the
// kernel's NT, DT and SCHED_BAR (the first of the two named barriers, not 0:
// __syncthreads).
//
// Inter-warpgroup ping-pong.  Each consumer warpgroup w owns named barrier
// SCHED_BAR + w (256 threads: its own 128 bar.sync there, the other
// warpgroup's 128 bar.arrive there).  A warpgroup issues its MMAs only between
// sched_wait (bar.sync on its own barrier) and sched_pass (bar.arrive on the
// other's), so the two warpgroups take turns on the tensor cores and the
// exponentials of one run under the other's MMAs.  Warpgroup 1 passes once
// before its first turn (the kick-off: warpgroup 0 goes first) and not after
// its last, so over n turns each barrier sees n bar.syncs and n bar.arrives:
// none is left waiting at exit.  A warpgroup cannot arrive twice on one
// barrier generation: its next pass comes after its next wait, which needs
// the other warpgroup's pass, which comes after that warpgroup's wait.
// Waits for this warpgroup's turn on the tensor cores.
MX_INLINE void sched_wait(int wg) { asm volatile("bar.sync %0, 256;" :: "r"(SCHED_BAR + wg) : "memory"); }
// Hands the turn to the other warpgroup (does not wait).
MX_INLINE void sched_pass(int wg) { asm volatile("bar.arrive %0, 256;" :: "r"(SCHED_BAR + 1 - wg) : "memory"); }

// The online softmax of one tile without touching O: S becomes P against the
// new row maximum, the running sum is rescaled and extended, and alpha[h] is
// what O's rows must be multiplied by (exp2(old max - new max)).
MX_INLINE void softmax_scores(float (&s)[1][NT][4], float (&row_max)[1][2], float (&row_sum)[1][2], float (&alpha)[2],
                              float scale_log2) {
#pragma unroll
  for (int h = 0; h < 2; h++) {
    float m = MX_NEG_INF;
#pragma unroll
    for (int nt = 0; nt < NT; nt++) m = fmaxf(m, fmaxf(s[0][nt][2 * h], s[0][nt][2 * h + 1]));
    m = fmaxf(row_max[0][h], quad_max(m) * scale_log2);
    // A row that has seen only masked keys keeps max -inf; subtracting 0
    // instead keeps exp2 at 0 rather than NaN.
    const float base = m == MX_NEG_INF ? 0.f : m;
    alpha[h] = fast_exp2(row_max[0][h] - base);
    row_max[0][h] = m;
    float sum = 0.f;
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
      for (int e = 2 * h; e < 2 * h + 2; e++) {
        s[0][nt][e] = fast_exp2(fmaf(s[0][nt][e], scale_log2, -base));
        sum += s[0][nt][e];
      }
    row_sum[0][h] = row_sum[0][h] * alpha[h] + sum;
  }
}

// O *= alpha per row half, skipped when no lane of the warp needs it.
MX_INLINE void rescale_o(float (&o)[1][DT][4], const float (&alpha)[2]) {
#pragma unroll
  for (int h = 0; h < 2; h++)
    if (__any_sync(0xffffffffu, alpha[h] != 1.f))
#pragma unroll
      for (int dt = 0; dt < DT; dt++) { o[0][dt][2 * h] *= alpha[h]; o[0][dt][2 * h + 1] *= alpha[h]; }
}

// One work unit's turns for a consumer warpgroup, as cuda/fwd_wgmma_pingpong.cuh
// describes them: key tiles tile0 .. tile0 + n_tiles - 1 (n_tiles > 0), at
// ring positions g .. g + n_tiles - 1 of the producer's count.  q_done() runs
// once the unit's last S = Q K^T is complete (a persistent kernel's Q buffer
// may then take the next unit), after_first() after the first tile's
// softmax (where a deferred store of the last unit's output goes, under the
// other warpgroup's MMAs).  Reads STAGES, KV_BYTES, BN, NT, DT.
template <class QDone, class AfterFirst>
MX_INLINE void take_turns(float (&o)[1][DT][4], float (&row_max)[1][2], float (&row_sum)[1][2], const Descs &d,
                          const TmaBlock &b, int g, int tile0, int n_tiles, int wg, int warp_row0,
                          const mx_kernel_args &a, QDone q_done, AfterFirst after_first) {
  float s[1][NT][4], alpha[2];
  u32 pa[BN / 16][4];
  if (wg == 1) sched_pass(wg);         // kick-off: warpgroup 0 takes the first turn

  // Turn 0: S(0) only.
  mbar_wait(b.bar_k(g % STAGES), (g / STAGES) & 1);
  sched_wait(wg);
  issue_qk(s, d.q, d.k + g % STAGES * KV_BYTES / 16);
  if (wg == 0 || n_tiles > 1) sched_pass(wg);   // warpgroup 1 does not pass after its last turn
  wgmma_wait<0>();
  reg_fence(s);
  if (n_tiles == 1) q_done();
  mask_tile(s, tile0, warp_row0, a);
  softmax_scores(s, row_max, row_sum, alpha, a.scale_log2);
  alpha[0] = alpha[1] = 1.f;           // O is still 0: nothing to rescale
  after_first();

  for (int t = 1; t < n_tiles; t++) {
    const int slot = (g + t) % STAGES, prev = (g + t - 1) % STAGES;
    // Close the last turn's P V: wait for it, release its slot, then
    // rescale O by S(t-1)'s alpha and pack P(t-1).
    wgmma_wait<0>();
    reg_fence(o);
    if (t > 1) mbar_arrive(b.bar_empty((g + t - 2) % STAGES));   // this thread's MMAs on that slot are complete
    rescale_o(o, alpha);
    pack_p(pa, s);
    mbar_wait(b.bar_k(slot), ((g + t) / STAGES) & 1);
    mbar_wait(b.bar_v(prev), ((g + t - 1) / STAGES) & 1);
    sched_wait(wg);
    issue_qk(s, d.q, d.k + slot * KV_BYTES / 16);      // S(t) = Q K(t)^T
    issue_pv(o, pa, d.v + prev * KV_BYTES / 16);       // O += P(t-1) V(t-1)
    if (wg == 0 || t + 1 < n_tiles) sched_pass(wg);
    wgmma_wait<1>();                   // S(t) is done; P(t-1) V(t-1) may still run
    reg_fence(s);
    if (t + 1 == n_tiles) q_done();
    mask_tile(s, tile0 + t, warp_row0, a);
    softmax_scores(s, row_max, row_sum, alpha, a.scale_log2);
  }

  // The last P V, outside the turns.
  wgmma_wait<0>();
  reg_fence(o);
  if (n_tiles > 1) mbar_arrive(b.bar_empty((g + n_tiles - 2) % STAGES));   // this thread's MMAs on that slot are complete
  rescale_o(o, alpha);
  pack_p(pa, s);
  const int last = (g + n_tiles - 1) % STAGES;
  mbar_wait(b.bar_v(last), ((g + n_tiles - 1) / STAGES) & 1);
  issue_pv(o, pa, d.v + last * KV_BYTES / 16);
  wgmma_wait<0>();
  reg_fence(o);
  mbar_arrive(b.bar_empty(last));
}
