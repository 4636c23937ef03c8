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

mx_tune_result tune_result_of(const char *config, double median_ms, double default_ms, double tops) {
    mx_tune_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.config, sizeof r.config, "%s", config);
    r.median_ms = median_ms;
    r.default_ms = default_ms;
    r.tops = tops;
    return r;
}

mx_measurement measurement_of(const char *config, const char *status, double median_ms, double spread,
                              int registers) {
    mx_measurement m;
    memset(&m, 0, sizeof m);
    snprintf(m.config, sizeof m.config, "%s", config);
    snprintf(m.status, sizeof m.status, "%s", status);
    m.median_ms = median_ms;
    m.spread = spread;
    m.registers = registers;
    return m;
}
