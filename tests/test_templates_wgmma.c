/* The f16 family's wgmma variant (sm_90a): renders deterministically over head
 * dims and flags, compiles with NVRTC into warpgroup MMAs fed by TMA with no
 * spills, asks the runtime for the tensor maps it reads, and rejects tables
 * it cannot run with a message naming the parameter.  No GPU needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gen/gen.h"
#include "support/gen_harness.h"
#include "runtime/nvrtc.h"

static mx_gen *g;

#define KNOBS "variant=wgmma q_regs=0 block_m=128 warps=8 block_n=64 stages=2"

static const int DIMS[] = {64, 72, 80, 96, 128, 192, 256};
#define N_DIMS (int)(sizeof DIMS / sizeof *DIMS)

/* "family=f16 head_dim=D", KNOBS with the extra's knobs in place of its own,
 * then the extra: a parameter text names each key once. */
static void wg_params(char *out, size_t cap, int d, const char *extra) {
    gen_params_with(out, cap, "f16", d, KNOBS, extra);
}

static const char *knobs_for(int d) { (void)d; return KNOBS; }

static void test_renders_deterministically(void **state) {
    static const char *extra[] = {"", "causal=1 lse=1", "dtype=f16 out_dtype=f16", "dtype=f16 out_dtype=bf16 causal=1",
                                  "block_m=64 warps=4 block_n=32 stages=3"};
    static const char *want[] = {"variant=wgmma", "__grid_constant__"};
    gen_expect_stable_sweep(g, "f16", DIMS, N_DIMS, knobs_for, extra, sizeof extra / sizeof *extra, want,
                            sizeof want / sizeof *want);
}

/* The tensor maps: one 2W-byte-swizzled box of W columns per panel, W the
 * widest of 64/32/16 dividing the head dim padded to 16. */
static void test_launch_asks_for_tensor_maps(void **state) {
    static const struct { int d, w; } cases[] = {{64, 64}, {80, 16}, {96, 32}, {128, 64}, {192, 64}, {256, 64}, {40, 16}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char params[256], want[64];
        snprintf(params, sizeof params, "family=f16 head_dim=%d " KNOBS, cases[i].d);
        gen_plan_kernel k;
        char *lp = gen_launch(g, params, "batch=3 heads_q=8 heads_kv=2 seq_q=1000 seq_k=17", &k, 1, 1);
        expect_plan_kernel(&k, 8, 8, 3, 256);   /* ceil(1000 / 128) row blocks x heads x batch */
        assert_true(k.smem <= 227 * 1024);
        snprintf(want, sizeof want, "tmap 0 q %d 128 %d", cases[i].w, 2 * cases[i].w);
        if (!strstr(lp, want)) fail_msg("D=%d: launch plan lacks '%s':\n%s", cases[i].d, want, lp);
        snprintf(want, sizeof want, "tmap 1 k %d 64 %d", cases[i].w, 2 * cases[i].w);
        assert_non_null(strstr(lp, want));
        snprintf(want, sizeof want, "tmap 2 v %d 64 %d", cases[i].w, 2 * cases[i].w);
        assert_non_null(strstr(lp, want));
        free(lp);
    }
}

static void test_invalid_tables_name_the_parameter(void **state) {
    gen_expect_invalid(g, "family=f16 head_dim=64 arch=sm_80 " KNOBS, "arch");
    gen_expect_invalid(g, "family=f16 head_dim=64 align=4 " KNOBS, "align");
    gen_expect_invalid(g, "family=f16 head_dim=64 variant=wgmma q_regs=1 block_m=128 warps=8 block_n=64 stages=2",
                          "q_regs");
    gen_expect_invalid(g, "family=f16 head_dim=64 variant=wgmma q_regs=0 block_m=32 warps=8 block_n=64 stages=2",
                          "block_m");
    gen_expect_invalid(g, "family=f16 head_dim=64 variant=wgmma q_regs=0 block_m=128 warps=4 block_n=64 stages=2",
                          "warps");
    gen_expect_invalid(g, "family=f16 head_dim=64 variant=wgmma q_regs=0 block_m=64 warps=12 block_n=64 stages=2",
                          "warps");
    gen_expect_invalid(g, "family=f16 head_dim=64 variant=wgmma q_regs=0 block_m=128 warps=8 block_n=64 stages=1",
                          "stages");
    gen_expect_invalid(g, "family=f16 head_dim=256 variant=wgmma q_regs=0 block_m=128 warps=8 block_n=128 stages=2",
                   "shared memory");
    gen_expect_invalid(g, "family=int8-f16 head_dim=64 " KNOBS, "variant");
    /* Key tiles that are not a power of two are the f16 warpgroup kernels' alone. */
    gen_expect_invalid(g, "family=f16 head_dim=64 variant=mma q_regs=1 block_m=128 warps=4 block_n=96 stages=2",
                          "block_n=96");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=128 variant=wgmma block_m=64 warps=4 block_n=96 stages=2",
                          "block_n=96");
    gen_expect_invalid(g, "family=f16 head_dim=128 variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12 block_n=176 stages=3",
                          "shared memory");
}

