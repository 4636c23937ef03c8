/* The one argument struct every generated kernel takes by value.  Its layout
 * must match `struct mx_kernel_args` in templates/blocks/prelude.lua field for
 * field: both sides use only 8-byte pointers, int64, int32 and float, in the
 * same order, so the LP64 host and the device lay them out identically
 * (tests/test_kernel_args.c checks the offsets the templates assume). */
#ifndef MX_KERNEL_ARGS_H
#define MX_KERNEL_ARGS_H
#include <stdint.h>

typedef struct {
    const void *q, *k, *v;
    void *o;
    float *lse;
    void *ws;
    int64_t q_sb, q_sh, q_ss;
    int64_t k_sb, k_sh, k_ss;
    int64_t v_sb, v_sh, v_ss;
    int64_t o_sb, o_sh, o_ss;
    int32_t batch, heads_q, heads_kv, seq_q, seq_k;
    int32_t causal_offset;
    float scale_log2;
    float sm_scale;
    int32_t gqa;
    int32_t pad0;
    uint64_t ws_off[8];
    int32_t pad1[2];
    /* TMA tensor maps (CUtensorMap, 128 bytes each, 64-byte aligned), filled
     * at each run for kernels whose launch plan asks for them ("tmap" lines). */
    _Alignas(64) uint64_t tmap[4][16];
} mx_kernel_args;

_Static_assert(sizeof(mx_kernel_args) == 768, "mx_kernel_args layout changed: update prelude.lua too");
#endif
