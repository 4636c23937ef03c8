/* Launch plans as the templates write them: kernels, workspace, TMA maps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include "runtime/launch_plan.h"

static void test_parses_every_line_kind(void **state) {
    mx_launch_plan lp;
    const char *text = "workspace 4096\n"
                       "kernel quant 4 8 2 256 0\n"
                       "kernel attn 16 32 4 384 230480\n"
                       "wsoff 0 0\nwsoff 3 2048\n"
                       "tmap 0 q 64 128 128 128\n"
                       "tmapws 1 3 1 128 4096 8 4 128 128 128\n";
    assert_int_equal(mx_launch_plan_parse(text, &lp), MXATTN_OK);
    assert_int_equal(lp.workspace_bytes, 4096);
    assert_int_equal(lp.n_steps, 2);
    assert_string_equal(lp.steps[1].name, "attn");
    assert_int_equal(lp.steps[1].grid.y, 32);
    assert_int_equal(lp.steps[1].threads, 384);
    assert_int_equal(lp.steps[1].smem_bytes, 230480);
    assert_int_equal(lp.ws_off[3], 2048);
    assert_int_equal(lp.n_tmaps, 2);
    assert_int_equal(lp.tmaps[0].tensor, 'q');
    assert_int_equal(lp.tmaps[0].head_dim, 128);
    assert_int_equal(lp.tmaps[1].tensor, 'w');
    assert_int_equal(lp.tmaps[1].ws_section, 3);
    assert_int_equal(lp.tmaps[1].elem_bytes, 1);
    assert_int_equal(lp.tmaps[1].rows, 4096);
    assert_int_equal(lp.tmaps[1].heads, 8);
    assert_int_equal(lp.tmaps[1].batch, 4);
    char names[64];
    mx_launch_plan_names(&lp, names, sizeof names);
    assert_string_equal(names, "quant attn");
}

static void test_rejects_bad_lines(void **state) {
    mx_launch_plan lp;
    assert_int_equal(mx_launch_plan_parse("workspace 0\n", &lp), MXATTN_ERROR_TEMPLATE);        /* no kernel */
    assert_int_equal(mx_launch_plan_parse("kernel k 1 1 1 32 0\nbogus 1\n", &lp), MXATTN_ERROR_TEMPLATE);
    assert_int_equal(mx_launch_plan_parse("kernel k 1 1 1 32 0\ntmap 9 q 64 64 128 64\n", &lp), MXATTN_ERROR_TEMPLATE);
    assert_int_equal(mx_launch_plan_parse("kernel k 1 1 1 32 0\ntmap 0 x 64 64 128 64\n", &lp), MXATTN_ERROR_TEMPLATE);
    assert_int_equal(mx_launch_plan_parse("kernel k 1 1 1 32 0\ntmapws 0 9 1 64 64 1 1 64 64 128\n", &lp),
                     MXATTN_ERROR_TEMPLATE);
    assert_int_equal(mx_launch_plan_parse("kernel k 1 1 1 32 0\ntmapws 0 1 4 64 64 1 1 64 64 128\n", &lp),
                     MXATTN_ERROR_TEMPLATE);
}

/* A persistent kernel: the grid names every work unit; it launches one
 * resident wave at most, and a grid already smaller stays as it is. */
static void test_persistent_grid_is_one_wave(void **state) {
    mx_launch_plan lp;
    assert_int_equal(mx_launch_plan_parse("kernel attn 4096 1 1 384 230480 1\n", &lp), MXATTN_OK);
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
    assert_int_equal(mx_launch_plan_parse("kernel attn 33 32 4 384 230480\n", &lp), MXATTN_OK);
    assert_int_equal(lp.steps[0].resident, 0);
    grid = mx_launch_grid(&dev, &lp.steps[0]);
    assert_true(grid.x == 33 && grid.y == 32 && grid.z == 4);
    /* A persistent kernel loops over x only. */
    assert_int_equal(mx_launch_plan_parse("kernel attn 33 32 4 384 230480 1\n", &lp), MXATTN_ERROR_TEMPLATE);
    assert_int_equal(mx_launch_plan_parse("kernel attn 33 1 1 384 230480 0\n", &lp), MXATTN_ERROR_TEMPLATE);
}

/* "pdl I": step I may start before step I - 1 has finished; only a step with
 * a kernel before it, named on an earlier line, can be one. */
static void test_pdl_lines(void **state) {
    mx_launch_plan lp;
    assert_int_equal(mx_launch_plan_parse("kernel stats 4 8 2 256 0\nkernel quant 4 8 2 256 0\n"
                                          "kernel attn 16 32 4 384 230480\npdl 1\npdl 2\n", &lp), MXATTN_OK);
    assert_int_equal(lp.steps[0].pdl, 0);
    assert_int_equal(lp.steps[1].pdl, 1);
    assert_int_equal(lp.steps[2].pdl, 1);
    assert_int_equal(mx_launch_plan_parse("kernel a 1 1 1 32 0\nkernel b 1 1 1 32 0\npdl 1\n", &lp), MXATTN_OK);
    assert_int_equal(lp.steps[0].pdl + 2 * lp.steps[1].pdl, 2);
    assert_int_equal(mx_launch_plan_parse("kernel a 1 1 1 32 0\npdl 0\n", &lp), MXATTN_ERROR_TEMPLATE);
    assert_int_equal(mx_launch_plan_parse("pdl 1\nkernel a 1 1 1 32 0\nkernel b 1 1 1 32 0\n", &lp),
                     MXATTN_ERROR_TEMPLATE);
    assert_int_equal(mx_launch_plan_parse("kernel a 1 1 1 32 0\npdl 1\n", &lp), MXATTN_ERROR_TEMPLATE);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parses_every_line_kind),
        cmocka_unit_test(test_rejects_bad_lines),
        cmocka_unit_test(test_persistent_grid_is_one_wave),
        cmocka_unit_test(test_pdl_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
