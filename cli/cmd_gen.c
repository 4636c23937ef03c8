#include "cli.h"
#include "gen/gen.h"
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
    mx_gen *g = NULL;
    mxattn_status st = mx_gen_open(&g);
    if (st != MXATTN_OK) return cli_fail_status("gen", st);
    char params[2048], *source = NULL;
    cli_found found[1];
    int nfound = 0;
    int rc = cli_param_flags("gen", g, argc, argv, NULL, 0, params, sizeof params, found, 1, &nfound);
    if (rc == -1) { usage(); rc = 0; }
    else if (rc == 0) {
        /* The flags' values are checked; what the templates still refuse is a
         * combination the parameter space forbids: the command line's fault. */
        st = mx_gen_call(g, "render", params, NULL, &source);
        rc = st == MXATTN_OK ? (fputs(source, stdout), 0) : cli_fail_input("gen", st);
    }
    free(source);
    mx_gen_close(g);
    return rc;
}
