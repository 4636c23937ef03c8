#ifndef MX_CLI_PARAMFLAGS_H
#define MX_CLI_PARAMFLAGS_H
#include <stddef.h>
#include "gen/gen.h"

/* Kernel parameters given as flags: every parameter of templates/space.lua is
 * a flag (--head-dim 80, --block-m 64; a 0/1 parameter is a switch: --causal).
 * Consumes those flags from argv; the others are left, in order, in rest[]
 * (*nrest of them).  Writes "key=value ..." to params.  Returns 0 on success,
 * else the exit status after printing a one-line error. */
int cli_param_flags(const char *cmd, mx_gen *g, int argc, char **argv,
                    char *params, size_t params_len, char **rest, int *nrest);
#endif
