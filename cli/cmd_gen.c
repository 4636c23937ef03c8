#include "cli.h"
#include "paramflags.h"
#include "space.h"
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    printf("usage: mxattn gen --family F --head-dim D [parameter flags]\n"
           "Prints the CUDA source for a parameter table.  Knobs left out take the family's\n"
           "heuristic default.  Every parameter of `mxattn params` is a flag (--name VALUE or\n"
           "--name=VALUE; --causal none|top-left|bottom-right, both masks build one kernel):\n\n");
    cli_space_print_flags(stdout, "shape problem knob");
}

int cmd_gen(int argc, char **argv) {
    char params[2048], *source = NULL;
    cli_found found[1];
    int nfound = 0;
    int rc = cli_param_flags("gen", argc, argv, NULL, 0, params, sizeof params, found, 1, &nfound);
    if (rc == -1) { usage(); return 0; }
    if (rc) return rc;
    mxattn_ctx *ctx = NULL;
    if ((rc = cli_template_ctx("gen", &ctx))) return rc;
    /* The flags' values are checked; what the templates still refuse is a
     * combination the parameter space forbids: the command line's fault. */
    mxattn_status st = mxattn_render(ctx, params, &source);
    rc = st == MXATTN_OK ? (fputs(source, stdout), 0) : cli_fail_input("gen", st);
    mxattn_free(source);
    mxattn_destroy(ctx);
    return rc;
}
