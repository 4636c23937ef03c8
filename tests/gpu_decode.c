/* The decode schedule of f16 and int8-fp8 (variant=decode: a KV group's query heads
 * packed into a tile's rows, the keys split over blocks and merged by a
 * second kernel) against the fp64 CPU reference in numerics/, on fresh
 * random inputs with a poisoned output and LSE: Nq 1, 4 and 16 against Nk 1,
 * 63, 2049 and 8192, gqa 1, 4, 8 and 32 (Hkv = 1 among them), D 64, 128 and
 * 72, bottom-right causal (rows that see no key: zeros, LSE -inf), the LSE,
 * padded BNHD strides; the library's default (which must be this schedule
 * for a few query rows) and explicit tiles and piece counts: one piece (no
 * combine kernel), more pieces than key tiles (empty pieces), 32- and 64-row
 * blocks over 8 warps, Q reloaded from shared memory, 128-key tiles, a
 * 2-deep ring, piece counts that are not powers of two.  int8-fp8, which
 * quantizes each tile as it lands (cuda/decode_quant.cuh), over the same
 * grid and tiles against its pipeline reference (numerics' kv_tile and
 * p_base_pow2) and fp64.  Exits 77 (skipped) without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "support/gpu_harness.h"

static mx_device g_dev;
static mxattn_ctx *g_ctx;

/* The decode schedule's cases are checked as gpu_f16's and gpu_int8's are,
 * and must run it. */
static int check_case(const gpu_case *c, uint64_t seed) {
    if (!strcmp(c->family, "int8-fp8")) return gpu_check_int8_case(g_ctx, &g_dev, c, seed, "variant=decode");
    return gpu_check_f16_case(g_ctx, &g_dev, c, seed, "variant=decode");
}

static const int NQ[] = {1, 4, 16};
static const int NK[] = {1, 63, 2049, 8192};
static const int GQA[] = {1, 4, 8, 32};
static const int DIMS[] = {64, 128, 72};

/* Case i of the grid: every Nq against every Nk, the group sizes, head dims,
 * KV heads (1 or 2), batch, dtype, layout and padding turning over with i. */
static gpu_case grid_case(int i, const char *config) {
    gpu_case c = {.family = "f16", .config = config, .lse = 1, .launches = 1};
    c.seq_q = NQ[i % 3];
    c.seq_k = NK[(i / 3) % 4];
    c.heads_kv = i % 2 ? 1 : 2;
    c.heads_q = c.heads_kv * GQA[(i + i / 3) % 4];
    c.head_dim = DIMS[(i + i / 4) % 3];
    c.batch = 1 + i % 3;
    c.causal = c.seq_q > 1 || i % 5 == 0 ? MXATTN_CAUSAL_BOTTOM_RIGHT : MXATTN_CAUSAL_NONE;
    c.dtype = i % 4 == 3 ? MXATTN_F16 : MXATTN_BF16;
    c.layout = i % 3 == 2 ? MXATTN_LAYOUT_BHND : MXATTN_LAYOUT_BNHD;
    c.pad = i % 2 ? 8 : 0;
    return c;
}

/* The library's choice for each Nq x Nk, which must be the decode schedule. */
static void test_default_grid_plans_match_reference_over_decode_shapes(void **state) {
    int failures = 0;
    for (int i = 0; i < 12; i++) {
        gpu_case c = grid_case(i, NULL);
        failures += check_case(&c, gpu_seed_base() + i);
    }
    /* Every group size at the bench's head dim, Hkv = 1 with gqa = 32. */
    for (int g = 0; g < 4; g++) {
        gpu_case c = {.family = "f16", .batch = 2, .heads_kv = g == 3 ? 1 : 2, .seq_q = NQ[g % 3], .seq_k = 2049,
                      .head_dim = 128, .causal = MXATTN_CAUSAL_BOTTOM_RIGHT, .dtype = MXATTN_BF16,
                      .layout = MXATTN_LAYOUT_BNHD, .pad = 8, .lse = 1};
        c.heads_q = c.heads_kv * GQA[g];
        failures += check_case(&c, gpu_seed_base() + 20 + g);
    }
    /* Top-left alignment and no mask at Nq > 1. */
    for (int j = 0; j < 2; j++) {
        gpu_case c = {.family = "f16", .batch = 1, .heads_kv = 2, .heads_q = 8, .seq_q = 16, .seq_k = 8192,
                      .head_dim = 64, .causal = j ? MXATTN_CAUSAL_TOP_LEFT : MXATTN_CAUSAL_NONE,
                      .dtype = MXATTN_BF16, .layout = MXATTN_LAYOUT_BNHD, .lse = 1};
        failures += check_case(&c, gpu_seed_base() + 30 + j);
    }
    assert_int_equal(failures, 0);
}

/* Explicit tiles and piece counts over the grid's cases; the plan run twice
 * (the output poisoned again before the second), so a piece's partials of
 * one launch never stand in for the next one's. */
