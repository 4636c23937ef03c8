/* Tuning results (the winner per key) and measurements (every candidate). */
#include "cache/cache_internal.h"
#include "util/err.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- keys ---------------------------------------------------------------- */

static int fits(const char *s, size_t cap) { return memchr(s, 0, cap) != NULL; }

mxattn_status mx_check_tune_key(const mx_tune_key *k) {
    if (!fits(k->gpu_name, sizeof k->gpu_name) || !fits(k->mxattn_version, sizeof k->mxattn_version) ||
        !fits(k->template_hash, sizeof k->template_hash) || !fits(k->family, sizeof k->family) ||
        !fits(k->dtype, sizeof k->dtype) || !fits(k->out_dtype, sizeof k->out_dtype) ||
        !fits(k->layout, sizeof k->layout))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cache: a tuning key's text field is not terminated");
    if (!k->gpu_name[0] || !k->family[0] || !k->dtype[0] || !k->mxattn_version[0])
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cache: a tuning key needs gpu_name, family, dtype and mxattn_version");
    return MXATTN_OK;
}

int mx_bind_tune_key(sqlite3_stmt *s, const mx_tune_key *k) {
    int rc = 0;
    rc |= sqlite3_bind_text(s, 1, k->gpu_name, -1, SQLITE_STATIC);
    rc |= sqlite3_bind_int(s, 2, k->sm_count);
    rc |= sqlite3_bind_int(s, 3, k->compute_capability);
    rc |= sqlite3_bind_int(s, 4, k->driver_version);
    rc |= sqlite3_bind_int(s, 5, k->nvrtc_version);
    rc |= sqlite3_bind_text(s, 6, k->mxattn_version, -1, SQLITE_STATIC);
    rc |= sqlite3_bind_text(s, 7, k->template_hash, -1, SQLITE_STATIC);
    rc |= sqlite3_bind_text(s, 8, k->family, -1, SQLITE_STATIC);
    rc |= sqlite3_bind_int(s, 9, k->head_dim);
    rc |= sqlite3_bind_text(s, 10, k->dtype, -1, SQLITE_STATIC);
    rc |= sqlite3_bind_text(s, 11, k->out_dtype, -1, SQLITE_STATIC);
    rc |= sqlite3_bind_int(s, 12, k->causal);
    rc |= sqlite3_bind_int(s, 13, k->gqa);
    rc |= sqlite3_bind_text(s, 14, k->layout, -1, SQLITE_STATIC);
    rc |= sqlite3_bind_int(s, 15, k->seq_bucket);
    rc |= sqlite3_bind_int(s, 16, k->q_bucket);
    return rc;
}

int mx_column_text_copy(sqlite3_stmt *stmt, int col, char *dst, size_t cap) {
    const unsigned char *text = sqlite3_column_text(stmt, col);
    size_t n = (size_t)sqlite3_column_bytes(stmt, col);
    if (!text || n >= cap || strlen((const char *)text) != n) return 0;
    memcpy(dst, text, n + 1);
    return 1;
}

/* Integers from a foreign file may be anything; keep only what fits an int. */
static int column_int(sqlite3_stmt *stmt, int col, int *out) {
    if (sqlite3_column_type(stmt, col) != SQLITE_INTEGER) return 0;
    sqlite3_int64 v = sqlite3_column_int64(stmt, col);
    if (v < -2147483647LL || v > 2147483647LL) return 0;
    *out = (int)v;
    return 1;
}

mxattn_status mx_read_tune_key(sqlite3_stmt *s, int c, mx_tune_key *k) {
    memset(k, 0, sizeof *k);
    int ok = mx_column_text_copy(s, c + 0, k->gpu_name, sizeof k->gpu_name) &&
             column_int(s, c + 1, &k->sm_count) && column_int(s, c + 2, &k->compute_capability) &&
             column_int(s, c + 3, &k->driver_version) && column_int(s, c + 4, &k->nvrtc_version) &&
             mx_column_text_copy(s, c + 5, k->mxattn_version, sizeof k->mxattn_version) &&
             mx_column_text_copy(s, c + 6, k->template_hash, sizeof k->template_hash) &&
             mx_column_text_copy(s, c + 7, k->family, sizeof k->family) &&
             column_int(s, c + 8, &k->head_dim) &&
             mx_column_text_copy(s, c + 9, k->dtype, sizeof k->dtype) &&
             mx_column_text_copy(s, c + 10, k->out_dtype, sizeof k->out_dtype) &&
             column_int(s, c + 11, &k->causal) && column_int(s, c + 12, &k->gqa) &&
             mx_column_text_copy(s, c + 13, k->layout, sizeof k->layout) &&
             column_int(s, c + 14, &k->seq_bucket) && column_int(s, c + 15, &k->q_bucket);
    if (!ok) return mx_fail(MXATTN_ERROR_INVALID_VALUE, "a tuning key field has the wrong type or is too long");
    return mx_check_tune_key(k);
}

