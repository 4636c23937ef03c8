/* Export, import, merge, vacuum and check.  A malformed or hostile export
 * must be rejected with the target database exactly as it was; a kernel
 * enters only signed by a trusted key; a tuning row with an impossible value
 * is refused and counted. */
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
#include <unistd.h>

#include "cache/cache.h"
#include "cache/sign.h"
#include "util/err.h"
#include "support/temp_dir.h"
#include "support/fixtures.h"
#include "util/sha256.h"

static char g_dir[64];
static mx_sign_secret g_signer, g_stranger;   /* made for each test */
static mx_import_options g_plain, g_trusting; /* tuning rows only; kernels signed by g_signer */

static const char *in_dir(const char *name);

static void make_key(const char *name, mx_sign_secret *key) {
    char pub[65];
    assert_int_equal(mx_sign_keygen(in_dir(name), pub), MXATTN_OK);
    assert_int_equal(mx_sign_load_secret(in_dir(name), key), MXATTN_OK);
    char hex[65];
    mx_sign_public_hex(&key->pk, hex);
    assert_string_equal(hex, pub);
}

static int make_dir(void **state) {
    (void)state;
    if (temp_dir_make(g_dir, sizeof g_dir, "mxattn-transfer")) return -1;
    make_key("signer.key", &g_signer);
    make_key("stranger.key", &g_stranger);
    mx_import_options_init(&g_plain);
    mx_import_options_init(&g_trusting);
    g_trusting.with_kernels = 1;
    g_trusting.trusted[0] = g_signer.pk;
    g_trusting.n_trusted = 1;
    return 0;
}

static int remove_dir(void **state) {
    (void)state;
    return temp_dir_remove(g_dir);
}

static const char *in_dir(const char *name) { return temp_dir_path(g_dir, name); }

static mx_cache *open_db(const char *name) {
    mx_cache *c;
    assert_int_equal(mx_cache_open(in_dir(name), &c), MXATTN_OK);
    return c;
}

static mx_tune_key key_named(const char *gpu, int seq_bucket) {
    mx_tune_key k;
    tune_key_h200(&k, gpu);
    k.head_dim = 128;
    strcpy(k.dtype, "f16");
    strcpy(k.out_dtype, "f16");
    strcpy(k.layout, "bhnd");
    k.seq_bucket = seq_bucket;
    k.q_bucket = seq_bucket;
    k.gqa = 1;
    return k;
}

static void put(mx_cache *c, const char *gpu, int bucket, const char *config, double ms) {
    mx_tune_key k = key_named(gpu, bucket);
    mx_tune_result r = tune_result_of(config, ms, 2 * ms, 0);
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
    mx_kernel_record k = kernel_record_of(g_blobs[which], sizeof g_blobs[which], which);
    assert_int_equal(mx_cache_put_kernel(c, &k), MXATTN_OK);
    return k;
}

/* A source with three tuning rows and two kernels, whose records go to
 * kernels[2] unless it is NULL (most tests only need them stored). */
static mx_cache *make_source(mx_kernel_record kernels[2]) {
    mx_cache *src = open_db("source.db");
    put(src, "NVIDIA H200", 1024, "block_m=64", 1.0);
    put(src, "NVIDIA H200", 4096, "block_m=128", 3.0);
    put(src, "NVIDIA H200", 16384, "block_m=128 stages=3", 9.0);
    mx_kernel_record k0 = put_kernel(src, 0), k1 = put_kernel(src, 1);
    if (kernels) {
        kernels[0] = k0;
        kernels[1] = k1;
    }
    return src;
}

/* make_source, exported to `file` as mx_cache_export is asked to; the source
 * stays open for the caller. Most tests start from such an export. */
