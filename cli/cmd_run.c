/* `mxattn run`: one problem on the GPU, checked against the CPU reference. */
#include "cli.h"
#include "numerics/numerics.h"
#include "runtime/device.h"
#include "space.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    mxattn_problem p;
    const char *config;
    int reps;
    int check_heads;     /* heads compared against the fp64 reference */
    uint64_t seed;
    int json;
} run_args;

static void usage(void) {
    printf("usage: mxattn run --family F --head-dim D [options]\n"
           "  --batch N --heads N --kv-heads N (default: --heads) --seq N (or --seq-q N --seq-k N)\n"
           "  --causal none|top-left|bottom-right   --dtype bf16|f16   --layout bhnd|bnhd\n"
           "  --config \"block_m=.. block_n=..\"      --reps N (timed launches, default 20)\n"
           "  --check-heads N (heads checked on the CPU, default 1; 0: timing only, the inputs\n"
           "                  then repeat a 2^20-value Gaussian pattern)   --seed N\n"
           "  --v-terms 1|2 (int8-fp8: V in one or two E4M3 terms, default 1)   --lse   --scale X\n"
           "  --json (the report as one JSON object)\n"
           "Options are --name VALUE or --name=VALUE; --causal alone is top-left.\n");
}

enum {
    OPT_HEAD_DIM = 1, OPT_BATCH, OPT_HEADS, OPT_KV_HEADS, OPT_SEQ_Q, OPT_SEQ_K, OPT_REPS, OPT_CHECK_HEADS,
    OPT_V_TERMS, OPT_SEQ, OPT_SEED, OPT_SCALE, OPT_FAMILY, OPT_CONFIG, OPT_CAUSAL, OPT_DTYPE, OPT_LAYOUT,
    OPT_LSE, OPT_JSON
};
static const cli_option options[] = {
    {"head-dim", OPT_HEAD_DIM, CLI_VALUE}, {"batch", OPT_BATCH, CLI_VALUE}, {"heads", OPT_HEADS, CLI_VALUE},
    {"kv-heads", OPT_KV_HEADS, CLI_VALUE}, {"seq-q", OPT_SEQ_Q, CLI_VALUE}, {"seq-k", OPT_SEQ_K, CLI_VALUE},
    {"reps", OPT_REPS, CLI_VALUE}, {"check-heads", OPT_CHECK_HEADS, CLI_VALUE}, {"v-terms", OPT_V_TERMS, CLI_VALUE},
    {"seq", OPT_SEQ, CLI_VALUE}, {"seed", OPT_SEED, CLI_VALUE}, {"scale", OPT_SCALE, CLI_VALUE},
    {"family", OPT_FAMILY, CLI_VALUE}, {"config", OPT_CONFIG, CLI_VALUE}, {"causal", OPT_CAUSAL, CLI_MAYBE_VALUE},
    {"dtype", OPT_DTYPE, CLI_VALUE}, {"layout", OPT_LAYOUT, CLI_VALUE}, {"lse", OPT_LSE, CLI_SWITCH},
    {"json", OPT_JSON, CLI_SWITCH}, {NULL, 0, 0},
};

