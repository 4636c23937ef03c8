/* Tuned and imported rows against the problem and the parameter space
 * (api/config_check.h), the strict parameter lookup in C (gen/gen.h), and
 * the problem check's arithmetic on extreme values (run under UBSan in the
 * sanitizer build: the old extent() overflowed int64 there).  No GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "api/config_check.h"
#include "api/problem.h"
#include "gen/gen.h"
#include "util/err.h"
#include "support/fixtures.h"

/* cache/cache.h's mx_tune_row_check, spelled out: mx_cache_import and merge
 * take the validator through it, so its signature must be exactly this. */
typedef int (*row_check_fn)(void *arg, const mx_tune_key *key, const mx_tune_result *r, char *why, size_t why_cap);
static const row_check_fn validator = mx_api_check_tune_row;

/* The key a D=64 causal bf16 problem gets on an H200. */
static mx_tune_key d64_causal_key(void) {
    mx_tune_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.gpu_name, sizeof k.gpu_name, "NVIDIA H200");
    k.sm_count = 132;
    k.compute_capability = 90;
    snprintf(k.family, sizeof k.family, "f16");
    k.head_dim = 64;
    snprintf(k.dtype, sizeof k.dtype, "bf16");
    snprintf(k.out_dtype, sizeof k.out_dtype, "bf16");
    k.causal = MXATTN_CAUSAL_BOTTOM_RIGHT;
    k.gqa = 4;
    snprintf(k.layout, sizeof k.layout, "bhnd");
    k.seq_bucket = k.q_bucket = 4096;
    return k;
}

static mx_tune_result row(const char *config, double ms) { return tune_result_of(config, ms, 2 * ms, 100); }

/* The first candidate mxattn lists for a problem: a legal configuration,
 * whatever the templates' space holds today. */
static void first_candidate(mxattn_ctx *ctx, const mxattn_problem *p, char *out, size_t cap) {
    char *configs[1] = {NULL};
    int count = 0;
    assert_int_equal(mxattn_candidates(ctx, p, configs, 1, &count), MXATTN_OK);
    assert_true(count > 0);
    snprintf(out, cap, "%s", configs[0]);
    mxattn_free(configs[0]);
}

static void expect_refused(mxattn_ctx *ctx, const mx_tune_key *key, const mx_tune_result *r, const char *needle) {
    char why[512] = "";
    if (validator(ctx, key, r, why, sizeof why)) fail_msg("row '%s' (%g ms) accepted", r->config, r->median_ms);
    if (!strstr(why, needle)) fail_msg("row '%s': reason '%s' lacks '%s'", r->config, why, needle);
}

