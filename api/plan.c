/* Plans: descriptor -> chosen configuration -> loaded kernel; and runs. */
#include "api/config_check.h"
#include "api/context.h"
#include "util/clock.h"
#include "util/err.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct mxattn_plan {
    mxattn_ctx *ctx;
    const mx_device *dev;
    mx_problem pr;
    mx_jit_kernel kernel;
    mx_kernel_args args;        /* everything but the pointers, filled once */
    void *workspace;
    mxattn_plan_info info;
};

const mx_problem *mx_plan_problem(const mxattn_plan *plan) { return &plan->pr; }
const mx_device *mx_plan_device(const mxattn_plan *plan) { return plan->dev; }

static void fill_args(const mx_problem *pr, mx_kernel_args *a) {
    const mxattn_problem *p = &pr->p;
    memset(a, 0, sizeof *a);
    a->q_sb = p->q_strides.batch; a->q_sh = p->q_strides.head; a->q_ss = p->q_strides.seq;
    a->k_sb = p->k_strides.batch; a->k_sh = p->k_strides.head; a->k_ss = p->k_strides.seq;
    a->v_sb = p->v_strides.batch; a->v_sh = p->v_strides.head; a->v_ss = p->v_strides.seq;
    a->o_sb = p->o_strides.batch; a->o_sh = p->o_strides.head; a->o_ss = p->o_strides.seq;
    a->batch = p->batch; a->heads_q = p->heads_q; a->heads_kv = p->heads_kv;
    a->seq_q = p->seq_q; a->seq_k = p->seq_k;
    a->causal_offset = p->causal == MXATTN_CAUSAL_BOTTOM_RIGHT ? p->seq_k - p->seq_q : 0;
    a->sm_scale = p->sm_scale;
    a->scale_log2 = (float)(p->sm_scale * 1.4426950408889634);
    a->gqa = p->heads_q / p->heads_kv;
}

/* Appends to a plan's note, "; " between parts, cut at its size. */
static void note_append(mxattn_plan_info *info, const char *text) {
    size_t used = strlen(info->note);
    snprintf(info->note + used, sizeof info->note - used, "%s%s", used ? "; " : "", text);
}

/* Uses a row of this SKU and problem tuned by another build (another driver,
 * NVRTC, mxattn version or template text), saying which fields differ. */
static void use_other_build(mxattn_plan *plan, const char *row_config, const mx_tune_key *ours,
                            const mx_tune_key *row, char *config, size_t cap) {
    char parts[200] = "";
    size_t n = 0;
    if (strcmp(row->template_hash, ours->template_hash))
        n += (size_t)snprintf(parts + n, sizeof parts - n, "template hash %.6s..", row->template_hash);
    if (n < sizeof parts && strcmp(row->mxattn_version, ours->mxattn_version))
        n += (size_t)snprintf(parts + n, sizeof parts - n, "%smxattn %s", n ? ", " : "", row->mxattn_version);
    if (n < sizeof parts && row->nvrtc_version != ours->nvrtc_version)
        n += (size_t)snprintf(parts + n, sizeof parts - n, "%sNVRTC %d", n ? ", " : "", row->nvrtc_version);
    if (n < sizeof parts && row->driver_version != ours->driver_version)
        snprintf(parts + n, sizeof parts - n, "%sdriver %d", n ? ", " : "", row->driver_version);
    snprintf(config, cap, "%s", row_config);
    if (!parts[0]) {
        /* This build's own row after all (the exact read failed, this one
         * did not): nothing to re-tune. */
        plan->info.config_source = "tuned";
        return;
    }
    char note[300];
    snprintf(note, sizeof note, "tuned on another build (%s): re-tune with `mxattn tune` for this one", parts);
    note_append(&plan->info, note);
    plan->info.config_source = "tuned-other-build";
}

