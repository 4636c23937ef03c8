/* mxattn_accuracy: the design notes' tables reproduced on the CPU reference,
 * as `mxattn accuracy` prints them: grouped, deterministic, the E4M3 census
 * exact, and the temperature sweep the shape the notes describe. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>
#include "mxattn.h"

static const mxattn_accuracy_figure *find(const mxattn_accuracy_report *r, const char *name) {
    for (int i = 0; i < r->count; i++)
        if (!strcmp(r->figures[i].name, name)) return &r->figures[i];
    fail_msg("no figure '%s'", name);
    return NULL;
}

static void test_accuracy_tables_in_order_match_the_notes_and_repeat(void **state) {
    mxattn_accuracy_options o;
    assert_int_equal(mxattn_accuracy_options_init(&o), MXATTN_OK);
    assert_int_equal(o.size, 1024);
    o.size = 256;
    o.head_dim = 64;
    mxattn_accuracy_report *r = calloc(1, sizeof *r);
    assert_int_equal(mxattn_accuracy(&o, r), MXATTN_OK);
    assert_true(r->count > 30 && r->count <= MXATTN_ACCURACY_MAX_FIGURES);
    /* Grouped, in the tables' order. */
    static const char *const order[] = {"census", "formats", "p-scale", "smooth-k", "sweep", "split", "int8", "throughput"};
    int at = 0;
    for (int i = 0; i < r->count; i++) {
        while (at < 8 && strcmp(order[at], r->figures[i].table)) at++;
        assert_true(at < 8);
    }
    assert_true(find(r, "E4M3 distinct non-negative magnitudes")->ours == 127);
    assert_true(find(r, "E4M3 max")->ours == 448);
    assert_true(isnan(find(r, "E4M3 max")->notes) == 0);
    const double t[4] = {1, 4, 8, 16};
    for (int i = 0; i < 4; i++) {
        assert_true(r->sweep_temperature[i] == t[i]);
        if (i) assert_true(r->sweep_entropy[i] < r->sweep_entropy[i - 1]);   /* sharper with temperature */
    }
    /* At t=1 the direct P scale loses more of P than the two-level one (at
     * 1024 keys the notes' 67% against 98%; with 256 keys P is larger). */
    assert_true(r->sweep_two_level[0] > r->sweep_direct[0]);
    assert_true(r->notes_sweep_two_level[0] > 98 && r->notes_sweep_direct[0] < 68);
    /* Deterministic for a seed. */
    mxattn_accuracy_report *again = calloc(1, sizeof *again);
    assert_int_equal(mxattn_accuracy(&o, again), MXATTN_OK);
    assert_memory_equal(r->sweep_two_level, again->sweep_two_level, sizeof r->sweep_two_level);
    free(r);
    free(again);
    o.size = 0;
    assert_int_equal(mxattn_accuracy(&o, NULL), MXATTN_ERROR_NULL_POINTER);
    mxattn_accuracy_report bad;
    assert_int_equal(mxattn_accuracy(&o, &bad), MXATTN_ERROR_INVALID_VALUE);
}

static void test_inputs_are_the_seed_s(void **state) {
    mxattn_accuracy_options o;
    mxattn_accuracy_options_init(&o);
    o.size = 8;
    o.head_dim = 4;
    float q[32], k[32], v[32], mu[4], q2[32], k2[32], v2[32];
    assert_int_equal(mxattn_accuracy_inputs(&o, q, k, v, mu), MXATTN_OK);
    assert_int_equal(mxattn_accuracy_inputs(&o, q2, k2, v2, NULL), MXATTN_OK);
    assert_memory_equal(q, q2, sizeof q);
    assert_memory_equal(k, k2, sizeof k);
    o.seed = 7;
    assert_int_equal(mxattn_accuracy_inputs(&o, q2, k2, v2, NULL), MXATTN_OK);
    assert_memory_not_equal(q, q2, sizeof q);
    o.k_mean = NAN;
    assert_int_equal(mxattn_accuracy_inputs(&o, q2, k2, v2, NULL), MXATTN_ERROR_INVALID_VALUE);
}

/* Without a GPU the table cannot run; a list naming no family is refused first. */
static void test_gpu_table_arguments(void **state) {
    mxattn_accuracy_options o;
    mxattn_accuracy_options_init(&o);
    mxattn_accuracy_gpu_report *r = calloc(1, sizeof *r);
    assert_int_equal(mxattn_accuracy_gpu(&o, "fp2,fp3", r), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mxattn_last_error(), "none of them is a family"));
    int n = 0;
    if (mxattn_device_count(&n) != MXATTN_OK) {
        mxattn_status st = mxattn_accuracy_gpu(&o, "f16,int8-fp8", r);
        assert_true(st == MXATTN_ERROR_NO_DRIVER || st == MXATTN_ERROR_NO_DEVICE);
        /* The rows it would have measured: each family, and int8-fp8's two V terms. */
        assert_int_equal(r->n_plans, 3);
        assert_string_equal(r->plans[1].label, "int8-fp8");
        assert_string_equal(r->plans[2].label, "int8-fp8 v_terms=2");
        assert_int_equal(r->plans[2].v_terms, 2);
        assert_int_equal(r->n_experiments, 7);
    }
    assert_int_equal(mxattn_accuracy_gpu(&o, NULL, NULL), MXATTN_ERROR_NULL_POINTER);
    free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accuracy_tables_in_order_match_the_notes_and_repeat),
        cmocka_unit_test(test_inputs_are_the_seed_s),
        cmocka_unit_test(test_gpu_table_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
