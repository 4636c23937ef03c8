// The warpgroup MMA building block of the int8-fp8 family's wgmma variant
// (sm_90a): shared-memory matrix descriptors and the two products of
// attention for a warpgroup's 64 query rows, one wgmma.mma_async per k32 step.
//   S  = Q8 K8^T   m64n<BN>k32 .s32.s8.s8, A = Q8 and B = K8 from shared
//                  memory, both K-major (rows of D32 int8 channels);
//   O (+)= P V     m64n<DV>k32 .f32.e4m3.e4m3, A = P*448 from registers,
//                  B = V^T from shared memory, K-major (rows of keys).  FP8
//                  wgmma has no transpose for B: that is why V^T exists.
//
// Register layouts (PTX ISA, "Matrix Fragments for wgmma.mma_async.m64nNk32";
// CUTLASS's ALayout_64x32 and CLayout_64xN say the same): warp w of the
// warpgroup owns rows 16w..16w+15; lane 4g+t holds
//   A (8-bit, 4 registers of 4 bytes, lowest k in the lowest byte):
//     a0 = row g,   k 4t..4t+3     a1 = row g+8, k 4t..4t+3
//     a2 = row g,   k 16+4t..      a3 = row g+8, k 16+4t..
//   D (.s32 or .f32, N/2 registers): for each 8-column chunk j,
//     d[j][0..1] = row g, cols 8j+2t, +1;  d[j][2..3] = row g+8, same cols.
// Per warp, both are exactly mma.sync m16n8k32's A and m16n8's C, so the
// softmax and epilogue blocks apply with MT = 1, and P's fragment is packed
// from S as cuda/pv_fp8.cuh packs it, in the key order V^T is stored in
// (cuda/quant_fp8v.cuh: stored position 4t+i of a 16-key group holds key
// 2t + (i&1) + 8*(i>>1)).
//
// Shared-memory tiles are what TMA writes with a W-byte swizzle (W = 128, 64
// or 32 bytes = int8/e4m3 elements per panel row).  A tile of R rows x C
// bytes is C/W panels of R rows x W bytes; the swizzle XORs the 16-byte chunk
// of a row with the row's index mod (W/16), over 8-row atoms of 8W bytes.
// Panels start on atom boundaries, so the descriptor's base offset stays 0.
//
// Descriptor (PTX ISA "matrix descriptor"): bits 0-13 start address >> 4,
// 16-29 leading byte offset >> 4 (unused by swizzled K-major: 1), 32-45
// stride byte offset >> 4 (K-major: the next 8-row group, 8 * W bytes),
// 62-63 swizzle (1 = 128B, 2 = 64B, 3 = 32B).  A k32 step is 32 bytes along
// the row, inside one panel: +2 on the start address field.
//
// The MMAs' operand lists depend on N (an accumulator register a column pair
// a row half), and an asm template must be one string literal: MX_WG_OPS_c is
// the list "%0, ..., %(4c-1)" of c 8-column chunks, MX_WG_ACC_c(K) their
// constraints (K: "+r" or "+f"), and each N's asm names its other operands'
// numbers.  Reads no constant: the widths come from the accumulators' types.

// mode: the swizzle field (SWZ_QK, SWZ_V: 1 = 128B, 2 = 64B, 3 = 32B).
MX_INLINE u64 smem_desc(u32 addr, u32 sbo, u64 mode) {
  return (u64)((addr >> 4) & 0x3FFF) | ((u64)1 << 16) | ((u64)((sbo >> 4) & 0x3FFF) << 32) | (mode << 62);
}
// The fences, waits and register pins are cuda/wgmma_sync.cuh's.

#define MX_WG_OPS_1 "%0, %1, %2, %3"
#define MX_WG_OPS_2 MX_WG_OPS_1 ", %4, %5, %6, %7"
#define MX_WG_OPS_3 MX_WG_OPS_2 ", %8, %9, %10, %11"
#define MX_WG_OPS_4 MX_WG_OPS_3 ", %12, %13, %14, %15"
#define MX_WG_OPS_5 MX_WG_OPS_4 ", %16, %17, %18, %19"
#define MX_WG_OPS_6 MX_WG_OPS_5 ", %20, %21, %22, %23"
#define MX_WG_OPS_7 MX_WG_OPS_6 ", %24, %25, %26, %27"
#define MX_WG_OPS_8 MX_WG_OPS_7 ", %28, %29, %30, %31"
#define MX_WG_OPS_9 MX_WG_OPS_8 ", %32, %33, %34, %35"
#define MX_WG_OPS_10 MX_WG_OPS_9 ", %36, %37, %38, %39"
#define MX_WG_OPS_11 MX_WG_OPS_10 ", %40, %41, %42, %43"
#define MX_WG_OPS_12 MX_WG_OPS_11 ", %44, %45, %46, %47"
#define MX_WG_OPS_13 MX_WG_OPS_12 ", %48, %49, %50, %51"
#define MX_WG_OPS_14 MX_WG_OPS_13 ", %52, %53, %54, %55"
#define MX_WG_OPS_15 MX_WG_OPS_14 ", %56, %57, %58, %59"
#define MX_WG_OPS_16 MX_WG_OPS_15 ", %60, %61, %62, %63"

