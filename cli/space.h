/* The parameter space as the command line sees it: every kernel parameter of
 * templates/space.lua with its legal values and help, read from the library
 * (mxattn_params) so that the flags, their checks and --help never keep a
 * second copy of the table. */
#ifndef MX_CLI_SPACE_H
#define MX_CLI_SPACE_H
#include <stdio.h>
#include "mxattn.h"

typedef struct {
    char name[32];        /* "head_dim" */
    char flag[40];        /* "--head-dim" */
    char role[8];         /* shape, problem or knob */
    char legal[160];      /* "16|32|64" or "8..256" */
    char help[1024];      /* with "(default X)" where the table gives one */
    int is_bool;          /* values 0|1: a switch (--lse, --lse 0) */
    int is_range;         /* legal is min..max */
    long min, max;
} cli_param;

/* Reads the table (mxattn_params).  Returns 0, or the exit status after
 * printing why.  Later calls return the table read. */
int cli_space_load(const char *cmd);
int cli_space_count(void);
const cli_param *cli_space_at(int i);
const cli_param *cli_space_find(const char *name);

/* Checks a value against the parameter's legal values or range; prints a
 * usage error naming the legal ones and returns 0 when it is not one. */
int cli_space_check(const char *cmd, const char *flag, const cli_param *p, const char *value);
/* The same for a comma-separated list (--family f16,int8-fp8). */
int cli_space_check_list(const char *cmd, const char *flag, const char *name, const char *list);
/* The legal values of a parameter as "a, b, c" into out (empty if unknown). */
const char *cli_space_legal(const char *name, char *out, size_t cap);

/* Prints a flag per parameter of the given roles ("shape knob"), with its
 * legal values and help, wrapped for a terminal: generated --help text. */
void cli_space_print_flags(FILE *f, const char *roles);
#endif
