/* mxattn_accuracy_gpu (`mxattn accuracy --gpu`): each kernel family on the GPU, its output error
 * against fp64 beside the CPU oracle's error on the same inputs.
 *
 * Why both: the oracle (mx_ref_family_attention) is what the family is meant
 * to compute.  A GPU figure close to the oracle's says the error is the
 * format's; a gap says the kernel adds error of its own.  The oracle is shown
 * in the offline form (p_tile 0, the design notes' harness) and in the
 * kernel's tile form (p_tile = the plan's block_n), because direct FP4 P
 * depends on the form (numerics.h, "The online softmax").
 *
 * Inputs are rounded to bf16 on the host and the GPU, the oracle and the fp64
 * reference all read the same rounded values, so input rounding is not counted
 * as error.  The temperatures are powers of two, so multiplying Q by t
 * commutes with bf16 rounding: Q x t is exactly "logits x t".
 *
 * One plan per family row is made up front and run on every experiment (the
 * problem, 1 x 1 x size x head_dim BHND, is the same for all of them). */
#include "api/catalog.h"
#include "mxattn.h"
#include "numerics/numerics.h"
#include "util/err.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A quiet NaN that no kernel computes; still there after the run = unwritten. */
#define POISON_BF16 0x7fc1

/* ---- what is measured ----------------------------------------------------- */
static void add_row(mxattn_accuracy_gpu_report *r, const char *family, int direct_p, int v_terms, const char *suffix) {
    if (r->n_plans >= MXATTN_ACCURACY_GPU_MAX_PLANS) return;
    mxattn_accuracy_plan *p = &r->plans[r->n_plans++];
    p->family = family;
    p->direct_p = direct_p;
    p->v_terms = v_terms;
    snprintf(p->label, sizeof p->label, "%s%s", family, suffix);
}

static int list_has(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *s = list;;) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        if (n == len && !strncmp(s, name, n)) return 1;
        if (!comma) return 0;
        s = comma + 1;
    }
}

/* The rows, from the library's families (mxattn_families): each family, then
 * its variants the parameter space and the reference know of: V in two E4M3
 * terms where the parameter table says a family reads v_terms (wgmma, D <=
 * 128), and P with the direct scale where the reference quantizes P
 * otherwise with it. */
static mxattn_status family_rows(const char *families, mxattn_accuracy_gpu_report *r) {
    const char *const *names = NULL;
    int n = 0;
    mxattn_status st = mxattn_families(&names, &n);
    if (st != MXATTN_OK) return st;
    const mxattn_param *v_terms = mx_catalog_param("v_terms");
    for (int i = 0; i < n; i++) {
        if (families && !list_has(families, names[i])) continue;
        add_row(r, names[i], 0, 1, "");
        if (v_terms && *v_terms->families && mx_catalog_family_reads("v_terms", names[i]))
            add_row(r, names[i], 0, 2, " v_terms=2");
        mx_ref_config two_level, direct;
        if (mx_ref_family_config(names[i], 0, 1, MXATTN_BF16, &two_level) == MXATTN_OK &&
            mx_ref_family_config(names[i], 1, 1, MXATTN_BF16, &direct) == MXATTN_OK && two_level.p != direct.p)
            add_row(r, names[i], 1, 1, " direct-P");
    }
    if (families && r->n_plans == 0)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "families '%.80s': none of them is a family (%s)", families,
                       mx_catalog_family_list());
    return MXATTN_OK;
}

typedef enum { INPUTS_GAUSSIAN, INPUTS_OUTLIER_CHANNELS, INPUTS_STUDENT_T } input_kind;

typedef struct {
    const char *name;
    input_kind inputs;
    double temperature;       /* Q is multiplied by it; a power of two (see top) */
    const char *description;
} experiment;

static const experiment experiments[] = {
    {"t=1", INPUTS_GAUSSIAN, 1, "Gaussian Q, V; K with a channel mean (the notes' harness)"},
    {"t=4", INPUTS_GAUSSIAN, 4, "the same, logits x4"},
    {"t=8", INPUTS_GAUSSIAN, 8, "the same, logits x8"},
    {"t=16", INPUTS_GAUSSIAN, 16, "the same, logits x16"},
    {"outliers", INPUTS_OUTLIER_CHANNELS, 1, "the same with 4 channels of Q and K x20"},
    {"student-t", INPUTS_STUDENT_T, 1, "Q, K, V Student-t (3 dof, unit variance); K with the channel mean"},
    {"t=32", INPUTS_GAUSSIAN, 32, "large logit scale: the notes' inputs, logits x32"},
};
#define EXPERIMENTS ((int)(sizeof experiments / sizeof experiments[0]))
#define OUTLIER_CHANNELS 4
#define OUTLIER_FACTOR 20.0f

