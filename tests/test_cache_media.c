/* A database on media that cannot be written, or is full.  Root writes
 * through file modes, so the cases are made for real: a tmpfs mounted in a
 * private mount namespace and remounted read-only, a 200 KiB tmpfs that fills,
 * and a directory that a process running as 'nobody' cannot write.  Each
 * runs in a child process, which reports the first broken promise; without
 * the privilege to mount or to change user the case is skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mxattn.h"
#include "cache/cache.h"
#include "util/err.h"
#include "util/sha256.h"
#include "support/records.h"
#include "support/temp_dir.h"

#define SKIP_CODE 77

static char g_dir[64];
static char g_db[128];

static int make_dir(void **state) {
    (void)state;
    if (temp_dir_make_db(g_dir, sizeof g_dir, "mxattn-media", g_db, sizeof g_db, "mxattn.db")) return -1;
    chmod(g_dir, 0755);
    return 0;
}

static int remove_dir(void **state) {
    (void)state;
    return temp_dir_remove(g_dir);
}

/* In the child: a broken promise ends it with a message. */
#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "%s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond,    \
                    mx_error_message());                                                  \
            _exit(1);                                                                     \
        }                                                                                 \
    } while (0)

static mx_tune_key sample_key(void) {
    mx_tune_key k;
    tune_key_f16(&k, "NVIDIA H200");
    k.head_dim = 64;
    return k;
}

static unsigned char g_blob[64 << 10];
static mx_kernel_record kernel_n(int i, size_t n) {
    mx_kernel_record k;
    memset(&k, 0, sizeof k);
    for (size_t j = 0; j < n; j++) g_blob[j] = (unsigned char)(j * 13 + (unsigned)i * 7 + (j >> 9));
    memcpy(g_blob, &i, sizeof i);
    mx_sha256_hex(g_blob, n, k.key);
    strcpy(k.arch, "sm_90a");
    strcpy(k.kernel_names, "attn_fwd");
    k.cubin = g_blob;
    k.cubin_size = n;
    return k;
}

/* A database with one tuning row and one kernel. */
static void populate(void) {
    mx_cache *c;
    CHECK(mx_cache_open(g_db, &c) == MXATTN_OK);
    mx_tune_key k = sample_key();
    mx_tune_result r = {.config = "block_m=64 block_n=64", .median_ms = 1.0};
    CHECK(mx_cache_put_tune(c, &k, &r) == MXATTN_OK);
    mx_kernel_record kr = kernel_n(0, 5000);
    CHECK(mx_cache_put_kernel(c, &kr) == MXATTN_OK);
    mx_cache_close(c);
}

static int exists_beside(const char *suffix) {
    char p[200];
    snprintf(p, sizeof p, "%s%s", g_db, suffix);
    return access(p, F_OK) == 0;
}

/* Reads are served, every write is refused with CACHE_READ_ONLY, through
 * the cache and the C API; nothing is created beside the file. */
static void expect_read_only_service(void) {
    mx_cache *c;
    CHECK(mx_cache_open(g_db, &c) == MXATTN_OK);
    CHECK(mx_cache_read_only(c));
    mx_tune_key k = sample_key();
    mx_tune_result r;
    CHECK(mx_cache_get_tune(c, &k, &r) == MXATTN_OK);
    CHECK(!strcmp(r.config, "block_m=64 block_n=64"));
    mx_kernel_record want = kernel_n(0, 5000), got;
    CHECK(mx_cache_get_kernel(c, want.key, "sm_90a", &got) == MXATTN_OK); /* a kernel hit */
    mx_kernel_record_release(&got);
    mx_tune_filter f;
    mx_tune_filter_init(&f);
    mx_tune_row *rows = NULL;
    int count = 0;
    CHECK(mx_cache_query(c, &f, &rows, &count) == MXATTN_OK && count == 1);
    free(rows);
    CHECK(mx_cache_put_tune(c, &k, &r) == MXATTN_ERROR_CACHE_READ_ONLY);
    CHECK(strstr(mx_error_message(), "read-only") != NULL);
    mx_kernel_record other = kernel_n(1, 100);
    CHECK(mx_cache_put_kernel(c, &other) == MXATTN_ERROR_CACHE_READ_ONLY);
    mx_cache_close(c);
    CHECK(!exists_beside("-wal") && !exists_beside("-shm"));

    mxattn_options o;
    mxattn_options_init(&o);
    o.db_path = g_db;
    mxattn_ctx *ctx;
    CHECK(mxattn_create(&ctx, &o) == MXATTN_OK);
    mxattn_cache_info info;
    CHECK(mxattn_cache_get_info(ctx, &info) == MXATTN_OK);
    CHECK(info.open && info.read_only && info.tunings == 1 && info.kernels == 1);
    char *json = NULL;
    CHECK(mxattn_query(ctx, NULL, &json) == MXATTN_OK && strstr(json, "block_m=64") != NULL);
    mxattn_free(json);
    mxattn_destroy(ctx);
}

