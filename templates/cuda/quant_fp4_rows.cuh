// quant_kv and quant_q of nvfp4 and mxfp4: one thread per FP4 block of a Q or
// K row, or of a V^T row (cuda/quant_fp4.cuh's helpers).  Reads
// KERNEL_NAME_quant_kv and KERNEL_NAME_quant_q (their symbols).

// blockIdx.y == 0: K rows; 1: V^T rows (channel fastest, so that a warp's
// reads of one key are contiguous).
extern "C" __global__ void __launch_bounds__(256) KERNEL_NAME_quant_kv(const mx_kernel_args a) {
  const int nk = k_rows(a), bhs = a.batch * a.heads_kv;
  const i64 id = (i64)blockIdx.x * 256 + threadIdx.x;
  if (blockIdx.y == 0) {
    const int blk = (int)(id % (DP / PB));
    const i64 rest = id / (DP / PB);
    const int row = (int)(rest % nk), bh = (int)(rest / nk);
    if (bh >= bhs) return;
    const u16 *k = (const u16 *)a.k + (bh / a.heads_kv) * a.k_sb + (bh % a.heads_kv) * a.k_sh;
    const float *mean = SMOOTH_K ? (const float *)ws_at(a, WS_MEAN) + (i64)bh * DP : nullptr;
    const i64 r = (i64)bh * nk + row;
    quantize_row_block(k, a.k_ss, a.seq_k, mean, row, blk, ws_at(a, WS_KC) + r * ROW_CODE_BYTES, ws_at(a, WS_KS) + r * SPK);
  } else {
    const int c = (int)(id % DV);
    const i64 rest = id / DV;
    const int kb = (int)(rest % (nk / PB)), bh = (int)(rest / (nk / PB));
    if (bh >= bhs) return;
    quantize_vt_block(a, nk, bh, kb, c);
  }
}

extern "C" __global__ void __launch_bounds__(256) KERNEL_NAME_quant_q(const mx_kernel_args a) {
  const int nq = q_rows(a);
  const i64 id = (i64)blockIdx.x * 256 + threadIdx.x;
  const int blk = (int)(id % (DP / PB));
  const i64 rest = id / (DP / PB);
  const int row = (int)(rest % nq), bh = (int)(rest / nq);
  if (bh >= a.batch * a.heads_q) return;
  const int b = bh / a.heads_q, h = bh % a.heads_q;
  const u16 *q = (const u16 *)a.q + b * a.q_sb + h * a.q_sh;
  const i64 r = (i64)bh * nq + row;
  quantize_row_block(q, a.q_ss, a.seq_q, nullptr, row, blk, ws_at(a, WS_QC) + r * ROW_CODE_BYTES, ws_at(a, WS_QS) + r * SPK);
  if (SMOOTH_K && WRITE_LSE && blk == 0) store_correction(a, q, b * a.heads_kv + h / a.gqa, row, r);
}
