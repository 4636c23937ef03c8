// Hopper / sm_80: P^ * s2 as bf16 A fragments of m16n8k16 (exact: at most
// 2 + 4 significant bits), laid out as the f16 family packs P.
MX_INLINE void quantize_p(float (&s)[MT][NT][4], u32 (&pa)[MT][BN / 16][4], float (&s1)[MT][2]) {
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      s1[mt][h] = p_row_scale(s, mt, h);
#pragma unroll
      for (int blk = 0; blk < BN / PB; blk++) {
        const float s2 = scale_value_raw(p_block_scale(s, mt, h, blk, s1[mt][h]));
#pragma unroll
        for (int nt = blk * (PB / 8); nt < (blk + 1) * (PB / 8); nt++)
#pragma unroll
          for (int e = 2 * h; e < 2 * h + 2; e++)
            s[mt][nt][e] = s2 > 0.f ? e2m1_value(e2m1_code(s[mt][nt][e] / s2)) * s2 : 0.f;
      }
    }
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++) {
      pa[mt][kk][0] = pack_bf16(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      pa[mt][kk][1] = pack_bf16(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      pa[mt][kk][2] = pack_bf16(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      pa[mt][kk][3] = pack_bf16(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
}
