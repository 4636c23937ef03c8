/* The FP4 families (nvfp4, mxfp4, nvfp4-int8qk) on a GPU:
 *  - the quantization kernels' packed output is bit-identical to numerics/
 *    (all-zero blocks, a huge outlier, E2M1 ties, NaN and +-Inf included);
 *  - attention against the CPU quantized-pipeline reference with p_tile =
 *    the kernel's block_n (tight: the emulation differs only by fp32 order,
 *    ex2.approx vs exp and the bf16 output), and against fp64 with a bound
 *    derived from the pipeline reference's own error;
 *  - two-level P is far better than direct P on diffuse (Gaussian) inputs.
 * Exits 77 (skipped) without a GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "gen/gen.h"
#include "jit/jit.h"
#include "runtime/nvrtc.h"
#include "support/gpu_harness.h"
#include "support/ref_parallel.h"
#include "util/err.h"

static mx_device g_dev;
static mxattn_ctx *g_ctx;
static mx_gen *g_gen;

/* Kernel vs the pipeline reference: the output's bf16 rounding (~1e-3 rel-L1,
 * as for f16 vs fp64) plus rare E2M1 code flips where the kernel's fp32 P~
 * and the reference's fp64 P~ straddle a rounding boundary.  The LSE is taken
 * from the sum of the quantized P~, so a flip moves it too, most in a row
 * that sees few keys: the H200 showed 2.2e-3 once (nvfp4-int8qk, Nq=65 Nk=33
 * bottom-right, rows of 1-33 keys; O's max_abs 0.11 on the same row, rel-L1
 * 1.5e-3) in 16 runs of that case whose LSE error was otherwise ~5e-7.  A
 * wrong mask or scale moves it by 0.1 or more. */
#define PIPE_REL_L1_BF16 4e-3
#define PIPE_REL_L1_F16 2e-3
#define LSE_TOL 1e-2

static const char *FAMILIES[] = {"nvfp4", "mxfp4", "nvfp4-int8qk"};

/* ---- helpers ------------------------------------------------------------ */

/* The default knobs' block_n for a case on this GPU: the reference's p_tile. */
static int default_block_n(const char *family, int head_dim) {
    char params[256], *knobs = NULL;
    snprintf(params, sizeof params, "family=%s head_dim=%d arch=%s", family, head_dim, g_dev.arch);
    if (mx_gen_call(g_gen, "knobs", params, NULL, &knobs) != MXATTN_OK) return -1;
    int bn = (int)mx_params_get_int(knobs, "block_n", -1);
    free(knobs);
    return bn;
}

static mxattn_status pipeline_ref(const gpu_case *c, const char *config, const float *q, const float *k,
                                  const float *v, double *o, double *lse) {
    mxattn_problem p;
    mxattn_problem_init(&p, c->family, c->head_dim);
    p.batch = c->batch; p.heads_q = c->heads_q; p.heads_kv = c->heads_kv;
    p.seq_q = c->seq_q; p.seq_k = c->seq_k; p.causal = c->causal; p.dtype = c->dtype;
    int bn = (int)mx_params_get_int(config, "block_n", -1);   /* P's scale tile: the plan's */
    return mx_ref_family_attention(c->family, &p, bn, q, k, v, o, lse);
}

/* One case, twice on the same inputs: against the pipeline reference (tight),
 * then against fp64 (within 1.25x the pipeline's own error + the rounding). */
static int check_case(const gpu_case *c, uint64_t seed) {
    gpu_two_refs t;
    if (gpu_run_two_refs(g_ctx, &g_dev, c, seed, pipeline_ref, NULL, &t) != MXATTN_OK) return 1;
    const gpu_result *r = &t.pipe, *e = &t.exact;
    double tol = c->dtype == MXATTN_BF16 ? PIPE_REL_L1_BF16 : PIPE_REL_L1_F16;
    double bound = 1.25 * t.design.rel_l1 + tol;
    int ok = r->unwritten == 0 && r->o.rel_l1 < tol && (!c->lse || r->lse_max_abs < LSE_TOL) && e->o.rel_l1 < bound;
    printf("%s %s [%s]: vs pipeline rel_l1 %.2e max_abs %.2e lse %.1e | vs fp64 rel_l1 %.3f (bound %.3f) cos %.5f"
           " | pipeline vs fp64 cos %.5f, %.3f ms, seed %llu\n",
           ok ? "ok  " : "FAIL", t.what, r->config, r->o.rel_l1, r->o.max_abs, r->lse_max_abs, e->o.rel_l1, bound,
           e->o.cosine, t.design.cosine, r->ms, (unsigned long long)seed);
    return !ok;
}

/* ---- attention ---------------------------------------------------------- */

