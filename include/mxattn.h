/*
 * mxattn: run-time generated, autotuned low-bit attention kernels.
 *
 * The shape of this API follows cuBLASLt: describe the problem, make a plan for
 * it (which picks and compiles a kernel), then run the plan as often as you
 * like on the caller's stream.  Handles are opaque; every call returns a
 * status; mxattn_last_error() holds the message of the last failure on the
 * calling thread.  The library never prints, aborts or exits.
 *
 *     mxattn_ctx *ctx;  mxattn_plan *plan;  mxattn_problem p;
 *     mxattn_create(&ctx, NULL);
 *     mxattn_problem_init(&p, "f16", 128);
 *     p.batch = 4; p.heads_q = 32; p.heads_kv = 8; p.seq_q = p.seq_k = 4096;
 *     mxattn_plan_create(ctx, &p, NULL, &plan);
 *     mxattn_run(plan, q, k, v, o, NULL, stream);
 *     mxattn_plan_destroy(plan);  mxattn_destroy(ctx);
 */
#ifndef MXATTN_H
#define MXATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MXATTN_VERSION "0.1.0"

typedef enum {
    MXATTN_OK = 0,
    MXATTN_ERROR_INVALID_VALUE,   /* a bad argument: shape, stride, family, flag */
    MXATTN_ERROR_NULL_POINTER,    /* a required pointer was NULL */
    MXATTN_ERROR_MISALIGNED,      /* a device pointer or stride breaks the plan's alignment */
    MXATTN_ERROR_UNSUPPORTED,     /* legal request this build or device cannot do */
    MXATTN_ERROR_NO_DRIVER,       /* libcuda.so.1 could not be opened */
    MXATTN_ERROR_NO_DEVICE,       /* driver present, no usable GPU */
    MXATTN_ERROR_NO_COMPILER,     /* libnvrtc could not be opened */
    MXATTN_ERROR_COMPILE,         /* NVRTC rejected the generated source (log in the message) */
    MXATTN_ERROR_TEMPLATE,        /* a Lua template failed */
    MXATTN_ERROR_CUDA,            /* a driver call failed */
    MXATTN_ERROR_OUT_OF_MEMORY,
    MXATTN_ERROR_OUT_OF_RESOURCES,/* kernel needs more registers or shared memory than the GPU has */
    MXATTN_ERROR_CACHE,           /* the database could not be opened or written */
    MXATTN_ERROR_CACHE_CORRUPT,   /* the database was corrupt (it is moved aside and rebuilt) */
    MXATTN_ERROR_IO,              /* a file could not be read or written */
    MXATTN_ERROR_NOT_FOUND,       /* a lookup found nothing */
    MXATTN_ERROR_WRONG_RESULT,    /* a kernel's output failed its check against the reference */
    MXATTN_ERROR_INTERNAL,
    /* Added after 0.1.0; the numbers above keep their values. */
    MXATTN_ERROR_CACHE_READ_ONLY, /* the database (file, directory or mount) is read-only: reads are served, this write was not stored */
    MXATTN_ERROR_CACHE_FULL,      /* the disk or quota is full: this write was not stored */
    MXATTN_ERROR_CACHE_BUSY,      /* another process held the write lock past the bounded wait: not stored */
    MXATTN_ERROR_CACHE_FOREIGN,   /* the file is not an mxattn database; it was left untouched */
    MXATTN_ERROR_UNTRUSTED        /* a kernel binary not compiled here and not signed by a trusted key */
} mxattn_status;

typedef enum { MXATTN_F16 = 0, MXATTN_BF16 = 1 } mxattn_dtype;

/* Memory layout of Q, K, V and O when no explicit strides are given.
 * BHND is [batch, heads, seq, dim]; BNHD is [batch, seq, heads, dim]. */
typedef enum { MXATTN_LAYOUT_BHND = 0, MXATTN_LAYOUT_BNHD = 1 } mxattn_layout;

/* Which keys a query may see.  TOP_LEFT is PyTorch SDPA's is_causal (query i
 * sees keys j <= i); BOTTOM_RIGHT is FlashAttention's (the last query sees
 * every key: j <= i + seq_k - seq_q).  A query row that sees no key at all
 * gets an output of zeros and a log-sum-exp of -inf. */
typedef enum {
    MXATTN_CAUSAL_NONE = 0,
    MXATTN_CAUSAL_TOP_LEFT = 1,
    MXATTN_CAUSAL_BOTTOM_RIGHT = 2
} mxattn_causal;

