/* The public API's argument checks, without a GPU: every bad input gets a
 * specific status and a message naming what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include "mxattn.h"
#include "support/fixtures.h"

static mxattn_problem base(void) {
    mxattn_problem p;
    mxattn_problem_init(&p, "f16", 128);
    p.batch = 2; p.heads_q = 8; p.heads_kv = 2; p.seq_q = 100; p.seq_k = 300;
    return p;
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

static void test_problem_check_refuses_each_bad_field_by_name(void **state) {
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

static void test_null_arguments_and_unknown_tune_policy_are_refused(void **state) {
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

/* Every field is checked: v_terms (which mxattn_candidates would refuse),
 * the 0/1 flags, upper bounds on sizes and strides, sm_scale. */
static void test_every_field_is_checked(void **state) {
    mxattn_problem p = base(); p.v_terms = 0; expect(p, MXATTN_ERROR_INVALID_VALUE, "v_terms");
    p = base(); p.v_terms = 3; expect(p, MXATTN_ERROR_INVALID_VALUE, "v_terms");
    p = base(); p.v_terms = -1; expect(p, MXATTN_ERROR_INVALID_VALUE, "v_terms");
    p = base(); p.v_terms = 2; expect(p, MXATTN_ERROR_INVALID_VALUE, "int8-fp8");           /* f16 has one V term */
    p = base(); p.family = "int8-fp8"; p.head_dim = 192; p.v_terms = 2;
    expect(p, MXATTN_ERROR_INVALID_VALUE, "head_dim <= 128");
    p = base(); p.family = "int8-fp8"; p.v_terms = 2; expect(p, MXATTN_OK, NULL);
    p = base(); p.return_lse = 2; expect(p, MXATTN_ERROR_INVALID_VALUE, "return_lse");
    p = base(); p.direct_p = -1; expect(p, MXATTN_ERROR_INVALID_VALUE, "direct_p");
    p = base(); p.smooth_k = 5; expect(p, MXATTN_ERROR_INVALID_VALUE, "smooth_k");
    p = base(); p.seq_q = INT_MAX; expect(p, MXATTN_ERROR_INVALID_VALUE, "seq_q");
    p = base(); p.seq_k = (1 << 24) + 1; expect(p, MXATTN_ERROR_INVALID_VALUE, "seq_k");
    p = base(); p.seq_q = p.seq_k = 1 << 24; p.batch = 1; p.heads_q = p.heads_kv = 1; expect(p, MXATTN_OK, NULL);
    p = base(); p.heads_q = 512; p.heads_kv = 1; expect(p, MXATTN_ERROR_INVALID_VALUE, "256");
    p = base(); p.k_strides.batch = INT64_MAX; p.k_strides.head = 300 * 128; p.k_strides.seq = 128;
    expect(p, MXATTN_ERROR_INVALID_VALUE, "2^40");
    p = base(); p.q_strides.batch = (int64_t)1 << 40; p.q_strides.head = 100 * 128; p.q_strides.seq = 128;
    expect(p, MXATTN_OK, NULL);   /* the bound itself is legal */
    /* Each stride within its bound, the extent past int64: refused, computed without overflow. */
    p = base(); p.batch = 65535; p.heads_q = p.heads_kv = 65535; p.seq_q = p.seq_k = 1 << 24;
    p.q_strides.batch = p.q_strides.head = p.q_strides.seq = (int64_t)1 << 40;
    expect(p, MXATTN_ERROR_INVALID_VALUE, "2^63");
    p = base(); p.sm_scale = FLT_MAX; expect(p, MXATTN_ERROR_INVALID_VALUE, "sm_scale");
    p = base(); p.sm_scale = INFINITY; expect(p, MXATTN_ERROR_INVALID_VALUE, "sm_scale");
    p = base(); p.sm_scale = NAN; expect(p, MXATTN_ERROR_INVALID_VALUE, "sm_scale");
    p = base(); p.sm_scale = -0.125f; expect(p, MXATTN_ERROR_INVALID_VALUE, "sm_scale");
    p = base(); p.sm_scale = 0; expect(p, MXATTN_OK, NULL);
    p = base(); p.sm_scale = 1e30f; expect(p, MXATTN_OK, NULL);
}

/* What mxattn_problem_check passes, mxattn_candidates lists candidates for
 * (v_terms, head_dim and the flags across the families; int8-fp8's walk of
 * its space takes seconds, so only its cases that end early are here, and
 * test_v_terms_option lists its two-term kernels). */
static void test_problem_check_agrees_with_candidates(void **state) {
    mxattn_ctx *ctx = cacheless_ctx();
    static const char *families[] = {"f16", "int8-f16", "nvfp4", "mxfp4", "nvfp4-int8qk", "int8-fp8"};
    static const int dims[] = {64, 96, 192};
    int checked = 0;
    for (size_t f = 0; f < sizeof families / sizeof *families; f++)
        for (size_t d = 0; d < sizeof dims / sizeof *dims; d++)
            for (int vt = -1; vt <= 3; vt++)
                for (int lse = 0; lse <= 2; lse++) {
                    mxattn_problem p = base();
                    p.family = families[f]; p.head_dim = dims[d]; p.v_terms = vt; p.return_lse = lse;
                    mxattn_status st = mxattn_problem_check(&p);
                    if (st == MXATTN_OK && !strcmp(p.family, "int8-fp8")) continue;   /* a walk of seconds */
                    int count = 0;
                    mxattn_status listed = mxattn_candidates(ctx, &p, NULL, 0, &count);
                    if ((st == MXATTN_OK) != (listed == MXATTN_OK))
                        fail_msg("%s D=%d v_terms=%d return_lse=%d: problem_check %s, candidates %s (%s)", p.family,
                                 p.head_dim, vt, lse, mxattn_status_string(st), mxattn_status_string(listed),
                                 mxattn_last_error());
                    checked++;
                }
    assert_true(checked > 200);
    mxattn_destroy(ctx);
}

