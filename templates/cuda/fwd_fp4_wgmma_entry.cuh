// The FP4 wgmma kernel's entry: the schedule's body is fwd_fp4_wgmma.cuh's
// fp4_wgmma_attention.  Reads THREADS and KERNEL_NAME, the kernel's symbol.
extern "C" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {
  fp4_wgmma_attention(a);
}