/* ---- tuning results ------------------------------------------------------ */

static mxattn_status check_result(const mx_tune_result *r) {
    if (!fits(r->config, sizeof r->config) || !r->config[0])
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cache: a tuning result needs a config string");
    if (!isfinite(r->median_ms) || r->median_ms <= 0 || !isfinite(r->tops) || !isfinite(r->default_ms))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cache: a tuning result needs a finite, positive time");
    return MXATTN_OK;
}

mxattn_status mx_tune_upsert(sqlite3 *db, const mx_tune_key *key, const mx_tune_result *r,
                             int replace, int *changed) {
    static const char REPLACE[] =
        "INSERT INTO tune_results(" MX_TUNE_KEY_COLUMNS ", config, median_ms, tops, default_ms, tuned_at)"
        " VALUES(" MX_TUNE_KEY_PLACEHOLDERS ",?17,?18,?19,?20,?21)"
        " ON CONFLICT DO UPDATE SET config=excluded.config, median_ms=excluded.median_ms,"
        " tops=excluded.tops, default_ms=excluded.default_ms, tuned_at=excluded.tuned_at";
    static const char KEEP_FASTER[] =
        "INSERT INTO tune_results(" MX_TUNE_KEY_COLUMNS ", config, median_ms, tops, default_ms, tuned_at)"
        " VALUES(" MX_TUNE_KEY_PLACEHOLDERS ",?17,?18,?19,?20,?21)"
        " ON CONFLICT DO UPDATE SET config=excluded.config, median_ms=excluded.median_ms,"
        " tops=excluded.tops, default_ms=excluded.default_ms, tuned_at=excluded.tuned_at"
        " WHERE excluded.median_ms < tune_results.median_ms";
    mxattn_status st = check_result(r);
    if (st) return st;
    sqlite3_stmt *stmt;
    if ((st = mx_db_prepare(db, replace ? REPLACE : KEEP_FASTER, &stmt))) return st;
    mx_bind_tune_key(stmt, key);
    sqlite3_bind_text(stmt, MX_TUNE_KEY_NCOLS + 1, r->config, -1, SQLITE_STATIC);
    sqlite3_bind_double(stmt, MX_TUNE_KEY_NCOLS + 2, r->median_ms);
    sqlite3_bind_double(stmt, MX_TUNE_KEY_NCOLS + 3, r->tops);
    sqlite3_bind_double(stmt, MX_TUNE_KEY_NCOLS + 4, r->default_ms);
    sqlite3_bind_int64(stmt, MX_TUNE_KEY_NCOLS + 5, r->tuned_at ? r->tuned_at : mx_unix_now());
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE) st = mx_db_fail(db, rc, "cache: storing a tuning result");
    else if (changed) *changed = sqlite3_changes(db) > 0;
    sqlite3_finalize(stmt);
    return st;
}

static mxattn_status put_tune_locked(mx_cache *cache, const mx_tune_key *key, const mx_tune_result *r) {
    if (!cache || !key || !r) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_put_tune: NULL argument");
    mxattn_status st = mx_check_tune_key(key);
    if (!st) st = check_result(r);
    if (!st) st = mx_db_begin_write(cache->db);
    if (st) return st;
    if ((st = mx_tune_upsert(cache->db, key, r, 1, NULL))) { mx_db_rollback(cache->db); return st; }
    return mx_db_commit(cache->db);
}

mxattn_status mx_cache_put_tune(mx_cache *cache, const mx_tune_key *key, const mx_tune_result *r) {
    MX_CACHE_RETURN_LOCKED(cache, put_tune_locked(cache, key, r));
}

void mx_read_result_numbers(sqlite3_stmt *s, int c, mx_tune_result *r) {
    r->median_ms = sqlite3_column_double(s, c + 1);
    r->tops = sqlite3_column_double(s, c + 2);
    r->default_ms = sqlite3_column_double(s, c + 3);
    r->tuned_at = sqlite3_column_int64(s, c + 4);
}

static mxattn_status read_result(sqlite3_stmt *s, int c, mx_tune_result *r) {
    memset(r, 0, sizeof *r);
    if (!mx_column_text_copy(s, c, r->config, sizeof r->config))
        return mx_fail(MXATTN_ERROR_CACHE_CORRUPT, "cache: a tuning result's config is malformed");
    mx_read_result_numbers(s, c, r);
    return MXATTN_OK;
}

