/* Kernels compiled apart (jit/jit_image.c): the container of cubins, the
 * templates' per-kernel guards, and the parallel compile (its cubins, its
 * errors), and what a build records when the cache will not take its binary.
 * The container and storing tests need nothing; the rest skip without NVRTC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gen/gen.h"
#include "runtime/launch_plan.h"
#include "jit/jit.h"
#include "util/err.h"
#include "support/temp_dir.h"
#include <unistd.h>
#include <dirent.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include "cache/cache_internal.h"

static int g_have_nvrtc;

#define SKIP_WITHOUT_NVRTC() do { if (!g_have_nvrtc) { skip(); } } while (0)

static int is_elf(const unsigned char *p, size_t n) { return n > 4 && !memcmp(p, "\x7f" "ELF", 4); }

/* Does the cubin carry `name` as a whole symbol (followed by its NUL)? */
static int has_symbol(const unsigned char *cubin, size_t n, const char *name) {
    size_t len = strlen(name) + 1;
    for (size_t i = 1; i + len <= n; i++)
        if (cubin[i - 1] == 0 || cubin[i - 1] == '.')
            if (!memcmp(cubin + i, name, len)) return 1;
    return 0;
}

static void container_round_trip(void **state) {
    (void)state;
    unsigned char a[5] = "\x7f" "ELFa", b[37], c[16];
    memset(b, 'b', sizeof b);
    memcpy(b, "\x7f" "ELF", 4);
    memset(c, 'c', sizeof c);
    memcpy(c, "\x7f" "ELF", 4);
    const unsigned char *in[3] = {a, b, c};
    size_t in_sizes[3] = {sizeof a, sizeof b, sizeof c};
    unsigned char *blob = NULL;
    size_t size = 0;
    assert_int_equal(mx_jit_image_pack(in, in_sizes, 3, &blob, &size), MXATTN_OK);
    const unsigned char *parts[MX_MAX_LAUNCH_STEPS];
    size_t sizes[MX_MAX_LAUNCH_STEPS];
    int n = 0;
    assert_int_equal(mx_jit_image_parts(blob, size, parts, sizes, MX_MAX_LAUNCH_STEPS, &n), MXATTN_OK);
    assert_int_equal(n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sizes[i], in_sizes[i]);
        assert_memory_equal(parts[i], in[i], in_sizes[i]);
        assert_int_equal((uintptr_t)(parts[i] - blob) % 16, 0);   /* the driver gets it in place */
    }
    free(blob);
}

static void one_cubin_is_its_own_image(void **state) {
    (void)state;
    unsigned char elf[64] = "\x7f" "ELF";
    const unsigned char *parts[MX_MAX_LAUNCH_STEPS];
    size_t sizes[MX_MAX_LAUNCH_STEPS];
    int n = 0;
    assert_int_equal(mx_jit_image_parts(elf, sizeof elf, parts, sizes, MX_MAX_LAUNCH_STEPS, &n), MXATTN_OK);
    assert_int_equal(n, 1);
    assert_ptr_equal(parts[0], elf);
    assert_int_equal(sizes[0], sizeof elf);
}

