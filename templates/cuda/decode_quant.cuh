// int8-fp8 in the decode schedule (cuda/fwd_decode.cuh with QUANT): Q, K and
// V are quantized in shared memory as they arrive, so no pass over the KV
// cache runs before the kernel and nothing is written back to it.  The
// rules are numerics/' (mx_ref_config): Q in INT8 a packed row, pre-scaled
// by sm_scale * log2(e) (int8_block_q = 1); every 16 keys of the cache are
// one block (kv_tile = int8_block_k = 16): K smoothed by the block's own
// channel mean, its scores getting q . mean back, and quantized to INT8 on
// one scale, V in E4M3 on the block's per-channel scales; P in E4M3 under a
// running max rounded up to a power of two (p_base_pow2), so that key warps
// and pieces with maxima of their own make the codes the reference makes.
// K's and Q's INT8 codes are bytes for the s8 MMA (s32 sums, exact); V's
// and P's E4M3 codes are stored as fp16 values (exact: 4 significant bits
// from 2^-9) for the fp16 MMA, the products exact before fp32 accumulation.
// Every rounding follows numerics/ (cuda/scale_recip.cuh's x / scale, amax
// with NaN kept, a scale of 0 gives codes 0) but the mean, a sum in fp32
// here and in fp64 there, which moves a code now and then; a NaN or infinite
// K element makes its block's scores NaN in both (here through the mean and
// the scale, there through the scale).  The INT8 rounding adds 1.5 * 2^23 on
// the FP32 pipe instead of cvt.rni, whose conversion pipe runs at a quarter
// of the rate and is the E4M3 codes' already.
//
// A 16-key block is quantized by the warps that read it, the ROW_WARPS warps
// of one key warp (ROW_WARPS = 1 in the decode default: by itself, with no
// barrier), each taking a share of its channels, a lane 4 channels of 16
// keys in registers.  Only K's scale needs the other lanes (a warp
// reduction, and between row warps a named barrier).
//
// Reads IN_BF16 and the schedule's constants, and the shared-memory offsets
// (families/decode.lua lays them out):
//   SM_QC [BM][2 * RS] bytes: Q's INT8 codes   SM_QSC [BM] Q scales
//   SM_KMEAN [BN/16][D_PAD] the blocks' K means   SM_VSD [BN/16][D_PAD] V scale / 448
//   SM_KPART [BN/16][ROW_WARPS] the row warps' K maxima
constexpr int KGW = KPW / 16;                 // 16-key blocks a warp reads in a tile
constexpr int NQUAD = D_PAD / 4;              // 4-channel lanes' shares
constexpr int D32 = (D_PAD + 31) / 32 * 32;   // the s8 MMA's channels (codes 0 past D_PAD)
constexpr int NQUAD32 = D32 / 4;

