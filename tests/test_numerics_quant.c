/* Block quantizers of numerics/: expected bytes worked out by hand from the
 * format definitions (each derivation in a comment), packing round trips,
 * zero and subnormal scales. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "numerics/numerics.h"

static void assert_bytes(const uint8_t *got, const uint8_t *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            print_error("byte %zu: got 0x%02x, want 0x%02x\n", i, got[i], want[i]);
            fail();
        }
}

/* One NVFP4 block of 16 at unit scale step: its scale byte and packed codes. */
static void expect_nvfp4_block(const float x[16], uint8_t want_scale, const uint8_t want_codes[8]) {
    uint8_t codes[8], scale;
    assert_int_equal(mx_fp4_quantize(MX_FP4_NVFP4, x, 1, 16, 16, codes, &scale), MXATTN_OK);
    assert_int_equal(scale, want_scale);
    assert_bytes(codes, want_codes, 8);
}

/* amax 6 -> scale e4m3(6/6 = 1) = 0x38; elements are their own E2M1 codes:
 *   0 0.5 1 1.5 | 2 3 4 6 | -0.5 -1 -6 0.25 | 0.75 2.5 5 -3.5
 *   0  1  2  3  | 4 5 6 7 |  9    A  F  0(tie->0) | 2(tie->1.0) 4(tie->2) 6(tie->4) E(tie->-4)
 * bytes = element 2i low nibble, 2i+1 high nibble. */
static void test_nvfp4_block_unit_scale(void **state) {
    (void)state;
    const float x[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.5f, -1, -6, 0.25f, 0.75f, 2.5f, 5, -3.5f};
    const uint8_t want_codes[8] = {0x10, 0x32, 0x54, 0x76, 0xA9, 0x0F, 0x42, 0xE6};
    expect_nvfp4_block(x, 0x38, want_codes);
}

/* amax 12 -> 12/6 = 2 = 1.0 x 2^1 -> E4M3 exp field 8: 0x40.
 * x/2: 12->6 (7), -12->-6 (F), 1->0.5 (1), 3->1.5 (3), 7->3.5 (tie 3|4 -> 4: 6), rest 0. */
static void test_nvfp4_block_scale_two(void **state) {
    (void)state;
    float x[16] = {12, -12, 1, 3, 7};
    const uint8_t want_codes[8] = {0xF7, 0x31, 0x06, 0, 0, 0, 0, 0};
    expect_nvfp4_block(x, 0x40, want_codes);
}

/* amax 6.3 -> 6.3/6 = 1.05, E4M3 rounds to 1.0 (0x38), so 6.3/1 saturates to 6. */
static void test_nvfp4_scale_rounded_down_saturates(void **state) {
    (void)state;
    float x[16] = {6.3f, -6.3f};
    uint8_t codes[8], scale;
    assert_int_equal(mx_fp4_quantize(MX_FP4_NVFP4, x, 1, 16, 16, codes, &scale), MXATTN_OK);
    assert_int_equal(scale, 0x38);
    assert_int_equal(codes[0], 0xF7);
}

/* amax = 6 * 2^-9 -> scale 2^-9, the smallest subnormal (0x01).
 * 6*2^-9 -> 6 (7); 1.5*2^-9 -> 1.5 (3).
 * amax 1e-5 -> 1.67e-6 < 2^-10: the scale underflows to 0 and every code is 0.
 * An all-zero block also gets scale 0 and codes 0. */
static void test_nvfp4_zero_and_subnormal_scales(void **state) {
    (void)state;
    float x[48] = {0};
    x[0] = 6 * 0x1p-9f; x[1] = 1.5f * 0x1p-9f;
    x[16] = 1e-5f; x[17] = -1e-5f;
    uint8_t codes[24], scales[3];
    assert_int_equal(mx_fp4_quantize(MX_FP4_NVFP4, x, 1, 48, 48, codes, scales), MXATTN_OK);
    const uint8_t want_scales[3] = {0x01, 0x00, 0x00};
    assert_bytes(scales, want_scales, 3);
    assert_int_equal(codes[0], 0x37);
    for (int i = 1; i < 24; i++) assert_int_equal(codes[i], 0);
}

