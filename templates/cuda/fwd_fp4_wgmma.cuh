// The FP4 families' attention on Hopper (variant=wgmma, sm_90a): exact
// emulation of NVFP4 / MXFP4 attention at warpgroup-MMA speed.
//
// The quantization kernels before this one have written Q, K and V to the
// workspace already dequantized (E2M1 x scale is exact in bf16; the INT8 codes
// of nvfp4-int8qk are too), so per key tile this kernel runs the f16 wgmma
// kernel's steps with one more, P's two-level FP4 quantization, on registers:
//
//   S = Q K^T               bf16 wgmma, Q and K from shared memory (TMA)
//   (int8 scores)           S *= s_q * s_k, the mma variant's order
//   mask, online softmax    P~ = exp2(S - running max), l += sum P~ (unquantized)
//   quantize P              s1 = rowmax(P~) / 2688, P2 = P~ / s1,
//                           s2 = scale(blockmax(P2)), P^ = e2m1(P2 / s2) * s2
//   tmp = P^ V              bf16 wgmma, P from registers, V from shared memory
//   O += s1 * tmp           s1 after the MMA (dividing O by s1 would underflow)
//
// which is numerics' quantized pipeline with p_tile = BN, up to the order of
// the fp32 sums (blocks/fp4_family.lua compares the targets).
//
// Warp roles (FlashAttention-3's warp specialization, as the f16 kernel's
// step 2): warpgroup 0 gives its registers away and one of its threads issues
// the TMA copies (Q once, K and V tiles into a STAGES-deep ring, each slot
// with a full barrier per operand and an empty barrier the consumers arrive
// on); warpgroups 1.. own 64 query rows each and never meet at a block
// barrier, so one's quantization runs under the other's MMAs.
//
// Needs, before this text: the prelude, the constants the Lua side emits,
// blocks/fp4_formats (e2m1, scales), blocks/fp4_quant (ws_at, the workspace
// sections), blocks/tma_mbarrier, blocks/wgmma_f16 (smem_desc, wgmma_qk,
// wgmma_pv, the fences), blocks/softmax, blocks/epilogue, and the f16
// kernels' cuda/tma_block.cuh, wgmma_ring.cuh (the block, its copies) and
// wgmma_f16_tile.cuh (issue_qk, pack_p, ring_descs).

// ---- P's two-level quantization on the accumulator registers ----------------

// x / s rounded to nearest, given r = RN(1/s): q = x r is within an ulp of
// x / s, the fma forms the remainder x - q s exactly, and one correction step
// rounds correctly (Markstein's theorem; tests/test_templates_fp4.c checks it
// against division over every fp32 mantissa).  3 instructions where div.rn is
// about 10 with a slow-path branch.  Callers keep s and x away from the
// ranges where the remainder could underflow and matter (see quantize_p).
MX_INLINE float div_rn_by(float x, float s, float r) {
  const float q = x * r;
  return fmaf(fmaf(-q, s, x), r, q);
}

// The E2M1 value nearest m >= 0, ties to the even code, saturated at 6: the
// value of e2m1_code(m), without the code.  Adding and removing 2^22 (m < 2),
// 2^23 (2 <= m < 4) or 2^24 (4 <= m < 8) rounds m to a multiple of 0.5, 1 or
// 2, the E2M1 grid of that binade, by the fp32 adder's own ties-to-even; m
// >= 8 rounds to 8 or more and saturates.  NaN gives 6, as e2m1_code's 0x7.
MX_INLINE float e2m1_round(float m) {
  const u32 e = max(__float_as_uint(m) & 0x7F800000u, 0x3F800000u) + (22u << 23);
  const float magic = __uint_as_float(e);
  return fminf(__fsub_rn(__fadd_rn(m, magic), magic), 6.f);
}

// MXFP4's block scale is a power of two, so P2 / s2 is exact and the E2M1
// grid scaled by s2 is the float grid of a scaled magic number: the value
// e2m1_round(P2 / s2) * s2 is rounded in P2's own domain, no division.
// (Code 0, 2^-127, is subnormal: 2^22 * s2 is then 2^-105 by its bits.)
MX_INLINE float e2m1_round_pow2(float x, float s2) {
  const u32 e = max(__float_as_uint(x) & 0x7F800000u, __float_as_uint(s2) & 0x7F800000u) + (22u << 23);
  const float magic = __uint_as_float(e);
  return fminf(__fsub_rn(__fadd_rn(x, magic), magic), 6.f * s2);
}

