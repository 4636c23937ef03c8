#include "gpu_harness.h"
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "gen/gen.h"
#include "util/err.h"
#include "support/ref_parallel.h"
#include "support/temp_dir.h"

uint64_t gpu_seed_base(void) {
    const char *fixed = getenv("MXATTN_TEST_SEED");
    return fixed && *fixed ? strtoull(fixed, NULL, 10) : (uint64_t)time(NULL);
}

int gpu_run_tests(const char *group, const struct CMUnitTest *tests, size_t count, int argc, char **argv) {
    int part = 0, parts = 1;
    if (argc > 2 && strcmp(argv[1], "--part") == 0) {
        if (sscanf(argv[2], "%d/%d", &part, &parts) != 2 || parts < 1 || part < 1 || part > parts) {
            printf("%s: --part wants K/N with 1 <= K <= N, not '%s'\n", group, argv[2]);
            return 1;
        }
        part--;
        cmocka_set_skip_filter("*speed*");
    } else if (argc > 1) {
        cmocka_set_test_filter(argv[1]);
    } else {
        cmocka_set_skip_filter("*speed*");
    }
    struct CMUnitTest *chosen = malloc(count * sizeof *chosen);
    if (!chosen) return 1;
    size_t n = 0;
    for (size_t i = part; i < count; i += (size_t)parts) chosen[n++] = tests[i];
    int failed = _cmocka_run_group_tests(group, chosen, n, NULL, NULL);
    free(chosen);
    return failed;
}

void gpu_open_or_skip(mx_device *dev, const char *test_name) {
    mxattn_status st = mx_device_open(dev, 0);
    if (st == MXATTN_OK) return;
    printf("%s: skipped, no GPU here (%s: %s)\n", test_name, mxattn_status_string(st), mxattn_last_error());
    exit(MX_TEST_SKIP);
}

int gpu_run_in_temp_dir(const char *name, const char *prefix, char *dir, size_t cap, char *db, size_t dbcap,
                        const char *db_name, const struct CMUnitTest *tests, size_t count) {
    mx_device dev;
    gpu_open_or_skip(&dev, name);
    mx_device_close(&dev);
    if (temp_dir_make(dir, cap, prefix)) return 1;
    snprintf(db, dbcap, "%s/%s", dir, db_name);
    int failed = _cmocka_run_group_tests("tests", tests, count, NULL, NULL);
    temp_dir_remove(dir);
    return failed;
}

mxattn_problem gpu_f16_problem(int head_dim, int batch, int heads, int seq) {
    mxattn_problem p;
    mxattn_problem_init(&p, "f16", head_dim);
    p.batch = batch;
    p.heads_q = p.heads_kv = heads;
    p.seq_q = p.seq_k = seq;
    return p;
}

void gpu_case_describe(const gpu_case *c, char *out, size_t cap) {
    static const char *causal[] = {"none", "top-left", "bottom-right"};
    snprintf(out, cap, "%s D=%d B=%d Hq=%d Hkv=%d Nq=%d Nk=%d causal=%s %s %s pad=%d lse=%d", c->family,
             c->head_dim, c->batch, c->heads_q, c->heads_kv, c->seq_q, c->seq_k, causal[c->causal],
             c->dtype == MXATTN_F16 ? "f16" : "bf16", c->layout == MXATTN_LAYOUT_BHND ? "bhnd" : "bnhd",
             c->pad, c->lse);
}

/* Strides of a padded tensor: each row, head and batch slice carries `pad`
 * unused elements, so nothing is contiguous and every stride is exercised. */
gpu_case gpu_head_dim_case(const char *family, int head_dim, int j) {
    static const int seqs[][2] = {{127, 127}, {17, 1000}, {1000, 17}, {1, 127}, {128, 256}, {300, 300}, {257, 513}};
    gpu_case c = {.family = family, .batch = 1 + j % 2, .heads_kv = 1 + j % 2, .head_dim = head_dim,
                  .causal = (mxattn_causal)(j % 3), .dtype = j % 4 == 3 ? MXATTN_F16 : MXATTN_BF16,
                  .layout = (mxattn_layout)(j % 2), .pad = (j % 3) * 8, .lse = (j + 1) % 2};
    c.heads_q = c.heads_kv * (j % 3 == 0 ? 1 : j % 3 == 1 ? 4 : 8);
    c.seq_q = seqs[j % 7][0];
    c.seq_k = seqs[j % 7][1];
    return c;
}

