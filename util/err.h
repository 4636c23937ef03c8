/* Error reporting shared by every layer.  One message per thread, like errno
 * with a sentence attached: the layer that detects a failure writes it, the
 * layers above pass the status up unchanged (or prefix context), and the public
 * API returns it.  Nothing here prints. */
#ifndef MX_ERR_H
#define MX_ERR_H
#include "mxattn.h"

/* Sets the thread's message and returns `s`, so `return mx_fail(...)` reads naturally. */
mxattn_status mx_fail(mxattn_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Prepends "context: " to the current message and returns `s`. */
mxattn_status mx_fail_context(mxattn_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mx_clear_error(void);
const char *mx_error_message(void);

/* Propagate a failing status to the caller's single cleanup path. */
#define MX_TRY(expr)                                                     \
    do { mxattn_status mx_try_s_ = (expr);                               \
         if (mx_try_s_ != MXATTN_OK) { st = mx_try_s_; goto fail; } } while (0)
#endif