static void tune_rows_are_checked_against_their_key(void **state) {
    mxattn_ctx *ctx = cacheless_ctx();
    mxattn_problem p;
    mxattn_problem_init(&p, "f16", 64);
    p.causal = MXATTN_CAUSAL_BOTTOM_RIGHT;
    p.heads_q = 4;
    char legal[256], why[512];
    first_candidate(ctx, &p, legal, sizeof legal);
    mx_tune_key key = d64_causal_key();
    mx_tune_result good = row(legal, 0.05);
    if (!validator(ctx, &key, &good, why, sizeof why)) fail_msg("legal row '%s' refused: %s", legal, why);
    assert_string_equal(why, "");

    /* The finding: a row that turns a D=64 causal problem into D=256 without a mask, writing an LSE. */
    mx_tune_result r = row("head_dim=256 causal=0 lse=1", 0.05);
    expect_refused(ctx, &key, &r, "set by the problem");
    r = row("block_m=48", 0.05);             expect_refused(ctx, &key, &r, "block_m=48");
    r = row("block_m:64", 0.05);             expect_refused(ctx, &key, &r, "'block_m:64'");
    r = row("block_m=64 block_m=128", 0.05); expect_refused(ctx, &key, &r, "twice");
    r = row("rowsum_mma=1", 0.05);           expect_refused(ctx, &key, &r, "family f16");
    r = row("overlap=1 block_m=64", 0.05);   expect_refused(ctx, &key, &r, "overlap=1");
    /* Impossible times: a 1e-300 ms row would win every merge. */
    r = row(legal, 1e-300);   expect_refused(ctx, &key, &r, "median_ms");
    r = row(legal, 0);        expect_refused(ctx, &key, &r, "median_ms");
    r = row(legal, -1);       expect_refused(ctx, &key, &r, "median_ms");
    r = row(legal, NAN);      expect_refused(ctx, &key, &r, "median_ms");
    r = row(legal, INFINITY); expect_refused(ctx, &key, &r, "median_ms");
    r = row(legal, 0.05); r.default_ms = NAN; expect_refused(ctx, &key, &r, "default_ms");
    r = row(legal, 0.05); r.tops = -INFINITY; expect_refused(ctx, &key, &r, "tops");
    r = row("", 0.05);       expect_refused(ctx, &key, &r, "empty");
    r = row("   ", 0.05);    expect_refused(ctx, &key, &r, "empty");
    /* An unterminated config, as a damaged or crafted row could hold. */
    r = row(legal, 0.05); memset(r.config, 'a', sizeof r.config); expect_refused(ctx, &key, &r, "terminated");
    /* The key's own text fields become tokens of the shape: no smuggling through them. */
    mx_tune_key bad = key;
    snprintf(bad.family, sizeof bad.family, "f16 lse=1");
    expect_refused(ctx, &bad, &good, "family");
    bad = key; bad.head_dim = 512;       expect_refused(ctx, &bad, &good, "head_dim");
    bad = key; bad.causal = 9;           expect_refused(ctx, &bad, &good, "causal");
    bad = key; snprintf(bad.dtype, sizeof bad.dtype, "f32"); expect_refused(ctx, &bad, &good, "dtype=f32");
    bad = key; bad.compute_capability = 75; expect_refused(ctx, &bad, &good, "arch=sm_75");
    /* A row for another family's key is judged by that family. */
    bad = key; snprintf(bad.family, sizeof bad.family, "int8-f16");
    r = row("q_regs=0", 0.05);
    expect_refused(ctx, &bad, &r, "q_regs=0");
    /* A NULL or zero-sized reason buffer is allowed. */
    assert_int_equal(validator(ctx, &key, &good, NULL, 0), 1);
    r = row("block_m=48", 0.05);
    assert_int_equal(validator(ctx, &key, &r, NULL, 0), 0);
    mxattn_destroy(ctx);
}

/* The check leaves the thread's message as it was, for a caller that goes
 * on (an import that counts the refused rows, a plan that falls back). */
static void the_check_keeps_the_callers_message(void **state) {
    mxattn_ctx *ctx = cacheless_ctx();
    mx_tune_key key = d64_causal_key();
    mx_tune_result r = row("block_m=48", 0.05);
    char why[256];
    mx_fail(MXATTN_ERROR_IO, "the caller's own message");
    assert_int_equal(validator(ctx, &key, &r, why, sizeof why), 0);
    assert_string_equal(mx_error_message(), "the caller's own message");
    mx_clear_error();
    assert_int_equal(validator(ctx, &key, &r, why, sizeof why), 0);
    assert_string_equal(mx_error_message(), "");
    mxattn_destroy(ctx);
}

/* At plan time the row is checked against the problem's own shape, which
 * holds what the key does not (v_terms, lse, alignment): a one-term tile
 * cannot serve a two-term problem, a wgmma tile can.  (plan.c's knob-string
 * test, strstr(config, "variant=wgmma"), is this check now.) */
static void tuned_configs_are_checked_against_the_problem(void **state) {
    mxattn_ctx *ctx = cacheless_ctx();
    mxattn_problem p;
    mxattn_problem_init(&p, "int8-fp8", 128);
    p.v_terms = 2;
    char wgmma[256], shape[1024], why[512];
    first_candidate(ctx, &p, wgmma, sizeof wgmma);
    assert_non_null(strstr(wgmma, "variant=wgmma"));
    mx_problem pr;
    assert_int_equal(mx_problem_resolve(&p, &pr), MXATTN_OK);
    mx_problem_shape_params(&pr, "sm_90a", shape, sizeof shape);
    mx_tune_result r = row(wgmma, 0.05);
    if (!mx_api_check_tuned_config(ctx, shape, &r, why, sizeof why)) fail_msg("'%s' refused: %s", wgmma, why);
    r = row("variant=mma block_m=64 block_n=64 warps=4 stages=2", 0.05);
    assert_int_equal(mx_api_check_tuned_config(ctx, shape, &r, why, sizeof why), 0);
    assert_non_null(strstr(why, "v_terms=2"));
    /* On an architecture without warpgroup MMAs the same wgmma row is refused. */
    mx_problem_shape_params(&pr, "sm_89", shape, sizeof shape);
    r = row(wgmma, 0.05);
    assert_int_equal(mx_api_check_tuned_config(ctx, shape, &r, why, sizeof why), 0);
    mxattn_destroy(ctx);
}