// NVFP4: the block scale's value, ue4m3_value(ue4m3_code(amax / 6)), for a
// block of P2 whose largest element is amax >= 0, without branches (the
// sixteen blocks of a tile then interleave): amax / 6 correctly rounded from
// RN(1/6) (the division test covers 6's mantissa 1.5); a normal E4M3 value
// is fp32 rounded to 3 mantissa bits, ties to even (ue4m3_code's add),
// saturated at 448; under 2^-6 the subnormal quantum 2^-9.  A NaN amax (a
// NaN s1: the row is NaN through s1 anyway) gives 448.
MX_INLINE float nvfp4_p_scale(float amax) {
  const float x = div_rn_by(amax, 6.f, 1.0f / 6.0f);
  const u32 u = __float_as_uint(x);
  const float normal = fminf(__uint_as_float((u + 0x7FFFFu + ((u >> 20) & 1u)) & 0xFFF00000u), 448.f);
  return x < 0.015625f ? rintf(x * 512.f) * 0.001953125f : normal;
}
// RN(1/s2) for an NVFP4 block scale (0: 0), without branches: s2 = M 2^k
// with M one of the eight 1 + m/8 (a UE4M3 value has at most 4 significant
// bits, subnormal ones too), so RN(1/s2) = RN(1/M) 2^-k, RN(1/M) folded by
// the compiler.
MX_INLINE float nvfp4_scale_reciprocal(float s2) {
  const u32 u = __float_as_uint(s2), m = (u >> 20) & 7u;
  const float a0 = m & 1u ? 1.0f / 1.125f : 1.0f, a1 = m & 1u ? 1.0f / 1.375f : 1.0f / 1.25f;
  const float a2 = m & 1u ? 1.0f / 1.625f : 1.0f / 1.5f, a3 = m & 1u ? 1.0f / 1.875f : 1.0f / 1.75f;
  const float b0 = m & 2u ? a1 : a0, b1 = m & 2u ? a3 : a2;
  const float r = __uint_as_float(__float_as_uint(m & 4u ? b1 : b0) - ((u & 0x7F800000u) - 0x3F800000u));
  return s2 > 0.f ? r : 0.f;
}

// P~ in s (the m64nBN accumulator layout: lane 4g+t holds rows g and g+8,
// keys 8j+2t and +1 of chunk j) to pa, the bf16 A operand of P V holding
// P^ * s2 (at most 6 significant bits: exact), and s1 per row half.  A
// 16-key NVFP4 block (32 for MXFP4) is PB/8 chunks in the four lanes of a
// quad, so its maximum is one quad shuffle-max.  The same codes as
// blocks/fp4_p.lua's quantize_p: P~ / s1 and P2 / s2 are the correctly
// rounded quotients (numerics divides), s2's code is block_scale_code's.
MX_INLINE void quantize_p(float (&s)[1][NT][4], u32 (&pa)[BN / 16][4], float (&s1)[2]) {
#pragma unroll
  for (int h = 0; h < 2; h++) {
    float m = 0.f;
#pragma unroll
    for (int nt = 0; nt < NT; nt++) m = fmax_nan(m, fmax_nan(s[0][nt][2 * h], s[0][nt][2 * h + 1]));
    const float sc1 = TWO_LEVEL ? quad_max_nan(m) / 2688.0f : 1.f;
    s1[h] = sc1;
    if (TWO_LEVEL) {
      // P2 = P~ / s1, with s1 and P~ first scaled by 2^64 where s1 < 2^-60
      // (exactly: the quotient is the same): then 1/s1 is finite and every
      // remainder of div_rn_by is a normal number, as P~ >= 2^-126 or 0
      // (ex2.approx.ftz).  For s1 >= 2^-60 a remainder that underflows
      // belongs to a P2 below 2^-42, whose code is 0 under any block scale
      // (>= 2^-9) and whose block scale is 0 where it is the largest.  s1 = 0
      // (no key visible in this tile): r1 = 0 and P2 = 0, as the mma
      // variant's `s1 > 0 ? P~ / s1 : 0`; a NaN s1 makes the row NaN either way.
      const float pre = sc1 < 0x1p-60f ? 0x1p64f : 1.f, s1p = sc1 * pre;
      const float r1 = s1p > 0.f ? __frcp_rn(s1p) : 0.f;
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; e++) s[0][nt][e] = div_rn_by(s[0][nt][e] * pre, s1p, r1);
    }
#pragma unroll
    for (int blk = 0; blk < BN / PB; blk++) {
      float amax = 0.f;
#pragma unroll
      for (int nt = blk * (PB / 8); nt < (blk + 1) * (PB / 8); nt++)
        amax = fmax_nan(amax, fmax_nan(s[0][nt][2 * h], s[0][nt][2 * h + 1]));
      amax = quad_max_nan(amax);
      if (PB == 32) {
        const float s2 = scale_value_raw(block_scale_code(amax));
#pragma unroll
        for (int nt = blk * (PB / 8); nt < (blk + 1) * (PB / 8); nt++)
#pragma unroll
          for (int e = 2 * h; e < 2 * h + 2; e++) s[0][nt][e] = e2m1_round_pow2(s[0][nt][e], s2);
        continue;
      }
      // s2 = 0 (a block under the smallest scale): r2 = 0 makes every
      // quotient 0, as the mma variant's `s2 > 0 ? ... : 0`.
      const float s2 = nvfp4_p_scale(amax), r2 = nvfp4_scale_reciprocal(s2);
#pragma unroll
      for (int nt = blk * (PB / 8); nt < (blk + 1) * (PB / 8); nt++)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; e++) s[0][nt][e] = e2m1_round(div_rn_by(s[0][nt][e], s2, r2)) * s2;
    }
  }
  pack_p(pa, s);                       // bf16 (MMA_BF16): P^ is exact in it
}

