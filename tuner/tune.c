/* The autotuner's run: candidates -> compile ahead on CPU threads -> prune ->
 * check -> time -> store.  The decisions are in tune_logic.c, the GPU work in
 * bench.c; this file strings them together.  See tune.h for the method. */
#include "tuner/tune.h"
#include "tuner/bench.h"
#include "tuner/tune_logic.h"
#include "util/clock.h"
#include "util/err.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CANDIDATES 4096
#define MAX_COMPILE_THREADS 64
#define SLOW_FACTOR 5.0      /* a check run this much slower than the best gets few reps */
#define SLOW_REPS 5

void mx_tune_options_init(mx_tune_options *o) {
    memset(o, 0, sizeof *o);
    o->warmup = 3;
    o->settle_ms = MX_TUNE_SETTLE_MS;
    o->scores_std = MX_TUNE_SCORES_STD;
    o->reps = 20;
    o->compile_threads = 2;
}

/* ---- compiling ahead ------------------------------------------------------ */

/* One candidate's compile, done by a pool thread or by the measuring thread. */
typedef struct {
    const char *config;
    int skip;                   /* resumed: measured before */
    int claimed, done;
    mxattn_status st;
    char error[512];
    mx_kernel_resources res;
    int from_cache;
    double compile_ms;
    int stored;                 /* mx_jit_kernel's */
    mxattn_status store_status;
    char store_error[256];
} slot;

typedef struct {
    mx_jit_env env;             /* the caller's, without the device: compile only */
    const char *shape, *sizes;
    slot *slots;
    int n, next, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t threads[MAX_COMPILE_THREADS];
    int n_threads;
} compile_pool;

static void resources_of(const mx_jit_kernel *k, mx_kernel_resources *r) {
    const mx_launch_step *attn = &k->launch.steps[k->launch.main_step];
    r->registers = k->registers;
    r->spill_bytes = k->spill_bytes;
    r->threads = (int)attn->threads;
    r->smem_bytes = attn->smem_bytes + k->shared_bytes;
}

static void compose_params(const char *shape, const char *config, char *out, size_t cap) {
    snprintf(out, cap, "%s %s", shape, config);
}

static void compile_slot(compile_pool *p, slot *s) {
    char params[1600];
    mx_jit_kernel k;
    compose_params(p->shape, s->config, params, sizeof params);
    s->st = mx_jit_build(&p->env, params, p->sizes, &k);
    if (s->st == MXATTN_OK) {
        resources_of(&k, &s->res);
        s->from_cache = k.from_cache;
        s->compile_ms = k.compile_ms;
        s->stored = k.stored;
        s->store_status = k.store_status;
        snprintf(s->store_error, sizeof s->store_error, "%s", k.store_error);
        mx_jit_release(&p->env, &k);
    } else {
        snprintf(s->error, sizeof s->error, "%s", mx_error_message());
    }
    mx_clear_error();
}

/* Takes the next unclaimed slot, or -1 when none is left (or the run stopped). */
static int claim_next(compile_pool *p) {
    int i = -1;
    pthread_mutex_lock(&p->mu);
    while (p->next < p->n && p->slots[p->next].skip) p->next++;
    if (!p->stop && p->next < p->n) {
        i = p->next++;
        p->slots[i].claimed = 1;
    }
    pthread_mutex_unlock(&p->mu);
    return i;
}

