/* Opening the database: where it lives, creating it, telling a file of ours
 * from someone else's, opening read-only media, rebuilding a damaged file
 * from the rows that still read, and the transaction helpers every write
 * goes through. */
#include "cache/cache_internal.h"
#include "util/err.h"
#include "util/sha256.h"
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The bound on waiting for another process's write lock, per write.  A put
 * holds the lock for milliseconds and an import of a large export for a few
 * seconds, so 15 s is plenty; the old bound of 6 x 10 s made a tune stuck
 * behind a held lock hang for a minute per kernel before it said anything.
 * MXATTN_CACHE_BUSY_MS changes it (tests use a short one). */
int mx_db_busy_ms(void) {
    const char *text = getenv("MXATTN_CACHE_BUSY_MS");
    char *end;
    long v = text && *text ? strtol(text, &end, 10) : -1;
    if (!text || !*text || *end || v < 0 || v > 3600000) return MX_CACHE_DEFAULT_BUSY_MS;
    return (int)v;
}

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- small helpers shared by the cache files ---------------------------- */

/* Set when a statement on this thread met damage, so the public call that
 * ran it can check and rebuild the file (mx_cache_after_failure). */
static _Thread_local int saw_corruption;

static int is_corruption(int rc) {
    int primary = rc & 0xff;
    return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

static mxattn_status status_of(int rc, int sys) {
    switch (rc & 0xff) {
    case SQLITE_CORRUPT: case SQLITE_NOTADB: return MXATTN_ERROR_CACHE_CORRUPT;
    case SQLITE_READONLY: return MXATTN_ERROR_CACHE_READ_ONLY;
    case SQLITE_FULL: return MXATTN_ERROR_CACHE_FULL;
    case SQLITE_BUSY: case SQLITE_LOCKED: return MXATTN_ERROR_CACHE_BUSY;
    case SQLITE_IOERR: case SQLITE_CANTOPEN:
        if (sys == ENOSPC || sys == EDQUOT) return MXATTN_ERROR_CACHE_FULL;
        if (sys == EROFS) return MXATTN_ERROR_CACHE_READ_ONLY;
        return MXATTN_ERROR_CACHE;
    default: return MXATTN_ERROR_CACHE;
    }
}

mxattn_status mx_db_fail(sqlite3 *db, int rc, const char *what) {
    if (is_corruption(rc)) saw_corruption = 1;
    const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    int sys = db ? sqlite3_system_errno(db) : 0;
    mxattn_status s = status_of(rc, sys);
    if (sys && (rc & 0xff) != SQLITE_CONSTRAINT)
        return mx_fail(s, "%s: %s (%s)", what, msg, strerror(sys));
    return mx_fail(s, "%s: %s", what, msg);
}

mxattn_status mx_db_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **stmt) {
    int rc = sqlite3_prepare_v2(db, sql, -1, stmt, NULL);
    return rc == SQLITE_OK ? MXATTN_OK : mx_db_fail(db, rc, "cache: preparing a statement");
}

mxattn_status mx_db_exec(sqlite3 *db, const char *sql) {
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? MXATTN_OK : mx_db_fail(db, rc, "cache");
}

static int is_busy(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }

/* Runs BEGIN IMMEDIATE or COMMIT until it stops being busy or the bound has
 * passed.  The busy handler does most of the waiting; the loop is for the
 * cases where SQLite answers SQLITE_BUSY at once without calling it. */
static int exec_bounded(sqlite3 *db, const char *sql) {
    int64_t deadline = now_ms() + mx_db_busy_ms();
    int rc;
    while (is_busy(rc = sqlite3_exec(db, sql, NULL, NULL, NULL)) && now_ms() < deadline) usleep(5000);
    return rc;
}

static mxattn_status busy_fail(sqlite3 *db, int rc, const char *what) {
    if (!is_busy(rc)) return mx_db_fail(db, rc, what);
    return mx_fail(MXATTN_ERROR_CACHE_BUSY, "%s: another process held the write lock of '%s' for more than %d ms "
                   "(MXATTN_CACHE_BUSY_MS): not stored", what, sqlite3_db_filename(db, "main"), mx_db_busy_ms());
}

mxattn_status mx_db_begin_write(sqlite3 *db) {
    if (sqlite3_db_readonly(db, "main") == 1)
        return mx_fail(MXATTN_ERROR_CACHE_READ_ONLY, "cache: the database '%s' is open read-only: not stored",
                       sqlite3_db_filename(db, "main"));
    int rc = exec_bounded(db, "BEGIN IMMEDIATE");
    return rc == SQLITE_OK ? MXATTN_OK : busy_fail(db, rc, "cache: starting a write transaction");
}

