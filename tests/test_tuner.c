/* The tuner without a GPU: its pure decisions (buckets, candidate lists,
 * pruning by resources, timing statistics, the output check, the winner with
 * ties and failures), resuming a finished run from the cache, compile-only
 * runs through the thread pool (needs NVRTC; that test skips itself without
 * it), and the public mxattn_query / mxattn_tune paths that need no GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"
#include "gen/gen.h"
#include "runtime/nvrtc.h"
#include "tuner/tune.h"
#include "tuner/tune_logic.h"
#include "util/err.h"
#include "support/records.h"
#include "support/temp_dir.h"

static char g_dir[64];

static int make_dir(void **state) {
    return temp_dir_make(g_dir, sizeof g_dir, "mxattn-tuner");
}
static int remove_dir(void **state) { return temp_dir_remove(g_dir); }
static void db_path(char *out, size_t cap) { snprintf(out, cap, "%s/tune.db", g_dir); }

static mx_measurement meas(const char *config, const char *status, double ms, double spread) {
    return measurement_of(config, status, ms, spread, 0);
}

/* ---- buckets and candidate lists ------------------------------------------ */

static void test_seq_bucket_rule(void **state) {
    assert_int_equal(mx_seq_bucket(1), MX_SEQ_BUCKET_MIN);
    assert_int_equal(MX_SEQ_BUCKET_MIN, 64);
    assert_int_equal(mx_seq_bucket(100), 128);
    assert_int_equal(mx_seq_bucket(256), 256);
    assert_int_equal(mx_seq_bucket(257), 512);
    assert_int_equal(mx_seq_bucket(4097), 8192);
    assert_int_equal(mx_seq_bucket(65536), 65536);
    assert_int_equal(mx_seq_bucket(1 << 20), MX_SEQ_BUCKET_MAX);
    /* Cross-attention's key lengths under one query length are tuned apart
     * (text conditioning: 77 keys, 256, 1024 against 4096 queries). */
    assert_true(mx_seq_bucket(77) != mx_seq_bucket(256));
    assert_true(mx_seq_bucket(256) != mx_seq_bucket(1024));
    /* The query length alone: decoding (1 row, a few speculative rows) and
     * chunked prefill fall apart from a full prefill over the same keys. */
    assert_int_equal(mx_q_bucket(1), MX_Q_BUCKET_MIN);
    assert_int_equal(mx_q_bucket(16), 16);
    assert_int_equal(mx_q_bucket(17), 32);
    assert_int_equal(mx_q_bucket(512), 512);
    assert_int_equal(mx_q_bucket(4096), mx_seq_bucket(4096));
    assert_int_equal(mx_q_bucket(1 << 20), MX_SEQ_BUCKET_MAX);
    assert_true(mx_q_bucket(1) != mx_q_bucket(4096));
}

static void test_split_candidates_keeps_default_first_and_caps(void **state) {
    char text[] = "block_m=128 warps=8\n\nblock_m=64 warps=4 \nblock_m=32 warps=2\n";
    const char *c[8];
    int n = mx_tune_split_candidates(text, c, 8, 2);
    assert_int_equal(n, 2);
    assert_string_equal(c[0], "block_m=128 warps=8");
    assert_string_equal(c[1], "block_m=64 warps=4");
    char all[] = "a=1\nb=2\nc=3";
    assert_int_equal(mx_tune_split_candidates(all, c, 8, 0), 3);
    assert_string_equal(c[2], "c=3");
    char empty[] = "\n\n";
    assert_int_equal(mx_tune_split_candidates(empty, c, 8, 0), 0);
}

/* ---- pruning ---------------------------------------------------------------- */

static mx_resource_limits h200(void) {
    mx_resource_limits l = {.smem_per_block_optin = 232448, .smem_per_sm = 233472, .regs_per_sm = 65536,
                            .max_threads_per_sm = 2048, .max_threads_per_block = 1024};
    return l;
}

