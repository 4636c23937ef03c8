/* One GPU through the driver API; see device.h.
 *
 * Every public function has the same shape: check arguments, get the driver
 * table (which is where NO_DRIVER / NO_DEVICE come from), make the device's
 * context current, make the driver calls through MX_CU_CHECK, and leave
 * through the single `fail:` path, which restores the caller's context. */
#include "runtime/device.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "runtime/cuda.h"

#define REQUIRE(cond, what)                                                       \
    do { if (!(cond)) return mx_fail(MXATTN_ERROR_NULL_POINTER, "%s: %s is NULL", \
                                     __func__, what); } while (0)

static CUdeviceptr devptr(const void *p) { return (CUdeviceptr)(uintptr_t)p; }

/* Restores the caller's context and returns the first failure of the call. */
static mxattn_status finish(mx_context_guard *guard, mxattn_status st) {
    mxattn_status left = mx_device_leave(guard);
    return st != MXATTN_OK ? st : left;
}

void mx_arch_for(int cc_major, int cc_minor, char *out, size_t out_len) {
    int arch_specific = (cc_major == 9 && cc_minor == 0) || (cc_major == 10 && cc_minor == 0) ||
                        (cc_major == 12 && cc_minor == 0);
    snprintf(out, out_len, "sm_%d%d%s", cc_major, cc_minor, arch_specific ? "a" : "");
}

mxattn_status mx_driver_version(int *version) { return mx_cuda_driver_version(version); }

mxattn_status mx_device_count(int *count) {
    REQUIRE(count, "count");
    const mx_cuda_api *cu;
    mxattn_status st = mx_cuda_get(&cu);
    if (st != MXATTN_OK) return st;
    MX_CU_CHECK(cu->DeviceGetCount(count));
fail:
    return st;
}

static mxattn_status read_attribute(const mx_cuda_api *cu, CUdevice device,
                                    CUdevice_attribute attribute, int *out) {
    mxattn_status st = MXATTN_OK;
    MX_CU_CHECK(cu->DeviceGetAttribute(out, attribute, device));
fail:
    return st;
}

static mxattn_status read_properties(const mx_cuda_api *cu, mx_device *dev) {
    mxattn_status st = MXATTN_OK;
    CUdevice d = dev->cu_device;
    MX_CU_CHECK(cu->DeviceGetName(dev->name, (int)sizeof dev->name, d));
    MX_TRY(read_attribute(cu, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &dev->cc_major));
    MX_TRY(read_attribute(cu, d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &dev->cc_minor));
    MX_TRY(read_attribute(cu, d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &dev->sm_count));
    MX_TRY(read_attribute(cu, d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                          &dev->smem_per_block_optin));
    MX_TRY(read_attribute(cu, d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                          &dev->smem_per_sm));
    MX_TRY(read_attribute(cu, d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
                          &dev->regs_per_sm));
    MX_TRY(read_attribute(cu, d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
                          &dev->max_threads_per_sm));
    MX_TRY(read_attribute(cu, d, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &dev->l2_bytes));
    MX_CU_CHECK(cu->DeviceTotalMem(&dev->memory_bytes, d));
    MX_CU_CHECK(cu->DriverGetVersion(&dev->driver_version));
    mx_arch_for(dev->cc_major, dev->cc_minor, dev->arch, sizeof dev->arch);
fail:
    return st;
}

mxattn_status mx_device_query(mx_device *dev, int ordinal) {
    REQUIRE(dev, "dev");
    memset(dev, 0, sizeof *dev);
    const mx_cuda_api *cu;
    mxattn_status st = mx_cuda_get(&cu);
    if (st != MXATTN_OK) return st;
    int count = 0;
    MX_CU_CHECK(cu->DeviceGetCount(&count));
    if (ordinal < 0 || ordinal >= count) {
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "GPU %d does not exist: this machine has %d GPU%s",
                       ordinal, count, count == 1 ? "" : "s");
    }
    dev->ordinal = ordinal;
    CUdevice device;
    MX_CU_CHECK(cu->DeviceGet(&device, ordinal));
    dev->cu_device = device;
    MX_TRY(read_properties(cu, dev));
    return MXATTN_OK;
