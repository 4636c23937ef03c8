/* NVRTC wrapper: compiling for Hopper and Blackwell without a GPU, errors,
 * the ptxas -v parser and concurrent compiles.  Skips (77) without NVRTC. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "runtime/nvrtc.h"
#include "util/err.h"
#include "util/sha256.h"

#define BF16_MMA "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#define NVF4_MMA "mma.sync.aligned.kind::mxf4nvf4.block_scale.scale_vec::4X.m16n8k64.row.col.f32.e2m1.e2m1.f32.ue4m3"

/* One warp's bf16 tensor-core product, written out; self-contained like the
 * generated kernels (no headers). */
static const char *bf16_kernel =
    "struct Args { const unsigned *a; float *d; };\n"
    "extern \"C\" __global__ void bf16_mma(Args args) {\n"
    "    unsigned a[4], b[2];\n"
    "    for (int i = 0; i < 4; i++) a[i] = args.a[threadIdx.x * 4 + i];\n"
    "    b[0] = a[1]; b[1] = a[2];\n"
    "    float d[4] = {0.f, 0.f, 0.f, 0.f};\n"
    "    asm volatile(\"" BF16_MMA " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n"
    "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "    __shared__ float stage[32 * 4];\n"
    "    for (int i = 0; i < 4; i++) stage[threadIdx.x * 4 + i] = d[i];\n"
    "    __syncthreads();\n"
    "    for (int i = 0; i < 4; i++) args.d[threadIdx.x * 4 + i] = stage[(threadIdx.x * 4 + i + 1) % 128];\n"
    "}\n";

/* sm_120's block-scaled FP4 product: A {4 regs}, B {2}, C/D {4 f32}, then
 * scale-a-data, {byte-id-a, thread-id-a}, scale-b-data, {byte-id-b, thread-id-b}. */
static const char *nvf4_kernel =
    "extern \"C\" __global__ void nvf4_mma(const unsigned *in, float *out) {\n"
    "    unsigned a0 = in[0], a1 = in[1], a2 = in[2], a3 = in[3], b0 = in[4], b1 = in[5];\n"
    "    unsigned scale_a = in[6], scale_b = in[7];\n"
    "    unsigned short byte_id = 0, thread_id = 0;\n"
    "    float d0 = 0.f, d1 = 0.f, d2 = 0.f, d3 = 0.f;\n"
    "    asm volatile(\"" NVF4_MMA " \"\n"
    "        \"{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3}, %10, {%11,%12}, %13, {%11,%12};\"\n"
    "        : \"+f\"(d0), \"+f\"(d1), \"+f\"(d2), \"+f\"(d3)\n"
    "        : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1),\n"
    "          \"r\"(scale_a), \"h\"(byte_id), \"h\"(thread_id), \"r\"(scale_b));\n"
    "    float *o = out + threadIdx.x * 4;\n"
    "    o[0] = d0; o[1] = d1; o[2] = d2; o[3] = d3;\n"
    "}\n";

static int is_elf(const unsigned char *p, size_t n) { return n > 4 && !memcmp(p, "\x7f" "ELF", 4); }

static void compiles_bf16_mma_for_hopper(void **state) {
    mx_compile_options opt = {.arch = "sm_90a", .want_ptx = 1};
    mx_compile_result r;
    mxattn_status s = mx_nvrtc_compile(bf16_kernel, "bf16_mma", &opt, &r);
    if (s != MXATTN_OK) fail_msg("%s", mx_error_message());
    assert_non_null(strstr(r.ptx, BF16_MMA));
    assert_non_null(strstr(r.ptx, ".target sm_90a"));
    assert_true(is_elf(r.cubin, r.cubin_size));
    assert_non_null(strstr(r.log, "ptxas info"));
    assert_true(r.usage.found);
    assert_true(r.usage.registers > 0);
    assert_int_equal(r.usage.shared_bytes, 32 * 4 * 4);
    assert_int_equal(r.usage.spill_store_bytes, 0);
    char sha[65];
    mx_sha256_hex(bf16_kernel, strlen(bf16_kernel), sha);
    assert_string_equal(r.source_sha256, sha);
    printf("# sm_90a bf16 mma: %.1f ms, %zu-byte cubin, %d registers, %d bytes smem\n",
           r.compile_ms, r.cubin_size, r.usage.registers, r.usage.shared_bytes);
    mx_compile_result_free(&r);
    mx_compile_result_free(&r);  /* twice: the result was zeroed */
}