mxattn_status mx_db_commit(sqlite3 *db) {
    int rc = exec_bounded(db, "COMMIT");
    if (rc == SQLITE_OK) return MXATTN_OK;
    mxattn_status s = busy_fail(db, rc, "cache: committing");
    mx_db_rollback(db);
    return s;
}

void mx_db_rollback(sqlite3 *db) {
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

int64_t mx_unix_now(void) { return (int64_t)time(NULL); }

int mx_is_hex_sha256(const char *s) {
    for (int i = 0; i < 64; i++) {
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) return 0;
    }
    return s[64] == 0;
}

/* ---- where the file lives ----------------------------------------------- */

static mxattn_status join_path(char *out, size_t cap, const char *base, const char *rest) {
    int n = snprintf(out, cap, "%s%s", base, rest);
    if (n < 0 || (size_t)n >= cap)
        return mx_fail(MXATTN_ERROR_CACHE, "cache path '%s%s' is too long", base, rest);
    return MXATTN_OK;
}

mxattn_status mx_cache_default_path(char *out, size_t cap) {
    const char *explicit_path = getenv("MXATTN_CACHE");
    if (explicit_path && *explicit_path) return join_path(out, cap, explicit_path, "");
    const char *xdg = getenv("XDG_CACHE_HOME");
    /* The XDG spec says a relative XDG_CACHE_HOME is invalid and to be ignored. */
    if (xdg && xdg[0] == '/') return join_path(out, cap, xdg, "/mxattn/mxattn.db");
    const char *home = getenv("HOME");
    if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : NULL;
    }
    if (!home || !*home)
        return mx_fail(MXATTN_ERROR_CACHE, "no cache path: set MXATTN_CACHE, XDG_CACHE_HOME or HOME");
    return join_path(out, cap, home, "/.cache/mxattn/mxattn.db");
}

/* mkdir -p of the directory that holds `path`. */
static mxattn_status make_parent_dirs(const char *path) {
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return mx_fail(MXATTN_ERROR_CACHE, "cache path '%s' is too long", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return MXATTN_OK; /* current directory or "/" */
    *slash = 0;
    for (char *p = dir + 1; ; p++) {
        if (*p != '/' && *p != 0) continue;
        char saved = *p;
        *p = 0;
        struct stat st;
        int err = 0;
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) err = errno;
        else if (stat(dir, &st) != 0) err = errno;
        else if (!S_ISDIR(st.st_mode)) err = ENOTDIR;
        if (err)
            return mx_fail(MXATTN_ERROR_CACHE, "cannot create cache directory '%s': %s", dir, strerror(err));
        *p = saved;
        if (saved == 0) break;
    }
    return MXATTN_OK;
}

/* ---- telling our file from someone else's -------------------------------- */

typedef enum { FILE_MISSING, FILE_EMPTY, FILE_OURS } file_kind;

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* 'file:' URI of `path` with immutable=1: SQLite then takes no locks and
 * creates no -wal or -shm, so a file can be looked at (or read on read-only
 * media) without leaving anything beside it. */
static mxattn_status immutable_uri(const char *path, char *out, size_t cap) {
    static const char HEX[] = "0123456789abcdef";
    size_t n = 0;
    if (cap < 8) return mx_fail(MXATTN_ERROR_CACHE, "cache path '%s' is too long", path);
    memcpy(out, "file:", 5);
    n = 5;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("/-._~", *p);
        if (n + 4 >= cap) return mx_fail(MXATTN_ERROR_CACHE, "cache path '%s' is too long", path);
        if (plain) out[n++] = (char)*p;
        else { out[n++] = '%'; out[n++] = HEX[*p >> 4]; out[n++] = HEX[*p & 15]; }
    }
    const char *q = "?mode=ro&immutable=1";
    if (n + strlen(q) + 1 > cap) return mx_fail(MXATTN_ERROR_CACHE, "cache path '%s' is too long", path);
    memcpy(out + n, q, strlen(q) + 1);
    return MXATTN_OK;
}

static mxattn_status open_immutable(const char *path, sqlite3 **out) {
    char uri[PATH_MAX * 3 + 32];
    mxattn_status st = immutable_uri(path, uri, sizeof uri);
    if (st) return st;
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    if (rc != SQLITE_OK) {
        st = mx_db_fail(db, rc, "cache: opening read-only");
        sqlite3_close(db);
        return st;
    }
    sqlite3_extended_result_codes(db, 1);
    *out = db;
    return MXATTN_OK;
}

static mxattn_status foreign(const char *path, const char *why) {
    return mx_fail(MXATTN_ERROR_CACHE_FOREIGN, "'%s' is not an mxattn database (%s); it was left as it is", path,
                   why);
}

/* A file without our application_id: mxattn before schema v4 wrote none, so
 * one whose tables and columns are exactly ours (or that has no tables yet,
 * as a file another process is creating right now) is ours; anything else
 * belongs to someone else.  Looked at immutable, so nothing is written.
 * *unreadable = 1 when SQLite could not read the schema at all (rather than
 * finding a foreign one): that may be another process checkpointing under an
 * immutable reader, so the caller looks again before it decides. */
