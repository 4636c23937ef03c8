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
