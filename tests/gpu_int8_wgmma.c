/* The int8-fp8 family's wgmma variant (sm_90a: S = Q8 K8^T and O += P V^T on
 * warpgroup MMAs fed by TMA from the workspace) on a GPU, with explicit
 * configurations:
 *  1. a smoke case first (one small problem per kernel kind), with a
 *     diagnosis of where the error sits when it fails;
 *  2. head dims 64-256 (every swizzle width of Q8/K8 and V^T), ragged
 *     lengths, both causal alignments, grouped-query heads, both layouts with
 *     padded strides, the LSE: against the quantized-pipeline reference
 *     configured as the kernel quantizes (Q per 16 rows, K per 16 keys, P per
 *     key tile of the config's block_n, q_prescale), tightly, and against
 *     fp64 within the family's bounds (tests/gpu_int8.c's);
 *  3. a speed print, B=4 H=32 N=4096 and 16384, D=128 and 64, causal or
 *     not: wgmma configurations against the default plan (only when named:
 *     `gpu_int8_wgmma '*speed*'`);
 *  4. blocks_per_sm=4 (the one-warpgroup kernel compiled for more blocks an
 *     SM, D <= 64): the same checks (`gpu_int8_wgmma '*more_blocks*'`);
 *  5. rowsum_mma=1 (the row sums by MMA): against the pipeline reference that
 *     sums P as E4M3 (`gpu_int8_wgmma '*rowsum*'`);
 *  6. overlap=3 (three consumer warpgroups passing the tensor pipe around):
 *     the same checks (`gpu_int8_wgmma '*ring*'`).
 * The quantization kernels are shared with the mma variant; tests/gpu_int8.c
 * checks them bit for bit.  Skips (77) without a GPU, and without an sm_90 one.
 * A watchdog ends the process if one case takes minutes (a kernel that waits
 * on an mbarrier or a named barrier forever).  An argument filters the tests
 * by name: `gpu_int8_wgmma '*ring*'`; ctest runs it in two halves
 * (`--part 1/2`, `--part 2/2`: gpu_run_tests). */
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
#include "support/ref_parallel.h"
#include "util/err.h"

static mx_device g_dev;
static mxattn_ctx *g_ctx;

#define WG "variant=wgmma "

/* Bounds: the INT8 families' (tests/support/gpu_harness.h), for int8-fp8. */

/* ---- watchdog ---- */

static char g_running[320];

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "\nTIMEOUT: a case ran for minutes (a kernel waiting on an mbarrier forever?): ";
    ssize_t ignored = write(1, msg, sizeof msg - 1);
    ignored = write(1, g_running, strlen(g_running));
    ignored = write(1, "\n", 1);
    (void)ignored;
    _exit(1);
}

static void watch(int seconds, const char *what) {
    snprintf(g_running, sizeof g_running, "%s", what);
    alarm((unsigned)seconds);
}

/* Where the error sits, for a failing case: by warp of the warpgroup (row /
 * 16 % 4), by fragment half (row % 16 < 8), by column pair in an 8-column
 * chunk (col % 8 / 2), by key-free columns past the 16-aligned part; and the
 * worst element.  A layout or descriptor bug shows as one bucket failing. */
static void diagnose(const gpu_case *c, const float *got, const double *ref, const gpu_result *pipe) {
    if (pipe->o.rel_l1 < (c->dtype == MXATTN_BF16 ? PIPE_REL_L1_BF16 : PIPE_REL_L1_F16)) return;
    double err[4][2] = {{0}}, mag[4][2] = {{0}}, cerr[4] = {0}, cmag[4] = {0}, worst = -1;
    size_t at = 0;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads_q; h++)
            for (int i = 0; i < c->seq_q; i++)
                for (int d = 0; d < c->head_dim; d++) {
                    size_t x = (((size_t)b * c->heads_q + h) * c->seq_q + i) * c->head_dim + d;
                    double e = fabs(got[x] - ref[x]), m = fabs(ref[x]);
                    if (isnan(e)) e = 1e30;
                    err[i / 16 % 4][i % 16 >= 8] += e; mag[i / 16 % 4][i % 16 >= 8] += m;
                    cerr[d % 8 / 2] += e; cmag[d % 8 / 2] += m;
                    if (e > worst) { worst = e; at = x; }
                }
    printf("    rel_l1 by warp (rows g | g+8):");
    for (int w = 0; w < 4; w++) printf("  w%d %.2e | %.2e", w, err[w][0] / (mag[w][0] + 1e-30), err[w][1] / (mag[w][1] + 1e-30));
    printf("\n    rel_l1 by column pair in 8:");
    for (int p = 0; p < 4; p++) printf("  %d: %.2e", p, cerr[p] / (cmag[p] + 1e-30));
    int d = (int)(at % c->head_dim), i = (int)(at / c->head_dim % c->seq_q);
    printf("\n    worst: row %d col %d got %g want %g\n", i, d, got[at], ref[at]);
}

