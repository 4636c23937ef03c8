/* The f16 family against the fp64 CPU reference, on fresh random inputs with
 * a poisoned output, across head dims, ragged lengths, causal alignments,
 * grouped-query heads, batch, both layouts with non-contiguous strides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "support/gpu_harness.h"

static mx_device g_dev;
static mxattn_ctx *g_ctx;

static int check_case(const gpu_case *c, uint64_t seed) { return gpu_check_f16_case(g_ctx, &g_dev, c, seed, NULL); }

static const int HEAD_DIMS[] = {8, 32, 40, 64, 72, 80, 96, 100, 128, 160, 192, 256};
#define N_HEAD_DIMS (int)(sizeof HEAD_DIMS / sizeof *HEAD_DIMS)

/* Every head dim, each with a different mix of the other dimensions. */
static void test_head_dims_each_matches_reference(void **state) {
    static const int seqs[][2] = {{127, 127}, {17, 1000}, {1000, 17}, {1, 127}, {128, 256}, {300, 300}};
    int failures = 0;
    for (int i = 0; i < N_HEAD_DIMS; i++) {
        gpu_case c = {.family = "f16", .batch = 1 + i % 2, .heads_kv = 1 + i % 2, .head_dim = HEAD_DIMS[i],
                      .causal = (mxattn_causal)(i % 3), .dtype = i % 4 == 3 ? MXATTN_F16 : MXATTN_BF16,
                      .layout = (mxattn_layout)(i % 2), .pad = (i % 3) * 8, .lse = i % 2};
        c.heads_q = c.heads_kv * (i % 3 == 0 ? 1 : i % 3 == 1 ? 4 : 8);
        c.seq_q = seqs[i % 6][0];
        c.seq_k = seqs[i % 6][1];
        failures += check_case(&c, gpu_seed_base() + i);
    }
    assert_int_equal(failures, 0);
}

/* Ragged lengths that fill no tile, Nq != Nk, and both causal alignments. */
static void test_lengths_ragged_match_reference_under_both_alignments(void **state) {
    static const int lens[] = {1, 17, 127, 1000, 4097};
    int failures = 0, i = 0;
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 5; b++) {
            if (lens[a] * (long)lens[b] > 1000L * 4097) continue;  /* CPU reference time */
            gpu_case c = {.family = "f16", .batch = 1, .heads_q = 2, .heads_kv = 1, .seq_q = lens[a],
                          .seq_k = lens[b], .head_dim = i % 2 ? 64 : 80, .causal = (mxattn_causal)(i % 3),
                          .dtype = MXATTN_BF16, .layout = MXATTN_LAYOUT_BHND, .lse = 1};
            failures += check_case(&c, gpu_seed_base() + 100 + i++);
        }
    assert_int_equal(failures, 0);
}

/* Grouped-query heads with batch, odd head dims without vector alignment. */
static void test_gqa_and_alignment(void **state) {
    static const int gqa[] = {1, 4, 8};
    static const int odd_dims[] = {17, 50, 100};
    int failures = 0;
    for (int i = 0; i < 3; i++) {
        gpu_case c = {.family = "f16", .batch = 3, .heads_kv = 2, .heads_q = 2 * gqa[i], .seq_q = 200,
                      .seq_k = 333, .head_dim = odd_dims[i], .causal = MXATTN_CAUSAL_BOTTOM_RIGHT,
                      .dtype = MXATTN_BF16, .layout = (mxattn_layout)(i % 2), .pad = i == 2 ? 3 : 0, .lse = 1};
        failures += check_case(&c, gpu_seed_base() + 200 + i);
    }
    assert_int_equal(failures, 0);
}

/* One long sequence, big enough for several blocks per head and many key tiles. */
static void test_long_causal_sequence_matches_reference(void **state) {
    gpu_case c = {.family = "f16", .batch = 1, .heads_q = 1, .heads_kv = 1, .seq_q = 4097, .seq_k = 4097,
                  .head_dim = 128, .causal = MXATTN_CAUSAL_TOP_LEFT, .dtype = MXATTN_BF16,
                  .layout = MXATTN_LAYOUT_BNHD, .lse = 1};
    assert_int_equal(check_case(&c, gpu_seed_base() + 300), 0);
}