static mx_cache *exported_source(mx_kernel_record kernels[2], const char *file, int with_kernels,
                                 const mx_sign_secret *signer) {
    mx_cache *src = make_source(kernels);
    assert_int_equal(mx_cache_export(src, in_dir(file), with_kernels, signer), MXATTN_OK);
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

/* Asserts that `dst` still matches `before` (a snapshot), then frees it:
 * the end of every check that a refused import changed nothing. */
static void expect_unchanged(mx_cache *dst, char *before) {
    char *after = snapshot(dst);
    assert_string_equal(before, after);
    free(before);
    free(after);
}

/* ---- round trips --------------------------------------------------------- */

static void test_export_import_round_trip(void **state) {
    (void)state;
    mx_kernel_record kernels[2];
    mx_cache *src = exported_source(kernels, "tunes.mxdb", 0, NULL);
    assert_int_equal(mx_cache_export(src, in_dir("full.mxdb"), 1, &g_signer), MXATTN_OK);
    assert_int_equal(access(in_dir("tunes.mxdb-journal"), F_OK), -1);
    mx_cache_close(src);

    mx_cache *dst = open_db("target.db");
    mx_import_report rep;
    assert_int_equal(mx_cache_import(dst, in_dir("tunes.mxdb"), &g_trusting, &rep), MXATTN_OK);
    assert_int_equal(rep.tune_rows_taken, 3);
    assert_int_equal(rep.kernels_read, 0); /* tuning-only export carries no kernels */
    assert_string_equal(get(dst, "NVIDIA H200", 4096).config, "block_m=128");

    /* Kernels come in only when asked. */
    assert_int_equal(mx_cache_import(dst, in_dir("full.mxdb"), NULL, &rep), MXATTN_OK);
    mx_cache_counts n;
    assert_int_equal(mx_cache_count(dst, &n), MXATTN_OK);
    assert_int_equal(n.kernels, 0);
    assert_int_equal(mx_cache_import(dst, in_dir("full.mxdb"), &g_trusting, &rep), MXATTN_OK);
    assert_int_equal(rep.kernels_taken, 2);
    mx_kernel_record got;
    assert_int_equal(mx_cache_get_kernel(dst, kernels[1].key, "sm_90a", &got), MXATTN_OK);
    assert_memory_equal(got.cubin, g_blobs[1], sizeof g_blobs[1]);
    mx_kernel_record_release(&got);
    mx_cache_close(dst);
}

static void test_import_replaces_merge_keeps_the_faster(void **state) {
    (void)state;
    /* 1024: 1.0 ms, 4096: 3.0 ms, 16384: 9.0 ms */
    mx_cache_close(exported_source(NULL, "ex.mxdb", 0, NULL));

    mx_cache *dst = open_db("target.db");
    put(dst, "NVIDIA H200", 1024, "ours slower", 2.0);
    put(dst, "NVIDIA H200", 4096, "ours faster", 1.5);
    mx_import_report rep;
    /* merge also reads a whole database, not only an export */
    assert_int_equal(mx_cache_merge(dst, in_dir("source.db"), NULL, &rep), MXATTN_OK);
    EXPECT_ROW_COUNTS(rep, 3, 2, 1, -1);
    assert_string_equal(get(dst, "NVIDIA H200", 1024).config, "block_m=64");
    assert_string_equal(get(dst, "NVIDIA H200", 4096).config, "ours faster");
    assert_string_equal(get(dst, "NVIDIA H200", 16384).config, "block_m=128 stages=3");

    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), &g_plain, &rep), MXATTN_OK);
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
    mx_cache_close(exported_source(NULL, "ex.mxdb", 1, &g_signer));
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
    assert_int_equal(mx_cache_import(dst, in_dir(file), with_kernels ? &g_trusting : &g_plain, &rep), expected);
    if (!strstr(mx_error_message(), message_part))
        fail_msg("message '%s' lacks '%s'", mx_error_message(), message_part);
    assert_non_null(strstr(mx_error_message(), "unchanged"));
    assert_int_equal(rep.tune_rows_taken, 0);
    expect_unchanged(dst, before);
}

/* One spoiled export: the SQL run on `file`, and how its import must fail. */
struct spoil {
    const char *file, *sql;
    int with_kernels;
    mxattn_status expected;
    const char *message_part;
};

/* Runs each spoil in order on the same target, expecting each import
 * rejected with nothing changed: the tests of hostile exports share it. */
static void expect_each_rejected(mx_cache *dst, const struct spoil *spoils, size_t n) {
    for (size_t i = 0; i < n; i++) {
        tamper(spoils[i].file, spoils[i].sql);
        expect_rejected(dst, spoils[i].file, spoils[i].with_kernels, spoils[i].expected, spoils[i].message_part);
    }
}

static void test_sql_in_names_is_stored_verbatim(void **state) {
    (void)state;
    mx_cache *dst = prepare();
    static const char evil_gpu[] = "x'); DROP TABLE kernels; --";
    tamper("ex.mxdb", "UPDATE tune_results SET gpu_name = 'x''); DROP TABLE kernels; --',"
                      " family = 'f16\"; DROP TABLE x;--' WHERE seq_bucket = 1024");
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), &g_trusting, NULL), MXATTN_OK);
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

/* A fresh target (prepare) that refuses ex.mxdb with its kernels once `sql`
 * has spoiled the export; the kernel tests' start. */
static mx_cache *refusing_target(const char *sql, mxattn_status expected, const char *message_part) {
    mx_cache *dst = prepare();
    tamper("ex.mxdb", sql);
    expect_rejected(dst, "ex.mxdb", 1, expected, message_part);
    return dst;
}

static void test_oversized_blob_is_rejected(void **state) {
    (void)state;
    mx_cache *dst = refusing_target("UPDATE kernels SET cubin = zeroblob(67108865) WHERE rowid = 1",
                                    MXATTN_ERROR_INVALID_VALUE, "67108865-byte");
    /* Without --with-kernels the kernels are not read at all. */
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), NULL, NULL), MXATTN_OK);
    mx_cache_close(dst);
}

