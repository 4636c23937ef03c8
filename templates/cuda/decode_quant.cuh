// int8-fp8 in the decode schedule (cuda/fwd_decode.cuh with QUANT): Q, K and
// V are quantized in shared memory as they arrive, so no pass over the KV
// cache runs before the kernel and nothing is written back to it.  The
// rules are numerics/' (mx_ref_config): Q in INT8 a packed row, pre-scaled
// by sm_scale * log2(e) (int8_block_q = 1); each key tile of BN keys smoothed
// by its own channel mean, its score getting q . mean back (kv_tile = BN);
// K in INT8 per 16 keys (int8_block_k = 16); V in E4M3 with per-channel
// scales of the tile; P in E4M3 under a running max rounded up to a power of
// two (p_base_pow2), so that key warps and pieces with maxima of their own
// make the codes the reference makes.  Each code is stored as an fp16 value
// (exact: |INT8| <= 127, E4M3 4 significant bits from 2^-9), and the products
// run on the fp16 m16n8k16 MMA: the INT8 scores' fp32 sums are exact (at most
// 127 * 127 * 256 < 2^24), the P V products exact in fp32 before accumulation.
// Every rounding follows numerics/ (cuda/scale_recip.cuh's x / scale, amax
// with NaN kept, a scale of 0 gives codes 0), but the mean, a sum in fp32
// here and in fp64 there, which moves a code now and then.
//
// Reads IN_BF16 and the schedule's constants, and QC_* (shared-memory
// offsets of the quantized state, blocks in families/decode.lua):
//   SM_QC [BM][RS] fp16 Q codes      SM_QSC [BM] Q scales   SM_CORR [BM] q'.mean
//   SM_KMEAN [D_PAD] the tile's K mean   SM_VSD [D_PAD] V scale / 448
//   SM_KAMAX [K_QWARPS][BN/16] partial maxima   SM_KSC [BN/16] K scales
// Half the threads quantize K, the other half V (then the correction).
constexpr int QT = THREADS / 2;               // threads on K (and on V)
constexpr int K_QWARPS = QT / 32;
constexpr int KG = BN / 16;                   // K scale groups a tile
constexpr int NPAIR = D_PAD / 2;              // channel pairs