/* Strides in elements, for [batch, head, seq]; the dim stride must be 1. */
typedef struct { int64_t batch, head, seq; } mxattn_strides;

/* The problem: what to compute.  Fill it with mxattn_problem_init(), then set
 * what differs from the defaults. */
typedef struct {
    const char *family;        /* a kernel family: mxattn_families() lists them ("f16", "int8-fp8", ...) */
    int head_dim;              /* 8 .. 256, any value */
    int batch, heads_q, heads_kv; /* batch, heads_q <= 65535; heads_q a multiple of heads_kv, at most 256x */
    int seq_q, seq_k;          /* 1 .. 2^24 (16,777,216), need not be equal */
    mxattn_causal causal;
    mxattn_dtype dtype;        /* of Q, K, V */
    mxattn_dtype out_dtype;    /* of O */
    mxattn_layout layout;      /* used for any strides left at zero */
    mxattn_strides q_strides, k_strides, v_strides, o_strides; /* all zero: from layout, contiguous;
                                  each 0 .. 2^40 elements, a tensor's extent under 2^63 bytes */
    float sm_scale;            /* 0: 1/sqrt(head_dim); else finite, > 0, sm_scale * log2(e) a finite float */
    int return_lse;            /* 0 or 1; 1: mxattn_run writes the natural-log LSE, fp32 [batch, heads_q, seq_q] */
    int direct_p;              /* 0 or 1; FP4 families: quantize P with the direct scale (for comparison only) */
    int smooth_k;              /* 0 or 1; quantized families: subtract K's channel mean (default 1) */
    int v_terms;               /* int8-fp8: V as 1 (default) or 2 E4M3 terms; 2 removes V's rounding
                                  error (accuracy past SageAttention2's) for ~2x the P V MMAs; wgmma only,
                                  head_dim <= 128; every other family takes 1 */
} mxattn_problem;

/* Library-wide options; NULL in mxattn_create() means all defaults. */
typedef struct {
    const char *db_path;       /* NULL: $MXATTN_CACHE, else $XDG_CACHE_HOME/mxattn/mxattn.db */
    const char *tune_policy;   /* NULL: $MXATTN_TUNE, else "off"; also "first-use", "background" */
    int device;                /* CUDA device ordinal, default 0 */
    int no_cache;              /* 1: use no database at all */
} mxattn_options;

typedef struct mxattn_ctx mxattn_ctx;
typedef struct mxattn_plan mxattn_plan;

/* What a plan chose and how it got it. */
typedef struct {
    char config[256];          /* the kernel configuration, "key=value ..." */
    char kernel_name[128];
    const char *config_source; /* "explicit", "tuned", "default", or "tuned-other-build": no row for
                                  this build, so the nearest for the same GPU (name, SM count,
                                  compute capability) and problem tuned under another driver,
                                  NVRTC, mxattn version or template text (the shipped rows after
                                  an upgrade); the note says which, and `mxattn tune` makes this
                                  build's own.  Not used instead of MXATTN_TUNE=first-use tuning */
    int cubin_from_cache;      /* 1: the binary came from the database, NVRTC was not run */
    double compile_ms;         /* NVRTC time spent making this plan (0 on a cache hit) */
    double create_ms;          /* wall time of mxattn_plan_create */
    int registers, shared_bytes, spill_bytes;
    size_t workspace_bytes;
    int cubin_stored;          /* 1: the binary is in the database (found there or written now); 0: not (see note) */
    char note[512];            /* "" or why: a tuned row that was ignored or came from another build,
                                  a binary that could not be stored */
    /* Added after 0.1.0. */
    int key_block;             /* keys per tile of the kernel: the span its softmax operand P is
                                  quantized and rescaled over (0 where the templates do not say) */
} mxattn_plan_info;

/* The database a context uses, opened on first need. */
typedef struct {
    char path[1024];
    int open;                  /* 1: in use; 0: none (disabled, or it could not be opened: see note) */
    int read_only;             /* 1: reads are served, writes are refused with CACHE_READ_ONLY */
    char note[1024];           /* "" or what happened: moved aside and rebuilt (with how many rows kept),
                                  why it could not be opened, the last write that failed */
    long kernels, tunings, measurements;
} mxattn_cache_info;

const char *mxattn_version(void);
const char *mxattn_status_string(mxattn_status s);
/* Message of the last failure on this thread; "" if none. */
const char *mxattn_last_error(void);

mxattn_status mxattn_options_init(mxattn_options *opts);
mxattn_status mxattn_create(mxattn_ctx **out, const mxattn_options *opts);
void mxattn_destroy(mxattn_ctx *ctx); /* NULL is a no-op */