static void test_prune_by_resources(void **state) {
    mx_resource_limits lim = h200();
    char why[256];
    mx_kernel_resources fine = {.registers = 128, .spill_bytes = 0, .threads = 256, .smem_bytes = 100 * 1024};
    assert_null(mx_tune_prune(&fine, &lim, why, sizeof why));
    assert_int_equal(mx_tune_blocks_per_sm(&fine, &lim), 2);

    mx_kernel_resources spills = fine;
    spills.spill_bytes = MX_TUNE_SPILL_ALLOWANCE;      /* a little: still measured */
    assert_null(mx_tune_prune(&spills, &lim, why, sizeof why));
    spills.spill_bytes = MX_TUNE_SPILL_ALLOWANCE + 1;  /* more: pruned */
    assert_string_equal(mx_tune_prune(&spills, &lim, why, sizeof why), MX_MEASURE_OUT_OF_RESOURCES);
    assert_non_null(strstr(why, "spills"));

    mx_kernel_resources big_smem = fine;
    big_smem.smem_bytes = 240 * 1024;
    assert_string_equal(mx_tune_prune(&big_smem, &lim, why, sizeof why), MX_MEASURE_OUT_OF_RESOURCES);
    assert_non_null(strstr(why, "shared memory"));

    /* 255 registers x 512 threads = 16 warps x 8192 > 65536: cannot launch. */
    mx_kernel_resources regs = {.registers = 255, .threads = 512, .smem_bytes = 1024};
    assert_int_equal(mx_tune_blocks_per_sm(&regs, &lim), 0);
    assert_string_equal(mx_tune_prune(&regs, &lim, why, sizeof why), MX_MEASURE_OUT_OF_RESOURCES);
    /* ... but 255 x 256 rounds to exactly 65536 and fits once. */
    regs.threads = 256;
    assert_int_equal(mx_tune_blocks_per_sm(&regs, &lim), 1);
    assert_null(mx_tune_prune(&regs, &lim, why, sizeof why));

    mx_kernel_resources too_many_threads = {.registers = 32, .threads = 2048};
    assert_int_equal(mx_tune_blocks_per_sm(&too_many_threads, &lim), 0);
    /* Shared memory, not registers, limits this one: 3 x (70 KB + 1 KB) fit in 228 KB. */
    mx_kernel_resources smem_bound = {.registers = 64, .threads = 128, .smem_bytes = 70 * 1024};
    assert_int_equal(mx_tune_blocks_per_sm(&smem_bound, &lim), 3);
}

/* ---- statistics --------------------------------------------------------------- */

static void test_stats_median_and_spread(void **state) {
    float odd[] = {5, 1, 3, 2, 4};
    mx_timing_stats s;
    mx_tune_stats(odd, 5, &s);
    assert_float_equal(s.median, 3, 1e-9);
    assert_float_equal(s.p10, 1.4, 1e-6);
    assert_float_equal(s.p90, 4.6, 1e-6);
    assert_float_equal(s.spread, (4.6 - 1.4) / 3, 1e-6);
    float even[] = {4, 1, 3, 2};
    mx_tune_stats(even, 4, &s);
    assert_float_equal(s.median, 2.5, 1e-9);
    float one[] = {0.25f};
    mx_tune_stats(one, 1, &s);
    assert_float_equal(s.median, 0.25, 1e-9);
    assert_float_equal(s.spread, 0, 1e-9);
    /* One slow outlier moves the median not at all. */
    float outlier[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 50};
    mx_tune_stats(outlier, 10, &s);
    assert_float_equal(s.median, 1, 1e-9);
}

/* ---- output check --------------------------------------------------------------- */

/* The bounds follow P's format: a difference two correct int8-fp8 kernels
 * show (an E4M3 step of one weight, 0.047 in the GPU's check) passes there
 * but not for f16; an MXFP4 family takes the most; garbage fails everywhere. */
