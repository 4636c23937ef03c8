#include "cli.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void vreport(const char *cmd, const char *fmt, va_list ap) {
    fprintf(stderr, "mxattn %s: error: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    fprintf(stderr, "(see 'mxattn %s --help')\n", cmd);
    return 2;
}

int cli_fail(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    return 1;
}

int cli_fail_status(const char *cmd, mxattn_status s) {
    const char *msg = mxattn_last_error();
    return cli_fail(cmd, "%s%s%s", mxattn_status_string(s), *msg ? ": " : "", msg);
}

int cli_parse_long(const char *cmd, const char *flag, const char *text, long min, long max, long *out) {
    char *end;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || !*text || *end || errno) {
        cli_usage_error(cmd, "%s expects an integer, got '%s'", flag, text ? text : "");
        return 0;
    }
    if (v < min || v > max) {
        cli_usage_error(cmd, "%s must be in [%ld, %ld], got %ld", flag, min, max, v);
        return 0;
    }
    *out = v;
    return 1;
}

int cli_parse_double(const char *cmd, const char *flag, const char *text, double min, double max, double *out) {
    char *end;
    errno = 0;
    double v = text ? strtod(text, &end) : 0;
    if (!text || !*text || *end || errno || isnan(v)) {
        cli_usage_error(cmd, "%s expects a number, got '%s'", flag, text ? text : "");
        return 0;
    }
    if (v < min || v > max) {
        cli_usage_error(cmd, "%s must be in [%g, %g], got %g", flag, min, max, v);
        return 0;
    }
    *out = v;
    return 1;
}

FILE *cli_open_output(const char *cmd, const char *path) {
    if (strcmp(path, "-") == 0) return stdout;
    FILE *f = fopen(path, "w");
    if (!f) cli_fail(cmd, "cannot write '%s': %s", path, strerror(errno));
    return f;
}
