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
 * only when each is signed by a key the user trusts and its blob matches the
 * hash that was signed, and everything happens in one transaction of the
 * target that any problem rolls back.  Tuning rows and measurements whose
 * values cannot be right (a time of 1e-300 ms, unprintable config text) are
 * refused one by one and counted: they are data, not code, and the others
 * stay good.  A file that cannot be read as an export is the file's fault:
 * INVALID_VALUE (or IO), never one of the CACHE_* statuses, which speak of
 * our own database. */
#include "cache/cache_internal.h"
#include "cache/sign.h"
#include "util/err.h"
#include "util/sha256.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The characters a field of a signed message may hold: none can be a
 * newline, so the message's lines cannot be shifted into one another. */
static int plain_text(const char *s, int spaces) {
    if (!*s) return 0;
    for (; *s; s++) {
        char c = *s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
              (spaces && c == ' ')))
            return 0;
    }
    return 1;
}

/* Reads a kernel row's fields (selected as MX_KERNEL_COLUMNS); the cubin
 * pointer stays valid until the next step. */
static mxattn_status read_kernel_row(sqlite3_stmt *s, mx_kernel_record *k) {
    memset(k, 0, sizeof *k);
    if (!mx_column_text_copy(s, 0, k->key, sizeof k->key) || !mx_is_hex_sha256(k->key) ||
        !mx_column_text_copy(s, 1, k->arch, sizeof k->arch) || strncmp(k->arch, "sm_", 3) || !plain_text(k->arch, 0) ||
        !mx_column_text_copy(s, 3, k->kernel_names, sizeof k->kernel_names) || !plain_text(k->kernel_names, 1) ||
        !mx_column_text_copy(s, 5, k->cubin_sha256, sizeof k->cubin_sha256) || !mx_is_hex_sha256(k->cubin_sha256))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "a kernel row has a malformed key, arch, name or hash");
    k->cubin = (void *)sqlite3_column_blob(s, 4);
    k->cubin_size = (size_t)sqlite3_column_bytes(s, 4);
    if (!k->cubin || k->cubin_size == 0 || k->cubin_size > MX_CACHE_MAX_CUBIN_BYTES)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "kernel %.16s... has an empty or oversized cubin", k->key);
    mx_read_kernel_numbers(s, k);
    return MXATTN_OK;
}

/* Signs one exported kernel; our own blob must still match its hash, since
 * a signature vouches for it. */
static mxattn_status sign_row(sqlite3 *db, sqlite3_int64 rowid, const mx_sign_secret *signer) {
    sqlite3_stmt *sel, *upd = NULL;
    mxattn_status st = mx_db_prepare(db, "SELECT " MX_KERNEL_COLUMNS " FROM export.kernels WHERE rowid=?1", &sel);
    if (st) return st;
    sqlite3_bind_int64(sel, 1, rowid);
    int rc = sqlite3_step(sel);
    mx_kernel_record k;
    char actual[65], signer_hex[65], sig_hex[2 * MX_SIGN_BYTES + 1];
    unsigned char sig[MX_SIGN_BYTES];
    if (rc != SQLITE_ROW) st = mx_db_fail(db, rc, "reading a kernel to sign");
    if (!st) st = read_kernel_row(sel, &k);
    if (!st) {
        mx_sha256_hex(k.cubin, k.cubin_size, actual);
        if (strcmp(actual, k.cubin_sha256))
            st = mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "kernel %.16s... fails its own hash check: not signed "
                         "(mxattn db check finds such kernels; they are removed when next read)", k.key);
    }
    if (!st) st = mx_sign_kernel(signer, &k, actual, sig);
    sqlite3_finalize(sel);
    if (!st) st = mx_db_prepare(db, "UPDATE export.kernels SET signer=?1, signature=?2 WHERE rowid=?3", &upd);
    if (!st) {
        mx_sign_public_hex(&signer->pk, signer_hex);
        mx_hex_encode(sig, sizeof sig, sig_hex);
        sqlite3_bind_text(upd, 1, signer_hex, -1, SQLITE_STATIC);
        sqlite3_bind_text(upd, 2, sig_hex, -1, SQLITE_STATIC);
        sqlite3_bind_int64(upd, 3, rowid);
        rc = sqlite3_step(upd);
        if (rc != SQLITE_DONE) st = mx_db_fail(db, rc, "storing a signature");
    }
    sqlite3_finalize(upd);
    return st;
}

