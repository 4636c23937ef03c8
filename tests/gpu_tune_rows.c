/* A tuned row is checked against the problem before a plan uses it: one that
 * names another shape (the finding: head_dim=256 causal=0 lse=1 for a D=64
 * causal problem, which read out of bounds, wrote an LSE through NULL and
 * left the output unmasked) or claims an impossible time is ignored, the
 * default is built, and the plan's info says why; a legal row is used.
 * Without a GPU it skips (77); tests/test_config_check.c covers the check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "api/context.h"
#include "support/fixtures.h"
#include "support/gpu_harness.h"
#include "util/err.h"

static char g_dir[64], g_db[128];

static mxattn_problem d64_causal(void) {
    mxattn_problem p;
    mxattn_problem_init(&p, "f16", 64);
    p.batch = 1;
    p.heads_q = 4; p.heads_kv = 1;
    p.seq_q = p.seq_k = 512;
    p.causal = MXATTN_CAUSAL_BOTTOM_RIGHT;
    return p;
}

/* The tuning key this build gives the problem on this GPU. */
static mx_tune_key this_key(mxattn_ctx *ctx, const mxattn_problem *p) {
    const mx_device *dev = NULL;
    assert_int_equal(mx_ctx_device(ctx, &dev), MXATTN_OK);
    mx_problem pr;
    assert_int_equal(mx_problem_resolve(p, &pr), MXATTN_OK);
    mx_tune_key key;
    mx_ctx_tune_key(ctx, dev, &pr, &key);
    return key;
}

/* Stores `config` at `ms` under `key`. */
static void put_row(mxattn_ctx *ctx, const mx_tune_key *key, const char *config, double ms) {
    mx_tune_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.config, sizeof r.config, "%s", config);
    r.median_ms = ms;
    r.default_ms = 0.1;
    r.tops = 10;
    mx_cache *cache = mx_ctx_cache(ctx);
    assert_non_null(cache);
    if (mx_cache_put_tune(cache, key, &r) != MXATTN_OK) fail_msg("put_tune: %s", mxattn_last_error());
}

/* Stores `config` at `ms` as the tuned row of the problem's key. */
static void store_row(mxattn_ctx *ctx, const mxattn_problem *p, const char *config, double ms) {
    mx_tune_key key = this_key(ctx, p);
    put_row(ctx, &key, config, ms);
}

static mxattn_plan_info plan_info(mxattn_ctx *ctx, const mxattn_problem *p) {
    mxattn_plan *plan = NULL;
    if (mxattn_plan_create(ctx, p, NULL, &plan) != MXATTN_OK) fail_msg("plan: %s", mxattn_last_error());
    mxattn_plan_info info;
    assert_int_equal(mxattn_plan_get_info(plan, &info), MXATTN_OK);
    mxattn_plan_destroy(plan);
    return info;
}