/* 2 rows of 20 columns, row stride 24: padded to 32 columns, 2 blocks a row.
 * Row 0: x[c] = 1 for c < 20  -> both blocks get scale e4m3(1/6), codes of 1/s.
 *   1/6 = 0.1667 = 1.333 x 2^-3 -> exp field -3 + 7 = 4; mantissa 1.375 (m 011,
 *   code 0x23) is nearer
 *   than 1.25 (0.15625 vs 0.171875: 0.1667 - 0.15625 = 0.0104 > 0.171875 - 0.1667 = 0.0052),
 *   so s = 0.171875 and 1/s = 5.82 -> 6 (code 7): bytes 0x77.
 * Row 1: all -2 -> s = e4m3(1/3 = 1.333 x 2^-2) = 1.375 x 2^-2 = 0.34375
 *   (exp field 5, m 011: 0x2B),
 *   2/s = 5.82 -> -6 (code F): bytes 0xFF.
 * Padding columns 20..31 are code 0, so each row's bytes 10..15 are 0. */
static void test_nvfp4_padding_and_strides(void **state) {
    (void)state;
    float x[2 * 24];
    for (int c = 0; c < 24; c++) { x[c] = c < 20 ? 1.0f : 99.0f; x[24 + c] = c < 20 ? -2.0f : 99.0f; }
    assert_int_equal(mx_fp4_padded_cols(MX_FP4_NVFP4, 20), 32);
    assert_int_equal(mx_fp4_codes_bytes(MX_FP4_NVFP4, 2, 20), 32);
    assert_int_equal(mx_fp4_scales_bytes(MX_FP4_NVFP4, 2, 20), 4);
    uint8_t codes[32], scales[4];
    assert_int_equal(mx_fp4_quantize(MX_FP4_NVFP4, x, 2, 20, 24, codes, scales), MXATTN_OK);
    const uint8_t want_scales[4] = {0x23, 0x23, 0x2B, 0x2B};
    assert_bytes(scales, want_scales, 4);
    for (int i = 0; i < 16; i++) {
        assert_int_equal(codes[i], i < 10 ? 0x77 : 0x00);
        assert_int_equal(codes[16 + i], i < 10 ? 0xFF : 0x00);
    }
    float back[2 * 20];
    assert_int_equal(mx_fp4_dequantize(MX_FP4_NVFP4, codes, scales, 2, 20, back, 20), MXATTN_OK);
    assert_true(back[0] == 6 * 0.171875f && back[39] == -6 * 0.34375f);
}

/* MXFP4: scale 2^(floor(log2 amax) - 2) (OCP).
 * amax 7 -> floor(2.81) - 2 = 0 -> 2^0, code 127 (0x7F): 7 saturates to 6 (7);
 * -1 (A); 0.5 (1); 1.5 (3) -> bytes 0xA7, 0x31. */
static void test_mxfp4_block_scale_and_codes_follow_ocp(void **state) {
    (void)state;
    float x[32] = {7, -1, 0.5f, 1.5f};
    uint8_t codes[16], scale;
    assert_int_equal(mx_fp4_quantize(MX_FP4_MXFP4, x, 1, 32, 32, codes, &scale), MXATTN_OK);
    assert_int_equal(scale, 0x7F);
    assert_int_equal(codes[0], 0xA7);
    assert_int_equal(codes[1], 0x31);
    for (int i = 2; i < 16; i++) assert_int_equal(codes[i], 0);
}

