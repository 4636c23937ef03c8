/* The public API's argument checks, without a GPU: every bad input gets a
 * specific status and a message naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "mxattn.h"

static mxattn_problem base(void) {
    mxattn_problem p;
    mxattn_problem_init(&p, "f16", 128);
    p.batch = 2; p.heads_q = 8; p.heads_kv = 2; p.seq_q = 100; p.seq_k = 300;
    return p;
}

/* A context with no database: these tests must leave no file behind. */
static mxattn_ctx *cacheless_ctx(void) {
    mxattn_ctx *ctx = NULL;
    mxattn_options o;
    mxattn_options_init(&o);
    o.no_cache = 1;
    assert_int_equal(mxattn_create(&ctx, &o), MXATTN_OK);
    return ctx;
}

static void expect(mxattn_problem p, mxattn_status want, const char *needle) {
    mxattn_status got = mxattn_problem_check(&p);
    if (got != want) fail_msg("status %s, want %s (%s)", mxattn_status_string(got), mxattn_status_string(want), mxattn_last_error());
    if (needle && !strstr(mxattn_last_error(), needle)) fail_msg("message '%s' lacks '%s'", mxattn_last_error(), needle);
}

static void test_good_problem_passes(void **state) {
    expect(base(), MXATTN_OK, NULL);
    mxattn_problem p = base();
    p.head_dim = 17;           /* any head dim */
    p.layout = MXATTN_LAYOUT_BNHD;
    p.causal = MXATTN_CAUSAL_BOTTOM_RIGHT;
    expect(p, MXATTN_OK, NULL);
}

static void test_bad_shapes(void **state) {
    mxattn_problem p = base(); p.head_dim = 0; expect(p, MXATTN_ERROR_INVALID_VALUE, "head_dim");
    p = base(); p.head_dim = 257; expect(p, MXATTN_ERROR_INVALID_VALUE, "head_dim");
    p = base(); p.head_dim = -4; expect(p, MXATTN_ERROR_INVALID_VALUE, "head_dim");
    p = base(); p.seq_q = 0; expect(p, MXATTN_ERROR_INVALID_VALUE, "seq_q");
    p = base(); p.seq_k = -1; expect(p, MXATTN_ERROR_INVALID_VALUE, "seq_k");
    p = base(); p.batch = 0; expect(p, MXATTN_ERROR_INVALID_VALUE, "batch");
    p = base(); p.heads_q = 6; p.heads_kv = 4; expect(p, MXATTN_ERROR_INVALID_VALUE, "multiple");
    p = base(); p.causal = (mxattn_causal)7; expect(p, MXATTN_ERROR_INVALID_VALUE, "causal");
    p = base(); p.dtype = (mxattn_dtype)5; expect(p, MXATTN_ERROR_INVALID_VALUE, "dtype");
    p = base(); p.sm_scale = -1; expect(p, MXATTN_ERROR_INVALID_VALUE, "sm_scale");
    p = base(); p.family = "fp32"; expect(p, MXATTN_ERROR_INVALID_VALUE, "family");
    p = base(); p.family = NULL; expect(p, MXATTN_ERROR_NULL_POINTER, "family");
    assert_int_equal(mxattn_problem_check(NULL), MXATTN_ERROR_NULL_POINTER);
}

static void test_strides_that_do_not_fit(void **state) {
    mxattn_problem p = base();
    p.q_strides.batch = 8 * 100 * 128; p.q_strides.head = 100 * 128; p.q_strides.seq = 64;  /* rows overlap */
    expect(p, MXATTN_ERROR_INVALID_VALUE, "seq stride");
    p = base();
    p.k_strides.batch = 2 * 300 * 128; p.k_strides.head = 100; p.k_strides.seq = 256;
    expect(p, MXATTN_ERROR_INVALID_VALUE, "head stride");
    p = base();
    p.v_strides.batch = -1; p.v_strides.head = 300 * 128; p.v_strides.seq = 128;
    expect(p, MXATTN_ERROR_INVALID_VALUE, "non-negative");
    /* Padded strides are fine. */
    p = base();
    p.o_strides.batch = 8 * 100 * 200; p.o_strides.head = 100 * 200; p.o_strides.seq = 200;
    expect(p, MXATTN_OK, NULL);
}

static void test_null_arguments(void **state) {
    mxattn_ctx *ctx = NULL;
    mxattn_plan *plan = (mxattn_plan *)0x1;
    assert_int_equal(mxattn_create(NULL, NULL), MXATTN_ERROR_NULL_POINTER);
    mxattn_options o;
    mxattn_options_init(&o);
    o.tune_policy = "sometimes";
    assert_int_equal(mxattn_create(&ctx, &o), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mxattn_last_error(), "sometimes"));
    o.tune_policy = NULL;
    o.no_cache = 1;
    assert_int_equal(mxattn_create(&ctx, &o), MXATTN_OK);
    mxattn_problem p = base();
    assert_int_equal(mxattn_plan_create(ctx, NULL, NULL, &plan), MXATTN_ERROR_NULL_POINTER);
    assert_null(plan);
    assert_int_equal(mxattn_plan_create(NULL, &p, NULL, &plan), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mxattn_plan_create(ctx, &p, NULL, NULL), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mxattn_run(NULL, NULL, NULL, NULL, NULL, NULL, NULL), MXATTN_ERROR_NULL_POINTER);
    mxattn_plan_destroy(NULL);   /* no-ops */
    mxattn_destroy(NULL);
    mxattn_destroy(ctx);
}

