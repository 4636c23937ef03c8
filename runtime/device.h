/* One GPU, through the driver API: what it is, its primary context, and the
 * few operations the planner, the tuner and the tests need (load a cubin, get
 * a kernel, launch it with one argument struct, move memory, time).
 *
 * The primary context is the one the CUDA runtime uses, so a PyTorch process
 * and mxattn share a context and its allocations.  Every helper makes the
 * device's context current for the call and restores the caller's afterwards
 * (cheap when it already is current).
 *
 * Without a driver every function returns MXATTN_ERROR_NO_DRIVER, with no
 * GPU MXATTN_ERROR_NO_DEVICE; both with a sentence in the thread's error.
 * This header needs no CUDA header: driver handles appear as the struct
 * pointers cuda.h typedefs them to (CUcontext is struct CUctx_st *, ...). */
#ifndef MX_RUNTIME_DEVICE_H
#define MX_RUNTIME_DEVICE_H
#include <stddef.h>
#include "mxattn.h"

struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;

/* Filled by mx_device_open; plain data, read its fields freely. */
typedef struct {
    int ordinal;
    int cu_device;                  /* the CUdevice */
    struct CUctx_st *context;       /* retained primary context; NULL when closed */
    char name[256];                 /* "NVIDIA H200" */
    char arch[16];                  /* NVRTC target, "sm_90a"; see mx_arch_for */
    int cc_major, cc_minor;
    int sm_count;
    int smem_per_block_optin;       /* bytes a block may have after opting in */
    int smem_per_sm;
    int regs_per_sm;
    int max_threads_per_sm;
    int l2_bytes;
    size_t memory_bytes;
    int driver_version;             /* 13000 for CUDA 13.0 */
} mx_device;

/* Kernels may use 48 KB of dynamic shared memory without opting in. */
#define MX_SMEM_DEFAULT_LIMIT (48 * 1024)

/* The NVRTC target for a compute capability: the arch-specific ('a') target
 * for the families whose fastest instructions need it (9.0 wgmma and setmaxnreg,
 * 10.0 tcgen05, 12.0 block-scaled mma), else the plain sm_XY.  Pure; no GPU. */
void mx_arch_for(int cc_major, int cc_minor, char *out, size_t out_len);

/* The driver's CUDA version (13000 for 13.0); answers even when cuInit fails
 * (a driver with no usable GPU), so it can say which driver that is. */
mxattn_status mx_driver_version(int *version);
/* Number of GPUs.  Loads the driver on first use. */
mxattn_status mx_device_count(int *count);
/* Reads GPU `ordinal`'s properties without creating a context (cheap: for
 * `mxattn info` and cache keys).  dev->context stays NULL. */
mxattn_status mx_device_query(mx_device *dev, int ordinal);
/* Opens GPU `ordinal`: reads its properties and retains its primary context.
 * On failure *dev is left closed (safe to pass to mx_device_close). */
mxattn_status mx_device_open(mx_device *dev, int ordinal);
/* Releases the primary context.  A zeroed or already-closed device is a no-op. */
void mx_device_close(mx_device *dev);

/* Makes the device's context current on this thread unless it already is;
 * mx_device_leave undoes exactly what enter did.  For a caller that issues
 * many calls in a row; each helper below does this by itself. */
typedef struct { int pushed; } mx_context_guard;
mxattn_status mx_device_enter(const mx_device *dev, mx_context_guard *guard);
mxattn_status mx_device_leave(mx_context_guard *guard);

mxattn_status mx_device_synchronize(const mx_device *dev);

/* --- modules and kernels ------------------------------------------------ */
mxattn_status mx_module_load(const mx_device *dev, const void *cubin, size_t size,
                             struct CUmod_st **out);
/* NULL is a no-op. */
mxattn_status mx_module_unload(const mx_device *dev, struct CUmod_st *module);
mxattn_status mx_module_function(const mx_device *dev, struct CUmod_st *module,
                                 const char *name, struct CUfunc_st **out);