mxattn_status mxattn_problem_init(mxattn_problem *p, const char *family, int head_dim);
/* Checks a problem without touching the GPU. */
mxattn_status mxattn_problem_check(const mxattn_problem *p);

/* Makes a plan.  config is NULL to let mxattn choose (tuned database entry, or
 * the heuristic default), or an explicit "block_m=64 block_n=64 ..." string:
 * tokens separated by spaces, each key=value with a knob's name (mxattn params)
 * and a legal value, each key once, at most 255 characters; knobs left out take
 * the default.  Anything else is MXATTN_ERROR_INVALID_VALUE naming the token,
 * before any driver call; so are knobs illegal together or for the problem, on
 * the GPU's architecture (sm_90a's where there is none).  A tuned row that does not fit the problem or
 * the parameter space is ignored: the default is built, config_source says
 * "default" and the info's note says why. */
mxattn_status mxattn_plan_create(mxattn_ctx *ctx, const mxattn_problem *p,
                                 const char *config, mxattn_plan **out);
mxattn_status mxattn_plan_get_info(const mxattn_plan *plan, mxattn_plan_info *info);
void mxattn_plan_destroy(mxattn_plan *plan); /* NULL is a no-op */

/* Runs the plan on `stream` (a CUstream; NULL is the legacy default stream).
 * q, k, v, o are device pointers laid out as the problem says; lse is NULL or
 * a device pointer to batch*heads_q*seq_q floats.  Runs asynchronously: it
 * only launches kernels (no allocation, no synchronization), so it can be
 * captured in a CUDA graph once the plan exists.  A plan whose info shows
 * workspace_bytes > 0 owns one workspace (a quantized family's operands, the
 * f16 persistent kernel's unit counters and, with split=1, the partial
 * outputs of row blocks split along the keys, ~11 MB at D=128): running the
 * same plan on two streams at once races on it (make one plan per stream). */
mxattn_status mxattn_run(mxattn_plan *plan, const void *q, const void *k,
                         const void *v, void *o, float *lse, void *stream);

/* The legal configurations for a problem, without compiling or running
 * anything: first the heuristic default a plan would build for it, then the
 * rest best first by a cheap analytic prior.  Writes up to `max` strings
 * into configs[] (each freed with mxattn_free); *count gets the total. */
mxattn_status mxattn_candidates(mxattn_ctx *ctx, const mxattn_problem *p,
                                char **configs, int max, int *count);

/* Tunes the problem's (family, shape, sequence buckets: max(seq_q, seq_k) and
 * seq_q, so decoding and prefill keep their own winners) on the present GPU and
 * stores the winner in the database.  Each candidate is timed after half a
 * second of its own sustained load, at the clock the GPU holds under its power
 * limit for that kernel (tuning inside plan creation times in short bursts).
 * best_config (may be NULL) receives the winner; speedup (may be NULL) its
 * speed-up over the heuristic default.  When the database did not take every
 * kernel or row (disk full, read-only, busy), both are still filled and the
 * status is that write's error, the message naming how many were not stored. */
mxattn_status mxattn_tune(mxattn_ctx *ctx, const mxattn_problem *p,
                          char *best_config, size_t best_config_len, double *speedup);

/* Tuned configurations in the database, as JSON (an array of objects).
 * filter is NULL or "key=value ..." over gpu, family, head_dim, dtype, causal.
 * *json is freed with mxattn_free. */
mxattn_status mxattn_query(mxattn_ctx *ctx, const char *filter, char **json);

/* Opens the context's database if it is not open yet and says what it is:
 * its path, whether it is read-only, and whether opening it found damage
 * (then note says where the original was kept and how much was salvaged).
 * Returns OK when a database is in use, else the status that kept it closed. */
mxattn_status mxattn_cache_get_info(mxattn_ctx *ctx, mxattn_cache_info *info);

/* ---- the parameter space, from the templates -------------------------------
 * Every family and kernel parameter is declared once, in the templates
 * (templates/space.lua); these calls read that declaration, so a program
 * never keeps its own copy.  The table is read on the first call (from
 * $MXATTN_TEMPLATE_DIR when set, else the templates compiled in) and kept
 * for the life of the process; a failed read is retried by the next call. */

