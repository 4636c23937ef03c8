/* Compiled kernels: content-addressed cubins.  A blob's own hash is stored
 * beside it and checked on every read, because a cubin is code the GPU will
 * run: a flipped bit must cost a recompile, never a wrong answer or a crash.
 * The cubins together are kept under a size limit by evicting the least
 * recently used; a kernel is only a cache of NVRTC's work, while tuning
 * results cost GPU time to remake and are never evicted. */
#include "cache/cache_internal.h"
#include "util/err.h"
#include "util/sha256.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A hit marks its kernel used at most once an hour: enough for eviction
 * order, and a read stays a read (no write lock per launch). */
#define TOUCH_INTERVAL_S 3600

static int fits(const char *s, size_t cap) { return memchr(s, 0, cap) != NULL; }

static mxattn_status check_record(const mx_kernel_record *rec) {
    if (!fits(rec->key, sizeof rec->key) || !mx_is_hex_sha256(rec->key))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cache: kernel key must be 64 lowercase hex digits");
    if (!fits(rec->arch, sizeof rec->arch) || strncmp(rec->arch, "sm_", 3) != 0)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cache: kernel arch must look like 'sm_90a'");
    if (!fits(rec->kernel_names, sizeof rec->kernel_names) || !rec->kernel_names[0])
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cache: kernel names are missing or too long");
    if (!rec->cubin || rec->cubin_size == 0 || rec->cubin_size > MX_CACHE_MAX_CUBIN_BYTES)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cache: cubin of %zu bytes (must be 1..%u)",
                       rec->cubin_size, MX_CACHE_MAX_CUBIN_BYTES);
    return MXATTN_OK;
}

/* Inserts `rec` with the hash it carries (import has verified it; put
 * computed it).  A key already present stays: same key, same binary. */
mxattn_status mx_kernel_insert(sqlite3 *db, const mx_kernel_record *rec, int *changed) {
    sqlite3_stmt *stmt;
    mxattn_status st = mx_db_prepare(db,
        "INSERT OR IGNORE INTO kernels(" MX_KERNEL_COLUMNS ", last_used) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?11)",
        &stmt);
    if (st) return st;
    sqlite3_bind_text(stmt, 1, rec->key, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 2, rec->arch, -1, SQLITE_STATIC);
    sqlite3_bind_int(stmt, 3, rec->nvrtc_version);
    sqlite3_bind_text(stmt, 4, rec->kernel_names, -1, SQLITE_STATIC);
    sqlite3_bind_blob64(stmt, 5, rec->cubin, rec->cubin_size, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 6, rec->cubin_sha256, -1, SQLITE_STATIC);
    sqlite3_bind_double(stmt, 7, rec->compile_ms);
    sqlite3_bind_int(stmt, 8, rec->registers);
    sqlite3_bind_int(stmt, 9, rec->shared_bytes);
    sqlite3_bind_int(stmt, 10, rec->spill_bytes);
    sqlite3_bind_int64(stmt, 11, rec->created_at ? rec->created_at : mx_unix_now());
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) st = mx_db_fail(db, rc, "cache: storing a kernel");
    else if (changed) *changed = sqlite3_changes(db) > 0;
    sqlite3_finalize(stmt);
    return st;
}

/* The limit on cubin bytes: MXATTN_CACHE_MAX_MB, else MX_CACHE_DEFAULT_MAX_MB. */
static mxattn_status max_bytes(sqlite3_int64 *out) {
    const char *text = getenv("MXATTN_CACHE_MAX_MB");
    long long mb = MX_CACHE_DEFAULT_MAX_MB;
    if (text && *text) {
        char *end;
        errno = 0;
        mb = strtoll(text, &end, 10);
        if (errno || *end || mb <= 0 || mb > (1ll << 30))
            return mx_fail(MXATTN_ERROR_INVALID_VALUE,
                           "MXATTN_CACHE_MAX_MB='%.40s' must be a whole number of MiB from 1 to 2^30", text);
    }
    *out = (sqlite3_int64)mb << 20;
    return MXATTN_OK;
}

/* Deletes the least recently used kernels other than `keep` until the
 * cubins fit in `limit` bytes.  length() of a blob reads no overflow pages. */
