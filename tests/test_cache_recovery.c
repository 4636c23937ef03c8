/* A damaged database of ours is detected when opened, moved aside with its
 * -wal and -shm, and replaced by one rebuilt from what still reads; a file
 * that is not ours is refused and left exactly as it was; nothing else in its
 * directory is touched.  A path that cannot be created is a clear error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache.h"
#include "util/err.h"
#include "support/temp_dir.h"

static char g_dir[64];
static char g_db[128];

static int make_dir(void **state) {
    (void)state;
    if (temp_dir_make(g_dir, sizeof g_dir, "mxattn-recovery")) return -1;
    snprintf(g_db, sizeof g_db, "%s/mxattn.db", g_dir);
    return 0;
}

static int remove_dir(void **state) {
    (void)state;
    chmod(g_dir, 0700);
    return temp_dir_remove(g_dir);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static size_t read_file(const char *path, void *data, size_t cap) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(data, 1, cap, f);
    fclose(f);
    return n;
}

/* Bystanders: another file and another database beside ours. */
static const char KEEP_TEXT[] = "notes that must survive\n";

static void place_bystanders(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/keep.txt", g_dir);
    write_file(path, KEEP_TEXT, sizeof KEEP_TEXT - 1);
    snprintf(path, sizeof path, "%s/mxattn.db.backup", g_dir);
    write_file(path, "backup", 6);
}

static void assert_bystanders_intact(void) {
    char path[256], buf[256];
    snprintf(path, sizeof path, "%s/keep.txt", g_dir);
    size_t n = read_file(path, buf, sizeof buf);
    assert_int_equal(n, sizeof KEEP_TEXT - 1);
    assert_memory_equal(buf, KEEP_TEXT, n);
    snprintf(path, sizeof path, "%s/mxattn.db.backup", g_dir);
    n = read_file(path, buf, sizeof buf);
    assert_int_equal(n, 6);
    assert_memory_equal(buf, "backup", 6);
}

/* Finds the one '<db>.corrupt-*' file (not its -wal/-shm); returns 1 if found. */
static int find_aside(char *out, size_t cap) {
    DIR *d = opendir(g_dir);
    assert_non_null(d);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d))) {
        const char *dash = strrchr(e->d_name, '-');
        if (strncmp(e->d_name, "mxattn.db.corrupt-", 18) != 0) continue;
        if (dash && (!strcmp(dash, "-wal") || !strcmp(dash, "-shm"))) continue;
        snprintf(out, cap, "%s/%.180s", g_dir, e->d_name);
        found++;
    }
    closedir(d);
    return found == 1;
}

/* Every name in the directory is ours, a bystander, or an aside file. */
static void assert_only_expected_files(void) {
    DIR *d = opendir(g_dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *n = e->d_name;
        int expected = !strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "keep.txt") ||
                       !strcmp(n, "mxattn.db.backup") || !strcmp(n, "mxattn.db") || !strcmp(n, "mxattn.db-wal") ||
                       !strcmp(n, "mxattn.db-shm") || !strncmp(n, "mxattn.db.corrupt-", 18);
        if (!expected) fail_msg("unexpected file '%s'", n);
    }
    closedir(d);
}

static void assert_usable(mx_cache *c) {
    mx_tune_key k;
    memset(&k, 0, sizeof k);
    strcpy(k.gpu_name, "NVIDIA H200");
    strcpy(k.mxattn_version, "0.1.0");
    strcpy(k.family, "f16");
    strcpy(k.dtype, "f16");
    mx_tune_result r = {.config = "block_m=64", .median_ms = 1.0}, got;
    assert_int_equal(mx_cache_put_tune(c, &k, &r), MXATTN_OK);
    assert_int_equal(mx_cache_get_tune(c, &k, &got), MXATTN_OK);
}

/* Opens a damaged file and checks the whole recovery contract. */
static void expect_recovery(const void *original, size_t original_size) {
    place_bystanders();
    mx_cache *c = NULL;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    const char *note = mx_cache_recovered(c);
    assert_non_null(note);
    assert_non_null(strstr(note, g_db));
    assert_non_null(strstr(note, ".corrupt-"));
    assert_non_null(strstr(mx_error_message(), ".corrupt-")); /* the CLI warns with this */

    char aside[256];
    assert_true(find_aside(aside, sizeof aside));
    if (original) {
        static unsigned char moved[1 << 20];
        assert_int_equal(read_file(aside, moved, sizeof moved), original_size);
        assert_memory_equal(moved, original, original_size);
    }
    assert_usable(c);
    mx_cache_close(c);

    /* Opening again finds a healthy file: no second recovery. */
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    assert_null(mx_cache_recovered(c));
    mx_cache_close(c);
    assert_bystanders_intact();
    assert_only_expected_files();
}

