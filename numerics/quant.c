/* Block quantizers and their packed layouts (documented in numerics.h). */
#include "numerics/numerics.h"
#include "util/err.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int mx_fp4_block_size(mx_fp4_kind kind) { return kind == MX_FP4_MXFP4 ? 32 : 16; }

int mx_fp4_padded_cols(mx_fp4_kind kind, int cols) {
    int b = mx_fp4_block_size(kind);
    return (cols + b - 1) / b * b;
}

size_t mx_fp4_codes_bytes(mx_fp4_kind kind, int rows, int cols) {
    return (size_t)rows * (size_t)mx_fp4_padded_cols(kind, cols) / 2;
}

size_t mx_fp4_scales_bytes(mx_fp4_kind kind, int rows, int cols) {
    return (size_t)rows * (size_t)(mx_fp4_padded_cols(kind, cols) / mx_fp4_block_size(kind));
}

/* A block holding a NaN or an infinity has no finite scale: it gets the scale
 * format's NaN code, so that every element of the block dequantizes to NaN
 * (E2M1 and INT8 have no NaN of their own).  The attention then spreads it
 * as exact attention spreads a NaN input.  amax_nan keeps a NaN that fmaxf
 * would drop. */
static float amax_nan(float amax, float x) {
    float a = fabsf(x);
    return (a > amax || isnan(a)) && !isnan(amax) ? a : amax;
}

/* The fp32 scale amax / div of a block, NaN when amax is not finite. */
static float fp32_scale(float amax, float div) { return isfinite(amax) ? amax / div : NAN; }

uint8_t mx_nvfp4_scale_for_amax(float amax) {
    if (!isfinite(amax)) return 0x7F;
    return mx_f32_to_ue4m3(amax / 6.0f);
}

/* OCP MX v1.0: 2^(floor(log2 amax) - emax), emax = 2 for E2M1.  floor(log2)
 * is read off the exponent of amax, not computed with log2(). */
uint8_t mx_ue8m0_scale_for_amax(float amax) {
    if (!isfinite(amax)) return 0xFF;   /* NaN or inf: the block is NaN */
    if (!(amax > 0)) return 0;
    int e2;
    frexp((double)amax, &e2);
    int code = (e2 - 1) - 2 + 127;      /* floor(log2 amax) - emax(E2M1) */
    if (code < 0) code = 0;
    if (code > 0xFE) code = 0xFE;
    return (uint8_t)code;
}

/* Smallest power of two s with amax / s <= 6, i.e. 2^ceil(log2(amax / 6)).
 * Computed on the exponent of amax rather than with log2(), which is not
 * correctly rounded and could misplace an exact power of two. */
uint8_t mx_ue8m0_scale_ceil(float amax) {
    if (isnan(amax)) return 0xFF;
    if (!(amax > 0)) return 0;
    if (isinf(amax)) return 0xFE;
    int e2;
    frexp((double)amax, &e2);           /* amax in [2^(e2-1), 2^e2) */
    int e = e2 - 3;                     /* 2^e * 6 >= amax iff amax <= 6 * 2^(e2-3) */
    while (ldexp(6.0, e) < (double)amax) e++;
    while (ldexp(6.0, e - 1) >= (double)amax) e--;
    int code = e + 127;
    if (code < 0) code = 0;
    if (code > 0xFE) code = 0xFE;
    return (uint8_t)code;
}

float mx_fp4_scale_value(mx_fp4_kind kind, uint8_t scale_code) {
    return kind == MX_FP4_MXFP4 ? mx_ue8m0_to_f32(scale_code) : mx_ue4m3_to_f32(scale_code);
}

static mxattn_status check_matrix(const char *what, const void *x, int rows, int cols,
                                  int64_t row_stride, const void *out1, const void *out2) {
    if (!x || !out1 || !out2) return mx_fail(MXATTN_ERROR_NULL_POINTER, "%s: NULL buffer", what);
    if (rows < 0 || cols < 0 || row_stride < cols)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s: bad shape %d x %d, row stride %lld",
                       what, rows, cols, (long long)row_stride);
    return MXATTN_OK;
}