gpu_case gpu_tile_sweep_case(const char *family, int i) {
    return (gpu_case){.family = family, .batch = 2, .heads_q = 4, .heads_kv = 2, .seq_q = 333, .seq_k = 1000,
                      .head_dim = 128, .causal = (mxattn_causal)(i % 3), .dtype = i % 2 ? MXATTN_F16 : MXATTN_BF16,
                      .layout = MXATTN_LAYOUT_BNHD, .pad = 8, .lse = 1};
}

int gpu_lengths_case(const char *family, int n_lens, int i, gpu_case *c) {
    static const int lens[] = {1, 17, 127, 1000, 4097};
    int k = 0;
    for (int a = 0; a < n_lens; a++)
        for (int b = 0; b < n_lens; b++) {
            if (lens[a] * (long)lens[b] > 1000L * 4097) continue;  /* CPU reference time */
            if (k++ < i) continue;
            *c = (gpu_case){.family = family, .batch = 1, .heads_q = 2, .heads_kv = 1, .seq_q = lens[a],
                            .seq_k = lens[b], .head_dim = i % 2 ? 64 : 128, .causal = (mxattn_causal)(i % 3),
                            .dtype = MXATTN_BF16, .layout = (mxattn_layout)(i / 3 % 2), .pad = 8, .lse = 1};
            return 1;
        }
    return 0;
}

int gpu_check_lengths(const char *family, int n_lens, gpu_config_fn config_for, gpu_check_fn check, uint64_t seed) {
    int failures = 0;
    gpu_case c;
    for (int i = 0; gpu_lengths_case(family, n_lens, i, &c); i++)
        failures += check(&c, config_for(c.head_dim, i), gpu_seed_base() + seed + i);
    return failures;
}

int gpu_check_gqa(const char *family, int batch, int other_dim, gpu_config_fn config_for, gpu_check_fn check,
                  uint64_t seed) {
    static const int gqa[] = {1, 4, 8};
    int failures = 0;
    for (int i = 0; i < 3; i++) {
        gpu_case c = {.family = family, .batch = batch, .heads_kv = 2, .heads_q = 2 * gqa[i], .seq_q = 200,
                      .seq_k = 333, .head_dim = i == 1 ? other_dim : 128, .causal = MXATTN_CAUSAL_BOTTOM_RIGHT,
                      .dtype = MXATTN_BF16, .layout = (mxattn_layout)(i % 2), .pad = 8 * i, .lse = 1};
        failures += check(&c, config_for(c.head_dim, i), gpu_seed_base() + seed + i);
    }
    return failures;
}

static mxattn_strides padded_strides(const gpu_case *c, int heads, int seq) {
    mxattn_strides s;
    int64_t row = c->head_dim + c->pad;
    if (c->layout == MXATTN_LAYOUT_BHND) {
        s.seq = row;
        s.head = row * seq + c->pad;
        s.batch = s.head * heads + c->pad;
    } else {
        s.head = row;
        s.seq = row * heads + c->pad;
        s.batch = s.seq * seq + c->pad;
    }
    return s;
}

static size_t span(mxattn_strides s, int batch, int heads, int seq, int d) {
    return (size_t)((batch - 1) * s.batch + (heads - 1) * s.head + (seq - 1) * s.seq + d);
}

static uint16_t to_half(mxattn_dtype t, float x) { return t == MXATTN_F16 ? mx_f32_to_f16(x) : mx_f32_to_bf16(x); }
static float from_half(mxattn_dtype t, uint16_t h) { return t == MXATTN_F16 ? mx_f16_to_f32(h) : mx_bf16_to_f32(h); }

