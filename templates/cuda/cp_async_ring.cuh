// The cp.async ring of the mma.sync kernels: STAGES K/V tiles in flight.
// kv_ring_start issues the first STAGES-1 tiles; kv_ring_next, at the top of
// key tile t's iteration, issues tile t+STAGES-1, then waits until tile t has
// landed.  Every iteration commits a group, empty or not, so "at most
// STAGES-1 groups pending" always means "tile t is here".  load_kv(tile)
// issues (without committing) one stage's copies.
template <typename LoadKV>
MX_INLINE void kv_ring_start(LoadKV &&load_kv, int n_tiles) {
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < n_tiles) load_kv(s);
    cp_async_commit();
  }
}

template <typename LoadKV>
MX_INLINE void kv_ring_next(LoadKV &&load_kv, int t, int n_tiles) {
  if (t + STAGES - 1 < n_tiles) load_kv(t + STAGES - 1);
  cp_async_commit();                   // possibly empty: keeps the group count uniform
  cp_async_wait<STAGES - 1>();         // tile t has landed
  __syncthreads();
}