/* Without a GPU a plan fails cleanly with a status that says so; with one it succeeds. */
static void test_plan_without_gpu_is_a_clear_error(void **state) {
    mxattn_ctx *ctx = cacheless_ctx();
    mxattn_problem p = base();
    mxattn_plan *plan = NULL;
    mxattn_status st = mxattn_plan_create(ctx, &p, NULL, &plan);
    if (st == MXATTN_OK) {
        mxattn_plan_destroy(plan);
    } else {
        assert_true(st == MXATTN_ERROR_NO_DRIVER || st == MXATTN_ERROR_NO_DEVICE);
        assert_true(strlen(mxattn_last_error()) > 10);
        assert_null(plan);
    }
    /* An illegal explicit configuration names the knob before touching a GPU. */
    p.head_dim = 64;
    st = mxattn_plan_create(ctx, &p, "block_m=48", &plan);
    assert_true(st == MXATTN_ERROR_INVALID_VALUE || st == MXATTN_ERROR_NO_DRIVER || st == MXATTN_ERROR_NO_DEVICE);
    /* A configuration that names a shape parameter (here one that would make
     * the kernel write an LSE the problem has no buffer for) is refused, with
     * or without a GPU. */
    static const char *shaped[] = {"block_m=64 lse=1", "causal=1", "head_dim=128 block_n=64", "layout=bnhd"};
    for (size_t i = 0; i < sizeof shaped / sizeof *shaped; i++) {
        plan = NULL;
        assert_int_equal(mxattn_plan_create(ctx, &p, shaped[i], &plan), MXATTN_ERROR_INVALID_VALUE);
        assert_non_null(strstr(mxattn_last_error(), "set by the problem"));
        assert_null(plan);
    }
    mxattn_destroy(ctx);
}

static void test_candidates_without_gpu(void **state) {
    mxattn_ctx *ctx = cacheless_ctx();
    mxattn_problem p = base();
    char *configs[8];
    int count = 0;
    assert_int_equal(mxattn_candidates(ctx, &p, configs, 8, &count), MXATTN_OK);
    assert_true(count > 8);
    assert_non_null(strstr(configs[0], "block_m="));
    for (int i = 0; i < 8; i++) mxattn_free(configs[i]);
    assert_int_equal(mxattn_candidates(ctx, &p, NULL, 8, &count), MXATTN_ERROR_NULL_POINTER);
    mxattn_destroy(ctx);
}

/* v_terms, int8-fp8's accuracy option: its candidates are the kernels that
 * read a second V term; other families and other values are named errors;
 * tuning refuses it (the tuning key has no column for it) before any GPU. */
static void test_v_terms_option(void **state) {
    mxattn_ctx *ctx = cacheless_ctx();
    mxattn_problem p = base();
    p.family = "int8-fp8";
    p.head_dim = 128;
    assert_int_equal(p.v_terms, 1);
    p.v_terms = 2;
    char *configs[64];
    int count = 0;
    assert_int_equal(mxattn_candidates(ctx, &p, configs, 64, &count), MXATTN_OK);
    assert_true(count > 0);
    for (int i = 0; i < count && i < 64; i++) {
        assert_non_null(strstr(configs[i], "variant=wgmma"));
        mxattn_free(configs[i]);
    }
    p.head_dim = 192;   /* two terms of V^T: one TMA box of 2 * DV <= 256 rows */
    assert_int_equal(mxattn_candidates(ctx, &p, configs, 64, &count), MXATTN_ERROR_INVALID_VALUE);
    p.head_dim = 128;
    p.v_terms = 3;
    assert_int_equal(mxattn_candidates(ctx, &p, configs, 64, &count), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mxattn_last_error(), "v_terms"));
    p.v_terms = 2;
    p.family = "f16";
    assert_int_equal(mxattn_candidates(ctx, &p, configs, 64, &count), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mxattn_last_error(), "v_terms"));
    p.family = "int8-fp8";
    char best[256];
    double speedup = 0;
    assert_int_equal(mxattn_tune(ctx, &p, best, sizeof best, &speedup), MXATTN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(mxattn_last_error(), "v_terms"));
    mxattn_destroy(ctx);
}

/* The library must not touch the caller's strtok() state (nor share one
 * across threads): a caller tokenizing its own list around the call. */
static void test_candidates_leave_strtok_alone(void **state) {
    mxattn_ctx *ctx = cacheless_ctx();
    char families[] = "f16,int8-f16";
    int seen = 0;
    for (char *f = strtok(families, ","); f; f = strtok(NULL, ",")) {
        mxattn_problem p = base();
        p.family = f;
        char *configs[1];
        int count = 0;
        assert_int_equal(mxattn_candidates(ctx, &p, configs, 1, &count), MXATTN_OK);
        mxattn_free(configs[0]);
        seen++;
    }
    assert_int_equal(seen, 2);
    mxattn_destroy(ctx);
}

static void test_status_strings(void **state) {
    for (int s = MXATTN_OK; s <= MXATTN_ERROR_INTERNAL; s++)
        assert_string_not_equal(mxattn_status_string((mxattn_status)s), "unknown status");
    assert_string_equal(mxattn_status_string((mxattn_status)999), "unknown status");
    assert_string_equal(mxattn_version(), MXATTN_VERSION);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_problem_passes),
        cmocka_unit_test(test_bad_shapes),
        cmocka_unit_test(test_strides_that_do_not_fit),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_plan_without_gpu_is_a_clear_error),
        cmocka_unit_test(test_candidates_without_gpu),
        cmocka_unit_test(test_candidates_leave_strtok_alone),
        cmocka_unit_test(test_v_terms_option),
        cmocka_unit_test(test_status_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
