/* The INT8 families (int8-f16, int8-fp8) on a GPU:
 *  1. the quantization kernels' workspace, bit for bit against numerics/'s
 *     quantizers, on random inputs with an all-zero block, a huge outlier,
 *     exact rounding ties, NaN and Inf;
 *  2. the whole plan against the quantized-pipeline reference configured to
 *     the kernel's quantization (Q per 16 rows, K per 16 keys, P per key tile
 *     of block_n), tightly, and against fp64 within a bound per family;
 * across head dims, ragged lengths, causal alignments and grouped-query heads;
 *  3. programmatic dependent launch (the plans' "pdl" steps): the same bits
 *     with it and without (MXATTN_PDL=0).
 *
 * What happens to NaN/Inf (same on both sides, checked in test 1): a NaN or
 * an Inf makes its block's (or group's, or V channel's) scale NaN and every
 * code of it 0 (numerics.h), so the block dequantizes to NaN; the attention
 * output of such inputs is checked by gpu_nan. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "support/gpu_harness.h"
#include "jit/jit.h"
#include "util/err.h"

static mx_device g_dev;
static mxattn_ctx *g_ctx;

/* ---- 1. quantizers, bit for bit ------------------------------------------ */

typedef struct {
    const char *family;
    int d, heads_q, heads_kv, seq_q, seq_k, smooth_k;
    mxattn_dtype dtype;
    float scale_log2;        /* 1: Q's codes can hit exact ties */
    int v_terms;             /* int8-fp8: 2 adds V's second E4M3 term (0 reads as 1) */
} quant_case;

static float round_in(mxattn_dtype t, float x) { return t == MXATTN_F16 ? mx_round_f16(x) : mx_round_bf16(x); }
static uint16_t to_half(mxattn_dtype t, float x) { return t == MXATTN_F16 ? mx_f32_to_f16(x) : mx_f32_to_bf16(x); }
static int same_float(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, 4) == 0; }
static int round_up(int x, int m) { return (x + m - 1) / m * m; }
static int permuted_key(int pos) { return 16 * (pos / 16) + 2 * (pos % 16 / 4) + (pos & 1) + 8 * ((pos >> 1) & 1); }

/* Inputs: Gaussian, then the special values (head 0 of Q, kv head 0 of K/V). */
static void make_inputs(const quant_case *c, mx_rng *rng, float *q, float *k, float *v) {
    size_t nq = (size_t)c->heads_q * c->seq_q * c->d, nk = (size_t)c->heads_kv * c->seq_k * c->d;
    mx_rng_fill_gaussian(rng, q, nq, 0, 1);
    mx_rng_fill_gaussian(rng, k, nk, 0.5, 1);   /* a channel mean for smooth-K to remove */
    mx_rng_fill_gaussian(rng, v, nk, 0, 1);
    int d = c->d;
    for (int i = 0; i < 16 * d; i++) q[i] = 0;                 /* all-zero Q block */
    if ((size_t)c->heads_q * c->seq_q > 20) q[20 * d + 3] = NAN;   /* NaN in Q block 1 (or the next head's) */
    k[5 * d + 3] = 3000.f;                                     /* a huge K outlier */
    v[7 * d + 2] = INFINITY;                                   /* Inf in V channel 2 */
    if (c->scale_log2 == 1.f && c->seq_q >= 48) {              /* ties in Q block 2: scale = 127/127 = 1 */
        for (int i = 32 * d; i < 48 * d; i++) q[i] = (float)((i % 7) - 3) + 0.5f;
        q[40 * d] = 127.f;
    }
    if (!c->smooth_k && c->seq_k >= 32) {                      /* ties in K block 1 */
        for (int i = 16 * d; i < 32 * d; i++) k[i] = (float)((i % 9) - 4) + 0.5f;
        k[20 * d + 1] = -127.f;
    }
    if (c->seq_k >= 16) {                                      /* E4M3 ties in V channel 1: scale 448/448 = 1 */
        static const float ties[] = {448.f, 17.f, 19.f, -17.f, 9.f, 4.25f, 0.5f, 24.f};
        for (int j = 0; j < 16; j++) v[j * d + 1] = ties[j % 8] * (j >= 8 ? -1.f : 1.f);
    }
    /* Blocks so small that 1/scale overflows: the quantizers' 2^100 path
     * (mx_scale_reciprocal).  bf16 keeps them; f16 flushes them to zero. */
    if (c->seq_q >= 64)
        for (int i = 48 * d; i < 64 * d; i++) q[i] *= 1e-38f;  /* Q block 3 */
    for (int j = 0; j < c->seq_k && d > 5; j++) v[(size_t)j * d + 5] *= 1e-38f;   /* V channel 5 */
    if (!c->smooth_k)   /* K's keys from 128: whole K blocks and per-thread windows (a mean would lift them) */
        for (size_t i = (size_t)128 * d; i < (size_t)c->seq_k * d; i++) k[i] *= 1e-38f;
    for (size_t i = 0; i < nq; i++) q[i] = round_in(c->dtype, q[i]);
    for (size_t i = 0; i < nk; i++) { k[i] = round_in(c->dtype, k[i]); v[i] = round_in(c->dtype, v[i]); }
}

