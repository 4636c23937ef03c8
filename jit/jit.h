/* The JIT: from a parameter table to a loaded kernel, through the kernel cache.
 *
 *   render (gen) -> key = sha256(source, arch, NVRTC version, options)
 *   -> cache hit: the stored cubin, no NVRTC  |  miss: NVRTC, then store
 *   -> load the module and bind the launch plan (when a device is given)
 *
 * Its own layer, above gen/, runtime/ and cache/ because it joins them, and
 * below tuner/ and api/: the tuner's candidates and the public API's plans
 * both build kernels through it. */
#ifndef MX_JIT_JIT_H
#define MX_JIT_JIT_H
#include <pthread.h>
#include "cache/cache.h"
#include "gen/gen.h"
#include "runtime/device.h"
#include "runtime/launch_plan.h"
#include "runtime/nvrtc.h"

typedef struct {
    mx_gen *gen;
    pthread_mutex_t *gen_lock;  /* a lua_State serves one thread at a time */
    mx_cache *cache;            /* NULL: compile every time, store nothing */
    const mx_device *dev;       /* NULL: compile only */
    char arch[16];
    /* 1: a plan's kernels compile in one program, one after another, rather
     * than apart on threads of their own: for the tuner's compile pool, whose
     * threads already keep every core busy (apart, its threads and NVRTC's
     * memory would multiply by the kernels a module has). */
    int whole_module;
} mx_jit_env;

typedef struct {
    char params[1024];          /* canonical source parameters */
    char knobs[256];            /* canonical knobs alone: the "config" */
    char key[65];               /* kernel cache key */
    mx_launch_plan launch;      /* for the sizes given */
    /* Loaded when a device is given: one module, or one per step (the image
     * of kernels compiled apart, mx_jit_compile).  None when compile-only. */
    struct CUmod_st *modules[MX_MAX_LAUNCH_STEPS];
    int n_modules;
    int from_cache;
    /* 1: the binary is in the cache (found there, or stored now).  0 with
     * store_status MXATTN_OK: no cache was given.  Otherwise the write failed
     * (disk full, read-only, busy): the kernel still works, the next start
     * compiles it again, and store_error says why. */
    int stored;
    mxattn_status store_status;
    char store_error[256];
    double compile_ms;          /* NVRTC time (0 on a cache hit) */
    int registers, shared_bytes, spill_bytes;
} mx_jit_kernel;

/* A module's binary: one cubin when the module compiled as one program (one
 * kernel, or env->whole_module), else a container of one cubin per kernel in
 * launch order ("MXKI", a count, then each image's offset and size, images
 * 16-byte aligned).  Kernels compiled apart run in parallel (mx_jit_compile);
 * the cache stores either form. */
typedef struct {
    unsigned char *data;        /* malloc'd */
    size_t size;
    double compile_ms;          /* wall time of the whole compile */
    mx_ptxas_usage usage;       /* of the plan's last (attention) kernel */
} mx_jit_image;

/* Compiles `source` for `arch`: as one NVRTC program when the plan has one
 * kernel or `apart` is 0; else one program per kernel (MX_COMPILE_ONE and the
 * kernel's MX_COMPILE_<name>: templates/mxattn.lua's guards), each on its own
 * thread, so a cold start waits for the slowest kernel rather than for their
 * sum.  The first kernel's failure (in launch order) is the one reported. */
mxattn_status mx_jit_compile(const char *source, const char *arch, const mx_launch_plan *lp, int apart,
                             mx_jit_image *out);
void mx_jit_image_free(mx_jit_image *img);
/* The cubins an image holds: the image itself when it is one cubin; else the
 * container's parts, checked to lie within it.  parts[i] points into image. */
mxattn_status mx_jit_image_parts(const void *image, size_t size, const unsigned char **parts,
                                 size_t *sizes, int max_parts, int *n_parts);
/* A container of n cubins (for tests and mx_jit_compile). */
mxattn_status mx_jit_image_pack(const unsigned char *const *parts, const size_t *sizes, int n,
                                unsigned char **out, size_t *out_size);

/* NVRTC's version as an integer, major*1000 + minor*10 (13000); 0 if absent. */
int mx_jit_nvrtc_version(void);

/* The runtime's launch plan from the templates' (gen/gen.h), no function
 * bound yet: the two are the same data, runtime/ and gen/ side by side. */
void mx_jit_plan_from_gen(const mx_gen_launch *in, mx_launch_plan *out);
/* The launch plan of canonical `params` for `sizes` ("batch=.. heads_q=.."). */
mxattn_status mx_jit_launch_plan(mx_gen *g, const char *params, const char *sizes, mx_launch_plan *out);

/* Renders `params` ("key=value ...", knobs optional: defaults fill the rest),
 * plans the launch for `sizes` ("batch=.. heads_q=.. ..."), and gets the
 * binary from the cache or NVRTC.  With env->dev it loads the module. */
mxattn_status mx_jit_build(const mx_jit_env *env, const char *params, const char *sizes,
                           mx_jit_kernel *out);
void mx_jit_release(const mx_jit_env *env, mx_jit_kernel *k);

/* Stores a compiled binary in env->cache (when there is one) and records in
 * k whether it was stored and why not.  The thread's error is left clear:
 * a failed write is the kernel's note, not the build's failure. */
void mx_jit_store(const mx_jit_env *env, const mx_kernel_record *rec, mx_jit_kernel *k);

/* The problem text the templates choose a default by (default_knobs,
 * candidates): `sizes`, plus the GPU's SM count when env->dev is open. */
void mx_jit_problem_text(const mx_jit_env *env, const char *sizes, char *out, size_t cap);

/* Calls a template function under the generator lock. */
mxattn_status mx_jit_gen_call(const mx_jit_env *env, const char *fn, const char *a1, const char *a2,
                              char **out);
#endif