static mxattn_status get_tune_locked(mx_cache *cache, const mx_tune_key *key, mx_tune_result *out) {
    if (!cache || !key || !out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_get_tune: NULL argument");
    mxattn_status st = mx_check_tune_key(key);
    sqlite3_stmt *stmt;
    if (st || (st = mx_db_prepare(cache->db,
            "SELECT config, median_ms, tops, default_ms, tuned_at FROM tune_results WHERE " MX_TUNE_KEY_MATCH,
            &stmt)))
        return st;
    mx_bind_tune_key(stmt, key);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) st = read_result(stmt, 0, out);
    else if (rc == SQLITE_DONE) st = mx_fail(MXATTN_ERROR_NOT_FOUND, "cache: no tuning result for this GPU and problem");
    else st = mx_db_fail(cache->db, rc, "cache: reading a tuning result");
    sqlite3_finalize(stmt);
    return st;
}

mxattn_status mx_cache_get_tune(mx_cache *cache, const mx_tune_key *key, mx_tune_result *out) {
    MX_CACHE_RETURN_LOCKED(cache, get_tune_locked(cache, key, out));
}

/* Binds the whole key, though the build fields (?4 through ?7) are only
 * compared in ORDER BY: a preference, not a filter.  The equalities on
 * family, head_dim, dtype and causal let tune_results_by_problem (schema.c)
 * serve the search; the key columns after tuned_at only make ties stable. */
static const char NEAREST_SQL[] =
    "SELECT " MX_TUNE_KEY_COLUMNS ", config, median_ms, tops, default_ms, tuned_at FROM tune_results"
    " WHERE family=?8 AND head_dim=?9 AND dtype=?10 AND causal=?12 AND gpu_name=?1 AND sm_count=?2"
    " AND compute_capability=?3 AND out_dtype=?11 AND gqa=?13 AND layout=?14 AND seq_bucket=?15"
    " AND q_bucket=?16"
    " ORDER BY template_hash=?7 DESC, mxattn_version=?6 DESC, nvrtc_version=?5 DESC,"
    " driver_version=?4 DESC, tuned_at DESC, driver_version DESC, nvrtc_version DESC,"
    " mxattn_version DESC, template_hash"
    " LIMIT 1";

const char *mx_cache_tune_nearest_sql(void) { return NEAREST_SQL; }

static mxattn_status get_nearest_locked(mx_cache *cache, const mx_tune_key *key, mx_tune_result *out,
                                        mx_tune_key *found) {
    if (!cache || !key || !out)
        return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_get_tune_nearest: NULL argument");
    mxattn_status st = mx_check_tune_key(key);
    sqlite3_stmt *stmt;
    if (st || (st = mx_db_prepare(cache->db, NEAREST_SQL, &stmt))) return st;
    mx_bind_tune_key(stmt, key);
    mx_tune_key row_key;
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
        /* A row that does not read back is reported, as mx_cache_query
         * reports it, not skipped: the caller builds the default. */
        st = mx_read_tune_key(stmt, 0, &row_key);
        if (!st) st = read_result(stmt, MX_TUNE_KEY_NCOLS, out);
        if (!st && found) *found = row_key;
    } else if (rc == SQLITE_DONE) {
        st = mx_fail(MXATTN_ERROR_NOT_FOUND, "cache: no tuning result for this GPU and problem from any build");
    } else {
        st = mx_db_fail(cache->db, rc, "cache: reading the nearest tuning result");
    }
    sqlite3_finalize(stmt);
    return st;
}

mxattn_status mx_cache_get_tune_nearest(mx_cache *cache, const mx_tune_key *key, mx_tune_result *out,
                                        mx_tune_key *found) {
    MX_CACHE_RETURN_LOCKED(cache, get_nearest_locked(cache, key, out, found));
}

/* ---- measurements -------------------------------------------------------- */

int mx_measure_status_known(const char *s) {
    static const char *const known[] = {MX_MEASURE_OK, MX_MEASURE_COMPILE_FAILED, MX_MEASURE_OUT_OF_RESOURCES,
                                        MX_MEASURE_WRONG_RESULT, MX_MEASURE_LAUNCH_FAILED};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(s, known[i])) return 1;
    return 0;
}