/* Random tensor: the rounded floats in BHND order (for the reference) and
 * the halves scattered at their strided places (for the GPU); the gaps hold
 * a NaN pattern, so a kernel that reads them poisons its output. */
static void make_tensor(const gpu_case *c, mx_rng *rng, int heads, int seq, mxattn_strides s,
                        float *ref, uint16_t *host, size_t host_len) {
    for (size_t i = 0; i < host_len; i++) host[i] = 0x7fc1;
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < heads; h++)
            for (int n = 0; n < seq; n++)
                for (int d = 0; d < c->head_dim; d++) {
                    uint16_t x = to_half(c->dtype, (float)mx_rng_gaussian(rng));
                    ref[(((size_t)b * heads + h) * seq + n) * c->head_dim + d] = from_half(c->dtype, x);
                    host[b * s.batch + h * s.head + n * s.seq + d] = x;
                }
}

static mxattn_status upload(const mx_device *dev, const uint16_t *host, size_t n, void **out) {
    mxattn_status st = mx_mem_alloc(dev, n * 2, out);
    if (st == MXATTN_OK) st = mx_memcpy_htod(dev, *out, host, n * 2);
    return st;
}

typedef struct { float *ref; uint16_t *host; size_t len; void *dev; mxattn_strides s; } tensor;

static void tensor_free(const mx_device *dev, tensor *t) {
    free(t->ref); free(t->host);
    mx_mem_free(dev, t->dev);
    memset(t, 0, sizeof *t);
}

static mxattn_status tensor_make(const mx_device *dev, const gpu_case *c, mx_rng *rng, int heads, int seq,
                                 int random, tensor *t) {
    t->s = padded_strides(c, heads, seq);
    t->len = span(t->s, c->batch, heads, seq, c->head_dim);
    t->ref = calloc((size_t)c->batch * heads * seq * c->head_dim, sizeof(float));
    t->host = malloc(t->len * 2);
    if (!t->ref || !t->host) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "test tensors");
    if (random) make_tensor(c, rng, heads, seq, t->s, t->ref, t->host, t->len);
    else for (size_t i = 0; i < t->len; i++) t->host[i] = 0x7fc1;  /* poison: NaN */
    return upload(dev, t->host, t->len, &t->dev);
}

double gpu_lse_error(const float *lse, const double *ref, size_t rows, long *rows_over) {
    double worst = 0;
    if (rows_over) *rows_over = 0;
    for (size_t i = 0; lse && i < rows; i++) {
        if (isinf(ref[i]) && isinf(lse[i]) && lse[i] < 0) continue;
        double e = fabs(lse[i] - ref[i]);
        if (!(e <= worst)) worst = isnan(e) || isinf(e) ? INFINITY : e;
        if (rows_over && !(e <= GPU_LSE_VS_PIPE)) (*rows_over)++;
    }
    return worst;
}

void gpu_output_free(gpu_output *out) {
    free(out->q); free(out->k); free(out->v); free(out->o); free(out->lse);
    memset(out, 0, sizeof *out);
}

/* The output tensor at its strided places, gathered in BHND order; a NaN is
 * poison the kernel left (or a NaN it made, which is as wrong). */
static mxattn_status gather_output(const gpu_case *c, const tensor *o, gpu_output *out) {
    size_t n = (size_t)c->batch * c->heads_q * c->seq_q * c->head_dim;
    out->o = malloc((n ? n : 1) * sizeof(float));
    if (!out->o) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "output of %zu values", n);
    for (int b = 0; b < c->batch; b++)
        for (int h = 0; h < c->heads_q; h++)
            for (int q = 0; q < c->seq_q; q++)
                for (int d = 0; d < c->head_dim; d++) {
                    float f = from_half(c->dtype, o->host[b * o->s.batch + h * o->s.head + q * o->s.seq + d]);
                    if (isnan(f)) out->unwritten++;
                    out->o[(((size_t)b * c->heads_q + h) * c->seq_q + q) * c->head_dim + d] = f;
                }
    return MXATTN_OK;
}

