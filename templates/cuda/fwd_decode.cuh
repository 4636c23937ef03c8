// Decode schedule of family f16 (variant=decode): a few query rows against a
// long KV cache, where reading K and V once at copy bandwidth is the whole
// cost.  Three ideas, each FlashAttention-3's or FlashInfer's:
//
//  * pack_gqa: the gqa query heads of one KV head times the seq_q query rows
//    are one column of packed rows, packed row r being query row r / gqa of
//    query head kv_head * gqa + r % gqa.  A block's BM packed rows read each
//    K/V tile once for all of them, not once per query head.
//  * split-KV: the key tiles a row tile sees are cut into SPLITS contiguous
//    pieces, one block each, so that batch * heads_kv * SPLITS blocks fill
//    every SM several times even at batch 8 with 8 KV heads.  A piece leaves
//    its rows' normalized O and base-2 LSE in the workspace; decode_combine
//    (a second kernel of the launch plan, a programmatic dependent of this
//    one) merges them.  With SPLITS = 1 the block writes O itself.  (The
//    last piece of a row tile merging instead, through ticket counters,
//    measured level at Nq=1 and slower at Nq=16: B16 Hq32 Hkv8 Nk8192 3.20
//    against 3.64 TB/s on the H200.)
//  * inside a block, warps split the key tile too: ROW_WARPS warps of 16
//    packed rows each times KEY_WARPS warps that each take KPW keys of every
//    tile, their (max, sum, O) merged through shared memory at the end.  The
//    tile streams through a STAGES-deep cp.async ring.  (One bulk copy a
//    K/V row on an mbarrier instead measured 1-2% slower at Nq=1 and 17% at
//    Nq=16, B16 Hkv8 Nk8192, H200.)
//
// With QUANT (family int8-fp8) the tiles are quantized in shared memory as
// they land and the products run on their codes: cuda/decode_quant.cuh.
//
// Reads the constants the template writes before this file: D, D_PAD, RS,
// BM, BN, WARPS, THREADS, STAGES, ROW_WARPS, KEY_WARPS, KPW, KD, NT, DT,
// SPLITS, RED_STRIDE, SM_* offsets, CAUSAL, WRITE_LSE, Q_REGS, OUT_BF16,
// QUANT, COMBINE_WARPS; and the prelude's, mma_sync's and decode_quant's
// primitives.

// One 16-byte chunk global -> shared; a chunk that is not `ok` is zero-filled
// from `fallback` (any valid address: no lane reads out of bounds).
MX_INLINE void decode_cp16(u32 dst, const u16 *src, const u16 *fallback, bool ok) {
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;"
               :: "r"(dst), "l"(ok ? src : fallback), "r"(ok ? 16 : 0));
}

// Keys [key0, key0 + BN) of one head's [seq_k, D] slice into a ring tile of
// RS halves a row.  Rows past seq_k and the columns D..D_PAD become zeros:
// P V multiplies V's tail rows by P = 0, and 0 * NaN (stale shared memory)
// would be NaN.
MX_INLINE void decode_load_kv(u32 tile, const u16 *g, i64 ss, int key0, int seq_k) {
  constexpr int CPR = D_PAD / 8, CHUNKS = BN * CPR;
#pragma unroll
  for (int i = 0; i < (CHUNKS + THREADS - 1) / THREADS; i++) {
    const int c = threadIdx.x + i * THREADS;
    if (CHUNKS % THREADS != 0 && c >= CHUNKS) break;
    const int r = c / CPR, col = c % CPR * 8;
    const bool ok = key0 + r < seq_k && col < D;
    decode_cp16(tile + (r * RS + col) * 2, g + (i64)(key0 + r) * ss + col, g, ok);
  }
}