fail:
    memset(dev, 0, sizeof *dev);
    return mx_fail_context(st, "reading GPU %d", ordinal);
}

mxattn_status mx_device_open(mx_device *dev, int ordinal) {
    mxattn_status st = mx_device_query(dev, ordinal);
    if (st != MXATTN_OK) return st;
    const mx_cuda_api *cu;
    MX_TRY(mx_cuda_get(&cu));
    CUcontext context = NULL;
    MX_CU_CHECK(cu->DevicePrimaryCtxRetain(&context, dev->cu_device));
    dev->context = context;
    return MXATTN_OK;
fail:
    memset(dev, 0, sizeof *dev);
    return mx_fail_context(st, "opening GPU %d", ordinal);
}

void mx_device_close(mx_device *dev) {
    if (!dev || !dev->context) return;
    const mx_cuda_api *cu;
    /* A release that fails leaves nothing for the caller to do: the driver
     * frees the primary context when the process ends either way. */
    if (mx_cuda_get(&cu) == MXATTN_OK) (void)cu->DevicePrimaryCtxRelease(dev->cu_device);
    memset(dev, 0, sizeof *dev);
}

mxattn_status mx_device_enter(const mx_device *dev, mx_context_guard *guard) {
    REQUIRE(dev, "dev");
    REQUIRE(guard, "guard");
    guard->pushed = 0;
    const mx_cuda_api *cu;
    mxattn_status st = mx_cuda_get(&cu);
    if (st != MXATTN_OK) return st;
    if (!dev->context)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "GPU %d is not open (mx_device_open)", dev->ordinal);
    CUcontext current = NULL;
    MX_CU_CHECK(cu->CtxGetCurrent(&current));
    if (current == dev->context) return MXATTN_OK;
    MX_CU_CHECK(cu->CtxPushCurrent(dev->context));
    guard->pushed = 1;
fail:
    return st;
}

mxattn_status mx_device_leave(mx_context_guard *guard) {
    if (!guard || !guard->pushed) return MXATTN_OK;
    const mx_cuda_api *cu;
    mxattn_status st = mx_cuda_get(&cu);
    if (st != MXATTN_OK) return st;
    guard->pushed = 0;
    CUcontext popped;
    MX_CU_CHECK(cu->CtxPopCurrent(&popped));
fail:
    return st;
}

/* The prologue every helper shares: driver table, then the device's context. */
#define ENTER(dev)                                       \
    const mx_cuda_api *cu = NULL;                        \
    mx_context_guard guard = {0};                        \
    mxattn_status st = mx_cuda_get(&cu);                 \
    if (st != MXATTN_OK) return st;                      \
    MX_TRY(mx_device_enter(dev, &guard))

mxattn_status mx_device_synchronize(const mx_device *dev) {
    REQUIRE(dev, "dev");
    ENTER(dev);
    MX_CU_CHECK(cu->CtxSynchronize());
fail:
    return finish(&guard, st);
}

/* --- modules and kernels ------------------------------------------------ */

mxattn_status mx_module_load(const mx_device *dev, const void *cubin, size_t size, CUmodule *out) {
    REQUIRE(dev, "dev");
    REQUIRE(cubin, "cubin");
    REQUIRE(out, "out");
    ENTER(dev);
    if (size < 4 || memcmp(cubin, "\x7f" "ELF", 4) != 0) {
        st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "the binary to load is not a cubin (no ELF header)");
        goto fail;
    }
    MX_CU_CHECK(cu->ModuleLoadData(out, cubin));
fail:
    return finish(&guard, st);
}

mxattn_status mx_module_unload(const mx_device *dev, CUmodule module) {
    REQUIRE(dev, "dev");
    if (!module) return MXATTN_OK;
    ENTER(dev);
    MX_CU_CHECK(cu->ModuleUnload(module));
fail:
    return finish(&guard, st);
}

mxattn_status mx_module_function(const mx_device *dev, CUmodule module, const char *name,
                                 CUfunction *out) {
    REQUIRE(dev, "dev");
    REQUIRE(module, "module");
    REQUIRE(name, "name");
    REQUIRE(out, "out");
    ENTER(dev);
    CUresult r = cu->ModuleGetFunction(out, module, name);
    if (r == CUDA_ERROR_NOT_FOUND) {
        st = mx_fail(MXATTN_ERROR_NOT_FOUND, "the module has no kernel named '%s' "
                     "(is it declared extern \"C\"?)", name);
        goto fail;
    }
    MX_CU_CHECK(r);
fail:
    return finish(&guard, st);
}

