/* The schema, its version (PRAGMA user_version) and the migrations between
 * versions.  A new database is built by running every migration from v1 on,
 * so a fresh file and a migrated one have the same columns in the same order.
 *
 *   v1  kernels, tune_results, measurements
 *   v2  tune_results.tuned_at, and an index for `mxattn query`'s filters
 *   v3  q_bucket in the tuning key of tune_results and measurements
 *   v4  PRAGMA application_id, kernels.last_used (LRU eviction), and a meta
 *       table that remembers when the last integrity check passed
 *   v5  seq_bucket is the keys' bucket, no longer the longer of the two
 * Each migration is frozen text: it must build exactly what it built when it
 * was written, whatever the current key is (MX_TUNE_KEY_COLUMNS_V2 for v1).
 */
#include "cache/cache_internal.h"
#include "util/err.h"
#include <stdio.h>
#include <string.h>

#define TUNE_KEY_DEFINITION                                                         \
    "gpu_name TEXT NOT NULL, sm_count INTEGER NOT NULL, "                           \
    "compute_capability INTEGER NOT NULL, driver_version INTEGER NOT NULL, "       \
    "nvrtc_version INTEGER NOT NULL, mxattn_version TEXT NOT NULL, "                \
    "template_hash TEXT NOT NULL, family TEXT NOT NULL, head_dim INTEGER NOT NULL, " \
    "dtype TEXT NOT NULL, out_dtype TEXT NOT NULL, causal INTEGER NOT NULL, "      \
    "gqa INTEGER NOT NULL, layout TEXT NOT NULL, seq_bucket INTEGER NOT NULL"

static const char SCHEMA_V1[] =
    "CREATE TABLE kernels("
    " key TEXT PRIMARY KEY NOT NULL, arch TEXT NOT NULL, nvrtc_version INTEGER NOT NULL,"
    " kernel_names TEXT NOT NULL, cubin BLOB NOT NULL, cubin_sha256 TEXT NOT NULL,"
    " compile_ms REAL NOT NULL, registers INTEGER NOT NULL, shared_bytes INTEGER NOT NULL,"
    " spill_bytes INTEGER NOT NULL, created_at INTEGER NOT NULL);"
    "CREATE TABLE tune_results(" TUNE_KEY_DEFINITION ","
    " config TEXT NOT NULL, median_ms REAL NOT NULL, tops REAL NOT NULL, default_ms REAL NOT NULL,"
    " PRIMARY KEY(" MX_TUNE_KEY_COLUMNS_V2 "));"
    "CREATE TABLE measurements(" TUNE_KEY_DEFINITION ","
    " config TEXT NOT NULL, status TEXT NOT NULL, median_ms REAL NOT NULL, spread REAL NOT NULL,"
    " registers INTEGER NOT NULL, measured_at INTEGER NOT NULL,"
    " PRIMARY KEY(" MX_TUNE_KEY_COLUMNS_V2 ", config));"
    "PRAGMA user_version=1;";

/* When each result was tuned (old rows read 0: unknown), and an index over
 * the columns `mxattn query` filters on. */
static const char SCHEMA_V2[] =
    "ALTER TABLE tune_results ADD COLUMN tuned_at INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX tune_results_by_problem ON tune_results(family, head_dim, dtype, causal);"
    "PRAGMA user_version=2;";

/* The query-length bucket joins the key, so a decode problem (seq_q 1) and a
 * prefill one with the same keys no longer share a tuned configuration (at
 * f16 D=64 the prefill winner runs decode 2.4x slower; bench/NOTES.md,
 * 2026-11-29).  SQLite cannot change a primary key in place: each table is
 * rebuilt.  Old rows take q_bucket = seq_bucket, the reading of the tuning
 * runs that wrote them (`mxattn tune` tunes seq_q = seq_k unless a spec says
 * otherwise). */
