/* The driver wrappers on a real GPU: compile a kernel for the device's arch,
 * load it, launch it with one struct argument, check every element it wrote
 * over a poisoned buffer, and check that the error paths say what went wrong.
 * Without a driver or a GPU it skips (77). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/cuda.h"
#include "runtime/device.h"
#include "runtime/nvrtc.h"
#include "util/err.h"

/* The kernel's one parameter; the host mirror below must match it byte for
 * byte (pointer, then two 32-bit integers: 16 bytes, no padding). */
static const char *pattern_source =
    "struct PatternArgs { unsigned *out; unsigned n; unsigned seed; };\n"
    "extern \"C\" __global__ void write_pattern(PatternArgs args) {\n"
    "    extern __shared__ unsigned scratch[];\n"
    "    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    scratch[threadIdx.x] = i;\n"
    "    __syncthreads();\n"
    "    if (i < args.n) args.out[i] = (scratch[threadIdx.x] * 2654435761u) ^ args.seed;\n"
    "}\n";

typedef struct { void *out; unsigned n; unsigned seed; } pattern_args;

static unsigned expected(unsigned i, unsigned seed) { return (i * 2654435761u) ^ seed; }

static struct {
    mx_device dev;
    struct CUmod_st *module;
    struct CUfunc_st *fn;
} g;

#define OK(call)                                                              \
    do { mxattn_status s_ = (call);                                           \
         if (s_ != MXATTN_OK) fail_msg("%s: %s: %s", #call,                   \
                                       mxattn_status_string(s_), mx_error_message()); } while (0)

static int setup(void **state) {
    OK(mx_device_open(&g.dev, 0));
    printf("# GPU 0: %s, %s, %d SMs, %zu MB, %d KB smem/block opt-in, driver %d\n", g.dev.name,
           g.dev.arch, g.dev.sm_count, g.dev.memory_bytes >> 20, g.dev.smem_per_block_optin / 1024,
           g.dev.driver_version);
    mx_compile_options opt = {.arch = g.dev.arch};
    mx_compile_result r;
    OK(mx_nvrtc_compile(pattern_source, "write_pattern", &opt, &r));
    printf("# compiled write_pattern for %s in %.1f ms\n", g.dev.arch, r.compile_ms);
    mxattn_status s = mx_module_load(&g.dev, r.cubin, r.cubin_size, &g.module);
    mx_compile_result_free(&r);
    OK(s);
    OK(mx_module_function(&g.dev, g.module, "write_pattern", &g.fn));
    return 0;
}

static int teardown(void **state) {
    mx_module_unload(&g.dev, g.module);
    mx_device_close(&g.dev);
    return 0;
}

/* Fills n elements (a count that is not a multiple of the block) of a buffer
 * with `tail` spare elements after them, all poisoned with 0xFF first. */
static void run_pattern(unsigned n, unsigned tail, int smem_bytes, struct CUstream_st *stream,
                        float *ms) {
    size_t bytes = (size_t)(n + tail) * sizeof(unsigned);
    void *buf = NULL;
    unsigned *host = malloc(bytes);
    assert_non_null(host);
    OK(mx_mem_alloc(&g.dev, bytes, &buf));
    OK(mx_memset_d8(&g.dev, buf, 0xFF, bytes, stream));
    pattern_args args = {buf, n, 0x5eed1234u};
    mx_dim3 block = {256, 1, 1}, grid = {(n + 255) / 256, 1, 1};
    if (smem_bytes < 256 * 4) smem_bytes = 256 * 4;
    mx_timer timer;
    OK(mx_timer_create(&g.dev, &timer));
    OK(mx_timer_start(&timer, stream));
    OK(mx_launch(&g.dev, g.fn, grid, block, smem_bytes, stream, &args));
    OK(mx_timer_stop(&timer, stream));
    OK(mx_timer_elapsed_ms(&timer, ms));
    mx_timer_destroy(&timer);
    OK(mx_stream_synchronize(&g.dev, stream));
    OK(mx_memcpy_dtoh(&g.dev, host, buf, bytes));
    for (unsigned i = 0; i < n; i++)
        if (host[i] != expected(i, args.seed)) fail_msg("element %u: %08x, expected %08x", i, host[i], expected(i, args.seed));
    for (unsigned i = n; i < n + tail; i++)
        if (host[i] != 0xFFFFFFFFu) fail_msg("element %u past the end was written: %08x", i, host[i]);
    OK(mx_mem_free(&g.dev, buf));
    free(host);
}

static void writes_pattern_over_poison(void **state) {
    float ms = -1;
    run_pattern(1000003, 61, 0, NULL, &ms);
    assert_true(ms > 0);
    printf("# 1M-element pattern: %.3f ms (events)\n", ms);
}

static void runs_on_own_stream_with_large_smem(void **state) {
    struct CUstream_st *stream = NULL;
    OK(mx_stream_create(&g.dev, &stream));
    int smem = 100 * 1024;  /* above the 48 KB default: needs the opt-in */
    OK(mx_function_set_smem(&g.dev, g.fn, smem));
    float ms = -1;
    run_pattern(4099, 5, smem, stream, &ms);
    OK(mx_stream_destroy(&g.dev, stream));
}

static void reports_function_resources(void **state) {
    mx_function_info info;
    OK(mx_function_info_get(&g.dev, g.fn, &info));
    assert_true(info.registers > 0);
    assert_int_equal(info.static_smem_bytes, 0);
    assert_true(info.max_threads_per_block >= 256);
}