static mxattn_status function_attribute(const mx_cuda_api *cu, CUfunction fn,
                                        CUfunction_attribute attribute, int *out) {
    mxattn_status st = MXATTN_OK;
    MX_CU_CHECK(cu->FuncGetAttribute(out, attribute, fn));
fail:
    return st;
}

mxattn_status mx_function_info_get(const mx_device *dev, CUfunction fn, mx_function_info *out) {
    REQUIRE(dev, "dev");
    REQUIRE(fn, "fn");
    REQUIRE(out, "out");
    ENTER(dev);
    MX_TRY(function_attribute(cu, fn, CU_FUNC_ATTRIBUTE_NUM_REGS, &out->registers));
    MX_TRY(function_attribute(cu, fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &out->static_smem_bytes));
    MX_TRY(function_attribute(cu, fn, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, &out->local_bytes));
    MX_TRY(function_attribute(cu, fn, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                              &out->max_threads_per_block));
fail:
    return finish(&guard, st);
}

mxattn_status mx_function_set_smem(const mx_device *dev, CUfunction fn, int bytes) {
    REQUIRE(dev, "dev");
    REQUIRE(fn, "fn");
    ENTER(dev);
    int static_bytes = 0;
    MX_TRY(function_attribute(cu, fn, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &static_bytes));
    if (bytes < 0 || static_bytes + bytes > dev->smem_per_block_optin) {
        st = mx_fail(MXATTN_ERROR_OUT_OF_RESOURCES,
                     "the kernel needs %d bytes of dynamic shared memory (+%d static); "
                     "%s allows %d per block", bytes, static_bytes, dev->name,
                     dev->smem_per_block_optin);
        goto fail;
    }
    /* Below 48 KB in total no opt-in is needed, and asking for it costs nothing
     * but a driver call per plan. */
    if (static_bytes + bytes > MX_SMEM_DEFAULT_LIMIT)
        MX_CU_CHECK(cu->FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes));
fail:
    return finish(&guard, st);
}

/* Both launches: `dependent` adds programmatic stream serialization (see
 * mx_launch_dependent).  `caller` names the public function in the message
 * of a NULL argument. */
static mxattn_status launch(const char *caller, const mx_device *dev, CUfunction fn, mx_dim3 grid, mx_dim3 block,
                            int smem_bytes, CUstream stream, const void *args, int dependent) {
    if (!dev || !fn || !args)
        return mx_fail(MXATTN_ERROR_NULL_POINTER, "%s: %s is NULL", caller, !dev ? "dev" : !fn ? "fn" : "args");
    ENTER(dev);
    /* The kernel has one parameter, a struct; the driver copies it by value
     * from the address in params[0]. */
    void *params[] = {(void *)args};
    if (!dependent) {
        MX_CU_CHECK(cu->LaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                     (unsigned)smem_bytes, stream, params, NULL));
    } else {
        CUlaunchAttribute attr;
        memset(&attr, 0, sizeof attr);
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig cfg = {.gridDimX = grid.x, .gridDimY = grid.y, .gridDimZ = grid.z,
                              .blockDimX = block.x, .blockDimY = block.y, .blockDimZ = block.z,
                              .sharedMemBytes = (unsigned)smem_bytes, .hStream = stream, .attrs = &attr, .numAttrs = 1};
        MX_CU_CHECK(cu->LaunchKernelEx(&cfg, fn, params, NULL));
    }
fail:
    return finish(&guard, st);
}

mxattn_status mx_launch(const mx_device *dev, CUfunction fn, mx_dim3 grid, mx_dim3 block,
                        int smem_bytes, CUstream stream, const void *args) {
    return launch(__func__, dev, fn, grid, block, smem_bytes, stream, args, 0);
}

