/* Opening the database: where it lives, creating it, recognising a damaged or
 * foreign file and moving it aside, and the transaction helpers every write
 * goes through. */
#include "cache/cache_internal.h"
#include "util/err.h"
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Another process may hold the write lock for a while (a long import, a
 * VACUUM); wait this long per attempt before BEGIN IMMEDIATE is retried. */
#define BUSY_TIMEOUT_MS 10000
#define WRITE_ATTEMPTS 6

/* ---- small helpers shared by the cache files ---------------------------- */

static int is_corruption(int rc) {
    int primary = rc & 0xff;
    return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

mxattn_status mx_db_fail(sqlite3 *db, int rc, const char *what) {
    mxattn_status s = is_corruption(rc) ? MXATTN_ERROR_CACHE_CORRUPT : MXATTN_ERROR_CACHE;
    const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    int sys = db ? sqlite3_system_errno(db) : 0;
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

mxattn_status mx_db_begin_write(sqlite3 *db) {
    int rc = SQLITE_BUSY;
    /* The busy handler already waited BUSY_TIMEOUT_MS; a holder that long is
     * rare (VACUUM of a large file), so try again rather than fail the write. */
    for (int attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
        rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
        usleep(1000u * (unsigned)(1 + attempt * 10));
    }
    return rc == SQLITE_OK ? MXATTN_OK : mx_db_fail(db, rc, "cache: starting a write transaction");
}

mxattn_status mx_db_commit(sqlite3 *db) {
    int rc = SQLITE_BUSY;
    for (int attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        if ((rc & 0xff) != SQLITE_BUSY) break;
        usleep(1000u * (unsigned)(1 + attempt * 10));
    }
    if (rc == SQLITE_OK) return MXATTN_OK;
    mxattn_status s = mx_db_fail(db, rc, "cache: committing");
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

/* ---- recognising a bad file and moving it aside ------------------------- */

static mxattn_status quick_check(sqlite3 *db) {
    sqlite3_stmt *stmt;
    mxattn_status st = mx_db_prepare(db, "PRAGMA quick_check(1)", &stmt);
    if (st) return st;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        const char *verdict = (const char *)sqlite3_column_text(stmt, 0);
        if (!verdict || strcmp(verdict, "ok") != 0)
            st = mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "integrity check failed: %s", verdict ? verdict : "?");
    } else {
        st = mx_db_fail(db, rc, "integrity check");
    }
    sqlite3_finalize(stmt);
    return st;
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
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) break;
        usleep(1000u * (unsigned)(5 + attempt % 50));
    }
    return mx_db_fail(db, rc, "cache: switching to WAL");
}

/* Reads the header and schema: CACHE_CORRUPT if the file is not ours. */
static mxattn_status probe(sqlite3 *db, int *version) {
    /* WAL lets readers proceed while one process writes; NORMAL sync is safe
     * in WAL (a power cut may lose the last commit, never corrupt) and a
     * cache can afford to lose a row. */
    mxattn_status st = use_wal(db);
    if (!st) st = mx_db_exec(db, "PRAGMA synchronous=NORMAL");
    if (!st) st = quick_check(db);
    if (st) return st;
    /* One read transaction, so the version and the tables are one snapshot
     * even while another process is creating the schema. */
    MX_TRY(mx_db_exec(db, "BEGIN"));
    st = mx_schema_verify(db, version);
    mx_db_rollback(db);
    return st;
fail:
    return st;
}

static mxattn_status open_connection(const char *path, sqlite3 **out) {
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK) {
        int sys = db ? sqlite3_system_errno(db) : 0;
        mxattn_status s = mx_fail(MXATTN_ERROR_CACHE, "cannot open cache database '%s': %s%s%s", path,
                                  db ? sqlite3_errmsg(db) : sqlite3_errstr(rc),
                                  sys ? ": " : "", sys ? strerror(sys) : "");
        sqlite3_close(db);
        return s;
    }
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    sqlite3_extended_result_codes(db, 1);
    *out = db;
    return MXATTN_OK;
}

