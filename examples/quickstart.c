/*
 * Quick start: one attention call on the GPU through mxattn's C API.
 *
 * The program owns the device memory, as a real caller does: it opens the
 * CUDA driver itself, puts random bf16 Q, K and V on the GPU, makes a plan for
 * batch 1, 8 heads, 1024 queries and keys, head dim 128 (the f16 family), runs
 * it, copies O back, compares sampled rows with a CPU reference and prints a
 * checksum.  On a machine without an NVIDIA GPU or driver it prints one line
 * saying so and exits 0: there is nothing wrong with the program there, and a
 * script can tell the two apart by the line ("no NVIDIA GPU here").  It exits
 * 1 when anything fails where a GPU is.
 *
 *     cc quickstart.c -o quickstart $(pkg-config --cflags --libs mxattn) -ldl
 *     ./quickstart
 *
 * The driver is opened with dlopen, as libmxattn does, so that the program
 * builds and starts on machines without libcuda; the few driver types it
 * needs are declared below so that it builds without the CUDA toolkit too.
 */
#include <mxattn.h>

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 1, HEADS = 8, SEQ = 1024, DIM = 128, SAMPLE_ROWS = 16 };

/* ---- the CUDA driver, opened at run time ---------------------------------- */

typedef int CUresult;                 /* 0 is CUDA_SUCCESS */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;

static struct {
    CUresult (*Init)(unsigned flags);
    CUresult (*DeviceGetCount)(int *count);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice dev);
    CUresult (*CtxSetCurrent)(CUcontext ctx);
    CUresult (*CtxSynchronize)(void);
    CUresult (*MemAlloc)(CUdeviceptr *ptr, size_t bytes);
    CUresult (*MemFree)(CUdeviceptr ptr);
    CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
    CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
    CUresult (*GetErrorName)(CUresult r, const char **name);
} cu;

/* Opens libcuda.so.1 and resolves the calls above.  The memory calls are the
 * _v2 entry points: cuda.h maps cuMemAlloc and the rest to them. */
static int open_driver(char *why, size_t cap) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, cap, "%s", dlerror());
        return 0;
    }
    struct { const char *name; void **slot; } syms[] = {
        {"cuInit", (void **)&cu.Init},
        {"cuDeviceGetCount", (void **)&cu.DeviceGetCount},
        {"cuDeviceGet", (void **)&cu.DeviceGet},
        {"cuDeviceGetName", (void **)&cu.DeviceGetName},
        {"cuDevicePrimaryCtxRetain", (void **)&cu.DevicePrimaryCtxRetain},
        {"cuDevicePrimaryCtxRelease_v2", (void **)&cu.DevicePrimaryCtxRelease},
        {"cuCtxSetCurrent", (void **)&cu.CtxSetCurrent},
        {"cuCtxSynchronize", (void **)&cu.CtxSynchronize},
        {"cuMemAlloc_v2", (void **)&cu.MemAlloc},
        {"cuMemFree_v2", (void **)&cu.MemFree},
        {"cuMemcpyHtoD_v2", (void **)&cu.MemcpyHtoD},
        {"cuMemcpyDtoH_v2", (void **)&cu.MemcpyDtoH},
        {"cuGetErrorName", (void **)&cu.GetErrorName},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        *syms[i].slot = dlsym(lib, syms[i].name);
        if (!*syms[i].slot) {
            snprintf(why, cap, "libcuda.so.1 has no %s (driver too old)", syms[i].name);
            return 0;
        }
    }
    return 1;
}

static const char *cu_name(CUresult r) {
    const char *name = NULL;
    return cu.GetErrorName(r, &name) == 0 && name ? name : "unknown CUDA error";
}

