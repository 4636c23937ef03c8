#include "gen_harness.h"
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

char *gen_call(mx_gen *g, const char *fn, const char *a1, const char *a2) {
    char *out = NULL;
    mxattn_status st = mx_gen_call(g, fn, a1, a2, &out);
    if (st != MXATTN_OK) fail_msg("%s(%s): %s", fn, a1 ? a1 : "", mxattn_last_error());
    return out;
}

int gen_plan_kernels(const char *plan, gen_plan_kernel *out, int max) {
    int n = 0;
    for (const char *k = strstr(plan, "kernel "); k; k = strstr(k + 1, "kernel "), n++) {
        gen_plan_kernel line = {.resident = 0};
        /* The optional seventh number must sit on the kernel's own line. */
        char text[256];
        snprintf(text, sizeof text, "%.*s", (int)strcspn(k, "\n"), k);
        int fields = sscanf(text, "kernel %127s %u %u %u %u %u %d", line.name, &line.grid[0], &line.grid[1],
                            &line.grid[2], &line.threads, &line.smem, &line.resident);
        if (fields != 6 && fields != 7) fail_msg("malformed launch plan line: %.80s", k);
        if (n < max) out[n] = line;
    }
    return n;
}

void gen_plan_last_kernel(const char *plan, char *name, size_t cap) {
    gen_plan_kernel k[16];
    int n = gen_plan_kernels(plan, k, 16);
    if (n < 1 || n > 16) fail_msg("launch plan with %d kernels: %.80s", n, plan);
    snprintf(name, cap, "%s", k[n - 1].name);
}

char *gen_launch(mx_gen *g, const char *params, const char *shape, gen_plan_kernel *k, int cap, int expect) {
    char *lp = gen_call(g, "launch", params, shape);
    assert_int_equal(gen_plan_kernels(lp, k, cap), expect);
    return lp;
}

void expect_plan_kernel(const gen_plan_kernel *k, unsigned gx, unsigned gy, unsigned gz, unsigned threads) {
    if (k->grid[0] != gx || k->grid[1] != gy || k->grid[2] != gz || k->threads != threads)
        fail_msg("%s: grid %u %u %u of %u threads, want %u %u %u of %u", k->name, k->grid[0], k->grid[1], k->grid[2],
                 k->threads, gx, gy, gz, threads);
}

unsigned long long gen_plan_value(const char *plan, const char *key) {
    unsigned long long v = 0;
    const char *at = strstr(plan, key);
    if (at) sscanf(at + strlen(key), "%llu", &v);
    return v;
}

void gen_expect_invalid(mx_gen *g, const char *params, const char *needle) {
    char *out = NULL;
    assert_int_equal(mx_gen_call(g, "render", params, NULL, &out), MXATTN_ERROR_INVALID_VALUE);
    if (!strstr(mxattn_last_error(), needle)) fail_msg("'%s': message '%s' lacks '%s'", params, mxattn_last_error(), needle);
    assert_null(out);
}

void gen_expect_invalid_cases(mx_gen *g, const gen_invalid_case *cases, size_t n) {
    for (size_t i = 0; i < n; i++) gen_expect_invalid(g, cases[i].params, cases[i].needle);
}

int gen_expect_candidates_valid(mx_gen *g, const char *params, void (*check)(const char *canon)) {
    char *cands = gen_call(g, "candidates", params, NULL);
    int n = 0;
    for (char *line = strtok(cands, "\n"); line; line = strtok(NULL, "\n"), n++) {
        char with[768], *canon = NULL;
        snprintf(with, sizeof with, "%s %s", params, line);
        if (mx_gen_call(g, "validate", with, NULL, &canon) != MXATTN_OK)
            fail_msg("candidate '%s' of '%s' is refused: %s", line, params, mxattn_last_error());
        if (check) check(canon);
        free(canon);
    }
    free(cands);
    return n;
}

void gen_expect_valid(mx_gen *g, const char *prefix, const char *const *tables, size_t n, const char *needle) {
    for (size_t i = 0; i < n; i++) {
        char params[256];
        snprintf(params, sizeof params, "%s %s", prefix, tables[i]);
        char *canon = gen_call(g, "validate", params, NULL);
        if (!strstr(canon, needle)) fail_msg("'%s': canonical '%s' lacks '%s'", params, canon, needle);
        free(canon);
    }
}

