/* Export, import, merge, vacuum and check.  A malformed or hostile export
 * must be rejected with the target database exactly as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"
#include "util/err.h"
#include "support/temp_dir.h"
#include "util/sha256.h"

static char g_dir[64];

static int make_dir(void **state) {
    (void)state;
    return temp_dir_make(g_dir, sizeof g_dir, "mxattn-transfer");
}

static int remove_dir(void **state) {
    (void)state;
    return temp_dir_remove(g_dir);
}

static const char *in_dir(const char *name) {
    static char paths[8][256];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 256, "%s/%s", g_dir, name);
    return p;
}

static mx_cache *open_db(const char *name) {
    mx_cache *c;
    assert_int_equal(mx_cache_open(in_dir(name), &c), MXATTN_OK);
    return c;
}

static mx_tune_key key_named(const char *gpu, int seq_bucket) {
    mx_tune_key k;
    memset(&k, 0, sizeof k);
    snprintf(k.gpu_name, sizeof k.gpu_name, "%s", gpu);
    k.sm_count = 132;
    k.compute_capability = 90;
    k.driver_version = 12040;
    k.nvrtc_version = 12040;
    strcpy(k.mxattn_version, "0.1.0");
    strcpy(k.family, "f16");
    k.head_dim = 128;
    strcpy(k.dtype, "f16");
    strcpy(k.out_dtype, "f16");
    strcpy(k.layout, "bhnd");
    k.seq_bucket = seq_bucket;
    return k;
}

static void put(mx_cache *c, const char *gpu, int bucket, const char *config, double ms) {
    mx_tune_key k = key_named(gpu, bucket);
    mx_tune_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.config, sizeof r.config, "%s", config);
    r.median_ms = ms;
    r.default_ms = 2 * ms;
    assert_int_equal(mx_cache_put_tune(c, &k, &r), MXATTN_OK);
}

static mx_tune_result get(mx_cache *c, const char *gpu, int bucket) {
    mx_tune_key k = key_named(gpu, bucket);
    mx_tune_result r;
    assert_int_equal(mx_cache_get_tune(c, &k, &r), MXATTN_OK);
    return r;
}

static unsigned char g_blobs[2][3000];

static mx_kernel_record put_kernel(mx_cache *c, int which) {
    mx_kernel_record k;
    memset(&k, 0, sizeof k);
    for (size_t i = 0; i < sizeof g_blobs[which]; i++) g_blobs[which][i] = (unsigned char)(i * 7 + which);
    char material[32];
    snprintf(material, sizeof material, "kernel %d", which);
    mx_sha256_hex(material, strlen(material), k.key);
    strcpy(k.arch, "sm_90a");
    strcpy(k.kernel_names, "mxattn_f16_fwd");
    k.cubin = g_blobs[which];
    k.cubin_size = sizeof g_blobs[which];
    assert_int_equal(mx_cache_put_kernel(c, &k), MXATTN_OK);
    return k;
}

/* A source with three tuning rows and two kernels. */
static mx_cache *make_source(mx_kernel_record kernels[2]) {
    mx_cache *src = open_db("source.db");
    put(src, "NVIDIA H200", 1024, "block_m=64", 1.0);
    put(src, "NVIDIA H200", 4096, "block_m=128", 3.0);
    put(src, "NVIDIA H200", 16384, "block_m=128 stages=3", 9.0);
    kernels[0] = put_kernel(src, 0);
    kernels[1] = put_kernel(src, 1);
    return src;
}

/* Everything a failed import must leave unchanged. */
static char *snapshot(mx_cache *c) {
    char *json;
    mx_cache_counts n;
    assert_int_equal(mx_cache_query_json(c, NULL, &json), MXATTN_OK);
    assert_int_equal(mx_cache_count(c, &n), MXATTN_OK);
    size_t len = strlen(json) + 128;
    char *all = malloc(len);
    snprintf(all, len, "%ld %ld %ld\n%s", n.kernels, n.tune_results, n.measurements, json);
    free(json);
    return all;
}

/* ---- round trips --------------------------------------------------------- */