/* One kernel parameter.  Every string is the library's, valid until exit. */
typedef struct {
    const char *name;          /* "block_n": the key in parameter texts and configurations */
    const char *role;          /* "shape": set by the problem and compiled in; "problem": set by the
                                  problem, passed at launch; "knob": a configuration's (the tuner's or
                                  the heuristic default's choice) */
    const char *legal;         /* the legal values, "16|32|64", or a range "8..256" */
    const char *default_value; /* "" where the table gives none; a knob's is what it takes when the
                                  family's heuristic default does not set it */
    const char *families;      /* "" when every family reads it, else those that do, space-separated */
    const char *help;          /* a sentence or two for --help */
    int is_bool;               /* 1: the legal values are 0 and 1 */
    int is_range;              /* 1: legal is "min..max" */
    long min, max;             /* the range (is_range only) */
} mxattn_param;

/* The kernel families, in the templates' order ("f16", "int8-f16", ...):
 * *names gets an array of *count strings (and a NULL after them). */
mxattn_status mxattn_families(const char *const **names, int *count);
/* Every kernel parameter, in the templates' order: *params gets *count entries. */
mxattn_status mxattn_params(const mxattn_param **params, int *count);

/* ---- parameter tables, source and compile-only, without a GPU ---------------
 * A parameter table is "key=value ..." over the parameters of mxattn_params:
 * the shape (family, head_dim, causal, arch, ...) and any knobs, knobs left
 * out taking the family's heuristic default.  These calls use the context's
 * templates only: no GPU, no database. */

/* The table completed and checked: every parameter that shapes the source,
 * canonical order, into *canonical (freed with mxattn_free).  An illegal
 * value or combination is MXATTN_ERROR_INVALID_VALUE naming it. */
mxattn_status mxattn_params_resolve(mxattn_ctx *ctx, const char *params, char **canonical);
/* The CUDA source the table renders to, as a plan compiles it (mxattn_free). */
mxattn_status mxattn_render(mxattn_ctx *ctx, const char *params, char **source);
/* A description of the parameter space for people: each parameter's role,
 * legal values, default and help, then the constraints between them
 * (`mxattn params`), into *text (mxattn_free). */
mxattn_status mxattn_params_help(mxattn_ctx *ctx, char **text);

/* How mxattn_compile compiles; fill with mxattn_compile_options_init. */
typedef struct {
    int whole_module;          /* 0 (default): each kernel of the module its own NVRTC program on its
                                  own thread, as a plan compiles; 1: the module as one program, the
                                  form the PTX and the binary below come from */
    int want_ptx;              /* 1: keep the PTX in the result (whole_module only) */
    int want_cubin;            /* 1: keep the binary in the result (whole_module only) */
} mxattn_compile_options;

/* What a compile made: of the module's attention kernel, its last. */
typedef struct {
    char kernel_name[128];
    char arch[16];             /* the table's arch (sm_90a unless it says otherwise) */
    int kernels;               /* in the module */
    double compile_ms;         /* wall time of the whole compile */
    int registers;             /* per thread */
    int shared_dynamic_bytes;  /* the launch's dynamic shared memory */
    int shared_static_bytes, stack_bytes, spill_store_bytes, spill_load_bytes;
    size_t binary_bytes;       /* the module's binary (a container of cubins when compiled apart) */
    char *ptx;                 /* want_ptx: NUL-terminated, else NULL */
    void *cubin;               /* want_cubin: binary_bytes bytes, else NULL */
} mxattn_compile_result;

mxattn_status mxattn_compile_options_init(mxattn_compile_options *opts);
/* Renders the table and compiles it with NVRTC for its arch, as a plan would
 * but without a GPU and without the database.  opts NULL: the defaults.
 * Free the result's ptx and cubin with mxattn_compile_result_free. */
mxattn_status mxattn_compile(mxattn_ctx *ctx, const char *params, const mxattn_compile_options *opts,
                             mxattn_compile_result *out);
void mxattn_compile_result_free(mxattn_compile_result *r); /* NULL, or a zeroed result, is a no-op */

/* ---- this machine -------------------------------------------------------------
 * What the machine offers, without a context: each call answers even where
 * there is no driver, GPU or NVRTC, with the status and a message saying why. */

/* One GPU's properties, read without creating a CUDA context. */
typedef struct {
    int ordinal;
    char name[256];            /* "NVIDIA H200" */
    char arch[16];             /* the NVRTC target mxattn compiles for, "sm_90a" */
    int cc_major, cc_minor;    /* compute capability */
    int sm_count;
    int smem_per_block_optin;  /* shared memory a block may have after opting in, bytes */
    int smem_per_sm, regs_per_sm, max_threads_per_sm;
    int l2_bytes;
    size_t memory_bytes;
    int driver_version;        /* 13000 for CUDA 13.0 */
} mxattn_device_info;

