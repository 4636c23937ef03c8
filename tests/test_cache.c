/* The cache's core: schema and migration, kernel and tuning round trips, the
 * isolation rules (SKU, arch), measurements, queries and the default path. */
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
#include "support/fixtures.h"
#include "support/temp_dir.h"
#include "util/sha256.h"

static char g_dir[64];

static int make_dir(void **state) {
    (void)state;
    return temp_dir_make(g_dir, sizeof g_dir, "mxattn-cache");
}

static int remove_dir(void **state) {
    (void)state;
    return temp_dir_remove(g_dir);
}

static void path_in_dir(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", g_dir, name); }

static mx_tune_key sample_key(void) {
    mx_tune_key k;
    tune_key_h200(&k, "NVIDIA H200");
    memset(k.template_hash, 'a', 64);
    strcpy(k.family, "int8-f16");
    k.head_dim = 128;
    strcpy(k.dtype, "f16");
    strcpy(k.out_dtype, "f16");
    k.causal = 1;
    k.gqa = 4;
    strcpy(k.layout, "bhnd");
    k.seq_bucket = 4096;
    k.q_bucket = 4096;
    return k;
}

static mx_tune_result sample_result(const char *config, double ms) {
    return tune_result_of(config, ms, ms * 1.5, 500.0);
}

/* Stores sample_result(config, ms) for *k. */
static void put_sample_tune(mx_cache *c, const mx_tune_key *k, const char *config, double ms) {
    mx_tune_result r = sample_result(config, ms);
    assert_int_equal(mx_cache_put_tune(c, k, &r), MXATTN_OK);
}

/* A fake cubin whose key hashes its bytes and arch, as the runtime's would. */
static mx_kernel_record sample_kernel(const char *arch, unsigned char *blob, size_t n, unsigned seed) {
    mx_kernel_record k;
    memset(&k, 0, sizeof k);
    for (size_t i = 0; i < n; i++) blob[i] = (unsigned char)(i * 31 + seed);
    char material[64];
    snprintf(material, sizeof material, "%u/%s", seed, arch);
    mx_sha256_hex(material, strlen(material), k.key);
    snprintf(k.arch, sizeof k.arch, "%s", arch);
    k.nvrtc_version = 12040;
    strcpy(k.kernel_names, "mxattn_int8_f16_fwd");
    k.cubin = blob;
    k.cubin_size = n;
    k.compile_ms = 812.5;
    k.registers = 168;
    k.shared_bytes = 98304;
    k.spill_bytes = 0;
    return k;
}

static mx_cache *open_in_dir(const char *name) {
    char path[256];
    mx_cache *c = NULL;
    path_in_dir(path, sizeof path, name);
    assert_int_equal(mx_cache_open(path, &c), MXATTN_OK);
    assert_null(mx_cache_recovered(c));
    return c;
}

/* The stored kernels' bytes (k.cubin points here), as large as the largest. */
static unsigned char g_blob[5000];

/* The kernel tests' start: `name` opened with one sample sm_90a kernel of
 * n bytes (in g_blob) from `seed` stored in it, that kernel in *k. */
static mx_cache *open_with_kernel(const char *name, size_t n, unsigned seed, mx_kernel_record *k) {
    assert_true(n <= sizeof g_blob);
    mx_cache *c = open_in_dir(name);
    *k = sample_kernel("sm_90a", g_blob, n, seed);
    assert_int_equal(mx_cache_put_kernel(c, k), MXATTN_OK);
    return c;
}

static sqlite3 *raw_open(const char *name) {
    char path[256];
    sqlite3 *db;
    path_in_dir(path, sizeof path, name);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static long long raw_int(sqlite3 *db, const char *sql) {
    sqlite3_stmt *stmt;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    long long v = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return v;
}

/* ---- schema ------------------------------------------------------------- */

static void test_fresh_database_is_created_with_parents(void **state) {
    (void)state;
    mx_cache *c = open_in_dir("a/b/c/mxattn.db");
    mx_cache_close(c);
    sqlite3 *db = raw_open("a/b/c/mxattn.db");
    assert_int_equal(raw_int(db, "PRAGMA user_version"), mx_cache_schema_version());
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE type='table'"), 4); /* + meta */
    assert_int_equal(raw_int(db, "PRAGMA application_id"), MX_CACHE_APPLICATION_ID);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_table_info('kernels') WHERE name='last_used'"), 1);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM pragma_table_info('tune_results') WHERE name='tuned_at'"), 1);
    sqlite3_stmt *stmt;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(stmt), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(stmt, 0), "wal");
    sqlite3_finalize(stmt);
    sqlite3_close(db);
}

