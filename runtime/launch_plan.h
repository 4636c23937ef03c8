/* A launch plan: the kernels of one attention call, in order, with their
 * geometry, as the templates computed it for one problem (mxattn.launch_plan
 * in templates/mxattn.lua, read by gen/launch.c, made into this by jit/).  Quantized families run a quantization kernel before
 * the attention kernel, sharing a workspace. */
#ifndef MX_LAUNCH_PLAN_H
#define MX_LAUNCH_PLAN_H
#include <stddef.h>
#include "runtime/device.h"
#include "runtime/kernel_args.h"

#define MX_MAX_LAUNCH_STEPS 4

typedef struct {
    char name[128];
    mx_dim3 grid;
    unsigned threads;
    int smem_bytes;
    /* > 0: a persistent kernel.  grid.x names its work units (y = z = 1);
     * it is launched with at most `resident` blocks per SM, each looping. */
    int resident;
    /* 1: launched as a programmatic dependent of the step before it (a
     * kernel's pdl = true; mx_launch_dependent), unless MXATTN_PDL=0. */
    int pdl;
    struct CUfunc_st *fn;   /* set by mx_launch_plan_bind */
} mx_launch_step;

/* A TMA tensor map the kernels need: which tensor, and the box it reads. */
typedef struct {
    int slot;                /* index into mx_kernel_args.tmap */
    char tensor;             /* 'q', 'k', 'v', 'o', or 'w' (a workspace section) */
    unsigned head_dim;       /* q/k/v/o: the columns; w: the columns of the section */
    /* 'w' only: a contiguous [batch][heads][rows][cols] array of elem_bytes
     * elements at ws + ws_off[ws_section]. */
    int ws_section, elem_bytes;
    unsigned rows, heads, batch;
    unsigned box_cols, box_rows;
    int swizzle_bytes;
} mx_tmap_request;

#define MX_MAX_TMAPS 4

typedef struct {
    size_t workspace_bytes;
    int n_tmaps;
    mx_tmap_request tmaps[MX_MAX_TMAPS];
    uint64_t ws_off[8];
    int n_steps;
    int main_step;           /* the attention kernel: its usage is the plan's (the others are small) */
    mx_launch_step steps[MX_MAX_LAUNCH_STEPS];
} mx_launch_plan;

/* Space-separated kernel names, for the cache record. */
void mx_launch_plan_names(const mx_launch_plan *lp, char *out, size_t cap);
/* Finds each step's function in `module` and raises its shared-memory limit. */
mxattn_status mx_launch_plan_bind(const mx_device *dev, struct CUmod_st *module, mx_launch_plan *lp);
/* The same with a module per step (step i's function in modules[i], the
 * kernels compiled apart: jit/jit.c), or one module for all (n_modules 1). */
mxattn_status mx_launch_plan_bind_modules(const mx_device *dev, struct CUmod_st *const *modules, int n_modules,
                                          mx_launch_plan *lp);
/* The grid step `s` is launched with on `dev` (a persistent kernel's is
 * clamped to its resident blocks). */
mx_dim3 mx_launch_grid(const mx_device *dev, const mx_launch_step *s);
/* Launches every step on `stream` with `args` (ws_off filled from lp, and the
 * TMA tensor maps the plan asks for encoded from args' pointers and strides). */
mxattn_status mx_launch_plan_run(const mx_device *dev, const mx_launch_plan *lp,
                                 mx_kernel_args *args, struct CUstream_st *stream);
#endif