static mxattn_status upload_halves(const quant_case *c, const float *x, size_t n, void **out) {
    mxattn_status st = MXATTN_OK;
    uint16_t *h = malloc(n * 2);
    if (!h) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "test");
    for (size_t i = 0; i < n; i++) h[i] = to_half(c->dtype, x[i]);
    MX_TRY(mx_mem_alloc(&g_dev, n * 2, out));
    MX_TRY(mx_memcpy_htod(&g_dev, *out, h, n * 2));
fail:
    free(h);
    return st;
}

#define EXPECT(cond, ...) do { if (!(cond)) { if (bad++ < 8) { printf("  mismatch: "); printf(__VA_ARGS__); printf("\n"); } } } while (0)

/* Compares the workspace with numerics' quantizers; returns the mismatches. */
static long compare_workspace(const quant_case *c, const mx_launch_plan *lp, const uint8_t *ws, int bm, int bn,
                              const float *q, const float *k, const float *v) {
    long bad = 0;
    int d = c->d, d32 = round_up(d, 32), dv = round_up(d, 16);
    int nqp = round_up(c->seq_q, bm), nkp = round_up(c->seq_k, bn), gqa = c->heads_q / c->heads_kv;
    int fp8 = !strcmp(c->family, "int8-fp8");
    size_t big = (size_t)(c->seq_q > c->seq_k ? c->seq_q : c->seq_k) * d;
    float *x = malloc(big * 4), *mean = calloc((size_t)c->heads_kv * d, 4), *scales = malloc(big * 4);
    int8_t *codes = malloc(big);
    uint8_t *e4 = malloc(big), *e4_lo = malloc(big);
    int terms = c->v_terms == 2 ? 2 : 1;
    double *corr = malloc(big * 8);
    for (int h = 0; h < c->heads_kv; h++) {
        const float *kh = k + (size_t)h * c->seq_k * d, *vh = v + (size_t)h * c->seq_k * d;
        float *mh = mean + (size_t)h * d;
        if (c->smooth_k) mx_channel_mean_sampled(kh, c->seq_k, d, d, mx_kmean_step(c->seq_k), mh);
        const float *km = (const float *)(ws + lp->ws_off[4]) + (size_t)h * d32;
        for (int ch = 0; ch < d32; ch++) EXPECT(same_float(km[ch], ch < d ? mh[ch] : 0.f), "kmean h%d c%d %g vs %g", h, ch, km[ch], ch < d ? mh[ch] : 0.f);
        mx_subtract_mean(kh, c->seq_k, d, d, mh, x);
        /* int8-fp8: SageAttention2's per-thread groups; int8-f16: 16-key blocks. */
        int k_scales = fp8 ? mx_int8_per_thread_groups(nkp, 1) : nkp / 16;
        if (fp8) mx_int8_quantize_per_thread(x, c->seq_k, d, d, 1, codes, scales);
        else mx_int8_quantize_blocks(x, c->seq_k, d, d, 16, codes, scales);
        const int8_t *k8 = (const int8_t *)(ws + lp->ws_off[1]) + (size_t)h * nkp * d32;
        const float *ks = (const float *)(ws + lp->ws_off[3]) + (size_t)h * k_scales;
        for (int j = 0; j < nkp; j++)
            for (int ch = 0; ch < d32; ch++) {
                int want = j < c->seq_k && ch < d ? codes[(size_t)j * d + ch] : 0;
                EXPECT(k8[(size_t)j * d32 + ch] == want, "k8 h%d key%d c%d %d vs %d", h, j, ch, k8[(size_t)j * d32 + ch], want);
            }
        for (int b = 0; b < k_scales; b++) {
            int used = fp8 ? b < mx_int8_per_thread_groups(c->seq_k, 1) : b * 16 < c->seq_k;
            EXPECT(same_float(ks[b], used ? scales[b] : 0.f), "kscale h%d group%d %g vs %g", h, b, ks[b], used ? scales[b] : 0.f);
        }
        if (!fp8) continue;
        if (terms == 2) mx_e4m3x2_quantize_per_channel(vh, c->seq_k, d, d, e4, e4_lo, scales);
        else mx_e4m3_quantize_per_channel(vh, c->seq_k, d, d, e4, scales);
        const float *vs = (const float *)(ws + lp->ws_off[5]) + (size_t)h * d32;
        const uint8_t *vt = ws + lp->ws_off[6] + (size_t)h * terms * dv * nkp;
        for (int ch = 0; ch < d32; ch++) EXPECT(same_float(vs[ch], ch < d ? scales[ch] : 0.f), "vscale h%d c%d %g vs %g", h, ch, vs[ch], ch < d ? scales[ch] : 0.f);
        for (int ch = 0; ch < dv; ch++)
            for (int pos = 0; pos < nkp; pos++) {
                int key = permuted_key(pos);
                int want = key < c->seq_k && ch < d ? e4[(size_t)key * d + ch] : 0;
                EXPECT(vt[(size_t)ch * nkp + pos] == want, "v8t h%d c%d pos%d (key %d) 0x%02x vs 0x%02x", h, ch, pos, key, vt[(size_t)ch * nkp + pos], want);
                if (terms == 1) continue;
                int want_lo = key < c->seq_k && ch < d ? e4_lo[(size_t)key * d + ch] : 0;
                uint8_t got_lo = vt[(size_t)(dv + ch) * nkp + pos];
                EXPECT(got_lo == want_lo, "v8t lo h%d c%d pos%d (key %d) 0x%02x vs 0x%02x", h, ch, pos, key, got_lo, want_lo);
            }
    }
    for (int h = 0; h < c->heads_q; h++) {
        const float *qh = q + (size_t)h * c->seq_q * d;
        for (size_t i = 0; i < (size_t)c->seq_q * d; i++) x[i] = qh[i] * c->scale_log2;   /* fp32, as the kernel */
        int q_scales = fp8 ? nqp / 2 : nqp / 16;
        if (fp8) mx_int8_quantize_per_thread(x, c->seq_q, d, d, 0, codes, scales);
        else mx_int8_quantize_blocks(x, c->seq_q, d, d, 16, codes, scales);
        const int8_t *q8 = (const int8_t *)(ws + lp->ws_off[0]) + (size_t)h * nqp * d32;
        const float *qs = (const float *)(ws + lp->ws_off[2]) + (size_t)h * q_scales;
        for (int i = 0; i < nqp; i++)
            for (int ch = 0; ch < d32; ch++) {
                int want = i < c->seq_q && ch < d ? codes[(size_t)i * d + ch] : 0;
                EXPECT(q8[(size_t)i * d32 + ch] == want, "q8 h%d row%d c%d %d vs %d", h, i, ch, q8[(size_t)i * d32 + ch], want);
            }
        for (int b = 0; b < q_scales; b++) {
            int used = fp8 ? b < mx_int8_per_thread_groups(c->seq_q, 0) : b * 16 < c->seq_q;
            EXPECT(same_float(qs[b], used ? scales[b] : 0.f), "qscale h%d group%d %g vs %g", h, b, qs[b], used ? scales[b] : 0.f);
        }
        if (!c->smooth_k) continue;
        /* The LSE correction is an fp32 dot product on the GPU: close, not bit-exact. */
        mx_smooth_k_correction(x, c->seq_q, d, d, mean + (size_t)(h / gqa) * d, corr);
        const float *cw = (const float *)(ws + lp->ws_off[7]) + (size_t)h * nqp;
        for (int i = 0; i < c->seq_q; i++)
            if (!isnan(corr[i])) EXPECT(fabs(cw[i] - corr[i]) <= 1e-4 * (1 + fabs(corr[i])), "corr h%d row%d %g vs %g", h, i, cw[i], corr[i]);
    }
    free(x); free(mean); free(scales); free(codes); free(e4); free(e4_lo); free(corr);
    return bad;
}

