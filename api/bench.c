/* mxattn_plan_benchmark: one plan on the GPU with inputs of its own, timed
 * and checked against the fp64 CPU reference (what `mxattn run` reports). */
#include "api/context.h"
#include "numerics/numerics.h"
#include "util/err.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define POISON 0x7fc1   /* a quiet NaN no kernel computes: O before the first run */

mxattn_status mxattn_bench_options_init(mxattn_bench_options *o) {
    if (!o) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_bench_options_init: options is NULL");
    memset(o, 0, sizeof *o);
    o->reps = 20;
    o->seed = 1;
    o->check_heads = 1;
    return MXATTN_OK;
}

static uint16_t to_half(mxattn_dtype t, float x) { return t == MXATTN_F16 ? mx_f32_to_f16(x) : mx_f32_to_bf16(x); }
static float from_half(mxattn_dtype t, uint16_t h) { return t == MXATTN_F16 ? mx_f16_to_f32(h) : mx_bf16_to_f32(h); }

/* Gaussian inputs.  Checked ones are fresh throughout.  Timing-only ones
 * (check_heads 0) repeat a pattern of 2^20 values: a fresh Gaussian for each
 * of the 805M inputs of B=4 H=32 N=16384 D=128 takes ~10 s of CPU, which an
 * A/B of ten problems paid on every run; the kernels' speed does not depend
 * on the values beyond their distribution. */
static void fill_gaussian(uint16_t *host, size_t n, mxattn_dtype dtype, mx_rng *rng, int fresh) {
    const size_t period = (size_t)1 << 20;
    size_t drawn = fresh || n < period ? n : period;
    for (size_t j = 0; j < drawn; j++) host[j] = to_half(dtype, (float)mx_rng_gaussian(rng));
    for (size_t j = drawn; j < n; j += drawn) memcpy(host + j, host, (n - j < drawn ? n - j : drawn) * sizeof *host);
}

/* Index of (b, h, n, 0) in a contiguous tensor of the given layout. */
static size_t index_of(mxattn_layout l, int heads, int seq, int d, int b, int h, int n) {
    return l == MXATTN_LAYOUT_BHND ? (((size_t)b * heads + h) * seq + n) * d : (((size_t)b * seq + n) * heads + h) * d;
}

/* The strides a contiguous tensor of the layout has. */
static int contiguous(const mxattn_strides *s, mxattn_layout l, int heads, int seq, int d) {
    int64_t seq_stride = (int64_t)index_of(l, heads, seq, d, 0, 0, 1), head_stride = (int64_t)index_of(l, heads, seq, d, 0, 1, 0);
    return s->seq == seq_stride && s->head == head_stride && s->batch == (int64_t)heads * seq * d;
}

typedef struct { uint16_t *host; void *dev; size_t n; } buffer;

static mxattn_status check_heads(const mxattn_problem *p, int heads, buffer *t[4], mxattn_bench_report *r) {
    int d = p->head_dim, gqa = p->heads_q / p->heads_kv;
    size_t nq = (size_t)p->seq_q * d, nk = (size_t)p->seq_k * d;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4), *got = malloc(nq * 4);
    double *ref = malloc(nq * 8);
    mxattn_status st = MXATTN_OK;
    if (!q || !k || !v || !got || !ref) {
        st = mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of host memory for the CPU reference (check fewer heads)");
        goto done;
    }
    double sum_l1 = 0, sum_ref = 0, dot = 0, nref = 0, ngot = 0, max_abs = 0;
    for (int h = 0; h < heads; h++) {
        int hk = h / gqa;
        for (int n = 0; n < p->seq_q; n++)
            for (int c = 0; c < d; c++) {
                q[(size_t)n * d + c] = from_half(p->dtype, t[0]->host[index_of(p->layout, p->heads_q, p->seq_q, d, 0, h, n) + c]);
                got[(size_t)n * d + c] = from_half(p->out_dtype, t[3]->host[index_of(p->layout, p->heads_q, p->seq_q, d, 0, h, n) + c]);
            }
        for (int n = 0; n < p->seq_k; n++)
            for (int c = 0; c < d; c++) {
                k[(size_t)n * d + c] = from_half(p->dtype, t[1]->host[index_of(p->layout, p->heads_kv, p->seq_k, d, 0, hk, n) + c]);
                v[(size_t)n * d + c] = from_half(p->dtype, t[2]->host[index_of(p->layout, p->heads_kv, p->seq_k, d, 0, hk, n) + c]);
            }
        mx_ref_shape s = {1, 1, 1, p->seq_q, p->seq_k, d, p->causal, p->sm_scale};
        if ((st = mx_ref_attention(&s, q, k, v, ref, NULL)) != MXATTN_OK) goto done;
        for (size_t i = 0; i < nq; i++) {
            double e = fabs(got[i] - ref[i]);
            sum_l1 += e; sum_ref += fabs(ref[i]);
            dot += got[i] * ref[i]; nref += ref[i] * ref[i]; ngot += (double)got[i] * got[i];
            if (!(e <= max_abs)) max_abs = e;
        }
    }
    r->rel_l1 = sum_l1 / (sum_ref > 0 ? sum_ref : 1);
    r->cosine = dot / sqrt(nref * ngot + 1e-300);
    r->max_abs = max_abs;
    r->checked_heads = heads;
done:
    free(q); free(k); free(v); free(got); free(ref);
    return st;
}