/* Returns 0 to go on, -1 after --help, else the exit status. */
static int parse_args(int argc, char **argv, run_args *a) {
    long x;
    double s;
    memset(a, 0, sizeof *a);
    mxattn_problem_init(&a->p, NULL, 0);
    a->p.family = NULL;
    a->reps = 20;
    a->check_heads = 1;
    a->seed = 1;
    a->p.heads_kv = 0;  /* 0 until --kv-heads: then --heads (as SDPA and `mxattn tune` read it) */
    cli_parser ps;
    cli_parser_init(&ps, "run", argc, argv, options, -1);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        const char *f = ps.flag, *v = ps.value;
        mxattn_causal c[3];
        int nc;
        switch (id) {
#define INT_FLAG(ID, lo, hi, dst) \
        case ID: if (!cli_parse_long("run", f, v, lo, hi, &x)) return 2; dst = (int)x; break;
        INT_FLAG(OPT_HEAD_DIM, 1, 100000, a->p.head_dim)
        INT_FLAG(OPT_BATCH, 1, 65535, a->p.batch)
        INT_FLAG(OPT_HEADS, 1, 65535, a->p.heads_q)
        INT_FLAG(OPT_KV_HEADS, 1, 65535, a->p.heads_kv)
        INT_FLAG(OPT_SEQ_Q, 1, 1 << 24, a->p.seq_q)
        INT_FLAG(OPT_SEQ_K, 1, 1 << 24, a->p.seq_k)
        INT_FLAG(OPT_REPS, 1, 100000, a->reps)
        INT_FLAG(OPT_CHECK_HEADS, 0, 65535, a->check_heads)
        INT_FLAG(OPT_V_TERMS, 1, 2, a->p.v_terms)
#undef INT_FLAG
        case CLI_HELP: usage(); return -1;
        case CLI_ERROR: return 2;
        case CLI_ARG: return cli_usage_error("run", "unexpected argument '%s'", v);
        case OPT_SEQ:
            if (!cli_parse_long("run", f, v, 1, 1 << 24, &x)) return 2;
            a->p.seq_q = a->p.seq_k = (int)x;
            break;
        case OPT_SEED:
            if (!cli_parse_long("run", f, v, 0, 1L << 40, &x)) return 2;
            a->seed = (uint64_t)x;
            break;
        case OPT_SCALE:
            if (!cli_parse_double("run", f, v, 0, 1e6, &s)) return 2;
            a->p.sm_scale = (float)s;
            break;
        case OPT_FAMILY:
            if (cli_space_load("run") || !cli_space_check_list("run", f, "family", v)) return 2;
            if (strchr(v, ',')) return cli_usage_error("run", "%s takes one family", f);
            a->p.family = v;
            break;
        case OPT_CONFIG: a->config = v; break;
        case OPT_CAUSAL:
            if (!cli_parse_causal("run", f, v ? v : "top-left", 0, c, &nc)) return 2;
            a->p.causal = c[0];
            break;
        case OPT_DTYPE:
            if (!cli_parse_dtype("run", f, v, &a->p.dtype)) return 2;
            a->p.out_dtype = a->p.dtype;
            break;
        case OPT_LAYOUT:
            if (strcmp(v, "bhnd") && strcmp(v, "bnhd")) return cli_usage_error("run", "--layout takes bhnd or bnhd");
            a->p.layout = !strcmp(v, "bnhd") ? MXATTN_LAYOUT_BNHD : MXATTN_LAYOUT_BHND;
            break;
        case OPT_LSE: a->p.return_lse = 1; break;
        default: /* OPT_JSON */ a->json = 1;
        }
    }
    if (!a->p.family) return cli_usage_error("run", "--family is required");
    if (!a->p.head_dim) return cli_usage_error("run", "--head-dim is required");
    /* --heads alone means as many K/V heads (it meant one, a 32-way GQA
     * problem that profiles of "--heads 32" were silently taken on). */
    if (a->p.heads_kv == 0) a->p.heads_kv = a->p.heads_q;
    if (a->p.heads_kv > a->p.heads_q) a->p.heads_q = a->p.heads_kv;
    if (a->check_heads > a->p.heads_q) a->check_heads = a->p.heads_q;
    return 0;
}

static uint16_t to_half(mxattn_dtype t, float x) { return t == MXATTN_F16 ? mx_f32_to_f16(x) : mx_f32_to_bf16(x); }

/* Gaussian inputs. Checked ones are fresh throughout. Timing-only ones
 * (--check-heads 0) repeat a pattern of 2^20 values: a fresh Gaussian for
 * each of the 805M inputs of B=4 H=32 N=16384 D=128 takes ~10 s of CPU, which
 * an A/B of ten problems paid on every run; the kernels' speed does not
 * depend on the values beyond their distribution. */
static void fill_gaussian(uint16_t *host, size_t n, mxattn_dtype dtype, mx_rng *rng, int fresh) {
    const size_t period = (size_t)1 << 20;
    size_t drawn = fresh || n < period ? n : period;
    for (size_t j = 0; j < drawn; j++) host[j] = to_half(dtype, (float)mx_rng_gaussian(rng));
    for (size_t j = drawn; j < n; j += drawn) memcpy(host + j, host, (n - j < drawn ? n - j : drawn) * sizeof *host);
}
static float from_half(mxattn_dtype t, uint16_t h) { return t == MXATTN_F16 ? mx_f16_to_f32(h) : mx_bf16_to_f32(h); }

