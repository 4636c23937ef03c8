#include "tuner/bench.h"
#include "numerics/numerics.h"
#include "tuner/tune_logic.h"
#include "util/clock.h"
#include "util/err.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { void *q, *k, *v, *o; } buffer_set;

struct mx_bench {
    const mx_device *dev;
    struct CUstream_st *stream;
    mx_tune_sizes sizes;
    int out_is_bf16;
    size_t q_elems, kv_elems, o_elems;
    int n_sets, next_set;
    buffer_set sets[MX_BENCH_MAX_SETS];
    float *lse;                  /* shared by every set: tiny, and only written */
    void *ws;
    size_t ws_bytes;
    char ws_owner[128];  /* the last kernel of the plan whose launches the workspace holds */
    mx_kernel_args args;         /* strides and sizes; pointers set per launch */
    mx_timer *timers;
    int n_timers;
    uint16_t *host_o;
    float *out;
};

/* Contiguous strides of a [batch, heads, seq, dim] tensor stored as bhnd or bnhd. */
static void strides(int bnhd, int heads, int seq, int d, int64_t *sb, int64_t *sh, int64_t *ss) {
    if (bnhd) { *sh = d; *ss = (int64_t)heads * d; *sb = (int64_t)seq * heads * d; }
    else { *ss = d; *sh = (int64_t)seq * d; *sb = (int64_t)heads * seq * d; }
}

static void fill_args(const mx_tune_sizes *s, int bnhd, mx_kernel_args *a) {
    memset(a, 0, sizeof *a);
    strides(bnhd, s->heads_q, s->seq_q, s->head_dim, &a->q_sb, &a->q_sh, &a->q_ss);
    strides(bnhd, s->heads_kv, s->seq_k, s->head_dim, &a->k_sb, &a->k_sh, &a->k_ss);
    strides(bnhd, s->heads_kv, s->seq_k, s->head_dim, &a->v_sb, &a->v_sh, &a->v_ss);
    strides(bnhd, s->heads_q, s->seq_q, s->head_dim, &a->o_sb, &a->o_sh, &a->o_ss);
    a->batch = s->batch; a->heads_q = s->heads_q; a->heads_kv = s->heads_kv;
    a->seq_q = s->seq_q; a->seq_k = s->seq_k;
    /* Bottom-right causal aligns the last query with the last key. */
    a->causal_offset = s->causal == MXATTN_CAUSAL_BOTTOM_RIGHT ? s->seq_k - s->seq_q : 0;
    float scale = s->sm_scale > 0 ? s->sm_scale : 1.0f / sqrtf((float)s->head_dim);
    a->sm_scale = scale;
    a->scale_log2 = (float)(scale * 1.4426950408889634);
    a->gqa = s->heads_q / s->heads_kv;
}

/* Approximately N(0, stddev): the sum of four uniforms (Irwin-Hall), a
 * quarter of the cost of Box-Muller, which matters at 10^8 elements. */
static float cheap_gaussian(mx_rng *r, float stddev) {
    uint64_t bits = mx_rng_next(r);
    float sum = 0;
    for (int i = 0; i < 4; i++, bits >>= 16) sum += (float)(bits & 0xffff) / 65536.0f;
    return (sum - 2.0f) * 1.7320508f * stddev;   /* variance of the sum is 4/12 */
}

static void fill_random(mx_rng *r, uint16_t *x, size_t n, float stddev, int bf16) {
    for (size_t i = 0; i < n; i++) {
        float v = cheap_gaussian(r, stddev);
        uint16_t h = bf16 ? mx_f32_to_bf16(v) : mx_f32_to_f16(v);
        if ((h & 0x7fff) == 0) h = bf16 ? mx_f32_to_bf16(0.125f) : mx_f32_to_f16(0.125f);
        x[i] = h;
    }
}

static int param_is(const char *params, const char *key, const char *value) {
    char v[32];
    return mx_params_get(params, key, v, sizeof v) && !strcmp(v, value);
}

/* Uploads Q, K, V (the same values into every set). */
static mxattn_status upload_inputs(mx_bench *b, int in_bf16, float scores_std) {
    mxattn_status st = MXATTN_OK;
    size_t most = b->q_elems > b->kv_elems ? b->q_elems : b->kv_elems;
    uint16_t *host = malloc(most * sizeof *host);
    if (!host) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "tuner: no host memory for %zu input elements", most);
    mx_rng rng;
    mx_rng_seed(&rng, 0x6d786174746eULL);  /* fixed: every run measures the same data */
    float scale = b->args.sm_scale * sqrtf((float)b->sizes.head_dim);
    float q_std = scale > 0 ? scores_std / scale : scores_std;   /* scores ~ N(0, scores_std^2) */
    struct { size_t elems, offset; float std; } t[3] = {
        {b->q_elems, offsetof(buffer_set, q), q_std},
        {b->kv_elems, offsetof(buffer_set, k), 1.0f},
        {b->kv_elems, offsetof(buffer_set, v), 1.0f}};
    for (int i = 0; i < 3; i++) {
        fill_random(&rng, host, t[i].elems, t[i].std, in_bf16);
        for (int s = 0; s < b->n_sets; s++) {
            void *dst = *(void **)((char *)&b->sets[s] + t[i].offset);
            MX_TRY(mx_memcpy_htod(b->dev, dst, host, t[i].elems * 2));
        }
    }