/* gpu_run_two_refs under an explicit configuration, against the quantized
 * pipeline as the config quantizes; `verbose`: diagnose a pipeline failure. */
static mxattn_status run_case(const gpu_case *c, const char *config, uint64_t seed, int verbose, gpu_two_refs *r) {
    gpu_case with = *c;
    with.config = config;
    return gpu_run_two_refs(g_ctx, &g_dev, &with, seed, gpu_int8_pipeline_reference, verbose ? diagnose : NULL, r);
}

static int check_case(const gpu_case *c, const char *config, uint64_t seed) {
    char what[256];
    gpu_two_refs t;
    gpu_case_describe(c, what, sizeof what);
    char running[320];
    snprintf(running, sizeof running, "%s {%s}", what, config);
    watch(180, running);
    mxattn_status st = run_case(c, config, seed, 1, &t);
    alarm(0);
    if (st != MXATTN_OK) return 1;
    const gpu_result *r = &t.pipe, *e = &t.exact;
    /* No allowance for the key count: each key tile's P V is added to O in
     * fp32 (test_long_rows_of_16k_keys_do_not_drift_from_reference says
     * why), so long rows meet the same bound. */
    double pipe_tol = c->dtype == MXATTN_BF16 ? PIPE_REL_L1_BF16 : PIPE_REL_L1_F16;
    long rows = (long)c->batch * c->heads_q * c->seq_q;
    int ok_pipe = r->unwritten == 0 && r->o.rel_l1 < pipe_tol && r->o.cosine > PIPE_COS &&
                  (!c->lse || gpu_lse_matches_pipeline(r->lse_max_abs, r->lse_rows_over, rows));
    gpu_bounds exact = gpu_exact_bounds(FP8_FAMILY_REL_L1, FP8_FAMILY_COS, t.design, pipe_tol);
    int ok_exact = e->o.cosine >= exact.cos && e->o.rel_l1 <= exact.rel_l1 && (!c->lse || e->lse_max_abs < LSE_VS_FP64);
    printf("%s %s [%s] seed %llu: pipeline rel_l1 %.2e cos %.7f lse %.1e (%ld rows > %.0e) | fp64 rel_l1 %.4f (bound %.4f)"
           " cos %.6f lse %.1e | unwritten %ld, %.3f ms\n", ok_pipe && ok_exact ? "ok  " : "FAIL", what, r->config,
           (unsigned long long)seed, r->o.rel_l1, r->o.cosine, r->lse_max_abs, r->lse_rows_over, GPU_LSE_VS_PIPE,
           e->o.rel_l1, exact.rel_l1, e->o.cosine, e->lse_max_abs, r->unwritten, r->ms);
    fflush(stdout);
    return !(ok_pipe && ok_exact);
}

/* Configurations that fit the head dim: with and without the producer
 * warpgroup, one or two consumers, every block_n, 2 or 3 stages. */
static const char *config_for(int d, int i) {
    static const char *small[] = {WG "block_m=128 warps=12 block_n=128 stages=2", WG "block_m=128 warps=8 block_n=64 stages=2",
                                  WG "block_m=64 warps=4 block_n=128 stages=3", WG "block_m=64 warps=8 block_n=32 stages=2",
                                  WG "block_m=128 warps=12 block_n=64 stages=3"};
    static const char *large[] = {WG "block_m=128 warps=12 block_n=64 stages=2", WG "block_m=128 warps=8 block_n=64 stages=2",
                                  WG "block_m=64 warps=4 block_n=32 stages=2", WG "block_m=64 warps=8 block_n=64 stages=3",
                                  WG "block_m=128 warps=12 block_n=32 stages=3"};
    return d <= 128 ? small[i % 5] : large[i % 5];
}

