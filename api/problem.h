/* The public problem struct, checked and turned into what the layers below
 * speak: template parameters ("family=f16 head_dim=80 ...") and launch sizes. */
#ifndef MX_API_PROBLEM_H
#define MX_API_PROBLEM_H
#include <stddef.h>
#include <stdint.h>
#include "mxattn.h"

/* Upper bounds on sizes (include/mxattn.h documents them).  2^24 tokens is
 * longer than any context a model ships (10M, Llama 4 Scout) and keeps
 * seq * heads * head_dim * batch products far inside int64; a stride of 2^40
 * elements puts rows 2 TiB apart, 14x an H200's memory.  A tensor's extent
 * (up to 65535 * 2^40 * 2 for each of batch and heads, plus 2^24 * 2^40 * 2
 * for rows) could still pass 2^63 bytes, so mx_problem_resolve computes it
 * with overflow checks and refuses a tensor that does. */
#define MX_MAX_SEQ (1 << 24)
#define MX_MAX_STRIDE ((int64_t)1 << 40)

/* A checked problem with every default resolved. */
typedef struct {
    mxattn_problem p;       /* strides filled in, sm_scale resolved */
    char family[32];
    int align;              /* elements per vector access allowed by head_dim and strides */
    int64_t bytes[4];       /* q, k, v, o: bytes from the first element to past the last */
} mx_problem;

/* Checks everything that can be checked without the GPU or pointers, and
 * resolves defaults.  INVALID_VALUE / NULL_POINTER name the offending field. */
mxattn_status mx_problem_resolve(const mxattn_problem *in, mx_problem *out);

/* "family=.. arch=.. head_dim=.. dtype=.. out_dtype=.. causal=.. lse=.. align=..
 *  p_scale=.. smooth_k=.. gqa=.. layout=.." for the templates. */
void mx_problem_shape_params(const mx_problem *pr, const char *arch, char *out, size_t cap);
/* "batch=.. heads_q=.. heads_kv=.. seq_q=.. seq_k=.." for the launch plan. */
void mx_problem_sizes(const mx_problem *pr, char *out, size_t cap);

/* Checks device pointers against the plan: alignment, and that O overlaps
 * none of Q, K, V. */
mxattn_status mx_problem_check_pointers(const mx_problem *pr, const void *q, const void *k,
                                        const void *v, const void *o, const float *lse);
const char *mx_dtype_name(mxattn_dtype d);
#endif
