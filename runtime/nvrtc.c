/* NVRTC through dlopen; see nvrtc.h. */
#include "runtime/nvrtc.h"
#include <nvrtc.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/clock.h"
#include "util/err.h"
#include "util/sha256.h"

#ifndef MXATTN_CUDA_ROOT
#define MXATTN_CUDA_ROOT "/usr/local/cuda"
#endif

/* How much of a failing compile's log goes into the error message: the first
 * errors are the ones that matter, and the message buffer is 8 KB. */
#define LOG_EXCERPT_BYTES 4000

/* The types of the NVRTC functions we call, as nvrtc.h declares them. */
typedef const char *(*nvrtc_get_error_string_fn)(nvrtcResult);
typedef nvrtcResult (*nvrtc_version_fn)(int *, int *);
typedef nvrtcResult (*nvrtc_get_num_supported_archs_fn)(int *);
typedef nvrtcResult (*nvrtc_get_supported_archs_fn)(int *);
typedef nvrtcResult (*nvrtc_create_program_fn)(nvrtcProgram *, const char *, const char *, int,
                                               const char *const *, const char *const *);
typedef nvrtcResult (*nvrtc_destroy_program_fn)(nvrtcProgram *);
typedef nvrtcResult (*nvrtc_compile_program_fn)(nvrtcProgram, int, const char *const *);
typedef nvrtcResult (*nvrtc_get_size_fn)(nvrtcProgram, size_t *);
typedef nvrtcResult (*nvrtc_get_bytes_fn)(nvrtcProgram, char *);

#define NVRTC_ENTRY_POINTS(X)                                        \
    X(GetErrorString, nvrtc_get_error_string_fn)                     \
    X(Version, nvrtc_version_fn)                                     \
    X(GetNumSupportedArchs, nvrtc_get_num_supported_archs_fn)        \
    X(GetSupportedArchs, nvrtc_get_supported_archs_fn)               \
    X(CreateProgram, nvrtc_create_program_fn)                        \
    X(DestroyProgram, nvrtc_destroy_program_fn)                      \
    X(CompileProgram, nvrtc_compile_program_fn)                      \
    X(GetCUBINSize, nvrtc_get_size_fn)                               \
    X(GetCUBIN, nvrtc_get_bytes_fn)                                  \
    X(GetPTXSize, nvrtc_get_size_fn)                                 \
    X(GetPTX, nvrtc_get_bytes_fn)                                    \
    X(GetProgramLogSize, nvrtc_get_size_fn)                          \
    X(GetProgramLog, nvrtc_get_bytes_fn)

typedef struct {
#define NVRTC_FIELD(name, type) type name;
    NVRTC_ENTRY_POINTS(NVRTC_FIELD)
#undef NVRTC_FIELD
} nvrtc_api;

/* Written once under pthread_once, read-only afterwards. */
static struct {
    nvrtc_api api;
    mxattn_status status;
    char message[1024];
    char version[16];
    int archs[64];             /* the numbers NVRTC accepts after sm_/compute_ */
    int n_archs;
} g_nvrtc;
static pthread_once_t g_nvrtc_once = PTHREAD_ONCE_INIT;

/* Options passed to every compile, before the caller's.  No --use_fast_math:
 * kernels choose their approximations (ex2.approx etc.) explicitly.
 * -default-device: helper functions need no __device__.  ptxas -v: the log
 * reports registers, shared memory and spills, which plans record.
 * --minimal: generated sources include no headers and use no textures,
 * device-side launches or runtime API types, so NVRTC can skip declaring them
 * (about 2 ms per compile). */
static const char *const base_options[] = {
    "-std=c++17", "-default-device", "--ptxas-options=-v", "--minimal",
};
#define N_BASE_OPTIONS (int)(sizeof base_options / sizeof base_options[0])

/* MXATTN_LINEINFO=1 adds -lineinfo, so compute-sanitizer and the profilers
 * can name source lines of generated kernels (MXATTN_DUMP_SOURCE keeps the
 * source).  It changes the binary, so it is part of the options string that
 * cache keys hash. */
static int want_lineinfo(void) {
    const char *v = getenv("MXATTN_LINEINFO");
    return v && *v && strcmp(v, "0") != 0;
}

