#include "cli.h"
#include "gen/gen.h"
#include "paramflags.h"
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    printf("usage: mxattn gen --family F --head-dim D [parameter flags]\n"
           "Prints the CUDA source for a parameter table; every parameter of\n"
           "`mxattn params` is a flag (--block-m 64, --causal, --dtype f16 ...).\n"
           "Knobs left out take the family's heuristic default.\n");
}

int cmd_gen(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(); return 0; }
    mx_gen *g = NULL;
    mxattn_status st = mx_gen_open(&g);
    if (st != MXATTN_OK) return cli_fail_status("gen", st);
    char params[2048], *rest[64], *source = NULL;
    int nrest = 0;
    int rc = argc > 64 ? cli_usage_error("gen", "too many arguments")
                       : cli_param_flags("gen", g, argc, argv, params, sizeof params, rest, &nrest);
    if (rc == 0 && nrest > 0) rc = cli_usage_error("gen", "unknown argument '%s'", rest[0]);
    if (rc == 0) {
        st = mx_gen_call(g, "render", params, NULL, &source);
        rc = st == MXATTN_OK ? (fputs(source, stdout), 0) : cli_fail_status("gen", st);
    }
    free(source);
    mx_gen_close(g);
    return rc;
}
