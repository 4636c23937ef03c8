/* mxattn tune: offline tuning runs over a grid of problems (or a spec file),
 * storing every measurement and each winner in the database; or, with
 * --compile-only, filling the kernel cache for an arch without a GPU. */
#include "cli.h"
#include "space.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CMD "tune"
#define MAX_LIST 16
#define MAX_PROBLEMS 512
#define TOKENS_PER_BATCH 16384       /* default batch = this / seq: equal work per bucket */
#define DEFAULT_HEADS 16
#define COMPILE_ONLY_CAP 24          /* candidates per shape when compiling without a GPU */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void usage(void) {
    char families[256], archs[256];
    mxattn_tune_options defaults;
    mxattn_tune_options_init(&defaults);
    cli_space_load(CMD);
    cli_space_legal("family", families, sizeof families);
    cli_space_legal("arch", archs, sizeof archs);
    printf(
        "usage: mxattn tune [options]\n"
        "Measures each problem's candidate kernels on this GPU and stores the winners\n"
        "(and every measurement) in the database; plans then use them.  Resumable:\n"
        "run it again after an interruption and it continues where it stopped.\n"
        "\n"
        "problems (every combination):\n"
        "  --family F[,F...]       kernel families (default f16): %s\n"
        "  --head-dim D[,D...]     head dimensions (default 64,128; --head-dims: the old spelling)\n"
        "  --dtype bf16|f16        element type (default bf16)\n"
        "  --causal M[,M...]       masks: none, top-left, bottom-right, or all three\n"
        "                          (default none,top-left, which the old word both names)\n"
        "  --seqs N[,N...]         sequence lengths; each stands for its bucket, the\n"
        "                          next power of two (default 1024,4096,16384)\n"
        "  --seq-q N[,N...]        query lengths against each of --seqs' key lengths\n"
        "                          (default: the same, prefill); 1 tunes decoding,\n"
        "                          which keeps its own results (its query bucket)\n"
        "  --batch B               default %d / seq (at least 1)\n"
        "  --heads H               query heads (default %d)\n"
        "  --gqa G                 query heads per KV head (default 1)\n"
        "  --spec FILE             problems from a file instead, one per line:\n"
        "                          family=f16 head_dim=80 dtype=bf16 causal=1 seq=4096 batch=4 heads=32\n"
        "                          (# starts a comment; keys left out take the flags' values)\n"
        "measuring:\n"
        "  --reps N                timed launches per candidate; the median is kept (default 20)\n"
        "  --warmup N              untimed launches first (default 3)\n"
        "  --settle-ms MS          each candidate's own untimed load before its timing,\n"
        "                          so it is timed at the clock it holds sustained under\n"
        "                          the GPU's power limit (default %.0f; 0: burst timing)\n"
        "  --scores-std S          the inputs' scores ~ N(0, S^2) (default %.1f: a peaked\n"
        "                          softmax; bench/attention.py's randn inputs give ~1)\n"
        "  --max-candidates N      best N by the analytic prior, default first (default: all;\n"
        "                          %d with --compile-only)\n"
        "  --threads N             CPU threads compiling ahead (default: CPUs - 1)\n"
        "  --fresh                 measure again what the database already has\n"
        "  --db PATH               database (default $MXATTN_CACHE or ~/.cache/mxattn/mxattn.db)\n"
        "without a GPU:\n"
        "  --compile-only          compile the candidates into the kernel cache only\n"
        "  --arch A                target of --compile-only (default sm_90a): %s\n"
        "output:\n"
        "  --json                  the results as JSON on stdout\n",
        families, TOKENS_PER_BATCH, DEFAULT_HEADS, defaults.settle_ms, defaults.scores_std, COMPILE_ONLY_CAP, archs);
}

typedef struct {
    const char *families[MAX_LIST];
    int n_families;
    long head_dims[MAX_LIST];
    int n_head_dims;
    mxattn_dtype dtype;
    mxattn_causal causals[3];
    int n_causals;
    long seqs[MAX_LIST];
    int n_seqs;
    long seq_qs[MAX_LIST];             /* none: seq_q = seq */
    int n_seq_qs;
    long batch, heads, gqa;         /* batch 0: from the seq */
    long reps, warmup, max_candidates, threads, settle_ms;   /* -1: default */
    const char *db, *spec, *arch;
    double scores_std;                 /* 0: default */
    int compile_only, json, fresh;
} options;

typedef struct {
    mxattn_problem p;
    char family[32];
    char label[96];
} problem;

/* ---- parsing ------------------------------------------------------------- */

