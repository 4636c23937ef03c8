-- Thread block clusters (sm_90): a block's rank, the cluster-wide address of
-- another block's shared memory, cluster barriers, and the TMA copy that
-- lands in several blocks at once.  Rendered only into kernels launched as
-- clusters (int8-fp8's cluster=2), so every other source stays as it was
-- (test_overlap0_source_is_pinned pins f16's; bench/NOTES.md, 2026-11-30,
-- for why an unchanged kernel's text matters).  Uses tma_mbarrier's
-- types and barriers.
return function()
  return [[
// The same box into the shared memory of every block of the cluster named in
// `mask` (a bit a rank), at dst's offset in each, each copy completing on the
// barrier at bar's offset in its own block: one L2 read for all of them.
MX_INLINE void tma_load_4d_multicast(u32 dst, const void *map, int c0, int c1, int c2, int c3, u32 bar, u16 mask) {
  asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%2, %3, %4, %5}], [%6], %7;"
               :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar), "h"(mask) : "memory");
}
// Thread block clusters.  A block's rank in its cluster; the cluster-wide
// address of `local` (a shared::cta address) in the block of rank `rank`.
MX_INLINE u32 cluster_rank() {
  u32 rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}
MX_INLINE u32 cluster_addr(u32 local, u32 rank) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  return remote;
}
// Every thread of the cluster: what each wrote before is visible to all after.
MX_INLINE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// A cluster barrier that publishes nothing (relaxed: no memory fence), only
// keeps each block alive until every block has arrived; and its arrival
// alone, for threads that leave without waiting.
MX_INLINE void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); }
MX_INLINE void cluster_sync_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
]]
end
