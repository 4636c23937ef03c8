// Do Hopper's tensor pipe, MUFU (ex2) and the FMA pipe run at the same time?
//
// int8-fp8's attention tile costs ~1014 SM-clocks where its wgmmas need 512 and its ex2s 512
// (bench/NOTES.md, "The next lever"), and ncu reads tensor and XU use equal and summing to ~100%
// for every schedule tried (the default, overlap=2, the three-consumer ring). This asks the
// hardware directly: one block an SM of three warpgroups, each given a role (a loop of wgmma
// from shared memory as S = Q K^T, with A from registers as P V, ex2 chains, FFMA chains, or the
// softmax's mix of six FFMA to an ex2), each timing its own loop with clock64; every role alone,
// then side by side. Garbage operands: only the rates matter here.
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -o mufu_tensor mufu_tensor.cu && ./mufu_tensor
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

constexpr int MMA_ITERS = 4096, OPS_ITERS = 2048;

__device__ uint64_t smem_desc(const void *p) {
  uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
  // No swizzle: start >> 4, leading byte offset 128 B, stride byte offset 256 B.
  return (uint64_t)((a >> 4) & 0x3fff) | ((uint64_t)(128 >> 4) << 16) | ((uint64_t)(256 >> 4) << 32);
}

#define D64 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31," \
            "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}"
#define OUT64(d) "+r"(d[0]),"+r"(d[1]),"+r"(d[2]),"+r"(d[3]),"+r"(d[4]),"+r"(d[5]),"+r"(d[6]),"+r"(d[7]),"+r"(d[8]),"+r"(d[9]),"+r"(d[10]),"+r"(d[11]),"+r"(d[12]),"+r"(d[13]),"+r"(d[14]),"+r"(d[15]), \
  "+r"(d[16]),"+r"(d[17]),"+r"(d[18]),"+r"(d[19]),"+r"(d[20]),"+r"(d[21]),"+r"(d[22]),"+r"(d[23]),"+r"(d[24]),"+r"(d[25]),"+r"(d[26]),"+r"(d[27]),"+r"(d[28]),"+r"(d[29]),"+r"(d[30]),"+r"(d[31]), \
  "+r"(d[32]),"+r"(d[33]),"+r"(d[34]),"+r"(d[35]),"+r"(d[36]),"+r"(d[37]),"+r"(d[38]),"+r"(d[39]),"+r"(d[40]),"+r"(d[41]),"+r"(d[42]),"+r"(d[43]),"+r"(d[44]),"+r"(d[45]),"+r"(d[46]),"+r"(d[47]), \
  "+r"(d[48]),"+r"(d[49]),"+r"(d[50]),"+r"(d[51]),"+r"(d[52]),"+r"(d[53]),"+r"(d[54]),"+r"(d[55]),"+r"(d[56]),"+r"(d[57]),"+r"(d[58]),"+r"(d[59]),"+r"(d[60]),"+r"(d[61]),"+r"(d[62]),"+r"(d[63])

