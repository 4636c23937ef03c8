/* A program outside the tree, built against an installed mxattn: it runs the
 * calls that need no GPU and fails loudly if any answers wrongly.
 * argv[1] is the version the install is expected to be. */
#include <mxattn.h>
#include <stdio.h>
#include <string.h>

static int fail(const char *what, mxattn_status s) {
    fprintf(stderr, "consumer: %s: %s: %s\n", what, mxattn_status_string(s), mxattn_last_error());
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: consumer EXPECTED_VERSION\n"); return 2; }
    /* The header it compiled against and the library it loaded must be the install's. */
    if (strcmp(mxattn_version(), argv[1]) || strcmp(MXATTN_VERSION, argv[1])) {
        fprintf(stderr, "consumer: version: library %s, header %s, expected %s\n",
                mxattn_version(), MXATTN_VERSION, argv[1]);
        return 1;
    }
    mxattn_options opts;
    mxattn_ctx *ctx = NULL;
    mxattn_status s = mxattn_options_init(&opts);
    if (s) return fail("mxattn_options_init", s);
    opts.no_cache = 1;
    if ((s = mxattn_create(&ctx, &opts))) return fail("mxattn_create", s);

    mxattn_problem p;
    mxattn_problem_init(&p, "f16", 128);
    p.heads_q = p.heads_kv = 8;
    p.seq_q = p.seq_k = 1024;
    if ((s = mxattn_problem_check(&p))) return fail("mxattn_problem_check", s);
    mxattn_problem bad = p;
    bad.heads_q = 7;   /* not a multiple of heads_kv */
    if (mxattn_problem_check(&bad) != MXATTN_ERROR_INVALID_VALUE || !*mxattn_last_error()) {
        fprintf(stderr, "consumer: an illegal problem was not rejected with a message\n");
        return 1;
    }

    char *configs[4] = {0};
    int count = 0;
    if ((s = mxattn_candidates(ctx, &p, configs, 4, &count))) return fail("mxattn_candidates", s);
    if (count < 1 || !configs[0] || !*configs[0]) {
        fprintf(stderr, "consumer: no candidate configurations\n");
        return 1;
    }
    printf("consumer ok: mxattn %s, %d candidates, default: %s\n", mxattn_version(), count, configs[0]);
    for (int i = 0; i < 4 && i < count; i++) mxattn_free(configs[i]);
    mxattn_destroy(ctx);
    return 0;
}