static mxattn_status add_measurement_locked(mx_cache *cache, const mx_tune_key *key, const mx_measurement *m) {
    if (!cache || !key || !m) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_add_measurement: NULL argument");
    mxattn_status st = mx_check_tune_key(key);
    if (st) return st;
    if (!fits(m->config, sizeof m->config) || !m->config[0] || !fits(m->status, sizeof m->status) ||
        !mx_measure_status_known(m->status))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cache: a measurement needs a config and a known status");
    sqlite3_stmt *stmt;
    if ((st = mx_db_begin_write(cache->db))) return st;
    st = mx_db_prepare(cache->db,
        "INSERT OR REPLACE INTO measurements(" MX_TUNE_KEY_COLUMNS ", config, status, median_ms, spread,"
        " registers, measured_at) VALUES(" MX_TUNE_KEY_PLACEHOLDERS ",?17,?18,?19,?20,?21,?22)", &stmt);
    if (st) { mx_db_rollback(cache->db); return st; }
    mx_bind_tune_key(stmt, key);
    sqlite3_bind_text(stmt, MX_TUNE_KEY_NCOLS + 1, m->config, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, MX_TUNE_KEY_NCOLS + 2, m->status, -1, SQLITE_STATIC);
    sqlite3_bind_double(stmt, MX_TUNE_KEY_NCOLS + 3, isfinite(m->median_ms) ? m->median_ms : 0);
    sqlite3_bind_double(stmt, MX_TUNE_KEY_NCOLS + 4, isfinite(m->spread) ? m->spread : 0);
    sqlite3_bind_int(stmt, MX_TUNE_KEY_NCOLS + 5, m->registers);
    sqlite3_bind_int64(stmt, MX_TUNE_KEY_NCOLS + 6, m->measured_at ? m->measured_at : mx_unix_now());
    int rc = sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) {
        st = mx_db_fail(cache->db, rc, "cache: storing a measurement");
        mx_db_rollback(cache->db);
        return st;
    }
    return mx_db_commit(cache->db);
}

mxattn_status mx_cache_add_measurement(mx_cache *cache, const mx_tune_key *key, const mx_measurement *m) {
    MX_CACHE_RETURN_LOCKED(cache, add_measurement_locked(cache, key, m));
}

static mxattn_status has_measurement_locked(mx_cache *cache, const mx_tune_key *key, const char *config, int *measured) {
    if (!cache || !key || !config || !measured)
        return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_has_measurement: NULL argument");
    *measured = 0;
    sqlite3_stmt *stmt;
    mxattn_status st = mx_check_tune_key(key);
    if (st || (st = mx_db_prepare(cache->db,
            "SELECT 1 FROM measurements WHERE " MX_TUNE_KEY_MATCH " AND config=?17", &stmt)))
        return st;
    mx_bind_tune_key(stmt, key);
    sqlite3_bind_text(stmt, MX_TUNE_KEY_NCOLS + 1, config, -1, SQLITE_STATIC);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) *measured = 1;
    else if (rc != SQLITE_DONE) st = mx_db_fail(cache->db, rc, "cache: looking up a measurement");
    sqlite3_finalize(stmt);
    return st;
}

mxattn_status mx_cache_has_measurement(mx_cache *cache, const mx_tune_key *key, const char *config, int *measured) {
    MX_CACHE_RETURN_LOCKED(cache, has_measurement_locked(cache, key, config, measured));
}

/* Appends to a growing array; doubling keeps the copies linear overall. */
static int grow(void **items, int *cap, int count, size_t size) {
    if (count < *cap) return 1;
    int new_cap = *cap ? *cap * 2 : 16;
    void *bigger = realloc(*items, (size_t)new_cap * size);
    if (!bigger) return 0;
    *items = bigger;
    *cap = new_cap;
    return 1;
}

/* Steps `stmt` to its end, reading each row with `read` into a growing
 * array of `size`-byte items, and finalizes it.  On success sets *items (the
 * caller frees it; NULL when no row matched) and *count; on failure frees
 * what it read and leaves both alone. */
static mxattn_status read_rows(sqlite3 *db, sqlite3_stmt *stmt, size_t size,
                               mxattn_status (*read)(sqlite3_stmt *, void *), const char *what,
                               void **items, int *count) {
    void *all = NULL;
    int cap = 0, n = 0, rc;
    mxattn_status st = MXATTN_OK;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        if (!grow(&all, &cap, n, size)) { rc = SQLITE_NOMEM; break; }
        if ((st = read(stmt, (char *)all + (size_t)n * size))) break;
        n++;
    }
    if (!st && rc != SQLITE_DONE) st = mx_db_fail(db, rc, what);
    sqlite3_finalize(stmt);
    if (st) { free(all); return st; }
    *items = all;
    *count = n;
    return MXATTN_OK;
}