/* NVRTC's version, "13.0"; MXATTN_ERROR_NO_COMPILER (with the places tried) when absent. */
mxattn_status mxattn_nvrtc_version(char *out, size_t out_len);
/* The driver's CUDA version (13000 for 13.0), also when it has no usable GPU. */
mxattn_status mxattn_driver_version(int *version);
/* How many GPUs the driver sees. */
mxattn_status mxattn_device_count(int *count);
mxattn_status mxattn_device_get_info(int ordinal, mxattn_device_info *info);
/* Where a context's database is when mxattn_options.db_path is NULL:
 * $MXATTN_CACHE, else $XDG_CACHE_HOME/mxattn/mxattn.db, else ~/.cache/mxattn/mxattn.db. */
mxattn_status mxattn_cache_default_path(char *out, size_t out_len);

/* ---- tuning runs, with their options and report ------------------------------
 * mxattn_tune with the knobs of a long offline run (`mxattn tune`): how each
 * candidate is timed, progress as it goes, a compile-only mode that fills the
 * kernel cache for an arch without a GPU, and the whole report. */

/* The parameter table of a problem's shape for `arch` (NULL: sm_90a), as
 * mxattn_params_resolve, mxattn_render and mxattn_compile take it: what a
 * plan for the problem compiles, before its knobs (mxattn_free). */
mxattn_status mxattn_problem_params(const mxattn_problem *p, const char *arch, char **params);

/* Reported after each candidate; every string lives until the callback returns. */
typedef struct {
    int done, total;           /* candidates measured (or skipped) so far, of total */
    const char *current;       /* the candidate just measured (its knobs) */
    double current_ms;         /* its median, 0 if it failed */
    const char *status;        /* its status: "ok", "wrong result", "out of resources", ... */
    const char *why;           /* NULL, or why it failed (the compiler's message, the mismatch) */
    const char *best;          /* the best configuration so far, NULL before the first success */
    double best_ms;
    double elapsed_s, eta_s;   /* of this run */
} mxattn_tune_progress;

/* Fill with mxattn_tune_options_init (the values mxattn_tune uses), then change. */
typedef struct {
    int reps;                  /* timed launches per candidate, the median kept (20) */
    int warmup;                /* untimed launches before them (3) */
    double settle_ms;          /* each candidate's untimed sustained load first, so it is timed at the
                                  clock the GPU holds under its power limit (500; 0: burst timing) */
    double scores_std;         /* the inputs' scores ~ N(0, scores_std^2) (2.5: a peaked softmax) */
    int max_candidates;        /* the best N by the analytic prior, the default always among them (0: all) */
    int compile_threads;       /* CPU threads compiling ahead of the GPU (2) */
    int resume;                /* 1 (default): skip candidates the database has measured for this key;
                                  their times still count.  0: measure everything again */
    int compile_only;          /* 1: compile the candidates into the kernel cache, measure nothing,
                                  store no winner: no GPU needed */
    const char *arch;          /* compile_only: the target (NULL: sm_90a); else the GPU's is used */
    void (*progress)(void *user, const mxattn_tune_progress *p);   /* NULL: none */
    void *user;
} mxattn_tune_options;

/* What a run found and did. */
typedef struct {
    char best_config[256];     /* the winner's knobs ("" when none, and after compile_only) */
    double best_ms, best_tops; /* its median time and throughput at the problem's sizes */
    char default_config[256];  /* the heuristic default's knobs, the reference every candidate matches */
    double default_ms;
    int candidates;            /* in this run's list (after max_candidates) */
    int measured, failed, skipped;  /* timed "ok"; any other status; resumed from the database */
    int compiled, cache_hits;  /* kernels NVRTC built; kernels found in the cache */
    int compile_failed, pruned;/* of those: NVRTC failures; spilling or unlaunchable */
    double compile_ms;         /* NVRTC time summed over threads */
    double wall_s;
    int seq_bucket, q_bucket;  /* the tuning key's sequence buckets (0 after compile_only) */
    int kernels_not_stored, rows_not_stored;  /* writes the database refused (full, read-only, busy) */
    mxattn_status store_status;/* the first refused write's status (then also the run's), else OK */
    char store_error[256];
} mxattn_tune_report;

mxattn_status mxattn_tune_options_init(mxattn_tune_options *opts);
/* Tunes the problem as mxattn_tune does (opts NULL: its defaults; mxattn_tune
 * is this call with them) and fills *report (may be NULL): without a database
 * (no_cache) the winner is found and nothing stored.  With opts->compile_only
 * it compiles the candidates for opts->arch into the database instead, which
 * it then needs.  When the run worked but the database did not take every
 * write, the report is complete and the status is report->store_status. */
