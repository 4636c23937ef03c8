/* Shared helpers of the mxattn program's subcommands.  Each subcommand lives in
 * cli/cmd_<name>.c as `int cmd_<name>(int argc, char **argv)` (argv[0] is the
 * subcommand's name) and returns the process exit status: 0 success, 1 the
 * work failed, 2 bad usage.  Errors are one line on stderr, never a crash. */
#ifndef MX_CLI_H
#define MX_CLI_H
#include <stdio.h>
#include "mxattn.h"

/* Prints "mxattn <cmd>: error: <message>" and returns 2 (usage) */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "mxattn <cmd>: error: <message>" and returns 1 (failure) */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the library's last error for a failed status and returns 1. */
int cli_fail_status(const char *cmd, mxattn_status s);

/* Parses a whole decimal integer in [min, max]; on failure prints a one-line
 * error naming the flag and returns 0. */
int cli_parse_long(const char *cmd, const char *flag, const char *text, long min, long max, long *out);
int cli_parse_double(const char *cmd, const char *flag, const char *text, double min, double max, double *out);
/* Opens `path` for writing ("-" is stdout); prints an error and returns NULL on failure. */
FILE *cli_open_output(const char *cmd, const char *path);

typedef int (*cli_command_fn)(int argc, char **argv);
typedef struct { const char *name; cli_command_fn fn; const char *summary; } cli_command;

int cmd_accuracy(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_db(int argc, char **argv);
int cmd_params(int argc, char **argv);
int cmd_info(int argc, char **argv);
#endif