/* ---- tests ---- */

/* The smallest cases first: one tile and one warpgroup (no producer), then
 * two consumers and a producer over a few tiles, then D=64's 64-byte panels. */
static void test_smoke_one_tile_then_producer_kernels_match_reference(void **state) {
    gpu_case c = {.family = "int8-fp8", .batch = 1, .heads_q = 1, .heads_kv = 1, .seq_q = 64, .seq_k = 64,
                  .head_dim = 128, .dtype = MXATTN_BF16, .layout = MXATTN_LAYOUT_BHND, .lse = 1};
    int failures = check_case(&c, WG "block_m=64 warps=4 block_n=64 stages=2", 1);
    c.seq_q = 200; c.seq_k = 300;
    failures += check_case(&c, WG "block_m=128 warps=12 block_n=128 stages=2", 2);
    c.head_dim = 64;
    failures += check_case(&c, WG "block_m=128 warps=8 block_n=64 stages=2", 3);
    assert_int_equal(failures, 0);
}

static const int HEAD_DIMS[] = {64, 80, 96, 128, 144, 256};
#define N_HEAD_DIMS (int)(sizeof HEAD_DIMS / sizeof *HEAD_DIMS)

/* Every head dim (Q8/K8 panels of 64, 32, 32, 128, 32 and 2 x 128 bytes; P V
 * in two column slices above 128), each with its own mix of the rest. */
static void test_head_dims_each_panel_width_matches_reference(void **state) {
    int failures = 0;
    for (int i = 0; i < N_HEAD_DIMS; i++)
        for (int rep = 0; rep < 3; rep++) {
            gpu_case c = gpu_head_dim_case("int8-fp8", HEAD_DIMS[i], i + rep);
            failures += check_case(&c, config_for(c.head_dim, i + rep), gpu_seed_base() + 10 * i + rep);
        }
    assert_int_equal(failures, 0);
}

/* Ragged lengths that fill no tile, Nq != Nk, and both causal alignments. */
static void test_lengths_and_causal(void **state) {
    assert_int_equal(gpu_check_lengths("int8-fp8", 4, config_for, check_case, 100), 0);
}

/* Grouped-query heads with batch, both layouts, padded strides, bottom-right causal. */
static void test_gqa_grouped_heads_match_reference(void **state) {
    assert_int_equal(gpu_check_gqa("int8-fp8", 2, 64, config_for, check_case, 200), 0);
}

/* One longer causal sequence: many blocks per head and many key tiles per block
 * (the ring wraps many times; mbarrier parities flip). */
static void test_long_sequence_wrapping_the_ring_matches_reference(void **state) {
    gpu_case c = {.family = "int8-fp8", .batch = 1, .heads_q = 2, .heads_kv = 1, .seq_q = 2049, .seq_k = 2049,
                  .head_dim = 128, .causal = MXATTN_CAUSAL_TOP_LEFT, .dtype = MXATTN_BF16,
                  .layout = MXATTN_LAYOUT_BNHD, .lse = 1};
    int failures = check_case(&c, WG "block_m=128 warps=12 block_n=128 stages=2", gpu_seed_base() + 400);
    c.causal = MXATTN_CAUSAL_NONE;
    failures += check_case(&c, WG "block_m=128 warps=8 block_n=64 stages=3", gpu_seed_base() + 401);
    assert_int_equal(failures, 0);
}

/* B=4 H=32, N=4096 and 16384, D=128 and 64, bf16, causal and not: TOPS =
 * 4 B H N^2 D / t (halved for causal) of the whole plan (stats + quant +
 * attention) for each configuration (NULL: the default plan), printed with
 * the configuration the plan used. */