static void test_tiles_and_pieces(void **state) {
    static const char *configs[] = {
        "variant=decode kv_splits=1 block_m=16 block_n=64 warps=4 stages=3",
        "variant=decode kv_splits=64 block_m=16 block_n=64 warps=4 stages=3",
        "variant=decode kv_splits=4 block_m=32 block_n=64 warps=8 stages=3",
        "variant=decode kv_splits=8 block_m=64 block_n=64 warps=8 stages=2",
        "variant=decode kv_splits=2 q_regs=0 block_m=16 block_n=128 warps=4 stages=2",
        "variant=decode kv_splits=16 block_m=64 block_n=128 warps=4 stages=2",
        "variant=decode kv_splits=32 block_m=32 block_n=128 warps=8 stages=3",
        "variant=decode kv_splits=3 block_m=16 block_n=64 warps=4 stages=3",
        "variant=decode kv_splits=48 block_m=32 block_n=64 warps=8 stages=2",
        "variant=decode kv_splits=12 block_m=64 block_n=64 warps=8 stages=3",
    };
    int failures = 0;
    for (int k = 0; k < (int)(sizeof configs / sizeof *configs); k++)
        for (int j = 0; j < 3; j++) {
            int i = (5 * k + 7 * j) % 12;
            gpu_case c = grid_case(i, configs[k]);
            c.launches = 2;
            failures += check_case(&c, gpu_seed_base() + 100 + 3 * k + j);
        }
    assert_int_equal(failures, 0);
}

/* D up to 256 with Q reloaded from shared memory (explicit: the default
 * takes the schedule up to D 128), and a head dim that is not a multiple of 16. */
static void test_other_head_dims(void **state) {
    static const struct { int d; const char *config; } cases[] = {
        {256, "variant=decode q_regs=0 kv_splits=4 block_m=16 block_n=64 warps=4 stages=2"},
        {40, NULL},
        {96, NULL},
    };
    int failures = 0;
    for (int i = 0; i < 3; i++) {
        gpu_case c = {.family = "f16", .batch = 2, .heads_kv = 1, .heads_q = 4, .seq_q = 1 + 3 * i, .seq_k = 1000,
                      .head_dim = cases[i].d, .causal = MXATTN_CAUSAL_BOTTOM_RIGHT, .dtype = MXATTN_BF16,
                      .layout = MXATTN_LAYOUT_BNHD, .pad = 8, .lse = 1, .config = cases[i].config};
        failures += check_case(&c, gpu_seed_base() + 200 + i);
    }
    assert_int_equal(failures, 0);
}

/* int8-fp8: the default over the grid (every Nq x Nk, group sizes, head dims
 * 64, 128 and 72, both dtypes, layouts, padding, the LSE; the schedule named
 * where the packed rows pass the default's 16), and explicit tiles
 * and pieces: 128-key tiles, 32- and 64-row blocks over 8 warps, a 2-deep
 * ring, more pieces than tiles. */
static void test_int8_fp8_grid_and_tiles(void **state) {
    static const char *configs[] = {
        NULL,
        "variant=decode kv_splits=1 block_m=16 block_n=64 warps=4 stages=3",
        "variant=decode kv_splits=64 block_m=16 block_n=64 warps=4 stages=3",
        "variant=decode kv_splits=4 block_m=32 block_n=64 warps=8 stages=3",
        "variant=decode kv_splits=8 block_m=64 block_n=64 warps=8 stages=2",
        "variant=decode kv_splits=3 block_m=16 block_n=128 warps=4 stages=2",
    };
    int failures = 0;
    for (int i = 0; i < 12; i++) {
        gpu_case c = grid_case(i, NULL);
        c.family = "int8-fp8";
        /* The default decodes up to 16 packed rows; above, the schedule is named. */
        if (c.heads_q / c.heads_kv * c.seq_q > 16) c.config = "variant=decode";
        failures += check_case(&c, gpu_seed_base() + 300 + i);
    }
    for (int k = 1; k < (int)(sizeof configs / sizeof *configs); k++)
        for (int j = 0; j < 2; j++) {
            gpu_case c = grid_case((5 * k + 7 * j) % 12, configs[k]);
            c.family = "int8-fp8";
            c.launches = 2;
            failures += check_case(&c, gpu_seed_base() + 320 + 2 * k + j);
        }
    /* Hkv = 1 with 32 query heads (two 64-row tiles a KV head), D 40. */
    gpu_case c = {.family = "int8-fp8", .batch = 2, .heads_kv = 1, .heads_q = 32, .seq_q = 4, .seq_k = 3000,
                  .head_dim = 40, .causal = MXATTN_CAUSAL_BOTTOM_RIGHT, .dtype = MXATTN_BF16,
                  .layout = MXATTN_LAYOUT_BNHD, .pad = 8, .lse = 1, .config = "variant=decode"};
    failures += check_case(&c, gpu_seed_base() + 340);
    assert_int_equal(failures, 0);
}

int main(int argc, char **argv) {
    gpu_open_or_skip(&g_dev, "gpu_decode");
    if (!(g_ctx = gpu_cacheless_ctx())) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_grid_plans_match_reference_over_decode_shapes),
        cmocka_unit_test(test_tiles_and_pieces),
        cmocka_unit_test(test_other_head_dims),
        cmocka_unit_test(test_int8_fp8_grid_and_tiles),
    };
    int rc = gpu_run_tests("gpu_decode", tests, sizeof tests / sizeof *tests, argc, argv);
    mxattn_destroy(g_ctx);
    mx_device_close(&g_dev);
    return rc;
}