static void test_mxfp4_scale_rules(void **state) {
    (void)state;
    /* OCP, the quantizer's rule: floor(log2 amax) - 2 */
    assert_int_equal(mx_ue8m0_scale_for_amax(7.0f), 127);     /* floor(2.81) - 2 = 0 */
    assert_int_equal(mx_ue8m0_scale_for_amax(4.0f), 127);     /* 2 - 2 */
    assert_int_equal(mx_ue8m0_scale_for_amax(nextafterf(4.0f, 0)), 126);
    assert_int_equal(mx_ue8m0_scale_for_amax(0.75f), 124);    /* -1 - 2 = -3 */
    assert_int_equal(mx_ue8m0_scale_for_amax(0.0f), 0);
    assert_int_equal(mx_ue8m0_scale_for_amax(NAN), 0xFF);
    /* rounding up, for comparison: 2^ceil(log2(amax / 6)) */
    assert_int_equal(mx_ue8m0_scale_ceil(6.0f), 127);         /* 6/6 = 1 = 2^0 exactly */
    assert_int_equal(mx_ue8m0_scale_ceil(7.0f), 128);         /* 1.17 -> 2^1 */
    assert_int_equal(mx_ue8m0_scale_ceil(12.0f), 128);        /* 12/6 = 2 exactly */
    assert_int_equal(mx_ue8m0_scale_ceil(nextafterf(12.0f, 100)), 129);
    assert_int_equal(mx_ue8m0_scale_ceil(0.75f), 124);        /* 0.125 = 2^-3 */
    assert_int_equal(mx_nvfp4_scale_for_amax(6.0f), 0x38);
}

/* Random codes and scales, each block holding a +-6 so that amax/6 is the
 * scale exactly: dequantize then quantize must give the same bytes back. */
static void round_trip(mx_fp4_kind kind, int rows, int cols) {
    mx_rng rng;
    mx_rng_seed(&rng, 42 + (uint64_t)kind);
    size_t ncodes = mx_fp4_codes_bytes(kind, rows, cols), nscales = mx_fp4_scales_bytes(kind, rows, cols);
    uint8_t codes[512], scales[64], again_codes[512], again_scales[64];
    float values[64 * 64];
    int block = mx_fp4_block_size(kind), padded = mx_fp4_padded_cols(kind, cols);
    assert_true(ncodes <= sizeof codes && nscales <= sizeof scales && (size_t)rows * cols <= 64 * 64);
    memset(codes, 0, sizeof codes);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            uint8_t code = (uint8_t)(mx_rng_next(&rng) & 0xF);
            if (c % block == 0) code = (code & 8) | 7;       /* the block's max */
            codes[(size_t)r * padded / 2 + c / 2] |= (uint8_t)(c & 1 ? code << 4 : code);
        }
    for (size_t i = 0; i < nscales; i++)
        scales[i] = kind == MX_FP4_NVFP4 ? (uint8_t)(1 + mx_rng_next(&rng) % 0x7D)
                                          : (uint8_t)(20 + mx_rng_next(&rng) % 180);
    assert_int_equal(mx_fp4_dequantize(kind, codes, scales, rows, cols, values, cols), MXATTN_OK);
    assert_int_equal(mx_fp4_quantize(kind, values, rows, cols, cols, again_codes, again_scales), MXATTN_OK);
    assert_bytes(again_scales, scales, nscales);
    assert_bytes(again_codes, codes, ncodes);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            assert_true(mx_e2m1_to_f32(mx_fp4_code_at(codes + (size_t)r * padded / 2, c)) *
                        mx_fp4_scale_value(kind, scales[(size_t)r * (padded / block) + c / block]) ==
                        values[r * cols + c]);
}

static void test_packing_round_trip(void **state) {
    (void)state;
    round_trip(MX_FP4_NVFP4, 7, 48);
    round_trip(MX_FP4_NVFP4, 5, 37);
    round_trip(MX_FP4_MXFP4, 6, 64);
    round_trip(MX_FP4_MXFP4, 3, 70);
}