/* The configuration to build: the caller's, the tuned one, or the default
 * (an empty knob string lets the templates fill their heuristic default).
 * The caller's was checked against the problem already (make_plan).  A tuned
 * row is checked the same way before it is used: the database may hold rows
 * imported from elsewhere, and one whose config named another shape
 * (head_dim=256 causal=0 lse=1 for a D=64 causal problem) or an illegal value
 * would build a kernel for another problem.  A row that fails is ignored,
 * the default is built, and the plan's info says why.
 *
 * Without a row for this build, the nearest row for the same SKU and problem
 * from another build (mx_cache_get_tune_nearest: the shipped results after
 * any template, driver or NVRTC change) is checked the same way and, when it
 * passes, used with config_source "tuned-other-build": a winner measured on
 * this GPU for this problem is a better guess than the heuristic default.
 * It does not stand in for tuning the user asked for: under first-use the
 * tuner runs as before and its winner is built (the other build's row only
 * when the run finds none), and under background the row serves this plan
 * while the tuner runs.  Under the default policy (off) it is used. */
static mxattn_status choose_config(mxattn_plan *plan, const char *explicit_config, const char *shape,
                                   char *config, size_t cap) {
    mxattn_ctx *ctx = plan->ctx;
    config[0] = 0;
    if (explicit_config) {
        /* Checked to be at most 255 characters: it fits, never cut. */
        snprintf(config, cap, "%s", explicit_config);
        plan->info.config_source = "explicit";
        return MXATTN_OK;
    }
    plan->info.config_source = "default";
    mx_jit_env env;
    mx_ctx_jit_env(ctx, plan->dev, &env);
    if (!env.cache) return MXATTN_OK;
    mx_tune_key key;
    mx_tune_result tuned;
    mx_ctx_tune_key(ctx, plan->dev, &plan->pr, &key);
    if (mx_cache_get_tune(env.cache, &key, &tuned) == MXATTN_OK) {
        /* v_terms, like smooth_k, is an accuracy choice outside the tuning
         * key, so a tuned tile serves both where the parameter space allows
         * it (only the wgmma kernel has a second V term: the check against
         * this problem's shape, which holds v_terms, refuses the others). */
        char why[400];
        if (!mx_api_check_tuned_config(ctx, shape, &tuned, why, sizeof why)) {
            char note[460];
            snprintf(note, sizeof note, "tuned row ignored: %s", why);
            note_append(&plan->info, note);
            return MXATTN_OK;
        }
        snprintf(config, cap, "%s", tuned.config);
        plan->info.config_source = "tuned";
        return MXATTN_OK;
    }
    mx_clear_error();
    mx_tune_key other_key;
    int have_other = 0;
    if (mx_cache_get_tune_nearest(env.cache, &key, &tuned, &other_key) == MXATTN_OK) {
        char why[400], note[460];
        have_other = mx_api_check_tuned_config(ctx, shape, &tuned, why, sizeof why);
        if (!have_other) {
            snprintf(note, sizeof note, "tuned row from another build ignored: %s", why);
            note_append(&plan->info, note);
        }
    }
    mx_clear_error();  /* no row, or one that does not read: the default */
    /* Tuning a two-term plan would store its winner under the one-term key. */
    if (ctx->tune_policy == MX_TUNE_OFF || plan->pr.p.v_terms != 1) {
        if (have_other) use_other_build(plan, tuned.config, &key, &other_key, config, cap);
        return MXATTN_OK;
    }
    mx_tune_sizes sizes;
    mx_tune_options opt;
    mx_tune_outcome outcome;
    mx_ctx_tune_sizes(&plan->pr, &sizes);
    if (ctx->tune_policy == MX_TUNE_BACKGROUND) {
        mx_ctx_tune_in_background(ctx, plan->dev, shape, &sizes, &key);
        if (have_other) use_other_build(plan, tuned.config, &key, &other_key, config, cap);
        return MXATTN_OK;
    }
    /* first-use: tune here, once per key, then build the winner. */
    mx_tune_options_init(&opt);
    opt.resume = 1;
    opt.max_candidates = MX_JIT_TUNE_CANDIDATES;
    opt.settle_ms = MX_JIT_TUNE_SETTLE_MS;
    if (mx_tune_run(&env, shape, &sizes, &key, &opt, &outcome) == MXATTN_OK && outcome.best[0]) {
        snprintf(config, cap, "%s", outcome.best);
        plan->info.config_source = "tuned";
    } else if (have_other) {
        use_other_build(plan, tuned.config, &key, &other_key, config, cap);
    }
    mx_clear_error();  /* a failed tuning run falls back to the other build's row or the default */
    return MXATTN_OK;
}

/* The heuristic default's knobs for this problem's sizes and the GPU's SM
 * count (the templates' default_knobs): a family may pick by them, as f16 at
 * D <= 64 keeps short queries on 64-row blocks and splits a small problem's
 * row blocks along the keys at D <= 128. */
