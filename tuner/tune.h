/* The autotuner: measures a problem's candidate configurations on the GPU
 * and stores the winner (and every measurement) in the cache.
 *
 * One run, for one (shape, sizes, key):
 *   1. candidates: the templates' list (mxattn.candidates), heuristic default
 *      first, then by the family's analytic prior; cut to max_candidates.
 *   2. compile: compile_threads CPU threads compile ahead into the kernel
 *      cache (no GPU) while the calling thread measures; for each candidate
 *      in order it waits for the compile, then loads the binary (a cache hit).
 *   3. prune: a kernel that spills or cannot launch (registers, shared memory,
 *      threads vs. the GPU's limits) is recorded "out of resources", untimed.
 *   4. check: the candidate runs once on fresh inputs with O poisoned (NaN);
 *      its output must match the heuristic default's on the same inputs.  The
 *      default is the reference because the GPU test suite validates it
 *      against the fp64 CPU reference; checking every candidate against a CPU
 *      reference would cost far more than timing it.  Tolerance (bf16/f16
 *      outputs of two fp32-accumulating kernels): |got - ref| <= 2e-2 +
 *      2e-2 |ref| element-wise and relative L1 <= 5e-3 (tune_logic.h).  A
 *      mismatch is recorded "wrong result" and can never win.
 *   5. time: `warmup` launches, then `reps` launches, each between its own
 *      pair of CUDA events, all enqueued before a single wait so the GPU never
 *      idles on the host; the median is kept with the p10..p90 spread.  Per-
 *      launch events rather than one pair around the batch: the median and
 *      spread need the distribution, and the median shrugs off the odd slow
 *      launch (clock change, another process) that would skew a batch mean.
 *      Inputs rotate among buffer copies that exceed the L2 twice over.  A
 *      candidate whose check run took over 5x the best so far gets 5 reps
 *      only: it cannot win, and timing it in full only costs time.
 *   6. every measurement goes to the cache as it is made (so an interrupted
 *      run resumes), and the winner (fastest "ok" median; the default keeps
 *      ties within 1%) is stored with its TOPS and the default's time.
 *   A launch failure that leaves the GPU context unusable (an illegal address
 *   is sticky) ends the run with MXATTN_ERROR_CUDA: later numbers would be
 *   garbage.  The measurements made so far stay in the cache.
 *
 * Sequence lengths are bucketed so one tuning run serves nearby lengths, the
 * keys and the queries apart: seq_bucket = the next power of two >= seq_k,
 * clamped to [MX_SEQ_BUCKET_MIN, MX_SEQ_BUCKET_MAX], and q_bucket = the next
 * power of two >= seq_q, clamped to [MX_Q_BUCKET_MIN, MX_SEQ_BUCKET_MAX].
 * Decoding (a few rows against a long cache) and prefill over the same keys
 * are tuned apart: their best tiles differ (f16 D=64: 64-row blocks 2.4x
 * faster than the prefill's 192-row ones at seq_q=1).  So are
 * cross-attention's key lengths under one query length: with the longer of
 * the two as the bucket, Nq=4096 against 77, 256 and 1024 keys shared one
 * row, and the winner at 77 keys ran 0.61x of the default at 1024 (f16 D=64,
 * H200, 2026-12-01).  The key bucket starts at one 64-key tile, so 77 keys
 * (bucket 128) and 256 (256) are apart too. */
#ifndef MX_TUNER_TUNE_H
#define MX_TUNER_TUNE_H
#include "jit/jit.h"

#define MX_SEQ_BUCKET_MIN 64
#define MX_SEQ_BUCKET_MAX 65536
#define MX_Q_BUCKET_MIN 16
/* Under its power limit (700 W on the H200) the GPU's clock follows the
 * running kernel's energy per unit of work, within a few hundred ms.  Two
 * kernels can rank one way in a burst at boost clock and the other way
 * under sustained load: int8-fp8's shared K/V ring is 3-7% slower than
 * one-warpgroup blocks in bursts and 6-7% faster sustained at D=128
 * N=16384 (H200, 2026-11-30; bench/NOTES.md).  Sustained is how attention
 * runs in training and prefill, so each candidate is timed after this much
 * of its own load. */
