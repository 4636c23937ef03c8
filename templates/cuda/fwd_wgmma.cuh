// The Hopper forward (families/f16_wgmma.lua, variant=wgmma, overlap=0;
// sm_90a), FlashAttention-3 style.  Each consumer warpgroup owns 64 query
// rows; S = Q K^T is a warpgroup MMA with Q and K in shared memory, the online
// softmax runs on S's accumulator fragments, and O += P V takes P from
// registers and V from shared memory.  Q (once) and the K and V tiles (a
// STAGES-deep ring) arrive by TMA, completing on mbarriers.
//
// One kernel, two schedules, by PRODUCER (warps = 4 * consumers, or that
// plus 4):
//   step 1 (PRODUCER false): every warpgroup consumes; one lane of warp 0
//     also issues the copies, refilling a slot after the block barrier that
//     ends the iteration which read it.  `warp == 0 && elect_one()`, not
//     `threadIdx.x == 0`: under the latter the compiler predicated the issuing
//     code (with a loop that makes the copy's operands uniform) in every warp,
//     ~55 of int8-fp8's ~640 instructions a warp and a tile, and 11% of its
//     stall samples (H200, 2026-11-29).
//   step 2 (PRODUCER true): warp specialization.  Warpgroup 0 only issues
//     copies (one thread), waiting on each slot's `empty` barrier before
//     refilling it, and gives its registers to the consumers (setmaxnreg); the
//     consumer warpgroups never meet at a block barrier, so one's softmax
//     overlaps the other's MMAs.
//
// Reads the header's constants: D, D_PAD, BM, BN, WARPS, THREADS, STAGES,
// CONSUMERS, PRODUCER, REGS_PRODUCER, REGS_CONSUMER, W, ROW_BYTES, PANELS,
// Q_BYTES, KV_BYTES, SM_Q, SM_K, SM_V, SM_BAR, MT, KD, NT, DT, CAUSAL,
// WRITE_LSE and KERNEL_NAME, the kernel's symbol; and the blocks before it:
// prelude, tma_mbarrier, wgmma_f16, softmax, epilogue, wgmma_ring,
// wgmma_f16_tile.

// S = Q K^T, mask, online softmax, O += P V for key tile t, whose K and V sit
// in the ring slot the descriptors point at (their barriers: bar_k, bar_v).
MX_INLINE void attend_tile(float (&o)[1][DT][4], float (&row_max)[1][2], float (&row_sum)[1][2], u64 desc_q,
                           u64 desc_k, u64 desc_v, u32 bar_k, u32 bar_v, u32 parity, int t, int warp_row0,
                           const mx_kernel_args &a) {
  float s[1][NT][4];
  mbar_wait(bar_k, parity);
  issue_qk(s, desc_q, desc_k);         // S = Q K^T
  wgmma_wait<0>();
  reg_fence(s);

  // Mask the tile's tail and, under causal, keys past the diagonal.
  mask_tile(s, t, warp_row0, a);

  online_softmax(s, row_max, row_sum, o, a.scale_log2);

  // P to the A operand in registers, then O += P V.
  u32 pa[BN / 16][4];
  pack_p(pa, s);
  mbar_wait(bar_v, parity);
  issue_pv(o, pa, desc_v);
  wgmma_wait<0>();
  reg_fence(o);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {
  // Shared memory: Q, then the ring's K and V slots, then the barriers.
  extern __shared__ __align__(1024) u8 smem[];
  const GridBlock b = grid_block_start(smem, a);   // cuda/wgmma_ring.cuh: tiles, barriers, copies
  const int warp = b.warp, n_tiles = b.n_tiles;

  if (PRODUCER && warp < 4) {          // producer warpgroup (step 2)
    producer_registers();
    if (threadIdx.x == 0) produce_tiles(b);   // cuda/tma_block.cuh
  } else {                             // consumer warpgroups
    if constexpr (PRODUCER) {
      consumer_registers();
    } else if (warp == 0 && elect_one()) {   // step 1: Q and the ring's first STAGES - 1 tiles
      b.load_q();
      for (int s = 0; s < STAGES - 1 && s < n_tiles; s++) b.load_kv(s);
    }
    const ConsumerWarp c = consumer_warp(b);   // cuda/wgmma_f16_tile.cuh: its rows and descriptors
    const int warp_row0 = b.m0 + c.row_in_block;
    float o[1][DT][4], row_max[1][2], row_sum[1][2];
    init_accumulators(o, row_max, row_sum);
    mbar_wait(b.bar_q, 0);

    for (int t = 0; t < n_tiles; t++) {
      // Step 1: the copy of the tile STAGES - 1 ahead, into the slot the
      // last iteration's block barrier freed.
      if constexpr (!PRODUCER)
        if (warp == 0 && t + STAGES - 1 < n_tiles && elect_one()) b.load_kv(t + STAGES - 1);
      const int slot = t % STAGES;
      attend_tile(o, row_max, row_sum, c.d.q, c.d.k + slot * KV_BYTES / 16, c.d.v + slot * KV_BYTES / 16,
                  b.bar_k(slot), b.bar_v(slot), (t / STAGES) & 1, t, warp_row0, a);
      if constexpr (PRODUCER)
        mbar_arrive(b.bar_empty(slot));  // this thread's MMAs on the slot are complete
      else
        __syncthreads();               // every warpgroup is done with this slot
    }
    u16 *o_head = (u16 *)a.o + b.batch * a.o_sb + b.head * a.o_sh;
    float *lse_head = a.lse + ((i64)b.batch * a.heads_q + b.head) * a.seq_q;
    write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
  }
}
