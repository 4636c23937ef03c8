// The warpgroup MMAs' fences and waits, and the pins that keep accumulator
// and operand registers in program order around them: shared by the bf16/fp16
// (cuda/wgmma_f16.cuh) and the 8-bit (cuda/wgmma_int8.cuh) wgmma blocks.
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
template <int C> MX_INLINE void reg_fence(int (&d)[1][C][4]) {
#pragma unroll
  for (int j = 0; j < C; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) asm volatile("" : "+r"(d[0][j][e]) :: "memory");
}
MX_INLINE void reg_fence(u32 &x) { asm volatile("" : "+r"(x) :: "memory"); }