/* Compiles with NVRTC; returns 0 (and skips) when NVRTC is absent. */
static int compile(const char *params, mx_compile_result *r) {
    char *src = gen_call(g, "render", params, NULL);
    mx_compile_options opt = {.arch = "sm_90a", .want_ptx = 1};
    const char *name = strstr(src, "mxattn_f16_d");
    char kernel[64] = "";
    if (name) sscanf(name, "%63[A-Za-z0-9_]", kernel);
    mxattn_status st = mx_nvrtc_compile(src, kernel, &opt, r);
    free(src);
    if (st == MXATTN_ERROR_NO_COMPILER) return 0;
    if (st != MXATTN_OK) fail_msg("%s: %s", params, mxattn_last_error());
    return 1;
}

static void test_nvrtc_sm90a_emits_wgmma_and_tma(void **state) {
    static const char *extra[] = {"", "causal=1 lse=1", "dtype=f16 out_dtype=f16 lse=1",
                                  "block_m=64 warps=4 block_n=128 stages=3 causal=1",
                                  "warps=12 causal=1 lse=1", "block_m=64 warps=8 stages=3"};
    for (int i = 0; i < N_DIMS; i++)
        for (size_t j = 0; j < sizeof extra / sizeof *extra; j++) {
            if (j == 3 && DIMS[i] > 128) continue;   /* block_n=128 x 3 stages: too much shared memory */
            char params[256];
            wg_params(params, sizeof params, DIMS[i], extra[j]);
            mx_compile_result r;
            if (!compile(params, &r)) skip();
            const char *mma = strstr(params, "dtype=f16") ? ".f32.f16.f16" : ".f32.bf16.bf16";
            char want[96];
            snprintf(want, sizeof want, "wgmma.mma_async.sync.aligned.m64n%dk16%s", strstr(params, "block_n=128") ? 128 : 64, mma);
            if (!strstr(r.ptx, want)) fail_msg("%s: PTX lacks %s", params, want);
            assert_non_null(strstr(r.ptx, "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"));
            assert_non_null(strstr(r.ptx, "mbarrier.try_wait.parity"));
            assert_non_null(strstr(r.ptx, "wgmma.fence.sync.aligned"));
            assert_non_null(strstr(r.ptx, "wgmma.wait_group.sync.aligned"));
            assert_non_null(strstr(r.ptx, "ex2.approx.ftz.f32"));
            char label[96];
            snprintf(label, sizeof label, "D=%-3d %s", DIMS[i], extra[j]);
            expect_lean_wgmma_kernel(params, label, &r);
            if (strstr(params, "warps=12")) assert_non_null(strstr(r.ptx, "setmaxnreg.inc.sync.aligned.u32 240"));
            mx_compile_result_free(&r);
        }
}

/* ---- overlap=1: FlashAttention-3's ping-pong of two consumer warpgroups ---- */

#define PP "variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12 "

/* overlap=0's kernels, by what they are made of rather than their bytes (a
 * shared block may change its text; a cache key hashes the rendered source,
 * so new text simply makes new keys): a constants header, then
 * cuda/fwd_wgmma.cuh, whose one kernel is declared by KERNEL_NAME; every
 * consumer runs attend_tile once a key tile with no turns; PRODUCER (warps =
 * 4 * consumers + 4) picks the producer warpgroup, which hands its registers
 * to the consumers and frees ring slots through the empty mbarriers, over the
 * block barrier of the kernel without one; the ring has a full and an empty
 * mbarrier a slot for K and V. */