static void test_wrong_hash_rejects_everything(void **state) {
    (void)state;
    /* The tuning rows are valid and would be copied first: they must be rolled back too. */
    mx_cache_close(refusing_target("UPDATE kernels SET cubin = zeroblob(3000) WHERE rowid = 2",
                                   MXATTN_ERROR_UNTRUSTED, "does not match"));
}

static void test_malformed_fields_are_rejected(void **state) {
    (void)state;
    static const struct spoil spoils[] = {
        {"ex.mxdb", "UPDATE kernels SET key = 'not hex' WHERE rowid = 1", 1, MXATTN_ERROR_INVALID_VALUE, "malformed"},
        {"ex.mxdb", "DELETE FROM kernels; UPDATE tune_results SET gpu_name = printf('%.300c', 'G')", 0,
         MXATTN_ERROR_INVALID_VALUE, "too long"},
        {"ex.mxdb", "UPDATE tune_results SET gpu_name = 'ok', sm_count = 'many'", 0, MXATTN_ERROR_INVALID_VALUE,
         "wrong type"},
    };
    mx_cache *dst = prepare();
    expect_each_rejected(dst, spoils, sizeof spoils / sizeof spoils[0]);
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
    static const struct spoil spoils[] = {
        {"foreign.mxdb", "CREATE TABLE tune_results(a, b); PRAGMA user_version = 2;", 0, MXATTN_ERROR_INVALID_VALUE,
         "foreign schema"},
        {"ex.mxdb", "CREATE TABLE evil(x)", 0, MXATTN_ERROR_INVALID_VALUE, "evil"},
        {"ex.mxdb", "DROP TABLE evil; PRAGMA user_version = 7;", 0, MXATTN_ERROR_UNSUPPORTED, "version 7"}, /* a newer mxattn's */
    };
    mx_cache *dst = prepare();
    expect_each_rejected(dst, spoils, sizeof spoils / sizeof spoils[0]);
    /* A view posing as a table would run the exporter's SQL in our process. */
    tamper("view.mxdb", "CREATE TABLE kernels(key, arch, nvrtc_version, kernel_names, cubin, cubin_sha256,"
                        " compile_ms, registers, shared_bytes, spill_bytes, created_at);"
                        "CREATE TABLE measurements(x); CREATE VIEW tune_results AS SELECT 1;"
                        "PRAGMA user_version = 2;");
    expect_rejected(dst, "view.mxdb", 0, MXATTN_ERROR_INVALID_VALUE, "view.mxdb");
    mx_cache_close(dst);
}


/* ---- kernels need a trusted signature ------------------------------------ */

/* Replaces row `rowid`'s cubin with a changed one and updates its hash to
 * match: what an attacker who read the format would do. */
static void tamper_consistently(const char *name, int rowid) {
    unsigned char blob[3000];
    memcpy(blob, g_blobs[0], sizeof blob);
    blob[100] ^= 0xff;
    char hash[65];
    mx_sha256_hex(blob, sizeof blob, hash);
    sqlite3 *db;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_open(in_dir(name), &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "UPDATE kernels SET cubin = ?1, cubin_sha256 = ?2 WHERE rowid = ?3", -1, &s,
                                        NULL), SQLITE_OK);
    sqlite3_bind_blob(s, 1, blob, sizeof blob, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, hash, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 3, rowid);
    assert_int_equal(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    sqlite3_close(db);
}