/* The signature travels in two columns added to the export's kernels table
 * rather than in a table of its own: the schema check every reader runs
 * (mx_schema_verify) refuses tables that are not ours but names only the
 * columns it needs, so an older mxattn still reads a signed export's tuning
 * rows.  The rowids are read first, so that no row is updated under a
 * pending scan of its table. */
static mxattn_status sign_exported_kernels(sqlite3 *db, const mx_sign_secret *signer) {
    mxattn_status st = mx_db_exec(db, "ALTER TABLE export.kernels ADD COLUMN signer TEXT;"
                                      "ALTER TABLE export.kernels ADD COLUMN signature TEXT");
    sqlite3_stmt *stmt;
    if (st || (st = mx_db_prepare(db, "SELECT rowid FROM export.kernels", &stmt))) return st;
    sqlite3_int64 *rowids = NULL;
    size_t n = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            sqlite3_int64 *grown = realloc(rowids, cap * sizeof *rowids);
            if (!grown) { st = mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "export: out of memory"); break; }
            rowids = grown;
        }
        rowids[n++] = sqlite3_column_int64(stmt, 0);
    }
    if (!st && rc != SQLITE_DONE) st = mx_db_fail(db, rc, "reading kernels");
    sqlite3_finalize(stmt);
    for (size_t i = 0; !st && i < n; i++) st = sign_row(db, rowids[i], signer);
    free(rowids);
    return st;
}

static mxattn_status copy_into_export(sqlite3 *db, int with_kernels, const mx_sign_secret *signer) {
    static const char TUNE[] =
        "INSERT INTO export.tune_results(" MX_TUNE_KEY_COLUMNS ", config, median_ms, tops, default_ms, tuned_at)"
        " SELECT " MX_TUNE_KEY_COLUMNS ", config, median_ms, tops, default_ms, tuned_at FROM main.tune_results";
    /* Every candidate the tuner timed travels with the winners: the
     * importer's tuner then skips what was measured already. */
    static const char MEASUREMENTS[] =
        "INSERT INTO export.measurements(" MX_TUNE_KEY_COLUMNS ", config, status, median_ms, spread, registers,"
        " measured_at) SELECT " MX_TUNE_KEY_COLUMNS ", config, status, median_ms, spread, registers, measured_at"
        " FROM main.measurements";
    static const char KERNELS[] =
        "INSERT INTO export.kernels(" MX_KERNEL_COLUMNS ") SELECT " MX_KERNEL_COLUMNS " FROM main.kernels";
    mxattn_status st = mx_db_exec(db, "BEGIN");
    if (!st) st = mx_db_exec(db, TUNE);
    if (!st) st = mx_db_exec(db, MEASUREMENTS);
    if (!st && with_kernels) st = mx_db_exec(db, KERNELS);
    if (!st && with_kernels && signer) st = sign_exported_kernels(db, signer);
    if (!st) return mx_db_commit(db);
    mx_db_rollback(db);
    return st;
}

static mxattn_status attach_and_copy(mx_cache *cache, const char *tmp, int with_kernels,
                                     const mx_sign_secret *signer) {
    sqlite3_stmt *attach;
    mxattn_status st = mx_db_prepare(cache->db, "ATTACH DATABASE ?1 AS export", &attach);
    if (st) return st;
    sqlite3_bind_text(attach, 1, tmp, -1, SQLITE_STATIC);
    int rc = sqlite3_step(attach);
    sqlite3_finalize(attach);
    if (rc != SQLITE_DONE) return mx_db_fail(cache->db, rc, "attaching the export");
    st = copy_into_export(cache->db, with_kernels, signer);
    sqlite3_exec(cache->db, "DETACH DATABASE export", NULL, NULL, NULL);
    return st;
}

mxattn_status mx_cache_export(mx_cache *cache, const char *dest, int with_kernels, const mx_sign_secret *signer) {
    if (!cache || !dest || !*dest) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_export: no destination");
    if (signer && !with_kernels)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "export: signing applies to kernels: add --with-kernels");
    if (same_file(dest, cache->path))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cannot export the database '%s' onto itself", dest);
    char tmp[PATH_MAX + 32], journal[PATH_MAX + 48];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-%ld", dest, (long)getpid()) >= (int)sizeof tmp)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "export path '%s' is too long", dest);
    snprintf(journal, sizeof journal, "%s-journal", tmp);
    unlink(tmp);
    mxattn_status st = create_empty_export(tmp);
    if (!st) st = attach_and_copy(cache, tmp, with_kernels, signer);
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

