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
//   SM_QC [BM][RS] fp16 Q codes   SM_QSC [BM] Q scales   SM_CORR [BM] q'.mean
//   SM_KMEAN [D_PAD] the tile's K mean   SM_VSD [D_PAD] V scale / 448
//   SM_VMUL [D_PAD] V's code multipliers   SM_KAMAX [KG] K's group maxima (bits)
//   SM_KSC [KG] K scales   SM_KHI, SM_KLO, SM_VAMAX [KG][NPAIR] packed partials
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

// ---- a key tile, in three phases between barriers -------------------------
// The work is cut into units of one channel pair and one 16-key group (K's
// scale group), a warp's units all in one group (pairs padded to NPAIR_W),
// spread over every thread.  The element work is what it must be: K's min
// and max and V's |max| on packed pairs, then per element a subtraction, a
// multiply, a rounding and the packing; the channel means come from the
// tensor cores (a row of ones times the tile).
constexpr int NPAIR_W = (NPAIR + 31) / 32 * 32;
constexpr int UNITS = KG * NPAIR_W;

// Two inputs as floats (bf16: shifts; fp16: cvt).
MX_INLINE void in2_to_f32(u32 x, float &lo, float &hi) {
  if constexpr (IN_BF16) { lo = __int_as_float((int)(x << 16)); hi = __int_as_float((int)(x & 0xffff0000u)); }
  else { lo = in_to_f32((u16)x); hi = in_to_f32((u16)(x >> 16)); }
}
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
MX_INLINE float round_int(float x) { float r; asm("cvt.rni.f32.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
MX_INLINE u32 warp_max_u32(u32 x) { u32 r; asm volatile("redux.sync.max.u32 %0, %1, 0xffffffff;" : "=r"(r) : "r"(x)); return r; }
MX_INLINE void smem_max_u32(u32 *p, u32 x) { asm volatile("red.shared.max.u32 [%0], %1;" :: "r"(smem_addr(p)), "r"(x)); }
// The multiplier of x / scale: numerics' (x * k) * inv folded to x * (k * inv),
// exact while k * inv is finite; a block so small that it is not (amax under
// about 2^-120), or of scale 0 or NaN, gets 0: its codes are 0 (a NaN scale
// still makes its scores NaN).
MX_INLINE float code_multiplier(float scale) {
  const scale_recip r = scale_reciprocal(scale);
  const float m = __fmul_rn(r.k, r.inv);
  return scale > 0.f && finite_f(m) ? m : 0.f;
}
// d += a * b in the inputs' type (the channel sums of K).
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

// Phase 1 (keys [0, n) of the tile valid, the rest zeros).  Each unit: K's
// packed max and min over its group's valid keys and V's packed |max| into
// SM_KHI / SM_KLO / SM_VAMAX [KG][NPAIR]; each warp: the channel sums of
// its 16-channel blocks by MMA (the zero rows add nothing), / n into
// SM_KMEAN.  A NaN or an infinity in K makes its channel's mean, and with it
// the whole tile, NaN, where numerics' mean skips it and poisons its 16 keys
// only: the rows that see the tile come out NaN.
MX_INLINE void decode_quant_tile_1(const u16 *kt, const u16 *vt, u32 kt_lane, int n) {
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  u32 *khi = smem_at<u32>(SM_KHI), *klo = smem_at<u32>(SM_KLO), *vam = smem_at<u32>(SM_VAMAX);
  for (int u = tid; u < UNITS; u += THREADS) {
    const int g = u / NPAIR_W, p = u % NPAIR_W;
    if (p >= NPAIR) continue;
    u32 hi = PAIR_NEG_INF, lo = PAIR_POS_INF, va = 0u;
#pragma unroll 8
    for (int jj = 0; jj < 16; jj++) {
      const int j = g * 16 + jj;
      const u32 k2 = *(const u32 *)(kt + j * RS + 2 * p), v2 = *(const u32 *)(vt + j * RS + 2 * p);
      if (j < n) { hi = max2_nan(hi, k2); lo = min2_nan(lo, k2); }
      va = max2_nan(va, v2 & 0x7fff7fffu);
    }
    khi[g * NPAIR + p] = hi;
    klo[g * NPAIR + p] = lo;
    vam[g * NPAIR + p] = va;
  }
  // Channel sums: ones (rows) times keys x channels, 16 channels a block.
  const u32 one2 = IN_BF16 ? 0x3f803f80u : 0x3c003c00u;
  const u32 ones[4] = {one2, one2, one2, one2};
  for (int cb = warp; cb < D_PAD / 16; cb += WARPS) {
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
    for (int ks = 0; ks < KG; ks++) {
      u32 b[4];
      ldsm_x4_trans(b, kt_lane + (ks * 16 * RS + cb * 16) * 2);
      mma_16816_in(acc[0], ones, b[0], b[1]);
      mma_16816_in(acc[1], ones, b[2], b[3]);
    }
    if (lane < 4)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int c = cb * 16 + h * 8 + lane * 2;
        *(f32x2 *)(smem_at<float>(SM_KMEAN) + c) = f32x2{n > 0 ? div_rn(acc[h][0], (float)n) : 0.f,
                                                          n > 0 ? div_rn(acc[h][1], (float)n) : 0.f};
      }
  }
}

// Phase 2.  Each unit: its pair's max |k - mean| in its group,
// max(kmax - mean, mean - kmin) (rounding is monotonic: the same fp32 value
// as the largest of the rounded differences), the warp's max into SM_KAMAX[g]
// (as bits: amax >= 0, and NaN above every number).  Each pair: V's scale
// and multiplier from its groups' maxima (SM_VSD: scale / 448, SM_VMUL).
// Each warp: its rows' q' . mean into SM_CORR (q' = q * scale_log2, as Q was
// quantized), the smooth-K term in base 2.
MX_INLINE void decode_quant_tile_2(float scale_log2) {
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const float *mean = smem_at<float>(SM_KMEAN);
  const u32 *khi = smem_at<u32>(SM_KHI), *klo = smem_at<u32>(SM_KLO), *vam = smem_at<u32>(SM_VAMAX);
  for (int u = tid; u < UNITS; u += THREADS) {
    const int g = u / NPAIR_W, p = u % NPAIR_W;
    float amax = 0.f;
    if (p < NPAIR) {
      float h0, h1, l0, l1;
      in2_to_f32(khi[g * NPAIR + p], h0, h1);
      in2_to_f32(klo[g * NPAIR + p], l0, l1);
      const f32x2 m = *(const f32x2 *)(mean + 2 * p);
      amax = fmax_nan(fmax_nan(amax, fmax_nan(h0 - m.x, m.x - l0)), fmax_nan(h1 - m.y, m.y - l1));
    }
    const u32 w = warp_max_u32(__float_as_uint(amax));
    if (lane == 0) smem_max_u32(smem_at<u32>(SM_KAMAX) + g, w);
  }
  for (int p = tid; p < NPAIR; p += THREADS) {
    u32 va = 0u;
#pragma unroll
    for (int g = 0; g < KG; g++) va = max2_nan(va, vam[g * NPAIR + p]);
    float a0, a1;
    in2_to_f32(va, a0, a1);
    const float s0 = block_scale(a0, 448.f), s1 = block_scale(a1, 448.f);
    *(f32x2 *)(smem_at<float>(SM_VSD) + 2 * p) = f32x2{s0 * (1.f / 448.f), s1 * (1.f / 448.f)};
    *(f32x2 *)(smem_at<float>(SM_VMUL) + 2 * p) = f32x2{code_multiplier(s0), code_multiplier(s1)};
  }
  const u16 *q = smem_at<u16>(SM_Q);
  for (int r = warp; r < BM; r += WARPS) {
    float acc = 0.f;
    for (int c = lane * 2; c < D_PAD; c += 64) {
      float q0, q1;
      in2_to_f32(*(const u32 *)(q + r * RS + c), q0, q1);
      acc = fmaf(__fmul_rn(q0, scale_log2), mean[c], acc);
      acc = fmaf(__fmul_rn(q1, scale_log2), mean[c + 1], acc);
    }
#pragma unroll
    for (int s = 16; s > 0; s /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, s);
    if (lane == 0) smem_at<float>(SM_CORR)[r] = acc;
  }
}

// Phase 3.  K's group scales (amax / 127) into SM_KSC, and every unit's
// codes in place: K - mean rounded to INT8, V times its channel's multiplier
// rounded to E4M3, each as fp16 values.  (|(k - mean) * mul| <= 127 and a
// bit: no clamp.)  Thread 0 clears SM_KAMAX for the next tile once all have
// read it (the barrier after this phase).
MX_INLINE void decode_quant_tile_3(u16 *kt, u16 *vt) {
  const int tid = threadIdx.x;
  const float *mean = smem_at<float>(SM_KMEAN), *vmul = smem_at<float>(SM_VMUL);
  const u32 *kamax = smem_at<u32>(SM_KAMAX);
  if (tid < KG) smem_at<float>(SM_KSC)[tid] = block_scale(__uint_as_float(kamax[tid]), 127.f);
  for (int u = tid; u < UNITS; u += THREADS) {
    const int g = u / NPAIR_W, p = u % NPAIR_W;
    if (p >= NPAIR) continue;
    const float kmul = code_multiplier(block_scale(__uint_as_float(kamax[g]), 127.f));
    const f32x2 m = *(const f32x2 *)(mean + 2 * p), vm = *(const f32x2 *)(vmul + 2 * p);
#pragma unroll 8
    for (int jj = 0; jj < 16; jj++) {
      const int j = g * 16 + jj;
      u32 *ka = (u32 *)(kt + j * RS + 2 * p), *va = (u32 *)(vt + j * RS + 2 * p);
      float k0, k1, v0, v1;
      in2_to_f32(*ka, k0, k1);
      in2_to_f32(*va, v0, v1);
      *ka = pack_f16(round_int(__fmul_rn(k0 - m.x, kmul)), round_int(__fmul_rn(k1 - m.y, kmul)));
      *va = e4m3x2_to_f16x2(to_e4m3x2(__fmul_rn(v0, vm.x), __fmul_rn(v1, vm.y)));
    }
  }
}

MX_INLINE void decode_quant_tile_done() {
  if (threadIdx.x < KG) smem_at<u32>(SM_KAMAX)[threadIdx.x] = 0u;
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
