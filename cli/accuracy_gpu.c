/* `mxattn accuracy --gpu`: each kernel family on the GPU, its output error
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
#include "accuracy_gpu.h"
#include "cli.h"
#include "space.h"
#include "numerics/numerics.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CMD "accuracy"
/* A quiet NaN that no kernel computes; still there after the run = unwritten. */
#define POISON_BF16 0x7fc1
#define MESSAGE_LEN 256

/* ---- what is measured ----------------------------------------------------- */
typedef struct { const char *family; int direct_p; const char *label; int v_terms; } family_row;

/* The rows, from the library's families (mxattn_families): each family, then
 * its variants the parameter space and the reference know of: V in two E4M3
 * terms where a family reads v_terms (wgmma, D <= 128), and P with the
 * direct scale where the reference quantizes P otherwise with it. */
#define FAMILY_ROWS 32
static family_row all_families[FAMILY_ROWS];
static char row_labels[FAMILY_ROWS][48];
static int n_family_rows = -1;

static int reads(const mxattn_param *p, const char *family) {
    size_t n = strlen(family);
    for (const char *s = p->families; *s;) {
        size_t len = strcspn(s, " ");
        if (len == n && !strncmp(s, family, n)) return 1;
        s += len + (s[len] == ' ');
    }
    return 0;
}

static void add_row(const char *family, int direct_p, int v_terms, const char *suffix) {
    if (n_family_rows >= FAMILY_ROWS) return;
    snprintf(row_labels[n_family_rows], sizeof row_labels[0], "%s%s", family, suffix);
    all_families[n_family_rows] = (family_row){family, direct_p, row_labels[n_family_rows], v_terms};
    n_family_rows++;
}