const char *mx_nvrtc_base_options(void) {
    return want_lineinfo() ? "-std=c++17 -default-device --ptxas-options=-v --minimal -lineinfo"
                           : "-std=c++17 -default-device --ptxas-options=-v --minimal";
}

static void *open_library(char *tried, size_t tried_len) {
    char env_path[512] = "";
    const char *root = getenv("MXATTN_CUDA_ROOT");
    if (root && *root) snprintf(env_path, sizeof env_path, "%s/lib64/libnvrtc.so.13", root);
    const char *candidates[] = {
        "libnvrtc.so.13", "libnvrtc.so", env_path, MXATTN_CUDA_ROOT "/lib64/libnvrtc.so.13",
    };
    tried[0] = 0;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        if (!*candidates[i]) continue;
        void *library = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
        if (library) return library;
        size_t used = strlen(tried);
        snprintf(tried + used, tried_len - used, "%s%s", used ? ", " : "", candidates[i]);
    }
    return NULL;
}

static void load_nvrtc(void) {
    char tried[1024];
    void *library = open_library(tried, sizeof tried);
    g_nvrtc.status = MXATTN_ERROR_NO_COMPILER;
    if (!library) {
        snprintf(g_nvrtc.message, sizeof g_nvrtc.message,
                 "NVRTC was not found (tried %s); install the CUDA 13 NVRTC "
                 "or set MXATTN_CUDA_ROOT to the toolkit", tried);
        return;
    }
#define NVRTC_RESOLVE(name, type)                                                   \
    g_nvrtc.api.name = (type)dlsym(library, "nvrtc" #name);                         \
    if (!g_nvrtc.api.name) {                                                        \
        snprintf(g_nvrtc.message, sizeof g_nvrtc.message,                           \
                 "the NVRTC found lacks nvrtc" #name " (too old; CUDA 12 or newer needed)"); \
        return;                                                                     \
    }
    NVRTC_ENTRY_POINTS(NVRTC_RESOLVE)
#undef NVRTC_RESOLVE
    int major = 0, minor = 0, n = 0;
    if (g_nvrtc.api.Version(&major, &minor) != NVRTC_SUCCESS ||
        g_nvrtc.api.GetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 ||
        n > (int)(sizeof g_nvrtc.archs / sizeof g_nvrtc.archs[0]) ||
        g_nvrtc.api.GetSupportedArchs(g_nvrtc.archs) != NVRTC_SUCCESS) {
        snprintf(g_nvrtc.message, sizeof g_nvrtc.message, "NVRTC did not report its version "
                 "and architectures");
        return;
    }
    g_nvrtc.n_archs = n;
    snprintf(g_nvrtc.version, sizeof g_nvrtc.version, "%d.%d", major, minor);
    g_nvrtc.status = MXATTN_OK;
}

static mxattn_status nvrtc_get(const nvrtc_api **out) {
    pthread_once(&g_nvrtc_once, load_nvrtc);
    if (g_nvrtc.status != MXATTN_OK) return mx_fail(g_nvrtc.status, "%s", g_nvrtc.message);
    *out = &g_nvrtc.api;
    return MXATTN_OK;
}

mxattn_status mx_nvrtc_version(char *out, size_t out_len) {
    if (!out || !out_len) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_nvrtc_version: out is NULL");
    const nvrtc_api *nv;
    mxattn_status st = nvrtc_get(&nv);
    if (st != MXATTN_OK) return st;
    snprintf(out, out_len, "%s", g_nvrtc.version);
    return MXATTN_OK;
}

/* --- architecture names --------------------------------------------------- */

/* "sm_90a" or "compute_90a": a prefix, a number NVRTC lists, and at most one
 * suffix letter ('a' arch-specific, 'f' family).  Whether the suffix exists
 * for that number NVRTC itself decides, with a clear message of its own. */
static mxattn_status check_arch(const char *arch) {
    const char *digits = NULL;
    if (!strncmp(arch, "sm_", 3)) digits = arch + 3;
    else if (!strncmp(arch, "compute_", 8)) digits = arch + 8;
    int number = 0, n_digits = 0;
    while (digits && isdigit((unsigned char)digits[n_digits]) && n_digits < 4)
        number = number * 10 + (digits[n_digits++] - '0');
    const char *suffix = digits ? digits + n_digits : "";
    int well_formed = n_digits > 0 && (!*suffix || (strchr("af", *suffix) && !suffix[1]));
    int supported = 0;
    for (int i = 0; well_formed && i < g_nvrtc.n_archs; i++) supported |= g_nvrtc.archs[i] == number;
    if (supported) return MXATTN_OK;

    char list[512] = "";
    for (int i = 0; i < g_nvrtc.n_archs; i++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%ssm_%d", i ? " " : "", g_nvrtc.archs[i]);
    }
    return mx_fail(MXATTN_ERROR_INVALID_VALUE, "unknown GPU architecture '%s': NVRTC %s targets %s "
                   "(with an 'a' suffix for 9.0, 10.0 and 12.0 features)",
                   arch, g_nvrtc.version, list);
}

/* --- ptxas -v parsing ------------------------------------------------------ */

/* The integer just before `label` in `line` ("16 registers"), or -1. */
static long number_before(const char *line, const char *label) {
    const char *at = strstr(line, label);
    if (!at) return -1;
    const char *p = at;
    while (p > line && p[-1] == ' ') p--;
    const char *end = p;
    while (p > line && isdigit((unsigned char)p[-1])) p--;
    return p < end ? strtol(p, NULL, 10) : -1;
}

/* The quoted name after `label` ("Compiling entry function 'k' for ..."). */
static int quoted_after(const char *line, const char *label, char *out, size_t out_len) {
    const char *at = strstr(line, label);
    if (!at) return 0;
    at += strlen(label);
    const char *close = strchr(at, '\'');
    if (!close || (size_t)(close - at) >= out_len) return 0;
    memcpy(out, at, (size_t)(close - at));
    out[close - at] = 0;
    return 1;
}

static void parse_usage_line(const char *line, const char *properties_of, const char *entry,
                             mx_ptxas_usage *out) {
    long v;
    if (strstr(line, "bytes stack frame") && !strcmp(properties_of, entry)) {
        if ((v = number_before(line, "bytes stack frame")) > out->stack_bytes) out->stack_bytes = (int)v;
        if ((v = number_before(line, "bytes spill stores")) >= 0) out->spill_store_bytes = (int)v;
        if ((v = number_before(line, "bytes spill loads")) >= 0) out->spill_load_bytes = (int)v;
    } else if (strstr(line, "Used ") && (v = number_before(line, "registers")) >= 0) {
        out->registers = (int)v;
        if ((v = number_before(line, "barriers")) >= 0) out->barriers = (int)v;
        if ((v = number_before(line, "bytes smem")) >= 0) out->shared_bytes = (int)v;
        if ((v = number_before(line, "bytes cumulative stack size")) > out->stack_bytes)
            out->stack_bytes = (int)v;
    } else if (strstr(line, "Compile time = ")) {
        out->ptxas_ms = strtod(strstr(line, "Compile time = ") + 15, NULL);
    }
}

/* ptxas prints, per entry function in turn:
 *   ptxas info    : Compiling entry function 'k' for 'sm_90a'
 *   ptxas info    : Function properties for k
 *   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 16 registers, used 1 barriers, 1024 bytes smem
 *   ptxas info    : Compile time = 8.667 ms
 * and "Function properties" blocks for non-inlined device functions, which
 * must not be mistaken for the entry's. */
int mx_ptxas_parse(const char *log, const char *kernel, mx_ptxas_usage *out) {
    memset(out, 0, sizeof *out);
    if (!log) return 0;
    char line[512], entry[256] = "", properties_of[256] = "";
    int in_target = 0;
    for (const char *p = log; *p;) {
        size_t len = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
        p += len + (p[len] == '\n');
        if (quoted_after(line, "Compiling entry function '", entry, sizeof entry)) {
            if (in_target) break;  /* our entry's block is over */
            in_target = kernel ? !strcmp(entry, kernel) : 1;
            out->found |= in_target;
            properties_of[0] = 0;
        } else if (strstr(line, "Function properties for ")) {
            snprintf(properties_of, sizeof properties_of, "%s",
                     strstr(line, "Function properties for ") + 24);
            properties_of[strcspn(properties_of, " \r")] = 0;
        } else if (in_target) {
            parse_usage_line(line, properties_of, entry, out);
        }
    }
    if (!out->found) memset(out, 0, sizeof *out);
    return out->found;
}

/* --- compiling ------------------------------------------------------------- */

static mxattn_status nvrtc_fail(nvrtcResult r, const char *call, const char *file, int line) {
    mxattn_status s = r == NVRTC_ERROR_OUT_OF_MEMORY ? MXATTN_ERROR_OUT_OF_MEMORY : MXATTN_ERROR_COMPILE;
    return mx_fail(s, "%s:%d: %s failed: %s", file, line, call, g_nvrtc.api.GetErrorString(r));
}

#define MX_NVRTC_CHECK(call)                                                       \
    do { nvrtcResult mx_nvrtc_r_ = (call);                                         \
         if (mx_nvrtc_r_ != NVRTC_SUCCESS) {                                       \
             st = nvrtc_fail(mx_nvrtc_r_, #call, __FILE__, __LINE__); goto fail; } \
    } while (0)

/* Writes `text` to $<env_var>/<sha><suffix> when the variable is set.  *path
 * gets the file's name ("" when the variable is unset). */
static mxattn_status dump(const char *env_var, const char *sha, const char *suffix,
                          const char *text, char *path, size_t path_len) {
    const char *dir = getenv(env_var);
    path[0] = 0;
    if (!dir || !*dir) return MXATTN_OK;
    snprintf(path, path_len, "%s/%s%s", dir, sha, suffix);
    /* Written beside and renamed into place: a module's kernels compiled
     * apart (jit/jit_image.c) dump the same source from several threads. */
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.%ld.%lx.tmp", path, (long)getpid(), (unsigned long)pthread_self());
    FILE *f = fopen(tmp, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f) ok = (fclose(f) == 0) && ok;
    if (ok) ok = rename(tmp, path) == 0;
    if (!ok) {
        int err = errno;
        remove(tmp);
        return mx_fail(MXATTN_ERROR_IO, "%s=%s: cannot write %s: %s", env_var, dir, path, strerror(err));
    }
    return MXATTN_OK;
}

static mxattn_status read_output(nvrtcProgram program, nvrtc_get_size_fn get_size,
                                 nvrtc_get_bytes_fn get, const char *what,
                                 char **out, size_t *out_size) {
    mxattn_status st = MXATTN_OK;
    size_t size = 0;
    *out = NULL;
    MX_NVRTC_CHECK(get_size(program, &size));
    *out = malloc(size + 1);  /* +1: the log and PTX are used as strings */
    if (!*out) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "no memory for %zu bytes of %s", size, what);
    MX_NVRTC_CHECK(get(program, *out));
    (*out)[size] = 0;
    if (out_size) *out_size = size;
    return MXATTN_OK;
fail:
    free(*out);
    *out = NULL;
    return mx_fail_context(st, "reading the %s", what);
}

static mxattn_status compile_failure(nvrtcResult r, const char *kernel, const char *arch,
                                     const char *sha, const char *source_path, const char *log,
                                     const char *const *options, int n_options) {
    size_t log_len = strlen(log);
    int shown = log_len > LOG_EXCERPT_BYTES ? LOG_EXCERPT_BYTES : (int)log_len;
    char more[64] = "";
    if (log_len > LOG_EXCERPT_BYTES)
        snprintf(more, sizeof more, "\n... (%zu more bytes of log)", log_len - LOG_EXCERPT_BYTES);
    /* A bad option is the caller's mistake, not the source's.  NVRTC reports
     * most as INVALID_OPTION, but an arch suffix that does not exist for that
     * number ("sm_80a") as a failed compilation with a command-line error. */
    if (r == NVRTC_ERROR_INVALID_OPTION || !strncmp(log, "Command-line error", 18)) {
        char joined[1024] = "";
        for (int i = 0; i < n_options; i++) {
            size_t used = strlen(joined);
            snprintf(joined + used, sizeof joined - used, "%s%s", i ? " " : "", options[i]);
        }
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "NVRTC rejected the options '%s': %.*s%s",
                       joined, shown, log, more);
    }
    return mx_fail(MXATTN_ERROR_COMPILE, "NVRTC could not compile %s for %s (%s; source sha256 %s%s%s):\n%.*s%s",
                   kernel, arch, g_nvrtc.api.GetErrorString(r), sha,
                   *source_path ? ", saved as " : "", source_path, shown, log, more);
}

mxattn_status mx_nvrtc_compile(const char *source, const char *kernel,
                               const mx_compile_options *opt, mx_compile_result *out) {
    if (!source || !kernel || !opt || !opt->arch || !out || (opt->n_extra > 0 && !opt->extra))
        return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_nvrtc_compile: source, kernel, options, "
                       "arch and out are required");
    memset(out, 0, sizeof *out);
    const nvrtc_api *nv;
    mxattn_status st = nvrtc_get(&nv);
    if (st != MXATTN_OK) return st;
    nvrtcProgram program = NULL;
    const char **options = NULL;
    char source_path[1024], ptx_path[1024], arch_option[64], program_name[160];
    MX_TRY(check_arch(opt->arch));
    mx_sha256_hex(source, strlen(source), out->source_sha256);
    MX_TRY(dump("MXATTN_DUMP_SOURCE", out->source_sha256, ".cu", source, source_path, sizeof source_path));

    int n_options = 0;
    options = malloc(sizeof *options * (size_t)(2 + N_BASE_OPTIONS + (opt->n_extra > 0 ? opt->n_extra : 0)));
    if (!options) { st = mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "no memory for NVRTC options"); goto fail; }
    snprintf(arch_option, sizeof arch_option, "-arch=%s", opt->arch);
    options[n_options++] = arch_option;
    for (int i = 0; i < N_BASE_OPTIONS; i++) options[n_options++] = base_options[i];
    if (want_lineinfo()) options[n_options++] = "-lineinfo";
    for (int i = 0; i < opt->n_extra; i++) options[n_options++] = opt->extra[i];

    snprintf(program_name, sizeof program_name, "%s.cu", kernel);
    MX_NVRTC_CHECK(nv->CreateProgram(&program, source, program_name, 0, NULL, NULL));
    double start = mx_now_ms();
    nvrtcResult compiled = nv->CompileProgram(program, n_options, options);
    out->compile_ms = mx_now_ms() - start;
    MX_TRY(read_output(program, nv->GetProgramLogSize, nv->GetProgramLog, "log", &out->log, NULL));
    if (compiled != NVRTC_SUCCESS) {
        st = compile_failure(compiled, kernel, opt->arch, out->source_sha256, source_path,
                             out->log, options, n_options);
        goto fail;
    }
    /* A compile for a real arch (sm_) yields both a cubin and the PTX it was
     * assembled from; a virtual one (compute_) only PTX. */
    if (!strncmp(opt->arch, "sm_", 3)) {
        char *cubin = NULL;
        MX_TRY(read_output(program, nv->GetCUBINSize, nv->GetCUBIN, "cubin", &cubin, &out->cubin_size));
        out->cubin = (unsigned char *)cubin;
    }
    const char *dump_ptx = getenv("MXATTN_DUMP_PTX");
    if (opt->want_ptx || (dump_ptx && *dump_ptx) || !out->cubin) {
        MX_TRY(read_output(program, nv->GetPTXSize, nv->GetPTX, "PTX", &out->ptx, NULL));
        char suffix[240];
        snprintf(suffix, sizeof suffix, "%s%s.%s.ptx", opt->dump_tag ? "." : "", opt->dump_tag ? opt->dump_tag : "",
                 opt->arch);
        MX_TRY(dump("MXATTN_DUMP_PTX", out->source_sha256, suffix, out->ptx, ptx_path, sizeof ptx_path));
    }
    mx_ptxas_parse(out->log, kernel, &out->usage);
fail:
    if (program) (void)nv->DestroyProgram(&program);
    free(options);
    if (st != MXATTN_OK) mx_compile_result_free(out);
    return st;
}

void mx_compile_result_free(mx_compile_result *r) {
    if (!r) return;
    free(r->cubin);
    free(r->ptx);
    free(r->log);
    memset(r, 0, sizeof *r);
}
