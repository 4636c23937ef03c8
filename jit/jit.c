#include "jit/jit.h"
#include "runtime/nvrtc.h"
#include "util/err.h"
#include "util/sha256.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mxattn_status mx_jit_gen_call(const mx_jit_env *env, const char *fn, const char *a1, const char *a2,
                              char **out) {
    pthread_mutex_lock(env->gen_lock);
    mxattn_status st = mx_gen_call(env->gen, fn, a1, a2, out);
    pthread_mutex_unlock(env->gen_lock);
    return st;
}

void mx_jit_problem_text(const mx_jit_env *env, const char *sizes, char *out, size_t cap) {
    if (env->dev) snprintf(out, cap, "%s sms=%d", sizes, env->dev->sm_count);
    else snprintf(out, cap, "%s", sizes);
}

void mx_jit_plan_from_gen(const mx_gen_launch *in, mx_launch_plan *out) {
    _Static_assert(MX_GEN_MAX_KERNELS == MX_MAX_LAUNCH_STEPS && MX_GEN_MAX_TMAPS == MX_MAX_TMAPS &&
                   MX_GEN_MAX_WS_OFF == sizeof out->ws_off / sizeof out->ws_off[0],
                   "gen's and runtime's launch plans hold as much");
    memset(out, 0, sizeof *out);
    out->workspace_bytes = (size_t)in->workspace;
    for (int i = 0; i < MX_GEN_MAX_WS_OFF; i++) out->ws_off[i] = in->ws_off[i];
    out->n_steps = in->n_kernels;
    out->main_step = in->main;
    for (int i = 0; i < in->n_kernels; i++) {
        const mx_gen_kernel *k = &in->kernels[i];
        mx_launch_step *s = &out->steps[i];
        snprintf(s->name, sizeof s->name, "%s", k->name);
        s->grid = (mx_dim3){k->grid[0], k->grid[1], k->grid[2]};
        s->threads = k->block;
        s->smem_bytes = k->smem;
        s->resident = k->resident;
        s->pdl = k->pdl;
    }
    out->n_tmaps = in->n_tmaps;
    for (int i = 0; i < in->n_tmaps; i++) {
        const mx_gen_tmap *t = &in->tmaps[i];
        out->tmaps[i] = (mx_tmap_request){.slot = t->slot, .tensor = t->tensor, .head_dim = t->head_dim,
                                          .ws_section = t->section, .elem_bytes = t->elem_bytes, .rows = t->rows,
                                          .heads = t->heads, .batch = t->batch, .box_cols = t->box_cols,
                                          .box_rows = t->box_rows, .swizzle_bytes = t->swizzle};
    }
}

mxattn_status mx_jit_launch_plan(mx_gen *g, const char *params, const char *sizes, mx_launch_plan *out) {
    mx_gen_launch gl;
    mxattn_status st = mx_gen_launch_plan(g, params, sizes, &gl);
    if (st == MXATTN_OK) mx_jit_plan_from_gen(&gl, out);
    else memset(out, 0, sizeof *out);
    return st;
}

int mx_jit_nvrtc_version(void) {
    char v[32];
    int major = 0, minor = 0;
    if (mx_nvrtc_version(v, sizeof v) != MXATTN_OK || sscanf(v, "%d.%d", &major, &minor) < 1) return 0;
    return major * 1000 + minor * 10;
}