#define CU_CHECK(call)                                                        \
    do {                                                                      \
        CUresult r_ = (call);                                                 \
        if (r_ != 0) {                                                        \
            fprintf(stderr, "quickstart: %s failed: %s\n", #call, cu_name(r_)); \
            goto done;                                                        \
        }                                                                     \
    } while (0)

#define MX_CHECK(call)                                                        \
    do {                                                                      \
        mxattn_status s_ = (call);                                            \
        if (s_ != MXATTN_OK) {                                                \
            fprintf(stderr, "quickstart: %s failed: %s: %s\n", #call,         \
                    mxattn_status_string(s_), mxattn_last_error());           \
            goto done;                                                        \
        }                                                                     \
    } while (0)

/* ---- bf16 on the host ------------------------------------------------------ */

static uint16_t to_bf16(float f) {     /* round to nearest even */
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* xorshift64*: the same data, hence the same checksum, on every run. */
static float uniform(uint64_t *state) {
    *state ^= *state >> 12; *state ^= *state << 25; *state ^= *state >> 27;
    return (float)((*state * 0x2545F4914F6CDD1DULL) >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

/* softmax(q K^T / sqrt(D)) V for one query row of one head, in double. */
static void reference_row(const uint16_t *q, const uint16_t *k, const uint16_t *v, double *out) {
    static double score[SEQ];
    double max = -INFINITY, sum = 0;
    for (int j = 0; j < SEQ; j++) {
        double dot = 0;
        for (int d = 0; d < DIM; d++) dot += (double)from_bf16(q[d]) * from_bf16(k[(size_t)j * DIM + d]);
        score[j] = dot / sqrt((double)DIM);
        if (score[j] > max) max = score[j];
    }
    for (int j = 0; j < SEQ; j++) sum += score[j] = exp(score[j] - max);
    for (int d = 0; d < DIM; d++) {
        double acc = 0;
        for (int j = 0; j < SEQ; j++) acc += score[j] * from_bf16(v[(size_t)j * DIM + d]);
        out[d] = acc / sum;
    }
}

int main(void) {
    char why[512];
    int opened = open_driver(why, sizeof why);
    CUresult init = opened ? cu.Init(0) : 0;
    if (opened && init != 0) snprintf(why, sizeof why, "cuInit failed with %s", cu_name(init));
    if (!opened || init != 0) {
        printf("quickstart: no NVIDIA GPU here (%s): nothing to run\n", why);
        return 0;
    }
    int count = 0;
    if (cu.DeviceGetCount(&count) != 0 || count == 0) {
        printf("quickstart: no NVIDIA GPU here (the driver reports none): nothing to run\n");
        return 0;
    }

    int rc = 1, have_ctx = 0;
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    CUdeviceptr dq = 0, dk = 0, dv = 0, dout = 0;
    mxattn_ctx *mx = NULL;
    mxattn_plan *plan = NULL;
    size_t n = (size_t)BATCH * HEADS * SEQ * DIM, bytes = n * sizeof(uint16_t);
    uint16_t *q = malloc(bytes), *k = malloc(bytes), *v = malloc(bytes), *o = malloc(bytes);
    if (!q || !k || !v || !o) { fprintf(stderr, "quickstart: out of host memory\n"); goto done; }

    /* mxattn runs in the device's primary context, so the buffers go there too. */
    char name[256];
    CU_CHECK(cu.DeviceGet(&dev, 0));
    CU_CHECK(cu.DeviceGetName(name, sizeof name, dev));
    CU_CHECK(cu.DevicePrimaryCtxRetain(&ctx, dev));
    have_ctx = 1;
    CU_CHECK(cu.CtxSetCurrent(ctx));

    uint64_t state = 0x9E3779B97F4A7C15ULL;
    for (size_t i = 0; i < n; i++) q[i] = to_bf16(uniform(&state));
    for (size_t i = 0; i < n; i++) k[i] = to_bf16(uniform(&state));
    for (size_t i = 0; i < n; i++) v[i] = to_bf16(uniform(&state));
    memset(o, 0xff, bytes);    /* 0xffff is a bf16 NaN: an element the kernel skips shows */
    CU_CHECK(cu.MemAlloc(&dq, bytes));
    CU_CHECK(cu.MemAlloc(&dk, bytes));
    CU_CHECK(cu.MemAlloc(&dv, bytes));
    CU_CHECK(cu.MemAlloc(&dout, bytes));
    CU_CHECK(cu.MemcpyHtoD(dq, q, bytes));
    CU_CHECK(cu.MemcpyHtoD(dk, k, bytes));
    CU_CHECK(cu.MemcpyHtoD(dv, v, bytes));
    CU_CHECK(cu.MemcpyHtoD(dout, o, bytes));

    /* Describe the problem, make a plan (compiles a kernel, or takes it from
     * the database), run it on the legacy default stream. */
    mxattn_problem p;
    MX_CHECK(mxattn_create(&mx, NULL));
    MX_CHECK(mxattn_problem_init(&p, "f16", DIM));
    p.batch = BATCH; p.heads_q = p.heads_kv = HEADS; p.seq_q = p.seq_k = SEQ;
    p.dtype = p.out_dtype = MXATTN_BF16;        /* layout BHND: [batch, head, seq, dim] */
    MX_CHECK(mxattn_plan_create(mx, &p, NULL, &plan));
    MX_CHECK(mxattn_run(plan, (const void *)(uintptr_t)dq, (const void *)(uintptr_t)dk,
                        (const void *)(uintptr_t)dv, (void *)(uintptr_t)dout, NULL, NULL));
    CU_CHECK(cu.CtxSynchronize());
    CU_CHECK(cu.MemcpyDtoH(o, dout, bytes));

    mxattn_plan_info info;
    MX_CHECK(mxattn_plan_get_info(plan, &info));
    printf("device   %s\n", name);
    printf("problem  f16 family, bf16, batch %d, heads %d, seq %d, head dim %d\n", BATCH, HEADS, SEQ, DIM);
    printf("plan     %s (%s config: %s)\n", info.kernel_name, info.config_source, info.config);

    double checksum = 0;
    for (size_t i = 0; i < n; i++) {
        float x = from_bf16(o[i]);
        if (!isfinite(x)) {
            fprintf(stderr, "quickstart: O[%zu] is %g: the kernel did not write it\n", i, x);
            goto done;
        }
        checksum += x;
    }

    /* A few rows of every head against softmax(Q K^T / sqrt(D)) V in double,
     * as a relative L1 error: rounding P and O to bf16 costs ~2e-3 (the
     * library's own tests hold bf16 to 3e-3); a wrong kernel is off by tens
     * of percent. */
    double err_sum = 0, ref_sum = 0, max_err = 0, ref[DIM];
    for (int h = 0; h < HEADS; h++) {
        size_t head = (size_t)h * SEQ * DIM;
        for (int s = 0; s < SAMPLE_ROWS; s++) {
            int row = s * (SEQ - 1) / (SAMPLE_ROWS - 1);
            reference_row(q + head + (size_t)row * DIM, k + head, v + head, ref);
            for (int d = 0; d < DIM; d++) {
                double err = fabs(from_bf16(o[head + (size_t)row * DIM + d]) - ref[d]);
                err_sum += err;
                ref_sum += fabs(ref[d]);
                if (err > max_err) max_err = err;
            }
        }
    }
    double rel_l1 = err_sum / ref_sum, tolerance = 1e-2;
    printf("check    %d rows against a CPU reference: relative L1 error %.2e (tolerance %.0e), max |error| %.2e: %s\n",
           HEADS * SAMPLE_ROWS, rel_l1, tolerance, max_err, rel_l1 < tolerance ? "ok" : "FAILED");
    printf("checksum %.6f\n", checksum);
    rc = rel_l1 < tolerance ? 0 : 1;

done:
    mxattn_plan_destroy(plan);
    mxattn_destroy(mx);
    if (dq) cu.MemFree(dq);
    if (dk) cu.MemFree(dk);
    if (dv) cu.MemFree(dv);
    if (dout) cu.MemFree(dout);
    if (have_ctx) cu.DevicePrimaryCtxRelease(dev);
    free(q); free(k); free(v); free(o);
    return rc;
}