MX_INLINE float in_to_f32(u16 h) {
  if constexpr (IN_BF16) return __int_as_float((int)((u32)h << 16));
  else { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
}
MX_INLINE float abs_f(float x) { float r; asm("abs.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
// numerics' fp32_scale: amax / div, NaN for a NaN or infinite amax.
MX_INLINE float block_scale(float amax, float div) {
  return finite_f(amax) ? div_rn(amax, div) : __int_as_float(0x7fffffff);
}
MX_INLINE u32 int8_code(float x, scale_recip r, float scale) { return scale > 0.f ? to_int8(div_by_scale(x, r)) : 0u; }
template <class T> MX_INLINE T *smem_at(int off) {
  extern __shared__ __align__(16) u16 smem[];
  return (T *)((u8 *)smem + off);
}

// Q's packed rows (in sQ as loaded) to INT8 codes in SM_QC (bytes at the
// start of each RS-half row, D32 of them) and scales in SM_QSC, one warp a
// row: q' = q * scale_log2, scale = amax(q') / 127.
MX_INLINE void decode_quant_q(float scale_log2) {
  const u16 *q = smem_at<u16>(SM_Q);
  u16 *qc = smem_at<u16>(SM_QC);
  float *qsc = smem_at<float>(SM_QSC);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = warp; r < BM; r += WARPS) {
    float amax = 0.f;
    for (int c = lane * 2; c < D_PAD; c += 64) {
      const u32 x = *(const u32 *)(q + r * RS + c);
      amax = fmax_nan(amax, fmax_nan(abs_f(__fmul_rn(in_to_f32((u16)x), scale_log2)),
                                     abs_f(__fmul_rn(in_to_f32((u16)(x >> 16)), scale_log2))));
    }
#pragma unroll
    for (int s = 16; s > 0; s /= 2) amax = fmax_nan(amax, __shfl_xor_sync(0xffffffffu, amax, s));
    const float scale = block_scale(amax, 127.f);
    const scale_recip inv = scale_reciprocal(scale);
    for (int c = lane * 2; c < D32; c += 64) {   // bytes, zeros from D_PAD to D32
      const u32 x = c < D_PAD ? *(const u32 *)(q + r * RS + c) : 0u;
      const u32 lo = int8_code(__fmul_rn(in_to_f32((u16)x), scale_log2), inv, scale);
      const u32 hi = int8_code(__fmul_rn(in_to_f32((u16)(x >> 16)), scale_log2), inv, scale);
      *(u16 *)((u8 *)qc + r * RS * 2 + c) = (u16)(lo | (hi << 8));
    }
    if (lane == 0) qsc[r] = scale;
  }
}

// ---- a 16-key block --------------------------------------------------------
struct alignas(8) u32x2 { u32 x, y; };
// Two inputs as floats (bf16: shifts; fp16: cvt).
MX_INLINE void in2_to_f32(u32 x, float &lo, float &hi) {
  if constexpr (IN_BF16) { lo = __int_as_float((int)(x << 16)); hi = __int_as_float((int)(x & 0xffff0000u)); }
  else { lo = in_to_f32((u16)x); hi = in_to_f32((u16)(x >> 16)); }
}
MX_INLINE void in4_to_f32(u32x2 x, float (&f)[4]) { in2_to_f32(x.x, f[0], f[1]); in2_to_f32(x.y, f[2], f[3]); }
// Packed max / min of two inputs, a NaN kept.
MX_INLINE u32 max2_nan(u32 a, u32 b) {
  u32 r;
  if constexpr (IN_BF16) asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  else asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
MX_INLINE u32 min2_nan(u32 a, u32 b) {
  u32 r;
  if constexpr (IN_BF16) asm("min.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  else asm("min.NaN.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
constexpr u32 PAIR_NEG_INF = IN_BF16 ? 0xff80ff80u : 0xfc00fc00u, PAIR_POS_INF = IN_BF16 ? 0x7f807f80u : 0x7c007c00u;
MX_INLINE u32 warp_max_u32(u32 x) { u32 r; asm volatile("redux.sync.max.u32 %0, %1, 0xffffffff;" : "=r"(r) : "r"(x)); return r; }
// The ROW_WARPS warps of key warp kw (named barrier 1 + kw; barrier 0 is __syncthreads).
MX_INLINE void key_warp_sync(int kw) {
  if constexpr (ROW_WARPS == 1) __syncwarp();
  else asm volatile("bar.sync %0, %1;" :: "r"(1 + kw), "n"(ROW_WARPS * 32) : "memory");
}
// The multiplier of x / scale: numerics' (x * k) * inv folded to x * (k * inv),
// exact while k * inv is finite; a block so small that it is not (amax under
// about 2^-120), or of scale 0 or NaN, gets 0: its codes are 0 (a NaN scale
// still makes its scores NaN).
MX_INLINE float code_multiplier(float scale) {
  const scale_recip r = scale_reciprocal(scale);
  const float m = __fmul_rn(r.k, r.inv);
  return scale > 0.f && finite_f(m) ? m : 0.f;
}
// d += a * b in the inputs' type (q . mean).
MX_INLINE void mma_16816_in(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  if constexpr (IN_BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// V's 16 keys x 4 channels at column c of the tile (rows past the keys are
// zeros) to E4M3 codes in place, on the channels' scales, / 448 into vsd.
MX_INLINE void quant_v_quad(u16 *vt, float *vsd, int key0, int c) {
  u32x2 x[16], a2 = {0u, 0u};
  float va[4], vm[4], vs[4];
#pragma unroll
  for (int j = 0; j < 16; j++) x[j] = *(const u32x2 *)(vt + (key0 + j) * RS + c);
#pragma unroll
  for (int j = 0; j < 16; j++) {   // |v| on the pairs (a NaN stays one)
    a2.x = max2_nan(a2.x, x[j].x & 0x7fff7fffu);
    a2.y = max2_nan(a2.y, x[j].y & 0x7fff7fffu);
  }
  in4_to_f32(a2, va);
#pragma unroll
  for (int e = 0; e < 4; e++) { vs[e] = block_scale(va[e], 448.f); vm[e] = code_multiplier(vs[e]); }
#pragma unroll
  for (int j = 0; j < 16; j++) {
    float f[4];
    in4_to_f32(x[j], f);
    u32x2 out;
    out.x = e4m3x2_to_f16x2(to_e4m3x2(__fmul_rn(f[0], vm[0]), __fmul_rn(f[1], vm[1])));
    out.y = e4m3x2_to_f16x2(to_e4m3x2(__fmul_rn(f[2], vm[2]), __fmul_rn(f[3], vm[3])));
    *(u32x2 *)(vt + (key0 + j) * RS + c) = out;
  }
  *(f32x2 *)(vsd + c) = f32x2{vs[0] * (1.f / 448.f), vs[1] * (1.f / 448.f)};
  *(f32x2 *)(vsd + c + 2) = f32x2{vs[2] * (1.f / 448.f), vs[3] * (1.f / 448.f)};
}

// K's channel means over the first nv of 16 keys x 4 channels into kmean;
// returns the largest |k - mean| among them, max(kmax - mean, mean - kmin)
// (rounding is monotonic: the same fp32 value as the largest rounded difference).
MX_INLINE float k_stats_quad(const u16 *kt, float *kmean, int key0, int c, int nv, u32x2 (&x)[16]) {
  u32x2 hi2 = {PAIR_NEG_INF, PAIR_NEG_INF}, lo2 = {PAIR_POS_INF, PAIR_POS_INF};
  float sum[4] = {0.f, 0.f, 0.f, 0.f}, hi[4], lo[4], mean[4], amax = 0.f;
#pragma unroll
  for (int j = 0; j < 16; j++) x[j] = *(const u32x2 *)(kt + (key0 + j) * RS + c);
#pragma unroll
  for (int j = 0; j < 16; j++) {
    if (j >= nv) break;
    float f[4];
    in4_to_f32(x[j], f);
#pragma unroll
    for (int e = 0; e < 4; e++) sum[e] += f[e];
    hi2.x = max2_nan(hi2.x, x[j].x); hi2.y = max2_nan(hi2.y, x[j].y);
    lo2.x = min2_nan(lo2.x, x[j].x); lo2.y = min2_nan(lo2.y, x[j].y);
  }
  in4_to_f32(hi2, hi);
  in4_to_f32(lo2, lo);
#pragma unroll
  for (int e = 0; e < 4; e++) {
    mean[e] = nv > 0 ? div_rn(sum[e], (float)nv) : 0.f;
    if (nv > 0) amax = fmax_nan(amax, fmax_nan(hi[e] - mean[e], mean[e] - lo[e]));
  }
  *(f32x2 *)(kmean + c) = f32x2{mean[0], mean[1]};
  *(f32x2 *)(kmean + c + 2) = f32x2{mean[2], mean[3]};
  return amax;
}

// K - mean of 16 keys x 4 channels (x: as loaded) to INT8 codes, 4 bytes at
// byte c of each key's row: |(k - mean) * mul| <= 127 and a bit, so no
// clamp; 1.5 * 2^23 added rounds it half to even on the FP32 pipe and leaves
// the code, two's complement, in the float's low byte.  The row's bytes
// overwrite other lanes' inputs: every lane of the key warp has loaded its
// own before (the reduction of K's maximum is between).
MX_INLINE void k_codes_quad(u16 *kt, const float *kmean, int key0, int c, float mul, const u32x2 (&x)[16]) {
  const f32x2 m01 = *(const f32x2 *)(kmean + c), m23 = *(const f32x2 *)(kmean + c + 2);
  const float mean[4] = {m01.x, m01.y, m23.x, m23.y};
#pragma unroll
  for (int j = 0; j < 16; j++) {
    float f[4];
    in4_to_f32(x[j], f);
    u32 b[4];
#pragma unroll
    for (int e = 0; e < 4; e++) b[e] = __float_as_uint(__fadd_rn(__fmul_rn(f[e] - mean[e], mul), 12582912.f));
    *(u32 *)((u8 *)kt + (key0 + j) * RS * 2 + c) = __byte_perm(__byte_perm(b[0], b[1], 0x0040), __byte_perm(b[2], b[3], 0x0040), 0x5410);
  }
}

// This warp's share of block g of its key warp kw (keys key0 .. key0 + 15 of
// the tile, the first nv of them real, the rest zeros), a lane 4 channels:
// V to codes, K's means, K to codes on the block's scale, which is returned.
MX_INLINE float decode_quant_block(u16 *kt, u16 *vt, int kw, int wr, int g, int key0, int nv) {
  const int lane = threadIdx.x % 32, blk = kw * KGW + g;
  float *kmean = smem_at<float>(SM_KMEAN) + blk * D_PAD, *vsd = smem_at<float>(SM_VSD) + blk * D_PAD;
  constexpr int QPL = (NQUAD32 + ROW_WARPS * 32 - 1) / (ROW_WARPS * 32);   // quads a lane
  u32x2 x[QPL][16];
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < QPL; i++) {
    const int qd = wr * 32 + lane + i * ROW_WARPS * 32;
    if (qd < NQUAD) {
      quant_v_quad(vt, vsd, key0, qd * 4);
      amax = fmax_nan(amax, k_stats_quad(kt, kmean, key0, qd * 4, nv, x[i]));
    }
  }
  // The block's K maximum: over the warp (bits: amax >= 0, NaN above all), then its row warps.
  u32 bits = warp_max_u32(__float_as_uint(amax));
  if constexpr (ROW_WARPS > 1) {
    u32 *part = smem_at<u32>(SM_KPART) + blk * ROW_WARPS;
    if (lane == 0) part[wr] = bits;
    key_warp_sync(kw);
    bits = 0u;
#pragma unroll
    for (int w = 0; w < ROW_WARPS; w++) bits = max(bits, part[w]);
  }
  if constexpr (ROW_WARPS == 1) __syncwarp();   // (the reduction is the sync; this names it)
  const float scale = block_scale(__uint_as_float(bits), 127.f), mul = code_multiplier(scale);
#pragma unroll
  for (int i = 0; i < QPL; i++) {
    const int qd = wr * 32 + lane + i * ROW_WARPS * 32;
    if (qd < NQUAD) k_codes_quad(kt, kmean, key0, qd * 4, mul, x[i]);
    else if (qd < NQUAD32)
#pragma unroll
      for (int j = 0; j < 16; j++) *(u32 *)((u8 *)kt + (key0 + j) * RS * 2 + qd * 4) = 0u;
  }
  return scale;
}

// This warp's blocks of the tile, then their q' . mean for its two rows (in
// base 2: q' = q * scale_log2): one MMA of Q as loaded (q_orig, this lane's
// ldmatrix row) times the means, each split into two terms of the inputs'
// type (hi + lo: 16 significant bits of the fp32 mean, where the INT8 codes'
// rounding moves a score by far more).  corr[g][h] is block g's for
// row h; ks[g] its K scale.
MX_INLINE void decode_quant_tile(u16 *kt, u16 *vt, u32 q_orig, int kw, int wr, int n, float scale_log2,
                                 float (&ks)[KGW], float (&corr)[KGW][2]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int g = 0; g < KGW; g++) {
    const int key0 = kw * KPW + g * 16;
    ks[g] = decode_quant_block(kt, vt, kw, wr, g, key0, min(16, max(0, n - key0)));
  }
  key_warp_sync(kw);                      // the codes and means of the key warp's blocks are written
  constexpr int CT = (2 * KGW + 7) / 8;   // n8 tiles of (hi, lo) columns, two a block
  float d[CT][4];
#pragma unroll
  for (int ct = 0; ct < CT; ct++) d[ct][0] = d[ct][1] = d[ct][2] = d[ct][3] = 0.f;
  const float *kmean = smem_at<float>(SM_KMEAN) + kw * KGW * D_PAD;
#pragma unroll
  for (int kd = 0; kd < KD; kd++) {
    u32 qa[4];
    ldsm_x4(qa, q_orig + kd * 16 * 2);
#pragma unroll
    for (int ct = 0; ct < CT; ct++) {
      // Column n = lane / 4 of tile ct: block (ct * 8 + n) / 2, its hi (even n) or lo term.
      const int col = ct * 8 + lane / 4, blk = col / 2, k = kd * 16 + (lane % 4) * 2;
      u32 b[2] = {0u, 0u};
      if (blk < KGW) {
        const float *m = kmean + blk * D_PAD + k;
        const float mk[4] = {m[0], m[1], m[8], m[9]};
        float t[4];
        if constexpr (IN_BF16) {
          // bf16 terms by truncation (bit masks, no conversion): hi exact,
          // lo = m - hi exact in fp32, then truncated to 8 bits of its own.
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const float h = __uint_as_float(__float_as_uint(mk[e]) & 0xffff0000u);
            t[e] = col % 2 == 0 ? h : __uint_as_float(__float_as_uint(mk[e] - h) & 0xffff0000u);
          }
          b[0] = (__float_as_uint(t[0]) >> 16) | (__float_as_uint(t[1]) & 0xffff0000u);
          b[1] = (__float_as_uint(t[2]) >> 16) | (__float_as_uint(t[3]) & 0xffff0000u);
        } else {
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const float h = in_to_f32(to_f16(mk[e]));
            t[e] = col % 2 == 0 ? h : mk[e] - h;
          }
          b[0] = pack_f16(t[0], t[1]);
          b[1] = pack_f16(t[2], t[3]);
        }
      }
      mma_16816_in(d[ct], qa, b[0], b[1]);
    }
  }
  // Lane 4r + i holds columns 2i, 2i + 1 of rows r and r + 8: block ct * 4 + i.
#pragma unroll
  for (int g = 0; g < KGW; g++) {
    const int src = (lane & ~3) | (g % 4);
    const float c0 = __shfl_sync(0xffffffffu, d[g / 4][0] + d[g / 4][1], src);
    const float c1 = __shfl_sync(0xffffffffu, d[g / 4][2] + d[g / 4][3], src);
    corr[g][0] = c0 * scale_log2;
    corr[g][1] = c1 * scale_log2;
  }
}

// d += a * b on the s8 tensor cores (m16n8k32, s32 accumulation).
MX_INLINE void mma_16832_s8(int (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// The byte codes' ldmatrix fragments are the fp16 ones' (16 bytes a row of
// an 8x8 b16 matrix): q_lane and kt are the fp16 kernel's lane addresses,
// and a k-step of 32 channels is 32 bytes, as one of 16 fp16 channels.
// INT8 scores to fp32 exactly (|s| < 2^22: 127 * 127 * 256) by an integer
// add and an FADD, off the conversion pipe.
MX_INLINE void decode_scores_s8(float (&s)[NT][4], const u32 (&qf)[KD][4], u32 q_lane, u32 kt) {
  int acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0;
#pragma unroll
  for (int kd = 0; kd < D32 / 32; kd++) {
    u32 qk[4];
    if (Q_REGS) { qk[0] = qf[kd][0]; qk[1] = qf[kd][1]; qk[2] = qf[kd][2]; qk[3] = qf[kd][3]; }
    else ldsm_x4(qk, q_lane + kd * 32);
#pragma unroll
    for (int nn = 0; nn < KPW / 16; nn++) {
      u32 b[4];
      ldsm_x4(b, kt + nn * 16 * RS * 2 + kd * 32);
      mma_16832_s8(acc[2 * nn], qk, b[0], b[1]);
      mma_16832_s8(acc[2 * nn + 1], qk, b[2], b[3]);
    }
  }
#pragma unroll
  for (int nt = 0; nt < NT; nt++)
#pragma unroll
    for (int e = 0; e < 4; e++) s[nt][e] = __int_as_float(0x4B400000 + acc[nt][e]) - 12582912.f;
}

// The INT8 scores of this warp's tile in base 2: acc * qscale * kscale +
// q' . mean, each 16 keys on their block's.  qs are this thread's two rows'.
MX_INLINE void decode_dequant_scores(float (&s)[NT][4], const float (&qs)[2], const float (&ks)[KGW],
                                     const float (&corr)[KGW][2]) {
#pragma unroll
  for (int nt = 0; nt < NT; nt++)
#pragma unroll
    for (int e = 0; e < 4; e++) s[nt][e] = fmaf(s[nt][e], __fmul_rn(qs[e / 2], ks[nt / 2]), corr[nt / 2][e / 2]);
}

// O += P V for a quantized tile: P * 448 in E4M3 (as fp16) times V's codes,
// each 16-key block summed apart and then scaled by its channel scales / 448.
MX_INLINE void decode_pv_quant(float (&o)[DT][4], const float (&s)[NT][4], u32 vt, int kw) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < KPW / 16; kk++) {
    const float *vsd = smem_at<float>(SM_VSD) + (kw * KGW + kk) * D_PAD;
    u32 p[4];
    p[0] = e4m3x2_to_f16x2(to_e4m3x2(s[2 * kk][0] * 448.f, s[2 * kk][1] * 448.f));
    p[1] = e4m3x2_to_f16x2(to_e4m3x2(s[2 * kk][2] * 448.f, s[2 * kk][3] * 448.f));
    p[2] = e4m3x2_to_f16x2(to_e4m3x2(s[2 * kk + 1][0] * 448.f, s[2 * kk + 1][1] * 448.f));
    p[3] = e4m3x2_to_f16x2(to_e4m3x2(s[2 * kk + 1][2] * 448.f, s[2 * kk + 1][3] * 448.f));
#pragma unroll
    for (int dd = 0; dd < D_PAD / 16; dd++) {
      u32 b[4];
      float t0[4] = {0.f, 0.f, 0.f, 0.f}, t1[4] = {0.f, 0.f, 0.f, 0.f};
      ldsm_x4_trans(b, vt + (kk * 16 * RS + dd * 16) * 2);
      mma_16816_x2(t0, t1, p, b);
      const f32x2 v0 = *(const f32x2 *)(vsd + dd * 16 + (lane % 4) * 2);
      const f32x2 v1 = *(const f32x2 *)(vsd + dd * 16 + 8 + (lane % 4) * 2);
      o[2 * dd][0] = fmaf(t0[0], v0.x, o[2 * dd][0]); o[2 * dd][1] = fmaf(t0[1], v0.y, o[2 * dd][1]);
      o[2 * dd][2] = fmaf(t0[2], v0.x, o[2 * dd][2]); o[2 * dd][3] = fmaf(t0[3], v0.y, o[2 * dd][3]);
      o[2 * dd + 1][0] = fmaf(t1[0], v1.x, o[2 * dd + 1][0]); o[2 * dd + 1][1] = fmaf(t1[1], v1.y, o[2 * dd + 1][1]);
      o[2 * dd + 1][2] = fmaf(t1[2], v1.x, o[2 * dd + 1][2]); o[2 * dd + 1][3] = fmaf(t1[3], v1.y, o[2 * dd + 1][3]);
    }
  }
}