static void finish_slot(compile_pool *p, int i) {
    pthread_mutex_lock(&p->mu);
    p->slots[i].done = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void *compile_worker(void *arg) {
    compile_pool *p = arg;
    for (int i; (i = claim_next(p)) >= 0;) {
        compile_slot(p, &p->slots[i]);
        finish_slot(p, i);
    }
    return NULL;
}

/* Slot i compiled.  While it is not, the calling thread compiles whatever is
 * still unclaimed (slot i itself when no pool thread has taken it) rather
 * than idle: with N pool threads, N + 1 compile at once. */
static slot *obtain_slot(compile_pool *p, int i) {
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int done = p->slots[i].done;
        pthread_mutex_unlock(&p->mu);
        if (done) return &p->slots[i];
        int j = claim_next(p);
        if (j >= 0) {
            compile_slot(p, &p->slots[j]);
            finish_slot(p, j);
            continue;
        }
        /* Nothing left to claim, so slot i is being compiled by a pool thread. */
        pthread_mutex_lock(&p->mu);
        while (!p->slots[i].done) pthread_cond_wait(&p->cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
        return &p->slots[i];
    }
}

static void pool_start(compile_pool *p, int threads) {
    if (threads > MAX_COMPILE_THREADS) threads = MAX_COMPILE_THREADS;
    for (p->n_threads = 0; p->n_threads < threads; p->n_threads++)
        if (pthread_create(&p->threads[p->n_threads], NULL, compile_worker, p) != 0) break;
    /* Threads that could not start are no loss: obtain_slot compiles inline. */
}

static void pool_stop(compile_pool *p) {
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    p->n_threads = 0;
}

/* ---- one run ---------------------------------------------------------------- */

typedef struct {
    const mx_jit_env *env;
    const char *shape;
    char sizes_text[256];
    const mx_tune_sizes *sizes;
    const mx_tune_key *key;
    mx_tune_options opt;
    mx_tune_outcome *out;
    compile_pool pool;
    int prebuild;               /* compile ahead through the cache */
    mx_resource_limits limits;
    mx_bench *bench;
    float *ref;                 /* the default's output */
    float *times;
    mx_tune_tolerance tolerance; /* a candidate's output against the default's (tune_logic.h) */
    int gpu_warm;
    mx_measurement *fresh;      /* this run's measurements, for a run without a cache */
    int n_fresh;
    char best[256];
    double best_ms;
    int done, to_do;
    double t0;
} run;

static int storing(const run *r) { return r->env->cache && r->key; }

/* The first failed write's status and message are the run's to report. */
static void note_store_failure(mx_tune_outcome *o, mxattn_status st, const char *why) {
    if (o->store_status != MXATTN_OK) return;
    o->store_status = st;
    snprintf(o->store_error, sizeof o->store_error, "%s", why && *why ? why : mxattn_status_string(st));
}

/* Into the database; a cache that cannot be written loses resumability, not
 * this result, so the run goes on and reports the loss at its end. */
static void store_measurement(run *r, const mx_measurement *m) {
    if (!storing(r)) return;
    mxattn_status st = mx_cache_add_measurement(r->env->cache, r->key, m);
    if (st != MXATTN_OK) {
        r->out->rows_not_stored++;
        note_store_failure(r->out, st, mx_error_message());
    }
    mx_clear_error();
}

static void record(run *r, const mx_measurement *m) {
    r->fresh[r->n_fresh++] = *m;
    if (!strcmp(m->status, MX_MEASURE_OK)) {
        r->out->measured++;
        if (!r->best[0] || m->median_ms < r->best_ms) {
            snprintf(r->best, sizeof r->best, "%s", m->config);
            r->best_ms = m->median_ms;
        }
    } else {
        r->out->failed++;
    }
    store_measurement(r, m);
}

static void report(run *r, const char *config, double ms, const char *status, const char *why) {
    if (!r->opt.progress) return;
    mx_tune_progress p;
    memset(&p, 0, sizeof p);
    p.done = r->out->skipped + r->done;
    p.total = r->out->candidates;
    p.current = config;
    p.current_ms = ms;
    p.status = status;
    p.why = strcmp(status, MX_MEASURE_OK) && why && why[0] ? why : NULL;
    p.best = r->best[0] ? r->best : NULL;
    p.best_ms = r->best_ms;
    p.elapsed_s = (mx_now_ms() - r->t0) / 1e3;
    p.eta_s = mx_tune_eta(p.elapsed_s, r->done, r->to_do);
    r->opt.progress(r->opt.user, &p);
}

static void fail_measurement(mx_measurement *m, const char *status, const mx_kernel_resources *res) {
    snprintf(m->status, sizeof m->status, "%s", status);
    m->median_ms = 0;
    m->spread = 0;
    if (res) m->registers = res->registers;
}

/* Checks the output of a candidate that ran; the default's becomes the reference. */
static mxattn_status check_output(run *r, int is_default, const float *got, int *ok, char *why, size_t why_len) {
    size_t n = mx_bench_output_elems(r->bench);
    if (is_default) {
        for (size_t i = 0; i < n; i++)
            if (!isfinite(got[i])) {
                *ok = 0;
                snprintf(why, why_len, "output element %zu is %g (not written, or overflowed)", i, got[i]);
                return MXATTN_OK;
            }
        memcpy(r->ref, got, n * sizeof *got);
        *ok = 1;
        return MXATTN_OK;
    }
    mx_output_diff d;
    mx_tune_compare(r->ref, got, n, &r->tolerance, &d);
    *ok = d.ok;
    if (!d.ok)
        snprintf(why, why_len, "differs from the default: max |diff| %.3g, rel-L1 %.3g, %zu non-finite, first at %zu",
                 d.max_abs, d.rel_l1, d.nonfinite, d.first_bad);
    return MXATTN_OK;
}

/* A launch failed: is the context still good for the next candidate? */
static mxattn_status after_launch_failure(run *r, const char *config, const char *what) {
    char first[512];
    snprintf(first, sizeof first, "%s", what);
    mxattn_status st = mx_bench_context_usable(r->bench);
    if (st == MXATTN_OK) return MXATTN_OK;
    return mx_fail(MXATTN_ERROR_CUDA,
                   "candidate '%s' failed (%s) and left the GPU context unusable; stopping. "
                   "The measurements so far are saved: run again in a new process to resume",
                   config, first);
}

/* The GPU under this kernel's own sustained load for settle_ms (tune.h says
 * why), or, with settle_ms 0, only out of idle once: clocks ramp up within
 * ~100 ms of steady load. */
#define WARM_GPU_MS 150.0
static mxattn_status settle(run *r, const mx_launch_plan *lp) {
    if (r->opt.settle_ms > 0) return mx_bench_warm_gpu(r->bench, lp, r->opt.settle_ms);
    if (r->gpu_warm) return MXATTN_OK;
    r->gpu_warm = 1;
    return mx_bench_warm_gpu(r->bench, lp, WARM_GPU_MS);
}

/* Times a kernel that passed its check. */
static mxattn_status time_kernel(run *r, const mx_jit_kernel *k, float check_ms, mx_measurement *m) {
    int warmup = r->opt.warmup, reps = r->opt.reps;
    if (r->best[0] && check_ms > SLOW_FACTOR * r->best_ms) {
        warmup = warmup < 1 ? warmup : 1;
        reps = reps < SLOW_REPS ? reps : SLOW_REPS;
    }
    mxattn_status st = settle(r, &k->launch);
    if (st == MXATTN_OK) st = mx_bench_time(r->bench, &k->launch, warmup, reps, r->times);
    if (st != MXATTN_OK) return st;
    mx_timing_stats stats;
    mx_tune_stats(r->times, reps, &stats);
    snprintf(m->status, sizeof m->status, "%s", MX_MEASURE_OK);
    m->median_ms = stats.median;
    m->spread = stats.spread;
    return MXATTN_OK;
}

/* Runs the loaded kernel: check, then time.  Returns a fatal status only when
 * the context is gone; a candidate's own failure goes into *m. */
static mxattn_status run_kernel(run *r, const mx_jit_kernel *k, int is_default, mx_measurement *m,
                                char *why, size_t why_len) {
    const float *got = NULL;
    float check_ms = 0;
    mxattn_status st = mx_bench_check_run(r->bench, &k->launch, &got, &check_ms);
    if (st == MXATTN_OK) {
        int ok = 0;
        check_output(r, is_default, got, &ok, why, why_len);
        if (!ok) { fail_measurement(m, MX_MEASURE_WRONG_RESULT, NULL); return MXATTN_OK; }
        st = time_kernel(r, k, check_ms, m);
    }
    if (st == MXATTN_OK) return MXATTN_OK;
    snprintf(why, why_len, "%s", mx_error_message());
    fail_measurement(m, st == MXATTN_ERROR_OUT_OF_RESOURCES ? MX_MEASURE_OUT_OF_RESOURCES
                                                            : MX_MEASURE_LAUNCH_FAILED, NULL);
    if (st == MXATTN_ERROR_OUT_OF_MEMORY) return st;   /* the next one would fail too */
    return after_launch_failure(r, m->config, why);
}

static void count_compile(mx_tune_outcome *o, const slot *s) {
    if (s->st != MXATTN_OK) o->compile_failed++;
    else if (s->from_cache) o->cache_hits++;
    else {
        o->compiled++;
        o->compile_ms += s->compile_ms;
        if (!s->stored && s->store_status != MXATTN_OK) {
            o->kernels_not_stored++;
            note_store_failure(o, s->store_status, s->store_error);
        }
    }
}

/* Builds (from the cache, when compiled ahead), prunes and runs candidate i. */
static mxattn_status measure_candidate(run *r, int i, mx_measurement *m, char *why, size_t why_len) {
    slot *s = &r->pool.slots[i];
    memset(m, 0, sizeof *m);
    snprintf(m->config, sizeof m->config, "%s", s->config);
    why[0] = 0;
    if (r->prebuild) {
        obtain_slot(&r->pool, i);
        count_compile(r->out, s);
        if (s->st != MXATTN_OK) {
            snprintf(why, why_len, "%s", s->error);
            fail_measurement(m, MX_MEASURE_COMPILE_FAILED, NULL);
            return MXATTN_OK;
        }
        const char *pruned = mx_tune_prune(&s->res, &r->limits, why, why_len);
        if (pruned) { fail_measurement(m, pruned, &s->res); r->out->pruned++; return MXATTN_OK; }
    }
    char params[1600];
    mx_jit_kernel k;
    compose_params(r->shape, s->config, params, sizeof params);
    mxattn_status st = mx_jit_build(r->env, params, r->sizes_text, &k);
    if (st != MXATTN_OK) {
        snprintf(why, why_len, "%s", mx_error_message());
        mx_clear_error();
        if (!r->prebuild) r->out->compile_failed += st == MXATTN_ERROR_COMPILE;
        fail_measurement(m, st == MXATTN_ERROR_OUT_OF_RESOURCES ? MX_MEASURE_OUT_OF_RESOURCES
                                                                : MX_MEASURE_COMPILE_FAILED, NULL);
        return MXATTN_OK;
    }
    if (!r->prebuild) {
        slot counted = {.st = MXATTN_OK, .from_cache = k.from_cache, .compile_ms = k.compile_ms,
                        .stored = k.stored, .store_status = k.store_status};
        snprintf(counted.store_error, sizeof counted.store_error, "%s", k.store_error);
        count_compile(r->out, &counted);
    }
    mx_kernel_resources res;
    resources_of(&k, &res);
    m->registers = res.registers;
    const char *pruned = mx_tune_prune(&res, &r->limits, why, why_len);
    if (pruned) {
        fail_measurement(m, pruned, &res);
        r->out->pruned++;
    } else {
        st = run_kernel(r, &k, i == 0, m, why, why_len);
    }
    mx_jit_release(r->env, &k);
    return st;
}

/* The default failed, so no candidate can be checked: the run's error. */
static mxattn_status default_failed(const mx_measurement *m, const char *why) {
    mxattn_status st = !strcmp(m->status, MX_MEASURE_COMPILE_FAILED)    ? MXATTN_ERROR_COMPILE
                       : !strcmp(m->status, MX_MEASURE_OUT_OF_RESOURCES) ? MXATTN_ERROR_OUT_OF_RESOURCES
                       : !strcmp(m->status, MX_MEASURE_WRONG_RESULT)     ? MXATTN_ERROR_WRONG_RESULT
                                                                          : MXATTN_ERROR_CUDA;
    return mx_fail(st, "the heuristic default '%s' failed (%s: %s), so no candidate can be checked against it",
                   m->config, m->status, why);
}

static mxattn_status measure_all(run *r) {
    mxattn_status st = MXATTN_OK;
    char why[1024];
    for (int i = 0; i < r->pool.n; i++) {
        slot *s = &r->pool.slots[i];
        if (s->skip) continue;
        mx_measurement m;
        st = measure_candidate(r, i, &m, why, sizeof why);
        if (st != MXATTN_OK) {
            if (m.status[0]) record(r, &m);
            return st;
        }
        record(r, &m);
        r->done++;
        report(r, m.config, m.median_ms, m.status, why);
        if (i == 0 && strcmp(m.status, MX_MEASURE_OK) != 0) return default_failed(&m, why);
    }
    return MXATTN_OK;
}

/* This run's measurement of `config` that timed OK, or NULL. */
static mx_measurement *fresh_ok(run *r, const char *config) {
    for (int j = 0; j < r->n_fresh; j++)
        if (!strcmp(r->fresh[j].config, config) && !strcmp(r->fresh[j].status, MX_MEASURE_OK)) return &r->fresh[j];
    return NULL;
}

/* Replaces a measurement with these timings, here and in the database. */
static void remeasured(run *r, mx_measurement *m, float *ms, int n) {
    mx_timing_stats stats;
    mx_tune_stats(ms, n, &stats);
    m->median_ms = stats.median;
    m->spread = stats.spread;
    store_measurement(r, m);
}

/* The default and the fastest other candidate, timed again in alternating
 * rounds (A B A B ...) once every candidate has run, and the winner decided
 * on those timings.  The default is always timed first, on a GPU that has
 * only just been warmed, and on the H200 that first timing read up to 10%
 * slower than the same kernel timed later (1.94-1.96 ms in the tuner vs
 * 1.74-1.85 ms by `mxattn run`; H200, 2026-11-29; bench/NOTES.md),
 * which crowned a winner the benchmark did not see; timings taken one after
 * the other also drift by a few percent (the same day).  Interleaved rounds give
 * both kernels the same conditions. */
#define CONFIRM_ROUNDS 4
static mxattn_status confirm_finalists(run *r) {
    mx_measurement *dflt = fresh_ok(r, r->pool.slots[0].config), *best = NULL;
    for (int i = 1; i < r->pool.n; i++) {
        mx_measurement *m = fresh_ok(r, r->pool.slots[i].config);
        if (m && (!best || m->median_ms < best->median_ms)) best = m;
    }
    if (!best || !dflt) return MXATTN_OK;
    mx_measurement *pair[2] = {best, dflt}, *failed = NULL;   /* failed: the finalist whose timing failed */
    mx_jit_kernel k[2];
    int built = 0;
    for (; built < 2; built++) {
        char params[1600];
        compose_params(r->shape, pair[built]->config, params, sizeof params);
        if (mx_jit_build(r->env, params, r->sizes_text, &k[built]) != MXATTN_OK) break;
    }
    const int per = r->opt.reps / CONFIRM_ROUNDS > 2 ? r->opt.reps / CONFIRM_ROUNDS : 3;
    float *ms = built == 2 ? malloc(2 * (size_t)per * CONFIRM_ROUNDS * sizeof *ms) : NULL;
    if (ms) {
        for (int round = 0; round < CONFIRM_ROUNDS && !failed; round++)
            for (int j = 0; j < 2 && !failed; j++)
                if (settle(r, &k[j].launch) != MXATTN_OK ||
                    mx_bench_time(r->bench, &k[j].launch, 1, per, ms + ((size_t)j * CONFIRM_ROUNDS + round) * per) !=
                        MXATTN_OK)
                    failed = pair[j];
        if (!failed)
            for (int j = 0; j < 2; j++) remeasured(r, pair[j], ms + (size_t)j * CONFIRM_ROUNDS * per, per * CONFIRM_ROUNDS);
    }
    char why[512] = "";
    if (failed) snprintf(why, sizeof why, "%s", mx_error_message());
    free(ms);
    for (int j = 0; j < built; j++) mx_jit_release(r->env, &k[j]);
    /* A kernel that cannot be built or timed again keeps its first timings. */
    mx_clear_error();
    if (failed) return after_launch_failure(r, failed->config, why);
    return MXATTN_OK;   /* conclude() picks the winner from the measurements as they now stand */
}

/* Compile-only: every candidate through the pool into the kernel cache. */
static mxattn_status compile_all(run *r) {
    for (int i = 0; i < r->pool.n; i++) {
        slot *s = obtain_slot(&r->pool, i);
        count_compile(r->out, s);
        if (s->st == MXATTN_OK && s->res.spill_bytes > 0) r->out->pruned++;
        r->done++;
        report(r, s->config, 0, s->st == MXATTN_OK ? MX_MEASURE_OK : MX_MEASURE_COMPILE_FAILED, s->error);
    }
    return MXATTN_OK;
}

/* Marks what resume may skip.  The default is re-run whenever anything else is
 * left, because its output is the reference for the others. */
static mxattn_status mark_resumed(run *r) {
    int left = 0;
    for (int i = 0; i < r->pool.n; i++) {
        int measured = 0;
        mxattn_status st = mx_cache_has_measurement(r->env->cache, r->key, r->pool.slots[i].config, &measured);
        if (st != MXATTN_OK) return st;
        r->pool.slots[i].skip = measured;
        left += !measured && i > 0;
    }
    if (left) r->pool.slots[0].skip = 0;
    for (int i = 0; i < r->pool.n; i++) r->out->skipped += r->pool.slots[i].skip;
    /* Seed "best so far" from what is stored, for the progress line and the slow cut. */
    mx_measurement *stored = NULL;
    int n = 0;
    if (mx_cache_list_measurements(r->env->cache, r->key, &stored, &n) == MXATTN_OK && n > 0 &&
        !strcmp(stored[0].status, MX_MEASURE_OK)) {
        snprintf(r->best, sizeof r->best, "%s", stored[0].config);
        r->best_ms = stored[0].median_ms;
    }
    free(stored);
    mx_clear_error();
    return MXATTN_OK;
}

/* The winner, from every measurement of the key (stored ones included), and
 * into the cache. */
static mxattn_status conclude(run *r) {
    mx_measurement *all = r->fresh;
    int n = r->n_fresh;
    mx_measurement *stored = NULL;
    if (storing(r)) {
        mxattn_status st = mx_cache_list_measurements(r->env->cache, r->key, &stored, &n);
        if (st != MXATTN_OK) return st;
        all = stored;
    }
    mx_tune_outcome *o = r->out;
    int w = mx_tune_choose_winner(all, n, o->default_config);
    if (w < 0 && all != r->fresh) {
        /* The cache took none of this run's rows (a write failed): use ours. */
        all = r->fresh;
        n = r->n_fresh;
        w = mx_tune_choose_winner(all, n, o->default_config);
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(all[i].config, o->default_config) && !strcmp(all[i].status, MX_MEASURE_OK))
            o->default_ms = all[i].median_ms;
    mxattn_status st = MXATTN_OK;
    if (w < 0) {
        st = mx_fail(MXATTN_ERROR_NOT_FOUND, "no candidate of %d produced a correct, timed result", o->candidates);
    } else {
        snprintf(o->best, sizeof o->best, "%s", all[w].config);
        o->best_ms = all[w].median_ms;
        o->best_tops = mx_tune_tops(r->sizes, o->best_ms);
        if (storing(r)) {
            mx_tune_result res;
            memset(&res, 0, sizeof res);
            snprintf(res.config, sizeof res.config, "%s", o->best);
            res.median_ms = o->best_ms;
            res.tops = o->best_tops;
            res.default_ms = o->default_ms;
            /* The winner is in *out either way; a lost row is reported with
             * the other lost writes at the end of the run. */
            mxattn_status put = mx_cache_put_tune(r->env->cache, r->key, &res);
            if (put != MXATTN_OK) {
                o->rows_not_stored++;
                note_store_failure(o, put, mx_error_message());
                mx_clear_error();
            }
        }
    }
    free(stored);
    return st;
}

static mxattn_status check_arguments(const mx_jit_env *env, const char *shape, const mx_tune_sizes *s,
                                     const mx_tune_options *opt, mx_tune_outcome *out) {
    if (!env || !env->gen || !env->gen_lock || !shape || !s || !out)
        return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_tune_run: NULL argument");
    if (s->batch < 1 || s->heads_q < 1 || s->heads_kv < 1 || s->heads_q % s->heads_kv || s->seq_q < 1 ||
        s->seq_k < 1 || s->head_dim < 1)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "mx_tune_run: bad sizes (batch %d, heads %d/%d, seq %d/%d, d %d)",
                       s->batch, s->heads_q, s->heads_kv, s->seq_q, s->seq_k, s->head_dim);
    if (opt->reps < 1 || opt->reps > 100000 || opt->warmup < 0 || opt->max_candidates < 0)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "mx_tune_run: reps must be >= 1, warmup and max_candidates >= 0");
    if (!(opt->settle_ms >= 0 && opt->settle_ms <= 60000))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "mx_tune_run: settle_ms must be 0 to 60000, not %g", opt->settle_ms);
    if (!(opt->scores_std > 0 && opt->scores_std <= 100))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "mx_tune_run: scores_std must be in (0, 100], not %g", opt->scores_std);
    return MXATTN_OK;
}

