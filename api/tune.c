/* The public tuning calls: mxattn_tune and mxattn_tune_run (measure on the
 * GPU and store the winner, or compile only), mxattn_problem_params, and
 * mxattn_query (read the stored winners; no GPU). */
#include "api/context.h"
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mxattn_status tune_run(const char *what, mxattn_ctx *ctx, const mxattn_problem *p,
                              const mxattn_tune_options *opts, mxattn_tune_report *report);

mxattn_status mxattn_tune(mxattn_ctx *ctx, const mxattn_problem *p, char *best_config,
                          size_t best_config_len, double *speedup) {
    if (!ctx || !p) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_tune: ctx and problem must not be NULL");
    if (best_config && best_config_len == 0)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "mxattn_tune: best_config_len is 0");
    if (best_config) best_config[0] = 0;
    if (speedup) *speedup = 0;
    mxattn_tune_options opt;
    mxattn_tune_report report;
    mxattn_tune_options_init(&opt);   /* resume: an interrupted call picks up where it stopped */
    mxattn_status st = tune_run("mxattn_tune", ctx, p, &opt, &report);
    /* A run whose winner the cache did not take still has a winner: it is
     * returned with the status and message of the lost writes. */
    if (st != MXATTN_OK && !report.best_config[0]) return st;
    if (best_config) snprintf(best_config, best_config_len, "%s", report.best_config);
    if (speedup && report.best_ms > 0 && report.default_ms > 0) *speedup = report.default_ms / report.best_ms;
    if (st == MXATTN_OK) mx_clear_error();
    return st;
}