static void test_head_dims_each_matches_reference_in_every_fp4_family(void **state) {
    static const int dims[] = {64, 80, 96, 128, 256};
    static const int seqs[][2] = {{127, 127}, {17, 300}, {300, 17}, {1, 129}, {200, 200}};
    int failures = 0;
    for (int f = 0; f < 3; f++)
        for (int i = 0; i < 5; i++) {
            gpu_case c = {.family = FAMILIES[f], .batch = 1 + i % 2, .heads_kv = 1 + (i + f) % 2, .head_dim = dims[i],
                          .causal = (mxattn_causal)((i + f) % 3), .dtype = (i + f) % 4 == 3 ? MXATTN_F16 : MXATTN_BF16,
                          .layout = (mxattn_layout)(i % 2), .pad = (i % 3) * 8, .lse = (i + f) % 2};
            c.heads_q = c.heads_kv * (i % 3 == 0 ? 1 : i % 3 == 1 ? 4 : 8);
            c.seq_q = seqs[i][0];
            c.seq_k = seqs[i][1];
            failures += check_case(&c, gpu_seed_base() + 10 * f + i);
        }
    assert_int_equal(failures, 0);
}

/* Ragged lengths that fill no tile, both causal alignments, grouped-query heads. */
static void test_lengths_and_gqa(void **state) {
    static const int lens[][2] = {{1, 1}, {33, 65}, {65, 33}, {129, 1000}, {1000, 129}};
    int failures = 0;
    for (int f = 0; f < 3; f++)
        for (int i = 0; i < 5; i++) {
            gpu_case c = {.family = FAMILIES[f], .batch = 2, .heads_q = 8, .heads_kv = 2, .seq_q = lens[i][0],
                          .seq_k = lens[i][1], .head_dim = i % 2 ? 64 : 128, .causal = (mxattn_causal)(i % 3),
                          .dtype = MXATTN_BF16, .layout = MXATTN_LAYOUT_BHND, .lse = 1};
            failures += check_case(&c, gpu_seed_base() + 100 + 10 * f + i);
        }
    assert_int_equal(failures, 0);
}

/* ---- direct vs two-level P ------------------------------------------------ */

/* Runs one problem on BHND contiguous bf16 inputs (host floats, already
 * bf16-exact) and returns O as floats. */
static mxattn_status run_problem(const mxattn_problem *p, const float *q, const float *k, const float *v, float *o) {
    mxattn_plan *plan = NULL;
    mxattn_status st = mxattn_plan_create(g_ctx, p, NULL, &plan);
    if (st == MXATTN_OK) st = gpu_run_bf16(&g_dev, plan, p, q, k, v, o, NULL);
    mxattn_plan_destroy(plan);
    return st;
}

/* The design notes' headline: Gaussian Q/K give near-uniform attention, where
 * a direct E4M3 scale of the final, normalised P keeps a handful of levels
 * (the CPU offline form, p_tile = 0: cos ~0.98 two-level vs ~0.66 direct at
 * this size).  The kernel quantizes P~ = exp(S - running max) per tile, which
 * peaks near 1 in every tile, so there direct is only a little worse (CPU,
 * p_tile = 64: 0.98287 vs 0.98267).  Checked: the offline gap on the CPU, the
 * kernel within rounding of its own reference in both modes, and two-level
 * no worse than direct on the GPU. */
static void test_two_level_beats_direct(void **state) {
    const int D = 128, N = 1024;
    size_t n = (size_t)N * D;
    float *q = malloc(n * 4), *k = malloc(n * 4), *v = malloc(n * 4), *o = malloc(n * 4);
    double *exact = malloc(n * 8), *pipe = malloc(n * 8);
    mx_rng rng;
    mx_rng_seed(&rng, 20260101);
    gpu_random_bf16(&rng, q, n, 0, 1);
    gpu_random_bf16(&rng, k, n, 0, 1);
    for (size_t i = 0; i < n; i++) k[i] = mx_round_bf16(k[i] + (float)((i % D) % 7) * 0.5f);  /* channel means */
    gpu_random_bf16(&rng, v, n, 0, 1);
    mx_ref_shape s = {1, 1, 1, N, N, D, MXATTN_CAUSAL_NONE, 0};
    assert_int_equal(mx_ref_attention(&s, q, k, v, exact, NULL), MXATTN_OK);
    for (int f = 0; f < 3; f++) {
        double cos_mode[2], offline[2];
        for (int direct = 0; direct < 2; direct++) {
            mxattn_problem p;
            mxattn_problem_init(&p, FAMILIES[f], D);
            p.seq_q = p.seq_k = N;
            p.direct_p = direct;
            assert_int_equal(mx_ref_family_attention(FAMILIES[f], &p, 0, q, k, v, pipe, NULL), MXATTN_OK);
            offline[direct] = mx_compare(pipe, exact, n).cosine;
            assert_int_equal(run_problem(&p, q, k, v, o), MXATTN_OK);
            assert_int_equal(mx_ref_family_attention(FAMILIES[f], &p, default_block_n(FAMILIES[f], D), q, k, v, pipe, NULL),
                             MXATTN_OK);
            mx_error_stats vs_exact = mx_compare_f32(o, exact, n), vs_pipe = mx_compare_f32(o, pipe, n);
            cos_mode[direct] = vs_exact.cosine;
            printf("%-13s %-9s: kernel vs fp64 cos %.5f rel_l1 %.4f | vs pipeline rel_l1 %.2e | offline CPU cos %.5f\n",
                   FAMILIES[f], direct ? "direct" : "two-level", vs_exact.cosine, vs_exact.rel_l1, vs_pipe.rel_l1,
                   offline[direct]);
            assert_true(vs_pipe.rel_l1 < PIPE_REL_L1_BF16);
        }
        assert_true(cos_mode[0] > cos_mode[1] - 1e-3);
        if (strcmp(FAMILIES[f], "mxfp4") != 0) assert_true(offline[0] > offline[1] + 0.2);
    }
    free(q); free(k); free(v); free(o); free(exact); free(pipe);
}