static mxattn_status list_candidates(run *r, char **text, const char **configs) {
    /* With the GPU's SM count where one is open, as a plan asks for its
     * default (api/plan.c): the list then starts with what the plan runs. */
    char problem[320];
    mx_jit_problem_text(r->env, r->sizes_text, problem, sizeof problem);
    mxattn_status st = mx_jit_gen_call(r->env, "candidates", r->shape, problem, text);
    if (st != MXATTN_OK) return st;
    int n = mx_tune_split_candidates(*text, configs, MAX_CANDIDATES, r->opt.max_candidates);
    if (n == 0) return mx_fail(MXATTN_ERROR_TEMPLATE, "the templates listed no candidate for '%s'", r->shape);
    r->pool.n = n;
    r->out->candidates = n;
    snprintf(r->out->default_config, sizeof r->out->default_config, "%s", configs[0]);
    return MXATTN_OK;
}

static mxattn_status start_measuring(run *r) {
    if (!r->env->dev)
        return mx_fail(MXATTN_ERROR_NO_DEVICE,
                       "tuning measures on a GPU and none is open; compile-only fills the kernel cache without one");
    mx_resource_limits_of(r->env->dev, &r->limits);
    mxattn_status st = mx_bench_open(r->env->dev, r->shape, r->sizes, r->opt.scores_std, &r->bench);
    if (st != MXATTN_OK) return mx_fail_context(st, "tuner: preparing inputs");
    r->out->input_sets = mx_bench_sets(r->bench);
    r->ref = malloc(mx_bench_output_elems(r->bench) * sizeof *r->ref);
    r->times = malloc((size_t)r->opt.reps * sizeof *r->times);
    if (!r->ref || !r->times) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "tuner: out of host memory");
    return MXATTN_OK;
}