mxattn_status gpu_run_output(mxattn_ctx *ctx, const mx_device *dev, const gpu_case *c, uint64_t seed,
                             gpu_output *out) {
    mxattn_status st = MXATTN_OK;
    mx_rng rng;
    tensor q = {0}, k = {0}, v = {0}, o = {0};
    float *lse_dev = NULL;
    mxattn_plan *plan = NULL;
    mx_timer timer = {0};
    memset(out, 0, sizeof *out);
    mx_rng_seed(&rng, seed);
    MX_TRY(tensor_make(dev, c, &rng, c->heads_q, c->seq_q, 1, &q));
    MX_TRY(tensor_make(dev, c, &rng, c->heads_kv, c->seq_k, 1, &k));
    MX_TRY(tensor_make(dev, c, &rng, c->heads_kv, c->seq_k, 1, &v));
    MX_TRY(tensor_make(dev, c, &rng, c->heads_q, c->seq_q, 0, &o));
    size_t rows = (size_t)c->batch * c->heads_q * c->seq_q;
    if (c->lse) {
        MX_TRY(mx_mem_alloc(dev, rows * 4, (void **)&lse_dev));
        MX_TRY(mx_memset_d32(dev, lse_dev, 0x7fc00001u, rows, NULL));
        out->lse = malloc((rows ? rows : 1) * 4);
        if (!out->lse) MX_TRY(mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "LSE of %zu rows", rows));
    }
    mxattn_problem p;
    mxattn_problem_init(&p, c->family, c->head_dim);
    p.batch = c->batch; p.heads_q = c->heads_q; p.heads_kv = c->heads_kv;
    p.seq_q = c->seq_q; p.seq_k = c->seq_k; p.causal = c->causal;
    p.dtype = p.out_dtype = c->dtype; p.layout = c->layout; p.return_lse = c->lse;
    p.v_terms = c->v_terms ? c->v_terms : 1;
    p.q_strides = q.s; p.k_strides = k.s; p.v_strides = v.s; p.o_strides = o.s;
    MX_TRY(mxattn_plan_create(ctx, &p, c->config, &plan));
    mxattn_plan_info info;
    mxattn_plan_get_info(plan, &info);
    snprintf(out->config, sizeof out->config, "%s", info.config);
    for (int i = 1; i < c->launches; i++) MX_TRY(mxattn_run(plan, q.dev, k.dev, v.dev, o.dev, lse_dev, NULL));
    if (c->launches > 1) {
        MX_TRY(mx_memcpy_htod(dev, o.dev, o.host, o.len * 2));   /* the poison again */
        if (c->lse) MX_TRY(mx_memset_d32(dev, lse_dev, 0x7fc00001u, rows, NULL));
    }
    MX_TRY(mx_timer_create(dev, &timer));
    MX_TRY(mx_timer_start(&timer, NULL));
    MX_TRY(mxattn_run(plan, q.dev, k.dev, v.dev, o.dev, lse_dev, NULL));
    MX_TRY(mx_timer_stop(&timer, NULL));
    float ms = 0;
    MX_TRY(mx_timer_elapsed_ms(&timer, &ms));
    out->ms = ms;
    MX_TRY(mx_memcpy_dtoh(dev, o.host, o.dev, o.len * 2));
    if (c->lse) MX_TRY(mx_memcpy_dtoh(dev, out->lse, lse_dev, rows * 4));
    MX_TRY(gather_output(c, &o, out));
    out->q = q.ref; out->k = k.ref; out->v = v.ref;   /* the rounded inputs move to out */
    q.ref = k.ref = v.ref = NULL;
fail:
    mx_timer_destroy(&timer);
    mxattn_plan_destroy(plan);
    tensor_free(dev, &q); tensor_free(dev, &k); tensor_free(dev, &v); tensor_free(dev, &o);
    mx_mem_free(dev, lse_dev);
    if (st != MXATTN_OK) gpu_output_free(out);
    return st;
}