static mxattn_status recognise_unstamped(const char *path, int *unreadable) {
    sqlite3 *db = NULL;
    int version = 0;
    saw_corruption = 0;
    mxattn_status st = open_immutable(path, &db);
    if (!st) {
        st = mx_db_exec(db, "BEGIN");
        if (!st) st = mx_schema_verify(db, &version);
        mx_db_rollback(db);
    }
    sqlite3_close(db);
    *unreadable = saw_corruption || (st != MXATTN_OK && st != MXATTN_ERROR_UNSUPPORTED &&
                                     st != MXATTN_ERROR_CACHE_CORRUPT);
    saw_corruption = 0;
    if (st == MXATTN_OK || st == MXATTN_ERROR_UNSUPPORTED) return st;
    char why[600];
    snprintf(why, sizeof why, "no mxattn application_id, and %s", mx_error_message());
    return foreign(path, why);
}

/* Decides from the file alone, before SQLite opens it read-write (which
 * would create a -wal and -shm beside a stranger's file). */
static mxattn_status classify_once(const char *path, file_kind *kind, int *unreadable) {
    *unreadable = 0;
    static const char MAGIC[16] = "SQLite format 3";
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT) { *kind = FILE_MISSING; return MXATTN_OK; }
        return mx_fail(MXATTN_ERROR_CACHE, "cannot open cache database '%s': %s", path, strerror(errno));
    }
    if (S_ISDIR(sb.st_mode)) return mx_fail(MXATTN_ERROR_CACHE, "cache database '%s' is a directory", path);
    if (!S_ISREG(sb.st_mode)) return foreign(path, "not a regular file");
    if (sb.st_size == 0) { *kind = FILE_EMPTY; return MXATTN_OK; }
    unsigned char header[100];
    FILE *f = fopen(path, "rb");
    if (!f) return mx_fail(MXATTN_ERROR_CACHE, "cannot read cache database '%s': %s", path, strerror(errno));
    size_t n = fread(header, 1, sizeof header, f);
    fclose(f);
    if (n < sizeof header || memcmp(header, MAGIC, sizeof MAGIC) != 0)
        return foreign(path, "not an SQLite file: bad or short header");
    uint32_t app = be32(header + 68);
    *kind = FILE_OURS;
    if (app == MX_CACHE_APPLICATION_ID) return MXATTN_OK;
    if (app != 0) {
        char why[96];
        snprintf(why, sizeof why, "an SQLite file of another application, application_id 0x%08x", (unsigned)app);
        return foreign(path, why);
    }
    return recognise_unstamped(path, unreadable);
}

static mxattn_status classify(const char *path, file_kind *kind) {
    int unreadable = 0;
    mxattn_status st = classify_once(path, kind, &unreadable);
    for (int attempt = 0; st && unreadable && attempt < 5; attempt++) {
        usleep(20000);
        st = classify_once(path, kind, &unreadable);
    }
    return st;
}

/* ---- checking and rebuilding a damaged file ------------------------------ */

static mxattn_status quick_check(sqlite3 *db) {
    sqlite3_stmt *stmt;
    mxattn_status st = mx_db_prepare(db, "PRAGMA quick_check(1)", &stmt);
    if (st) return st;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        const char *verdict = (const char *)sqlite3_column_text(stmt, 0);
        if (!verdict || strcmp(verdict, "ok") != 0) {
            /* SQLite's verdict spans lines; the message is one line. */
            char text[201];
            snprintf(text, sizeof text, "%s", verdict ? verdict : "?");
            for (char *p = text; *p; p++)
                if (*p == '\n') *p = ' ';
            st = mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "integrity check failed: %s", text);
        }
    } else {
        st = mx_db_fail(db, rc, "integrity check");
    }
    sqlite3_finalize(stmt);
    return st;
}

/* Each table's columns as the rebuilt file has them, and as a file of
 * schema version v had them (in the same order). */
typedef struct { const char *table, *dest, *v4, *v3, *v2, *v1; } table_columns;