static mxattn_status evict(sqlite3 *db, sqlite3_int64 limit, const char *keep) {
    sqlite3_stmt *stmt;
    mxattn_status st = mx_db_prepare(db, "SELECT coalesce(sum(length(cubin)), 0) FROM kernels", &stmt);
    if (st) return st;
    int rc = sqlite3_step(stmt);
    sqlite3_int64 total = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : 0;
    if (rc != SQLITE_ROW) st = mx_db_fail(db, rc, "cache: measuring the kernel cache");
    sqlite3_finalize(stmt);
    if (st || total <= limit) return st;
    sqlite3_stmt *del;
    if ((st = mx_db_prepare(db, "DELETE FROM kernels WHERE rowid=(SELECT rowid FROM kernels WHERE key<>?1"
                                " ORDER BY last_used, created_at, rowid LIMIT 1) RETURNING length(cubin)", &del)))
        return st;
    sqlite3_bind_text(del, 1, keep, -1, SQLITE_STATIC);
    while (total > limit) {
        rc = sqlite3_step(del);
        if (rc == SQLITE_ROW) total -= sqlite3_column_int64(del, 0);
        if (rc == SQLITE_ROW) rc = sqlite3_step(del);
        if (rc != SQLITE_DONE) { st = mx_db_fail(db, rc, "cache: evicting a kernel"); break; }
        if (sqlite3_changes(db) == 0) break; /* only `keep` is left */
        sqlite3_reset(del);
    }
    sqlite3_finalize(del);
    return st;
}

static mxattn_status put_kernel_locked(mx_cache *cache, const mx_kernel_record *rec) {
    if (!cache || !rec) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_put_kernel: NULL argument");
    mxattn_status st = check_record(rec);
    sqlite3_int64 limit = 0;
    if (!st) st = max_bytes(&limit);
    if (st) return st;
    if ((sqlite3_int64)rec->cubin_size > limit)
        return mx_fail(MXATTN_ERROR_CACHE_FULL, "cache: a cubin of %zu bytes is larger than the kernel cache's "
                       "limit of %lld MiB (MXATTN_CACHE_MAX_MB): not stored", rec->cubin_size,
                       (long long)(limit >> 20));
    mx_kernel_record hashed = *rec;
    mx_sha256_hex(rec->cubin, rec->cubin_size, hashed.cubin_sha256);
    if ((st = mx_db_begin_write(cache->db))) return st;
    int changed = 0;
    st = mx_kernel_insert(cache->db, &hashed, &changed);
    if (!st && changed) st = evict(cache->db, limit, rec->key);
    if (st) { mx_db_rollback(cache->db); return st; }
    return mx_db_commit(cache->db);
}

mxattn_status mx_cache_put_kernel(mx_cache *cache, const mx_kernel_record *rec) {
    MX_CACHE_RETURN_LOCKED(cache, put_kernel_locked(cache, rec));
}

/* Deletes the row only if it still holds the bad blob another process may
 * have replaced meanwhile. */
static void delete_bad_kernel(sqlite3 *db, const char *key, const char *stored_hash) {
    sqlite3_stmt *stmt;
    if (mx_db_begin_write(db)) return;
    if (sqlite3_prepare_v2(db, "DELETE FROM kernels WHERE key=?1 AND cubin_sha256=?2", -1, &stmt, NULL)) {
        mx_db_rollback(db);
        return;
    }
    sqlite3_bind_text(stmt, 1, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(stmt, 2, stored_hash, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    if (rc == SQLITE_DONE) mx_db_commit(db);
    else mx_db_rollback(db);
}

void mx_read_kernel_numbers(sqlite3_stmt *stmt, mx_kernel_record *k) {
    k->nvrtc_version = sqlite3_column_int(stmt, 2);
    k->compile_ms = sqlite3_column_double(stmt, 6);
    k->registers = sqlite3_column_int(stmt, 7);
    k->shared_bytes = sqlite3_column_int(stmt, 8);
    k->spill_bytes = sqlite3_column_int(stmt, 9);
    k->created_at = sqlite3_column_int64(stmt, 10);
}

static mxattn_status copy_row(sqlite3_stmt *stmt, mx_kernel_record *out) {
    const void *blob = sqlite3_column_blob(stmt, 4);
    int size = sqlite3_column_bytes(stmt, 4);
    if (!mx_column_text_copy(stmt, 0, out->key, sizeof out->key) ||
        !mx_column_text_copy(stmt, 1, out->arch, sizeof out->arch) ||
        !mx_column_text_copy(stmt, 3, out->kernel_names, sizeof out->kernel_names) ||
        !mx_column_text_copy(stmt, 5, out->cubin_sha256, sizeof out->cubin_sha256) || size <= 0)
        return mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "cache: kernel row has a malformed field");
    mx_read_kernel_numbers(stmt, out);
    if (!(out->cubin = malloc((size_t)size))) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "cache: out of memory");
    memcpy(out->cubin, blob, (size_t)size);
    out->cubin_size = (size_t)size;
    return MXATTN_OK;
}