static void test_tolerance_follows_p_format(void **state) {
    mx_tune_tolerance f16, fp8, nv, mx, unknown;
    mx_tune_tolerance_of("f16", 0, &f16);
    mx_tune_tolerance_of("int8-fp8", 0, &fp8);
    mx_tune_tolerance_of("nvfp4", 0, &nv);
    mx_tune_tolerance_of("mxfp4", 1, &mx);
    mx_tune_tolerance_of("no-such-family", 0, &unknown);
    assert_float_equal(unknown.rel_l1, f16.rel_l1, 0);
    assert_true(f16.rel_l1 < fp8.rel_l1 && fp8.rel_l1 < nv.rel_l1 && nv.rel_l1 < mx.rel_l1);
    enum { N = 4096 };
    static float ref[N], got[N];
    for (int i = 0; i < N; i++) ref[i] = got[i] = sinf((float)i);
    got[77] = ref[77] + 0.047f;
    mx_output_diff d;
    mx_tune_compare(ref, got, N, &f16, &d);
    assert_false(d.ok);
    mx_tune_compare(ref, got, N, &fp8, &d);
    assert_true(d.ok);
    for (int i = 0; i < N; i++) got[i] = -ref[i];
    const mx_tune_tolerance *all[] = {&f16, &fp8, &nv, &mx};
    for (int k = 0; k < 4; k++) {
        mx_tune_compare(ref, got, N, all[k], &d);
        assert_false(d.ok);
    }
}

static void test_compare_fails_nan_outlier_and_bias_but_passes_noise(void **state) {
    enum { N = 4096 };
    static float ref[N], got[N];
    mx_tune_tolerance f16;
    mx_tune_tolerance_of("f16", 0, &f16);
    for (int i = 0; i < N; i++) ref[i] = got[i] = sinf((float)i) * 1.5f;
    mx_output_diff d;
    mx_tune_compare(ref, got, N, &f16, &d);
    assert_true(d.ok);
    assert_float_equal(d.max_abs, 0, 0);

    /* bf16-sized noise (one ulp here and there) passes. */
    for (int i = 0; i < N; i += 7) got[i] = ref[i] * (1 + 1.0f / 256);
    mx_tune_compare(ref, got, N, &f16, &d);
    assert_true(d.ok);

    /* One unwritten (poisoned) element fails. */
    got[100] = NAN;
    mx_tune_compare(ref, got, N, &f16, &d);
    assert_false(d.ok);
    assert_int_equal(d.nonfinite, 1);
    got[100] = ref[100];

    /* One wrong element well outside atol + rtol|ref| fails, though rel-L1 is tiny. */
    got[5] = ref[5] + 0.2f;
    mx_tune_compare(ref, got, N, &f16, &d);
    assert_false(d.ok);
    assert_true(d.rel_l1 < MX_TUNE_REL_L1);
    assert_int_equal(d.first_bad, 5);
    got[5] = ref[5];

    /* A 1% bias everywhere is inside the element tolerance but not rel-L1. */
    for (int i = 0; i < N; i++) got[i] = ref[i] * 1.01f;
    mx_tune_compare(ref, got, N, &f16, &d);
    assert_false(d.ok);
    assert_true(d.max_excess <= 0);

    /* A non-finite reference element holds the candidate to nothing. */
    for (int i = 0; i < N; i++) got[i] = ref[i];
    ref[9] = INFINITY;
    got[9] = 0;
    mx_tune_compare(ref, got, N, &f16, &d);
    assert_true(d.ok);
}

/* ---- the winner -------------------------------------------------------------------- */

#define DEFAULT_CFG "block_m=128 block_n=64 warps=8 stages=2"

static void test_winner_is_fastest_ok(void **state) {
    mx_measurement m[] = {
        meas(DEFAULT_CFG, MX_MEASURE_OK, 1.00, 0.01),
        meas("block_m=64", MX_MEASURE_OK, 0.80, 0.01),
        meas("block_m=32", MX_MEASURE_OK, 0.90, 0.01),
    };
    assert_int_equal(mx_tune_choose_winner(m, 3, DEFAULT_CFG), 1);
    assert_int_equal(mx_tune_choose_winner(m, 3, NULL), 1);
}