/* Index of (b, h, n, 0) in a contiguous tensor of the given layout. */
static size_t index_of(mxattn_layout l, int heads, int seq, int d, int b, int h, int n) {
    return l == MXATTN_LAYOUT_BHND ? (((size_t)b * heads + h) * seq + n) * d : (((size_t)b * seq + n) * heads + h) * d;
}

typedef struct { uint16_t *host; void *dev; size_t n; } buffer;

static int check_against_reference(const run_args *a, buffer *t[4], mx_error_stats *err) {
    const mxattn_problem *p = &a->p;
    int d = p->head_dim, gqa = p->heads_q / p->heads_kv;
    size_t nq = (size_t)p->seq_q * d, nk = (size_t)p->seq_k * d;
    float *q = malloc(nq * 4), *k = malloc(nk * 4), *v = malloc(nk * 4), *got = malloc(nq * 4);
    double *ref = malloc(nq * 8);
    if (!q || !k || !v || !got || !ref) {
        free(q); free(k); free(v); free(got); free(ref);
        return cli_fail("run", "out of host memory for the CPU reference (try --check-heads 0)");
    }
    double sum_l1 = 0, sum_ref = 0, dot = 0, nref = 0, ngot = 0, max_abs = 0;
    for (int h = 0; h < a->check_heads; h++) {
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
        if (mx_ref_attention(&s, q, k, v, ref, NULL) != MXATTN_OK) break;
        for (size_t i = 0; i < nq; i++) {
            double e = fabs(got[i] - ref[i]);
            sum_l1 += e; sum_ref += fabs(ref[i]);
            dot += got[i] * ref[i]; nref += ref[i] * ref[i]; ngot += (double)got[i] * got[i];
            if (!(e <= max_abs)) max_abs = e;
        }
    }
    err->rel_l1 = sum_l1 / (sum_ref > 0 ? sum_ref : 1);
    err->cosine = dot / sqrt(nref * ngot + 1e-300);
    err->max_abs = max_abs;
    free(q); free(k); free(v); free(got); free(ref);
    return 0;
}

