/* The on-disk cache: compiled kernels and tuning results in one SQLite file.
 *
 * Two kinds of rows, with two kinds of keys (STYLE.md, "Cache keys"):
 *   - a compiled kernel is keyed by the hex SHA-256 of everything that changes
 *     the binary (rendered source, target arch, NVRTC version, options); the
 *     caller computes that key;
 *   - a tuning result is keyed by everything that changes the answer: the GPU
 *     SKU (name, SM count, compute capability, driver), the software (NVRTC,
 *     mxattn, template hash) and the problem.  mx_cache_get_tune matches every
 *     field exactly; mx_cache_get_tune_nearest lets only the software fields
 *     differ, so a configuration tuned on one GPU is never applied to another.
 * Every candidate the tuner timed is kept as a measurement, so an interrupted
 * tuning run can resume where it stopped.
 *
 * Several processes may use one file at once (WAL, a bounded busy wait,
 * writes in BEGIN IMMEDIATE transactions).  A damaged file of ours is rebuilt
 * with every row that still reads (see mx_cache_open); a file that is not ours
 * is never touched.  Nothing here prints. */
#ifndef MX_CACHE_H
#define MX_CACHE_H
#include <stddef.h>
#include <stdint.h>
#include "mxattn.h"

typedef struct mx_cache mx_cache;

/* Largest cubin the cache stores or imports; real ones are well under 1 MiB. */
#define MX_CACHE_MAX_CUBIN_BYTES (64u << 20)

/* ---- opening ------------------------------------------------------------ */

/* $MXATTN_CACHE, else $XDG_CACHE_HOME/mxattn/mxattn.db, else
 * ~/.cache/mxattn/mxattn.db.  MXATTN_ERROR_CACHE if no home directory is known
 * or the path does not fit in `cap`. */
mxattn_status mx_cache_default_path(char *out, size_t cap);

/* PRAGMA application_id of every database mxattn writes ('mxat'). */
#define MX_CACHE_APPLICATION_ID 1836605812 /* 0x6d786174 */

/* Default limit on the cubin bytes the kernel cache holds; MXATTN_CACHE_MAX_MB
 * overrides it.  A put that would pass it evicts the least recently used
 * kernels first; tuning results and measurements are never evicted. */
#define MX_CACHE_DEFAULT_MAX_MB 2048

/* How long one write waits for another process's write lock, in total,
 * before it fails with CACHE_BUSY; MXATTN_CACHE_BUSY_MS overrides it. */
#define MX_CACHE_DEFAULT_BUSY_MS 15000

/* The integrity check (PRAGMA quick_check) runs on open when the last one
 * that passed is older than this, and whenever a statement meets damage. */
#define MX_CACHE_CHECK_INTERVAL_S 86400

/* mx_cache_open_ex flags. */
#define MX_CACHE_OPEN_EXISTING  1u  /* never create a file or directory: a missing path is NOT_FOUND */
#define MX_CACHE_OPEN_READ_ONLY 2u  /* never write (implies EXISTING): no migration, no salvage */

/* Opens (creating the parent directories and the file on first use) and
 * migrates the database at `path` (NULL: the default path).
 *   - A file that is not an mxattn database (not SQLite, another application_id,
 *     foreign tables or columns) is refused with CACHE_FOREIGN and left as it is:
 *     nothing is renamed, written or created beside it.
 *   - One of ours that is damaged (found when its daily integrity check or a
 *     statement fails) is rebuilt: every row that still reads (and, for a
 *     kernel, passes its hash) is copied into a fresh file built beside it,
 *     the original is kept as '<path>.corrupt-<timestamp>' with its -wal and
 *     -shm, and the open succeeds; mx_cache_recovered() and the thread's error
 *     message say where it went and how many rows were kept of how many.
 *   - A file, directory or mount that cannot be written is opened read-only
 *     (immutable where no -shm can be made): reads are served, every write
 *     returns CACHE_READ_ONLY.
 * A newer schema version is UNSUPPORTED and left as it is. */
