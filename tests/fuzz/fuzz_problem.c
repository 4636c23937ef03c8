/* mxattn_problem_check on every field fuzzed: shapes, enums, strides,
 * sm_scale's bits, flags.  It must answer OK, INVALID_VALUE or (a NULL
 * family) NULL_POINTER, with a message, and never overflow (UBSan).  A
 * problem it passes must resolve the same way, and the run-time pointer
 * check (which computes each tensor's extent) must then stay free of
 * overflow too: the bounds promised are those that keep every extent
 * inside int64. */
#include "fuzz_common.h"

#include "api/problem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mxattn_problem p;
    char family[64];
    fz_problem_of(data, size, &p, family, sizeof family);
    static const mxattn_status allowed[] = { MXATTN_OK, MXATTN_ERROR_INVALID_VALUE, MXATTN_ERROR_NULL_POINTER };
    mxattn_status st = mxattn_problem_check(&p);
    fz_expect("mxattn_problem_check", st, allowed, 3);
    if (st != MXATTN_OK) return 0;
    mx_problem pr;
    if ((st = mx_problem_resolve(&p, &pr)) != MXATTN_OK)
        fz_fail("mxattn_problem_check passed a problem mx_problem_resolve rejects: %s", mxattn_last_error());
    char text[1024];
    mx_problem_shape_params(&pr, "sm_90a", text, sizeof text);
    mx_problem_sizes(&pr, text, sizeof text);
    /* Addresses 1 TiB apart, never dereferenced: only their arithmetic runs. */
    const uintptr_t tib = (uintptr_t)1 << 40;
    static const mxattn_status ptr_allowed[] = { MXATTN_OK, MXATTN_ERROR_INVALID_VALUE, MXATTN_ERROR_MISALIGNED };
    st = mx_problem_check_pointers(&pr, (const void *)tib, (const void *)(2 * tib), (const void *)(3 * tib),
                                   (const void *)(4 * tib), (const float *)(5 * tib));
    fz_expect("mx_problem_check_pointers", st, ptr_allowed, 3);
    return 0;
}
