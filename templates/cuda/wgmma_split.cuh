// The end of a piece of a split work unit (split=1, cuda/fwd_wgmma_persistent.cuh).
// Reads the kernel's DT, CONSUMERS and MAX_PIECES (more blocks than this do
// not split; the workspace holds this many pieces' counters and partials:
// blocks/wgmma_common.lua, split_workspace).
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