/* p = [0.65625, 0.328125, 0, 2^-11, 0...]; rowmax 0.65625 = 2688 * 2^-12, so
 * s1 = 2^-12 exactly and P2 = p * 4096 = [2688, 1344, 0, 2].
 * Block amax 2688 -> s2 = e4m3(448) = 0x7E; P2/448 = [6, 3, 0, 0.0045]
 * -> codes 7, 5, 0, 0: bytes 0x57, 0x00.
 * Direct: s = e4m3(0.65625/6 = 0.109375 = 1.75 x 2^-4) = exp 3, m 110 = 0x1E;
 * p/s = [6, 3, 0, 0.0045] -> the same codes. */
static void test_p_two_level_and_direct(void **state) {
    (void)state;
    float p[16] = {0.65625f, 0.328125f, 0, 0x1p-11f};
    uint8_t codes[8], scale;
    float s1;
    assert_int_equal(mx_p_quantize_two_level(MX_FP4_NVFP4, p, 1, 16, 16, codes, &scale, &s1), MXATTN_OK);
    assert_true(s1 == 0x1p-12f);
    assert_int_equal(scale, 0x7E);
    assert_int_equal(codes[0], 0x57);
    for (int i = 1; i < 8; i++) assert_int_equal(codes[i], 0);
    float back[16];
    assert_int_equal(mx_p_dequantize_two_level(MX_FP4_NVFP4, codes, &scale, &s1, 1, 16, back, 16), MXATTN_OK);
    assert_true(back[0] == 0.65625f && back[1] == 0.328125f && back[3] == 0);

    assert_int_equal(mx_fp4_quantize(MX_FP4_NVFP4, p, 1, 16, 16, codes, &scale), MXATTN_OK);
    assert_int_equal(scale, 0x1E);
    assert_int_equal(codes[0], 0x57);

    float zeros[16] = {0};
    assert_int_equal(mx_p_quantize_two_level(MX_FP4_NVFP4, zeros, 1, 16, 16, codes, &scale, &s1), MXATTN_OK);
    assert_true(s1 == 0 && scale == 0 && codes[0] == 0);
}

/* The probability squeeze: a diffuse row of 1/1024 has scale e4m3(1/6144), which
 * is below half the smallest subnormal 2^-9 = 1/512, so direct NVFP4 loses it all. */
static void test_p_direct_squeeze(void **state) {
    (void)state;
    float p[16];
    for (int i = 0; i < 16; i++) p[i] = 1.0f / 1024;
    uint8_t codes[8], scale;
    assert_int_equal(mx_fp4_quantize(MX_FP4_NVFP4, p, 1, 16, 16, codes, &scale), MXATTN_OK);
    assert_int_equal(scale, 0);
    for (int i = 0; i < 8; i++) assert_int_equal(codes[i], 0);
}

/* Rows 0-1 form block 0: amax 127 -> scale 1; q = RNE(x): 127, -2.5->-2, 3.5->4,
 * 0.5->0, -0.5->-0, 1.5->2.  Row 2 is block 1: amax 254 -> scale 2:
 * 254->127, 5->2.5->2, -3->-1.5->-2. */
static void test_int8_blocks_by_hand(void **state) {
    (void)state;
    const float x[3 * 4] = {127, -2.5f, 3.5f, 99, 0.5f, -0.5f, 1.5f, 99, 254, 5, -3, 99};
    int8_t q[9];
    float scales[2];
    assert_int_equal(mx_int8_quantize_blocks(x, 3, 3, 4, 2, q, scales), MXATTN_OK);
    const int8_t want[9] = {127, -2, 4, 0, 0, 2, 127, 2, -2};
    assert_true(scales[0] == 1.0f && scales[1] == 2.0f);
    for (int i = 0; i < 9; i++) assert_int_equal(q[i], want[i]);
    /* per token: 63.5 -> 64 (even), scale 1 */
    const float row[2] = {63.5f, -127};
    float s;
    assert_int_equal(mx_int8_quantize_per_token(row, 1, 2, 2, q, &s), MXATTN_OK);
    assert_true(s == 1.0f);
    assert_int_equal(q[0], 64);
    assert_int_equal(q[1], -127);
    /* an all-zero block: scale 0, codes 0, no division by zero */
    const float zeros[2] = {0, 0};
    assert_int_equal(mx_int8_quantize_blocks(zeros, 1, 2, 2, 1, q, &s), MXATTN_OK);
    assert_true(s == 0 && q[0] == 0 && q[1] == 0);
    assert_int_equal(mx_int8_quantize_blocks(zeros, 1, 2, 2, 0, q, &s), MXATTN_ERROR_INVALID_VALUE);
}