/* A failed read of the source file.  What SQLite cannot parse there (a
 * damaged page, a schema it cannot read: "unsupported file format") says the
 * file is not an export we can use, INVALID_VALUE; what the disk or another
 * process did (an I/O error, a lock held past the wait) is IO.  Neither is
 * one of the CACHE_* statuses, which speak of our own database: those stay
 * with the writes to the target.  mx_db_fail is not used here, since it
 * would also mark our database as possibly damaged. */
static mxattn_status source_fail(sqlite3 *src, int rc, const char *what) {
    const char *msg = src ? sqlite3_errmsg(src) : sqlite3_errstr(rc);
    switch (rc & 0xff) {
    case SQLITE_NOMEM: return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "%s: out of memory", what);
    case SQLITE_IOERR: case SQLITE_CANTOPEN: case SQLITE_BUSY: case SQLITE_LOCKED: case SQLITE_READONLY:
    case SQLITE_FULL:
        return mx_fail(MXATTN_ERROR_IO, "cannot read the file: %s: %s", what, msg);
    default: return mx_fail(MXATTN_ERROR_INVALID_VALUE, "not a usable export: %s: %s", what, msg);
    }
}

static mxattn_status source_prepare(sqlite3 *src, const char *sql, sqlite3_stmt **stmt) {
    int rc = sqlite3_prepare_v2(src, sql, -1, stmt, NULL);
    return rc == SQLITE_OK ? MXATTN_OK : source_fail(src, rc, "preparing a statement");
}

/* The schema check is shared with our own database and answers in CACHE_*
 * statuses; on the source they are the file's, as above.  CACHE_CORRUPT
 * (a foreign or damaged schema) is always the file's content; the others
 * came from SQLite, whose last error code on the connection says which. */
static mxattn_status source_status(sqlite3 *src, mxattn_status st) {
    switch (st) {
    case MXATTN_ERROR_CACHE_CORRUPT:
        return mx_fail_context(MXATTN_ERROR_INVALID_VALUE, "not a usable export");
    case MXATTN_ERROR_CACHE: case MXATTN_ERROR_CACHE_BUSY: case MXATTN_ERROR_CACHE_READ_ONLY:
    case MXATTN_ERROR_CACHE_FULL:
        switch (sqlite3_extended_errcode(src) & 0xff) {
        case SQLITE_NOMEM: return MXATTN_ERROR_OUT_OF_MEMORY;
        case SQLITE_IOERR: case SQLITE_CANTOPEN: case SQLITE_BUSY: case SQLITE_LOCKED: case SQLITE_READONLY:
        case SQLITE_FULL:
            return mx_fail_context(MXATTN_ERROR_IO, "cannot read the file");
        default: return mx_fail_context(MXATTN_ERROR_INVALID_VALUE, "not a usable export");
        }
    default: return st;
    }
}

static mxattn_status source_integrity(sqlite3 *db) {
    sqlite3_stmt *stmt;
    mxattn_status st = source_prepare(db, "PRAGMA quick_check(1)", &stmt);
    if (st) return st;
    int rc = sqlite3_step(stmt);
    const char *verdict = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(stmt, 0) : NULL;
    if (rc != SQLITE_ROW) st = source_fail(db, rc, "the integrity check");
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
    mxattn_status st = rc == SQLITE_OK ? MXATTN_OK : source_fail(db, rc, "opening");
    if (!st) {
        harden_reader(db);
        sqlite3_busy_timeout(db, 10000);
        st = source_integrity(db);
    }
    /* one snapshot for the checks and the copy */
    if (!st && (rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK) st = source_fail(db, rc, "BEGIN");
    if (!st) st = source_status(db, mx_schema_verify(db, version));
    if (!st && *version == 0) st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "it holds no mxattn schema");
    if (st) { sqlite3_close(db); return st; }
    *out = db;
    return MXATTN_OK;
}

void mx_import_options_init(mx_import_options *o) { memset(o, 0, sizeof *o); }

