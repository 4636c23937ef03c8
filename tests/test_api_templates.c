/* The public calls over the templates alone, which the CLI's gen, params and
 * compile commands are made of: a parameter table resolved, rendered,
 * described, and compiled without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "mxattn.h"
#include "support/fixtures.h"
#include "gen/gen.h"
#include "support/temp_dir.h"

static void test_resolve_fills_the_defaults(void **state) {
    mxattn_ctx *cacheless = *state;
    char *canonical = NULL;
    assert_int_equal(mxattn_params_resolve(cacheless, "family=int8-fp8 head_dim=80", &canonical), MXATTN_OK);
    assert_non_null(strstr(canonical, "family=int8-fp8"));
    assert_non_null(strstr(canonical, "arch=sm_90a"));
    assert_non_null(strstr(canonical, " block_n="));   /* a knob, from the family's default */
    mxattn_free(canonical);
    assert_int_equal(mxattn_params_resolve(cacheless, "family=f16 head_dim=80 block_n=17", &canonical),
                     MXATTN_ERROR_INVALID_VALUE);
    assert_null(canonical);
    assert_non_null(strstr(mxattn_last_error(), "block_n"));
    assert_int_equal(mxattn_params_resolve(NULL, "family=f16", &canonical), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mxattn_params_resolve(cacheless, NULL, &canonical), MXATTN_ERROR_NULL_POINTER);
}

static void test_render_and_help(void **state) {
    mxattn_ctx *cacheless = *state;
    char *source = NULL, *help = NULL;
    assert_int_equal(mxattn_render(cacheless, "family=f16 head_dim=64 variant=mma", &source), MXATTN_OK);
    assert_non_null(strstr(source, "extern \"C\" __global__"));
    assert_non_null(strstr(source, "variant=mma"));       /* the header's parameter table */
    mxattn_free(source);
    assert_int_equal(mxattn_render(cacheless, "family=f32 head_dim=64", &source), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mxattn_params_help(cacheless, &help), MXATTN_OK);
    const mxattn_param *p = NULL;
    int n = 0;
    assert_int_equal(mxattn_params(&p, &n), MXATTN_OK);
    for (int i = 0; i < n; i++) assert_non_null(strstr(help, p[i].name));
    mxattn_free(help);
}

/* A rule is declared once (templates/rules.lua): the line help prints for it
 * and the message of a table that breaks it name the same demands. */
static void test_help_and_messages_read_the_same_rules(void **state) {
    mxattn_ctx *cacheless = *state;
    static const struct { const char *table, *rule; } cases[] = {
        {"family=int8-fp8 head_dim=128 variant=wgmma overlap=3 block_m=128 warps=8 block_n=128 stages=3",
         "overlap=3: head_dim<=128 block_m=192 warps=12"},
        {"family=f16 head_dim=64 variant=wgmma q_regs=0 overlap=1 block_m=192 warps=16 block_n=128 stages=2",
         "overlap=1: block_m=128 warps=12"},
        {"family=f16 head_dim=64 variant=decode block_m=16 warps=12 block_n=64 stages=3", "warps=4|8"},
        {"family=nvfp4 head_dim=64 variant=wgmma block_m=128 warps=12 block_n=32 stages=2", "block_n=64|128"},
    };
    char *help = NULL;
    assert_int_equal(mxattn_params_help(cacheless, &help), MXATTN_OK);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *source = NULL;
        assert_int_equal(mxattn_render(cacheless, cases[i].table, &source), MXATTN_ERROR_INVALID_VALUE);
        const char *msg = mxattn_last_error();
        /* The help line "when: needs (why)" against the message "when: schedule needs needs (why), not ...". */
        const char *colon = strstr(cases[i].rule, ": ");
        const char *demand = colon ? colon + 2 : cases[i].rule;
        if (!strstr(help, cases[i].rule)) fail_msg("help lacks the rule '%s'", cases[i].rule);
        if (!strstr(msg, demand)) fail_msg("'%s': message '%s' lacks '%s'", cases[i].table, msg, demand);
    }
    mxattn_free(help);
}

static void test_compile_only_reports_usage_and_ptx_from_whole_module(void **state) {
    mxattn_ctx *cacheless = *state;
    mxattn_compile_options opt;
    mxattn_compile_result r;
    assert_int_equal(mxattn_compile_options_init(&opt), MXATTN_OK);
    opt.want_ptx = 1;   /* PTX comes from a whole-module compile */
    assert_int_equal(mxattn_compile(cacheless, "family=f16 head_dim=64", &opt, &r), MXATTN_ERROR_INVALID_VALUE);
    assert_null(r.ptx);
    assert_int_equal(mxattn_compile(cacheless, "family=f16 head_dim=64 block_n=17", NULL, &r), MXATTN_ERROR_INVALID_VALUE);
    mxattn_status st = mxattn_compile(cacheless, "family=int8-fp8 head_dim=64", NULL, &r);
    if (st == MXATTN_ERROR_NO_COMPILER) skip();
    assert_int_equal(st, MXATTN_OK);
    assert_true(r.kernels > 1);                 /* the quantization kernels, then attention */
    assert_string_equal(r.arch, "sm_90a");
    assert_non_null(strstr(r.kernel_name, "int8"));
    assert_true(r.registers > 0 && r.binary_bytes > 0 && r.compile_ms > 0);
    assert_null(r.ptx);
    assert_null(r.cubin);
    mxattn_compile_result_free(&r);
    opt.whole_module = 1;
    opt.want_cubin = 1;
    assert_int_equal(mxattn_compile(cacheless, "family=f16 head_dim=64 variant=mma", &opt, &r), MXATTN_OK);
    assert_non_null(r.ptx);
    assert_non_null(strstr(r.ptx, r.kernel_name));
    assert_non_null(r.cubin);
    assert_memory_equal(r.cubin, "\x7f" "ELF", 4);
    mxattn_compile_result_free(&r);
    mxattn_compile_result_free(&r);   /* twice, and NULL: no-ops */
    mxattn_compile_result_free(NULL);
}

