/* The JIT: from a parameter table to a loaded kernel, through the kernel cache.
 *
 *   render (gen) -> key = sha256(source, arch, NVRTC version, options)
 *   -> cache hit: the stored cubin, no NVRTC  |  miss: NVRTC, then store
 *   -> load the module and bind the launch plan (when a device is given)
 *
 * It sits above runtime/ and cache/ because it joins them; the tuner and the
 * public API's plans both build kernels through it. */
#ifndef MX_TUNER_JIT_H
#define MX_TUNER_JIT_H
#include <pthread.h>
#include "cache/cache.h"
#include "gen/gen.h"
#include "runtime/device.h"
#include "runtime/launch_plan.h"

typedef struct {
    mx_gen *gen;
    pthread_mutex_t *gen_lock;  /* a lua_State serves one thread at a time */
    mx_cache *cache;            /* NULL: compile every time, store nothing */
    const mx_device *dev;       /* NULL: compile only */
    char arch[16];
} mx_jit_env;

typedef struct {
    char params[1024];          /* canonical source parameters */
    char knobs[256];            /* canonical knobs alone: the "config" */
    char key[65];               /* kernel cache key */
    mx_launch_plan launch;      /* for the sizes given */
    struct CUmod_st *module;    /* NULL when compile-only */
    int from_cache;
    double compile_ms;          /* NVRTC time (0 on a cache hit) */
    int registers, shared_bytes, spill_bytes;
} mx_jit_kernel;

/* NVRTC's version as an integer, major*1000 + minor*10 (13000); 0 if absent. */
int mx_jit_nvrtc_version(void);

/* Renders `params` ("key=value ...", knobs optional: defaults fill the rest),
 * plans the launch for `sizes` ("batch=.. heads_q=.. ..."), and gets the
 * binary from the cache or NVRTC.  With env->dev it loads the module. */
mxattn_status mx_jit_build(const mx_jit_env *env, const char *params, const char *sizes,
                           mx_jit_kernel *out);
void mx_jit_release(const mx_jit_env *env, mx_jit_kernel *k);

/* The problem text the templates choose a default by (default_knobs,
 * candidates): `sizes`, plus the GPU's SM count when env->dev is open. */
void mx_jit_problem_text(const mx_jit_env *env, const char *sizes, char *out, size_t cap);

/* Calls a template function under the generator lock. */
mxattn_status mx_jit_gen_call(const mx_jit_env *env, const char *fn, const char *a1, const char *a2,
                              char **out);
#endif
