/* numerics: the CPU oracle every GPU kernel is checked against.
 *
 * Plain C over libc/libm: scalar formats (bit-exact), block quantizers with
 * the packed layouts the kernels consume (bit-exact), an fp64 reference
 * attention, a quantized-pipeline reference per kernel family (compared with
 * a tolerance), error metrics and a reproducible RNG.  Nothing here prints,
 * aborts or exits; functions that can be handed a bad argument return a
 * status and set the thread's message (util/err.h).
 *
 * Conventions that the GPU side must follow to match bit for bit:
 *  - Every quantizer divides in fp32 with IEEE round-to-nearest (x / scale,
 *    CUDA's default `/` without --use_fast_math, i.e. div.rn.f32), never
 *    x * (1 / scale): the two differ in the last bit and can flip a code.
 *  - Scales are computed in fp32 exactly as written below (amax / 6.0f,
 *    amax / 127.0f, amax / 448.0f, rowmax / 2688.0f) and then encoded.
 *  - A scale that decodes to 0 (all-zero block, or amax so small that the
 *    scale underflows the scale format) makes every code of its block 0
 *    (+0): nothing is divided by zero.
 *  - NaN and infinity follow exact attention (and SDPA): nothing non-finite
 *    is hidden.  A block (or token, channel, per-thread group: whatever one
 *    scale covers) that holds a NaN or an infinity gets a NaN scale: UE4M3
 *    0x7F, UE8M0 0xFF, a NaN fp32 scale; its codes are then 0 (a kernel may
 *    write others: the NaN scale alone decides the values), so every element
 *    of the block dequantizes to NaN.  The block maximum is taken with a
 *    max that keeps NaN (fmaxf drops it).  The attention then spreads it:
 *    a row's score maximum is NaN if any visible score is, so the row's O and
 *    LSE are NaN; a NaN in V^ (times any P^, 0 included) makes the columns it
 *    is in NaN in every row that sees its key.  Smooth-K's mean counts a
 *    non-finite element as 0, so that a bad key stays in its own block.
 *    Exact attention differs only for infinities: an infinite score there is
 *    +-inf, and only rows with a +inf score come out NaN.
 */
#ifndef MX_NUMERICS_H
#define MX_NUMERICS_H
#include <stddef.h>
#include <stdint.h>
#include "mxattn.h"

/* ===== Scalar formats ====================================================
 * Every encoder rounds to nearest, ties to even (the code whose lowest
 * mantissa bit is 0), keeps the sign of zero, and decodes exactly.
 *
 * E2M1 (FP4, 4-bit code in the low nibble): s.ee.m, bias 1.  Magnitudes
 *   0, 0.5, 1, 1.5, 2, 3, 4, 6 for codes 0..7; bit 3 is the sign.
 *   |x| > 6 and +-inf saturate to +-6; NaN encodes to +6 (code 0x7): the
 *   format has no NaN; this is our reading of PTX cvt.rn.satfinite.e2m1x2
 *   (NaN -> MAX_NORM), to be confirmed by the GPU quantizer test.
 * E4M3 (OCP FP8): s.eeee.mmm, bias 7, subnormals 2^-9 * m, max 448
 *   (0x7E), no infinities, S.1111.111 (0x7F, 0xFF) is NaN.
 *   Finite overflow and +-inf saturate to +-448; NaN encodes to 0x7F.
 * E5M2 (OCP FP8): s.eeeee.mm, bias 15, max 57344 (0x7B), +-inf is
 *   S.11111.00, NaN is S.11111.{01,10,11}.  Encoding saturates like the
 *   kernels' cvt.rn.satfinite: finite overflow goes to +-57344; an infinite
 *   input stays infinite (0x7C / 0xFC); NaN encodes to 0x7F.
 * UE8M0 (MX block scale): value 2^(code-127) for codes 0..254, 0xFF is NaN,
 *   no zero and no sign.  mx_f32_to_ue8m0 rounds to the nearest power of
 *   two in value (threshold 1.5 * 2^e; an exact tie goes to the even code);
 *   x <= 0 gives code 0 (2^-127, the smallest), x >= 2^127 and +inf give
 *   0xFE, NaN gives 0xFF.  Block scales use mx_ue8m0_scale_for_amax below
 *   (which gives 0xFF for an infinite amax).
 * UE4M3 (NVFP4 block scale): E4M3 with the sign bit forced to 0, so codes
 *   0x00..0x7F (0x7F NaN, max 448 at 0x7E); a code with bit 7 set is not a
 *   UE4M3 code and decodes to NaN.  Negative inputs (and -0) encode to 0;
 *   overflow and +inf saturate to 448; NaN encodes to 0x7F.
 * INT8: two's complement; mx_f32_to_int8 rounds half to even and clamps to
 *   [-127, 127] (the symmetric range: -128 is never produced, though it
 *   decodes); NaN encodes to 0.
 * fp16 / bf16: IEEE binary16 and bfloat16, RNE, overflow to +-inf (as
 *   __float2half_rn and __float2bfloat16_rn do), NaN kept quiet with its sign.
 */
