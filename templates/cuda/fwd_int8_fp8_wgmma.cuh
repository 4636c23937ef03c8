// int8-fp8's attention forward on Hopper (variant=wgmma, sm_90a): SageAttention2's
// quantization on warpgroup MMAs, FlashAttention-3 style.  The quant kernels
// (cuda/quant_kernels.cuh) run first and fill the workspace (Q8 per 16 rows
// pre-scaled to base 2, K8 - mean per 16 keys, V^T in E4M3 per channel with
// permuted keys); then, per key tile (cuda/attend_int8_fp8.cuh):
//   TMA brings Q8 (once), K8 and V^T tiles (a STAGES-deep ring, mbarriers)
//   from the workspace sections q8, k8 and v8t;
//   S = Q8 K8^T is a wgmma m64n<BN>k32 s8, scaled by the row block's Q scale
//   and each 16-key group's K scale; the online softmax runs on S's s32
//   fragments; P*448 -> E4M3 in registers, and P V^T is a wgmma m64n<DV>k32
//   e4m3 into its own fp32 accumulator that is added to O; with V_TERMS = 2 a
//   second k-loop over V's second E4M3 term adds into it;
//   V's channel scale in the epilogue, where the 448 of P cancels against the
//   row sum's.
//
// This file is two schedules of BM = 64 * CONSUMERS rows a block:
//   PRODUCER false  every warpgroup consumes; one lane of warp 0 also issues
//                   the copies, and a block barrier per key tile frees the
//                   ring slot (with one warpgroup, 3 or 4 blocks an SM:
//                   MIN_BLOCKS);
//   PRODUCER true   warpgroup 0 only issues TMA copies (full/empty mbarriers
//                   per slot, setmaxnreg), the consumers never meet at a
//                   block barrier.
// cuda/fwd_int8_fp8_ring.cuh (consumers sharing the ring without a producer)
// and fwd_int8_fp8_ring3.cuh (overlap=3) are the others.
//
// Reads the header's constants (KERNEL_NAME, D32, DV, BM, BN, THREADS,
// STAGES, CONSUMERS, PRODUCER, REGS_PRODUCER, REGS_CONSUMER, MIN_BLOCKS, WQK,
// PANELS_QK, SWZ_QK, SWZ_V, Q_BYTES, K_BYTES, V_BYTES, SM_*, ROWSUM_MMA,
// ONES_BYTES, DT, CAUSAL, V_SLOTS, the WS_ sections) and the blocks before it.

// Grid (nqp / BM, heads_q, batch).  Causal grids run the heaviest query blocks first.
extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS) KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {
  extern __shared__ __align__(1024) u8 smem[];
  const Block b = block_start(smem, a);   // cuda/int8_fp8_block.cuh: tiles, barriers, copies
  const int warp = b.warp, n_tiles = b.n_tiles;
  // The copies at the top of iteration t of the one-warpgroup kernel: K (and
  // V) of tile t + STAGES - 1; with one V slot, also V of tile t itself into
  // the slot that the last iteration's block barrier has just freed.  Its
  // copy then runs under S(t) = Q K(t)^T and the softmax.
  auto load_next = [&](int t, int n_tiles) {
    if (t + STAGES - 1 < n_tiles) b.load_kv(t + STAGES - 1);
    if (V_SLOTS == 1) b.load_v(t);
  };

  if constexpr (PRODUCER) {
    if (warp < 4) {                    // producer warpgroup
      producer_registers();
      if (threadIdx.x == 0) produce_tiles(b);   // cuda/tma_block.cuh
      return;
    }
    consumer_registers();
  } else if (warp == 0 && elect_one()) {
    // `warp == 0 && elect_one()`, not `threadIdx.x == 0`: under the latter the
    // compiler predicated the issuing code (with a loop that makes the copy's
    // operands uniform) in every warp, ~55 of ~640 instructions a warp and a
    // tile, and 11% of the stall samples (H200, 2026-11-29).
    b.load_q();
    for (int s = 0; s < STAGES - 1 && s < n_tiles; s++) b.load_kv(s);
  }
  const Consumer c = consumer_start(b, a);   // cuda/int8_fp8_block.cuh: scales, descriptors
  float o[1][DT][4], row_max[1][2], row_sum[1][2];
  init_accumulators(o, row_max, row_sum);
  mbar_wait(b.bar_q, 0);

  for (int t = 0; t < n_tiles; t++) {
    if constexpr (!PRODUCER) {
      if (warp == 0 && elect_one()) load_next(t, n_tiles);
    }
    const int slot = t % STAGES, v_slot = PRODUCER ? slot : slot % V_SLOTS;
    attend_tile(o, row_max, row_sum, c.desc_q, c.desc_k + slot * K_BYTES / 16, c.desc_v + v_slot * V_BYTES / 16,
                b.bar_k(slot), b.bar_v(v_slot), (t / STAGES) & 1, t, c.warp_row0, c.qscale, c.ks, c.desc_ones, a);
    if constexpr (PRODUCER) mbar_arrive(b.bar_empty(slot));   // this thread's MMAs on the slot are complete
    else __syncthreads();                                   // every warpgroup is done with this slot
  }
  finish_rows(o, row_max, row_sum, a, b.qh, b.kh, b.nqp, b.batch, b.head, c.warp_row0);
}
