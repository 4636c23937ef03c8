/* The CPU references of the GPU tests, computed one (batch, kv head) group a
 * thread.  Each group is a problem of its own for the references (Q heads of
 * one KV head, their K and V: smooth-K's mean, V's channel scales and the
 * quantizers never look across groups), so splitting changes no bit of the
 * result; it turns the GPU test binaries' wait on the fp64 references, most
 * of their time, into a fraction on the GPU machine's cores. */
#ifndef MXATTN_TESTS_REF_PARALLEL_H
#define MXATTN_TESTS_REF_PARALLEL_H

#include "numerics/numerics.h"

/* mx_ref_attention (cfg NULL) or mx_ref_pipeline_attention (cfg) over all of
 * s's heads, on up to `threads` threads (0: the machine's processors).
 * Inputs and outputs dense [batch][heads][seq][head_dim]; lse may be NULL. */
mxattn_status ref_attention_parallel(const mx_ref_shape *s, const mx_ref_config *cfg, const float *q, const float *k,
                                     const float *v, double *o, double *lse, int threads);

#endif