static void corrupt_containers_are_refused(void **state) {
    (void)state;
    unsigned char two[2][8];
    for (int i = 0; i < 2; i++) { memset(two[i], 'x', 8); memcpy(two[i], "\x7f" "ELF", 4); }
    const unsigned char *in[2] = {two[0], two[1]};
    size_t in_sizes[2] = {8, 8};
    unsigned char *blob = NULL;
    size_t size = 0;
    assert_int_equal(mx_jit_image_pack(in, in_sizes, 2, &blob, &size), MXATTN_OK);
    const unsigned char *parts[MX_MAX_LAUNCH_STEPS];
    size_t sizes[MX_MAX_LAUNCH_STEPS];
    int n = -1;
    /* Truncated: the second image's bytes are missing. */
    assert_int_equal(mx_jit_image_parts(blob, size - 16, parts, sizes, MX_MAX_LAUNCH_STEPS, &n),
                     MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mx_error_message(), "outside"));
    /* More images than a plan has steps. */
    assert_int_equal(mx_jit_image_parts(blob, size, parts, sizes, 1, &n), MXATTN_ERROR_INVALID_VALUE);
    /* A misaligned offset. */
    unsigned char *bad = malloc(size);
    memcpy(bad, blob, size);
    bad[8] += 1;
    assert_int_equal(mx_jit_image_parts(bad, size, parts, sizes, MX_MAX_LAUNCH_STEPS, &n), MXATTN_ERROR_INVALID_VALUE);
    /* Neither a cubin nor a container. */
    memcpy(bad, "JUNK", 4);
    assert_int_equal(mx_jit_image_parts(bad, size, parts, sizes, MX_MAX_LAUNCH_STEPS, &n), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mx_error_message(), "neither"));
    assert_int_equal(mx_jit_image_parts(blob, 4, parts, sizes, MX_MAX_LAUNCH_STEPS, &n), MXATTN_ERROR_INVALID_VALUE);
    unsigned char *none = (unsigned char *)"untouched";
    size_t none_size = 1;
    assert_int_equal(mx_jit_image_pack(in, in_sizes, 0, &none, &none_size), MXATTN_ERROR_INVALID_VALUE);
    assert_null(none);
    free(bad);
    free(blob);
}

/* Every kernel of every family's module sits between its own guards. */
static void every_kernel_is_guarded(void **state) {
    (void)state;
    mx_gen *g = NULL;
    assert_int_equal(mx_gen_open(&g), MXATTN_OK);
    const char *tables[] = {
        "family=f16 head_dim=128", "family=f16 head_dim=72 variant=mma", "family=int8-f16 head_dim=128",
        "family=int8-fp8 head_dim=64", "family=int8-fp8 head_dim=96 variant=mma", "family=nvfp4 head_dim=128",
        "family=mxfp4 head_dim=64", "family=nvfp4-int8qk head_dim=128 arch=sm_120a",
    };
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        char *canon = NULL, *src = NULL;
        assert_int_equal(mx_gen_call(g, "validate", tables[t], NULL, &canon), MXATTN_OK);
        assert_int_equal(mx_gen_call(g, "render", canon, NULL, &src), MXATTN_OK);
        mx_launch_plan lp;
        assert_int_equal(mx_jit_launch_plan(g, canon, "batch=1 heads_q=1 heads_kv=1 seq_q=1 seq_k=1", &lp), MXATTN_OK);
        int kernels = 0;
        for (const char *p = src; (p = strstr(p, "extern \"C\" __global__")); p++) kernels++;
        assert_int_equal(kernels, lp.n_steps);
        for (int i = 0; i < lp.n_steps; i++) {
            char guard[256], end[256];
            snprintf(guard, sizeof guard, "#if !defined(MX_COMPILE_ONE) || defined(MX_COMPILE_%s)\n", lp.steps[i].name);
            snprintf(end, sizeof end, "}\n#endif  // %s\n", lp.steps[i].name);
            const char *at = strstr(src, guard);
            assert_non_null(at);
            assert_non_null(strstr(at, end));
        }
        free(canon); free(src);
    }
    mx_gen_close(g);
}

/* Two small kernels and their plan, as a family would render them. */
static const char *two_kernels =
    "#if !defined(MX_COMPILE_ONE) || defined(MX_COMPILE_first_k)\n"
    "extern \"C\" __global__ void first_k(const float *x) { if (x[threadIdx.x] > 2.f) asm volatile(\"trap;\"); }\n"
    "#endif\n"
    "#if !defined(MX_COMPILE_ONE) || defined(MX_COMPILE_second_k)\n"
    "extern \"C\" __global__ void second_k(float *x) { x[threadIdx.x] *= 3.f; %s }\n"
    "#endif\n";
static const char *two_plan = "return { workspace = 0, kernels = { { name = 'first_k', grid = {1, 1, 1}, block = 32, "
                               "smem = 0 }, { name = 'second_k', grid = {1, 1, 1}, block = 32, smem = 0 } } }";