#define TUNE_TAIL ", config, median_ms, tops, default_ms"
#define MEASURE_TAIL ", config, status, median_ms, spread, registers, measured_at"
static const table_columns TABLES[] = {
    {"kernels", MX_KERNEL_COLUMNS ", last_used", MX_KERNEL_COLUMNS ", last_used",
     MX_KERNEL_COLUMNS ", created_at", MX_KERNEL_COLUMNS ", created_at", MX_KERNEL_COLUMNS ", created_at"},
    {"tune_results", MX_TUNE_KEY_COLUMNS TUNE_TAIL ", tuned_at", MX_TUNE_KEY_COLUMNS TUNE_TAIL ", tuned_at",
     MX_TUNE_KEY_COLUMNS TUNE_TAIL ", tuned_at", MX_TUNE_KEY_COLUMNS_V2 ", seq_bucket" TUNE_TAIL ", tuned_at",
     MX_TUNE_KEY_COLUMNS_V2 ", seq_bucket" TUNE_TAIL ", 0"},
    {"measurements", MX_TUNE_KEY_COLUMNS MEASURE_TAIL, MX_TUNE_KEY_COLUMNS MEASURE_TAIL,
     MX_TUNE_KEY_COLUMNS MEASURE_TAIL, MX_TUNE_KEY_COLUMNS_V2 ", seq_bucket" MEASURE_TAIL,
     MX_TUNE_KEY_COLUMNS_V2 ", seq_bucket" MEASURE_TAIL},
};
#define N_SALVAGED 3

typedef struct {
    long kept[N_SALVAGED], found[N_SALVAGED];
    int unreadable; /* a range of rows could not even be listed */
} salvage_counts;

/* A kernel row is kept only when its blob still hashes to the stored hash. */
static int kernel_row_valid(sqlite3_stmt *row) {
    const char *key = (const char *)sqlite3_column_text(row, 0);
    const void *blob = sqlite3_column_blob(row, 4);
    int size = sqlite3_column_bytes(row, 4);
    const char *stored = (const char *)sqlite3_column_text(row, 5);
    if (!key || strlen(key) != 64 || !mx_is_hex_sha256(key) || !blob || size <= 0 || !stored) return 0;
    char actual[65];
    mx_sha256_hex(blob, (size_t)size, actual);
    return !strcmp(actual, stored);
}

/* Copies the row `rowid` if it reads; returns 1 if it was kept. */
static int salvage_row(sqlite3_stmt *row, sqlite3_stmt *insert, int is_kernels, sqlite3_int64 rowid) {
    int kept = 0;
    sqlite3_bind_int64(row, 1, rowid);
    if (sqlite3_step(row) == SQLITE_ROW && (!is_kernels || kernel_row_valid(row))) {
        int n = sqlite3_column_count(row);
        for (int i = 0; i < n; i++) sqlite3_bind_value(insert, i + 1, sqlite3_column_value(row, i));
        kept = sqlite3_step(insert) == SQLITE_DONE && sqlite3_changes(sqlite3_db_handle(insert)) > 0;
        sqlite3_reset(insert);
        sqlite3_clear_bindings(insert);
    }
    sqlite3_reset(row);
    return kept;
}

/* After `fails` consecutive failures to list rows from some rowid on, how far
 * to jump: one at a time across a damaged leaf (rowids are dense: a page
 * holds a few dozen), then doubling, so a damaged page near the end costs
 * some thousands of cheap seeks, not 2^63. */
static sqlite3_int64 skip_after(int fails) { return fails <= 4096 ? 1 : (sqlite3_int64)1 << (fails - 4096); }

/* Row by row: SQLite's recovery extension is not in Debian's libsqlite3, so
 * the rowids are listed with range seeks that step over a page that fails,
 * and each row is then read on its own. */
static void salvage_table(sqlite3 *src, sqlite3 *dst, const table_columns *t, int version, int index,
                          salvage_counts *n) {
    const char *cols[] = {t->v4, t->v3, t->v2, t->v1};
    char sql[2048];
    sqlite3_stmt *row = NULL, *list = NULL, *insert = NULL;
    /* The version may be unreadable: try this one's columns, then older ones. */
    for (int v = version >= 1 && version <= 4 ? 4 - version : 0; v < 4 && !row; v++) {
        snprintf(sql, sizeof sql, "SELECT %s FROM %s WHERE rowid=?1", cols[v], t->table);
        if (sqlite3_prepare_v2(src, sql, -1, &row, NULL) != SQLITE_OK) { sqlite3_finalize(row); row = NULL; }
    }
    snprintf(sql, sizeof sql, "SELECT rowid FROM %s WHERE rowid>=?1 ORDER BY rowid", t->table);
    if (!row || sqlite3_prepare_v2(src, sql, -1, &list, NULL) != SQLITE_OK) { n->unreadable = 1; goto done; }
    int placeholders = 0;
    char values[256] = "";
    for (const char *c = t->dest; *c; c++) placeholders += *c == ',';
    for (int i = 0; i <= placeholders; i++) {
        size_t len = strlen(values);
        snprintf(values + len, sizeof values - len, "%s?%d", i ? "," : "", i + 1);
    }
    snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO %s(%s) VALUES(%s)", t->table, t->dest, values);
    if (sqlite3_prepare_v2(dst, sql, -1, &insert, NULL) != SQLITE_OK) { n->unreadable = 1; goto done; }
    sqlite3_int64 next = 1;
    int fails = 0;
    for (;;) {
        sqlite3_bind_int64(list, 1, next);
        int rc;
        while ((rc = sqlite3_step(list)) == SQLITE_ROW) {
            sqlite3_int64 id = sqlite3_column_int64(list, 0);
            n->found[index]++;
            n->kept[index] += salvage_row(row, insert, index == 0, id);
            fails = 0;
            next = id + 1;
            if (id == INT64_MAX) { rc = SQLITE_DONE; break; }
        }
        sqlite3_reset(list);
        if (rc == SQLITE_DONE) break;
        n->unreadable = 1;
        if (++fails > 4096 + 61) break;
        sqlite3_int64 step = skip_after(fails);
        if (next > INT64_MAX - step) break;
        next += step;
    }
done:
    sqlite3_finalize(row);
    sqlite3_finalize(list);
    sqlite3_finalize(insert);
}