static int parse_families(const char *flag, const char *text, options *o) {
    static char buf[512];
    if (cli_space_load(CMD) || !cli_space_check_list(CMD, flag, "family", text)) return 0;
    snprintf(buf, sizeof buf, "%s", text);
    o->n_families = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (o->n_families == MAX_LIST) { cli_usage_error(CMD, "%s: at most %d values", flag, MAX_LIST); return 0; }
        o->families[o->n_families++] = tok;
    }
    if (o->n_families == 0) { cli_usage_error(CMD, "%s needs at least one value", flag); return 0; }
    return 1;
}

/* A spec line's causal=: the words, or 0|1|2. */
static int parse_causal_name(const char *text, mxattn_causal *out) {
    if (!strcmp(text, "none") || !strcmp(text, "0")) *out = MXATTN_CAUSAL_NONE;
    else if (!strcmp(text, "top-left") || !strcmp(text, "1")) *out = MXATTN_CAUSAL_TOP_LEFT;
    else if (!strcmp(text, "bottom-right") || !strcmp(text, "2")) *out = MXATTN_CAUSAL_BOTTOM_RIGHT;
    else return 0;
    return 1;
}

static int parse_dtype(const char *text, mxattn_dtype *out) {
    if (!strcmp(text, "bf16")) *out = MXATTN_BF16;
    else if (!strcmp(text, "f16")) *out = MXATTN_F16;
    else return 0;
    return 1;
}

static void options_init(options *o) {
    memset(o, 0, sizeof *o);
    o->families[0] = "f16";
    o->n_families = 1;
    o->head_dims[0] = 64; o->head_dims[1] = 128;
    o->n_head_dims = 2;
    o->dtype = MXATTN_BF16;
    o->causals[0] = MXATTN_CAUSAL_NONE; o->causals[1] = MXATTN_CAUSAL_TOP_LEFT;
    o->n_causals = 2;
    o->seqs[0] = 1024; o->seqs[1] = 4096; o->seqs[2] = 16384;
    o->n_seqs = 3;
    o->heads = DEFAULT_HEADS;
    o->gqa = 1;
    o->reps = o->warmup = o->max_candidates = o->threads = o->settle_ms = -1;
}

enum {
    OPT_COMPILE_ONLY = 1, OPT_JSON, OPT_FRESH, OPT_FAMILY, OPT_HEAD_DIM, OPT_DTYPE, OPT_CAUSAL, OPT_SEQS, OPT_SEQ_Q,
    OPT_BATCH, OPT_HEADS, OPT_GQA, OPT_REPS, OPT_WARMUP, OPT_SETTLE_MS, OPT_SCORES_STD, OPT_MAX_CANDIDATES,
    OPT_THREADS, OPT_DB, OPT_SPEC, OPT_ARCH
};
static const cli_option cli_options[] = {
    {"compile-only", OPT_COMPILE_ONLY, CLI_SWITCH}, {"json", OPT_JSON, CLI_SWITCH}, {"fresh", OPT_FRESH, CLI_SWITCH},
    {"family", OPT_FAMILY, CLI_VALUE}, {"families", OPT_FAMILY, CLI_VALUE},
    {"head-dim", OPT_HEAD_DIM, CLI_VALUE}, {"head-dims", OPT_HEAD_DIM, CLI_VALUE},
    {"dtype", OPT_DTYPE, CLI_VALUE}, {"causal", OPT_CAUSAL, CLI_VALUE},
    {"seqs", OPT_SEQS, CLI_VALUE}, {"seq", OPT_SEQS, CLI_VALUE}, {"seq-q", OPT_SEQ_Q, CLI_VALUE},
    {"batch", OPT_BATCH, CLI_VALUE}, {"heads", OPT_HEADS, CLI_VALUE}, {"gqa", OPT_GQA, CLI_VALUE},
    {"reps", OPT_REPS, CLI_VALUE}, {"warmup", OPT_WARMUP, CLI_VALUE}, {"settle-ms", OPT_SETTLE_MS, CLI_VALUE},
    {"scores-std", OPT_SCORES_STD, CLI_VALUE}, {"max-candidates", OPT_MAX_CANDIDATES, CLI_VALUE},
    {"threads", OPT_THREADS, CLI_VALUE}, {"db", OPT_DB, CLI_VALUE}, {"spec", OPT_SPEC, CLI_VALUE},
    {"arch", OPT_ARCH, CLI_VALUE}, {NULL, 0, 0},
};