/* The mma.sync kernel where sm_90a's default is the wgmma one (16-byte rows,
 * D >= 64), so it is checked on this GPU too: its default tiles and
 * FlashAttention-2's 128x64 with 4 warps, whose strided tile loads and
 * register layout differ, over tails, both causal alignments, GQA, the LSE
 * and padded strides. */
static void test_mma_sync_tiles(void **state) {
    static const char *configs[] = {"variant=mma",
                                    "variant=mma q_regs=0 block_m=128 block_n=64 warps=4 stages=2",
                                    "variant=mma q_regs=0 block_m=128 block_n=64 warps=4 stages=1"};
    static const int dims[] = {64, 96, 128};
    static const int seqs[][2] = {{1000, 1000}, {17, 333}, {333, 17}};
    int failures = 0, i = 0;
    for (int d = 0; d < 3; d++)
        for (int k = 0; k < 3; k++, i++) {
            gpu_case c = {.family = "f16", .batch = 2, .heads_kv = 2, .heads_q = 2 * (1 + 3 * (i % 2)),
                          .seq_q = seqs[i % 3][0], .seq_k = seqs[i % 3][1], .head_dim = dims[d],
                          .causal = (mxattn_causal)(i % 3), .dtype = MXATTN_BF16,
                          .layout = (mxattn_layout)(i % 2), .pad = (i % 2) * 8, .lse = 1,
                          .config = configs[k]};
            failures += check_case(&c, gpu_seed_base() + 400 + i);
        }
    assert_int_equal(failures, 0);
}

/* Bad input at run time: a specific status and message, no crash. */
static void test_bad_pointers_null_misaligned_overlapping_host_are_refused(void **state) {
    mxattn_problem p;
    mxattn_plan *plan = NULL;
    mxattn_problem_init(&p, "f16", 64);
    p.seq_q = p.seq_k = 64;
    assert_int_equal(mxattn_plan_create(g_ctx, &p, NULL, &plan), MXATTN_OK);
    void *buf = NULL;
    assert_int_equal(mx_mem_alloc(&g_dev, 64 * 64 * 2 * 4 + 64, &buf), MXATTN_OK);
    char *base = buf;
    void *q = base, *k = base + 8192, *v = base + 16384, *o = base + 24576;
    assert_int_equal(mxattn_run(plan, NULL, k, v, o, NULL, NULL), MXATTN_ERROR_NULL_POINTER);
    assert_int_equal(mxattn_run(plan, q, k, v, base + 2, NULL, NULL), MXATTN_ERROR_MISALIGNED);
    assert_int_equal(mxattn_run(plan, q, k, v, base + 16384 + 128, NULL, NULL), MXATTN_ERROR_INVALID_VALUE);
    assert_non_null(strstr(mxattn_last_error(), "overlaps"));
    static char host[8192];
    assert_int_equal(mxattn_run(plan, host, k, v, o, NULL, NULL), MXATTN_ERROR_INVALID_VALUE);
    printf("host pointer: %s\n", mxattn_last_error());
    assert_int_equal(mxattn_run(plan, q, k, v, o, NULL, NULL), MXATTN_OK);
    mx_mem_free(&g_dev, buf);
    mxattn_plan_destroy(plan);
}

int main(void) {
    gpu_open_or_skip(&g_dev, "gpu_f16");
    if (!(g_ctx = gpu_cacheless_ctx())) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_pointers_null_misaligned_overlapping_host_are_refused),
        cmocka_unit_test(test_head_dims_each_matches_reference),
        cmocka_unit_test(test_lengths_ragged_match_reference_under_both_alignments),
        cmocka_unit_test(test_gqa_and_alignment),
        cmocka_unit_test(test_long_causal_sequence_matches_reference),
        cmocka_unit_test(test_mma_sync_tiles),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    mxattn_destroy(g_ctx);
    mx_device_close(&g_dev);
    return rc;
}