static mxattn_status execute(run *r, const char **configs) {
    mxattn_status st = MXATTN_OK;
    r->pool.slots = calloc((size_t)r->pool.n, sizeof *r->pool.slots);
    r->fresh = calloc((size_t)r->pool.n, sizeof *r->fresh);
    if (!r->pool.slots || !r->fresh) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "tuner: out of memory");
    for (int i = 0; i < r->pool.n; i++) r->pool.slots[i].config = configs[i];
    if (!r->opt.compile_only && storing(r) && r->opt.resume) MX_TRY(mark_resumed(r));
    r->to_do = r->pool.n - r->out->skipped;
    /* Compiling ahead only helps when the measuring thread can pick the binary
     * up from the cache; without one it would compile everything twice. */
    r->prebuild = r->opt.compile_only || (r->env->cache && r->opt.compile_threads > 0);
    if (r->to_do == 0) return conclude(r);   /* resumed a finished run: no GPU needed */
    if (!r->opt.compile_only) MX_TRY(start_measuring(r));
    if (r->prebuild) pool_start(&r->pool, r->opt.compile_only && r->opt.compile_threads < 1 ? 1 : r->opt.compile_threads);
    st = r->opt.compile_only ? compile_all(r) : measure_all(r);
    pool_stop(&r->pool);
    if (st == MXATTN_OK && !r->opt.compile_only) st = confirm_finalists(r);
    if (st == MXATTN_OK && !r->opt.compile_only) st = conclude(r);