static void test_overlap0_kernels_have_their_structure(void **state) {
    static const struct { const char *params; int producer; } cases[] = {
        {"family=f16 head_dim=128 variant=wgmma q_regs=0 block_m=128 warps=12 block_n=128 stages=3", 1},
        {"family=f16 head_dim=64 variant=wgmma q_regs=0 block_m=64 warps=4 block_n=128 stages=2", 0},
        {"family=f16 head_dim=128 causal=1 lse=1 variant=wgmma q_regs=0 block_m=128 warps=8 block_n=64 stages=2", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *a = gen_call(g, "render", cases[i].params, NULL);
        assert_null(strstr(a, "sched_wait"));
        const char *want[] = {"attend_tile(o, row_max, row_sum",
                              cases[i].producer ? "constexpr bool PRODUCER = true;" : "constexpr bool PRODUCER = false;",
                              "const GridBlock b = grid_block_start(smem, a);",
                              "init_ring(b);", "mbar_init(b.bar_k(s), 1);", "mbar_init(b.bar_v(s), 1);",
                              "mbar_init(b.bar_empty(s), CONSUMERS * 128);",
                              "if (PRODUCER && warp < 4) {", "setmaxnreg.dec.sync.aligned.u32", "mbar_wait(b.bar_empty(slot)"};
        gen_expect_contains(a, cases[i].params, want, sizeof want / sizeof *want);
        assert_non_null(strstr(a, "__syncthreads();               // every warpgroup is done with this slot"));
        const char *header = strstr(a, "#define KERNEL_NAME mxattn_f16_d"), *kernel = strstr(a, "KERNEL_NAME(const __grid_constant__");
        assert_non_null(header);
        assert_non_null(kernel);
        assert_true(header < strstr(a, "constexpr bool PRODUCER") && header < strstr(a, "MX_INLINE void mbar_init"));
        int kernels = 0;
        for (const char *p = strstr(a, "extern \"C\" __global__"); p; p = strstr(p + 1, "extern \"C\" __global__")) kernels++;
        assert_int_equal(kernels, 1);
        free(a);
    }
}

/* overlap=1 renders deterministically, differently from overlap=0 (another
 * kernel name, so another cache key), with the turn-taking pieces. */
static void test_overlap_renders_deterministically_under_its_own_name(void **state) {
    static const char *extra[] = {"block_n=128 stages=3", "block_n=64 stages=2 causal=1 lse=1",
                                  "block_n=32 stages=3 dtype=f16 out_dtype=f16"};
    for (int i = 0; i < N_DIMS; i++)
        for (size_t j = 0; j < sizeof extra / sizeof *extra; j++) {
            if (j == 0 && DIMS[i] > 128) continue;   /* block_n=128 x 3 stages: too much shared memory */
            char params[256], plain[256];
            snprintf(params, sizeof params, "family=f16 head_dim=%d " PP "%s", DIMS[i], extra[j]);
            snprintf(plain, sizeof plain, "family=f16 head_dim=%d variant=wgmma q_regs=0 block_m=128 warps=12 %s",
                     DIMS[i], extra[j]);
            char *canon = gen_call(g, "validate", params, NULL);
            assert_non_null(strstr(canon, "overlap=1"));
            char *a = gen_call(g, "render", params, NULL), *b = gen_call(g, "render", canon, NULL);
            char *c = gen_call(g, "render", plain, NULL);
            assert_string_equal(a, b);
            static const char *want[] = {"overlap=1", "sched_wait(wg)", "sched_pass(wg)", "wgmma_wait<1>()"};
            gen_expect_contains(a, params, want, sizeof want / sizeof *want);
            assert_null(strstr(a, "attend_tile"));
            assert_null(strstr(c, "sched_wait"));
            assert_string_not_equal(a, c);
            const char *ka = strstr(a, "mxattn_f16_d"), *kc = strstr(c, "mxattn_f16_d");
            assert_non_null(ka);
            assert_non_null(kc);
            assert_false(strncmp(ka, kc, 24) == 0);   /* kernel names differ */
            free(a); free(b); free(c); free(canon);
        }
}

static void test_overlap_needs_two_consumers_and_a_producer(void **state) {
    gen_expect_invalid(g,
                       "family=f16 head_dim=128 variant=wgmma q_regs=0 overlap=1 block_m=128 warps=8 block_n=64 stages=2",
                       "overlap");
    gen_expect_invalid(g,
                       "family=f16 head_dim=128 variant=wgmma q_regs=0 overlap=1 block_m=64 warps=8 block_n=64 stages=2",
                       "overlap");
    gen_expect_invalid(g,
                       "family=f16 head_dim=64 variant=wgmma q_regs=0 overlap=1 block_m=64 warps=4 block_n=64 stages=2",
                       "overlap");
    gen_expect_invalid(g,
                       "family=f16 head_dim=128 variant=mma q_regs=0 overlap=1 block_m=128 warps=8 block_n=64 stages=2",
                       "overlap");
    char *ok = gen_call(g, "validate", "family=f16 head_dim=128 " PP "block_n=128 stages=3", NULL);
    free(ok);
}

/* The tuner's order: an overlap=1 tile ranks just above the same tile
 * without it.  The first line, the default, is the H200-checked overlap=1
 * tile (128 keys, three stages), persistent with a causal mask or without;
 * an overlap=0 request keeps the plain kernel. */
static void test_overlap_ranks_above_its_plain_tile(void **state) {
    char *cands = gen_call(g, "candidates", "family=f16 head_dim=128 arch=sm_90a", NULL);
    assert_non_null(strstr(cands, "overlap=0"));
    const char *first = "variant=wgmma q_regs=0 overlap=1 persistent=1 split=0 block_m=128 block_n=128 warps=12 stages=3";
    if (strncmp(cands, first, strlen(first)) != 0) fail_msg("first candidate is not %s:\n%.300s", first, cands);
    const char *with = strstr(cands, "variant=wgmma q_regs=0 overlap=1 persistent=0 split=0 block_m=128 block_n=128 warps=12 stages=2");
    const char *without = strstr(cands, "variant=wgmma q_regs=0 overlap=0 persistent=0 split=0 block_m=128 block_n=128 warps=12 stages=2");
    if (!with || !without) fail_msg("candidates lack block_n=128 stages=2 with or without overlap:\n%.2000s", cands);
    assert_true(with < without);
    free(cands);
    cands = gen_call(g, "candidates", "family=f16 head_dim=128 arch=sm_90a causal=1", NULL);
    if (strncmp(cands, first, strlen(first)) != 0) fail_msg("first causal candidate is not %s:\n%.300s", first, cands);
    free(cands);
    char *plain = gen_call(g, "render", "family=f16 head_dim=128 overlap=0", NULL);
    assert_null(strstr(plain, "persistent=1"));
    free(plain);
}

/* Where a turn waits for the last P V (blocks/wgmma_overlap.lua, "Where that
 * wait stands"): the f16 turns open with it, before taking their turn, so
 * that ptxas cannot hoist it above the softmax meant to run under that
 * product.  Both the grid and the persistent kernel. */
static const char *turn_loop(const char *src) { return strstr(src, "for (int t = 1; t < n_tiles; t++) {"); }
static void test_turns_wait_for_pv_where_ptxas_keeps_it(void **state) {
    static const struct { const char *params; int at_head; } cases[] = {
        {"family=f16 head_dim=128 " PP "block_n=128 stages=3", 1},
        {"family=f16 head_dim=128 " PP "persistent=1 block_n=128 stages=3 causal=1", 1},
        {"family=f16 head_dim=64 " PP "block_n=192 stages=2", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *src = gen_call(g, "render", cases[i].params, NULL);
        const char *loop = turn_loop(src), *end = loop ? strstr(loop, "// The last P V") : NULL;
        if (!loop || !end) fail_msg("%s: no turn loop", cases[i].params);
        const char *turn = strstr(loop, "sched_wait(wg);"), *softmax = strstr(loop, "softmax_scores(");
        const char *wait = strstr(loop, "wgmma_wait<0>();");
        assert_true(turn && softmax && wait && turn < end && softmax < end && wait < end);
        if (cases[i].at_head != (wait < turn))
            fail_msg("%s: the loop's wait for P V is %s the turn", cases[i].params, wait < turn ? "before" : "after");
        /* and only one such wait in the loop */
        const char *again = strstr(wait + 1, "wgmma_wait<0>();");
        assert_true(!again || again > end);
        free(src);
    }
}

/* Compiles to two warpgroups that take turns through named barriers (not 0,
 * 256 threads) with no spills and no serialized MMAs. */
static void test_overlap_compiles_to_turn_taking_warpgroups_lean(void **state) {
    static const struct { int d; const char *extra; } cases[] = {
        {128, "block_n=128 stages=3"}, {128, "block_n=128 stages=2 causal=1 lse=1"},
        {128, "block_n=64 stages=3 dtype=f16 out_dtype=f16"}, {64, "block_n=128 stages=3 causal=1"},
        {96, "block_n=128 stages=2 lse=1"}, {80, "block_n=64 stages=2"},
        {192, "block_n=64 stages=2 causal=1 lse=1"}, {256, "block_n=64 stages=2"},
        {256, "block_n=32 stages=3 causal=1"}, {128, "block_n=16 stages=3 causal=1"},
        {128, "block_n=176 stages=2"}, {128, "block_n=192 stages=2 causal=1 lse=1"}, {64, "block_n=96 stages=3"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char params[256];
        snprintf(params, sizeof params, "family=f16 head_dim=%d " PP "%s", cases[i].d, cases[i].extra);
        mx_compile_result r;
        if (!compile(params, &r)) skip();
        assert_non_null(strstr(r.ptx, "wgmma.mma_async.sync.aligned"));
        assert_non_null(strstr(r.ptx, "wgmma.wait_group.sync.aligned 1;"));
        assert_non_null(strstr(r.ptx, "setmaxnreg.inc.sync.aligned.u32 240"));
        /* bar.sync and bar.arrive on a named barrier of 256 threads (barrier 0 takes no count). */
        int named_sync = 0, named_arrive = 0;
        for (const char *p = r.ptx; (p = strstr(p, "bar.")) != NULL; p++) {
            const char *eol = strchr(p, ';');
            if (!eol) break;
            int len = (int)(eol - p);
            int counted = len > 5 && strncmp(eol - 5, ", 256", 5) == 0;
            if (strncmp(p, "bar.sync", 8) == 0 && counted && strncmp(p, "bar.sync \t0", 11) != 0) named_sync++;
            if (strncmp(p, "bar.arrive", 10) == 0 && counted) named_arrive++;
        }
        if (named_sync < 1 || named_arrive < 1)
            fail_msg("%s: PTX has %d named bar.sync and %d bar.arrive of 256 threads", params, named_sync, named_arrive);
        char label[96];
        snprintf(label, sizeof label, "D=%-3d %s", cases[i].d, cases[i].extra);
        expect_lean_wgmma_kernel(params, label, &r);
        mx_compile_result_free(&r);
    }
}

/* Each schedule is one CUDA file after a header of the constants it reads:
 * the header declares the kernel's symbol (KERNEL_NAME, the plan's name,
 * under its own compile guard) and the schedule's own constants, before the
 * blocks; the one kernel is the schedule's file, and no template hole is left. */
static void test_wgmma_sources_are_header_then_cuda_file(void **state) {
    static const struct { const char *params, *file, *constant; } cases[] = {
        {"family=f16 head_dim=96 dtype=f16 variant=wgmma q_regs=0 block_m=64 warps=4 block_n=64 stages=2",
         "// The Hopper forward (families/f16_wgmma.lua, variant=wgmma, overlap=0;", "constexpr bool MMA_BF16 = false;"},
        {"family=f16 head_dim=128 " PP "block_n=128 stages=2",
         "// The ping-pong (families/f16_wgmma.lua, overlap=1; sm_90a)", "constexpr int SCHED_BAR = 1;"},
        {"family=f16 head_dim=128 causal=1 " PP "persistent=1 block_n=128 stages=3",
         "// The persistent ping-pong (families/f16_wgmma.lua, persistent=1; sm_90a)", "constexpr bool DEFERRED = false;"},
        {"family=f16 head_dim=128 " PP "persistent=1 split=1 block_n=128 stages=3",
         "// The persistent ping-pong (families/f16_wgmma.lua, persistent=1; sm_90a)", "constexpr bool SPLIT = true;"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char line[192];
        char *src = gen_render_with_header(g, cases[i].params, "batch=1 heads_q=2 heads_kv=2 seq_q=512 seq_k=512", line, sizeof line);
        const char *header = strstr(src, line), *blocks = strstr(src, "MX_INLINE void mbar_init");
        const char *file = strstr(src, cases[i].file), *constant = strstr(src, cases[i].constant);
        const char *kernel = strstr(src, "extern \"C\" __global__ void __launch_bounds__(THREADS, 1) KERNEL_NAME(");
        if (!header || !constant || !blocks || header > constant || constant > blocks)
            fail_msg("%s: no header with KERNEL_NAME and '%s' before the blocks", cases[i].params, cases[i].constant);
        if (!file || !kernel || file > kernel || blocks > file) fail_msg("%s: the kernel is not its schedule's file", cases[i].params);
        assert_null(strstr(kernel + 1, "extern \"C\" __global__"));
        free(src);
    }
}

/* persistent=1: the overlap=1 kernel looped over work units.  Only the
 * overlap=1 schedule takes it, the canonical text names it as every knob the
 * family reads, its launch line names every unit along x with one resident
 * block per SM, and it compiles lean. */
static void test_persistent_needs_overlap_and_launches_one_block_an_sm(void **state) {
    char *plain = gen_call(g, "render", "family=f16 head_dim=128 " PP "block_n=128 stages=3", NULL);
    assert_non_null(strstr(plain, " persistent=0 split=0 "));
    assert_null(strstr(plain, "set_work"));
    free(plain);
    char *looped = gen_call(g, "render", "family=f16 head_dim=128 " PP "persistent=1 block_n=128 stages=3", NULL);
    assert_non_null(strstr(looped, "atomicAdd(&sched[0]"));   /* units taken in order, not fixed */
    /* Without a causal mask a unit's output is stored during the next unit
     * (measured faster on the H200); under causal, and where the packed
     * output would not fit beside O and S, it is written when the unit ends. */
    assert_non_null(strstr(looped, "constexpr bool DEFERRED = true;"));
    assert_non_null(strstr(looped, "store_output(pending_out"));
    assert_non_null(strstr(looped, "pack_output(pending_out"));
    free(looped);
    static const char *direct[] = {"head_dim=128 causal=1 block_n=128 stages=3", "head_dim=128 block_n=176 stages=2"};
    for (size_t i = 0; i < sizeof direct / sizeof *direct; i++) {
        char params[256];
        snprintf(params, sizeof params, "family=f16 " PP "persistent=1 %s", direct[i]);
        char *src = gen_call(g, "render", params, NULL);
        assert_non_null(strstr(src, "constexpr bool DEFERRED = false;"));
        assert_non_null(strstr(src, "write_output(o, row_max"));
        free(src);
    }
    gen_expect_invalid(g, "family=f16 head_dim=128 variant=wgmma q_regs=0 persistent=1 block_m=128 warps=12 block_n=128 stages=2",
                       "persistent=1");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=128 variant=wgmma overlap=1 persistent=1 block_m=128 warps=12 block_n=128 stages=2",
                       "persistent");
    char *launch = gen_call(g, "launch", "family=f16 head_dim=128 " PP "persistent=1 block_n=128 stages=2",
                            "batch=2 heads_q=8 heads_kv=2 seq_q=1100 seq_k=900");
    gen_plan_kernel k;
    assert_int_equal(gen_plan_kernels(launch, &k, 1), 1);
    assert_int_equal(gen_plan_value(launch, "workspace "), 8);   /* the unit counters */
    expect_plan_kernel(&k, 9 * 8 * 2, 1, 1, 384);   /* ceil(1100 / 128) row blocks x heads x batch */
    assert_int_equal(k.resident, 1);   /* one block an SM: the runtime clamps the grid to a wave */
    free(launch);
    static const char *cases[] = {"head_dim=128 block_n=176 stages=2", "head_dim=128 block_n=128 stages=3 causal=1 lse=1",
                                  "head_dim=64 block_n=192 stages=2 dtype=f16 out_dtype=f16",
                                  "head_dim=128 block_n=128 stages=3 lse=1", "head_dim=96 block_n=160 stages=2"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char params[256];
        snprintf(params, sizeof params, "family=f16 " PP "persistent=1 %s", cases[i]);
        mx_compile_result r;
        if (!compile(params, &r)) skip();
        assert_non_null(strstr(r.ptx, "setmaxnreg.inc.sync.aligned.u32 240"));
        char label[96];
        snprintf(label, sizeof label, "persistent %s", cases[i]);
        expect_lean_wgmma_kernel(params, label, &r);
        mx_compile_result_free(&r);
    }
}

/* block_m=192: three consumer warpgroups share one K/V stream, at D <= 64
 * only (160 registers a consumer beside a producer, 168 without); both
 * kernels compile lean for sm_90a, the producer's giving 24 + 3 x 160. */
static void test_three_consumers_legal_to_d64_and_compile_lean(void **state) {
    gen_expect_invalid(g, "family=f16 head_dim=128 variant=wgmma q_regs=0 block_m=192 warps=16 block_n=128 stages=2",
                       "head_dim <= 64");
    gen_expect_invalid(g, "family=f16 head_dim=64 variant=wgmma q_regs=0 block_m=192 warps=8 block_n=128 stages=2",
                       "warps");
    gen_expect_invalid(g, "family=f16 head_dim=64 variant=wgmma q_regs=0 overlap=1 block_m=192 warps=16 block_n=128 stages=2",
                       "overlap");
    static const char *cases[] = {"head_dim=64 block_m=192 warps=16 block_n=128 stages=2",
                                  "head_dim=64 block_m=192 warps=16 block_n=128 stages=3 causal=1 lse=1",
                                  "head_dim=48 block_m=192 warps=12 block_n=64 stages=3 dtype=f16 out_dtype=f16"};
    if (!expect_three_consumer_kernels(compile, "family=f16 variant=wgmma q_regs=0", cases, sizeof cases / sizeof *cases))
        skip();
}

/* The default reads the problem's sizes where a plan has them: at D <= 64
 * long queries get 192-row blocks, short ones (decoding, 1024-row heads)
 * keep the 64-row blocks; without sizes (mxattn compile, the tuner's list)
 * the long-query table; D=128 does not depend on them. */
static void test_default_reads_the_queries(void **state) {
    static const char *shape = "family=f16 arch=sm_90a head_dim=64 dtype=bf16 out_dtype=bf16 causal=0 lse=0 align=8";
    static const struct { const char *sizes; const char *want; } cases[] = {
        {"batch=8 heads_q=32 heads_kv=8 seq_q=64 seq_k=4096 head_dim=64", "block_m=64 "},   /* (up to 16 rows: variant=decode) */
        {"batch=4 heads_q=32 heads_kv=32 seq_q=1024 seq_k=1024 head_dim=64", "block_m=64 "},
        {"batch=4 heads_q=32 heads_kv=32 seq_q=2048 seq_k=2048 head_dim=64", "block_m=192 "},
        {"batch=1 heads_q=8 heads_kv=8 seq_q=16384 seq_k=16384 head_dim=64", "block_m=192 "},
        /* cross-attention: few keys keep the 64-row blocks, 77 of them one 96-key tile */
        {"batch=2 heads_q=16 heads_kv=16 seq_q=4096 seq_k=77 head_dim=64", "block_m=64 block_n=96 "},
        {"batch=2 heads_q=16 heads_kv=16 seq_q=4096 seq_k=1024 head_dim=64", "block_m=64 block_n=128 "},
        {NULL, "block_m=192 "}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *knobs = gen_call(g, "default_knobs", shape, cases[i].sizes);
        if (!strstr(knobs, cases[i].want)) fail_msg("%s: default %s, want %s", cases[i].sizes, knobs, cases[i].want);
        free(knobs);
    }
    /* The tuner's list starts with the same default, so it measures against
     * what an untuned plan runs. */
    char *list = gen_call(g, "candidates", shape, cases[0].sizes);
    char *first = gen_call(g, "default_knobs", shape, cases[0].sizes);
    assert_int_equal(strncmp(list, first, strlen(first)), 0);
    assert_int_equal(list[strlen(first)], '\n');
    free(list);
    free(first);
    char *d128 = gen_call(g, "default_knobs", "family=f16 arch=sm_90a head_dim=128 align=8",
                          "batch=1 heads_q=8 heads_kv=8 seq_q=64 seq_k=4096 head_dim=128");
    char *plain = gen_call(g, "knobs", "family=f16 arch=sm_90a head_dim=128 align=8", NULL);
    assert_string_equal(d128, plain);
    free(d128);
    free(plain);
}

/* split=1: the persistent kernel (its SPLIT) without a causal mask, whose
 * units split along the keys when a problem has fewer of them than the launch
 * has blocks: pieces of a unit's key tiles, masked and loaded from their first
 * tile, a piece's partial through the workspace, with the pieces' limits in
 * the header; the launch asks for 8 blocks a unit.  The default takes it
 * where the row blocks leave half of the SMs idle. */
static void test_split_is_persistent_noncausal_and_default_when_sms_idle(void **state) {
    char *src = gen_call(g, "render", "family=f16 head_dim=128 " PP "persistent=1 split=1 block_n=128 stages=3", NULL);
    assert_non_null(strstr(src, "constexpr bool SPLIT = true;"));
    assert_non_null(strstr(src, "constexpr int MAX_SPLIT = 8, MAX_PIECES = 160;"));
    assert_non_null(strstr(src, "finish_piece(o, row_max"));
    assert_non_null(strstr(src, "b.load_kv_into(tile0 + t, slot)"));
    assert_non_null(strstr(src, "mask_tile(s, tile0 + t, warp_row0, a)"));
    free(src);
    char *plain = gen_call(g, "render", "family=f16 head_dim=128 " PP "persistent=1 block_n=128 stages=3", NULL);
    assert_non_null(strstr(plain, "constexpr bool SPLIT = false;"));
    free(plain);
    gen_expect_invalid(g, "family=f16 head_dim=128 causal=1 " PP "persistent=1 split=1 block_n=128 stages=3", "split=1");
    gen_expect_invalid(g, "family=f16 head_dim=128 " PP "split=1 block_n=128 stages=3", "split=1");
    gen_expect_invalid(g, "family=f16 head_dim=128 " PP "persistent=1 split=1 block_n=176 stages=2", "registers");
    char *launch = gen_call(g, "launch", "family=f16 head_dim=128 " PP "persistent=1 split=1 block_n=128 stages=2",
                            "batch=2 heads_q=8 heads_kv=2 seq_q=1100 seq_k=900");
    /* The unit counters, then 160 pieces x 8 consumer warps of counters and
     * partials: 256 + 160 x 8 x (4 + 32 lanes x (64 + 4) floats x 4). */
    assert_int_equal(gen_plan_value(launch, "workspace "), 11146496);
    gen_plan_kernel k;
    assert_int_equal(gen_plan_kernels(launch, &k, 1), 1);
    assert_int_equal(k.grid[0], 9 * 8 * 2 * 8);   /* row blocks x heads x batch, x 8 blocks a unit */
    free(launch);
    static const char *shape = "family=f16 arch=sm_90a head_dim=128 dtype=bf16 out_dtype=bf16 causal=%d lse=0 align=8";
    static const struct { int causal; const char *sizes; int split; } cases[] = {
        {0, "batch=1 heads_q=8 heads_kv=8 seq_q=1024 seq_k=1024 head_dim=128 sms=132", 1},   /* 64 units */
        {0, "batch=1 heads_q=8 heads_kv=8 seq_q=1100 seq_k=1024 head_dim=128 sms=132", 0},   /* 72 > 66 */
        {1, "batch=1 heads_q=8 heads_kv=8 seq_q=1024 seq_k=1024 head_dim=128 sms=132", 0},
        {0, "batch=4 heads_q=32 heads_kv=32 seq_q=4096 seq_k=4096 head_dim=128 sms=132", 0},
        {0, "batch=1 heads_q=8 heads_kv=8 seq_q=1024 seq_k=1024 head_dim=128", 0}};     /* no SM count */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[256];
        snprintf(text, sizeof text, shape, cases[i].causal);
        char *knobs = gen_call(g, "default_knobs", text, cases[i].sizes);
        if ((strstr(knobs, "split=1") != NULL) != cases[i].split)
            fail_msg("causal=%d %s: default %s, want split=%d", cases[i].causal, cases[i].sizes, knobs, cases[i].split);
        /* The candidate list starts with the same default for the same sizes
         * (mxattn_candidates and the tuner pass the SM count as a plan does). */
        char *list = gen_call(g, "candidates", text, cases[i].sizes);
        size_t first = strcspn(list, "\n");
        if (first != strlen(knobs) || strncmp(list, knobs, first) != 0)
            fail_msg("causal=%d %s: candidates start '%.*s', default %s", cases[i].causal, cases[i].sizes, (int)first,
                     list, knobs);
        free(list);
        free(knobs);
    }
    static const char *compiled[] = {"head_dim=128 block_n=128 stages=3", "head_dim=64 block_n=128 stages=2 lse=1",
                                     "head_dim=96 block_n=128 stages=2 dtype=f16 out_dtype=f16"};
    for (size_t i = 0; i < sizeof compiled / sizeof *compiled; i++) {
        char params[256];
        snprintf(params, sizeof params, "family=f16 " PP "persistent=1 split=1 %s", compiled[i]);
        mx_compile_result r;
        if (!compile(params, &r)) skip();
        char label[96];
        snprintf(label, sizeof label, "split %s", compiled[i]);
        expect_lean_wgmma_kernel(params, label, &r);
        mx_compile_result_free(&r);
    }
}

/* The prior reads the sizes: over 77 keys (cross-attention) a 96-key tile
 * wastes less of its MMAs than a 192-key one, and ranks first; over 4096
 * keys the 128-key tile still ranks above the 176-key one. */
static void test_prior_ranks_tiles_that_fit_the_keys_first(void **state) {
    const char *shape = "family=f16 arch=sm_90a head_dim=64 align=8";
    char *cross = gen_call(g, "candidates", shape, "batch=2 heads_q=16 heads_kv=16 seq_q=4096 seq_k=77 head_dim=64 sms=132");
    const char *fit = strstr(cross, "block_n=96 "), *wide = strstr(cross, "block_n=192 ");
    if (!fit || !wide || fit > wide) fail_msg("over 77 keys, 96-key tiles do not rank above 192:\n%.1500s", cross);
    free(cross);
    char *prefill = gen_call(g, "candidates", shape, "batch=4 heads_q=32 heads_kv=32 seq_q=4096 seq_k=4096 head_dim=64 sms=132");
    const char *even = strstr(prefill, "block_n=128 "), *odd = strstr(prefill, "block_n=176 ");
    if (!even || !odd || even > odd) fail_msg("over 4096 keys, 128-key tiles do not rank above 176:\n%.1500s", prefill);
    free(prefill);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renders_deterministically),
        cmocka_unit_test(test_launch_asks_for_tensor_maps),
        cmocka_unit_test(test_invalid_tables_name_the_parameter),
        cmocka_unit_test(test_nvrtc_sm90a_emits_wgmma_and_tma),
        cmocka_unit_test(test_overlap0_kernels_have_their_structure),
        cmocka_unit_test(test_overlap_renders_deterministically_under_its_own_name),
        cmocka_unit_test(test_overlap_needs_two_consumers_and_a_producer),
        cmocka_unit_test(test_overlap_ranks_above_its_plain_tile),
        cmocka_unit_test(test_overlap_compiles_to_turn_taking_warpgroups_lean),
        cmocka_unit_test(test_turns_wait_for_pv_where_ptxas_keeps_it),
        cmocka_unit_test(test_persistent_needs_overlap_and_launches_one_block_an_sm),
        cmocka_unit_test(test_wgmma_sources_are_header_then_cuda_file),
        cmocka_unit_test(test_three_consumers_legal_to_d64_and_compile_lean),
        cmocka_unit_test(test_default_reads_the_queries),
        cmocka_unit_test(test_split_is_persistent_noncausal_and_default_when_sms_idle),
        cmocka_unit_test(test_prior_ranks_tiles_that_fit_the_keys_first),
    };
    return gen_run_tests(&g, tests, sizeof tests / sizeof *tests);
}
