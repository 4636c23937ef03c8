/* The public calls about this machine, which `mxattn info` is made of: each
 * answers with or without a driver, a GPU and NVRTC, and says why not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "mxattn.h"

static void test_default_database_path(void **state) {
    char path[4096];
    setenv("MXATTN_CACHE", "/tmp/some/where.db", 1);
    assert_int_equal(mxattn_cache_default_path(path, sizeof path), MXATTN_OK);
    assert_string_equal(path, "/tmp/some/where.db");
    assert_int_equal(mxattn_cache_default_path(path, 4), MXATTN_ERROR_CACHE);   /* does not fit */
    unsetenv("MXATTN_CACHE");
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    assert_int_equal(mxattn_cache_default_path(path, sizeof path), MXATTN_OK);
    assert_string_equal(path, "/tmp/xdg/mxattn/mxattn.db");
    assert_int_equal(mxattn_cache_default_path(NULL, 10), MXATTN_ERROR_NULL_POINTER);
}

/* With a GPU, every one is described; without, the status and the message
 * say which piece is missing. */
static void test_devices_or_why_not(void **state) {
    int count = -1, version = -1;
    mxattn_status st = mxattn_device_count(&count);
    mxattn_device_info info;
    if (st == MXATTN_OK) {
        assert_true(count >= 1);
        assert_int_equal(mxattn_device_get_info(0, &info), MXATTN_OK);
        assert_true(info.sm_count > 0 && info.cc_major > 0 && *info.name && !strncmp(info.arch, "sm_", 3));
        assert_int_equal(mxattn_driver_version(&version), MXATTN_OK);
        assert_true(version >= 11000);
        assert_int_equal(mxattn_device_get_info(count, &info), MXATTN_ERROR_INVALID_VALUE);
    } else {
        assert_true(st == MXATTN_ERROR_NO_DRIVER || st == MXATTN_ERROR_NO_DEVICE);
        assert_int_equal(count, 0);
        assert_true(*mxattn_last_error());
        assert_int_equal(mxattn_device_get_info(0, &info), st);
        assert_int_equal(info.sm_count, 0);
    }
    assert_int_equal(mxattn_device_get_info(-1, &info), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mxattn_device_count(NULL), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mxattn_driver_version(NULL), MXATTN_ERROR_NULL_POINTER);
}

static void test_nvrtc_version_or_why_not(void **state) {
    char v[32];
    mxattn_status st = mxattn_nvrtc_version(v, sizeof v);
    if (st == MXATTN_OK) {
        int major = 0, minor = -1;
        assert_int_equal(sscanf(v, "%d.%d", &major, &minor), 2);
        assert_true(major >= 11);
    } else {
        assert_int_equal(st, MXATTN_ERROR_NO_COMPILER);
        assert_string_equal(v, "");
        assert_true(*mxattn_last_error());
    }
    assert_int_equal(mxattn_nvrtc_version(v, 0), MXATTN_ERROR_NULL_POINTER);
}

static void test_bench_options_and_arguments(void **state) {
    mxattn_bench_options o;
    mxattn_bench_report r;
    assert_int_equal(mxattn_bench_options_init(&o), MXATTN_OK);
    assert_int_equal(o.reps, 20);
    assert_int_equal(o.check_heads, 1);
    assert_true(o.seed == 1);
    assert_int_equal(mxattn_bench_options_init(NULL), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mxattn_plan_benchmark(NULL, &o, &r), MXATTN_ERROR_NULL_POINTER);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_database_path),
        cmocka_unit_test(test_devices_or_why_not),
        cmocka_unit_test(test_nvrtc_version_or_why_not),
        cmocka_unit_test(test_bench_options_and_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