uint8_t mx_f32_to_e2m1(float x);
float   mx_e2m1_to_f32(uint8_t code);   /* only the low nibble is read */
uint8_t mx_f32_to_e4m3(float x);
float   mx_e4m3_to_f32(uint8_t code);
uint8_t mx_f32_to_e5m2(float x);
float   mx_e5m2_to_f32(uint8_t code);
uint8_t mx_f32_to_ue8m0(float x);
float   mx_ue8m0_to_f32(uint8_t code);
uint8_t mx_f32_to_ue4m3(float x);
float   mx_ue4m3_to_f32(uint8_t code);
int8_t  mx_f32_to_int8(float x);
/* x / scale as the INT8 and E4M3 quantizers compute it: (x * k) * inv, with
 * inv = 1 / (scale * k) rounded once per block or channel.  The GPU then
 * pays a multiply or two per element where a division cost it ~10
 * instructions (its quantization kernel ran at a third of the memory
 * bandwidth).  k is 1, or 2^100 for a scale so small that 1/scale would
 * overflow; both products by k are exact.  The result may differ from
 * x / scale in the last bit, so a code may land on the other side of a
 * rounding boundary; the GPU quantizers do the same, bit for bit. */
typedef struct { float k, inv; } mx_scale_recip;
static inline mx_scale_recip mx_scale_reciprocal(float scale) {
    mx_scale_recip r;
    r.k = scale < 0x1p-100f ? 0x1p100f : 1.0f;
    r.inv = 1.0f / (scale * r.k);
    return r;
}
static inline float mx_div_by_scale(float x, mx_scale_recip r) { return (x * r.k) * r.inv; }
uint16_t mx_f32_to_f16(float x);
float    mx_f16_to_f32(uint16_t h);
uint16_t mx_f32_to_bf16(float x);
float    mx_bf16_to_f32(uint16_t h);
/* x rounded through the format and back: the value a kernel operand holds. */
float mx_round_f16(float x);
float mx_round_bf16(float x);
float mx_round_e4m3(float x);
float mx_round_e2m1(float x);

typedef enum {
    MX_FMT_E2M1, MX_FMT_E4M3, MX_FMT_E5M2, MX_FMT_UE8M0, MX_FMT_UE4M3, MX_FMT_INT8
} mx_format;
#define MX_FORMAT_COUNT 6

/* Listing every code of a format: codes are 0 .. mx_format_code_count()-1
 * (16 for E2M1, 128 for UE4M3, 256 for the others); decode gives the value
 * (NaN for NaN codes), encode the code of a float.  name: "e4m3" etc. */
const char *mx_format_name(mx_format f);
int   mx_format_code_count(mx_format f);
float mx_format_decode(mx_format f, unsigned code);
unsigned mx_format_encode(mx_format f, float x);
/* Number of distinct finite non-negative magnitudes |decode(c)| in [lo, hi]
 * over all codes (0 counts once, -0 and +0 are one magnitude).  The census of
 * the design notes: E4M3 has 127 over [0, 448] and 35 in [0, 0.167]. */
int mx_format_distinct_magnitudes(mx_format f, double lo, double hi);