static void speed_sweep(const char *label, const char *const *configs, size_t n_configs) {
    const int B = 4, H = 32, N_MAX = 16384, D_MAX = 128;
    void *buf[4];
    gpu_gaussian_buffers(&g_dev, 4, (size_t)B * H * N_MAX * D_MAX, buf);
    static const int dims[] = {128, 64}, seqs[] = {4096, 16384};
    for (int di = 0; di < 2; di++)
        for (int ni = 0; ni < 2; ni++)
            for (int causal = 0; causal < 2; causal++) {
                const int D = dims[di], N = seqs[ni];
                double flops;
                mxattn_problem p = gpu_speed_problem("int8-fp8", D, B, H, N, causal, &flops);
                for (size_t i = 0; i < n_configs; i++) {
                    char used[320] = "", running[320];
                    snprintf(running, sizeof running, "%s D=%d N=%d causal=%d %s", label, D, N, causal,
                             configs[i] ? configs[i] : "default");
                    watch(180, running);
                    double ms = gpu_time_plan(g_ctx, &g_dev, &p, configs[i], buf[0], buf[1], buf[2], buf[3], used, sizeof used);
                    alarm(0);
                    printf("%s B=%d H=%d N=%d D=%d causal=%d %-7s [%s]: %.3f ms, %.1f TOPS\n", label, B, H, N, D, causal,
                           configs[i] ? "config" : "default", used, ms, ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0);
                    fflush(stdout);
                }
            }
    gpu_free_buffers(&g_dev, 4, buf);
}

/* wgmma configurations against the default plan. */
static void test_speed_prints_wgmma_configs_beside_the_default(void **state) {
    static const char *configs[] = {NULL, WG "block_m=128 warps=12 block_n=128 stages=2",
                                    WG "block_m=128 warps=12 block_n=128 stages=3",
                                    WG "block_m=128 warps=12 block_n=64 stages=3",
                                    WG "block_m=128 warps=8 block_n=128 stages=2",
                                    WG "block_m=64 warps=4 block_n=128 stages=2"};
    speed_sweep("speed", configs, sizeof configs / sizeof *configs);
}

/* 16384 keys per row, in every schedule of the family (the mma.sync tile
 * too).  Hopper's FP8 wgmma keeps ~14 mantissa bits when it adds to its
 * accumulator, so a kernel that accumulated O in the MMA across the row would
 * drift from the pipeline reference with the key count; f16 output keeps the
 * rounding floor low (2e-4) so the drift shows: the wgmma kernels measured
 * 2.8e-3 that way on the H200 (2026-11-29), 2.4e-4 with each tile's P V added
 * in fp32; the mma.sync tile 1.9e-4 accumulating in place.  The row sums
 * by MMA (rowsum_mma=1) start from zero on every tile for the same reason. */
static void test_long_rows_of_16k_keys_do_not_drift_from_reference(void **state) {
    static const char *configs[] = {NULL, "variant=wgmma block_m=64 warps=4 block_n=64 stages=2",
                                    WG "block_m=128 warps=12 block_n=128 stages=2", "variant=mma", NULL,
                                    WG "block_m=64 warps=4 block_n=128 stages=3 blocks_per_sm=4 rowsum_mma=1"};
    static const int dims[] = {128, 128, 128, 128, 192, 64};   /* 192: P V in two column slices */
    int failures = 0;
    for (int i = 0; i < 6; i++) {
        gpu_case c = {.family = "int8-fp8", .batch = 1, .heads_q = 2, .heads_kv = 1, .seq_q = 64 + 7 * i,
                      .seq_k = 16384 - 5 * i, .head_dim = dims[i],
                      .causal = i % 2 ? MXATTN_CAUSAL_BOTTOM_RIGHT : MXATTN_CAUSAL_NONE, .dtype = MXATTN_F16,
                      .layout = (mxattn_layout)(i % 2), .lse = 1};
        failures += check_case(&c, configs[i], gpu_seed_base() + 950 + i);
    }
    assert_int_equal(failures, 0);
}

/* ---- blocks_per_sm: four blocks an SM (128- and 64-key tiles), D <= 64 ---- */

#define MORE_BLOCKS_4 WG "block_m=64 warps=4 block_n=128 stages=3 blocks_per_sm=4"
#define MORE_BLOCKS_4_N64 WG "block_m=64 warps=4 block_n=64 stages=3 blocks_per_sm=4"

/* Head dims 32..64 (40, 56: DV 48 and 64 with padding channels), each under
 * both key tiles and its own mix of causal alignment, GQA, layout, padding,
 * dtype and LSE; then ragged lengths.  Only the launch bounds differ from
 * overlap=0's kernel, so a failure here is the compiler's register squeeze. */