/* mxattn_plan_info.key_block comes from the templates' key_block, which
 * names the knob so that C need not. */
static void test_key_block_is_the_templates_answer(void **state) {
    mx_gen *g = NULL;
    char *v = NULL;
    assert_int_equal(mx_gen_open(&g), MXATTN_OK);
    assert_int_equal(mx_gen_call(g, "key_block", "family=f16 head_dim=64 variant=mma block_m=64 warps=4 block_n=32 "
                                 "stages=2", NULL, &v), MXATTN_OK);
    assert_string_equal(v, "32");
    free(v);
    assert_int_equal(mx_gen_call(g, "key_block", "family=int8-fp8 head_dim=128", NULL, &v), MXATTN_OK);
    assert_true(atoi(v) >= 16);
    free(v);
    mx_gen_close(g);
}

static void count_progress(void *user, const mxattn_tune_progress *p) {
    int *calls = user;
    assert_true(p->done >= 1 && p->done <= p->total);
    assert_non_null(p->current);
    (*calls)++;
}

/* A tuning run that compiles only: no GPU, the kernels into the database,
 * found there the second time. */
static void test_tune_run_compile_only(void **state) {
    mxattn_ctx *cacheless = *state;
    mxattn_problem p;
    mxattn_problem_init(&p, "f16", 64);
    p.seq_q = p.seq_k = 1024;
    char *shape = NULL;
    assert_int_equal(mxattn_problem_params(&p, "sm_120a", &shape), MXATTN_OK);
    assert_non_null(strstr(shape, "family=f16"));
    assert_non_null(strstr(shape, "arch=sm_120a"));
    assert_null(strstr(shape, "block_n="));        /* the shape only, no knob */
    mxattn_free(shape);
    mxattn_tune_options opt;
    mxattn_tune_report rep;
    assert_int_equal(mxattn_tune_options_init(&opt), MXATTN_OK);
    assert_int_equal(opt.reps, 20);
    assert_int_equal(opt.resume, 1);
    /* No database: nowhere to put what it compiles. */
    opt.compile_only = 1;
    assert_int_equal(mxattn_tune_run(cacheless, &p, &opt, &rep), MXATTN_ERROR_NOT_FOUND);
    opt.reps = 0;
    assert_int_equal(mxattn_tune_run(cacheless, &p, &opt, &rep), MXATTN_ERROR_INVALID_VALUE);

    char dir[256], db[300];
    assert_int_equal(temp_dir_make(dir, sizeof dir, "mxattn-tune-run"), 0);
    snprintf(db, sizeof db, "%s/t.db", dir);
    mxattn_ctx *ctx = untuned_ctx(db);
    mxattn_tune_options_init(&opt);
    opt.compile_only = 1;
    opt.max_candidates = 2;
    opt.compile_threads = 1;
    int calls = 0;
    opt.progress = count_progress;
    opt.user = &calls;
    mxattn_status st = mxattn_tune_run(ctx, &p, &opt, &rep);
    if (st == MXATTN_ERROR_NO_COMPILER) { mxattn_destroy(ctx); temp_dir_remove(dir); skip(); }
    assert_int_equal(st, MXATTN_OK);
    assert_int_equal(rep.candidates, 2);
    assert_int_equal(rep.compiled + rep.cache_hits, 2);
    assert_int_equal(rep.compiled, 2);
    assert_true(calls >= 1);
    assert_string_equal(rep.best_config, "");     /* nothing measured */
    assert_int_equal(mxattn_tune_run(ctx, &p, &opt, &rep), MXATTN_OK);
    assert_int_equal(rep.cache_hits, 2);
    assert_int_equal(rep.compiled, 0);
    /* Measuring needs a GPU. */
    opt.compile_only = 0;
    int count = 0;
    if (mxattn_device_count(&count) != MXATTN_OK) {
        st = mxattn_tune_run(ctx, &p, &opt, &rep);
        assert_true(st == MXATTN_ERROR_NO_DRIVER || st == MXATTN_ERROR_NO_DEVICE);
        assert_non_null(strstr(mxattn_last_error(), "needs a GPU"));
    }
    p.v_terms = 2;
    p.family = "int8-fp8";
    assert_int_equal(mxattn_tune_run(ctx, &p, NULL, &rep), MXATTN_ERROR_UNSUPPORTED);
    mxattn_destroy(ctx);
    temp_dir_remove(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_fills_the_defaults),
        cmocka_unit_test(test_render_and_help),
        cmocka_unit_test(test_help_and_messages_read_the_same_rules),
        cmocka_unit_test(test_compile_only_reports_usage_and_ptx_from_whole_module),
        cmocka_unit_test(test_tune_run_compile_only),
        cmocka_unit_test(test_key_block_is_the_templates_answer),
    };
    return cmocka_run_group_tests(tests, cacheless_ctx_setup, ctx_teardown);
}