/* A file that is not ours: the open fails with CACHE_FOREIGN naming the path
 * and why, and the file keeps its bytes and mtime, with nothing beside it. */
static void expect_foreign(const char *why) {
    place_bystanders();
    static unsigned char before[1 << 16], after[1 << 16];
    size_t n = read_file(g_db, before, sizeof before);
    struct stat sb, sa;
    assert_int_equal(stat(g_db, &sb), 0);
    mx_cache *c = (mx_cache *)0x1;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_ERROR_CACHE_FOREIGN);
    assert_null(c);
    const char *msg = mx_error_message();
    if (!strstr(msg, g_db) || !strstr(msg, why)) fail_msg("message '%s' lacks the path or '%s'", msg, why);
    assert_int_equal(stat(g_db, &sa), 0);
    assert_int_equal(read_file(g_db, after, sizeof after), n);
    assert_memory_equal(before, after, n);
    assert_true(sa.st_mtim.tv_sec == sb.st_mtim.tv_sec && sa.st_mtim.tv_nsec == sb.st_mtim.tv_nsec);
    char side[200], aside[256];
    snprintf(side, sizeof side, "%s-wal", g_db);
    assert_int_not_equal(access(side, F_OK), 0);
    snprintf(side, sizeof side, "%s-shm", g_db);
    assert_int_not_equal(access(side, F_OK), 0);
    assert_false(find_aside(aside, sizeof aside));
    assert_bystanders_intact();
    assert_only_expected_files();
}

static void test_random_bytes_are_left_alone(void **state) {
    (void)state;
    static unsigned char noise[8192];
    srand(42);
    for (size_t i = 0; i < sizeof noise; i++) noise[i] = (unsigned char)rand();
    write_file(g_db, noise, sizeof noise);
    expect_foreign("not an SQLite file");
}

static void test_text_file_is_left_alone(void **state) {
    (void)state;
    static const char text[] = "this is not a database, it is a shopping list\n";
    write_file(g_db, text, sizeof text - 1);
    expect_foreign("not an SQLite file");
}

/* A real database with enough rows to span many pages, cut in half. */
static void test_truncated_database_is_moved_aside(void **state) {
    (void)state;
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    for (int i = 0; i < 300; i++) {
        mx_tune_key k;
        memset(&k, 0, sizeof k);
        snprintf(k.gpu_name, sizeof k.gpu_name, "NVIDIA H200 #%d with a long name to fill pages", i);
        strcpy(k.mxattn_version, "0.1.0");
        strcpy(k.family, "f16");
        strcpy(k.dtype, "f16");
        mx_tune_result r = {.config = "block_m=64 block_n=64 stages=2 warps=4", .median_ms = 1.0 + i};
        assert_int_equal(mx_cache_put_tune(c, &k, &r), MXATTN_OK);
    }
    mx_cache_close(c); /* last close checkpoints the WAL into the file */
    struct stat st;
    assert_int_equal(stat(g_db, &st), 0);
    assert_true(st.st_size > 32768);
    assert_int_equal(truncate(g_db, st.st_size / 2), 0);
    static unsigned char half[1 << 20];
    size_t n = read_file(g_db, half, sizeof half);
    expect_recovery(half, n);
}

