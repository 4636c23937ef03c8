#include "runtime/launch_plan.h"
#include "util/err.h"
#include <stdio.h>
#include <string.h>

static mxattn_status parse_line(const char *line, mx_launch_plan *lp) {
    unsigned long long a = 0;
    unsigned idx = 0;
    mx_launch_step s;
    memset(&s, 0, sizeof s);
    if (sscanf(line, "workspace %llu", &a) == 1) { lp->workspace_bytes = (size_t)a; return MXATTN_OK; }
    if (sscanf(line, "wsoff %u %llu", &idx, &a) == 2 && idx < 8) { lp->ws_off[idx] = a; return MXATTN_OK; }
    mx_tmap_request t;
    if (sscanf(line, "tmap %d %c %u %u %d", &t.slot, &t.tensor, &t.box_cols, &t.box_rows, &t.swizzle_bytes) == 5) {
        if (lp->n_tmaps == MX_MAX_TMAPS || t.slot < 0 || t.slot >= MX_MAX_TMAPS || !strchr("qkvo", t.tensor))
            return mx_fail(MXATTN_ERROR_TEMPLATE, "bad tensor-map line '%.80s'", line);
        lp->tmaps[lp->n_tmaps++] = t;
        return MXATTN_OK;
    }
    if (sscanf(line, "kernel %127s %u %u %u %u %d", s.name, &s.grid.x, &s.grid.y, &s.grid.z,
               &s.threads, &s.smem_bytes) == 6) {
        if (lp->n_steps == MX_MAX_LAUNCH_STEPS)
            return mx_fail(MXATTN_ERROR_TEMPLATE, "launch plan has more than %d kernels", MX_MAX_LAUNCH_STEPS);
        lp->steps[lp->n_steps++] = s;
        return MXATTN_OK;
    }
    return mx_fail(MXATTN_ERROR_TEMPLATE, "templates returned a launch line mxattn cannot read: '%.80s'", line);
}

mxattn_status mx_launch_plan_parse(const char *text, mx_launch_plan *out) {
    memset(out, 0, sizeof *out);
    char line[512];
    for (const char *p = text; p && *p;) {
        size_t n = strcspn(p, "\n");
        if (n >= sizeof line) return mx_fail(MXATTN_ERROR_TEMPLATE, "launch line too long");
        memcpy(line, p, n);
        line[n] = 0;
        if (n > 0) {
            mxattn_status st = parse_line(line, out);
            if (st != MXATTN_OK) return st;
        }
        p += n + (p[n] == '\n');
    }
    if (out->n_steps == 0) return mx_fail(MXATTN_ERROR_TEMPLATE, "launch plan names no kernel");
    return MXATTN_OK;
}

void mx_launch_plan_names(const mx_launch_plan *lp, char *out, size_t cap) {
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < lp->n_steps && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? " " : "", lp->steps[i].name);
}

mxattn_status mx_launch_plan_bind(const mx_device *dev, struct CUmod_st *module, mx_launch_plan *lp) {
    for (int i = 0; i < lp->n_steps; i++) {
        mx_launch_step *s = &lp->steps[i];
        mxattn_status st = mx_module_function(dev, module, s->name, &s->fn);
        if (st == MXATTN_OK) st = mx_function_set_smem(dev, s->fn, s->smem_bytes);
        if (st != MXATTN_OK) return st;
    }
    return MXATTN_OK;
}

mxattn_status mx_launch_plan_run(const mx_device *dev, const mx_launch_plan *lp,
                                 mx_kernel_args *args, struct CUstream_st *stream) {
    memcpy(args->ws_off, lp->ws_off, sizeof args->ws_off);
    for (int i = 0; i < lp->n_steps; i++) {
        const mx_launch_step *s = &lp->steps[i];
        mx_dim3 block = {s->threads, 1, 1};
        mxattn_status st = mx_launch(dev, s->fn, s->grid, block, s->smem_bytes, stream, args);
        if (st != MXATTN_OK) return mx_fail_context(st, "launching %s", s->name);
    }
    return MXATTN_OK;
}
