// One key tile of int8-fp8's wgmma forward for one consumer warpgroup's 64
// query rows, as __device__ functions every schedule calls
// (cuda/fwd_int8_fp8_wgmma.cuh, fwd_int8_fp8_ring.cuh, fwd_int8_fp8_ring3.cuh):
//   tile_scores  S = Q8 K8^T (wgmma s8), the online softmax on S's s32
//                fragments (softmax_acc), P*448 packed to E4M3;
//   tile_pv      O += P V (wgmma e4m3, A = P from registers, B = V^T), in a
//                P V accumulator of its own that is folded into O (issue_pv
//                says why), and with rowsum_mma the row sums by MMA;
//   attend_tile  both, for the schedules that run a tile in one go; the ring
//                (overlap=3) runs tile_pv(t-1) and tile_scores(t) in one turn.
// after_issue runs once a half's MMAs are issued, before their wait (the ring
// hands its turn on after S's; a no-op lambda elsewhere).
//
// Reads the header's constants (BM, BN, NT, DT, KQ, WQK, KS_N, NT_G, DV,
// V_TERMS, PV_SLICES, PV_N, PV_DT, V_SLOTS, ROWSUM_MMA, CAUSAL, WS_ sections)
// and the blocks before it: cuda/wgmma_int8.cuh (the MMAs), softmax.cuh
// (tile_needs_mask, mask_scores, softmax_tile, rescale_o), pv_fp8.cuh
// (pack_e4m3x4, pv_finish), quant_int8.cuh (exact_s32_to_f32), epilogue.cuh.

// The tile's key scale a thread meets: its group's, (k mod 8) / 2 = lane % 4,
// of the tile's 128-key window.  The window's four by one broadcast load from
// a uniform address (a per-thread address held a 64-bit pointer across the
// loop: registers the four-block kernels do not have), then the thread's by
// its lane % 4.
MX_INLINE void load_kscale(float (&kscale)[KS_N], const float *ks, int t) {
  float w[4];
  asm("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(w[0]), "=f"(w[1]), "=f"(w[2]), "=f"(w[3]) : "l"(ks + t * BN / 128 * 4));
  const int i = threadIdx.x % 4;
  kscale[0] = i < 2 ? (i == 0 ? w[0] : w[1]) : (i == 2 ? w[2] : w[3]);
}

// S = Q8 K8^T for the K8 tile `desc_k` points at: KQ k32 steps, one commit
// group; step kq is 32 bytes into panel kq / (WQK / 32).
MX_INLINE void issue_qk(int (&acc)[1][NT][4], u64 desc_q, u64 desc_k) {
  wgmma_fence();
#pragma unroll
  for (int kq = 0; kq < KQ; kq++) {
    const int panel = kq / (WQK / 32), step = (kq % (WQK / 32)) * 32;
    const u64 da = desc_q + (panel * BM * WQK + step) / 16, db = desc_k + (panel * BN * WQK + step) / 16;
    wgmma_qk(acc, da, db, kq > 0);
  }
  wgmma_commit();
}

// Scores in base 2: the thread's Q scale times each key group's K scale.
// The int -> float conversion is exact (exact_s32_to_f32 says why and how),
// so the product rounds once, as (float)acc * scale would.
MX_INLINE void dequant_scores(float (&s)[1][NT][4], const int (&acc)[1][NT][4], float qscale,
                              const float (&kscale)[KS_N]) {
#pragma unroll
  for (int nt = 0; nt < NT; nt++) {
    const float scale = qscale * kscale[nt / NT_G];
#pragma unroll
    for (int e = 0; e < 4; e++) s[0][nt][e] = exact_s32_to_f32(acc[0][nt][e]) * scale;
  }
}

// The online softmax of a key tile that needs no mask, straight from S's s32
// accumulators in as few instructions per score as we could: the kernel is
// bound by issue (bench/NOTES.md), and converting, dequantizing, subtracting
// the max and scaling P onto E4M3's range each cost one per score before.
//  - The row max is taken over each key group's integers and scaled once
//    per group: the scales are positive, so max(acc) * scale is the largest
//    product, rounded as each product would be.  A thread's scores share
//    one scale (KS_N = 1): one group.  The group's maximum goes to
//    fp32 by cvt (one I2FP, exact below 2^24): the magic-number conversion
//    costs two instructions where no FFMA absorbs its subtraction.
//  - Conversion, dequantization and minus-max are one FFMA: the bits
//    0x4B400000 + acc are the float 1.5*2^23 + acc (exact_s32_to_f32 says
//    why), times scale, minus c = 1.5*2^23 * scale + max - log2(448).
//  - The log2(448) makes each exponential P*448, E4M3's range, with no
//    multiply; the row sum carries the same factor, which cancels in O / l
//    (pv_finish's unit is 1; the epilogue takes log2 448 back out of the LSE).
// The price: c rounds to fp32, so an exponent is off by up to about one INT8
// product unit (scale): ~1e-4 relative in P where E4M3 rounds by up to 6%
// and the INT8 quantization moves a score by many units.
constexpr float LOG2_448 = 8.8073549220576f;
MX_INLINE void softmax_acc(float (&s)[1][NT][4], const int (&acc)[1][NT][4], float (&row_max)[1][2],
                           float (&row_sum)[1][2], float (&alphas)[1][2], float qscale, const float (&kscale)[KS_N]) {
#pragma unroll
  for (int h = 0; h < 2; h++) {
    float m = MX_NEG_INF;
#pragma unroll
    for (int g = 0; g < KS_N; g++) {
      int top = acc[0][g * NT_G][2 * h];
#pragma unroll
      for (int nt = g * NT_G; nt < (g + 1) * NT_G; nt++) top = max(top, max(acc[0][nt][2 * h], acc[0][nt][2 * h + 1]));
      m = fmaxf(m, __int2float_rn(top) * (qscale * kscale[g]));
    }
    m = fmaxf(row_max[0][h], quad_max(m));   // finite: the tile has a key for every row
    alphas[0][h] = fast_exp2(row_max[0][h] - m);
    row_max[0][h] = m;
    float sum = 0.f;
#pragma unroll
    for (int g = 0; g < KS_N; g++) {
      // c from kscale rather than scale: one product fewer live at a time.
      const float scale = qscale * kscale[g], c = fmaf(12582912.f * qscale, kscale[g], m - LOG2_448);
#pragma unroll
      for (int nt = g * NT_G; nt < (g + 1) * NT_G; nt++)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; e++) {
          s[0][nt][e] = __int_as_float(0x4B400000 + acc[0][nt][e]);
          s[0][nt][e] = fast_exp2(fmaf(s[0][nt][e], scale, -c));
          sum += s[0][nt][e];
        }
    }
    row_sum[0][h] = row_sum[0][h] * alphas[0][h] + sum;
  }
}

