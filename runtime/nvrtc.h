/* NVRTC, opened at run time: CUDA C++ source -> cubin (and PTX) for one arch.
 *
 * libnvrtc is opened with dlopen on first use (libnvrtc.so.13, libnvrtc.so,
 * then $MXATTN_CUDA_ROOT/lib64 and the toolkit mxattn was built against), so
 * mxattn runs without it and reports MXATTN_ERROR_NO_COMPILER where a compile
 * is asked for.  Compiling needs no GPU.  Every function is thread-safe:
 * the tuner compiles candidates on several threads at once.
 *
 * Debugging knobs: MXATTN_DUMP_SOURCE=<dir> writes every compiled source as
 * <dir>/<sha256 of source>.cu, MXATTN_DUMP_PTX=<dir> its PTX as
 * <dir>/<sha256>.<arch>.ptx. */
#ifndef MX_RUNTIME_NVRTC_H
#define MX_RUNTIME_NVRTC_H
#include <stddef.h>
#include "mxattn.h"

/* "13.0".  MXATTN_ERROR_NO_COMPILER (with the places tried) if absent. */
mxattn_status mx_nvrtc_version(char *out, size_t out_len);

/* The options every compile passes before the caller's, as one string, for
 * cache keys: a change here must change the key of every cached binary. */
const char *mx_nvrtc_base_options(void);

/* What ptxas reported for one kernel (from its -v output). */
typedef struct {
    int found;                 /* 1: the log had this kernel's entry */
    int registers;             /* per thread */
    int shared_bytes;          /* static shared memory */
    int stack_bytes;           /* stack frame (the larger of frame and cumulative stack) */
    int spill_store_bytes, spill_load_bytes;
    int barriers;
    double ptxas_ms;           /* ptxas's own compile time for the kernel */
} mx_ptxas_usage;

/* Reads the ptxas -v lines of `log` for the entry function `kernel` (NULL:
 * the first entry).  Returns 1 and fills *out when found, else 0 with *out
 * zeroed.  Pure text parsing, exposed for tests and for logs from elsewhere. */
int mx_ptxas_parse(const char *log, const char *kernel, mx_ptxas_usage *out);

typedef struct {
    const char *arch;                /* "sm_90a", "sm_120a", ... (required) */
    const char *const *extra;        /* more NVRTC options, after the base ones */
    int n_extra;
    int want_ptx;                    /* 1: also return the PTX text */
    const char *dump_tag;            /* MXATTN_DUMP_PTX names the file <sha>.<tag>.<arch>.ptx
                                        (a module's kernel compiled apart), else <sha>.<arch>.ptx */
} mx_compile_options;

typedef struct {
    unsigned char *cubin;            /* the ELF image, for cuModuleLoadData; NULL for a compute_ arch */
    size_t cubin_size;
    char *ptx;                       /* NUL-terminated; NULL unless asked for */
    char *log;                       /* NVRTC's whole log (ptxas -v lines), never NULL */
    char source_sha256[65];
    double compile_ms;               /* wall time of nvrtcCompileProgram */
    mx_ptxas_usage usage;            /* of the kernel named in the call */
} mx_compile_result;

/* Compiles `source` (self-contained: no #include, no include path) for
 * opt->arch.  `kernel` names the extern "C" entry whose resources go into
 * out->usage; it also names the program in NVRTC's messages.
 * Errors: MXATTN_ERROR_COMPILE with the (trimmed) log and the source's
 * SHA-256 in the message; MXATTN_ERROR_INVALID_VALUE for an arch this NVRTC
 * cannot target; MXATTN_ERROR_NO_COMPILER; MXATTN_ERROR_IO if a dump
 * directory cannot be written.  On failure *out holds nothing to free. */
mxattn_status mx_nvrtc_compile(const char *source, const char *kernel,
                               const mx_compile_options *opt, mx_compile_result *out);
/* Frees what a successful compile returned; a zeroed result is a no-op. */
void mx_compile_result_free(mx_compile_result *r);
#endif