static mxattn_status verify_blob(sqlite3 *db, mx_kernel_record *rec) {
    char actual[65];
    mx_sha256_hex(rec->cubin, rec->cubin_size, actual);
    if (!strcmp(actual, rec->cubin_sha256)) return MXATTN_OK;
    char key[65], stored[65];
    memcpy(key, rec->key, sizeof key);
    memcpy(stored, rec->cubin_sha256, sizeof stored);
    mx_kernel_record_release(rec);
    delete_bad_kernel(db, key, stored);
    return mx_fail(MXATTN_ERROR_CACHE_CORRUPT,
                   "cache: kernel %.16s... failed its hash check (stored %.16s..., blob %.16s...); removed it",
                   key, stored, actual);
}

/* Marks a hit for the eviction order.  Best effort, and never waiting: a
 * writer holding the lock just means this hit is not recorded. */
static void touch(mx_cache *cache, const char *key) {
    if (cache->read_only) return;
    sqlite3_int64 now = mx_unix_now(), last = now;
    sqlite3_stmt *stmt;
    if (sqlite3_prepare_v2(cache->db, "SELECT last_used FROM kernels WHERE key=?1", -1, &stmt, NULL) == SQLITE_OK) {
        sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(stmt) == SQLITE_ROW) last = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    if (now - last < TOUCH_INTERVAL_S && last <= now) return;
    if (sqlite3_prepare_v2(cache->db, "UPDATE kernels SET last_used=?2 WHERE key=?1", -1, &stmt, NULL) != SQLITE_OK) {
        sqlite3_finalize(stmt);
        return;
    }
    sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 2, now);
    sqlite3_busy_timeout(cache->db, 0);
    sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    sqlite3_busy_timeout(cache->db, mx_db_busy_ms());
}

static mxattn_status get_kernel_locked(mx_cache *cache, const char *key, const char *arch, mx_kernel_record *out) {
    if (!cache || !key || !arch || !out)
        return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_get_kernel: NULL argument");
    memset(out, 0, sizeof *out);
    sqlite3_stmt *stmt;
    mxattn_status st = mx_db_prepare(cache->db,
        "SELECT " MX_KERNEL_COLUMNS " FROM kernels WHERE key=?1", &stmt);
    if (st) return st;
    sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) st = copy_row(stmt, out);
    else if (rc == SQLITE_DONE) st = mx_fail(MXATTN_ERROR_NOT_FOUND, "cache: no kernel %.16s...", key);
    else st = mx_db_fail(cache->db, rc, "cache: reading a kernel");
    sqlite3_finalize(stmt);
    if (st) return st;
    /* The key already hashes the arch, so a mismatch means a caller bug or a
     * tampered row; either way a cubin must never reach another arch. */
    if (strcmp(out->arch, arch) != 0) {
        st = mx_fail(MXATTN_ERROR_NOT_FOUND, "cache: kernel %.16s... is for %s, not %s", key, out->arch, arch);
        mx_kernel_record_release(out);
        return st;
    }
    st = verify_blob(cache->db, out);
    if (!st) touch(cache, key);
    return st;
}

mxattn_status mx_cache_get_kernel(mx_cache *cache, const char *key, const char *arch, mx_kernel_record *out) {
    MX_CACHE_RETURN_LOCKED(cache, get_kernel_locked(cache, key, arch, out));
}

void mx_kernel_record_release(mx_kernel_record *rec) {
    if (!rec) return;
    free(rec->cubin);
    rec->cubin = NULL;
    rec->cubin_size = 0;
}
