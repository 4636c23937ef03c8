/* Shared helpers of the mxattn program's subcommands.  Each subcommand lives in
 * cli/cmd_<name>.c as `int cmd_<name>(int argc, char **argv)` (argv[0] is the
 * subcommand's name) and returns the process exit status:
 *
 *   0  success
 *   1  the operation failed (no GPU, a file that cannot be read or written,
 *      a database error, a kernel that failed its check, stdout unwritable)
 *   2  the command line is wrong: an unknown option, a missing or malformed
 *      value, a value out of its legal range or set, a combination of
 *      parameters the parameter space forbids.  Nothing was done.
 *
 * Errors are one line on stderr, "mxattn <cmd>: error: ...", never a crash
 * and never a traceback. */
#ifndef MX_CLI_H
#define MX_CLI_H
#include <stdio.h>
#include "mxattn.h"

/* Prints "mxattn <cmd>: error: <message> (see 'mxattn <cmd> --help')" and returns 2 (usage) */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "mxattn <cmd>: error: <message>" and returns 1 (failure) */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the library's last error for a failed status (its first line: a
 * template's Lua traceback is cut) and returns 1. */
int cli_fail_status(const char *cmd, mxattn_status s);
/* The same, but a MXATTN_ERROR_INVALID_VALUE is the command line's fault and
 * returns 2: for statuses of calls that only check what the flags said. */
int cli_fail_input(const char *cmd, mxattn_status s);

/* Parses a whole decimal integer in [min, max]; on failure prints a one-line
 * error naming the flag and returns 0. */
int cli_parse_long(const char *cmd, const char *flag, const char *text, long min, long max, long *out);
int cli_parse_double(const char *cmd, const char *flag, const char *text, double min, double max, double *out);
/* A comma-separated list of integers in [min, max], at most `cap` of them. */
int cli_parse_long_list(const char *cmd, const char *flag, const char *text, long min, long max,
                        long *out, int cap, int *n);
/* Opens `path` for writing ("-" is stdout); prints an error and returns NULL on failure. */
FILE *cli_open_output(const char *cmd, const char *path);

/* ---- the one option parser every command uses ------------------------------
 * Options are written --name VALUE or --name=VALUE; a name's '_' and '-' are
 * the same (--head_dim is --head-dim).  "--" ends the options.  An unknown
 * option, a missing value and a value given to a switch are usage errors. */
typedef enum {
    CLI_SWITCH,        /* --json: no value */
    CLI_VALUE,         /* --db PATH */
    CLI_MAYBE_VALUE    /* --causal [MODE]: takes the next argument unless it starts with '-' */
} cli_arity;

typedef struct {
    const char *name;  /* without the dashes: "head-dim" */
    int id;            /* > 0; aliases (old spellings) repeat an id */
    cli_arity arity;
} cli_option;

enum { CLI_END = 0, CLI_ARG = -1, CLI_HELP = -2, CLI_ERROR = -3 };

typedef struct {
    const char *cmd;
    int argc, i, only_args;
    char **argv;
    const cli_option *opts;
    int n_opts;
    const char *value;   /* the option's value (NULL: none given), or the positional argument */
    char flag[80];       /* the option as written, without "=value": for messages */
} cli_parser;

/* opts: n_opts entries (n_opts < 0: terminated by an entry with a NULL name). */
void cli_parser_init(cli_parser *p, const char *cmd, int argc, char **argv, const cli_option *opts, int n_opts);
/* The next option's id, CLI_ARG (a positional argument, in p->value), CLI_HELP
 * (--help or -h), CLI_END, or CLI_ERROR after printing the usage error (exit 2). */
int cli_next(cli_parser *p);

/* ---- shared values -------------------------------------------------------- */
/* --causal: none|top-left|bottom-right (and the old 0|1|2).  With `several`,
 * also a comma list, `all` (the three) and the old `both` (none, top-left).
 * out holds up to 3.  Returns 1, else prints a usage error and returns 0. */
int cli_parse_causal(const char *cmd, const char *flag, const char *text, int several, mxattn_causal *out, int *n);
const char *cli_causal_name(mxattn_causal c);
/* --dtype bf16|f16 */
int cli_parse_dtype(const char *cmd, const char *flag, const char *text, mxattn_dtype *out);

/* A context for the template-only calls (mxattn_render, mxattn_compile, ...):
 * no database, no tuning.  Returns 0, or the exit status after printing why. */
int cli_template_ctx(const char *cmd, mxattn_ctx **out);

/* ---- stdout ---------------------------------------------------------------- */
/* Flushes and closes stdout; if it could not be written (a full disk, a
 * closed pipe), says so on stderr and turns an exit status of 0 into 1. */
int cli_finish_stdout(const char *cmd, int rc);

/* JSON string literal of s (quotes, backslashes and control characters escaped). */
void cli_json_string(FILE *f, const char *s);
/* A JSON number, or null for a NaN or an infinity (JSON has neither). */
void cli_json_number(FILE *f, double x);
/* A table cell: x in `format`, right-aligned in `width`; "-" for NaN (no value). */
void cli_print_cell(FILE *f, const char *format, double x, int width);

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