/* ---- quantization kernels, bit for bit ------------------------------------ */

typedef struct { void *q, *k, *v, *o, *ws; float *lse; } dev_bufs;

/* Runs the whole launch plan of `params` on BHND contiguous inputs and reads
 * the workspace back into *ws (caller frees) with its section offsets. */
static mxattn_status run_plan_raw(const char *params, int B, int Hq, int Hkv, int Nq, int Nk, int D,
                                  const float *q, const float *k, const float *v, uint8_t **ws, mx_launch_plan *lp) {
    mxattn_status st = MXATTN_OK;
    char *canon = NULL, *src = NULL, sizes[256];
    mx_compile_result cr;
    struct CUmod_st *mod = NULL;
    dev_bufs d = {0};
    uint16_t *h = NULL;
    memset(&cr, 0, sizeof cr);
    *ws = NULL;
    snprintf(sizes, sizeof sizes, "batch=%d heads_q=%d heads_kv=%d seq_q=%d seq_k=%d head_dim=%d", B, Hq, Hkv, Nq, Nk, D);
    MX_TRY(mx_gen_call(g_gen, "validate", params, NULL, &canon));
    MX_TRY(mx_gen_call(g_gen, "render", canon, NULL, &src));
    MX_TRY(mx_jit_launch_plan(g_gen, canon, sizes, lp));
    mx_compile_options opt = {.arch = g_dev.arch};
    MX_TRY(mx_nvrtc_compile(src, lp->steps[lp->n_steps - 1].name, &opt, &cr));
    MX_TRY(mx_module_load(&g_dev, cr.cubin, cr.cubin_size, &mod));
    MX_TRY(mx_launch_plan_bind(&g_dev, mod, lp));
    size_t nq = (size_t)B * Hq * Nq * D, nk = (size_t)B * Hkv * Nk * D;
    h = malloc((nq > nk ? nq : nk) * 2);
    MX_TRY(mx_mem_alloc(&g_dev, nq * 2, &d.q));
    MX_TRY(mx_mem_alloc(&g_dev, nk * 2, &d.k));
    MX_TRY(mx_mem_alloc(&g_dev, nk * 2, &d.v));
    MX_TRY(mx_mem_alloc(&g_dev, nq * 2, &d.o));
    MX_TRY(mx_mem_alloc(&g_dev, lp->workspace_bytes, &d.ws));
    /* The tables ask for lse=1: the attention step writes it. */
    MX_TRY(mx_mem_alloc(&g_dev, (size_t)B * Hq * Nq * sizeof(float), (void **)&d.lse));
    MX_TRY(mx_memset_d8(&g_dev, d.ws, 0xA5, lp->workspace_bytes, NULL));   /* poison: every byte must be written */
    const float *src3[3] = {q, k, v};
    void *dst3[3] = {d.q, d.k, d.v};
    for (int t = 0; t < 3; t++) {
        size_t n = t ? nk : nq;
        for (size_t i = 0; i < n; i++) h[i] = mx_f32_to_bf16(src3[t][i]);
        MX_TRY(mx_memcpy_htod(&g_dev, dst3[t], h, n * 2));
    }
    mx_kernel_args a;
    memset(&a, 0, sizeof a);
    a.q = d.q; a.k = d.k; a.v = d.v; a.o = d.o; a.ws = d.ws; a.lse = d.lse;
    a.q_ss = D; a.q_sh = (int64_t)Nq * D; a.q_sb = a.q_sh * Hq;
    a.k_ss = D; a.k_sh = (int64_t)Nk * D; a.k_sb = a.k_sh * Hkv;
    a.v_ss = a.k_ss; a.v_sh = a.k_sh; a.v_sb = a.k_sb;
    a.o_ss = a.q_ss; a.o_sh = a.q_sh; a.o_sb = a.q_sb;
    a.batch = B; a.heads_q = Hq; a.heads_kv = Hkv; a.seq_q = Nq; a.seq_k = Nk;
    a.sm_scale = 1.0f / sqrtf((float)D);
    a.scale_log2 = a.sm_scale * 1.4426950408889634f;
    a.gqa = Hq / Hkv;
    MX_TRY(mx_launch_plan_run(&g_dev, lp, &a, NULL));
    MX_TRY(mx_device_synchronize(&g_dev));
    *ws = malloc(lp->workspace_bytes);
    MX_TRY(mx_memcpy_dtoh(&g_dev, *ws, d.ws, lp->workspace_bytes));
fail:
    mx_mem_free(&g_dev, d.q); mx_mem_free(&g_dev, d.k); mx_mem_free(&g_dev, d.v);
    mx_mem_free(&g_dev, d.o); mx_mem_free(&g_dev, d.ws); mx_mem_free(&g_dev, d.lse);
    mx_module_unload(&g_dev, mod);
    mx_compile_result_free(&cr);
    free(canon); free(src); free(h);
    return st;
}

