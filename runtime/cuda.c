/* Loading the CUDA driver with dlopen and resolving its table; see cuda.h. */
#include "runtime/cuda.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define DRIVER_LIBRARY "libcuda.so.1"

/* What the one-time load found.  Written once under pthread_once, read-only
 * afterwards, so readers need no lock.  The message is kept here because
 * error messages are per thread: each caller gets its own copy of it. */
static struct {
    mx_cuda_api api;
    int library_ok;            /* libcuda opened and every symbol resolved */
    int driver_version;
    mxattn_status status;      /* OK, NO_DRIVER or NO_DEVICE */
    char message[512];
} g_driver;
static pthread_once_t g_driver_once = PTHREAD_ONCE_INIT;

static void record(mxattn_status s, const char *fmt, const char *detail) {
    g_driver.status = s;
    snprintf(g_driver.message, sizeof g_driver.message, fmt, detail);
}

/* cuGetProcAddress_v2 is the CUDA 12 form (with a query result); older
 * drivers export only the 4-argument cuGetProcAddress, so we ask for the
 * versioned name and call a driver without it too old. */
static int resolve_table(PFN_cuGetProcAddress_v12000 get_proc) {
    struct { const char *name; void **slot; } entries[] = {
#define MX_CUDA_ENTRY(name, type) {"cu" #name, (void **)&g_driver.api.name},
        MX_CUDA_ENTRY_POINTS(MX_CUDA_ENTRY)
#undef MX_CUDA_ENTRY
    };
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        /* LEGACY_STREAM: a NULL stream means the legacy default stream, as
         * mxattn.h promises, whatever flags the caller's program was built with. */
        CUresult r = get_proc(entries[i].name, entries[i].slot, MX_CUDA_API_VERSION,
                              CU_GET_PROC_ADDRESS_LEGACY_STREAM, &found);
        if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || !*entries[i].slot) {
            record(MXATTN_ERROR_NO_DRIVER,
                   "the CUDA driver lacks %s (it needs CUDA 12.0 or newer); "
                   "the CPU commands still work", entries[i].name);
            return 0;
        }
    }
    return 1;
}

static void load_driver(void) {
    /* RTLD_LOCAL: the driver's symbols stay out of the global namespace, so
     * they cannot clash with a CUDA runtime the host program loaded itself. */
    void *library = dlopen(DRIVER_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *why = dlerror();
        record(MXATTN_ERROR_NO_DRIVER,
               DRIVER_LIBRARY " was not found (%s): no NVIDIA driver on this machine; "
               "the CPU commands still work", why ? why : "dlopen failed");
        return;
    }
    PFN_cuGetProcAddress_v12000 get_proc =
        (PFN_cuGetProcAddress_v12000)dlsym(library, "cuGetProcAddress_v2");
    if (!get_proc) {
        record(MXATTN_ERROR_NO_DRIVER, "%s", DRIVER_LIBRARY " has no cuGetProcAddress_v2: "
               "the driver is older than CUDA 12.0; the CPU commands still work");
        return;
    }
    if (!resolve_table(get_proc)) return;
    /* The library stays open for the life of the process: the table points into it. */
    g_driver.library_ok = 1;
    if (g_driver.api.DriverGetVersion(&g_driver.driver_version) != CUDA_SUCCESS)
        g_driver.driver_version = 0;

    CUresult r = g_driver.api.Init(0);
    if (r != CUDA_SUCCESS) {
        const char *name = NULL;
        if (g_driver.api.GetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "unknown error";
        record(MXATTN_ERROR_NO_DEVICE, "cuInit failed with %s: no usable NVIDIA GPU", name);
        return;
    }
    int count = 0;
    r = g_driver.api.DeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count == 0) {
        record(MXATTN_ERROR_NO_DEVICE, "%s", "the CUDA driver reports no GPU");
        return;
    }
    g_driver.status = MXATTN_OK;
}

mxattn_status mx_cuda_get(const mx_cuda_api **out) {
    pthread_once(&g_driver_once, load_driver);
    if (g_driver.status != MXATTN_OK) return mx_fail(g_driver.status, "%s", g_driver.message);
    *out = &g_driver.api;
    return MXATTN_OK;
}

mxattn_status mx_cuda_driver_version(int *out) {
    if (!out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_cuda_driver_version: out is NULL");
    pthread_once(&g_driver_once, load_driver);
    if (!g_driver.library_ok) return mx_fail(g_driver.status, "%s", g_driver.message);
    *out = g_driver.driver_version;
    return MXATTN_OK;
}

/* Errors after which the context cannot be used again: the process must
 * restart before the GPU answers anything else.  Worth saying in the message,
 * because every later call fails with the same error. */
static int is_sticky(CUresult r) {
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS: case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR: case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS: case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC: case CUDA_ERROR_ASSERT:
        return 1;
    default:
        return 0;
    }
}

mxattn_status mx_cuda_fail(CUresult r, const char *call, const char *file, int line) {
    const char *name = NULL, *text = NULL;
    /* The table is loaded whenever a driver call could have failed. */
    if (g_driver.library_ok) {
        if (g_driver.api.GetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
        if (g_driver.api.GetErrorString(r, &text) != CUDA_SUCCESS) text = NULL;
    }
    mxattn_status s = MXATTN_ERROR_CUDA;
    if (r == CUDA_ERROR_OUT_OF_MEMORY) s = MXATTN_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) s = MXATTN_ERROR_OUT_OF_RESOURCES;
#ifdef MXATTN_SOURCE_DIR
    /* runtime/device.c:120 reads better than the build machine's absolute path. */
    size_t root = strlen(MXATTN_SOURCE_DIR);
    if (!strncmp(file, MXATTN_SOURCE_DIR, root) && file[root] == '/') file += root + 1;
#endif
    char code[32];
    snprintf(code, sizeof code, "CUresult %d", (int)r);
    return mx_fail(s, "%s:%d: %s failed: %s (%s)%s", file, line, call, name ? name : code,
                   text ? text : "no description",
                   is_sticky(r) ? "; the CUDA context is now unusable, restart the process" : "");
}