static void test_failed_candidates_never_win(void **state) {
    mx_measurement m[] = {
        meas(DEFAULT_CFG, MX_MEASURE_OK, 1.00, 0.01),
        meas("wrong", MX_MEASURE_WRONG_RESULT, 0.10, 0),
        meas("oor", MX_MEASURE_OUT_OF_RESOURCES, 0, 0),
        meas("compile", MX_MEASURE_COMPILE_FAILED, 0, 0),
        meas("launch", MX_MEASURE_LAUNCH_FAILED, 0.05, 0),
        meas("zero-time", MX_MEASURE_OK, 0, 0),   /* an "ok" without a time is not evidence */
    };
    assert_int_equal(mx_tune_choose_winner(m, 6, DEFAULT_CFG), 0);
}

static void test_all_failed_has_no_winner(void **state) {
    mx_measurement m[] = {
        meas(DEFAULT_CFG, MX_MEASURE_COMPILE_FAILED, 0, 0),
        meas("wrong", MX_MEASURE_WRONG_RESULT, 0.5, 0),
    };
    assert_int_equal(mx_tune_choose_winner(m, 2, DEFAULT_CFG), -1);
    assert_int_equal(mx_tune_choose_winner(m, 0, DEFAULT_CFG), -1);
}

static void test_ties_within_1pct_keep_default_and_break_stably(void **state) {
    /* Within 1% of the fastest, the default keeps its place. */
    mx_measurement near[] = {
        meas("block_m=64", MX_MEASURE_OK, 0.995, 0.01),
        meas(DEFAULT_CFG, MX_MEASURE_OK, 1.000, 0.05),
    };
    assert_int_equal(mx_tune_choose_winner(near, 2, DEFAULT_CFG), 1);
    /* 2% is a real win. */
    near[0].median_ms = 0.98;
    assert_int_equal(mx_tune_choose_winner(near, 2, DEFAULT_CFG), 0);

    /* Exact ties among non-defaults: smaller spread, then smaller config. */
    mx_measurement exact[] = {
        meas(DEFAULT_CFG, MX_MEASURE_OK, 2.0, 0.01),
        meas("z", MX_MEASURE_OK, 1.0, 0.02),
        meas("b", MX_MEASURE_OK, 1.0, 0.01),
        meas("a", MX_MEASURE_OK, 1.0, 0.01),
    };
    int w = mx_tune_choose_winner(exact, 4, DEFAULT_CFG);
    assert_string_equal(exact[w].config, "a");
    /* The order of the measurements does not change the answer. */
    mx_measurement reversed[] = {exact[3], exact[2], exact[1], exact[0]};
    w = mx_tune_choose_winner(reversed, 4, DEFAULT_CFG);
    assert_string_equal(reversed[w].config, "a");
}

/* ---- sizes -------------------------------------------------------------------------- */

static void test_tops_and_input_sets(void **state) {
    mx_tune_sizes s = {.batch = 2, .heads_q = 16, .heads_kv = 16, .seq_q = 4096, .seq_k = 4096, .head_dim = 128};
    double flops = 4.0 * 2 * 16 * 4096.0 * 4096 * 128;
    assert_float_equal(mx_tune_flops(&s), flops, 1);
    assert_float_equal(mx_tune_tops(&s, 1.0), flops / 1e-3 / 1e12, 1e-6);
    s.causal = MXATTN_CAUSAL_TOP_LEFT;
    assert_float_equal(mx_tune_tops(&s, 1.0), flops / 2 / 1e-3 / 1e12, 1e-6);
    assert_float_equal(mx_tune_tops(&s, 0), 0, 0);

    size_t l2 = 50u << 20;
    assert_int_equal(mx_tune_input_sets(200u << 20, l2, 64), 1);     /* one set is already twice the L2 */
    int n = mx_tune_input_sets(4u << 20, l2, 64);
    assert_true((size_t)n * (4u << 20) > 2 * l2);
    assert_int_equal(mx_tune_input_sets(1024, l2, 64), 64);          /* capped */
    assert_float_equal(mx_tune_eta(10, 5, 15), 20, 1e-9);
    assert_float_equal(mx_tune_eta(10, 0, 15), 0, 0);
}