static const char *key_of_row(int rowid) {
    static char key[65];
    sqlite3 *db;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_open(in_dir("ex.mxdb"), &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT key FROM kernels WHERE rowid = ?1", -1, &s, NULL), SQLITE_OK);
    sqlite3_bind_int(s, 1, rowid);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    snprintf(key, sizeof key, "%.16s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    sqlite3_close(db);
    return key;
}

/* Copies the file at path `from` to path `to`: for copies inside the test
 * directory (copy_file) and for bringing a corpus file into it. */
static void copy_path(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

static void copy_file(const char *from, const char *to) {
    copy_path(in_dir(from), in_dir(to));
}

/* Each attack on a signed export is refused naming the kernel and why, and
 * the target keeps every row it had: tuning rows of the same file too. */
static void test_kernels_need_a_trusted_signature(void **state) {
    (void)state;
    mx_cache *dst = prepare();   /* ex.mxdb: signed by g_signer */
    copy_file("ex.mxdb", "good.mxdb");
    const char *reasons[][2] = {
        {"tampered cubin", "does not match"},
        {"tampered cubin, consistent hash", "does not cover"},
        {"cubin moved under another key", "does not cover"},
        {"key moved to another cubin", "does not cover"},
        {"one row unsigned", "is unsigned"},
    };
    for (int attack = 0; attack < 5; attack++) {
        copy_file("good.mxdb", "ex.mxdb");
        char key[17];
        snprintf(key, sizeof key, "%.16s", key_of_row(1));
        if (attack == 0) tamper("ex.mxdb", "UPDATE kernels SET cubin = zeroblob(3000) WHERE rowid = 1");
        if (attack == 1) tamper_consistently("ex.mxdb", 1);
        if (attack == 2)
            tamper("ex.mxdb", "UPDATE kernels SET (cubin, cubin_sha256, signer, signature) = (SELECT cubin, cubin_sha256,"
                              " signer, signature FROM kernels WHERE rowid = 2) WHERE rowid = 1");
        if (attack == 3)
            tamper("ex.mxdb", "DELETE FROM kernels WHERE rowid = 2;"
                              "UPDATE kernels SET key = printf('%064d', 7) WHERE rowid = 1");
        if (attack == 4) tamper("ex.mxdb", "UPDATE kernels SET signature = NULL WHERE rowid = 1");
        if (attack == 3) snprintf(key, sizeof key, "%.16s", "0000000000000000");
        print_message("attack: %s\n", reasons[attack][0]);
        expect_rejected(dst, "ex.mxdb", 1, MXATTN_ERROR_UNTRUSTED, reasons[attack][1]);
        if (!strstr(mx_error_message(), key)) fail_msg("'%s' does not name kernel %s", mx_error_message(), key);
    }

    /* Signed, but by a key nobody named. */
    copy_file("good.mxdb", "ex.mxdb");
    mx_import_options strangers = g_trusting;
    strangers.trusted[0] = g_stranger.pk;
    char *before = snapshot(dst);
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), &strangers, NULL), MXATTN_ERROR_UNTRUSTED);
    assert_non_null(strstr(mx_error_message(), "not a trusted key"));
    char signer_hex[65];
    mx_sign_public_hex(&g_signer.pk, signer_hex);
    assert_non_null(strstr(mx_error_message(), signer_hex));
    /* Kernels without any trusted key: refused before the file is read. */
    mx_import_options nobody = g_trusting;
    nobody.n_trusted = 0;
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), &nobody, NULL), MXATTN_ERROR_UNTRUSTED);
    expect_unchanged(dst, before);

    /* The good file, with the signer among other trusted keys, imports. */
    mx_import_options both = g_trusting;
    both.trusted[0] = g_stranger.pk;
    both.trusted[1] = g_signer.pk;
    both.n_trusted = 2;
    mx_import_report rep;
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), &both, &rep), MXATTN_OK);
    assert_int_equal(rep.kernels_read, 2);
    assert_int_equal(rep.kernels_taken, 1);   /* the target had kernel 0 already */
    mx_cache_close(dst);
}

static void test_unsigned_export_brings_no_kernels(void **state) {
    (void)state;
    mx_cache *src = exported_source(NULL, "unsigned.mxdb", 1, NULL);
    /* Signing only means something for kernels. */
    assert_int_equal(mx_cache_export(src, in_dir("odd.mxdb"), 0, &g_signer), MXATTN_ERROR_INVALID_VALUE);
    mx_cache_close(src);
    mx_cache *dst = prepare();
    expect_rejected(dst, "unsigned.mxdb", 1, MXATTN_ERROR_UNTRUSTED, "unsigned (exported without --sign)");
    /* Its tuning rows still come by default. */
    mx_import_report rep;
    assert_int_equal(mx_cache_import(dst, in_dir("unsigned.mxdb"), NULL, &rep), MXATTN_OK);
    assert_int_equal(rep.tune_rows_taken, 3);
    assert_int_equal(rep.kernels_read, 0);
    /* merge never takes kernels */
    assert_int_equal(mx_cache_merge(dst, in_dir("ex.mxdb"), &g_trusting, NULL), MXATTN_ERROR_INVALID_VALUE);
    mx_cache_close(dst);
}

