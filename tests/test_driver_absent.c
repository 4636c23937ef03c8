/* Without libcuda.so.1 every driver-backed function must fail cleanly with
 * MXATTN_ERROR_NO_DRIVER and say why: this is how mxattn behaves on a build
 * machine or a CPU-only CI runner.  On a machine with a driver it skips (77);
 * tests/gpu_driver.c covers that side. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include "runtime/cuda.h"
#include "runtime/device.h"
#include "util/err.h"
#include "support/fixtures.h"

static void expect_no_driver(mxattn_status s, const char *what) {
    if (s != MXATTN_ERROR_NO_DRIVER)
        fail_msg("%s returned %s (%s), expected NO_DRIVER", what, mxattn_status_string(s),
                 mx_error_message());
    assert_non_null(strstr(mx_error_message(), "libcuda.so.1"));
    assert_non_null(strstr(mx_error_message(), "CPU commands still work"));
}

static void every_function_says_no_driver(void **state) {
    /* A device that was never opened: the driver check comes first. */
    mx_device dev;
    memset(&dev, 0, sizeof dev);
    int count = -1, version = -1, word = 0;
    void *ptr = NULL;
    float ms = 0;
    mx_context_guard guard;
    mx_timer timer;
    mx_function_info info;
    struct CUmod_st *module = NULL;
    struct CUfunc_st *fn = NULL;
    struct CUstream_st *stream = NULL;
    const unsigned char fake_cubin[] = {0x7f, 'E', 'L', 'F', 0, 0, 0, 0};
    const mx_cuda_api *api = NULL;

    expect_no_driver(mx_cuda_get(&api), "mx_cuda_get");
    assert_null(api);
    expect_no_driver(mx_cuda_driver_version(&version), "mx_cuda_driver_version");
    expect_no_driver(mx_device_count(&count), "mx_device_count");
    expect_no_driver(mx_device_open(&dev, 0), "mx_device_open");
    assert_null(dev.context);
    expect_no_driver(mx_device_enter(&dev, &guard), "mx_device_enter");
    assert_int_equal(mx_device_leave(&guard), MXATTN_OK);  /* nothing was pushed */
    expect_no_driver(mx_device_synchronize(&dev), "mx_device_synchronize");
    expect_no_driver(mx_module_load(&dev, fake_cubin, sizeof fake_cubin, &module), "mx_module_load");
    expect_no_driver(mx_module_unload(&dev, (struct CUmod_st *)&word), "mx_module_unload");
    expect_no_driver(mx_module_function(&dev, (struct CUmod_st *)&word, "k", &fn), "mx_module_function");
    expect_no_driver(mx_function_info_get(&dev, (struct CUfunc_st *)&word, &info), "mx_function_info_get");
    expect_no_driver(mx_function_set_smem(&dev, (struct CUfunc_st *)&word, 100000), "mx_function_set_smem");
    mx_dim3 one = {1, 1, 1};
    expect_no_driver(mx_launch(&dev, (struct CUfunc_st *)&word, one, one, 0, NULL, &word), "mx_launch");
    expect_no_driver(mx_mem_alloc(&dev, 1024, &ptr), "mx_mem_alloc");
    assert_null(ptr);
    expect_no_driver(mx_mem_free(&dev, &word), "mx_mem_free");
    expect_no_driver(mx_memcpy_htod(&dev, &word, &word, 4), "mx_memcpy_htod");
    expect_no_driver(mx_memcpy_dtoh(&dev, &word, &word, 4), "mx_memcpy_dtoh");
    expect_no_driver(mx_memset_d8(&dev, &word, 0xff, 4, NULL), "mx_memset_d8");
    expect_no_driver(mx_memset_d32(&dev, &word, 0, 1, NULL), "mx_memset_d32");
    expect_no_driver(mx_pointer_check(&dev, &word, "q"), "mx_pointer_check");
    expect_no_driver(mx_stream_create(&dev, &stream), "mx_stream_create");
    expect_no_driver(mx_stream_destroy(&dev, (struct CUstream_st *)&word), "mx_stream_destroy");
    expect_no_driver(mx_stream_synchronize(&dev, NULL), "mx_stream_synchronize");
    expect_no_driver(mx_timer_create(&dev, &timer), "mx_timer_create");
    assert_null(timer.start);
    (void)ms;

    /* Destructors and NULL-is-a-no-op calls neither fail nor crash. */
    mx_device_close(&dev);
    mx_device_close(NULL);
    mx_timer_destroy(&timer);
    mx_timer_destroy(NULL);
    assert_int_equal(mx_mem_free(&dev, NULL), MXATTN_OK);
    assert_int_equal(mx_module_unload(&dev, NULL), MXATTN_OK);
    assert_int_equal(mx_stream_destroy(&dev, NULL), MXATTN_OK);
}