/* ===== Microscaling FP4 block quantizers =================================
 * A matrix of `rows` rows of `cols` floats, row r starting at x + r*row_stride
 * (row_stride >= cols, in elements), is quantized row by row in blocks of
 * B consecutive elements of a row (B = 16 for NVFP4, 32 for MXFP4).  A row is
 * padded with zeros to padded_cols = ceil(cols / B) * B.
 *
 * Packed elements, `codes`: rows * padded_cols / 2 bytes, row-major and
 *   dense (row r at codes + r * padded_cols/2).  Byte i of a row holds
 *   element 2i in its low nibble and element 2i+1 in its high nibble; each
 *   nibble is an E2M1 code (bit 3 sign).  Padding elements are code 0.
 * Scales, `scales`: rows * padded_cols / B bytes, row-major and dense, one
 *   per block in block order: scales[r * (padded_cols/B) + b] covers
 *   elements b*B .. b*B+B-1 of row r.
 *   NVFP4: a UE4M3 code, scale = e4m3(amax / 6.0f) with amax the block's
 *     largest |x|; element code = e2m1(x / scale).  E4M3 rounding of the
 *     scale may round it down, so x/scale can exceed 6 and saturate to 6.
 *   MXFP4: a UE8M0 code, scale = 2^(floor(log2 amax) - 2), OCP MX v1.0's
 *     rule (mx_ue8m0_scale_for_amax); element code = e2m1(x / scale).
 *     amax / scale lies in [4, 8), so elements in (6, 8) * scale saturate to 6.
 * Dequantized element = e2m1 value * scale value.
 *
 * Why MXFP4 uses OCP's floor rule rather than rounding the scale up
 * (2^ceil(log2(amax / 6)), mx_ue8m0_scale_ceil, under which nothing
 * saturates): it is the MX specification, so our packed MXFP4 matches what
 * other MX producers write; and it measures better.  Rounding up costs every
 * element of the block up to one binade of resolution, while the floor rule
 * only clips the block's few elements above 6 * scale, by at most 25%.  On
 * the accuracy harness (NVFP4 vs MXFP4, 1024 x 128) the floor rule gives
 * output cosine 96.91% / rel-L1 0.245, rounding up 96.72% / 0.256.
 */
typedef enum { MX_FP4_NVFP4 = 0, MX_FP4_MXFP4 = 1 } mx_fp4_kind;

int    mx_fp4_block_size(mx_fp4_kind kind);               /* 16 or 32 */
int    mx_fp4_padded_cols(mx_fp4_kind kind, int cols);
size_t mx_fp4_codes_bytes(mx_fp4_kind kind, int rows, int cols);
size_t mx_fp4_scales_bytes(mx_fp4_kind kind, int rows, int cols);
/* The scale codes a block of largest magnitude `amax` gets; a NaN or
 * infinite amax gets the NaN code (0x7F, 0xFF). */
uint8_t mx_nvfp4_scale_for_amax(float amax);  /* UE4M3 code of e4m3(amax/6) */
uint8_t mx_ue8m0_scale_for_amax(float amax);  /* UE8M0 code, 2^(floor(log2 amax)-2) (OCP) */
uint8_t mx_ue8m0_scale_ceil(float amax);      /* UE8M0 code, 2^ceil(log2(amax/6)), for comparison */
float   mx_fp4_scale_value(mx_fp4_kind kind, uint8_t scale_code);

mxattn_status mx_fp4_quantize(mx_fp4_kind kind, const float *x, int rows, int cols,
                              int64_t row_stride, uint8_t *codes, uint8_t *scales);
/* Writes rows x cols floats (padding dropped) to out + r*out_row_stride. */
mxattn_status mx_fp4_dequantize(mx_fp4_kind kind, const uint8_t *codes, const uint8_t *scales,
                                int rows, int cols, float *out, int64_t out_row_stride);
/* One nibble of a packed row: element i of a row that starts at `row`. */
static inline uint8_t mx_fp4_code_at(const uint8_t *row, int i) {
    return (uint8_t)((i & 1) ? row[i >> 1] >> 4 : row[i >> 1] & 0xF);
}

/* ===== The softmax operand P ============================================
 * P's rows are quantized along the keys (the reduction dimension of P.V),
 * with the FP4 layouts above (rows = query rows, cols = keys).
 * Direct: mx_fp4_quantize on P itself.  Every value is in [0, 1], so an
 *   NVFP4 scale lies in [0, 1/6] where E4M3 has only 35 magnitudes.
 * Two-level: a per-row fp32 pre-scale s1 = rowmax / 2688.0f (448 * 6) maps
 *   the row onto the full E4M3 x E2M1 range; then P2 = p / s1 (fp32 division)
 *   is FP4-quantized as above, giving block scales s2.  Dequantized
 *   P = e2m1 * s2 * s1; s1 is applied after the matmul, in fp32.
 *   row_scales: `rows` floats, s1 of each row (0 for an all-zero row, whose
 *   codes are then all 0).  The same s1 rule is used for MXFP4, where the
 *   E8M0 scale's range makes it nearly a no-op, so that kernels share code. */
