/* Scalar formats of numerics/: exhaustive round trips over every code, values
 * written by hand from the format definitions, ties, saturation, NaN. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <float.h>
#include <string.h>
#include "numerics/numerics.h"

#define assert_same_value(a, b) do {                                                  \
        double a_ = (a), b_ = (b);                                                     \
        if (!(a_ == b_ && signbit(a_) == signbit(b_))) {                               \
            print_error("%s = %.17g, expected %.17g\n", #a, a_, b_); fail(); } } while (0)

/* ---- decoding: values from the definitions ------------------------------- */
static void test_e2m1_decode_table(void **state) {
    (void)state;
    /* s.ee.m, bias 1: 0.0 0.1 | 1.0 1.1 x2^0 | x2^1 | x2^2 */
    static const float magnitudes[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    for (int c = 0; c < 8; c++) {
        assert_same_value(mx_e2m1_to_f32((uint8_t)c), magnitudes[c]);
        assert_same_value(mx_e2m1_to_f32((uint8_t)(c | 8)), -magnitudes[c]);
    }
    assert_same_value(mx_e2m1_to_f32(0x8), -0.0);
    assert_same_value(mx_e2m1_to_f32(0xF7), 6.0);   /* only the low nibble is read */
}

static void test_e4m3_decode_points(void **state) {
    (void)state;
    assert_same_value(mx_e4m3_to_f32(0x00), 0.0);
    assert_same_value(mx_e4m3_to_f32(0x80), -0.0);
    assert_same_value(mx_e4m3_to_f32(0x01), 0.001953125);     /* 1/8 * 2^-6 = 2^-9 */
    assert_same_value(mx_e4m3_to_f32(0x07), 0.013671875);     /* 7/8 * 2^-6 */
    assert_same_value(mx_e4m3_to_f32(0x08), 0.015625);        /* 2^-6 */
    assert_same_value(mx_e4m3_to_f32(0x38), 1.0);             /* exp 7 = bias */
    assert_same_value(mx_e4m3_to_f32(0x3C), 1.5);
    assert_same_value(mx_e4m3_to_f32(0x7E), 448.0);           /* 1.75 * 2^8 */
    assert_same_value(mx_e4m3_to_f32(0xFE), -448.0);
    assert_same_value(mx_e4m3_to_f32(0x78), 256.0);
    assert_true(isnan(mx_e4m3_to_f32(0x7F)));
    assert_true(isnan(mx_e4m3_to_f32(0xFF)));
}

static void test_e5m2_decode_points(void **state) {
    (void)state;
    assert_same_value(mx_e5m2_to_f32(0x01), ldexp(1, -16));   /* 1/4 * 2^-14 */
    assert_same_value(mx_e5m2_to_f32(0x04), ldexp(1, -14));
    assert_same_value(mx_e5m2_to_f32(0x3C), 1.0);             /* exp 15 = bias */
    assert_same_value(mx_e5m2_to_f32(0x7B), 57344.0);         /* 1.75 * 2^15 */
    assert_same_value(mx_e5m2_to_f32(0x7C), INFINITY);
    assert_same_value(mx_e5m2_to_f32(0xFC), -INFINITY);
    for (unsigned c = 0x7D; c <= 0x7F; c++) {
        assert_true(isnan(mx_e5m2_to_f32((uint8_t)c)));
        assert_true(isnan(mx_e5m2_to_f32((uint8_t)(c | 0x80))));
    }
}

static void test_scale_formats_decode(void **state) {
    (void)state;
    assert_same_value(mx_ue8m0_to_f32(127), 1.0);
    assert_same_value(mx_ue8m0_to_f32(0), ldexp(1, -127));
    assert_same_value(mx_ue8m0_to_f32(254), ldexp(1, 127));
    assert_true(isnan(mx_ue8m0_to_f32(0xFF)));
    assert_same_value(mx_ue4m3_to_f32(0x38), 1.0);
    assert_same_value(mx_ue4m3_to_f32(0x7E), 448.0);
    assert_true(isnan(mx_ue4m3_to_f32(0x7F)));
    assert_true(isnan(mx_ue4m3_to_f32(0x80)));  /* bit 7 set: not a UE4M3 code */
    assert_same_value(mx_f16_to_f32(0x3C00), 1.0);
    assert_same_value(mx_f16_to_f32(0x7BFF), 65504.0);
    assert_same_value(mx_f16_to_f32(0x0001), ldexp(1, -24));
    assert_same_value(mx_f16_to_f32(0xFC00), -INFINITY);
    assert_same_value(mx_bf16_to_f32(0x3F80), 1.0);
    assert_same_value(mx_bf16_to_f32(0xC000), -2.0);
}

/* ---- exhaustive round trips --------------------------------------------- */
static void test_round_trip_every_code(void **state) {
    (void)state;
    for (int f = 0; f < MX_FORMAT_COUNT; f++) {
        int n = mx_format_code_count((mx_format)f);
        for (int c = 0; c < n; c++) {
            float v = mx_format_decode((mx_format)f, (unsigned)c);
            unsigned back = mx_format_encode((mx_format)f, v);
            if (isnan(v)) {
                assert_true(isnan(mx_format_decode((mx_format)f, back)));
            } else if (f == MX_FMT_INT8 && c == 0x80) {
                assert_int_equal(back, 0x81);          /* -128 clamps to -127 */
            } else if (back != (unsigned)c) {
                print_error("%s code 0x%02x (%g) re-encodes to 0x%02x\n",
                            mx_format_name((mx_format)f), c, v, back);
                fail();
            }
        }
    }
}

static void test_f16_bf16_round_trip_every_code(void **state) {
    (void)state;
    for (unsigned h = 0; h <= 0xFFFF; h++) {
        float v = mx_f16_to_f32((uint16_t)h);
        if (isnan(v)) assert_true(isnan(mx_f16_to_f32(mx_f32_to_f16(v))));
        else assert_int_equal(mx_f32_to_f16(v), h);
        float b = mx_bf16_to_f32((uint16_t)h);
        if (isnan(b)) assert_true(isnan(mx_bf16_to_f32(mx_f32_to_bf16(b))));
        else assert_int_equal(mx_f32_to_bf16(b), h);
    }
}

/* Every midpoint between neighbouring positive values goes to the even code;
 * a hair either side goes to the nearer neighbour. */
static void check_midpoints(mx_format f, int last_finite_code) {
    for (int c = 0; c < last_finite_code; c++) {
        float lo = mx_format_decode(f, (unsigned)c), hi = mx_format_decode(f, (unsigned)c + 1);
        float mid = (float)(((double)lo + hi) / 2);
        unsigned even = (c % 2 == 0) ? (unsigned)c : (unsigned)c + 1;
        if (mx_format_encode(f, mid) != even) {
            print_error("%s: midpoint %.9g of codes 0x%x/0x%x -> 0x%x\n", mx_format_name(f), mid,
                        c, c + 1, mx_format_encode(f, mid));
            fail();
        }
        assert_int_equal(mx_format_encode(f, nextafterf(mid, 0)), c);
        assert_int_equal(mx_format_encode(f, nextafterf(mid, INFINITY)), c + 1);
        unsigned magnitude_mask = f == MX_FMT_E2M1 ? 0x7 : 0x7F;
        if (f != MX_FMT_UE4M3)    /* UE4M3 maps negatives to 0 */
            assert_int_equal(mx_format_encode(f, -mid) & magnitude_mask, even & magnitude_mask);
    }
}

static void test_ties_to_even_everywhere(void **state) {
    (void)state;
    check_midpoints(MX_FMT_E2M1, 7);
    check_midpoints(MX_FMT_E4M3, 0x7E);
    check_midpoints(MX_FMT_E5M2, 0x7B);
    check_midpoints(MX_FMT_UE4M3, 0x7E);
}

/* ---- hand-computed encodings ------------------------------------------- */
static void test_e2m1_encode_by_hand(void **state) {
    (void)state;
    assert_int_equal(mx_f32_to_e2m1(0.25f), 0x0);  /* 0 | 0.5: even is 0 */
    assert_int_equal(mx_f32_to_e2m1(0.75f), 0x2);  /* 0.5 | 1: even is 1.0 (code 2) */
    assert_int_equal(mx_f32_to_e2m1(1.25f), 0x2);  /* 1 | 1.5 */
    assert_int_equal(mx_f32_to_e2m1(1.75f), 0x4);  /* 1.5 | 2 */
    assert_int_equal(mx_f32_to_e2m1(2.5f), 0x4);   /* 2 | 3 */
    assert_int_equal(mx_f32_to_e2m1(3.5f), 0x6);   /* 3 | 4 */
    assert_int_equal(mx_f32_to_e2m1(5.0f), 0x6);   /* 4 | 6 */
    assert_int_equal(mx_f32_to_e2m1(-5.0f), 0xE);
    assert_int_equal(mx_f32_to_e2m1(5.01f), 0x7);
    assert_int_equal(mx_f32_to_e2m1(-0.1f), 0x8);  /* sign of zero kept */
    /* saturation and non-finite inputs */
    assert_int_equal(mx_f32_to_e2m1(7.0f), 0x7);
    assert_int_equal(mx_f32_to_e2m1(1e30f), 0x7);
    assert_int_equal(mx_f32_to_e2m1(-1e30f), 0xF);
    assert_int_equal(mx_f32_to_e2m1(INFINITY), 0x7);
    assert_int_equal(mx_f32_to_e2m1(-INFINITY), 0xF);
    assert_int_equal(mx_f32_to_e2m1(NAN), 0x7);
}

static void test_e4m3_encode_by_hand(void **state) {
    (void)state;
    assert_int_equal(mx_f32_to_e4m3(1.0625f), 0x38);   /* 1 | 1.125 */
    assert_int_equal(mx_f32_to_e4m3(1.1875f), 0x3A);   /* 1.125 | 1.25 */
    assert_int_equal(mx_f32_to_e4m3(0x1p-10f), 0x00);  /* half the smallest subnormal */
    assert_int_equal(mx_f32_to_e4m3(0x3p-10f), 0x02);  /* 2^-9 | 2^-8 */
    assert_int_equal(mx_f32_to_e4m3(-0.0f), 0x80);
    assert_int_equal(mx_f32_to_e4m3(416.0f), 0x7D);    /* 1.625 * 2^8 */
    assert_int_equal(mx_f32_to_e4m3(432.0f), 0x7E);    /* 416 | 448: 0x7E is even */
    assert_int_equal(mx_f32_to_e4m3(464.0f), 0x7E);    /* past the max: saturates */
    assert_int_equal(mx_f32_to_e4m3(1e9f), 0x7E);
    assert_int_equal(mx_f32_to_e4m3(-1e9f), 0xFE);
    assert_int_equal(mx_f32_to_e4m3(INFINITY), 0x7E);
    assert_int_equal(mx_f32_to_e4m3(-INFINITY), 0xFE);
    assert_int_equal(mx_f32_to_e4m3(NAN), 0x7F);
}

static void test_e5m2_encode_by_hand(void **state) {
    (void)state;
    assert_int_equal(mx_f32_to_e5m2(1.125f), 0x3C);    /* 1 | 1.25 */
    assert_int_equal(mx_f32_to_e5m2(1.375f), 0x3E);    /* 1.25 | 1.5 */
    assert_int_equal(mx_f32_to_e5m2(0x1p-17f), 0x00);  /* half of 2^-16 */
    assert_int_equal(mx_f32_to_e5m2(60000.0f), 0x7B);  /* finite overflow saturates */
    assert_int_equal(mx_f32_to_e5m2(-1e30f), 0xFB);
    assert_int_equal(mx_f32_to_e5m2(INFINITY), 0x7C);  /* infinity stays infinite */
    assert_int_equal(mx_f32_to_e5m2(-INFINITY), 0xFC);
    assert_int_equal(mx_f32_to_e5m2(NAN), 0x7F);
}

static void test_scale_formats_encode_by_hand(void **state) {
    (void)state;
    assert_int_equal(mx_f32_to_ue8m0(1.0f), 127);
    assert_int_equal(mx_f32_to_ue8m0(1.4f), 127);
    assert_int_equal(mx_f32_to_ue8m0(1.5f), 128);      /* tie 1 | 2: code 128 is even */
    assert_int_equal(mx_f32_to_ue8m0(3.0f), 128);      /* tie 2 | 4: code 128 is even */
    assert_int_equal(mx_f32_to_ue8m0(1.6f), 128);
    assert_int_equal(mx_f32_to_ue8m0(0.0f), 0);
    assert_int_equal(mx_f32_to_ue8m0(-2.0f), 0);
    assert_int_equal(mx_f32_to_ue8m0(INFINITY), 0xFE);
    assert_int_equal(mx_f32_to_ue8m0(FLT_MAX), 0xFE);
    assert_int_equal(mx_f32_to_ue8m0(NAN), 0xFF);
    assert_int_equal(mx_f32_to_ue4m3(1.0f), 0x38);
    assert_int_equal(mx_f32_to_ue4m3(-1.0f), 0x00);    /* a scale has no sign */
    assert_int_equal(mx_f32_to_ue4m3(-0.0f), 0x00);
    assert_int_equal(mx_f32_to_ue4m3(500.0f), 0x7E);
    assert_int_equal(mx_f32_to_ue4m3(INFINITY), 0x7E);
    assert_int_equal(mx_f32_to_ue4m3(NAN), 0x7F);
}

static void test_int8_encode_by_hand(void **state) {
    (void)state;
    assert_int_equal(mx_f32_to_int8(2.5f), 2);
    assert_int_equal(mx_f32_to_int8(3.5f), 4);
    assert_int_equal(mx_f32_to_int8(-2.5f), -2);
    assert_int_equal(mx_f32_to_int8(-0.5f), 0);
    assert_int_equal(mx_f32_to_int8(126.5f), 126);
    assert_int_equal(mx_f32_to_int8(127.4f), 127);
    assert_int_equal(mx_f32_to_int8(200.0f), 127);
    assert_int_equal(mx_f32_to_int8(-127.5f), -127);   /* symmetric range */
    assert_int_equal(mx_f32_to_int8(-INFINITY), -127);
    assert_int_equal(mx_f32_to_int8(NAN), 0);
}

static void test_f16_bf16_encode_by_hand(void **state) {
    (void)state;
    assert_int_equal(mx_f32_to_f16(1.0f + 0x1p-11f), 0x3C00);   /* tie: 1 | 1+2^-10 */
    assert_int_equal(mx_f32_to_f16(1.0f + 0x3p-11f), 0x3C02);
    assert_int_equal(mx_f32_to_f16(65519.0f), 0x7BFF);
    assert_int_equal(mx_f32_to_f16(65520.0f), 0x7C00);          /* tie 65504 | 65536: inf */
    assert_int_equal(mx_f32_to_f16(0x1p-25f), 0x0000);          /* half the smallest subnormal */
    assert_int_equal(mx_f32_to_f16(0x3p-25f), 0x0002);
    assert_int_equal(mx_f32_to_f16(-0.0f), 0x8000);
    assert_true((mx_f32_to_f16(NAN) & 0x7FFF) > 0x7C00);
    assert_int_equal(mx_f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);   /* tie: 1 | 1+2^-7 */
    assert_int_equal(mx_f32_to_bf16(1.0f + 0x3p-8f), 0x3F82);
    assert_int_equal(mx_f32_to_bf16(FLT_MAX), 0x7F80);          /* rounds up to inf */
    assert_int_equal(mx_f32_to_bf16(-INFINITY), 0xFF80);
    assert_true(isnan(mx_bf16_to_f32(mx_f32_to_bf16(NAN))));
}

#ifdef __FLT16_MAX__
/* The compiler's _Float16 conversion is an independent RNE implementation. */
static void test_f16_matches_compiler(void **state) {
    (void)state;
    mx_rng rng;
    mx_rng_seed(&rng, 7);
    for (int i = 0; i < 200000; i++) {
        uint32_t bits = (uint32_t)mx_rng_next(&rng);
        float x;
        memcpy(&x, &bits, sizeof x);
        if (isnan(x)) continue;
        _Float16 h = (_Float16)x;
        uint16_t expected;
        memcpy(&expected, &h, sizeof expected);
        assert_int_equal(mx_f32_to_f16(x), expected);
    }
}
#endif

/* ---- census and listing ------------------------------------------------ */
static void test_census_counts_each_format_magnitudes_and_codes(void **state) {
    (void)state;
    assert_int_equal(mx_format_distinct_magnitudes(MX_FMT_E4M3, 0, INFINITY), 127);
    assert_int_equal(mx_format_distinct_magnitudes(MX_FMT_E4M3, 0, 0.167), 35);
    assert_int_equal(mx_format_distinct_magnitudes(MX_FMT_E4M3, 0, 0.167) * 8, 280);
    assert_int_equal(mx_format_distinct_magnitudes(MX_FMT_UE4M3, 0, INFINITY), 127);
    assert_int_equal(mx_format_distinct_magnitudes(MX_FMT_E2M1, 0, INFINITY), 8);
    /* E5M2: 0, 3 subnormals, 30 binades x 4 = 124 */
    assert_int_equal(mx_format_distinct_magnitudes(MX_FMT_E5M2, 0, INFINITY), 124);
    assert_int_equal(mx_format_distinct_magnitudes(MX_FMT_UE8M0, 0, INFINITY), 255);
    assert_int_equal(mx_format_distinct_magnitudes(MX_FMT_INT8, 0, INFINITY), 129);
    assert_int_equal(mx_format_code_count(MX_FMT_E2M1), 16);
    assert_int_equal(mx_format_code_count(MX_FMT_UE4M3), 128);
    assert_int_equal(mx_format_code_count(MX_FMT_E4M3), 256);
    assert_string_equal(mx_format_name(MX_FMT_E4M3), "e4m3");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e2m1_decode_table),
        cmocka_unit_test(test_e4m3_decode_points),
        cmocka_unit_test(test_e5m2_decode_points),
        cmocka_unit_test(test_scale_formats_decode),
        cmocka_unit_test(test_round_trip_every_code),
        cmocka_unit_test(test_f16_bf16_round_trip_every_code),
        cmocka_unit_test(test_ties_to_even_everywhere),
        cmocka_unit_test(test_e2m1_encode_by_hand),
        cmocka_unit_test(test_e4m3_encode_by_hand),
        cmocka_unit_test(test_e5m2_encode_by_hand),
        cmocka_unit_test(test_scale_formats_encode_by_hand),
        cmocka_unit_test(test_int8_encode_by_hand),
        cmocka_unit_test(test_f16_bf16_encode_by_hand),
#ifdef __FLT16_MAX__
        cmocka_unit_test(test_f16_matches_compiler),
#endif
        cmocka_unit_test(test_census_counts_each_format_magnitudes_and_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
