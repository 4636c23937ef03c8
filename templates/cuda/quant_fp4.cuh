// The quantization kernels that run before the FP4 attention kernel, writing
// the workspace it reads (layout in blocks/fp4_family.lua).  Their output is
// bit-identical to numerics/ (mx_fp4_quantize, mx_channel_mean,
// mx_subtract_mean, mx_int8_quantize_blocks), only laid out for tile loads:
// rows padded to whole tiles, head dims padded to the k64 of the Blackwell
// MMA, V^T's scales stored key-block-major so that a key tile's scales are
// one contiguous run.  Padding is written too (codes 0, scales 0): a tile
// load never reads memory the kernels did not write, so no NaN can leak in.
//
//   kmean    (smooth_k only) K's channel mean per kv head, fp64 sums
//   quant_kv K rows (minus the mean) along head_dim; V^T rows along keys
//   quant_q  Q rows along head_dim; with lse and smooth_k also q . mean
// Reads the kernel's header (D, DP, DV, D_PAD, SPK, QROWS, KROWS, SMOOTH_K,
// WRITE_LSE, BF16_OPS), cuda/fp4_formats.cuh, and KERNEL_NAME_kmean (the
// kmean kernel's symbol); cuda/quant_fp4_rows.cuh (FP4 Q and K) or
// cuda/quant_fp4_int8.cuh (nvfp4-int8qk) follows with quant_kv and quant_q.

// ---- workspace sections (byte offsets in a.ws_off) ----
enum { WS_QC = 0, WS_QS = 1, WS_KC = 2, WS_KS = 3, WS_VC = 4, WS_VS = 5, WS_MEAN = 6, WS_CORR = 7 };
MX_INLINE u8 *ws_at(const mx_kernel_args &a, int section) { return (u8 *)a.ws + a.ws_off[section]; }
MX_INLINE int q_rows(const mx_kernel_args &a) { return (a.seq_q + QROWS - 1) / QROWS * QROWS; }
MX_INLINE int k_rows(const mx_kernel_args &a) { return (a.seq_k + KROWS - 1) / KROWS * KROWS; }

// q . mean for the LSE (numerics mx_smooth_k_correction, here in fp32): the
// kernels drop it from the scores, where it cancels, and add it to the LSE.
MX_INLINE void store_correction(const mx_kernel_args &a, const u16 *q, int kv_bh, int row, i64 r) {
  const float *mean = (const float *)ws_at(a, WS_MEAN) + (i64)kv_bh * DP;
  float dot = 0.f;
  if (row < a.seq_q)
    for (int c = 0; c < D; c++) dot = fmaf(load_in(q + (i64)row * a.q_ss + c), mean[c], dot);
  ((float *)ws_at(a, WS_CORR))[r] = dot;
}

// Channel means of K (numerics mx_channel_mean): 32 channels x 8 row groups
// per block.  The fp64 sum of bf16/f16 values is exact for any realistic
// length, so the order of summation cannot change the fp32 mean.
extern "C" __global__ void __launch_bounds__(256) KERNEL_NAME_kmean(const mx_kernel_args a) {
  __shared__ double part[8][32];
  const int bh = blockIdx.x, c = blockIdx.y * 32 + threadIdx.x % 32, rg = threadIdx.x / 32;
  const u16 *k = (const u16 *)a.k + (bh / a.heads_kv) * a.k_sb + (bh % a.heads_kv) * a.k_sh;
  double sum = 0;
  if (c < D)
    for (int r = rg; r < a.seq_k; r += 8) {
      const float x = load_in(k + (i64)r * a.k_ss + c);
      sum += finite_f(x) ? x : 0.f;    // a NaN or infinite key counts as 0, as numerics' mean
    }
  part[rg][threadIdx.x % 32] = sum;
  __syncthreads();
  if (rg != 0) return;
  for (int j = 1; j < 8; j++) sum += part[j][threadIdx.x % 32];
  float *mean = (float *)ws_at(a, WS_MEAN) + (i64)bh * DP;
  mean[c] = c < D ? (float)(sum / a.seq_k) : 0.f;   // padding channels: 0
}

// FP4 rows: one thread per block of PB elements; writes PB/2 code bytes and
// one scale byte (numerics quantize_fp4_block).
// Quantizes x[0..PB) into PB/8 words of codes (element 8w+i in nibble i of
// word w); returns the scale code.  A zero scale makes every code +0, and so
// does a NaN one (a NaN or an infinity in the block: fmax_nan keeps it).
MX_INLINE u32 quantize_block(const float (&x)[PB], u32 (&words)[PB / 8]) {
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < PB; i++) amax = fmax_nan(amax, fabsf(x[i]));
  const u32 sc = block_scale_code(finite_f(amax) ? amax : __int_as_float(0x7fffffff));   // +inf: NaN too
  const float s = scale_value(sc);