/* Quantizes one block of n <= B elements (the rest of the block is padding)
 * into nibbles starting at element `first` of a packed row. */
static uint8_t quantize_fp4_block(mx_fp4_kind kind, const float *x, int n, uint8_t *row_codes,
                                  int first) {
    float amax = 0;
    for (int i = 0; i < n; i++) amax = amax_nan(amax, x[i]);
    uint8_t scale_code = kind == MX_FP4_MXFP4 ? mx_ue8m0_scale_for_amax(amax)
                                              : mx_nvfp4_scale_for_amax(amax);
    float scale = mx_fp4_scale_value(kind, scale_code);
    for (int i = 0; i < n; i++) {
        uint8_t code = scale > 0 ? mx_f32_to_e2m1(x[i] / scale) : 0;
        int e = first + i;
        uint8_t *byte = &row_codes[e >> 1];
        *byte = (e & 1) ? (uint8_t)((*byte & 0x0F) | (code << 4)) : (uint8_t)((*byte & 0xF0) | code);
    }
    return scale_code;
}

mxattn_status mx_fp4_quantize(mx_fp4_kind kind, const float *x, int rows, int cols,
                              int64_t row_stride, uint8_t *codes, uint8_t *scales) {
    mxattn_status st = check_matrix("fp4 quantize", x, rows, cols, row_stride, codes, scales);
    if (st != MXATTN_OK) return st;
    int block = mx_fp4_block_size(kind), padded = mx_fp4_padded_cols(kind, cols);
    int blocks = padded / block;
    memset(codes, 0, mx_fp4_codes_bytes(kind, rows, cols));   /* padding nibbles are 0 */
    for (int r = 0; r < rows; r++) {
        const float *row = x + (int64_t)r * row_stride;
        uint8_t *row_codes = codes + (size_t)r * (size_t)(padded / 2);
        for (int b = 0; b < blocks; b++) {
            int first = b * block, n = cols - first < block ? cols - first : block;
            scales[(size_t)r * (size_t)blocks + (size_t)b] =
                quantize_fp4_block(kind, row + first, n, row_codes, first);
        }
    }
    return MXATTN_OK;
}

mxattn_status mx_fp4_dequantize(mx_fp4_kind kind, const uint8_t *codes, const uint8_t *scales,
                                int rows, int cols, float *out, int64_t out_row_stride) {
    mxattn_status st = check_matrix("fp4 dequantize", codes, rows, cols, out_row_stride, scales, out);
    if (st != MXATTN_OK) return st;
    int block = mx_fp4_block_size(kind), padded = mx_fp4_padded_cols(kind, cols);
    int blocks = padded / block;
    for (int r = 0; r < rows; r++) {
        const uint8_t *row_codes = codes + (size_t)r * (size_t)(padded / 2);
        for (int c = 0; c < cols; c++) {
            float scale = mx_fp4_scale_value(kind, scales[(size_t)r * (size_t)blocks + (size_t)(c / block)]);
            out[(int64_t)r * out_row_stride + c] = mx_e2m1_to_f32(mx_fp4_code_at(row_codes, c)) * scale;
        }
    }
    return MXATTN_OK;
}

/* ---- P: two-level scaling ----------------------------------------------- */
mxattn_status mx_p_quantize_two_level(mx_fp4_kind kind, const float *p, int rows, int cols,
                                      int64_t row_stride, uint8_t *codes, uint8_t *scales,
                                      float *row_scales) {
    mxattn_status st = check_matrix("two-level P quantize", p, rows, cols, row_stride, codes, scales);
    if (st != MXATTN_OK) return st;
    if (!row_scales) return mx_fail(MXATTN_ERROR_NULL_POINTER, "two-level P quantize: NULL row scales");
    int padded = mx_fp4_padded_cols(kind, cols);
    int blocks = padded / mx_fp4_block_size(kind);
    float *scaled = malloc((size_t)(cols > 0 ? cols : 1) * sizeof *scaled);
    if (!scaled) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "two-level P quantize: out of memory");
    for (int r = 0; r < rows; r++) {
        const float *row = p + (int64_t)r * row_stride;
        float rowmax = 0;
        for (int c = 0; c < cols; c++) rowmax = amax_nan(rowmax, row[c]);
        float s1 = fp32_scale(rowmax, 2688.0f);          /* 448 * 6 */
        row_scales[r] = s1;
        for (int c = 0; c < cols; c++) scaled[c] = s1 > 0 ? row[c] / s1 : 0.0f;
        st = mx_fp4_quantize(kind, scaled, 1, cols, cols, codes + (size_t)r * (size_t)(padded / 2),
                             scales + (size_t)r * (size_t)blocks);
        if (st != MXATTN_OK) break;
    }
    free(scaled);
    return st;
}

