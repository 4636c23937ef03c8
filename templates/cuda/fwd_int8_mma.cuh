// The INT8-QK forward on mma.sync (blocks/attn_int8.lua: int8-f16 and
// int8-fp8, variant=mma): S = Q8 K8^T (m16n8k32 s8), dequantized in base 2,
// online softmax, O += P V in fp16 (FP8_V false, cuda/pv_f16.cuh) or E4M3
// (cuda/pv_fp8.cuh), the epilogue.  Q8, K8, their scales and FP8 V^T come
// from the quant kernels' workspace; K8 and V tiles stream through a cp.async
// ring of STAGES buffers.
//
// Reads the header's constants (D, D32, DV, D_PAD, RSQ, RS, RSV, BM, BN,
// WARPS, THREADS, STAGES, MT, KQ, NT, DT, V_TILE_BYTES, CAUSAL, WRITE_LSE,
// SMOOTH_K, FP8_V, PER_THREAD, KS_TILE, the WS_ sections, KERNEL_NAME) and
// the blocks before it.

// ROWS rows of COLS bytes (a multiple of 16) from global (row stride gs bytes)
// to shared (row stride SS bytes), 16 bytes per cp.async.  The workspace is
// padded, so no bounds.
template <int ROWS, int COLS, int SS>
MX_INLINE void copy_bytes(u8 *dst, const u8 *src, i64 gs) {
  constexpr int CPR = COLS / 16, CHUNKS = ROWS * CPR;
#pragma unroll
  for (int i = 0; i < (CHUNKS + THREADS - 1) / THREADS; i++) {
    const int c = threadIdx.x + i * THREADS;
    if (CHUNKS % THREADS != 0 && c >= CHUNKS) break;
    const int r = c / CPR, col = c % CPR * 16;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(dst + r * SS + col)), "l"(src + r * gs + col));
  }
}

// A V tile's element: fp16 V (u16), or E4M3 V^T codes (u8).
template <bool FP8> struct v_elem { typedef u16 type; };
template <> struct v_elem<true> { typedef u8 type; };
typedef v_elem<FP8_V>::type v_t;

// Grid (nqp / BM, heads_q, batch).  Causal grids run the heaviest query
// blocks first.  Each warp owns 16*MT query rows and sweeps the keys.  As in
// cuda/fwd_mma.cuh the steps are written out in the body (it says why).
extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(const mx_kernel_args a) {
  wait_for_previous_kernel();          // the quant kernels' codes and scales (a "pdl" launch)
  extern __shared__ __align__(16) u8 smem[];
  u8 *sQ = smem, *sK = sQ + BM * RSQ;
  v_t *sV = (v_t *)(sK + STAGES * BN * RSQ);
  float *sKS = (float *)(sK + STAGES * BN * RSQ + STAGES * V_TILE_BYTES);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m_block = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z, kv_head = head / a.gqa;
  const int m0 = m_block * BM, warp_row0 = m0 + warp * MT * 16;
  const int nqp = pad_q(a.seq_q), nkp = pad_k(a.seq_k);
  const i64 qh = (i64)batch * a.heads_q + head, kh = (i64)batch * a.heads_kv + kv_head;
  const u8 *q8 = ws_at(a, WS_Q8) + qh * nqp * D32, *k8 = ws_at(a, WS_K8) + kh * nkp * D32;
  const float *ks = (const float *)ws_at(a, WS_KSCALE) + kh * kscales_a_head(nkp);
  // V: fp16 from the caller's tensor, or FP8_V's E4M3 V^T from the workspace.
  const u16 *v = (const u16 *)a.v + batch * a.v_sb + kv_head * a.v_sh;
  const u8 *v8t = ws_at(a, WS_V8T) + kh * DV * nkp;

  const int n_tiles = key_tiles(m0, a);   // all keys, or (causal) up to the last row's diagonal

  // Q8: workspace -> shared -> registers, once; its scales straight from global.
  copy_bytes<BM, D32, RSQ>(sQ, q8 + (i64)m0 * D32, D32);
  cp_async_commit();
  cp_async_wait<0>();
  __syncthreads();
  u32 qf[MT][KQ][4];
  load_q_fragments(qf, sQ + warp * MT * 16 * RSQ);
  float qscale[MT];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
    qscale[mt] = ((const float *)ws_at(a, WS_QSCALE))[qh * qscales_a_head(nqp) + (PER_THREAD ? (warp_row0 / 16 + mt) * 8 + lane / 4
                                                                                                 : warp_row0 / 16 + mt)];

  float o[MT][DT][4], row_max[MT][2], row_sum[MT][2];
  init_accumulators(o, row_max, row_sum);

  // One stage of the ring: K8 tile, its KS_TILE scales (BN/16, or with
  // PER_THREAD the four of the tile's 128-key window), V tile.
  auto load_kv = [&](int tile) {
    const int buf = tile % STAGES;
    copy_bytes<BN, D32, RSQ>(sK + buf * BN * RSQ, k8 + (i64)tile * BN * D32, D32);
    const int first = PER_THREAD ? tile * BN / 128 * 4 : tile * (BN / 16);
    if (threadIdx.x < KS_TILE)
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" :: "r"(smem_addr(sKS + buf * KS_TILE + threadIdx.x)),
                   "l"(ks + first + threadIdx.x));
    // (Each branch names its own type, so both compile whichever V this is.)
    if constexpr (FP8_V) copy_bytes<DV, BN, RSV>((u8 *)sV + buf * DV * RSV, v8t + tile * BN, nkp);
    else load_tile<BN>((u16 *)sV + buf * BN * RS, v, a.v_ss, tile * BN, a.seq_k);
  };
  // The cp.async ring: STAGES K/V tiles in flight.  The first STAGES-1 go
  // out now; each iteration of the key loop issues tile t+STAGES-1, then
  // waits until tile t has landed.  Every iteration commits a group, empty or
  // not, so "at most STAGES-1 groups pending" always means "tile t is here".
#pragma unroll
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < n_tiles) load_kv(s);
    cp_async_commit();
  }

  for (int t = 0; t < n_tiles; t++) {
    if (t + STAGES - 1 < n_tiles) load_kv(t + STAGES - 1);
    cp_async_commit();                 // possibly empty: keeps the group count uniform
    cp_async_wait<STAGES - 1>();       // tile t has landed
    __syncthreads();
    const int buf = t % STAGES;

    // S = Q K^T, dequantized, in base 2.
    float s[MT][NT][4];
    scores_int8(s, qf, qscale, sK + buf * BN * RSQ, sKS + buf * KS_TILE);

    // Mask the tile's tail (padding keys) and, under causal, keys past the diagonal.
    mask_tile(s, t, warp_row0, a);

    // Scores are already base 2: scale 1.
    online_softmax(s, row_max, row_sum, o, 1.f);

    // O += P V
    pv_tile(o, s, sV + buf * (V_TILE_BYTES / sizeof(v_t)));
    __syncthreads();                   // the buffer is refilled next iteration
  }

  pv_finish(o, FP8_V ? (const float *)ws_at(a, WS_VSCALE) + kh * D32 : nullptr);
  // Smooth-K: softmax cancels the per-row term q.mean, so O ignores it; the
  // LSE does not, so it goes back into the row max (which only the LSE reads).
  if (WRITE_LSE && SMOOTH_K) {
    const float *corr = (const float *)ws_at(a, WS_CORR) + qh * nqp;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int h = 0; h < 2; h++) row_max[mt][h] += corr[warp_row0 + mt * 16 + lane / 4 + 8 * h];
  }
  u16 *o_head = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
  float *lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
  write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
}