/* Returns 0 to go on, else the exit status (--help's 0 is signalled by -1). */
static int parse_args(int argc, char **argv, options *o) {
    cli_parser ps;
    cli_parser_init(&ps, CMD, argc, argv, cli_options, -1);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        const char *a = ps.flag, *v = ps.value;
        int ok = 1;
        switch (id) {
        case CLI_HELP: usage(); return -1;
        case CLI_ERROR: return 2;
        case CLI_ARG: return cli_usage_error(CMD, "unexpected argument '%s'", v);
        case OPT_COMPILE_ONLY: o->compile_only = 1; break;
        case OPT_JSON: o->json = 1; break;
        case OPT_FRESH: o->fresh = 1; break;
        case OPT_FAMILY: ok = parse_families(a, v, o); break;
        case OPT_HEAD_DIM: ok = cli_parse_long_list(CMD, a, v, 8, 256, o->head_dims, MAX_LIST, &o->n_head_dims); break;
        case OPT_DTYPE: ok = cli_parse_dtype(CMD, a, v, &o->dtype); break;
        case OPT_CAUSAL: ok = cli_parse_causal(CMD, a, v, 1, o->causals, &o->n_causals); break;
        case OPT_SEQS: ok = cli_parse_long_list(CMD, a, v, 1, 1 << 20, o->seqs, MAX_LIST, &o->n_seqs); break;
        case OPT_SEQ_Q: ok = cli_parse_long_list(CMD, a, v, 1, 1 << 20, o->seq_qs, MAX_LIST, &o->n_seq_qs); break;
        case OPT_BATCH: ok = cli_parse_long(CMD, a, v, 1, 65535, &o->batch); break;
        case OPT_HEADS: ok = cli_parse_long(CMD, a, v, 1, 65535, &o->heads); break;
        case OPT_GQA: ok = cli_parse_long(CMD, a, v, 1, 256, &o->gqa); break;
        case OPT_REPS: ok = cli_parse_long(CMD, a, v, 1, 10000, &o->reps); break;
        case OPT_WARMUP: ok = cli_parse_long(CMD, a, v, 0, 1000, &o->warmup); break;
        case OPT_SETTLE_MS: ok = cli_parse_long(CMD, a, v, 0, 60000, &o->settle_ms); break;
        case OPT_SCORES_STD: {
            char *end;
            o->scores_std = strtod(v, &end);
            if (*end || !(o->scores_std > 0 && o->scores_std <= 100))
                return cli_usage_error(CMD, "--scores-std must be a number in (0, 100], got '%s'", v);
            break;
        }
        case OPT_MAX_CANDIDATES: ok = cli_parse_long(CMD, a, v, 0, 4096, &o->max_candidates); break;
        case OPT_THREADS: ok = cli_parse_long(CMD, a, v, 0, 64, &o->threads); break;
        case OPT_DB: o->db = v; break;
        case OPT_SPEC: o->spec = v; break;
        default: /* OPT_ARCH: the templates' list of targets */
            if (cli_space_load(CMD) || !cli_space_check_list(CMD, a, "arch", v) || strchr(v, ',')) {
                if (strchr(v, ',')) cli_usage_error(CMD, "%s takes one arch", a);
                return 2;
            }
            o->arch = v;
        }
        if (!ok) return 2;
    }
    if (o->arch && !o->compile_only)
        return cli_usage_error(CMD, "--arch goes with --compile-only: tuning measures the GPU that is present");
    if (o->heads % o->gqa) return cli_usage_error(CMD, "--gqa %ld must divide --heads %ld", o->gqa, o->heads);
    if (o->spec && o->n_seq_qs)
        return cli_usage_error(CMD, "--seq-q goes with the grid flags, not --spec (a spec line says seq_q=N)");
    return 0;
}

/* ---- problems -------------------------------------------------------------- */

static const char *causal_name(mxattn_causal c) { return cli_causal_name(c); }

static void label_problem(problem *pr) {
    const mxattn_problem *p = &pr->p;
    int n = snprintf(pr->label, sizeof pr->label, "%s d%d %s %s ", pr->family, p->head_dim,
                     p->dtype == MXATTN_F16 ? "f16" : "bf16", causal_name(p->causal));
    if (n < 0 || (size_t)n >= sizeof pr->label) return;
    if (p->seq_q == p->seq_k) snprintf(pr->label + n, sizeof pr->label - (size_t)n, "seq %d", p->seq_q);
    else snprintf(pr->label + n, sizeof pr->label - (size_t)n, "q %d k %d", p->seq_q, p->seq_k);
}