static void test_more_blocks_per_sm_kernels_match_reference(void **state) {
    static const int dims[] = {32, 40, 48, 56, 64};
    int failures = 0;
    for (int i = 0; i < 5; i++)
        for (int rep = 0; rep < 2; rep++) {
            gpu_case c = gpu_head_dim_case("int8-fp8", dims[i], i + rep);
            failures += check_case(&c, rep ? MORE_BLOCKS_4_N64 : MORE_BLOCKS_4, gpu_seed_base() + 1400 + 10 * i + rep);
        }
    gpu_case c;
    for (int i = 0; gpu_lengths_case("int8-fp8", 5, i, &c); i++) {
        c.head_dim = i % 2 ? 64 : 40;   /* the sweep's 128 is past the knob's reach */
        failures += check_case(&c, i % 2 ? MORE_BLOCKS_4_N64 : MORE_BLOCKS_4, gpu_seed_base() + 1460 + i);
    }
    assert_int_equal(failures, 0);
}

/* Config i on a case of head dim dims[i], in bf16 and then f16 (with V in
 * two terms where i is two_terms_at), then the lengths cases (tails, causal,
 * rows that see no key, the LSE) on configs 0 and 1, which must be D=128 and
 * D=64 tiles; seeds from seed.  Returns the failures. */
static int check_config_sweep(const char *const *configs, const int *dims, int n, int two_terms_at, int seed) {
    int failures = 0;
    for (int i = 0; i < n; i++)
        for (int rep = 0; rep < 2; rep++) {
            gpu_case c = gpu_head_dim_case("int8-fp8", dims[i], i + rep);
            c.dtype = rep ? MXATTN_F16 : c.dtype;
            c.v_terms = i == two_terms_at && rep ? 2 : 1;
            failures += check_case(&c, configs[i], gpu_seed_base() + seed + 10 * i + rep);
        }
    gpu_case c;
    for (int i = 0; gpu_lengths_case("int8-fp8", 5, i, &c); i++)
        failures += check_case(&c, configs[i % 2], gpu_seed_base() + seed + 80 + i);   /* D=128 / D=64 */
    return failures;
}

/* rowsum_mma=1: the row sums from the tensor cores, on the tiles and
 * schedules attend_tile serves (one warpgroup at 32, 64 and 128 keys, four
 * blocks an SM, three consumers, the producer's ring, v_terms=2, P V in
 * slices above D=128), every causal mode, GQA, both layouts, LSE.  The
 * reference sums P as E4M3 (l_from_p_hat): its plain form reads ~2e-3 away
 * on f16, the tolerance, so a kernel that summed the exponentials fails. */
static void test_rowsum_mma_matches_the_e4m3_summed_reference(void **state) {
    static const char *configs[] = {WG "block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1",
                                    WG "block_m=64 warps=4 block_n=128 stages=3 blocks_per_sm=4 rowsum_mma=1",
                                    WG "block_m=64 warps=4 block_n=64 stages=3 rowsum_mma=1",
                                    WG "block_m=64 warps=4 block_n=32 stages=3 rowsum_mma=1",
                                    WG "block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1",
                                    WG "block_m=128 warps=12 block_n=64 stages=2 rowsum_mma=1",
                                    WG "block_m=64 warps=8 block_n=64 stages=3 rowsum_mma=1"};
    static const int dims[] = {128, 64, 96, 40, 64, 128, 256};
    assert_int_equal(check_config_sweep(configs, dims, 7, 2, 1500), 0);
}

/* overlap=3, the three-consumer ring: the same pipeline reference (the
 * tiles' arithmetic is attend_tile's); a turn out of order or a slot
 * refilled early reads as wrong rows, a lost barrier arrival as a hang (the
 * watchdog).  D=128 and 64 first (the lengths cases: tails, causal, rows
 * that see no key, the LSE), then D=96 with V in two terms, D=40, rowsum
 * off, two stages. */
static void test_ring_overlap3_matches_reference_without_a_hang(void **state) {
#define RING WG "overlap=3 block_m=192 warps=12 "
    static const char *configs[] = {RING "block_n=128 stages=3 rowsum_mma=1", RING "block_n=128 stages=3 rowsum_mma=1",
                                    RING "block_n=64 stages=3", RING "block_n=128 stages=2"};
    static const int dims[] = {128, 64, 96, 40};
    assert_int_equal(check_config_sweep(configs, dims, 4, 2, 1900), 0);
#undef RING
}

