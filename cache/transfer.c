/* Sharing tuning results between machines of one SKU, and upkeep.
 *
 * An export is itself a standalone SQLite file with our schema, not JSON:
 * cubins travel as blobs without base64, the reader on the other side is the
 * same schema check and integrity check that guard our own file, and SQLite
 * gives an atomic, self-describing container for free.
 *
 * An import treats the file as hostile: it is opened read-only with triggers,
 * views and untrusted schema functions disabled, every row is validated in C
 * and written through bound parameters, kernels come in only on request and
 * only after their hashes match, and everything happens in one transaction of
 * the target that any problem rolls back. */
#include "cache/cache_internal.h"
#include "util/err.h"
#include "util/sha256.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- export -------------------------------------------------------------- */

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* A new, empty database with our schema at `path`. */
static mxattn_status create_empty_export(const char *path) {
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    mxattn_status st = MXATTN_OK;
    if (rc != SQLITE_OK) {
        int sys = db ? sqlite3_system_errno(db) : 0;
        st = mx_fail(MXATTN_ERROR_IO, "cannot write export '%s': %s", path,
                     sys ? strerror(sys) : sqlite3_errstr(rc));
    } else {
        st = mx_db_exec(db, "BEGIN");
        if (!st) st = mx_schema_migrate(db);
        if (!st) st = mx_db_commit(db);
        else mx_db_rollback(db);
    }
    sqlite3_close(db);
    return st;
}

static mxattn_status copy_into_export(sqlite3 *db, int with_kernels) {
    static const char TUNE[] =
        "INSERT INTO export.tune_results(" MX_TUNE_KEY_COLUMNS ", config, median_ms, tops, default_ms, tuned_at)"
        " SELECT " MX_TUNE_KEY_COLUMNS ", config, median_ms, tops, default_ms, tuned_at FROM main.tune_results";
    static const char KERNELS[] =
        "INSERT INTO export.kernels(" MX_KERNEL_COLUMNS ") SELECT " MX_KERNEL_COLUMNS " FROM main.kernels";
    mxattn_status st = mx_db_exec(db, "BEGIN");
    if (!st) st = mx_db_exec(db, TUNE);
    if (!st && with_kernels) st = mx_db_exec(db, KERNELS);
    if (!st) return mx_db_commit(db);
    mx_db_rollback(db);
    return st;
}

static mxattn_status attach_and_copy(mx_cache *cache, const char *tmp, int with_kernels) {
    sqlite3_stmt *attach;
    mxattn_status st = mx_db_prepare(cache->db, "ATTACH DATABASE ?1 AS export", &attach);
    if (st) return st;
    sqlite3_bind_text(attach, 1, tmp, -1, SQLITE_STATIC);
    int rc = sqlite3_step(attach);
    sqlite3_finalize(attach);
    if (rc != SQLITE_DONE) return mx_db_fail(cache->db, rc, "attaching the export");
    st = copy_into_export(cache->db, with_kernels);
    sqlite3_exec(cache->db, "DETACH DATABASE export", NULL, NULL, NULL);
    return st;
}

mxattn_status mx_cache_export(mx_cache *cache, const char *dest, int with_kernels) {
    if (!cache || !dest || !*dest) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_export: no destination");
    if (same_file(dest, cache->path))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cannot export the database '%s' onto itself", dest);
    char tmp[PATH_MAX + 32], journal[PATH_MAX + 48];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", dest, (long)getpid()) >= (int)sizeof tmp)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "export path '%s' is too long", dest);
    snprintf(journal, sizeof journal, "%s-journal", tmp);
    unlink(tmp);
    mxattn_status st = create_empty_export(tmp);
    if (!st) st = attach_and_copy(cache, tmp, with_kernels);
    if (!st && rename(tmp, dest) != 0)
        st = mx_fail(MXATTN_ERROR_IO, "cannot write export '%s': %s", dest, strerror(errno));
    if (st) {
        unlink(tmp);
        unlink(journal);
        return mx_fail_context(st, "export to '%s'", dest);
    }
    return MXATTN_OK;
}

/* ---- import and merge ---------------------------------------------------- */

