/* The tuner on a real GPU: family f16 over its candidate space for head dims
 * 64, 80, 96, 128 and 192 (B=2, H=8, N=1024), plus a bottom-right causal case
 * with seq_q != seq_k; a winner is stored for each, the public mxattn_tune
 * resumes over the full space (of int8-f16 at D=64), and a later plan (MXATTN_TUNE unset) finds the
 * tuned entry and its binary in the database without NVRTC.  Prints the cold
 * (empty database, NVRTC) and warm (tuned, cached) plan-creation times.
 * Without a GPU it skips (77). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/context.h"
#include "support/gpu_harness.h"
#include "tuner/tune_logic.h"
#include "util/err.h"
#include "support/temp_dir.h"

static const int HEAD_DIMS[] = {64, 80, 96, 128, 192};
#define N_DIMS (int)(sizeof HEAD_DIMS / sizeof HEAD_DIMS[0])
#define CAP 24   /* candidates per head dim: the prior's best 24, default first */

static char g_dir[64], g_tuned_db[128], g_cold_db[128];

static mxattn_problem problem_for(int head_dim) { return gpu_f16_problem(head_dim, 2, 8, 1024); }

static mxattn_ctx *open_ctx(const char *db) {
    mxattn_options o;
    mxattn_options_init(&o);
    o.db_path = db;
    mxattn_ctx *ctx = NULL;
    if (mxattn_create(&ctx, &o) != MXATTN_OK) fail_msg("mxattn_create: %s", mxattn_last_error());
    return ctx;
}

static void print_progress(void *user, const mx_tune_progress *p) {
    if (p->done == p->total)
        printf("#   %d/%d done in %.1f s; best %s (%.4f ms)\n", p->done, p->total, p->elapsed_s,
               p->best ? p->best : "-", p->best_ms);
}

/* Tunes one problem through the same path plans use (context helpers),
 * capped at CAP candidates, and checks what was stored. */
static void tune_one(mxattn_ctx *ctx, const mxattn_problem *p) {
    const mx_device *dev = NULL;
    assert_int_equal(mx_ctx_device(ctx, &dev), MXATTN_OK);
    mx_problem pr;
    assert_int_equal(mx_problem_resolve(p, &pr), MXATTN_OK);
    char shape[1024];
    mx_problem_shape_params(&pr, dev->arch, shape, sizeof shape);
    mx_jit_env env;
    mx_tune_key key;
    mx_tune_sizes sizes;
    mx_ctx_jit_env(ctx, dev, &env);
    mx_ctx_tune_key(ctx, dev, &pr, &key);
    mx_ctx_tune_sizes(&pr, &sizes);
    mx_tune_options opt;
    mx_tune_options_init(&opt);
    opt.max_candidates = CAP;
    opt.settle_ms = 40;   /* the settling path, exercised; not the default's half second a candidate */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    opt.compile_threads = cpus > 2 ? (int)(cpus - 1) : 1;
    opt.resume = 1;
    opt.progress = print_progress;
    mx_tune_outcome out;
    if (mx_tune_run(&env, shape, &sizes, &key, &opt, &out) != MXATTN_OK) fail_msg("tune: %s", mxattn_last_error());
    printf("# %s d=%d causal=%d: %d candidates (%d ok, %d failed, %d pruned), %d input sets; "
           "best %s %.4f ms %.1f TOPS; default %.4f ms; x%.2f; %.1f s\n",
           p->family, p->head_dim, (int)p->causal, out.candidates, out.measured, out.failed, out.pruned, out.input_sets,
           out.best, out.best_ms, out.best_tops, out.default_ms, out.default_ms / out.best_ms, out.wall_s);
    assert_true(out.best[0] != 0);
    assert_true(out.best_ms > 0 && out.default_ms > 0);
    assert_true(out.best_ms <= out.default_ms);            /* the default is a candidate */
    assert_true(out.measured >= 1);
    assert_true(out.input_sets >= 1);
    mx_tune_result stored;
    assert_int_equal(mx_cache_get_tune(env.cache, &key, &stored), MXATTN_OK);
    assert_string_equal(stored.config, out.best);
    mx_measurement *all = NULL;
    int n = 0;
    assert_int_equal(mx_cache_list_measurements(env.cache, &key, &all, &n), MXATTN_OK);
    assert_true(n >= out.candidates);
    free(all);
}