/* ---- runs without a GPU ------------------------------------------------------------- */

typedef struct {
    mx_gen *gen;
    pthread_mutex_t lock;
    mx_cache *cache;
    mx_jit_env env;
} fixture;

static void fixture_open(fixture *f) {
    memset(f, 0, sizeof *f);
    if (mx_gen_open(&f->gen) != MXATTN_OK) fail_msg("%s", mx_error_message());
    pthread_mutex_init(&f->lock, NULL);
    char path[128];
    db_path(path, sizeof path);
    if (mx_cache_open(path, &f->cache) != MXATTN_OK) fail_msg("%s", mx_error_message());
    f->env.gen = f->gen;
    f->env.gen_lock = &f->lock;
    f->env.cache = f->cache;
    strcpy(f->env.arch, "sm_90a");
}

static void fixture_close(fixture *f) {
    mx_cache_close(f->cache);
    mx_gen_close(f->gen);
    pthread_mutex_destroy(&f->lock);
}

#define SHAPE "family=f16 arch=sm_90a head_dim=64 dtype=bf16 out_dtype=bf16 causal=0 lse=0 align=8 gqa=1 layout=bhnd"

static mx_tune_sizes small_sizes(void) {
    mx_tune_sizes s = {.batch = 1, .heads_q = 8, .heads_kv = 8, .seq_q = 1024, .seq_k = 1024, .head_dim = 64,
                       .dtype_bytes = 2};
    return s;
}

static mx_tune_key fake_key(void) {
    mx_tune_key k;
    memset(&k, 0, sizeof k);
    strcpy(k.gpu_name, "NVIDIA H200");
    k.sm_count = 132;
    k.compute_capability = 90;
    strcpy(k.mxattn_version, MXATTN_VERSION);
    strcpy(k.family, "f16");
    k.head_dim = 64;
    strcpy(k.dtype, "bf16");
    strcpy(k.out_dtype, "bf16");
    strcpy(k.layout, "bhnd");
    k.gqa = 1;
    k.seq_bucket = 1024;
    return k;
}

/* The first n candidates the templates list for SHAPE at small_sizes(), as
 * a tuning run lists them (the default first depends on the sizes). */
static int first_candidates(fixture *f, char out[][256], int n) {
    char *text = NULL, sizes[256];
    mx_tune_sizes s = small_sizes();
    mx_tune_sizes_text(&s, sizes, sizeof sizes);
    if (mx_jit_gen_call(&f->env, "candidates", SHAPE, sizes, &text) != MXATTN_OK) fail_msg("%s", mx_error_message());
    const char *c[64];
    int got = mx_tune_split_candidates(text, c, 64, n);
    for (int i = 0; i < got; i++) snprintf(out[i], 256, "%s", c[i]);
    free(text);
    return got;
}

/* Options of a run that resumes from the stored measurements of its first `max_candidates`. */
static mx_tune_options resume_options(int max_candidates) {
    mx_tune_options opt;
    mx_tune_options_init(&opt);
    opt.max_candidates = max_candidates;
    opt.resume = 1;
    return opt;
}

