// The FP4 mma.sync kernel's tile copies: packed rows of the workspace into
// shared memory, 16-byte cp.async chunks (every size and offset here is a
// multiple of 16), the bf16 dequantization of eight codes, and a key tile's
// shared slot.  Reads THREADS, BN, QP, QSB, QCB, DV, VP, PB and the
// workspace sections (cuda/quant_fp4.cuh).
// rows x bytes from global (row pitch gp) to shared (row pitch sp).
MX_INLINE void copy_rows(u8 *dst, int sp, const u8 *src, i64 gp, int rows, int bytes) {
  const int per_row = bytes / 16;
  for (int c = threadIdx.x; c < rows * per_row; c += THREADS) {
    const int r = c / per_row, j = c % per_row;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(dst + r * sp + j * 16)), "l"(src + r * gp + j * 16));
  }
}
MX_INLINE void st_shared_v4(void *p, u32 x, u32 y, u32 z, u32 w) {
  asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};" :: "r"(smem_addr(p)), "r"(x), "r"(y), "r"(z), "r"(w));
}
// Eight FP4 codes (one u32, lowest nibble first) times their scale, as bf16.
MX_INLINE void dequant8(u16 *dst, u32 c, float s) {
  st_shared_v4(dst, pack_bf16(e2m1_value(c) * s, e2m1_value(c >> 4) * s),
               pack_bf16(e2m1_value(c >> 8) * s, e2m1_value(c >> 12) * s),
               pack_bf16(e2m1_value(c >> 16) * s, e2m1_value(c >> 20) * s),
               pack_bf16(e2m1_value(c >> 24) * s, e2m1_value(c >> 28) * s));
}
// Shared slot of one key tile: [K codes][K scales][V^T codes][V scales].
struct Slot { u8 *kc, *ks, *vc, *vs; };
MX_INLINE Slot slot_at(u8 *base) {
  Slot s;
  s.kc = base; s.ks = s.kc + BN * QP; s.vc = s.ks + BN * QSB; s.vs = s.vc + DV * VP;
  return s;
}
MX_INLINE void load_kv_tile(const mx_kernel_args &a, u8 *base, i64 kv_bh, int nk, int tile) {
  const Slot s = slot_at(base);
  copy_rows(s.kc, QP, ws_at(a, WS_KC) + (kv_bh * nk + (i64)tile * BN) * QCB, QCB, BN, QCB);
  if (QSB) copy_rows(s.ks, 0, ws_at(a, WS_KS) + (kv_bh * nk + (i64)tile * BN) * QSB, 0, 1, BN * QSB);
  copy_rows(s.vc, VP, ws_at(a, WS_VC) + kv_bh * DV * (nk / 2) + (i64)tile * (BN / 2), nk / 2, DV, BN / 2);
  copy_rows(s.vs, 0, ws_at(a, WS_VS) + (kv_bh * (nk / PB) + (i64)tile * (BN / PB)) * DV, 0, 1, (BN / PB) * DV);
}