static long run_quant_case(mx_gen *gen, pthread_mutex_t *lock, const quant_case *c, uint64_t seed) {
    mxattn_status st = MXATTN_OK;
    long bad = -1;
    mx_jit_env env = {.gen = gen, .gen_lock = lock, .cache = NULL, .dev = &g_dev};
    snprintf(env.arch, sizeof env.arch, "%s", g_dev.arch);
    mx_jit_kernel kern;
    memset(&kern, 0, sizeof kern);
    void *dq = NULL, *dk = NULL, *dv = NULL, *dws = NULL;
    uint8_t *ws = NULL;
    size_t nq = (size_t)c->heads_q * c->seq_q * c->d, nk = (size_t)c->heads_kv * c->seq_k * c->d;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4);
    mx_rng rng;
    mx_rng_seed(&rng, seed);
    make_inputs(c, &rng, q, k, v);
    char params[512], sizes[256];
    int align = c->d % 8 == 0 ? 8 : c->d % 4 == 0 ? 4 : c->d % 2 == 0 ? 2 : 1;
    const char *dt = c->dtype == MXATTN_F16 ? "f16" : "bf16";
    snprintf(params, sizeof params, "family=%s arch=%s head_dim=%d dtype=%s out_dtype=%s causal=0 lse=1 align=%d smooth_k=%d gqa=%d%s",
             c->family, g_dev.arch, c->d, dt, dt, align, c->smooth_k, c->heads_q / c->heads_kv,
             c->v_terms == 2 ? " v_terms=2" : "");
    snprintf(sizes, sizeof sizes, "batch=1 heads_q=%d heads_kv=%d seq_q=%d seq_k=%d head_dim=%d",
             c->heads_q, c->heads_kv, c->seq_q, c->seq_k, c->d);
    MX_TRY(mx_jit_build(&env, params, sizes, &kern));
    int bm = (int)mx_params_get_int(kern.knobs, "block_m", 0), bn = (int)mx_params_get_int(kern.knobs, "block_n", 0);
    MX_TRY(upload_halves(c, q, nq, &dq));
    MX_TRY(upload_halves(c, k, nk, &dk));
    MX_TRY(upload_halves(c, v, nk, &dv));
    size_t wsb = kern.launch.workspace_bytes;
    MX_TRY(mx_mem_alloc(&g_dev, wsb, &dws));
    MX_TRY(mx_memset_d8(&g_dev, dws, 0xA5, wsb, NULL));     /* poison: padding must be written */
    mx_kernel_args a;
    memset(&a, 0, sizeof a);
    a.q = dq; a.k = dk; a.v = dv; a.ws = dws;
    a.q_ss = c->d; a.q_sh = (int64_t)c->seq_q * c->d; a.q_sb = a.q_sh * c->heads_q;
    a.k_ss = a.v_ss = c->d; a.k_sh = a.v_sh = (int64_t)c->seq_k * c->d; a.k_sb = a.v_sb = a.k_sh * c->heads_kv;
    a.batch = 1; a.heads_q = c->heads_q; a.heads_kv = c->heads_kv; a.seq_q = c->seq_q; a.seq_k = c->seq_k;
    a.scale_log2 = c->scale_log2; a.sm_scale = c->scale_log2 / 1.4426950408889634f;
    a.gqa = c->heads_q / c->heads_kv;
    mx_launch_plan quant = kern.launch;
    quant.n_steps = kern.launch.main_step;                   /* the stats and quant kernels, not attention */
    MX_TRY(mx_launch_plan_run(&g_dev, &quant, &a, NULL));
    MX_TRY(mx_device_synchronize(&g_dev));
    ws = malloc(wsb);
    MX_TRY(mx_memcpy_dtoh(&g_dev, ws, dws, wsb));
    bad = compare_workspace(c, &kern.launch, ws, bm, bn, q, k, v);
    printf("%s %s D=%d Hq=%d Hkv=%d Nq=%d Nk=%d smooth_k=%d v_terms=%d scale_log2=%g [%s]: %ld mismatches\n",
           bad ? "FAIL" : "ok  ", c->family, c->d, c->heads_q, c->heads_kv, c->seq_q, c->seq_k, c->smooth_k,
           c->v_terms == 2 ? 2 : 1, c->scale_log2, kern.knobs, bad);