static mxattn_status default_config(const mx_jit_env *env, const char *shape, const char *sizes, char *config,
                                    size_t cap) {
    char problem[320], *knobs = NULL;
    mx_jit_problem_text(env, sizes, problem, sizeof problem);
    mxattn_status st = mx_jit_gen_call(env, "default_knobs", shape, problem, &knobs);
    if (st == MXATTN_OK) snprintf(config, cap, "%s", knobs);
    free(knobs);
    return st;
}

static mxattn_status make_plan(mxattn_plan *plan, const mxattn_problem *p, const char *explicit_config) {
    mxattn_status st = MXATTN_OK;
    char shape[1024], sizes[256], config[512], params[1600];
    MX_TRY(mx_problem_resolve(p, &plan->pr));
    /* The caller's configuration is checked before the GPU is touched, so
     * that the message is the same on a machine without one: its grammar,
     * names and values first; then, on the GPU's architecture (sm_90a's where
     * there is none, as mxattn_candidates lists), its legality for this
     * problem. */
    if (explicit_config) MX_TRY(mx_api_check_config(plan->ctx, explicit_config, NULL));
    st = mx_ctx_device(plan->ctx, &plan->dev);
    if (st != MXATTN_OK) {
        if (!explicit_config) goto fail;
        char driver[1024];
        snprintf(driver, sizeof driver, "%s", mx_error_message());
        mx_problem_shape_params(&plan->pr, "sm_90a", shape, sizeof shape);
        mxattn_status checked = mx_api_check_config(plan->ctx, explicit_config, shape);
        if (checked == MXATTN_OK) mx_fail(st, "%s", driver);   /* the driver's message, not the check's */
        else st = checked;
        goto fail;
    }
    mx_problem_shape_params(&plan->pr, plan->dev->arch, shape, sizeof shape);
    mx_problem_sizes(&plan->pr, sizes, sizeof sizes);
    if (explicit_config) MX_TRY(mx_api_check_config(plan->ctx, explicit_config, shape));
    MX_TRY(choose_config(plan, explicit_config, shape, config, sizeof config));
    mx_jit_env env;
    mx_ctx_jit_env(plan->ctx, plan->dev, &env);
    if (!config[0]) MX_TRY(default_config(&env, shape, sizes, config, sizeof config));
    snprintf(params, sizeof params, "%s %s", shape, config);
    MX_TRY(mx_jit_build(&env, params, sizes, &plan->kernel));
    /* Zeroed: a persistent kernel's unit counters start at zero and each
     * launch leaves them so (blocks/wgmma_common.lua). */
    if (plan->kernel.launch.workspace_bytes)
        MX_TRY(mx_mem_alloc_zeroed(plan->dev, plan->kernel.launch.workspace_bytes, &plan->workspace));
    fill_args(&plan->pr, &plan->args);
    return MXATTN_OK;
fail:
    return st;
}

static void fill_info(mxattn_plan *plan, double t0) {
    mxattn_plan_info *info = &plan->info;
    const mx_jit_kernel *k = &plan->kernel;
    snprintf(info->config, sizeof info->config, "%s", k->knobs);
    snprintf(info->kernel_name, sizeof info->kernel_name, "%s", k->launch.steps[k->launch.main_step].name);
    info->cubin_from_cache = k->from_cache;
    info->compile_ms = k->compile_ms;
    info->registers = k->registers;
    info->shared_bytes = k->launch.steps[k->launch.main_step].smem_bytes + k->shared_bytes;
    info->spill_bytes = k->spill_bytes;
    info->workspace_bytes = k->launch.workspace_bytes;
    /* The templates know which knob that is; C does not keep its name. */
    mx_jit_env env;
    char *key_block = NULL;
    mx_ctx_gen_env(plan->ctx, plan->dev, &env);
    if (mx_jit_gen_call(&env, "key_block", k->params, NULL, &key_block) == MXATTN_OK) info->key_block = atoi(key_block);
    free(key_block);
    mx_clear_error();   /* a plan that works is not failed by its report */
    info->create_ms = mx_now_ms() - t0;
    /* The plan works either way; a binary that was not stored costs a
     * recompile on the next start, and the note says why. */
    info->cubin_stored = k->stored;
    if (!k->stored && k->store_error[0]) {
        char note[300];
        snprintf(note, sizeof note, "the binary was not stored: %s", k->store_error);
        note_append(info, note);
    }
}