// ---- one key tile for one consumer warpgroup --------------------------------

// d += A(registers) * B(smem), m64 n64 k16, B MN-major: one W = 64-column
// panel of V, for the P V product in two halves of D_PAD = 128 (PV_HALVES),
// whose 32-register temporary leaves room for a third consumer warpgroup.
MX_INLINE void wgmma_pv_n64(float (&d)[1][8][4], const u32 (&a)[4], u64 desc_b) {
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, "
               "%11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, "
               "%31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1; }"
               : "+f"(d[0][0][0]), "+f"(d[0][0][1]), "+f"(d[0][0][2]), "+f"(d[0][0][3]), "+f"(d[0][1][0]),
                 "+f"(d[0][1][1]), "+f"(d[0][1][2]), "+f"(d[0][1][3]), "+f"(d[0][2][0]), "+f"(d[0][2][1]),
                 "+f"(d[0][2][2]), "+f"(d[0][2][3]), "+f"(d[0][3][0]), "+f"(d[0][3][1]), "+f"(d[0][3][2]),
                 "+f"(d[0][3][3]), "+f"(d[0][4][0]), "+f"(d[0][4][1]), "+f"(d[0][4][2]), "+f"(d[0][4][3]),
                 "+f"(d[0][5][0]), "+f"(d[0][5][1]), "+f"(d[0][5][2]), "+f"(d[0][5][3]), "+f"(d[0][6][0]),
                 "+f"(d[0][6][1]), "+f"(d[0][6][2]), "+f"(d[0][6][3]), "+f"(d[0][7][0]), "+f"(d[0][7][1]),
                 "+f"(d[0][7][2]), "+f"(d[0][7][3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}

// nvfp4-int8qk: the block scales of this warp's two rows (Q: blocks of IBQ
// rows) and the workspace's K scales (blocks of IBK keys).
struct ScoreScales { float q[2]; const float *k; };

MX_INLINE ScoreScales score_scales(const mx_kernel_args &a, i64 q_bh, i64 kv_bh, int warp_row0) {
  ScoreScales sc = {{1.f, 1.f}, nullptr};
  if (INT8_QK) {
    const int nq = q_rows(a), nk = k_rows(a), lane = threadIdx.x % 32;
    const float *qs = (const float *)ws_at(a, WS_QS) + q_bh * (nq / IBQ);
    sc.q[0] = qs[(warp_row0 + lane / 4) / IBQ];
    sc.q[1] = qs[(warp_row0 + lane / 4 + 8) / IBQ];
    sc.k = (const float *)ws_at(a, WS_KS) + kv_bh * (nk / IBK);
  }
  return sc;
}

MX_INLINE void attend_tile(float (&o)[1][DT][4], float (&row_max)[1][2], float (&row_sum)[1][2], u64 desc_q,
                           u64 desc_k, u64 desc_v, u32 bar_k, u32 bar_v, u32 parity, int t, int warp_row0,
                           const ScoreScales &sc, const mx_kernel_args &a) {
  float s[1][NT][4];
  mbar_wait(bar_k, parity);
  issue_qk(s, desc_q, desc_k);         // S = Q K^T (cuda/wgmma_f16_tile.cuh)
  wgmma_wait<0>();
  reg_fence(s);

  // INT8 scores: the sums are exact integers in fp32 (|sum| < 2^24), so this
  // is the mma variant's (float)acc * q_scale * k_scale.
  if (INT8_QK) {
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
      const float ks = sc.k[(t * BN + nt * 8) / IBK];
#pragma unroll
      for (int e = 0; e < 4; e++) s[0][nt][e] = s[0][nt][e] * sc.q[e / 2] * ks;
    }
  }

  mask_tile(s, t, warp_row0, a);

  // To base 2 first, then the softmax against a max that is one of the
  // scores exactly (blocks/fp4_family.lua says why: MXFP4's scale of the
  // block holding the row max depends on P~ = 1 exactly).
#pragma unroll
  for (int nt = 0; nt < NT; nt++)
#pragma unroll
    for (int e = 0; e < 4; e++) s[0][nt][e] *= a.scale_log2;
  online_softmax(s, row_max, row_sum, o, 1.f);

  u32 pa[BN / 16][4];
  float s1[2];
  quantize_p(s, pa, s1);

  // tmp = (P^ s2) V^ for this tile alone, then O += s1 * tmp: over all of
  // D_PAD at once, or (PV_HALVES) one 64-column panel at a time.
  mbar_wait(bar_v, parity);
  if (!PV_HALVES) {
    float tmp[1][DT][4];
#pragma unroll
    for (int dt = 0; dt < DT; dt++) tmp[0][dt][0] = tmp[0][dt][1] = tmp[0][dt][2] = tmp[0][dt][3] = 0.f;
    reg_fence(tmp);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) wgmma_pv(tmp, pa[kk], desc_v + kk * 16 * ROW_BYTES / 16);
    wgmma_commit();
    wgmma_wait<0>();
    reg_fence(tmp);
#pragma unroll
    for (int dt = 0; dt < DT; dt++)
#pragma unroll
      for (int e = 0; e < 4; e++) o[0][dt][e] = fmaf(tmp[0][dt][e], s1[e / 2], o[0][dt][e]);
  } else {
#pragma unroll
    for (int half = 0; half < 2; half++) {
      float tmp[1][8][4];
#pragma unroll
      for (int dt = 0; dt < 8; dt++) tmp[0][dt][0] = tmp[0][dt][1] = tmp[0][dt][2] = tmp[0][dt][3] = 0.f;
      reg_fence(tmp);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BN / 16; kk++)
        wgmma_pv_n64(tmp, pa[kk], desc_v + (half * BN * ROW_BYTES + kk * 16 * ROW_BYTES) / 16);
      wgmma_commit();
      wgmma_wait<0>();
      reg_fence(tmp);
#pragma unroll
      for (int dt = 0; dt < 8; dt++)
#pragma unroll
        for (int e = 0; e < 4; e++) o[0][half * 8 + dt][e] = fmaf(tmp[0][dt][e], s1[e / 2], o[0][half * 8 + dt][e]);
    }
  }
}