static void test_tuning_stores_a_winner_per_head_dim(void **state) {
    mxattn_ctx *ctx = open_ctx(g_tuned_db);
    for (int i = 0; i < N_DIMS; i++) {
        mxattn_problem p = problem_for(HEAD_DIMS[i]);
        tune_one(ctx, &p);
    }
    /* Bottom-right causal with fewer queries than keys: the check run uses
     * causal_offset = seq_k - seq_q, so every candidate is held to it. */
    mxattn_problem p = problem_for(128);
    p.causal = MXATTN_CAUSAL_BOTTOM_RIGHT;
    p.seq_q = 512;
    tune_one(ctx, &p);
    char *json = NULL;
    assert_int_equal(mxattn_query(ctx, "family=f16", &json), MXATTN_OK);
    for (int i = 0; i < N_DIMS; i++) {
        char needle[32];
        snprintf(needle, sizeof needle, "\"head_dim\": %d", HEAD_DIMS[i]);
        if (!strstr(json, needle)) {
            snprintf(needle, sizeof needle, "\"head_dim\":%d", HEAD_DIMS[i]);
            assert_non_null(strstr(json, needle));
        }
    }
    mxattn_free(json);
    mxattn_destroy(ctx);
}

/* The public call times every candidate for half a second each, so it runs
 * on a family of a small space: int8-f16 at D=64 (96 settings), whose first
 * CAP it finds measured. */
static void test_public_tune_resumes_over_the_full_space(void **state) {
    mxattn_ctx *ctx = open_ctx(g_tuned_db);
    mxattn_problem p = problem_for(64);
    p.family = "int8-f16";
    tune_one(ctx, &p);
    char best[256];
    double speedup = 0;
    if (mxattn_tune(ctx, &p, best, sizeof best, &speedup) != MXATTN_OK) fail_msg("mxattn_tune: %s", mxattn_last_error());
    printf("# mxattn_tune int8-f16 d=64 (all candidates, the first %d resumed): %s, x%.2f over the default\n", CAP, best, speedup);
    assert_true(best[0] != 0);
    assert_true(speedup >= 1.0);
    mxattn_destroy(ctx);
}

static double create_plan(const char *db, int head_dim, mxattn_plan_info *info) {
    mxattn_ctx *ctx = open_ctx(db);
    mxattn_problem p = problem_for(head_dim);
    mxattn_plan *plan = NULL;
    if (mxattn_plan_create(ctx, &p, NULL, &plan) != MXATTN_OK) fail_msg("plan: %s", mxattn_last_error());
    assert_int_equal(mxattn_plan_get_info(plan, info), MXATTN_OK);
    mxattn_plan_destroy(plan);
    mxattn_destroy(ctx);
    return info->create_ms;
}

static void test_later_plans_use_the_database(void **state) {
    unsetenv("MXATTN_TUNE");
    for (int i = 0; i < N_DIMS; i++) {
        mxattn_plan_info cold, warm;
        create_plan(g_cold_db, HEAD_DIMS[i], &cold);
        create_plan(g_tuned_db, HEAD_DIMS[i], &warm);
        printf("# d=%d plan creation: cold %.1f ms (%s, NVRTC %.1f ms), warm %.1f ms (%s, %s)\n", HEAD_DIMS[i],
               cold.create_ms, cold.config_source, cold.compile_ms, warm.create_ms, warm.config_source,
               warm.cubin_from_cache ? "binary from the database" : "compiled");
        assert_string_equal(cold.config_source, "default");
        assert_int_equal(cold.cubin_from_cache, 0);
        assert_string_equal(warm.config_source, "tuned");
        assert_int_equal(warm.cubin_from_cache, 1);
        assert_float_equal(warm.compile_ms, 0, 0);
        /* compiled and stored now; found stored */
        assert_int_equal(cold.cubin_stored, 1);
        assert_int_equal(warm.cubin_stored, 1);
    }
}

int main(void) {
    mx_device dev;
    gpu_open_or_skip(&dev, "gpu_tune");
    printf("# %s (%s), %d SMs, L2 %d MB\n", dev.name, dev.arch, dev.sm_count, dev.l2_bytes >> 20);
    mx_device_close(&dev);
    if (temp_dir_make(g_dir, sizeof g_dir, "mxattn-gpu-tune")) return 1;
    snprintf(g_tuned_db, sizeof g_tuned_db, "%s/tuned.db", g_dir);
    snprintf(g_cold_db, sizeof g_cold_db, "%s/cold.db", g_dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tuning_stores_a_winner_per_head_dim),
        cmocka_unit_test(test_public_tune_resumes_over_the_full_space),
        cmocka_unit_test(test_later_plans_use_the_database),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    temp_dir_remove(g_dir);
    return failed;
}
