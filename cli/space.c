#include "space.h"
#include "cli.h"
#include <stdlib.h>
#include <string.h>

#define MAX_PARAMS 64
static cli_param params[MAX_PARAMS];
static int n_params = -1;

int cli_space_load(const char *cmd) {
    if (n_params >= 0) return 0;
    const mxattn_param *table = NULL;
    int n = 0;
    mxattn_status st = mxattn_params(&table, &n);
    if (st != MXATTN_OK) return cli_fail_status(cmd, st);
    n_params = 0;
    for (int i = 0; i < n && n_params < MAX_PARAMS; i++) {
        const mxattn_param *t = &table[i];
        cli_param *p = &params[n_params++];
        memset(p, 0, sizeof *p);
        snprintf(p->name, sizeof p->name, "%s", t->name);
        snprintf(p->flag, sizeof p->flag, "--%s", t->name);
        for (char *c = p->flag; *c; c++) if (*c == '_') *c = '-';
        snprintf(p->role, sizeof p->role, "%s", t->role);
        snprintf(p->legal, sizeof p->legal, "%s", t->legal);
        if (*t->default_value) snprintf(p->help, sizeof p->help, "%s (default %s)", t->help, t->default_value);
        else snprintf(p->help, sizeof p->help, "%s", t->help);
        p->is_bool = t->is_bool;
        p->is_range = t->is_range;
        p->min = t->min;
        p->max = t->max;
    }
    return 0;
}

int cli_space_count(void) { return n_params < 0 ? 0 : n_params; }
const cli_param *cli_space_at(int i) { return i >= 0 && i < cli_space_count() ? &params[i] : NULL; }

const cli_param *cli_space_find(const char *name) {
    for (int i = 0; i < cli_space_count(); i++)
        if (!strcmp(params[i].name, name)) return &params[i];
    return NULL;
}

static int is_legal(const cli_param *p, const char *value, size_t len) {
    if (p->is_range) {
        char buf[32], *end;
        if (len == 0 || len >= sizeof buf) return 0;
        memcpy(buf, value, len);
        buf[len] = 0;
        long v = strtol(buf, &end, 10);
        return !*end && v >= p->min && v <= p->max;
    }
    if (!*p->legal) return len > 0;   /* the table gave no values: the templates check */
    for (const char *s = p->legal;;) {
        const char *bar = strchr(s, '|');
        size_t n = bar ? (size_t)(bar - s) : strlen(s);
        if (n == len && !strncmp(s, value, len)) return 1;
        if (!bar) return 0;
        s = bar + 1;
    }
}

const char *cli_space_legal(const char *name, char *out, size_t cap) {
    const cli_param *p = cli_space_find(name);
    size_t used = 0;
    out[0] = 0;
    if (!p) return out;
    if (p->is_range) {
        snprintf(out, cap, "an integer in [%ld, %ld]", p->min, p->max);
        return out;
    }
    for (const char *c = p->legal; *c && used + 3 < cap; c++) {
        if (*c == '|') { out[used++] = ','; out[used++] = ' '; }
        else out[used++] = *c;
    }
    out[used] = 0;
    return out;
}

static int report_illegal(const char *cmd, const char *flag, const cli_param *p, const char *value, size_t len) {
    char legal[256];
    cli_space_legal(p->name, legal, sizeof legal);
    if (p->is_range) cli_usage_error(cmd, "%s must be %s, got '%.*s'", flag, legal, (int)len, value);
    else cli_usage_error(cmd, "unknown %s '%.*s': one of %s", p->name, (int)len, value, legal);
    return 0;
}

int cli_space_check(const char *cmd, const char *flag, const cli_param *p, const char *value) {
    return is_legal(p, value, strlen(value)) ? 1 : report_illegal(cmd, flag, p, value, strlen(value));
}

int cli_space_check_list(const char *cmd, const char *flag, const char *name, const char *list) {
    const cli_param *p = cli_space_find(name);
    if (!p) return 1;
    for (const char *s = list;;) {
        const char *comma = strchr(s, ',');
        size_t n = comma ? (size_t)(comma - s) : strlen(s);
        if (!is_legal(p, s, n)) return report_illegal(cmd, flag, p, s, n);
        if (!comma) return 1;
        s = comma + 1;
    }
}

/* Words of text from column `indent`, lines of at most `width`. */
static void wrap(FILE *f, const char *text, int indent, int width) {
    int col = indent;
    fprintf(f, "%*s", indent, "");
    for (const char *s = text; *s;) {
        while (*s == ' ') s++;
        size_t n = strcspn(s, " ");
        if (!n) break;
        if (col > indent && col + 1 + (int)n > width) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        }
        if (col > indent) { fputc(' ', f); col++; }
        fprintf(f, "%.*s", (int)n, s);
        col += (int)n;
        s += n;
    }
    fputc('\n', f);
}

void cli_space_print_flags(FILE *f, const char *roles) {
    for (int i = 0; i < cli_space_count(); i++) {
        const cli_param *p = &params[i];
        if (!*p->role || !strstr(roles, p->role)) continue;
        /* The mask is spelled as on every command; the kernel's 0|1 still parses. */
        if (!strcmp(p->name, "causal")) fprintf(f, "  %s [none|top-left|bottom-right]\n", p->flag);
        else fprintf(f, "  %s %s\n", p->flag, p->is_bool ? "[0|1]" : p->legal);
        wrap(f, p->help, 6, 78);
    }
}
