/* Private to cache/: the handle's layout and the helpers its files share. */
#ifndef MX_CACHE_INTERNAL_H
#define MX_CACHE_INTERNAL_H
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include "cache/cache.h"

#define MX_STR2(x) #x
#define MX_STR(x) MX_STR2(x) /* MX_STR(MX_CACHE_APPLICATION_ID) for SQL text */

struct mx_cache {
    sqlite3 *db;
    /* One connection serves every thread of the process (a plan's JIT, the
     * tuner's compile pool, the background tuner): a transaction belongs to the
     * connection, not the thread, so each public call holds this (recursive:
     * some call others) for its whole transaction. */
    pthread_mutex_t lock;
    char path[PATH_MAX];
    char recovery_note[PATH_MAX * 3]; /* "" unless the file was rebuilt */
    unsigned flags;                    /* MX_CACHE_OPEN_* */
    int read_only;                     /* the connection is read-only */
};

/* After a public call failed with *st: if SQLite reported damage
 * (SQLITE_CORRUPT or NOTADB) during it, runs the integrity check and, when
 * that fails, rebuilds the file from what still reads (mx_cache_open's
 * recovery).  Returns 1 when the file was rebuilt, so the caller runs the call
 * once more on the rebuilt file; 0 otherwise (*st and its message stand).
 * Call with the lock held. */
int mx_cache_after_failure(mx_cache *cache, mxattn_status *st);

/* The body of every public call on a handle: returns `call` (a *_locked
 * function of `cache`) run under the lock, and run once more when its failure
 * was damage that mx_cache_after_failure repaired.  A NULL cache goes straight
 * to `call`, whose argument check reports it. */
#define MX_CACHE_RETURN_LOCKED(cache, call)                                       \
    do {                                                                          \
        if (!(cache)) return (call);                                              \
        mx_cache_lock(cache);                                                     \
        mxattn_status mx_locked_st_ = (call);                                     \
        if (mx_locked_st_ && mx_cache_after_failure((cache), &mx_locked_st_))     \
            mx_locked_st_ = (call);                                               \
        mx_cache_unlock(cache);                                                   \
        return mx_locked_st_;                                                     \
    } while (0)

/* The sixteen columns of a tuning key, in mx_tune_key's order, and the
 * matching placeholders and WHERE clause.  Constant text only: values are
 * always bound.  Parameters after a key's start at ?17 (MX_TUNE_KEY_NCOLS + 1).
 * MX_TUNE_KEY_COLUMNS_V2 is the key of schema versions 1 and 2, before
 * q_bucket: the v1 tables' text and the import of old files use it. */
#define MX_TUNE_KEY_COLUMNS_V2                                                      \
    "gpu_name, sm_count, compute_capability, driver_version, nvrtc_version, "      \
    "mxattn_version, template_hash, family, head_dim, dtype, out_dtype, causal, "  \
    "gqa, layout, seq_bucket"
#define MX_TUNE_KEY_COLUMNS MX_TUNE_KEY_COLUMNS_V2 ", q_bucket"
#define MX_TUNE_KEY_PLACEHOLDERS "?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16"
#define MX_TUNE_KEY_MATCH                                                           \
    "gpu_name=?1 AND sm_count=?2 AND compute_capability=?3 AND driver_version=?4 "  \
    "AND nvrtc_version=?5 AND mxattn_version=?6 AND template_hash=?7 AND family=?8 " \
    "AND head_dim=?9 AND dtype=?10 AND out_dtype=?11 AND causal=?12 AND gqa=?13 "   \
    "AND layout=?14 AND seq_bucket=?15 AND q_bucket=?16"
#define MX_TUNE_KEY_NCOLS 16

/* A key read from a file older than v5, in v5's bucketing: what the v5
 * migration does to a table (schema.c says why). */
static inline void mx_tune_key_from_v4(mx_tune_key *k) {
    if (k->seq_bucket == 256 && k->q_bucket < 256) k->seq_bucket = k->q_bucket > 64 ? k->q_bucket : 64;
}