/* The two kernels' source, with `second_body` in the second, and their plan. */
static void two_kernel_module(const char *second_body, char *src, size_t cap, mx_launch_plan *lp) {
    snprintf(src, cap, two_kernels, second_body);
    mx_gen_launch gl;
    assert_int_equal(mx_gen_launch_from_chunk(two_plan, &gl), MXATTN_OK);
    mx_jit_plan_from_gen(&gl, lp);
}

static void compiles_each_kernel_apart(void **state) {
    (void)state;
    SKIP_WITHOUT_NVRTC();
    char src[1024];
    mx_launch_plan lp;
    two_kernel_module("", src, sizeof src, &lp);
    mx_jit_image img;
    assert_int_equal(mx_jit_compile(src, "sm_90a", &lp, 1, &img), MXATTN_OK);
    assert_true(img.compile_ms > 0);
    const unsigned char *parts[MX_MAX_LAUNCH_STEPS];
    size_t sizes[MX_MAX_LAUNCH_STEPS];
    int n = 0;
    assert_int_equal(mx_jit_image_parts(img.data, img.size, parts, sizes, MX_MAX_LAUNCH_STEPS, &n), MXATTN_OK);
    assert_int_equal(n, 2);
    for (int i = 0; i < 2; i++) {
        assert_true(is_elf(parts[i], sizes[i]));
        assert_true(has_symbol(parts[i], sizes[i], lp.steps[i].name));       /* its own kernel */
        assert_false(has_symbol(parts[i], sizes[i], lp.steps[1 - i].name));  /* and not the other */
    }
    mx_jit_image_free(&img);

    /* Not apart (the tuner's pool): one program, one cubin, both kernels in it. */
    assert_int_equal(mx_jit_compile(src, "sm_90a", &lp, 0, &img), MXATTN_OK);
    assert_true(is_elf(img.data, img.size));
    assert_true(has_symbol(img.data, img.size, "first_k") && has_symbol(img.data, img.size, "second_k"));
    mx_jit_image_free(&img);

    lp.n_steps = 1;   /* a one-kernel plan: the whole source, whatever `apart` says */
    assert_int_equal(mx_jit_compile(src, "sm_90a", &lp, 1, &img), MXATTN_OK);
    assert_true(is_elf(img.data, img.size));
    assert_true(has_symbol(img.data, img.size, "first_k") && has_symbol(img.data, img.size, "second_k"));
    mx_jit_image_free(&img);
}

/* MXATTN_DUMP_PTX keeps every kernel's PTX when they compile apart, each
 * under its own name (the same source would otherwise overwrite one file). */
static void dumps_each_kernels_ptx(void **state) {
    (void)state;
    SKIP_WITHOUT_NVRTC();
    char dir[256], src[1024];
    assert_int_equal(temp_dir_make(dir, sizeof dir, "mxattn-jit-dump"), 0);
    mx_launch_plan lp;
    two_kernel_module("", src, sizeof src, &lp);
    setenv("MXATTN_DUMP_PTX", dir, 1);
    mx_jit_image img;
    mxattn_status st = mx_jit_compile(src, "sm_90a", &lp, 1, &img);
    unsetenv("MXATTN_DUMP_PTX");
    assert_int_equal(st, MXATTN_OK);
    mx_jit_image_free(&img);
    int ptx_files = 0, first = 0, second = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (!strstr(e->d_name, ".ptx")) continue;
        ptx_files++;
        first += strstr(e->d_name, ".first_k.sm_90a.ptx") != NULL;
        second += strstr(e->d_name, ".second_k.sm_90a.ptx") != NULL;
        assert_null(strstr(e->d_name, ".tmp"));
    }
    closedir(d);
    assert_int_equal(ptx_files, 2);
    assert_int_equal(first, 1);
    assert_int_equal(second, 1);
    temp_dir_remove(dir);
}

