// FP8 V for the int8-fp8 family: per-channel E4M3 (scale = amax / 448, the
// amax from the stats kernel), written transposed, V^T [channel][key], so the
// P.V MMA's B operand (32 keys of one channel, "col") is contiguous, and with
// the keys of each 16-key half permuted to match the S accumulator layout
// (the design notes' K-column permutation):
//   stored position 4t+i of a half  <-  key 2t + (i&1) + 8*(i>>1)
// The m16n8k32 A fragment wants k = 4t..4t+3 in one thread; the S tile's
// accumulators give that thread keys 2t, 2t+1 of two adjacent n8 tiles, i.e.
// keys 2t, 2t+1, 8+2t, 9+2t.  Reading P in that order and V^T stored in the
// same order makes P.V the same sum, with no shuffles.
MX_INLINE int permuted_key(int pos) { return 2 * (pos / 4) + (pos & 1) + 8 * ((pos >> 1) & 1); }

// One warp: keys [key0, key0 + 16) of every channel.  A lane owns VV adjacent
// channels, loads their 16 keys at once (a warp load is 32*VV contiguous
// elements of one key) and packs each channel's 16 codes into one 16-byte
// store: V^T's rows are channels, so that store is already transposed.
// vt points at channel 0, key key0 of this head's V^T (row stride nkp bytes).
// V_TERMS = 2 also writes the second term, lo = E4M3(v / scale - hi) on the
// same scale, DV rows further on (numerics' mx_e4m3x2_quantize_per_channel).
constexpr int VV = VEC < 4 ? VEC : 4;
struct __align__(2 * VV) v_vec { u16 h[VV]; };
struct __align__(16) v_codes { u32 w[4]; };
MX_INLINE void quantize_v_transposed(const u16 *v, i64 ss, int key0, int keys, const float *vscale, u8 *vt, int nkp) {
  const int lane = threadIdx.x % 32;
#pragma unroll 1
  for (int c0 = lane * VV; c0 < DV; c0 += 32 * VV) {
    // Keys past the sequence read as 0 and code to 0 under any scale but 0,
    // whose channel is all zero codes anyway.  Every load is unconditional,
    // from a clamped key and channel, and what lies outside is zeroed after:
    // under `if (in range) load` the compiler put a branch around each load
    // and its first use, so a lane's 16 loads went out one at a time (in ncu,
    // half the quant pass's stall samples, long-scoreboard, on them).
    const bool chan_in = c0 < D;
    const u16 *vc = v + (chan_in ? c0 : 0);
    v_vec x[16];
#pragma unroll
    for (int pos = 0; pos < 16; pos++) x[pos] = *(const v_vec *)(vc + (i64)min(key0 + permuted_key(pos), keys - 1) * ss);
#pragma unroll
    for (int pos = 0; pos < 16; pos++) {
      const bool in = chan_in && key0 + permuted_key(pos) < keys;
#pragma unroll
      for (int e = 0; e < VV; e++) x[pos].h[e] = in ? x[pos].h[e] : (u16)0;
    }
#pragma unroll
    for (int e = 0; e < VV; e++) {
      const int c = c0 + e;
      const float scale = c < D ? vscale[c] : 0.f;
      const scale_recip inv = scale_reciprocal(scale);
      // y = v / scale; r.k is 1 for every scale of at least 2^-100, and
      // multiplying by it changes nothing then (one FMUL a value saved).
      float y[16];
#pragma unroll
      for (int pos = 0; pos < 16; pos++) {
        const float x1 = in_to_f32(x[pos].h[e]);
        y[pos] = inv.k == 1.f ? __fmul_rn(x1, inv.inv) : div_by_scale(x1, inv);
      }
      v_codes out = {{0u, 0u, 0u, 0u}}, out_lo = {{0u, 0u, 0u, 0u}};
      if (scale > 0.f)
#pragma unroll
        for (int w = 0; w < 4; w++) {
          const u32 a = to_e4m3x2(y[4 * w], y[4 * w + 1]), b = to_e4m3x2(y[4 * w + 2], y[4 * w + 3]);
          out.w[w] = __byte_perm(a, b, 0x5410);
          if (V_TERMS == 2) {
            float h[4];
            from_e4m3x2(a, h[0], h[1]);
            from_e4m3x2(b, h[2], h[3]);
            out_lo.w[w] = __byte_perm(to_e4m3x2(y[4 * w] - h[0], y[4 * w + 1] - h[1]),
                                      to_e4m3x2(y[4 * w + 2] - h[2], y[4 * w + 3] - h[3]), 0x5410);
          }
        }
      if (c < DV) *(v_codes *)(vt + (i64)c * nkp) = out;
      if (V_TERMS == 2 && c < DV) *(v_codes *)(vt + (i64)(DV + c) * nkp) = out_lo;
    }
  }
}