/* A text column that is too long for its field is a value the row check
 * refuses, not a malformed file: SQLite stores any length. */
static mxattn_status read_source_result(sqlite3_stmt *s, int c, mx_tune_result *r, char *why, size_t why_cap) {
    memset(r, 0, sizeof *r);
    int n = sqlite3_column_bytes(s, c);
    if (sqlite3_column_type(s, c) != SQLITE_TEXT)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "a tuning result's config is not text");
    if (n >= (int)sizeof r->config) snprintf(why, why_cap, "config of %d characters (at most %zu)", n, sizeof r->config - 1);
    else if (!mx_column_text_copy(s, c, r->config, sizeof r->config))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "a tuning result's config holds a NUL");
    mx_read_result_numbers(s, c, r);
    return MXATTN_OK;
}

static int printable(const char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e) return 0;
    return 1;
}

static int power_of_two_in(int v, int lo, int hi) { return v >= lo && v <= hi && (v & (v - 1)) == 0; }

/* A kernel takes under a microsecond only when it does nothing, and none of
 * ours runs for a quarter of an hour: outside these bounds a time is wrong,
 * and a wrong small one would win every merge. */
#define MIN_MS 1e-4
#define MAX_MS 1e6

static int plausible_ms(double ms) { return isfinite(ms) && ms > MIN_MS && ms < MAX_MS; }

/* What the cache can check of a key and a config without the templates; 1 if plausible. */
static int cache_key_check(const mx_tune_key *k, const char *config, char *why, size_t cap) {
    const char *texts[] = {k->gpu_name, k->mxattn_version, k->template_hash, k->family, k->dtype, k->out_dtype, k->layout};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        if (!printable(texts[i])) return snprintf(why, cap, "a key field holds unprintable characters"), 0;
    if (!config[0] || !printable(config))
        return snprintf(why, cap, "config text is empty or holds unprintable characters"), 0;
    if (k->head_dim < 1 || k->head_dim > 1024 || k->gqa < 1 || k->gqa > 1024 || k->causal < 0 || k->causal > 2 ||
        k->sm_count < 1 || k->sm_count > 100000 || k->compute_capability < 10 || k->compute_capability > 1000)
        return snprintf(why, cap, "head_dim %d, gqa %d, causal %d, sm_count %d or compute capability %d out of range",
                        k->head_dim, k->gqa, k->causal, k->sm_count, k->compute_capability), 0;
    if (!power_of_two_in(k->seq_bucket, 1, 1 << 30) || !power_of_two_in(k->q_bucket, 1, 1 << 30))
        return snprintf(why, cap, "sequence buckets %d/%d are not powers of two in [1, 2^30]", k->seq_bucket,
                        k->q_bucket), 0;
    return 1;
}

/* The same for a tuning row; 1 if the row is plausible. */
static int cache_row_check(const mx_tune_key *k, const mx_tune_result *r, char *why, size_t cap) {
    if (!cache_key_check(k, r->config, why, cap)) return 0;
    if (!plausible_ms(r->median_ms))
        return snprintf(why, cap, "median_ms %g is outside (%g, %g) ms", r->median_ms, MIN_MS, MAX_MS), 0;
    if (!isfinite(r->default_ms) || !(r->default_ms == 0 || plausible_ms(r->default_ms)))
        return snprintf(why, cap, "default_ms %g is neither 0 nor inside (%g, %g) ms", r->default_ms, MIN_MS, MAX_MS), 0;
    if (!isfinite(r->tops) || r->tops < 0 || r->tops > 1e6)
        return snprintf(why, cap, "tops %g is outside [0, 1e6]", r->tops), 0;
    return 1;
}

static void refuse(mx_import_report *rep, const mx_tune_key *k, const char *why) {
    if (!rep->tune_rows_refused++ && !rep->measurements_refused)
        snprintf(rep->first_refusal, sizeof rep->first_refusal, "%.32s d%d %.8s seq %d/%d on %.48s: %s", k->family,
                 k->head_dim, k->dtype, k->seq_bucket, k->q_bucket, k->gpu_name, why);
}

