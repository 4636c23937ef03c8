/* The library handle's insides, shared by the api/ files. */
#ifndef MX_API_CONTEXT_H
#define MX_API_CONTEXT_H
#include <pthread.h>
#include "api/problem.h"
#include "cache/cache.h"
#include "gen/gen.h"
#include "runtime/device.h"
#include "jit/jit.h"
#include "tuner/tune.h"

typedef enum { MX_TUNE_OFF, MX_TUNE_FIRST_USE, MX_TUNE_BACKGROUND } mx_tune_policy;

struct mxattn_ctx {
    int device_ordinal;
    int no_cache;
    mx_tune_policy tune_policy;
    char db_path[4096];          /* empty: the default path */
    mx_gen *gen;
    pthread_mutex_t gen_lock;
    pthread_mutex_t lock;        /* guards the lazy opening below */
    mx_device dev;
    int dev_open;
    mx_cache *cache;
    int cache_tried;
    mxattn_status cache_status;  /* why the database could not be opened (with cache_error) */
    char cache_error[1024];
    pthread_t tuner_thread;      /* MXATTN_TUNE=background: one tuning run at a time */
    int tuner_started, tuner_busy;
};

/* Candidates a tuning run inside plan creation measures at most: enough to
 * find the tile shape, few enough to keep a first plan within seconds. */
#define MX_JIT_TUNE_CANDIDATES 24
/* ... and times them in bursts (settle_ms 0): 24 candidates settled for
 * MX_TUNE_SETTLE_MS each would add ~15 s to a first plan, and inside a live
 * engine the clock follows the engine's whole mix of kernels, not the
 * candidate's own draw.  Offline tuning (mxattn tune, mxattn_tune) settles. */
#define MX_JIT_TUNE_SETTLE_MS 0.0

/* Starts tuning `key` on a background thread unless one is running already
 * (then this request is dropped: a later plan of the same problem asks again).
 * Plans made meanwhile use the default; those made after it finishes get the
 * winner from the database.  mxattn_destroy waits for the thread. */
void mx_ctx_tune_in_background(mxattn_ctx *ctx, const mx_device *dev, const char *shape,
                               const mx_tune_sizes *sizes, const mx_tune_key *key);

/* Opens the GPU on first use; NO_DRIVER / NO_DEVICE where there is none. */
mxattn_status mx_ctx_device(mxattn_ctx *ctx, const mx_device **out);
/* The database, opened on first use; NULL (and OK) when disabled or when it
 * cannot be opened: a broken cache slows mxattn down but never stops it. */
mx_cache *mx_ctx_cache(mxattn_ctx *ctx);
/* A JIT environment over the context's generator, cache and device. */
void mx_ctx_jit_env(mxattn_ctx *ctx, const mx_device *dev, mx_jit_env *env);
/* The same without the cache (env->cache NULL), for template calls only: it
 * opens no database.  No device: sm_90a's templates, no SM count. */
void mx_ctx_gen_env(mxattn_ctx *ctx, const mx_device *dev, mx_jit_env *env);
/* The tuning key of a problem on the context's GPU. */
void mx_ctx_tune_key(mxattn_ctx *ctx, const mx_device *dev, const mx_problem *pr, mx_tune_key *key);
void mx_ctx_tune_sizes(const mx_problem *pr, mx_tune_sizes *sizes);
/* A plan's resolved problem and GPU (api/plan.c keeps the struct). */
const mx_problem *mx_plan_problem(const mxattn_plan *plan);
const mx_device *mx_plan_device(const mxattn_plan *plan);
#endif
