#include "api/context.h"
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mxattn_status mxattn_options_init(mxattn_options *o) {
    if (!o) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_options_init: options is NULL");
    memset(o, 0, sizeof *o);
    return MXATTN_OK;
}

static mxattn_status parse_policy(const char *text, mx_tune_policy *out) {
    if (!text || !*text || !strcmp(text, "off")) { *out = MX_TUNE_OFF; return MXATTN_OK; }
    if (!strcmp(text, "first-use")) { *out = MX_TUNE_FIRST_USE; return MXATTN_OK; }
    if (!strcmp(text, "background")) { *out = MX_TUNE_BACKGROUND; return MXATTN_OK; }
    return mx_fail(MXATTN_ERROR_INVALID_VALUE, "tune policy '%.40s': use off, first-use or background", text);
}

mxattn_status mxattn_create(mxattn_ctx **out, const mxattn_options *opts) {
    if (!out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_create: out is NULL");
    *out = NULL;
    mxattn_options defaults;
    mxattn_options_init(&defaults);
    if (!opts) opts = &defaults;
    if (opts->device < 0) return mx_fail(MXATTN_ERROR_INVALID_VALUE, "device ordinal %d is negative", opts->device);
    mxattn_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory");
    const char *policy = opts->tune_policy ? opts->tune_policy : getenv("MXATTN_TUNE");
    mxattn_status st = parse_policy(policy, &ctx->tune_policy);
    if (st != MXATTN_OK) { free(ctx); return st; }
    ctx->device_ordinal = opts->device;
    ctx->no_cache = opts->no_cache;
    if (opts->db_path) snprintf(ctx->db_path, sizeof ctx->db_path, "%s", opts->db_path);
    st = mx_gen_open(&ctx->gen);
    if (st != MXATTN_OK) { free(ctx); return st; }
    pthread_mutex_init(&ctx->gen_lock, NULL);
    pthread_mutex_init(&ctx->lock, NULL);
    *out = ctx;
    return MXATTN_OK;
}

void mxattn_destroy(mxattn_ctx *ctx) {
    if (!ctx) return;
    if (ctx->tuner_started) pthread_join(ctx->tuner_thread, NULL);
    mx_cache_close(ctx->cache);
    if (ctx->dev_open) mx_device_close(&ctx->dev);
    mx_gen_close(ctx->gen);
    pthread_mutex_destroy(&ctx->gen_lock);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

mxattn_status mx_ctx_device(mxattn_ctx *ctx, const mx_device **out) {
    mxattn_status st = MXATTN_OK;
    pthread_mutex_lock(&ctx->lock);
    if (!ctx->dev_open) {
        st = mx_device_open(&ctx->dev, ctx->device_ordinal);
        ctx->dev_open = st == MXATTN_OK;
    }
    pthread_mutex_unlock(&ctx->lock);
    *out = st == MXATTN_OK ? &ctx->dev : NULL;
    return st;
}

mx_cache *mx_ctx_cache(mxattn_ctx *ctx) {
    pthread_mutex_lock(&ctx->lock);
    if (!ctx->cache_tried && !ctx->no_cache) {
        ctx->cache_tried = 1;
        mxattn_status st = mx_cache_open(ctx->db_path[0] ? ctx->db_path : NULL, &ctx->cache);
        /* The plan goes on without a database; the reason is kept for
         * mxattn_cache_get_info and mxattn_query, which report it. */
        if (st != MXATTN_OK) {
            ctx->cache = NULL;
            ctx->cache_status = st;
            snprintf(ctx->cache_error, sizeof ctx->cache_error, "%s", mx_error_message());
        }
        mx_clear_error();
    }
    pthread_mutex_unlock(&ctx->lock);
    return ctx->cache;
}

void mx_ctx_gen_env(mxattn_ctx *ctx, const mx_device *dev, mx_jit_env *env) {
    memset(env, 0, sizeof *env);
    env->gen = ctx->gen;
    env->gen_lock = &ctx->gen_lock;
    env->dev = dev;
    snprintf(env->arch, sizeof env->arch, "%s", dev ? dev->arch : "sm_90a");
}

void mx_ctx_jit_env(mxattn_ctx *ctx, const mx_device *dev, mx_jit_env *env) {
    mx_ctx_gen_env(ctx, dev, env);
    env->cache = mx_ctx_cache(ctx);
}

void mx_ctx_tune_key(mxattn_ctx *ctx, const mx_device *dev, const mx_problem *pr, mx_tune_key *key) {
    const mxattn_problem *p = &pr->p;
    memset(key, 0, sizeof *key);
    snprintf(key->gpu_name, sizeof key->gpu_name, "%.127s", dev->name);
    key->sm_count = dev->sm_count;
    key->compute_capability = dev->cc_major * 10 + dev->cc_minor;
    key->driver_version = dev->driver_version;
    key->nvrtc_version = mx_jit_nvrtc_version();
    snprintf(key->mxattn_version, sizeof key->mxattn_version, "%s", MXATTN_VERSION);
    snprintf(key->template_hash, sizeof key->template_hash, "%s", mx_gen_template_hash(ctx->gen));
    snprintf(key->family, sizeof key->family, "%s", pr->family);
    key->head_dim = p->head_dim;
    snprintf(key->dtype, sizeof key->dtype, "%s", mx_dtype_name(p->dtype));
    snprintf(key->out_dtype, sizeof key->out_dtype, "%s", mx_dtype_name(p->out_dtype));
    key->causal = (int)p->causal;
    key->gqa = p->heads_q / p->heads_kv;
    snprintf(key->layout, sizeof key->layout, "%s", p->layout == MXATTN_LAYOUT_BHND ? "bhnd" : "bnhd");
    key->seq_bucket = mx_seq_bucket(p->seq_k);
    key->q_bucket = mx_q_bucket(p->seq_q);
}

void mx_ctx_tune_sizes(const mx_problem *pr, mx_tune_sizes *s) {
    const mxattn_problem *p = &pr->p;
    memset(s, 0, sizeof *s);
    s->batch = p->batch; s->heads_q = p->heads_q; s->heads_kv = p->heads_kv;
    s->seq_q = p->seq_q; s->seq_k = p->seq_k; s->head_dim = p->head_dim;
    s->causal = (int)p->causal; s->dtype_bytes = 2; s->sm_scale = p->sm_scale;
}

typedef struct {
    mxattn_ctx *ctx;
    const mx_device *dev;
    char shape[1024];
    mx_tune_sizes sizes;
    mx_tune_key key;
} background_job;

static void *background_tune(void *arg) {
    background_job *job = arg;
    mx_jit_env env;
    mx_tune_options opt;
    mx_tune_outcome outcome;
    mx_ctx_jit_env(job->ctx, job->dev, &env);
    mx_tune_options_init(&opt);
    opt.resume = 1;
    opt.max_candidates = MX_JIT_TUNE_CANDIDATES;
    opt.settle_ms = MX_JIT_TUNE_SETTLE_MS;
    /* Failures only mean the default stays in use; nobody is waiting to hear. */
    (void)mx_tune_run(&env, job->shape, &job->sizes, &job->key, &opt, &outcome);
    pthread_mutex_lock(&job->ctx->lock);
    job->ctx->tuner_busy = 0;
    pthread_mutex_unlock(&job->ctx->lock);
    free(job);
    return NULL;
}

void mx_ctx_tune_in_background(mxattn_ctx *ctx, const mx_device *dev, const char *shape,
                               const mx_tune_sizes *sizes, const mx_tune_key *key) {
    background_job *job = calloc(1, sizeof *job);
    if (!job) return;
    job->ctx = ctx;
    job->dev = dev;
    snprintf(job->shape, sizeof job->shape, "%s", shape);
    job->sizes = *sizes;
    job->key = *key;
    pthread_mutex_lock(&ctx->lock);
    if (ctx->tuner_busy) {
        pthread_mutex_unlock(&ctx->lock);
        free(job);
        return;
    }
    if (ctx->tuner_started) pthread_join(ctx->tuner_thread, NULL);  /* finished: reap it */
    /* Decided under the lock: once it is dropped another plan may reap this
     * thread (which frees the job) and reset tuner_started. */
    int started = pthread_create(&ctx->tuner_thread, NULL, background_tune, job) == 0;
    ctx->tuner_started = ctx->tuner_busy = started;
    pthread_mutex_unlock(&ctx->lock);
    if (!started) free(job);
}

mxattn_status mxattn_cache_get_info(mxattn_ctx *ctx, mxattn_cache_info *info) {
    if (!ctx || !info) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_cache_get_info: NULL argument");
    memset(info, 0, sizeof *info);
    if (ctx->no_cache) {
        snprintf(info->note, sizeof info->note, "the context was created with no_cache");
        return mx_fail(MXATTN_ERROR_NOT_FOUND, "no database: the context was created with no_cache");
    }
    mx_cache *cache = mx_ctx_cache(ctx);
    if (!cache) {
        char path[1024] = "";
        if (ctx->db_path[0]) snprintf(path, sizeof path, "%.1000s", ctx->db_path);
        else if (mx_cache_default_path(path, sizeof path) != MXATTN_OK) path[0] = 0;
        snprintf(info->path, sizeof info->path, "%s", path);
        snprintf(info->note, sizeof info->note, "%s", ctx->cache_error);
        return mx_fail(ctx->cache_status, "%s", ctx->cache_error);
    }
    snprintf(info->path, sizeof info->path, "%s", mx_cache_path(cache));
    info->open = 1;
    info->read_only = mx_cache_read_only(cache);
    mx_cache_counts counts;
    if (mx_cache_count(cache, &counts) == MXATTN_OK) {
        info->kernels = counts.kernels;
        info->tunings = counts.tune_results;
        info->measurements = counts.measurements;
    }
    const char *note = mx_cache_recovered(cache);
    if (note) {
        /* The database is in use (OK), but what happened to the old file
         * must not be invisible: it is the note and the last error. */
        snprintf(info->note, sizeof info->note, "%s", note);
        mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "%s", note);
    } else if (info->read_only) {
        snprintf(info->note, sizeof info->note, "opened read-only: reads are served, writes are refused");
        mx_clear_error();
    } else {
        mx_clear_error();
    }
    return MXATTN_OK;
}