static mxattn_status copy_tune_rows(sqlite3 *src, int version, sqlite3 *dst, int replace,
                                    const mx_import_options *opt, mx_import_report *rep) {
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
    mxattn_status st = source_prepare(src, version >= 3 ? V3 : version == 2 ? V2 : V1, &stmt);
    if (st) return st;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        mx_tune_key key;
        mx_tune_result r;
        char why[200] = "";
        int changed = 0;
        rep->tune_rows_read++;
        if ((st = mx_read_tune_key(stmt, 0, &key)) ||
            (st = read_source_result(stmt, MX_TUNE_KEY_NCOLS, &r, why, sizeof why)))
            break;
        if (version < 5) mx_tune_key_from_v4(&key);
        if (why[0] || !cache_row_check(&key, &r, why, sizeof why) ||
            (opt->row_check && !opt->row_check(opt->row_check_arg, &key, &r, why, sizeof why))) {
            refuse(rep, &key, why[0] ? why : "refused by the row check");
            continue;
        }
        if ((st = mx_tune_upsert(dst, &key, &r, replace, &changed))) break;
        if (changed) rep->tune_rows_taken++;
        else rep->tune_rows_kept++;
    }
    if (!st && rc != SQLITE_DONE) st = source_fail(src, rc, "reading tuning results");
    sqlite3_finalize(stmt);
    return st;
}

/* ---- measurements ---- */

/* Reads the columns after the key (config, status, median_ms, spread,
 * registers, measured_at).  As for a tuning row, text that does not fit a
 * field is a reason to refuse the row (in why), not a malformed file. */
static mxattn_status read_source_measurement(sqlite3_stmt *s, int c, mx_measurement *m, char *why, size_t why_cap) {
    memset(m, 0, sizeof *m);
    if (sqlite3_column_type(s, c) != SQLITE_TEXT || sqlite3_column_type(s, c + 1) != SQLITE_TEXT)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "a measurement's config or status is not text");
    int n = sqlite3_column_bytes(s, c), ns = sqlite3_column_bytes(s, c + 1);
    if (n >= (int)sizeof m->config) snprintf(why, why_cap, "config of %d characters (at most %zu)", n, sizeof m->config - 1);
    else if (ns >= (int)sizeof m->status) snprintf(why, why_cap, "status of %d characters is not a known one", ns);
    else if (!mx_column_text_copy(s, c, m->config, sizeof m->config) ||
             !mx_column_text_copy(s, c + 1, m->status, sizeof m->status))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "a measurement's config or status holds a NUL");
    m->median_ms = sqlite3_column_double(s, c + 2);
    m->spread = sqlite3_column_double(s, c + 3);
    m->registers = sqlite3_column_int(s, c + 4);
    m->measured_at = sqlite3_column_int64(s, c + 5);
    return MXATTN_OK;
}

/* The cache's checks of a tuning row, for a measurement: a candidate that
 * failed ("compile failed", ...) has no time, so its median_ms is 0. */
static int cache_measurement_check(const mx_tune_key *k, const mx_measurement *m, char *why, size_t cap) {
    if (!cache_key_check(k, m->config, why, cap)) return 0;
    if (!mx_measure_status_known(m->status))
        return snprintf(why, cap, "status '%.32s' is not one a measurement has", printable(m->status) ? m->status : "?"), 0;
    int ok = !strcmp(m->status, MX_MEASURE_OK);
    if (ok ? !plausible_ms(m->median_ms) : !(m->median_ms == 0 || plausible_ms(m->median_ms)))
        return snprintf(why, cap, "median_ms %g is %soutside (%g, %g) ms", m->median_ms, ok ? "" : "neither 0 nor ",
                        MIN_MS, MAX_MS), 0;
    if (!isfinite(m->spread) || m->spread < 0 || m->spread > 1e6)
        return snprintf(why, cap, "spread %g is outside [0, 1e6]", m->spread), 0;
    if (m->registers < 0 || m->registers > 65536)
        return snprintf(why, cap, "registers %d is outside [0, 65536]", m->registers), 0;
    return 1;
}

static void refuse_measurement(mx_import_report *rep, const mx_tune_key *k, const char *config, const char *why) {
    if (!rep->measurements_refused++ && !rep->tune_rows_refused)
        snprintf(rep->first_refusal, sizeof rep->first_refusal, "measurement %.32s d%d %.8s seq %d/%d on %.40s "
                 "'%.40s': %s", k->family, k->head_dim, k->dtype, k->seq_bucket, k->q_bucket, k->gpu_name,
                 printable(config) ? config : "?", why);
}