static void bad_rows_are_ignored_and_said(void **state) {
    mxattn_problem p = d64_causal();
    mxattn_ctx *plain = untuned_ctx(NULL);
    mxattn_plan_info def = plan_info(plain, &p);
    assert_string_equal(def.config_source, "default");
    /* A legal tile other than the default, for the rows below. */
    char *configs[2] = {NULL, NULL};
    int count = 0;
    assert_int_equal(mxattn_candidates(plain, &p, configs, 2, &count), MXATTN_OK);
    assert_true(count >= 2);
    mxattn_destroy(plain);

    const struct { const char *config; double ms; const char *why; } bad[] = {
        {"head_dim=256 causal=0 lse=1", 0.05, "set by the problem"},
        {"block_m=48", 0.05, "block_m=48"},
        {"block_m:64", 0.05, "block_m:64"},
        {configs[1], 1e-300, "median_ms"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mxattn_ctx *ctx = untuned_ctx(g_db);
        store_row(ctx, &p, bad[i].config, bad[i].ms);
        mxattn_plan_info info = plan_info(ctx, &p);
        printf("# row '%s' (%g ms): %s, %s\n", bad[i].config, bad[i].ms, info.config_source, info.note);
        assert_string_equal(info.config_source, "default");
        assert_string_equal(info.config, def.config);
        assert_non_null(strstr(info.note, "tuned row ignored"));
        assert_non_null(strstr(info.note, bad[i].why));
        mxattn_destroy(ctx);
    }
    /* A legal row is used as it is. */
    mxattn_ctx *ctx = untuned_ctx(g_db);
    store_row(ctx, &p, configs[1], 0.05);
    mxattn_plan_info info = plan_info(ctx, &p);
    assert_string_equal(info.config_source, "tuned");
    assert_string_equal(info.config, configs[1]);
    assert_null(strstr(info.note, "tuned row ignored"));
    mxattn_destroy(ctx);
    mxattn_free(configs[0]);
    mxattn_free(configs[1]);
}

/* Without a row for this build, a plan takes the row tuned for the same GPU
 * and problem by another build (another driver and template text: the
 * shipped rows after an upgrade), checked as any row is, and says so; a row
 * of another GPU name or SM count is never taken; this build's row wins. */
static void rows_from_another_build(void **state) {
    (void)state;
    mxattn_problem p = d64_causal();
    mxattn_ctx *plain = untuned_ctx(NULL);
    mxattn_plan_info def = plan_info(plain, &p);
    char *configs[2] = {NULL, NULL};
    int count = 0;
    assert_int_equal(mxattn_candidates(plain, &p, configs, 2, &count), MXATTN_OK);
    assert_true(count >= 2);
    assert_string_not_equal(configs[1], def.config);
    mxattn_destroy(plain);
    char db[160];

    /* Another GPU name, another SM count: not this SKU. */
    snprintf(db, sizeof db, "%s/other-sku.db", g_dir);
    mxattn_ctx *ctx = untuned_ctx(db);
    mx_tune_key key = this_key(ctx, &p), other = key;
    size_t name_len = strlen(other.gpu_name);
    assert_true(name_len + sizeof " NVL" <= sizeof other.gpu_name);
    memcpy(other.gpu_name + name_len, " NVL", sizeof " NVL");
    other.driver_version += 10;
    put_row(ctx, &other, configs[1], 0.05);
    other = key;
    other.sm_count -= 2;
    other.driver_version += 10;
    put_row(ctx, &other, configs[1], 0.05);
    mxattn_plan_info info = plan_info(ctx, &p);
    printf("# other SKU: %s, '%s'\n", info.config_source, info.note);
    assert_string_equal(info.config_source, "default");
    assert_string_equal(info.config, def.config);
    assert_null(strstr(info.note, "another build"));
    mxattn_destroy(ctx);

    /* Another build of this SKU: used, and said. */
    snprintf(db, sizeof db, "%s/other-build.db", g_dir);
    ctx = untuned_ctx(db);
    other = key;
    memset(other.template_hash, '0', 64);
    other.driver_version += 10;
    put_row(ctx, &other, configs[1], 0.05);
    info = plan_info(ctx, &p);
    printf("# other build: %s, %s, '%s'\n", info.config_source, info.config, info.note);
    assert_string_equal(info.config_source, "tuned-other-build");
    assert_string_equal(info.config, configs[1]);
    assert_non_null(strstr(info.note, "tuned on another build"));
    assert_non_null(strstr(info.note, "template hash 000000.."));
    char driver[32];
    snprintf(driver, sizeof driver, "driver %d", other.driver_version);
    assert_non_null(strstr(info.note, driver));
    assert_null(strstr(info.note, "NVRTC"));
    assert_non_null(strstr(info.note, "mxattn tune"));

    /* This build's own row wins over it. */
    put_row(ctx, &key, configs[0], 0.05);
    info = plan_info(ctx, &p);
    assert_string_equal(info.config_source, "tuned");
    assert_string_equal(info.config, configs[0]);
    assert_null(strstr(info.note, "another build"));
    mxattn_destroy(ctx);

    /* Another build's row the templates reject is ignored, with a note. */
    snprintf(db, sizeof db, "%s/other-build-bad.db", g_dir);
    ctx = untuned_ctx(db);
    put_row(ctx, &other, "block_m=48", 0.05);
    info = plan_info(ctx, &p);
    printf("# other build, illegal row: %s, '%s'\n", info.config_source, info.note);
    assert_string_equal(info.config_source, "default");
    assert_string_equal(info.config, def.config);
    assert_non_null(strstr(info.note, "tuned row from another build ignored"));
    assert_non_null(strstr(info.note, "block_m=48"));
    mxattn_destroy(ctx);
    mxattn_free(configs[0]);
    mxattn_free(configs[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_rows_are_ignored_and_said),
        cmocka_unit_test(rows_from_another_build),
    };
    return gpu_run_in_temp_dir("gpu_tune_rows", "mxattn-gpu-tune-rows", g_dir, sizeof g_dir, g_db, sizeof g_db,
                               "rows.db", tests, sizeof tests / sizeof *tests);
}
