/* The f16 family's wgmma variant (sm_90a: warpgroup MMA fed by TMA) against
 * the fp64 CPU reference, with explicit configurations: head dims 64..256,
 * ragged lengths, both causal alignments, grouped-query heads, both layouts
 * with padded strides (padding a multiple of 8 elements, so align stays 8),
 * the LSE; then a timing print against the default (mma.sync) plan.
 * overlap=1 (two consumer warpgroups taking turns, block_m=128 warps=12) has
 * the same checks, and speed lines beside overlap=0.  A watchdog ends the
 * process if a case runs for minutes (a warpgroup waiting on a barrier
 * forever).  An argument filters the tests by name: `gpu_wgmma '*overlap*'`;
 * the speed prints run only when named (`gpu_wgmma '*speed*'`).
 * Skips (77) without a GPU, and without an sm_90 one. */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "support/gpu_harness.h"
#include "util/err.h"

static mx_device g_dev;
static mxattn_ctx *g_ctx;

#define BF16_REL_L1 3e-3
#define F16_REL_L1 1e-3
#define LSE_TOL 1e-3
#define WG "variant=wgmma q_regs=0 "

/* ---- watchdog ---- */

static char g_running[400];

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "\nTIMEOUT: a case ran for minutes (a kernel waiting on a barrier forever?): ";
    ssize_t ignored = write(1, msg, sizeof msg - 1);
    ignored = write(1, g_running, strlen(g_running));
    ignored = write(1, "\n", 1);
    (void)ignored;
    _exit(1);
}

static void watch(int seconds, const char *what, const char *config) {
    snprintf(g_running, sizeof g_running, "%s {%s}", what, config ? config : "default");
    alarm((unsigned)seconds);
}

/* ---- a local copy of the harness's runner, taking a configuration string ---- */

static int check_case(const gpu_case *c, const char *config, uint64_t seed) {
    char what[256];
    gpu_result r;
    gpu_case_describe(c, what, sizeof what);
    watch(180, what, config);
    gpu_case with_config = *c;
    with_config.config = config;
    mxattn_status st = gpu_run_case(g_ctx, &g_dev, &with_config, seed, NULL, &r);
    if (st != MXATTN_OK) {
        printf("FAIL %s {%s}: %s: %s\n", what, config, mxattn_status_string(st), mxattn_last_error());
        return 1;
    }
    double tol = c->dtype == MXATTN_BF16 ? BF16_REL_L1 : F16_REL_L1;
    int ok = r.unwritten == 0 && r.o.rel_l1 < tol && (!c->lse || r.lse_max_abs < LSE_TOL);
    printf("%s %s [%s]: rel_l1 %.2e cos %.6f max_abs %.2e lse %.1e unwritten %ld, %.3f ms\n", ok ? "ok  " : "FAIL",
           what, r.config, r.o.rel_l1, r.o.cosine, r.o.max_abs, r.lse_max_abs, r.unwritten, r.ms);
    return !ok;
}

/* A configuration that fits the head dim (128-key tiles up to D=128), with
 * and without the producer warpgroup (warps = 4 * consumers + 4). */
static const char *config_for(int d, int i) {
    static const char *small[] = {WG "block_m=128 warps=8 block_n=128 stages=2", WG "block_m=128 warps=12 block_n=128 stages=2",
                                  WG "block_m=64 warps=4 block_n=64 stages=3", WG "block_m=64 warps=8 block_n=64 stages=2"};
    static const char *large[] = {WG "block_m=128 warps=8 block_n=64 stages=2", WG "block_m=128 warps=12 block_n=64 stages=2",
                                  WG "block_m=64 warps=4 block_n=64 stages=2", WG "block_m=128 warps=8 block_n=32 stages=2"};
    return d <= 128 ? small[i % 4] : large[i % 4];
}

/* ---- tests ---- */

/* The smallest case first: one tile, one warpgroup, no masking but the tail. */
static void test_smoke_one_tile_then_two_warpgroups_match_reference(void **state) {
    gpu_case c = {.family = "f16", .batch = 1, .heads_q = 1, .heads_kv = 1, .seq_q = 64, .seq_k = 64, .head_dim = 64,
                  .dtype = MXATTN_BF16, .layout = MXATTN_LAYOUT_BHND, .lse = 1};
    assert_int_equal(check_case(&c, WG "block_m=64 warps=4 block_n=64 stages=2", 1), 0);
    c.head_dim = 128; c.seq_q = 200; c.seq_k = 300;
    assert_int_equal(check_case(&c, WG "block_m=128 warps=8 block_n=64 stages=2", 2), 0);
}

