/* The public database calls `mxattn db` and `mxattn query` are made of:
 * query with filters, export and import (rows checked against the
 * templates), merge, check, keygen and signed kernels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "mxattn.h"
#include "cache/cache.h"
#include "support/temp_dir.h"
#include "support/fixtures.h"

static char g_dir[256];

static const char *in_dir(const char *name) { return temp_dir_path(g_dir, name); }

static int make_dir(void **state) { return temp_dir_make(g_dir, sizeof g_dir, "mxattn-api-db"); }
static int remove_dir(void **state) { return temp_dir_remove(g_dir); }

/* A row written the way the tuner writes one (cache/, below the API). */
static void put(const char *db, const char *gpu, int head_dim, int causal, const char *config, double ms) {
    mx_cache *c;
    assert_int_equal(mx_cache_open(db, &c), MXATTN_OK);
    mx_tune_key k;
    tune_key_h200(&k, gpu);
    k.head_dim = head_dim;
    strcpy(k.dtype, "bf16");
    strcpy(k.out_dtype, "bf16");
    strcpy(k.layout, "bhnd");
    k.causal = causal;
    k.seq_bucket = k.q_bucket = 4096;
    k.gqa = 1;
    mx_tune_result r = tune_result_of(config, ms, 2 * ms, 0);
    assert_int_equal(mx_cache_put_tune(c, &k, &r), MXATTN_OK);
    mx_cache_close(c);
}