fail:
    if (st != MXATTN_OK) printf("FAIL %s D=%d: %s: %s\n", c->family, c->d, mxattn_status_string(st), mxattn_last_error());
    mx_jit_release(&env, &kern);
    mx_mem_free(&g_dev, dq); mx_mem_free(&g_dev, dk); mx_mem_free(&g_dev, dv); mx_mem_free(&g_dev, dws);
    free(q); free(k); free(v); free(ws);
    return bad;
}

static void test_quantizers_bit_exact(void **state) {
    static const quant_case cases[] = {
        {"int8-fp8", 64, 2, 1, 37, 50, 1, MXATTN_BF16, 0.18033688f, 1},
        {"int8-fp8", 80, 4, 2, 64, 100, 0, MXATTN_F16, 1.f, 1},
        {"int8-fp8", 128, 2, 2, 200, 333, 1, MXATTN_BF16, 1.f, 1},
        {"int8-f16", 96, 3, 1, 48, 17, 1, MXATTN_F16, 0.14724840f, 1},
        {"int8-f16", 256, 2, 1, 50, 64, 0, MXATTN_BF16, 1.f, 1},
        /* Head dims that are not multiples of 8: the quantizer's 8-, 4- and
         * 2-byte loads and the V^T packing with fewer channels per lane. */
        {"int8-fp8", 100, 2, 1, 45, 77, 1, MXATTN_BF16, 0.14426950f, 1},
        {"int8-fp8", 50, 1, 1, 33, 70, 1, MXATTN_F16, 1.f, 1},
        {"int8-f16", 17, 2, 2, 20, 19, 1, MXATTN_BF16, 0.3f, 1},
        /* V in two E4M3 terms (variant=wgmma, the default here): the second
         * term's rows, with the special values (Inf in V channel 2). */
        {"int8-fp8", 128, 2, 1, 70, 333, 1, MXATTN_BF16, 0.18033688f, 2},
        {"int8-fp8", 72, 1, 1, 40, 45, 0, MXATTN_F16, 1.f, 2},
        /* Rows of 12 and 24 vectors: a lane keeps three sets of K's channel
         * means, one for every third slot (quant_int8's MEAN_PERIOD). */
        {"int8-fp8", 96, 2, 1, 50, 300, 1, MXATTN_BF16, 0.18033688f, 1},
        {"int8-f16", 192, 2, 2, 33, 90, 1, MXATTN_F16, 1.f, 1},
        /* Tiny Q blocks and K windows in bf16 for both families' quantizers
         * (Q block 3, keys from 128): the codes of scales below 2^-100. */
        {"int8-fp8", 64, 1, 1, 64, 150, 0, MXATTN_BF16, 1.f, 1},
        {"int8-f16", 64, 1, 1, 64, 150, 0, MXATTN_BF16, 1.f, 1},
        /* 1024 keys and more: smooth-K's mean from every 8th key (mx_kmean_step). */
        {"int8-fp8", 64, 2, 1, 40, 1100, 1, MXATTN_BF16, 0.18033688f, 1},
        {"int8-f16", 128, 1, 1, 40, 1031, 1, MXATTN_F16, 1.f, 1},
    };
    mx_gen *gen = NULL;
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    assert_int_equal(mx_gen_open(&gen), MXATTN_OK);
    long failures = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].v_terms == 2 && strcmp(g_dev.arch, "sm_90a") != 0) continue;   /* wgmma only */
        failures += run_quant_case(gen, &lock, &cases[i], 1000 + i) != 0;
    }
    mx_gen_close(gen);
    assert_int_equal(failures, 0);
}