static void test_measuring_without_gpu_says_so(void **state) {
    fixture f;
    fixture_open(&f);
    mx_tune_sizes s = small_sizes();
    mx_tune_key key = fake_key();
    mx_tune_options opt = resume_options(4);
    mx_tune_outcome out;
    assert_int_equal(mx_tune_run(&f.env, SHAPE, &s, &key, &opt, &out), MXATTN_ERROR_NO_DEVICE);
    assert_non_null(strstr(mx_error_message(), "compile-only"));
    mx_cache_counts counts;
    assert_int_equal(mx_cache_count(f.cache, &counts), MXATTN_OK);
    assert_int_equal(counts.measurements, 0);
    assert_int_equal(counts.tune_results, 0);
    fixture_close(&f);
}

static void test_resume_of_finished_run_needs_no_gpu(void **state) {
    fixture f;
    fixture_open(&f);
    char c[4][256];
    assert_int_equal(first_candidates(&f, c, 4), 4);
    mx_tune_key key = fake_key();
    mx_measurement stored[] = {
        meas(c[0], MX_MEASURE_OK, 1.00, 0.02),
        meas(c[1], MX_MEASURE_WRONG_RESULT, 0, 0),   /* would have been fastest: excluded */
        meas(c[2], MX_MEASURE_OUT_OF_RESOURCES, 0, 0),
        meas(c[3], MX_MEASURE_OK, 0.80, 0.01),
    };
    for (int i = 0; i < 4; i++) assert_int_equal(mx_cache_add_measurement(f.cache, &key, &stored[i]), MXATTN_OK);

    mx_tune_sizes s = small_sizes();
    mx_tune_options opt = resume_options(4);
    mx_tune_outcome out;
    if (mx_tune_run(&f.env, SHAPE, &s, &key, &opt, &out) != MXATTN_OK) fail_msg("%s", mx_error_message());
    assert_int_equal(out.skipped, 4);
    assert_int_equal(out.measured, 0);
    assert_string_equal(out.best, c[3]);
    assert_string_equal(out.default_config, c[0]);
    assert_float_equal(out.best_ms, 0.80, 1e-9);
    assert_float_equal(out.default_ms, 1.00, 1e-9);
    assert_float_equal(out.best_tops, mx_tune_tops(&s, 0.80), 1e-9);
    mx_tune_result res;
    assert_int_equal(mx_cache_get_tune(f.cache, &key, &res), MXATTN_OK);
    assert_string_equal(res.config, c[3]);
    assert_float_equal(res.default_ms, 1.00, 1e-9);

    /* A stored time for a config outside this run's list still counts. */
    mx_measurement outside = meas("variant=mma block_m=16 block_n=16 warps=1 stages=1", MX_MEASURE_OK, 0.5, 0);
    assert_int_equal(mx_cache_add_measurement(f.cache, &key, &outside), MXATTN_OK);
    if (mx_tune_run(&f.env, SHAPE, &s, &key, &opt, &out) != MXATTN_OK) fail_msg("%s", mx_error_message());
    assert_string_equal(out.best, outside.config);

    /* One more candidate than was measured: that one needs the GPU. */
    opt.max_candidates = 5;
    assert_int_equal(mx_tune_run(&f.env, SHAPE, &s, &key, &opt, &out), MXATTN_ERROR_NO_DEVICE);

    /* Every stored candidate failed: no winner, and the reason says so. */
    mx_tune_key other = key;
    other.head_dim = 80;   /* only the key matters to the cache; the shape is reused */
    for (int i = 0; i < 4; i++) {
        mx_measurement m = meas(c[i], MX_MEASURE_COMPILE_FAILED, 0, 0);
        assert_int_equal(mx_cache_add_measurement(f.cache, &other, &m), MXATTN_OK);
    }
    opt.max_candidates = 4;
    assert_int_equal(mx_tune_run(&f.env, SHAPE, &s, &other, &opt, &out), MXATTN_ERROR_NOT_FOUND);
    assert_non_null(strstr(mx_error_message(), "no candidate"));
    fixture_close(&f);
}

typedef struct { int calls, last_done, total; } progress_log;

static void log_progress(void *user, const mx_tune_progress *p) {
    progress_log *l = user;
    assert_true(p->done > l->last_done);
    l->calls++;
    l->last_done = p->done;
    l->total = p->total;
}