/* out's O and LSE against a reference's. */
static void score(const gpu_case *c, const gpu_output *out, const double *o_ref, const double *lse_ref,
                  gpu_result *r) {
    size_t rows = (size_t)c->batch * c->heads_q * c->seq_q;
    memset(r, 0, sizeof *r);
    r->o = mx_compare_f32(out->o, o_ref, rows * c->head_dim);
    r->lse_max_abs = gpu_lse_error(out->lse, lse_ref, rows, &r->lse_rows_over);
    r->unwritten = out->unwritten;
    r->ms = out->ms;
    snprintf(r->config, sizeof r->config, "%s", out->config);
}

/* fp64 attention of out's inputs. */
static mxattn_status exact_reference(const gpu_case *c, const gpu_output *out, double *o, double *lse) {
    mx_ref_shape s = {c->batch, c->heads_q, c->heads_kv, c->seq_q, c->seq_k, c->head_dim, c->causal, 0};
    return ref_attention_parallel(&s, NULL, out->q, out->k, out->v, o, lse, 0);
}

mxattn_status gpu_run_case(mxattn_ctx *ctx, const mx_device *dev, const gpu_case *c, uint64_t seed,
                           gpu_reference_fn reference, gpu_result *r) {
    mxattn_status st = MXATTN_OK;
    size_t rows = (size_t)c->batch * c->heads_q * c->seq_q;
    double *o_ref = malloc((rows ? rows : 1) * c->head_dim * sizeof(double));
    double *lse_ref = malloc((rows ? rows : 1) * sizeof(double));
    gpu_output out = {0};
    memset(r, 0, sizeof *r);
    if (!o_ref || !lse_ref) MX_TRY(mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "reference of %zu rows", rows));
    MX_TRY(gpu_run_output(ctx, dev, c, seed, &out));
    if (reference) MX_TRY(reference(c, out.config, out.q, out.k, out.v, o_ref, lse_ref));
    else MX_TRY(exact_reference(c, &out, o_ref, lse_ref));
    score(c, &out, o_ref, lse_ref, r);
fail:
    gpu_output_free(&out);
    free(o_ref); free(lse_ref);
    return st;
}

double gpu_time_plan(mxattn_ctx *ctx, const mx_device *dev, const mxattn_problem *p, const char *config,
                     void *q, void *k, void *v, void *o, char *used, size_t used_len) {
    mxattn_plan *plan = NULL;
    mx_timer timer = {0};
    float ms = -1;
    if (mxattn_plan_create(ctx, p, config, &plan) != MXATTN_OK) {
        printf("plan %s: %s\n", config ? config : "(default)", mxattn_last_error());
        return -1;
    }
    mxattn_plan_info info;
    mxattn_plan_get_info(plan, &info);
    snprintf(used, used_len, "%s, %d regs", info.config, info.registers);
    for (int i = 0; i < 3; i++) mxattn_run(plan, q, k, v, o, NULL, NULL);
    if (mx_timer_create(dev, &timer) == MXATTN_OK && mx_timer_start(&timer, NULL) == MXATTN_OK) {
        int ok = 1;
        for (int i = 0; i < 10; i++) ok &= mxattn_run(plan, q, k, v, o, NULL, NULL) == MXATTN_OK;
        if (ok && mx_timer_stop(&timer, NULL) == MXATTN_OK && mx_timer_elapsed_ms(&timer, &ms) == MXATTN_OK) ms /= 10;
        else ms = -1;
    }
    mx_timer_destroy(&timer);
    mxattn_plan_destroy(plan);
    return ms;
}