// Packed rows [row0, row0 + BM) of a KV head's query heads into sQ; rows at
// or past `rows` (gqa * seq_q) are zeros.
MX_INLINE void decode_load_q(u32 sQ, const mx_kernel_args &a, const u16 *q_batch, int kv_head, int row0, int rows) {
  constexpr int CPR = D_PAD / 8, CHUNKS = BM * CPR;
#pragma unroll
  for (int i = 0; i < (CHUNKS + THREADS - 1) / THREADS; i++) {
    const int c = threadIdx.x + i * THREADS;
    if (CHUNKS % THREADS != 0 && c >= CHUNKS) break;
    const int r = c / CPR, col = c % CPR * 8, pr = row0 + r;
    const bool ok = pr < rows && col < D;
    const int q = pr / a.gqa, head = kv_head * a.gqa + pr % a.gqa;
    decode_cp16(sQ + (r * RS + col) * 2, q_batch + head * a.q_sh + (i64)q * a.q_ss + col, q_batch, ok);
  }
}

// S = Q K^T for this warp's 16 rows and its KPW keys of the tile at kt (this
// lane's ldmatrix address in the ring slot).
MX_INLINE void decode_scores(float (&s)[NT][4], const u32 (&qf)[KD][4], u32 q_lane, u32 kt) {
#pragma unroll
  for (int nt = 0; nt < NT; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
  for (int kd = 0; kd < KD; kd++) {
    u32 qk[4];
    if (Q_REGS) { qk[0] = qf[kd][0]; qk[1] = qf[kd][1]; qk[2] = qf[kd][2]; qk[3] = qf[kd][3]; }
    else ldsm_x4(qk, q_lane + kd * 16 * 2);
#pragma unroll
    for (int nn = 0; nn < KPW / 16; nn++) {
      u32 b[4];
      ldsm_x4(b, kt + (nn * 16 * RS + kd * 16) * 2);
      mma_16816_x2(s[2 * nn], s[2 * nn + 1], qk, b);
    }
  }
}

// Online softmax in base 2 over this warp's scores: s becomes P, row_max and
// row_sum (per thread, rows lane/4 and lane/4 + 8) move on, O is rescaled.
// A row that has seen no key keeps max -inf and subtracts 0, so that
// exp2(-inf - -inf) never makes a NaN.  QUANT: the scores come in base 2
// already, and the max is rounded up to an integer (numerics' p_base_pow2).
MX_INLINE void decode_softmax(float (&s)[NT][4], float (&row_max)[2], float (&row_sum)[2], float (&o)[DT][4],
                              float scale_log2) {
  float mx[2] = {row_max[0], row_max[1]};
#pragma unroll
  for (int nt = 0; nt < NT; nt++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      if (!QUANT) s[nt][e] *= scale_log2;
      mx[e / 2] = fmaxf(mx[e / 2], s[nt][e]);
    }
  float base[2], alpha[2], sum[2] = {0.f, 0.f};
#pragma unroll
  for (int h = 0; h < 2; h++) {
    mx[h] = quad_max(mx[h]);
    if (QUANT) mx[h] = ceilf(mx[h]);
    base[h] = mx[h] == MX_NEG_INF ? 0.f : mx[h];
    alpha[h] = fast_exp2(row_max[h] - base[h]);
    row_max[h] = mx[h];
  }
#pragma unroll
  for (int nt = 0; nt < NT; nt++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      s[nt][e] = fast_exp2(s[nt][e] - base[e / 2]);
      sum[e / 2] += s[nt][e];
    }
#pragma unroll
  for (int h = 0; h < 2; h++) row_sum[h] = row_sum[h] * alpha[h] + sum[h];
#pragma unroll
  for (int dt = 0; dt < DT; dt++) {
    o[dt][0] *= alpha[0]; o[dt][1] *= alpha[0];
    o[dt][2] *= alpha[1]; o[dt][3] *= alpha[1];
  }
}

// O += P V over this warp's KPW keys of the tile at vt.
MX_INLINE void decode_pv(float (&o)[DT][4], const float (&s)[NT][4], u32 vt) {
#pragma unroll
  for (int kk = 0; kk < KPW / 16; kk++) {
    u32 p[4];
    p[0] = pack_in(s[2 * kk][0], s[2 * kk][1]);
    p[1] = pack_in(s[2 * kk][2], s[2 * kk][3]);
    p[2] = pack_in(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    p[3] = pack_in(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
    for (int dd = 0; dd < D_PAD / 16; dd++) {
      u32 b[4];
      ldsm_x4_trans(b, vt + (kk * 16 * RS + dd * 16) * 2);
      mma_16816_x2(o[2 * dd], o[2 * dd + 1], p, b);
    }
  }
}

MX_INLINE u32 pack_out(float lo, float hi) { return OUT_BF16 ? pack_bf16(lo, hi) : pack_f16(lo, hi); }

// The block's rows after its last tile: the key warps' (max, sum, O) merged
// in shared memory (the ring, no longer read), then either the output (one
// piece: O / l in the output type and the natural-log LSE) or the piece's
// partial (O / l in fp32 and the base-2 LSE, -inf where it saw no key).
MX_INLINE void decode_finish(const float (&o)[DT][4], const float (&row_max)[2], const float (&row_sum)[2],
                             const mx_kernel_args &a, int warp, int lane, int kv_head, int batch, int row0,
                             int rows, int split) {
  extern __shared__ __align__(16) u16 smem[];
  float *red_o = (float *)((u8 *)smem + SM_RED_O);     // [KEY_WARPS][BM][RED_STRIDE]
  float *red_m = (float *)((u8 *)smem + SM_RED_M);     // [KEY_WARPS][BM]: max, then weight
  float *red_l = (float *)((u8 *)smem + SM_RED_L);     // [KEY_WARPS][BM]
  float *row_lse = (float *)((u8 *)smem + SM_ROW_LSE); // [BM], base 2
  i64 *row_off = (i64 *)((u8 *)smem + SM_ROW_OFF);     // [BM]: O element offset, -1: no such row
  int *row_idx = (int *)((u8 *)smem + SM_ROW_IDX);     // [BM]: (batch, head, query) row of the LSE
  const int wr = warp % ROW_WARPS, kw = warp / ROW_WARPS;
  float sums[2];
#pragma unroll
  for (int h = 0; h < 2; h++) sums[h] = quad_sum(row_sum[h]);
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int r = wr * 16 + lane / 4 + 8 * h;
#pragma unroll
    for (int dt = 0; dt < DT; dt++)
      *(f32x2 *)(red_o + (kw * BM + r) * RED_STRIDE + dt * 8 + (lane % 4) * 2) = f32x2{o[dt][2 * h], o[dt][2 * h + 1]};
    if (lane % 4 == 0) {
      red_m[kw * BM + r] = row_max[h];
      red_l[kw * BM + r] = sums[h];
    }
  }
  __syncthreads();
  // Per row: the block's max over its key warps, each warp's weight
  // exp2(m_w - m) / l, and where the row goes.
  for (int r = threadIdx.x; r < BM; r += THREADS) {
    float m = MX_NEG_INF;
#pragma unroll
    for (int w = 0; w < KEY_WARPS; w++) m = fmaxf(m, red_m[w * BM + r]);
    const float base = m == MX_NEG_INF ? 0.f : m;
    float l = 0.f;
#pragma unroll
    for (int w = 0; w < KEY_WARPS; w++) l += red_l[w * BM + r] * fast_exp2(red_m[w * BM + r] - base);
    const float inv = inverse_sum(l);
#pragma unroll
    for (int w = 0; w < KEY_WARPS; w++) red_m[w * BM + r] = fast_exp2(red_m[w * BM + r] - base) * inv;
    row_lse[r] = l != 0.f ? base + fast_log2(l) : MX_NEG_INF;
    const int pr = row0 + r;
    if (pr < rows) {
      const int q = pr / a.gqa, head = kv_head * a.gqa + pr % a.gqa;
      row_off[r] = batch * a.o_sb + head * a.o_sh + (i64)q * a.o_ss;
      row_idx[r] = (batch * a.heads_q + head) * a.seq_q + q;
    } else {
      row_off[r] = -1;
    }
  }
  __syncthreads();
  const i64 total = (i64)a.batch * a.heads_q * a.seq_q;
  float *part_o = (float *)a.ws + (i64)split * total * D;
  float *part_lse = (float *)a.ws + SPLITS * total * D + (i64)split * total;
  for (int i = threadIdx.x; i < BM * (D / 2); i += THREADS) {
    const int r = i / (D / 2), c = i % (D / 2) * 2;
    if (row_off[r] < 0) continue;
    float x0 = 0.f, x1 = 0.f;
#pragma unroll
    for (int w = 0; w < KEY_WARPS; w++) {
      const float wt = red_m[w * BM + r];
      const f32x2 v = *(const f32x2 *)(red_o + (w * BM + r) * RED_STRIDE + c);
      x0 += wt * v.x;
      x1 += wt * v.y;
    }
    if (SPLITS == 1) {
      *(u32 *)((u16 *)a.o + row_off[r] + c) = pack_out(x0, x1);
      if (WRITE_LSE && c == 0) a.lse[row_idx[r]] = row_lse[r] == MX_NEG_INF ? MX_NEG_INF : row_lse[r] * 0.6931471805599453f;
    } else {
      *(f32x2 *)(part_o + (i64)row_idx[r] * D + c) = f32x2{x0, x1};
      if (c == 0) part_lse[row_idx[r]] = row_lse[r];
    }
  }
}

// Loads of what the attention kernel's blocks wrote (the pieces' partials),
// at L2.
MX_INLINE float ld_cg(const float *p) { float x; asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(x) : "l"(p)); return x; }
MX_INLINE f32x2 ld_cg2(const float *p) {
  f32x2 v;
  asm volatile("ld.global.cg.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "l"(p));
  return v;
}

// The pieces' partials of (batch, head, query) row `row` merged by one warp,
// lanes over the columns: weights exp2(lse_s - max) over the pieces.  A row
// no piece saw a key of is zeros with LSE -inf; a NaN piece makes it NaN.
MX_INLINE void combine_row(const mx_kernel_args &a, i64 row, i64 total, int lane) {
  const float *part_o = (const float *)a.ws;
  const float *part_lse = (const float *)a.ws + SPLITS * total * D;
  float m = MX_NEG_INF;
  for (int s = lane; s < SPLITS; s += 32) m = fmaxf(m, ld_cg(part_lse + s * total + row));
#pragma unroll
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  const float base = m == MX_NEG_INF ? 0.f : m;
  float l = 0.f;
  for (int s = lane; s < SPLITS; s += 32) l += fast_exp2(ld_cg(part_lse + s * total + row) - base);
#pragma unroll
  for (int off = 16; off > 0; off /= 2) l += __shfl_xor_sync(0xffffffffu, l, off);
  const float inv = inverse_sum(l);
  const int q = (int)(row % a.seq_q), head = (int)(row / a.seq_q % a.heads_q), batch = (int)(row / a.seq_q / a.heads_q);
  u16 *out = (u16 *)a.o + batch * a.o_sb + head * a.o_sh + (i64)q * a.o_ss;
  for (int c = lane * 2; c < D; c += 64) {
    float x0 = 0.f, x1 = 0.f;
#pragma unroll 4
    for (int s = 0; s < SPLITS; s++) {
      const float w = fast_exp2(ld_cg(part_lse + s * total + row) - base);
      const f32x2 v = ld_cg2(part_o + (s * total + row) * D + c);
      x0 += w * v.x;
      x1 += w * v.y;
    }
    *(u32 *)(out + c) = pack_out(x0 * inv, x1 * inv);
  }
  if (WRITE_LSE && lane == 0) a.lse[row] = l != 0.f ? (base + fast_log2(l)) * 0.6931471805599453f : MX_NEG_INF;
}

// One block: row tile blockIdx.x % row_tiles of KV head blockIdx.y of batch
// blockIdx.z, key piece blockIdx.x / row_tiles of SPLITS.
MX_INLINE void decode_attend(const mx_kernel_args &a) {
  extern __shared__ __align__(16) u16 smem[];
  const u32 sQ = smem_addr(smem) + SM_Q, sK = smem_addr(smem) + SM_K, sV = smem_addr(smem) + SM_V;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wr = warp % ROW_WARPS, kw = warp / ROW_WARPS;
  const int rows = a.gqa * a.seq_q;                     // packed rows of one KV head
  const int row_tiles = (rows + BM - 1) / BM;
  const int rt = blockIdx.x % row_tiles, split = blockIdx.x / row_tiles;
  const int kv_head = blockIdx.y, batch = blockIdx.z, row0 = rt * BM;
  const u16 *q_batch = (const u16 *)a.q + batch * a.q_sb;
  const u16 *k = (const u16 *)a.k + batch * a.k_sb + kv_head * a.k_sh;
  const u16 *v = (const u16 *)a.v + batch * a.v_sb + kv_head * a.v_sh;

  // Keys the tile's rows see: all, or (causal) up to its last query's
  // diagonal; then this piece's share of their tiles.
  int key_end = a.seq_k;
  if (CAUSAL) key_end = min(key_end, (min(row0 + BM, rows) - 1) / a.gqa + a.causal_offset + 1);
  const int n_tiles = key_end > 0 ? (key_end + BN - 1) / BN : 0;
  const int t0 = split * n_tiles / SPLITS, t1 = (split + 1) * n_tiles / SPLITS;
  // The last visible key of this thread's two rows (lane/4 and lane/4 + 8)
  // and of the block's first row: tiles past the latter need the mask.
  int last_key[2];
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int q = (row0 + wr * 16 + lane / 4 + 8 * h) / a.gqa;
    last_key[h] = CAUSAL ? min(a.seq_k - 1, q + a.causal_offset) : a.seq_k - 1;
  }
  const int block_last_key = CAUSAL ? min(a.seq_k - 1, row0 / a.gqa + a.causal_offset) : a.seq_k - 1;

  auto load_kv = [&](int tile, int slot) {
    decode_load_kv(sK + slot * TILE_BYTES, k, a.k_ss, tile * BN, a.seq_k);
    decode_load_kv(sV + slot * TILE_BYTES, v, a.v_ss, tile * BN, a.seq_k);
  };
  // Q and the ring's first tiles in flight together.
  decode_load_q(sQ, a, q_batch, kv_head, row0, rows);
  cp_async_commit();
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (t0 + s < t1) load_kv(t0 + s, s);
    cp_async_commit();
  }
  cp_async_wait<STAGES - 1>();          // Q has landed
  __syncthreads();
  if (QUANT) {
    decode_quant_q(a.scale_log2);
    __syncthreads();
  }

  // Each lane's ldmatrix row (the x4 forms' four 8x8 matrices are lanes
  // 0-7, 8-15, 16-23, 24-31); K and V from this warp's KPW keys of a tile.
  const u32 q_lane = (QUANT ? smem_addr(smem) + SM_QC : sQ) + ((wr * 16 + lane % 16) * RS + (lane / 16) * 8) * 2;
  const u32 k_lane = ((kw * KPW + lane % 8 + (lane / 16) * 8) * RS + (lane / 8) % 2 * 8) * 2;
  const u32 v_lane = ((kw * KPW + lane % 8 + (lane / 8) % 2 * 8) * RS + (lane / 16) * 8) * 2;
  u32 qf[KD][4];
  if (Q_REGS)
#pragma unroll
    for (int kd = 0; kd < (QUANT ? (D_PAD + 31) / 32 : KD); kd++) ldsm_x4(qf[kd], q_lane + kd * 16 * 2);

  float o[DT][4], row_max[2] = {MX_NEG_INF, MX_NEG_INF}, row_sum[2] = {0.f, 0.f}, qs[2];
#pragma unroll
  for (int h = 0; h < 2; h++) qs[h] = QUANT ? smem_at<float>(SM_QSC)[wr * 16 + lane / 4 + 8 * h] : 1.f;
#pragma unroll
  for (int dt = 0; dt < DT; dt++) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;

  // One barrier a tile: once every warp has passed it, every warp is done
  // with the slot tile t - 1 sat in, which the copy issued after it refills.
  for (int t = t0; t < t1; t++) {
    const int i = t - t0;
    cp_async_wait<STAGES - 2>();        // tile t has landed (t+1 .. t+STAGES-2 may not have)
    __syncthreads();
    if (t + STAGES - 1 < t1) load_kv(t + STAGES - 1, (i + STAGES - 1) % STAGES);
    cp_async_commit();                  // possibly empty: keeps the group count uniform
    const int slot = i % STAGES;
    // int8-fp8: the warp quantizes its share of the keys it reads, as they landed.
    float ks[KGW], corr[KGW][2];
    if (QUANT)
      decode_quant_tile(smem_at<u16>(SM_K + slot * TILE_BYTES), smem_at<u16>(SM_V + slot * TILE_BYTES),
                        sQ + ((wr * 16 + lane % 16) * RS + (lane / 16) * 8) * 2, kw, wr, a.seq_k - t * BN,
                        a.scale_log2, ks, corr);

    float s[NT][4];
    if (QUANT) {
      decode_scores_s8(s, qf, q_lane, sK + slot * TILE_BYTES + k_lane);
      decode_dequant_scores(s, qs, ks, corr);
    } else {
      decode_scores(s, qf, q_lane, sK + slot * TILE_BYTES + k_lane);
    }
    // Keys past seq_k and, under causal, past each row's diagonal.
    if ((t + 1) * BN - 1 > block_last_key) {
#pragma unroll
      for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int key = t * BN + kw * KPW + nt * 8 + (lane % 4) * 2 + e % 2;
          if (key > last_key[e / 2]) s[nt][e] = MX_NEG_INF;
        }
    }
    decode_softmax(s, row_max, row_sum, o, a.scale_log2);
    if (QUANT) decode_pv_quant(o, s, sV + slot * TILE_BYTES + v_lane, kw);
    else decode_pv(o, s, sV + slot * TILE_BYTES + v_lane);
  }
  cp_async_wait<0>();
  __syncthreads();                      // the ring becomes the merge buffer
  let_next_kernel_start();              // decode_combine may start launching
  decode_finish(o, row_max, row_sum, a, warp, lane, kv_head, batch, row0, rows, split);
}

// The combine kernel: one warp a row, once every piece of the attention
// kernel has finished.
MX_INLINE void decode_combine(const mx_kernel_args &a) {
  wait_for_previous_kernel();           // the pieces' partials are written
  const i64 total = (i64)a.batch * a.heads_q * a.seq_q;
  const i64 row = (i64)blockIdx.x * COMBINE_WARPS + threadIdx.x / 32;
  if (row < total) combine_row(a, row, total, threadIdx.x % 32);
}

// The module's two kernels; KERNEL_NAME and COMBINE_NAME are their symbols
// (the header defines them).
extern "C" __global__ void __launch_bounds__(THREADS) KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {
  decode_attend(a);
}
extern "C" __global__ void __launch_bounds__(COMBINE_WARPS * 32) COMBINE_NAME(const __grid_constant__ mx_kernel_args a) {
  decode_combine(a);
}