/* The v1 schema exactly as the first release wrote it, with a kernel whose
 * blob is one zero byte. */
#define OLD_KERNEL_KEY "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
static const char V1_SCHEMA[] =
    "CREATE TABLE kernels(key TEXT PRIMARY KEY NOT NULL, arch TEXT NOT NULL, nvrtc_version INTEGER NOT NULL,"
    " kernel_names TEXT NOT NULL, cubin BLOB NOT NULL, cubin_sha256 TEXT NOT NULL, compile_ms REAL NOT NULL,"
    " registers INTEGER NOT NULL, shared_bytes INTEGER NOT NULL, spill_bytes INTEGER NOT NULL,"
    " created_at INTEGER NOT NULL);"
    "CREATE TABLE tune_results(gpu_name TEXT NOT NULL, sm_count INTEGER NOT NULL, compute_capability INTEGER NOT NULL,"
    " driver_version INTEGER NOT NULL, nvrtc_version INTEGER NOT NULL, mxattn_version TEXT NOT NULL,"
    " template_hash TEXT NOT NULL, family TEXT NOT NULL, head_dim INTEGER NOT NULL, dtype TEXT NOT NULL,"
    " out_dtype TEXT NOT NULL, causal INTEGER NOT NULL, gqa INTEGER NOT NULL, layout TEXT NOT NULL,"
    " seq_bucket INTEGER NOT NULL, config TEXT NOT NULL, median_ms REAL NOT NULL, tops REAL NOT NULL,"
    " default_ms REAL NOT NULL, PRIMARY KEY(gpu_name, sm_count, compute_capability, driver_version,"
    " nvrtc_version, mxattn_version, template_hash, family, head_dim, dtype, out_dtype, causal, gqa, layout,"
    " seq_bucket));"
    "CREATE TABLE measurements(gpu_name TEXT NOT NULL, sm_count INTEGER NOT NULL, compute_capability INTEGER NOT NULL,"
    " driver_version INTEGER NOT NULL, nvrtc_version INTEGER NOT NULL, mxattn_version TEXT NOT NULL,"
    " template_hash TEXT NOT NULL, family TEXT NOT NULL, head_dim INTEGER NOT NULL, dtype TEXT NOT NULL,"
    " out_dtype TEXT NOT NULL, causal INTEGER NOT NULL, gqa INTEGER NOT NULL, layout TEXT NOT NULL,"
    " seq_bucket INTEGER NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL, median_ms REAL NOT NULL,"
    " spread REAL NOT NULL, registers INTEGER NOT NULL, measured_at INTEGER NOT NULL,"
    " PRIMARY KEY(gpu_name, sm_count, compute_capability, driver_version, nvrtc_version, mxattn_version,"
    " template_hash, family, head_dim, dtype, out_dtype, causal, gqa, layout, seq_bucket, config));"
    "INSERT INTO tune_results VALUES('NVIDIA H200', 132, 90, 12040, 12040, '0.1.0',"
    " 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'int8-f16', 128, 'f16', 'f16',"
    " 1, 4, 'bhnd', 4096, 'block_m=128 block_n=64', 0.75, 600, 1.0);"
    "INSERT INTO kernels VALUES('" OLD_KERNEL_KEY "', 'sm_90a', 12040, 'attn_fwd', x'00',"
    " '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d', 1.5, 64, 0, 0, 1700000000);"
    "PRAGMA user_version=1;";

