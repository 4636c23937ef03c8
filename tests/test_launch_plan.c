/* Launch plans as the templates return them: a Lua table read field by field
 * (gen/launch.c), then the runtime's plan (jit/): kernels, workspace, TMA
 * maps, and the message for each kind of malformed table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gen/gen.h"
#include "jit/jit.h"
#include "runtime/launch_plan.h"
#include "util/err.h"

/* The runtime's plan of a chunk ("return {...}"), which must read. */
static void plan_of(const char *chunk, mx_launch_plan *lp) {
    mx_gen_launch gl;
    mxattn_status st = mx_gen_launch_from_chunk(chunk, &gl);
    if (st != MXATTN_OK) fail_msg("%s: %s", chunk, mx_error_message());
    mx_jit_plan_from_gen(&gl, lp);
}

/* A chunk that must be refused with TEMPLATE and a message containing `want`. */
static void refused(const char *chunk, const char *want) {
    mx_gen_launch gl;
    mx_clear_error();
    mxattn_status st = mx_gen_launch_from_chunk(chunk, &gl);
    if (st != MXATTN_ERROR_TEMPLATE) fail_msg("%s: status %d, not TEMPLATE", chunk, st);
    if (!strstr(mx_error_message(), want)) fail_msg("%s: message '%s' lacks '%s'", chunk, mx_error_message(), want);
    assert_int_equal(gl.n_kernels, 0);   /* nothing half-read is left behind */
}

#define K(name) "{ name = '" name "', grid = {1, 1, 1}, block = 32, smem = 0 }"

static void test_reads_every_field(void **state) {
    mx_launch_plan lp;
    plan_of("return { workspace = 4096, ws_off = { 0, 256, 512, 2048 },"
            " kernels = { { name = 'quant', grid = {4, 8, 2}, block = 256, smem = 0 },"
            "             { name = 'attn', grid = {16, 32, 4}, block = 384, smem = 230480, pdl = true } },"
            " tmaps = { { slot = 0, tensor = 'q', box_cols = 64, box_rows = 128, swizzle = 128, head_dim = 128 },"
            "           { slot = 1, section = 3, elem_bytes = 1, cols = 128, rows = 4096, heads = 8, batch = 4,"
            "             box_cols = 128, box_rows = 128, swizzle = 128 } } }", &lp);
    assert_int_equal(lp.workspace_bytes, 4096);
    assert_int_equal(lp.n_steps, 2);
    assert_string_equal(lp.steps[1].name, "attn");
    assert_int_equal(lp.steps[1].grid.y, 32);
    assert_int_equal(lp.steps[1].threads, 384);
    assert_int_equal(lp.steps[1].smem_bytes, 230480);
    assert_int_equal(lp.steps[0].pdl, 0);
    assert_int_equal(lp.steps[1].pdl, 1);
    assert_int_equal(lp.ws_off[3], 2048);
    assert_int_equal(lp.ws_off[4], 0);
    assert_int_equal(lp.n_tmaps, 2);
    assert_int_equal(lp.tmaps[0].tensor, 'q');
    assert_int_equal(lp.tmaps[0].head_dim, 128);
    assert_int_equal(lp.tmaps[0].swizzle_bytes, 128);
    assert_int_equal(lp.tmaps[1].tensor, 'w');
    assert_int_equal(lp.tmaps[1].ws_section, 3);
    assert_int_equal(lp.tmaps[1].elem_bytes, 1);
    assert_int_equal(lp.tmaps[1].head_dim, 128);
    assert_int_equal(lp.tmaps[1].rows, 4096);
    assert_int_equal(lp.tmaps[1].heads, 8);
    assert_int_equal(lp.tmaps[1].batch, 4);
    char names[64];
    mx_launch_plan_names(&lp, names, sizeof names);
    assert_string_equal(names, "quant attn");
    /* Numbers Lua computed as floats are integers still when they are whole. */
    plan_of("return { workspace = 2^10, kernels = { { name = 'k', grid = {64 / 2, 1, 1}, block = 32.0, smem = 0 } } }", &lp);
    assert_int_equal(lp.workspace_bytes, 1024);
    assert_int_equal(lp.steps[0].grid.x, 32);
}

