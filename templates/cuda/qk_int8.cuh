// S = Q8 K8^T on the INT8 tensor cores (mma.sync m16n8k32 s8, s32 accumulate),
// dequantized per element by q_scale[16-row group] * k_scale[16-key group], or
// with PER_THREAD by the thread's own two (cuda/quant_int8.cuh).
// Q was pre-multiplied by sm_scale*log2(e) before quantizing, so S comes out
// in base-2 units and the softmax runs with scale 1.
//
// Fragments (PTX ISA, m16n8k32 with 8-bit A/B; lane = 4g + t):
//   A (16x32, row): a0 = row g,   k 4t..4t+3   a1 = row g+8, k 4t..4t+3
//                   a2 = row g,   k 16+4t..    a3 = row g+8, k 16+4t..
//   B (32x8, col):  b0 = col g,   k 4t..4t+3   b1 = col g,   k 16+4t..
//   C (16x8):       c0,c1 = row g, cols 2t,2t+1; c2,c3 = row g+8.
// ldmatrix (b16, non-transposed) gives lane 4g+t the 32-bit word t of row g
// of each 8x16-byte matrix, i.e. bytes 4t..4t+3: exactly these fragments when
// a row holds 16 consecutive k (channels) of Q or K.
// d += a * b for one 16x8x32 INT8 tile.
MX_INLINE void mma_16832_s8(int (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Q fragments of the warp's 16*MT rows from the shared Q tile (row stride RSQ bytes).
MX_INLINE void load_q_fragments(u32 (&qf)[MT][KQ][4], const u8 *sq) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int kq = 0; kq < KQ; kq++)
      ldsm_x4(qf[mt][kq], smem_addr(sq + (mt * 16 + lane % 16) * RSQ + kq * 32 + (lane / 16) * 16));
}

// S (base 2) of the warp's rows against one K tile of BN keys; ks: the tile's KS_TILE key scales.
MX_INLINE void scores_int8(float (&s)[MT][NT][4], const u32 (&qf)[MT][KQ][4], const float (&qscale)[MT],
                           const u8 *kt, const float *ks) {
  const int lane = threadIdx.x % 32;
  int acc[MT][NT][4];
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int nt = 0; nt < NT; nt++) acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0;
#pragma unroll
  for (int kq = 0; kq < KQ; kq++)
#pragma unroll
    for (int nn = 0; nn < BN / 16; nn++) {
      // Matrices: keys 0-7 k 0-15, keys 0-7 k 16-31, keys 8-15 k 0-15, keys 8-15 k 16-31.
      u32 b[4];
      ldsm_x4(b, smem_addr(kt + (nn * 16 + lane % 8 + (lane / 16) * 8) * RSQ + kq * 32 + ((lane / 8) % 2) * 16));
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        mma_16832_s8(acc[mt][2 * nn], qf[mt][kq], b[0], b[1]);
        mma_16832_s8(acc[mt][2 * nn + 1], qf[mt][kq], b[2], b[3]);
      }
    }
  // The int -> float conversion is exact (see exact_s32_to_f32).
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int nt = 0; nt < NT; nt++) {
      const float scale = qscale[mt] * ks[PER_THREAD ? lane % 4 : nt / 2];
#pragma unroll
      for (int e = 0; e < 4; e++) s[mt][nt][e] = exact_s32_to_f32(acc[mt][nt][e]) * scale;
    }
}
