// The ping-pong (families/f16_wgmma.lua, overlap=1; sm_90a): step 2 of
// cuda/fwd_wgmma.cuh (a producer warpgroup and two consumers) with the two
// consumer warpgroups taking turns on the tensor cores (cuda/wgmma_turns.cuh:
// sched_wait, sched_pass).
//
// Intra-warpgroup overlap.  Turn t issues S(t) = Q K(t)^T and then
// O += P(t-1) V(t-1) as two commit groups; wgmma.wait_group 1 lets the
// softmax of S(t) start while P(t-1) V(t-1) still runs.  The softmax is
// split: softmax_scores updates the row max and sum and returns the factor
// alpha by which O must shrink; rescale_o applies it once the P V group is
// done (wait_group 0).  Live across a turn: O, S(t) and P(t-1) packed.
//
// Where that wait stands.  At the end of the loop body (after the softmax)
// ptxas hoisted it above the softmax, which then ran after P V instead of
// under it (ncu on the H200: 14% of the consumers' samples stalled on it).
// So the wait, O's rescale and P's packing head the next turn instead, where
// the loop's back edge keeps them after the softmax: +3.5-4% for the f16
// kernels (H200, 2026-11-29; bench/NOTES.md).  S(t) then holds P(t) across
// the turn boundary.
//
// Turn 0 issues S(0) only, turn t >= 1 S(t) and P(t-1) V(t-1), the last P V
// runs outside the turns (take_turns, cuda/wgmma_turns.cuh).  Both warpgroups walk all n_tiles (masking what
// their rows do not see), so they take the same number of turns.
//
// Reads the header's constants as cuda/fwd_wgmma.cuh does (PRODUCER true,
// CONSUMERS 2), SCHED_BAR, and KERNEL_NAME; and the blocks before it:
// prelude, tma_mbarrier, wgmma_f16, softmax, epilogue, tma_block, wgmma_ring,
// wgmma_f16_tile, wgmma_turns.

extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {
  // Shared memory: Q, then the ring's K and V slots, then the barriers.
  extern __shared__ __align__(1024) u8 smem[];
  const GridBlock b = grid_block_start(smem, a);   // cuda/wgmma_ring.cuh: tiles, barriers, copies
  const int warp = b.warp;

  if (warp < 4) {                      // producer warpgroup
    producer_registers();
    if (threadIdx.x == 0) produce_tiles(b);   // cuda/tma_block.cuh
  } else {                             // consumer warpgroups, taking turns
    consumer_registers();
    const ConsumerWarp c = consumer_warp(b);   // cuda/wgmma_f16_tile.cuh: its rows and descriptors
    const int warp_row0 = b.m0 + c.row_in_block;
    float o[1][DT][4], row_max[1][2], row_sum[1][2];
    init_accumulators(o, row_max, row_sum);
    mbar_wait(b.bar_q, 0);
    if (b.n_tiles > 0) take_turns(o, row_max, row_sum, c.d, b, 0, 0, b.n_tiles, c.wg, warp_row0, a, [] {}, [] {});
    u16 *o_head = (u16 *)a.o + b.batch * a.o_sb + b.head * a.o_sh;
    float *lse_head = a.lse + ((i64)b.batch * a.heads_q + b.head) * a.seq_q;
    write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
  }
}