/* Everything that changes the binary goes into its key (STYLE.md). */
static void kernel_key(const char *source, const char *arch, int nvrtc, char out[65]) {
    mx_sha256 c;
    uint8_t d[32];
    char extra[128];
    snprintf(extra, sizeof extra, "\n--arch=%s --nvrtc=%d --opts=", arch, nvrtc);
    mx_sha256_init(&c);
    mx_sha256_update(&c, source, strlen(source));
    mx_sha256_update(&c, extra, strlen(extra));
    mx_sha256_update(&c, mx_nvrtc_base_options(), strlen(mx_nvrtc_base_options()));
    mx_sha256_final(&c, d);
    for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

/* The binary: from the cache, else NVRTC (and then into the cache). */
static mxattn_status get_cubin(const mx_jit_env *env, const char *source, mx_jit_kernel *k,
                               mx_kernel_record *rec, mx_jit_image *img) {
    int nvrtc = mx_jit_nvrtc_version();
    kernel_key(source, env->arch, nvrtc, k->key);
    if (env->cache) {
        mxattn_status st = mx_cache_get_kernel(env->cache, k->key, env->arch, rec);
        if (st == MXATTN_OK) {
            k->from_cache = 1;
            k->stored = 1;
            k->registers = rec->registers;
            k->shared_bytes = rec->shared_bytes;
            k->spill_bytes = rec->spill_bytes;
            return MXATTN_OK;
        }
        /* A missing or corrupt row just means we compile again. */
        if (st != MXATTN_ERROR_NOT_FOUND && st != MXATTN_ERROR_CACHE_CORRUPT) return st;
    }
    mxattn_status st = mx_jit_compile(source, env->arch, &k->launch, !env->whole_module, img);
    if (st != MXATTN_OK) return st;
    k->compile_ms = img->compile_ms;
    k->registers = img->usage.registers;
    k->shared_bytes = img->usage.shared_bytes;
    k->spill_bytes = img->usage.spill_store_bytes + img->usage.spill_load_bytes;
    memset(rec, 0, sizeof *rec);
    snprintf(rec->key, sizeof rec->key, "%s", k->key);
    snprintf(rec->arch, sizeof rec->arch, "%s", env->arch);
    rec->nvrtc_version = nvrtc;
    mx_launch_plan_names(&k->launch, rec->kernel_names, sizeof rec->kernel_names);
    rec->cubin = img->data;
    rec->cubin_size = img->size;
    rec->compile_ms = img->compile_ms;
    rec->registers = k->registers;
    rec->shared_bytes = k->shared_bytes;
    rec->spill_bytes = k->spill_bytes;
    mx_jit_store(env, rec, k);
    return MXATTN_OK;
}

void mx_jit_store(const mx_jit_env *env, const mx_kernel_record *rec, mx_jit_kernel *k) {
    k->stored = 0;
    k->store_status = MXATTN_OK;
    k->store_error[0] = 0;
    if (!env->cache) return;
    /* A cache that cannot be written (full disk, read-only, busy) costs speed
     * on the next start, not this result: keep the kernel, and say that it
     * was not stored so the caller can report it. */
    mxattn_status st = mx_cache_put_kernel(env->cache, rec);
    if (st == MXATTN_OK) {
        k->stored = 1;
        return;
    }
    k->store_status = st;
    snprintf(k->store_error, sizeof k->store_error, "%s", mx_error_message());
    mx_clear_error();
}

/* Each cubin of the image into its own module (one for a one-cubin image). */
static mxattn_status load_modules(const mx_device *dev, const void *image, size_t size, mx_jit_kernel *k) {
    const unsigned char *parts[MX_MAX_LAUNCH_STEPS];
    size_t sizes[MX_MAX_LAUNCH_STEPS];
    int n = 0;
    mxattn_status st = mx_jit_image_parts(image, size, parts, sizes, MX_MAX_LAUNCH_STEPS, &n);
    for (int i = 0; st == MXATTN_OK && i < n; i++) {
        st = mx_module_load(dev, parts[i], sizes[i], &k->modules[i]);
        if (st == MXATTN_OK) k->n_modules = i + 1;
    }
    return st;
}

mxattn_status mx_jit_build(const mx_jit_env *env, const char *params, const char *sizes,
                           mx_jit_kernel *out) {
    mxattn_status st = MXATTN_OK;
    char *canonical = NULL, *knobs = NULL, *source = NULL;
    mx_kernel_record rec;
    mx_jit_image img;
    memset(out, 0, sizeof *out);
    memset(&rec, 0, sizeof rec);
    memset(&img, 0, sizeof img);
    MX_TRY(mx_jit_gen_call(env, "validate", params, NULL, &canonical));
    MX_TRY(mx_jit_gen_call(env, "knobs", params, NULL, &knobs));
    MX_TRY(mx_jit_gen_call(env, "render", canonical, NULL, &source));
    pthread_mutex_lock(env->gen_lock);
    st = mx_jit_launch_plan(env->gen, canonical, sizes, &out->launch);
    pthread_mutex_unlock(env->gen_lock);
    if (st != MXATTN_OK) goto fail;
    snprintf(out->params, sizeof out->params, "%s", canonical);
    snprintf(out->knobs, sizeof out->knobs, "%s", knobs);
    MX_TRY(get_cubin(env, source, out, &rec, &img));
    if (env->dev) {
        MX_TRY(load_modules(env->dev, out->from_cache ? rec.cubin : img.data,
                            out->from_cache ? rec.cubin_size : img.size, out));
        MX_TRY(mx_launch_plan_bind_modules(env->dev, out->modules, out->n_modules, &out->launch));
    }
    goto done;
fail:
    mx_jit_release(env, out);
done:
    if (out->from_cache) mx_kernel_record_release(&rec);
    mx_jit_image_free(&img);
    free(canonical); free(knobs); free(source);
    return st;
}

void mx_jit_release(const mx_jit_env *env, mx_jit_kernel *k) {
    for (int i = 0; i < k->n_modules; i++)
        if (k->modules[i] && env->dev) mx_module_unload(env->dev, k->modules[i]);
    memset(k->modules, 0, sizeof k->modules);
    k->n_modules = 0;
}
