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