static void test_export_import_round_trip(void **state) {
    (void)state;
    mx_kernel_record kernels[2];
    mx_cache *src = make_source(kernels);
    assert_int_equal(mx_cache_export(src, in_dir("tunes.mxdb"), 0), MXATTN_OK);
    assert_int_equal(mx_cache_export(src, in_dir("full.mxdb"), 1), MXATTN_OK);
    assert_int_equal(access(in_dir("tunes.mxdb-journal"), F_OK), -1);
    mx_cache_close(src);

    mx_cache *dst = open_db("target.db");
    mx_import_report rep;
    assert_int_equal(mx_cache_import(dst, in_dir("tunes.mxdb"), 1, &rep), MXATTN_OK);
    assert_int_equal(rep.tune_rows_taken, 3);
    assert_int_equal(rep.kernels_read, 0); /* tuning-only export carries no kernels */
    assert_string_equal(get(dst, "NVIDIA H200", 4096).config, "block_m=128");

    /* Kernels come in only when asked. */
    assert_int_equal(mx_cache_import(dst, in_dir("full.mxdb"), 0, &rep), MXATTN_OK);
    mx_cache_counts n;
    assert_int_equal(mx_cache_count(dst, &n), MXATTN_OK);
    assert_int_equal(n.kernels, 0);
    assert_int_equal(mx_cache_import(dst, in_dir("full.mxdb"), 1, &rep), MXATTN_OK);
    assert_int_equal(rep.kernels_taken, 2);
    mx_kernel_record got;
    assert_int_equal(mx_cache_get_kernel(dst, kernels[1].key, "sm_90a", &got), MXATTN_OK);
    assert_memory_equal(got.cubin, g_blobs[1], sizeof g_blobs[1]);
    mx_kernel_record_release(&got);
    mx_cache_close(dst);
}

static void test_import_replaces_merge_keeps_the_faster(void **state) {
    (void)state;
    mx_kernel_record kernels[2];
    mx_cache *src = make_source(kernels); /* 1024: 1.0 ms, 4096: 3.0 ms, 16384: 9.0 ms */
    assert_int_equal(mx_cache_export(src, in_dir("ex.mxdb"), 0), MXATTN_OK);
    mx_cache_close(src);

    mx_cache *dst = open_db("target.db");
    put(dst, "NVIDIA H200", 1024, "ours slower", 2.0);
    put(dst, "NVIDIA H200", 4096, "ours faster", 1.5);
    mx_import_report rep;
    /* merge also reads a whole database, not only an export */
    assert_int_equal(mx_cache_merge(dst, in_dir("source.db"), &rep), MXATTN_OK);
    assert_int_equal(rep.tune_rows_read, 3);
    assert_int_equal(rep.tune_rows_taken, 2);
    assert_int_equal(rep.tune_rows_kept, 1);
    assert_string_equal(get(dst, "NVIDIA H200", 1024).config, "block_m=64");
    assert_string_equal(get(dst, "NVIDIA H200", 4096).config, "ours faster");
    assert_string_equal(get(dst, "NVIDIA H200", 16384).config, "block_m=128 stages=3");

    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), 0, &rep), MXATTN_OK);
    assert_string_equal(get(dst, "NVIDIA H200", 4096).config, "block_m=128");
    mx_cache_close(dst);
}

/* ---- hostile exports ----------------------------------------------------- */

static void tamper(const char *name, const char *sql) {
    sqlite3 *db;
    assert_int_equal(sqlite3_open(in_dir(name), &db), SQLITE_OK);
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) fail_msg("tamper: %s", sqlite3_errmsg(db));
    sqlite3_close(db);
}

/* A target with content, and a good full export to spoil. */
static mx_cache *prepare(void) {
    mx_kernel_record kernels[2];
    mx_cache *src = make_source(kernels);
    assert_int_equal(mx_cache_export(src, in_dir("ex.mxdb"), 1), MXATTN_OK);
    mx_cache_close(src);
    mx_cache *dst = open_db("target.db");
    put(dst, "NVIDIA H200", 1024, "ours", 5.0);
    put(dst, "NVIDIA B200", 1024, "other gpu", 0.5);
    put_kernel(dst, 0);
    return dst;
}

