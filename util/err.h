/* Error reporting shared by every layer.  One message per thread, like errno
 * with a sentence attached: the layer that detects a failure writes it, the
 * layers above pass the status up unchanged (or prefix context), and the public
 * API returns it.  Nothing here prints. */
#ifndef MX_ERR_H
#define MX_ERR_H

/* A status is an int here: util is the bottom layer and includes nothing of
 * mxattn's, not even the public header whose mxattn_status values the layers
 * above pass (MXATTN_OK is 0, every failure non-zero).  C converts between
 * the two implicitly, so `return mx_fail(MXATTN_ERROR_..., ...)` still reads
 * as before in a function that returns mxattn_status. */

/* Sets the thread's message and returns `s`, so `return mx_fail(...)` reads naturally. */
int mx_fail(int s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends "context: " to the current message and returns `s`. */
int mx_fail_context(int s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mx_clear_error(void);
const char *mx_error_message(void);

/* Propagate a failing status to the caller's single cleanup path. */
#define MX_TRY(expr)                                                     \
    do { int mx_try_s_ = (int)(expr);                                    \
         if (mx_try_s_ != 0) { st = mx_try_s_; goto fail; } } while (0)
#endif