/* The shared ring (KERNEL_SHARED): three consumers up to D=128, four up to
 * D=64, one K/V ring released by counts: a refill before every warp is done
 * with a slot, or a count that a warpgroup past the queries does not join,
 * reads as wrong rows or a hang.  Every head dim's padding, f16, V in two
 * terms (D=96), D=40, then the lengths cases (the last row block's
 * warpgroups past the queries, causal, the LSE) and a ring that wraps over
 * 18 key tiles with a last row block (rows 1920-2111 of 1930) whose last two
 * warpgroups have no rows. */
static void test_shared_ring_matches_reference_without_a_hang(void **state) {
    static const char *configs[] = {WG "block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1",
                                    WG "block_m=256 warps=16 block_n=128 stages=3 rowsum_mma=1",
                                    WG "block_m=192 warps=12 block_n=64 stages=2",
                                    WG "block_m=192 warps=12 block_n=128 stages=3",
                                    WG "block_m=256 warps=16 block_n=64 stages=3"};
    static const int dims[] = {128, 64, 96, 40, 48};
    int failures = check_config_sweep(configs, dims, 5, 2, 2300);
    gpu_case c = {.family = "int8-fp8", .batch = 1, .heads_q = 2, .heads_kv = 1, .seq_q = 1930, .seq_k = 2177,
                  .head_dim = 128, .dtype = MXATTN_BF16, .layout = MXATTN_LAYOUT_BNHD, .lse = 1};
    failures += check_case(&c, configs[0], gpu_seed_base() + 2390);
    assert_int_equal(failures, 0);
}

/* V in two E4M3 terms (v_terms=2): against the pipeline reference with the
 * same two terms, across tiles, schedules, tails, causal and GQA; and on the
 * same inputs it must cut the error against fp64 well below one term's (the
 * CPU reference: rel-L1 0.037 -> 0.026 at D=128, V's share gone). */
static void test_v_terms_2_matches_reference_and_cuts_fp64_error(void **state) {
    static const char *configs[] = {WG "block_m=64 warps=4 block_n=128 stages=2", WG "block_m=64 warps=4 block_n=64 stages=3",
                                    WG "block_m=128 warps=12 block_n=64 stages=2",
                                    WG "block_m=192 warps=12 block_n=128 stages=2"};
    static const int dims[] = {128, 64, 80, 128};
    int failures = 0;
    for (int i = 0; i < 4; i++) {
        gpu_case c = {.family = "int8-fp8", .batch = 2, .heads_q = 4, .heads_kv = 2 - i % 2, .seq_q = 300 + 77 * i,
                      .seq_k = 1000 + 333 * i, .head_dim = dims[i], .causal = (mxattn_causal)(i % 3),
                      .dtype = i == 2 ? MXATTN_F16 : MXATTN_BF16, .layout = (mxattn_layout)(i % 2), .pad = 8 * (i % 2),
                      .lse = 1, .v_terms = 2};
        failures += check_case(&c, configs[i], 900 + i);
    }
    /* The one-slot V ring (the one-warpgroup tiles) at its edges: one key
     * tile, one key, a tail, rows that see no key (bottom-right, Nq > Nk). */
    static const int short_lens[][3] = {{1, 1, 0}, {64, 129, 1}, {200, 17, 2}, {130, 128, 2}};
    for (int i = 0; i < 4; i++) {
        gpu_case c = {.family = "int8-fp8", .batch = 1, .heads_q = 2, .heads_kv = 1, .seq_q = short_lens[i][0],
                      .seq_k = short_lens[i][1], .head_dim = 96, .causal = (mxattn_causal)short_lens[i][2],
                      .dtype = MXATTN_BF16, .layout = MXATTN_LAYOUT_BNHD, .lse = 1, .v_terms = 2};
        failures += check_case(&c, configs[i % 2], 950 + i);
    }
    gpu_case c = {.family = "int8-fp8", .batch = 1, .heads_q = 8, .heads_kv = 8, .seq_q = 512, .seq_k = 4096,
                  .head_dim = 128, .dtype = MXATTN_BF16, .layout = MXATTN_LAYOUT_BHND};
    gpu_two_refs one, two;
    assert_int_equal(run_case(&c, WG "block_m=64 warps=4 block_n=128 stages=2", 77, 0, &one), MXATTN_OK);
    c.v_terms = 2;
    assert_int_equal(run_case(&c, WG "block_m=64 warps=4 block_n=128 stages=2", 77, 0, &two), MXATTN_OK);
    printf("fp64 rel_l1 one term %.4f cos %.6f, two terms %.4f cos %.6f\n", one.exact.o.rel_l1, one.exact.o.cosine,
           two.exact.o.rel_l1, two.exact.o.cosine);
    assert_true(two.exact.o.rel_l1 < 0.85 * one.exact.o.rel_l1);
    assert_true(1 - two.exact.o.cosine < 0.8 * (1 - one.exact.o.cosine));
    assert_int_equal(failures, 0);
}