// The online softmax of key tile t into s (P times 448, as softmax_acc's)
// and alphas (O's factors, rescale_o).  The few tiles with padding keys or,
// under causal, keys past a row's diagonal take the plain way: dequantize,
// mask with -inf, softmax_tile with the same log2 448 shift.
MX_INLINE void softmax_tile_acc(float (&s)[1][NT][4], const int (&acc)[1][NT][4], int t, int warp_row0,
                                const mx_kernel_args &a, float (&row_max)[1][2], float (&row_sum)[1][2],
                                float (&alphas)[1][2], float qscale, const float (&kscale)[KS_N]) {
  if (tile_needs_mask(t, warp_row0, a)) {
    dequant_scores(s, acc, qscale, kscale);
    mask_scores(s, warp_row0, t * BN, a.seq_k, a.causal_offset);
    softmax_tile(s, row_max, row_sum, alphas, 1.f, LOG2_448);
  } else {
    softmax_acc(s, acc, row_max, row_sum, alphas, qscale, kscale);
  }
}

// P*448 (softmax_acc's exponentials) -> E4M3, the A fragment of k32
// step kk from S chunks 4kk..4kk+3 (key order of V^T's permutation,
// cuda/pv_fp8.cuh).
MX_INLINE void pack_p(u32 (&pa)[BN / 32][4], const float (&s)[1][NT][4]) {
#pragma unroll
  for (int kk = 0; kk < BN / 32; kk++) {
    const int j = 4 * kk;
    pa[kk][0] = pack_e4m3x4(s[0][j][0], s[0][j][1], s[0][j + 1][0], s[0][j + 1][1], 1.f);
    pa[kk][1] = pack_e4m3x4(s[0][j][2], s[0][j][3], s[0][j + 1][2], s[0][j + 1][3], 1.f);
    pa[kk][2] = pack_e4m3x4(s[0][j + 2][0], s[0][j + 2][1], s[0][j + 3][0], s[0][j + 3][1], 1.f);
    pa[kk][3] = pack_e4m3x4(s[0][j + 2][2], s[0][j + 2][3], s[0][j + 3][2], s[0][j + 3][3], 1.f);
#pragma unroll
    for (int i = 0; i < 4; i++) reg_fence(pa[kk][i]);
  }
}

