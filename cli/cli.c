#include "cli.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void vreport(const char *cmd, const char *fmt, va_list ap) {
    fprintf(stderr, "mxattn %s: error: ", cmd);
    vfprintf(stderr, fmt, ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    /* On the same line: scripts and tests count one error line per failure. */
    fprintf(stderr, " (see 'mxattn %s --help')\n", cmd);
    return 2;
}

int cli_fail(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

/* The library's message up to its Lua traceback: a template error carries
 * "stack traceback:" and the frames, which say nothing to a user (the first
 * line names the template and the line).  An NVRTC compile log is kept. */
static int message_length(const char *msg) {
    const char *tb = strstr(msg, "\nstack traceback:");
    return tb ? (int)(tb - msg) : (int)strlen(msg);
}

int cli_fail_status(const char *cmd, mxattn_status s) {
    const char *msg = mxattn_last_error();
    return cli_fail(cmd, "%s%s%.*s", mxattn_status_string(s), *msg ? ": " : "", message_length(msg), msg);
}

int cli_fail_input(const char *cmd, mxattn_status s) {
    if (s != MXATTN_ERROR_INVALID_VALUE) return cli_fail_status(cmd, s);
    const char *msg = mxattn_last_error();
    return cli_usage_error(cmd, "%.*s", message_length(msg), msg);
}

/* The verdict both number parsers give: `unread` (the text is not all one
 * number: the flag `expects` another), else `outside` (the range text says
 * "[min, max], got v" in the parser's own format); 1 when neither. */
static int parsed_value(const char *cmd, const char *flag, const char *text, int unread, const char *expects,
                        int outside, const char *range) {
    if (unread) {
        cli_usage_error(cmd, "%s expects %s, got '%s'", flag, expects, text ? text : "");
        return 0;
    }
    if (outside) {
        cli_usage_error(cmd, "%s must be in %s", flag, range);
        return 0;
    }
    return 1;
}

int cli_parse_long(const char *cmd, const char *flag, const char *text, long min, long max, long *out) {
    char *end, range[96];
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    snprintf(range, sizeof range, "[%ld, %ld], got %ld", min, max, v);
    if (!parsed_value(cmd, flag, text, !text || !*text || *end || errno, "an integer", v < min || v > max, range))
        return 0;
    *out = v;
    return 1;
}

int cli_parse_double(const char *cmd, const char *flag, const char *text, double min, double max, double *out) {
    char *end, range[96];
    errno = 0;
    double v = text ? strtod(text, &end) : 0;
    snprintf(range, sizeof range, "[%g, %g], got %g", min, max, v);
    if (!parsed_value(cmd, flag, text, !text || !*text || *end || errno || isnan(v), "a number",
                      v < min || v > max, range))
        return 0;
    *out = v;
    return 1;
}

int cli_parse_long_list(const char *cmd, const char *flag, const char *text, long min, long max,
                        long *out, int cap, int *n) {
    char buf[512], *save = NULL;
    if (strlen(text) >= sizeof buf) { cli_usage_error(cmd, "%s: the list is too long", flag); return 0; }
    snprintf(buf, sizeof buf, "%s", text);
    *n = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == cap) { cli_usage_error(cmd, "%s: at most %d values", flag, cap); return 0; }
        if (!cli_parse_long(cmd, flag, tok, min, max, &out[(*n)++])) return 0;
    }
    if (*n == 0) { cli_usage_error(cmd, "%s needs at least one value", flag); return 0; }
    return 1;
}

FILE *cli_open_output(const char *cmd, const char *path) {
    if (strcmp(path, "-") == 0) return stdout;
    FILE *f = fopen(path, "w");
    if (!f) cli_fail(cmd, "cannot write '%s': %s", path, strerror(errno));
    return f;
}

/* ---- the option parser ----------------------------------------------------- */

void cli_parser_init(cli_parser *p, const char *cmd, int argc, char **argv, const cli_option *opts, int n_opts) {
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->argc = argc;
    p->argv = argv;
    p->i = 1;
    p->opts = opts;
    if (n_opts < 0)
        for (n_opts = 0; opts && opts[n_opts].name; n_opts++) {}
    p->n_opts = n_opts;
}

/* "head_dim" and "head-dim" are one name. */
static int same_name(const char *a, size_t a_len, const char *b) {
    size_t i = 0;
    for (; i < a_len && b[i]; i++) {
        char x = a[i] == '_' ? '-' : a[i], y = b[i] == '_' ? '-' : b[i];
        if (x != y) return 0;
    }
    return i == a_len && !b[i];
}