mxattn_status mx_cache_open(const char *path, mx_cache **out);
/* mx_cache_open with MX_CACHE_OPEN_* flags (0: the same as mx_cache_open). */
mxattn_status mx_cache_open_ex(const char *path, unsigned flags, mx_cache **out);
void mx_cache_close(mx_cache *cache); /* NULL is a no-op */
const char *mx_cache_path(const mx_cache *cache);
/* NULL, or a sentence saying the file was damaged, where the original was
 * kept and how many rows were kept of how many. */
const char *mx_cache_recovered(const mx_cache *cache);
/* 1 when the database is open read-only (asked for, or not writable). */
int mx_cache_read_only(const mx_cache *cache);
/* The schema version this build writes (PRAGMA user_version). */
int mx_cache_schema_version(void);

typedef struct { long kernels, tune_results, measurements; } mx_cache_counts;
mxattn_status mx_cache_count(mx_cache *cache, mx_cache_counts *counts);

/* ---- compiled kernels --------------------------------------------------- */

typedef struct {
    char key[65];            /* hex SHA-256 of source, arch, NVRTC version, options */
    char arch[16];           /* "sm_90a" */
    int nvrtc_version;       /* major * 1000 + minor * 10, as CUDA_VERSION */
    char kernel_names[256];  /* the entry points, separated by spaces */
    void *cubin;             /* put: the caller's; get: malloc'd, see mx_kernel_record_release */
    size_t cubin_size;
    char cubin_sha256[65];   /* put: computed; get: the verified hash */
    double compile_ms;
    int registers, shared_bytes, spill_bytes;
    int64_t created_at;      /* unix seconds; 0 on put means now */
} mx_kernel_record;

/* Stores a kernel; a key already present is left as it is (same key, same
 * binary).  When the cubins would pass the size limit (MXATTN_CACHE_MAX_MB,
 * default MX_CACHE_DEFAULT_MAX_MB) the least recently used kernels are
 * evicted in the same transaction; a cubin larger than the limit itself is
 * CACHE_FULL.  A write that cannot be stored says why: CACHE_READ_ONLY,
 * CACHE_FULL, CACHE_BUSY (after MXATTN_CACHE_BUSY_MS), CACHE_CORRUPT. */
mxattn_status mx_cache_put_kernel(mx_cache *cache, const mx_kernel_record *rec);
/* Fetches a kernel built for `arch`.  NOT_FOUND when absent or built for
 * another arch.  The blob's hash is checked again: on a mismatch the row is
 * deleted and CACHE_CORRUPT returned (the caller recompiles).  A hit records
 * its time for the eviction order, at most once an hour per kernel. */
mxattn_status mx_cache_get_kernel(mx_cache *cache, const char *key, const char *arch,
                                  mx_kernel_record *out);
void mx_kernel_record_release(mx_kernel_record *rec); /* frees rec->cubin */

/* ---- tuning results ----------------------------------------------------- */

/* Everything that changes which configuration is fastest. */
typedef struct {
    char gpu_name[128];        /* "NVIDIA H200" */
    int sm_count;
    int compute_capability;    /* major * 10 + minor: 90 */
    int driver_version;        /* cuDriverGetVersion: 12040 */
    int nvrtc_version;         /* major * 1000 + minor * 10 */
    char mxattn_version[32];
    char template_hash[65];    /* hex SHA-256 of the family's templates */
    char family[32];           /* "int8-f16" */
    int head_dim;
    char dtype[8];             /* "f16" | "bf16" */
    char out_dtype[8];
    int causal;                /* mxattn_causal */
    int gqa;                   /* heads_q / heads_kv; 1 without grouping */
    char layout[8];            /* "bhnd" | "bnhd" */
    int seq_bucket;            /* the tuner's key-length bucket: seq_k */
    int q_bucket;              /* the tuner's query-length bucket: seq_q (decode vs prefill) */
} mx_tune_key;

typedef struct {
    char config[256];          /* "block_m=64 block_n=64 ..." */
    double median_ms;
    double tops;
    double default_ms;         /* the heuristic default's time, for the speed-up */
    int64_t tuned_at;          /* unix seconds; 0 on put means now */
} mx_tune_result;

typedef struct { mx_tune_key key; mx_tune_result result; } mx_tune_row;