static mxattn_status read_measurement(sqlite3_stmt *s, void *item) {
    mx_measurement *m = item;
    memset(m, 0, sizeof *m);
    mx_column_text_copy(s, 0, m->config, sizeof m->config);
    mx_column_text_copy(s, 1, m->status, sizeof m->status);
    m->median_ms = sqlite3_column_double(s, 2);
    m->spread = sqlite3_column_double(s, 3);
    m->registers = sqlite3_column_int(s, 4);
    m->measured_at = sqlite3_column_int64(s, 5);
    return MXATTN_OK;
}

static mxattn_status list_measurements_locked(mx_cache *cache, const mx_tune_key *key, mx_measurement **out, int *count) {
    if (!cache || !key || !out || !count)
        return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_list_measurements: NULL argument");
    *out = NULL;
    *count = 0;
    sqlite3_stmt *stmt;
    mxattn_status st = mx_check_tune_key(key);
    if (st || (st = mx_db_prepare(cache->db,
            "SELECT config, status, median_ms, spread, registers, measured_at FROM measurements"
            " WHERE " MX_TUNE_KEY_MATCH " ORDER BY status <> 'ok', median_ms, config", &stmt)))
        return st;
    mx_bind_tune_key(stmt, key);
    void *items;
    if ((st = read_rows(cache->db, stmt, sizeof **out, read_measurement, "cache: listing measurements", &items,
                        count)))
        return st;
    *out = items;
    return MXATTN_OK;
}

mxattn_status mx_cache_list_measurements(mx_cache *cache, const mx_tune_key *key, mx_measurement **out, int *count) {
    MX_CACHE_RETURN_LOCKED(cache, list_measurements_locked(cache, key, out, count));
}

/* ---- queries ------------------------------------------------------------- */

static mxattn_status read_row(sqlite3_stmt *s, void *item) {
    mx_tune_row *row = item;
    mxattn_status st = mx_read_tune_key(s, 0, &row->key);
    return st ? st : read_result(s, MX_TUNE_KEY_NCOLS, &row->result);
}

void mx_tune_filter_init(mx_tune_filter *f) {
    memset(f, 0, sizeof *f);
    f->head_dim = -1;
    f->causal = -1;
}

static mxattn_status query_locked(mx_cache *cache, const mx_tune_filter *f, mx_tune_row **rows, int *count) {
    if (!cache || !rows || !count) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_query: NULL argument");
    mx_tune_filter any;
    if (!f) { mx_tune_filter_init(&any); f = &any; }
    *rows = NULL;
    *count = 0;
    sqlite3_stmt *stmt;
    /* instr() rather than LIKE, so '%' and '_' in a GPU name are not wildcards. */
    mxattn_status st = mx_db_prepare(cache->db,
        "SELECT " MX_TUNE_KEY_COLUMNS ", config, median_ms, tops, default_ms, tuned_at FROM tune_results"
        " WHERE (?1 = '' OR instr(lower(gpu_name), lower(?1)) > 0) AND (?2 = '' OR family = ?2)"
        " AND (?3 < 0 OR head_dim = ?3) AND (?4 = '' OR dtype = ?4) AND (?5 < 0 OR causal = ?5)"
        " ORDER BY gpu_name, family, head_dim, dtype, causal, seq_bucket, q_bucket, " MX_TUNE_KEY_COLUMNS, &stmt);
    if (st) return st;
    sqlite3_bind_text(stmt, 1, f->gpu, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 2, f->family, -1, SQLITE_STATIC);
    sqlite3_bind_int(stmt, 3, f->head_dim);
    sqlite3_bind_text(stmt, 4, f->dtype, -1, SQLITE_STATIC);
    sqlite3_bind_int(stmt, 5, f->causal);
    void *items;
    if ((st = read_rows(cache->db, stmt, sizeof **rows, read_row, "cache: querying tuning results", &items, count)))
        return st;
    *rows = items;
    return MXATTN_OK;
}

mxattn_status mx_cache_query(mx_cache *cache, const mx_tune_filter *f, mx_tune_row **rows, int *count) {
    MX_CACHE_RETURN_LOCKED(cache, query_locked(cache, f, rows, count));
}

mxattn_status mx_cache_query_json(mx_cache *cache, const mx_tune_filter *f, char **json) {
    if (!json) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cache_query_json: json is NULL");
    mx_tune_row *rows;
    int count;
    mxattn_status st = mx_cache_query(cache, f, &rows, &count);
    if (st) return st;
    st = mx_tune_rows_json(rows, count, json);
    free(rows);
    return st;
}