int cli_next(cli_parser *p) {
    p->value = NULL;
    p->flag[0] = 0;
    if (p->i >= p->argc) return CLI_END;
    const char *arg = p->argv[p->i++];
    if (p->only_args || arg[0] != '-' || !arg[1]) { p->value = arg; return CLI_ARG; }
    if (!strcmp(arg, "--")) {
        p->only_args = 1;
        return cli_next(p);
    }
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) return CLI_HELP;
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    snprintf(p->flag, sizeof p->flag, "%.*s", (int)len, arg);
    if (arg[1] != '-') {
        cli_usage_error(p->cmd, "unknown option '%s' (options are spelled --name)", p->flag);
        return CLI_ERROR;
    }
    const cli_option *o = NULL;
    for (int k = 0; k < p->n_opts && !o; k++)
        if (same_name(arg + 2, len - 2, p->opts[k].name)) o = &p->opts[k];
    if (!o) {
        cli_usage_error(p->cmd, "unknown option '%s'", p->flag);
        return CLI_ERROR;
    }
    if (eq) {
        if (o->arity == CLI_SWITCH) {
            cli_usage_error(p->cmd, "%s takes no value (got '%s')", p->flag, eq + 1);
            return CLI_ERROR;
        }
        p->value = eq + 1;
    } else if (o->arity == CLI_VALUE) {
        if (p->i >= p->argc) {
            cli_usage_error(p->cmd, "%s needs a value", p->flag);
            return CLI_ERROR;
        }
        p->value = p->argv[p->i++];
    } else if (o->arity == CLI_MAYBE_VALUE && p->i < p->argc && p->argv[p->i][0] != '-') {
        p->value = p->argv[p->i++];
    }
    return o->id;
}

/* ---- shared values ------------------------------------------------------------ */

const char *cli_causal_name(mxattn_causal c) {
    return c == MXATTN_CAUSAL_NONE ? "none" : c == MXATTN_CAUSAL_TOP_LEFT ? "top-left" : "bottom-right";
}

static int causal_word(const char *s, size_t n, mxattn_causal *out) {
    static const struct { const char *word; mxattn_causal c; } words[] = {
        {"none", MXATTN_CAUSAL_NONE}, {"top-left", MXATTN_CAUSAL_TOP_LEFT},
        {"bottom-right", MXATTN_CAUSAL_BOTTOM_RIGHT},
        /* the old spellings: query's 0|1|2 */
        {"0", MXATTN_CAUSAL_NONE}, {"1", MXATTN_CAUSAL_TOP_LEFT}, {"2", MXATTN_CAUSAL_BOTTOM_RIGHT},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strlen(words[i].word) == n && !strncmp(words[i].word, s, n)) { *out = words[i].c; return 1; }
    return 0;
}

int cli_parse_causal(const char *cmd, const char *flag, const char *text, int several, mxattn_causal *out, int *n) {
    *n = 0;
    if (several && !strcmp(text, "all")) {
        out[0] = MXATTN_CAUSAL_NONE; out[1] = MXATTN_CAUSAL_TOP_LEFT; out[2] = MXATTN_CAUSAL_BOTTOM_RIGHT;
        *n = 3;
        return 1;
    }
    if (several && !strcmp(text, "both")) {   /* tune's old word: the two masks it tuned by default */
        out[0] = MXATTN_CAUSAL_NONE; out[1] = MXATTN_CAUSAL_TOP_LEFT;
        *n = 2;
        return 1;
    }
    for (const char *s = text;;) {
        const char *comma = several ? strchr(s, ',') : NULL;
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        mxattn_causal c;
        if (!causal_word(s, len, &c)) break;
        int seen = 0;
        for (int k = 0; k < *n; k++) seen |= out[k] == c;
        if (!seen) out[(*n)++] = c;
        if (!comma) return 1;
        s = comma + 1;
    }
    cli_usage_error(cmd, "%s takes none, top-left or bottom-right%s, not '%s'", flag,
                    several ? " (a comma list, or all)" : "", text);
    return 0;
}

int cli_parse_dtype(const char *cmd, const char *flag, const char *text, mxattn_dtype *out) {
    if (!strcmp(text, "bf16")) *out = MXATTN_BF16;
    else if (!strcmp(text, "f16")) *out = MXATTN_F16;
    else { cli_usage_error(cmd, "%s takes bf16 or f16, not '%s'", flag, text); return 0; }
    return 1;
}

/* ---- stdout ----------------------------------------------------------------- */

int cli_finish_stdout(const char *cmd, int rc) {
    /* printf into a full disk or a closed pipe fails only when the buffer is
     * written: at the flush, or at the close for what the flush left. */
    int err = 0, bad = ferror(stdout);
    errno = 0;
    if (fflush(stdout) != 0) { bad = 1; err = errno; }
    errno = 0;
    if (fclose(stdout) != 0) { bad = 1; if (!err) err = errno; }
    if (bad) {
        fprintf(stderr, "mxattn %s: error: cannot write the output: %s\n", cmd, err ? strerror(err) : "write error");
        return rc ? rc : 1;
    }
    return rc;
}

void cli_print_cell(FILE *f, const char *format, double x, int width) {
    char buf[64];
    if (isnan(x)) snprintf(buf, sizeof buf, "-");
    else snprintf(buf, sizeof buf, format, x);
    fprintf(f, "%*s", width, buf);
}

void cli_json_number(FILE *f, double x) {
    if (isfinite(x)) fprintf(f, "%.17g", x);
    else fputs("null", f);
}

void cli_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c == '\n') fputs("\\n", f);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}

int cli_template_ctx(const char *cmd, mxattn_ctx **out) {
    mxattn_options o;
    mxattn_options_init(&o);
    o.no_cache = 1;          /* rendering and compiling only: nothing is read or stored */
    o.tune_policy = "off";   /* and $MXATTN_TUNE is not these commands' business */
    mxattn_status st = mxattn_create(out, &o);
    return st == MXATTN_OK ? 0 : cli_fail_status(cmd, st);
}