/* x / scale by reciprocal (mx_div_by_scale): within half a code of the exact
 * quotient on fresh inputs, the block maximum exactly +-127, and blocks so
 * small that 1/scale overflows (the 2^100 path) quantize like any other. */
static void test_int8_by_reciprocal(void **state) {
    (void)state;
    mx_rng rng;
    mx_rng_seed(&rng, (uint64_t)time(NULL));
    float x[64 * 8];
    int8_t q[64 * 8];
    float scales[8];
    const float magnitudes[] = {1.0f, 3e-3f, 1e-38f, 5e-40f};
    for (int m = 0; m < 4; m++) {
        mx_rng_fill_gaussian(&rng, x, 64 * 8, 0, 1);
        for (int i = 0; i < 64 * 8; i++) x[i] *= magnitudes[m];
        assert_int_equal(mx_int8_quantize_blocks(x, 64, 8, 8, 16, q, scales), MXATTN_OK);
        for (int b = 0; b < 4; b++) {
            assert_true(scales[b] > 0);
            int saw_max = 0;
            for (int i = b * 128; i < (b + 1) * 128; i++) {
                double exact = (double)x[i] / (double)scales[b];
                if (fabs(q[i] - exact) > 0.5 + 1e-4) fail_msg("magnitude %g: x %g scale %g code %d, exact %.6f", magnitudes[m], x[i], scales[b], q[i], exact);
                saw_max |= q[i] == 127 || q[i] == -127;
            }
            assert_true(saw_max);
        }
        mx_scale_recip r = mx_scale_reciprocal(scales[0]);
        assert_true(isfinite(r.inv) && r.inv > 0);
    }
}

/* Column 0 amax 448 -> scale 1: 448 -> 0x7E, 1.0625 -> tie 1|1.125 -> 0x38, -1 -> 0xB8.
 * Column 1 amax 896 -> scale 2: 896/2 = 448 -> 0x7E, 3/2 = 1.5 -> 0x3C, -2/2 -> 0xB8. */
static void test_e4m3_per_channel_by_hand(void **state) {
    (void)state;
    const float x[6] = {448, 896, 1.0625f, 3, -1, -2};
    uint8_t codes[6];
    float scales[2];
    assert_int_equal(mx_e4m3_quantize_per_channel(x, 3, 2, 2, codes, scales), MXATTN_OK);
    assert_true(scales[0] == 1.0f && scales[1] == 2.0f);
    const uint8_t want[6] = {0x7E, 0x7E, 0x38, 0x3C, 0xB8, 0xB8};
    assert_bytes(codes, want, 6);
}

/* Two terms: hi as the one-term quantizer, lo the E4M3 code of what hi
 * missed, on the same scale (1.0625 and -1.1875 are E4M3 ties: hi rounds
 * them to even, lo holds the 2^-4 left over, code 0x18). */
static void test_e4m3x2_per_channel_by_hand(void **state) {
    (void)state;
    const float x[6] = {448, 896, 1.0625f, 3, -1.1875f, -2};
    uint8_t hi[6], lo[6], one[6];
    float scales[2], one_scales[2];
    assert_int_equal(mx_e4m3x2_quantize_per_channel(x, 3, 2, 2, hi, lo, scales), MXATTN_OK);
    assert_int_equal(mx_e4m3_quantize_per_channel(x, 3, 2, 2, one, one_scales), MXATTN_OK);
    assert_true(scales[0] == 1.0f && scales[1] == 2.0f);
    assert_bytes(hi, one, 6);
    const uint8_t want_hi[6] = {0x7E, 0x7E, 0x38, 0x3C, 0xBA, 0xB8}, want_lo[6] = {0, 0, 0x18, 0, 0x18, 0};
    assert_bytes(hi, want_hi, 6);
    assert_bytes(lo, want_lo, 6);
    for (int i = 0; i < 6; i++)
        assert_true((mx_e4m3_to_f32(hi[i]) + mx_e4m3_to_f32(lo[i])) * scales[i % 2] == x[i]);
}