mxattn_status mx_p_dequantize_two_level(mx_fp4_kind kind, const uint8_t *codes,
                                        const uint8_t *scales, const float *row_scales,
                                        int rows, int cols, float *out, int64_t out_row_stride) {
    if (!row_scales) return mx_fail(MXATTN_ERROR_NULL_POINTER, "two-level P dequantize: NULL row scales");
    mxattn_status st = mx_fp4_dequantize(kind, codes, scales, rows, cols, out, out_row_stride);
    if (st != MXATTN_OK) return st;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) out[(int64_t)r * out_row_stride + c] *= row_scales[r];
    return MXATTN_OK;
}

/* ---- INT8 and FP8 -------------------------------------------------------- */
/* Row r of [r0, r1) belongs to scale group g: every row when g < 0 (a block
 * of rows), else the rows mx_int8_per_thread_group puts in g. */
static int in_group(int r, int keys, int g) { return g < 0 || mx_int8_per_thread_group(r, keys) == g; }

/* Quantizes a group's rows of [r0, r1) to one scale, amax / 127, returned. */
static float int8_quantize_group(const float *x, int cols, int64_t row_stride, int r0, int r1, int keys, int g,
                                 int8_t *q) {
    float amax = 0;
    for (int r = r0; r < r1; r++)
        if (in_group(r, keys, g))
            for (int c = 0; c < cols; c++) amax = amax_nan(amax, x[(int64_t)r * row_stride + c]);
    float scale = fp32_scale(amax, 127.0f);
    mx_scale_recip inv = mx_scale_reciprocal(scale);
    for (int r = r0; r < r1; r++)
        if (in_group(r, keys, g))
            for (int c = 0; c < cols; c++)
                q[(size_t)r * (size_t)cols + (size_t)c] =
                    scale > 0 ? mx_f32_to_int8(mx_div_by_scale(x[(int64_t)r * row_stride + c], inv)) : 0;
    return scale;
}

mxattn_status mx_int8_quantize_blocks(const float *x, int rows, int cols, int64_t row_stride,
                                      int block_rows, int8_t *q, float *scales) {
    mxattn_status st = check_matrix("int8 quantize", x, rows, cols, row_stride, q, scales);
    if (st != MXATTN_OK) return st;
    if (block_rows < 1) return mx_fail(MXATTN_ERROR_INVALID_VALUE, "int8 quantize: block of %d rows", block_rows);
    for (int r0 = 0, b = 0; r0 < rows; r0 += block_rows, b++) {
        int r1 = r0 + block_rows < rows ? r0 + block_rows : rows;
        scales[b] = int8_quantize_group(x, cols, row_stride, r0, r1, 0, -1, q);
    }
    return MXATTN_OK;
}

mxattn_status mx_int8_quantize_per_token(const float *x, int rows, int cols, int64_t row_stride,
                                         int8_t *q, float *scales) {
    return mx_int8_quantize_blocks(x, rows, cols, row_stride, 1, q, scales);
}

int mx_int8_per_thread_group(int row, int keys) { return keys ? row / 128 * 4 + row % 8 / 2 : row / 16 * 8 + row % 8; }
int mx_int8_per_thread_groups(int rows, int keys) { return keys ? (rows + 127) / 128 * 4 : (rows + 15) / 16 * 8; }