/* The eleven columns of a kernel row, in the order mx_read_kernel_numbers
 * and the readers of a row's text and blob columns (0, 1, 3, 4, 5) expect. */
#define MX_KERNEL_COLUMNS                                                           \
    "key, arch, nvrtc_version, kernel_names, cubin, cubin_sha256, compile_ms, "    \
    "registers, shared_bytes, spill_bytes, created_at"

void mx_cache_lock(mx_cache *cache);
void mx_cache_unlock(mx_cache *cache);

/* Turns a failed SQLite call into a status, with `what` and SQLite's message:
 *   SQLITE_CORRUPT, SQLITE_NOTADB                 -> CACHE_CORRUPT
 *   SQLITE_READONLY, or an I/O error with EROFS    -> CACHE_READ_ONLY
 *   SQLITE_FULL, or an I/O error with ENOSPC/EDQUOT -> CACHE_FULL
 *   SQLITE_BUSY, SQLITE_LOCKED (after the wait)    -> CACHE_BUSY
 *   anything else                                  -> CACHE */
mxattn_status mx_db_fail(sqlite3 *db, int rc, const char *what);

/* The bound on waiting for a write lock, in ms (MXATTN_CACHE_BUSY_MS). */
int mx_db_busy_ms(void);
/* 1 if `s` is one of cache.h's MX_MEASURE_* statuses. */
int mx_measure_status_known(const char *s);

mxattn_status mx_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **stmt);
/* Runs constant SQL with no parameters and no result rows wanted. */
mxattn_status mx_db_exec(sqlite3 *db, const char *sql);

/* BEGIN IMMEDIATE, retried while another process holds the write lock. */
mxattn_status mx_db_begin_write(sqlite3 *db);
mxattn_status mx_db_commit(sqlite3 *db);
void mx_db_rollback(sqlite3 *db); /* best effort, on an error path */

/* Creates the schema on an empty database or migrates an older one to the
 * current version.  Must run inside a write transaction. */
mxattn_status mx_schema_migrate(sqlite3 *db);
/* Checks that the database holds our tables (and nothing else) at a version
 * this build understands: CACHE_CORRUPT with the reason otherwise.  *version
 * gets user_version (0: an empty, fresh file). */
mxattn_status mx_schema_verify(sqlite3 *db, int *version);

/* Binds key fields to ?1..?15. */
int mx_bind_tune_key(sqlite3_stmt *stmt, const mx_tune_key *key);
/* Reads a key from result columns first..first+14; INVALID_VALUE if a text
 * does not fit its field or holds a NUL (possible only in a foreign file). */
mxattn_status mx_read_tune_key(sqlite3_stmt *stmt, int first, mx_tune_key *key);
/* Copies a text column into dst[cap]; 0 if it does not fit or holds a NUL. */
int mx_column_text_copy(sqlite3_stmt *stmt, int col, char *dst, size_t cap);
/* The numeric fields of a tuning result selected as "config, median_ms, tops,
 * default_ms, tuned_at" from column c (the config's). */
void mx_read_result_numbers(sqlite3_stmt *stmt, int c, mx_tune_result *r);
/* The numeric fields of a kernel row selected as MX_KERNEL_COLUMNS. */
void mx_read_kernel_numbers(sqlite3_stmt *stmt, mx_kernel_record *k);
/* INVALID_VALUE unless every text field is NUL-terminated and non-empty where required. */
mxattn_status mx_check_tune_key(const mx_tune_key *key);

/* The upsert shared by put and import: "replace" overwrites; otherwise the
 * existing row is kept unless the new one is faster.  *changed = 1 if written. */
mxattn_status mx_tune_upsert(sqlite3 *db, const mx_tune_key *key, const mx_tune_result *r,
                             int replace, int *changed);
/* Inserts a kernel unless its key exists; no transaction of its own. */
mxattn_status mx_kernel_insert(sqlite3 *db, const mx_kernel_record *rec, int *changed);

int mx_is_hex_sha256(const char *s);
int64_t mx_unix_now(void);
#endif