mxattn_status mxattn_plan_create(mxattn_ctx *ctx, const mxattn_problem *p, const char *config,
                                 mxattn_plan **out) {
    double t0 = mx_now_ms();
    if (!out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_plan_create: out is NULL");
    *out = NULL;
    if (!ctx) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_plan_create: ctx is NULL");
    if (!p) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_plan_create: problem is NULL");
    mxattn_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory");
    plan->ctx = ctx;
    mxattn_status st = make_plan(plan, p, config);
    if (st != MXATTN_OK) {
        mxattn_plan_destroy(plan);
        return st;
    }
    fill_info(plan, t0);
    *out = plan;
    mx_clear_error();
    return MXATTN_OK;
}

mxattn_status mxattn_plan_get_info(const mxattn_plan *plan, mxattn_plan_info *info) {
    if (!plan || !info) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_plan_get_info: NULL argument");
    *info = plan->info;
    return MXATTN_OK;
}

void mxattn_plan_destroy(mxattn_plan *plan) {
    if (!plan) return;
    if (plan->dev) {
        mx_jit_env env;
        memset(&env, 0, sizeof env);
        env.dev = plan->dev;
        mx_jit_release(&env, &plan->kernel);
        mx_mem_free(plan->dev, plan->workspace);
    }
    free(plan);
}

mxattn_status mxattn_run(mxattn_plan *plan, const void *q, const void *k, const void *v, void *o,
                         float *lse, void *stream) {
    if (!plan) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_run: plan is NULL");
    mxattn_status st = mx_problem_check_pointers(&plan->pr, q, k, v, o, lse);
    if (st != MXATTN_OK) return st;
    const void *ptrs[4] = {q, k, v, o};
    const char *names[4] = {"q", "k", "v", "o"};
    for (int i = 0; i < 4; i++)
        if ((st = mx_pointer_check(plan->dev, ptrs[i], names[i])) != MXATTN_OK) return st;
    mx_kernel_args args = plan->args;
    args.q = q; args.k = k; args.v = v; args.o = o;
    args.lse = plan->pr.p.return_lse ? lse : NULL;
    args.ws = plan->workspace;
    return mx_launch_plan_run(plan->dev, &plan->kernel.launch, &args, (struct CUstream_st *)stream);
}

mxattn_status mxattn_candidates(mxattn_ctx *ctx, const mxattn_problem *p, char **configs, int max,
                                int *count) {
    if (!ctx || !p || !count || (max > 0 && !configs))
        return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_candidates: NULL argument");
    *count = 0;
    mx_problem pr;
    mxattn_status st = mx_problem_resolve(p, &pr);
    if (st != MXATTN_OK) return st;
    const mx_device *dev = NULL;
    if (mx_ctx_device(ctx, &dev) != MXATTN_OK) dev = NULL;   /* no GPU: the list for sm_90a, no SM count */
    mx_clear_error();
    mx_jit_env env;
    mx_ctx_gen_env(ctx, dev, &env);   /* listing candidates opens no database */
    /* The sizes with the GPU's SM count, as default_config asks for a plan's
     * default: a family may pick by it (f16 splits a small problem's row
     * blocks along the keys), and the header promises the plan's default first. */
    char shape[1024], sizes[256], problem[320], *text = NULL;
    mx_problem_shape_params(&pr, env.arch, shape, sizeof shape);
    mx_problem_sizes(&pr, sizes, sizeof sizes);
    mx_jit_problem_text(&env, sizes, problem, sizeof problem);
    st = mx_jit_gen_call(&env, "candidates", shape, problem, &text);
    if (st != MXATTN_OK) return st;
    int n = 0;
    char *save = NULL;  /* strtok's hidden state would race other threads and clobber the caller's */
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
        if (n >= max) continue;
        if (!(configs[n] = strdup(line))) {
            /* Hand back nothing rather than a list with holes. */
            for (int i = 0; i < n; i++) { free(configs[i]); configs[i] = NULL; }
            free(text);
            return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "mxattn_candidates: out of memory");
        }
    }
    *count = n;
    free(text);
    return MXATTN_OK;
}

void mxattn_free(void *p) { free(p); }