static mxattn_status open_plain(const char *path, int flags, sqlite3 **out);

/* Builds `dst_path` with our schema and every row of `src_path` that reads. */
static mxattn_status salvage_into(const char *src_path, const char *dst_path, salvage_counts *n) {
    sqlite3 *src = NULL, *dst = NULL;
    mxattn_status st = open_plain(dst_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &dst);
    if (!st) st = mx_db_exec(dst, "BEGIN");
    if (!st) st = mx_schema_migrate(dst);
    if (st) goto done;
    /* The source is read with its -wal (the newest rows may be there); a
     * source that cannot even be opened leaves the new file empty. */
    if (open_plain(src_path, SQLITE_OPEN_READONLY, &src) == MXATTN_OK) {
        int version = 0;
        sqlite3_stmt *stmt;
        if (sqlite3_prepare_v2(src, "PRAGMA user_version", -1, &stmt, NULL) == SQLITE_OK &&
            sqlite3_step(stmt) == SQLITE_ROW)
            version = sqlite3_column_int(stmt, 0);
        sqlite3_finalize(stmt);
        for (int i = 0; i < N_SALVAGED; i++) salvage_table(src, dst, &TABLES[i], version, i, n);
    } else {
        n->unreadable = 1;
    }
    st = mx_db_commit(dst);
done:
    if (st && dst) mx_db_rollback(dst);
    sqlite3_close(src);
    sqlite3_close(dst);
    saw_corruption = 0;
    return st;
}

/* Renames `from` (if it exists) to `to`; missing is fine. */
static mxattn_status move_if_present(const char *from, const char *to) {
    if (rename(from, to) == 0 || errno == ENOENT) return MXATTN_OK;
    return mx_fail(MXATTN_ERROR_CACHE, "cannot move damaged cache '%s' aside to '%s': %s", from, to,
                   strerror(errno));
}

/* '<path>.corrupt-<timestamp>[-n]', a name nothing uses yet. */
static mxattn_status aside_name(const char *path, char *out, size_t cap) {
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    for (int n = 0; n < 1000; n++) {
        int len = n ? snprintf(out, cap, "%s.corrupt-%s-%d", path, stamp, n)
                    : snprintf(out, cap, "%s.corrupt-%s", path, stamp);
        if (len < 0 || (size_t)len >= cap) break;
        if (access(out, F_OK) != 0) return MXATTN_OK;
    }
    return mx_fail(MXATTN_ERROR_CACHE, "cannot find a name to move damaged cache '%s' aside", path);
}

static mxattn_status move_aside(const char *path, char *aside, size_t cap) {
    mxattn_status st = aside_name(path, aside, cap);
    if (st) return st;
    char from[PATH_MAX + 8], to[PATH_MAX + 80];
    static const char *const side_files[] = {"-wal", "-shm"};
    for (int i = 0; i < 2; i++) {
        snprintf(from, sizeof from, "%s%s", path, side_files[i]);
        snprintf(to, sizeof to, "%s%s", aside, side_files[i]);
        if ((st = move_if_present(from, to))) return st;
    }
    return move_if_present(path, aside);
}

/* Rebuilds the damaged file at c->path (its connection already closed):
 * salvage beside it, keep the original aside, put the rebuilt one in place. */