/* Stores the winner for `key`, replacing any older result (a re-tune wins). */
mxattn_status mx_cache_put_tune(mx_cache *cache, const mx_tune_key *key, const mx_tune_result *r);
/* Exact match on every key field, or NOT_FOUND. */
mxattn_status mx_cache_get_tune(mx_cache *cache, const mx_tune_key *key, mx_tune_result *out);
/* The best row for the key's SKU (gpu_name, sm_count, compute_capability)
 * and problem (family through q_bucket), from any build: any driver, NVRTC,
 * mxattn version or template hash.  Where several match, the first of: the
 * same template hash, the same mxattn version, the same NVRTC, the same
 * driver, the newest tuned_at.  The exact row, where there is one, is
 * therefore the answer; `found` (may be NULL) receives the row's own key, so
 * the caller can tell and say which build it came from.  NOT_FOUND when no
 * row of this SKU and problem exists.  One indexed query: plans call it on
 * every exact miss. */
mxattn_status mx_cache_get_tune_nearest(mx_cache *cache, const mx_tune_key *key, mx_tune_result *out,
                                        mx_tune_key *found);
/* The query's text, so a test can check that it searches an index. */
const char *mx_cache_tune_nearest_sql(void);

/* ---- measurements: every candidate the tuner timed ---------------------- */

/* The statuses a measurement may have. */
#define MX_MEASURE_OK "ok"
#define MX_MEASURE_COMPILE_FAILED "compile failed"
#define MX_MEASURE_OUT_OF_RESOURCES "out of resources"
#define MX_MEASURE_WRONG_RESULT "wrong result"
#define MX_MEASURE_LAUNCH_FAILED "launch failed"

typedef struct {
    char config[256];
    char status[32];           /* one of MX_MEASURE_* */
    double median_ms;          /* 0 when status is not "ok" */
    double spread;             /* (p90 - p10) / median */
    int registers;
    int64_t measured_at;       /* unix seconds; 0 on add means now */
} mx_measurement;

/* Records one candidate; measuring the same (key, config) again replaces it. */
mxattn_status mx_cache_add_measurement(mx_cache *cache, const mx_tune_key *key,
                                       const mx_measurement *m);
/* *measured = 1 if `config` already has a measurement for `key`. */
mxattn_status mx_cache_has_measurement(mx_cache *cache, const mx_tune_key *key,
                                       const char *config, int *measured);
/* All measurements for `key`, fastest "ok" first; *out is freed with free(). */
mxattn_status mx_cache_list_measurements(mx_cache *cache, const mx_tune_key *key,
                                         mx_measurement **out, int *count);

/* ---- queries ------------------------------------------------------------ */

/* Empty strings and negative numbers mean "any". */
typedef struct {
    char gpu[128];     /* case-insensitive substring of gpu_name */
    char family[32];
    int head_dim;
    char dtype[8];
    int causal;
} mx_tune_filter;

void mx_tune_filter_init(mx_tune_filter *f);
/* Parses "gpu=H200 family=f16 head_dim=128 dtype=bf16 causal=1" (NULL or ""
 * matches all); INVALID_VALUE names an unknown key or a bad value. */
mxattn_status mx_tune_filter_parse(const char *text, mx_tune_filter *f);
/* Matching rows, ordered by gpu, family, head_dim, dtype, causal, seq_bucket;
 * *rows is freed with free() (NULL when *count is 0). */
mxattn_status mx_cache_query(mx_cache *cache, const mx_tune_filter *f, mx_tune_row **rows, int *count);
/* The same rows as a JSON array of objects; *json is freed with free(). */
mxattn_status mx_cache_query_json(mx_cache *cache, const mx_tune_filter *f, char **json);
mxattn_status mx_tune_rows_json(const mx_tune_row *rows, int count, char **json);

/* ---- sharing between machines, and upkeep ------------------------------- */

/* An Ed25519 public key (cache/sign.h reads and writes key files). */
typedef struct { unsigned char bytes[32]; } mx_sign_public;
struct mx_sign_secret; /* a key pair, cache/sign.h */

