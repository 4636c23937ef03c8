// Blackwell: packed E2M1 A fragments of m16n8k64 plus the scale register.
// The accumulator gives lane t keys 2t, 2t+1 of each 8-key tile; the A
// fragment wants lane t to hold keys 8t..8t+7 (and 32+8t..) of the k64
// chunk, i.e. the whole of tile t.  A byte holds one lane's two keys of one
// tile, so this is a 4x4 byte transpose inside the quad.  Keys stay in their
// natural order, so a k16 (k32) chunk of the MMA is exactly one P block and
// one V^T block of consecutive keys, as numerics defines them.
//
// Byte j of the result is byte (lane % 4) of lane j's w (lanes of one quad).
MX_INLINE u32 quad_transpose_bytes(u32 w) {
  const int lane = threadIdx.x % 32, t = lane % 4;
  u32 r = 0;
#pragma unroll
  for (int j = 0; j < 4; j++) r |= ((__shfl_sync(0xffffffffu, w, (lane & ~3) | j) >> (8 * t)) & 0xFFu) << (8 * j);
  return r;
}

MX_INLINE void quantize_p(float (&s)[MT][NT][4], u32 (&pa)[MT][BN / 64][4], u32 (&psc)[MT][BN / 64],
                          float (&s1)[MT][2]) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    u32 w[2][NT / 4], sc[2][BN / PB];   // [row half][4 tiles] code bytes; scale codes
#pragma unroll
    for (int h = 0; h < 2; h++) {
      s1[mt][h] = p_row_scale(s, mt, h);
#pragma unroll
      for (int j = 0; j < NT / 4; j++) w[h][j] = 0;
#pragma unroll
      for (int blk = 0; blk < BN / PB; blk++) {
        sc[h][blk] = p_block_scale(s, mt, h, blk, s1[mt][h]);
        const float s2 = scale_value_raw(sc[h][blk]);
#pragma unroll
        for (int nt = blk * (PB / 8); nt < (blk + 1) * (PB / 8); nt++) {
          const u32 lo = s2 > 0.f ? e2m1_code(s[mt][nt][2 * h] / s2) : 0u;
          const u32 hi = s2 > 0.f ? e2m1_code(s[mt][nt][2 * h + 1] / s2) : 0u;
          w[h][nt / 4] |= (lo | hi << 4) << (8 * (nt % 4));
        }
      }
    }
#pragma unroll
    for (int kc = 0; kc < BN / 64; kc++) {
      pa[mt][kc][0] = quad_transpose_bytes(w[0][2 * kc]);       // row g,   keys 8t..8t+7
      pa[mt][kc][1] = quad_transpose_bytes(w[1][2 * kc]);       // row g+8
      pa[mt][kc][2] = quad_transpose_bytes(w[0][2 * kc + 1]);   // row g,   keys 32+8t..
      pa[mt][kc][3] = quad_transpose_bytes(w[1][2 * kc + 1]);   // row g+8
      // Scale register: lane t=0 carries row g's blocks, t=1 row g+8's (thread-id 0).
      const int h = t & 1;
      u32 r = 0;
#pragma unroll
      for (int i = 0; i < 64 / PB; i++) r |= sc[h][kc * (64 / PB) + i] << (8 * i);
      psc[mt][kc] = r;
    }
  }
}