static void null_arguments_come_before_the_driver(void **state) {
    mx_device dev;
    memset(&dev, 0, sizeof dev);
    assert_int_equal(mx_device_count(NULL), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mx_device_open(NULL, 0), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mx_mem_alloc(&dev, 16, NULL), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mx_pointer_check(&dev, NULL, "k"), MXATTN_ERROR_NULL_POINTER);
    assert_non_null(strstr(mx_error_message(), "k is NULL"));
}

static void arch_names_follow_compute_capability(void **state) {
    char arch[16];
    const struct { int major, minor; const char *arch; } cases[] = {
        {9, 0, "sm_90a"}, {10, 0, "sm_100a"}, {12, 0, "sm_120a"}, {8, 0, "sm_80"},
        {8, 9, "sm_89"}, {10, 3, "sm_103"}, {12, 1, "sm_121"}, {7, 5, "sm_75"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mx_arch_for(cases[i].major, cases[i].minor, arch, sizeof arch);
        assert_string_equal(arch, cases[i].arch);
    }
}

/* A plan's values are checked before the driver is asked for: a bad
 * configuration or problem is INVALID_VALUE naming what is wrong, and only a
 * legal request gets NO_DRIVER, with the driver's message (the old code
 * checked only the names of config keys first, so these were NO_DRIVER). */
static void plan_values_come_before_the_driver(void **state) {
    mxattn_ctx *ctx = cacheless_ctx();
    mxattn_problem p;
    mxattn_problem_init(&p, "f16", 64);
    mxattn_plan *plan = NULL;
    const char *bad[] = {"block_m=abc", "variant=tensor", "v_terms=3", "block_m=48", "block_m:64",
                         "block_m=64 block_m=128", "overlap=1 block_m=64", "blocks_per_sm=4"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mxattn_status st = mxattn_plan_create(ctx, &p, bad[i], &plan);
        if (st != MXATTN_ERROR_INVALID_VALUE)
            fail_msg("config '%s': %s (%s), want INVALID_VALUE", bad[i], mxattn_status_string(st), mxattn_last_error());
        assert_null(plan);
    }
    assert_non_null(strstr(mxattn_last_error(), "blocks_per_sm=4"));
    p.v_terms = 3;
    assert_int_equal(mxattn_plan_create(ctx, &p, NULL, &plan), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mxattn_last_error(), "v_terms"));
    p.v_terms = 1;
    p.sm_scale = 3.0e38f;
    assert_int_equal(mxattn_plan_create(ctx, &p, NULL, &plan), MXATTN_ERROR_INVALID_VALUE);
    p.sm_scale = 0;
    /* Legal: now the driver's status and message, not the check's. */
    expect_no_driver(mxattn_plan_create(ctx, &p, "block_m=64 block_n=64", &plan), "mxattn_plan_create");
    expect_no_driver(mxattn_plan_create(ctx, &p, NULL, &plan), "mxattn_plan_create");
    assert_null(plan);
    mxattn_destroy(ctx);
}

int main(void) {
    int count;
    mxattn_status s = mx_device_count(&count);
    if (s != MXATTN_ERROR_NO_DRIVER) {
        printf("skipped: a CUDA driver is present (%s); tests/gpu_driver.c covers it\n",
               s == MXATTN_OK ? "ok" : mx_error_message());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_function_says_no_driver),
        cmocka_unit_test(null_arguments_come_before_the_driver),
        cmocka_unit_test(arch_names_follow_compute_capability),
        cmocka_unit_test(plan_values_come_before_the_driver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