static const int HEAD_DIMS[] = {8, 24, 32, 40, 56, 64, 72, 80, 96, 128, 192, 256};
#define N_HEAD_DIMS (int)(sizeof HEAD_DIMS / sizeof *HEAD_DIMS)

/* Every head dim (all three swizzle widths), each with its own mix of the rest. */
static void test_head_dims_each_swizzle_width_matches_reference(void **state) {
    int failures = 0;
    for (int i = 0; i < N_HEAD_DIMS; i++)
        for (int rep = 0; rep < 3; rep++) {
            gpu_case c = gpu_head_dim_case("f16", HEAD_DIMS[i], i + rep);
            failures += check_case(&c, config_for(c.head_dim, rep), gpu_seed_base() + 10 * i + rep);
        }
    assert_int_equal(failures, 0);
}

/* Ragged lengths that fill no tile, Nq != Nk, and both causal alignments. */
static void test_lengths_ragged_match_reference_under_both_alignments(void **state) {
    assert_int_equal(gpu_check_lengths("f16", 5, config_for, check_case, 100), 0);
}

/* Grouped-query heads with batch, both layouts, padded strides, bottom-right causal. */
static void test_gqa_grouped_heads_match_reference(void **state) {
    assert_int_equal(gpu_check_gqa("f16", 3, 96, config_for, check_case, 200), 0);
}

/* Every key-tile width and ring depth at D=128, causal, over several tiles. */
static void test_configs_every_tile_width_and_depth_match_reference(void **state) {
    static const char *configs[] = {
        WG "block_m=128 warps=8 block_n=16 stages=2", WG "block_m=128 warps=8 block_n=32 stages=3",
        WG "block_m=128 warps=8 block_n=64 stages=3", WG "block_m=128 warps=8 block_n=128 stages=2",
        WG "block_m=64 warps=4 block_n=16 stages=3",  WG "block_m=64 warps=4 block_n=128 stages=3",
        WG "block_m=128 warps=12 block_n=16 stages=3", WG "block_m=128 warps=12 block_n=128 stages=2",
        WG "block_m=64 warps=8 block_n=32 stages=3"};
    int failures = 0;
    for (int i = 0; i < 9; i++) {
        gpu_case c = gpu_tile_sweep_case("f16", i);
        c.causal = (mxattn_causal)(1 + i % 2);   /* top-left and bottom-right only */
        failures += check_case(&c, configs[i], gpu_seed_base() + 300 + i);
    }
    assert_int_equal(failures, 0);
}

/* block_m=192 (three consumer warpgroups on one K/V stream, D <= 64), with
 * and without the producer: row counts that leave a block's last warpgroups
 * without rows, every causal mode, GQA. */
static void test_three_consumers_match_reference_with_idle_warpgroups(void **state) {
    static const char *configs[] = {WG "block_m=192 warps=16 block_n=128 stages=2", WG "block_m=192 warps=12 block_n=128 stages=3",
                                    WG "block_m=192 warps=16 block_n=64 stages=3"};
    static const int seq_q[] = {333, 200, 1000}, seq_k[] = {1000, 777, 130};
    int failures = 0;
    for (int i = 0; i < 3; i++) {
        gpu_case c = gpu_tile_sweep_case("f16", i);
        c.head_dim = 64;
        c.seq_q = seq_q[i];
        c.seq_k = seq_k[i];
        failures += check_case(&c, configs[i], gpu_seed_base() + 500 + i);
    }
    assert_int_equal(failures, 0);
}

/* D=128, one head of 4097 queries and keys, top-left causal, bf16, the LSE. */
static gpu_case long_causal_case(void) {
    return (gpu_case){.family = "f16", .batch = 1, .heads_q = 1, .heads_kv = 1, .seq_q = 4097, .seq_k = 4097,
                      .head_dim = 128, .causal = MXATTN_CAUSAL_TOP_LEFT, .dtype = MXATTN_BF16,
                      .layout = MXATTN_LAYOUT_BNHD, .lse = 1};
}

