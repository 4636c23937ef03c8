/* Configurations against the problem and the parameter space: the caller's
 * explicit one, and a tuned or imported database row.  The grammar and the
 * legal values are the templates' (templates/space.lua S.parse, templates/
 * mxattn.lua check_config); this layer says which problem to check against. */
#ifndef MX_API_CONFIG_CHECK_H
#define MX_API_CONFIG_CHECK_H
#include <stddef.h>
#include "cache/cache.h"
#include "mxattn.h"

/* The shortest median a tuning row may claim: no attention kernel launch
 * finishes in under 0.1 us, and a row claiming 1e-300 ms would win every
 * merge. */
#define MX_TUNE_MIN_MEDIAN_MS 1e-4

/* Checks `config` ("block_m=64 warps=4 ...") in the strict grammar: knobs
 * only, each once, each with a legal value, at most 255 characters.  With
 * `shape` (mx_problem_shape_params' text) the knobs must also be legal for
 * that problem.  INVALID_VALUE names the offending token. */
mxattn_status mx_api_check_config(mxattn_ctx *ctx, const char *config, const char *shape);

/* A tuning row for `key`, checked as cache/cache.h's mx_tune_row_check asks
 * (`arg` is the mxattn_ctx): its config is legal for the key's family,
 * head_dim, causal, dtypes, gqa and layout on the key's architecture, and its
 * times are finite and plausible (median_ms > MX_TUNE_MIN_MEDIAN_MS).
 * Returns 1 when the row is acceptable, else 0 with the reason in `why`.
 * Leaves the thread's error message as it found it. */
int mx_api_check_tune_row(void *arg, const mx_tune_key *key, const mx_tune_result *r, char *why, size_t why_cap);

/* The same for a row about to serve a resolved problem (its shape text with
 * lse, align, v_terms, ..., which the key does not hold): plan time. */
int mx_api_check_tuned_config(mxattn_ctx *ctx, const char *shape, const mx_tune_result *r, char *why, size_t why_cap);
#endif
