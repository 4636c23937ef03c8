// The output of the persistent wgmma kernel without a causal mask in two
// steps (one 64-row warpgroup tile, align=8; blocks/wgmma_overlap.lua,
// persistent_kernel_deferred): pack_output normalizes O into packed pairs
// when a unit ends, store_output stores them during the next unit.  The
// store reads only the packed registers: reading O there, defined by the
// last P V's wgmma, made ptxas wait for the new unit's S product (C7517)
// and serialize every wgmma.
MX_INLINE void pack_output(u32 (&packed)[2][DT], float (&lse)[2], const float (&o)[1][DT][4],
                           const float (&row_max)[1][2], const float (&row_sum)[1][2]) {
  float sums[2];
#pragma unroll
  for (int h = 0; h < 2; h++) sums[h] = quad_sum(row_sum[0][h]);
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const float l = sums[h], inv = inverse_sum(l);
#pragma unroll
    for (int dt = 0; dt < DT; dt++) packed[h][dt] = pack_out(o[0][dt][2 * h] * inv, o[0][dt][2 * h + 1] * inv);
    lse[h] = WRITE_LSE ? row_lse(row_max[0][h], l) : 0.f;
  }
}
MX_INLINE void store_output(const u32 (&packed)[2][DT], const float (&lse)[2], u16 *o_head, i64 o_ss, float *lse_head,
                            int row0, int seq_q) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int row = row0 + lane / 4 + 8 * h;
    u16 *out = o_head + row * o_ss;
#pragma unroll
    for (int dt = 0; dt < DT; dt++)
      if (row < seq_q && dt * 8 < D) *(u32 *)(out + dt * 8 + (lane % 4) * 2) = packed[h][dt];
    if (WRITE_LSE && lane % 4 == 0 && row < seq_q) lse_head[row] = lse[h];
  }
}