/* The export is someone else's file: switch off what could run its code. */
static void harden_reader(sqlite3 *db) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);
    /* A row larger than a kernel can legally be fails to load instead of
     * allocating whatever the file claims. */
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, (int)(MX_CACHE_MAX_CUBIN_BYTES + (1u << 20)));
}

static mxattn_status source_integrity(sqlite3 *db) {
    sqlite3_stmt *stmt;
    mxattn_status st = mx_db_prepare(db, "PRAGMA quick_check(1)", &stmt);
    if (st) return st;
    int rc = sqlite3_step(stmt);
    const char *verdict = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(stmt, 0) : NULL;
    if (rc != SQLITE_ROW) st = mx_db_fail(db, rc, "not a readable database");
    else if (!verdict || strcmp(verdict, "ok")) st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "integrity check failed");
    sqlite3_finalize(stmt);
    return st;
}

static mxattn_status open_source(const char *src, sqlite3 **out, int *version) {
    *out = NULL;
    if (access(src, R_OK) != 0) return mx_fail(MXATTN_ERROR_IO, "cannot read '%s': %s", src, strerror(errno));
    struct stat sb;
    if (stat(src, &sb) != 0 || !S_ISREG(sb.st_mode))
        return mx_fail(MXATTN_ERROR_IO, "'%s' is not a regular file", src);
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(src, &db, SQLITE_OPEN_READONLY, NULL);
    mxattn_status st = rc == SQLITE_OK ? MXATTN_OK : mx_db_fail(db, rc, "opening");
    if (!st) {
        harden_reader(db);
        sqlite3_busy_timeout(db, 10000);
        st = source_integrity(db);
    }
    if (!st) st = mx_db_exec(db, "BEGIN"); /* one snapshot for the checks and the copy */
    if (!st) st = mx_schema_verify(db, version);
    if (!st && *version == 0) st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "it holds no mxattn schema");
    if (st) { sqlite3_close(db); return st; }
    *out = db;
    return MXATTN_OK;
}

static mxattn_status read_source_result(sqlite3_stmt *s, int c, mx_tune_result *r) {
    memset(r, 0, sizeof *r);
    if (!mx_column_text_copy(s, c, r->config, sizeof r->config) || !r->config[0])
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "a tuning result's config is missing or too long");
    r->median_ms = sqlite3_column_double(s, c + 1);
    r->tops = sqlite3_column_double(s, c + 2);
    r->default_ms = sqlite3_column_double(s, c + 3);
    r->tuned_at = sqlite3_column_int64(s, c + 4);
    if (!isfinite(r->median_ms) || r->median_ms <= 0 || !isfinite(r->tops) || !isfinite(r->default_ms))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "a tuning result has a non-finite or non-positive time");
    return MXATTN_OK;
}

static mxattn_status copy_tune_rows(sqlite3 *src, int version, sqlite3 *dst, int replace, mx_import_report *rep) {
    sqlite3_stmt *stmt;
    /* v1 files have no tuned_at (0 means unknown), v1 and v2 no q_bucket (the
     * v3 migration's reading: seq_bucket).  The choice is between constant
     * statements, never text made from values. */
    static const char V3[] =
        "SELECT " MX_TUNE_KEY_COLUMNS ", config, median_ms, tops, default_ms, tuned_at FROM tune_results";
    static const char V2[] =
        "SELECT " MX_TUNE_KEY_COLUMNS_V2 ", seq_bucket, config, median_ms, tops, default_ms, tuned_at FROM tune_results";
    static const char V1[] =
        "SELECT " MX_TUNE_KEY_COLUMNS_V2 ", seq_bucket, config, median_ms, tops, default_ms, 0 FROM tune_results";
    mxattn_status st = mx_db_prepare(src, version >= 3 ? V3 : version == 2 ? V2 : V1, &stmt);
    if (st) return st;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        mx_tune_key key;
        mx_tune_result r;
        int changed = 0;
        rep->tune_rows_read++;
        if ((st = mx_read_tune_key(stmt, 0, &key)) || (st = read_source_result(stmt, MX_TUNE_KEY_NCOLS, &r)))
            break;
        if ((st = mx_tune_upsert(dst, &key, &r, replace, &changed))) break;
        if (changed) rep->tune_rows_taken++;
        else rep->tune_rows_kept++;
    }
    if (!st && rc != SQLITE_DONE) st = mx_db_fail(src, rc, "reading tuning results");
    sqlite3_finalize(stmt);
    return st;
}