/* "replace" (import) overwrites ours for the same (key, config); merge
 * keeps ours unless theirs is "ok" and faster than ours, or ours is not
 * "ok" (a candidate that failed here and ran there is worth knowing). */
static const char MEASURE_REPLACE[] =
    "INSERT OR REPLACE INTO measurements(" MX_TUNE_KEY_COLUMNS ", config, status, median_ms, spread, registers,"
    " measured_at) VALUES(" MX_TUNE_KEY_PLACEHOLDERS ",?17,?18,?19,?20,?21,?22)";
static const char MEASURE_MERGE[] =
    "INSERT INTO measurements(" MX_TUNE_KEY_COLUMNS ", config, status, median_ms, spread, registers, measured_at)"
    " VALUES(" MX_TUNE_KEY_PLACEHOLDERS ",?17,?18,?19,?20,?21,?22)"
    " ON CONFLICT(" MX_TUNE_KEY_COLUMNS ", config) DO UPDATE SET status=excluded.status,"
    " median_ms=excluded.median_ms, spread=excluded.spread, registers=excluded.registers,"
    " measured_at=excluded.measured_at"
    " WHERE excluded.status='" MX_MEASURE_OK "' AND (measurements.status<>'" MX_MEASURE_OK "'"
    " OR excluded.median_ms < measurements.median_ms)";

static mxattn_status store_measurement(sqlite3 *dst, sqlite3_stmt *ins, const mx_tune_key *key,
                                       const mx_measurement *m, int *changed) {
    sqlite3_reset(ins);
    mx_bind_tune_key(ins, key);
    sqlite3_bind_text(ins, MX_TUNE_KEY_NCOLS + 1, m->config, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, MX_TUNE_KEY_NCOLS + 2, m->status, -1, SQLITE_STATIC);
    sqlite3_bind_double(ins, MX_TUNE_KEY_NCOLS + 3, m->median_ms);
    sqlite3_bind_double(ins, MX_TUNE_KEY_NCOLS + 4, m->spread);
    sqlite3_bind_int(ins, MX_TUNE_KEY_NCOLS + 5, m->registers);
    sqlite3_bind_int64(ins, MX_TUNE_KEY_NCOLS + 6, m->measured_at);
    int rc = sqlite3_step(ins);
    if (rc != SQLITE_DONE) return mx_db_fail(dst, rc, "storing a measurement");
    *changed = sqlite3_changes(dst) > 0;
    return MXATTN_OK;
}

static mxattn_status copy_measurements(sqlite3 *src, int version, sqlite3 *dst, int replace,
                                       const mx_import_options *opt, mx_import_report *rep) {
    /* v1 and v2 files have no q_bucket; as for tuning rows, it reads seq_bucket. */
    static const char V3[] = "SELECT " MX_TUNE_KEY_COLUMNS ", config, status, median_ms, spread, registers,"
                             " measured_at FROM measurements";
    static const char V2[] = "SELECT " MX_TUNE_KEY_COLUMNS_V2 ", seq_bucket, config, status, median_ms, spread,"
                             " registers, measured_at FROM measurements";
    sqlite3_stmt *stmt, *ins;
    mxattn_status st = mx_db_prepare(dst, replace ? MEASURE_REPLACE : MEASURE_MERGE, &ins);
    if (st) return st;
    if ((st = source_prepare(src, version >= 3 ? V3 : V2, &stmt))) {
        sqlite3_finalize(ins);
        return st;
    }
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        mx_tune_key key;
        mx_measurement m;
        char why[200] = "";
        int changed = 0;
        rep->measurements_read++;
        if ((st = mx_read_tune_key(stmt, 0, &key)) ||
            (st = read_source_measurement(stmt, MX_TUNE_KEY_NCOLS, &m, why, sizeof why)))
            break;
        if (version < 5) mx_tune_key_from_v4(&key);
        if (!why[0] && cache_measurement_check(&key, &m, why, sizeof why) && opt->row_check &&
            !strcmp(m.status, MX_MEASURE_OK)) {
            /* The templates' check sees what a tuning row of this config would be. */
            mx_tune_result r;
            memset(&r, 0, sizeof r);
            memcpy(r.config, m.config, sizeof r.config);
            r.median_ms = m.median_ms;
            r.tuned_at = m.measured_at;
            if (!opt->row_check(opt->row_check_arg, &key, &r, why, sizeof why) && !why[0])
                snprintf(why, sizeof why, "refused by the row check");
        }
        if (why[0]) {
            refuse_measurement(rep, &key, m.config, why);
            continue;
        }
        if ((st = store_measurement(dst, ins, &key, &m, &changed))) break;
        rep->measurements_taken += changed;
    }
    if (!st && rc != SQLITE_DONE) st = source_fail(src, rc, "reading measurements");
    sqlite3_finalize(stmt);
    sqlite3_finalize(ins);
    return st;
}

