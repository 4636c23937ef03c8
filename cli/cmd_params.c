#include "cli.h"
#include "gen/gen.h"
#include "space.h"
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    printf("usage: mxattn params [--json]\n"
           "Describes every kernel parameter of the templates' parameter space, its role,\n"
           "legal values, default and the constraints between them.\n"
           "  --json   a JSON array of the parameters (name, flag, role, values or min/max, help)\n");
}

static void print_json(void) {
    printf("[");
    for (int i = 0; i < cli_space_count(); i++) {
        const cli_param *p = cli_space_at(i);
        printf("%s\n  {\"name\": ", i ? "," : "");
        cli_json_string(stdout, p->name);
        printf(", \"flag\": ");
        cli_json_string(stdout, p->flag);
        printf(", \"role\": ");
        cli_json_string(stdout, p->role);
        if (p->is_range) {
            printf(", \"min\": %ld, \"max\": %ld", p->min, p->max);
        } else {
            printf(", \"values\": [");
            for (const char *s = p->legal, *sep = ""; *s; sep = ", ") {
                size_t n = strcspn(s, "|");
                printf("%s\"%.*s\"", sep, (int)n, s);
                s += n;
                if (*s) s++;
            }
            printf("]");
        }
        printf(", \"help\": ");
        cli_json_string(stdout, p->help);
        printf("}");
    }
    printf("\n]\n");
}

/* `mxattn params`: the parameter space, read from the templates' one table. */
int cmd_params(int argc, char **argv) {
    enum { OPT_JSON = 1 };
    static const cli_option options[] = {{"json", OPT_JSON, CLI_SWITCH}};
    int json = 0;
    cli_parser ps;
    cli_parser_init(&ps, "params", argc, argv, options, 1);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        if (id == CLI_HELP) { usage(); return 0; }
        if (id == CLI_ERROR) return 2;
        if (id == CLI_ARG) return cli_usage_error("params", "unexpected argument '%s'", ps.value);
        json = 1;
    }
    mx_gen *g = NULL;
    char *text = NULL;
    mxattn_status st = mx_gen_open(&g);
    int rc = 0;
    if (st == MXATTN_OK && json) rc = cli_space_load("params", g);
    else if (st == MXATTN_OK) st = mx_gen_call(g, "params_help", NULL, NULL, &text);
    mx_gen_close(g);
    if (st != MXATTN_OK) return cli_fail_status("params", st);
    if (rc) return rc;
    if (json) print_json();
    else fputs(text, stdout);
    free(text);
    return 0;
}
