#include "paramflags.h"
#include "space.h"
#include <stdlib.h>
#include <string.h>

#define PARAM_ID 1000   /* a kernel parameter's option id: PARAM_ID + its index in the table */

/* --causal's words as the kernel's 0|1: both alignments build one kernel. */
static const char *causal_value(const char *cmd, const char *flag, const char *text) {
    if (!text) return "1";   /* the old bare switch */
    mxattn_causal c[3];
    int n;
    if (!cli_parse_causal(cmd, flag, text, 0, c, &n)) return NULL;
    return c[0] == MXATTN_CAUSAL_NONE ? "0" : "1";
}

int cli_param_flags(const char *cmd, int argc, char **argv, const cli_option *extra, int n_extra,
                    char *params, size_t params_len, cli_found *found, int cap, int *nfound) {
    int rc = cli_space_load(cmd);
    if (rc) return rc;
    int n = cli_space_count();
    cli_option *opts = calloc((size_t)(n + n_extra + 1), sizeof *opts);
    if (!opts) return cli_fail(cmd, "out of memory");
    for (int i = 0; i < n; i++) {
        const cli_param *p = cli_space_at(i);
        opts[i] = (cli_option){p->name, PARAM_ID + i, p->is_bool ? CLI_MAYBE_VALUE : CLI_VALUE};
        if (!strcmp(p->name, "causal")) opts[i].arity = CLI_MAYBE_VALUE;
    }
    for (int i = 0; i < n_extra; i++) opts[n + i] = extra[i];
    size_t used = 0;
    params[0] = 0;
    *nfound = 0;
    int have_family = 0, have_head_dim = 0;
    char seen[256] = {0};   /* a parameter given twice is a typo, not "the last wins" */
    cli_parser ps;
    cli_parser_init(&ps, cmd, argc, argv, opts, n + n_extra);
    for (int id; rc == 0 && (id = cli_next(&ps)) != CLI_END;) {
        if (id == CLI_HELP) { rc = -1; break; }
        if (id == CLI_ERROR) { rc = 2; break; }
        if (id == CLI_ARG) { rc = cli_usage_error(cmd, "unexpected argument '%s'", ps.value); break; }
        if (id < PARAM_ID) {
            if (*nfound == cap) { rc = cli_usage_error(cmd, "too many options"); break; }
            found[(*nfound)++] = (cli_found){id, ps.value};
            continue;
        }
        const cli_param *p = cli_space_at(id - PARAM_ID);
        if (seen[id - PARAM_ID]++) { rc = cli_usage_error(cmd, "%s is given twice", p->flag); break; }
        const char *value = ps.value;
        if (!strcmp(p->name, "causal")) {
            if (!(value = causal_value(cmd, ps.flag, value))) { rc = 2; break; }
        } else if (p->is_bool && !value) {
            value = "1";
        }
        if (!cli_space_check(cmd, ps.flag, p, value)) { rc = 2; break; }
        have_family |= !strcmp(p->name, "family");
        have_head_dim |= !strcmp(p->name, "head_dim");
        int k = snprintf(params + used, params_len - used, "%s%s=%s", used ? " " : "", p->name, value);
        if (k < 0 || (size_t)k >= params_len - used) { rc = cli_usage_error(cmd, "too many parameters"); break; }
        used += (size_t)k;
    }
    free(opts);
    if (rc) return rc;
    char legal[256];
    if (!have_family)
        return cli_usage_error(cmd, "--family is required: one of %s", cli_space_legal("family", legal, sizeof legal));
    if (!have_head_dim)
        return cli_usage_error(cmd, "--head-dim is required: %s", cli_space_legal("head_dim", legal, sizeof legal));
    return 0;
}