fail:
    free(host);
    return st;
}

static mxattn_status alloc_sets(mx_bench *b) {
    mxattn_status st = MXATTN_OK;
    size_t set_bytes = 2 * (b->q_elems + 2 * b->kv_elems + b->o_elems);
    b->n_sets = mx_tune_input_sets(set_bytes, (size_t)b->dev->l2_bytes, MX_BENCH_MAX_SETS);
    /* Never take more than a quarter of the GPU's memory for copies. */
    while (b->n_sets > 1 && (size_t)b->n_sets * set_bytes > b->dev->memory_bytes / 4) b->n_sets--;
    for (int s = 0; s < b->n_sets; s++) {
        MX_TRY(mx_mem_alloc(b->dev, b->q_elems * 2, &b->sets[s].q));
        MX_TRY(mx_mem_alloc(b->dev, b->kv_elems * 2, &b->sets[s].k));
        MX_TRY(mx_mem_alloc(b->dev, b->kv_elems * 2, &b->sets[s].v));
        MX_TRY(mx_mem_alloc(b->dev, b->o_elems * 2, &b->sets[s].o));
    }
fail:
    return st;
}

mxattn_status mx_bench_open(const mx_device *dev, const char *shape_params, const mx_tune_sizes *sizes,
                            double scores_std, mx_bench **out) {
    mxattn_status st = MXATTN_OK;
    *out = NULL;
    mx_bench *b = calloc(1, sizeof *b);
    if (!b) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "tuner: out of memory");
    b->dev = dev;
    b->sizes = *sizes;
    const mx_tune_sizes *s = sizes;
    int bnhd = param_is(shape_params, "layout", "bnhd");
    int in_bf16 = !param_is(shape_params, "dtype", "f16");
    char out_dtype[16];
    b->out_is_bf16 = mx_params_get(shape_params, "out_dtype", out_dtype, sizeof out_dtype)
                         ? strcmp(out_dtype, "f16") != 0 : in_bf16;
    fill_args(s, bnhd, &b->args);
    b->q_elems = (size_t)s->batch * s->heads_q * s->seq_q * s->head_dim;
    b->kv_elems = (size_t)s->batch * s->heads_kv * s->seq_k * s->head_dim;
    b->o_elems = b->q_elems;
    b->host_o = malloc(b->o_elems * sizeof *b->host_o);
    b->out = malloc(b->o_elems * sizeof *b->out);
    if (!b->host_o || !b->out) { st = mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "tuner: no host memory for the output"); goto fail; }
    MX_TRY(mx_stream_create(dev, &b->stream));
    MX_TRY(alloc_sets(b));
    if (param_is(shape_params, "lse", "1"))
        MX_TRY(mx_mem_alloc(dev, (size_t)s->batch * s->heads_q * s->seq_q * sizeof(float), (void **)&b->lse));
    MX_TRY(upload_inputs(b, in_bf16, (float)scores_std));
    *out = b;
    return MXATTN_OK;
fail:
    mx_bench_close(b);
    return st;
}

void mx_bench_close(mx_bench *b) {
    if (!b) return;
    for (int s = 0; s < MX_BENCH_MAX_SETS; s++) {
        mx_mem_free(b->dev, b->sets[s].q);
        mx_mem_free(b->dev, b->sets[s].k);
        mx_mem_free(b->dev, b->sets[s].v);
        mx_mem_free(b->dev, b->sets[s].o);
    }
    mx_mem_free(b->dev, b->lse);
    mx_mem_free(b->dev, b->ws);
    for (int i = 0; i < b->n_timers; i++) mx_timer_destroy(&b->timers[i]);
    free(b->timers);
    mx_stream_destroy(b->dev, b->stream);
    free(b->host_o);
    free(b->out);
    free(b);
}

int mx_bench_sets(const mx_bench *b) { return b->n_sets; }
size_t mx_bench_output_elems(const mx_bench *b) { return b->o_elems; }

/* The candidates share one workspace.  A persistent kernel's unit counters
 * must read zero when it starts (each launch leaves them so: api/plan.c), but
 * the candidate before it may have left anything there (the decode kernel's
 * partial rows, a quantized family's operands), so a plan that takes the
 * workspace over from another gets it zeroed first, in the stream, untimed.
 * A plan is known by its last kernel's name, which hashes its configuration
 * (the plans of successive candidates may sit at one address). */
static mxattn_status ensure_workspace(mx_bench *b, const mx_launch_plan *lp) {
    mxattn_status st = MXATTN_OK;
    size_t bytes = lp->workspace_bytes;
    const char *owner = lp->n_steps > 0 ? lp->steps[lp->n_steps - 1].name : "";
    if (bytes > b->ws_bytes) {
        mx_mem_free(b->dev, b->ws);
        b->ws = NULL;
        b->ws_bytes = 0;
        b->ws_owner[0] = 0;
        MX_TRY(mx_mem_alloc_zeroed(b->dev, bytes, &b->ws));
        b->ws_bytes = bytes;
    } else if (bytes && strcmp(b->ws_owner, owner) != 0) {
        MX_TRY(mx_memset_d8(b->dev, b->ws, 0, bytes, b->stream));
    }
    snprintf(b->ws_owner, sizeof b->ws_owner, "%s", owner);
fail:
    return st;
}