static mxattn_status rebuild(mx_cache *c, const char *reason) {
    char tmp[PATH_MAX + 32], journal[PATH_MAX + 48], aside[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%s.salvage-%ld", c->path, (long)getpid());
    snprintf(journal, sizeof journal, "%s-journal", tmp);
    unlink(tmp);
    unlink(journal);
    salvage_counts n;
    memset(&n, 0, sizeof n);
    mxattn_status st = salvage_into(c->path, tmp, &n);
    if (!st) st = move_aside(c->path, aside, sizeof aside);
    if (!st && rename(tmp, c->path) != 0)
        st = mx_fail(MXATTN_ERROR_CACHE, "cannot put the rebuilt database in place of '%s': %s", c->path,
                     strerror(errno));
    if (st) {
        unlink(tmp);
        unlink(journal);
        return mx_fail_context(st, "cache database '%s' is damaged (%s) and could not be rebuilt", c->path, reason);
    }
    snprintf(c->recovery_note, sizeof c->recovery_note,
             "cache database '%s' was damaged (%.400s); rebuilt it with the rows that still read: "
             "%ld of %ld kernels, %ld of %ld tuning results, %ld of %ld measurements%s; "
             "the original was moved to '%s'",
             c->path, reason, n.kept[0], n.found[0], n.kept[1], n.found[1], n.kept[2], n.found[2],
             n.unreadable ? " (some pages could not be read at all)" : "", aside);
    return MXATTN_OK;
}

/* ---- open ---------------------------------------------------------------- */

static mxattn_status open_plain(const char *path, int flags, sqlite3 **out) {
    sqlite3 *db = NULL;
    *out = NULL;
    int rc = sqlite3_open_v2(path, &db, flags, NULL);
    if (rc != SQLITE_OK) {
        int sys = db ? sqlite3_system_errno(db) : 0;
        mxattn_status s = mx_fail(status_of(rc, sys) == MXATTN_ERROR_CACHE_FULL ? MXATTN_ERROR_CACHE_FULL
                                                                              : MXATTN_ERROR_CACHE,
                                  "cannot open cache database '%s': %s%s%s", path,
                                  db ? sqlite3_errmsg(db) : sqlite3_errstr(rc), sys ? ": " : "",
                                  sys ? strerror(sys) : "");
        sqlite3_close(db);
        return s;
    }
    sqlite3_busy_timeout(db, mx_db_busy_ms());
    sqlite3_extended_result_codes(db, 1);
    *out = db;
    return MXATTN_OK;
}

/* Switching to WAL needs an exclusive lock, and SQLite answers SQLITE_BUSY
 * at once (without the busy handler) when several processes race to switch a
 * new file.  WAL is persistent, so only the first opens ever switch; they
 * retry here for up to about ten seconds. */
static mxattn_status use_wal(sqlite3 *db) {
    int rc = SQLITE_BUSY;
    for (int attempt = 0; attempt < 200; attempt++) {
        sqlite3_stmt *stmt;
        rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &stmt, NULL);
        if (rc == SQLITE_OK) {
            rc = sqlite3_step(stmt);
            sqlite3_finalize(stmt);
            if (rc == SQLITE_ROW) return MXATTN_OK;
        }
        if (!is_busy(rc)) break;
        usleep(1000u * (unsigned)(5 + attempt % 50));
    }
    return mx_db_fail(db, rc, "cache: switching to WAL");
}

static int64_t read_int(sqlite3 *db, const char *sql, int64_t fallback) {
    sqlite3_stmt *stmt;
    int64_t v = fallback;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW)
        v = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return v;
}

/* Reads the schema in one snapshot (another process may be creating it):
 * CACHE_CORRUPT if it is damaged, CACHE_FOREIGN if the file, as SQLite sees
 * it with its WAL, carries another application's id. */
static mxattn_status read_schema(mx_cache *c, int *version, int64_t *last_check) {
    mxattn_status st = mx_db_exec(c->db, "BEGIN");
    if (st) return st;
    st = mx_schema_verify(c->db, version);
    int64_t app = read_int(c->db, "PRAGMA application_id", 0);
    *last_check = *version >= 4 ? read_int(c->db, "SELECT value FROM meta WHERE name='last_check'", 0) : 0;
    mx_db_rollback(c->db);
    if (!st && app != 0 && app != MX_CACHE_APPLICATION_ID) {
        char why[96];
        snprintf(why, sizeof why, "an SQLite file of another application, application_id 0x%08x", (unsigned)app);
        st = foreign(c->path, why);
    }
    return st;
}

/* Creates or migrates the schema, and stamps our application_id on a file
 * an older mxattn wrote without it. */
static mxattn_status migrate_if_old(sqlite3 *db, int version) {
    if (version == mx_cache_schema_version() &&
        read_int(db, "PRAGMA application_id", 0) == MX_CACHE_APPLICATION_ID)
        return MXATTN_OK;
    mxattn_status st = mx_db_begin_write(db);
    if (st) return st;
    st = mx_schema_migrate(db);
    if (!st) st = mx_db_exec(db, "PRAGMA application_id=" MX_STR(MX_CACHE_APPLICATION_ID));
    if (st) { mx_db_rollback(db); return mx_fail_context(st, "cache: creating or migrating the schema"); }
    return mx_db_commit(db);
}

/* Remembers that the integrity check passed now.  If this write fails the
 * only cost is another check on the next open, so its error is dropped. */