/* Q.(K - mean)^T + Q.mean^T = Q.K^T, up to fp32 rounding of K - mean. */
static void test_smooth_k_is_exact(void **state) {
    (void)state;
    enum { N = 9, D = 5 };
    float q[N * D], k[N * D], ks[N * D], mean[D];
    mx_rng rng;
    mx_rng_seed(&rng, 3);
    mx_rng_fill_gaussian(&rng, q, N * D, 0, 1);
    mx_rng_fill_gaussian(&rng, k, N * D, 4, 1);
    mx_channel_mean(k, N, D, D, mean);
    for (int c = 0; c < D; c++) {
        double m = 0;
        for (int j = 0; j < N; j++) m += k[j * D + c];
        assert_true(fabs(mean[c] - m / N) < 1e-6);
    }
    mx_subtract_mean(k, N, D, D, mean, ks);
    double corr[N];
    mx_smooth_k_correction(q, N, D, D, mean, corr);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double exact = 0, smoothed = corr[i];
            for (int c = 0; c < D; c++) {
                exact += (double)q[i * D + c] * k[j * D + c];
                smoothed += (double)q[i * D + c] * ks[j * D + c];
            }
            assert_true(fabs(exact - smoothed) < 1e-5);
        }
}

/* The sampled mean is the mean of exactly the rows 0, step, 2 step, ...
 * (odd counts included); step 1 is mx_channel_mean; the INT8 families' rule
 * samples every 8th key from 1024 keys on. */
static void test_sampled_channel_mean(void **state) {
    (void)state;
    enum { N = 1029, D = 3 };
    static float k[N * D], picked[N * D];
    float mean[D], want[D], all[D];
    mx_rng rng;
    uint64_t seed = (uint64_t)time(NULL);
    printf("sampled channel mean: seed %llu\n", (unsigned long long)seed);
    mx_rng_seed(&rng, seed);
    mx_rng_fill_gaussian(&rng, k, N * D, 2, 1);
    for (int step = 1; step <= 9; step += 4) {
        int rows = 0;
        for (int r = 0; r < N; r += step, rows++)
            for (int c = 0; c < D; c++) picked[rows * D + c] = k[r * D + c];
        mx_channel_mean_sampled(k, N, D, D, step, mean);
        mx_channel_mean(picked, rows, D, D, want);
        assert_memory_equal(mean, want, sizeof mean);
        assert_int_equal(rows, (N + step - 1) / step);
    }
    mx_channel_mean_sampled(k, N, D, D, 1, mean);
    mx_channel_mean(k, N, D, D, all);
    assert_memory_equal(mean, all, sizeof mean);
    mx_channel_mean_sampled(k, N, D, D, 8, mean);
    assert_true(memcmp(mean, all, sizeof mean) != 0);   /* 129 of 1029 keys: another mean */
    assert_int_equal(mx_kmean_step(1), 1);
    assert_int_equal(mx_kmean_step(1023), 1);
    assert_int_equal(mx_kmean_step(1024), 8);
    assert_int_equal(mx_kmean_step(1 << 20), 8);
}

static void test_bad_arguments_to_fp4_quantize_are_refused(void **state) {
    (void)state;
    float x[16] = {0};
    uint8_t codes[8], scale;
    assert_int_equal(mx_fp4_quantize(MX_FP4_NVFP4, NULL, 1, 16, 16, codes, &scale), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mx_fp4_quantize(MX_FP4_NVFP4, x, 1, 16, 8, codes, &scale), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mx_fp4_quantize(MX_FP4_NVFP4, x, -1, 16, 16, codes, &scale), MXATTN_ERROR_INVALID_VALUE);
}


