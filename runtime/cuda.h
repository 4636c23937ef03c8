/* The CUDA driver, opened at run time.
 *
 * mxattn links no CUDA library: libcuda.so.1 is opened with dlopen the first
 * time a GPU is needed, so the program and the CPU-only commands work on a
 * machine without a driver.  Every entry point is resolved through
 * cuGetProcAddress (not dlsym), which hands out the version of each symbol
 * that matches the API level we ask for (MX_CUDA_API_VERSION) rather than
 * whatever the plain, often legacy, export is called.
 *
 * This header is internal to runtime/: it pulls in the toolkit's cuda.h, which
 * only the library's own sources see.  The rest of mxattn uses device.h. */
#ifndef MX_RUNTIME_CUDA_H
#define MX_RUNTIME_CUDA_H
#include <cuda.h>
#include <cudaTypedefs.h>
#include "mxattn.h"
#include "util/err.h"

/* The driver API level the table is resolved at.  12.0 is the oldest driver
 * with cuGetProcAddress_v2 and cuTensorMapEncodeTiled; a 13.x driver serves
 * the 12.0 versions of every symbol unchanged. */
#define MX_CUDA_API_VERSION 12000

/* Every driver function mxattn calls, with the PFN type of the version that
 * MX_CUDA_API_VERSION resolves to (cudaTypedefs.h names a type after the
 * release that introduced that version: _v3020 is the 64-bit-pointer one).
 * The field is the function's name without its "cu" prefix, because cuda.h
 * #defines many of the plain names (cuMemAlloc -> cuMemAlloc_v2). */
#define MX_CUDA_ENTRY_POINTS(X)                                   \
    X(Init, PFN_cuInit_v2000)                                     \
    X(DriverGetVersion, PFN_cuDriverGetVersion_v2020)             \
    X(GetErrorName, PFN_cuGetErrorName_v6000)                     \
    X(GetErrorString, PFN_cuGetErrorString_v6000)                 \
    X(DeviceGet, PFN_cuDeviceGet_v2000)                           \
    X(DeviceGetCount, PFN_cuDeviceGetCount_v2000)                 \
    X(DeviceGetName, PFN_cuDeviceGetName_v2000)                   \
    X(DeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000)         \
    X(DeviceTotalMem, PFN_cuDeviceTotalMem_v3020)                 \
    X(DevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000) \
    X(DevicePrimaryCtxRelease, PFN_cuDevicePrimaryCtxRelease_v11000) \
    X(CtxGetCurrent, PFN_cuCtxGetCurrent_v4000)                   \
    X(CtxSetCurrent, PFN_cuCtxSetCurrent_v4000)                   \
    X(CtxPushCurrent, PFN_cuCtxPushCurrent_v4000)                 \
    X(CtxPopCurrent, PFN_cuCtxPopCurrent_v4000)                   \
    X(CtxSynchronize, PFN_cuCtxSynchronize_v2000)                 \
    X(ModuleLoadData, PFN_cuModuleLoadData_v2000)                 \
    X(ModuleUnload, PFN_cuModuleUnload_v2000)                     \
    X(ModuleGetFunction, PFN_cuModuleGetFunction_v2000)           \
    X(FuncGetAttribute, PFN_cuFuncGetAttribute_v2020)             \
    X(FuncSetAttribute, PFN_cuFuncSetAttribute_v9000)             \
    X(LaunchKernel, PFN_cuLaunchKernel_v4000)                     \
    X(LaunchKernelEx, PFN_cuLaunchKernelEx_v11060)                \
    X(MemAlloc, PFN_cuMemAlloc_v3020)                             \
    X(MemFree, PFN_cuMemFree_v3020)                               \
    X(MemcpyHtoD, PFN_cuMemcpyHtoD_v3020)                         \
    X(MemcpyDtoH, PFN_cuMemcpyDtoH_v3020)                         \
    X(MemcpyHtoDAsync, PFN_cuMemcpyHtoDAsync_v3020)               \
    X(MemcpyDtoHAsync, PFN_cuMemcpyDtoHAsync_v3020)               \
    X(MemsetD8, PFN_cuMemsetD8_v3020)                             \
    X(MemsetD32, PFN_cuMemsetD32_v3020)                           \
    X(MemsetD8Async, PFN_cuMemsetD8Async_v3020)                   \
    X(MemsetD32Async, PFN_cuMemsetD32Async_v3020)                 \
    X(StreamCreate, PFN_cuStreamCreate_v2000)                     \
    X(StreamDestroy, PFN_cuStreamDestroy_v4000)                   \
    X(StreamSynchronize, PFN_cuStreamSynchronize_v2000)           \
    X(EventCreate, PFN_cuEventCreate_v2000)                       \
    X(EventRecord, PFN_cuEventRecord_v2000)                       \
    X(EventSynchronize, PFN_cuEventSynchronize_v2000)             \
    X(EventElapsedTime, PFN_cuEventElapsedTime_v2000)             \
    X(EventDestroy, PFN_cuEventDestroy_v4000)                     \
    X(PointerGetAttribute, PFN_cuPointerGetAttribute_v4000)       \
    X(TensorMapEncodeTiled, PFN_cuTensorMapEncodeTiled_v12000)

typedef struct {
#define MX_CUDA_FIELD(name, type) type name;
    MX_CUDA_ENTRY_POINTS(MX_CUDA_FIELD)
#undef MX_CUDA_FIELD
} mx_cuda_api;

/* The driver's table, loaded and cuInit'ed on first use (thread-safe, once
 * per process).  MXATTN_ERROR_NO_DRIVER: libcuda.so.1 is absent or too old;
 * MXATTN_ERROR_NO_DEVICE: cuInit failed (no GPU, or the kernel module and the
 * library disagree).  The reason is in the thread's error message. */
mxattn_status mx_cuda_get(const mx_cuda_api **out);

/* The driver's CUDA version (13000 for 13.0).  Needs only the library, so it
 * answers even where cuInit fails. */
mxattn_status mx_cuda_driver_version(int *out);

/* Turns a failed driver call into a status and a message naming the call, its
 * place in the source and the driver's error name and description. */
mxattn_status mx_cuda_fail(CUresult r, const char *call, const char *file, int line);

/* Runs a driver call; on failure records it and jumps to the function's
 * single cleanup path (`fail:`, with `mxattn_status st` in scope). */
#define MX_CU_CHECK(call)                                                     \
    do { CUresult mx_cu_r_ = (call);                                          \
         if (mx_cu_r_ != CUDA_SUCCESS) {                                      \
             st = mx_cuda_fail(mx_cu_r_, #call, __FILE__, __LINE__);          \
             goto fail; } } while (0)
#endif