/* Each malformed table is refused, and the message names the field. */
static void test_malformed_tables_name_the_field(void **state) {
    refused("return 'workspace 0'", "string, not a table");
    refused("return { kernels = { " K("k") " } }", "workspace is missing");
    refused("return { workspace = 0, kernels = {} }", "kernels is empty");
    refused("return { workspace = 0 }", "kernels is missing");
    refused("return { workspace = -1, kernels = { " K("k") " } }", "workspace is -1");
    refused("return { workspace = 1.5, kernels = { " K("k") " } }", "workspace is 1.5, must be an integer");
    refused("return { workspace = '8', kernels = { " K("k") " } }", "workspace is string");
    refused("return { workspace = 0, kernels = { " K("k") " }, extra = 1 }", "the plan has an unknown field 'extra'");
    refused("return { workspace = 0, kernels = { " K("a") ", " K("b") ", " K("c") ", " K("d") ", " K("e") " } }",
            "kernels has 5 entries, at most 4");
    refused("return { workspace = 0, kernels = { [1] = " K("a") ", [3] = " K("b") " } }", "kernels is not a list");
    refused("return { workspace = 0, kernels = { 7 } }", "kernels[1] is number, must be a table");
    refused("return { workspace = 0, kernels = { { grid = {1, 1, 1}, block = 32, smem = 0 } } }", "kernels[1].name is missing");
    refused("return { workspace = 0, kernels = { { name = '', grid = {1, 1, 1}, block = 32, smem = 0 } } }",
            "kernels[1].name is not one");
    refused("return { workspace = 0, kernels = { " K("a") ", { name = 'b', grid = {1, 0, 1}, block = 32, smem = 0 } } }",
            "kernels[2].grid[2] is 0, must be 1 .. ");
    refused("return { workspace = 0, kernels = { { name = 'b', grid = {1, 1}, block = 32, smem = 0 } } }",
            "kernels[1].grid must list 3 numbers");
    refused("return { workspace = 0, kernels = { { name = 'b', grid = {1, 1, 1}, block = 2048, smem = 0 } } }",
            "kernels[1].block is 2048, must be 1 .. 1024");
    refused("return { workspace = 0, kernels = { { name = 'b', grid = {1, 1, 1}, block = 32, smem = 0, resdent = 1 } } }",
            "kernels[1] has an unknown field 'resdent'");
    refused("return { workspace = 0, kernels = { { name = 'b', grid = {1, 1, 1}, block = 32, smem = 0, pdl = 1 } } }",
            "kernels[1].pdl is number, must be true or false");
    refused("return { workspace = 16, ws_off = { 0, 32 }, kernels = { " K("k") " } }",
            "ws_off[2] must be an integer offset within the workspace");
    refused("return { workspace = 0, kernels = { " K("k") " }, tmaps = { { slot = 9, tensor = 'q', box_cols = 64,"
            " box_rows = 64, swizzle = 128, head_dim = 64 } } }", "tmaps[1].slot is 9, must be 0 .. 3");
    refused("return { workspace = 0, kernels = { " K("k") " }, tmaps = { { slot = 0, tensor = 'x', box_cols = 64,"
            " box_rows = 64, swizzle = 128, head_dim = 64 } } }", "tmaps[1].tensor is not one of them");
    refused("return { workspace = 0, kernels = { " K("k") " }, tmaps = { { slot = 0, section = 9, elem_bytes = 1,"
            " cols = 64, rows = 64, heads = 1, batch = 1, box_cols = 64, box_rows = 64, swizzle = 128 } } }",
            "tmaps[1].section is 9, must be 0 .. 7");
    refused("return { workspace = 0, kernels = { " K("k") " }, tmaps = { { slot = 0, section = 1, elem_bytes = 4,"
            " cols = 64, rows = 64, heads = 1, batch = 1, box_cols = 64, box_rows = 64, swizzle = 128 } } }",
            "tmaps[1].elem_bytes is 4, must be 1 .. 2");
    refused("return { workspace = 0, kernels = { " K("k") " }, tmaps = { { slot = 0, section = 1, tensor = 'q',"
            " elem_bytes = 1, cols = 64, rows = 64, heads = 1, batch = 1, box_cols = 64, box_rows = 64, swizzle = 0 } } }",
            "tmaps[1].tensor is given with section");
    refused("return { workspace = 0, kernels = { " K("k") " }, tmaps = {"
            " { slot = 1, tensor = 'q', box_cols = 64, box_rows = 64, swizzle = 128, head_dim = 64 },"
            " { slot = 1, tensor = 'k', box_cols = 64, box_rows = 64, swizzle = 128, head_dim = 64 } } }",
            "tmaps[2].slot is used by an earlier map");
    /* A chunk that does not even run is the caller's, not the templates'. */
    mx_gen_launch gl;
    assert_int_equal(mx_gen_launch_from_chunk("return {", &gl), MXATTN_ERROR_INVALID_VALUE);
    assert_int_equal(mx_gen_launch_from_chunk("return {} .. 1", &gl), MXATTN_ERROR_TEMPLATE);
    assert_non_null(strstr(mx_error_message(), "attempt to concatenate"));
}

/* A persistent kernel: the grid names every work unit; it launches one
 * resident wave at most, and a grid already smaller stays as it is. */