static void test_key_files(void **state) {
    (void)state;
    struct stat sb;
    assert_int_equal(stat(in_dir("signer.key"), &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    char pub[65];
    /* A key is never overwritten. */
    assert_int_equal(mx_sign_keygen(in_dir("signer.key"), pub), MXATTN_ERROR_IO);
    mx_sign_secret again;
    assert_int_equal(mx_sign_load_secret(in_dir("signer.key"), &again), MXATTN_OK);
    assert_memory_equal(again.pk.bytes, g_signer.pk.bytes, 32);
    chmod(in_dir("signer.key"), 0644);
    assert_int_equal(mx_sign_load_secret(in_dir("signer.key"), &again), MXATTN_ERROR_IO);
    assert_non_null(strstr(mx_error_message(), "chmod 600"));
    /* A public key by value or by its .pub file. */
    mx_sign_public pk;
    char hex[65];
    mx_sign_public_hex(&g_signer.pk, hex);
    assert_int_equal(mx_sign_parse_public(hex, &pk), MXATTN_OK);
    assert_memory_equal(pk.bytes, g_signer.pk.bytes, 32);
    memset(&pk, 0, sizeof pk);
    assert_int_equal(mx_sign_parse_public(in_dir("signer.key.pub"), &pk), MXATTN_OK);
    assert_memory_equal(pk.bytes, g_signer.pk.bytes, 32);
    assert_int_equal(mx_sign_parse_public("abcd", &pk), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mx_sign_parse_public(in_dir("source.db"), &pk), MXATTN_ERROR_INVALID_VALUE);
}

/* ---- tuning rows are checked --------------------------------------------- */

static int refuse_stages(void *arg, const mx_tune_key *key, const mx_tune_result *r, char *why, size_t cap) {
    (*(int *)arg)++;
    if (!strstr(r->config, "stages")) return 1;
    snprintf(why, cap, "stages is not a knob of %s", key->family);
    return 0;
}

/* Imports ex.mxdb into `dst` with refuse_stages as the caller's row check;
 * returns how many rows the check was asked about. */
static int import_refusing_stages(mx_cache *dst, mx_import_report *rep) {
    int calls = 0;
    mx_import_options opt;
    mx_import_options_init(&opt);
    opt.row_check = refuse_stages;
    opt.row_check_arg = &calls;
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), &opt, rep), MXATTN_OK);
    return calls;
}

static void test_impossible_rows_are_refused(void **state) {
    (void)state;
    mx_cache *src = make_source(NULL);
    put(src, "NVIDIA H200", 65536, "block_m=64 tiny", 1.0);
    assert_int_equal(mx_cache_export(src, in_dir("ex.mxdb"), 0, NULL), MXATTN_OK);
    mx_cache_close(src);
    /* 1024: a time no kernel has; 65536: a control character; 4096 stays good. */
    tamper("ex.mxdb", "UPDATE tune_results SET median_ms = 1e-300 WHERE seq_bucket = 1024;"
                      "UPDATE tune_results SET config = 'block_m=64' || char(10) || 'head_dim=256' WHERE seq_bucket = 65536");
    mx_cache *dst = open_db("target.db");
    put(dst, "NVIDIA H200", 1024, "ours", 5.0);
    mx_import_report rep;
    /* merge would have crowned the 1e-300 row */
    assert_int_equal(mx_cache_merge(dst, in_dir("ex.mxdb"), NULL, &rep), MXATTN_OK);
    EXPECT_ROW_COUNTS(rep, 4, 2, -1, 2);
    assert_non_null(strstr(rep.first_refusal, "median_ms 1e-300"));
    assert_non_null(strstr(rep.first_refusal, "seq 1024/1024"));
    assert_string_equal(get(dst, "NVIDIA H200", 1024).config, "ours");
    assert_string_equal(get(dst, "NVIDIA H200", 4096).config, "block_m=128");
    mx_tune_key k = key_named("NVIDIA H200", 65536);
    mx_tune_result r;
    assert_int_equal(mx_cache_get_tune(dst, &k, &r), MXATTN_ERROR_NOT_FOUND);

    /* Other values the cache can rule out alone. */
    tamper("ex.mxdb", "UPDATE tune_results SET median_ms = 1;"
                      "UPDATE tune_results SET head_dim = 100000 WHERE seq_bucket = 1024;"
                      "UPDATE tune_results SET seq_bucket = 1000, q_bucket = 1000 WHERE seq_bucket = 4096;"
                      "UPDATE tune_results SET config = printf('%.300c', 'x'), tops = 1e300 WHERE seq_bucket = 65536;"
                      "UPDATE tune_results SET default_ms = 1e300 WHERE seq_bucket = 16384;");
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), NULL, &rep), MXATTN_OK);
    EXPECT_ROW_COUNTS(rep, -1, 0, -1, 4);
    assert_non_null(strstr(rep.first_refusal, "head_dim 100000"));

    /* The caller's check runs after the cache's, on rows that passed it. */
    tamper("ex.mxdb", "UPDATE tune_results SET head_dim = 128, seq_bucket = 4096, q_bucket = 4096 WHERE seq_bucket = 1000;"
                      "UPDATE tune_results SET head_dim = 128, default_ms = 2, config = 'block_m=64', tops = 1;");
    tamper("ex.mxdb", "UPDATE tune_results SET config = 'block_m=64 stages=3' WHERE seq_bucket = 16384");
    int calls = import_refusing_stages(dst, &rep);
    assert_int_equal(calls, 4);
    EXPECT_ROW_COUNTS(rep, -1, 3, -1, 1);
    assert_non_null(strstr(rep.first_refusal, "stages is not a knob of f16"));
    mx_cache_close(dst);
}

/* ---- measurements travel with the tuning rows ---------------------------- */