/* A NaN or an infinity in a block gives the block the scale format's NaN
 * code, so the whole block dequantizes to NaN; the neighbouring blocks are
 * untouched.  On the old code fmaxf skipped the NaN (scale from the finite
 * elements) and E2M1 coded the NaN as +6: a finite +6 * scale. */
static void test_nan_poisons_its_fp4_block(void **state) {
    (void)state;
    const float bad[2] = {NAN, INFINITY};
    for (int kind = 0; kind < 2; kind++)
        for (int b = 0; b < 2; b++) {
            int B = mx_fp4_block_size((mx_fp4_kind)kind);
            float x[64], y[64];
            for (int i = 0; i < 64; i++) x[i] = 0.25f * (float)(i % 7) - 0.5f;
            x[B + 3] = bad[b];                         /* in block 1 */
            uint8_t codes[32], scales[4];
            assert_int_equal(mx_fp4_quantize((mx_fp4_kind)kind, x, 1, 64, 64, codes, scales), MXATTN_OK);
            assert_int_equal(scales[1], kind == MX_FP4_MXFP4 ? 0xFF : 0x7F);
            assert_int_not_equal(scales[0], scales[1]);
            assert_int_equal(mx_fp4_dequantize((mx_fp4_kind)kind, codes, scales, 1, 64, y, 64), MXATTN_OK);
            for (int i = 0; i < 64; i++) {
                if (i / B == 1) assert_true(isnan(y[i]));
                else assert_true(isfinite(y[i]));
            }
        }
    assert_int_equal(mx_nvfp4_scale_for_amax(INFINITY), 0x7F);
    assert_int_equal(mx_nvfp4_scale_for_amax(NAN), 0x7F);
    assert_int_equal(mx_ue8m0_scale_for_amax(INFINITY), 0xFF);
}

/* INT8 has no NaN code: the block's fp32 scale becomes NaN, its codes 0. */
static void test_nan_poisons_its_int8_block(void **state) {
    (void)state;
    float x[8 * 4];
    for (int i = 0; i < 32; i++) x[i] = (float)(i % 5) - 2.0f;
    x[2 * 4 + 1] = NAN;                                /* row 2: block 1 of 2-row blocks */
    x[6 * 4 + 3] = -INFINITY;                          /* row 6: block 3 */
    int8_t q[32];
    float scales[4];
    assert_int_equal(mx_int8_quantize_blocks(x, 8, 4, 4, 2, q, scales), MXATTN_OK);
    assert_true(isfinite(scales[0]) && scales[0] > 0);
    assert_true(isnan(scales[1]));
    assert_true(isfinite(scales[2]) && scales[2] > 0);
    assert_true(isnan(scales[3]));
    for (int i = 8; i < 16; i++) assert_int_equal(q[i], 0);
    /* per-thread groups: Q rows 1 and 9 share group 1; key 5 shares group 2 with keys 4, 12, 13 */
    float big[16 * 2];
    for (int i = 0; i < 32; i++) big[i] = 0.5f + (float)i;
    big[9 * 2] = NAN;
    int8_t q2[32];
    float s2[16];
    assert_int_equal(mx_int8_quantize_per_thread(big, 16, 2, 2, 0, q2, s2), MXATTN_OK);
    for (int g = 0; g < 8; g++) assert_true(g == 1 ? isnan(s2[g]) : isfinite(s2[g]));
    big[9 * 2] = 1.0f;
    big[5 * 2 + 1] = NAN;
    assert_int_equal(mx_int8_quantize_per_thread(big, 16, 2, 2, 1, q2, s2), MXATTN_OK);
    for (int g = 0; g < 4; g++) assert_true(g == 2 ? isnan(s2[g]) : isfinite(s2[g]));
}