/* block_m=192 (three consumer warpgroups on one K/V stream, D <= 64), with
 * and without the producer: row counts that leave a block's last warpgroups
 * without rows, every causal mode, GQA, both layouts, V in two terms. */
static void test_three_consumers_match_reference_with_idle_warpgroups(void **state) {
    static const char *configs[] = {WG "block_m=192 warps=16 block_n=128 stages=2", WG "block_m=192 warps=12 block_n=128 stages=3",
                                    WG "block_m=192 warps=16 block_n=64 stages=3", WG "block_m=192 warps=12 block_n=64 stages=2"};
    static const int seq_q[] = {333, 200, 1000, 129}, seq_k[] = {1000, 777, 130, 2049}, dims[] = {64, 64, 48, 64};
    int failures = 0;
    for (int i = 0; i < 4; i++) {
        gpu_case c = {.family = "int8-fp8", .batch = 2, .heads_q = 4, .heads_kv = 2 - i % 2, .seq_q = seq_q[i],
                      .seq_k = seq_k[i], .head_dim = dims[i], .causal = (mxattn_causal)(i % 3),
                      .dtype = i == 2 ? MXATTN_F16 : MXATTN_BF16, .layout = (mxattn_layout)(i % 2), .pad = 8 * (i % 2),
                      .lse = 1, .v_terms = i == 3 ? 2 : 1};
        failures += check_case(&c, configs[i], gpu_seed_base() + 1000 + i);
    }
    assert_int_equal(failures, 0);
}

int main(int argc, char **argv) {
    gpu_open_or_skip(&g_dev, "gpu_int8_wgmma");
    if (g_dev.cc_major != 9) {
        printf("gpu_int8_wgmma: skipped, needs an sm_90 GPU (this one is sm_%d%d)\n", g_dev.cc_major, g_dev.cc_minor);
        mx_device_close(&g_dev);
        return MX_TEST_SKIP;
    }
    signal(SIGALRM, on_alarm);
    mxattn_options opts;
    mxattn_options_init(&opts);
    opts.no_cache = 1;   /* compile every kernel */
    if (mxattn_create(&g_ctx, &opts) != MXATTN_OK) {
        printf("mxattn_create: %s\n", mxattn_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smoke_one_tile_then_producer_kernels_match_reference),
        cmocka_unit_test(test_head_dims_each_panel_width_matches_reference),
        cmocka_unit_test(test_lengths_and_causal),
        cmocka_unit_test(test_gqa_grouped_heads_match_reference),
        cmocka_unit_test(test_long_sequence_wrapping_the_ring_matches_reference),
        cmocka_unit_test(test_speed_prints_wgmma_configs_beside_the_default),
        cmocka_unit_test(test_more_blocks_per_sm_kernels_match_reference),
        cmocka_unit_test(test_rowsum_mma_matches_the_e4m3_summed_reference),
        cmocka_unit_test(test_ring_overlap3_matches_reference_without_a_hang),
        cmocka_unit_test(test_shared_ring_matches_reference_without_a_hang),
        cmocka_unit_test(test_long_rows_of_16k_keys_do_not_drift_from_reference),
        cmocka_unit_test(test_v_terms_2_matches_reference_and_cuts_fp64_error),
        cmocka_unit_test(test_three_consumers_match_reference_with_idle_warpgroups),
    };
    int rc = gpu_run_tests("gpu_int8_wgmma", tests, sizeof tests / sizeof tests[0], argc, argv);
    mxattn_destroy(g_ctx);
    mx_device_close(&g_dev);
    return rc;
}
