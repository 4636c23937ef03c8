// O += P V on the FP8 tensor cores (mma.sync m16n8k32 e4m3, f32 accumulate).
// P in [0, 1] is scaled by 448 onto E4M3's range; V^T tiles hold per-channel
// E4M3 codes in the permuted key order of cuda/quant_fp8v.cuh, so P's A
// fragment is built straight from the S accumulators (same layout as the s8
// fragments in cuda/qk_int8.cuh):
//   a0 = row g   keys {2t, 2t+1} of n8 tile 4kk and of tile 4kk+1
//   a1 = row g+8 the same keys
//   a2, a3 = the same from tiles 4kk+2 and 4kk+3
// The 1/448 and the per-channel V scale are applied once, in the epilogue.
// Four probabilities as E4M3 codes of p*unit, p0 in the low byte.  unit is
// 448 (E4M3's largest value) for p in [0, 1]; 1 where P comes already scaled
// (the wgmma kernel's exponentials, families/int8_fp8_wgmma.lua).
MX_INLINE u32 pack_e4m3x4(float p0, float p1, float p2, float p3, float unit = 448.f) {
  u16 lo, hi;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(p1 * unit), "f"(p0 * unit));
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(p3 * unit), "f"(p2 * unit));
  return (u32)lo | ((u32)hi << 16);
}
MX_INLINE void mma_16832_e4m3(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// vt: the V^T tile, DV channel rows of BN permuted keys (row stride RSV bytes).
MX_INLINE void pv_tile(float (&o)[MT][DT][4], const float (&s)[MT][NT][4], const u8 *vt) {
  const int lane = threadIdx.x % 32;
  // P -> E4M3 for the whole tile first: 4 bytes per register frees the fp32
  // scores before the V^T fragments come in (keeps D=128 under 255 registers).
  u32 pa[MT][BN / 32][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int kk = 0; kk < BN / 32; kk++) {
      const int j = 4 * kk;
      pa[mt][kk][0] = pack_e4m3x4(s[mt][j][0], s[mt][j][1], s[mt][j + 1][0], s[mt][j + 1][1]);
      pa[mt][kk][1] = pack_e4m3x4(s[mt][j][2], s[mt][j][3], s[mt][j + 1][2], s[mt][j + 1][3]);
      pa[mt][kk][2] = pack_e4m3x4(s[mt][j + 2][0], s[mt][j + 2][1], s[mt][j + 3][0], s[mt][j + 3][1]);
      pa[mt][kk][3] = pack_e4m3x4(s[mt][j + 2][2], s[mt][j + 2][3], s[mt][j + 3][2], s[mt][j + 3][3]);
    }
#pragma unroll
  for (int kk = 0; kk < BN / 32; kk++)
#pragma unroll
    for (int dd = 0; dd < DV / 16; dd++) {
      // Matrices: channels 0-7 k 0-15, channels 0-7 k 16-31, channels 8-15 k 0-15, 8-15 k 16-31.
      u32 b[4];
      ldsm_x4(b, smem_addr(vt + (dd * 16 + lane % 8 + (lane / 16) * 8) * RSV + kk * 32 + ((lane / 8) % 2) * 16));
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        mma_16832_e4m3(o[mt][2 * dd], pa[mt][kk], b[0], b[1]);
        mma_16832_e4m3(o[mt][2 * dd + 1], pa[mt][kk], b[2], b[3]);
      }
    }
}

// O's dequantization: code products carry P*unit and V / vscale[c].  unit
// 1: the row sum carries P's factor too, and it cancels in O / l.
MX_INLINE void pv_finish(float (&o)[MT][DT][4], const float *vscale, float unit = 448.f) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int dt = 0; dt < DT; dt++) {
    float f0, f1;   // channels dt*8 + 2t and +1: one 8-byte load
    asm("ld.global.nc.v2.f32 {%0, %1}, [%2];" : "=f"(f0), "=f"(f1) : "l"(vscale + dt * 8 + (lane % 4) * 2));
    f0 *= 1.f / unit;
    f1 *= 1.f / unit;
#pragma unroll
    for (int mt = 0; mt < MT; mt++) { o[mt][dt][0] *= f0; o[mt][dt][1] *= f1; o[mt][dt][2] *= f0; o[mt][dt][3] *= f1; }
  }
}