/* What the loaded binary of a kernel uses, as the driver reports it. */
typedef struct {
    int registers;
    int static_smem_bytes;
    int local_bytes;               /* per thread: stack and spills */
    int max_threads_per_block;
} mx_function_info;
mxattn_status mx_function_info_get(const mx_device *dev, struct CUfunc_st *fn,
                                   mx_function_info *out);

/* Allows `bytes` of dynamic shared memory; above 48 KB this opts in, and
 * beyond what the device allows it fails with MXATTN_ERROR_OUT_OF_RESOURCES. */
mxattn_status mx_function_set_smem(const mx_device *dev, struct CUfunc_st *fn, int bytes);

typedef struct { unsigned x, y, z; } mx_dim3;
/* Launches fn with ONE kernel parameter, the struct at `args` passed by value
 * (the kernel is declared `__global__ void k(Args a)`).  Asynchronous;
 * stream NULL is the legacy default stream. */
mxattn_status mx_launch(const mx_device *dev, struct CUfunc_st *fn, mx_dim3 grid, mx_dim3 block,
                        int smem_bytes, struct CUstream_st *stream, const void *args);
/* mx_launch as a programmatic dependent launch (sm_90 and later; elsewhere a
 * plain one): fn may start before the kernel ahead of it in `stream` has
 * finished, once that kernel's blocks have all run griddepcontrol.launch_
 * dependents (or exited); fn's blocks must run griddepcontrol.wait before
 * they touch anything that kernel writes (the templates' prelude says how). */
mxattn_status mx_launch_dependent(const mx_device *dev, struct CUfunc_st *fn, mx_dim3 grid, mx_dim3 block,
                                  int smem_bytes, struct CUstream_st *stream, const void *args);

/* --- memory ----------------------------------------------------------------
 * Device addresses travel as void *, as in the public API. */
mxattn_status mx_mem_alloc(const mx_device *dev, size_t bytes, void **out);
/* mx_mem_alloc, then zeroes the memory and waits for it: a kernel launched
 * afterwards on any stream sees zeros (a workspace whose counters the
 * kernels leave at zero when they finish). */
mxattn_status mx_mem_alloc_zeroed(const mx_device *dev, size_t bytes, void **out);
/* NULL is a no-op. */
mxattn_status mx_mem_free(const mx_device *dev, void *ptr);
mxattn_status mx_memcpy_htod(const mx_device *dev, void *dst, const void *src, size_t bytes);
mxattn_status mx_memcpy_dtoh(const mx_device *dev, void *dst, const void *src, size_t bytes);
mxattn_status mx_memset_d8(const mx_device *dev, void *ptr, unsigned char value, size_t count,
                           struct CUstream_st *stream);
mxattn_status mx_memset_d32(const mx_device *dev, void *ptr, unsigned value, size_t count,
                            struct CUstream_st *stream);

/* Checks that `ptr` is memory this device's kernels can read: allocated by
 * CUDA (device or managed memory) on this device.  A host pointer or another
 * GPU's memory gives MXATTN_ERROR_INVALID_VALUE naming `what` ("q", "k"...). */
mxattn_status mx_pointer_check(const mx_device *dev, const void *ptr, const char *what);

/* --- streams and timing --------------------------------------------------- */
mxattn_status mx_stream_create(const mx_device *dev, struct CUstream_st **out);
mxattn_status mx_stream_destroy(const mx_device *dev, struct CUstream_st *stream); /* NULL: no-op */
mxattn_status mx_stream_synchronize(const mx_device *dev, struct CUstream_st *stream);

/* A pair of events around GPU work on one stream. */
typedef struct {
    const mx_device *dev;
    struct CUevent_st *start, *stop;
} mx_timer;
mxattn_status mx_timer_create(const mx_device *dev, mx_timer *timer);
void mx_timer_destroy(mx_timer *timer);  /* zeroed or destroyed: no-op */
mxattn_status mx_timer_start(mx_timer *timer, struct CUstream_st *stream);
mxattn_status mx_timer_stop(mx_timer *timer, struct CUstream_st *stream);
/* Waits for the stop event; milliseconds between start and stop. */
mxattn_status mx_timer_elapsed_ms(mx_timer *timer, float *ms);
#endif
