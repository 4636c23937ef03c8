#include "cli.h"
#include "gen/gen.h"
#include <stdlib.h>
#include <string.h>

/* `mxattn params`: the parameter space, read from the templates' one table. */
int cmd_params(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") && strcmp(argv[i], "-h"))
            return cli_usage_error("params", "unknown argument '%s'", argv[i]);
    mx_gen *g = NULL;
    char *text = NULL;
    mxattn_status st = mx_gen_open(&g);
    if (st == MXATTN_OK) st = mx_gen_call(g, "params_help", NULL, NULL, &text);
    mx_gen_close(g);
    if (st != MXATTN_OK) return cli_fail_status("params", st);
    fputs(text, stdout);
    free(text);
    return 0;
}