static void test_compile_only_fills_the_kernel_cache(void **state) {
    char version[32];
    if (mx_nvrtc_version(version, sizeof version) != MXATTN_OK) {
        print_message("# no NVRTC here: compile-only run not exercised\n");
        skip();
    }
    fixture f;
    fixture_open(&f);
    mx_tune_sizes s = small_sizes();
    mx_tune_options opt;
    mx_tune_options_init(&opt);
    opt.compile_only = 1;
    opt.max_candidates = 3;
    opt.compile_threads = 2;
    progress_log log = {0};
    opt.progress = log_progress;
    opt.user = &log;
    mx_tune_outcome out;
    if (mx_tune_run(&f.env, SHAPE, &s, NULL, &opt, &out) != MXATTN_OK) fail_msg("%s", mx_error_message());
    assert_int_equal(out.candidates, 3);
    assert_int_equal(out.compiled, 3);
    assert_int_equal(out.cache_hits, 0);
    assert_int_equal(out.compile_failed, 0);
    assert_true(out.compile_ms > 0);
    assert_int_equal(log.calls, 3);
    assert_int_equal(log.total, 3);
    mx_cache_counts counts;
    assert_int_equal(mx_cache_count(f.cache, &counts), MXATTN_OK);
    assert_int_equal(counts.kernels, 3);
    assert_int_equal(counts.measurements, 0);
    print_message("# 3 kernels compiled in %.0f ms of NVRTC, %.1f s wall\n", out.compile_ms, out.wall_s);

    /* Again: all three from the cache, NVRTC not run. */
    memset(&log, 0, sizeof log);
    if (mx_tune_run(&f.env, SHAPE, &s, NULL, &opt, &out) != MXATTN_OK) fail_msg("%s", mx_error_message());
    assert_int_equal(out.compiled, 0);
    assert_int_equal(out.cache_hits, 3);
    fixture_close(&f);
}

static void test_run_rejects_bad_arguments(void **state) {
    fixture f;
    fixture_open(&f);
    mx_tune_sizes s = small_sizes();
    mx_tune_outcome out;
    assert_int_equal(mx_tune_run(NULL, SHAPE, &s, NULL, NULL, &out), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mx_tune_run(&f.env, NULL, &s, NULL, NULL, &out), MXATTN_ERROR_NULL_POINTER);
    s.heads_kv = 3;
    assert_int_equal(mx_tune_run(&f.env, SHAPE, &s, NULL, NULL, &out), MXATTN_ERROR_INVALID_VALUE);
    s = small_sizes();
    mx_tune_options opt;
    mx_tune_options_init(&opt);
    opt.reps = 0;
    assert_int_equal(mx_tune_run(&f.env, SHAPE, &s, NULL, &opt, &out), MXATTN_ERROR_INVALID_VALUE);
    mx_tune_options_init(&opt);
    opt.settle_ms = -1;
    assert_int_equal(mx_tune_run(&f.env, SHAPE, &s, NULL, &opt, &out), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mx_error_message(), "settle_ms"));
    opt.settle_ms = NAN;
    assert_int_equal(mx_tune_run(&f.env, SHAPE, &s, NULL, &opt, &out), MXATTN_ERROR_INVALID_VALUE);
    mx_tune_options_init(&opt);
    opt.scores_std = 0;
    assert_int_equal(mx_tune_run(&f.env, SHAPE, &s, NULL, &opt, &out), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mx_error_message(), "scores_std"));
    mx_tune_options_init(&opt);
    opt.compile_only = 1;
    assert_int_equal(mx_tune_run(&f.env, "family=nope head_dim=64", &s, NULL, &opt, &out),
                     MXATTN_ERROR_INVALID_VALUE);
    fixture_close(&f);
}

/* ---- the public calls ----------------------------------------------------------------- */

