/* The autotuner: measures a problem's candidate configurations on the GPU
 * and stores the winner (and every measurement) in the cache.
 *
 * Sequence lengths are bucketed so one tuning run serves nearby lengths:
 * bucket = the next power of two >= max(seq_q, seq_k), clamped to
 * [MX_SEQ_BUCKET_MIN, MX_SEQ_BUCKET_MAX]. */
#ifndef MX_TUNER_TUNE_H
#define MX_TUNER_TUNE_H
#include "tuner/jit.h"

#define MX_SEQ_BUCKET_MIN 256
#define MX_SEQ_BUCKET_MAX 65536
int mx_seq_bucket(int seq_q, int seq_k);

typedef struct {
    int done, total;            /* candidates measured (or skipped) so far, of total */
    const char *current;        /* the candidate just measured */
    double current_ms;          /* its median, 0 if it failed */
    const char *status;         /* its status (MX_MEASURE_*) */
    const char *best;           /* best config so far, NULL before the first success */
    double best_ms;
    double elapsed_s, eta_s;
} mx_tune_progress;

typedef struct {
    int warmup;                 /* launches before timing (default 3) */
    int reps;                   /* timed launches per candidate; the median is kept (default 20) */
    int max_candidates;         /* 0: all */
    int compile_threads;        /* CPU threads compiling ahead of the GPU (default 2) */
    int compile_only;           /* 1: fill the kernel cache; measure nothing (no GPU needed) */
    int resume;                 /* 1: skip candidates already measured for this key */
    void (*progress)(void *user, const mx_tune_progress *p);
    void *user;
} mx_tune_options;

void mx_tune_options_init(mx_tune_options *o);

/* What the problem looks like at launch: sizes for the launch plan, and the
 * numbers the kernel arguments need. */
typedef struct {
    int batch, heads_q, heads_kv, seq_q, seq_k, head_dim;
    int causal;                 /* mxattn_causal */
    int dtype_bytes;            /* 2 */
    float sm_scale;
} mx_tune_sizes;

typedef struct {
    char best[256];             /* winning knobs */
    double best_ms, best_tops;
    char default_config[256];
    double default_ms;
    int measured, failed, skipped;
} mx_tune_outcome;

/* Tunes `shape_params` (shape + problem roles, no knobs) at `sizes` and, when
 * env->cache is set, stores every measurement and the winner under `key`. */
mxattn_status mx_tune_run(const mx_jit_env *env, const char *shape_params, const mx_tune_sizes *sizes,
                          const mx_tune_key *key, const mx_tune_options *opt, mx_tune_outcome *out);
#endif