mxattn_status mx_p_quantize_two_level(mx_fp4_kind kind, const float *p, int rows, int cols,
                                      int64_t row_stride, uint8_t *codes, uint8_t *scales,
                                      float *row_scales);
mxattn_status mx_p_dequantize_two_level(mx_fp4_kind kind, const uint8_t *codes,
                                        const uint8_t *scales, const float *row_scales,
                                        int rows, int cols, float *out, int64_t out_row_stride);

/* ===== INT8 and FP8 quantizers ==========================================
 * Per-block INT8 (SageAttention's Q and K): rows are grouped in blocks of
 *   block_rows consecutive rows (the last may be short); each block has one
 *   fp32 scale = amax / 127.0f over all its rows x cols elements, written to
 *   scales[block]; q = round-half-even(x / scale) clamped to [-127, 127].
 *   q is rows x cols, dense row-major.  block_rows = 1 is per-token INT8.
 * Per-channel E4M3 (V): one fp32 scale per column = amax over the column's
 *   rows / 448.0f, written to scales[col]; code = e4m3(x / scale); codes is
 *   rows x cols, dense row-major. */
mxattn_status mx_int8_quantize_blocks(const float *x, int rows, int cols, int64_t row_stride,
                                      int block_rows, int8_t *q, float *scales);
mxattn_status mx_int8_quantize_per_token(const float *x, int rows, int cols, int64_t row_stride,
                                         int8_t *q, float *scales);
/* INT8 in SageAttention2's sm90 "per-thread" groups, each quantized as one
 * block above: for Q (keys = 0) rows {16b + g, 16b + g + 8}, g < 8, scale
 * index 8b + g; for K (keys = 1) the keys of a 128-key block b with the same
 * (k mod 8) / 2 = t, scale index 4b + t.  They are the rows and keys one
 * thread of an m16n8 (or m64nN warpgroup) MMA fragment holds.  scales holds
 * mx_int8_per_thread_groups(rows, keys) floats (0 for a group with no row). */
mxattn_status mx_int8_quantize_per_thread(const float *x, int rows, int cols, int64_t row_stride, int keys,
                                          int8_t *q, float *scales);
int mx_int8_per_thread_group(int row, int keys);
int mx_int8_per_thread_groups(int rows, int keys);
mxattn_status mx_e4m3_quantize_per_channel(const float *x, int rows, int cols, int64_t row_stride,
                                           uint8_t *codes, float *scales);
/* V as two E4M3 terms on the same per-channel scale: hi = e4m3(x / scale) as
 * above, lo = e4m3(x / scale - hi) (fp32), so x ~ (hi + lo) * scale.  The
 * residual's codes stay in E4M3's normal range for all but the smallest x,
 * and both terms share one scale, so a kernel can add their P.V products in
 * one accumulator.  On Gaussian inputs this removes V's share of int8-fp8's
 * error (bench/NOTES.md). */
mxattn_status mx_e4m3x2_quantize_per_channel(const float *x, int rows, int cols, int64_t row_stride,
                                             uint8_t *hi, uint8_t *lo, float *scales);

/* ===== Smooth-K ==========================================================
 * K's per-channel mean over its rows (accumulated in fp64, stored as fp32) is
 * subtracted before K is quantized: K' = K - mean (fp32).  Then
 * Q.K^T = Q.K'^T + Q.mean^T exactly; the correction q_i . mean is the same
 * for every key of row i, so it cancels in the softmax (kernels may drop it)
 * and only changes the scores and the LSE. */
void mx_channel_mean(const float *x, int rows, int cols, int64_t row_stride, float *mean);
/* The mean over rows 0, step, 2 step, ... only (fp64 sum over those rows
 * divided by their count).  Any vector subtracted from every key keeps the
 * softmax and the LSE exact; the mean is only what centres K best for its
 * quantization, and 1/step of the keys estimates it well once there are
 * many (mx_kmean_step). */