mxattn_status mxattn_tune_run(mxattn_ctx *ctx, const mxattn_problem *p, const mxattn_tune_options *opts,
                              mxattn_tune_report *report);

/* ---- a database's upkeep: share, check, query (`mxattn db`, `mxattn query`) ---
 * A database opened on its own, apart from any context: exported to a file
 * for machines of the same GPU, imported or merged from one, vacuumed,
 * checked, and its tuned rows listed.  Compiled kernels are code: they are
 * exported only when asked, signed with an Ed25519 key (mxattn_db_keygen),
 * and imported only when each is signed by a key the caller trusts. */
typedef struct mxattn_db mxattn_db;

/* Opens `path` (NULL: mxattn_cache_default_path's).  must_exist 1: a missing
 * file is MXATTN_ERROR_NOT_FOUND and nothing is created.  A damaged file is
 * rebuilt as mxattn_create's database is; mxattn_db_recovered says so. */
mxattn_status mxattn_db_open(const char *path, int must_exist, mxattn_db **out);
void mxattn_db_close(mxattn_db *db); /* NULL is a no-op */
const char *mxattn_db_path(const mxattn_db *db);
/* "" or a sentence: the file was damaged, where the original was kept, how many rows were kept. */
const char *mxattn_db_recovered(const mxattn_db *db);

/* How an import or merge is checked.  Every tuning row's configuration is
 * also checked against the templates for its problem, and refused if not legal. */
typedef struct {
    int with_kernels;          /* import only: take the export's kernels too (merge never does) */
    const char *const *trusted;/* with_kernels: the public keys whose signatures are accepted, each
                                  64 hex digits or the path of a .pub file */
    int n_trusted;             /* at most MXATTN_DB_MAX_TRUSTED */
} mxattn_db_import_options;
#define MXATTN_DB_MAX_TRUSTED 16

typedef struct {
    long tune_rows_read, tune_rows_taken;
    long tune_rows_kept;       /* merge: ours was faster */
    long tune_rows_refused;    /* failed a check: not taken */
    char first_refusal[256];   /* the first refused row or measurement and why, or "" */
    long kernels_read, kernels_taken;
    long measurements_read, measurements_taken, measurements_refused;
} mxattn_db_import_report;

mxattn_status mxattn_db_import_options_init(mxattn_db_import_options *opts);
/* Takes an export's tuning results and measurements, replacing ours for the
 * same key (and with opts->with_kernels its kernels, each signed by a trusted
 * key, else MXATTN_ERROR_UNTRUSTED and nothing taken).  A malformed file
 * rejects the whole import, the database unchanged.  opts, report may be NULL. */
mxattn_status mxattn_db_import(mxattn_db *db, const char *file, const mxattn_db_import_options *opts,
                               mxattn_db_import_report *report);
/* The same, but where both have a key the faster row wins; no kernels. */
mxattn_status mxattn_db_merge(mxattn_db *db, const char *file, const mxattn_db_import_options *opts,
                              mxattn_db_import_report *report);
/* Writes the tuning results and measurements (and with with_kernels the
 * kernels, each signed with the secret key in sign_key_file unless that is
 * NULL) to `file`, written beside it and renamed into place as DEST.tmp-PID:
 * a failed export leaves no half file.  An existing file is replaced. */
mxattn_status mxattn_db_export(mxattn_db *db, const char *file, int with_kernels, const char *sign_key_file);
mxattn_status mxattn_db_vacuum(mxattn_db *db);

typedef struct {
    int integrity_ok;          /* SQLite's integrity check passed */
    char integrity_message[256];/* its first complaint, or "ok" */
    long kernels_checked, kernels_bad;
    char first_bad_kernel[65]; /* key of the first kernel whose blob fails its hash */
    long kernels, tune_rows, measurements;
} mxattn_db_check_report;
/* Integrity check and every kernel's hash; OK when the check ran (the report says what it found). */
mxattn_status mxattn_db_check(mxattn_db *db, mxattn_db_check_report *report);

/* A key pair for signing exported kernels: the secret key into secret_path
 * (mode 0600, never overwritten), the public key into secret_path.pub and
 * pub_hex (64 hex digits). */
mxattn_status mxattn_db_keygen(const char *secret_path, char pub_hex[65]);

