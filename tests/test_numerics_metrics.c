/* Metrics and RNG of numerics/, on vectors whose answers are known by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include "numerics/numerics.h"

#define assert_near(a, b, tol) do { double a_ = (a), b_ = (b);                        \
        if (!(fabs(a_ - b_) <= (tol))) { print_error("%s = %.17g, expected %.17g\n", #a, a_, b_); fail(); } } while (0)

static void test_cosine_of_orthogonal_parallel_opposite_and_zero(void **state) {
    (void)state;
    const double a[2] = {1, 0}, b[2] = {0, 1}, c[3] = {1, 2, 3}, c2[3] = {2, 4, 6}, cm[3] = {-1, -2, -3};
    const double z[3] = {0, 0, 0};
    assert_near(mx_cosine(a, b, 2), 0, 0);
    assert_near(mx_cosine(c, c2, 3), 1, 1e-15);
    assert_near(mx_cosine(c, cm, 3), -1, 1e-15);
    assert_near(mx_cosine(z, z, 3), 1, 0);
    assert_near(mx_cosine(c, z, 3), 0, 0);
    const double d[2] = {1, 1};
    assert_near(mx_cosine(a, d, 2), 1 / sqrt(2.0), 1e-15);
}

static void test_errors_rel_l1_rmse_max_abs_match_hand_values(void **state) {
    (void)state;
    const double a[3] = {1, 2, 3}, b[3] = {1, 2, 5}, r[2] = {2, 2}, t[2] = {1, 2};
    assert_near(mx_rel_l1(t, r, 2), 0.25, 0);             /* |1-2| / (2+2) */
    assert_near(mx_rmse(a, b, 3), sqrt(4.0 / 3), 1e-15);
    assert_near(mx_max_abs_error(a, b, 3), 2, 0);
    const double zero[2] = {0, 0};
    assert_near(mx_rel_l1(zero, zero, 2), 0, 0);
    assert_true(isinf(mx_rel_l1(t, zero, 2)));
    const double nan_vec[2] = {NAN, 0};
    assert_true(isnan(mx_max_abs_error(nan_vec, zero, 2)));
    mx_error_stats s = mx_compare(a, b, 3);
    assert_near(s.max_abs, 2, 0);
    assert_near(s.rel_l1, 2.0 / 8, 1e-15);
    const float af[3] = {1, 2, 3};
    mx_error_stats sf = mx_compare_f32(af, b, 3);
    assert_near(sf.rmse, s.rmse, 0);
    assert_near(sf.cosine, s.cosine, 0);
}

static void test_entropy_is_one_uniform_zero_one_hot_and_averages(void **state) {
    (void)state;
    const double p[3 * 4] = {0.25, 0.25, 0.25, 0.25,   /* uniform: 1 */
                             1, 0, 0, 0,               /* one-hot: 0 */
                             0.5, 0.5, 0, 0};          /* log 2 / log 4 = 0.5 */
    assert_near(mx_mean_normalized_entropy(p, 1, 4), 1, 1e-15);
    assert_near(mx_mean_normalized_entropy(p + 4, 1, 4), 0, 0);
    assert_near(mx_mean_normalized_entropy(p + 8, 1, 4), 0.5, 1e-15);
    assert_near(mx_mean_normalized_entropy(p, 3, 4), 0.5, 1e-15);
    assert_near(mx_mean_normalized_entropy(p, 1, 1), 0, 0);
}

static void test_distinct_magnitudes_merge_signs_and_zeros(void **state) {
    (void)state;
    const double x[6] = {1, -1, 2, 0, -0.0, 0.5};
    assert_int_equal(mx_count_distinct_magnitudes(x, 6), 4);
    assert_int_equal(mx_count_distinct_magnitudes(x, 0), 0);
}

static void test_rng_repeats_per_seed_with_gaussian_moments_and_range(void **state) {
    (void)state;
    mx_rng a, b, c;
    mx_rng_seed(&a, 1234);
    mx_rng_seed(&b, 1234);
    mx_rng_seed(&c, 1235);
    int differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = mx_rng_next(&a);
        assert_true(x == mx_rng_next(&b));
        differ += x != mx_rng_next(&c);
    }
    assert_true(differ > 990);
    /* Moments of 200k Gaussians: mean within ~5 sigma/sqrt(n), variance near 1. */
    double sum = 0, sq = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) { double g = mx_rng_gaussian(&a); sum += g; sq += g * g; }
    assert_near(sum / n, 0, 0.012);
    assert_near(sq / n, 1, 0.02);
    for (int i = 0; i < 1000; i++) {
        double u = mx_rng_uniform(&a);
        assert_true(u >= 0 && u < 1);
    }
    float f[4];
    mx_rng_seed(&a, 5);
    mx_rng_fill_gaussian(&a, f, 4, 10, 0);
    for (int i = 0; i < 4; i++) assert_near(f[i], 10, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cosine_of_orthogonal_parallel_opposite_and_zero),
        cmocka_unit_test(test_errors_rel_l1_rmse_max_abs_match_hand_values),
        cmocka_unit_test(test_entropy_is_one_uniform_zero_one_hot_and_averages),
        cmocka_unit_test(test_distinct_magnitudes_merge_signs_and_zeros),
        cmocka_unit_test(test_rng_repeats_per_seed_with_gaussian_moments_and_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