mxattn_status mxattn_query(mxattn_ctx *ctx, const char *filter, char **json) {
    if (!ctx || !json) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_query: ctx and json must not be NULL");
    *json = NULL;
    mx_tune_filter f;
    mxattn_status st = mx_tune_filter_parse(filter, &f);
    if (st != MXATTN_OK) return st;
    if (ctx->no_cache) {
        /* No database by choice: nothing is tuned, which is an empty answer. */
        *json = strdup("[]");
        return *json ? MXATTN_OK : mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    mx_cache *cache = mx_ctx_cache(ctx);
    if (!cache) return mx_fail(ctx->cache_status, "mxattn_query: %s", ctx->cache_error);
    st = mx_cache_query_json(cache, &f, json);
    if (st == MXATTN_OK) mx_clear_error();
    return st;
}

mxattn_status mxattn_problem_params(const mxattn_problem *p, const char *arch, char **params) {
    if (!p || !params) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_problem_params: NULL argument");
    *params = NULL;
    mx_problem pr;
    mxattn_status st = mx_problem_resolve(p, &pr);
    if (st != MXATTN_OK) return st;
    char shape[1024];
    mx_problem_shape_params(&pr, arch ? arch : "sm_90a", shape, sizeof shape);
    *params = strdup(shape);
    return *params ? MXATTN_OK : mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory");
}

/* The knobs the public options and the tuner's share by name, copied either
 * way: the tuner's defaults out, the caller's values in. */
#define COPY_KNOBS(to, from)                                                      \
    do {                                                                          \
        (to)->reps = (from)->reps;                                                \
        (to)->warmup = (from)->warmup;                                            \
        (to)->settle_ms = (from)->settle_ms;                                      \
        (to)->scores_std = (from)->scores_std;                                    \
        (to)->max_candidates = (from)->max_candidates;                            \
        (to)->compile_threads = (from)->compile_threads;                          \
    } while (0)

mxattn_status mxattn_tune_options_init(mxattn_tune_options *o) {
    if (!o) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_tune_options_init: options is NULL");
    mx_tune_options t;
    mx_tune_options_init(&t);
    memset(o, 0, sizeof *o);
    COPY_KNOBS(o, &t);
    o->resume = 1;
    return MXATTN_OK;
}

/* The caller's callback, behind the tuner's. */
typedef struct { const mxattn_tune_options *opts; } progress_relay;

static void relay_progress(void *user, const mx_tune_progress *p) {
    const progress_relay *r = user;
    mxattn_tune_progress out = {p->done, p->total, p->current, p->current_ms, p->status, p->why, p->best,
                                p->best_ms, p->elapsed_s, p->eta_s};
    r->opts->progress(r->opts->user, &out);
}

static void fill_report(const mx_tune_outcome *o, const mx_tune_key *key, mxattn_tune_report *r) {
    memset(r, 0, sizeof *r);
    snprintf(r->best_config, sizeof r->best_config, "%s", o->best);
    r->best_ms = o->best_ms;
    r->best_tops = o->best_tops;
    snprintf(r->default_config, sizeof r->default_config, "%s", o->default_config);
    r->default_ms = o->default_ms;
    r->candidates = o->candidates;
    r->measured = o->measured;
    r->failed = o->failed;
    r->skipped = o->skipped;
    r->compiled = o->compiled;
    r->cache_hits = o->cache_hits;
    r->compile_failed = o->compile_failed;
    r->pruned = o->pruned;
    r->compile_ms = o->compile_ms;
    r->wall_s = o->wall_s;
    r->kernels_not_stored = o->kernels_not_stored;
    r->rows_not_stored = o->rows_not_stored;
    r->store_status = o->store_status;
    snprintf(r->store_error, sizeof r->store_error, "%s", o->store_error);
    if (key) {
        r->seq_bucket = key->seq_bucket;
        r->q_bucket = key->q_bucket;
    }
}

mxattn_status mxattn_tune_run(mxattn_ctx *ctx, const mxattn_problem *p, const mxattn_tune_options *opts,
                              mxattn_tune_report *report) {
    if (!ctx || !p) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_tune_run: ctx and problem must not be NULL");
    return tune_run("mxattn_tune_run", ctx, p, opts, report);
}

/* Both public tuning calls; `what` names the caller in messages. */
static mxattn_status tune_run(const char *what, mxattn_ctx *ctx, const mxattn_problem *p,
                              const mxattn_tune_options *opts, mxattn_tune_report *report) {
    mxattn_tune_options defaults;
    mxattn_tune_options_init(&defaults);
    if (!opts) opts = &defaults;
    if (report) memset(report, 0, sizeof *report);
    if (opts->reps < 1 || opts->warmup < 0 || opts->settle_ms < 0 || !(opts->scores_std > 0) ||
        opts->max_candidates < 0 || opts->compile_threads < 0)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s: reps >= 1, warmup, settle_ms, max_candidates and "
                       "compile_threads >= 0, scores_std > 0", what);
    /* The tuning key has no v_terms column (like smooth_k, it is an accuracy
     * choice): a two-term run would overwrite the one-term winner, whose
     * tiles two-term plans reuse anyway. */
    if (p->v_terms > 1)
        return mx_fail(MXATTN_ERROR_UNSUPPORTED,
                       "%s: v_terms=%d is not part of the tuning key; tune the problem with v_terms=1, "
                       "whose tuned tile v_terms=2 plans use", what, p->v_terms);
    mx_problem pr;
    mxattn_status st = mx_problem_resolve(p, &pr);
    if (st != MXATTN_OK) return st;
    const mx_device *dev = NULL;
    if (!opts->compile_only) {
        st = mx_ctx_device(ctx, &dev);
        if (st != MXATTN_OK)
            return mx_fail_context(st, "%s needs a GPU%s", what, strcmp(what, "mxattn_tune") ? " (or compile_only)" : "");
    }
    mx_jit_env env;
    mx_ctx_jit_env(ctx, dev, &env);
    if (opts->compile_only) snprintf(env.arch, sizeof env.arch, "%s", opts->arch ? opts->arch : "sm_90a");
    /* Measuring without a database still finds the winner (nothing is
     * stored); compiling only has nowhere else to keep what it makes. */
    if (!env.cache && opts->compile_only)
        return ctx->no_cache ? mx_fail(MXATTN_ERROR_NOT_FOUND, "%s: compile_only needs a database (no_cache)", what)
                             : mx_fail(ctx->cache_status, "%s: %s", what, ctx->cache_error);
    char shape[1024];
    mx_problem_shape_params(&pr, env.arch, shape, sizeof shape);
    mx_tune_key key;
    mx_tune_sizes sizes;
    mx_tune_options t;
    mx_tune_outcome outcome;
    if (dev) mx_ctx_tune_key(ctx, dev, &pr, &key);
    mx_ctx_tune_sizes(&pr, &sizes);
    mx_tune_options_init(&t);
    COPY_KNOBS(&t, opts);
    t.resume = opts->resume != 0;
    t.compile_only = opts->compile_only != 0;
    progress_relay relay = {opts};
    if (opts->progress) {
        t.progress = relay_progress;
        t.user = &relay;
    }
    memset(&outcome, 0, sizeof outcome);
    st = mx_tune_run(&env, shape, &sizes, dev ? &key : NULL, &t, &outcome);
    if (report) fill_report(&outcome, dev ? &key : NULL, report);
    return st;
}
