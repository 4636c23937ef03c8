#include "paramflags.h"
#include "cli.h"
#include <stdlib.h>
#include <string.h>

/* Finds "--some-name" in the spec ("some_name bool|value" lines). */
static int lookup_flag(const char *spec, const char *flag, char *name, size_t name_len, int *is_bool) {
    char want[64];
    snprintf(want, sizeof want, "%s", flag + 2);
    for (char *p = want; *p; p++) if (*p == '-') *p = '_';
    size_t n = strlen(want);
    for (const char *line = spec; line && *line;) {
        if (strncmp(line, want, n) == 0 && line[n] == ' ') {
            snprintf(name, name_len, "%s", want);
            *is_bool = strncmp(line + n + 1, "bool", 4) == 0;
            return 1;
        }
        line = strchr(line, '\n');
        if (line) line++;
    }
    return 0;
}

int cli_param_flags(const char *cmd, mx_gen *g, int argc, char **argv,
                    char *params, size_t params_len, char **rest, int *nrest) {
    char *spec = NULL;
    mxattn_status st = mx_gen_call(g, "flag_spec", NULL, NULL, &spec);
    if (st != MXATTN_OK) return cli_fail_status(cmd, st);
    size_t used = 0;
    params[0] = 0;
    *nrest = 0;
    for (int i = 1; i < argc; i++) {
        char name[64];
        int is_bool = 0;
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0 || !lookup_flag(spec, arg, name, sizeof name, &is_bool)) {
            rest[(*nrest)++] = argv[i];
            continue;
        }
        const char *value = "1";
        if (!is_bool) {
            if (i + 1 >= argc) { free(spec); return cli_usage_error(cmd, "%s needs a value", arg); }
            value = argv[++i];
        } else if (i + 1 < argc && (!strcmp(argv[i + 1], "0") || !strcmp(argv[i + 1], "1"))) {
            value = argv[++i];
        }
        if (strchr(value, ' ') || strchr(value, '=') || !*value) {
            free(spec);
            return cli_usage_error(cmd, "%s: bad value '%s'", arg, value);
        }
        int n = snprintf(params + used, params_len - used, "%s%s=%s", used ? " " : "", name, value);
        if (n < 0 || (size_t)n >= params_len - used) { free(spec); return cli_usage_error(cmd, "too many parameters"); }
        used += (size_t)n;
    }
    free(spec);
    return 0;
}