static const char SCHEMA_V3[] =
    "CREATE TABLE tune_results_v3(" TUNE_KEY_DEFINITION ", q_bucket INTEGER NOT NULL,"
    " config TEXT NOT NULL, median_ms REAL NOT NULL, tops REAL NOT NULL, default_ms REAL NOT NULL,"
    " tuned_at INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(" MX_TUNE_KEY_COLUMNS_V2 ", q_bucket));"
    "INSERT INTO tune_results_v3 SELECT " MX_TUNE_KEY_COLUMNS_V2 ", seq_bucket,"
    " config, median_ms, tops, default_ms, tuned_at FROM tune_results;"
    "DROP TABLE tune_results;"
    "ALTER TABLE tune_results_v3 RENAME TO tune_results;"
    "CREATE INDEX tune_results_by_problem ON tune_results(family, head_dim, dtype, causal);"
    "CREATE TABLE measurements_v3(" TUNE_KEY_DEFINITION ", q_bucket INTEGER NOT NULL,"
    " config TEXT NOT NULL, status TEXT NOT NULL, median_ms REAL NOT NULL, spread REAL NOT NULL,"
    " registers INTEGER NOT NULL, measured_at INTEGER NOT NULL,"
    " PRIMARY KEY(" MX_TUNE_KEY_COLUMNS_V2 ", q_bucket, config));"
    "INSERT INTO measurements_v3 SELECT " MX_TUNE_KEY_COLUMNS_V2 ", seq_bucket,"
    " config, status, median_ms, spread, registers, measured_at FROM measurements;"
    "DROP TABLE measurements;"
    "ALTER TABLE measurements_v3 RENAME TO measurements;"
    "PRAGMA user_version=3;";

/* The application_id marks the file as ours, so a file that is not (another
 * program's SQLite database) is refused and never moved or rebuilt; v1..v3
 * files, which lack it, are recognised by their tables and stamped here.
 * last_used drives the eviction of the least recently used kernels once the
 * cubins pass the size limit; old kernels start at created_at.  meta holds
 * 'last_check', the time of the last integrity check that passed, so the
 * check (5.3 s cold on a 1.4 GB file) runs once a day, not on every open. */
static const char SCHEMA_V4[] =
    "ALTER TABLE kernels ADD COLUMN last_used INTEGER NOT NULL DEFAULT 0;"
    "UPDATE kernels SET last_used=created_at;"
    "CREATE INDEX kernels_by_last_used ON kernels(last_used);"
    "CREATE TABLE meta(name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);"
    "PRAGMA application_id=" MX_STR(MX_CACHE_APPLICATION_ID) ";"
    "PRAGMA user_version=4;";

/* seq_bucket was the bucket of max(seq_q, seq_k), at least 256; it is now
 * seq_k's alone, at least 64, so cross-attention's key lengths are tuned
 * apart (tuner/tune.h).  A v4 row whose seq_bucket is above its q_bucket
 * had the longer keys: its reading does not change.  One at the old floor
 * (256) with a shorter query bucket was, as `mxattn tune` runs unless told
 * otherwise, self-attention at the query's length: it moves to that length's
 * new key bucket (64 at the least, tuner/tune.h's floor).  A row with equal
 * buckets had keys no longer than its queries, and is read as self-attention
 * at that length, as it was applied before.  Nothing collides: no v4 row
 * has a seq_bucket below 256.  Import applies the same reading to older
 * files (mx_tune_key_from_v4). */
#define V4_REBUCKET(table)                                                                            \
    "UPDATE " table " SET seq_bucket=max(q_bucket,64) WHERE seq_bucket=256 AND q_bucket<256;"
static const char SCHEMA_V5[] = V4_REBUCKET("tune_results") V4_REBUCKET("measurements") "PRAGMA user_version=5;";

static const char *const MIGRATIONS[] = {SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5}; /* [i] makes version i + 1 */
#define SCHEMA_VERSION (int)(sizeof MIGRATIONS / sizeof MIGRATIONS[0])

int mx_cache_schema_version(void) { return SCHEMA_VERSION; }

static mxattn_status read_user_version(sqlite3 *db, int *version) {
    sqlite3_stmt *stmt;
    mxattn_status st = mx_db_prepare(db, "PRAGMA user_version", &stmt);
    if (st) return st;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) *version = sqlite3_column_int(stmt, 0);
    else st = mx_db_fail(db, rc, "reading the schema version");
    sqlite3_finalize(stmt);
    return st;
}

mxattn_status mx_schema_migrate(sqlite3 *db) {
    int version;
    /* Verify again inside the write transaction: another process may have
     * created or migrated the schema since this one looked. */
    mxattn_status st = mx_schema_verify(db, &version);
    for (int v = version; !st && v < SCHEMA_VERSION; v++) st = mx_db_exec(db, MIGRATIONS[v]);
    return st;
}