// PV = P V for the V^T tile `desc_v` points at: BN/32 k32 steps, each 32
// bytes (keys) along V^T's rows; one commit group.  PV starts from zero on
// every tile and add_pv folds it into O in fp32: Hopper's FP8 MMAs keep only
// ~14 mantissa bits when they add to their accumulator (DeepSeek-V3 measured
// it for FP8 GEMMs; SageAttention2 accumulates P V the same two-level way),
// so O accumulated in place across a row drifts from the reference: on the
// H200 at 16384 keys, 2.8e-3 rel-L1 in place vs 2.4e-4 this way (f16 output;
// gpu_int8_wgmma test_long_rows_of_16k_keys_do_not_drift_from_reference).
// The mma.sync variant keeps accumulating in place: its m16n8k32 FP8 MMA
// measured 1.9e-4 there, no drift.
//
// With V_TERMS = 2 the tile's V^T holds a second term's DV rows after the
// first's (the first's rounding error, on the same channel scale): its k32
// steps add into the same accumulator, so P V is P (hi + lo) at the cost of
// twice the MMAs and no register.
MX_INLINE void issue_pv(float (&pv)[1][PV_DT][4], const u32 (&pa)[BN / 32][4], u64 desc_v) {
  reg_fence(pv);
  wgmma_fence();
#pragma unroll
  for (int term = 0; term < V_TERMS; term++)
#pragma unroll
    for (int kk = 0; kk < BN / 32; kk++)
      wgmma_pv(pv, pa[kk], desc_v + (term * DV * BN + kk * 32) / 16, term > 0 || kk > 0);
  wgmma_commit();
}

// rowsum_mma: the tile's row sums as the tensor cores see P, E4M3 (the
// values P V weighs V by), times ONES' column of ones: BN/32 m64n8k32 steps
// into their own accumulator, committed with P V's group.  Lane 4g of a quad
// gets rows g and g+8's sums in ls[0][0][0] and [2]; the others get 0, the
// per-lane partial sums the epilogue adds across the quad.  It takes the
// softmax's FADD a score (64 of ~570 instructions a warp and a tile at
// BN=128) off the issue slots, which bound the kernel (bench/NOTES.md), for
// BN/32 MMAs of 8 columns; and O / l then divides by the sum of the weights
// that O used.
MX_INLINE void issue_rowsum(float (&ls)[1][1][4], const u32 (&pa)[BN / 32][4], u64 desc_ones) {
  reg_fence(ls);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BN / 32; kk++) wgmma_pv(ls, pa[kk], desc_ones + kk * 32 / 16, kk > 0);
}

// O += PV in fp32 (see issue_pv) for column slice `slice`.
MX_INLINE void add_pv(float (&o)[1][DT][4], const float (&pv)[1][PV_DT][4], int slice) {
#pragma unroll
  for (int dt = 0; dt < PV_DT; dt++)
#pragma unroll
    for (int e = 0; e < 4; e++) o[0][slice * PV_DT + dt][e] += pv[0][dt][e];
}

// O = O * alpha + PV for column slice `slice`: the rescale and the fold in
// one FFMA a value.  The kernel is bound by issue (bench/NOTES.md), and a
// separate rescale costs an FMUL a value on every tile where a row's max
// moved; after the P V wait the fold costs as many instructions either way.
// On the H200 (2026-11-29): 1.6% faster at D=128 N=16384,
// 2.3% at N=4096, but 2% slower at D=64, whose short P V leaves the
// separate rescale under the MMA for free (FOLD_RESCALE).
constexpr bool FOLD_RESCALE = DV > 64;
MX_INLINE void fold_pv(float (&o)[1][DT][4], const float (&pv)[1][PV_DT][4], const float (&alphas)[1][2], int slice) {
#pragma unroll
  for (int dt = 0; dt < PV_DT; dt++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      float &x = o[0][slice * PV_DT + dt][e];
      x = fmaf(x, alphas[0][e / 2], pv[0][dt][e]);
    }
}