/* ---- state ---------------------------------------------------------------- */
typedef struct {
    size_t count;                 /* size * head_dim */
    float *base_q, *base_k, *base_v, *mu;   /* the CPU tables' draw */
    float *q, *k, *v;             /* this experiment's inputs, bf16-rounded */
    uint16_t *q16, *k16, *v16, *o16;
    double *o_ref, *o_test, *p_ref;
} host_buffers;

typedef struct {
    const mxattn_accuracy_options *opt;
    mxattn_ctx *ctx;
    host_buffers host;
    mxattn_problem problems[MXATTN_ACCURACY_GPU_MAX_PLANS];   /* report->plans[i]'s */
    mxattn_plan *plans[MXATTN_ACCURACY_GPU_MAX_PLANS];        /* NULL: the plan's status says why */
    mxattn_accuracy_gpu_report *r;
} accuracy_run;

static void first_line_of(const char *msg, char *out, size_t len) {
    snprintf(out, len, "%s", msg ? msg : "");
    out[strcspn(out, "\r\n")] = 0;   /* compile errors carry the NVRTC log */
}

/* ---- inputs --------------------------------------------------------------- */
static int host_alloc(host_buffers *h, int size, int head_dim) {
    size_t n = (size_t)size * head_dim, scores = (size_t)size * size;
    h->count = n;
    h->base_q = malloc(n * sizeof(float)); h->base_k = malloc(n * sizeof(float));
    h->base_v = malloc(n * sizeof(float)); h->mu = malloc((size_t)head_dim * sizeof(float));
    h->q = malloc(n * sizeof(float)); h->k = malloc(n * sizeof(float)); h->v = malloc(n * sizeof(float));
    h->q16 = malloc(n * 2); h->k16 = malloc(n * 2); h->v16 = malloc(n * 2); h->o16 = malloc(n * 2);
    h->o_ref = malloc(n * sizeof(double)); h->o_test = malloc(n * sizeof(double));
    h->p_ref = malloc(scores * sizeof(double));
    return h->base_q && h->base_k && h->base_v && h->mu && h->q && h->k && h->v && h->q16 && h->k16 &&
           h->v16 && h->o16 && h->o_ref && h->o_test && h->p_ref;
}

static void host_free(host_buffers *h) {
    free(h->base_q); free(h->base_k); free(h->base_v); free(h->mu);
    free(h->q); free(h->k); free(h->v);
    free(h->q16); free(h->k16); free(h->v16); free(h->o16);
    free(h->o_ref); free(h->o_test); free(h->p_ref);
}

/* Student-t with 3 degrees of freedom over sqrt(3), its stddev: the same
 * spread as N(0, 1) with much heavier tails (a few entries per block far out). */
static double student_t3_unit(mx_rng *rng) {
    double chi2;
    do {
        chi2 = 0;
        for (int i = 0; i < 3; i++) {
            double z = mx_rng_gaussian(rng);
            chi2 += z * z;
        }
    } while (!(chi2 > 1e-12));
    return mx_rng_gaussian(rng) / sqrt(chi2 / 3) / sqrt(3.0);
}

static void fill_student_t(accuracy_run *s) {
    host_buffers *h = &s->host;
    int d = s->opt->head_dim;
    mx_rng rng;
    /* A stream apart from the Gaussian draw's, still fixed by --seed. */
    mx_rng_seed(&rng, (uint64_t)s->opt->seed ^ 0x9e3779b97f4a7c15ULL);
    for (size_t i = 0; i < h->count; i++) h->q[i] = (float)student_t3_unit(&rng);
    for (size_t i = 0; i < h->count; i++) h->k[i] = (float)student_t3_unit(&rng) + h->mu[i % (size_t)d];
    for (size_t i = 0; i < h->count; i++) h->v[i] = (float)student_t3_unit(&rng);
}

/* Channels spread over head_dim so that each lands in its own FP4 block. */
static void scale_outlier_channels(float *x, size_t count, int d) {
    for (int i = 0; i < OUTLIER_CHANNELS; i++) {
        int c = (2 * i + 1) * d / (2 * OUTLIER_CHANNELS);
        for (size_t j = (size_t)c; j < count; j += (size_t)d) x[j] *= OUTLIER_FACTOR;
    }
}

static void round_to_bf16(float *x, uint16_t *bits, size_t n) {
    for (size_t i = 0; i < n; i++) {
        bits[i] = mx_f32_to_bf16(x[i]);
        x[i] = mx_bf16_to_f32(bits[i]);
    }
}

