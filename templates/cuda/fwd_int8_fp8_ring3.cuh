// int8-fp8's wgmma forward as a ring (overlap=3): three consumer warpgroups of one block (block_m=192,
// warps=12, no producer) take turns on the tensor pipe, a token passed
// around named barriers RING_BAR + w (256 threads: the warpgroup's own 128
// bar.sync, the previous one's 128 bar.arrive).  A warpgroup's turn for tile
// t issues P(t-1) V(t-1), waits for it and folds it into O, then issues S(t)
// and passes the token on; S(t)'s wait and the softmax run outside the turn,
// under the other two warpgroups' turns (each a P V and an S: 512 tensor
// clocks at BN=128, D=128).  The block's turns run A(t), B(t), C(t), A(t+1):
// warpgroup 2 kicks off (an arrive on warpgroup 0's barrier) and skips the
// block's last pass, so each barrier sees as many arrives as syncs; each
// warpgroup's last turn is its last P V.  The ring's slots are freed through
// the empty mbarriers (a block barrier would put the warpgroups back in
// step); warpgroup 2, whose turn has each tile's last P V, refills them as
// it passes the token.  Three free blocks an SM measured ~1040 clocks a
// tile, the tensor pipe's and MUFU's sum (bench/NOTES.md, "The next lever").
// The first form of the ring, a turn for each S and each P V (A.S(t),
// B.PV(t-1), C.S(t), A.PV(t), ...), gave each softmax two half turns (512
// clocks) where it takes ~1000, and measured 7-8% slower than this one at
// D=128 and 10% at D=64 (H200, 2026-11-30); this one measured
// 1-3% faster than the shared ring at D=128 N=16384 and 2% slower at
// N=4096 (the same runs; WG.default).
//
// Reads the header's constants and blocks as cuda/fwd_int8_fp8_wgmma.cuh
// (which says what the kernel computes, and whose set-up this one repeats).

constexpr int RING_BAR = 1;   // named barriers RING_BAR + consumer warpgroup (0 is __syncthreads')
MX_INLINE void ring_wait(int wg) { asm volatile("bar.sync %0, 256;" :: "r"(RING_BAR + wg) : "memory"); }
MX_INLINE void ring_pass(int wg) {
  asm volatile("bar.arrive %0, 256;" :: "r"(RING_BAR + (wg + 1) % CONSUMERS) : "memory");
}

// Grid (nqp / BM, heads_q, batch).  Causal grids run the heaviest query blocks first.
extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {
  extern __shared__ __align__(1024) u8 smem[];
  const Block b = block_start(smem, a);   // cuda/int8_fp8_block.cuh: tiles, barriers, copies
  const int warp = b.warp, n_tiles = b.n_tiles;

  if (warp == 0 && elect_one()) {
    b.load_q();
    for (int s = 0; s < STAGES && s < n_tiles; s++) b.load_kv(s);
  }
  const Consumer c = consumer_start(b, a);   // cuda/int8_fp8_block.cuh: scales, descriptors
  const int wg = c.wg;
  float o[1][DT][4], row_max[1][2], row_sum[1][2];
  init_accumulators(o, row_max, row_sum);
  mbar_wait(b.bar_q, 0);

  const bool refills = warp == 8 && elect_one();   // warpgroup 2's: its turn holds each tile's last P V
  int t = 0;                                         // the loop's, read by pass (the refill after S(t)'s issue)
  const auto pass = [&] {
    ring_pass(wg);
    if (refills && t > 0 && t - 1 + STAGES < n_tiles) {
      mbar_wait(b.bar_empty((t - 1) % STAGES), ((t - 1) / STAGES) & 1);
      b.load_kv(t - 1 + STAGES);
    }
  };
  if (wg == 2) ring_pass(wg);                        // the kick-off: warpgroup 0 takes the first turn
  u32 pa[BN / 32][4];
  float alphas[1][2];
  for (; t <= n_tiles; t++) {
    ring_wait(wg);
    if (t > 0) {
      const int ps = (t - 1) % STAGES;
      tile_pv(o, row_sum, pa, alphas, c.desc_v + ps * (V_BYTES / 16), b.bar_v(ps), ((t - 1) / STAGES) & 1, c.desc_ones, [] {});
      mbar_arrive(b.bar_empty(ps));                    // this thread is done with the slot's K and V
    }
    if (t == n_tiles) {
      if (wg != 2) ring_pass(wg);                    // warpgroup 2's would be one pass too many
      break;
    }
    const int slot = t % STAGES;
    tile_scores(pa, alphas, row_max, row_sum, c.desc_q, c.desc_k + slot * (K_BYTES / 16), b.bar_k(slot), (t / STAGES) & 1, t,
                c.warp_row0, c.qscale, c.ks, a, pass);
  }
  finish_rows(o, row_max, row_sum, a, b.qh, b.kh, b.nqp, b.batch, b.head, c.warp_row0);
}