void mx_channel_mean_sampled(const float *x, int rows, int cols, int64_t row_stride, int step, float *mean);
/* The INT8 families' rule: every 8th key from 1024 keys (at least 128 of
 * them), else every key.  Their stats kernel reads K for the mean and V for
 * FP8 V's scales, and the sampled mean takes 7/8 of K's bytes off it. */
int mx_kmean_step(int seq_k);
void mx_subtract_mean(const float *x, int rows, int cols, int64_t row_stride,
                      const float *mean, float *out /* rows x cols dense */);
/* corr[i] = sum_c q[i][c] * mean[c], in fp64. */
void mx_smooth_k_correction(const float *q, int rows, int cols, int64_t row_stride,
                            const float *mean, double *corr);

/* ===== fp64 reference attention ==========================================
 * Q is [batch, heads_q, seq_q, head_dim], K and V [batch, heads_kv, seq_k,
 * head_dim], O [batch, heads_q, seq_q, head_dim], LSE [batch, heads_q, seq_q]:
 * all contiguous (BHND).  Query head h reads kv head h / (heads_q / heads_kv).
 * LSE is the natural log of sum_j exp(sm_scale * q.k_j) over visible keys;
 * a row that sees no key gets O = 0 and LSE = -inf. */
typedef struct {
    int batch, heads_q, heads_kv, seq_q, seq_k, head_dim;
    mxattn_causal causal;
    double sm_scale;            /* 0: 1/sqrt(head_dim) */
} mx_ref_shape;

/* Fills a shape from a public problem (its layout and strides are ignored:
 * reference inputs are always BHND contiguous). */
void mx_ref_shape_from_problem(const mxattn_problem *p, mx_ref_shape *out);
mxattn_status mx_ref_shape_check(const mx_ref_shape *s);
double mx_ref_sm_scale(const mx_ref_shape *s);
/* 1 if key j is visible to query i under the shape's causal mode. */
int mx_ref_key_visible(const mx_ref_shape *s, int i, int j);
/* o and lse may each be NULL. */
mxattn_status mx_ref_attention(const mx_ref_shape *s, const float *q, const float *k,
                               const float *v, double *o, double *lse);

/* ===== Quantized-pipeline reference =====================================
 * Reproduces what a kernel family computes, stage by stage:
 *   1. inputs rounded to the kernel's input dtype (input_round);
 *   2. S = sm_scale * Q^.K^^T (+ q.mean when smooth_k), Q^ K^ per `qk`;
 *   3. P = softmax(S) over visible keys, quantized per `p`;
 *   4. O = P^ . V^ with V^ per `v`, accumulated in fp64.
 * INT8 QK: per-block scales, block_q rows of Q and block_k rows of K.
 * FP4 QK: Q and K quantized along head_dim (rows of length head_dim).
 * FP4 V: quantized along the sequence, i.e. V^T's rows (one per channel) in
 *   blocks of 16/32 consecutive keys, because P.V reduces over the keys and
 *   a block scale must be constant along the reduction.
 * FP8 V: per-channel E4M3 (E4M3X2: two terms, mx_e4m3x2_quantize_per_channel).
 * FP8 P: P*448 encoded E4M3, divided by 448 after.
 *
 * The online softmax.  A kernel quantizes P one key tile at a time, from
 * exp(S - m) with m the running row max, and normalises at the end.
 *   p_tile = 0 (the "offline" form, the design notes' harness): P is the final
 *     normalised softmax row and is quantized once, with the final row max.
 *   p_tile = T > 0 (multiple of the P block size, i.e. 16 or 32 for FP4):
 *     emulates the kernel: for each tile of T keys, m = max(m, tile max),
 *     P~ = exp(S - m) (values in (0, 1], the new max gives 1), quantized per
 *     `p` (two-level s1 from the tile's own row max), O and l rescaled by
 *     exp(m_old - m), l += sum of the unquantized P~, O += P~^ . V^; O /= l.
 *   The two forms differ by more than rounding for direct FP4 P (the offline
 *   form squeezes P into [0, 1/n]; the kernel's P~ peaks at 1), so a kernel
 *   test should use p_tile = the kernel's block_n; with p_tile = 0 it needs
 *   a looser tolerance.  For two-level P, FP8 and fp16 P the forms agree to
 *   quantization noise. */