static void compiles_block_scaled_fp4_for_blackwell(void **state) {
    mx_compile_options opt = {.arch = "sm_120a", .want_ptx = 1};
    mx_compile_result r;
    mxattn_status s = mx_nvrtc_compile(nvf4_kernel, "nvf4_mma", &opt, &r);
    if (s != MXATTN_OK) fail_msg("%s", mx_error_message());
    assert_non_null(strstr(r.ptx, NVF4_MMA));
    assert_true(is_elf(r.cubin, r.cubin_size));
    assert_true(r.usage.found);
    printf("# sm_120a nvf4 mma: %.1f ms, %zu-byte cubin, %d registers\n",
           r.compile_ms, r.cubin_size, r.usage.registers);
    mx_compile_result_free(&r);
}

static void fp4_mma_is_refused_for_hopper(void **state) {
    mx_compile_options opt = {.arch = "sm_90a"};
    mx_compile_result r;
    assert_int_equal(mx_nvrtc_compile(nvf4_kernel, "nvf4_mma", &opt, &r), MXATTN_ERROR_COMPILE);
    assert_non_null(strstr(mx_error_message(), "not supported on .target 'sm_90a'"));
    assert_null(r.cubin);
}

static void virtual_arch_gives_ptx_only(void **state) {
    mx_compile_options opt = {.arch = "compute_90a"};
    mx_compile_result r;
    assert_int_equal(mx_nvrtc_compile(bf16_kernel, "bf16_mma", &opt, &r), MXATTN_OK);
    assert_null(r.cubin);
    assert_non_null(strstr(r.ptx, BF16_MMA));
    mx_compile_result_free(&r);
}

/* Compiles src for sm_90a with the dump variable `env` naming a fresh
 * directory, made in dir (a mkdtemp template); unset again after. */
static mxattn_status compile_dumping(const char *env, char *dir, const char *src, const char *name,
                                     mx_compile_result *r) {
    assert_non_null(mkdtemp(dir));
    setenv(env, dir, 1);
    mx_compile_options opt = {.arch = "sm_90a"};
    mxattn_status s = mx_nvrtc_compile(src, name, &opt, r);
    unsetenv(env);
    return s;
}

static void syntax_error_reports_log_and_hash(void **state) {
    const char *broken = "extern \"C\" __global__ void broken(float *x) { x[0] = 1.0f }\n";
    char dir[] = "/tmp/mxattn_test_nvrtc_XXXXXX";
    mx_compile_result r;
    mxattn_status s = compile_dumping("MXATTN_DUMP_SOURCE", dir, broken, "broken", &r);
    assert_int_equal(s, MXATTN_ERROR_COMPILE);
    const char *msg = mx_error_message();
    char sha[65], path[256];
    mx_sha256_hex(broken, strlen(broken), sha);
    snprintf(path, sizeof path, "%s/%s.cu", dir, sha);
    assert_non_null(strstr(msg, "broken"));
    assert_non_null(strstr(msg, "sm_90a"));
    assert_non_null(strstr(msg, sha));
    assert_non_null(strstr(msg, "expected a \";\""));  /* NVRTC's own words */
    assert_non_null(strstr(msg, path));
    assert_int_equal(access(path, R_OK), 0);
    assert_null(r.cubin);
    assert_null(r.log);
    unlink(path);
    rmdir(dir);
}

static void long_log_is_trimmed(void **state) {
    /* 400 undefined identifiers: a log of tens of KB. */
    size_t cap = 64 * 1024;
    char *src = malloc(cap);
    size_t n = (size_t)snprintf(src, cap, "extern \"C\" __global__ void many(float *x) {\n");
    for (int i = 0; i < 400; i++) n += (size_t)snprintf(src + n, cap - n, "  x[%d] = undefined_%d;\n", i, i);
    snprintf(src + n, cap - n, "}\n");
    mx_compile_options opt = {.arch = "sm_90a"};
    mx_compile_result r;
    assert_int_equal(mx_nvrtc_compile(src, "many", &opt, &r), MXATTN_ERROR_COMPILE);
    assert_non_null(strstr(mx_error_message(), "undefined_0"));
    assert_non_null(strstr(mx_error_message(), "more bytes of log"));
    free(src);
}