/* ---- 2. attention ------------------------------------------------------- */

/* The INT8 families' check: gpu_check_int8_case (tests/support/gpu_harness.h). */
static int check_case(const gpu_case *c, uint64_t seed) { return gpu_check_int8_case(g_ctx, &g_dev, c, seed, NULL); }

static const char *FAMILIES[] = {"int8-f16", "int8-fp8"};

static void test_head_dims_each_matches_reference_in_both_families(void **state) {
    static const int dims[] = {64, 80, 96, 128, 256};
    static const int seqs[][2] = {{127, 127}, {17, 1000}, {1000, 17}, {300, 300}, {128, 256}};
    int failures = 0;
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < 5; i++) {
            int j = i + f;
            gpu_case c = {.family = FAMILIES[f], .batch = 1 + j % 2, .heads_kv = 1 + i % 2, .head_dim = dims[i],
                          .causal = (mxattn_causal)(j % 3), .dtype = j % 3 == 2 ? MXATTN_F16 : MXATTN_BF16,
                          .layout = (mxattn_layout)(j % 2), .pad = (j % 3) * 8, .lse = j % 2};
            c.heads_q = c.heads_kv * (i % 3 == 0 ? 1 : i % 3 == 1 ? 4 : 8);
            c.seq_q = seqs[j % 5][0];
            c.seq_k = seqs[j % 5][1];
            failures += check_case(&c, gpu_seed_base() + 10 * f + i);
        }
    assert_int_equal(failures, 0);
}