mxattn_status mx_int8_quantize_per_thread(const float *x, int rows, int cols, int64_t row_stride, int keys,
                                          int8_t *q, float *scales) {
    mxattn_status st = check_matrix("int8 per-thread quantize", x, rows, cols, row_stride, q, scales);
    if (st != MXATTN_OK) return st;
    const int window = keys ? 128 : 16;   /* a group's rows lie in one window */
    for (int g = 0; g < mx_int8_per_thread_groups(rows, keys); g++) {
        int r0 = g / (keys ? 4 : 8) * window, r1 = r0 + window < rows ? r0 + window : rows;
        scales[g] = int8_quantize_group(x, cols, row_stride, r0, r1, keys, g, q);
    }
    return MXATTN_OK;
}

mxattn_status mx_e4m3_quantize_per_channel(const float *x, int rows, int cols, int64_t row_stride,
                                           uint8_t *codes, float *scales) {
    mxattn_status st = check_matrix("e4m3 per-channel quantize", x, rows, cols, row_stride, codes, scales);
    if (st != MXATTN_OK) return st;
    for (int c = 0; c < cols; c++) {
        float amax = 0;
        for (int r = 0; r < rows; r++) amax = amax_nan(amax, x[(int64_t)r * row_stride + c]);
        scales[c] = fp32_scale(amax, 448.0f);
    }
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            codes[(size_t)r * (size_t)cols + (size_t)c] =
                scales[c] > 0 ? mx_f32_to_e4m3(mx_div_by_scale(x[(int64_t)r * row_stride + c], mx_scale_reciprocal(scales[c]))) : 0;
    return MXATTN_OK;
}

mxattn_status mx_e4m3x2_quantize_per_channel(const float *x, int rows, int cols, int64_t row_stride,
                                             uint8_t *hi, uint8_t *lo, float *scales) {
    mxattn_status st = mx_e4m3_quantize_per_channel(x, rows, cols, row_stride, hi, scales);
    if (st != MXATTN_OK) return st;
    if (!lo) return mx_fail(MXATTN_ERROR_NULL_POINTER, "e4m3x2 per-channel quantize: lo is NULL");
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * (size_t)cols + (size_t)c;
            float y = mx_div_by_scale(x[(int64_t)r * row_stride + c], mx_scale_reciprocal(scales[c]));
            lo[i] = scales[c] > 0 ? mx_f32_to_e4m3(y - mx_e4m3_to_f32(hi[i])) : 0;
        }
    return MXATTN_OK;
}

/* ---- smooth-K ------------------------------------------------------------ */
void mx_channel_mean(const float *x, int rows, int cols, int64_t row_stride, float *mean) {
    mx_channel_mean_sampled(x, rows, cols, row_stride, 1, mean);
}

void mx_channel_mean_sampled(const float *x, int rows, int cols, int64_t row_stride, int step, float *mean) {
    if (step < 1) step = 1;
    int count = rows > 0 ? (rows + step - 1) / step : 0;
    for (int c = 0; c < cols; c++) {
        double sum = 0;
        /* A NaN or infinite element counts as 0: any vector may be
         * subtracted from the keys (numerics.h), and one that stays finite
         * keeps a bad key's NaN in that key's own quantization block instead
         * of spreading it through the mean to every key of the head. */
        for (int r = 0; r < rows; r += step) {
            float v = x[(int64_t)r * row_stride + c];
            sum += isfinite(v) ? v : 0.0f;
        }
        mean[c] = count > 0 ? (float)(sum / count) : 0.0f;
    }
}

int mx_kmean_step(int seq_k) { return seq_k >= 1024 ? 8 : 1; }

void mx_subtract_mean(const float *x, int rows, int cols, int64_t row_stride,
                      const float *mean, float *out) {
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            out[(size_t)r * (size_t)cols + (size_t)c] = x[(int64_t)r * row_stride + c] - mean[c];
}

void mx_smooth_k_correction(const float *q, int rows, int cols, int64_t row_stride,
                            const float *mean, double *corr) {
    for (int r = 0; r < rows; r++) {
        double dot = 0;
        for (int c = 0; c < cols; c++) dot += (double)q[(int64_t)r * row_stride + c] * mean[c];
        corr[r] = dot;
    }
}
