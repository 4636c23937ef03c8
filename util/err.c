#include "err.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Long enough for an NVRTC log excerpt plus context. */
#define MX_ERR_CAP 8192
static _Thread_local char g_message[MX_ERR_CAP];

int mx_fail(int s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_message, sizeof g_message, fmt, ap);
    va_end(ap);
    return s;
}

int mx_fail_context(int s, const char *fmt, ...) {
    char prefix[512], old[MX_ERR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, g_message, sizeof old);
    /* Bounded so the two parts fit (prefix 511 + ": " + 7677 + NUL = 8192):
     * as before, the end of an over-long earlier message is what gives way. */
    snprintf(g_message, sizeof g_message, "%.511s: %.7677s", prefix, old);
    return s;
}

void mx_clear_error(void) { g_message[0] = 0; }
const char *mx_error_message(void) { return g_message; }