/* The configuration's grammar is strict and checked before any GPU: each
 * token exactly key=value, a knob's name, a legal value, each key once, at
 * most 255 characters.  The error names the token.  (The old parser dropped
 * the malformed tokens, let the last duplicate win, and checked values only
 * after the driver, so these came back as the driver's status.) */
static void test_config_grammar_is_strict(void **state) {
    mxattn_ctx *ctx = cacheless_ctx();
    mxattn_problem p = base();
    p.head_dim = 64;
    p.causal = MXATTN_CAUSAL_TOP_LEFT;
    char long_text[400];
    snprintf(long_text, sizeof long_text, "block_m=64%290s", " ");
    const struct { const char *config, *needle; } bad[] = {
        {"block_m:64", "'block_m:64'"},
        {"block_m = 64", "'block_m'"},
        {"block_m64", "'block_m64'"},
        {"block_m=64 junk", "'junk'"},
        {"block_m=64 block_n=64 =", "'='"},
        {"block_m=64\tblock_n=64", "block_m=64\\x09block_n=64"},
        {"block_m=64 block_m=128", "block_m given twice"},
        {"block_m=64 block_m=64", "block_m given twice"},
        {long_text, "300 characters, at most 255"},
        {"block_m=abc", "block_m=abc"},
        {"block_m=0x40", "block_m=0x40"},
        {"block_m=64.0", "block_m=64.0"},
        {"block_m=99999999999999999999", "block_m=99999999999999999999"},
        {"variant=tensor", "variant=tensor"},
        {"warps=-4", "warps=-4"},
        {"v_terms=3", "v_terms=3"},
        {"blocks=64", "'blocks'"},
        {"head_dim=256 causal=0 lse=1", "head_dim is a shape parameter"},
        {"block_m=64 causal=0", "causal is a shape parameter"},
        {"lse=1", "lse is a shape parameter"},
        {"family=f16", "family is a shape parameter"},
        {"arch=sm_80", "arch is a shape parameter"},
        {"v_terms=1", "v_terms is a shape parameter"},
        {"gqa=1", "gqa is a problem parameter"},
        /* Legal names and values, illegal together or for this family: on sm_90a without a GPU. */
        {"overlap=1 block_m=64", "overlap=1"},
        {"rowsum_mma=1", "rowsum_mma=1: family f16"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mxattn_plan *plan = NULL;
        mxattn_status st = mxattn_plan_create(ctx, &p, bad[i].config, &plan);
        if (st != MXATTN_ERROR_INVALID_VALUE)
            fail_msg("config '%s': %s (%s), want INVALID_VALUE", bad[i].config, mxattn_status_string(st), mxattn_last_error());
        if (!strstr(mxattn_last_error(), bad[i].needle))
            fail_msg("config '%s': message '%s' lacks '%s'", bad[i].config, mxattn_last_error(), bad[i].needle);
        assert_null(plan);
    }
    /* Tokens separated by several spaces, and no tokens at all, are legal. */
    const char *good[] = {"block_m=64   block_n=64", " block_m=64 ", "", "   "};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        mxattn_plan *plan = NULL;
        mxattn_status st = mxattn_plan_create(ctx, &p, good[i], &plan);
        if (st == MXATTN_ERROR_INVALID_VALUE) fail_msg("config '%s' refused: %s", good[i], mxattn_last_error());
        mxattn_plan_destroy(plan);
    }
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

static void test_status_strings_name_every_status_and_version_matches(void **state) {
    for (int s = MXATTN_OK; s <= MXATTN_ERROR_INTERNAL; s++)
        assert_string_not_equal(mxattn_status_string((mxattn_status)s), "unknown status");
    assert_string_equal(mxattn_status_string((mxattn_status)999), "unknown status");
    assert_string_equal(mxattn_version(), MXATTN_VERSION);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_problem_passes),
        cmocka_unit_test(test_problem_check_refuses_each_bad_field_by_name),
        cmocka_unit_test(test_strides_that_do_not_fit),
        cmocka_unit_test(test_null_arguments_and_unknown_tune_policy_are_refused),
        cmocka_unit_test(test_plan_without_gpu_is_a_clear_error),
        cmocka_unit_test(test_candidates_without_gpu),
        cmocka_unit_test(test_candidates_leave_strtok_alone),
        cmocka_unit_test(test_v_terms_option),
        cmocka_unit_test(test_status_strings_name_every_status_and_version_matches),
        cmocka_unit_test(test_every_field_is_checked),
        cmocka_unit_test(test_problem_check_agrees_with_candidates),
        cmocka_unit_test(test_config_grammar_is_strict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
