#include "runtime/launch_plan.h"
#include "runtime/tensor_map.h"
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mx_launch_plan_names(const mx_launch_plan *lp, char *out, size_t cap) {
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < lp->n_steps && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? " " : "", lp->steps[i].name);
}

mxattn_status mx_launch_plan_bind(const mx_device *dev, struct CUmod_st *module, mx_launch_plan *lp) {
    return mx_launch_plan_bind_modules(dev, &module, 1, lp);
}

mxattn_status mx_launch_plan_bind_modules(const mx_device *dev, struct CUmod_st *const *modules, int n_modules,
                                          mx_launch_plan *lp) {
    if (n_modules != 1 && n_modules != lp->n_steps)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "the binary holds %d modules for a plan of %d kernels",
                       n_modules, lp->n_steps);
    for (int i = 0; i < lp->n_steps; i++) {
        mx_launch_step *s = &lp->steps[i];
        mxattn_status st = mx_module_function(dev, modules[n_modules == 1 ? 0 : i], s->name, &s->fn);
        if (st == MXATTN_OK) st = mx_function_set_smem(dev, s->fn, s->smem_bytes);
        if (st != MXATTN_OK) return st;
    }
    return MXATTN_OK;
}

/* A TMA map over a contiguous workspace section. */
static mxattn_status encode_workspace_map(const mx_device *dev, const mx_tmap_request *t, mx_kernel_args *a) {
    mx_tensor_map_desc d = {.base = (const char *)a->ws + a->ws_off[t->ws_section], .elem_bytes = t->elem_bytes,
                            .dim = t->head_dim, .seq = t->rows, .heads = t->heads, .batch = t->batch,
                            .seq_stride = t->head_dim, .head_stride = (int64_t)t->rows * t->head_dim,
                            .batch_stride = (int64_t)t->heads * t->rows * t->head_dim,
                            .box_cols = t->box_cols, .box_rows = t->box_rows, .swizzle_bytes = t->swizzle_bytes};
    mxattn_status st = mx_tensor_map_encode(dev, &d, a->tmap[t->slot]);
    if (st != MXATTN_OK) mx_fail_context(st, "tensor map for workspace section %d", t->ws_section);
    return st;
}

/* A TMA map over one of Q, K, V, O as the args describe it. */
static mxattn_status encode_tensor_map(const mx_device *dev, const mx_tmap_request *t, mx_kernel_args *a) {
    if (t->tensor == 'w') return encode_workspace_map(dev, t, a);
    int is_q = t->tensor == 'q' || t->tensor == 'o';
    mx_tensor_map_desc d = {.dim = t->head_dim, .seq = (uint64_t)(is_q ? a->seq_q : a->seq_k),
                            .heads = (uint64_t)(is_q ? a->heads_q : a->heads_kv), .batch = (uint64_t)a->batch,
                            .box_cols = t->box_cols, .box_rows = t->box_rows, .swizzle_bytes = t->swizzle_bytes};
    switch (t->tensor) {
    case 'q': d.base = a->q; d.seq_stride = a->q_ss; d.head_stride = a->q_sh; d.batch_stride = a->q_sb; break;
    case 'k': d.base = a->k; d.seq_stride = a->k_ss; d.head_stride = a->k_sh; d.batch_stride = a->k_sb; break;
    case 'v': d.base = a->v; d.seq_stride = a->v_ss; d.head_stride = a->v_sh; d.batch_stride = a->v_sb; break;
    default:  d.base = a->o; d.seq_stride = a->o_ss; d.head_stride = a->o_sh; d.batch_stride = a->o_sb; break;
    }
    mxattn_status st = mx_tensor_map_encode(dev, &d, a->tmap[t->slot]);
    if (st != MXATTN_OK) mx_fail_context(st, "tensor map for %c", t->tensor);
    return st;
}

mx_dim3 mx_launch_grid(const mx_device *dev, const mx_launch_step *s) {
    mx_dim3 grid = s->grid;
    if (s->resident > 0) {
        /* More blocks than fit at once would only queue behind the first
         * wave, each looping over the same units: one wave, every SM busy. */
        unsigned wave = (unsigned)(dev->sm_count > 0 ? dev->sm_count : 1) * (unsigned)s->resident;
        if (grid.x > wave) grid.x = wave;
    }
    return grid;
}

/* MXATTN_PDL=0 launches every step after the one before it has finished: the
 * plain stream order, to rule programmatic launches out when chasing a wrong
 * result or to time what they save. */
static int pdl_allowed(void) {
    const char *v = getenv("MXATTN_PDL");
    return !(v && strcmp(v, "0") == 0);
}

mxattn_status mx_launch_plan_run(const mx_device *dev, const mx_launch_plan *lp,
                                 mx_kernel_args *args, struct CUstream_st *stream) {
    memcpy(args->ws_off, lp->ws_off, sizeof args->ws_off);
    for (int i = 0; i < lp->n_tmaps; i++) {
        mxattn_status st = encode_tensor_map(dev, &lp->tmaps[i], args);
        if (st != MXATTN_OK) return st;
    }
    const int pdl = pdl_allowed();
    for (int i = 0; i < lp->n_steps; i++) {
        const mx_launch_step *s = &lp->steps[i];
        mx_dim3 block = {s->threads, 1, 1}, grid = mx_launch_grid(dev, s);
        mxattn_status st = s->pdl && pdl ? mx_launch_dependent(dev, s->fn, grid, block, s->smem_bytes, stream, args)
                                         : mx_launch(dev, s->fn, grid, block, s->smem_bytes, stream, args);
        if (st != MXATTN_OK) return mx_fail_context(st, "launching %s", s->name);
    }
    return MXATTN_OK;
}
