/* Small fixtures more than one CPU test builds the same way. */
#ifndef MXATTN_TESTS_FIXTURES_H
#define MXATTN_TESTS_FIXTURES_H

#include "mxattn.h"
#include "cache/cache.h"

/* A context with no database (o.no_cache): tests that must leave no file
 * behind. Fails the test when mxattn_create does. */
mxattn_ctx *cacheless_ctx(void);

/* Zeroes *k and fills in the machine part of a tuning key as an H200 with
 * CUDA 12.4 and mxattn 0.1.0 would have it, family "f16", gpu_name `gpu`;
 * the caller sets the problem part (head_dim, dtypes, layout, buckets). */
void tune_key_h200(mx_tune_key *k, const char *gpu);

/* A tuning result for `config` as the cache tests store it: the median,
 * the default's time and the throughput given, the rest zero. */
mx_tune_result tune_result_of(const char *config, double median_ms, double default_ms, double tops);

/* A measurement of `config` with `status` ("ok", "compile_failed", ...), the
 * median, spread and registers given, the rest zero. */
mx_measurement measurement_of(const char *config, const char *status, double median_ms, double spread,
                              int registers);

#endif