static void measure(mx_cache *c, int bucket, const char *config, const char *status, double ms) {
    mx_tune_key k = key_named("NVIDIA H200", bucket);
    mx_measurement m = measurement_of(config, status, ms, 0.01, 128);
    assert_int_equal(mx_cache_add_measurement(c, &k, &m), MXATTN_OK);
}

/* The measurement of `config` for bucket 1024, which must exist. */
static mx_measurement measured(mx_cache *c, const char *config) {
    mx_tune_key k = key_named("NVIDIA H200", 1024);
    mx_measurement *all, found;
    int n;
    assert_int_equal(mx_cache_list_measurements(c, &k, &all, &n), MXATTN_OK);
    int i = 0;
    while (i < n && strcmp(all[i].config, config)) i++;
    if (i == n) fail_msg("no measurement of '%s'", config);
    found = all[i];
    free(all);
    return found;
}

static long rows_in(const char *file, const char *table) {
    sqlite3 *db;
    sqlite3_stmt *s;
    char sql[64];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    assert_int_equal(sqlite3_open_v2(in_dir(file), &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    long n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n;
}

/* make_source plus three measurements at bucket 1024: two that ran, one that did not. */
static void export_measured(const char *file) {
    mx_cache *src = make_source(NULL);
    measure(src, 1024, "block_m=64", MX_MEASURE_OK, 1.0);
    measure(src, 1024, "block_m=128", MX_MEASURE_OK, 1.7);
    measure(src, 1024, "block_m=256", MX_MEASURE_COMPILE_FAILED, 0);
    assert_int_equal(mx_cache_export(src, in_dir(file), 0, NULL), MXATTN_OK);
    mx_cache_close(src);
}

/* ex.mxdb imported into a fresh target.db, which is returned, its report in
 * *rep: the measurements read, taken and refused must be those given. */
static mx_cache *import_measured(mx_import_report *rep, long read, long taken, long refused) {
    mx_cache *dst = open_db("target.db");
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), NULL, rep), MXATTN_OK);
    assert_int_equal(rep->measurements_read, read);
    assert_int_equal(rep->measurements_taken, taken);
    assert_int_equal(rep->measurements_refused, refused);
    return dst;
}

static void test_measurements_are_exported_and_imported(void **state) {
    (void)state;
    export_measured("ex.mxdb");
    assert_int_equal(rows_in("ex.mxdb", "measurements"), 3);
    mx_import_report rep;
    mx_cache *dst = import_measured(&rep, 3, 3, 0);
    assert_int_equal(rep.tune_rows_taken, 3);
    mx_measurement m = measured(dst, "block_m=128");
    assert_string_equal(m.status, MX_MEASURE_OK);
    assert_true(m.median_ms == 1.7);
    assert_int_equal(m.registers, 128);
    /* A candidate that failed has no time, and is taken as it is. */
    m = measured(dst, "block_m=256");
    assert_string_equal(m.status, MX_MEASURE_COMPILE_FAILED);
    assert_true(m.median_ms == 0);
    mx_tune_key k = key_named("NVIDIA H200", 1024);
    int seen = 0;
    assert_int_equal(mx_cache_has_measurement(dst, &k, "block_m=64", &seen), MXATTN_OK);
    assert_true(seen);
    mx_cache_close(dst);
}

static void test_impossible_measurements_are_refused(void **state) {
    (void)state;
    export_measured("ex.mxdb");
    /* Three bad ones beside the three good: an "ok" time no kernel has, an
     * unknown status, a control character in a config; and a failed
     * candidate with a time, which is allowed. */
    tamper("ex.mxdb", "INSERT INTO measurements SELECT gpu_name, sm_count, compute_capability, driver_version,"
                      " nvrtc_version, mxattn_version, template_hash, family, head_dim, dtype, out_dtype, causal, gqa,"
                      " layout, seq_bucket, q_bucket, config || ' bad', status, median_ms, spread, registers,"
                      " measured_at FROM measurements;"
                      "UPDATE measurements SET median_ms = 1e-300 WHERE config = 'block_m=64 bad';"
                      "UPDATE measurements SET status = 'exploded' WHERE config = 'block_m=128 bad';"
                      "UPDATE measurements SET config = 'block_m=256' || char(10) WHERE config = 'block_m=256 bad';"
                      "UPDATE measurements SET median_ms = 4.0 WHERE config = 'block_m=256';");
    mx_import_report rep;
    mx_cache *dst = import_measured(&rep, 6, 3, 3);
    assert_int_equal(rep.tune_rows_refused, 0);
    assert_non_null(strstr(rep.first_refusal, "median_ms 1e-300"));
    assert_non_null(strstr(rep.first_refusal, "block_m=64 bad"));
    mx_tune_key k = key_named("NVIDIA H200", 1024);
    int seen = 1;
    assert_int_equal(mx_cache_has_measurement(dst, &k, "block_m=128 bad", &seen), MXATTN_OK);
    assert_false(seen);
    assert_true(measured(dst, "block_m=256").median_ms == 4.0);

    /* The caller's check sees the "ok" measurements (as results of their
     * config) and only those: a failed candidate has nothing to run. */
    tamper("ex.mxdb", "DELETE FROM measurements WHERE config LIKE '%bad%' OR config LIKE '%' || char(10);"
                      "UPDATE measurements SET config = config || ' stages=3';");
    int calls = import_refusing_stages(dst, &rep);
    assert_int_equal(calls, 3 + 2);   /* three tuning rows, two "ok" measurements */
    assert_int_equal(rep.measurements_refused, 2);
    assert_int_equal(rep.measurements_taken, 1);
    assert_int_equal(rep.tune_rows_refused, 1);   /* the 16384 row has stages too */
    assert_non_null(strstr(rep.first_refusal, "stages is not a knob of f16"));
    mx_cache_close(dst);
}