static void test_query_reads_the_database_without_gpu(void **state) {
    char path[128];
    db_path(path, sizeof path);
    mx_cache *cache;
    assert_int_equal(mx_cache_open(path, &cache), MXATTN_OK);
    mx_tune_key key = fake_key();
    mx_tune_result r = {.median_ms = 0.5, .tops = 300, .default_ms = 0.6};
    strcpy(r.config, "variant=mma block_m=64 block_n=64 warps=4 stages=2");
    assert_int_equal(mx_cache_put_tune(cache, &key, &r), MXATTN_OK);
    mx_cache_close(cache);

    mxattn_options o;
    mxattn_options_init(&o);
    o.db_path = path;
    mxattn_ctx *ctx;
    assert_int_equal(mxattn_create(&ctx, &o), MXATTN_OK);
    char *json = NULL;
    assert_int_equal(mxattn_query(ctx, "family=f16 head_dim=64", &json), MXATTN_OK);
    assert_non_null(strstr(json, "block_m=64 block_n=64"));
    mxattn_free(json);
    assert_int_equal(mxattn_query(ctx, "head_dim=128", &json), MXATTN_OK);
    assert_null(strstr(json, "block_m"));
    mxattn_free(json);
    assert_int_equal(mxattn_query(ctx, "colour=blue", &json), MXATTN_ERROR_INVALID_VALUE);
    assert_null(json);
    assert_int_equal(mxattn_query(ctx, NULL, NULL), MXATTN_ERROR_NULL_POINTER);

    /* Without a GPU, tuning fails cleanly and leaves the outputs empty. */
    mxattn_problem p;
    mxattn_problem_init(&p, "f16", 64);
    char best[256] = "untouched";
    double speedup = -1;
    mxattn_status st = mxattn_tune(ctx, &p, best, sizeof best, &speedup);
    if (st == MXATTN_OK) {
        print_message("# a GPU is present: mxattn_tune ran for real (%s, %.2fx)\n", best, speedup);
    } else {
        assert_true(st == MXATTN_ERROR_NO_DRIVER || st == MXATTN_ERROR_NO_DEVICE);
        assert_string_equal(best, "");
        assert_float_equal(speedup, 0, 0);
        assert_true(strlen(mxattn_last_error()) > 0);
    }
    p.head_dim = 4;
    assert_int_equal(mxattn_tune(ctx, &p, best, sizeof best, &speedup), MXATTN_ERROR_INVALID_VALUE);
    mxattn_destroy(ctx);

    o.no_cache = 1;
    assert_int_equal(mxattn_create(&ctx, &o), MXATTN_OK);
    assert_int_equal(mxattn_query(ctx, NULL, &json), MXATTN_OK);
    assert_string_equal(json, "[]");
    mxattn_free(json);
    mxattn_destroy(ctx);
}

/* These tests get a scratch directory of their own. */
#define DIR_TEST(f) cmocka_unit_test_setup_teardown(f, make_dir, remove_dir)

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seq_bucket_rule),
        cmocka_unit_test(test_split_candidates_keeps_default_first_and_caps),
        cmocka_unit_test(test_prune_by_resources),
        cmocka_unit_test(test_stats_median_and_spread),
        cmocka_unit_test(test_compare_fails_nan_outlier_and_bias_but_passes_noise),
        cmocka_unit_test(test_tolerance_follows_p_format),
        cmocka_unit_test(test_winner_is_fastest_ok),
        cmocka_unit_test(test_failed_candidates_never_win),
        cmocka_unit_test(test_all_failed_has_no_winner),
        cmocka_unit_test(test_ties_within_1pct_keep_default_and_break_stably),
        cmocka_unit_test(test_tops_and_input_sets),
        DIR_TEST(test_measuring_without_gpu_says_so),
        DIR_TEST(test_resume_of_finished_run_needs_no_gpu),
        DIR_TEST(test_compile_only_fills_the_kernel_cache),
        DIR_TEST(test_run_rejects_bad_arguments),
        DIR_TEST(test_query_reads_the_database_without_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