static void build_inputs(accuracy_run *s, const experiment *e) {
    host_buffers *h = &s->host;
    size_t bytes = h->count * sizeof(float);
    if (e->inputs == INPUTS_STUDENT_T) {
        fill_student_t(s);
    } else {
        memcpy(h->q, h->base_q, bytes);
        memcpy(h->k, h->base_k, bytes);
        memcpy(h->v, h->base_v, bytes);
    }
    if (e->inputs == INPUTS_OUTLIER_CHANNELS) {
        scale_outlier_channels(h->q, h->count, s->opt->head_dim);
        scale_outlier_channels(h->k, h->count, s->opt->head_dim);
    }
    for (size_t i = 0; i < h->count; i++) h->q[i] *= (float)e->temperature;
    round_to_bf16(h->q, h->q16, h->count);
    round_to_bf16(h->k, h->k16, h->count);
    round_to_bf16(h->v, h->v16, h->count);
}

/* The fp64 output, and the fp64 attention's entropy to place the experiment
 * on the notes' sweep (diffuse 1 .. one-hot 0). */
static mxattn_status reference(accuracy_run *s, int experiment_index) {
    host_buffers *h = &s->host;
    int n = s->opt->size;
    mx_ref_shape shape = {1, 1, 1, n, n, s->opt->head_dim, MXATTN_CAUSAL_NONE, 0};
    mxattn_status st = mx_ref_attention(&shape, h->q, h->k, h->v, h->o_ref, NULL);
    if (st != MXATTN_OK) return st;
    mx_ref_config exact;
    mx_ref_config_exact(&exact);
    mx_ref_trace trace = {NULL, h->p_ref, NULL};
    if ((st = mx_ref_pipeline_attention(&shape, &exact, h->q, h->k, h->v, NULL, NULL, &trace)) != MXATTN_OK)
        return st;
    s->r->experiments[experiment_index].entropy = mx_mean_normalized_entropy(h->p_ref, n, n);
    return MXATTN_OK;
}

/* ---- the GPU -------------------------------------------------------------- */
static void make_plan(accuracy_run *s, int i) {
    mxattn_accuracy_plan *row = &s->r->plans[i];
    mxattn_problem *p = &s->problems[i];
    mxattn_problem_init(p, row->family, s->opt->head_dim);
    p->seq_q = p->seq_k = s->opt->size;
    p->dtype = p->out_dtype = MXATTN_BF16;
    p->layout = MXATTN_LAYOUT_BHND;
    p->direct_p = row->direct_p;
    p->v_terms = row->v_terms;
    row->status = mxattn_plan_create(s->ctx, p, NULL, &s->plans[i]);
    if (row->status != MXATTN_OK) {
        first_line_of(mxattn_last_error(), row->error, sizeof row->error);
        s->plans[i] = NULL;
        return;
    }
    mxattn_plan_info info;
    if (mxattn_plan_get_info(s->plans[i], &info) == MXATTN_OK) {
        snprintf(row->config, sizeof row->config, "%s", info.config);
        row->key_block = info.key_block;
    }
}

/* Fills O with NaN, runs the plan, reads O back: counts what the kernel left
 * unwritten and measures the rest against fp64. */
static mxattn_status run_on_gpu(accuracy_run *s, int plan, mxattn_accuracy_row *r) {
    host_buffers *h = &s->host;
    for (size_t i = 0; i < h->count; i++) h->o16[i] = POISON_BF16;
    /* Inputs and the poisoned O go up with the run, O comes back (a fault
     * is charged to the run: mxattn_run_host waits for it before copying). */
    mxattn_status st = mxattn_run_host(s->plans[plan], h->q16, h->k16, h->v16, h->o16, NULL);
    if (st != MXATTN_OK) return st;
    r->unwritten = 0;
    for (size_t i = 0; i < h->count; i++) {
        r->unwritten += h->o16[i] == POISON_BF16;
        h->o_test[i] = mx_bf16_to_f32(h->o16[i]);
    }
    mx_error_stats e = mx_compare(h->o_test, h->o_ref, h->count);
    r->gpu_cosine = e.cosine;
    r->gpu_rel_l1 = e.rel_l1;
    return MXATTN_OK;
}

/* The family's CPU oracle with P in tiles of p_tile keys (0: offline). */
static mx_error_stats oracle(accuracy_run *s, int plan, int p_tile) {
    host_buffers *h = &s->host;
    const mxattn_problem *p = &s->problems[plan];
    if (mx_ref_family_attention(p->family, p, p_tile, h->q, h->k, h->v, h->o_test, NULL) != MXATTN_OK)
        return (mx_error_stats){NAN, NAN, NAN, NAN};
    return mx_compare(h->o_test, h->o_ref, h->count);
}

