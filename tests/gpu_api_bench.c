/* mxattn_plan_benchmark on the GPU: a plan timed on inputs of its own and
 * its output checked against the fp64 reference, as `mxattn run` reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "mxattn.h"
#include "support/fixtures.h"

static void test_benchmark_times_and_checks(void **state) {
    mxattn_ctx *cacheless = *state;
    mxattn_problem p;
    mxattn_problem_init(&p, "f16", 64);
    p.heads_q = 4;
    p.heads_kv = 2;
    p.seq_q = p.seq_k = 256;
    p.causal = MXATTN_CAUSAL_TOP_LEFT;
    p.return_lse = 1;
    mxattn_plan *plan = NULL;
    assert_int_equal(mxattn_plan_create(cacheless, &p, NULL, &plan), MXATTN_OK);
    mxattn_plan_info info;
    assert_int_equal(mxattn_plan_get_info(plan, &info), MXATTN_OK);
    char want[32];
    snprintf(want, sizeof want, "block_n=%d", info.key_block);
    assert_true(info.key_block > 0);
    assert_non_null(strstr(info.config, want));
    mxattn_bench_options o;
    mxattn_bench_report r;
    mxattn_bench_options_init(&o);
    o.reps = 3;
    o.check_heads = 9;   /* more than there are: all four */
    assert_int_equal(mxattn_plan_benchmark(plan, &o, &r), MXATTN_OK);
    assert_int_equal(r.reps, 3);
    assert_int_equal(r.checked_heads, 4);
    assert_true(r.best_ms > 0 && r.best_ms <= r.mean_ms && r.tops > 0);
    assert_true(r.cosine > 0.999 && r.rel_l1 < 1e-2);
    o.check_heads = 0;
    assert_int_equal(mxattn_plan_benchmark(plan, &o, &r), MXATTN_OK);
    assert_int_equal(r.checked_heads, 0);
    o.reps = 0;
    assert_int_equal(mxattn_plan_benchmark(plan, &o, &r), MXATTN_ERROR_INVALID_VALUE);
    mxattn_plan_destroy(plan);
    /* Strides of a bigger tensor than the inputs it would make. */
    p.q_strides = (mxattn_strides){4 * 512 * 64, 512 * 64, 64};
    assert_int_equal(mxattn_plan_create(cacheless, &p, NULL, &plan), MXATTN_OK);
    assert_int_equal(mxattn_plan_benchmark(plan, NULL, &r), MXATTN_ERROR_UNSUPPORTED);
    mxattn_plan_destroy(plan);
}

/* The accuracy table on the GPU: f16's kernel against fp64 as close as its oracle. */
static void test_accuracy_table_rows_all_written_above_0999_cosine(void **state) {
    mxattn_accuracy_options o;
    mxattn_accuracy_options_init(&o);
    o.size = 256;
    o.head_dim = 64;
    mxattn_accuracy_gpu_report *r = calloc(1, sizeof *r);
    assert_int_equal(mxattn_accuracy_gpu(&o, "f16", r), MXATTN_OK);
    assert_int_equal(r->n_plans, 1);
    assert_int_equal(r->n_rows, r->n_experiments);
    assert_int_equal(r->plans[0].status, MXATTN_OK);
    assert_true(r->plans[0].key_block > 0);
    for (int i = 0; i < r->n_rows; i++) {
        assert_false(r->rows[i].failed);
        assert_int_equal(r->rows[i].unwritten, 0);
        assert_true(r->rows[i].gpu_cosine > 0.999 && r->rows[i].offline_cosine > 0.999);
    }
    free(r);
}

int main(void) {
    int n = 0;
    if (mxattn_device_count(&n) != MXATTN_OK || n == 0) {
        printf("skip: no GPU (%s)\n", mxattn_last_error());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_benchmark_times_and_checks),
        cmocka_unit_test(test_accuracy_table_rows_all_written_above_0999_cosine),
    };
    return cmocka_run_group_tests(tests, cacheless_ctx_setup, ctx_teardown);
}
