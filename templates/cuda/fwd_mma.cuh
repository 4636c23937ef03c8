// The portable forward (families/f16.lua, variant=mma; sm_80 and later):
// exact attention on the bf16/fp16 tensor cores, FlashAttention-2 style
// (online softmax, fp32 accumulation).  Each warp owns 16*MT query rows and
// sweeps all keys; K and V tiles stream through a cp.async ring of STAGES
// buffers.
//
// Reads the header's constants: D, D_PAD (D rounded up to 16), RS (a shared
// row's stride in halves), BM, BN, WARPS, THREADS, STAGES, MT, KD, NT, DT,
// CAUSAL, WRITE_LSE, Q_REGS, ALIGN, and KERNEL_NAME, the kernel's symbol;
// and the blocks before it: prelude, load, mma_sync, softmax, epilogue.

// 16-byte rows (ALIGN=8): O leaves through shared memory.
constexpr bool STAGE_OUTPUT = ALIGN == 8;

// The output through shared memory: each warp stages its normalized rows in
// its own Q rows, which no other warp reads and which are dead after the last
// tile, then stores 16-byte chunks, each warp instruction two whole 256-byte
// rows, instead of 4-byte stores that each fill half of eight 32-byte sectors.
MX_INLINE void write_output_staged(const float (&o)[MT][DT][4], const float (&row_max)[MT][2], const float (&row_sum)[MT][2],
                                   u32 stage, u16 *o_head, i64 o_ss, float *lse_head, int row0, int seq_q) {
  const int lane = threadIdx.x % 32;
  for_each_row(row_sum, [&](int mt, int h, int r, float l, float inv) {
#pragma unroll
    for (int dt = 0; dt < DT; dt++) {
      const u32 x = pack_out(o[mt][dt][2 * h] * inv, o[mt][dt][2 * h + 1] * inv);
      asm volatile("st.shared.u32 [%0], %1;" :: "r"(stage + (r * RS + dt * 8 + (lane % 4) * 2) * 2), "r"(x) : "memory");
    }
    if (WRITE_LSE && lane % 4 == 0 && row0 + r < seq_q) lse_head[row0 + r] = row_lse(row_max[mt][h], l);
  });
  __syncwarp();
  constexpr int CHUNKS = D / 8;        // 16-byte chunks of a row (align=8: D % 8 == 0)
#pragma unroll 4
  for (int i = lane; i < MT * 16 * CHUNKS; i += 32) {
    const int r = i / CHUNKS, c = i % CHUNKS;
    if (row0 + r >= seq_q) continue;
    u32 x0, x1, x2, x3;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(x0), "=r"(x1), "=r"(x2), "=r"(x3) : "r"(stage + (r * RS + c * 8) * 2) : "memory");
    asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};"
                 :: "l"(o_head + (i64)(row0 + r) * o_ss + c * 8), "r"(x0), "r"(x1), "r"(x2), "r"(x3) : "memory");
  }
}