static void unknown_arch_is_named(void **state) {
    const char *bad[] = {"sm_999", "sm_99", "banana", "sm_", "sm_90x", "compute_1000"};
    mx_compile_options opt = {0};
    mx_compile_result r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        opt.arch = bad[i];
        assert_int_equal(mx_nvrtc_compile(bf16_kernel, "bf16_mma", &opt, &r), MXATTN_ERROR_INVALID_VALUE);
        assert_non_null(strstr(mx_error_message(), bad[i]));
        assert_non_null(strstr(mx_error_message(), "sm_90"));  /* lists what would work */
    }
    /* A known number with a suffix it does not have: NVRTC's own refusal. */
    opt.arch = "sm_80a";
    assert_int_equal(mx_nvrtc_compile(bf16_kernel, "bf16_mma", &opt, &r), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mx_error_message(), "-arch=sm_80a"));
    assert_non_null(strstr(mx_error_message(), "rejected"));
}

static void bad_extra_option_is_invalid_value(void **state) {
    const char *extra[] = {"--no-such-option"};
    mx_compile_options opt = {.arch = "sm_90a", .extra = extra, .n_extra = 1};
    mx_compile_result r;
    assert_int_equal(mx_nvrtc_compile(bf16_kernel, "bf16_mma", &opt, &r), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mx_error_message(), "--no-such-option"));
}

static void dumps_ptx_when_asked(void **state) {
    char dir[] = "/tmp/mxattn_test_nvrtc_XXXXXX";
    mx_compile_result r;
    mxattn_status s = compile_dumping("MXATTN_DUMP_PTX", dir, bf16_kernel, "bf16_mma", &r);
    assert_int_equal(s, MXATTN_OK);
    char path[256];
    snprintf(path, sizeof path, "%s/%s.sm_90a.ptx", dir, r.source_sha256);
    assert_int_equal(access(path, R_OK), 0);
    unlink(path);
    rmdir(dir);
    mx_compile_result_free(&r);

    setenv("MXATTN_DUMP_PTX", "/nonexistent/mxattn", 1);
    mx_compile_options opt = {.arch = "sm_90a"};
    s = mx_nvrtc_compile(bf16_kernel, "bf16_mma", &opt, &r);
    unsetenv("MXATTN_DUMP_PTX");
    assert_int_equal(s, MXATTN_ERROR_IO);
    assert_non_null(strstr(mx_error_message(), "MXATTN_DUMP_PTX"));
}

/* Real ptxas -v output of NVRTC 13.0 for sm_90a: a template entry, an entry
 * that spills (compiled with -maxrregcount=32) and a non-inlined device
 * function whose properties come last and belong to no entry. */
static const char *real_log =
    "ptxas info    : Overriding maximum register limit 256 for '_Z2tkILi3EEvPf' with  32 of maxrregcount option\n"
    "ptxas info    : Overriding maximum register limit 256 for 'big' with  32 of maxrregcount option\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '_Z2tkILi3EEvPf' for 'sm_90a'\n"
    "ptxas info    : Function properties for _Z2tkILi3EEvPf\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 8 registers, used 0 barriers\n"
    "ptxas info    : Compile time = 1.646 ms\n"
    "ptxas info    : Compiling entry function 'big' for 'sm_90a'\n"
    "ptxas info    : Function properties for big\n"
    "ptxas         .     448 bytes stack frame, 60 bytes spill stores, 72 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 0 barriers, 448 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 19.006 ms\n"
    "ptxas info    : Function properties for _Z6helperPfi\n"
    "ptxas         .     900 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n";

static const char *smem_log =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'mma' for 'sm_90a'\n"
    "ptxas info    : Function properties for mma\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 16 registers, used 1 barriers, 1024 bytes smem\n"
    "ptxas info    : Compile time = 8.667 ms\n";