/* A kernel that fails on another thread: its log reaches the caller's message. */
static void a_failing_kernel_is_reported_from_its_thread(void **state) {
    (void)state;
    SKIP_WITHOUT_NVRTC();
    char src[1024];
    mx_launch_plan lp;
    two_kernel_module("this_is_not_declared = 1;", src, sizeof src, &lp);
    mx_jit_image img;
    mx_clear_error();
    assert_int_equal(mx_jit_compile(src, "sm_90a", &lp, 1, &img), MXATTN_ERROR_COMPILE);
    assert_null(img.data);
    assert_non_null(strstr(mx_error_message(), "this_is_not_declared"));
    assert_non_null(strstr(mx_error_message(), "second_k"));
}

/* A real family's module: one cubin a kernel, the attention kernel's usage. */
static void int8_module_compiles_apart(void **state) {
    (void)state;
    SKIP_WITHOUT_NVRTC();
    mx_gen *g = NULL;
    assert_int_equal(mx_gen_open(&g), MXATTN_OK);
    char *canon = NULL, *src = NULL;
    assert_int_equal(mx_gen_call(g, "validate", "family=int8-fp8 head_dim=64", NULL, &canon), MXATTN_OK);
    assert_int_equal(mx_gen_call(g, "render", canon, NULL, &src), MXATTN_OK);
    mx_launch_plan lp;
    assert_int_equal(mx_jit_launch_plan(g, canon, "batch=1 heads_q=2 heads_kv=1 seq_q=64 seq_k=300", &lp), MXATTN_OK);
    mx_jit_image img;
    assert_int_equal(mx_jit_compile(src, "sm_90a", &lp, 1, &img), MXATTN_OK);
    const unsigned char *parts[MX_MAX_LAUNCH_STEPS];
    size_t sizes[MX_MAX_LAUNCH_STEPS];
    int n = 0;
    assert_int_equal(mx_jit_image_parts(img.data, img.size, parts, sizes, MX_MAX_LAUNCH_STEPS, &n), MXATTN_OK);
    assert_int_equal(n, lp.n_steps);
    for (int i = 0; i < n; i++) assert_true(has_symbol(parts[i], sizes[i], lp.steps[i].name));
    assert_true(img.usage.registers > 0);
    mx_jit_image_free(&img);
    free(canon); free(src);
    mx_gen_close(g);
}

/* ---- a binary the cache will not take --------------------------------------- */

static unsigned char g_cubin[300 * 1024];

static mx_kernel_record fake_record(int which) {
    mx_kernel_record rec;
    memset(&rec, 0, sizeof rec);
    for (size_t i = 0; i < sizeof g_cubin; i++) g_cubin[i] = (unsigned char)(i * 31 + (i >> 9) * 7 + which);
    for (int i = 0; i < 64; i++) rec.key[i] = "0123456789abcdef"[(i + which) % 16];
    strcpy(rec.arch, "sm_90a");
    strcpy(rec.kernel_names, "mxattn_f16_fwd");
    rec.cubin = g_cubin;
    rec.cubin_size = sizeof g_cubin;
    return rec;
}

/* Stores one fake binary through the JIT's path into `cache`; the kernel
 * records whether it was stored and why not, and the thread's error is clear. */
static mx_jit_kernel store_into(mx_cache *cache, int which) {
    mx_jit_env env;
    memset(&env, 0, sizeof env);
    env.cache = cache;
    mx_kernel_record rec = fake_record(which);
    mx_jit_kernel k;
    memset(&k, 0, sizeof k);
    mx_clear_error();
    mx_jit_store(&env, &rec, &k);
    assert_string_equal(mx_error_message(), "");
    return k;
}

static void expect_not_stored(const mx_jit_kernel *k, const char *why) {
    assert_int_equal(k->stored, 0);
    assert_int_not_equal(k->store_status, MXATTN_OK);
    if (!strstr(k->store_error, why)) fail_msg("store_error '%s' lacks '%s'", k->store_error, why);
}