#pragma unroll
  for (int w = 0; w < PB / 8; w++) {
    u32 word = 0;
#pragma unroll
    for (int i = 0; i < 8; i++) word |= (s > 0.f ? e2m1_code(x[8 * w + i] / s) : 0u) << (4 * i);
    words[w] = word;
  }
  return sc;
}
// The packed form: PB/2 bytes at dst (element 2i in the low nibble of byte i).
MX_INLINE void store_codes(u8 *dst, const u32 (&words)[PB / 8]) {
#pragma unroll
  for (int w = 0; w < PB / 8; w++) ((u32 *)dst)[w] = words[w];
}
// The dequantized form (BF16_OPS): element i of the block, E2M1 value times
// the scale, to dst[i * stride] for i < n.  Exact in bf16 (at most 2 + 4
// significant bits; a power of two for MXFP4); a NaN scale makes the block
// NaN, as the mma variant's dequantization in shared memory does.
// A whole block along a row (stride 1, dst 32-byte aligned) goes out as
// 16-byte stores: element by element, a warp's stores of Q and K rows wrote
// 2 bytes of each 32-byte sector at a time (0.15 ms of an H200 for Q at B1
// H32 N4096 D128, 3x the read).
MX_INLINE void store_dequantized(u16 *dst, i64 stride, int n, const u32 (&words)[PB / 8], u32 sc) {
  const float s = scale_value(sc);
  auto value = [&](int i) { return e2m1_value(words[i / 8] >> (4 * (i % 8))) * s; };
  if (stride == 1 && n >= PB) {
#pragma unroll
    for (int w = 0; w < PB / 8; w++)
      asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};"
                   :: "l"(dst + 8 * w), "r"(pack_bf16(value(8 * w), value(8 * w + 1))),
                      "r"(pack_bf16(value(8 * w + 2), value(8 * w + 3))), "r"(pack_bf16(value(8 * w + 4), value(8 * w + 5))),
                      "r"(pack_bf16(value(8 * w + 6), value(8 * w + 7))) : "memory");
    return;
  }
#pragma unroll
  for (int i = 0; i < PB; i++)
    if (i < n) dst[i * stride] = to_bf16(value(i));
}

// Block `blk` of row `row` of a [rows, D] slice at g (seq stride ss), minus
// `mean` (NULL: none), into a packed row of DP/2 bytes and SPK scale bytes,
// or (BF16_OPS) a bf16 row of D_PAD elements at `codes`.
MX_INLINE void quantize_row_block(const u16 *g, i64 ss, int rows, const float *mean, int row, int blk,
                                  u8 *codes, u8 *scales) {
  float x[PB];
#pragma unroll
  for (int i = 0; i < PB; i++) {
    const int col = blk * PB + i;
    x[i] = 0.f;
    if (row < rows && col < D) {
      x[i] = load_in(g + (i64)row * ss + col);
      if (mean) x[i] = x[i] - mean[col];             // fp32, as mx_subtract_mean
    }
  }
  u32 words[PB / 8];
  const u32 sc = quantize_block(x, words);
  scales[blk] = (u8)sc;
  if (!BF16_OPS) store_codes(codes + blk * (PB / 2), words);
  else if (blk * PB < D_PAD) store_dequantized((u16 *)codes + blk * PB, 1, D_PAD - blk * PB, words, sc);
  if (blk == 0)
    for (int j = DP / PB; j < SPK; j++) scales[j] = 0;   // scale padding
}
// Bytes of one Q or K row in the workspace: packed codes, or bf16 operands.
constexpr int ROW_CODE_BYTES = BF16_OPS ? 2 * D_PAD : DP / 2;

// V^T's block `kb` (keys kb*PB..) of channel c of KV head bh into its PB/2
// code bytes and scale byte; keys past seq_k and channels past D count as 0.
// BF16_OPS: the block's values go to V's bf16 rows [key][D_PAD] instead.
MX_INLINE void quantize_vt_block(const mx_kernel_args &a, int nk, int bh, int kb, int c) {
  const u16 *v = (const u16 *)a.v + (bh / a.heads_kv) * a.v_sb + (bh % a.heads_kv) * a.v_sh;
  float x[PB];
#pragma unroll
  for (int i = 0; i < PB; i++) {
    const int key = kb * PB + i;
    x[i] = key < a.seq_k && c < D ? load_in(v + (i64)key * a.v_ss + c) : 0.f;
  }
  u32 words[PB / 8];
  const u32 sc = quantize_block(x, words);
  ws_at(a, WS_VS)[((i64)bh * (nk / PB) + kb) * DV + c] = (u8)sc;
  if (BF16_OPS)
    store_dequantized((u16 *)ws_at(a, WS_VC) + ((i64)bh * nk + kb * PB) * D_PAD + c, D_PAD, PB, words, sc);
  else
    store_codes(ws_at(a, WS_VC) + ((i64)bh * DV + c) * (nk / 2) + kb * (PB / 2), words);
}