static void make_foreign_db(const char *sql) {
    sqlite3 *db;
    assert_int_equal(sqlite3_open(g_db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void test_foreign_tables_are_left_alone(void **state) {
    (void)state;
    make_foreign_db("CREATE TABLE users(name TEXT, password TEXT); INSERT INTO users VALUES('a','b');");
    expect_foreign("users");
}

/* Another application's file, even in WAL mode and with tables named like
 * ours, is recognised by its application_id. */
static void test_foreign_application_id_is_left_alone(void **state) {
    (void)state;
    make_foreign_db("PRAGMA application_id=42; PRAGMA journal_mode=WAL; CREATE TABLE kernels(x);"
                    "CREATE TABLE tune_results(y); CREATE TABLE measurements(z);");
    expect_foreign("application_id 0x0000002a");
}

static void test_our_tables_plus_a_stranger_are_moved_aside(void **state) {
    (void)state;
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    mx_cache_close(c);
    make_foreign_db("CREATE TABLE extra(x);");
    expect_recovery(NULL, 0);
}

/* A newer mxattn's database is not corrupt: it is refused, left where and as
 * it is (no file moved aside), and the message says why. */
static void test_schema_from_the_future_is_left_alone(void **state) {
    (void)state;
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    mx_cache_close(c);
    make_foreign_db("PRAGMA user_version=99;");
    static unsigned char before[1 << 16], after[1 << 16];
    size_t n = read_file(g_db, before, sizeof before);
    assert_true(n > 0);
    c = NULL;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_ERROR_UNSUPPORTED);
    assert_null(c);
    assert_non_null(strstr(mx_error_message(), "newer"));
    char aside[256];
    assert_false(find_aside(aside, sizeof aside));
    assert_int_equal(read_file(g_db, after, sizeof after), n);
    assert_memory_equal(before, after, n);
}

/* Our table names without our application_id or columns: not ours. */
static void test_wrong_columns_are_left_alone(void **state) {
    (void)state;
    make_foreign_db("CREATE TABLE kernels(a); CREATE TABLE tune_results(b); CREATE TABLE measurements(c);"
                    "PRAGMA user_version=2;");
    expect_foreign("foreign schema");
}

/* The -wal and -shm of a corrupt file go with it, so they cannot be replayed
 * into the fresh database. */
static void test_side_files_move_with_the_database(void **state) {
    (void)state;
    char wal[160], aside[256], aside_wal[300];
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    assert_usable(c); /* one tuning row */
    mx_cache_close(c);
    /* The damage (a table that is not ours, in a file that is) is left in
     * the -wal: the connection closes without checkpointing. */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(g_db, &db), SQLITE_OK);
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE extra(x);", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    snprintf(wal, sizeof wal, "%s-wal", g_db);
    struct stat st;
    assert_int_equal(stat(wal, &st), 0);
    assert_true(st.st_size > 0);
    expect_recovery(NULL, 0);
    assert_true(find_aside(aside, sizeof aside));
    snprintf(aside_wal, sizeof aside_wal, "%s-wal", aside);
    struct stat moved;
    assert_int_equal(stat(aside_wal, &moved), 0);
    assert_int_equal(moved.st_size, st.st_size);
}

static void test_empty_file_becomes_a_database(void **state) {
    (void)state;
    write_file(g_db, "", 0);
    mx_cache *c;
    assert_int_equal(mx_cache_open(g_db, &c), MXATTN_OK);
    assert_null(mx_cache_recovered(c)); /* nothing to lose: just use it */
    assert_usable(c);
    mx_cache_close(c);
}

/* ---- paths that cannot be created ---------------------------------------- */

static void expect_open_error(const char *path, const char *expected_text) {
    mx_cache *c = (mx_cache *)0x1;
    assert_int_equal(mx_cache_open(path, &c), MXATTN_ERROR_CACHE);
    assert_null(c);
    const char *msg = mx_error_message();
    if (!strstr(msg, expected_text)) fail_msg("message '%s' lacks '%s'", msg, expected_text);
}

static void test_directory_under_a_regular_file_is_a_clear_error(void **state) {
    (void)state;
    char file[160], path[256];
    snprintf(file, sizeof file, "%s/file.txt", g_dir);
    write_file(file, "x", 1);
    snprintf(path, sizeof path, "%s/sub/mxattn.db", file);
    expect_open_error(path, file);
    expect_open_error(path, "Not a directory");
}

static void test_directory_in_proc_is_a_clear_error(void **state) {
    (void)state;
    struct stat st;
    if (stat("/proc/self", &st) != 0) skip();
    expect_open_error("/proc/mxattn-cannot-exist/mxattn.db", "/proc/mxattn-cannot-exist");
}

static void test_read_only_directory_is_a_clear_error(void **state) {
    (void)state;
    /* root writes through mode 0500, so the case cannot be made there. */
    if (geteuid() == 0) skip();
    char ro[160], path[256];
    snprintf(ro, sizeof ro, "%s/ro", g_dir);
    assert_int_equal(mkdir(ro, 0500), 0);
    snprintf(path, sizeof path, "%s/deeper/mxattn.db", ro);
    expect_open_error(path, "Permission denied");
    snprintf(path, sizeof path, "%s/mxattn.db", ro);
    expect_open_error(path, path);
}

static void test_path_that_is_a_directory_is_a_clear_error(void **state) {
    (void)state;
    expect_open_error(g_dir, g_dir);
    assert_int_equal(access(g_dir, F_OK), 0); /* and it was not moved aside */
}

#define CASE(fn) cmocka_unit_test_setup_teardown(fn, make_dir, remove_dir)
int main(void) {
    const struct CMUnitTest tests[] = {
        CASE(test_random_bytes_are_left_alone),
        CASE(test_text_file_is_left_alone),
        CASE(test_truncated_database_is_moved_aside),
        CASE(test_foreign_tables_are_left_alone),
        CASE(test_foreign_application_id_is_left_alone),
        CASE(test_our_tables_plus_a_stranger_are_moved_aside),
        CASE(test_schema_from_the_future_is_left_alone),
        CASE(test_wrong_columns_are_left_alone),
        CASE(test_side_files_move_with_the_database),
        CASE(test_empty_file_becomes_a_database),
        CASE(test_directory_under_a_regular_file_is_a_clear_error),
        CASE(test_directory_in_proc_is_a_clear_error),
        CASE(test_read_only_directory_is_a_clear_error),
        CASE(test_path_that_is_a_directory_is_a_clear_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
