// Throughput of the special-function and conversion instructions the softmax uses,
// per clock per SM, on the GPU present.  8 independent chains per thread.
#include <cstdio>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)
#define ITERS 2048
template <int OP> __global__ void k(float *out, long long *clk, float seed) {
  float f[8]; unsigned u[8];
  for (int i = 0; i < 8; i++) { f[i] = seed * (threadIdx.x + i) * 1e-3f - 1.f; u[i] = __float_as_uint(f[i]) ^ 0x3c003c00u; }
  __syncthreads();
  long long t0 = clock64();
  #pragma unroll 4
  for (int it = 0; it < ITERS; it++) {
    #pragma unroll
    for (int i = 0; i < 8; i++) {
      if (OP == 0) { asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(f[i])); }
      if (OP == 1) { asm volatile("ex2.approx.f16x2 %0, %0;" : "+r"(u[i])); }
      if (OP == 2) { unsigned short h; asm volatile("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(h) : "f"(f[i]), "f"(f[(i+1)&7])); u[i] += h; }
      if (OP == 3) { unsigned short h; asm volatile("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(h) : "r"(u[i])); u[i] += h; }
      if (OP == 4) { asm volatile("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(u[i]) : "f"(f[i]), "f"(__uint_as_float(u[(i+1)&7]))); }
      if (OP == 5) { asm volatile("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(u[i]) : "f"(f[i]), "f"(__uint_as_float(u[(i+1)&7]))); }
      if (OP == 6) { asm volatile("cvt.rn.f32.s32 %0, %1;" : "=f"(f[i]) : "r"(u[i])); u[i] += __float_as_uint(f[i]); }
      if (OP == 7) { asm volatile("fma.rn.ftz.f32 %0, %0, %1, %2;" : "+f"(f[i]) : "f"(seed), "f"(seed)); }
      if (OP == 8) { asm volatile("fma.rn.f16x2 %0, %0, %1, %1;" : "+r"(u[i]) : "r"(0x3c003c00u)); }
      if (OP == 9) { asm volatile("ex2.approx.ftz.bf16x2 %0, %0;" : "+r"(u[i])); }
    }
  }
  long long t1 = clock64();
  float s = 0; for (int i = 0; i < 8; i++) s += f[i] + __uint_as_float(u[i]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) clk[blockIdx.x] = t1 - t0;
}
template <int OP> int run(const char *name, float *out, long long *clk) {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int threads = 1024, blocks = sms;
  k<OP><<<blocks, threads>>>(out, clk, 1.0001f); CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
  k<OP><<<blocks, threads>>>(out, clk, 1.0001f); CK(cudaDeviceSynchronize());
  long long c[1024]; CK(cudaMemcpy(c, clk, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
  long long mx = 0; for (int b = 0; b < blocks; b++) mx = c[b] > mx ? c[b] : mx;
  double ops = 1.0 * threads * ITERS * 8;   // one block of 32 warps per SM
  printf("%-28s %7.2f instr/clk/SM\n", name, ops / mx);
  return 0;
}
int main() {
  float *out; long long *clk;
  CK(cudaMalloc(&out, 1 << 24)); CK(cudaMalloc(&clk, 1 << 16));
  run<0>("ex2.approx.ftz.f32", out, clk); run<1>("ex2.approx.f16x2", out, clk);
  run<9>("ex2.approx.ftz.bf16x2", out, clk);
  run<2>("cvt e4m3x2.f32 (+iadd)", out, clk); run<3>("cvt e4m3x2.f16x2 (+iadd)", out, clk);
  run<4>("cvt f16x2.f32", out, clk); run<5>("cvt bf16x2.f32", out, clk);
  run<6>("cvt f32.s32 (+iadd)", out, clk); run<7>("fma.f32", out, clk); run<8>("fma.f16x2", out, clk);
  return 0;
}
