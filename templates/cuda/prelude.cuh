// The start of every generated source: fixed-width types, the argument struct
// every kernel takes, and the handful of PTX wrappers the kernels need.  The
// source includes no toolkit header, so NVRTC compiles it with no include path.
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

// One argument struct for every kernel; its layout must match
// mx_kernel_args in runtime/kernel_args.h (same field order and types).
struct mx_kernel_args {
  const void *q, *k, *v;
  void *o;
  float *lse;
  void *ws;                       // workspace: quantized operands, scales
  i64 q_sb, q_sh, q_ss;           // strides in elements: batch, head, seq
  i64 k_sb, k_sh, k_ss;
  i64 v_sb, v_sh, v_ss;
  i64 o_sb, o_sh, o_ss;
  int batch, heads_q, heads_kv, seq_q, seq_k;
  int causal_offset;              // key j is visible to query i iff j <= i + causal_offset
  float scale_log2;               // sm_scale * log2(e): softmax runs in base 2
  float sm_scale;
  int gqa;                        // heads_q / heads_kv
  int pad0;
  u64 ws_off[8];                  // byte offsets of workspace sections
  int pad1[2];
  alignas(64) u64 tmap[4][16];    // TMA tensor maps (CUtensorMap), per the launch plan's "tmap" lines
};

#define MX_INLINE __device__ __forceinline__
#define MX_NEG_INF __int_as_float(0xff800000)

MX_INLINE u32 smem_addr(const void *p) {
  u32 a;
  asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// cp.async groups: commit what was issued; wait until at most N groups are in flight.
MX_INLINE void cp_async_commit() { asm volatile("cp.async.commit_group;"); }
template <int N> MX_INLINE void cp_async_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N)); }

// Programmatic dependent launch (sm_90 and later).  A launch plan's "pdl"
// kernel may start while the kernel ahead of it is still running: its blocks
// take the SMs that kernel's last blocks leave, do what needs nothing of it,
// and wait in wait_for_previous_kernel (until that grid has finished and its
// writes are visible) before they read what it wrote.  let_next_kernel_start
// lets the next kernel start launching once every block of this grid has run
// it.  Launched plainly (MXATTN_PDL=0), and below sm_90, both do nothing.
MX_INLINE void wait_for_previous_kernel() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
MX_INLINE void let_next_kernel_start() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}

MX_INLINE float fast_exp2(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
MX_INLINE float fast_log2(float x) { float y; asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
MX_INLINE float fast_rcp(float x) { float y; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }

MX_INLINE float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
// NaN and infinity follow exact attention (numerics/numerics.h): a block
// scale must see a NaN element, which fmaxf drops.  max.NaN.f32 (sm_80+) is
// the same one instruction as fmaxf's max.f32.
MX_INLINE float fmax_nan(float a, float b) { float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
MX_INLINE float quad_max_nan(float x) {
  x = fmax_nan(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmax_nan(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
// A scale from an infinite block maximum is NaN, as numerics makes it: the
// block cannot be represented, and NaN is what dequantizes it to NaN.
MX_INLINE float nan_if_inf(float s) { return fabsf(s) == __int_as_float(0x7f800000) ? __int_as_float(0x7fffffff) : s; }
MX_INLINE bool finite_f(float x) { return fabsf(x) < __int_as_float(0x7f800000); }
MX_INLINE float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}
// What a row of O is multiplied by at the end: 1 / its softmax sum l.  A row
// that saw no key (l = 0) is all zeros; a NaN l stays NaN.
MX_INLINE float inverse_sum(float l) { return l != 0.f ? 1.f / l : 0.f; }

// Two floats, one 8-byte access (the source includes no toolkit header, so no float2).
struct alignas(8) f32x2 { float x, y; };
// Two floats to a packed pair, `lo` in the low half (round to nearest even).
MX_INLINE u32 pack_bf16(float lo, float hi) { u32 r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r; }
MX_INLINE u32 pack_f16(float lo, float hi) { u32 r; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r; }
MX_INLINE u16 to_bf16(float x) { u16 r; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x)); return r; }
MX_INLINE u16 to_f16(float x) { u16 r; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x)); return r; }