static int round_up(int x, int m) { return (x + m - 1) / m * m; }

/* Compares one packed FP4 matrix (rows x cols along which it is quantized)
 * from numerics with the kernel's rows: codes (pitch cpitch bytes), scales
 * through scale_at(row, block). */
static long compare_fp4(mx_fp4_kind kind, const float *x, int rows, int cols, const uint8_t *codes, size_t cpitch,
                        const uint8_t *scales, size_t s_row, size_t s_blk, const char *what) {
    int pb = mx_fp4_block_size(kind), padded = mx_fp4_padded_cols(kind, cols);
    uint8_t *rc = calloc(mx_fp4_codes_bytes(kind, rows, cols) + 1, 1), *rs = calloc(mx_fp4_scales_bytes(kind, rows, cols) + 1, 1);
    mx_fp4_quantize(kind, x, rows, cols, cols, rc, rs);
    long bad = 0;
    for (int r = 0; r < rows; r++) {
        for (size_t b = 0; b < cpitch; b++) {
            uint8_t want = b < (size_t)padded / 2 ? rc[(size_t)r * padded / 2 + b] : 0;
            uint8_t got = codes[r * cpitch + b];
            if (got != want && bad++ < 5)
                printf("  %s codes row %d byte %zu: got %02x want %02x\n", what, r, b, got, want);
        }
        for (int blk = 0; blk < padded / pb; blk++) {
            uint8_t want = rs[(size_t)r * (padded / pb) + blk], got = scales[r * s_row + blk * s_blk];
            if (got != want && bad++ < 5) printf("  %s scale row %d block %d: got %02x want %02x\n", what, r, blk, got, want);
        }
    }
    free(rc); free(rs);
    return bad;
}

/* INT8 Q (blocks of 128 rows) and K (blocks of 64, already smoothed by the
 * caller where the plan smooths), codes and fp32 scales, against numerics. */
static long compare_int8(const float *q, int Hq, int Nq, const float *k, int Nk, int D, const uint8_t *ws,
                         const mx_launch_plan *lp) {
    const int DP = round_up(D, 64), NQ = round_up(Nq, 128);
    size_t nq = (size_t)Nq * D, nk = (size_t)Nk * D;
    int8_t *c8 = malloc(nq > nk ? nq : nk);
    float *sc = malloc(((Nk > Nq ? Nk : Nq) / 64 + 2) * sizeof(float));
    long bad = 0;
    for (int h = 0; h < Hq; h++) {
        mx_int8_quantize_blocks(q + (size_t)h * Nq * D, Nq, D, D, 128, c8, sc);
        const int8_t *got = (const int8_t *)(ws + lp->ws_off[0]) + (size_t)h * NQ * DP;
        for (int r = 0; r < Nq; r++)
            for (int c = 0; c < D; c++)
                if (got[(size_t)r * DP + c] != c8[(size_t)r * D + c] && bad++ < 5)
                    printf("  int8 Q[%d][%d][%d]: got %d want %d\n", h, r, c, got[(size_t)r * DP + c], c8[(size_t)r * D + c]);
        const float *gs = (const float *)(ws + lp->ws_off[1]) + (size_t)h * (NQ / 128);
        /* Q's block 0 holds a NaN: its scale is NaN on both sides, with payloads that may differ. */
        if (memcmp(gs, sc, 4) && !(isnan(gs[0]) && isnan(sc[0])) && bad++ < 5)
            printf("  int8 Q scale: got %a want %a\n", gs[0], sc[0]);
    }
    mx_int8_quantize_blocks(k, Nk, D, D, 64, c8, sc);
    const int8_t *got = (const int8_t *)(ws + lp->ws_off[2]);
    for (int r = 0; r < Nk; r++)
        for (int c = 0; c < DP; c++) {
            int want = c < D ? c8[(size_t)r * D + c] : 0;
            if (got[(size_t)r * DP + c] != want && bad++ < 5) printf("  int8 K[%d][%d]: got %d want %d\n", r, c, got[(size_t)r * DP + c], want);
        }
    if (memcmp(ws + lp->ws_off[3], sc, 4 * ((Nk + 63) / 64)) && bad++ < 5) printf("  int8 K scales differ\n");
    free(c8); free(sc);
    return bad;
}

/* Special values: an all-zero block, a huge outlier, E2M1 ties, NaN, +-Inf. */
static void plant_specials(float *x, int rows, int D, int with_nonfinite) {
    for (int c = 0; c < 32 && c < D; c++) x[c] = 0.0f;                       /* row 0: zero blocks */
    if (rows > 1) x[(size_t)1 * D + 3] = 32768.0f;   /* row 1: outlier (a bf16 value: the GPU reads bf16) */
    if (rows > 2) {                                                         /* row 2: amax 6 -> scale 1: ties */
        static const float ties[16] = {6, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5, -0.25f, -0.75f, -1.25f,
                                       -1.75f, -2.5f, -3.5f, -5, -0.0f};
        for (int c = 0; c < 16 && c < D; c++) x[(size_t)2 * D + c] = ties[c];
    }
    if (with_nonfinite && rows > 3) {
        x[(size_t)3 * D + 0] = NAN;
        x[(size_t)3 * D + 17] = INFINITY;
        x[(size_t)3 * D + 40 % D] = -INFINITY;
    }
}