static void launch_error_is_clear_and_not_sticky(void **state) {
    void *buf = NULL;
    OK(mx_mem_alloc(&g.dev, 4096, &buf));
    pattern_args args = {buf, 1024, 0};
    mx_dim3 one = {1, 1, 1}, too_many_threads = {4096, 1, 1};
    mxattn_status s = mx_launch(&g.dev, g.fn, one, too_many_threads, 0, NULL, &args);
    assert_true(s == MXATTN_ERROR_CUDA || s == MXATTN_ERROR_OUT_OF_RESOURCES);
    const char *msg = mx_error_message();
    printf("# launch error: %s\n", msg);
    assert_non_null(strstr(msg, "LaunchKernel"));
    assert_non_null(strstr(msg, "CUDA_ERROR_"));
    assert_non_null(strstr(msg, "device.c:"));
    assert_null(strstr(msg, "unusable"));
    OK(mx_device_synchronize(&g.dev));  /* the context still works */
    OK(mx_mem_free(&g.dev, buf));
}

static void too_much_shared_memory_is_out_of_resources(void **state) {
    assert_int_equal(mx_function_set_smem(&g.dev, g.fn, g.dev.smem_per_block_optin + 1),
                     MXATTN_ERROR_OUT_OF_RESOURCES);
    assert_non_null(strstr(mx_error_message(), g.dev.name));
}

static void bad_pointers_are_named(void **state) {
    void *buf = NULL;
    OK(mx_mem_alloc(&g.dev, 256, &buf));
    OK(mx_pointer_check(&g.dev, buf, "q"));
    OK(mx_pointer_check(&g.dev, (char *)buf + 128, "q"));  /* inside an allocation */
    unsigned *host = malloc(64);
    assert_int_equal(mx_pointer_check(&g.dev, host, "k"), MXATTN_ERROR_INVALID_VALUE);
    printf("# host pointer: %s\n", mx_error_message());
    assert_non_null(strstr(mx_error_message(), "k ("));
    assert_non_null(strstr(mx_error_message(), "not CUDA memory"));
    assert_int_equal(mx_pointer_check(&g.dev, NULL, "v"), MXATTN_ERROR_NULL_POINTER);
    free(host);
    OK(mx_mem_free(&g.dev, buf));
}

static void bad_modules_and_names_are_reported(void **state) {
    unsigned char not_elf[16] = "not a cubin";
    struct CUmod_st *module = NULL;
    struct CUfunc_st *fn = NULL;
    assert_int_equal(mx_module_load(&g.dev, not_elf, sizeof not_elf, &module), MXATTN_ERROR_INVALID_VALUE);
    unsigned char broken_elf[64] = {0x7f, 'E', 'L', 'F'};
    assert_int_equal(mx_module_load(&g.dev, broken_elf, sizeof broken_elf, &module), MXATTN_ERROR_CUDA);
    printf("# broken cubin: %s\n", mx_error_message());
    assert_non_null(strstr(mx_error_message(), "ModuleLoadData"));
    assert_int_equal(mx_module_function(&g.dev, g.module, "no_such_kernel", &fn), MXATTN_ERROR_NOT_FOUND);
    assert_non_null(strstr(mx_error_message(), "no_such_kernel"));
}

static void restores_the_callers_context(void **state) {
    const mx_cuda_api *cu;
    OK(mx_cuda_get(&cu));
    /* With no context current, a helper pushes the primary one and pops it. */
    CUcontext before = NULL, after = NULL;
    assert_int_equal(cu->CtxSetCurrent(NULL), CUDA_SUCCESS);
    OK(mx_device_synchronize(&g.dev));
    assert_int_equal(cu->CtxGetCurrent(&after), CUDA_SUCCESS);
    assert_ptr_equal(after, before);
    /* With it current already (as in a PyTorch thread), nothing is pushed. */
    mx_context_guard guard;
    OK(mx_device_enter(&g.dev, &guard));
    assert_int_equal(guard.pushed, 1);
    mx_context_guard inner;
    OK(mx_device_enter(&g.dev, &inner));
    assert_int_equal(inner.pushed, 0);
    OK(mx_device_leave(&inner));
    assert_int_equal(cu->CtxGetCurrent(&after), CUDA_SUCCESS);
    assert_ptr_equal(after, g.dev.context);
    OK(mx_device_leave(&guard));
    int version = 0;
    OK(mx_cuda_driver_version(&version));
    assert_int_equal(version, g.dev.driver_version);
}

static void out_of_range_ordinal_is_invalid(void **state) {
    int count = 0;
    OK(mx_device_count(&count));
    mx_device other;
    assert_int_equal(mx_device_open(&other, count), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mx_error_message(), "does not exist"));
    assert_null(other.context);
    mx_device_close(&other);
}

int main(void) {
    int count = 0;
    mxattn_status s = mx_device_count(&count);
    if (s != MXATTN_OK) {
        printf("skipped: %s\n", mx_error_message());
        return 77;
    }
    char version[16];
    if (mx_nvrtc_version(version, sizeof version) != MXATTN_OK) {
        printf("skipped: %s\n", mx_error_message());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(writes_pattern_over_poison),
        cmocka_unit_test(runs_on_own_stream_with_large_smem),
        cmocka_unit_test(reports_function_resources),
        cmocka_unit_test(launch_error_is_clear_and_not_sticky),
        cmocka_unit_test(too_much_shared_memory_is_out_of_resources),
        cmocka_unit_test(bad_pointers_are_named),
        cmocka_unit_test(bad_modules_and_names_are_reported),
        cmocka_unit_test(restores_the_callers_context),
        cmocka_unit_test(out_of_range_ordinal_is_invalid),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
