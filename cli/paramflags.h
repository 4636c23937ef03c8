#ifndef MX_CLI_PARAMFLAGS_H
#define MX_CLI_PARAMFLAGS_H
#include <stddef.h>
#include "cli.h"

/* An option of the command's own (not a kernel parameter) found on the line. */
typedef struct { int id; const char *value; } cli_found;

/* Kernel parameters given as flags: every parameter of templates/space.lua is
 * a flag (--head-dim 80, --block-m=64; a 0/1 parameter is a switch: --lse, or
 * --lse 0), each value checked against the table before any template runs.
 * --causal takes none|top-left|bottom-right as every command does (the old
 * bare --causal and 0|1 too); the kernel is the same for both alignments.
 * The command's own options are `extra` (ids > 0); each one found goes, in
 * order, into found[] (*nfound of them, at most `cap`).  Writes "key=value
 * ..." to params.  --family and --head-dim are required.  Returns 0 on
 * success, -1 for --help, else the exit status after a one-line error. */
int cli_param_flags(const char *cmd, int argc, char **argv, const cli_option *extra, int n_extra,
                    char *params, size_t params_len, cli_found *found, int cap, int *nfound);
#endif