static void test_open_and_query(void **state) {
    mxattn_db *db = NULL;
    assert_int_equal(mxattn_db_open(in_dir("absent.db"), 1, &db), MXATTN_ERROR_NOT_FOUND);
    assert_null(db);
    struct stat sb;
    assert_int_not_equal(stat(in_dir("absent.db"), &sb), 0);     /* must_exist created nothing */
    put(in_dir("q.db"), "NVIDIA H200", 64, 0, "variant=mma block_m=64 warps=4 block_n=64 stages=2", 1.0);
    put(in_dir("q.db"), "NVIDIA H200", 128, 1, "variant=mma block_m=64 warps=4 block_n=64 stages=2", 2.0);
    put(in_dir("q.db"), "NVIDIA H100 80GB HBM3", 128, 0, "variant=mma block_m=64 warps=4 block_n=64 stages=2", 3.0);
    assert_int_equal(mxattn_db_open(in_dir("q.db"), 1, &db), MXATTN_OK);
    assert_string_equal(mxattn_db_path(db), in_dir("q.db"));
    assert_string_equal(mxattn_db_recovered(db), "");
    mxattn_db_filter f;
    mxattn_tuned_row *rows = NULL;
    int n = 0;
    char *json = NULL;
    assert_int_equal(mxattn_db_filter_init(&f), MXATTN_OK);
    assert_int_equal(mxattn_db_query(db, &f, &rows, &n, &json), MXATTN_OK);
    assert_int_equal(n, 3);
    assert_non_null(strstr(json, "NVIDIA H200"));
    mxattn_free(rows);
    mxattn_free(json);
    f.gpu = "h200";   /* any case */
    f.head_dim = 128;
    assert_int_equal(mxattn_db_query(db, &f, &rows, &n, NULL), MXATTN_OK);
    assert_int_equal(n, 1);
    assert_string_equal(rows[0].gpu, "NVIDIA H200");
    assert_int_equal(rows[0].causal, 1);
    assert_true(rows[0].median_ms == 2.0 && rows[0].default_ms == 4.0);
    assert_int_equal(rows[0].seq_bucket, 4096);
    mxattn_free(rows);
    f.causal = 0;
    assert_int_equal(mxattn_db_query(db, &f, &rows, &n, NULL), MXATTN_OK);
    assert_int_equal(n, 0);
    assert_null(rows);
    char long_name[300];
    memset(long_name, 'x', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    f.gpu = long_name;
    assert_int_equal(mxattn_db_query(db, &f, &rows, &n, NULL), MXATTN_ERROR_INVALID_VALUE);
    mxattn_db_check_report cr;
    assert_int_equal(mxattn_db_check(db, &cr), MXATTN_OK);
    assert_true(cr.integrity_ok);
    assert_int_equal(cr.tune_rows, 3);
    assert_int_equal(cr.kernels_bad, 0);
    mxattn_db_close(db);
    mxattn_db_close(NULL);
}

/* Export, then import elsewhere: each row's configuration is checked against
 * the templates for its problem, and an illegal one is refused. */
static void test_export_import_checks_rows(void **state) {
    put(in_dir("src.db"), "NVIDIA H200", 64, 0, "variant=mma block_m=64 warps=4 block_n=64 stages=2", 1.0);
    put(in_dir("src.db"), "NVIDIA H200", 128, 0, "block_n=17", 1.0);   /* no such tile */
    mxattn_db *src = NULL, *dst = NULL;
    assert_int_equal(mxattn_db_open(in_dir("src.db"), 1, &src), MXATTN_OK);
    assert_int_equal(mxattn_db_export(src, in_dir("export.db"), 0, NULL), MXATTN_OK);
    assert_int_equal(mxattn_db_export(src, in_dir("export2.db"), 0, in_dir("k.key")), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mxattn_db_open(in_dir("dst.db"), 0, &dst), MXATTN_OK);
    mxattn_db_import_report r;
    assert_int_equal(mxattn_db_import(dst, in_dir("export.db"), NULL, &r), MXATTN_OK);
    EXPECT_ROW_COUNTS(r, 2, 1, -1, 1);
    assert_non_null(strstr(r.first_refusal, "block_n"));
    /* The same again as a merge: ours is as fast, so it is kept. */
    assert_int_equal(mxattn_db_merge(dst, in_dir("export.db"), NULL, &r), MXATTN_OK);
    EXPECT_ROW_COUNTS(r, -1, 0, -1, 1);
    assert_int_equal(mxattn_db_vacuum(dst), MXATTN_OK);
    assert_int_equal(mxattn_db_import(dst, in_dir("no-such.db"), NULL, &r) == MXATTN_OK, 0);
    mxattn_db_close(src);
    mxattn_db_close(dst);
}

/* Kernels are taken only signed by a trusted key; the keys come from keygen. */
static void test_keys_and_trust(void **state) {
    char pub[65];
    assert_int_equal(mxattn_db_keygen(in_dir("signer.key"), pub), MXATTN_OK);
    assert_int_equal(strlen(pub), 64);
    assert_int_equal(mxattn_db_keygen(in_dir("signer.key"), pub), MXATTN_ERROR_IO);   /* never overwritten */
    mxattn_db *src = NULL, *dst = NULL;
    put(in_dir("k.db"), "NVIDIA H200", 64, 0, "variant=mma block_m=64 warps=4 block_n=64 stages=2", 1.0);
    assert_int_equal(mxattn_db_open(in_dir("k.db"), 1, &src), MXATTN_OK);
    assert_int_equal(mxattn_db_export(src, in_dir("signed.db"), 1, in_dir("signer.key")), MXATTN_OK);
    assert_int_equal(mxattn_db_export(src, in_dir("unsigned.db"), 1, NULL), MXATTN_OK);
    assert_int_equal(mxattn_db_open(in_dir("k-dst.db"), 0, &dst), MXATTN_OK);
    mxattn_db_import_options o;
    const char *keys[] = {pub};
    assert_int_equal(mxattn_db_import_options_init(&o), MXATTN_OK);
    o.with_kernels = 1;
    o.trusted = keys;
    o.n_trusted = 1;
    mxattn_db_import_report r;
    assert_int_equal(mxattn_db_import(dst, in_dir("signed.db"), &o, &r), MXATTN_OK);
    assert_int_equal(r.tune_rows_taken, 1);
    const char *bad[] = {"not a key"};
    o.trusted = bad;
    assert_int_equal(mxattn_db_import(dst, in_dir("signed.db"), &o, &r), MXATTN_ERROR_INVALID_VALUE);
    o.n_trusted = MXATTN_DB_MAX_TRUSTED + 1;
    assert_int_equal(mxattn_db_import(dst, in_dir("signed.db"), &o, &r), MXATTN_ERROR_INVALID_VALUE);
    mxattn_db_close(src);
    mxattn_db_close(dst);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_and_query),
        cmocka_unit_test(test_export_import_checks_rows),
        cmocka_unit_test(test_keys_and_trust),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