static mxattn_status reject_oversized_kernels(sqlite3 *src) {
    sqlite3_stmt *stmt;
    mxattn_status st = source_prepare(src, "SELECT key, length(cubin) FROM kernels WHERE length(cubin) > ?1"
                                           " OR typeof(cubin) <> 'blob' LIMIT 1", &stmt);
    if (st) return st;
    sqlite3_bind_int64(stmt, 1, MX_CACHE_MAX_CUBIN_BYTES);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
        st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "kernel '%.64s' has a %lld-byte cubin (limit %u, must be a blob)",
                     (const char *)sqlite3_column_text(stmt, 0), (long long)sqlite3_column_int64(stmt, 1),
                     MX_CACHE_MAX_CUBIN_BYTES);
    else if (rc != SQLITE_DONE) st = source_fail(src, rc, "reading kernels");
    sqlite3_finalize(stmt);
    return st;
}

static int is_trusted(const mx_import_options *opt, const mx_sign_public *pk) {
    for (int i = 0; i < opt->n_trusted; i++)
        if (!memcmp(opt->trusted[i].bytes, pk->bytes, sizeof pk->bytes)) return 1;
    return 0;
}

/* Proves one kernel row may run here: its blob hashes to the recorded hash,
 * and a trusted key signed that hash with the row's other fields.  The
 * last two columns are the signer and the signature. */
static mxattn_status read_trusted_kernel(sqlite3_stmt *s, const mx_import_options *opt, mx_kernel_record *k) {
    mxattn_status st = read_kernel_row(s, k);
    if (st) return st;
    char actual[65], signer_hex[80], sig_hex[2 * MX_SIGN_BYTES + 8];
    const int signer_col = sqlite3_column_count(s) - 2, sig_col = signer_col + 1;
    mx_sha256_hex(k->cubin, k->cubin_size, actual);
    if (strcmp(actual, k->cubin_sha256))
        return mx_fail(MXATTN_ERROR_UNTRUSTED, "kernel %.16s...: cubin hash %.16s... does not match the recorded "
                       "%.16s... (a tampered cubin)", k->key, actual, k->cubin_sha256);
    if (sqlite3_column_type(s, signer_col) == SQLITE_NULL || sqlite3_column_type(s, sig_col) == SQLITE_NULL)
        return mx_fail(MXATTN_ERROR_UNTRUSTED, "kernel %.16s... is unsigned", k->key);
    mx_sign_public pk;
    unsigned char sig[MX_SIGN_BYTES];
    if (!mx_column_text_copy(s, signer_col, signer_hex, sizeof signer_hex) ||
        !mx_hex_decode(signer_hex, pk.bytes, sizeof pk.bytes) ||
        !mx_column_text_copy(s, sig_col, sig_hex, sizeof sig_hex) || !mx_hex_decode(sig_hex, sig, sizeof sig))
        return mx_fail(MXATTN_ERROR_UNTRUSTED, "kernel %.16s... has a malformed signer key or signature", k->key);
    mx_sign_public_hex(&pk, signer_hex);
    if (!is_trusted(opt, &pk))
        return mx_fail(MXATTN_ERROR_UNTRUSTED, "kernel %.16s... is signed by %s, which is not a trusted key (--trust)",
                       k->key, signer_hex);
    if (!mx_verify_kernel(&pk, k, actual, sig))
        return mx_fail(MXATTN_ERROR_UNTRUSTED, "kernel %.16s...: the signature by %.16s... does not cover this row "
                       "(its cubin, hash, key, arch, names or sizes were changed: a tampered cubin with a matching "
                       "hash, or a cubin moved under another key)", k->key, signer_hex);
    return MXATTN_OK;
}

