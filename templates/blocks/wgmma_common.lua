-- Pieces every warpgroup-MMA kernel shares, as text: the wgmma fences and
-- the register pins around them, and the set-up of the TMA ring's barriers
-- (Q's, each slot's full K and V, and each slot's empty barrier that every
-- consumer thread arrives on).
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

return C
