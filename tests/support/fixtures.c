#include "fixtures.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

mxattn_ctx *cacheless_ctx(void) {
    mxattn_ctx *ctx = NULL;
    mxattn_options o;
    mxattn_options_init(&o);
    o.no_cache = 1;
    assert_int_equal(mxattn_create(&ctx, &o), MXATTN_OK);
    return ctx;
}

int cacheless_ctx_setup(void **state) {
    *state = cacheless_ctx();
    return 0;
}

int ctx_teardown(void **state) {
    mxattn_destroy(*state);
    return 0;
}

mxattn_ctx *untuned_ctx(const char *db) {
    mxattn_options o;
    mxattn_options_init(&o);
    o.db_path = db;
    o.no_cache = db == NULL;
    o.tune_policy = "off";
    mxattn_ctx *ctx = NULL;
    if (mxattn_create(&ctx, &o) != MXATTN_OK) fail_msg("mxattn_create: %s", mxattn_last_error());
    return ctx;
}

void tune_key_h200(mx_tune_key *k, const char *gpu) {
    memset(k, 0, sizeof *k);
    snprintf(k->gpu_name, sizeof k->gpu_name, "%s", gpu);
    k->sm_count = 132;
    k->compute_capability = 90;
    k->driver_version = 12040;
    k->nvrtc_version = 12040;
    strcpy(k->mxattn_version, "0.1.0");
    strcpy(k->family, "f16");
}

void expect_row_counts(long read, long taken, long kept, long refused, long want_read, long want_taken,
                       long want_kept, long want_refused) {
    if (want_read != -1) assert_int_equal(read, want_read);
    if (want_taken != -1) assert_int_equal(taken, want_taken);
    if (want_kept != -1) assert_int_equal(kept, want_kept);
    if (want_refused != -1) assert_int_equal(refused, want_refused);
}