#define MX_WG_ACC4(K, j) K(d[0][j][0]), K(d[0][j][1]), K(d[0][j][2]), K(d[0][j][3])
#define MX_WG_ACC_1(K) MX_WG_ACC4(K, 0)
#define MX_WG_ACC_2(K) MX_WG_ACC_1(K), MX_WG_ACC4(K, 1)
#define MX_WG_ACC_3(K) MX_WG_ACC_2(K), MX_WG_ACC4(K, 2)
#define MX_WG_ACC_4(K) MX_WG_ACC_3(K), MX_WG_ACC4(K, 3)
#define MX_WG_ACC_5(K) MX_WG_ACC_4(K), MX_WG_ACC4(K, 4)
#define MX_WG_ACC_6(K) MX_WG_ACC_5(K), MX_WG_ACC4(K, 5)
#define MX_WG_ACC_7(K) MX_WG_ACC_6(K), MX_WG_ACC4(K, 6)
#define MX_WG_ACC_8(K) MX_WG_ACC_7(K), MX_WG_ACC4(K, 7)
#define MX_WG_ACC_9(K) MX_WG_ACC_8(K), MX_WG_ACC4(K, 8)
#define MX_WG_ACC_10(K) MX_WG_ACC_9(K), MX_WG_ACC4(K, 9)
#define MX_WG_ACC_11(K) MX_WG_ACC_10(K), MX_WG_ACC4(K, 10)
#define MX_WG_ACC_12(K) MX_WG_ACC_11(K), MX_WG_ACC4(K, 11)
#define MX_WG_ACC_13(K) MX_WG_ACC_12(K), MX_WG_ACC4(K, 12)
#define MX_WG_ACC_14(K) MX_WG_ACC_13(K), MX_WG_ACC4(K, 13)
#define MX_WG_ACC_15(K) MX_WG_ACC_14(K), MX_WG_ACC4(K, 14)
#define MX_WG_ACC_16(K) MX_WG_ACC_15(K), MX_WG_ACC4(K, 15)

// d (+)= A(smem) * B(smem)^T, m64 n(8C) k32, s8 x s8 -> s32, both K-major:
// S = Q8 K8^T of a key tile, BN = 8C = 32, 64 or 128 keys.
#define MX_WGMMA_QK(N, C, A, B, P)                                                                       \
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %" #P ", 0;\n"                                           \
               "wgmma.mma_async.sync.aligned.m64n" #N "k32.s32.s8.s8 {" MX_WG_OPS_##C "}, %" #A ", %" #B \
               ", p; }"                                                                                  \
               : MX_WG_ACC_##C("+r")                                                                     \
               : "l"(desc_a), "l"(desc_b), "r"(accumulate))
template <int C> MX_INLINE void wgmma_qk(int (&d)[1][C][4], u64 desc_a, u64 desc_b, int accumulate) {
  if constexpr (C == 4) MX_WGMMA_QK(32, 4, 16, 17, 18);
  else if constexpr (C == 8) MX_WGMMA_QK(64, 8, 32, 33, 34);
  else if constexpr (C == 16) MX_WGMMA_QK(128, 16, 64, 65, 66);
  else static_assert(C == 16, "wgmma_qk: block_n is 32, 64 or 128");
}

// d (+)= A(registers) * B(smem), m64 n(8C) k32, e4m3 x e4m3 -> f32, B
// K-major: a tile's P V (a column slice of O, 16 to 128 columns), or with
// C = 1 rowsum_mma's P times its column of ones.
#define MX_WGMMA_PV(N, C, A0, A1, A2, A3, B, P)                                                            \
  asm volatile("{ .reg .pred p; setp.ne.b32 p, %" #P ", 0;\n"                                             \
               "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 {" MX_WG_OPS_##C "}, {%" #A0     \
               ", %" #A1 ", %" #A2 ", %" #A3 "}, %" #B ", p, 1, 1; }"                                       \
               : MX_WG_ACC_##C("+f")                                                                       \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate))
template <int C> MX_INLINE void wgmma_pv(float (&d)[1][C][4], const u32 (&a)[4], u64 desc_b, int accumulate) {
  if constexpr (C == 1) MX_WGMMA_PV(8, 1, 4, 5, 6, 7, 8, 9);
  else if constexpr (C == 2) MX_WGMMA_PV(16, 2, 8, 9, 10, 11, 12, 13);
  else if constexpr (C == 3) MX_WGMMA_PV(24, 3, 12, 13, 14, 15, 16, 17);
  else if constexpr (C == 4) MX_WGMMA_PV(32, 4, 16, 17, 18, 19, 20, 21);
  else if constexpr (C == 5) MX_WGMMA_PV(40, 5, 20, 21, 22, 23, 24, 25);
  else if constexpr (C == 6) MX_WGMMA_PV(48, 6, 24, 25, 26, 27, 28, 29);
  else if constexpr (C == 7) MX_WGMMA_PV(56, 7, 28, 29, 30, 31, 32, 33);
  else if constexpr (C == 8) MX_WGMMA_PV(64, 8, 32, 33, 34, 35, 36, 37);
  else if constexpr (C == 9) MX_WGMMA_PV(72, 9, 36, 37, 38, 39, 40, 41);
  else if constexpr (C == 10) MX_WGMMA_PV(80, 10, 40, 41, 42, 43, 44, 45);
  else if constexpr (C == 11) MX_WGMMA_PV(88, 11, 44, 45, 46, 47, 48, 49);
  else if constexpr (C == 12) MX_WGMMA_PV(96, 12, 48, 49, 50, 51, 52, 53);
  else if constexpr (C == 13) MX_WGMMA_PV(104, 13, 52, 53, 54, 55, 56, 57);
  else if constexpr (C == 14) MX_WGMMA_PV(112, 14, 56, 57, 58, 59, 60, 61);
  else if constexpr (C == 15) MX_WGMMA_PV(120, 15, 60, 61, 62, 63, 64, 65);
  else if constexpr (C == 16) MX_WGMMA_PV(128, 16, 64, 65, 66, 67, 68, 69);
  else static_assert(C == 16, "wgmma_pv: 8 to 128 columns");
}