/* Exports before measurements were carried held the table, empty (every
 * export is made with the whole schema); and v1/v2 files have no q_bucket. */
/* Imports `file`, which must give one tuning row and one measurement. */
static void import_one_of_each(mx_cache *dst, const char *file) {
    mx_import_report rep;
    assert_int_equal(mx_cache_import(dst, in_dir(file), NULL, &rep), MXATTN_OK);
    assert_int_equal(rep.tune_rows_taken, 1);
    assert_int_equal(rep.measurements_taken, 1);
}

static void test_old_exports_still_import(void **state) {
    (void)state;
    export_measured("ex.mxdb");
    tamper("ex.mxdb", "DELETE FROM measurements");
    mx_cache *dst = open_db("target.db");
    mx_import_report rep;
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), NULL, &rep), MXATTN_OK);
    assert_int_equal(rep.tune_rows_taken, 3);
    assert_int_equal(rep.measurements_read, 0);

    /* A version 2 file, as mxattn wrote it before q_bucket. */
    tamper("v2.mxdb",
           "CREATE TABLE kernels(key TEXT PRIMARY KEY NOT NULL, arch TEXT NOT NULL, nvrtc_version INTEGER NOT NULL,"
           " kernel_names TEXT NOT NULL, cubin BLOB NOT NULL, cubin_sha256 TEXT NOT NULL, compile_ms REAL NOT NULL,"
           " registers INTEGER NOT NULL, shared_bytes INTEGER NOT NULL, spill_bytes INTEGER NOT NULL,"
           " created_at INTEGER NOT NULL);"
           "CREATE TABLE tune_results(gpu_name, sm_count, compute_capability, driver_version, nvrtc_version,"
           " mxattn_version, template_hash, family, head_dim, dtype, out_dtype, causal, gqa, layout, seq_bucket,"
           " config, median_ms, tops, default_ms, tuned_at);"
           "CREATE TABLE measurements(gpu_name, sm_count, compute_capability, driver_version, nvrtc_version,"
           " mxattn_version, template_hash, family, head_dim, dtype, out_dtype, causal, gqa, layout, seq_bucket,"
           " config, status, median_ms, spread, registers, measured_at);"
           "INSERT INTO tune_results VALUES('NVIDIA H200', 132, 90, 12040, 12040, '0.1.0', '', 'f16', 128, 'f16',"
           " 'f16', 0, 1, 'bhnd', 1024, 'block_m=32', 2.5, 1, 3, 7);"
           "INSERT INTO measurements VALUES('NVIDIA H200', 132, 90, 12040, 12040, '0.1.0', '', 'f16', 128, 'f16',"
           " 'f16', 0, 1, 'bhnd', 1024, 'block_m=32', 'ok', 2.5, 0.02, 96, 7);"
           "PRAGMA user_version = 2;");
    import_one_of_each(dst, "v2.mxdb");
    assert_int_equal(measured(dst, "block_m=32").registers, 96);   /* key_named: q_bucket = seq_bucket */

    /* A version 4 file: its short self-attention rows sat at the old key
     * floor (256) and take their own length's key bucket (cache/schema.c). */
    tamper("v2.mxdb", "UPDATE tune_results SET seq_bucket=256, config='block_m=48';"
                      "UPDATE measurements SET seq_bucket=256, config='block_m=48';");
    tamper("v2.mxdb", "ALTER TABLE tune_results ADD COLUMN q_bucket; UPDATE tune_results SET q_bucket=128;"
                      "ALTER TABLE measurements ADD COLUMN q_bucket; UPDATE measurements SET q_bucket=128;"
                      "ALTER TABLE kernels ADD COLUMN last_used; CREATE TABLE meta(name, value);"
                      "PRAGMA user_version = 4;");
    import_one_of_each(dst, "v2.mxdb");
    mx_tune_key k = key_named("NVIDIA H200", 128);
    mx_tune_result r;
    assert_int_equal(mx_cache_get_tune(dst, &k, &r), MXATTN_OK);
    assert_string_equal(r.config, "block_m=48");
    mx_cache_close(dst);
}

