// Tensor-core products the FP4 families add to cuda/mma_sync.cuh, and the
// shared-memory word loads their fragments use.  Reads MXFP4
// (blocks/fp4_formats.lua).
//   mma_fp4: sm_120a block-scaled m16n8k64 on packed E2M1 operands.
//     NVFP4: kind::mxf4nvf4, scale_vec::4X, UE4M3 scales: one scale byte per
//     k16 chunk, four per register.  MXFP4: kind::mxf4, scale_vec::2X, UE8M0:
//     one byte per k32 chunk, bytes 0 and 1.
//     Operands (PTX ISA, "Matrix Fragments for mma.m16n8k64"; lane = 4g + t):
//       A (16x64, row): a0 row g cols 8t..8t+7, a1 row g+8 same cols,
//         a2 row g cols 32+8t.., a3 row g+8; low nibble = lowest column.
//       B (64x8, col): b0 col g rows (k) 8t..8t+7, b1 rows 32+8t..
//       Scales, selector {byte-id 0, thread-id 0}: the A scales of row g are
//         in lane 4g, of row g+8 in lane 4g+1; the B scales of column g in
//         lane 4g.  Other lanes' scale registers are ignored.
//     Operand order: d, a, b, c, scale-a, {byte-id-a, thread-id-a}, scale-b,
//     {byte-id-b, thread-id-b}.
//     Only the sm_120a kernel calls it (an uncalled inline function emits
//     no PTX, so other targets never see the instruction).
//   mma_s8: m16n8k32 s8 x s8 -> s32 (sm_80+), for the INT8 scores of
//     nvfp4-int8qk: a0 row g cols 4t..4t+3, a1 row g+8, a2 row g cols
//     16+4t.., a3 row g+8; b0 col g rows 4t..4t+3, b1 rows 16+4t..

// d += (A * scale_a) (B * scale_b) for one 16x8x64 tile of packed FP4.
MX_INLINE void mma_fp4(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1, u32 sa, u32 sb) {
  if constexpr (MXFP4)
    asm volatile("mma.sync.aligned.kind::mxf4.block_scale.scale_vec::2X.m16n8k64.row.col.f32.e2m1.e2m1.f32.ue8m0 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}, %10, {0, 0}, %11, {0, 0};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(sa), "r"(sb));
  else
    asm volatile("mma.sync.aligned.kind::mxf4nvf4.block_scale.scale_vec::4X.m16n8k64.row.col.f32.e2m1.e2m1.f32.ue4m3 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}, %10, {0, 0}, %11, {0, 0};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(sa), "r"(sb));
}

MX_INLINE void mma_s8(int (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

MX_INLINE u32 lds32(const u8 *p) { return *(const u32 *)p; }
MX_INLINE u32 lds16(const u8 *p) { return *(const unsigned short *)p; }