typedef enum { MX_ROUND_NONE = 0, MX_ROUND_F16, MX_ROUND_BF16 } mx_round_mode;
typedef enum { MX_QK_EXACT = 0, MX_QK_INT8, MX_QK_NVFP4, MX_QK_MXFP4 } mx_qk_mode;
typedef enum {
    MX_P_EXACT = 0, MX_P_F16, MX_P_BF16, MX_P_E4M3,
    MX_P_NVFP4_DIRECT, MX_P_NVFP4_TWO_LEVEL, MX_P_MXFP4_DIRECT, MX_P_MXFP4_TWO_LEVEL
} mx_p_mode;
typedef enum { MX_V_EXACT = 0, MX_V_F16, MX_V_BF16, MX_V_E4M3, MX_V_NVFP4, MX_V_MXFP4, MX_V_E4M3X2 } mx_v_mode;

typedef struct {
    mx_round_mode input_round;
    mx_qk_mode qk;
    int smooth_k;               /* subtract K's channel mean (quantized QK only) */
    int kmean_sampled;          /* 1: that mean over every mx_kmean_step(seq_k)-th key (INT8 families) */
    int int8_block_q, int8_block_k; /* INT8 QK scale blocks, in rows (default 128, 64) */
    /* 1: INT8 QK scales in SageAttention2's sm90 "per-thread" groups instead of
     * the blocks above: Q rows {16b + g, 16b + g + 8} (g < 8) share a scale,
     * and K keys of a 128-key block with the same (k mod 8) / 2.  They are the
     * rows and keys one thread of an m16n8 (or m64nN warpgroup) fragment holds,
     * so a kernel meets one Q scale and one K scale a thread and a key tile. */
    int int8_per_thread;
    mx_p_mode p;
    int p_tile;                 /* 0: offline; > 0: emulate online tiles of this many keys */
    mx_v_mode v;
    double temperature;         /* scores are multiplied by this (1 = none) */
    /* 0, or the fp32 factor a kernel folds into Q before quantizing it (the
     * INT8 kernels quantize Q * sm_scale * log2(e), so their scores come out
     * in base 2).  Scaling before rounding moves the odd code across a
     * rounding boundary; the reference does the same to stay exact. */
    float q_prescale;
    /* 1: P's exponent as int8_fp8_wgmma's softmax_acc computes it (overlap=0
     * kernels), in fp32 from the INT8 accumulators: on a key tile the kernel
     * does not mask, exp2(fma(1.5*2^23 + acc, s, -c)) with s = qscale*kscale
     * and c = 1.5*2^23*s + m - log2(448) rounded to fp32 (and 1.5*2^23 *
     * qscale before it), which moves each 16-key group's exponent by up to
     * about 2^-23 |c| (1e-4 to 3e-4 at the usual scales): enough to flip an
     * E4M3 code of P now and then, and in a row of few keys one flip moves
     * the output by 2-4e-3 (bench/NOTES.md, 2026-11-29).  Masked
     * tiles follow softmax_tile (s rounded to fp32, exp2(s + (log2 448 - m))).
     * Needs qk INT8, p E4M3, p_tile > 0 and q_prescale != 0; the rows' 16-row
     * groups decide masking as the kernel's warps do. */
    int p_fold;
    /* 1 (with p_fold): l sums P~ as rounded to E4M3, the values that multiply
     * V, as int8_fp8_wgmma's rowsum_mma takes it from the tensor cores; 0:
     * l sums the unrounded exponentials, as the softmax's FADDs do.  Then O is
     * V weighed by weights that sum to one exactly. */
    int l_from_p_hat;
    /* 0: smooth-K's mean and FP8 V's per-channel scales are over all of a
     * head's keys (SageAttention2's passes over the whole K and V before the
     * attention kernel).  N > 0: over each tile of N keys alone, as a kernel
     * that quantizes K and V in registers while it streams them (decoding
     * over a cache) can take them: key j's K is smoothed by its tile's mean
     * and the score gets q . mean_tile back exactly (the whole-head form
     * drops that term, a constant of the row), and V's scales are its tile's.
     * Needs p_fold 0 and kmean_sampled 0. */
    int kv_tile;
    /* 1: the online form's running max, in base 2, rounded up to an integer
     * before it is subtracted (p_tile > 0, p_fold 0).  P~ = 2^(x - ceil(m))
     * then differs between two bases by a power of two only, and an E4M3
     * rounding of P~ * 448 does not depend on the base (but for P~ under
     * E4M3's normals, 2^-6 / 448, which carries no weight): a kernel whose
     * warps or key pieces keep maxima of their own (variant=decode) makes
     * the very codes this reference makes.  The top binade of P~ is lost
     * to the rounding up: P~ * 448 peaks in [224, 448], as accurate. */
    int p_base_pow2;
} mx_ref_config;