static void params_lookup_is_strict(void **state) {
    char v[8];
    assert_int_equal(mx_params_get("block_m=64 block_n=32", "block_n", v, sizeof v), 1);
    assert_string_equal(v, "32");
    assert_int_equal(mx_params_get("block_m=64 block_n=32", "warps", v, sizeof v), 0);
    assert_int_equal(mx_params_get("block_m=64 block_mm=1", "block_m", v, sizeof v), 1);
    assert_string_equal(v, "64");
    /* Twice: neither the first nor the last, an error. */
    assert_int_equal(mx_params_get("block_m=64 block_m=128", "block_m", v, sizeof v), -1);
    assert_string_equal(v, "");
    /* Too long for the buffer: never a value cut short ("sm_90a" -> "sm_9"). */
    assert_int_equal(mx_params_get("arch=sm_90a", "arch", v, 5), -1);
    assert_string_equal(v, "");
    assert_int_equal(mx_params_get_int("block_m=64 block_m=128", "block_m", -7), -7);
    assert_int_equal(mx_params_get_int("block_m=64", "block_m", -7), 64);
}

/* Extreme sizes and strides through the problem check and the pointer check:
 * refused or computed in range, never an overflow (the sanitizer build traps
 * on one).  The old code accepted seq = INT_MAX and INT64_MAX strides and
 * overflowed int64 in extent(). */
static void extreme_problems_stay_in_range(void **state) {
    const int64_t big[] = {0, 1, 256, (int64_t)1 << 40, ((int64_t)1 << 40) + 1, INT64_MAX / 2, INT64_MAX};
    const int sizes[] = {1, 2, 65535, 65536, 1 << 24, (1 << 24) + 1, INT32_MAX};
    void *const ptrs[] = {(void *)(uintptr_t)0x10000, (void *)(UINTPTR_MAX - 0xfff), (void *)(UINTPTR_MAX / 2 + 1)};
    int accepted = 0, refused = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (size_t j = 0; j < sizeof big / sizeof *big; j++) {
            mxattn_problem p;
            mxattn_problem_init(&p, "f16", 256);
            p.batch = sizes[i] <= 65535 ? sizes[i] : 65535;
            p.heads_q = p.heads_kv = sizes[i] <= 65535 ? sizes[i] : 1;
            p.seq_q = p.seq_k = sizes[i];
            mxattn_strides s = {big[j], big[j], big[j] > 256 ? big[j] : 256};
            p.q_strides = p.k_strides = p.v_strides = s;
            mxattn_strides o = {big[j], big[j], big[j] > 256 ? big[j] : 256};
            p.o_strides = o;
            p.sm_scale = j % 2 ? 3.0e38f : 0;
            mx_problem pr;
            if (mx_problem_resolve(&p, &pr) != MXATTN_OK) { refused++; continue; }
            accepted++;
            for (int b = 0; b < 4; b++) assert_true(pr.bytes[b] > 0);
            /* The same tensor for all four: an overlap, or an extent past the end of memory. */
            for (size_t k = 0; k < sizeof ptrs / sizeof *ptrs; k++)
                assert_int_equal(mx_problem_check_pointers(&pr, ptrs[k], ptrs[k], ptrs[k], ptrs[k], NULL),
                                 MXATTN_ERROR_INVALID_VALUE);
        }
    assert_true(accepted > 0);
    assert_true(refused > 0);
    /* A tensor near the top of the address space names itself. */
    mxattn_problem p;
    mxattn_problem_init(&p, "f16", 64);
    p.seq_q = p.seq_k = 1 << 20;
    mx_problem pr;
    assert_int_equal(mx_problem_resolve(&p, &pr), MXATTN_OK);
    assert_int_equal(mx_problem_check_pointers(&pr, (void *)(uintptr_t)0x10000, (void *)(uintptr_t)0x10000000,
                                               (void *)(uintptr_t)0x20000000, (void *)(UINTPTR_MAX - 0xfff), NULL),
                     MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mx_error_message(), "end of the address space"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tune_rows_are_checked_against_their_key),
        cmocka_unit_test(the_check_keeps_the_callers_message),
        cmocka_unit_test(tuned_configs_are_checked_against_the_problem),
        cmocka_unit_test(params_lookup_is_strict),
        cmocka_unit_test(extreme_problems_stay_in_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
