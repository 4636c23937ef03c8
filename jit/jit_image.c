/* A module's binary when its kernels are compiled apart, and the parallel
 * compile that makes it.
 *
 * Why apart: NVRTC optimizes and assembles a module's kernels one after the
 * other, and the INT8 families' quantization kernel alone takes as long as
 * their attention kernel (int8-fp8 D=128 on the CPU machine: 0.69 s of a
 * 1.09 s module, the attention kernel 0.36 s; bench/NOTES.md,
 * 2026-11-30).  Compiled as one program per kernel on parallel threads, a cold
 * start waits for the slowest kernel.  NVRTC's own --split-compile measured
 * 0-20% on the GPU machine; separate programs leave nothing shared to wait on.
 *
 * The cubins then travel as one blob (the cache stores blobs), a container:
 *   "MXKI" | u32 count | count x (u32 offset, u32 size) | images
 * little-endian, each image at a 16-byte aligned offset so that it can be
 * handed to the driver in place. */
#include "jit/jit.h"
#include "util/err.h"
#include "util/clock.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMAGE_MAGIC "MXKI"
#define HEADER_BYTES(n) (8 + 8 * (size_t)(n))

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

mxattn_status mx_jit_image_pack(const unsigned char *const *parts, const size_t *sizes, int n,
                                unsigned char **out, size_t *out_size) {
    *out = NULL;
    *out_size = 0;
    if (n < 1 || n > MX_MAX_LAUNCH_STEPS)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "an image holds 1 to %d cubins, not %d", MX_MAX_LAUNCH_STEPS, n);
    size_t total = align16(HEADER_BYTES(n));
    for (int i = 0; i < n; i++) total = align16(total + sizes[i]);
    if (total > UINT32_MAX) return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cubins of %zu bytes in all", total);
    unsigned char *blob = calloc(1, total);
    if (!blob) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "no memory for a %zu-byte image", total);
    memcpy(blob, IMAGE_MAGIC, 4);
    put_u32(blob + 4, (uint32_t)n);
    size_t at = align16(HEADER_BYTES(n));
    for (int i = 0; i < n; i++) {
        put_u32(blob + 8 + 8 * i, (uint32_t)at);
        put_u32(blob + 12 + 8 * i, (uint32_t)sizes[i]);
        memcpy(blob + at, parts[i], sizes[i]);
        at = align16(at + sizes[i]);
    }
    *out = blob;
    *out_size = total;
    return MXATTN_OK;
}

mxattn_status mx_jit_image_parts(const void *image, size_t size, const unsigned char **parts,
                                 size_t *sizes, int max_parts, int *n_parts) {
    const unsigned char *b = image;
    *n_parts = 0;
    if (size >= 4 && !memcmp(b, "\x7f" "ELF", 4)) {   /* one cubin: the module's every kernel */
        parts[0] = b;
        sizes[0] = size;
        *n_parts = 1;
        return MXATTN_OK;
    }
    if (size < 8 || memcmp(b, IMAGE_MAGIC, 4))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "the binary is neither a cubin nor a container of cubins");
    uint32_t n = get_u32(b + 4);
    if (n < 1 || (int)n > max_parts || HEADER_BYTES(n) > size)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "a container of %u cubins (1 to %d fit)", n, max_parts);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t at = get_u32(b + 8 + 8 * i), len = get_u32(b + 12 + 8 * i);
        if (at < HEADER_BYTES(n) || at % 16 || len == 0 || (size_t)at + len > size)
            return mx_fail(MXATTN_ERROR_INVALID_VALUE, "cubin %u of the container lies outside it", i);
        parts[i] = b + at;
        sizes[i] = len;
    }
    *n_parts = (int)n;
    return MXATTN_OK;
}

void mx_jit_image_free(mx_jit_image *img) {
    if (!img) return;
    free(img->data);
    img->data = NULL;
    img->size = 0;
}

/* One kernel's program.  Its thread writes only here; a failure's message
 * (thread-local) is copied out for the caller's thread to raise. */