static void measure_row(accuracy_run *s, int experiment_index, int plan, mxattn_accuracy_row *r) {
    const mxattn_accuracy_plan *f = &s->r->plans[plan];
    memset(r, 0, sizeof *r);
    r->experiment = experiment_index;
    r->plan = plan;
    r->gpu_cosine = r->gpu_rel_l1 = r->tile_cosine = r->tile_rel_l1 = NAN;
    /* The oracle reads the row's problem, made (by make_plan) even where the plan failed. */
    mx_error_stats off = oracle(s, plan, 0);
    r->offline_cosine = off.cosine;
    r->offline_rel_l1 = off.rel_l1;
    if (f->key_block > 0) {
        mx_error_stats tile = oracle(s, plan, f->key_block);
        r->tile_cosine = tile.cosine;
        r->tile_rel_l1 = tile.rel_l1;
    }
    if (!s->plans[plan]) {
        r->status = f->status;
        _Static_assert(sizeof r->error == sizeof f->error, "a plan's message fits a row's");
        memcpy(r->error, f->error, sizeof r->error);
        /* A family this GPU or build cannot do is a fact, not a failure. */
        r->failed = f->status != MXATTN_ERROR_UNSUPPORTED;
        return;
    }
    mxattn_status st = run_on_gpu(s, plan, r);
    if (st != MXATTN_OK) {
        r->status = st;
        first_line_of(mxattn_last_error(), r->error, sizeof r->error);
    }
    r->failed = st != MXATTN_OK || r->unwritten > 0 || !isfinite(r->gpu_cosine);
}

static mxattn_status run_experiment(accuracy_run *s, int experiment_index) {
    build_inputs(s, &experiments[experiment_index]);
    mxattn_status st = reference(s, experiment_index);
    if (st != MXATTN_OK) return st;
    /* A failed run or copy (a context a faulting kernel left broken) fails
     * its row; the CPU oracle's figures are still worth having. */
    for (int i = 0; i < s->r->n_plans; i++) measure_row(s, experiment_index, i, &s->r->rows[s->r->n_rows++]);
    return MXATTN_OK;
}

mxattn_status mxattn_accuracy_gpu(const mxattn_accuracy_options *opts, const char *families,
                                  mxattn_accuracy_gpu_report *report) {
    if (!opts || !report) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_accuracy_gpu: NULL argument");
    memset(report, 0, sizeof *report);
    if (opts->size < 1 || opts->size > 65536 || opts->head_dim < 1 || opts->head_dim > 4096)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "mxattn_accuracy_gpu: size 1 .. 65536, head_dim 1 .. 4096");
    _Static_assert(EXPERIMENTS <= MXATTN_ACCURACY_GPU_MAX_EXPERIMENTS, "room for every experiment");
    report->n_experiments = EXPERIMENTS;
    for (int e = 0; e < EXPERIMENTS; e++)
        report->experiments[e] = (mxattn_accuracy_experiment){experiments[e].name, experiments[e].description,
                                                              experiments[e].temperature, NAN};
    mxattn_status st = family_rows(families, report);
    if (st != MXATTN_OK) return st;
    mxattn_device_info dev;
    if ((st = mxattn_device_get_info(0, &dev)) != MXATTN_OK) return st;
    snprintf(report->gpu, sizeof report->gpu, "%s", dev.name);
    snprintf(report->arch, sizeof report->arch, "%s", dev.arch);
    accuracy_run *s = calloc(1, sizeof *s);
    if (!s) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory");
    s->opt = opts;
    s->r = report;
    report->outputs = (size_t)opts->size * opts->head_dim;
    if (!host_alloc(&s->host, opts->size, opts->head_dim)) {
        st = mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory for size %d", opts->size);
        goto done;
    }
    if ((st = mxattn_accuracy_inputs(opts, s->host.base_q, s->host.base_k, s->host.base_v, s->host.mu)) != MXATTN_OK)
        goto done;
    if ((st = mxattn_create(&s->ctx, NULL)) != MXATTN_OK) goto done;
    for (int i = 0; i < report->n_plans; i++) make_plan(s, i);
    for (int e = 0; e < EXPERIMENTS && st == MXATTN_OK; e++) st = run_experiment(s, e);
done:
    for (int i = 0; i < report->n_plans; i++) mxattn_plan_destroy(s->plans[i]);
    mxattn_destroy(s->ctx);
    host_free(&s->host);
    free(s);
    return st;
}