/* One long causal sequence: many blocks per head and many key tiles per block. */
static void test_long_causal_sequence_matches_reference(void **state) {
    gpu_case c = long_causal_case();
    assert_int_equal(check_case(&c, config_for(128, 0), gpu_seed_base() + 400), 0);
    assert_int_equal(check_case(&c, config_for(128, 1), gpu_seed_base() + 401), 0);
}

/* B=4 H=32 N=4096 D=128 bf16: TOPS = 4 B H N^2 D / t (halved for causal), wgmma vs the default plan. */
static void test_speed_prints_wgmma_tops_beside_the_default(void **state) {
    const int B = 4, H = 32, N = 4096, D = 128;
    void *buf[4];
    watch(300, "test_speed_prints_wgmma_tops_beside_the_default", NULL);
    gpu_gaussian_buffers(&g_dev, 4, (size_t)B * H * N * D, buf);
    for (int causal = 0; causal < 2; causal++) {
        double flops;
        mxattn_problem p = gpu_speed_problem("f16", D, B, H, N, causal, &flops);
        static const char *configs[] = {NULL, WG "block_m=128 warps=8 block_n=128 stages=2",
                                        WG "block_m=128 warps=8 block_n=64 stages=3",
                                        WG "block_m=128 warps=12 block_n=128 stages=2",
                                        WG "block_m=128 warps=12 block_n=64 stages=3",
                                        WG "block_m=128 warps=12 block_n=128 stages=3"};
        for (int i = 0; i < 6; i++) {
            char used[320] = "";
            double ms = gpu_time_plan(g_ctx, &g_dev, &p, configs[i], buf[0], buf[1], buf[2], buf[3], used, sizeof used);
            printf("speed B=%d H=%d N=%d D=%d causal=%d %-9s [%s]: %.3f ms, %.1f TOPS\n", B, H, N, D, causal,
                   configs[i] ? "wgmma" : "default", used, ms, ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0);
        }
    }
    gpu_free_buffers(&g_dev, 4, buf);
}

/* ---- overlap=1: the two consumer warpgroups take turns on the tensor cores ---- */

#define PP WG "overlap=1 block_m=128 warps=12 "

/* The legal overlap=1 tiles for a head dim (block_n x stages within shared memory). */
static const char *pp_config_for(int d, int i) {
    static const char *small[] = {PP "block_n=128 stages=3", PP "block_n=64 stages=2", PP "block_n=128 stages=2",
                                  PP "block_n=32 stages=3"};
    static const char *large[] = {PP "block_n=64 stages=2", PP "block_n=32 stages=3", PP "block_n=32 stages=2",
                                  PP "block_n=16 stages=3"};
    return d <= 128 ? small[i % 4] : large[i % 4];
}

/* One key tile (both warpgroups take one turn), then a few, then the kernel
 * the tuner will try first at D=128. */
static void test_overlap_smoke_one_turn_then_many_match_reference(void **state) {
    gpu_case c = {.family = "f16", .batch = 1, .heads_q = 1, .heads_kv = 1, .seq_q = 128, .seq_k = 64, .head_dim = 128,
                  .dtype = MXATTN_BF16, .layout = MXATTN_LAYOUT_BHND, .lse = 1};
    assert_int_equal(check_case(&c, PP "block_n=128 stages=3", 1), 0);
    c.seq_q = 200; c.seq_k = 300;
    assert_int_equal(check_case(&c, PP "block_n=64 stages=2", 2), 0);
    c.seq_q = c.seq_k = 1024; c.causal = MXATTN_CAUSAL_TOP_LEFT;
    assert_int_equal(check_case(&c, PP "block_n=128 stages=3", 3), 0);
}

/* Head dims 64..256 (every swizzle width), each with its own mix of causal
 * alignment, GQA, layout, padding, dtype and LSE. */
static void test_overlap_head_dims(void **state) {
    static const int dims[] = {64, 80, 96, 128, 192, 256};
    int failures = 0;
    for (int i = 0; i < 6; i++)
        for (int rep = 0; rep < 3; rep++) {
            gpu_case c = gpu_head_dim_case("f16", dims[i], i + rep);
            failures += check_case(&c, pp_config_for(c.head_dim, rep), gpu_seed_base() + 500 + 10 * i + rep);
        }
    assert_int_equal(failures, 0);
}