/* Writes a standalone database file with the tuning results and the
 * measurements (and the kernels when with_kernels).  With `signer` (cache/sign.h, may be NULL) every kernel
 * is signed: the export's kernels table gets two more columns, signer (the
 * public key, 64 hex digits) and signature (128 hex digits, Ed25519 over
 * mx_kernel_signing_message()); a kernel whose blob fails its own hash is
 * not signed and the export fails with CACHE_CORRUPT.  The file is written
 * beside `dest` and renamed into place, so a failed export leaves no half file. */
mxattn_status mx_cache_export(mx_cache *cache, const char *dest, int with_kernels,
                              const struct mx_sign_secret *signer);

/* Decides whether an imported or merged tuning row may be taken: returns 1
 * to take it, 0 to refuse it with a reason in why[why_cap].  The cache's own
 * checks (finite times in range, printable config, key fields in range) run
 * first; this one adds what only the templates know (the config is legal for
 * the key's family and head_dim).  It also sees each "ok" measurement, as a
 * result with the measurement's config and median_ms (tops, default_ms 0). */
typedef int (*mx_tune_row_check)(void *arg, const mx_tune_key *key, const mx_tune_result *r, char *why,
                                 size_t why_cap);

#define MX_IMPORT_MAX_TRUSTED 16
typedef struct {
    int with_kernels;                 /* import only; merge never takes kernels */
    /* Kernels are taken only when each is signed by one of these keys. */
    mx_sign_public trusted[MX_IMPORT_MAX_TRUSTED];
    int n_trusted;
    mx_tune_row_check row_check;      /* NULL: the cache's own checks only */
    void *row_check_arg;
} mx_import_options;

void mx_import_options_init(mx_import_options *o);

/* The public report itself (mxattn.h), so mxattn_db_import hands it on
 * whole: tune_rows_kept counts merge's rows where ours was faster; a kernel
 * is read once verified (hash and signature) and taken once written (merge:
 * read - taken - refused were kept as ours). */
typedef mxattn_db_import_report mx_import_report;

/* Takes the tuning results and measurements of an export (replacing ours
 * for the same key, and for a measurement the same config) and, only when
 * opt->with_kernels, its kernels.  A tuning row or measurement that fails a
 * check is refused (counted, the first reason kept) and the others are taken;
 * a measurement that is not "ok" must have median_ms 0 or a plausible time.
 * Kernels need at least one trusted key, and every kernel must carry a valid
 * signature by one of them over its fields and its blob's SHA-256, and its
 * blob must hash to its recorded SHA-256: otherwise MXATTN_ERROR_UNTRUSTED
 * names the first bad kernel and why (unsigned, untrusted signer, blob not
 * matching its hash, signature not matching: a tampered cubin or one moved
 * under another key).  Anything malformed or untrusted (not a database,
 * foreign schema, oversized blob, bad field, one bad kernel) rejects the
 * whole import: one transaction, rolled back, the target unchanged; so what
 * an import did is one of two states, never a mix.  A file SQLite cannot
 * read as an export (damaged pages, a schema it cannot parse) is
 * INVALID_VALUE, an I/O error or lock on it IO; the CACHE_* statuses are
 * kept for failures of the target database.  opt and report may be NULL. */
mxattn_status mx_cache_import(mx_cache *cache, const char *src, const mx_import_options *opt,
                              mx_import_report *report);
/* Like import of tuning results, but where both have a key the faster wins
 * (after the same checks: a refused row never competes); for a measurement
 * theirs wins only when it is "ok" and ours is not, or is slower.  Kernels
 * are never taken; opt->with_kernels must be 0. */
mxattn_status mx_cache_merge(mx_cache *cache, const char *src, const mx_import_options *opt,
                             mx_import_report *report);
mxattn_status mx_cache_vacuum(mx_cache *cache);

typedef struct {
    int integrity_ok;           /* PRAGMA integrity_check said "ok" */
    char integrity_message[256];/* its first complaint, or "ok" */
    long kernels_checked, kernels_bad;
    char first_bad_kernel[65];  /* key of the first blob whose hash failed */
    mx_cache_counts counts;
} mx_cache_check_report;

/* Integrity check plus the hash of every kernel blob.  Returns OK when the
 * check itself ran; report says whether anything was wrong.  Read-only. */
mxattn_status mx_cache_check(mx_cache *cache, mx_cache_check_report *report);

#endif