mxattn_status mx_launch_dependent(const mx_device *dev, CUfunction fn, mx_dim3 grid, mx_dim3 block,
                                  int smem_bytes, CUstream stream, const void *args) {
    return launch(__func__, dev, fn, grid, block, smem_bytes, stream, args, dev && dev->cc_major >= 9);
}

/* --- memory --------------------------------------------------------------- */

mxattn_status mx_mem_alloc(const mx_device *dev, size_t bytes, void **out) {
    REQUIRE(dev, "dev");
    REQUIRE(out, "out");
    ENTER(dev);
    CUdeviceptr p = 0;
    MX_CU_CHECK(cu->MemAlloc(&p, bytes));
    *out = (void *)(uintptr_t)p;
fail:
    return finish(&guard, st);
}

mxattn_status mx_mem_alloc_zeroed(const mx_device *dev, size_t bytes, void **out) {
    mxattn_status st = mx_mem_alloc(dev, bytes, out);
    if (st == MXATTN_OK) st = mx_memset_d8(dev, *out, 0, bytes, NULL);
    if (st == MXATTN_OK) st = mx_stream_synchronize(dev, NULL);
    if (st != MXATTN_OK && *out) {
        mx_mem_free(dev, *out);
        *out = NULL;
    }
    return st;
}

mxattn_status mx_mem_free(const mx_device *dev, void *ptr) {
    REQUIRE(dev, "dev");
    if (!ptr) return MXATTN_OK;
    ENTER(dev);
    MX_CU_CHECK(cu->MemFree(devptr(ptr)));
fail:
    return finish(&guard, st);
}

mxattn_status mx_memcpy_htod(const mx_device *dev, void *dst, const void *src, size_t bytes) {
    REQUIRE(dev, "dev");
    REQUIRE(dst, "dst");
    REQUIRE(src, "src");
    ENTER(dev);
    MX_CU_CHECK(cu->MemcpyHtoD(devptr(dst), src, bytes));
fail:
    return finish(&guard, st);
}

mxattn_status mx_memcpy_dtoh(const mx_device *dev, void *dst, const void *src, size_t bytes) {
    REQUIRE(dev, "dev");
    REQUIRE(dst, "dst");
    REQUIRE(src, "src");
    ENTER(dev);
    MX_CU_CHECK(cu->MemcpyDtoH(dst, devptr(src), bytes));
fail:
    return finish(&guard, st);
}

mxattn_status mx_memset_d8(const mx_device *dev, void *ptr, unsigned char value, size_t count,
                           CUstream stream) {
    REQUIRE(dev, "dev");
    REQUIRE(ptr, "ptr");
    ENTER(dev);
    MX_CU_CHECK(cu->MemsetD8Async(devptr(ptr), value, count, stream));
fail:
    return finish(&guard, st);
}

mxattn_status mx_memset_d32(const mx_device *dev, void *ptr, unsigned value, size_t count,
                            CUstream stream) {
    REQUIRE(dev, "dev");
    REQUIRE(ptr, "ptr");
    ENTER(dev);
    if ((uintptr_t)ptr % 4 != 0) {
        st = mx_fail(MXATTN_ERROR_MISALIGNED, "mx_memset_d32: %p is not 4-byte aligned", ptr);
        goto fail;
    }
    MX_CU_CHECK(cu->MemsetD32Async(devptr(ptr), value, count, stream));
fail:
    return finish(&guard, st);
}

mxattn_status mx_pointer_check(const mx_device *dev, const void *ptr, const char *what) {
    REQUIRE(dev, "dev");
    if (!what) what = "pointer";
    if (!ptr) return mx_fail(MXATTN_ERROR_NULL_POINTER, "%s is NULL", what);
    ENTER(dev);
    /* The driver answers only for memory it knows of; for anything else
     * (malloc'ed host memory, a stale or made-up address) it says
     * CUDA_ERROR_INVALID_VALUE, which here is the caller's mistake. */
    unsigned memory_type = 0, managed = 0;
    CUresult r = cu->PointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, devptr(ptr));
    if (r == CUDA_ERROR_INVALID_VALUE) {
        st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s (%p) is not CUDA memory: "
                     "pass a device pointer on GPU %d", what, ptr, dev->ordinal);
        goto fail;
    }
    MX_CU_CHECK(r);
    MX_CU_CHECK(cu->PointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, devptr(ptr)));
    if (managed) goto fail;  /* managed memory is readable from every GPU */
    if (memory_type != CU_MEMORYTYPE_DEVICE) {
        st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s (%p) is host memory; "
                     "pass a device pointer on GPU %d", what, ptr, dev->ordinal);
        goto fail;
    }
    /* Some allocators' memory (virtual-memory mappings, as PyTorch's
     * expandable segments make) may not answer every attribute; where the
     * device cannot be told, the launch itself is the judge. */
    int ordinal = -1;
    r = cu->PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, devptr(ptr));
    if (r == CUDA_SUCCESS && ordinal != dev->ordinal)
        st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s (%p) is memory of GPU %d, "
                     "but the plan runs on GPU %d", what, ptr, ordinal, dev->ordinal);