/* Optional intermediates, each NULL or batch*heads_q*seq_q*seq_k doubles
 * (row-major [b][h][i][j]).  scores: S (with temperature, before masking);
 * p: the unquantized softmax of S (0 on masked keys); p_hat: the
 * dequantized P that multiplied V, normalised (divided by l in tile form). */
typedef struct { double *scores, *p, *p_hat; } mx_ref_trace;

void mx_ref_config_exact(mx_ref_config *c);
/* The configuration of a family name (one of the templates' families, which
 * mx_ref_family_name(0 .. mx_ref_family_count()-1) lists as the reference
 * knows them).  direct_p picks direct FP4 P; smooth_k applies to the
 * quantized-QK families; dtype is the kernel's input dtype (and P's for
 * "f16"). */
int mx_ref_family_count(void);
const char *mx_ref_family_name(int i);
/* The problem's v_terms on a family config: 2 turns int8-fp8's E4M3 V into
 * two E4M3 terms (MX_V_E4M3X2); other families and 1 leave it as it is. */
void mx_ref_config_set_v_terms(mx_ref_config *c, int v_terms);
mxattn_status mx_ref_family_config(const char *family, int direct_p, int smooth_k,
                                   mxattn_dtype dtype, mx_ref_config *out);
mxattn_status mx_ref_pipeline_attention(const mx_ref_shape *s, const mx_ref_config *c,
                                        const float *q, const float *k, const float *v,
                                        double *o, double *lse, const mx_ref_trace *trace);
/* The family's reference on BHND contiguous float inputs; o is
 * [batch, heads_q, seq_q, head_dim] doubles, lse NULL or [batch, heads_q, seq_q].
 * Uses p->family, head_dim, shape, causal, sm_scale, dtype, direct_p,
 * smooth_k; p_tile (0 offline) as described above. */
mxattn_status mx_ref_family_attention(const char *family, const mxattn_problem *p, int p_tile,
                                      const float *q, const float *k, const float *v,
                                      double *o, double *lse);

/* ===== Metrics =========================================================
 * a is the approximation, b the reference.  rel_l1 = sum|a-b| / sum|b|.
 * cosine of two zero vectors is 1, of one zero vector 0; rel_l1 with
 * sum|b| = 0 is 0 if a == b else +inf. */
typedef struct { double cosine, rel_l1, rmse, max_abs; } mx_error_stats;
double mx_cosine(const double *a, const double *b, size_t n);
double mx_rel_l1(const double *a, const double *b, size_t n);
double mx_rmse(const double *a, const double *b, size_t n);
double mx_max_abs_error(const double *a, const double *b, size_t n);
mx_error_stats mx_compare(const double *a, const double *b, size_t n);
mx_error_stats mx_compare_f32(const float *a, const double *b, size_t n);
/* Mean over rows of H(row) / log(cols), H = -sum p log p (0 log 0 = 0);
 * 1 is uniform attention, 0 one-hot.  cols = 1 gives 0. */
double mx_mean_normalized_entropy(const double *p, int rows, int cols);
/* Number of distinct values of |x| among the n values (sorts a copy;
 * returns -1 if it cannot allocate). */
long mx_count_distinct_magnitudes(const double *x, size_t n);

/* ===== Deterministic RNG ==============================================
 * xoshiro256** seeded through splitmix64; Gaussians by Box-Muller.  Same seed,
 * same stream, on every platform. */
typedef struct { uint64_t s[4]; double spare; int has_spare; } mx_rng;
void     mx_rng_seed(mx_rng *r, uint64_t seed);
uint64_t mx_rng_next(mx_rng *r);
double   mx_rng_uniform(mx_rng *r);         /* [0, 1), 53 random bits */
double   mx_rng_gaussian(mx_rng *r);        /* N(0, 1) */
void     mx_rng_fill_gaussian(mx_rng *r, float *x, size_t n, double mean, double stddev);
#endif