/* seq is the key length; the batch (unless given) keeps the keys' work per bucket equal. */
static void make_problem(problem *pr, const options *o, const char *family, int head_dim, mxattn_causal causal,
                         long seq, long seq_q, long batch, long heads, long heads_kv) {
    snprintf(pr->family, sizeof pr->family, "%s", family);
    mxattn_problem_init(&pr->p, pr->family, head_dim);
    pr->p.dtype = pr->p.out_dtype = o->dtype;
    pr->p.causal = causal;
    pr->p.seq_q = (int)seq_q;
    pr->p.seq_k = (int)seq;
    long auto_batch = TOKENS_PER_BATCH / seq;
    pr->p.batch = (int)(batch > 0 ? batch : auto_batch > 0 ? auto_batch : 1);
    pr->p.heads_q = (int)heads;
    pr->p.heads_kv = (int)heads_kv;
}

static int grid_problems(const options *o, problem *out, int *n) {
    *n = 0;
    for (int f = 0; f < o->n_families; f++)
        for (int d = 0; d < o->n_head_dims; d++)
            for (int c = 0; c < o->n_causals; c++)
                for (int s = 0; s < o->n_seqs; s++)
                    for (int q = 0; q < (o->n_seq_qs ? o->n_seq_qs : 1); q++) {
                        if (*n == MAX_PROBLEMS) return cli_usage_error(CMD, "more than %d problems", MAX_PROBLEMS);
                        make_problem(&out[(*n)++], o, o->families[f], (int)o->head_dims[d], o->causals[c], o->seqs[s],
                                     o->n_seq_qs ? o->seq_qs[q] : o->seqs[s], o->batch, o->heads, o->heads / o->gqa);
                    }
    return 0;
}

/* One spec line's key=value into the problem; 0 on success. */
static int spec_term(problem *pr, const char *key, const char *value, long *heads, long *heads_kv, long *gqa,
                     char *why, size_t why_len) {
    mxattn_problem *p = &pr->p;
    char *end;
    errno = 0;
    long n = strtol(value, &end, 10);
    int numeric = *value && !*end && !errno;
    if (!strcmp(key, "family")) { snprintf(pr->family, sizeof pr->family, "%s", value); return 0; }
    if (!strcmp(key, "dtype")) {
        if (!parse_dtype(value, &p->dtype)) { snprintf(why, why_len, "dtype must be bf16 or f16"); return 1; }
        p->out_dtype = p->dtype;
        return 0;
    }
    if (!strcmp(key, "causal")) {
        if (!parse_causal_name(value, &p->causal)) { snprintf(why, why_len, "causal must be 0, 1, 2, none, top-left or bottom-right"); return 1; }
        return 0;
    }
    if (!strcmp(key, "layout")) {
        if (strcmp(value, "bhnd") && strcmp(value, "bnhd")) { snprintf(why, why_len, "layout must be bhnd or bnhd"); return 1; }
        p->layout = strcmp(value, "bhnd") ? MXATTN_LAYOUT_BNHD : MXATTN_LAYOUT_BHND;
        return 0;
    }
    static const char *const numeric_keys[] = {"head_dim", "seq", "seq_q", "seq_k", "batch", "heads", "heads_q",
                                               "heads_kv", "gqa"};
    int known = 0;
    for (size_t i = 0; i < sizeof numeric_keys / sizeof *numeric_keys; i++) known |= !strcmp(key, numeric_keys[i]);
    if (!known) {
        snprintf(why, why_len, "unknown key '%s' (family, head_dim, dtype, causal, seq, seq_q, seq_k, batch, heads, heads_kv, gqa, layout)", key);
        return 1;
    }
    if (!numeric || n < 1 || n > (1 << 24)) { snprintf(why, why_len, "%s expects a positive integer, got '%s'", key, value); return 1; }
    if (!strcmp(key, "head_dim")) p->head_dim = (int)n;
    else if (!strcmp(key, "seq")) p->seq_q = p->seq_k = (int)n;
    else if (!strcmp(key, "seq_q")) p->seq_q = (int)n;
    else if (!strcmp(key, "seq_k")) p->seq_k = (int)n;
    else if (!strcmp(key, "batch")) p->batch = (int)n;
    else if (!strcmp(key, "heads") || !strcmp(key, "heads_q")) *heads = n;
    else if (!strcmp(key, "heads_kv")) *heads_kv = n;
    else *gqa = n;
    return 0;
}

