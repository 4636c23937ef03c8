/* What damage costs and what opening costs: a damaged file of ours keeps
 * every row that still reads; the integrity check runs once a day or when a
 * statement meets damage, not on every open; the kernel cache stays under
 * its size limit by evicting the least recently used kernels and never a
 * tuning row; an open that must not create anything does not; a held write
 * lock is reported after a bounded wait; and the C API says all of this. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mxattn.h"
#include "cache/cache.h"
#include "util/err.h"
#include "util/sha256.h"
#include "support/records.h"
#include "support/temp_dir.h"

static char g_dir[64];
static char g_db[128];

static int make_dir(void **state) {
    (void)state;
    if (temp_dir_make_db(g_dir, sizeof g_dir, "mxattn-damage", g_db, sizeof g_db, "mxattn.db")) return -1;
    unsetenv("MXATTN_CACHE_MAX_MB");
    unsetenv("MXATTN_CACHE_BUSY_MS");
    return 0;
}

static int remove_dir(void **state) {
    (void)state;
    unsetenv("MXATTN_CACHE_MAX_MB");
    unsetenv("MXATTN_CACHE_BUSY_MS");
    return temp_dir_remove(g_dir);
}

static long long raw_int(const char *path, const char *sql) {
    sqlite3 *db;
    sqlite3_stmt *stmt;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
    long long v = sqlite3_step(stmt) == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : -1;
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return v;
}

static void raw_exec(const char *path, const char *sql) {
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static mx_tune_key key_n(int i) {
    mx_tune_key k;
    char gpu[32];
    snprintf(gpu, sizeof gpu, "NVIDIA H200 #%d", i);
    tune_key_f16(&k, gpu);
    k.sm_count = 132;
    k.head_dim = 64;
    k.seq_bucket = k.q_bucket = 1024;
    return k;
}

/* Kernel i: a blob of n bytes derived from i, its key the blob's hash. */
static unsigned char *g_blobs[64];
static mx_kernel_record kernel_n(int i, size_t n, int64_t created_at) {
    mx_kernel_record k;
    memset(&k, 0, sizeof k);
    free(g_blobs[i]);
    g_blobs[i] = malloc(n);
    for (size_t j = 0; j < n; j++) g_blobs[i][j] = (unsigned char)(i * 31 + j * 7 + (j >> 8));
    memcpy(g_blobs[i], &i, sizeof i);
    mx_sha256_hex(g_blobs[i], n, k.key);
    strcpy(k.arch, "sm_90a");
    strcpy(k.kernel_names, "attn_fwd");
    k.cubin = g_blobs[i];
    k.cubin_size = n;
    k.created_at = created_at;
    return k;
}

static int has_kernel(mx_cache *c, int i, size_t n) {
    mx_kernel_record want = kernel_n(i, n, 0), got;
    mxattn_status st = mx_cache_get_kernel(c, want.key, "sm_90a", &got);
    if (st == MXATTN_OK) mx_kernel_record_release(&got);
    return st == MXATTN_OK;
}

/* 40 kernels of 6000 bytes (each spills onto an overflow page of its own),
 * 20 tuning results and 60 measurements. */
#define N_KERNELS 40
#define KERNEL_BYTES 6000
static void fill(void) {
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    for (int i = 0; i < N_KERNELS; i++) {
        mx_kernel_record k = kernel_n(i, KERNEL_BYTES, 0);
        assert_int_equal(mx_cache_put_kernel(c, &k), MXATTN_OK);
    }
    for (int i = 0; i < 20; i++) {
        mx_tune_key k = key_n(i);
        mx_tune_result r = {.config = "block_m=64 block_n=64", .median_ms = 1.0 + i};
        assert_int_equal(mx_cache_put_tune(c, &k, &r), MXATTN_OK);
        for (int j = 0; j < 3; j++) {
            mx_measurement m;
            memset(&m, 0, sizeof m);
            snprintf(m.config, sizeof m.config, "block_m=%d", 16 << j);
            strcpy(m.status, MX_MEASURE_OK);
            m.median_ms = 1.0 + j;
            assert_int_equal(mx_cache_add_measurement(c, &k, &m), MXATTN_OK);
        }
    }
    mx_cache_close(c); /* the last close folds the WAL into the file */
}

/* Overwrites the first `count` pages of `table` of `type` (dbstat's
 * 'leaf', 'internal', 'overflow') with garbage. */