// P in the A operand's layout: the tile's probabilities, packed in pairs.
MX_INLINE void pack_p_operand(u32 (&p)[MT][BN / 16][4], const float (&s)[MT][NT][4]) {
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      p[mt][kk][0] = pack_in(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      p[mt][kk][1] = pack_in(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      p[mt][kk][2] = pack_in(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      p[mt][kk][3] = pack_in(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
}

// c[mt][j], c[mt][j + 1] += A(mt) * B for each of the warp's MT row tiles,
// B being the two 8-column tiles of one x4 ldmatrix.
template <int N, class AOf> MX_INLINE void mma_rows_x2(float (&c)[MT][N][4], int j, const u32 (&b)[4], AOf a_of) {
#pragma unroll
  for (int mt = 0; mt < MT; mt++) mma_16816_x2(c[mt][j], c[mt][j + 1], a_of(mt), b);
}

// O += P V for one key tile; vt is this lane's ldmatrix.trans row in the V tile.
MX_INLINE void accumulate_pv(float (&o)[MT][DT][4], const u32 (&p)[MT][BN / 16][4], u32 vt) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
    for (int dd = 0; dd < D_PAD / 16; dd++) {
      u32 b[4];
      ldsm_x4_trans(b, vt + (kk * 16 * RS + dd * 16) * 2);
      mma_rows_x2(o, 2 * dd, b, [&](int mt) -> const u32 (&)[4] { return p[mt][kk]; });
    }
}

// Q, K, V: [seq, D] slices of one (batch, head); O likewise.  Grid: (query
// blocks, heads_q, batch).  Causal grids run the heaviest query blocks first.
// The cp.async ring and S = Q K^T are written out in the body, not as
// functions of their own: as functions NVRTC emitted other code than for
// this body, the code measured on the GPU (the ring: another loop counter at
// D=64 to 128; S: 34 of 54 configurations' SASS moved).
extern "C" __global__ void __launch_bounds__(THREADS) KERNEL_NAME(const mx_kernel_args a) {
  extern __shared__ __align__(16) u16 smem[];
  // Shared tiles by 32-bit shared address: fragment addresses are a per-lane
  // base plus compile-time offsets, not 64-bit generic pointers.
  const u32 sQ = smem_addr(smem), sK = sQ + BM * RS * 2, sV = sK + STAGES * BN * RS * 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m_block = CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int head = blockIdx.y, batch = blockIdx.z, kv_head = head / a.gqa;
  const int m0 = m_block * BM, warp_row0 = m0 + warp * MT * 16;
  const u16 *q = (const u16 *)a.q + batch * a.q_sb + head * a.q_sh;
  const u16 *k = (const u16 *)a.k + batch * a.k_sb + kv_head * a.k_sh;
  const u16 *v = (const u16 *)a.v + batch * a.v_sb + kv_head * a.v_sh;

  const int n_tiles = key_tiles(m0, a);   // all keys, or (causal) up to the last row's diagonal

  // Q: global -> shared (-> registers), once.  Its copy is in flight together
  // with the ring's first K/V tiles: a block waits for one memory latency
  // before its first tile, not two (with 16 key tiles a block, N=1024, that
  // start is a visible share of the block's time).
  load_tile<BM>(sQ, q, a.q_ss, m0, a.seq_q);
  cp_async_commit();
  // Each lane's ldmatrix row within a fragment (byte offsets; the x4 forms'
  // four 8x8 matrices are lanes 0-7, 8-15, 16-23, 24-31).
  const u32 q_lane = sQ + ((warp * MT * 16 + lane % 16) * RS + (lane / 16) * 8) * 2;
  const u32 k_lane = ((lane % 8 + (lane / 16) * 8) * RS + (lane / 8) % 2 * 8) * 2;
  const u32 v_lane = ((lane % 8 + (lane / 8) % 2 * 8) * RS + (lane / 16) * 8) * 2;
  // Q's A fragments: kept in registers (Q_REGS), or reloaded from shared
  // memory at each k-step, which frees MT*KD*4 registers for a taller warp tile.
  auto q_fragment = [&](u32 (&f)[4], int mt, int kd) { ldsm_x4(f, q_lane + (mt * 16 * RS + kd * 16) * 2); };
  auto load_kv = [&](int tile) {
    const int buf = tile % STAGES;
    load_tile<BN>(sK + buf * BN * RS * 2, k, a.k_ss, tile * BN, a.seq_k);
    load_tile<BN>(sV + buf * BN * RS * 2, v, a.v_ss, tile * BN, a.seq_k);
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
  cp_async_wait<STAGES - 1>();         // Q has landed (the first K/V tiles may not have)
  __syncthreads();
  u32 qf[MT][KD][4];
  if (Q_REGS)
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int kd = 0; kd < KD; kd++) q_fragment(qf[mt][kd], mt, kd);

  float o[MT][DT][4], row_max[MT][2], row_sum[MT][2];
  init_accumulators(o, row_max, row_sum);

  for (int t = 0; t < n_tiles; t++) {
    if (t + STAGES - 1 < n_tiles) load_kv(t + STAGES - 1);
    cp_async_commit();                 // possibly empty: keeps the group count uniform
    cp_async_wait<STAGES - 1>();       // tile t has landed
    __syncthreads();
    const u32 kt = sK + k_lane + t % STAGES * BN * RS * 2, vt = sV + v_lane + t % STAGES * BN * RS * 2;

    // S = Q K^T
    float s[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
      for (int nt = 0; nt < NT; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
#pragma unroll
    for (int kd = 0; kd < KD; kd++) {
      u32 qk[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        if (Q_REGS) { qk[mt][0] = qf[mt][kd][0]; qk[mt][1] = qf[mt][kd][1]; qk[mt][2] = qf[mt][kd][2]; qk[mt][3] = qf[mt][kd][3]; }
        else q_fragment(qk[mt], mt, kd);
      }
#pragma unroll
      for (int nn = 0; nn < BN / 16; nn++) {
        u32 b[4];
        ldsm_x4(b, kt + (nn * 16 * RS + kd * 16) * 2);
        mma_rows_x2(s, 2 * nn, b, [&](int mt) -> const u32 (&)[4] { return qk[mt]; });
      }
    }

    // Mask the tile's tail and, under causal, keys past the diagonal.
    mask_tile(s, t, warp_row0, a);

    // Online softmax.  P goes into the A operand's layout before O's rescale,
    // so the tile's fp32 scores are dead by the time O is touched (at D=128,
    // 128x64 with 4 warps, O is 128 registers a thread and S 64).
    float alpha[MT][2];
    softmax_tile(s, row_max, row_sum, alpha, a.scale_log2);
    u32 p[MT][BN / 16][4];
    pack_p_operand(p, s);
    rescale_o(o, alpha);

    // O += P V
    accumulate_pv(o, p, vt);
    __syncthreads();                   // the buffer is refilled next iteration
  }

  // O / row_sum in the output type (and the LSE).
  u16 *o_head = (u16 *)a.o + batch * a.o_sb + head * a.o_sh;
  float *lse_head = a.lse + ((i64)batch * a.heads_q + head) * a.seq_q;
  if constexpr (STAGE_OUTPUT)
    write_output_staged(o, row_max, row_sum, sQ + warp * MT * 16 * RS * 2, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
  else
    write_output(o, row_max, row_sum, o_head, a.o_ss, lse_head, warp_row0, a.seq_q);
}
