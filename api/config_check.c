/* Configurations against the problem and the parameter space (config_check.h). */
#include "api/config_check.h"
#include "api/context.h"
#include "util/err.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mxattn_status mx_api_check_config(mxattn_ctx *ctx, const char *config, const char *shape) {
    mx_jit_env env;
    mx_ctx_gen_env(ctx, NULL, &env);   /* the templates only: no database, no device */
    char *checked = NULL;
    mxattn_status st = mx_jit_gen_call(&env, "check_config", config ? config : "", shape, &checked);
    free(checked);
    return st;
}

/* A key's text field goes into the shape text as one token's value: a name
 * ("f16", "bhnd"), never text holding a space that would add tokens. */
static int is_name(const char *s, size_t cap) {
    if (!memchr(s, 0, cap) || !*s) return 0;
    for (; *s; s++)
        if (!(*s == '_' || *s == '-' || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
            return 0;
    return 1;
}

static int refuse(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (cap) vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return 0;
}

/* Runs the check with the thread's message saved and put back, so that an
 * import or a plan that goes on after a refused row reports its own outcome. */
static int check_saving_error(mxattn_ctx *ctx, const char *shape, const mx_tune_result *r, char *why, size_t cap) {
    if (cap) why[0] = 0;
    if (!memchr(r->config, 0, sizeof r->config)) return refuse(why, cap, "config is not a terminated string");
    /* The tuner stores every knob of its winner; an empty row would pass for
     * "tuned" while building the default. */
    if (!r->config[strspn(r->config, " ")]) return refuse(why, cap, "config is empty");
    if (!isfinite(r->median_ms) || r->median_ms <= MX_TUNE_MIN_MEDIAN_MS)
        return refuse(why, cap, "median_ms %g is not a plausible time (finite, > %g ms)", r->median_ms,
                      MX_TUNE_MIN_MEDIAN_MS);
    if (!isfinite(r->default_ms) || r->default_ms < 0)
        return refuse(why, cap, "default_ms %g is not finite and >= 0", r->default_ms);
    if (!isfinite(r->tops) || r->tops < 0) return refuse(why, cap, "tops %g is not finite and >= 0", r->tops);
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", mx_error_message());
    mxattn_status st = mx_api_check_config(ctx, r->config, shape);
    if (st != MXATTN_OK && cap) snprintf(why, cap, "%s", mx_error_message());
    if (saved[0]) mx_fail(MXATTN_ERROR_INTERNAL, "%s", saved);
    else mx_clear_error();
    return st == MXATTN_OK;
}

int mx_api_check_tuned_config(mxattn_ctx *ctx, const char *shape, const mx_tune_result *r, char *why, size_t why_cap) {
    return check_saving_error(ctx, shape, r, why, why_cap);
}

int mx_api_check_tune_row(void *arg, const mx_tune_key *key, const mx_tune_result *r, char *why, size_t why_cap) {
    mxattn_ctx *ctx = arg;
    const struct { const char *name; const char *v; size_t cap; } names[] = {
        {"family", key->family, sizeof key->family}, {"dtype", key->dtype, sizeof key->dtype},
        {"out_dtype", key->out_dtype, sizeof key->out_dtype}, {"layout", key->layout, sizeof key->layout}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!is_name(names[i].v, names[i].cap))
            return refuse(why, why_cap, "key's %s is not a name", names[i].name);
    if ((unsigned)key->causal > MXATTN_CAUSAL_BOTTOM_RIGHT)
        return refuse(why, why_cap, "key's causal %d is not NONE, TOP_LEFT or BOTTOM_RIGHT", key->causal);
    if (key->head_dim < 8 || key->head_dim > 256 || key->gqa < 1 || key->compute_capability < 0 ||
        key->compute_capability > 1000)
        return refuse(why, why_cap, "key's head_dim %d, gqa %d or compute capability %d is out of range",
                      key->head_dim, key->gqa, key->compute_capability);
    /* The shape a plan of this key's problem would build, with the defaults
     * of what the key does not hold (lse=0, smooth_k=1, v_terms=1, the widest
     * alignment head_dim allows): the row's knobs must be legal for it. */
    char arch[16], shape[512];
    mx_arch_for(key->compute_capability / 10, key->compute_capability % 10, arch, sizeof arch);
    int align = key->head_dim % 8 == 0 ? 8 : key->head_dim % 4 == 0 ? 4 : key->head_dim % 2 == 0 ? 2 : 1;
    snprintf(shape, sizeof shape, "family=%s arch=%s head_dim=%d dtype=%s out_dtype=%s causal=%d align=%d gqa=%d layout=%s",
             key->family, arch, key->head_dim, key->dtype, key->out_dtype, key->causal != MXATTN_CAUSAL_NONE, align,
             key->gqa, key->layout);
    return check_saving_error(ctx, shape, r, why, why_cap);
}
