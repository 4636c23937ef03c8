// The mma.sync building block (sm_80+): ldmatrix fragment loads and the
// m16n8k16 tensor-core product with fp32 accumulation.  Fragment layouts are
// the PTX ISA's for m16n8k16: lane = 4*g + t holds rows g and g+8.
// Reads MMA_BF16: the product's operands are bf16 (else fp16).
MX_INLINE void ldsm_x4(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
MX_INLINE void ldsm_x4_trans(u32 (&r)[4], u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
// d += a * b for one 16x8x16 tile.
MX_INLINE void mma_16816(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  if constexpr (MMA_BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// An x4 ldmatrix of B is two 8-column tiles: d0 += a * b[0..1], d1 += a * b[2..3].
MX_INLINE void mma_16816_x2(float (&d0)[4], float (&d1)[4], const u32 (&a)[4], const u32 (&b)[4]) {
  mma_16816(d0, a, b[0], b[1]);
  mma_16816(d1, a, b[2], b[3]);
}
// Two floats in the product's operand type, `lo` in the low half.
MX_INLINE u32 pack_in(float lo, float hi) {
  if constexpr (MMA_BF16) return pack_bf16(lo, hi);
  else return pack_f16(lo, hi);
}