static void expect_rejected(mx_cache *dst, const char *file, int with_kernels, mxattn_status expected,
                            const char *message_part) {
    char *before = snapshot(dst);
    mx_import_report rep;
    assert_int_equal(mx_cache_import(dst, in_dir(file), with_kernels, &rep), expected);
    if (!strstr(mx_error_message(), message_part))
        fail_msg("message '%s' lacks '%s'", mx_error_message(), message_part);
    assert_non_null(strstr(mx_error_message(), "unchanged"));
    assert_int_equal(rep.tune_rows_taken, 0);
    char *after = snapshot(dst);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

static void test_sql_in_names_is_stored_verbatim(void **state) {
    (void)state;
    mx_cache *dst = prepare();
    static const char evil_gpu[] = "x'); DROP TABLE kernels; --";
    tamper("ex.mxdb", "UPDATE tune_results SET gpu_name = 'x''); DROP TABLE kernels; --',"
                      " family = 'f16\"; DROP TABLE x;--' WHERE seq_bucket = 1024");
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), 1, NULL), MXATTN_OK);
    mx_tune_filter f;
    mx_tune_filter_init(&f);
    strcpy(f.gpu, "DROP TABLE");
    mx_tune_row *rows;
    int n;
    assert_int_equal(mx_cache_query(dst, &f, &rows, &n), MXATTN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(rows[0].key.gpu_name, evil_gpu);
    assert_string_equal(rows[0].key.family, "f16\"; DROP TABLE x;--");
    free(rows);
    mx_cache_counts counts;
    assert_int_equal(mx_cache_count(dst, &counts), MXATTN_OK);
    assert_int_equal(counts.kernels, 2);
    assert_int_equal(counts.tune_results, 5);
    mx_cache_close(dst);
}

static void test_oversized_blob_is_rejected(void **state) {
    (void)state;
    mx_cache *dst = prepare();
    tamper("ex.mxdb", "UPDATE kernels SET cubin = zeroblob(67108865) WHERE rowid = 1");
    expect_rejected(dst, "ex.mxdb", 1, MXATTN_ERROR_INVALID_VALUE, "67108865-byte");
    /* Without --with-kernels the kernels are not read at all. */
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), 0, NULL), MXATTN_OK);
    mx_cache_close(dst);
}

static void test_wrong_hash_rejects_everything(void **state) {
    (void)state;
    mx_cache *dst = prepare();
    /* The tuning rows are valid and would be copied first: they must be rolled back too. */
    tamper("ex.mxdb", "UPDATE kernels SET cubin = zeroblob(3000) WHERE rowid = 2");
    expect_rejected(dst, "ex.mxdb", 1, MXATTN_ERROR_INVALID_VALUE, "does not match");
    mx_cache_close(dst);
}

static void test_malformed_fields_are_rejected(void **state) {
    (void)state;
    mx_cache *dst = prepare();
    tamper("ex.mxdb", "UPDATE kernels SET key = 'not hex' WHERE rowid = 1");
    expect_rejected(dst, "ex.mxdb", 1, MXATTN_ERROR_INVALID_VALUE, "malformed");
    tamper("ex.mxdb", "DELETE FROM kernels; UPDATE tune_results SET gpu_name = printf('%.300c', 'G')");
    expect_rejected(dst, "ex.mxdb", 0, MXATTN_ERROR_INVALID_VALUE, "too long");
    tamper("ex.mxdb", "UPDATE tune_results SET gpu_name = 'ok', median_ms = -1");
    expect_rejected(dst, "ex.mxdb", 0, MXATTN_ERROR_INVALID_VALUE, "non-positive");
    tamper("ex.mxdb", "UPDATE tune_results SET median_ms = 1, sm_count = 'many'");
    expect_rejected(dst, "ex.mxdb", 0, MXATTN_ERROR_INVALID_VALUE, "wrong type");
    mx_cache_close(dst);
}

static void test_not_a_database_is_rejected(void **state) {
    (void)state;
    mx_cache *dst = prepare();
    FILE *f = fopen(in_dir("noise.mxdb"), "wb");
    for (int i = 0; i < 4096; i++) fputc((i * 131) & 0xff, f);
    fclose(f);
    expect_rejected(dst, "noise.mxdb", 1, MXATTN_ERROR_INVALID_VALUE, "noise.mxdb");
    expect_rejected(dst, "missing.mxdb", 0, MXATTN_ERROR_IO, "No such file");
    expect_rejected(dst, ".", 0, MXATTN_ERROR_IO, "not a regular file");
    mx_cache_close(dst);
}

