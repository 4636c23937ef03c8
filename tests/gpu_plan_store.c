/* A plan whose binary cannot be stored still succeeds, and its info says so:
 * the cache is an optimisation, but a lost write must never be silent.  The
 * write is made to fail by another connection holding the database's write
 * lock past a shortened MXATTN_CACHE_BUSY_MS; once it lets go, the next plan
 * of the same problem stores its binary, and the one after loads it from the
 * database.  Without a GPU it skips (77); tests/test_jit.c covers the store's
 * bookkeeping without one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/fixtures.h"
#include "support/gpu_harness.h"

static char g_dir[64], g_db[128];

static mxattn_plan_info plan_info(mxattn_ctx *ctx, int head_dim) {
    mxattn_problem p = gpu_f16_problem(head_dim, 1, 2, 256);
    mxattn_plan *plan = NULL;
    if (mxattn_plan_create(ctx, &p, NULL, &plan) != MXATTN_OK) fail_msg("plan D=%d: %s", head_dim, mxattn_last_error());
    mxattn_plan_info info;
    assert_int_equal(mxattn_plan_get_info(plan, &info), MXATTN_OK);
    mxattn_plan_destroy(plan);
    return info;
}

static void an_unstored_binary_is_said(void **state) {
    (void)state;
    mxattn_ctx *ctx = untuned_ctx(g_db);

    /* Opens the database (its upkeep on open writes) and stores one binary. */
    mxattn_plan_info first = plan_info(ctx, 64);
    assert_int_equal(first.cubin_stored, 1);
    assert_string_equal(first.note, "");

    sqlite3 *holder = NULL;
    assert_int_equal(sqlite3_open(g_db, &holder), SQLITE_OK);
    assert_int_equal(sqlite3_exec(holder, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    setenv("MXATTN_CACHE_BUSY_MS", "100", 1);
    mxattn_plan_info blocked = plan_info(ctx, 96);   /* a new binary: compiled, then refused */
    unsetenv("MXATTN_CACHE_BUSY_MS");
    sqlite3_exec(holder, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(holder);
    assert_int_equal(blocked.cubin_from_cache, 0);
    assert_int_equal(blocked.cubin_stored, 0);
    if (!strstr(blocked.note, "not stored")) fail_msg("the note does not say the binary was not stored: '%s'", blocked.note);

    mxattn_plan_info again = plan_info(ctx, 96);     /* the lock is gone: compiled and stored */
    assert_int_equal(again.cubin_from_cache, 0);
    assert_int_equal(again.cubin_stored, 1);
    mxattn_plan_info hit = plan_info(ctx, 96);       /* and now from the database */
    assert_int_equal(hit.cubin_from_cache, 1);
    assert_int_equal(hit.cubin_stored, 1);
    mxattn_destroy(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_unstored_binary_is_said),
    };
    return gpu_run_in_temp_dir("gpu_plan_store", "mxattn-gpu-plan-store", g_dir, sizeof g_dir, g_db, sizeof g_db,
                               "store.db", tests, sizeof tests / sizeof *tests);
}
