// The FP4 families' mma.sync forward (variant=mma): the emulation on
// sm_80..sm_90a and the native block-scaled form on sm_120a, one
// FlashAttention-2 loop over key tiles through a cp.async ring of STAGES
// slots.  What differs per target and QK mode is in the files before it
// (blocks/fp4_family.lua picks them): QOperand, load_q_operand, qk_product
// (cuda/fp4_qk_*.cuh), POperand, quantize_p_operand, dequantize_v,
// pv_product (cuda/fp4_pv_*.cuh).  Reads the header's constants (BM, BN,
// MT, NT, DT, STAGES, Q_TILE_BYTES, SLOT_BYTES, SQ_BYTES, RS, QP, QCB, QSB,
// CAUSAL, WRITE_LSE, SMOOTH_K, NATIVE, DEQUANT_QK, Q_RESIDENT) and
// KERNEL_NAME, the kernel's symbol.
//
// Q, K, V quantized in the workspace by the kernels above; O and the LSE as
// the f16 family writes them.  Grid: (query blocks, heads_q, batch).
extern "C" __global__ void __launch_bounds__(THREADS) KERNEL_NAME(const mx_kernel_args a) {
  extern __shared__ __align__(16) u8 smem[];
  u8 *sq = smem, *ring = sq + Q_TILE_BYTES;
  u16 *sq_bf16 = (u16 *)(ring + STAGES * SLOT_BYTES);            // persistent Q copy (D > 128) ...
  u16 *scratch = (u16 *)((u8 *)sq_bf16 + SQ_BYTES);              // ... and the dequantized K/V tile
  if (Q_RESIDENT) sq_bf16 = scratch;                             // Q's copy only lives until the loop
  u16 *kt = scratch, *vt = scratch + (DEQUANT_QK ? BN * RS : 0);
  const int warp = threadIdx.x / 32;
  const int m_block = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z, kv_head = head / a.gqa;
  const int m0 = m_block * BM, warp_row0 = m0 + warp * MT * 16, nq = q_rows(a), nk = k_rows(a);
  const i64 q_bh = (i64)batch * a.heads_q + head, kv_bh = (i64)batch * a.heads_kv + kv_head;

  const int n_tiles = key_tiles(m0, a);   // all keys, or (causal) up to the last row's diagonal

  // Q: packed tile -> shared -> operand, once.
  copy_rows(sq, QP, ws_at(a, WS_QC) + (q_bh * nq + m0) * QCB, QCB, BM, QCB);
  if (QSB) copy_rows(sq + BM * QP, 0, ws_at(a, WS_QS) + (q_bh * nq + m0) * QSB, 0, 1, BM * QSB);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  QOperand qop;
  load_q_operand(qop, a, sq, sq_bf16, q_bh, m0);

  float o[MT][DT][4], row_max[MT][2], row_sum[MT][2];
  init_accumulators(o, row_max, row_sum);

#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < n_tiles) load_kv_tile(a, ring + s * SLOT_BYTES, kv_bh, nk, s);
    cp_async_commit();
  }

  for (int t = 0; t < n_tiles; t++) {
    if (t + STAGES - 1 < n_tiles) load_kv_tile(a, ring + ((t + STAGES - 1) % STAGES) * SLOT_BYTES, kv_bh, nk, t + STAGES - 1);
    cp_async_commit();                 // possibly empty: keeps the group count uniform
    cp_async_wait<STAGES - 1>();       // tile t has landed
    __syncthreads();                   // ... for every thread; the previous tile's readers are done
    const Slot sl = slot_at(ring + (t % STAGES) * SLOT_BYTES);

    // Emulation: dequantize the tile once for the whole block.
    if (DEQUANT_QK) dequant_rows(kt, sl.kc, sl.ks, BN);
    dequantize_v(vt, sl);
    if (!NATIVE) __syncthreads();

    // S = Q K^T
    float s[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int nt = 0; nt < NT; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
    qk_product(s, qop, sl, kt, a, kv_bh, t);

    // Mask the tile's tail and, under causal, keys past the diagonal.
    mask_tile(s, t, warp_row0, a);

    // Row max, P~ = exp2(S - max), l += sum P~ (unquantized), O *= alpha.
    // The scores are scaled to base 2 first, so the row max is one of them
    // exactly and its P~ is exactly 1: with the fused form exp2(s*c - max)
    // the rounding of s*c leaves P~ a hair under 1 at times, which moves an
    // MXFP4 block's power-of-two scale down by 2x (floor(log2 amax)) and
    // saturates the block's largest probability from 1 to 0.75.
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) s[mt][nt][e] *= a.scale_log2;
    online_softmax(s, row_max, row_sum, o, 1.f);

    // P~ -> P^ (FP4, two-level or direct scale), then O += s1 * (P^ s2) V^.
    POperand pop;
    float s1[MT][2];
    quantize_p_operand(s, pop, s1);
    pv_product(o, pop, s1, sl, vt);
    __syncthreads();                   // the slot and the bf16 tiles are rewritten next
  }

  // Smooth-K dropped q . mean from every score of a row; it cancels in the
  // softmax and comes back into the LSE (base 2 here, as row_max is).
  if (SMOOTH_K && WRITE_LSE) {
    const float *corr = (const float *)ws_at(a, WS_CORR) + q_bh * nq;
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int h = 0; h < 2; h++) row_max[mt][h] += corr[warp_row0 + mt * 16 + lane / 4 + 8 * h] * a.scale_log2;
  }
  u16 *o_head = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
  float *lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
  write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
}