fail:
    return st;
}

/* "compiled 24, stored 3: 21 kernels not stored: <the first write's error>" */
static mxattn_status report_lost_writes(const mx_tune_outcome *o) {
    if (!o->kernels_not_stored && !o->rows_not_stored) return MXATTN_OK;
    char kernels[96] = "", rows[64] = "";
    if (o->kernels_not_stored)
        snprintf(kernels, sizeof kernels, "compiled %d, stored %d: %d kernel%s not stored", o->compiled,
                 o->compiled - o->kernels_not_stored, o->kernels_not_stored, o->kernels_not_stored == 1 ? "" : "s");
    if (o->rows_not_stored)
        snprintf(rows, sizeof rows, "%s%d tuning row%s not stored", kernels[0] ? "; " : "", o->rows_not_stored,
                 o->rows_not_stored == 1 ? "" : "s");
    return mx_fail(o->store_status != MXATTN_OK ? o->store_status : MXATTN_ERROR_CACHE, "%s%s: %s", kernels, rows,
                   o->store_error);
}

mxattn_status mx_tune_run(const mx_jit_env *env, const char *shape_params, const mx_tune_sizes *sizes,
                          const mx_tune_key *key, const mx_tune_options *opt, mx_tune_outcome *out) {
    mx_tune_options defaults;
    mx_tune_options_init(&defaults);
    if (!opt) opt = &defaults;
    if (out) memset(out, 0, sizeof *out);
    mxattn_status st = check_arguments(env, shape_params, sizes, opt, out);
    if (st != MXATTN_OK) return st;
    run *r = calloc(1, sizeof *r);
    const char **configs = calloc(MAX_CANDIDATES, sizeof *configs);
    char *text = NULL;
    if (!r || !configs) { free(r); free(configs); return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "tuner: out of memory"); }
    r->t0 = mx_now_ms();
    r->env = env;
    r->shape = shape_params;
    r->sizes = sizes;
    r->key = key;
    r->opt = *opt;
    r->out = out;
    mx_tune_sizes_text(sizes, r->sizes_text, sizeof r->sizes_text);
    char family[32] = "", p_scale[16] = "";
    mx_params_get(shape_params, "family", family, sizeof family);
    mx_params_get(shape_params, "p_scale", p_scale, sizeof p_scale);
    mx_tune_tolerance_of(family, !strcmp(p_scale, "direct"), &r->tolerance);
    r->pool.env = *env;
    r->pool.env.dev = NULL;
    r->pool.env.whole_module = 1;   /* the pool's threads already fill the cores */
    r->pool.shape = shape_params;
    r->pool.sizes = r->sizes_text;
    pthread_mutex_init(&r->pool.mu, NULL);
    pthread_cond_init(&r->pool.cv, NULL);
    st = list_candidates(r, &text, configs);
    if (st == MXATTN_OK) st = execute(r, configs);
    if (st == MXATTN_OK) st = report_lost_writes(out);
    out->wall_s = (mx_now_ms() - r->t0) / 1e3;
    mx_bench_close(r->bench);
    pthread_mutex_destroy(&r->pool.mu);
    pthread_cond_destroy(&r->pool.cv);
    free(r->pool.slots);
    free(r->fresh);
    free(r->ref);
    free(r->times);
    free(r);
    free(configs);
    free(text);
    return st;
}