__device__ void mma_ss_s8(uint32_t (&d)[64], uint64_t a, uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 " D64 ", %64, %65, 1;\n" : OUT64(d) : "l"(a), "l"(b));
}
__device__ void mma_rs_e4m3(uint32_t (&d)[64], const uint32_t (&a)[4], uint64_t b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " D64 ", {%64,%65,%66,%67}, %68, 1, 1, 1;\n"
               : OUT64(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// Roles, one a warpgroup: 0 idle, 1 wgmma SS s8 (as S = Q K^T), 2 wgmma RS e4m3 (as P V), 3 ex2
// chains, 4 FFMA chains, 5 the softmax's mix (each step of 16 chains: 6 FFMA-class ops, 1 ex2).
constexpr int IDLE = 0, MMA_SS = 1, MMA_RS = 2, EX2 = 3, FFMA = 4, MIX = 5;

template <int ROLE>
__device__ float run_role(const unsigned char *smem) {
  float out = 0.f;
  if constexpr (ROLE == MMA_SS || ROLE == MMA_RS) {
    uint32_t d[64];
    for (int i = 0; i < 64; i++) d[i] = 0;
    uint32_t a[4] = {threadIdx.x * 0x01010101u, 0x3c3c3c3cu, 0x38383838u, 0x34343434u};
    const uint64_t da = smem_desc(smem), db = smem_desc(smem + 16384);
    asm volatile("wgmma.fence.sync.aligned;\n" : "+r"(a[0]), "+r"(a[1]), "+r"(a[2]), "+r"(a[3]) :: "memory");
    for (int it = 0; it < MMA_ITERS; it += 4) {
      for (int j = 0; j < 4; j++) {
        if constexpr (ROLE == MMA_RS) mma_rs_e4m3(d, a, db); else mma_ss_s8(d, da, db);
      }
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    for (int i = 0; i < 64; i++) out += (float)d[i];
  } else if constexpr (ROLE == EX2 || ROLE == FFMA || ROLE == MIX) {
    float x[16];
    for (int i = 0; i < 16; i++) x[i] = -0.001f * (threadIdx.x + i);
    const int iters = ROLE == FFMA ? OPS_ITERS * 4 : OPS_ITERS;
    for (int it = 0; it < iters; it++) {
      for (int i = 0; i < 16; i++) {
        if constexpr (ROLE == EX2 || ROLE == MIX) asm volatile("ex2.approx.ftz.f32 %0, %0;\n" : "+f"(x[i]));
        if constexpr (ROLE == FFMA) asm volatile("fma.rn.f32 %0, %0, 0f3F7FF000, 0f3A83126F;\n" : "+f"(x[i]));
        if constexpr (ROLE == MIX)
          for (int k = 0; k < 6; k++) asm volatile("fma.rn.f32 %0, %0, 0f3F7FF000, 0fBA83126F;\n" : "+f"(x[i]));
      }
    }
    for (int i = 0; i < 16; i++) out += x[i];
  }
  return out;
}

template <int R0, int R1, int R2>
__global__ void __launch_bounds__(384, 1) probe(unsigned long long *cycles, float *sink) {
  extern __shared__ __align__(1024) unsigned char smem[];
  // Warp-uniform for the compiler (a lane-0 shuffle), so the wgmmas under "wg == 0" are not
  // serialized as in a divergent path (ptxas C7520).
  const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
  for (int i = threadIdx.x; i < 32768; i += blockDim.x) smem[i] = (unsigned char)(i * 37 + 11);
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
  __syncthreads();
  unsigned long long t0 = clock64();
  float out = wg == 0 ? run_role<R0>(smem) : wg == 1 ? run_role<R1>(smem) : run_role<R2>(smem);
  unsigned long long t1 = clock64();
  if (threadIdx.x % 128 == 0) cycles[blockIdx.x * 3 + wg] = t1 - t0;
  if (out == 12345.f) sink[threadIdx.x] = out;
}

struct probe_case { const char *name; void (*kernel)(unsigned long long *, float *); int roles[3]; };
#define CASE(name, a, b, c) { name, probe<a, b, c>, {a, b, c} }
static const probe_case CASES[] = {
  CASE("wgmma SS alone", MMA_SS, IDLE, IDLE),          CASE("wgmma RS alone", MMA_RS, IDLE, IDLE),
  CASE("ex2 x2 alone", IDLE, EX2, EX2),                CASE("ffma alone", IDLE, FFMA, IDLE),
  CASE("mix alone", IDLE, MIX, IDLE),                  CASE("mix x2 alone", IDLE, MIX, MIX),
  CASE("wgmma SS + ex2 x2", MMA_SS, EX2, EX2),         CASE("wgmma RS + ex2 x2", MMA_RS, EX2, EX2),
  CASE("wgmma SS + ffma", MMA_SS, FFMA, IDLE),         CASE("wgmma RS + ffma", MMA_RS, FFMA, IDLE),
  CASE("ex2 + ffma", IDLE, EX2, FFMA),                 CASE("wgmma SS + ex2 + ffma", MMA_SS, EX2, FFMA),
  CASE("wgmma SS + mix", MMA_SS, MIX, IDLE),           CASE("wgmma SS + mix x2", MMA_SS, MIX, MIX),
  CASE("wgmma RS + mix x2", MMA_RS, MIX, MIX),
};
static const char *ROLE_NAMES[] = {"-", "ss", "rs", "ex2", "ffma", "mix"};

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned long long *cycles;
  float *sink;
  CHECK(cudaMalloc(&cycles, sms * 3 * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&sink, 384 * sizeof(float)));
  static unsigned long long host[3 * 1024];
  double alone[6] = {0, 0, 0, 0, 0, 0};   // a role's loop time on its own (the first cases)
  printf("per warpgroup: its loop's SM-clocks, and x its time alone. Ideal alone: wgmma 64 clk each (%d), ex2 8 clk a\n"
         "warp instruction of its SMSP's MUFU with two warps an SMSP (%d x 16 each), FFMA 1 clk (%d x 16)\n", MMA_ITERS,
         OPS_ITERS, OPS_ITERS * 4);
  for (const probe_case &c : CASES) {
    CHECK(cudaFuncSetAttribute(c.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
    for (int rep = 0; rep < 2; rep++) {  // the first launch warms the clocks; the second is reported
      CHECK(cudaMemset(cycles, 0xff, sms * 3 * sizeof(unsigned long long)));
      c.kernel<<<sms, 384, 65536>>>(cycles, sink);
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
    }
    CHECK(cudaMemcpy(host, cycles, sms * 3 * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    printf("%-24s", c.name);
    for (int w = 0; w < 3; w++) {
      double mean = 0;
      for (int b = 0; b < sms; b++) mean += (double)host[b * 3 + w] / sms;
      const int r = c.roles[w];
      if (r == IDLE) { printf("  %-4s %8s %6s", "-", "", ""); continue; }
      if (alone[r] == 0) alone[r] = mean;
      printf("  %-4s %8.0f x%5.2f", ROLE_NAMES[r], mean, mean / alone[r]);
    }
    printf("\n");
  }
  return 0;
}