static int spec_line(const options *o, char *line, problem *pr, char *why, size_t why_len) {
    make_problem(pr, o, o->families[0], (int)o->head_dims[0], o->causals[0], o->seqs[0], o->seqs[0], o->batch,
                 o->heads, o->heads / o->gqa);
    pr->p.batch = 0;   /* from the seq unless the line says */
    long heads = o->heads, heads_kv = 0, gqa = 0;
    char *save = NULL;
    for (char *tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq || eq == tok) { snprintf(why, why_len, "'%s' is not key=value", tok); return 1; }
        *eq = 0;
        if (spec_term(pr, tok, eq + 1, &heads, &heads_kv, &gqa, why, why_len)) return 1;
    }
    if (!heads_kv) heads_kv = gqa ? heads / gqa : heads / o->gqa;
    if (heads_kv < 1 || heads % heads_kv) { snprintf(why, why_len, "heads %ld is not a multiple of heads_kv", heads); return 1; }
    pr->p.heads_q = (int)heads;
    pr->p.heads_kv = (int)heads_kv;
    pr->p.family = pr->family;
    if (pr->p.batch == 0) {
        long seq = pr->p.seq_q > pr->p.seq_k ? pr->p.seq_q : pr->p.seq_k;
        pr->p.batch = (int)(o->batch > 0 ? o->batch : TOKENS_PER_BATCH / seq > 0 ? TOKENS_PER_BATCH / seq : 1);
    }
    return 0;
}

static int spec_problems(const options *o, problem *out, int *n) {
    FILE *f = fopen(o->spec, "r");
    if (!f) return cli_fail(CMD, "cannot read the spec file '%s': %s", o->spec, strerror(errno));
    char line[1024], why[256];
    int lineno = 0, rc = 0;
    *n = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        line[strcspn(line, "\n")] = 0;
        if (strspn(line, " \t\r") == strlen(line)) continue;
        if (*n == MAX_PROBLEMS) rc = cli_usage_error(CMD, "%s: more than %d problems", o->spec, MAX_PROBLEMS);
        else if (spec_line(o, line, &out[*n], why, sizeof why)) rc = cli_usage_error(CMD, "%s:%d: %s", o->spec, lineno, why);
        else (*n)++;
    }
    fclose(f);
    if (!rc && *n == 0) rc = cli_usage_error(CMD, "%s lists no problem", o->spec);
    return rc;
}

/* Checks every problem before any work starts: a typo fails fast. */
static int resolve_all(problem *pr, int n, const char *origin) {
    for (int i = 0; i < n; i++) {
        pr[i].p.family = pr[i].family;
        mxattn_status st = mxattn_problem_check(&pr[i].p);
        label_problem(&pr[i]);
        if (st != MXATTN_OK)
            return cli_usage_error(CMD, "%s problem %d (%s): %s", origin, i + 1, pr[i].label, mxattn_last_error());
    }
    return 0;
}

/* Asks the templates about each family once, so that a family they cannot
 * build yet fails here, in one line, before any work. */
static int check_families(mxattn_ctx *ctx, problem *pr, int n, const char *arch) {
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= !strcmp(pr[i].family, pr[j].family);
        if (seen) continue;
        char *shape = NULL, *canonical = NULL;
        mxattn_status st = mxattn_problem_params(&pr[i].p, arch, &shape);
        if (st == MXATTN_OK) st = mxattn_params_resolve(ctx, shape, &canonical);
        mxattn_free(shape);
        mxattn_free(canonical);
        if (st != MXATTN_OK) return cli_usage_error(CMD, "family %s: %s", pr[i].family, mxattn_last_error());
    }
    return 0;
}

/* ---- progress ---------------------------------------------------------------- */

typedef struct {
    int tty;
    int index, count;            /* problem index (0-based), problems in all */
    const char *label;
    double run_start_ms, problem_start_ms, last_print_ms;
    double finished_s;           /* wall seconds of the problems done */
    int finished;
    const char *verb;            /* "measuring" or "compiling" */
} progress_state;