static void test_quantizers_bit_exact(void **state) {
    const int B = 1, Hq = 2, Hkv = 1, Nq = 70, Nk = 100;
    static const int dims[] = {80, 128};
    long total_bad = 0;
    for (int f = 0; f < 3; f++)
        for (int di = 0; di < 2; di++) {
            const int D = dims[di];
            mx_fp4_kind kind = strcmp(FAMILIES[f], "mxfp4") ? MX_FP4_NVFP4 : MX_FP4_MXFP4;
            int int8 = !strcmp(FAMILIES[f], "nvfp4-int8qk");
            size_t nq = (size_t)B * Hq * Nq * D, nk = (size_t)B * Hkv * Nk * D;
            float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4);
            mx_rng rng;
            mx_rng_seed(&rng, 7 + f);
            gpu_random_bf16(&rng, q, nq, 0, 1);
            gpu_random_bf16(&rng, k, nk, 0.5, 2);
            gpu_random_bf16(&rng, v, nk, 0, 1);
            plant_specials(q, Nq, D, 1);
            plant_specials(k, Nk, D, 0);   /* NaN in K: gpu_nan */
            /* V^T rows are channels: plant along the keys of channel 0..3. */
            for (int j = 0; j < 32; j++) v[(size_t)j * D + 0] = 0.0f;
            v[(size_t)5 * D + 1] = 32768.0f;
            v[(size_t)7 * D + 2] = NAN;
            v[(size_t)9 * D + 3] = -INFINITY;
            char params[256];
            snprintf(params, sizeof params, "family=%s head_dim=%d arch=%s lse=1 smooth_k=1 block_m=64 warps=4 block_n=64 stages=2",
                     FAMILIES[f], D, g_dev.arch);
            uint8_t *ws = NULL;
            mx_launch_plan lp;
            mxattn_status st = run_plan_raw(params, B, Hq, Hkv, Nq, Nk, D, q, k, v, &ws, &lp);
            if (st != MXATTN_OK) fail_msg("%s: %s", params, mxattn_last_error());
            const int DP = round_up(D, 64), DV = round_up(D, 16), PB = mx_fp4_block_size(kind);
            const int SPK = round_up(DP / PB, 4);
            const int NQ = int8 ? round_up(Nq, 128) : round_up(Nq, 64), NK = int8 ? round_up(Nk, 64) : round_up(Nk, 64);
            long bad = 0;
            /* Smooth-K: the mean, bit for bit. */
            float *mean = malloc(D * 4), *ks = malloc(nk * 4);
            mx_channel_mean(k, Nk, D, D, mean);
            mx_subtract_mean(k, Nk, D, D, mean, ks);
            const float *wmean = (const float *)(ws + lp.ws_off[6]);
            for (int c = 0; c < D; c++)
                if (memcmp(&wmean[c], &mean[c], 4) && bad++ < 5) printf("  mean[%d]: got %a want %a\n", c, wmean[c], mean[c]);
            if (!int8) {
                for (int h = 0; h < Hq; h++)
                    bad += compare_fp4(kind, q + (size_t)h * Nq * D, Nq, D, ws + lp.ws_off[0] + (size_t)h * NQ * DP / 2, DP / 2,
                                       ws + lp.ws_off[1] + (size_t)h * NQ * SPK, SPK, 1, "Q");
                bad += compare_fp4(kind, ks, Nk, D, ws + lp.ws_off[2], DP / 2, ws + lp.ws_off[3], SPK, 1, "K");
            } else {
                bad += compare_int8(q, Hq, Nq, ks, Nk, D, ws, &lp);
            }
            /* V^T: rows are channels, quantized along the keys; scales key-block major. */
            float *vt = malloc((size_t)D * Nk * 4);
            for (int j = 0; j < Nk; j++)
                for (int c = 0; c < D; c++) vt[(size_t)c * Nk + j] = v[(size_t)j * D + c];
            bad += compare_fp4(kind, vt, D, Nk, ws + lp.ws_off[4], NK / 2, ws + lp.ws_off[5], 1, DV, "V^T");
            printf("%-13s D=%3d: %ld mismatches (Q with NaN -> code 0x7, +-Inf -> +-6; zero blocks -> scale 0 / 2^-127)\n",
                   FAMILIES[f], D, bad);
            total_bad += bad;
            free(q); free(k); free(v); free(mean); free(ks); free(vt); free(ws);
        }
    assert_int_equal(total_bad, 0);
}

/* INT8 codes on exact ties (nvfp4-int8qk): with amax 3.25, x = 1.625 is
 * 127 x / amax = 63.5; x / scale divided gives 63.4999962 (code 63), the
 * reciprocal rule of numerics and the kernels 64.  Random inputs meet such a
 * tie in ~5% of one-row Q blocks, and one Q code off flips P's FP4 codes. */
