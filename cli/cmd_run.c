/* `mxattn run`: one problem on the GPU, checked against the CPU reference. */
#include "cli.h"
#include "space.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    mxattn_problem p;
    const char *config;
    int reps;
    int check_heads;     /* heads compared against the fp64 reference */
    unsigned long long seed;
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
            a->seed = (unsigned long long)x;
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

int cmd_run(int argc, char **argv) {
    run_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    /* The problem is what the flags said: a refusal is the command line's. */
    mxattn_status st = mxattn_problem_check(&a.p);
    if (st != MXATTN_OK) return cli_fail_input("run", st);
    mxattn_ctx *ctx = NULL;
    mxattn_plan *plan = NULL;
    mxattn_device_info dev;
    rc = 1;
    if ((st = mxattn_create(&ctx, NULL)) != MXATTN_OK || (st = mxattn_device_get_info(0, &dev)) != MXATTN_OK) {
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
    mxattn_bench_options bo;
    mxattn_bench_report r;
    mxattn_bench_options_init(&bo);
    bo.reps = a.reps;
    bo.seed = a.seed;
    bo.check_heads = a.check_heads;
    if ((st = mxattn_plan_benchmark(plan, &bo, &r)) != MXATTN_OK) {
        cli_fail_status("run", st);
        goto done;
    }
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
               info.shared_bytes, info.spill_bytes, again.create_ms, r.best_ms, r.mean_ms, r.reps,
               r.tops, r.rel_l1, r.cosine, r.max_abs, a.check_heads);
        rc = 0;
        goto done;
    }
    printf("kernel      %s\nconfig      %s (%s)%s\n", info.kernel_name, info.config, info.config_source,
           info.cubin_from_cache ? ", binary from cache" : "");
    printf("plan        %.1f ms (NVRTC %.1f ms), %d registers, %d bytes shared, %d bytes spilled\n", info.create_ms,
           info.compile_ms, info.registers, info.shared_bytes, info.spill_bytes);
    printf("plan again  %.2f ms (%s)\n", again.create_ms,
           again.cubin_from_cache ? "binary from the database, no NVRTC" : "compiled again: no database");
    printf("time        %.4f ms best, %.4f ms mean of %d; %.1f TOPS\n", r.best_ms, r.mean_ms, r.reps, r.tops);
    printf("error       rel_l1 %.3e  cos %.7f  max_abs %.3e  (%d head(s) of batch 0 vs fp64)\n", r.rel_l1,
           r.cosine, r.max_abs, a.check_heads);
    rc = 0;
done:
    mxattn_plan_destroy(plan);
    mxattn_destroy(ctx);
    return rc;
}