static void format_duration(double s, char *out, size_t cap) {
    if (s < 0) s = 0;
    if (s < 60) snprintf(out, cap, "%.0fs", s);
    else if (s < 3600) snprintf(out, cap, "%dm%02ds", (int)s / 60, (int)s % 60);
    else snprintf(out, cap, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

static void on_progress(void *user, const mxattn_tune_progress *p) {
    progress_state *ps = user;
    double now = now_ms();
    /* A failed candidate says why, always: the database keeps only its status. */
    if (p->why) {
        fprintf(stderr, "%s  %s: %s: %s\n", ps->tty ? "\r\033[K" : "", p->current, p->status, p->why);
        fflush(stderr);
    }
    int last = p->done >= p->total;
    if (!ps->tty && !last && now - ps->last_print_ms < 2000) return;   /* logs get a line per 2 s */
    ps->last_print_ms = now;
    /* Time left: this problem's estimate, plus the others at the average pace so far. */
    double this_total = p->elapsed_s + p->eta_s;
    double per_problem = ps->finished ? ps->finished_s / ps->finished : this_total;
    double left = p->eta_s + per_problem * (ps->count - ps->index - 1);
    char eta[32], best[160] = "";
    format_duration(left, eta, sizeof eta);
    if (p->best) snprintf(best, sizeof best, "  best %.3f ms", p->best_ms);
    fprintf(stderr, "%s[%d/%d] %s: %s %d/%d%s  ~%s left%s", ps->tty ? "\r" : "", ps->index + 1, ps->count,
            ps->label, ps->verb, p->done, p->total, best, eta, ps->tty ? "\033[K" : "\n");
    fflush(stderr);
}

static void progress_end_line(const progress_state *ps) {
    if (ps->tty) { fputc('\n', stderr); fflush(stderr); }
}

/* ---- JSON -------------------------------------------------------------------- */

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* ---- compile-only --------------------------------------------------------------- */

static int default_threads(const options *o) {
    if (o->threads >= 0) return (int)o->threads;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* The calling thread compiles too whenever the pool falls behind. */
    return cpus > 1 ? (int)(cpus - 1 < 16 ? cpus - 1 : 16) : 1;
}

static void base_options(const options *o, mxattn_tune_options *t, progress_state *ps) {
    mxattn_tune_options_init(t);
    if (o->reps > 0) t->reps = (int)o->reps;
    if (o->warmup >= 0) t->warmup = (int)o->warmup;
    if (o->settle_ms >= 0) t->settle_ms = (double)o->settle_ms;
    if (o->scores_std > 0) t->scores_std = o->scores_std;
    t->compile_threads = default_threads(o);
    t->progress = on_progress;
    t->user = ps;
}

/* The database's path, for the report ("" when there is none). */
static const char *db_path(mxattn_ctx *ctx, mxattn_cache_info *info) {
    if (mxattn_cache_get_info(ctx, info) != MXATTN_OK) info->path[0] = 0;
    return info->path;
}

static int compile_only(mxattn_ctx *ctx, const options *o, problem *pr, int n) {
    const char *arch = o->arch ? o->arch : "sm_90a";
    mxattn_cache_info ci;
    if (mxattn_cache_get_info(ctx, &ci) != MXATTN_OK)
        return cli_fail(CMD, "the database could not be opened: compile-only has nowhere to store kernels");
    /* Kernels depend on the shape, not on the sizes: one compile per shape. */
    static char shapes[MAX_PROBLEMS][1024];
    int n_shapes = 0, rc = 0;
    mxattn_tune_report total;
    memset(&total, 0, sizeof total);
    progress_state ps = {.tty = isatty(2), .verb = "compiling", .run_start_ms = now_ms()};
    int unique[MAX_PROBLEMS];
    for (int i = 0; i < n; i++) {
        mxattn_problem one = pr[i].p;
        char *shape = NULL;
        one.seq_q = one.seq_k = 1;
        mxattn_status st = mxattn_problem_params(&one, arch, &shape);
        if (st != MXATTN_OK) return cli_fail_status(CMD, st);
        snprintf(shapes[n_shapes], sizeof shapes[0], "%s", shape);
        mxattn_free(shape);
        int seen = 0;
        for (int j = 0; j < n_shapes; j++) seen |= !strcmp(shapes[j], shapes[n_shapes]);
        if (!seen) unique[n_shapes++] = i;
    }
    ps.count = n_shapes;
    for (int s = 0; s < n_shapes; s++) {
        problem *p = &pr[unique[s]];
        mxattn_tune_options t;
        base_options(o, &t, &ps);
        t.compile_only = 1;
        t.arch = arch;
        t.max_candidates = o->max_candidates >= 0 ? (int)o->max_candidates : COMPILE_ONLY_CAP;
        char label[96];
        snprintf(label, sizeof label, "%s d%d %s causal=%d", p->family, p->p.head_dim,
                 p->p.dtype == MXATTN_F16 ? "f16" : "bf16", p->p.causal != MXATTN_CAUSAL_NONE);
        ps.index = s;
        ps.label = label;
        mxattn_tune_report out;
        mxattn_status st = mxattn_tune_run(ctx, &p->p, &t, &out);
        progress_end_line(&ps);
        /* Kernels the cache would not take are counted and reported once, below. */
        int lost_writes = st != MXATTN_OK && st == out.store_status;
        if (st != MXATTN_OK && !lost_writes) { rc = cli_fail_status(CMD, st); continue; }
        if (lost_writes && total.store_status == MXATTN_OK) {
            total.store_status = out.store_status;
            snprintf(total.store_error, sizeof total.store_error, "%s", out.store_error);
        }
        total.kernels_not_stored += out.kernels_not_stored;
        ps.finished++;
        ps.finished_s += out.wall_s;
        total.candidates += out.candidates;
        total.compiled += out.compiled;
        total.cache_hits += out.cache_hits;
        total.compile_failed += out.compile_failed;
        total.pruned += out.pruned;
        total.compile_ms += out.compile_ms;
    }
    double wall = (now_ms() - ps.run_start_ms) / 1e3;
    int threads = default_threads(o);
    if (o->json) {
        printf("{\"arch\": \"%s\", \"shapes\": %d, \"candidates\": %d, \"compiled\": %d, \"cache_hits\": %d, "
               "\"compile_failed\": %d, \"spilling\": %d, \"compile_s\": %.2f, \"wall_s\": %.2f, \"threads\": %d, \"db\": ",
               arch, n_shapes, total.candidates, total.compiled, total.cache_hits, total.compile_failed, total.pruned,
               total.compile_ms / 1e3, wall, threads + 1);
        json_string(stdout, db_path(ctx, &ci));
        printf(", \"not_stored\": %d}\n", total.kernels_not_stored);
    } else {
        printf("compile-only for %s: %d shape%s x up to %d candidates (seq lengths share kernels)\n", arch, n_shapes,
               n_shapes == 1 ? "" : "s", o->max_candidates >= 0 ? (int)o->max_candidates : COMPILE_ONLY_CAP);
        printf("  kernels compiled  %d  (NVRTC %.1f s summed over %d threads)\n", total.compiled, total.compile_ms / 1e3, threads + 1);
        printf("  cache hits        %d\n", total.cache_hits);
        if (total.compile_failed) printf("  compile failures  %d\n", total.compile_failed);
        if (total.pruned) printf("  spilling          %d (compiled, but the tuner will skip them)\n", total.pruned);
        printf("  wall time         %.1f s\n  kernel cache      %s\n", wall, db_path(ctx, &ci));
    }
    if (total.kernels_not_stored)
        rc = cli_fail(CMD, "compiled %d, stored %d: %d kernel%s not stored: %s", total.compiled,
                      total.compiled - total.kernels_not_stored, total.kernels_not_stored,
                      total.kernels_not_stored == 1 ? "" : "s", total.store_error);
    return rc;
}

/* ---- tuning --------------------------------------------------------------------- */

typedef struct {
    const problem *pr;
    mxattn_tune_report out;
    mxattn_status st;
    char error[512];
} result;

/* A run whose only failure was the database's refusal still found a winner. */
static int has_result(const result *r) {
    return r->st == MXATTN_OK || (r->out.best_config[0] && r->st == r->out.store_status);
}

static void print_table(const mxattn_device_info *dev, const char *db, const result *r, int n) {
    printf("\nTuned on %s (%s, %d SMs); database %s\n", dev->name, dev->arch, dev->sm_count, db);
    printf("%-8s %4s %-5s %-12s %6s %6s %5s  %-44s %9s %7s %10s %8s\n", "family", "d", "dtype", "causal", "bucket",
           "q", "cands", "best config", "ms", "TOPS", "default ms", "speed-up");
    for (int i = 0; i < n; i++) {
        const mxattn_problem *p = &r[i].pr->p;
        const mxattn_tune_report *o = &r[i].out;
        printf("%-8s %4d %-5s %-12s %6d %6d %5d  ", r[i].pr->family, p->head_dim, p->dtype == MXATTN_F16 ? "f16" : "bf16",
               causal_name(p->causal), o->seq_bucket, o->q_bucket, o->candidates);
        if (!has_result(&r[i])) { printf("failed: %.100s\n", r[i].error); continue; }
        printf("%-44s %9.4f %7.1f %10.4f %7.2fx\n", o->best_config, o->best_ms, o->best_tops, o->default_ms,
               o->best_ms > 0 && o->default_ms > 0 ? o->default_ms / o->best_ms : 0);
    }
    printf("(ms: the best candidate's median; speed-up: the heuristic default's median over it, both timed in this run)\n");
}

static void print_json(const mxattn_device_info *dev, const result *r, int n) {
    printf("[");
    for (int i = 0; i < n; i++) {
        const mxattn_problem *p = &r[i].pr->p;
        const mxattn_tune_report *o = &r[i].out;
        printf("%s\n  {\"gpu\": ", i ? "," : "");
        json_string(stdout, dev->name);
        printf(", \"family\": ");
        json_string(stdout, r[i].pr->family);
        printf(", \"head_dim\": %d, \"dtype\": \"%s\", \"causal\": %d, \"seq_bucket\": %d, \"q_bucket\": %d, "
               "\"batch\": %d, \"heads_q\": %d, \"heads_kv\": %d, \"seq\": %d, \"seq_q\": %d, \"seq_k\": %d, "
               "\"candidates\": %d, \"measured\": %d, \"failed\": %d, \"skipped\": %d, ",
               p->head_dim, p->dtype == MXATTN_F16 ? "f16" : "bf16", (int)p->causal, o->seq_bucket, o->q_bucket,
               p->batch, p->heads_q, p->heads_kv, p->seq_q, p->seq_q, p->seq_k,
               o->candidates, o->measured, o->failed, o->skipped);
        if (r[i].st != MXATTN_OK) {
            printf("\"error\": ");
            json_string(stdout, r[i].error);
            if (has_result(&r[i])) printf(", ");
        }
        if (has_result(&r[i])) {
            printf("\"config\": ");
            json_string(stdout, o->best_config);
            printf(", \"median_ms\": %.6f, \"tops\": %.3f, \"default_config\": ", o->best_ms, o->best_tops);
            json_string(stdout, o->default_config);
            printf(", \"default_ms\": %.6f, \"speedup\": %.4f", o->default_ms,
                   o->best_ms > 0 && o->default_ms > 0 ? o->default_ms / o->best_ms : 0);
        }
        printf("}");
    }
    printf("\n]\n");
}

static int tune_all(mxattn_ctx *ctx, const mxattn_device_info *dev, const options *o, problem *pr, int n) {
    mxattn_cache_info ci;
    if (mxattn_cache_get_info(ctx, &ci) != MXATTN_OK)
        return cli_fail(CMD, "the database could not be opened: results would be lost");
    result *res = calloc((size_t)n, sizeof *res);
    if (!res) return cli_fail(CMD, "out of memory");
    progress_state ps = {.tty = isatty(2), .verb = "candidate", .count = n, .run_start_ms = now_ms()};
    int failures = 0;
    for (int i = 0; i < n; i++) {
        mxattn_tune_options t;
        base_options(o, &t, &ps);
        t.max_candidates = o->max_candidates > 0 ? (int)o->max_candidates : 0;
        t.resume = !o->fresh;
        ps.index = i;
        ps.label = pr[i].label;
        res[i].pr = &pr[i];
        res[i].st = mxattn_tune_run(ctx, &pr[i].p, &t, &res[i].out);
        progress_end_line(&ps);
        ps.finished++;
        ps.finished_s += res[i].out.wall_s;
        if (res[i].st != MXATTN_OK) {
            snprintf(res[i].error, sizeof res[i].error, "%s: %s", mxattn_status_string(res[i].st), mxattn_last_error());
            fprintf(stderr, "mxattn tune: %s: %s\n", pr[i].label, res[i].error);
            failures++;
            /* A broken context breaks every later problem too. */
            if (res[i].st == MXATTN_ERROR_CUDA) { n = i + 1; break; }
        }
    }
    if (o->json) print_json(dev, res, n);
    else print_table(dev, db_path(ctx, &ci), res, n);
    free(res);
    return failures ? 1 : 0;
}

int cmd_tune(int argc, char **argv) {
    options o;
    options_init(&o);
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    static problem problems[MAX_PROBLEMS];
    int n = 0;
    rc = o.spec ? spec_problems(&o, problems, &n) : grid_problems(&o, problems, &n);
    if (rc == 0) rc = resolve_all(problems, n, o.spec ? o.spec : "grid");
    if (rc) return rc;

    mxattn_options opts;
    mxattn_options_init(&opts);
    opts.db_path = o.db;
    opts.tune_policy = "off";
    mxattn_ctx *ctx = NULL;
    mxattn_status st = mxattn_create(&ctx, &opts);
    if (st != MXATTN_OK) return cli_fail_status(CMD, st);
    if (o.compile_only) {
        const char *arch = o.arch ? o.arch : "sm_90a";
        rc = check_families(ctx, problems, n, arch);
        if (rc == 0) rc = compile_only(ctx, &o, problems, n);
    } else {
        mxattn_device_info dev;
        st = mxattn_device_get_info(opts.device, &dev);
        if (st == MXATTN_ERROR_NO_DRIVER || st == MXATTN_ERROR_NO_DEVICE)
            rc = cli_fail(CMD, "no GPU here, and tuning measures kernels on one: use --compile-only "
                          "[--arch sm_90a] to fill the kernel cache without a GPU (%s)", mxattn_last_error());
        else if (st != MXATTN_OK) rc = cli_fail_status(CMD, st);
        else rc = check_families(ctx, problems, n, dev.arch);
        if (rc == 0) rc = tune_all(ctx, &dev, &o, problems, n);
    }
    mxattn_destroy(ctx);
    return rc;
}