/* Which tuned rows to list: NULL or "" strings and negative numbers mean any. */
typedef struct {
    const char *gpu;           /* a case-insensitive substring of the GPU's name */
    const char *family;
    int head_dim;
    const char *dtype;         /* "bf16" or "f16" */
    int causal;                /* an mxattn_causal */
} mxattn_db_filter;

/* One tuned configuration and the problem it won for. */
typedef struct {
    char gpu[128];
    char family[32];
    int head_dim;
    char dtype[8];
    int causal;                /* an mxattn_causal */
    int gqa;
    int seq_bucket, q_bucket;  /* the key-length and query-length buckets */
    double median_ms, tops;    /* the winner's time and throughput at the tuned problem */
    double default_ms;         /* the heuristic default's time in the same run */
    char config[256];
} mxattn_tuned_row;

mxattn_status mxattn_db_filter_init(mxattn_db_filter *f);
/* The matching rows, ordered by GPU, family, head_dim, dtype, causal and
 * bucket: *rows (freed with mxattn_free; NULL when *count is 0) and, when
 * json is not NULL, the same as a JSON array in *json (mxattn_free). */
mxattn_status mxattn_db_query(mxattn_db *db, const mxattn_db_filter *filter, mxattn_tuned_row **rows,
                              int *count, char **json);

/* ---- measuring a plan on this GPU (`mxattn run`) ------------------------------ */

/* Fill with mxattn_bench_options_init, then change. */
typedef struct {
    int reps;                  /* timed launches after one untimed (20) */
    unsigned long long seed;   /* Q, K, V ~ N(0, 1) from this seed (1) */
    int check_heads;           /* heads of batch 0 compared with the fp64 CPU reference (1); 0: none,
                                  and the inputs then repeat a 2^20-value Gaussian pattern, quicker to
                                  make for big problems */
} mxattn_bench_options;

typedef struct {
    double best_ms, mean_ms;   /* of the timed launches, each between CUDA events */
    int reps;
    double tops;               /* 4 * batch * heads_q * seq_q * seq_k * head_dim (halved when causal) / best */
    double rel_l1, cosine, max_abs;  /* of the checked heads' output against the reference (0: none checked) */
    int checked_heads;
} mxattn_bench_report;

mxattn_status mxattn_bench_options_init(mxattn_bench_options *opts);
/* Runs the plan on inputs of its own: allocates contiguous Q, K, V, O (and
 * the LSE when the plan returns it) on the plan's GPU, fills them, runs once,
 * times opts->reps runs and checks opts->check_heads heads (opts NULL: the
 * defaults).  A plan for explicit strides that are not its layout's
 * contiguous ones is MXATTN_ERROR_UNSUPPORTED: the inputs would not fit them. */
/* Runs the plan once on host arrays laid out as its problem says: copies q,
 * k, v and o (o's contents too, so an element the kernel leaves unwritten
 * keeps its value) to buffers on the plan's GPU, runs, waits, and copies o
 * (and the LSE, when lse is not NULL) back.  For checks and tools, not speed. */
mxattn_status mxattn_run_host(mxattn_plan *plan, const void *q, const void *k, const void *v, void *o, float *lse);
mxattn_status mxattn_plan_benchmark(mxattn_plan *plan, const mxattn_bench_options *opts, mxattn_bench_report *report);

/* ---- the design notes' accuracy tables, on the CPU (`mxattn accuracy`) ---------
 * The quantization each family does, reproduced on the fp64 CPU reference
 * and set beside the design notes' figures: Q, V ~ N(0, 1) and K ~ N(0, 1)
 * + mu with a per-channel mean mu_c ~ N(0, k_mean^2), all size x head_dim,
 * one head, no mask, deterministic for a seed. */
typedef struct {
    long seed;
    int size;                  /* rows of Q, K and V (1024) */
    int head_dim;              /* (128) */
    double k_mean;             /* stddev of K's per-channel mean (3.0) */
} mxattn_accuracy_options;

/* One figure: the table it belongs to, its name, ours and the notes'. */
typedef struct {
    const char *table;         /* "census", "formats", "p-scale", "smooth-k", "sweep", "split", "int8",
                                  "throughput": the figures come grouped in this order */
    char name[64];
    double ours;
    double notes;              /* NaN: the notes give no figure */
    const char *format;        /* a printf format for one value */
} mxattn_accuracy_figure;