mxattn_status gpu_int8_pipeline_reference(const gpu_case *c, const char *config, const float *q, const float *k,
                                          const float *v, double *o, double *lse) {
    mx_ref_shape s = {c->batch, c->heads_q, c->heads_kv, c->seq_q, c->seq_k, c->head_dim, c->causal, 0};
    mx_ref_config cfg;
    mxattn_status st = mx_ref_family_config(c->family, 0, 1, c->dtype, &cfg);
    if (st != MXATTN_OK) return st;
    cfg.int8_block_q = cfg.int8_block_k = 16;
    cfg.p_tile = (int)mx_params_get_int(config, "block_n", 0);
    mx_ref_config_set_v_terms(&cfg, c->v_terms);
    cfg.q_prescale = (float)((double)(1.0f / sqrtf((float)c->head_dim)) * 1.4426950408889634);
    long overlap = mx_params_get_int(config, "overlap", -1);
    /* Every int8-fp8 wgmma kernel makes P's exponent in softmax_acc's folded
     * form; the ring (3) runs overlap=0's tile_scores. */
    cfg.p_fold = overlap == 0 || overlap == 3;
    cfg.l_from_p_hat = mx_params_get_int(config, "rowsum_mma", 0) == 1;
    if (strstr(config, "variant=decode")) {
        /* cuda/decode_quant.cuh: a scale a Q row; every 16 keys one block
         * of K mean, K scale and V scales; a power-of-two running max. */
        cfg.int8_block_q = 1;
        cfg.int8_per_thread = 0;
        cfg.kmean_sampled = 0;
        cfg.kv_tile = 16;
        cfg.p_base_pow2 = 1;
        cfg.p_fold = 0;
        cfg.l_from_p_hat = 0;
    }
    return ref_attention_parallel(&s, &cfg, q, k, v, o, lse, 0);
}

void gpu_gaussian_buffers(const mx_device *dev, int count, size_t elems, void **bufs) {
    const size_t chunk = (size_t)1 << 20;
    uint16_t *host = malloc(chunk * 2);
    assert_non_null(host);
    mx_rng rng;
    mx_rng_seed(&rng, 7);
    for (size_t i = 0; i < chunk; i++) host[i] = mx_f32_to_bf16((float)mx_rng_gaussian(&rng));
    for (int t = 0; t < count; t++) {
        assert_int_equal(mx_mem_alloc(dev, elems * 2, &bufs[t]), MXATTN_OK);
        for (size_t off = 0; off < elems; off += chunk) {
            size_t n = elems - off < chunk ? elems - off : chunk;
            assert_int_equal(mx_memcpy_htod(dev, (char *)bufs[t] + off * 2, host, n * 2), MXATTN_OK);
        }
    }
    free(host);
}

void gpu_free_buffers(const mx_device *dev, int count, void **bufs) {
    for (int t = 0; t < count; t++) mx_mem_free(dev, bufs[t]);
}

mxattn_status gpu_run_two_refs(mxattn_ctx *ctx, const mx_device *dev, const gpu_case *c, uint64_t seed,
                               gpu_reference_fn pipeline, gpu_diagnose_fn diagnose, gpu_two_refs *r) {
    mxattn_status st = MXATTN_OK;
    size_t rows = (size_t)c->batch * c->heads_q * c->seq_q, n = (rows ? rows : 1) * c->head_dim;
    double *o_pipe = malloc(n * sizeof(double)), *o_exact = malloc(n * sizeof(double));
    double *lse_pipe = malloc((rows ? rows : 1) * sizeof(double)), *lse_exact = malloc((rows ? rows : 1) * sizeof(double));
    gpu_output out = {0};
    memset(r, 0, sizeof *r);
    gpu_case_describe(c, r->what, sizeof r->what);
    if (!o_pipe || !o_exact || !lse_pipe || !lse_exact)
        MX_TRY(mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "references of %zu rows", rows));
    MX_TRY(gpu_run_output(ctx, dev, c, seed, &out));
    MX_TRY(pipeline(c, out.config, out.q, out.k, out.v, o_pipe, lse_pipe));
    MX_TRY(exact_reference(c, &out, o_exact, lse_exact));
    score(c, &out, o_pipe, lse_pipe, &r->pipe);
    score(c, &out, o_exact, lse_exact, &r->exact);
    r->design = mx_compare(o_pipe, o_exact, rows * c->head_dim);
    if (diagnose) diagnose(c, out.o, o_pipe, &r->pipe);
fail:
    if (st != MXATTN_OK)
        printf("FAIL %s [%s] seed %llu: %s: %s\n", r->what, c->config ? c->config : "default", (unsigned long long)seed,
               mxattn_status_string(st), mxattn_last_error());
    gpu_output_free(&out);
    free(o_pipe); free(o_exact); free(lse_pipe); free(lse_exact);
    return st;
}