// S = Q K^T (dequantized, base 2), mask, online softmax for key tile t, whose
// K8 sits in the ring slot desc_k points at (its barrier bar_k); P packed
// into pa, O's factor into alphas.  ks: this head's K scales.
template <class F>
MX_INLINE void tile_scores(u32 (&pa)[BN / 32][4], float (&alphas)[1][2], float (&row_max)[1][2], float (&row_sum)[1][2],
                           u64 desc_q, u64 desc_k, u32 bar_k, u32 parity, int t, int warp_row0, float qscale,
                           const float *ks, const mx_kernel_args &a, F after_issue) {
  // Issued before the wait so their latency hides behind it.
  float kscale[KS_N];
  load_kscale(kscale, ks, t);

  int acc[1][NT][4];
  mbar_wait(bar_k, parity);
  issue_qk(acc, desc_q, desc_k);
  after_issue();
  wgmma_wait<0>();
  reg_fence(acc);
  float s[1][NT][4];
  // With rowsum_mma the softmax's own sums go to `unused` (and the compiler
  // drops them); row_sum takes the MMA's in tile_pv.
  float unused[1][2] = {{0.f, 0.f}};
  softmax_tile_acc(s, acc, t, warp_row0, a, row_max, ROWSUM_MMA ? unused : row_sum, alphas, qscale, kscale);
  pack_p(pa, s);
}

// O += P V for the tile whose V^T sits where desc_v points (its barrier
// bar_v, phase v_parity), O scaled by alphas first; with rowsum_mma also the
// row sums from P times the ones tile.
template <class F>
MX_INLINE void tile_pv(float (&o)[1][DT][4], float (&row_sum)[1][2], const u32 (&pa)[BN / 32][4],
                       const float (&alphas)[1][2], u64 desc_v, u32 bar_v, u32 v_parity, u64 desc_ones, F after_issue) {
  float ls[1][1][4];
  mbar_wait(bar_v, v_parity);
  float pv[1][PV_DT][4];
#pragma unroll
  for (int slice = 0; slice < PV_SLICES; slice++) {   // V^T rows (channels) PV_N * slice on
    if (ROWSUM_MMA && slice == 0) issue_rowsum(ls, pa, desc_ones);
    issue_pv(pv, pa, desc_v + slice * (PV_N * BN / 16));
    if (slice == 0) after_issue();
    if (!FOLD_RESCALE && slice == 0) rescale_o(o, alphas);   // under the MMA: P V has its own accumulator
    wgmma_wait<0>();
    reg_fence(pv);
    if (FOLD_RESCALE) fold_pv(o, pv, alphas, slice);
    else add_pv(o, pv, slice);
  }
  if (ROWSUM_MMA) {
    reg_fence(ls);
    row_sum[0][0] = fmaf(row_sum[0][0], alphas[0][0], ls[0][0][0]);
    row_sum[0][1] = fmaf(row_sum[0][1], alphas[0][1], ls[0][0][2]);
  }
}

// Both halves of key tile t (the overlap=0 kernels).
MX_INLINE void attend_tile(float (&o)[1][DT][4], float (&row_max)[1][2], float (&row_sum)[1][2], u64 desc_q,
                           u64 desc_k, u64 desc_v, u32 bar_k, u32 bar_v, u32 parity, int t, int warp_row0,
                           float qscale, const float *ks, u64 desc_ones, const mx_kernel_args &a) {
  u32 pa[BN / 32][4];
  float alphas[1][2];
  tile_scores(pa, alphas, row_max, row_sum, desc_q, desc_k, bar_k, parity, t, warp_row0, qscale, ks, a, [] {});
  tile_pv(o, row_sum, pa, alphas, desc_v, bar_v, V_SLOTS == 1 ? t & 1 : parity, desc_ones, [] {});
}

// The rows' output: O's V channel scales (P's 448 cancels in O / l), the LSE's
// corrections, then O (and the LSE) to memory.
MX_INLINE void finish_rows(float (&o)[1][DT][4], float (&row_max)[1][2], const float (&row_sum)[1][2],
                           const mx_kernel_args &a, i64 qh, i64 kh, int nqp, int batch, int head, int warp_row0) {
  pv_finish(o, (const float *)ws_at(a, WS_VSCALE) + kh * D32, 1.f);   // P's 448 cancels in O / l
  // Smooth-K: softmax cancels the per-row term q.mean, so O ignores it; the
  // LSE does not, so it goes back into the row max (which only the LSE reads).
  if (WRITE_LSE && SMOOTH_K) {
    float corr[2];
    const float *ws_corr = (const float *)ws_at(a, WS_CORR) + qh * nqp;
#pragma unroll
    for (int h = 0; h < 2; h++) corr[h] = ws_corr[warp_row0 + threadIdx.x % 32 / 4 + 8 * h];
#pragma unroll
    for (int h = 0; h < 2; h++) row_max[0][h] += corr[h];
  }
  // The row sum carries P's factor 448 (softmax_acc); the LSE must not.
  if (WRITE_LSE) row_max[0][0] -= LOG2_448, row_max[0][1] -= LOG2_448;
  u16 *o_head = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
  float *lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
  write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
}