/* The columns each table must have at `version`; a prepare that names them
 * fails if the table is missing, a view, or lacks one. */
static const char *expected_columns(const char *table, int version) {
    if (!strcmp(table, "kernels"))
        return version >= 4 ? "SELECT " MX_KERNEL_COLUMNS ", last_used FROM kernels LIMIT 0"
                            : "SELECT " MX_KERNEL_COLUMNS " FROM kernels LIMIT 0";
    if (!strcmp(table, "meta")) return "SELECT name, value FROM meta LIMIT 0";
    if (!strcmp(table, "measurements"))
        return version >= 3
            ? "SELECT " MX_TUNE_KEY_COLUMNS ", config, status, median_ms, spread, registers,"
              " measured_at FROM measurements LIMIT 0"
            : "SELECT " MX_TUNE_KEY_COLUMNS_V2 ", config, status, median_ms, spread, registers,"
              " measured_at FROM measurements LIMIT 0";
    if (version >= 3)
        return "SELECT " MX_TUNE_KEY_COLUMNS ", config, median_ms, tops, default_ms, tuned_at FROM tune_results LIMIT 0";
    return version == 2
        ? "SELECT " MX_TUNE_KEY_COLUMNS_V2 ", config, median_ms, tops, default_ms, tuned_at FROM tune_results LIMIT 0"
        : "SELECT " MX_TUNE_KEY_COLUMNS_V2 ", config, median_ms, tops, default_ms FROM tune_results LIMIT 0";
}

static const char *const OUR_TABLES[] = {"kernels", "tune_results", "measurements", "meta"};
#define N_TABLES 4
/* meta joined at v4. */
static int tables_at(int version) { return version >= 4 ? N_TABLES : N_TABLES - 1; }

static int is_our_table(const char *name) {
    for (int i = 0; i < N_TABLES; i++)
        if (!strcmp(name, OUR_TABLES[i])) return 1;
    return 0;
}

/* Counts our tables and rejects any other (a file that belongs to someone else). */
static mxattn_status scan_tables(sqlite3 *db, int *ours) {
    sqlite3_stmt *stmt;
    mxattn_status st = mx_db_prepare(db,
        "SELECT name FROM sqlite_schema WHERE type IN ('table','view','trigger')"
        " AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'", &stmt);
    if (st) return st;
    int rc;
    *ours = 0;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(stmt, 0);
        if (!name || !is_our_table(name)) {
            st = mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "foreign schema: object '%.64s' is not one of mxattn's",
                         name ? name : "?");
            break;
        }
        (*ours)++;
    }
    if (!st && rc != SQLITE_DONE) st = mx_db_fail(db, rc, "reading the schema");
    sqlite3_finalize(stmt);
    return st;
}

static mxattn_status check_columns(sqlite3 *db, int version) {
    for (int i = 0; i < tables_at(version); i++) {
        sqlite3_stmt *stmt = NULL;
        int rc = sqlite3_prepare_v2(db, expected_columns(OUR_TABLES[i], version), -1, &stmt, NULL);
        sqlite3_finalize(stmt);
        if (rc != SQLITE_OK) {
            if ((rc & 0xff) != SQLITE_ERROR) return mx_db_fail(db, rc, "reading the schema");
            return mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "foreign schema: table %s: %s", OUR_TABLES[i],
                           sqlite3_errmsg(db));
        }
    }
    return MXATTN_OK;
}

mxattn_status mx_schema_verify(sqlite3 *db, int *version) {
    int tables = 0;
    mxattn_status st = read_user_version(db, version);
    if (!st) st = scan_tables(db, &tables);
    if (st) return st;
    /* A newer mxattn's file is not corrupt: refuse it without moving it aside. */
    if (*version > SCHEMA_VERSION)
        return mx_fail(MXATTN_ERROR_UNSUPPORTED, "schema version %d is newer than this build's %d: use a newer "
                       "mxattn or another database (the file was left as it is)", *version, SCHEMA_VERSION);
    if (*version < 0)
        return mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "schema version %d is not one this build knows (1..%d)",
                       *version, SCHEMA_VERSION);
    if (*version == 0)
        return tables == 0 ? MXATTN_OK
                           : mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "foreign schema: tables without a version");
    if (tables != tables_at(*version))
        return mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "foreign schema: %d of mxattn's %d tables", tables,
                       tables_at(*version));
    return check_columns(db, *version);
}