static void test_lengths_and_causal(void **state) {
    static const int lens[] = {1, 17, 127, 1000};
    int failures = 0, i = 0;
    for (int f = 0; f < 2; f++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++) {
                gpu_case c = {.family = FAMILIES[f], .batch = 1, .heads_q = 2, .heads_kv = 1, .seq_q = lens[a],
                              .seq_k = lens[b], .head_dim = i % 2 ? 64 : 128, .causal = (mxattn_causal)(i % 3),
                              .dtype = MXATTN_BF16, .layout = MXATTN_LAYOUT_BHND, .lse = 1};
                failures += check_case(&c, gpu_seed_base() + 100 + i++);
            }
    assert_int_equal(failures, 0);
}

static void test_gqa_grouped_heads_match_reference_in_both_families(void **state) {
    static const int gqa[] = {1, 4, 8};
    int failures = 0;
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < 3; i++) {
            gpu_case c = {.family = FAMILIES[f], .batch = 2, .heads_kv = 2, .heads_q = 2 * gqa[i], .seq_q = 200,
                          .seq_k = 333, .head_dim = i == 1 ? 80 : 128, .causal = MXATTN_CAUSAL_BOTTOM_RIGHT,
                          .dtype = MXATTN_BF16, .layout = (mxattn_layout)(i % 2), .pad = i == 2 ? 8 : 0, .lse = 1};
            failures += check_case(&c, gpu_seed_base() + 200 + 10 * f + i);
        }
    assert_int_equal(failures, 0);
}

