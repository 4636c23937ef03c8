/* Small fixtures more than one CPU test builds the same way. */
#ifndef MXATTN_TESTS_FIXTURES_H
#define MXATTN_TESTS_FIXTURES_H

#include "mxattn.h"
#include "cache/cache.h"
#include "records.h"

/* A context with no database (o.no_cache): tests that must leave no file
 * behind. Fails the test when mxattn_create does. */
mxattn_ctx *cacheless_ctx(void);
/* cmocka group fixtures for a file whose tests share one cacheless_ctx(),
 * which each test reads as *state: one set-up instead of one a file. */
int cacheless_ctx_setup(void **state);
int ctx_teardown(void **state);
/* A context on the database `db` (NULL: none, o.no_cache) with tuning off, so
 * that a plan without a config builds the stored row or the default,
 * whatever $MXATTN_TUNE says.  Fails the test when mxattn_create does. */
mxattn_ctx *untuned_ctx(const char *db);

/* Zeroes *k and fills in the machine part of a tuning key as an H200 with
 * CUDA 12.4 and mxattn 0.1.0 would have it, family "f16", gpu_name `gpu`;
 * the caller sets the problem part (head_dim, dtypes, layout, buckets). */
void tune_key_h200(mx_tune_key *k, const char *gpu);

/* Asserts the tuning-row counts of an import or merge report, of the
 * library's (mxattn_db_import_report) or the cache's (mx_import_report):
 * each expected count that is not -1. */
void expect_row_counts(long read, long taken, long kept, long refused, long want_read, long want_taken,
                       long want_kept, long want_refused);
#define EXPECT_ROW_COUNTS(rep, read, taken, kept, refused)                                                  \
    expect_row_counts((rep).tune_rows_read, (rep).tune_rows_taken, (rep).tune_rows_kept,                     \
                      (rep).tune_rows_refused, read, taken, kept, refused)

#endif