#define MX_TUNE_SETTLE_MS 500.0
/* The tuner's inputs: K, V ~ N(0, 1) and scores ~ N(0, 2.5^2), a peaked
 * softmax as trained models' heads often have.  Power, and so the clock
 * under the limit, depends on the data too (P's zeros, the bits that
 * toggle): a team tuning for its model can match its scores' spread
 * (bench/attention.py's randn inputs: ~1). */
#define MX_TUNE_SCORES_STD 2.5
int mx_seq_bucket(int seq_k);
int mx_q_bucket(int seq_q);

typedef struct {
    int done, total;            /* candidates measured (or skipped) so far, of total */
    const char *current;        /* the candidate just measured */
    double current_ms;          /* its median, 0 if it failed */
    const char *status;         /* its status (MX_MEASURE_*) */
    const char *why;            /* why it failed (differs from the default by ..., the
                                   compiler's message, ...); NULL when it did not */
    const char *best;           /* best config so far, NULL before the first success */
    double best_ms;
    double elapsed_s, eta_s;
} mx_tune_progress;

typedef struct {
    int warmup;                 /* launches before timing (default 3) */
    double settle_ms;           /* sustained untimed load of each candidate before its timed
                                   launches, and before each confirming round (default
                                   MX_TUNE_SETTLE_MS): the timings then see the clock the GPU
                                   holds under that kernel's own power draw.  0: the warmup
                                   launches only (burst timing, at boost clock) */
    double scores_std;          /* standard deviation of the scores the inputs give (default
                                   MX_TUNE_SCORES_STD) */
    int reps;                   /* timed launches per candidate; the median is kept (default 20) */
    int max_candidates;         /* 0: all; the default is always among them */
    int compile_threads;        /* CPU threads compiling ahead of the GPU (default 2) */
    int compile_only;           /* 1: fill the kernel cache; measure nothing (no GPU needed) */
    int resume;                 /* 1: skip candidates already measured for this key; their
                                   stored times still count for the winner.  The default
                                   is re-run when anything is left: it is the reference. */
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
    int measured, failed, skipped;  /* this run: timed "ok"; any other status; resumed */
    int candidates;             /* in this run's list (after max_candidates) */
    int compiled, cache_hits;   /* kernels NVRTC built; kernels found in the cache */
    int compile_failed, pruned; /* of those: NVRTC failures; spilling / unlaunchable */
    double compile_ms;          /* NVRTC time summed over threads */
    /* Writes the cache refused (disk full, read-only, busy): the results of
     * this run stand, but a kernel not stored is compiled again next time and
     * a row not stored is lost.  Any makes mx_tune_run return store_status,
     * the first failed write's, with the counts in the message. */
    int kernels_not_stored;     /* of `compiled` */
    int rows_not_stored;        /* measurements, and the winner */
    mxattn_status store_status;
    char store_error[256];
    double wall_s;
    int input_sets;             /* buffer copies rotated among (0 when nothing ran) */
} mx_tune_outcome;

/* Tunes `shape_params` (shape + problem roles, no knobs) at `sizes` and, when
 * env->cache and key are set, stores every measurement and the winner under
 * `key`.  opt NULL: defaults.  With opt->compile_only no GPU is used (env->dev
 * may be NULL, key may be NULL): the candidates are compiled into the kernel
 * cache and counted in *out.  Otherwise env->dev is needed unless resume finds
 * every candidate measured already (MXATTN_ERROR_NO_DEVICE then).  When the
 * default itself fails, nothing can be checked: the run stops with its error.
 * When the run worked but the cache did not take every kernel or row, *out
 * is complete and the status is out->store_status ("compiled 24, stored 3:
 * 21 kernels not stored: ..."). */
mxattn_status mx_tune_run(const mx_jit_env *env, const char *shape_params, const mx_tune_sizes *sizes,
                          const mx_tune_key *key, const mx_tune_options *opt, mx_tune_outcome *out);
#endif