// ---- the kernel's body --------------------------------------------------------

// Grid: (query blocks, heads_q, batch); block: a producer warpgroup and
// CONSUMERS consumer warpgroups.  Tensor maps: 0 Q, 1 K, 2 V (bf16 workspace
// sections [batch][heads][rows][D_PAD], 2W-byte swizzled panels).
MX_INLINE void fp4_wgmma_attention(const mx_kernel_args &a) {
  extern __shared__ __align__(1024) u8 smem[];
  const GridBlock b = grid_block_start(smem, a);   // cuda/wgmma_ring.cuh: tiles, barriers, copies
  const int warp = b.warp, head = b.head, batch = b.batch, n_tiles = b.n_tiles;

  if (warp < 4) {                      // producer warpgroup
    producer_registers();
    if (threadIdx.x == 0) produce_tiles(b);   // cuda/tma_block.cuh
    return;
  }

  // Consumer warpgroups.
  consumer_registers();
  const ConsumerWarp c = consumer_warp(b);   // cuda/wgmma_f16_tile.cuh: its rows and descriptors
  const int warp_row0 = b.m0 + c.row_in_block;
  const i64 q_bh = (i64)batch * a.heads_q + head, kv_bh = (i64)batch * a.heads_kv + b.kv_head;
  const ScoreScales sc = score_scales(a, q_bh, kv_bh, warp_row0);

  float o[1][DT][4], row_max[1][2], row_sum[1][2];
  init_accumulators(o, row_max, row_sum);
  mbar_wait(b.bar_q, 0);               // Q has landed (also where no key is seen: no copy outlives the block)
  for (int t = 0; t < n_tiles; t++) {
    const int slot = t % STAGES;
    attend_tile(o, row_max, row_sum, c.d.q, c.d.k + slot * (KV_BYTES / 16), c.d.v + slot * (KV_BYTES / 16),
                b.bar_k(slot), b.bar_v(slot), (t / STAGES) & 1, t, warp_row0, sc, a);
    mbar_arrive(b.bar_empty(slot));    // this thread's MMAs on the slot are complete
  }

  // Smooth-K dropped q . mean from every score of a row; it cancels in the
  // softmax and comes back into the LSE (base 2 here, as row_max is).
  if (SMOOTH_K && WRITE_LSE) {
    const float *corr = (const float *)ws_at(a, WS_CORR) + q_bh * q_rows(a);
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int h = 0; h < 2; h++) row_max[0][h] += corr[warp_row0 + lane / 4 + 8 * h] * a.scale_log2;
  }
  u16 *o_head = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
  float *lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
  write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
}
