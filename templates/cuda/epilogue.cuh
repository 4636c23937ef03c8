// Epilogue: O = acc / row_sum in the output type, and optionally the natural-
// log LSE.  Rows past seq_q and columns past D are not written.  Reads
// OUT_BF16 (O is bf16, else fp16), STORE_PAIRS (D and every stride are even:
// a pair of outputs is one 4-byte store) and the kernel's MT, DT, D and
// WRITE_LSE.

MX_INLINE u32 pack_out(float lo, float hi) {
  if constexpr (OUT_BF16) return pack_bf16(lo, hi);
  else return pack_f16(lo, hi);
}
MX_INLINE u16 to_out(float x) {
  if constexpr (OUT_BF16) return to_bf16(x);
  else return to_f16(x);
}

// A row's natural-log LSE from its base-2 max and its sum (-inf for a row
// that saw no key).
MX_INLINE float row_lse(float m, float l) { return l != 0.f ? (m + fast_log2(l)) * 0.6931471805599453f : MX_NEG_INF; }

// f(mt, h, r, l, inv) for each of this lane's rows: row tile mt, half h, the
// row r within the warp's 16 * MT, its softmax sum l over the quad and 1 / l
// (the mma kernels' staged output).
template <class F> MX_INLINE void for_each_row(const float (&row_sum)[MT][2], F f) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const float l = quad_sum(row_sum[mt][h]);
      f(mt, h, mt * 16 + lane / 4 + 8 * h, l, inverse_sum(l));
    }
}

// A warp's rows of O straight from the accumulators to global memory.  Its
// own loops, not for_each_row's: through the lambda, the FP4 wgmma kernel
// at D=128 (128 registers, three consumers) spilled 8 bytes.
MX_INLINE void write_output(const float (&o)[MT][DT][4], const float (&row_max)[MT][2], const float (&row_sum)[MT][2],
                            u16 *o_head, i64 o_ss, float *lse_head, int row0, int seq_q) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const float l = quad_sum(row_sum[mt][h]), inv = inverse_sum(l);
      const int row = row0 + mt * 16 + lane / 4 + 8 * h;
      if (row >= seq_q) continue;
      u16 *out = o_head + row * o_ss;
#pragma unroll
      for (int dt = 0; dt < DT; dt++) {
        const int col = dt * 8 + (lane % 4) * 2;
        if constexpr (STORE_PAIRS) {
          if (col < D) *(u32 *)(out + col) = pack_out(o[mt][dt][2 * h] * inv, o[mt][dt][2 * h + 1] * inv);
        } else {
          if (col < D) out[col] = to_out(o[mt][dt][2 * h] * inv);
          if (col + 1 < D) out[col + 1] = to_out(o[mt][dt][2 * h + 1] * inv);
        }
      }
      if (WRITE_LSE && lane % 4 == 0) lse_head[row] = row_lse(row_max[mt][h], l);
    }
}