gpu_bounds gpu_exact_bounds(double family_rel_l1, double family_cos, mx_error_stats design, double tol) {
    double rel = fmin(1.25 * design.rel_l1 + tol, 1.5 * family_rel_l1);
    double cos = fmax(1 - 1.25 * (1 - design.cosine) - 1e-5, 1 - 1.5 * (1 - family_cos));   /* 1e-5: bf16 output */
    return (gpu_bounds){fmax(family_rel_l1, rel), fmin(family_cos, cos)};
}

int gpu_lse_matches_pipeline(double worst, long rows_over, long rows) {
    return worst < GPU_LSE_ONE_FLIP && rows_over <= 1 + rows / 4096;
}

int gpu_check_int8_case(mxattn_ctx *ctx, const mx_device *dev, const gpu_case *c, uint64_t seed,
                        const char *variant) {
    gpu_two_refs t;
    if (gpu_run_two_refs(ctx, dev, c, seed, gpu_int8_pipeline_reference, NULL, &t) != MXATTN_OK) return 1;
    const gpu_result *r = &t.pipe, *e = &t.exact;
    int fp8 = !strcmp(c->family, "int8-fp8");
    double pipe_tol = c->dtype == MXATTN_BF16 ? PIPE_REL_L1_BF16 : PIPE_REL_L1_F16;
    int ok_pipe = r->unwritten == 0 && r->o.rel_l1 < pipe_tol && r->o.cosine > PIPE_COS &&
                  (!c->lse || gpu_lse_matches_pipeline(r->lse_max_abs, r->lse_rows_over, (long)c->batch * c->heads_q * c->seq_q));
    gpu_bounds exact = gpu_exact_bounds(fp8 ? FP8_FAMILY_REL_L1 : F16_FAMILY_REL_L1, fp8 ? FP8_FAMILY_COS : F16_FAMILY_COS,
                                        t.design, pipe_tol);
    int ok_exact = e->o.cosine >= exact.cos && e->o.rel_l1 <= exact.rel_l1 && (!c->lse || e->lse_max_abs < LSE_VS_FP64);
    int named = !variant || strstr(r->config, variant) != NULL;
    printf("%s %s [%s] seed %llu: pipeline rel_l1 %.2e cos %.7f lse %.1e | fp64 rel_l1 %.4f (bound %.4f) cos %.6f lse %.1e"
           " | unwritten %ld, %.3f ms%s%s\n", ok_pipe && ok_exact && named ? "ok  " : "FAIL", t.what, r->config,
           (unsigned long long)seed, r->o.rel_l1, r->o.cosine, r->lse_max_abs, e->o.rel_l1, exact.rel_l1, e->o.cosine,
           e->lse_max_abs, r->unwritten, r->ms, named ? "" : " not ", named ? "" : variant);
    return !(ok_pipe && ok_exact && named);
}

int gpu_check_f16_case(mxattn_ctx *ctx, const mx_device *dev, const gpu_case *c, uint64_t seed,
                       const char *variant) {
    char what[256];
    gpu_result r;
    gpu_case_describe(c, what, sizeof what);
    mxattn_status st = gpu_run_case(ctx, dev, c, seed, NULL, &r);
    if (st != MXATTN_OK) {
        printf("FAIL %s seed %llu: %s: %s\n", what, (unsigned long long)seed, mxattn_status_string(st),
               mxattn_last_error());
        return 1;
    }
    double tol = c->dtype == MXATTN_BF16 ? 3e-3 : 1e-3;
    int named = !variant || strstr(r.config, variant) != NULL;
    int ok = named && r.unwritten == 0 && r.o.rel_l1 < tol && (!c->lse || r.lse_max_abs < 1e-3);
    char note[96] = "";
    if (!named) snprintf(note, sizeof note, " (not %s)", variant);
    printf("%s %s [%s]: rel_l1 %.2e cos %.6f max_abs %.2e lse %.1e unwritten %ld, %.3f ms%s\n",
           ok ? "ok  " : "FAIL", what, r.config, r.o.rel_l1, r.o.cosine, r.o.max_abs, r.lse_max_abs, r.unwritten,
           r.ms, note);
    if (!ok) printf("     seed %llu\n", (unsigned long long)seed);
    return !ok;
}

