// int8-fp8's wgmma forward with consumer warpgroups sharing the K/V ring
// (block_m=128|192|256 without a producer, overlap=0): the consumer
// warpgroups share each K/V tile (a third of the L2-to-SM traffic of three
// one-warpgroup blocks at block_m=192, a quarter at 256) without meeting at
// a block barrier.
// Each warp, once its wait for the tile's P V has returned (attend_tile's
// last MMA wait: the slot's reads are complete), adds one to the slot's
// release counter with acq_rel order, and the warp that brings the count to
// a use's last arrival refills the slot with tile t + STAGES: nobody waits
// for the slowest warpgroup but the tile STAGES ahead, so the warpgroups
// drift apart by up to STAGES - 1 tiles and their softmaxes need not meet.
// (The one-warpgroup kernel's block barrier is a warpgroup's own; f16's
// multi-consumer kernels keep theirs.)  Warpgroups whose 64 rows all lie
// past the queries leave at once and count out of the releases.
//
// Reads the header's constants and blocks as cuda/fwd_int8_fp8_wgmma.cuh
// (which says what the kernel computes, and whose set-up this one repeats), and SM_RELEASED.

// A warp is done with a ring slot's tile: one more on the slot's count
// (acq_rel: this warp's reads of the slot, complete at its MMA wait, happen
// before the refill that the last arrival issues).  The count before it.
MX_INLINE u32 release_slot(u32 counter) {
  u32 old;
  asm volatile("atom.acq_rel.cta.shared::cta.add.u32 %0, [%1], 1;" : "=r"(old) : "r"(counter) : "memory");
  return old;
}

// Grid (nqp / BM, heads_q, batch).  Causal grids run the heaviest query blocks first.
extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {
  extern __shared__ __align__(1024) u8 smem[];
  const Block b = block_start(smem, a);   // cuda/int8_fp8_block.cuh: tiles, barriers, copies
  const int warp = b.warp, n_tiles = b.n_tiles;

  const u32 released = b.base + SM_RELEASED;     // a u32 a slot: warps done with the slot's current tile
  if (threadIdx.x < STAGES) asm volatile("st.shared.u32 [%0], 0;" :: "r"(released + 4 * threadIdx.x) : "memory");
  __syncthreads();
  const int live = min(CONSUMERS, (a.seq_q - b.m0 + 63) / 64);   // >= 1: m0 < seq_q
  if (warp == 0 && elect_one()) {
    b.load_q();
    for (int s = 0; s < STAGES && s < n_tiles; s++) b.load_kv(s);
  }
  if (warp / 4 >= live) return;                // rows past the queries (never warpgroup 0, whose warp 0 loads)
  const Consumer c = consumer_start(b, a);   // cuda/int8_fp8_block.cuh: scales, descriptors
  const int wg = c.wg;
  float o[1][DT][4], row_max[1][2], row_sum[1][2];
  init_accumulators(o, row_max, row_sum);
  mbar_wait(b.bar_q, 0);

  // last_count: the count before the last arrival of the current use of
  // tile t's slot, one more use every STAGES tiles.  A remainder by the
  // run-time live (count % (4 * live)) cost ~20 instructions a warp and a
  // tile; last_release(t, live) spends a multiply instead, which ptxas
  // scheduled 3.4% slower at D=128 N=16384, the running count 0.5% (and
  // 2.2% faster at N=4096; H200, 2026-11-30).
  u32 last_count = 4 * live - 1;
  for (int t = 0; t < n_tiles; t++) {
    const int slot = t % STAGES;
    attend_tile(o, row_max, row_sum, c.desc_q, c.desc_k + slot * (K_BYTES / 16), c.desc_v + slot * (V_BYTES / 16),
                b.bar_k(slot), b.bar_v(slot), (t / STAGES) & 1, t, c.warp_row0, c.qscale, c.ks, c.desc_ones, a);
    if (t + STAGES < n_tiles && elect_one() && release_slot(released + 4 * slot) == last_count)
      b.load_kv(t + STAGES);
    if (slot == STAGES - 1) last_count += 4 * live;
  }
  finish_rows(o, row_max, row_sum, a, b.qh, b.kh, b.nqp, b.batch, b.head, c.warp_row0);
}