static void test_foreign_schema_is_rejected(void **state) {
    (void)state;
    mx_cache *dst = prepare();
    tamper("foreign.mxdb", "CREATE TABLE tune_results(a, b); PRAGMA user_version = 2;");
    expect_rejected(dst, "foreign.mxdb", 0, MXATTN_ERROR_INVALID_VALUE, "foreign schema");
    tamper("ex.mxdb", "CREATE TABLE evil(x)");
    expect_rejected(dst, "ex.mxdb", 0, MXATTN_ERROR_INVALID_VALUE, "evil");
    tamper("ex.mxdb", "DROP TABLE evil; PRAGMA user_version = 7;");
    expect_rejected(dst, "ex.mxdb", 0, MXATTN_ERROR_UNSUPPORTED, "version 7");   /* a newer mxattn's */
    /* A view posing as a table would run the exporter's SQL in our process. */
    tamper("view.mxdb", "CREATE TABLE kernels(key, arch, nvrtc_version, kernel_names, cubin, cubin_sha256,"
                        " compile_ms, registers, shared_bytes, spill_bytes, created_at);"
                        "CREATE TABLE measurements(x); CREATE VIEW tune_results AS SELECT 1;"
                        "PRAGMA user_version = 2;");
    expect_rejected(dst, "view.mxdb", 0, MXATTN_ERROR_INVALID_VALUE, "view.mxdb");
    mx_cache_close(dst);
}

/* ---- upkeep ------------------------------------------------------------- */

static void test_check_reports_bad_blobs_and_vacuum_works(void **state) {
    (void)state;
    mx_kernel_record kernels[2];
    mx_cache *c = make_source(kernels);
    mx_cache_check_report rep;
    assert_int_equal(mx_cache_check(c, &rep), MXATTN_OK);
    assert_true(rep.integrity_ok);
    assert_string_equal(rep.integrity_message, "ok");
    assert_int_equal(rep.kernels_checked, 2);
    assert_int_equal(rep.kernels_bad, 0);
    assert_int_equal(rep.counts.tune_results, 3);

    tamper("source.db", "UPDATE kernels SET cubin = x'00' WHERE rowid = 2");
    assert_int_equal(mx_cache_check(c, &rep), MXATTN_OK);
    assert_int_equal(rep.kernels_bad, 1);
    assert_string_equal(rep.first_bad_kernel, kernels[1].key);
    assert_int_equal(mx_cache_vacuum(c), MXATTN_OK);
    assert_int_equal(mx_cache_check(c, &rep), MXATTN_OK);
    assert_true(rep.integrity_ok);
    assert_int_equal(rep.counts.kernels, 2);
    mx_cache_close(c);
}

static void test_export_errors_are_clear(void **state) {
    (void)state;
    mx_cache *c = open_db("self.db");
    assert_int_equal(mx_cache_export(c, in_dir("self.db"), 0), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mx_cache_export(c, in_dir("no/such/dir/x.mxdb"), 0), MXATTN_ERROR_IO);
    assert_non_null(strstr(mx_error_message(), "x.mxdb"));
    assert_int_equal(access(in_dir("no"), F_OK), -1);
    mx_cache_close(c);
}

#define CASE(fn) cmocka_unit_test_setup_teardown(fn, make_dir, remove_dir)
int main(void) {
    const struct CMUnitTest tests[] = {
        CASE(test_export_import_round_trip),
        CASE(test_import_replaces_merge_keeps_the_faster),
        CASE(test_sql_in_names_is_stored_verbatim),
        CASE(test_oversized_blob_is_rejected),
        CASE(test_wrong_hash_rejects_everything),
        CASE(test_malformed_fields_are_rejected),
        CASE(test_not_a_database_is_rejected),
        CASE(test_foreign_schema_is_rejected),
        CASE(test_check_reports_bad_blobs_and_vacuum_works),
        CASE(test_export_errors_are_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
