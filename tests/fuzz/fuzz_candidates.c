/* mxattn_candidates on fuzzed problems (the encoding of fuzz_common.h),
 * without a GPU: the list for sm_90a.  Besides the statuses its contract
 * allows, every configuration it lists must pass the explicit-config check
 * of mxattn_plan_create, which then stops only for want of a driver. */
#include "fuzz_common.h"

#define FZ_MAX_CONFIGS 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mxattn_problem p;
    char family[64];
    fz_problem_of(data, size, &p, family, sizeof family);
    mxattn_ctx *ctx = fz_context();
    char *configs[FZ_MAX_CONFIGS] = { 0 };
    int count = -1;
    mxattn_status st = mxattn_candidates(ctx, &p, configs, FZ_MAX_CONFIGS, &count);
    static const mxattn_status allowed[] = { MXATTN_OK, MXATTN_ERROR_INVALID_VALUE, MXATTN_ERROR_NULL_POINTER,
                                             MXATTN_ERROR_UNSUPPORTED };
    fz_expect("mxattn_candidates", st, allowed, 4);
    if (st != MXATTN_OK) {
        if (count != 0) fz_fail("mxattn_candidates failed but set count=%d", count);
        return 0;
    }
    if (count < 1) fz_fail("mxattn_candidates returned OK with %d candidates", count);
    int listed = count < FZ_MAX_CONFIGS ? count : FZ_MAX_CONFIGS;
    for (int i = 0; i < listed; i++) {
        if (!configs[i] || !configs[i][0]) fz_fail("candidate %d of %d is empty", i, count);
        /* The first (the default) and one other: each plan_create re-runs the check. */
        if (i == 0 || i == listed - 1) {
            mxattn_plan *plan = NULL;
            mxattn_status ps = mxattn_plan_create(ctx, &p, configs[i], &plan);
            if (ps != MXATTN_ERROR_NO_DRIVER)
                fz_fail("mxattn_plan_create with candidate '%s' returned %s: %s", configs[i],
                        mxattn_status_string(ps), mxattn_last_error());
            mxattn_plan_destroy(plan);
        }
    }
    for (int i = 0; i < listed; i++) mxattn_free(configs[i]);
    return 0;
}