/* E4M3 per-channel V: the channel's scale is NaN; other channels are kept. */
static void test_nan_poisons_its_e4m3_channel(void **state) {
    (void)state;
    float x[5 * 3];
    for (int i = 0; i < 15; i++) x[i] = (float)i - 7.0f;
    x[3 * 3 + 1] = NAN;
    uint8_t codes[15], lo[15];
    float scales[3];
    assert_int_equal(mx_e4m3x2_quantize_per_channel(x, 5, 3, 3, codes, lo, scales), MXATTN_OK);
    assert_true(isfinite(scales[0]) && isnan(scales[1]) && isfinite(scales[2]));
    for (int r = 0; r < 5; r++) {
        assert_true(isnan((mx_e4m3_to_f32(codes[r * 3 + 1]) + mx_e4m3_to_f32(lo[r * 3 + 1])) * scales[1]));
        assert_true(isfinite(mx_e4m3_to_f32(codes[r * 3]) * scales[0]));
    }
}

/* Two-level P with a NaN probability: s1 is NaN, so the row dequantizes to NaN. */
static void test_nan_in_two_level_p(void **state) {
    (void)state;
    float p[32], out[32], s1;
    for (int i = 0; i < 32; i++) p[i] = 1.0f / (float)(i + 1);
    p[20] = NAN;
    uint8_t codes[16], scales[2];
    assert_int_equal(mx_p_quantize_two_level(MX_FP4_NVFP4, p, 1, 32, 32, codes, scales, &s1), MXATTN_OK);
    assert_true(isnan(s1));
    assert_int_equal(mx_p_dequantize_two_level(MX_FP4_NVFP4, codes, scales, &s1, 1, 32, out, 32), MXATTN_OK);
    for (int i = 0; i < 32; i++) assert_true(isnan(out[i]));
}

/* Smooth-K's mean skips a non-finite element (counting it as 0), so that a
 * bad key does not make every key of the head NaN through the mean. */
static void test_channel_mean_skips_nan(void **state) {
    (void)state;
    const float x[4 * 2] = {1, 2, NAN, 4, 5, INFINITY, 7, 8};
    float mean[2];
    mx_channel_mean(x, 4, 2, 2, mean);
    assert_true(mean[0] == (1.0f + 5.0f + 7.0f) / 4.0f);
    assert_true(mean[1] == (2.0f + 4.0f + 8.0f) / 4.0f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvfp4_block_unit_scale),
        cmocka_unit_test(test_nvfp4_block_scale_two),
        cmocka_unit_test(test_nvfp4_scale_rounded_down_saturates),
        cmocka_unit_test(test_nvfp4_zero_and_subnormal_scales),
        cmocka_unit_test(test_nvfp4_padding_and_strides),
        cmocka_unit_test(test_mxfp4_block_scale_and_codes_follow_ocp),
        cmocka_unit_test(test_mxfp4_scale_rules),
        cmocka_unit_test(test_packing_round_trip),
        cmocka_unit_test(test_p_two_level_and_direct),
        cmocka_unit_test(test_p_direct_squeeze),
        cmocka_unit_test(test_int8_blocks_by_hand),
        cmocka_unit_test(test_int8_by_reciprocal),
        cmocka_unit_test(test_e4m3_per_channel_by_hand),
        cmocka_unit_test(test_e4m3x2_per_channel_by_hand),
        cmocka_unit_test(test_smooth_k_is_exact),
        cmocka_unit_test(test_sampled_channel_mean),
        cmocka_unit_test(test_bad_arguments_to_fp4_quantize_are_refused),
        cmocka_unit_test(test_nan_poisons_its_fp4_block),
        cmocka_unit_test(test_nan_poisons_its_int8_block),
        cmocka_unit_test(test_nan_poisons_its_e4m3_channel),
        cmocka_unit_test(test_nan_in_two_level_p),
        cmocka_unit_test(test_channel_mean_skips_nan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