mxattn_ctx *gpu_cacheless_ctx(void) {
    mxattn_options opts;
    mxattn_options_init(&opts);
    opts.no_cache = 1;
    mxattn_ctx *ctx = NULL;
    if (mxattn_create(&ctx, &opts) != MXATTN_OK) {
        printf("mxattn_create: %s\n", mxattn_last_error());
        return NULL;
    }
    return ctx;
}

mxattn_status gpu_run_bf16(const mx_device *dev, mxattn_plan *plan, const mxattn_problem *p, const float *q,
                           const float *k, const float *v, float *o, float *lse) {
    mxattn_status st = MXATTN_OK;
    size_t nq = (size_t)p->batch * p->heads_q * p->seq_q * p->head_dim;
    size_t nk = (size_t)p->batch * p->heads_kv * p->seq_k * p->head_dim, rows = nq / (size_t)p->head_dim;
    uint16_t *h = malloc((nq > nk ? nq : nk) * 2);
    void *dq = NULL, *dk = NULL, *dv = NULL, *dout = NULL, *dlse = NULL;
    if (!h) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "gpu_run_bf16: host buffer");
    MX_TRY(mx_mem_alloc(dev, nq * 2, &dq));
    MX_TRY(mx_mem_alloc(dev, nk * 2, &dk));
    MX_TRY(mx_mem_alloc(dev, nk * 2, &dv));
    MX_TRY(mx_mem_alloc(dev, nq * 2, &dout));
    MX_TRY(mx_mem_alloc(dev, rows * 4, &dlse));
    const float *src[3] = {q, k, v};
    void *dst[3] = {dq, dk, dv};
    for (int t = 0; t < 3; t++) {
        size_t n = t == 0 ? nq : nk;
        for (size_t i = 0; i < n; i++) h[i] = mx_f32_to_bf16(src[t][i]);
        MX_TRY(mx_memcpy_htod(dev, dst[t], h, n * 2));
    }
    for (size_t i = 0; i < nq; i++) h[i] = GPU_OUT_POISON;
    MX_TRY(mx_memcpy_htod(dev, dout, h, nq * 2));
    float lse_poison = GPU_LSE_POISON;
    unsigned lse_bits;
    memcpy(&lse_bits, &lse_poison, 4);
    MX_TRY(mx_memset_d32(dev, dlse, lse_bits, rows, NULL));
    MX_TRY(mxattn_run(plan, dq, dk, dv, dout, dlse, NULL));
    MX_TRY(mx_device_synchronize(dev));
    MX_TRY(mx_memcpy_dtoh(dev, h, dout, nq * 2));
    for (size_t i = 0; i < nq; i++) o[i] = mx_bf16_to_f32(h[i]);
    if (lse) MX_TRY(mx_memcpy_dtoh(dev, lse, dlse, rows * 4));
fail:
    mx_mem_free(dev, dq); mx_mem_free(dev, dk); mx_mem_free(dev, dv);
    mx_mem_free(dev, dout); mx_mem_free(dev, dlse);
    free(h);
    return st;
}

void gpu_random_bf16(mx_rng *rng, float *x, size_t n, double mean, double sd) {
    mx_rng_fill_gaussian(rng, x, n, mean, sd);
    for (size_t i = 0; i < n; i++) x[i] = mx_round_bf16(x[i]);
}

mxattn_problem gpu_speed_problem(const char *family, int head_dim, int batch, int heads, int seq, int causal,
                                 double *flops) {
    mxattn_problem p;
    mxattn_problem_init(&p, family, head_dim);
    p.batch = batch; p.heads_q = p.heads_kv = heads; p.seq_q = p.seq_k = seq;
    p.causal = causal ? MXATTN_CAUSAL_TOP_LEFT : MXATTN_CAUSAL_NONE;
    *flops = 4.0 * batch * heads * (double)seq * seq * head_dim * (causal ? 0.5 : 1.0);
    return p;
}
