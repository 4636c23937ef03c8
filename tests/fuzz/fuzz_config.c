/* The explicit configuration string of mxattn_plan_create, without a driver:
 * the first input byte picks a problem (family and head_dim), the rest is the
 * config text.  Without a GPU the call must stop at the config check
 * (INVALID_VALUE, with a message) or at the driver (NO_DRIVER): a template
 * error, a crash or a sanitizer report is a bug in the parser. */
#include "fuzz_common.h"

/* The parser is Lua: count its lines as coverage (gen/gen.c). */
int mx_gen_fuzz_lua_coverage = 1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const int DIMS[] = { 64, 128, 96, 256 };
    mxattn_problem p;
    mxattn_problem_init(&p, FZ_FAMILIES[data[0] % 6], DIMS[(data[0] / 6) % 4]);
    p.batch = 2; p.heads_q = 8; p.heads_kv = 2; p.seq_q = 300; p.seq_k = 1000;
    p.causal = (mxattn_causal)((data[0] / 24) % 3);
    char *config = malloc(size);
    if (!config) return 0;
    memcpy(config, data + 1, size - 1);
    config[size - 1] = 0; /* the text stops at the first NUL, as a C caller's does */
    mxattn_plan *plan = NULL;
    mxattn_status st = mxattn_plan_create(fz_context(), &p, config, &plan);
    static const mxattn_status allowed[] = { MXATTN_ERROR_INVALID_VALUE, MXATTN_ERROR_NO_DRIVER };
    fz_expect("mxattn_plan_create", st, allowed, 2);
    if (plan) fz_fail("a plan without a driver");
    free(config);
    return 0;
}
