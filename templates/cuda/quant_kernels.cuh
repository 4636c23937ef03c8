// The three kernels that run before an INT8 family's attention kernel:
// stats, quant_kv and quant_q.  They use the helpers of cuda/quant_int8.cuh
// (and cuda/quant_fp8v.cuh's for FP8 V) and the workspace sections of
// blocks/attn_int8.lua.  Reads QUANT_WARPS, QUANT_THREADS and
// QUANT_MIN_BLOCKS (their launch bounds; blocks/quant_kernels.lua says why),
// KERNEL_NAME_stats, KERNEL_NAME_quant_kv and KERNEL_NAME_quant_q (their
// symbols), and the family's constants (D, D32, DV, V_TERMS, PER_THREAD,
// SMOOTH_K, FP8_V, WRITE_LSE, the WS_ sections).

MX_INLINE u8 *ws_at(const mx_kernel_args &a, int section) { return (u8 *)a.ws + a.ws_off[section]; }

// Kernel 1, stats.  Grid (D32 / 32, heads_kv, batch), 256 threads over the
// block's 32 channels: a lane loads SV adjacent channels (8 bytes where the
// plan's alignment allows), so a warp load covers SV keys of the 32 channels
// (32 lanes / (32 / SV) lanes a key) and eight warps stride over the keys
// (over every 8th key for K's mean from 1024 keys: 7/8 of K's bytes saved).
// The pass is bound by the loads in flight: 2-byte loads (a warp load of 64
// bytes) read 2.9 TB/s (H200, 2026-11-29).  The mean is summed in fp64 as numerics'
// mx_channel_mean does; sums of bf16/fp16 values are exact in fp64 unless
// their magnitudes span ~40 binades, so the order of the sum does not change
// the fp32 mean.
constexpr int SV = VEC < 4 ? VEC : 4, SV_LANES = 32 / SV;   // channels a lane, lanes a key
struct __align__(2 * SV) stat_vec { u16 h[SV]; };
extern "C" __global__ void __launch_bounds__(256) KERNEL_NAME_stats(const mx_kernel_args a) {
  let_next_kernel_start();             // quant_q needs nothing of this one until it ends
  __shared__ double part_sum[8][32];
  __shared__ float part_max[8][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, kv_head = blockIdx.y, batch = blockIdx.z;
  const int c0 = blockIdx.x * 32 + lane % SV_LANES * SV, key_lane = lane / SV_LANES;
  const u16 *k = (const u16 *)a.k + batch * a.k_sb + kv_head * a.k_sh + c0;
  const u16 *v = (const u16 *)a.v + batch * a.v_sb + kv_head * a.v_sh + c0;
  // The mean of every kstep-th key (numerics mx_kmean_step: 8 from 1024 keys).
  const int kstep = a.seq_k >= 1024 ? 8 : 1, kcount = (a.seq_k + kstep - 1) / kstep;
  double sum[SV] = {};
  float amax[SV] = {};
  if (SMOOTH_K && c0 < D)
#pragma unroll 4
    for (int j = (warp * SV + key_lane) * kstep; j < a.seq_k; j += 8 * SV * kstep) {
      const stat_vec x = *(const stat_vec *)(k + (i64)j * a.k_ss);
#pragma unroll
      for (int e = 0; e < SV; e++) {
        // A NaN or infinite key counts as 0 (numerics mx_channel_mean_sampled):
        // the mean stays finite and the bad key's NaN stays in its own group.
        const float f = in_to_f32(x.h[e]);
        sum[e] += (double)(finite_f(f) ? f : 0.f);
      }
    }
  if (FP8_V && c0 < D)
#pragma unroll 4
    for (int j = warp * SV + key_lane; j < a.seq_k; j += 8 * SV) {
      const stat_vec x = *(const stat_vec *)(v + (i64)j * a.v_ss);
#pragma unroll
      for (int e = 0; e < SV; e++) amax[e] = fmax_nan(amax[e], abs_f(in_to_f32(x.h[e])));
    }
  // The lanes of one channel group, then the warps.
#pragma unroll
  for (int e = 0; e < SV; e++) {
#pragma unroll
    for (int s = SV_LANES; s < 32; s *= 2) {
      sum[e] += __shfl_xor_sync(0xffffffffu, sum[e], s);
      amax[e] = fmax_nan(amax[e], __shfl_xor_sync(0xffffffffu, amax[e], s));
    }
    if (key_lane == 0) { part_sum[warp][lane * SV + e] = sum[e]; part_max[warp][lane * SV + e] = amax[e]; }
  }
  __syncthreads();
  if (warp != 0) return;
  double total = part_sum[0][lane];
  float vmax = part_max[0][lane];
  for (int w = 1; w < 8; w++) { total += part_sum[w][lane]; vmax = fmax_nan(vmax, part_max[w][lane]); }
  const int c = blockIdx.x * 32 + lane;
  const i64 kh = (i64)batch * a.heads_kv + kv_head;
  ((float *)ws_at(a, WS_KMEAN))[kh * D32 + c] = SMOOTH_K && a.seq_k > 0 && c < D ? (float)(total / kcount) : 0.f;
  if (FP8_V) ((float *)ws_at(a, WS_VSCALE))[kh * D32 + c] = nan_if_inf(div_rn(vmax, 448.f));
}

// Kernels 2 and 3, quant_q and quant_kv, "pdl" launches, each a kernel of
// its own because NVRTC compiles a module's kernels apart and in parallel:
// together they were the module's slowest compile (int8-fp8 D=256 on the CPU
// machine: Q ~290 of 827 ms, K ~290, V ~250; bench/NOTES.md, 2026-11-30).
// quant_q needs nothing of the stats kernel but the LSE's smooth-K term, so
// its blocks run beside the stats pass; quant_kv's wait for the mean and V's
// scales.  A PDL kernel's wait covers only the kernel launched just before
// it, so every kernel of the chain waits before it exits: quant_kv's (and
// the attention kernel's) wait then implies the stats kernel's end too.
// Grid (ceil(rows / (16 * QUANT_WARPS)), heads, batch), QUANT_WARPS warps: a
// warp per 16-row block of Q, or of K (and K's block of V).  With PER_THREAD
// a block's eight warps cover one 128-key window, the span of K's per-thread
// groups (quantize_k_window).
MX_INLINE int qscales_a_head(int nqp) { return PER_THREAD ? nqp / 2 : nqp / 16; }
MX_INLINE int kscales_a_head(int nkp) { return PER_THREAD ? (nkp + 127) / 128 * 4 : nkp / 16; }
extern "C" __global__ void __launch_bounds__(QUANT_THREADS, QUANT_MIN_BLOCKS) KERNEL_NAME_quant_kv(const mx_kernel_args a) {
  const int kv_head = blockIdx.y, batch = blockIdx.z;
  const int block0 = blockIdx.x * QUANT_WARPS * 16, row0 = block0 + threadIdx.x / 32 * 16;
  const int nkp = pad_k(a.seq_k);
  let_next_kernel_start();             // the attention kernel's blocks wait for all of this one
  wait_for_previous_kernel();          // the stats kernel's mean and V scales
  // The whole block leaves together (quantize_k_window's barrier); a warp
  // past the padded keys stays for it.
  if (block0 >= nkp) return;
  const bool live = row0 < nkp;
  const i64 kh = (i64)batch * a.heads_kv + kv_head;
  const u16 *k = (const u16 *)a.k + batch * a.k_sb + kv_head * a.k_sh;
  const float *mean = SMOOTH_K ? (const float *)ws_at(a, WS_KMEAN) + kh * D32 : nullptr;
  u8 *k8 = ws_at(a, WS_K8) + (kh * nkp + row0) * D32;
  float *ks = (float *)ws_at(a, WS_KSCALE) + kh * kscales_a_head(nkp);
  if (PER_THREAD) quantize_k_window(k, a.k_ss, block0, live, a.seq_k, mean, k8, ks + block0 / 32);
  else if (live) quantize_rows(k, a.k_ss, row0, a.seq_k, 1.f, mean, k8, ks + row0 / 16);
  if (!live) return;
  if (FP8_V) {
    const u16 *v = (const u16 *)a.v + batch * a.v_sb + kv_head * a.v_sh;
    quantize_v_transposed(v, a.v_ss, row0, a.seq_k, (const float *)ws_at(a, WS_VSCALE) + kh * D32,
                          ws_at(a, WS_V8T) + kh * V_TERMS * DV * nkp + row0, nkp);
  }
}

extern "C" __global__ void __launch_bounds__(QUANT_THREADS, QUANT_MIN_BLOCKS) KERNEL_NAME_quant_q(const mx_kernel_args a) {
  const int head = blockIdx.y, batch = blockIdx.z;
  const int row0 = blockIdx.x * QUANT_WARPS * 16 + threadIdx.x / 32 * 16;
  const int nqp = pad_q(a.seq_q);
  let_next_kernel_start();             // quant_kv's blocks wait for all of this one
  const i64 qh = (i64)batch * a.heads_q + head;
  const u16 *q = (const u16 *)a.q + batch * a.q_sb + head * a.q_sh;
  if (row0 < nqp) {
    u8 *q8 = ws_at(a, WS_Q8) + (qh * nqp + row0) * D32;
    float *qs = (float *)ws_at(a, WS_QSCALE) + qh * qscales_a_head(nqp);
    if (PER_THREAD) {
      const float lane_scale = quantize_q_per_thread(q, a.q_ss, row0, a.seq_q, a.scale_log2, rows_of_d32{q8});
      if (threadIdx.x % 32 < 8) qs[row0 / 2 + threadIdx.x % 32] = lane_scale;
    } else quantize_rows(q, a.q_ss, row0, a.seq_q, a.scale_log2, nullptr, q8, qs + row0 / 16);
  }
  wait_for_previous_kernel();          // the stats kernel's mean; and see above
  if (WRITE_LSE && SMOOTH_K && row0 < nqp) {
    const float *mean = (const float *)ws_at(a, WS_KMEAN) + ((i64)batch * a.heads_kv + head / a.gqa) * D32;
    smooth_k_correction(q, a.q_ss, row0, a.seq_q, a.scale_log2, mean, (float *)ws_at(a, WS_CORR) + qh * nqp + row0);
  }
}