static void record_check(sqlite3 *db) {
    if (mx_db_begin_write(db) == MXATTN_OK) {
        if (sqlite3_exec(db, "INSERT OR REPLACE INTO meta(name, value) VALUES('last_check', strftime('%s','now'))",
                         NULL, NULL, NULL) == SQLITE_OK)
            mx_db_commit(db);
        else
            mx_db_rollback(db);
    }
    mx_clear_error();
}

/* One read-write attempt: WAL, schema, the daily integrity check. */
static mxattn_status open_read_write(mx_cache *c, int create, int *checked, int *version) {
    int64_t last_check = 0;
    *checked = 0;
    mxattn_status st = open_plain(c->path, SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0), &c->db);
    if (st) return st;
    /* A file or mount SQLite could only open read-only: the caller reopens it so. */
    if (sqlite3_db_readonly(c->db, "main") == 1)
        return mx_fail(MXATTN_ERROR_CACHE_READ_ONLY, "cache database '%s' is read-only", c->path);
    /* WAL lets readers proceed while one process writes; NORMAL sync is safe
     * in WAL (a power cut may lose the last commit, never corrupt) and a
     * cache can afford to lose a row. */
    st = use_wal(c->db);
    if (!st) st = mx_db_exec(c->db, "PRAGMA synchronous=NORMAL");
    if (!st) st = read_schema(c, version, &last_check);
    if (st) return st;
    int64_t now = mx_unix_now();
    if (*version > 0 && (last_check > now || now - last_check >= MX_CACHE_CHECK_INTERVAL_S)) {
        if ((st = quick_check(c->db))) return st;
        *checked = 1;
    }
    return MXATTN_OK;
}

/* Read-only: the file as it is, never migrated, checked or rebuilt.  Where
 * no -shm can be made beside it (a read-only directory or mount), SQLite's
 * immutable mode reads it without locks: nothing can write there anyway. */
static mxattn_status open_read_only(mx_cache *c, int dir_writable) {
    int version = 0;
    int64_t last_check;
    c->read_only = 1;
    mxattn_status st = dir_writable && access(c->path, W_OK) == 0
                           ? open_plain(c->path, SQLITE_OPEN_READONLY, &c->db)
                           : open_immutable(c->path, &c->db);
    if (!st) st = read_schema(c, &version, &last_check);
    if (st) return st;
    if (version == 0)
        return mx_fail(MXATTN_ERROR_NOT_FOUND, "cache database '%s' holds no mxattn tables yet (opened read-only)",
                       c->path);
    /* The readers need the v3 tuning key; v4 only added what writers use. */
    if (version < 3)
        return mx_fail(MXATTN_ERROR_CACHE_READ_ONLY, "cache database '%s' has schema version %d, which must be "
                       "migrated before it can be read, and it is read-only", c->path, version);
    return MXATTN_OK;
}

static int dir_is_writable(const char *path) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
    return access(dir, W_OK) == 0;
}

/* Closing without a checkpoint: a damaged file is kept aside as it was found,
 * its -wal not folded into it. */
