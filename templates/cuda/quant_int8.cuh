// Quantization kernels of the INT8 families, run before the attention kernel
// and sharing its workspace (layout in blocks/attn_int8.lua):
//   stats: per (batch, kv head, channel) K's mean over the whole sequence
//          (smooth-K) and, for FP8 V, V's absolute maximum -> V's scale;
//   quant: Q -> INT8 per 16 rows (Q pre-multiplied by sm_scale*log2(e), so
//          scores come out in base 2), K - mean -> INT8 per 16 keys, and for
//          FP8 V, V -> E4M3 per channel, transposed and key-permuted.
// Every rounding follows numerics/numerics.h bit for bit: x / scale by the
// reciprocal rule of cuda/scale_recip.cuh, amax with fmax_nan (a NaN or an
// infinity makes the scale NaN, and the codes 0), RNE codes, a zero scale
// gives zero codes.  Padding (rows past the sequence, columns
// past D) is written as code 0, so the attention kernel loads without bounds.
// Reads IN_BF16 (Q, K and V are bf16, else fp16), VEC and the kernel's D, D32,
// BM, BN; cuda/scale_recip.cuh comes before it.
// ---- quantization helpers -------------------------------------------------
MX_INLINE float in_to_f32(u16 h) {
  if constexpr (IN_BF16) return __int_as_float((int)((u32)h << 16));
  else { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
}
MX_INLINE float ld_in(const u16 *p) { return in_to_f32(*p); }
MX_INLINE float abs_f(float x) { float r; asm("abs.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
MX_INLINE float warp_max(float x) {
#pragma unroll
  for (int s = 16; s > 0; s /= 2) x = fmax_nan(x, __shfl_xor_sync(0xffffffffu, x, s));
  return x;
}
MX_INLINE float warp_sum(float x) {
#pragma unroll
  for (int s = 16; s > 0; s /= 2) x += __shfl_xor_sync(0xffffffffu, x, s);
  return x;
}
// INT8 scores to fp32, exactly, without cvt.rn.f32.s32, so the kernels can
// fold the conversion into the FFMA that scales the score (softmax_acc): an
// integer add per score, as cheap to issue as sm_90a's I2FP (46+ per clock
// per SM measured; bench/NOTES.md, 2026-11-29).  For
// |x| < 2^22 the float with bits 0x4B400000 + x is 1.5 * 2^23 + x exactly
// (x lands in the mantissa), and subtracting 1.5 * 2^23 leaves x, exactly:
// an integer add and an fp32 add on full-rate pipes.  Scores of INT8 codes
// are bounded by 127 * 127 * 256 = 4129024 < 2^22 = 4194304.
MX_INLINE float exact_s32_to_f32(int x) { return __int_as_float(0x4B400000 + x) - 12582912.f; }

MX_INLINE int pad_q(int n) { return (n + BM - 1) / BM * BM; }   // Q rows in the workspace
MX_INLINE int pad_k(int n) { return (n + BN - 1) / BN * BN; }   // keys in the workspace

// A quantization pass is bound by memory, so each warp loads its 16-row block
// into registers at once, VEC elements (the plan's alignment) per load, and
// reads it from there for both the maximum and the codes: one trip to memory
// per element with every load in flight together.  VEC: the plan's alignment.
constexpr int ROW_VECS = D / VEC, TILE_VECS = 16 * ROW_VECS, LANE_VECS = (TILE_VECS + 31) / 32;
struct __align__(2 * VEC) in_vec { u16 h[VEC]; };
// A vector's codes as stored: whole words where VEC packs into them.
struct __align__(VEC) code_vec { u32 w[VEC / 4 > 0 ? VEC / 4 : 1]; };

// Lane's j-th vector of the block: row r, first column c; false past the block.
MX_INLINE bool tile_slot(int j, int &r, int &c) {
  const int i = threadIdx.x % 32 + 32 * j;
  r = i / ROW_VECS;
  c = i % ROW_VECS * VEC;
  return i < TILE_VECS;
}

// Rows [row0, row0 + 16) of a [seq, D] slice; rows at or past `rows` read as 0.
MX_INLINE void load_rows(const u16 *src, i64 ss, int row0, int rows, in_vec (&t)[LANE_VECS]) {
#pragma unroll
  for (int j = 0; j < LANE_VECS; j++) {
    int r, c;
    if (tile_slot(j, r, c) && row0 + r < rows) {
      t[j] = *(const in_vec *)(src + (i64)(row0 + r) * ss + c);
    } else {
#pragma unroll
      for (int e = 0; e < VEC; e++) t[j].h[e] = 0;
    }
  }
}

// The largest |in| of the lane's vectors, two at a time in the input format
// (max.NaN.bf16x2 / max.NaN.f16x2 keep a NaN); rows past the data
// were loaded as 0 and do not count.  With no mean to subtract, x = in * mul
// rounds monotonically, so the block's max |x| is |mul| * max |in| rounded
// once, exactly what taking max |x| element by element gives.
// m2 (two |in| maxima, packed) folded with one vector's pairs.
MX_INLINE u32 fold_abs_pairs(u32 m2, const in_vec &v) {
#pragma unroll
  for (int e = 0; e + 1 < VEC; e += 2) {
    const u32 pair = *(const u32 *)&v.h[e] & 0x7fff7fffu;
    if constexpr (IN_BF16) asm("max.NaN.bf16x2 %0, %0, %1;" : "+r"(m2) : "r"(pair));
    else asm("max.NaN.f16x2 %0, %0, %1;" : "+r"(m2) : "r"(pair));
  }
  return m2;
}
MX_INLINE float pair_max_to_f32(u32 m2) { return fmax_nan(in_to_f32((u16)m2), in_to_f32((u16)(m2 >> 16))); }
// One vector's largest |in| the same way (the per-thread groups' maxima, a
// slot at a time).
MX_INLINE float vec_in_amax(const in_vec &v) {
  if (VEC == 1) return abs_f(in_to_f32(v.h[0]));
  return pair_max_to_f32(fold_abs_pairs(0u, v));
}
MX_INLINE float in_amax(const in_vec (&t)[LANE_VECS]) {
  u32 m2 = 0u;
#pragma unroll
  for (int j = 0; j < LANE_VECS; j++) m2 = fold_abs_pairs(m2, t[j]);
  float amax = pair_max_to_f32(m2);
  if (VEC == 1)
#pragma unroll
    for (int j = 0; j < LANE_VECS; j++) amax = fmax_nan(amax, abs_f(in_to_f32(t[j].h[0])));
  return amax;
}

// x / scale's INT8 code in the low byte (upper bytes undefined), as
// to_int8(div_by_scale(x, r)) computes it, for a scale of at least 2^-100
// (r.k == 1, every scale but tiny ones: codes_slowly takes those) taken from
// the block's own maximum: scale = amax / 127 and r.inv = 1 / scale each
// rounded once put |x * r.inv| within 127 + 2^-16, so the clamps never act,
// and adding 1.5 * 2^23 rounds x * r.inv to an integer, half to even as
// cvt.rni does, with the integer's two's complement in the low byte of the
// sum's bits (an FADD where cvt runs at 16 a clock an SM).  A NaN product (a
// NaN or an infinite x) must code 0 as cvt makes it: max.f32 with -inf turns
// it into -inf, whose sum's low byte is 0.  The _rn intrinsics keep the two
// roundings from being contracted into one FFMA.
MX_INLINE u32 int8_code(float x, scale_recip r) {
  float y = __fmul_rn(x, r.inv);
  asm("max.f32 %0, %0, 0fFF800000;" : "+f"(y));
  return __float_as_uint(__fadd_rn(y, 12582912.f));
}
// The low bytes of four words, in order, in one word.
MX_INLINE u32 pack_low_bytes(u32 a, u32 b, u32 c, u32 d) {
  return __byte_perm(__byte_perm(a, b, 0x0040), __byte_perm(c, d, 0x0040), 0x5410);
}
// Codes of a padding row (`live` false) are 0, chosen a packed word at a time.
MX_INLINE void store_codes(u8 *dst, const u32 (&code)[VEC], bool live) {
  if (VEC % 4 == 0) {
    code_vec out;
#pragma unroll
    for (int i = 0; i < VEC / 4; i++)
      out.w[i] = live ? pack_low_bytes(code[4 * i], code[4 * i + 1], code[4 * i + 2], code[4 * i + 3]) : 0u;
    *(code_vec *)dst = out;
  } else {
#pragma unroll
    for (int e = 0; e < VEC; e++) dst[e] = live ? (u8)code[e] : (u8)0;
  }
}

// The channel means the lane meets, read once.  Slot j's first column is
// (lane + 32 j) % ROW_VECS * VEC, which repeats every ROW_VECS / gcd(32,
// ROW_VECS) slots: one set serves every slot where 32 divides by the
// vectors of a row, three where a row has 12 (D=96: 24 registers where a set
// a slot took 48, and the quant kernel 127).  Where gcd is 1 the period
// exceeds the lane's slots and each slot keeps its own.  The sets' slots are
// in the tile (32 * period <= 16 * ROW_VECS when gcd >= 2).
// x_of: slot j's element e as quantized, in * mul - mean.
constexpr int gcd_of(int a, int b) { return b == 0 ? a : gcd_of(b, a % b); }
constexpr int MEAN_PERIOD = ROW_VECS / gcd_of(32, ROW_VECS);
constexpr int MEAN_SETS = MEAN_PERIOD < LANE_VECS ? MEAN_PERIOD : LANE_VECS;
MX_INLINE void load_means(const float *mean, float (&m)[MEAN_SETS][VEC]) {
#pragma unroll
  for (int j = 0; j < MEAN_SETS; j++) {
    int r, c;
    const bool in_tile = tile_slot(j, r, c);
#pragma unroll
    for (int e = 0; e < VEC; e++) m[j][e] = mean && in_tile ? mean[c + e] : 0.f;
  }
}
MX_INLINE float x_of(const in_vec (&t)[LANE_VECS], const float (&m)[MEAN_SETS][VEC], int j, int e, float mul,
                     bool has_mean) {
  const float x = in_to_f32(t[j].h[e]) * mul;
  return has_mean ? x - m[j % MEAN_SETS][e] : x;
}

// Where the codes go: row-major rows of D32 bytes (the workspace's Q8/K8).
struct rows_of_d32 {
  u8 *base;
  MX_INLINE u8 *operator()(int r, int c) const { return base + r * D32 + c; }
};
// Row r's per-thread group (described below, before group_amax).
template <int G> MX_INLINE int row_group(int r) { return G == 8 ? r % 8 : r % 8 / 2; }

// The codes of a warp's 16-row block when a scale is below 2^-100 (a block of
// tiny or zero values, where r.k = 2^100 and the clamps may act): rare, so a
// loop that reads the input again, element by element, instead of a second
// unrolled copy of the fast path, which cost NVRTC 40% of the quant kernel's
// compile (int8-fp8 D=256 on the CPU machine: 1149 -> 692 ms without it).
// Codes as the fast path makes them: x = in * mul - mean[c], to_int8 of
// div_by_scale by row r's scale (scale_of(r)); padding rows (K) code 0.
struct one_scale {
  float s;
  MX_INLINE float operator()(int) const { return s; }
};
template <int G> struct group_scales {
  float lane_scale;   // lane g holds group g's scale
  MX_INLINE float operator()(int r) const { return __shfl_sync(0xffffffffu, lane_scale, row_group<G>(r)); }
};
template <class Scales, class Dst>
MX_INLINE void codes_slowly(const u16 *src, i64 ss, int row0, int rows, float mul, const float *mean, Scales scale_of,
                             Dst dst) {
#pragma unroll 1
  for (int j = 0; j < LANE_VECS; j++) {
    int r, c;
    const bool slot = tile_slot(j, r, c);
    const float scale = scale_of(r);   // every lane takes part (a shuffle for groups)
    if (!slot) continue;
    const bool live = row0 + r < rows;
    const scale_recip ri = scale_reciprocal(scale);
    u32 code[VEC];
#pragma unroll
    for (int e = 0; e < VEC; e++) {
      const float x = (live ? ld_in(src + (i64)(row0 + r) * ss + c + e) : 0.f) * mul;
      code[e] = to_int8(div_by_scale(mean ? x - mean[c + e] : x, ri));
    }
    store_codes(dst(r, c), code, scale > 0.f && (!mean || live));
  }
}

// One warp quantizes 16 rows [row0, row0 + 16) of a [seq, D] slice (rows at or
// past `rows` are padding) with one scale: x = in * mul - mean[c].
MX_INLINE void quantize_rows(const u16 *src, i64 ss, int row0, int rows, float mul, const float *mean,
                             u8 *dst, float *scale_out) {
  in_vec t[LANE_VECS];
  load_rows(src, ss, row0, rows, t);
  float m[MEAN_SETS][VEC];
  load_means(mean, m);
  auto x_at = [&](int j, int e) { return x_of(t, m, j, e, mul, mean != nullptr); };
  // Step 1: the block's absolute maximum -> its scale.
  float amax = 0.f;
  if (mean) {
#pragma unroll
    for (int j = 0; j < LANE_VECS; j++) {
      int r, c;
      if (tile_slot(j, r, c) && row0 + r < rows)
#pragma unroll
        for (int e = 0; e < VEC; e++) amax = fmax_nan(amax, abs_f(x_at(j, e)));
    }
  } else {
    amax = __fmul_rn(in_amax(t), abs_f(mul));
  }
  const float scale = nan_if_inf(div_rn(warp_max(amax), 127.f));
  if (threadIdx.x % 32 == 0) *scale_out = scale;
  const scale_recip inv = scale_reciprocal(scale);
  // Step 2: the codes; padding rows and columns are 0 (a padding row of Q
  // was loaded as 0 and codes to 0; K's has its mean subtracted).
  if (inv.k == 1.f) {   // every scale but tiny ones: no clamps, and the scale is above 0
#pragma unroll
    for (int j = 0; j < LANE_VECS; j++) {
      int r, c;
      if (!tile_slot(j, r, c)) continue;
      u32 code[VEC];
#pragma unroll
      for (int e = 0; e < VEC; e++) code[e] = int8_code(x_at(j, e), inv);
      store_codes(dst + r * D32 + c, code, !mean || row0 + r < rows);
    }
  } else {
    codes_slowly(src, ss, row0, rows, mul, mean, one_scale{scale}, rows_of_d32{dst});
  }
  constexpr int PAD_COLS = D32 - D > 0 ? D32 - D : 1;
  if (D32 > D)
    for (int i = threadIdx.x % 32; i < 16 * PAD_COLS; i += 32) dst[i / PAD_COLS * D32 + D + i % PAD_COLS] = 0;
}

// ---- per-thread groups (PER_THREAD: SageAttention2's sm90 scheme) -------
// A scale for the rows one thread of an MMA fragment holds: within a 16-row
// block, Q's row r is in group r % 8 (rows g and g + 8: G = 8 groups a
// block); K's key r of a 128-key window in group (r % 8) / 2 (G = 4 groups a
// window, each spread over its eight 16-key blocks).  numerics' per-thread
// quantizer (mx_int8_quantize_per_thread) is the same bit for bit: each
// group's amax over its rows, scale = amax / 127, codes by that scale
// (row_group, above, names a row's group).

// The lane's largest |x| of each group over its loaded 16-row block at row0
// (rows at or past `rows` do not count), into amax.  Without a mean, the
// largest |in| of each slot in the input format, times |mul| once at the
// end (in_amax says why that is exact).
template <int G> MX_INLINE void group_amax(const in_vec (&t)[LANE_VECS], const float (&m)[MEAN_SETS][VEC], int row0,
                                           int rows, float mul, bool has_mean, float (&amax)[G]) {
#pragma unroll
  for (int j = 0; j < LANE_VECS; j++) {
    int r, c;
    if (!tile_slot(j, r, c) || row0 + r >= rows) continue;
    float v = 0.f;
    if (has_mean) {
#pragma unroll
      for (int e = 0; e < VEC; e++) v = fmax_nan(v, abs_f(x_of(t, m, j, e, mul, true)));
    } else {
      v = vec_in_amax(t[j]);
    }
    // Every group takes the slot's maximum or 0 (a select per group): a
    // conditional update was turned into a store at a computed index, which
    // put amax in local memory.
#pragma unroll
    for (int g = 0; g < G; g++) amax[g] = fmax_nan(amax[g], row_group<G>(r) == g ? v : 0.f);
  }
  if (!has_mean)
#pragma unroll
    for (int g = 0; g < G; g++) amax[g] = __fmul_rn(amax[g], abs_f(mul));
}

// The codes of the loaded block by each row's group scale, which lane g % G
// holds (lane_scale) with its reciprocal: each slot fetches its row's by a
// shuffle (an array of G picked by the row went to local memory; a division
// a slot cost more than the shuffles).  Padding rows (K) and columns are 0.
// dst(r, c): the byte of the block's row r, column c (VEC codes from there
// stay in one 16-byte chunk, as a swizzled tile needs).
// src, ss and mean (nullptr: none): the block's input again, for codes_slowly.
template <int G, class Dst> MX_INLINE void group_codes(const u16 *src, i64 ss, const float *mean,
                                                       const in_vec (&t)[LANE_VECS], const float (&m)[MEAN_SETS][VEC],
                                                       int row0, int rows, float mul, float lane_scale, Dst dst) {
  const bool has_mean = mean != nullptr;
  const scale_recip lane_recip = scale_reciprocal(lane_scale);
  // With every scale at least 2^-100, k = 1 and every scale is above 0.
  if (__all_sync(0xffffffffu, !(lane_scale < 0x1p-100f))) {
#pragma unroll
    for (int j = 0; j < LANE_VECS; j++) {
      int r, c;
      const bool slot = tile_slot(j, r, c);
      // every lane takes part in the shuffle
      const scale_recip ri = {1.f, __shfl_sync(0xffffffffu, lane_recip.inv, row_group<G>(r))};
      if (!slot) continue;
      u32 code[VEC];
#pragma unroll
      for (int e = 0; e < VEC; e++) code[e] = int8_code(x_of(t, m, j, e, mul, has_mean), ri);
      store_codes(dst(r, c), code, !has_mean || row0 + r < rows);
    }
  } else {
    codes_slowly(src, ss, row0, rows, mul, mean, group_scales<G>{lane_scale}, dst);
  }
  constexpr int PAD_COLS = D32 - D > 0 ? D32 - D : 1;
  if (D32 > D)
    for (int i = threadIdx.x % 32; i < 16 * PAD_COLS; i += 32) *dst(i / PAD_COLS, D + i % PAD_COLS) = 0;
}

// One warp quantizes Q's 16-row block at row0 with its eight per-thread
// groups (rows g and g + 8) into dst (group_codes) and returns lane L's
// scale of group L % 8.  One load of each element, held in registers for the
// maxima and the codes, as quantize_rows does (the pass is bound by memory).
// The quant kernel and int8-fp8's attention kernel with fuse_q both call it.
template <class Dst> MX_INLINE float quantize_q_per_thread(const u16 *src, i64 ss, int row0, int rows, float mul,
                                                           Dst dst) {
  in_vec t[LANE_VECS];
  load_rows(src, ss, row0, rows, t);
  float m[MEAN_SETS][VEC];
  load_means(nullptr, m);
  float amax[8];
#pragma unroll
  for (int g = 0; g < 8; g++) amax[g] = 0.f;
  group_amax<8>(t, m, row0, rows, mul, false, amax);
  const int lane = threadIdx.x % 32;
  float lane_scale = 0.f;                  // group lane % 8's
#pragma unroll
  for (int g = 0; g < 8; g++) {
    const float s = nan_if_inf(div_rn(warp_max(amax[g]), 127.f));
    if (lane % 8 == g) lane_scale = s;
  }
  group_codes<8>(src, ss, nullptr, t, m, row0, rows, mul, lane_scale, dst);
  return lane_scale;
}

// The block's eight warps quantize K's 128-key window at window0, a 16-key
// block each (warp w: keys window0 + 16 w; `live` false past the padded
// keys, which still meet the barrier), with the window's four per-thread
// groups (keys with the same (k % 8) / 2, spread over all eight blocks): each
// warp's group maxima meet in shared memory.  Every element is loaded once.
// scale_out gets the four scales.
MX_INLINE void quantize_k_window(const u16 *src, i64 ss, int window0, bool live, int rows, const float *mean,
                                 u8 *dst, float *scale_out) {
  __shared__ float warp_amax[8][4];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, row0 = window0 + 16 * warp;
  in_vec t[LANE_VECS];
  float m[MEAN_SETS][VEC];
  float amax[4] = {0.f, 0.f, 0.f, 0.f};
  if (live) {
    load_rows(src, ss, row0, rows, t);
    load_means(mean, m);
    group_amax<4>(t, m, row0, rows, 1.f, mean != nullptr, amax);
  }
  float mine = 0.f;                        // group lane % 4's maximum over the warp
#pragma unroll
  for (int g = 0; g < 4; g++) {
    const float w = warp_max(amax[g]);
    if (lane % 4 == g) mine = w;
  }
  if (lane < 4) warp_amax[warp][lane] = mine;
  __syncthreads();
  float window_amax = 0.f;
#pragma unroll
  for (int w = 0; w < 8; w++) window_amax = fmax_nan(window_amax, warp_amax[w][lane % 4]);
  const float lane_scale = nan_if_inf(div_rn(window_amax, 127.f));
  if (warp == 0 && lane < 4) scale_out[lane] = lane_scale;
  if (live) group_codes<4>(src, ss, mean, t, m, row0, rows, 1.f, lane_scale, rows_of_d32{dst});
}

// q_row . mean (q times mul: base-2 units), summed over the warp; 0 for rows
// at or past `rows`.  The smooth-K term that softmax cancels, needed only for
// the LSE: the quant kernel's smooth_k_correction and int8-fp8's fuse_q
// kernels (own_q_corrections) both take it from here.
MX_INLINE float smooth_k_term(const u16 *src, i64 ss, int row, int rows, float mul, const float *mean) {
  float dot = 0.f;
  if (row < rows)
    for (int c = threadIdx.x % 32; c < D; c += 32) dot += ld_in(src + (i64)row * ss + c) * mul * mean[c];
  return warp_sum(dot);
}

// corr[r] = the smooth-K term of each of the 16 rows from row0.
MX_INLINE void smooth_k_correction(const u16 *src, i64 ss, int row0, int rows, float mul, const float *mean,
                                   float *corr) {
  for (int r = 0; r < 16; r++) {
    const float dot = smooth_k_term(src, ss, row0 + r, rows, mul, mean);
    if (threadIdx.x % 32 == 0) corr[r] = dot;
  }
}