/* A private mount namespace with a tmpfs on g_dir, or the skip code. */
static void mount_tmpfs(const char *options) {
    if (unshare(CLONE_NEWNS) != 0) {
        fprintf(stderr, "skip: unshare(CLONE_NEWNS): %s\n", strerror(errno));
        _exit(SKIP_CODE);
    }
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", g_dir, "tmpfs", 0, options) != 0) {
        fprintf(stderr, "skip: mount tmpfs: %s\n", strerror(errno));
        _exit(SKIP_CODE);
    }
}

static void run_child(void (*body)(void)) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        body();
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == SKIP_CODE) skip();
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void read_only_mount(void) {
    mount_tmpfs("size=4m,mode=0755");
    populate();
    CHECK(mount(NULL, g_dir, NULL, MS_REMOUNT | MS_RDONLY, NULL) == 0);
    CHECK(access(g_db, W_OK) != 0 && errno == EROFS);
    expect_read_only_service();
}

static void test_read_only_mount_serves_reads(void **state) {
    (void)state;
    run_child(read_only_mount);
}

/* Not root: a file in a directory this process cannot write. */
static void read_only_directory(void) {
    populate();
    CHECK(chmod(g_db, 0644) == 0 && chmod(g_dir, 0755) == 0);
    if (geteuid() == 0 && setuid(65534) != 0) {
        fprintf(stderr, "skip: setuid(65534): %s\n", strerror(errno));
        _exit(SKIP_CODE);
    }
    if (geteuid() != 0) {
        chmod(g_dir, 0555); /* as the owner: modes bind */
        chmod(g_db, 0444);
    }
    CHECK(access(g_dir, W_OK) != 0);
    expect_read_only_service();
}

static void test_read_only_directory_serves_reads(void **state) {
    (void)state;
    run_child(read_only_directory);
    chmod(g_dir, 0755);
}

/* A full disk is CACHE_FULL, never OK or a bare CACHE error, and what was
 * stored before stays readable. */
static void full_disk(void) {
    mount_tmpfs("size=200k,mode=0755");
    mx_cache *c;
    CHECK(mx_cache_open(g_db, &c) == MXATTN_OK);
    mxattn_status st = MXATTN_OK;
    int stored = 0;
    for (int i = 0; i < 20 && st == MXATTN_OK; i++) {
        mx_kernel_record k = kernel_n(i, 30000);
        st = mx_cache_put_kernel(c, &k);
        stored += st == MXATTN_OK;
    }
    CHECK(st == MXATTN_ERROR_CACHE_FULL);
    CHECK(strstr(mx_error_message(), "full") != NULL);
    CHECK(stored > 0);
    mx_kernel_record first = kernel_n(0, 30000), got;
    CHECK(mx_cache_get_kernel(c, first.key, "sm_90a", &got) == MXATTN_OK);
    mx_kernel_record_release(&got);
    mx_cache_close(c);
}

static void test_full_disk_is_reported(void **state) {
    (void)state;
    run_child(full_disk);
}

#define CASE(fn) cmocka_unit_test_setup_teardown(fn, make_dir, remove_dir)
int main(void) {
    const struct CMUnitTest tests[] = {
        CASE(test_read_only_mount_serves_reads),
        CASE(test_read_only_directory_serves_reads),
        CASE(test_full_disk_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
