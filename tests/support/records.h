/* Cache records (tuning results, measurements, kernels) as the cache tests
 * and the fuzz seeds store them.  Free of cmocka, so that the fuzz targets
 * can link it too. */
#ifndef MXATTN_TESTS_RECORDS_H
#define MXATTN_TESTS_RECORDS_H

#include <stddef.h>
#include "cache/cache.h"

/* Zeroes *k and names an f16 problem (family, dtype and out_dtype f16,
 * layout bhnd) of mxattn 0.1.0 on `gpu`; the rest is the caller's. */
void tune_key_f16(mx_tune_key *k, const char *gpu);

/* A tuning result for `config`: the median, the default's time and the
 * throughput given, the rest zero. */
mx_tune_result tune_result_of(const char *config, double median_ms, double default_ms, double tops);

/* A measurement of `config` with `status` ("ok", "compile_failed", ...), the
 * median, spread and registers given, the rest zero. */
mx_measurement measurement_of(const char *config, const char *status, double median_ms, double spread,
                              int registers);

/* Kernel number `which` of a source database: blob[n] filled from `which`,
 * keyed by the hash of "kernel <which>", sm_90a, named mxattn_f16_fwd; the
 * record points into blob, which must outlive it. */
mx_kernel_record kernel_record_of(unsigned char *blob, size_t n, int which);

#endif