/* Builds the rows once; 0, or the exit status after printing why. */
static int load_rows(void) {
    if (n_family_rows >= 0) return 0;
    const char *const *names = NULL;
    const mxattn_param *params = NULL, *v_terms = NULL;
    int n = 0, np = 0;
    mxattn_status st = mxattn_families(&names, &n);
    if (st == MXATTN_OK) st = mxattn_params(&params, &np);
    if (st != MXATTN_OK) return cli_fail_status(CMD, st);
    for (int i = 0; i < np; i++)
        if (!strcmp(params[i].name, "v_terms")) v_terms = &params[i];
    n_family_rows = 0;
    for (int i = 0; i < n; i++) {
        add_row(names[i], 0, 1, "");
        if (v_terms && reads(v_terms, names[i])) add_row(names[i], 0, 2, " v_terms=2");
        mx_ref_config two_level, direct;
        if (mx_ref_family_config(names[i], 0, 1, MXATTN_BF16, &two_level) == MXATTN_OK &&
            mx_ref_family_config(names[i], 1, 1, MXATTN_BF16, &direct) == MXATTN_OK && two_level.p != direct.p)
            add_row(names[i], 1, 1, " direct-P");
    }
    return 0;
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
/* One family row's plan, made once and run on every experiment's inputs. */
typedef struct {
    const family_row *row;
    mxattn_problem problem;
    mxattn_plan *plan;            /* NULL: plan_status and plan_error say why */
    mxattn_status plan_status;
    char plan_error[MESSAGE_LEN];
    char config[256];
    int block_n;                  /* the plan's key_block; 0 if unknown */
} family_plan;

/* One (experiment, family) row of the table.  A cosine of NAN: not measured. */
typedef struct {
    int experiment;
    const family_plan *plan;
    mxattn_status status;         /* of the plan or the run */
    char error[MESSAGE_LEN];
    long unwritten;               /* outputs still holding the poison */
    int failed;
    mx_error_stats gpu, oracle_offline, oracle_tile;
} result_row;

typedef struct {
    size_t count;                 /* size * head_dim */
    float *base_q, *base_k, *base_v, *mu;   /* the CPU tables' draw */
    float *q, *k, *v;             /* this experiment's inputs, bf16-rounded */
    uint16_t *q16, *k16, *v16, *o16;
    double *o_ref, *o_test, *p_ref;
} host_buffers;

typedef struct {
    const accuracy_gpu_options *opt;
    mxattn_device_info dev;
    mxattn_ctx *ctx;
    host_buffers host;
    family_plan plans[FAMILY_ROWS];
    int plan_count;
    result_row *rows;
    int row_count;
    double entropy[EXPERIMENTS];  /* of the fp64 attention, 1 uniform .. 0 one-hot */
} accuracy_run;

static const char *first_line_of(const char *msg, char *out, size_t len) {
    snprintf(out, len, "%s", msg ? msg : "");
    out[strcspn(out, "\r\n")] = 0;   /* compile errors carry the NVRTC log */
    return out;
}

static mx_error_stats not_measured(void) { return (mx_error_stats){NAN, NAN, NAN, NAN}; }

/* ---- --families ----------------------------------------------------------- */
static int is_family_name(const char *name, size_t len) {
    for (int i = 0; i < n_family_rows; i++)
        if (strlen(all_families[i].family) == len && !strncmp(all_families[i].family, name, len)) return 1;
    return 0;
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

int accuracy_gpu_check_families(const char *cmd, const char *list) {
    if (load_rows()) return 0;
    for (const char *s = list;;) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        if (!is_family_name(s, n)) {
            /* The templates' list names the legal ones; a family they know
             * that has no row here yet is said so. */
            if (cli_space_load(cmd) || !cli_space_check_list(cmd, "--family", "family", list)) return 0;
            cli_usage_error(cmd, "family '%.*s' has no row in the GPU table yet", (int)n, s);
            return 0;
        }
        if (!comma) return 1;
        s = comma + 1;
    }
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
    s->entropy[experiment_index] = mx_mean_normalized_entropy(h->p_ref, n, n);
    return MXATTN_OK;
}

/* ---- the GPU -------------------------------------------------------------- */
/* 1 if the driver reports a GPU; else writes why into `why`. */
static int gpu_present(char *why, size_t len) {
    int count = 0;
    mxattn_status st = mxattn_device_count(&count);
    if (st != MXATTN_OK) {
        first_line_of(mxattn_last_error(), why, len);
        return 0;
    }
    if (count < 1) snprintf(why, len, "the driver reports no device");
    return count >= 1;
}

static mxattn_status open_device(accuracy_run *s) {
    mxattn_status st = mxattn_device_get_info(0, &s->dev);
    return st == MXATTN_OK ? mxattn_create(&s->ctx, NULL) : st;
}

static void close_device(accuracy_run *s) {
    for (int i = 0; i < s->plan_count; i++) mxattn_plan_destroy(s->plans[i].plan);
    mxattn_destroy(s->ctx);
}

static void make_plan(accuracy_run *s, const family_row *row, family_plan *f) {
    memset(f, 0, sizeof *f);
    f->row = row;
    mxattn_problem_init(&f->problem, row->family, s->opt->head_dim);
    f->problem.seq_q = f->problem.seq_k = s->opt->size;
    f->problem.dtype = f->problem.out_dtype = MXATTN_BF16;
    f->problem.layout = MXATTN_LAYOUT_BHND;
    f->problem.direct_p = row->direct_p;
    f->problem.v_terms = row->v_terms;
    f->plan_status = mxattn_plan_create(s->ctx, &f->problem, NULL, &f->plan);
    if (f->plan_status != MXATTN_OK) {
        first_line_of(mxattn_last_error(), f->plan_error, sizeof f->plan_error);
        f->plan = NULL;
        return;
    }
    mxattn_plan_info info;
    if (mxattn_plan_get_info(f->plan, &info) == MXATTN_OK) {
        snprintf(f->config, sizeof f->config, "%s", info.config);
        f->block_n = info.key_block;
    }
}

static void make_plans(accuracy_run *s) {
    for (int i = 0; i < n_family_rows; i++)
        if (!s->opt->families || list_has(s->opt->families, all_families[i].family))
            make_plan(s, &all_families[i], &s->plans[s->plan_count++]);
}

/* Poisons O, runs the plan, reads O back: counts what the kernel left
 * unwritten and measures the rest against fp64. */
static mxattn_status run_on_gpu(accuracy_run *s, const family_plan *f, result_row *r) {
    host_buffers *h = &s->host;
    for (size_t i = 0; i < h->count; i++) h->o16[i] = POISON_BF16;
    /* Inputs and the poisoned O go up with the run, O comes back (a fault
     * is charged to the run: mxattn_run_host waits for it before copying). */
    mxattn_status st = mxattn_run_host(f->plan, h->q16, h->k16, h->v16, h->o16, NULL);
    if (st != MXATTN_OK) return st;
    r->unwritten = 0;
    for (size_t i = 0; i < h->count; i++) {
        r->unwritten += h->o16[i] == POISON_BF16;
        h->o_test[i] = mx_bf16_to_f32(h->o16[i]);
    }
    r->gpu = mx_compare(h->o_test, h->o_ref, h->count);
    return MXATTN_OK;
}

/* The family's CPU oracle with P in tiles of p_tile keys (0: offline). */
static mx_error_stats oracle(accuracy_run *s, const family_plan *f, int p_tile) {
    host_buffers *h = &s->host;
    if (mx_ref_family_attention(f->problem.family, &f->problem, p_tile, h->q, h->k, h->v, h->o_test, NULL) !=
        MXATTN_OK)
        return not_measured();
    return mx_compare(h->o_test, h->o_ref, h->count);
}

static void set_error(result_row *r, mxattn_status st, const char *message) {
    r->status = st;
    first_line_of(message, r->error, sizeof r->error);
}

static void measure_row(accuracy_run *s, int experiment_index, const family_plan *f, result_row *r) {
    memset(r, 0, sizeof *r);
    r->experiment = experiment_index;
    r->plan = f;
    r->gpu = r->oracle_tile = not_measured();
    r->oracle_offline = oracle(s, f, 0);
    if (f->block_n > 0) r->oracle_tile = oracle(s, f, f->block_n);
    if (!f->plan) {
        set_error(r, f->plan_status, f->plan_error);
        /* A family this GPU or build cannot do is a fact, not a failure. */
        r->failed = f->plan_status != MXATTN_ERROR_UNSUPPORTED;
        return;
    }
    mxattn_status st = run_on_gpu(s, f, r);
    if (st != MXATTN_OK) set_error(r, st, mxattn_last_error());
    r->failed = st != MXATTN_OK || r->unwritten > 0 || !isfinite(r->gpu.cosine);
}

static mxattn_status run_experiment(accuracy_run *s, int experiment_index) {
    build_inputs(s, &experiments[experiment_index]);
    mxattn_status st = reference(s, experiment_index);
    if (st != MXATTN_OK) return st;
    /* A failed run or copy (a context a faulting kernel left broken) fails
     * its row; the CPU oracle's figures are still worth printing. */
    for (int i = 0; i < s->plan_count; i++)
        measure_row(s, experiment_index, &s->plans[i], &s->rows[s->row_count++]);
    return MXATTN_OK;
}

/* ---- output --------------------------------------------------------------- */
/* A short word for the status column; the message goes beside it. */
static const char *status_word(const result_row *r) {
    if (r->status != MXATTN_OK) return mxattn_status_string(r->status);
    if (r->unwritten > 0) return "unwritten";
    if (!isfinite(r->gpu.cosine)) return "non-finite";
    return "ok";
}

static void print_cell(FILE *f, const char *format, double x, int width) {
    char buf[64];
    if (isnan(x)) snprintf(buf, sizeof buf, "-");
    else snprintf(buf, sizeof buf, format, x);
    fprintf(f, "%*s", width, buf);
}

static void print_human_row(FILE *f, const result_row *r, size_t count) {
    const family_plan *p = r->plan;
    fprintf(f, "  %-18s ", p->row->label);
    print_cell(f, "%.0f", p->block_n > 0 ? p->block_n : NAN, 7);
    const mx_error_stats *stats[3] = {&r->gpu, &r->oracle_offline, &r->oracle_tile};
    for (int i = 0; i < 3; i++) {
        print_cell(f, "%.6f", stats[i]->cosine, 11);
        print_cell(f, "%.4f", stats[i]->rel_l1, 8);
    }
    fprintf(f, "  %s%s", r->failed ? "FAIL " : "", status_word(r));
    if (r->unwritten > 0) fprintf(f, ": %ld of %zu outputs", r->unwritten, count);
    if (*r->error) fprintf(f, ": %.100s", r->error);
    fputc('\n', f);
}

static void print_human(FILE *f, const accuracy_run *s) {
    const accuracy_gpu_options *o = s->opt;
    fprintf(f, "mxattn accuracy --gpu: seed %ld, %d x %d, one head, bf16 inputs and output, "
               "K channel-mean stddev %g\n", o->seed, o->size, o->head_dim, o->k_mean);
    fprintf(f, "GPU 0: %s (%s)\n", s->dev.name, s->dev.arch);
    fprintf(f, "Output error against fp64 (cosine, rel-L1) of: the GPU kernel; the CPU oracle in the\n"
               "offline form (p=0, the notes' harness); the oracle with P in the kernel's tiles of\n"
               "block_n keys (tile).  All three read the same bf16-rounded inputs.\n");
    for (int e = 0; e < EXPERIMENTS; e++) {
        fprintf(f, "\n%s: %s; normalized entropy %.3f\n", experiments[e].name, experiments[e].description,
                s->entropy[e]);
        fprintf(f, "  %-18s %7s %11s %8s %11s %8s %11s %8s  %s\n", "family", "block_n", "gpu cos", "rel-L1",
                "p=0 cos", "rel-L1", "tile cos", "rel-L1", "status");
        for (int i = 0; i < s->row_count; i++)
            if (s->rows[i].experiment == e) print_human_row(f, &s->rows[i], s->host.count);
    }
    fprintf(f, "\nPlans\n");
    for (int i = 0; i < s->plan_count; i++) {
        const family_plan *p = &s->plans[i];
        fprintf(f, "  %-18s %s\n", p->row->label, p->plan ? p->config : mxattn_status_string(p->plan_status));
    }
}

static void print_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static void print_json_number(FILE *f, double x) {
    if (isfinite(x)) fprintf(f, "%.17g", x);
    else fputs("null", f);
}

static void print_json_field(FILE *f, const char *key, double x) {
    fprintf(f, ", \"%s\": ", key);
    print_json_number(f, x);
}

static void print_json_row(FILE *f, const accuracy_run *s, const result_row *r) {
    const experiment *e = &experiments[r->experiment];
    fputs("  {\"experiment\": ", f);
    print_json_string(f, e->name);
    print_json_field(f, "temperature", e->temperature);
    print_json_field(f, "entropy", s->entropy[r->experiment]);
    fputs(", \"family\": ", f);
    print_json_string(f, r->plan->row->family);
    fprintf(f, ", \"direct_p\": %d, \"v_terms\": %d, \"block_n\": %d, \"config\": ", r->plan->row->direct_p,
            r->plan->row->v_terms, r->plan->block_n);
    print_json_string(f, r->plan->config);
    fputs(", \"status\": ", f);
    print_json_string(f, status_word(r));
    fputs(", \"error\": ", f);
    print_json_string(f, r->error);
    fprintf(f, ", \"failed\": %s, \"unwritten\": %ld", r->failed ? "true" : "false", r->unwritten);
    print_json_field(f, "gpu_cos", r->gpu.cosine);
    print_json_field(f, "gpu_rel_l1", r->gpu.rel_l1);
    print_json_field(f, "oracle_offline_cos", r->oracle_offline.cosine);
    print_json_field(f, "oracle_offline_rel_l1", r->oracle_offline.rel_l1);
    print_json_field(f, "oracle_tile_cos", r->oracle_tile.cosine);
    print_json_field(f, "oracle_tile_rel_l1", r->oracle_tile.rel_l1);
    fputc('}', f);
}

static void print_json(FILE *f, const accuracy_run *s) {
    const accuracy_gpu_options *o = s->opt;
    fprintf(f, "{\"seed\": %ld, \"size\": %d, \"head_dim\": %d", o->seed, o->size, o->head_dim);
    print_json_field(f, "k_mean", o->k_mean);
    fputs(", \"gpu\": ", f);
    print_json_string(f, s->dev.name);
    fputs(", \"arch\": ", f);
    print_json_string(f, s->dev.arch);
    fputs(", \"rows\": [\n", f);
    for (int i = 0; i < s->row_count; i++) {
        print_json_row(f, s, &s->rows[i]);
        fputs(i + 1 < s->row_count ? ",\n" : "\n", f);
    }
    fputs("]}\n", f);
}

static void print_csv_number(FILE *f, double x) {
    fputc(',', f);
    if (isfinite(x)) fprintf(f, "%.17g", x);
}

static void print_csv(FILE *f, const accuracy_run *s) {
    fputs("experiment,family,direct_p,block_n,status,failed,unwritten,gpu_cos,gpu_rel_l1,"
          "oracle_offline_cos,oracle_offline_rel_l1,oracle_tile_cos,oracle_tile_rel_l1,entropy,v_terms\n", f);
    for (int i = 0; i < s->row_count; i++) {
        const result_row *r = &s->rows[i];
        /* Every text field is a fixed word without commas or quotes. */
        fprintf(f, "%s,%s,%d,%d,%s,%d,%ld", experiments[r->experiment].name, r->plan->row->family,
                r->plan->row->direct_p, r->plan->block_n, status_word(r), r->failed, r->unwritten);
        print_csv_number(f, r->gpu.cosine);
        print_csv_number(f, r->gpu.rel_l1);
        print_csv_number(f, r->oracle_offline.cosine);
        print_csv_number(f, r->oracle_offline.rel_l1);
        print_csv_number(f, r->oracle_tile.cosine);
        print_csv_number(f, r->oracle_tile.rel_l1);
        print_csv_number(f, s->entropy[r->experiment]);
        fprintf(f, ",%d\n", r->plan->row->v_terms);   /* last: the columns before it keep their places */
    }
}

/* ---- the command ---------------------------------------------------------- */
static int count_failures(const accuracy_run *s) {
    int n = 0;
    for (int i = 0; i < s->row_count; i++) n += s->rows[i].failed;
    return n;
}

static int measure_and_print(accuracy_run *s) {
    make_plans(s);
    for (int e = 0; e < EXPERIMENTS; e++) {
        mxattn_status st = run_experiment(s, e);
        if (st != MXATTN_OK) return cli_fail_status(CMD, st);
    }
    if (s->opt->json) print_json(stdout, s);
    else if (s->opt->csv) print_csv(stdout, s);
    else print_human(stdout, s);
    if (fflush(stdout) != 0) return cli_fail(CMD, "could not write the table");
    int failures = count_failures(s);
    if (failures)
        return cli_fail(CMD, "%d of %d GPU rows failed (see the status column)", failures, s->row_count);
    return 0;
}

int accuracy_gpu_run(const accuracy_gpu_options *opt) {
    char why[MESSAGE_LEN];
    if (load_rows()) return 1;
    if (!gpu_present(why, sizeof why)) return cli_fail(CMD, "--gpu: no GPU found: %s", why);
    accuracy_run *s = calloc(1, sizeof *s);
    if (!s) return cli_fail(CMD, "out of memory");
    s->opt = opt;
    int rc = 1;
    s->rows = calloc((size_t)EXPERIMENTS * FAMILY_ROWS, sizeof *s->rows);
    mxattn_accuracy_options inputs = {opt->seed, opt->size, opt->head_dim, opt->k_mean};
    if (!s->rows || !host_alloc(&s->host, opt->size, opt->head_dim) ||
        mxattn_accuracy_inputs(&inputs, s->host.base_q, s->host.base_k, s->host.base_v, s->host.mu) != MXATTN_OK) {
        cli_fail(CMD, "out of memory for size %d", opt->size);
        goto done;
    }
    mxattn_status st = open_device(s);
    if (st != MXATTN_OK) {
        cli_fail(CMD, "--gpu: could not open GPU 0: %s: %s", mxattn_status_string(st),
                 first_line_of(mxattn_last_error(), why, sizeof why));
        goto done;
    }
    rc = measure_and_print(s);
done:
    close_device(s);
    host_free(&s->host);
    free(s->rows);
    free(s);
    return rc;
}
