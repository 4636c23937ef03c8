/* The public tuning calls: mxattn_tune (measure on the GPU, store the winner)
 * and mxattn_query (read the stored winners; no GPU). */
#include "api/context.h"
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mxattn_status mxattn_tune(mxattn_ctx *ctx, const mxattn_problem *p, char *best_config,
                          size_t best_config_len, double *speedup) {
    if (!ctx || !p) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_tune: ctx and problem must not be NULL");
    if (best_config && best_config_len == 0)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "mxattn_tune: best_config_len is 0");
    if (best_config) best_config[0] = 0;
    if (speedup) *speedup = 0;
    /* The tuning key has no v_terms column (like smooth_k, it is an accuracy
     * choice): a two-term run would overwrite the one-term winner, whose
     * tiles two-term plans reuse anyway. */
    if (p->v_terms > 1)
        return mx_fail(MXATTN_ERROR_UNSUPPORTED,
                       "mxattn_tune: v_terms=%d is not part of the tuning key; tune the problem with v_terms=1, "
                       "whose tuned tile v_terms=2 plans use", p->v_terms);
    mx_problem pr;
    mxattn_status st = mx_problem_resolve(p, &pr);
    if (st != MXATTN_OK) return st;
    const mx_device *dev = NULL;
    st = mx_ctx_device(ctx, &dev);
    if (st != MXATTN_OK) return mx_fail_context(st, "mxattn_tune needs a GPU");
    char shape[1024];
    mx_problem_shape_params(&pr, dev->arch, shape, sizeof shape);
    mx_jit_env env;
    mx_tune_key key;
    mx_tune_sizes sizes;
    mx_tune_options opt;
    mx_tune_outcome outcome;
    mx_ctx_jit_env(ctx, dev, &env);
    mx_ctx_tune_key(ctx, dev, &pr, &key);
    mx_ctx_tune_sizes(&pr, &sizes);
    mx_tune_options_init(&opt);
    opt.resume = 1;   /* an interrupted call picks up where it stopped */
    st = mx_tune_run(&env, shape, &sizes, &key, &opt, &outcome);
    /* A run whose winner the cache did not take still has a winner: it is
     * returned with the status and message of the lost writes. */
    if (st != MXATTN_OK && !outcome.best[0]) return st;
    if (best_config) snprintf(best_config, best_config_len, "%s", outcome.best);
    if (speedup && outcome.best_ms > 0 && outcome.default_ms > 0) *speedup = outcome.default_ms / outcome.best_ms;
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