static mxattn_status ensure_timers(mx_bench *b, int n) {
    if (n <= b->n_timers) return MXATTN_OK;
    mx_timer *t = realloc(b->timers, (size_t)n * sizeof *t);
    if (!t) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "tuner: out of memory for timers");
    b->timers = t;
    for (; b->n_timers < n; b->n_timers++) {
        memset(&t[b->n_timers], 0, sizeof t[b->n_timers]);
        mxattn_status st = mx_timer_create(b->dev, &t[b->n_timers]);
        if (st != MXATTN_OK) return st;
    }
    return MXATTN_OK;
}

static mxattn_status launch_on(mx_bench *b, const mx_launch_plan *lp, int set) {
    mx_kernel_args a = b->args;
    a.q = b->sets[set].q; a.k = b->sets[set].k; a.v = b->sets[set].v; a.o = b->sets[set].o;
    a.lse = b->lse;
    a.ws = b->ws;
    return mx_launch_plan_run(b->dev, lp, &a, b->stream);
}

static mxattn_status launch_next(mx_bench *b, const mx_launch_plan *lp) {
    int set = b->next_set;
    b->next_set = (b->next_set + 1) % b->n_sets;
    return launch_on(b, lp, set);
}

mxattn_status mx_bench_check_run(mx_bench *b, const mx_launch_plan *lp, const float **out, float *ms) {
    mxattn_status st = MXATTN_OK;
    MX_TRY(ensure_workspace(b, lp));
    MX_TRY(ensure_timers(b, 1));
    MX_TRY(mx_memset_d8(b->dev, b->sets[0].o, 0xff, b->o_elems * 2, b->stream));  /* NaN in bf16 and f16 */
    MX_TRY(mx_timer_start(&b->timers[0], b->stream));
    MX_TRY(launch_on(b, lp, 0));
    MX_TRY(mx_timer_stop(&b->timers[0], b->stream));
    MX_TRY(mx_stream_synchronize(b->dev, b->stream));
    MX_TRY(mx_timer_elapsed_ms(&b->timers[0], ms));
    MX_TRY(mx_memcpy_dtoh(b->dev, b->host_o, b->sets[0].o, b->o_elems * 2));
    for (size_t i = 0; i < b->o_elems; i++)
        b->out[i] = b->out_is_bf16 ? mx_bf16_to_f32(b->host_o[i]) : mx_f16_to_f32(b->host_o[i]);
    *out = b->out;
fail:
    return st;
}

mxattn_status mx_bench_time(mx_bench *b, const mx_launch_plan *lp, int warmup, int reps, float *ms) {
    mxattn_status st = MXATTN_OK;
    MX_TRY(ensure_workspace(b, lp));
    MX_TRY(ensure_timers(b, reps));
    for (int i = 0; i < warmup; i++) MX_TRY(launch_next(b, lp));
    for (int i = 0; i < reps; i++) {
        MX_TRY(mx_timer_start(&b->timers[i], b->stream));
        MX_TRY(launch_next(b, lp));
        MX_TRY(mx_timer_stop(&b->timers[i], b->stream));
    }
    MX_TRY(mx_stream_synchronize(b->dev, b->stream));
    for (int i = 0; i < reps; i++) MX_TRY(mx_timer_elapsed_ms(&b->timers[i], &ms[i]));
fail:
    return st;
}

mxattn_status mx_bench_warm_gpu(mx_bench *b, const mx_launch_plan *lp, double ms) {
    mxattn_status st = MXATTN_OK;
    MX_TRY(ensure_workspace(b, lp));
    /* Batches of launches, each waited for, until the time is up: the queue
     * never holds more than a batch, so the wall clock is the GPU's and a
     * slow candidate (an emulated FP4 kernel at long rows: ~0.1 s a launch)
     * overshoots by one launch at most.  A batch doubles while it takes under
     * 20 ms (tiny kernels launch faster than a wait round-trip). */
    double t0 = mx_now_ms();
    for (int batch = 1; mx_now_ms() - t0 < ms;) {
        double b0 = mx_now_ms();
        for (int i = 0; i < batch; i++) MX_TRY(launch_next(b, lp));
        MX_TRY(mx_stream_synchronize(b->dev, b->stream));
        if (mx_now_ms() - b0 < 20.0 && batch < 10000) batch *= 2;
    }
fail:
    return st;
}

mxattn_status mx_bench_context_usable(mx_bench *b) {
    mxattn_status st = mx_device_synchronize(b->dev);
    if (st == MXATTN_OK) st = mx_memset_d8(b->dev, b->sets[0].o, 0, 16, b->stream);
    if (st == MXATTN_OK) st = mx_stream_synchronize(b->dev, b->stream);
    return st;
}