static void test_int8_ties_bit_exact(void **state) {
    const int Hq = 2, Nq = 3, Nk = 80, D = 128;
    float *q = malloc((size_t)Hq * Nq * D * 4), *k = malloc((size_t)Nk * D * 4), *v = malloc((size_t)Nk * D * 4);
    mx_rng rng;
    mx_rng_seed(&rng, gpu_seed_base());
    gpu_random_bf16(&rng, q, (size_t)Hq * Nq * D, 0, 1);
    gpu_random_bf16(&rng, k, (size_t)Nk * D, 0, 1);
    gpu_random_bf16(&rng, v, (size_t)Nk * D, 0, 1);
    float *blocks[2] = {q, k};   /* Q's first block (all its rows) and K's first 64 rows */
    int rows[2] = {Nq, 64};
    for (int t = 0; t < 2; t++) {
        for (size_t i = 0; i < (size_t)rows[t] * D; i++) blocks[t][i] = fmaxf(-3.0f, fminf(3.0f, blocks[t][i]));
        blocks[t][0] = 3.25f;
        for (int i = 1; i < 9; i++) blocks[t][(size_t)i * 13 % ((size_t)rows[t] * D)] = i % 2 ? 1.625f : -1.625f;
    }
    float s = 3.25f / 127.0f;
    assert_int_equal(mx_f32_to_int8(1.625f / s), 63);   /* the planted value is a tie the two rules split */
    assert_int_equal(mx_f32_to_int8(mx_div_by_scale(1.625f, mx_scale_reciprocal(s))), 64);
    char params[256];
    snprintf(params, sizeof params, "family=nvfp4-int8qk head_dim=%d arch=%s lse=1 smooth_k=0 block_m=64 warps=4 block_n=64 stages=2",
             D, g_dev.arch);
    uint8_t *ws = NULL;
    mx_launch_plan lp;
    mxattn_status st = run_plan_raw(params, 1, Hq, 1, Nq, Nk, D, q, k, v, &ws, &lp);
    if (st != MXATTN_OK) fail_msg("%s: %s", params, mxattn_last_error());
    long bad = compare_int8(q, Hq, Nq, k, Nk, D, ws, &lp);
    printf("nvfp4-int8qk INT8 ties: %ld mismatches\n", bad);
    free(q); free(k); free(v); free(ws);
    assert_int_equal(bad, 0);
}


/* ---- variant=wgmma (sm_90a): templates/cuda/fwd_fp4_wgmma.cuh ------------- */

static int on_hopper(void) { return strcmp(g_dev.arch, "sm_90a") == 0; }

/* A bf16 operand row block of the workspace ([rows][pitch] bf16) against the
 * values numerics' quantizer gives: E2M1 value times scale value, per element
 * (bf16 holds them exactly), padding columns and rows 0.  Equal values with a
 * positive scale mean equal codes; the scales are compared as bytes apart. */
static long compare_bf16(const float *want, int rows, int cols, const uint16_t *got, int pitch, int got_rows,
                         const char *what) {
    long bad = 0;
    for (int r = 0; r < got_rows; r++)
        for (int c = 0; c < pitch; c++) {
            float w = r < rows && c < cols ? want[(size_t)r * cols + c] : 0.0f;
            uint16_t g = got[(size_t)r * pitch + c], wb = mx_f32_to_bf16(w);
            int both_nan = isnan(w) && (g & 0x7FFF) > 0x7F80;
            if (g != wb && !both_nan && bad++ < 5)
                printf("  %s [%d][%d]: got %04x want %04x (%g)\n", what, r, c, g, wb, w);
        }
    return bad;
}

/* numerics' quantize-dequantize of rows x cols along the rows, and its scale
 * bytes (compared to the workspace's with the pitches of compare_fp4). */
static long check_fp4_operand(mx_fp4_kind kind, const float *x, int rows, int cols, const uint16_t *got, int pitch,
                              int got_rows, const uint8_t *scales, size_t s_row, size_t s_blk, const char *what) {
    int pb = mx_fp4_block_size(kind), padded = mx_fp4_padded_cols(kind, cols);
    uint8_t *rc = calloc(mx_fp4_codes_bytes(kind, rows, cols) + 1, 1), *rs = calloc(mx_fp4_scales_bytes(kind, rows, cols) + 1, 1);
    float *dq = malloc((size_t)rows * cols * 4);
    mx_fp4_quantize(kind, x, rows, cols, cols, rc, rs);
    mx_fp4_dequantize(kind, rc, rs, rows, cols, dq, cols);
    long bad = 0;
    for (int r = 0; r < rows; r++)
        for (int blk = 0; blk < padded / pb; blk++) {
            uint8_t want = rs[(size_t)r * (padded / pb) + blk], g = scales[r * s_row + blk * s_blk];
            if (g != want && bad++ < 5) printf("  %s scale row %d block %d: got %02x want %02x\n", what, r, blk, g, want);
        }
    bad += compare_bf16(dq, rows, cols, got, pitch, got_rows, what);
    free(rc); free(rs); free(dq);
    return bad;
}

/* The operands the wgmma kernel reads, bit for bit: Q, K (smoothed) and V as
 * bf16 values of numerics' codes times its scales, the scales themselves;
 * nvfp4-int8qk's INT8 codes as bf16 and their fp32 scales.  Poisoned
 * workspace, special values planted, head dims 72 (no multiple of 64) and 128. */
