#ifndef MX_CLOCK_H
#define MX_CLOCK_H
#include <time.h>
/* Monotonic wall time in milliseconds, for compile and plan timings. */
static inline double mx_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
#endif
