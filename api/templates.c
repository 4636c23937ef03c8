/* The public calls over the templates alone (no GPU, no database): a
 * parameter table resolved, rendered, described, or compiled only. */
#include "api/context.h"
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One template call under the context's generator lock. */
static mxattn_status gen_call(mxattn_ctx *ctx, const char *fn, const char *a1, const char *a2, char **out) {
    mx_jit_env env;
    mx_ctx_gen_env(ctx, NULL, &env);
    return mx_jit_gen_call(&env, fn, a1, a2, out);
}

static mxattn_status text_call(const char *what, mxattn_ctx *ctx, const char *fn, const char *params, char **out) {
    if (!ctx || !out || (!params && strcmp(fn, "params_help")))
        return mx_fail(MXATTN_ERROR_NULL_POINTER, "%s: NULL argument", what);
    *out = NULL;
    return gen_call(ctx, fn, params, NULL, out);
}

mxattn_status mxattn_params_resolve(mxattn_ctx *ctx, const char *params, char **canonical) {
    return text_call("mxattn_params_resolve", ctx, "validate", params, canonical);
}

mxattn_status mxattn_render(mxattn_ctx *ctx, const char *params, char **source) {
    return text_call("mxattn_render", ctx, "render", params, source);
}

mxattn_status mxattn_params_help(mxattn_ctx *ctx, char **text) {
    return text_call("mxattn_params_help", ctx, "params_help", NULL, text);
}

mxattn_status mxattn_compile_options_init(mxattn_compile_options *o) {
    if (!o) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_compile_options_init: options is NULL");
    memset(o, 0, sizeof *o);
    return MXATTN_OK;
}

void mxattn_compile_result_free(mxattn_compile_result *r) {
    if (!r) return;
    free(r->ptx);
    free(r->cubin);
    r->ptx = NULL;
    r->cubin = NULL;
}

/* The sizes a compile-only plan is made for: the source does not depend on
 * them, only the grid, which is not compiled in. */
#define ONE_OF_EACH "batch=1 heads_q=1 heads_kv=1 seq_q=1 seq_k=1"

mxattn_status mxattn_compile(mxattn_ctx *ctx, const char *params, const mxattn_compile_options *opts,
                             mxattn_compile_result *out) {
    if (!ctx || !params || !out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_compile: NULL argument");
    memset(out, 0, sizeof *out);
    mxattn_compile_options defaults;
    mxattn_compile_options_init(&defaults);
    if (!opts) opts = &defaults;
    if ((opts->want_ptx || opts->want_cubin) && !opts->whole_module)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "mxattn_compile: the PTX and the binary come from a whole-module "
                       "compile (whole_module = 1)");
    mxattn_status st = MXATTN_OK;
    char *canonical = NULL, *source = NULL;
    mx_launch_plan lp;
    mx_compile_result r;
    mx_jit_image img;
    memset(&r, 0, sizeof r);
    memset(&img, 0, sizeof img);
    MX_TRY(gen_call(ctx, "validate", params, NULL, &canonical));
    MX_TRY(gen_call(ctx, "render", canonical, NULL, &source));
    pthread_mutex_lock(&ctx->gen_lock);
    st = mx_jit_launch_plan(ctx->gen, canonical, ONE_OF_EACH, &lp);
    pthread_mutex_unlock(&ctx->gen_lock);
    if (st != MXATTN_OK) goto fail;
    if (mx_params_get(canonical, "arch", out->arch, sizeof out->arch) != 1)
        snprintf(out->arch, sizeof out->arch, "sm_90a");
    const mx_launch_step *attn = &lp.steps[lp.main_step];
    snprintf(out->kernel_name, sizeof out->kernel_name, "%s", attn->name);
    out->kernels = lp.n_steps;
    out->shared_dynamic_bytes = attn->smem_bytes;
    const mx_ptxas_usage *u;
    if (opts->whole_module) {
        mx_compile_options opt = {.arch = out->arch, .want_ptx = opts->want_ptx};
        MX_TRY(mx_nvrtc_compile(source, attn->name, &opt, &r));
        u = &r.usage;
        out->compile_ms = r.compile_ms;
        out->binary_bytes = r.cubin_size;
        if (opts->want_ptx && r.ptx) { out->ptx = r.ptx; r.ptx = NULL; }
        if (opts->want_cubin && r.cubin) { out->cubin = r.cubin; r.cubin = NULL; }
    } else {
        MX_TRY(mx_jit_compile(source, out->arch, &lp, 1, &img));
        u = &img.usage;
        out->compile_ms = img.compile_ms;
        out->binary_bytes = img.size;
    }
    out->registers = u->registers;
    out->shared_static_bytes = u->shared_bytes;
    out->stack_bytes = u->stack_bytes;
    out->spill_store_bytes = u->spill_store_bytes;
    out->spill_load_bytes = u->spill_load_bytes;
    goto done;
fail:
    mxattn_compile_result_free(out);
done:
    mx_compile_result_free(&r);
    mx_jit_image_free(&img);
    free(canonical);
    free(source);
    return st;
}
