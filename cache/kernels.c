/* Compiled kernels: content-addressed cubins.  A blob's own hash is stored
 * beside it and checked on every read, because a cubin is code the GPU will
 * run: a flipped bit must cost a recompile, never a wrong answer or a crash. */
#include "cache/cache_internal.h"
#include "util/err.h"
#include "util/sha256.h"
#include <stdlib.h>
#include <string.h>

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
        "INSERT OR IGNORE INTO kernels(" MX_KERNEL_COLUMNS ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)", &stmt);
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

static mxattn_status put_kernel_locked(mx_cache *cache, const mx_kernel_record *rec) {
    if (!cache || !rec) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_put_kernel: NULL argument");
    mxattn_status st = check_record(rec);
    if (st) return st;
    mx_kernel_record hashed = *rec;
    mx_sha256_hex(rec->cubin, rec->cubin_size, hashed.cubin_sha256);
    if ((st = mx_db_begin_write(cache->db))) return st;
    st = mx_kernel_insert(cache->db, &hashed, NULL);
    if (st) { mx_db_rollback(cache->db); return st; }
    return mx_db_commit(cache->db);
}

mxattn_status mx_cache_put_kernel(mx_cache *cache, const mx_kernel_record *rec) {
    if (!cache) return put_kernel_locked(cache, rec);
    mx_cache_lock(cache);
    mxattn_status st = put_kernel_locked(cache, rec);
    mx_cache_unlock(cache);
    return st;
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
    return verify_blob(cache->db, out);
}

mxattn_status mx_cache_get_kernel(mx_cache *cache, const char *key, const char *arch, mx_kernel_record *out) {
    if (!cache) return get_kernel_locked(cache, key, arch, out);
    mx_cache_lock(cache);
    mxattn_status st = get_kernel_locked(cache, key, arch, out);
    mx_cache_unlock(cache);
    return st;
}

void mx_kernel_record_release(mx_kernel_record *rec) {
    if (!rec) return;
    free(rec->cubin);
    rec->cubin = NULL;
    rec->cubin_size = 0;
}