/* Ragged lengths (blocks with no key tile at all under bottom-right causal,
 * one tile, many), Nq != Nk, both causal alignments, always with the LSE. */
static void test_overlap_lengths_ragged_match_reference_with_lse(void **state) {
    assert_int_equal(gpu_check_lengths("f16", 5, pp_config_for, check_case, 600), 0);
}

/* Grouped-query heads with batch, both layouts, padded strides, both causal alignments. */
static void test_overlap_gqa_grouped_heads_match_reference(void **state) {
    static const int gqa[] = {1, 4, 8};
    int failures = 0;
    for (int i = 0; i < 6; i++) {
        gpu_case c = {.family = "f16", .batch = 3, .heads_kv = 2, .heads_q = 2 * gqa[i % 3], .seq_q = 200, .seq_k = 333,
                      .head_dim = i % 3 == 1 ? 192 : 128,
                      .causal = i < 3 ? MXATTN_CAUSAL_BOTTOM_RIGHT : MXATTN_CAUSAL_TOP_LEFT,
                      .dtype = i == 4 ? MXATTN_F16 : MXATTN_BF16, .layout = (mxattn_layout)(i % 2), .pad = 8 * (i % 3),
                      .lse = 1};
        failures += check_case(&c, pp_config_for(c.head_dim, i), gpu_seed_base() + 700 + i);
    }
    assert_int_equal(failures, 0);
}

/* Every key-tile width and ring depth at D=128, causal both ways, many turns. */
static void test_overlap_configs_every_tile_and_depth_match_reference(void **state) {
    static const char *configs[] = {PP "block_n=16 stages=2", PP "block_n=16 stages=3", PP "block_n=32 stages=2",
                                    PP "block_n=32 stages=3", PP "block_n=64 stages=2", PP "block_n=64 stages=3",
                                    PP "block_n=128 stages=2", PP "block_n=128 stages=3"};
    int failures = 0;
    for (int i = 0; i < 8; i++) {
        gpu_case c = gpu_tile_sweep_case("f16", i);
        failures += check_case(&c, configs[i], gpu_seed_base() + 800 + i);
    }
    assert_int_equal(failures, 0);
}

/* One long causal sequence: many blocks per head, up to 33 turns per block. */
static void test_overlap_long_sequence_of_many_turns_matches_reference(void **state) {
    gpu_case c = long_causal_case();
    assert_int_equal(check_case(&c, PP "block_n=128 stages=3", gpu_seed_base() + 900), 0);
    c.causal = MXATTN_CAUSAL_NONE;
    assert_int_equal(check_case(&c, PP "block_n=64 stages=2", gpu_seed_base() + 901), 0);
}

/* Key tiles that are not a power of two (96, 160, 176, 192: an MMA N of any
 * multiple of 8), with both schedules, at D=128 (three swizzle panels of
 * 176 rows) and D=64; seq_k=1000 fills none of them. */
static void test_wide_key_tiles(void **state) {
    static const char *configs[] = {PP "block_n=176 stages=2", PP "block_n=192 stages=2", PP "block_n=160 stages=2",
                                    PP "block_n=96 stages=3", WG "block_m=128 warps=12 block_n=176 stages=2",
                                    WG "block_m=64 warps=4 block_n=192 stages=2", WG "block_m=128 warps=8 block_n=96 stages=2"};
    int failures = 0;
    for (int i = 0; i < 7; i++) {
        gpu_case c = gpu_tile_sweep_case("f16", i);
        if (i >= 5) c.head_dim = 64;
        failures += check_case(&c, configs[i], gpu_seed_base() + 850 + i);
    }
    assert_int_equal(failures, 0);
}

/* persistent=1: more work units than the H200's 132 SMs (so each block runs
 * several, and the ring, Q's buffer and the turns carry over), units whose
 * rows see no key (bottom-right causal, Nq > Nk), a unit of one key tile;
 * each plan run three times, the last one checked. */