static void test_wgmma_operands_bit_exact(void **state) {
    if (!on_hopper()) skip();
    const int B = 1, Hq = 2, Hkv = 1, Nq = 70, Nk = 100;
    static const int dims[] = {72, 128};
    long total_bad = 0;
    for (int f = 0; f < 3; f++)
        for (int di = 0; di < 2; di++) {
            const int D = dims[di], DPAD = round_up(D, 16);
            mx_fp4_kind kind = strcmp(FAMILIES[f], "mxfp4") ? MX_FP4_NVFP4 : MX_FP4_MXFP4;
            int int8 = !strcmp(FAMILIES[f], "nvfp4-int8qk");
            size_t nq = (size_t)B * Hq * Nq * D, nk = (size_t)B * Hkv * Nk * D;
            float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4);
            mx_rng rng;
            mx_rng_seed(&rng, gpu_seed_base() + 50 + f);
            gpu_random_bf16(&rng, q, nq, 0, 1);
            gpu_random_bf16(&rng, k, nk, 0.5, 2);
            gpu_random_bf16(&rng, v, nk, 0, 1);
            plant_specials(q, Nq, D, 1);
            plant_specials(k, Nk, D, 0);
            for (int j = 0; j < 32; j++) v[(size_t)j * D + 0] = 0.0f;
            v[(size_t)5 * D + 1] = 32768.0f;
            v[(size_t)9 * D + 3] = -INFINITY;
            char params[256];
            snprintf(params, sizeof params, "family=%s head_dim=%d arch=%s lse=1 smooth_k=1 variant=wgmma block_m=128 "
                     "warps=12 block_n=64 stages=2", FAMILIES[f], D, g_dev.arch);
            uint8_t *ws = NULL;
            mx_launch_plan lp;
            mxattn_status st = run_plan_raw(params, B, Hq, Hkv, Nq, Nk, D, q, k, v, &ws, &lp);
            if (st != MXATTN_OK) fail_msg("%s: %s", params, mxattn_last_error());
            const int DP = round_up(D, 64), PB = mx_fp4_block_size(kind), SPK = round_up(DP / PB, 4);
            const int NQ = round_up(Nq, 128), NK = int8 ? round_up(Nk, 64) : round_up(Nk, 64);
            float *mean = malloc(D * 4), *ks = malloc(nk * 4);
            mx_channel_mean(k, Nk, D, D, mean);
            mx_subtract_mean(k, Nk, D, D, mean, ks);
            long bad = 0;
            if (!int8) {
                for (int h = 0; h < Hq; h++)
                    bad += check_fp4_operand(kind, q + (size_t)h * Nq * D, Nq, D,
                                             (const uint16_t *)(ws + lp.ws_off[0]) + (size_t)h * NQ * DPAD, DPAD, NQ,
                                             ws + lp.ws_off[1] + (size_t)h * NQ * SPK, SPK, 1, "Q");
                bad += check_fp4_operand(kind, ks, Nk, D, (const uint16_t *)(ws + lp.ws_off[2]), DPAD, NK,
                                         ws + lp.ws_off[3], SPK, 1, "K");
            } else {
                int8_t *c8 = malloc(nq > nk ? nq : nk);
                float *sc = malloc(((Nk > Nq ? Nk : Nq) / 64 + 2) * sizeof(float)), *cf = malloc((nq > nk ? nq : nk) * 4);
                for (int t = 0; t < 1 + Hq; t++) {   /* K, then each Q head */
                    const int rows = t ? Nq : Nk, ib = t ? 128 : 64, NR = t ? NQ : NK;
                    mx_int8_quantize_blocks(t ? q + (size_t)(t - 1) * Nq * D : ks, rows, D, D, ib, c8, sc);
                    for (size_t i = 0; i < (size_t)rows * D; i++) cf[i] = c8[i];
                    const uint8_t *sec = ws + lp.ws_off[t ? 0 : 2] + (t ? (size_t)(t - 1) * NQ * DPAD * 2 : 0);
                    bad += compare_bf16(cf, rows, D, (const uint16_t *)sec, DPAD, NR, t ? "int8 Q" : "int8 K");
                    const float *gs = (const float *)(ws + lp.ws_off[t ? 1 : 3]) + (t ? (size_t)(t - 1) * (NQ / 128) : 0);
                    for (int b = 0; b < (rows + ib - 1) / ib; b++)
                        if (memcmp(&gs[b], &sc[b], 4) && !(isnan(gs[b]) && isnan(sc[b])) && bad++ < 5)
                            printf("  int8 scale %d of operand %d: got %a want %a\n", b, t, gs[b], sc[b]);
                }
                free(c8); free(sc); free(cf);
            }
            {   /* V: quantized along the keys (the rows of V^T), stored key-major; scales key-block major */
                float *vt = malloc((size_t)D * Nk * 4);
                for (int j = 0; j < Nk; j++)
                    for (int c = 0; c < D; c++) vt[(size_t)c * Nk + j] = v[(size_t)j * D + c];
                int padded = mx_fp4_padded_cols(kind, Nk);
                uint8_t *rc = calloc(mx_fp4_codes_bytes(kind, D, Nk) + 1, 1), *rs = calloc(mx_fp4_scales_bytes(kind, D, Nk) + 1, 1);
                float *dq = malloc((size_t)D * Nk * 4), *back = malloc((size_t)D * Nk * 4);
                mx_fp4_quantize(kind, vt, D, Nk, Nk, rc, rs);
                mx_fp4_dequantize(kind, rc, rs, D, Nk, dq, Nk);
                for (int c = 0; c < D; c++)
                    for (int j = 0; j < Nk; j++) back[(size_t)j * D + c] = dq[(size_t)c * Nk + j];
                bad += compare_bf16(back, Nk, D, (const uint16_t *)(ws + lp.ws_off[4]), DPAD, NK, "V");
                for (int c = 0; c < D; c++)
                    for (int b = 0; b < padded / PB; b++) {
                        uint8_t want = rs[(size_t)c * (padded / PB) + b], g = ws[lp.ws_off[5] + (size_t)b * DPAD + c];
                        if (g != want && bad++ < 5) printf("  V scale channel %d block %d: got %02x want %02x\n", c, b, g, want);
                    }
                free(vt); free(rc); free(rs); free(dq); free(back);
            }
            printf("%-13s D=%3d wgmma operands: %ld mismatches\n", FAMILIES[f], D, bad);
            total_bad += bad;
            free(q); free(k); free(v); free(mean); free(ks); free(ws);
        }
    assert_int_equal(total_bad, 0);
}