static mxattn_status reject_oversized_kernels(sqlite3 *src) {
    sqlite3_stmt *stmt;
    mxattn_status st = mx_db_prepare(src, "SELECT key, length(cubin) FROM kernels WHERE length(cubin) > ?1"
                                          " OR typeof(cubin) <> 'blob' LIMIT 1", &stmt);
    if (st) return st;
    sqlite3_bind_int64(stmt, 1, MX_CACHE_MAX_CUBIN_BYTES);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "kernel '%.64s' has a %lld-byte cubin (limit %u, must be a blob)",
                     (const char *)sqlite3_column_text(stmt, 0), (long long)sqlite3_column_int64(stmt, 1),
                     MX_CACHE_MAX_CUBIN_BYTES);
    else if (rc != SQLITE_DONE) st = mx_db_fail(src, rc, "reading kernels");
    sqlite3_finalize(stmt);
    return st;
}

/* Reads one kernel row and proves its blob matches its stored hash; the
 * cubin pointer stays valid until the next step. */
static mxattn_status read_verified_kernel(sqlite3_stmt *s, mx_kernel_record *k) {
    memset(k, 0, sizeof *k);
    if (!mx_column_text_copy(s, 0, k->key, sizeof k->key) || !mx_is_hex_sha256(k->key) ||
        !mx_column_text_copy(s, 1, k->arch, sizeof k->arch) || strncmp(k->arch, "sm_", 3) ||
        !mx_column_text_copy(s, 3, k->kernel_names, sizeof k->kernel_names) || !k->kernel_names[0] ||
        !mx_column_text_copy(s, 5, k->cubin_sha256, sizeof k->cubin_sha256) || !mx_is_hex_sha256(k->cubin_sha256))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "a kernel row has a malformed key, arch, name or hash");
    k->cubin = (void *)sqlite3_column_blob(s, 4);
    k->cubin_size = (size_t)sqlite3_column_bytes(s, 4);
    if (!k->cubin || k->cubin_size == 0 || k->cubin_size > MX_CACHE_MAX_CUBIN_BYTES)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "kernel %.16s... has an empty or oversized cubin", k->key);
    char actual[65];
    mx_sha256_hex(k->cubin, k->cubin_size, actual);
    if (strcmp(actual, k->cubin_sha256))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "kernel %.16s...: cubin hash %.16s... does not match the stored %.16s...",
                       k->key, actual, k->cubin_sha256);
    mx_read_kernel_numbers(s, k);
    return MXATTN_OK;
}

static mxattn_status copy_kernels(sqlite3 *src, sqlite3 *dst, mx_import_report *rep) {
    mxattn_status st = reject_oversized_kernels(src);
    sqlite3_stmt *stmt;
    if (st || (st = mx_db_prepare(src,
            "SELECT " MX_KERNEL_COLUMNS " FROM kernels", &stmt)))
        return st;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        mx_kernel_record k;
        int changed = 0;
        rep->kernels_read++;
        if ((st = read_verified_kernel(stmt, &k)) || (st = mx_kernel_insert(dst, &k, &changed))) break;
        rep->kernels_taken += changed;
    }
    if (!st && rc != SQLITE_DONE) st = mx_db_fail(src, rc, "reading kernels");
    sqlite3_finalize(stmt);
    return st;
}