int cmd_run(int argc, char **argv) {
    run_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    /* The problem is what the flags said: a refusal is the command line's. */
    mxattn_status st = mxattn_problem_check(&a.p);
    if (st != MXATTN_OK) return cli_fail_input("run", st);
    mxattn_ctx *ctx = NULL;
    mxattn_plan *plan = NULL;
    mx_device dev = {0};
    buffer bq = {0}, bk = {0}, bv = {0}, bo = {0}, *t[4] = {&bq, &bk, &bv, &bo};
    mx_timer timer = {0};
    rc = 1;
    if ((st = mxattn_create(&ctx, NULL)) != MXATTN_OK || (st = mx_device_open(&dev, 0)) != MXATTN_OK) {
        cli_fail_status("run", st);
        goto done;
    }
    /* A plan refuses a value only for what the flags said (--config, or a
     * problem this GPU's kernels cannot take): exit 2 for that. */
    if ((st = mxattn_plan_create(ctx, &a.p, a.config, &plan)) != MXATTN_OK) {
        rc = cli_fail_input("run", st);
        goto done;
    }
    mxattn_plan_info info, again;
    mxattn_plan_get_info(plan, &info);
    /* A second plan of the same problem: what a warm start costs once the
     * process has its CUDA context (the first plan also paid for creating it). */
    mxattn_plan *second = NULL;
    if ((st = mxattn_plan_create(ctx, &a.p, a.config, &second)) != MXATTN_OK) {
        cli_fail_status("run", st);
        goto done;
    }
    mxattn_plan_get_info(second, &again);
    mxattn_plan_destroy(second);
    mxattn_problem *p = &a.p;
    bq.n = bo.n = (size_t)p->batch * p->heads_q * p->seq_q * p->head_dim;
    bk.n = bv.n = (size_t)p->batch * p->heads_kv * p->seq_k * p->head_dim;
    mx_rng rng;
    mx_rng_seed(&rng, a.seed);
    for (int i = 0; i < 4; i++) {
        t[i]->host = malloc(t[i]->n * 2);
        if (!t[i]->host) { cli_fail("run", "out of host memory"); goto done; }
        if (i == 3)
            for (size_t j = 0; j < t[i]->n; j++) t[i]->host[j] = 0x7fc1;   /* O: poisoned (NaN) */
        else
            fill_gaussian(t[i]->host, t[i]->n, p->dtype, &rng, a.check_heads > 0);
        if ((st = mx_mem_alloc(&dev, t[i]->n * 2, &t[i]->dev)) != MXATTN_OK ||
            (st = mx_memcpy_htod(&dev, t[i]->dev, t[i]->host, t[i]->n * 2)) != MXATTN_OK) {
            cli_fail_status("run", st);
            goto done;
        }
    }
    float *lse = NULL;
    if (p->return_lse && (st = mx_mem_alloc(&dev, (size_t)p->batch * p->heads_q * p->seq_q * 4, (void **)&lse)) != MXATTN_OK) {
        cli_fail_status("run", st);
        goto done;
    }
    float ms = 0, best = 1e30f, total = 0;
    if ((st = mxattn_run(plan, bq.dev, bk.dev, bv.dev, bo.dev, lse, NULL)) != MXATTN_OK ||
        (st = mx_memcpy_dtoh(&dev, bo.host, bo.dev, bo.n * 2)) != MXATTN_OK || (st = mx_timer_create(&dev, &timer)) != MXATTN_OK) {
        cli_fail_status("run", st);
        goto done;
    }
    for (int r = 0; r < a.reps; r++) {
        if ((st = mx_timer_start(&timer, NULL)) != MXATTN_OK || (st = mxattn_run(plan, bq.dev, bk.dev, bv.dev, bo.dev, lse, NULL)) != MXATTN_OK ||
            (st = mx_timer_stop(&timer, NULL)) != MXATTN_OK || (st = mx_timer_elapsed_ms(&timer, &ms)) != MXATTN_OK) {
            cli_fail_status("run", st);
            goto done;
        }
        total += ms;
        if (ms < best) best = ms;
    }
    mx_error_stats err = {0};
    if (a.check_heads > 0 && check_against_reference(&a, t, &err) != 0) goto done;
    double flops = 4.0 * p->batch * p->heads_q * (double)p->seq_q * p->seq_k * p->head_dim / (p->causal ? 2 : 1);
    if (a.json) {
        printf("{\"kernel\": ");
        cli_json_string(stdout, info.kernel_name);
        printf(", \"config\": ");
        cli_json_string(stdout, info.config);
        printf(", \"config_source\": ");
        cli_json_string(stdout, info.config_source);
        printf(", \"binary_from_cache\": %s, \"plan_ms\": %.3f, \"nvrtc_ms\": %.3f, \"registers\": %d, "
               "\"shared_bytes\": %d, \"spill_bytes\": %d, \"plan_again_ms\": %.3f, \"best_ms\": %.6f, "
               "\"mean_ms\": %.6f, \"reps\": %d, \"tops\": %.3f, \"rel_l1\": %.6e, \"cosine\": %.9f, "
               "\"max_abs\": %.6e, \"checked_heads\": %d}\n",
               info.cubin_from_cache ? "true" : "false", info.create_ms, info.compile_ms, info.registers,
               info.shared_bytes, info.spill_bytes, again.create_ms, best, total / a.reps, a.reps,
               flops / (best * 1e9), err.rel_l1, err.cosine, err.max_abs, a.check_heads);
        rc = 0;
        goto done;
    }
    printf("kernel      %s\nconfig      %s (%s)%s\n", info.kernel_name, info.config, info.config_source,
           info.cubin_from_cache ? ", binary from cache" : "");
    printf("plan        %.1f ms (NVRTC %.1f ms), %d registers, %d bytes shared, %d bytes spilled\n", info.create_ms,
           info.compile_ms, info.registers, info.shared_bytes, info.spill_bytes);
    printf("plan again  %.2f ms (%s)\n", again.create_ms,
           again.cubin_from_cache ? "binary from the database, no NVRTC" : "compiled again: no database");
    printf("time        %.4f ms best, %.4f ms mean of %d; %.1f TOPS\n", best, total / a.reps, a.reps, flops / (best * 1e9));
    printf("error       rel_l1 %.3e  cos %.7f  max_abs %.3e  (%d head(s) of batch 0 vs fp64)\n", err.rel_l1,
           err.cosine, err.max_abs, a.check_heads);
    rc = 0;
done:
    mx_timer_destroy(&timer);
    for (int i = 0; i < 4; i++) { free(t[i]->host); if (t[i]->dev) mx_mem_free(&dev, t[i]->dev); }
    mxattn_plan_destroy(plan);
    mx_device_close(&dev);
    mxattn_destroy(ctx);
    return rc;
}