/* The wgmma kernel against the pipeline reference (p_tile = its block_n) and
 * fp64: head dims that are not multiples of 16 or 64, one row, 63, 2049,
 * every causal alignment, one KV head, one to three consumer warpgroups,
 * 64- and 128-key tiles, both dtypes, padded strides (direct P:
 * test_two_level_beats_direct, whose default plan is this kernel). */
static int wgmma_shapes(int f) {
    static const struct { int d, nq, nk, causal, bm, bn; } shapes[] = {
        {8, 63, 63, 1, 128, 128}, {72, 1, 129, 0, 64, 64}, {100, 63, 63, 2, 128, 128}, {128, 2049, 2049, 1, 128, 128},
        {64, 2049, 63, 0, 192, 128}, {72, 63, 2049, 2, 128, 64}, {128, 1, 2049, 0, 128, 128}, {96, 300, 17, 1, 64, 128},
        {128, 333, 1000, 2, 192, 64},   /* three consumers at D = 128: P V by halves */
    };
    int failures = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        char config[160];
        snprintf(config, sizeof config, "variant=wgmma block_m=%d warps=%d block_n=%d stages=2", shapes[i].bm,
                 shapes[i].bm / 16 + 4, shapes[i].bn);
        gpu_case c = {.family = FAMILIES[f], .batch = 1 + (int)i % 2, .heads_q = 2, .heads_kv = 1,
                      .seq_q = shapes[i].nq, .seq_k = shapes[i].nk, .head_dim = shapes[i].d,
                      .causal = (mxattn_causal)shapes[i].causal, .dtype = (i + f) % 3 == 2 ? MXATTN_F16 : MXATTN_BF16,
                      .layout = (mxattn_layout)(i % 2), .pad = (int)(i % 3) * 8, .lse = (int)(i + f) % 2, .config = config};
        failures += check_case(&c, gpu_seed_base() + 300 + 10 * f + i);
    }
    return failures;
}
static void test_wgmma_shapes_nvfp4(void **state) { if (!on_hopper()) skip(); assert_int_equal(wgmma_shapes(0), 0); }
static void test_wgmma_shapes_mxfp4(void **state) { if (!on_hopper()) skip(); assert_int_equal(wgmma_shapes(1), 0); }
static void test_wgmma_shapes_int8qk(void **state) { if (!on_hopper()) skip(); assert_int_equal(wgmma_shapes(2), 0); }


int main(void) {
    gpu_open_or_skip(&g_dev, "gpu_fp4");
    mxattn_options opts;
    mxattn_options_init(&opts);
    opts.no_cache = 1;
    if (mxattn_create(&g_ctx, &opts) != MXATTN_OK || mx_gen_open(&g_gen) != MXATTN_OK) {
        printf("setup: %s\n", mxattn_last_error());
        return 1;
    }
    printf("gpu_fp4 on %s (%s)\n", g_dev.name, g_dev.arch);
    /* GPU_FP4_ONLY=pattern runs the tests whose names match (cmocka's * and ?),
     * e.g. one family's shape sweep. */
    const char *only = getenv("GPU_FP4_ONLY");
    if (only && *only) cmocka_set_test_filter(only);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantizers_bit_exact),
        cmocka_unit_test(test_int8_ties_bit_exact),
        cmocka_unit_test(test_wgmma_operands_bit_exact),
        cmocka_unit_test(test_wgmma_shapes_nvfp4),
        cmocka_unit_test(test_wgmma_shapes_mxfp4),
        cmocka_unit_test(test_wgmma_shapes_int8qk),
        cmocka_unit_test(test_head_dims_each_matches_reference_in_every_fp4_family),
        cmocka_unit_test(test_lengths_and_gqa),
        cmocka_unit_test(test_two_level_beats_direct),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    mx_gen_close(g_gen);
    mxattn_destroy(g_ctx);
    mx_device_close(&g_dev);
    return rc;
}