fail:
    return finish(&guard, st);
}

/* --- streams and timing --------------------------------------------------- */

mxattn_status mx_stream_create(const mx_device *dev, CUstream *out) {
    REQUIRE(dev, "dev");
    REQUIRE(out, "out");
    ENTER(dev);
    /* Non-blocking: the stream does not wait on the legacy default stream,
     * which other libraries in the process may be using. */
    MX_CU_CHECK(cu->StreamCreate(out, CU_STREAM_NON_BLOCKING));
fail:
    return finish(&guard, st);
}

mxattn_status mx_stream_destroy(const mx_device *dev, CUstream stream) {
    REQUIRE(dev, "dev");
    if (!stream) return MXATTN_OK;
    ENTER(dev);
    MX_CU_CHECK(cu->StreamDestroy(stream));
fail:
    return finish(&guard, st);
}

mxattn_status mx_stream_synchronize(const mx_device *dev, CUstream stream) {
    REQUIRE(dev, "dev");
    ENTER(dev);
    MX_CU_CHECK(cu->StreamSynchronize(stream));
fail:
    return finish(&guard, st);
}

mxattn_status mx_timer_create(const mx_device *dev, mx_timer *timer) {
    REQUIRE(dev, "dev");
    REQUIRE(timer, "timer");
    memset(timer, 0, sizeof *timer);
    ENTER(dev);
    timer->dev = dev;
    MX_CU_CHECK(cu->EventCreate(&timer->start, CU_EVENT_DEFAULT));
    MX_CU_CHECK(cu->EventCreate(&timer->stop, CU_EVENT_DEFAULT));
fail:
    st = finish(&guard, st);
    if (st != MXATTN_OK) mx_timer_destroy(timer);
    return st;
}

void mx_timer_destroy(mx_timer *timer) {
    if (!timer || !timer->dev) return;
    const mx_cuda_api *cu;
    mx_context_guard guard = {0};
    /* As in mx_device_close: nothing useful to report from a destructor. */
    if (mx_cuda_get(&cu) == MXATTN_OK && mx_device_enter(timer->dev, &guard) == MXATTN_OK) {
        if (timer->start) (void)cu->EventDestroy(timer->start);
        if (timer->stop) (void)cu->EventDestroy(timer->stop);
        (void)mx_device_leave(&guard);
    }
    memset(timer, 0, sizeof *timer);
}

static mxattn_status record_event(mx_timer *timer, CUevent event, CUstream stream) {
    ENTER(timer->dev);
    MX_CU_CHECK(cu->EventRecord(event, stream));
fail:
    return finish(&guard, st);
}

mxattn_status mx_timer_start(mx_timer *timer, CUstream stream) {
    REQUIRE(timer && timer->dev, "timer");
    return record_event(timer, timer->start, stream);
}

mxattn_status mx_timer_stop(mx_timer *timer, CUstream stream) {
    REQUIRE(timer && timer->dev, "timer");
    return record_event(timer, timer->stop, stream);
}

mxattn_status mx_timer_elapsed_ms(mx_timer *timer, float *ms) {
    REQUIRE(timer && timer->dev, "timer");
    REQUIRE(ms, "ms");
    ENTER(timer->dev);
    MX_CU_CHECK(cu->EventSynchronize(timer->stop));
    MX_CU_CHECK(cu->EventElapsedTime(ms, timer->start, timer->stop));
fail:
    return finish(&guard, st);
}
