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