static void test_merge_keeps_the_faster_measurement(void **state) {
    (void)state;
    mx_cache *src = open_db("source.db");
    measure(src, 1024, "a", MX_MEASURE_OK, 1.0);                 /* faster than ours: taken */
    measure(src, 1024, "b", MX_MEASURE_OK, 3.0);                 /* slower: ours kept */
    measure(src, 1024, "c", MX_MEASURE_OK, 2.0);                 /* ours failed: taken */
    measure(src, 1024, "d", MX_MEASURE_WRONG_RESULT, 0);         /* theirs failed: ours kept */
    measure(src, 1024, "e", MX_MEASURE_LAUNCH_FAILED, 0);        /* new: taken */
    assert_int_equal(mx_cache_export(src, in_dir("ex.mxdb"), 0, NULL), MXATTN_OK);
    mx_cache_close(src);
    mx_cache *dst = open_db("target.db");
    measure(dst, 1024, "a", MX_MEASURE_OK, 2.0);
    measure(dst, 1024, "b", MX_MEASURE_OK, 1.0);
    measure(dst, 1024, "c", MX_MEASURE_OUT_OF_RESOURCES, 0);
    measure(dst, 1024, "d", MX_MEASURE_OK, 1.0);
    mx_import_report rep;
    assert_int_equal(mx_cache_merge(dst, in_dir("ex.mxdb"), NULL, &rep), MXATTN_OK);
    assert_int_equal(rep.measurements_read, 5);
    assert_int_equal(rep.measurements_taken, 3);
    assert_true(measured(dst, "a").median_ms == 1.0);
    assert_true(measured(dst, "b").median_ms == 1.0);
    assert_string_equal(measured(dst, "c").status, MX_MEASURE_OK);
    assert_true(measured(dst, "c").median_ms == 2.0);
    assert_string_equal(measured(dst, "d").status, MX_MEASURE_OK);
    assert_string_equal(measured(dst, "e").status, MX_MEASURE_LAUNCH_FAILED);
    /* import replaces ours, whatever the times */
    assert_int_equal(mx_cache_import(dst, in_dir("ex.mxdb"), NULL, &rep), MXATTN_OK);
    assert_int_equal(rep.measurements_taken, 5);
    assert_true(measured(dst, "b").median_ms == 3.0);
    assert_string_equal(measured(dst, "d").status, MX_MEASURE_WRONG_RESULT);
    mx_cache_close(dst);
}

/* ---- whose fault a failure is -------------------------------------------- */

/* A file whose schema SQLite cannot parse (found by tests/fuzz/fuzz_import)
 * is a bad input, not a failure of our database. */
static void test_unreadable_schema_is_an_invalid_file(void **state) {
    (void)state;
    copy_path(MXATTN_SOURCE_DIR "/tests/fuzz/corpus/import/regress-schema-unreadable", in_dir("unreadable.mxdb"));
    mx_cache *dst = prepare();
    expect_rejected(dst, "unreadable.mxdb", 1, MXATTN_ERROR_INVALID_VALUE, "not a usable export");
    char *before = snapshot(dst);
    assert_int_equal(mx_cache_merge(dst, in_dir("unreadable.mxdb"), NULL, NULL), MXATTN_ERROR_INVALID_VALUE);
    expect_unchanged(dst, before);
    mx_cache_close(dst);

    /* A target that cannot be written keeps its own status. */
    mx_cache *ro;
    assert_int_equal(mx_cache_open_ex(in_dir("target.db"), MX_CACHE_OPEN_READ_ONLY, &ro), MXATTN_OK);
    assert_int_equal(mx_cache_import(ro, in_dir("ex.mxdb"), NULL, NULL), MXATTN_ERROR_CACHE_READ_ONLY);
    mx_cache_close(ro);
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
    assert_int_equal(mx_cache_export(c, in_dir("self.db"), 0, NULL), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mx_cache_export(c, in_dir("no/such/dir/x.mxdb"), 0, NULL), MXATTN_ERROR_IO);
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
        CASE(test_kernels_need_a_trusted_signature),
        CASE(test_unsigned_export_brings_no_kernels),
        CASE(test_key_files),
        CASE(test_impossible_rows_are_refused),
        CASE(test_measurements_are_exported_and_imported),
        CASE(test_impossible_measurements_are_refused),
        CASE(test_old_exports_still_import),
        CASE(test_merge_keeps_the_faster_measurement),
        CASE(test_unreadable_schema_is_an_invalid_file),
        CASE(test_check_reports_bad_blobs_and_vacuum_works),
        CASE(test_export_errors_are_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