static void test_persistent_grid_is_one_wave(void **state) {
    mx_launch_plan lp;
    plan_of("return { workspace = 8, kernels = { { name = 'attn', grid = {4096, 1, 1}, block = 384, smem = 230480,"
            " resident = 1 } } }", &lp);
    assert_int_equal(lp.steps[0].resident, 1);
    mx_device dev;
    memset(&dev, 0, sizeof dev);
    dev.sm_count = 132;
    mx_dim3 grid = mx_launch_grid(&dev, &lp.steps[0]);
    assert_int_equal(grid.x, 132);
    assert_int_equal(grid.y, 1);
    lp.steps[0].grid.x = 100;
    assert_int_equal(mx_launch_grid(&dev, &lp.steps[0]).x, 100);
    lp.steps[0].resident = 2;
    lp.steps[0].grid.x = 1000;
    assert_int_equal(mx_launch_grid(&dev, &lp.steps[0]).x, 264);
    /* Not persistent: the grid as written. */
    plan_of("return { workspace = 0, kernels = { { name = 'attn', grid = {33, 32, 4}, block = 384, smem = 230480 } } }", &lp);
    assert_int_equal(lp.steps[0].resident, 0);
    grid = mx_launch_grid(&dev, &lp.steps[0]);
    assert_true(grid.x == 33 && grid.y == 32 && grid.z == 4);
    /* A persistent kernel loops over x only. */
    refused("return { workspace = 0, kernels = { { name = 'attn', grid = {33, 32, 4}, block = 384, smem = 0,"
            " resident = 1 } } }", "kernels[1].resident is set, but a persistent kernel's grid is {units, 1, 1}");
    refused("return { workspace = 0, kernels = { { name = 'attn', grid = {33, 1, 1}, block = 384, smem = 0,"
            " resident = 0 } } }", "kernels[1].resident is 0, must be 1 .. ");
}

/* pdl: a kernel may start before the one before it has finished; the first
 * kernel has none before it. */
static void test_pdl_marks_later_kernels_and_is_refused_on_the_first(void **state) {
    mx_launch_plan lp;
    plan_of("return { workspace = 0, kernels = { " K("stats") ", { name = 'quant', grid = {4, 8, 2}, block = 256,"
            " smem = 0, pdl = true }, { name = 'attn', grid = {16, 32, 4}, block = 384, smem = 0, pdl = true } } }", &lp);
    assert_int_equal(lp.steps[0].pdl, 0);
    assert_int_equal(lp.steps[1].pdl, 1);
    assert_int_equal(lp.steps[2].pdl, 1);
    plan_of("return { workspace = 0, kernels = { " K("a") ", { name = 'b', grid = {1, 1, 1}, block = 32, smem = 0,"
            " pdl = false } } }", &lp);
    assert_int_equal(lp.steps[0].pdl + lp.steps[1].pdl, 0);
    refused("return { workspace = 0, kernels = { { name = 'a', grid = {1, 1, 1}, block = 32, smem = 0, pdl = true } } }",
            "kernels[1].pdl is true on the first kernel");
}

/* Every family's real plan reads, through the templates' mxattn.launch_plan. */
static void test_every_family_plan_reads(void **state) {
    mx_gen *g = NULL;
    assert_int_equal(mx_gen_open(&g), MXATTN_OK);
    const char *tables[] = {
        "family=f16 head_dim=128", "family=f16 head_dim=72 variant=mma", "family=int8-f16 head_dim=128",
        "family=int8-fp8 head_dim=128", "family=nvfp4 head_dim=128", "family=mxfp4 head_dim=64",
        "family=nvfp4-int8qk head_dim=128 arch=sm_120a",
    };
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
        char *canon = NULL;
        assert_int_equal(mx_gen_call(g, "validate", tables[t], NULL, &canon), MXATTN_OK);
        mx_launch_plan lp;
        mxattn_status st = mx_jit_launch_plan(g, canon, "batch=2 heads_q=4 heads_kv=2 seq_q=300 seq_k=500", &lp);
        if (st != MXATTN_OK) fail_msg("%s: %s", tables[t], mx_error_message());
        assert_true(lp.n_steps >= 1);
        /* The attention kernel runs last and covers every head of every batch. */
        const mx_launch_step *a = &lp.steps[lp.n_steps - 1];
        assert_true(a->resident > 0 || (a->grid.y == 4 && a->grid.z == 2));
        assert_true(a->threads >= 32);
        for (int i = 0; i < lp.n_tmaps; i++)
            if (lp.tmaps[i].tensor != 'w') assert_int_equal(lp.tmaps[i].head_dim, 128);
        free(canon);
    }
    mx_gen_close(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_every_field),
        cmocka_unit_test(test_malformed_tables_name_the_field),
        cmocka_unit_test(test_persistent_grid_is_one_wave),
        cmocka_unit_test(test_pdl_marks_later_kernels_and_is_refused_on_the_first),
        cmocka_unit_test(test_every_family_plan_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
