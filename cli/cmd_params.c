#include "cli.h"
#include "paramflags.h"
#include "space.h"
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    printf("usage: mxattn params [--json]\n"
           "       mxattn params --family F --head-dim D [--causal M] [parameter flags] [--json]\n"
           "Describes every kernel parameter of the templates' parameter space, its role,\n"
           "legal values, default and the constraints between them.  Given a problem, prints\n"
           "its complete parameter table instead: the flags given, and the family's heuristic\n"
           "default for every knob left out (what `mxattn gen` renders).\n"
           "  --json   a JSON array of the parameters (name, flag, role, values or min/max, help),\n"
           "           or for a problem one JSON object of its parameters\n");
}

/* The resolved table of one problem: "key=value ..." as lines or an object. */
static void print_resolved(const char *canonical, int json) {
    printf(json ? "{" : "");
    int first = 1;
    for (const char *s = canonical; *s;) {
        while (*s == ' ') s++;
        size_t n = strcspn(s, " ");
        const char *eq = memchr(s, '=', n);
        if (eq) {
            int klen = (int)(eq - s), vlen = (int)(n - (size_t)(eq - s) - 1);
            if (json) printf("%s\"%.*s\": \"%.*s\"", first ? "" : ", ", klen, s, vlen, eq + 1);
            else printf("%-14.*s %.*s\n", klen, s, vlen, eq + 1);
            first = 0;
        }
        s += n;
    }
    printf(json ? "}\n" : "");
}

/* `mxattn params --family F --head-dim D ...` */
static int resolve(int argc, char **argv) {
    enum { OPT_JSON = 1 };
    static const cli_option extra[] = {{"json", OPT_JSON, CLI_SWITCH}};
    char params[2048], *canonical = NULL;
    cli_found found[4];
    int nfound = 0;
    int rc = cli_param_flags("params", argc, argv, extra, 1, params, sizeof params, found, 4, &nfound);
    if (rc == -1) { usage(); return 0; }
    if (rc) return rc;
    mxattn_ctx *ctx = NULL;
    if ((rc = cli_template_ctx("params", &ctx))) return rc;
    mxattn_status st = mxattn_params_resolve(ctx, params, &canonical);
    if (st != MXATTN_OK) rc = cli_fail_input("params", st);
    else print_resolved(canonical, nfound > 0);
    mxattn_free(canonical);
    mxattn_destroy(ctx);
    return rc;
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

static int names_a_parameter(const char *arg) {
    if (strncmp(arg, "--", 2) || cli_space_load("params")) return 0;
    char key[40];
    snprintf(key, sizeof key, "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
    for (char *c = key; *c; c++) if (*c == '-') *c = '_';
    return cli_space_find(key) != NULL;
}

/* `mxattn params`: the parameter space, read from the templates' one table. */
int cmd_params(int argc, char **argv) {
    enum { OPT_JSON = 1 };
    static const cli_option options[] = {{"json", OPT_JSON, CLI_SWITCH}};
    /* A parameter flag on the line asks for one problem's table. */
    for (int i = 1; i < argc; i++)
        if (names_a_parameter(argv[i])) return resolve(argc, argv);
    int json = 0;
    cli_parser ps;
    cli_parser_init(&ps, "params", argc, argv, options, 1);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        if (id == CLI_HELP) { usage(); return 0; }
        if (id == CLI_ERROR) return 2;
        if (id == CLI_ARG) return cli_usage_error("params", "unexpected argument '%s'", ps.value);
        json = 1;
    }
    if (json) {
        int rc = cli_space_load("params");
        if (!rc) print_json();
        return rc;
    }
    mxattn_ctx *ctx = NULL;
    char *text = NULL;
    int rc = cli_template_ctx("params", &ctx);
    if (rc) return rc;
    mxattn_status st = mxattn_params_help(ctx, &text);
    mxattn_destroy(ctx);
    if (st != MXATTN_OK) return cli_fail_status("params", st);
    fputs(text, stdout);
    mxattn_free(text);
    return 0;
}