/* ---- 3. programmatic dependent launch ----------------------------------- */

/* Fills `n` bf16 values of a new device buffer with N(0, 1) draws. */
static void *fresh_gaussian_bf16(size_t n, uint64_t seed) {
    uint16_t *host = malloc(n * 2);
    assert_non_null(host);
    mx_rng rng;
    mx_rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++) host[i] = mx_f32_to_bf16((float)mx_rng_gaussian(&rng));
    void *d = NULL;
    assert_int_equal(mx_mem_alloc(&g_dev, n * 2, &d), MXATTN_OK);
    assert_int_equal(mx_memcpy_htod(&g_dev, d, host, n * 2), MXATTN_OK);
    free(host);
    return d;
}

/* The plan's output and LSE after running it on set X and then on set Y
 * (O and LSE poisoned first), with MXATTN_PDL as given ("1" or "0"). */
static void run_x_then_y(mxattn_plan *plan, void *const x[3], void *const y[3], void *o, float *lse,
                         size_t o_bytes, size_t lse_bytes, const char *pdl, uint8_t *o_host, uint8_t *lse_host) {
    setenv("MXATTN_PDL", pdl, 1);
    assert_int_equal(mx_memset_d8(&g_dev, o, 0xFF, o_bytes, NULL), MXATTN_OK);
    assert_int_equal(mx_memset_d8(&g_dev, lse, 0xFF, lse_bytes, NULL), MXATTN_OK);
    assert_int_equal(mxattn_run(plan, x[0], x[1], x[2], o, lse, NULL), MXATTN_OK);
    assert_int_equal(mxattn_run(plan, y[0], y[1], y[2], o, lse, NULL), MXATTN_OK);
    assert_int_equal(mx_device_synchronize(&g_dev), MXATTN_OK);
    assert_int_equal(mx_memcpy_dtoh(&g_dev, o_host, o, o_bytes), MXATTN_OK);
    assert_int_equal(mx_memcpy_dtoh(&g_dev, lse_host, lse, lse_bytes), MXATTN_OK);
    unsetenv("MXATTN_PDL");
}

/* The quant and attention kernels are "pdl" launches (runtime/launch_plan.c):
 * each may start while the kernel before it runs, and waits for it before it
 * reads what that kernel writes.  That changes when they run, never what they
 * compute: after a run on other inputs (whose codes and scales then sit in
 * the workspace, what a read before the wait would see), the output and the
 * LSE are the same bits with and without (MXATTN_PDL=0).  Many waves of
 * blocks (B=2, H=16, N=1500, causal and not), so that blocks of the next
 * kernel do start early; for every INT8 attention kernel there is. */