static void damage_pages(const char *table, const char *type, int count) {
    char sql[240];
    snprintf(sql, sizeof sql,
             "SELECT group_concat(pageno) FROM (SELECT pageno FROM dbstat WHERE name='%s'"
             " AND pagetype='%s' ORDER BY pageno LIMIT %d)", table, type, count);
    sqlite3 *db;
    sqlite3_stmt *stmt;
    assert_int_equal(sqlite3_open(g_db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    char pages[256];
    snprintf(pages, sizeof pages, "%s", (const char *)sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    FILE *f = fopen(g_db, "r+b");
    assert_non_null(f);
    unsigned char garbage[4096];
    for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (unsigned char)(0xA5 ^ i);
    int n = 0;
    for (char *p = strtok(pages, ","); p; p = strtok(NULL, ","), n++) {
        assert_int_equal(fseek(f, (atol(p) - 1) * 4096L, SEEK_SET), 0);
        assert_int_equal(fwrite(garbage, 1, sizeof garbage, f), sizeof garbage);
    }
    fclose(f);
    assert_int_equal(n, count);
}

/* 4 pages of cubins: each kernel has one overflow page of its own. */
static void damage_kernel_pages(int count) { damage_pages("kernels", "overflow", count); }

static void expire_check(void) { raw_exec(g_db, "UPDATE meta SET value=0 WHERE name='last_check'"); }

/* The case: a few bad pages cost only the rows on them. */
static void test_bad_pages_lose_only_their_rows(void **state) {
    (void)state;
    fill();
    expire_check();
    damage_kernel_pages(4);
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    const char *note = mx_cache_recovered(c);
    assert_non_null(note);
    if (!strstr(note, "36 of 40 kernels") || !strstr(note, "20 of 20 tuning results") ||
        !strstr(note, "60 of 60 measurements") || !strstr(note, ".corrupt-"))
        fail_msg("note: %s", note);
    assert_non_null(strstr(mx_error_message(), ".corrupt-"));
    mx_cache_counts n;
    assert_int_equal(mx_cache_count(c, &n), MXATTN_OK);
    assert_int_equal(n.kernels, 36);
    assert_int_equal(n.tune_results, 20);
    assert_int_equal(n.measurements, 60);
    int found = 0;
    for (int i = 0; i < N_KERNELS; i++) found += has_kernel(c, i, KERNEL_BYTES); /* each hash-checked */
    assert_int_equal(found, 36);
    mx_tune_key k = key_n(7);
    mx_tune_result r;
    assert_int_equal(mx_cache_get_tune(c, &k, &r), MXATTN_OK);
    assert_true(r.median_ms == 8.0);
    mx_cache_close(c);
    assert_int_equal(raw_int(g_db, "PRAGMA application_id"), MX_CACHE_APPLICATION_ID);
}

/* The check is remembered for a day: a second open does not repeat it. */
static void test_integrity_check_runs_once_a_day(void **state) {
    (void)state;
    fill();
    long long checked = raw_int(g_db, "SELECT value FROM meta WHERE name='last_check'");
    assert_true(checked > 0 && checked <= (long long)time(NULL));
    damage_kernel_pages(1);
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    assert_null(mx_cache_recovered(c)); /* checked within the day: not again */
    mx_cache_close(c);
    expire_check();
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    assert_non_null(mx_cache_recovered(c)); /* a day old: checked, found, rebuilt */
    mx_cache_close(c);
}

/* Damage met by a statement between checks: checked and rebuilt at once,
 * and the call is answered from the rebuilt file. */
static void test_damage_found_by_a_read_rebuilds(void **state) {
    (void)state;
    fill();
    damage_pages("tune_results", "leaf", 1); /* the table's only page */
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    assert_null(mx_cache_recovered(c)); /* checked today: not at open */
    int found = 0;
    for (int i = 0; i < 20; i++) {
        mx_tune_key k = key_n(i);
        mx_tune_result r;
        mxattn_status st = mx_cache_get_tune(c, &k, &r);
        assert_true(st == MXATTN_OK || st == MXATTN_ERROR_NOT_FOUND);
        found += st == MXATTN_OK;
    }
    assert_true(found < 20); /* the rows on the bad page are gone */
    const char *note = mx_cache_recovered(c);
    assert_non_null(note);
    if (!strstr(note, "40 of 40 kernels") || !strstr(note, "60 of 60 measurements")) fail_msg("note: %s", note);
    mx_cache_counts n;
    assert_int_equal(mx_cache_count(c, &n), MXATTN_OK);
    assert_int_equal(n.tune_results, found);
    mx_cache_close(c);
}

/* ---- the size limit ----------------------------------------------------- */

static void test_least_recently_used_kernels_are_evicted(void **state) {
    (void)state;
    setenv("MXATTN_CACHE_MAX_MB", "1", 1);
    const size_t n = 300 << 10; /* three fit in 1 MiB, four do not */
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    mx_tune_key tk = key_n(0);
    mx_tune_result tr = {.config = "block_m=64", .median_ms = 1.0};
    assert_int_equal(mx_cache_put_tune(c, &tk, &tr), MXATTN_OK);
    for (int i = 0; i < 3; i++) {
        mx_kernel_record k = kernel_n(i, n, 1000 + i); /* used long ago, 0 oldest */
        assert_int_equal(mx_cache_put_kernel(c, &k), MXATTN_OK);
    }
    assert_true(has_kernel(c, 0, n)); /* a hit: 0 is now the most recent */
    mx_kernel_record k3 = kernel_n(3, n, 0);
    assert_int_equal(mx_cache_put_kernel(c, &k3), MXATTN_OK);
    assert_false(has_kernel(c, 1, n)); /* the least recently used went */
    mx_kernel_record k4 = kernel_n(4, n, 0);
    assert_int_equal(mx_cache_put_kernel(c, &k4), MXATTN_OK);
    assert_false(has_kernel(c, 2, n)); /* then the next one */
    assert_true(has_kernel(c, 0, n));
    assert_true(has_kernel(c, 3, n));
    assert_true(has_kernel(c, 4, n));
    mx_cache_counts counts;
    assert_int_equal(mx_cache_count(c, &counts), MXATTN_OK);
    assert_int_equal(counts.kernels, 3);
    assert_int_equal(counts.tune_results, 1); /* tuning rows are never evicted */
    /* Without the override the default (2 GiB) holds all of them. */
    unsetenv("MXATTN_CACHE_MAX_MB");
    mx_kernel_record k1 = kernel_n(1, n, 0);
    assert_int_equal(mx_cache_put_kernel(c, &k1), MXATTN_OK);
    assert_int_equal(mx_cache_count(c, &counts), MXATTN_OK);
    assert_int_equal(counts.kernels, 4);
    mx_cache_close(c);
}

static void test_cache_limit_override_is_checked(void **state) {
    (void)state;
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    mx_kernel_record k = kernel_n(0, 2 << 20, 0);
    setenv("MXATTN_CACHE_MAX_MB", "lots", 1);
    assert_int_equal(mx_cache_put_kernel(c, &k), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mx_error_message(), "MXATTN_CACHE_MAX_MB"));
    setenv("MXATTN_CACHE_MAX_MB", "1", 1); /* a 2 MiB cubin cannot fit in 1 MiB */
    assert_int_equal(mx_cache_put_kernel(c, &k), MXATTN_ERROR_CACHE_FULL);
    assert_non_null(strstr(mx_error_message(), "not stored"));
    mx_cache_close(c);
}

/* ---- opening without creating ------------------------------------------- */

static void test_existing_mode_creates_nothing(void **state) {
    (void)state;
    char path[200], dir[160];
    snprintf(dir, sizeof dir, "%s/missing", g_dir);
    snprintf(path, sizeof path, "%s/mxattn.db", dir);
    const unsigned modes[] = {MX_CACHE_OPEN_EXISTING, MX_CACHE_OPEN_READ_ONLY};
    for (int i = 0; i < 2; i++) {
        mx_cache *c = (mx_cache *)0x1;
        assert_int_equal(mx_cache_open_ex(path, modes[i], &c), MXATTN_ERROR_NOT_FOUND);
        assert_null(c);
        assert_non_null(strstr(mx_error_message(), path));
        assert_int_not_equal(access(dir, F_OK), 0);
        assert_int_equal(mx_cache_open_ex(g_db, modes[i], &c), MXATTN_ERROR_NOT_FOUND);
        assert_int_not_equal(access(g_db, F_OK), 0);
    }
    mx_cache *c;
    assert_int_equal(mx_cache_open_ex(g_db, 8, &c), MXATTN_ERROR_INVALID_VALUE);
}

static void test_read_only_mode_reads_and_refuses_writes(void **state) {
    (void)state;
    fill();
    mx_cache *c;
    assert_int_equal(mx_cache_open_ex(g_db, MX_CACHE_OPEN_READ_ONLY, &c), MXATTN_OK);
    assert_true(mx_cache_read_only(c));
    assert_true(has_kernel(c, 2, KERNEL_BYTES));
    mx_tune_key k = key_n(3);
    mx_tune_result r;
    assert_int_equal(mx_cache_get_tune(c, &k, &r), MXATTN_OK);
    assert_int_equal(mx_cache_put_tune(c, &k, &r), MXATTN_ERROR_CACHE_READ_ONLY);
    assert_non_null(strstr(mx_error_message(), "read-only"));
    mx_kernel_record kn = kernel_n(50, 100, 0);
    assert_int_equal(mx_cache_put_kernel(c, &kn), MXATTN_ERROR_CACHE_READ_ONLY);
    mx_cache_close(c);
    assert_int_equal(mx_cache_open_ex(g_db, MX_CACHE_OPEN_EXISTING, &c), MXATTN_OK);
    assert_false(mx_cache_read_only(c));
    mx_cache_close(c);
}

/* ---- a held write lock -------------------------------------------------- */

static void test_held_write_lock_is_busy_after_a_bounded_wait(void **state) {
    (void)state;
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    /* Closed before the fork: SQLite's locks must not be shared with a child
     * through a connection it inherited. */
    mx_cache_close(c);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        sqlite3 *db;
        if (sqlite3_open(g_db, &db) != SQLITE_OK || sqlite3_exec(db, "BEGIN IMMEDIATE", 0, 0, 0) != SQLITE_OK)
            _exit(1);
        if (write(ready[1], "x", 1) != 1) _exit(1);
        sleep(5); /* holds the lock well past the wait below */
        _exit(0);
    }
    char x;
    assert_int_equal(read(ready[0], &x, 1), 1);
    setenv("MXATTN_CACHE_BUSY_MS", "300", 1);
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mx_tune_key k = key_n(1);
    mx_tune_result r = {.config = "block_m=64", .median_ms = 1.0};
    assert_int_equal(mx_cache_put_tune(c, &k, &r), MXATTN_ERROR_CACHE_BUSY);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    assert_non_null(strstr(mx_error_message(), "write lock"));
    assert_true(waited < 3.0);
    mx_kernel_record kn = kernel_n(9, 100, 0);
    assert_int_equal(mx_cache_put_kernel(c, &kn), MXATTN_ERROR_CACHE_BUSY);
    mx_tune_result got;
    assert_int_equal(mx_cache_get_tune(c, &k, &got), MXATTN_ERROR_NOT_FOUND); /* reads go on (WAL) */
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close(ready[0]);
    close(ready[1]);
    mx_cache_close(c);
}

/* ---- the C API ---------------------------------------------------------- */

static mxattn_ctx *ctx_on(const char *path) {
    mxattn_options o;
    mxattn_options_init(&o);
    o.db_path = path;
    mxattn_ctx *ctx = NULL;
    assert_int_equal(mxattn_create(&ctx, &o), MXATTN_OK);
    return ctx;
}

static void test_api_reports_the_rebuild(void **state) {
    (void)state;
    fill();
    expire_check();
    damage_kernel_pages(4);
    mxattn_ctx *ctx = ctx_on(g_db);
    mxattn_cache_info info;
    assert_int_equal(mxattn_cache_get_info(ctx, &info), MXATTN_OK);
    assert_int_equal(info.open, 1);
    assert_int_equal(info.read_only, 0);
    if (!strstr(info.note, ".corrupt-") || !strstr(info.note, "36 of 40 kernels")) fail_msg("note: %s", info.note);
    assert_non_null(strstr(mxattn_last_error(), ".corrupt-")); /* not "" */
    assert_int_equal(info.kernels, 36);
    assert_int_equal(info.tunings, 20);
    mxattn_destroy(ctx);
}

/* Why a database could not be opened reaches the caller. */
static void test_api_keeps_the_reason_it_could_not_open(void **state) {
    (void)state;
    FILE *f = fopen(g_db, "w");
    assert_non_null(f);
    fputs("a shopping list, not a database\n", f);
    fclose(f);
    mxattn_ctx *ctx = ctx_on(g_db);
    mxattn_cache_info info;
    assert_int_equal(mxattn_cache_get_info(ctx, &info), MXATTN_ERROR_CACHE_FOREIGN);
    assert_int_equal(info.open, 0);
    if (!strstr(info.note, "not an mxattn database")) fail_msg("note: %s", info.note);
    char *json = NULL;
    assert_int_equal(mxattn_query(ctx, NULL, &json), MXATTN_ERROR_CACHE_FOREIGN);
    assert_null(json);
    if (!strstr(mxattn_last_error(), "not an mxattn database") || !strstr(mxattn_last_error(), g_db))
        fail_msg("query error: %s", mxattn_last_error());
    mxattn_destroy(ctx);
}

#define CASE(fn) cmocka_unit_test_setup_teardown(fn, make_dir, remove_dir)
int main(void) {
    const struct CMUnitTest tests[] = {
        CASE(test_bad_pages_lose_only_their_rows),
        CASE(test_integrity_check_runs_once_a_day),
        CASE(test_damage_found_by_a_read_rebuilds),
        CASE(test_least_recently_used_kernels_are_evicted),
        CASE(test_cache_limit_override_is_checked),
        CASE(test_existing_mode_creates_nothing),
        CASE(test_read_only_mode_reads_and_refuses_writes),
        CASE(test_held_write_lock_is_busy_after_a_bounded_wait),
        CASE(test_api_reports_the_rebuild),
        CASE(test_api_keeps_the_reason_it_could_not_open),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    for (int i = 0; i < 64; i++) free(g_blobs[i]);
    return rc;
}