/* Renames `from` (if it exists) to `to`; missing is fine. */
static mxattn_status move_if_present(const char *from, const char *to) {
    if (rename(from, to) == 0 || errno == ENOENT) return MXATTN_OK;
    return mx_fail(MXATTN_ERROR_CACHE, "cannot move corrupt cache '%s' aside to '%s': %s", from, to,
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
    return mx_fail(MXATTN_ERROR_CACHE, "cannot find a name to move corrupt cache '%s' aside", path);
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

/* ---- open ---------------------------------------------------------------- */

static mxattn_status migrate_if_old(sqlite3 *db, int version) {
    if (version == mx_cache_schema_version()) return MXATTN_OK;
    mxattn_status st = mx_db_begin_write(db);
    if (st) return st;
    st = mx_schema_migrate(db);
    if (st) { mx_db_rollback(db); return mx_fail_context(st, "cache: creating or migrating the schema"); }
    return mx_db_commit(db);
}

/* Looks at the first 100 bytes before SQLite does: SQLite deletes the -wal
 * of a file it takes for empty, which would destroy evidence we move aside.
 * An empty file is fine (a new database); unreadable ones are left for
 * SQLite to report. */
static mxattn_status check_header(const char *path) {
    static const char MAGIC[16] = "SQLite format 3";
    unsigned char header[100];
    FILE *f = fopen(path, "rb");
    if (!f) return MXATTN_OK;
    size_t n = fread(header, 1, sizeof header, f);
    fclose(f);
    if (n == 0) return MXATTN_OK;
    if (n < sizeof header || memcmp(header, MAGIC, sizeof MAGIC) != 0)
        return mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "not an SQLite database: bad or short header");
    return MXATTN_OK;
}

/* Opens and probes; on corruption moves the file aside once and starts over. */
static mxattn_status open_and_repair(mx_cache *c) {
    int version = 0;
    mxattn_status st = check_header(c->path);
    if (!st) st = open_connection(c->path, &c->db);
    if (!st) st = probe(c->db, &version);
    if (st == MXATTN_ERROR_CACHE_CORRUPT) {
        char reason[512], aside[PATH_MAX + 64];
        snprintf(reason, sizeof reason, "%s", mx_error_message());
        sqlite3_close(c->db);
        c->db = NULL;
        if ((st = move_aside(c->path, aside, sizeof aside))) return st;
        snprintf(c->recovery_note, sizeof c->recovery_note,
                 "cache database '%s' was unusable (%s); moved it to '%s' and started a new one",
                 c->path, reason, aside);
        if ((st = open_connection(c->path, &c->db))) return st;
        st = probe(c->db, &version);
    }
    if (st) return mx_fail_context(st, "cache database '%s'", c->path);
    return migrate_if_old(c->db, version);
}

mxattn_status mx_cache_open(const char *path, mx_cache **out) {
    if (!out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_open: out is NULL");
    *out = NULL;
    mx_cache *c = calloc(1, sizeof *c);
    if (!c) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "cache: out of memory");
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&c->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    mxattn_status st = path ? join_path(c->path, sizeof c->path, path, "")
                            : mx_cache_default_path(c->path, sizeof c->path);
    if (!st && !c->path[0]) st = mx_fail(MXATTN_ERROR_CACHE, "cache path is empty");
    if (!st) st = make_parent_dirs(c->path);
    if (!st) st = open_and_repair(c);
    if (st) { mx_cache_close(c); return st; }
    if (c->recovery_note[0]) mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "%s", c->recovery_note);
    *out = c;
    return MXATTN_OK;
}

void mx_cache_close(mx_cache *cache) {
    if (!cache) return;
    sqlite3_close_v2(cache->db);
    pthread_mutex_destroy(&cache->lock);
    free(cache);
}

void mx_cache_lock(mx_cache *cache) { pthread_mutex_lock(&cache->lock); }
void mx_cache_unlock(mx_cache *cache) { pthread_mutex_unlock(&cache->lock); }

const char *mx_cache_path(const mx_cache *cache) { return cache->path; }

const char *mx_cache_recovered(const mx_cache *cache) {
    return cache->recovery_note[0] ? cache->recovery_note : NULL;
}

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

mxattn_status mx_cache_count(mx_cache *cache, mx_cache_counts *counts) {
    mx_cache_lock(cache);
    mxattn_status st = count_table(cache->db, "SELECT count(*) FROM kernels", &counts->kernels);
    if (!st) st = count_table(cache->db, "SELECT count(*) FROM tune_results", &counts->tune_results);
    if (!st) st = count_table(cache->db, "SELECT count(*) FROM measurements", &counts->measurements);
    mx_cache_unlock(cache);
    return st;
}