/* An export made without --sign has no signature columns at all. */
static mxattn_status refuse_if_unsigned_file(sqlite3 *src) {
    sqlite3_stmt *probe = NULL;
    int rc = sqlite3_prepare_v2(src, "SELECT signer, signature FROM kernels LIMIT 0", -1, &probe, NULL);
    sqlite3_finalize(probe);
    if (rc == SQLITE_OK) return MXATTN_OK;
    sqlite3_stmt *any;
    mxattn_status st = source_prepare(src, "SELECT key FROM kernels LIMIT 1", &any);
    if (st) return st;
    rc = sqlite3_step(any);
    if (rc == SQLITE_ROW)
        st = mx_fail(MXATTN_ERROR_UNTRUSTED, "kernel %.16s...: the file is unsigned (exported without --sign)",
                     (const char *)sqlite3_column_text(any, 0));
    else if (rc != SQLITE_DONE) st = source_fail(src, rc, "reading kernels");
    else st = MXATTN_ERROR_NOT_FOUND; /* no kernels: nothing to take */
    sqlite3_finalize(any);
    return st;
}

static mxattn_status copy_kernels(sqlite3 *src, sqlite3 *dst, const mx_import_options *opt, mx_import_report *rep) {
    mxattn_status st = reject_oversized_kernels(src);
    if (!st) st = refuse_if_unsigned_file(src);
    if (st == MXATTN_ERROR_NOT_FOUND) return MXATTN_OK;
    sqlite3_stmt *stmt;
    if (st || (st = source_prepare(src, "SELECT " MX_KERNEL_COLUMNS ", signer, signature FROM kernels", &stmt)))
        return st;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        mx_kernel_record k;
        int changed = 0;
        rep->kernels_read++;
        if ((st = read_trusted_kernel(stmt, opt, &k)) || (st = mx_kernel_insert(dst, &k, &changed))) break;
        rep->kernels_taken += changed;
    }
    if (!st && rc != SQLITE_DONE) st = source_fail(src, rc, "reading kernels");
    sqlite3_finalize(stmt);
    return st;
}

static mxattn_status transfer(mx_cache *cache, const char *src_path, const mx_import_options *opt, int replace,
                              mx_import_report *report) {
    mx_import_report scratch;
    mx_import_report *rep = report ? report : &scratch;
    mx_import_options defaults;
    memset(rep, 0, sizeof *rep);
    if (!opt) {
        mx_import_options_init(&defaults);
        opt = &defaults;
    }
    if (!cache || !src_path) return mx_fail(MXATTN_ERROR_NULL_POINTER, "import: NULL argument");
    sqlite3 *src;
    int version = 0;
    mxattn_status st = MXATTN_OK;
    if (opt->with_kernels && !replace) {
        st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "merge never takes kernels: use import --with-kernels");
        goto rejected;
    }
    if (opt->with_kernels && (opt->n_trusted < 1 || opt->n_trusted > MX_IMPORT_MAX_TRUSTED)) {
        st = mx_fail(MXATTN_ERROR_UNTRUSTED, "kernels are code: importing them needs the public key of a trusted "
                     "signer (--trust KEY), and %d were given", opt->n_trusted);
        goto rejected;
    }
    st = open_source(src_path, &src, &version);
    if (st) goto rejected;
    if (!(st = mx_db_begin_write(cache->db))) {
        st = copy_tune_rows(src, version, cache->db, replace, opt, rep);
        if (!st) st = copy_measurements(src, version, cache->db, replace, opt, rep);
        if (!st && opt->with_kernels) st = copy_kernels(src, cache->db, opt, rep);
        if (!st) st = mx_db_commit(cache->db);
        else mx_db_rollback(cache->db);
    }
    sqlite3_close(src);
    if (!st) return MXATTN_OK;
rejected:
    /* The source's faults are INVALID_VALUE or IO where they were met; a
     * CACHE_* status left here is our database's, and stands. */
    memset(rep, 0, sizeof *rep);
    return mx_fail_context(st, "import of '%s' rejected, database unchanged", src_path);
}

mxattn_status mx_cache_import(mx_cache *cache, const char *src, const mx_import_options *opt, mx_import_report *report) {
    return transfer(cache, src, opt, 1, report);
}

mxattn_status mx_cache_merge(mx_cache *cache, const char *src, const mx_import_options *opt, mx_import_report *report) {
    return transfer(cache, src, opt, 0, report);
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