#define MXATTN_ACCURACY_MAX_FIGURES 64
#define MXATTN_ACCURACY_SWEEP 4
typedef struct {
    mxattn_accuracy_figure figures[MXATTN_ACCURACY_MAX_FIGURES];
    int count;
    /* The temperature sweep (NVFP4, Q scaled by each temperature), for a chart. */
    double sweep_temperature[MXATTN_ACCURACY_SWEEP];
    double sweep_entropy[MXATTN_ACCURACY_SWEEP];     /* of the fp64 attention: 1 uniform .. 0 one-hot */
    double sweep_two_level[MXATTN_ACCURACY_SWEEP];   /* output cosine %, two-level P scale */
    double sweep_direct[MXATTN_ACCURACY_SWEEP];      /* output cosine %, direct P scale */
    double notes_sweep_two_level[MXATTN_ACCURACY_SWEEP], notes_sweep_direct[MXATTN_ACCURACY_SWEEP];
} mxattn_accuracy_report;

mxattn_status mxattn_accuracy_options_init(mxattn_accuracy_options *opts);
/* The tables' inputs for opts (each size * head_dim floats; mu head_dim
 * floats, may be NULL), drawn in that order, so that other measurements can
 * use the same draw. */
mxattn_status mxattn_accuracy_inputs(const mxattn_accuracy_options *opts, float *q, float *k, float *v, float *mu);
/* Every figure of the tables (a second or two of CPU at the defaults). */
mxattn_status mxattn_accuracy(const mxattn_accuracy_options *opts, mxattn_accuracy_report *report);

/* The GPU table (`mxattn accuracy --gpu`): every kernel family run on this
 * GPU on the tables' inputs and on harder ones, its output error against
 * fp64 beside the CPU oracle's, the error the family is meant to make, on
 * the same bf16-rounded inputs: a gap between the two is the kernel's own. */
#define MXATTN_ACCURACY_GPU_MAX_EXPERIMENTS 8
#define MXATTN_ACCURACY_GPU_MAX_PLANS 32

typedef struct {
    const char *name;          /* "t=1", "outliers", "student-t", ... */
    const char *description;
    double temperature;        /* Q is multiplied by it (a power of two: exact in bf16) */
    double entropy;            /* normalized entropy of the fp64 attention: 1 uniform .. 0 one-hot */
} mxattn_accuracy_experiment;

/* One family row: a family, or a variant of one (direct P scale, V in two terms). */
typedef struct {
    const char *family;
    int direct_p, v_terms;
    char label[48];            /* "nvfp4 direct-P" */
    mxattn_status status;      /* of making its plan: UNSUPPORTED where this GPU or build cannot */
    char error[256];           /* the first line of the plan's message when it failed */
    char config[256];          /* the plan's configuration */
    int key_block;             /* the plan's mxattn_plan_info.key_block; 0 if unknown */
} mxattn_accuracy_plan;

typedef struct {
    int experiment, plan;      /* indices into the report's experiments and plans */
    mxattn_status status;      /* of the plan or the run */
    char error[256];           /* its message's first line */
    long unwritten;            /* outputs the kernel left holding the NaN they were filled with */
    int failed;                /* 1: a failure (a family the GPU cannot do is not one) */
    double gpu_cosine, gpu_rel_l1;          /* the kernel's output; NaN: not measured */
    double offline_cosine, offline_rel_l1;  /* the CPU oracle, P in the offline form (final row max) */
    double tile_cosine, tile_rel_l1;        /* the oracle, P in the kernel's tiles of key_block keys */
} mxattn_accuracy_row;

typedef struct {
    char gpu[256], arch[16];   /* GPU 0 */
    size_t outputs;            /* elements of O in each row's run */
    mxattn_accuracy_experiment experiments[MXATTN_ACCURACY_GPU_MAX_EXPERIMENTS];
    int n_experiments;
    mxattn_accuracy_plan plans[MXATTN_ACCURACY_GPU_MAX_PLANS];
    int n_plans;
    mxattn_accuracy_row rows[MXATTN_ACCURACY_GPU_MAX_EXPERIMENTS * MXATTN_ACCURACY_GPU_MAX_PLANS];
    int n_rows;                /* experiment by experiment, each over the plans */
} mxattn_accuracy_gpu_report;

/* Runs the GPU table on GPU 0 for the families in `families` (comma-separated;
 * NULL: all), one head of opts->size x opts->head_dim, bf16 in and out.  A
 * plan or run that fails is its row's status; the call fails only when there
 * is no GPU or the CPU reference cannot run. */
mxattn_status mxattn_accuracy_gpu(const mxattn_accuracy_options *opts, const char *families,
                                  mxattn_accuracy_gpu_report *report);

void mxattn_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