static void parses_ptxas_verbose_log(void **state) {
    mx_ptxas_usage u;
    assert_int_equal(mx_ptxas_parse(real_log, "big", &u), 1);
    assert_int_equal(u.registers, 32);
    assert_int_equal(u.stack_bytes, 448);
    assert_int_equal(u.spill_store_bytes, 60);
    assert_int_equal(u.spill_load_bytes, 72);
    assert_int_equal(u.shared_bytes, 0);
    assert_true(u.ptxas_ms > 19.0 && u.ptxas_ms < 19.01);

    assert_int_equal(mx_ptxas_parse(real_log, NULL, &u), 1);  /* the first entry */
    assert_int_equal(u.registers, 8);
    assert_int_equal(u.stack_bytes, 0);

    assert_int_equal(mx_ptxas_parse(smem_log, "mma", &u), 1);
    assert_int_equal(u.registers, 16);
    assert_int_equal(u.barriers, 1);
    assert_int_equal(u.shared_bytes, 1024);

    assert_int_equal(mx_ptxas_parse(real_log, "_Z6helperPfi", &u), 0);  /* not an entry */
    assert_int_equal(u.registers, 0);
    assert_int_equal(mx_ptxas_parse(real_log, "missing", &u), 0);
    assert_int_equal(mx_ptxas_parse("", NULL, &u), 0);
    assert_int_equal(mx_ptxas_parse(NULL, NULL, &u), 0);
}

/* The same kernel text with a different constant per thread, so each result
 * can be told apart. */
typedef struct { int id; mxattn_status status; int ok; double ms; char message[256]; } job;

static void *compile_job(void *arg) {
    job *j = arg;
    char src[256], expect[64];
    snprintf(src, sizeof src,
             "extern \"C\" __global__ void k%d(float *x) { x[threadIdx.x] = %d.5f * x[threadIdx.x]; }\n",
             j->id, j->id);
    char name[16];
    snprintf(name, sizeof name, "k%d", j->id);
    mx_compile_options opt = {.arch = j->id % 2 ? "sm_120a" : "sm_90a", .want_ptx = 1};
    mx_compile_result r;
    j->status = mx_nvrtc_compile(src, name, &opt, &r);
    snprintf(j->message, sizeof j->message, "%s", mx_error_message());
    if (j->status != MXATTN_OK) return NULL;
    snprintf(expect, sizeof expect, ".entry %s(", name);
    j->ok = is_elf(r.cubin, r.cubin_size) && strstr(r.ptx, expect) && r.usage.found;
    j->ms = r.compile_ms;
    mx_compile_result_free(&r);
    return NULL;
}

static void four_threads_compile_at_once(void **state) {
    enum { N = 4 };
    pthread_t threads[N];
    job jobs[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (job){.id = i};
        assert_int_equal(pthread_create(&threads[i], NULL, compile_job, &jobs[i]), 0);
    }
    for (int i = 0; i < N; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < N; i++) {
        if (jobs[i].status != MXATTN_OK) fail_msg("thread %d: %s", i, jobs[i].message);
        assert_true(jobs[i].ok);
        printf("# thread %d: %.1f ms\n", i, jobs[i].ms);
    }
}

static void null_arguments_are_refused(void **state) {
    mx_compile_options opt = {.arch = "sm_90a"};
    mx_compile_result r;
    assert_int_equal(mx_nvrtc_compile(NULL, "k", &opt, &r), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mx_nvrtc_compile("", NULL, &opt, &r), MXATTN_ERROR_NULL_POINTER);
    opt.arch = NULL;
    assert_int_equal(mx_nvrtc_compile("", "k", &opt, &r), MXATTN_ERROR_NULL_POINTER);
    char v[4];
    assert_int_equal(mx_nvrtc_version(NULL, 0), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mx_nvrtc_version(v, sizeof v), MXATTN_OK);  /* truncated, still terminated */
    assert_true(strlen(v) <= 3);
}

int main(void) {
    char version[16];
    if (mx_nvrtc_version(version, sizeof version) != MXATTN_OK) {
        printf("skipped: %s\n", mx_error_message());
        return 77;
    }
    printf("# NVRTC %s, base options: %s\n", version, mx_nvrtc_base_options());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compiles_bf16_mma_for_hopper),
        cmocka_unit_test(compiles_block_scaled_fp4_for_blackwell),
        cmocka_unit_test(fp4_mma_is_refused_for_hopper),
        cmocka_unit_test(virtual_arch_gives_ptx_only),
        cmocka_unit_test(syntax_error_reports_log_and_hash),
        cmocka_unit_test(long_log_is_trimmed),
        cmocka_unit_test(unknown_arch_is_named),
        cmocka_unit_test(bad_extra_option_is_invalid_value),
        cmocka_unit_test(dumps_ptx_when_asked),
        cmocka_unit_test(parses_ptxas_verbose_log),
        cmocka_unit_test(four_threads_compile_at_once),
        cmocka_unit_test(null_arguments_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