void expect_lean_wgmma_kernel(const char *params, const char *label, const mx_compile_result *r) {
    assert_true(r->usage.found);
    printf("  %-60s %3d registers, %d spill bytes\n", label, r->usage.registers,
           r->usage.spill_store_bytes + r->usage.spill_load_bytes);
    if (r->usage.spill_store_bytes || r->usage.spill_load_bytes || r->usage.stack_bytes)
        fail_msg("%s: spills (%d stored, %d loaded, stack %d)", params, r->usage.spill_store_bytes,
                 r->usage.spill_load_bytes, r->usage.stack_bytes);
    if (strstr(r->log, "serialized") || strstr(r->log, "C7508") || strstr(r->log, "C7510"))
        fail_msg("%s: %s", params, r->log);
}

int expect_three_consumer_kernels(int (*compile)(const char *, mx_compile_result *), const char *prefix,
                                  const char *const *cases, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char params[256];
        snprintf(params, sizeof params, "%s %s", prefix, cases[i]);
        mx_compile_result r;
        if (!compile(params, &r)) return 0;
        if (strstr(params, "warps=16") &&
            (!strstr(r.ptx, "setmaxnreg.inc.sync.aligned.u32 160") || !strstr(r.ptx, "setmaxnreg.dec.sync.aligned.u32 24")))
            fail_msg("%s: a producer beside three consumers needs setmaxnreg 24 + 3 x 160 (512 threads, 128 registers "
                     "each at launch)", params);
        expect_lean_wgmma_kernel(params, cases[i], &r);
        mx_compile_result_free(&r);
    }
    return 1;
}

void gen_params_with(char *out, size_t cap, const char *family, int head_dim, const char *knobs,
                     const char *extra) {
    char copy[256], kept[256] = "";
    snprintf(copy, sizeof copy, "%s", knobs);
    char *save = NULL;
    for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        char key[40], spaced[48];
        snprintf(key, sizeof key, "%.*s=", (int)strcspn(t, "="), t);
        snprintf(spaced, sizeof spaced, " %s", key);
        if (strncmp(extra, key, strlen(key)) == 0 || strstr(extra, spaced)) continue;
        size_t n = strlen(kept);
        snprintf(kept + n, sizeof kept - n, " %s", t);
    }
    snprintf(out, cap, "family=%s head_dim=%d%s %s", family, head_dim, kept, extra);
}

char *gen_render_stable(mx_gen *g, const char *params, const char *family) {
    char *canon = gen_call(g, "validate", params, NULL);
    char *a = gen_call(g, "render", params, NULL), *b = gen_call(g, "render", canon, NULL);
    char *c = gen_call(g, "render", params, NULL);
    assert_string_equal(a, b);
    assert_string_equal(a, c);
    char needle[64];
    snprintf(needle, sizeof needle, "params: family=%s ", family);
    if (!strstr(a, needle)) fail_msg("'%s': the source's params line does not name family %s", params, family);
    assert_null(strstr(a, "#include"));
    free(b);
    free(c);
    free(canon);
    return a;
}

int gen_run_tests(mx_gen **g, const struct CMUnitTest *tests, size_t count) {
    if (mx_gen_open(g) != MXATTN_OK) {
        printf("mx_gen_open: %s\n", mxattn_last_error());
        return 1;
    }
    int failed = _cmocka_run_group_tests("tests", tests, count, NULL, NULL);
    mx_gen_close(*g);
    return failed;
}

void gen_expect_contains(const char *src, const char *what, const char *const *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strstr(src, want[i])) fail_msg("%s: the source lacks '%s'", what, want[i]);
}

char *gen_render_with_header(mx_gen *g, const char *params, const char *shape, char *header, size_t cap) {
    char *src = gen_call(g, "render", params, NULL);
    char *lp = gen_call(g, "launch", params, shape);
    gen_plan_kernel k;
    assert_int_equal(gen_plan_kernels(lp, &k, 1), 1);
    free(lp);
    snprintf(header, cap, "\n#define KERNEL_NAME %.150s\n", k.name);
    char guard[192];
    snprintf(guard, sizeof guard, "|| defined(MX_COMPILE_%.150s)\n", k.name);
    assert_non_null(strstr(src, guard));
    assert_null(strstr(src, "${"));
    return src;
}

void gen_expect_stable_sweep(mx_gen *g, const char *family, const int *dims, size_t n_dims, const char *(*knobs)(int d),
                             const char *const *extra, size_t n_extra, const char *const *want, size_t n_want) {
    for (size_t i = 0; i < n_dims; i++)
        for (size_t j = 0; j < n_extra; j++) {
            char params[256];
            gen_params_with(params, sizeof params, family, dims[i], knobs(dims[i]), extra[j]);
            char *a = gen_render_stable(g, params, family);
            gen_expect_contains(a, params, want, n_want);
            free(a);
        }
}