static void test_persistent_units_across_repeat_runs_match_reference(void **state) {
#define PS PP "persistent=1 "
    static const struct { gpu_case c; const char *config; } cases[] = {
        {{.batch = 2, .heads_q = 8, .heads_kv = 2, .seq_q = 1100, .seq_k = 900, .head_dim = 128},
         PS "block_n=128 stages=2"},
        {{.batch = 2, .heads_q = 8, .heads_kv = 2, .seq_q = 1100, .seq_k = 900, .head_dim = 128,
          .causal = MXATTN_CAUSAL_TOP_LEFT},
         PS "block_n=176 stages=2"},
        {{.batch = 2, .heads_q = 8, .heads_kv = 8, .seq_q = 1100, .seq_k = 300, .head_dim = 128,
          .causal = MXATTN_CAUSAL_BOTTOM_RIGHT},
         PS "block_n=128 stages=3"},
        {{.batch = 3, .heads_q = 16, .heads_kv = 16, .seq_q = 700, .seq_k = 1000, .head_dim = 64},
         PS "block_n=192 stages=2"},
        {{.batch = 1, .heads_q = 1, .heads_kv = 1, .seq_q = 1, .seq_k = 17, .head_dim = 96,
          .causal = MXATTN_CAUSAL_BOTTOM_RIGHT},
         PS "block_n=64 stages=2"},
        /* split=1 on 132 SMs: 6 units in 6 pieces each, the second warpgroup
         * of the last row block with padding rows only; 8 units in 2, the
         * last tile masked; and a problem with more units than blocks, which
         * the split kernel runs whole. */
        {{.batch = 1, .heads_q = 2, .heads_kv = 2, .seq_q = 300, .seq_k = 3000, .head_dim = 128},
         PS "split=1 block_n=128 stages=3"},
        {{.batch = 1, .heads_q = 4, .heads_kv = 2, .seq_q = 130, .seq_k = 1100, .head_dim = 64},
         PS "split=1 block_n=128 stages=2"},
        {{.batch = 2, .heads_q = 8, .heads_kv = 2, .seq_q = 1100, .seq_k = 900, .head_dim = 128},
         PS "split=1 block_n=128 stages=2"},
    };
    int failures = 0;
    for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
        gpu_case c = cases[i].c;
        c.family = "f16";
        c.dtype = i % 2 ? MXATTN_F16 : MXATTN_BF16;
        c.layout = (mxattn_layout)(i / 2 % 2);
        c.pad = 8 * (i % 2);
        c.lse = 1;
        c.launches = 3;   /* the unit counters must be back at zero for each run */
        failures += check_case(&c, cases[i].config, gpu_seed_base() + 870 + i);
    }
    assert_int_equal(failures, 0);
#undef PS
}

/* mxattn_candidates lists first what a plan without a tuned configuration
 * builds, with this GPU's SM count (its header promises it; it once asked
 * the templates without the count): a small f16 problem whose
 * default splits its row blocks along the keys, f16's one-warpgroup and
 * warp-specialized defaults, int8-fp8's. */
static void test_candidates_start_with_the_plans_default(void **state) {
    (void)state;
    static const struct { const char *family; int d, batch, heads, seq; } cases[] = {
        {"f16", 128, 1, 8, 1024}, {"f16", 64, 4, 32, 1024}, {"f16", 128, 4, 32, 4096}, {"int8-fp8", 128, 4, 32, 4096}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        mxattn_problem p;
        mxattn_problem_init(&p, cases[i].family, cases[i].d);
        p.batch = cases[i].batch; p.heads_q = p.heads_kv = cases[i].heads; p.seq_q = p.seq_k = cases[i].seq;
        mxattn_plan *plan = NULL;
        mxattn_plan_info info;
        char *first[1] = {NULL};
        int n = 0;
        if (mxattn_plan_create(g_ctx, &p, NULL, &plan) != MXATTN_OK) fail_msg("plan: %s", mxattn_last_error());
        assert_int_equal(mxattn_plan_get_info(plan, &info), MXATTN_OK);
        if (mxattn_candidates(g_ctx, &p, first, 1, &n) != MXATTN_OK) fail_msg("candidates: %s", mxattn_last_error());
        printf("# %s D=%d B=%d H=%d N=%d: plan (%s) %s | first of %d candidates %s\n", cases[i].family, cases[i].d,
               cases[i].batch, cases[i].heads, cases[i].seq, info.config_source, info.config, n, first[0]);
        assert_string_equal(info.config_source, "default");
        assert_string_equal(info.config, first[0]);
        mxattn_free(first[0]);
        mxattn_plan_destroy(plan);
    }
}