mxattn_status mxattn_plan_benchmark(mxattn_plan *plan, const mxattn_bench_options *opts, mxattn_bench_report *report) {
    if (!plan || !report) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_plan_benchmark: NULL argument");
    memset(report, 0, sizeof *report);
    mxattn_bench_options defaults;
    mxattn_bench_options_init(&defaults);
    if (!opts) opts = &defaults;
    if (opts->reps < 1 || opts->check_heads < 0)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "mxattn_plan_benchmark: reps >= 1 and check_heads >= 0");
    const mxattn_problem *p = &mx_plan_problem(plan)->p;
    const mx_device *dev = mx_plan_device(plan);
    int d = p->head_dim;
    if (!contiguous(&p->q_strides, p->layout, p->heads_q, p->seq_q, d) || !contiguous(&p->o_strides, p->layout, p->heads_q, p->seq_q, d) ||
        !contiguous(&p->k_strides, p->layout, p->heads_kv, p->seq_k, d) || !contiguous(&p->v_strides, p->layout, p->heads_kv, p->seq_k, d))
        return mx_fail(MXATTN_ERROR_UNSUPPORTED, "mxattn_plan_benchmark: the plan's strides are not its layout's "
                       "contiguous ones, which the benchmark's inputs have");
    int heads = opts->check_heads < p->heads_q ? opts->check_heads : p->heads_q;
    mxattn_status st = MXATTN_OK;
    buffer bq = {0}, bk = {0}, bv = {0}, bo = {0}, *t[4] = {&bq, &bk, &bv, &bo};
    float *lse = NULL;
    mx_timer timer;
    memset(&timer, 0, sizeof timer);
    bq.n = bo.n = (size_t)p->batch * p->heads_q * p->seq_q * d;
    bk.n = bv.n = (size_t)p->batch * p->heads_kv * p->seq_k * d;
    mx_rng rng;
    mx_rng_seed(&rng, opts->seed);
    for (int i = 0; i < 4; i++) {
        t[i]->host = malloc(t[i]->n * 2);
        if (!t[i]->host) MX_TRY(mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of host memory for the inputs"));
        if (i == 3)
            for (size_t j = 0; j < t[i]->n; j++) t[i]->host[j] = POISON;
        else
            fill_gaussian(t[i]->host, t[i]->n, p->dtype, &rng, heads > 0);
        MX_TRY(mx_mem_alloc(dev, t[i]->n * 2, &t[i]->dev));
        MX_TRY(mx_memcpy_htod(dev, t[i]->dev, t[i]->host, t[i]->n * 2));
    }
    if (p->return_lse) MX_TRY(mx_mem_alloc(dev, (size_t)p->batch * p->heads_q * p->seq_q * 4, (void **)&lse));
    MX_TRY(mxattn_run(plan, bq.dev, bk.dev, bv.dev, bo.dev, lse, NULL));
    MX_TRY(mx_memcpy_dtoh(dev, bo.host, bo.dev, bo.n * 2));
    MX_TRY(mx_timer_create(dev, &timer));
    double best = 1e300, total = 0;
    for (int r = 0; r < opts->reps; r++) {
        float ms = 0;
        MX_TRY(mx_timer_start(&timer, NULL));
        MX_TRY(mxattn_run(plan, bq.dev, bk.dev, bv.dev, bo.dev, lse, NULL));
        MX_TRY(mx_timer_stop(&timer, NULL));
        MX_TRY(mx_timer_elapsed_ms(&timer, &ms));
        total += ms;
        if (ms < best) best = ms;
    }
    report->best_ms = best;
    report->mean_ms = total / opts->reps;
    report->reps = opts->reps;
    double flops = 4.0 * p->batch * p->heads_q * (double)p->seq_q * p->seq_k * d / (p->causal ? 2 : 1);
    report->tops = flops / (best * 1e9);
    if (heads > 0) MX_TRY(check_heads(p, heads, t, report));
fail:
    mx_timer_destroy(&timer);
    for (int i = 0; i < 4; i++) {
        free(t[i]->host);
        if (t[i]->dev) mx_mem_free(dev, t[i]->dev);
    }
    if (lse) mx_mem_free(dev, lse);
    return st;
}

mxattn_status mxattn_run_host(mxattn_plan *plan, const void *q, const void *k, const void *v, void *o, float *lse) {
    if (!plan || !q || !k || !v || !o) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_run_host: NULL argument");
    const mx_problem *pr = mx_plan_problem(plan);
    const mx_device *dev = mx_plan_device(plan);
    const void *host[4] = {q, k, v, o};
    void *buf[4] = {NULL, NULL, NULL, NULL};
    float *dlse = NULL;
    size_t lse_bytes = (size_t)pr->p.batch * pr->p.heads_q * pr->p.seq_q * sizeof(float);
    mxattn_status st = MXATTN_OK;
    for (int i = 0; i < 4; i++) {
        MX_TRY(mx_mem_alloc(dev, (size_t)pr->bytes[i], &buf[i]));
        MX_TRY(mx_memcpy_htod(dev, buf[i], host[i], (size_t)pr->bytes[i]));
    }
    if (lse) MX_TRY(mx_mem_alloc(dev, lse_bytes, (void **)&dlse));
    MX_TRY(mxattn_run(plan, buf[0], buf[1], buf[2], buf[3], dlse, NULL));
    /* Synchronized first, so that a fault is charged to the run, not the copy. */
    MX_TRY(mx_device_synchronize(dev));
    MX_TRY(mx_memcpy_dtoh(dev, o, buf[3], (size_t)pr->bytes[3]));
    if (lse) MX_TRY(mx_memcpy_dtoh(dev, lse, dlse, lse_bytes));
fail:
    for (int i = 0; i < 4; i++)
        if (buf[i]) mx_mem_free(dev, buf[i]);
    if (dlse) mx_mem_free(dev, dlse);
    return st;
}