static mxattn_status transfer(mx_cache *cache, const char *src_path, int with_kernels, int replace,
                              mx_import_report *report) {
    mx_import_report scratch;
    mx_import_report *rep = report ? report : &scratch;
    memset(rep, 0, sizeof *rep);
    if (!cache || !src_path) return mx_fail(MXATTN_ERROR_NULL_POINTER, "import: NULL argument");
    sqlite3 *src;
    int version = 0;
    mxattn_status st = open_source(src_path, &src, &version);
    if (st) goto rejected;
    if (!(st = mx_db_begin_write(cache->db))) {
        st = copy_tune_rows(src, version, cache->db, replace, rep);
        if (!st && with_kernels) st = copy_kernels(src, cache->db, rep);
        if (!st) st = mx_db_commit(cache->db);
        else mx_db_rollback(cache->db);
    }
    sqlite3_close(src);
    if (!st) return MXATTN_OK;
rejected:
    /* A damaged export is bad input, not a damaged cache: keep CACHE_CORRUPT
     * meaning "our own file". */
    if (st == MXATTN_ERROR_CACHE_CORRUPT) st = MXATTN_ERROR_INVALID_VALUE;
    memset(rep, 0, sizeof *rep);
    return mx_fail_context(st, "import of '%s' rejected, database unchanged", src_path);
}

mxattn_status mx_cache_import(mx_cache *cache, const char *src, int with_kernels, mx_import_report *report) {
    return transfer(cache, src, with_kernels, 1, report);
}

mxattn_status mx_cache_merge(mx_cache *cache, const char *src, mx_import_report *report) {
    return transfer(cache, src, 0, 0, report);
}

/* ---- upkeep -------------------------------------------------------------- */

mxattn_status mx_cache_vacuum(mx_cache *cache) {
    if (!cache) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_vacuum: cache is NULL");
    mxattn_status st = mx_db_exec(cache->db, "VACUUM");
    /* Fold the WAL back into the file so the size on disk shrinks now. */
    if (!st) st = mx_db_exec(cache->db, "PRAGMA wal_checkpoint(TRUNCATE)");
    return st ? mx_fail_context(st, "vacuum of '%s'", cache->path) : MXATTN_OK;
}

static void integrity_check(sqlite3 *db, mx_cache_check_report *rep) {
    sqlite3_stmt *stmt;
    snprintf(rep->integrity_message, sizeof rep->integrity_message, "integrity check could not run");
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check(1)", -1, &stmt, NULL) != SQLITE_OK) return;
    int rc = sqlite3_step(stmt);
    const char *verdict = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(stmt, 0) : sqlite3_errmsg(db);
    snprintf(rep->integrity_message, sizeof rep->integrity_message, "%s", verdict ? verdict : "?");
    rep->integrity_ok = rc == SQLITE_ROW && verdict && !strcmp(verdict, "ok");
    sqlite3_finalize(stmt);
}

static mxattn_status verify_all_kernels(sqlite3 *db, mx_cache_check_report *rep) {
    sqlite3_stmt *stmt;
    mxattn_status st = mx_db_prepare(db, "SELECT key, cubin, cubin_sha256 FROM kernels", &stmt);
    if (st) return st;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        char actual[65];
        const char *stored = (const char *)sqlite3_column_text(stmt, 2);
        const void *blob = sqlite3_column_blob(stmt, 1);
        mx_sha256_hex(blob ? blob : "", (size_t)sqlite3_column_bytes(stmt, 1), actual);
        rep->kernels_checked++;
        if (stored && !strcmp(actual, stored)) continue;
        if (!rep->kernels_bad++) {
            const char *key = (const char *)sqlite3_column_text(stmt, 0);
            snprintf(rep->first_bad_kernel, sizeof rep->first_bad_kernel, "%s", key ? key : "?");
        }
    }
    if (rc != SQLITE_DONE) st = mx_db_fail(db, rc, "reading kernels");
    sqlite3_finalize(stmt);
    return st;
}

mxattn_status mx_cache_check(mx_cache *cache, mx_cache_check_report *rep) {
    if (!cache || !rep) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_check: NULL argument");
    memset(rep, 0, sizeof *rep);
    integrity_check(cache->db, rep);
    mxattn_status st = mx_db_exec(cache->db, "BEGIN"); /* one snapshot for hashes and counts */
    if (!st) st = verify_all_kernels(cache->db, rep);
    if (!st) st = mx_cache_count(cache, &rep->counts);
    mx_db_rollback(cache->db);
    return st;
}