/* B=4 H=32 D=128 bf16 at N=4096 and 16384, causal and not: each overlap=1
 * tile beside the same tile with overlap=0 (the D=128 winner first). */
static void test_overlap_speed_prints_each_tile_beside_overlap_0(void **state) {
    const int B = 4, H = 32, D = 128, NMAX = 16384;
    void *buf[4];
    gpu_gaussian_buffers(&g_dev, 4, (size_t)B * H * NMAX * D, buf);
    static const char *tiles[] = {"block_n=128 stages=3", "block_n=176 stages=2", "block_n=64 stages=2"};
    for (int n = 4096; n <= NMAX; n *= 4)
        for (int causal = 0; causal < 2; causal++) {
            double flops;
            mxattn_problem p = gpu_speed_problem("f16", D, B, H, n, causal, &flops);
            for (int i = 0; i < 3; i++)
                for (int overlap = 0; overlap < 2; overlap++) {
                    char config[160], used[320] = "";
                    snprintf(config, sizeof config, WG "overlap=%d block_m=128 warps=12 %s", overlap, tiles[i]);
                    watch(300, "test_overlap_speed_prints_each_tile_beside_overlap_0", config);
                    double ms = gpu_time_plan(g_ctx, &g_dev, &p, config, buf[0], buf[1], buf[2], buf[3], used, sizeof used);
                    printf("speed B=%d H=%d N=%d D=%d causal=%d overlap=%d [%s]: %.3f ms, %.1f TOPS\n", B, H, n, D,
                           causal, overlap, used, ms, ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0);
                }
        }
    alarm(0);
    gpu_free_buffers(&g_dev, 4, buf);
}

int main(int argc, char **argv) {
    signal(SIGALRM, on_alarm);
    gpu_open_or_skip(&g_dev, "gpu_wgmma");
    if (g_dev.cc_major != 9) {
        printf("gpu_wgmma: skipped, needs an sm_90 GPU (this one is sm_%d%d)\n", g_dev.cc_major, g_dev.cc_minor);
        mx_device_close(&g_dev);
        return MX_TEST_SKIP;
    }
    mxattn_options opts;
    mxattn_options_init(&opts);
    opts.no_cache = 1;
    opts.tune_policy = "off";   /* plans without a config build the default, whatever $MXATTN_TUNE says */
    if (mxattn_create(&g_ctx, &opts) != MXATTN_OK) {
        printf("mxattn_create: %s\n", mxattn_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smoke_one_tile_then_two_warpgroups_match_reference),
        cmocka_unit_test(test_head_dims_each_swizzle_width_matches_reference),
        cmocka_unit_test(test_lengths_ragged_match_reference_under_both_alignments),
        cmocka_unit_test(test_gqa_grouped_heads_match_reference),
        cmocka_unit_test(test_configs_every_tile_width_and_depth_match_reference),
        cmocka_unit_test(test_long_causal_sequence_matches_reference),
        cmocka_unit_test(test_speed_prints_wgmma_tops_beside_the_default),
        cmocka_unit_test(test_overlap_smoke_one_turn_then_many_match_reference),
        cmocka_unit_test(test_overlap_head_dims),
        cmocka_unit_test(test_overlap_lengths_ragged_match_reference_with_lse),
        cmocka_unit_test(test_overlap_gqa_grouped_heads_match_reference),
        cmocka_unit_test(test_overlap_configs_every_tile_and_depth_match_reference),
        cmocka_unit_test(test_overlap_long_sequence_of_many_turns_matches_reference),
        cmocka_unit_test(test_wide_key_tiles),
        cmocka_unit_test(test_persistent_units_across_repeat_runs_match_reference),
        cmocka_unit_test(test_three_consumers_match_reference_with_idle_warpgroups),
        cmocka_unit_test(test_candidates_start_with_the_plans_default),
        cmocka_unit_test(test_overlap_speed_prints_each_tile_beside_overlap_0),
    };
    int rc = gpu_run_tests("gpu_wgmma", tests, sizeof tests / sizeof tests[0], argc, argv);
    alarm(0);
    mxattn_destroy(g_ctx);
    mx_device_close(&g_dev);
    return rc;
}