static void test_v1_database_is_migrated(void **state) {
    (void)state;
    sqlite3 *db = raw_open("old.db");
    assert_int_equal(sqlite3_exec(db, V1_SCHEMA, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    mx_cache *c = open_in_dir("old.db");
    mx_tune_key key = sample_key();
    mx_tune_result r;
    key.q_bucket = 4096;     /* v3 reads an old row's query bucket as its seq_bucket */
    assert_int_equal(mx_cache_get_tune(c, &key, &r), MXATTN_OK);
    assert_string_equal(r.config, "block_m=128 block_n=64");
    assert_true(r.median_ms == 0.75);
    assert_int_equal(r.tuned_at, 0); /* unknown for rows from before v2 */
    key.q_bucket = 16;       /* a decode problem over the same keys: not tuned */
    assert_int_equal(mx_cache_get_tune(c, &key, &r), MXATTN_ERROR_NOT_FOUND);
    mx_kernel_record got;
    assert_int_equal(mx_cache_get_kernel(c, OLD_KERNEL_KEY, "sm_90a", &got), MXATTN_OK);
    assert_int_equal(got.cubin_size, 1);
    mx_kernel_record_release(&got);
    mx_cache_close(c);

    db = raw_open("old.db");
    assert_int_equal(raw_int(db, "PRAGMA user_version"), mx_cache_schema_version());
    /* An old file of ours has no application_id: recognised by its tables, stamped. */
    assert_int_equal(raw_int(db, "PRAGMA application_id"), MX_CACHE_APPLICATION_ID);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM tune_results"), 1);
    /* v4: an old kernel's last use is taken to be its creation (the hit
     * above was more than an hour later, so it is now). */
    assert_true(raw_int(db, "SELECT last_used FROM kernels") > 1700000000);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE name='tune_results_by_problem'"), 1);
    assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '%_v3'"), 0);
    sqlite3_close(db);
}

/* v5: seq_bucket is the keys' bucket, not the longer of keys and queries.
 * A v4 file's short self-attention rows (at the old floor of 256 keys) move
 * to their own length's bucket; long, decode and equal-bucket rows keep
 * theirs.  Rows are written through this build, then the file is marked v4
 * with the old bucketing, as a v4 build left it. */
static void test_v4_buckets_are_read_as_key_buckets(void **state) {
    (void)state;
    mx_cache *c = open_in_dir("v4.db");
    mx_tune_key prefill = sample_key(), short_self = sample_key(), tiny_self = sample_key(), decode = sample_key();
    short_self.seq_bucket = 256; short_self.q_bucket = 128;   /* v4: N=100 self-attention */
    tiny_self.seq_bucket = 256; tiny_self.q_bucket = 16;      /* v4: N=10 */
    decode.seq_bucket = 32768; decode.q_bucket = 16;
    put_sample_tune(c, &prefill, "block_m=128", 1.0);
    put_sample_tune(c, &short_self, "block_m=64", 0.1);
    put_sample_tune(c, &tiny_self, "block_m=16", 0.01);
    put_sample_tune(c, &decode, "block_m=32", 0.5);
    mx_measurement m;
    memset(&m, 0, sizeof m);
    strcpy(m.config, "block_m=64");
    strcpy(m.status, MX_MEASURE_OK);
    m.median_ms = 0.1;
    assert_int_equal(mx_cache_add_measurement(c, &short_self, &m), MXATTN_OK);
    mx_cache_close(c);
    sqlite3 *db = raw_open("v4.db");
    assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=4", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    c = open_in_dir("v4.db");
    mx_tune_result r;
    short_self.seq_bucket = 128;
    assert_int_equal(mx_cache_get_tune(c, &short_self, &r), MXATTN_OK);
    assert_string_equal(r.config, "block_m=64");
    tiny_self.seq_bucket = 64;
    assert_int_equal(mx_cache_get_tune(c, &tiny_self, &r), MXATTN_OK);
    assert_string_equal(r.config, "block_m=16");
    assert_int_equal(mx_cache_get_tune(c, &decode, &r), MXATTN_OK);
    assert_string_equal(r.config, "block_m=32");
    assert_int_equal(mx_cache_get_tune(c, &prefill, &r), MXATTN_OK);
    assert_string_equal(r.config, "block_m=128");
    mx_measurement *got = NULL;
    int n = 0;
    assert_int_equal(mx_cache_list_measurements(c, &short_self, &got, &n), MXATTN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(got[0].config, "block_m=64");
    free(got);
    short_self.seq_bucket = 256;   /* the old key answers nothing now */
    assert_int_equal(mx_cache_get_tune(c, &short_self, &r), MXATTN_ERROR_NOT_FOUND);
    mx_cache_close(c);
    db = raw_open("v4.db");
    assert_int_equal(raw_int(db, "PRAGMA user_version"), mx_cache_schema_version());
    assert_int_equal(raw_int(db, "SELECT count(*) FROM tune_results WHERE seq_bucket=256"), 0);
    sqlite3_close(db);
}

/* ---- kernels ------------------------------------------------------------- */

static void test_kernel_round_trip(void **state) {
    (void)state;
    mx_kernel_record k;
    mx_cache *c = open_with_kernel("k.db", 5000, 7, &k);
    assert_int_equal(mx_cache_put_kernel(c, &k), MXATTN_OK); /* again: same key, kept */

    mx_kernel_record got;
    assert_int_equal(mx_cache_get_kernel(c, k.key, "sm_90a", &got), MXATTN_OK);
    assert_int_equal(got.cubin_size, 5000);
    assert_memory_equal(got.cubin, g_blob, 5000);
    assert_string_equal(got.kernel_names, "mxattn_int8_f16_fwd");
    assert_int_equal(got.registers, 168);
    assert_int_equal(got.shared_bytes, 98304);
    assert_true(got.compile_ms == 812.5);
    assert_true(got.created_at > 0);
    char expect[65];
    mx_sha256_hex(g_blob, 5000, expect);
    assert_string_equal(got.cubin_sha256, expect);
    mx_kernel_record_release(&got);

    mx_cache_counts n;
    assert_int_equal(mx_cache_count(c, &n), MXATTN_OK);
    assert_int_equal(n.kernels, 1);
    mx_cache_close(c);
}

static void test_kernel_for_another_arch_is_never_returned(void **state) {
    (void)state;
    mx_kernel_record k;
    mx_cache *c = open_with_kernel("arch.db", 256, 1, &k);
    mx_kernel_record got;
    assert_int_equal(mx_cache_get_kernel(c, k.key, "sm_80", &got), MXATTN_ERROR_NOT_FOUND);
    assert_null(got.cubin);
    assert_non_null(strstr(mx_error_message(), "sm_80"));
    assert_int_equal(mx_cache_get_kernel(c, k.key, "sm_90", &got), MXATTN_ERROR_NOT_FOUND);
    assert_int_equal(mx_cache_get_kernel(c, k.key, "sm_90a", &got), MXATTN_OK);
    mx_kernel_record_release(&got);
    mx_cache_close(c);
}

static void test_tampered_kernel_blob_is_reported_and_removed(void **state) {
    (void)state;
    mx_kernel_record k;
    mx_cache *c = open_with_kernel("tamper.db", 1024, 3, &k);

    sqlite3 *db = raw_open("tamper.db");
    assert_int_equal(sqlite3_exec(db, "UPDATE kernels SET cubin = zeroblob(1024)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    mx_kernel_record got;
    assert_int_equal(mx_cache_get_kernel(c, k.key, "sm_90a", &got), MXATTN_ERROR_CACHE_CORRUPT);
    assert_null(got.cubin);
    assert_non_null(strstr(mx_error_message(), "hash"));
    assert_int_equal(mx_cache_get_kernel(c, k.key, "sm_90a", &got), MXATTN_ERROR_NOT_FOUND);
    mx_cache_close(c);
}

static void test_bad_kernel_records_are_rejected(void **state) {
    (void)state;
    mx_cache *c = open_in_dir("badk.db");
    unsigned char blob[16];
    mx_kernel_record k = sample_kernel("sm_90a", blob, sizeof blob, 2);
    mx_kernel_record bad = k;
    strcpy(bad.key, "not-a-hash");
    assert_int_equal(mx_cache_put_kernel(c, &bad), MXATTN_ERROR_INVALID_VALUE);
    bad = k;
    strcpy(bad.arch, "90");
    assert_int_equal(mx_cache_put_kernel(c, &bad), MXATTN_ERROR_INVALID_VALUE);
    bad = k;
    bad.cubin_size = 0;
    assert_int_equal(mx_cache_put_kernel(c, &bad), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mx_cache_put_kernel(c, NULL), MXATTN_ERROR_NULL_POINTER);
    mx_cache_counts n;
    assert_int_equal(mx_cache_count(c, &n), MXATTN_OK);
    assert_int_equal(n.kernels, 0);
    mx_cache_close(c);
}

/* ---- tuning results ------------------------------------------------------ */

static void test_tune_round_trip_and_retune_replaces(void **state) {
    (void)state;
    mx_cache *c = open_in_dir("t.db");
    mx_tune_key key = sample_key();
    mx_tune_result r = sample_result("block_m=64 block_n=64 stages=2", 1.25), got;
    assert_int_equal(mx_cache_get_tune(c, &key, &got), MXATTN_ERROR_NOT_FOUND);
    assert_int_equal(mx_cache_put_tune(c, &key, &r), MXATTN_OK);
    assert_int_equal(mx_cache_get_tune(c, &key, &got), MXATTN_OK);
    assert_string_equal(got.config, r.config);
    assert_true(got.median_ms == 1.25 && got.tops == 500.0 && got.default_ms == 1.875);
    assert_true(got.tuned_at > 0);

    mx_tune_result slower = sample_result("block_m=128 block_n=32 stages=3", 2.0);
    assert_int_equal(mx_cache_put_tune(c, &key, &slower), MXATTN_OK);
    assert_int_equal(mx_cache_get_tune(c, &key, &got), MXATTN_OK);
    assert_string_equal(got.config, slower.config);

    mx_tune_result bad = sample_result("", 1.0);
    assert_int_equal(mx_cache_put_tune(c, &key, &bad), MXATTN_ERROR_INVALID_VALUE);
    bad = sample_result("x=1", -1.0);
    assert_int_equal(mx_cache_put_tune(c, &key, &bad), MXATTN_ERROR_INVALID_VALUE);
    mx_cache_close(c);
}

/* A result tuned on one GPU must not be found for another SKU or software stack. */
static void test_tune_lookup_is_isolated_by_sku(void **state) {
    (void)state;
    mx_cache *c = open_in_dir("sku.db");
    mx_tune_key key = sample_key();
    put_sample_tune(c, &key, "block_m=64", 1.0);
    mx_tune_result got;

    mx_tune_key other = key;
    strcpy(other.gpu_name, "NVIDIA H100 80GB HBM3");
    assert_int_equal(mx_cache_get_tune(c, &other, &got), MXATTN_ERROR_NOT_FOUND);
    other = key; other.driver_version = 12050;
    assert_int_equal(mx_cache_get_tune(c, &other, &got), MXATTN_ERROR_NOT_FOUND);
    other = key; other.sm_count = 114;
    assert_int_equal(mx_cache_get_tune(c, &other, &got), MXATTN_ERROR_NOT_FOUND);
    other = key; other.compute_capability = 89;
    assert_int_equal(mx_cache_get_tune(c, &other, &got), MXATTN_ERROR_NOT_FOUND);
    other = key; other.nvrtc_version = 12060;
    assert_int_equal(mx_cache_get_tune(c, &other, &got), MXATTN_ERROR_NOT_FOUND);
    other = key; other.template_hash[0] = 'b';
    assert_int_equal(mx_cache_get_tune(c, &other, &got), MXATTN_ERROR_NOT_FOUND);
    other = key; strcpy(other.mxattn_version, "0.2.0");
    assert_int_equal(mx_cache_get_tune(c, &other, &got), MXATTN_ERROR_NOT_FOUND);
    other = key; other.seq_bucket = 8192;
    assert_int_equal(mx_cache_get_tune(c, &other, &got), MXATTN_ERROR_NOT_FOUND);
    /* Decoding over the same keys is another problem, with its own winner. */
    other = key; other.q_bucket = 16;
    assert_int_equal(mx_cache_get_tune(c, &other, &got), MXATTN_ERROR_NOT_FOUND);
    put_sample_tune(c, &other, "block_m=64 block_n=128", 0.05);
    assert_int_equal(mx_cache_get_tune(c, &other, &got), MXATTN_OK);
    assert_string_equal(got.config, "block_m=64 block_n=128");
    assert_int_equal(mx_cache_get_tune(c, &key, &got), MXATTN_OK);
    assert_string_equal(got.config, "block_m=64");
    mx_cache_close(c);
}

/* Stores a row for *k with `config`, tuned at `tuned_at`. */
static void put_tuned_at(mx_cache *c, const mx_tune_key *k, const char *config, int64_t tuned_at) {
    mx_tune_result r = sample_result(config, 1.0);
    r.tuned_at = tuned_at;
    assert_int_equal(mx_cache_put_tune(c, k, &r), MXATTN_OK);
}

static void expect_nearest(mx_cache *c, const mx_tune_key *key, const char *config) {
    mx_tune_result got;
    mx_tune_key found;
    if (mx_cache_get_tune_nearest(c, key, &got, &found) != MXATTN_OK) fail_msg("nearest: %s", mx_error_message());
    assert_string_equal(got.config, config);
    /* The row's own key comes back: the same SKU and problem as asked. */
    assert_string_equal(found.gpu_name, key->gpu_name);
    assert_int_equal(found.sm_count, key->sm_count);
    assert_int_equal(found.q_bucket, key->q_bucket);
}

/* Another build's row serves the same SKU and problem; another SKU's or
 * another problem's never does. */
static void test_nearest_tune_keeps_sku_and_problem(void **state) {
    (void)state;
    mx_cache *c = open_in_dir("nearest-sku.db");
    mx_tune_key key = sample_key();
    mx_tune_result got;
    mx_tune_key found;
    assert_int_equal(mx_cache_get_tune_nearest(c, &key, &got, &found), MXATTN_ERROR_NOT_FOUND);
    mx_tune_key other[13];
    for (int i = 0; i < 13; i++) {
        other[i] = key;
        other[i].driver_version = 13000;   /* another build besides: still never a match */
    }
    strcpy(other[0].gpu_name, "NVIDIA H100 80GB HBM3");
    other[1].sm_count = 114;
    other[2].compute_capability = 100;
    strcpy(other[3].family, "f16");
    other[4].head_dim = 64;
    strcpy(other[5].dtype, "bf16");
    strcpy(other[6].out_dtype, "bf16");
    other[7].causal = 0;
    other[8].gqa = 1;
    strcpy(other[9].layout, "bnhd");
    other[10].seq_bucket = 8192;
    other[11].q_bucket = 16;
    strcpy(other[12].gpu_name, "NVIDIA H200 NVL");
    for (int i = 0; i < 13; i++) put_sample_tune(c, &other[i], "block_m=128", 1.0);
    assert_int_equal(mx_cache_get_tune_nearest(c, &key, &got, &found), MXATTN_ERROR_NOT_FOUND);
    /* Each of them finds itself. */
    for (int i = 0; i < 13; i++) {
        assert_int_equal(mx_cache_get_tune_nearest(c, &other[i], &got, &found), MXATTN_OK);
        assert_int_equal(found.driver_version, 13000);
    }
    /* A row of another driver, NVRTC, mxattn version and template text for this one. */
    mx_tune_key elsewhere = key;
    elsewhere.driver_version = 12080;
    elsewhere.nvrtc_version = 12080;
    strcpy(elsewhere.mxattn_version, "0.0.9");
    memset(elsewhere.template_hash, 'f', 64);
    put_sample_tune(c, &elsewhere, "block_m=64 block_n=32", 1.0);
    assert_int_equal(mx_cache_get_tune(c, &key, &got), MXATTN_ERROR_NOT_FOUND);
    expect_nearest(c, &key, "block_m=64 block_n=32");
    assert_int_equal(mx_cache_get_tune_nearest(c, &key, &got, &found), MXATTN_OK);
    assert_int_equal(found.driver_version, 12080);
    assert_string_equal(found.template_hash, elsewhere.template_hash);
    assert_int_equal(mx_cache_get_tune_nearest(c, &key, &got, NULL), MXATTN_OK);
    mx_cache_close(c);

    /* A read-only file is served the same way. */
    char path[256];
    path_in_dir(path, sizeof path, "nearest-sku.db");
    assert_int_equal(mx_cache_open_ex(path, MX_CACHE_OPEN_READ_ONLY, &c), MXATTN_OK);
    assert_true(mx_cache_read_only(c));
    expect_nearest(c, &key, "block_m=64 block_n=32");
    mx_cache_close(c);
}

/* Same template hash first, then mxattn version, NVRTC, driver, newest. */
static void test_nearest_tune_prefers_the_closest_build(void **state) {
    (void)state;
    mx_cache *c = open_in_dir("nearest-order.db");
    mx_tune_key key = sample_key();
    mx_tune_key k;
    /* Differs in everything, but the newest. */
    k = key; k.driver_version = 1; k.nvrtc_version = 1; strcpy(k.mxattn_version, "9"); k.template_hash[0] = 'z';
    put_tuned_at(c, &k, "all=1", 900);
    expect_nearest(c, &key, "all=1");
    /* The same template text outranks everything else. */
    k = key; k.driver_version = 1; k.nvrtc_version = 1; strcpy(k.mxattn_version, "9");
    put_tuned_at(c, &k, "hash=1", 100);
    expect_nearest(c, &key, "hash=1");
    /* Then the same mxattn version. */
    k = key; k.driver_version = 1; k.nvrtc_version = 1;
    put_tuned_at(c, &k, "version=1", 50);
    expect_nearest(c, &key, "version=1");
    /* Then the same NVRTC: this row's driver differs, as the next one's NVRTC does. */
    k = key; k.driver_version = 2;
    put_tuned_at(c, &k, "nvrtc=1", 10);
    k = key; k.nvrtc_version = 2;
    put_tuned_at(c, &k, "driver=1", 800);
    expect_nearest(c, &key, "nvrtc=1");
    /* Between rows that differ from this build alike, the newest. */
    k = key; k.driver_version = 3;
    put_tuned_at(c, &k, "newer=1", 20);
    expect_nearest(c, &key, "newer=1");
    /* The exact row beats every other build. */
    put_tuned_at(c, &key, "exact=1", 1);
    expect_nearest(c, &key, "exact=1");
    mx_tune_key found;
    mx_tune_result got;
    assert_int_equal(mx_cache_get_tune_nearest(c, &key, &got, &found), MXATTN_OK);
    assert_memory_equal(&found, &key, sizeof key);
    mx_cache_close(c);
}

/* Plans run the query on every miss: it must search an index, not scan. */
static void test_nearest_tune_searches_an_index(void **state) {
    (void)state;
    mx_cache_close(open_in_dir("nearest-plan.db"));
    sqlite3 *db = raw_open("nearest-plan.db");
    char sql[2048];
    snprintf(sql, sizeof sql, "EXPLAIN QUERY PLAN %s", mx_cache_tune_nearest_sql());
    sqlite3_stmt *stmt;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &stmt, NULL), SQLITE_OK);
    int searched = 0;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
        const char *detail = (const char *)sqlite3_column_text(stmt, 3);
        printf("# %s\n", detail);
        assert_null(strstr(detail, "SCAN tune_results"));
        if (strstr(detail, "SEARCH tune_results USING")) searched = 1;
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    assert_true(searched);
}

/* ---- measurements -------------------------------------------------------- */

static mx_measurement sample_measurement(const char *config, const char *status, double ms) {
    return measurement_of(config, status, ms, 0.02, 128);
}

static void test_measurements_support_resuming(void **state) {
    (void)state;
    mx_cache *c = open_in_dir("m.db");
    mx_tune_key key = sample_key();
    mx_measurement a = sample_measurement("block_m=64", MX_MEASURE_OK, 1.5);
    mx_measurement b = sample_measurement("block_m=128", MX_MEASURE_OUT_OF_RESOURCES, 0);
    mx_measurement d = sample_measurement("block_m=32", MX_MEASURE_OK, 1.1);
    assert_int_equal(mx_cache_add_measurement(c, &key, &a), MXATTN_OK);
    assert_int_equal(mx_cache_add_measurement(c, &key, &b), MXATTN_OK);
    assert_int_equal(mx_cache_add_measurement(c, &key, &d), MXATTN_OK);
    mx_measurement bogus = sample_measurement("block_m=16", "fine", 1.0);
    assert_int_equal(mx_cache_add_measurement(c, &key, &bogus), MXATTN_ERROR_INVALID_VALUE);

    int measured;
    assert_int_equal(mx_cache_has_measurement(c, &key, "block_m=64", &measured), MXATTN_OK);
    assert_int_equal(measured, 1);
    assert_int_equal(mx_cache_has_measurement(c, &key, "block_m=16", &measured), MXATTN_OK);
    assert_int_equal(measured, 0);
    mx_tune_key other = key;
    other.driver_version++;
    assert_int_equal(mx_cache_has_measurement(c, &other, "block_m=64", &measured), MXATTN_OK);
    assert_int_equal(measured, 0);

    mx_measurement *list;
    int n;
    assert_int_equal(mx_cache_list_measurements(c, &key, &list, &n), MXATTN_OK);
    assert_int_equal(n, 3);
    assert_string_equal(list[0].config, "block_m=32"); /* fastest ok first */
    assert_string_equal(list[1].config, "block_m=64");
    assert_string_equal(list[2].status, MX_MEASURE_OUT_OF_RESOURCES);
    assert_true(list[0].measured_at > 0);
    free(list);
    mx_cache_close(c);
}

/* ---- queries ------------------------------------------------------------- */

static void put_row(mx_cache *c, const char *gpu, const char *family, int head_dim, const char *dtype,
                    int causal, double ms) {
    mx_tune_key k = sample_key();
    snprintf(k.gpu_name, sizeof k.gpu_name, "%s", gpu);
    snprintf(k.family, sizeof k.family, "%s", family);
    k.head_dim = head_dim;
    snprintf(k.dtype, sizeof k.dtype, "%s", dtype);
    k.causal = causal;
    put_sample_tune(c, &k, "block_m=64 block_n=64", ms);
}

static int query_count(mx_cache *c, const char *filter_text) {
    mx_tune_filter f;
    mx_tune_row *rows;
    int n;
    assert_int_equal(mx_tune_filter_parse(filter_text, &f), MXATTN_OK);
    assert_int_equal(mx_cache_query(c, &f, &rows, &n), MXATTN_OK);
    free(rows);
    return n;
}

static void test_query_filters_and_json(void **state) {
    (void)state;
    mx_cache *c = open_in_dir("q.db");
    put_row(c, "NVIDIA H200", "f16", 128, "f16", 0, 1.0);
    put_row(c, "NVIDIA H200", "int8-f16", 128, "bf16", 1, 0.8);
    put_row(c, "NVIDIA H100 80GB HBM3", "f16", 64, "f16", 1, 1.2);
    put_row(c, "Weird \"GPU\" 100%_", "nvfp4", 256, "bf16", 0, 2.0);

    assert_int_equal(query_count(c, NULL), 4);
    assert_int_equal(query_count(c, "gpu=h200"), 2);
    assert_int_equal(query_count(c, "gpu=H1"), 1);
    assert_int_equal(query_count(c, "gpu=100%_"), 1); /* literal, not a LIKE pattern */
    assert_int_equal(query_count(c, "gpu=%"), 1);
    assert_int_equal(query_count(c, "family=f16"), 2);
    assert_int_equal(query_count(c, "family=f16 head_dim=64"), 1);
    assert_int_equal(query_count(c, "dtype=bf16"), 2);
    assert_int_equal(query_count(c, "causal=1"), 2);
    assert_int_equal(query_count(c, "causal=0 dtype=f16 gpu=H200"), 1);
    assert_int_equal(query_count(c, "family=mxfp4"), 0);

    mx_tune_filter f;
    char *json;
    assert_int_equal(mx_tune_filter_parse("family=nvfp4", &f), MXATTN_OK);
    assert_int_equal(mx_cache_query_json(c, &f, &json), MXATTN_OK);
    assert_non_null(strstr(json, "\"gpu\": \"Weird \\\"GPU\\\" 100%_\""));
    assert_non_null(strstr(json, "\"head_dim\": 256"));
    assert_non_null(strstr(json, "\"speedup\": 1.5"));
    assert_int_equal(json[0], '[');
    free(json);
    assert_int_equal(mx_tune_filter_parse("family=none", &f), MXATTN_OK);
    assert_int_equal(mx_cache_query_json(c, &f, &json), MXATTN_OK);
    assert_string_equal(json, "[]\n");
    free(json);
    mx_cache_close(c);
}

static void test_filter_parse_rejects_bad_terms(void **state) {
    (void)state;
    mx_tune_filter f;
    assert_int_equal(mx_tune_filter_parse("  gpu=H200   head_dim=128 ", &f), MXATTN_OK);
    assert_string_equal(f.gpu, "H200");
    assert_int_equal(f.head_dim, 128);
    assert_int_equal(f.causal, -1);
    assert_int_equal(mx_tune_filter_parse("colour=red", &f), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mx_error_message(), "colour"));
    assert_int_equal(mx_tune_filter_parse("head_dim=12x", &f), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mx_tune_filter_parse("causal=7", &f), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mx_tune_filter_parse("dtype=f32", &f), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mx_tune_filter_parse("gpu", &f), MXATTN_ERROR_INVALID_VALUE);
}

/* ---- default path -------------------------------------------------------- */

static void test_default_path_follows_environment(void **state) {
    (void)state;
    char path[4096];
    setenv("MXATTN_CACHE", "/x/explicit.db", 1);
    setenv("XDG_CACHE_HOME", "/xdg", 1);
    setenv("HOME", "/home/u", 1);
    assert_int_equal(mx_cache_default_path(path, sizeof path), MXATTN_OK);
    assert_string_equal(path, "/x/explicit.db");
    unsetenv("MXATTN_CACHE");
    assert_int_equal(mx_cache_default_path(path, sizeof path), MXATTN_OK);
    assert_string_equal(path, "/xdg/mxattn/mxattn.db");
    unsetenv("XDG_CACHE_HOME");
    assert_int_equal(mx_cache_default_path(path, sizeof path), MXATTN_OK);
    assert_string_equal(path, "/home/u/.cache/mxattn/mxattn.db");
    assert_int_equal(mx_cache_default_path(path, 8), MXATTN_ERROR_CACHE);

    /* NULL path opens the default one. */
    char expect[256];
    path_in_dir(expect, sizeof expect, "env/default.db");
    setenv("MXATTN_CACHE", expect, 1);
    mx_cache *c;
    assert_int_equal(mx_cache_open(NULL, &c), MXATTN_OK);
    assert_string_equal(mx_cache_path(c), expect);
    mx_cache_close(c);
    assert_int_equal(access(expect, F_OK), 0);
    unsetenv("MXATTN_CACHE");
}

/* Each test gets a scratch directory of its own. */
#define DIR_TEST(f) cmocka_unit_test_setup_teardown(f, make_dir, remove_dir)

int main(void) {
    const struct CMUnitTest tests[] = {
        DIR_TEST(test_fresh_database_is_created_with_parents),
        DIR_TEST(test_v1_database_is_migrated),
        DIR_TEST(test_v4_buckets_are_read_as_key_buckets),
        DIR_TEST(test_kernel_round_trip),
        DIR_TEST(test_kernel_for_another_arch_is_never_returned),
        DIR_TEST(test_tampered_kernel_blob_is_reported_and_removed),
        DIR_TEST(test_bad_kernel_records_are_rejected),
        DIR_TEST(test_tune_round_trip_and_retune_replaces),
        DIR_TEST(test_tune_lookup_is_isolated_by_sku),
        DIR_TEST(test_nearest_tune_keeps_sku_and_problem),
        DIR_TEST(test_nearest_tune_prefers_the_closest_build),
        DIR_TEST(test_nearest_tune_searches_an_index),
        DIR_TEST(test_measurements_support_resuming),
        DIR_TEST(test_query_filters_and_json),
        cmocka_unit_test(test_filter_parse_rejects_bad_terms),
        DIR_TEST(test_default_path_follows_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