static void close_db(mx_cache *c) {
    if (c->db) sqlite3_db_config(c->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    sqlite3_close_v2(c->db);
    c->db = NULL;
}

static mxattn_status open_and_repair(mx_cache *c) {
    file_kind kind;
    mxattn_status st = classify(c->path, &kind);
    if (st == MXATTN_ERROR_UNSUPPORTED) return mx_fail_context(st, "cache database '%s'", c->path);
    if (st) return st;
    if (kind == FILE_MISSING && (c->flags & (MX_CACHE_OPEN_EXISTING | MX_CACHE_OPEN_READ_ONLY)))
        return mx_fail(MXATTN_ERROR_NOT_FOUND, "no cache database at '%s' (nothing was created)", c->path);
    if (kind == FILE_MISSING && (st = make_parent_dirs(c->path))) return st;
    int dir_writable = dir_is_writable(c->path);
    int file_writable = kind == FILE_MISSING || access(c->path, W_OK) == 0;
    if ((c->flags & MX_CACHE_OPEN_READ_ONLY) || (kind != FILE_MISSING && !(dir_writable && file_writable))) {
        if (kind == FILE_EMPTY)
            return mx_fail(MXATTN_ERROR_NOT_FOUND, "cache database '%s' is empty and read-only", c->path);
        st = open_read_only(c, dir_writable);
        return st ? mx_fail_context(st, "cache database '%s'", c->path) : MXATTN_OK;
    }
    int checked = 0, version = 0;
    st = open_read_write(c, kind == FILE_MISSING, &checked, &version);
    if (st == MXATTN_ERROR_CACHE_READ_ONLY && kind != FILE_MISSING) {
        close_db(c);
        st = open_read_only(c, 0);
        return st ? mx_fail_context(st, "cache database '%s'", c->path) : MXATTN_OK;
    }
    if (st == MXATTN_ERROR_CACHE_CORRUPT) {
        char reason[512];
        snprintf(reason, sizeof reason, "%s", mx_error_message());
        close_db(c);
        if ((st = rebuild(c, reason))) return st;
        st = open_read_write(c, 0, &checked, &version);
        if (!st && !checked) { st = quick_check(c->db); checked = !st; }
    }
    if (st) return mx_fail_context(st, "cache database '%s'", c->path);
    if ((st = migrate_if_old(c->db, version))) return mx_fail_context(st, "cache database '%s'", c->path);
    /* A new file has nothing to check: its clock starts now. */
    if (checked || version == 0) record_check(c->db);
    return MXATTN_OK;
}

int mx_cache_after_failure(mx_cache *cache, mxattn_status *st) {
    if (!saw_corruption || !cache || cache->read_only) return 0;
    saw_corruption = 0;
    char reason[512];
    snprintf(reason, sizeof reason, "%s", mx_error_message());
    if (quick_check(cache->db) == MXATTN_OK) {
        mx_fail(*st, "%s", reason);
        return 0;
    }
    close_db(cache);
    mxattn_status rs = rebuild(cache, reason);
    int checked, version = 0;
    if (!rs) rs = open_read_write(cache, 0, &checked, &version);
    if (!rs) rs = migrate_if_old(cache->db, version);
    if (rs) {
        /* The handle must stay usable: an empty database in memory, so the
         * caller's next calls miss or fail cleanly instead of crashing. */
        char why[1024];
        snprintf(why, sizeof why, "%s", mx_error_message());
        if (cache->db) close_db(cache);
        if (open_plain(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, &cache->db) == MXATTN_OK)
            migrate_if_old(cache->db, 0);
        *st = mx_fail(*st, "%s; %s", reason, why);
        return 0;
    }
    record_check(cache->db);
    mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "%s", cache->recovery_note);
    return 1;
}

mxattn_status mx_cache_open_ex(const char *path, unsigned flags, mx_cache **out) {
    if (!out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_open: out is NULL");
    *out = NULL;
    if (flags & ~(MX_CACHE_OPEN_EXISTING | MX_CACHE_OPEN_READ_ONLY))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "mx_cache_open_ex: unknown flags 0x%x", flags);
    mx_cache *c = calloc(1, sizeof *c);
    if (!c) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "cache: out of memory");
    c->flags = flags;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&c->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    mxattn_status st = path ? join_path(c->path, sizeof c->path, path, "")
                            : mx_cache_default_path(c->path, sizeof c->path);
    if (!st && !c->path[0]) st = mx_fail(MXATTN_ERROR_CACHE, "cache path is empty");
    if (!st) st = open_and_repair(c);
    if (st) { mx_cache_close(c); return st; }
    if (c->recovery_note[0]) mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "%s", c->recovery_note);
    *out = c;
    return MXATTN_OK;
}

mxattn_status mx_cache_open(const char *path, mx_cache **out) { return mx_cache_open_ex(path, 0, out); }

void mx_cache_close(mx_cache *cache) {
    if (!cache) return;
    sqlite3_close_v2(cache->db);
    pthread_mutex_destroy(&cache->lock);
    free(cache);
}

void mx_cache_lock(mx_cache *cache) {
    pthread_mutex_lock(&cache->lock);
    saw_corruption = 0;
}
void mx_cache_unlock(mx_cache *cache) { pthread_mutex_unlock(&cache->lock); }

const char *mx_cache_path(const mx_cache *cache) { return cache->path; }

const char *mx_cache_recovered(const mx_cache *cache) {
    return cache->recovery_note[0] ? cache->recovery_note : NULL;
}

int mx_cache_read_only(const mx_cache *cache) { return cache && cache->read_only; }

static mxattn_status count_table(sqlite3 *db, const char *sql, long *out) {
    sqlite3_stmt *stmt;
    mxattn_status st = mx_db_prepare(db, sql, &stmt);
    if (st) return st;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) *out = (long)sqlite3_column_int64(stmt, 0);
    else st = mx_db_fail(db, rc, "cache: counting rows");
    sqlite3_finalize(stmt);
    return st;
}

static mxattn_status count_locked(mx_cache *cache, mx_cache_counts *counts) {
    if (!cache || !counts) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_count: NULL argument");
    mxattn_status st = count_table(cache->db, "SELECT count(*) FROM kernels", &counts->kernels);
    if (!st) st = count_table(cache->db, "SELECT count(*) FROM tune_results", &counts->tune_results);
    if (!st) st = count_table(cache->db, "SELECT count(*) FROM measurements", &counts->measurements);
    return st;
}

mxattn_status mx_cache_count(mx_cache *cache, mx_cache_counts *counts) {
    MX_CACHE_RETURN_LOCKED(cache, count_locked(cache, counts));
}