static void stored_or_not_is_recorded(void **state) {
    (void)state;
    char dir[64], path[128];
    assert_int_equal(temp_dir_make(dir, sizeof dir, "mxattn-jit-store"), 0);
    snprintf(path, sizeof path, "%s/mxattn.db", dir);
    mx_cache *cache;
    assert_int_equal(mx_cache_open(path, &cache), MXATTN_OK);
    mx_jit_kernel k = store_into(cache, 0);
    assert_int_equal(k.stored, 1);
    assert_int_equal(k.store_status, MXATTN_OK);

    /* No cache: nothing stored, and nothing failed. */
    mx_jit_env none;
    memset(&none, 0, sizeof none);
    mx_kernel_record rec = fake_record(1);
    mx_jit_store(&none, &rec, &k);
    assert_int_equal(k.stored, 0);
    assert_int_equal(k.store_status, MXATTN_OK);

    /* Read-only: what SQLite answers for a file it may not write (root may
     * write any file, so the connection is made read-only instead). */
    assert_int_equal(sqlite3_exec(cache->db, "PRAGMA query_only=1", NULL, NULL, NULL), SQLITE_OK);
    k = store_into(cache, 1);
    expect_not_stored(&k, "readonly");
    assert_int_equal(k.store_status, MXATTN_ERROR_CACHE_READ_ONLY);
    assert_int_equal(sqlite3_exec(cache->db, "PRAGMA query_only=0", NULL, NULL, NULL), SQLITE_OK);

    /* Another connection holds the write lock past the (here shortened) wait. */
    sqlite3 *holder;
    assert_int_equal(sqlite3_open(path, &holder), SQLITE_OK);
    assert_int_equal(sqlite3_exec(holder, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_busy_timeout(cache->db, 20);
    setenv("MXATTN_CACHE_BUSY_MS", "50", 1);
    k = store_into(cache, 2);
    unsetenv("MXATTN_CACHE_BUSY_MS");
    expect_not_stored(&k, "write lock");
    assert_int_equal(k.store_status, MXATTN_ERROR_CACHE_BUSY);
    sqlite3_exec(holder, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(holder);
    k = store_into(cache, 2);
    assert_int_equal(k.stored, 1);
    mx_cache_close(cache);
    temp_dir_remove(dir);
}

/* In a child with its own mount namespace: a 200 KB tmpfs holds no 300 KB
 * binary.  Exits 0 when the failure was recorded, 77 when it cannot mount. */
static int full_disk_child(const char *dir) {
    if (unshare(CLONE_NEWNS) != 0) return 77;
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return 77;
    if (mount("tmpfs", dir, "tmpfs", 0, "size=200k") != 0) return 77;
    char path[128];
    snprintf(path, sizeof path, "%s/mxattn.db", dir);
    mx_cache *cache;
    if (mx_cache_open(path, &cache) != MXATTN_OK) return 2;
    mx_jit_kernel k = store_into(cache, 3);
    int ok = k.stored == 0 && k.store_status != MXATTN_OK && strstr(k.store_error, "full");
    if (!ok) fprintf(stderr, "stored %d, status %d, '%s'\n", k.stored, (int)k.store_status, k.store_error);
    mx_cache_close(cache);
    umount(dir);
    return ok ? 0 : 1;
}

static void a_full_disk_is_recorded(void **state) {
    (void)state;
    char dir[64];
    assert_int_equal(temp_dir_make(dir, sizeof dir, "mxattn-jit-full"), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(full_disk_child(dir));
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    temp_dir_remove(dir);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) {
        printf("# no mount namespace here (needs root): the full-disk case skips\n");
        skip();
    }
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
    char version[16];
    g_have_nvrtc = mx_nvrtc_version(version, sizeof version) == MXATTN_OK;
    if (!g_have_nvrtc) printf("# no NVRTC (%s): its tests skip\n", mx_error_message());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(container_round_trip),
        cmocka_unit_test(one_cubin_is_its_own_image),
        cmocka_unit_test(corrupt_containers_are_refused),
        cmocka_unit_test(every_kernel_is_guarded),
        cmocka_unit_test(compiles_each_kernel_apart),
        cmocka_unit_test(dumps_each_kernels_ptx),
        cmocka_unit_test(a_failing_kernel_is_reported_from_its_thread),
        cmocka_unit_test(int8_module_compiles_apart),
        cmocka_unit_test(stored_or_not_is_recorded),
        cmocka_unit_test(a_full_disk_is_recorded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