MX_INLINE float in_to_f32(u16 h) {
  if constexpr (IN_BF16) return __int_as_float((int)((u32)h << 16));
  else { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
}
MX_INLINE float fmin_nan(float a, float b) { float r; asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
MX_INLINE float abs_f(float x) { float r; asm("abs.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
// numerics' fp32_scale: amax / div, NaN for a NaN or infinite amax.
MX_INLINE float block_scale(float amax, float div) {
  return finite_f(amax) ? div_rn(amax, div) : __int_as_float(0x7fffffff);
}
MX_INLINE u32 int8_f16(float x, scale_recip r, float scale) {
  return scale > 0.f ? (u32)to_f16((float)(signed char)to_int8(div_by_scale(x, r))) : 0u;
}
template <class T> MX_INLINE T *smem_at(int off) {
  extern __shared__ __align__(16) u16 smem[];
  return (T *)((u8 *)smem + off);
}

// Q's packed rows (in sQ as loaded) to codes in SM_QC and scales in SM_QSC,
// one warp a row: q' = q * scale_log2, scale = amax(q') / 127.
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
    for (int c = lane * 2; c < D_PAD; c += 64) {
      const u32 x = *(const u32 *)(q + r * RS + c);
      const u32 lo = int8_f16(__fmul_rn(in_to_f32((u16)x), scale_log2), inv, scale);
      const u32 hi = int8_f16(__fmul_rn(in_to_f32((u16)(x >> 16)), scale_log2), inv, scale);
      *(u32 *)(qc + r * RS + c) = lo | (hi << 16);
    }
    if (lane == 0) qsc[r] = scale;
  }
}

// Phase 1 of a tile (keys [key0, key0 + n) valid, the rest zeros).  K
// threads: each channel's mean over the n keys (NaN and infinities count as
// 0, as in numerics) into SM_KMEAN, and each 16-key group's max |k - mean|
// over the thread's channels, reduced over its warp into SM_KAMAX.  The
// group's max |k - mean| is max(kmax - mean, mean - kmin): rounding is
// monotonic, so this is the same fp32 value as the largest of the rounded
// differences.  V threads: the whole of V's quantization, channel by
// channel, in place, and the scale / 448 into SM_VSD.
MX_INLINE void decode_quant_tile_1(u16 *kt, u16 *vt, int n) {
  const int tid = threadIdx.x;
  if (tid < QT) {
    float gmax[KG];
#pragma unroll
    for (int g = 0; g < KG; g++) gmax[g] = 0.f;
    for (int p = tid; p < NPAIR; p += QT) {
      float sum[2] = {0.f, 0.f}, hi[KG][2], lo[KG][2];
#pragma unroll
      for (int g = 0; g < KG; g++) {
        hi[g][0] = hi[g][1] = MX_NEG_INF;
        lo[g][0] = lo[g][1] = -MX_NEG_INF;
#pragma unroll 4
        for (int jj = 0; jj < 16; jj++) {
          const int j = g * 16 + jj;
          const u32 x = *(const u32 *)(kt + j * RS + 2 * p);
          const float v[2] = {in_to_f32((u16)x), in_to_f32((u16)(x >> 16))};
          if (j < n)
#pragma unroll
            for (int e = 0; e < 2; e++) {
              sum[e] += finite_f(v[e]) ? v[e] : 0.f;
              hi[g][e] = fmax_nan(hi[g][e], v[e]);
              lo[g][e] = fmin_nan(lo[g][e], v[e]);
            }
        }
      }
      float mean[2];
#pragma unroll
      for (int e = 0; e < 2; e++) mean[e] = n > 0 ? div_rn(sum[e], (float)n) : 0.f;
      *(f32x2 *)(smem_at<float>(SM_KMEAN) + 2 * p) = f32x2{mean[0], mean[1]};
#pragma unroll
      for (int g = 0; g < KG; g++)
#pragma unroll
        for (int e = 0; e < 2; e++)
          if (g * 16 < n) gmax[g] = fmax_nan(gmax[g], fmax_nan(hi[g][e] - mean[e], mean[e] - lo[g][e]));
    }
#pragma unroll
    for (int g = 0; g < KG; g++) {
#pragma unroll
      for (int s = 16; s > 0; s /= 2) gmax[g] = fmax_nan(gmax[g], __shfl_xor_sync(0xffffffffu, gmax[g], s));
      if (tid % 32 == 0) smem_at<float>(SM_KAMAX)[(tid / 32) * KG + g] = gmax[g];
    }
  } else {
    for (int p = tid - QT; p < NPAIR; p += QT) {
      float amax[2] = {0.f, 0.f};
#pragma unroll 4
      for (int j = 0; j < BN; j++) {   // rows past n are zeros
        const u32 x = *(const u32 *)(vt + j * RS + 2 * p);
        amax[0] = fmax_nan(amax[0], abs_f(in_to_f32((u16)x)));
        amax[1] = fmax_nan(amax[1], abs_f(in_to_f32((u16)(x >> 16))));
      }
      float scale[2];
      scale_recip inv[2];
#pragma unroll
      for (int e = 0; e < 2; e++) {
        scale[e] = block_scale(amax[e], 448.f);
        inv[e] = scale_reciprocal(scale[e]);
      }
#pragma unroll 4
      for (int j = 0; j < BN; j++) {
        u32 *at = (u32 *)(vt + j * RS + 2 * p);
        const u32 x = *at;
        const float y0 = scale[0] > 0.f ? div_by_scale(in_to_f32((u16)x), inv[0]) : 0.f;
        const float y1 = scale[1] > 0.f ? div_by_scale(in_to_f32((u16)(x >> 16)), inv[1]) : 0.f;
        *at = e4m3x2_to_f16x2(to_e4m3x2(y0, y1));
      }
      *(f32x2 *)(smem_at<float>(SM_VSD) + 2 * p) = f32x2{scale[0] * (1.f / 448.f), scale[1] * (1.f / 448.f)};
    }
  }
}

// Phase 2, after a barrier.  K threads: the group scales (amax / 127) into
// SM_KSC and K - mean to codes, in place.  V threads: each packed row's
// q' . mean (q' = q * scale_log2, as Q was quantized) into SM_CORR, the
// smooth-K term in base 2, one warp a row.
MX_INLINE void decode_quant_tile_2(u16 *kt, float scale_log2) {
  const int tid = threadIdx.x;
  if (tid < QT) {
    float scale[KG];
    scale_recip inv[KG];
#pragma unroll
    for (int g = 0; g < KG; g++) {
      float amax = 0.f;
#pragma unroll
      for (int w = 0; w < K_QWARPS; w++) amax = fmax_nan(amax, smem_at<float>(SM_KAMAX)[w * KG + g]);
      scale[g] = block_scale(amax, 127.f);
      inv[g] = scale_reciprocal(scale[g]);
      if (tid == 0) smem_at<float>(SM_KSC)[g] = scale[g];
    }
    for (int p = tid; p < NPAIR; p += QT) {
      const f32x2 mean = *(const f32x2 *)(smem_at<float>(SM_KMEAN) + 2 * p);
#pragma unroll
      for (int g = 0; g < KG; g++)
#pragma unroll 4
        for (int jj = 0; jj < 16; jj++) {
          u32 *at = (u32 *)(kt + (g * 16 + jj) * RS + 2 * p);
          const u32 x = *at;
          const u32 lo = int8_f16(in_to_f32((u16)x) - mean.x, inv[g], scale[g]);
          const u32 hi = int8_f16(in_to_f32((u16)(x >> 16)) - mean.y, inv[g], scale[g]);
          *at = lo | (hi << 16);
        }
    }
  } else {
    const u16 *q = smem_at<u16>(SM_Q);
    const float *mean = smem_at<float>(SM_KMEAN);
    const int warp = (tid - QT) / 32, lane = tid % 32;
    for (int r = warp; r < BM; r += K_QWARPS) {
      float acc = 0.f;
      for (int c = lane * 2; c < D_PAD; c += 64) {
        const u32 x = *(const u32 *)(q + r * RS + c);
        acc = fmaf(__fmul_rn(in_to_f32((u16)x), scale_log2), mean[c], acc);
        acc = fmaf(__fmul_rn(in_to_f32((u16)(x >> 16)), scale_log2), mean[c + 1], acc);
      }
#pragma unroll
      for (int s = 16; s > 0; s /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, s);
      if (lane == 0) smem_at<float>(SM_CORR)[r] = acc;
    }
  }
}

// The INT8 scores of this warp's tile in base 2: acc * qscale * kscale +
// q' . mean.  qs and corr are this thread's two rows'.
MX_INLINE void decode_dequant_scores(float (&s)[NT][4], const float (&qs)[2], const float (&corr)[2], int kw) {
  const float *ksc = smem_at<float>(SM_KSC);
#pragma unroll
  for (int nt = 0; nt < NT; nt++) {
    const float ks = ksc[(kw * KPW + nt * 8) / 16];
#pragma unroll
    for (int e = 0; e < 4; e++) s[nt][e] = fmaf(s[nt][e], __fmul_rn(qs[e / 2], ks), corr[e / 2]);
  }
}

// O += P V for a quantized tile: P * 448 in E4M3 (as fp16) times V's codes,
// summed over the tile apart and then scaled by each channel's V scale / 448.
MX_INLINE void decode_pv_quant(float (&o)[DT][4], const float (&s)[NT][4], u32 vt) {
  const float *vsd = smem_at<float>(SM_VSD);
  const int lane = threadIdx.x % 32;
  float t[DT][4];
#pragma unroll
  for (int dt = 0; dt < DT; dt++) t[dt][0] = t[dt][1] = t[dt][2] = t[dt][3] = 0.f;
#pragma unroll
  for (int kk = 0; kk < KPW / 16; kk++) {
    u32 p[4];
    p[0] = e4m3x2_to_f16x2(to_e4m3x2(s[2 * kk][0] * 448.f, s[2 * kk][1] * 448.f));
    p[1] = e4m3x2_to_f16x2(to_e4m3x2(s[2 * kk][2] * 448.f, s[2 * kk][3] * 448.f));
    p[2] = e4m3x2_to_f16x2(to_e4m3x2(s[2 * kk + 1][0] * 448.f, s[2 * kk + 1][1] * 448.f));
    p[3] = e4m3x2_to_f16x2(to_e4m3x2(s[2 * kk + 1][2] * 448.f, s[2 * kk + 1][3] * 448.f));
#pragma unroll
    for (int dd = 0; dd < D_PAD / 16; dd++) {
      u32 b[4];
      ldsm_x4_trans(b, vt + (kk * 16 * RS + dd * 16) * 2);
      mma_16816_x2(t[2 * dd], t[2 * dd + 1], p, b);
    }
  }
#pragma unroll
  for (int dt = 0; dt < DT; dt++) {
    const f32x2 v = *(const f32x2 *)(vsd + dt * 8 + (lane % 4) * 2);
    o[dt][0] = fmaf(t[dt][0], v.x, o[dt][0]); o[dt][1] = fmaf(t[dt][1], v.y, o[dt][1]);
    o[dt][2] = fmaf(t[dt][2], v.x, o[dt][2]); o[dt][3] = fmaf(t[dt][3], v.y, o[dt][3]);
  }
}
