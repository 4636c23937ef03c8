/* mxattn_problem_check on every field fuzzed: shapes, enums, strides,
 * sm_scale's bits, flags.  It must answer OK, INVALID_VALUE or (a NULL
 * family) NULL_POINTER, with a message, and never overflow (UBSan). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_bytes in = { data, size };
    mxattn_problem p;
    char family[64];
    fz_problem(&in, &p, family, sizeof family);
    static const mxattn_status allowed[] = { MXATTN_OK, MXATTN_ERROR_INVALID_VALUE, MXATTN_ERROR_NULL_POINTER };
    fz_expect("mxattn_problem_check", mxattn_problem_check(&p), allowed, 3);
    return 0;
}