typedef struct {
    const char *source, *arch, *kernel;
    int alone;                 /* compile only this kernel (MX_COMPILE_ONE) */
    char define[160];
    mx_compile_result result;
    mxattn_status status;
    char error[4096];
} kernel_job;

static void *run_job(void *arg) {
    kernel_job *j = arg;
    const char *extra[2] = {"-DMX_COMPILE_ONE", j->define};
    mx_compile_options opt = {.arch = j->arch, .extra = j->alone ? extra : NULL, .n_extra = j->alone ? 2 : 0,
                              .dump_tag = j->alone ? j->kernel : NULL};
    j->status = mx_nvrtc_compile(j->source, j->kernel, &opt, &j->result);
    if (j->status != MXATTN_OK) snprintf(j->error, sizeof j->error, "%s", mx_error_message());
    return NULL;
}

/* Runs jobs 1..n-1 on threads and job 0 here; a thread that cannot start
 * runs its job here afterwards. */
static void run_jobs(kernel_job *jobs, int n) {
    pthread_t threads[MX_MAX_LAUNCH_STEPS];
    int started[MX_MAX_LAUNCH_STEPS] = {0};
    for (int i = 1; i < n; i++) started[i] = pthread_create(&threads[i], NULL, run_job, &jobs[i]) == 0;
    run_job(&jobs[0]);
    for (int i = 1; i < n; i++) {
        if (started[i]) pthread_join(threads[i], NULL);
        else run_job(&jobs[i]);
    }
}

static mxattn_status pack_jobs(kernel_job *jobs, int n, mx_jit_image *out) {
    if (n == 1) {   /* the cubin itself: NVRTC's buffer changes hands */
        out->data = jobs[0].result.cubin;
        out->size = jobs[0].result.cubin_size;
        jobs[0].result.cubin = NULL;
        return MXATTN_OK;
    }
    const unsigned char *parts[MX_MAX_LAUNCH_STEPS];
    size_t sizes[MX_MAX_LAUNCH_STEPS];
    for (int i = 0; i < n; i++) {
        parts[i] = jobs[i].result.cubin;
        sizes[i] = jobs[i].result.cubin_size;
    }
    return mx_jit_image_pack(parts, sizes, n, &out->data, &out->size);
}

mxattn_status mx_jit_compile(const char *source, const char *arch, const mx_launch_plan *lp, int apart,
                             mx_jit_image *out) {
    memset(out, 0, sizeof *out);
    if (lp->n_steps < 1 || lp->n_steps > MX_MAX_LAUNCH_STEPS)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "a plan of %d kernels to compile", lp->n_steps);
    int n = apart ? lp->n_steps : 1;   /* programs: one whole module, or a kernel each */
    kernel_job *jobs = calloc((size_t)n, sizeof *jobs);
    if (!jobs) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "no memory for %d compile jobs", n);
    for (int i = 0; i < n; i++) {
        /* A whole module names its attention kernel, whose usage plans record. */
        const char *kernel = lp->steps[n > 1 ? i : lp->main_step].name;
        jobs[i] = (kernel_job){.source = source, .arch = arch, .kernel = kernel, .alone = n > 1};
        snprintf(jobs[i].define, sizeof jobs[i].define, "-DMX_COMPILE_%s", kernel);
    }
    double start = mx_now_ms();
    run_jobs(jobs, n);
    out->compile_ms = mx_now_ms() - start;
    mxattn_status st = MXATTN_OK;
    for (int i = 0; i < n && st == MXATTN_OK; i++)
        if (jobs[i].status != MXATTN_OK) st = mx_fail(jobs[i].status, "%s", jobs[i].error);
    if (st == MXATTN_OK && !jobs[0].result.cubin)
        st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s is a virtual arch: no cubin to load", arch);
    if (st == MXATTN_OK) {
        out->usage = jobs[n > 1 ? lp->main_step : 0].result.usage;
        st = pack_jobs(jobs, n, out);
    }
    for (int i = 0; i < n; i++) mx_compile_result_free(&jobs[i].result);
    free(jobs);
    return st;
}