static void test_pdl_matches_plain_launches(void **state) {
    static const struct { const char *family, *config; mxattn_causal causal; } cases[] = {
        {"int8-fp8", NULL, MXATTN_CAUSAL_NONE},                 /* the default: wgmma on sm_90 */
        {"int8-fp8", NULL, MXATTN_CAUSAL_BOTTOM_RIGHT},
        {"int8-fp8", "variant=mma", MXATTN_CAUSAL_NONE},
        {"int8-f16", NULL, MXATTN_CAUSAL_TOP_LEFT},
    };
    const int batch = 2, heads = 16, seq = 1500, d = 128;
    const size_t n = (size_t)batch * heads * seq * d, o_bytes = n * 2, lse_bytes = (size_t)batch * heads * seq * 4;
    const uint64_t seed = gpu_seed_base();
    void *x[3], *y[3], *o = NULL;
    float *lse = NULL;
    for (int t = 0; t < 3; t++) {
        x[t] = fresh_gaussian_bf16(n, seed + t);
        y[t] = fresh_gaussian_bf16(n, seed + 3 + t);
    }
    assert_int_equal(mx_mem_alloc(&g_dev, o_bytes, &o), MXATTN_OK);
    assert_int_equal(mx_mem_alloc(&g_dev, lse_bytes, (void **)&lse), MXATTN_OK);
    uint8_t *o_pdl = malloc(o_bytes), *o_plain = malloc(o_bytes), *l_pdl = malloc(lse_bytes), *l_plain = malloc(lse_bytes);
    assert_true(o_pdl && o_plain && l_pdl && l_plain);
    int failures = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].config && g_dev.cc_major < 9) continue;
        mxattn_problem p;
        assert_int_equal(mxattn_problem_init(&p, cases[i].family, d), MXATTN_OK);
        p.batch = batch; p.heads_q = p.heads_kv = heads; p.seq_q = p.seq_k = seq;
        p.causal = cases[i].causal; p.return_lse = 1;
        mxattn_plan *plan = NULL;
        if (mxattn_plan_create(g_ctx, &p, cases[i].config, &plan) != MXATTN_OK) {
            printf("FAIL %s %s: %s\n", cases[i].family, cases[i].config ? cases[i].config : "", mxattn_last_error());
            failures++;
            continue;
        }
        mxattn_plan_info info;
        mxattn_plan_get_info(plan, &info);
        run_x_then_y(plan, x, y, o, lse, o_bytes, lse_bytes, "1", o_pdl, l_pdl);
        run_x_then_y(plan, x, y, o, lse, o_bytes, lse_bytes, "0", o_plain, l_plain);
        size_t o_diff = 0, l_diff = 0, poisoned = 0;
        for (size_t b = 0; b < o_bytes; b += 2) {
            o_diff += memcmp(o_pdl + b, o_plain + b, 2) != 0;
            poisoned += o_pdl[b] == 0xFF && o_pdl[b + 1] == 0xFF;
        }
        for (size_t b = 0; b < lse_bytes; b += 4) l_diff += memcmp(l_pdl + b, l_plain + b, 4) != 0;
        int ok = o_diff == 0 && l_diff == 0 && poisoned == 0;
        printf("%s %s causal=%d [%s]: %zu of %zu outputs and %zu LSEs differ, %zu unwritten\n", ok ? "ok  " : "FAIL",
               cases[i].family, (int)cases[i].causal, info.config, o_diff, n, l_diff, poisoned);
        failures += !ok;
        mxattn_plan_destroy(plan);
    }
    gpu_free_buffers(&g_dev, 3, x);
    gpu_free_buffers(&g_dev, 3, y);
    mx_mem_free(&g_dev, o);
    mx_mem_free(&g_dev, lse);
    free(o_pdl); free(o_plain); free(l_pdl); free(l_plain);
    assert_int_equal(failures, 0);
}

int main(void) {
    gpu_open_or_skip(&g_dev, "gpu_int8");
    if (strcmp(g_dev.arch, "sm_89") < 0 && strncmp(g_dev.arch, "sm_1", 4) != 0)
        printf("note: %s has no FP8 tensor cores; int8-fp8 cases will fail to plan\n", g_dev.arch);
    mxattn_options opts;
    mxattn_options_init(&opts);
    opts.no_cache = 1;   /* compile every kernel, use the default config */
    if (mxattn_create(&g_ctx, &opts) != MXATTN_OK) {
        printf("mxattn_create: %s\n", mxattn_last_error());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantizers_bit_exact),
        cmocka_unit_test(test_head_dims_each_matches_reference_in_both_families),
        cmocka_unit_test(test_lengths_and_causal),
        cmocka_unit_test(test_gqa_grouped_heads_match_reference_in_both_families),
        cmocka_unit_test(test_pdl_matches_plain_launches),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    mxattn_destroy(g_ctx);
    mx_device_close(&g_dev);
    return rc;
}
