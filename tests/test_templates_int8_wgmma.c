/* The int8-fp8 family's wgmma variant (sm_90a): renders deterministically over
 * head dims and flags, keeps the quantization kernels of the mma variant,
 * asks the runtime for TMA maps over the workspace sections q8, k8 and v8t,
 * compiles with NVRTC into s8 and e4m3 warpgroup MMAs fed by TMA with no
 * spills, rejects tables it cannot run with a message naming the parameter,
 * and leaves the family's default (and its mma candidates' order) alone.
 * No GPU needed. */
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

#define KNOBS "variant=wgmma block_m=128 warps=12 block_n=128 stages=2"

static const int DIMS[] = {64, 80, 96, 128, 256};
#define N_DIMS (int)(sizeof DIMS / sizeof *DIMS)

/* The knobs of a head dim's largest legal tile (block_n 64 above D=128). */
static const char *knobs_for(int d) {
    return d <= 128 ? KNOBS : "variant=wgmma block_m=128 warps=12 block_n=64 stages=2";
}

/* "family=int8-fp8 head_dim=D", knobs_for(D) with the extra's knobs in place
 * of its own, then the extra: a parameter text names each key once. */
static void wg_params(char *out, size_t cap, int d, const char *extra) {
    gen_params_with(out, cap, "int8-fp8", d, knobs_for(d), extra);
}

static void test_renders_deterministically(void **state) {
    static const char *extra[] = {"", "causal=1 lse=1", "dtype=f16 out_dtype=f16", "smooth_k=0 lse=1",
                                  "block_m=64 warps=4 block_n=32 stages=3", "block_m=128 warps=8 block_n=64 stages=2"};
    static const char *want[] = {"variant=wgmma", "__grid_constant__", "_stats(const mx_kernel_args a)",
                                 "_quant_q(const mx_kernel_args a)", "_quant_kv(const mx_kernel_args a)"};
    gen_expect_stable_sweep(g, "int8-fp8", DIMS, N_DIMS, knobs_for, extra, sizeof extra / sizeof *extra, want,
                            sizeof want / sizeof *want);
}

/* The mma variant's quantization helpers and kernels, byte for byte: from
 * the helpers to the end of quant_q (the last quant kernel rendered), the
 * two sources differ only in the kernel names (their hashes cover the
 * variant). */
static char *quant_part(const char *src) {
    const char *a = strstr(src, "// ---- quantization helpers"), *q = strstr(src, "_quant_q(const mx_kernel_args a)");
    const char *b = q ? strstr(q, "\n}\n") : NULL;
    if (b) b += 3;
    const char *name = strstr(src, "mxattn_int8_fp8_d");
    if (!a || !b || !name) return NULL;
    char stem[64];   /* mxattn_int8_fp8_d<D>_<8 hex digits>, without the _stats/_quant_* suffix */
    const char *hash = strchr(name + strlen("mxattn_int8_fp8_d"), '_');
    if (!hash) return NULL;
    snprintf(stem, sizeof stem, "%.*s", (int)(hash + 9 - name), name);
    /* Copy with every occurrence of the kernel name replaced by "NAME". */
    char *out = malloc((size_t)(b - a) + 1), *w = out;
    for (const char *p = a; p < b;) {
        if (!strncmp(p, stem, strlen(stem))) { memcpy(w, "NAME", 4); w += 4; p += strlen(stem); }
        else *w++ = *p++;
    }
    *w = 0;
    return out;
}

static void test_quant_kernels_unchanged(void **state) {
    static const char *shapes[] = {"head_dim=128 causal=1 lse=1", "head_dim=80 smooth_k=0 dtype=f16 out_dtype=f16"};
    for (size_t i = 0; i < 2; i++) {
        char p_mma[256], p_wg[256];
        snprintf(p_mma, sizeof p_mma, "family=int8-fp8 %s variant=mma block_m=128 warps=8 block_n=64 stages=2", shapes[i]);
        snprintf(p_wg, sizeof p_wg, "family=int8-fp8 %s variant=wgmma block_m=128 warps=8 block_n=64 stages=2", shapes[i]);
        char *a = gen_call(g, "render", p_mma, NULL), *b = gen_call(g, "render", p_wg, NULL);
        char *qa = quant_part(a), *qb = quant_part(b);
        assert_non_null(qa);
        assert_non_null(qb);
        assert_non_null(strstr(qa, "NAME_quant_kv(const mx_kernel_args a)"));
        assert_non_null(strstr(qa, "NAME_quant_q(const mx_kernel_args a)"));
        assert_string_equal(qa, qb);
        free(a); free(b); free(qa); free(qb);
    }
}

/* Four kernels (stats, quant_q, quant_kv, attention) over the mma variant's workspace,
 * and TMA maps over sections 0 (q8), 1 (k8) and 6 (v8t): one W-byte panel
 * per box for Q8/K8 (W the widest of 128/64/32 dividing D32), V^T boxes of
 * DV channel rows x block_n keys swizzled by block_n bytes. */
static void test_launch_plan_and_tensor_maps(void **state) {
    static const struct { int d, d32, dv, w; } cases[] = {{64, 64, 64, 64}, {80, 96, 80, 32}, {96, 96, 96, 32},
                                                            {128, 128, 128, 128}, {256, 256, 256, 128}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char params[256], mma_params[256], want[128];
        snprintf(params, sizeof params, "family=int8-fp8 head_dim=%d variant=wgmma block_m=128 warps=8 block_n=64 stages=2",
                 cases[i].d);
        snprintf(mma_params, sizeof mma_params, "family=int8-fp8 head_dim=%d variant=mma block_m=128 warps=8 block_n=64 stages=2",
                 cases[i].d);
        const char *problem = "batch=3 heads_q=8 heads_kv=2 seq_q=1000 seq_k=17";
        char *lp = gen_call(g, "launch", params, problem), *lp_mma = gen_call(g, "launch", mma_params, problem);
        /* Same workspace and sections as the mma variant with the same block_m/block_n. */
        assert_int_equal(gen_plan_value(lp, "workspace "), gen_plan_value(lp_mma, "workspace "));
        for (int s = 1; s < 8; s++) {
            char key[16];
            snprintf(key, sizeof key, "wsoff %d ", s);
            assert_int_equal(gen_plan_value(lp, key), gen_plan_value(lp_mma, key));
        }
        gen_plan_kernel k[4];
        assert_int_equal(gen_plan_kernels(lp, k, 4), 4);
        assert_non_null(strstr(k[0].name, "_stats"));
        assert_non_null(strstr(k[1].name, "_quant_q"));
        assert_non_null(strstr(k[2].name, "_quant_kv"));
        expect_plan_kernel(&k[3], 8, 8, 3, 256);   /* nqp = 1024: 8 blocks of 128 */
        assert_true(k[3].smem <= 227 * 1024);
        /* tmapws slot section elem_bytes cols rows heads batch box_cols box_rows swizzle */
        snprintf(want, sizeof want, "tmapws 0 0 1 %d 1024 8 3 %d 128 %d", cases[i].d32, cases[i].w, cases[i].w);
        if (!strstr(lp, want)) fail_msg("D=%d: launch plan lacks '%s':\n%s", cases[i].d, want, lp);
        snprintf(want, sizeof want, "tmapws 1 1 1 %d 64 2 3 %d 64 %d", cases[i].d32, cases[i].w, cases[i].w);
        if (!strstr(lp, want)) fail_msg("D=%d: launch plan lacks '%s':\n%s", cases[i].d, want, lp);
        snprintf(want, sizeof want, "tmapws 2 6 1 64 %d 2 3 64 %d 64", cases[i].dv, cases[i].dv);
        if (!strstr(lp, want)) fail_msg("D=%d: launch plan lacks '%s':\n%s", cases[i].d, want, lp);
        free(lp); free(lp_mma);
    }
}

static void test_invalid_tables_name_the_parameter(void **state) {
    static const gen_invalid_case cases[] = {
        {"family=int8-fp8 head_dim=64 arch=sm_89 " KNOBS, "arch"},
        {"family=int8-fp8 head_dim=64 variant=wgmma block_m=32 warps=8 block_n=64 stages=2", "block_m"},
        {"family=int8-fp8 head_dim=64 variant=wgmma block_m=256 warps=8 block_n=64 stages=2", "block_m"},
        {"family=int8-fp8 head_dim=64 variant=wgmma block_m=128 warps=4 block_n=64 stages=2", "warps"},
        {"family=int8-fp8 head_dim=64 variant=wgmma block_m=64 warps=12 block_n=64 stages=2", "warps"},
        {"family=int8-fp8 head_dim=64 variant=wgmma block_m=128 warps=8 block_n=16 stages=2", "block_n"},
        {"family=int8-fp8 head_dim=64 variant=wgmma block_m=128 warps=8 block_n=64 stages=1", "stages"},
        {"family=int8-fp8 head_dim=256 variant=wgmma block_m=128 warps=8 block_n=128 stages=2", "block_n"},
        {"family=int8-fp8 head_dim=64 variant=wgmma q_regs=0 block_m=128 warps=8 block_n=64 stages=2", "q_regs"},
        {"family=int8-f16 head_dim=64 " KNOBS, "variant"},
    };
    gen_expect_invalid_cases(g, cases, sizeof cases / sizeof *cases);
}

/* On sm_90a the default is wgmma (checked on the H200) and every wgmma
 * candidate ranks before every mma one (the decode tiles aside); elsewhere
 * the default is mma. */
static void test_default_is_wgmma_on_hopper(void **state) {
    static const int dims[] = {64, 128};
    for (int i = 0; i < 2; i++) {
        char params[128];
        snprintf(params, sizeof params, "family=int8-fp8 head_dim=%d", dims[i]);
        char *knobs = gen_call(g, "knobs", params, NULL);
        assert_non_null(strstr(knobs, "variant=wgmma"));
        free(knobs);
        char *cands = gen_call(g, "candidates", params, NULL);
        int seen_mma = 0, n_wgmma = 0, n = 0;
        for (char *line = strtok(cands, "\n"); line; line = strtok(NULL, "\n"), n++) {
            /* Decoding's default is a rival where the rows are not known
             * (templates/mxattn.lua), listed early; the rest of decode last. */
            if (strstr(line, "variant=decode")) continue;
            int wg = strstr(line, "variant=wgmma") != NULL;
            if (wg && seen_mma) fail_msg("D=%d: wgmma candidate '%s' ranks after an mma one", dims[i], line);
            seen_mma |= !wg;
            n_wgmma += wg;
        }
        assert_true(n_wgmma > 0);
        assert_true(n > n_wgmma);
        free(cands);
    }
    char *elsewhere = gen_call(g, "knobs", "family=int8-fp8 head_dim=128 arch=sm_89", NULL);
    assert_non_null(strstr(elsewhere, "variant=mma"));
    free(elsewhere);
    /* Asking for the variant alone gives its own default tile: without a
     * mask and with long rows (or no sizes), consumers sharing a ring (three
     * above D=64, four up to it), else one warpgroup a block. */
    char *knobs = gen_call(g, "knobs", "family=int8-fp8 head_dim=128 variant=wgmma", NULL);
    assert_non_null(strstr(knobs, "variant=wgmma"));
    assert_non_null(strstr(knobs, "block_m=192"));
    assert_non_null(strstr(knobs, "warps=12"));
    free(knobs);
    knobs = gen_call(g, "knobs", "family=int8-fp8 head_dim=128 variant=wgmma causal=1", NULL);
    assert_non_null(strstr(knobs, "block_m=64"));
    free(knobs);
    knobs = gen_call(g, "knobs", "family=int8-fp8 head_dim=64 variant=wgmma", NULL);
    assert_non_null(strstr(knobs, "block_m=256"));
    free(knobs);
    static const struct { const char *sizes; const char *want; } by_size[] = {
        {"batch=4 heads_q=32 heads_kv=32 seq_q=16384 seq_k=16384", "block_m=192"},
        {"batch=4 heads_q=32 heads_kv=32 seq_q=1024 seq_k=16384", "block_m=64"},
        {"batch=4 heads_q=32 heads_kv=32 seq_q=4096 seq_k=2048", "block_m=64"},
        {"batch=4 heads_q=32 heads_kv=32 seq_q=4096 seq_k=4096 sms=132", "block_m=192"},   /* 21 waves */
        {"batch=1 heads_q=8 heads_kv=8 seq_q=4096 seq_k=4096 sms=132", "block_m=64"}};     /* 1.3 waves */
    for (size_t i = 0; i < sizeof by_size / sizeof *by_size; i++) {
        knobs = gen_call(g, "default_knobs", "family=int8-fp8 head_dim=128", by_size[i].sizes);
        if (!strstr(knobs, by_size[i].want)) fail_msg("D=128 %s: default %s, want %s", by_size[i].sizes, knobs, by_size[i].want);
        free(knobs);
    }
    knobs = gen_call(g, "default_knobs", "family=int8-fp8 head_dim=64", "batch=4 heads_q=32 heads_kv=32 seq_q=4096 seq_k=4096");
    assert_non_null(strstr(knobs, "blocks_per_sm=4"));
    free(knobs);
    /* Above D=128: two consumers behind a producer, 64-key tiles, causal or not. */
    for (int causal = 0; causal < 2; causal++) {
        char params[96];
        snprintf(params, sizeof params, "family=int8-fp8 head_dim=%d causal=%d", causal ? 256 : 160, causal);
        knobs = gen_call(g, "knobs", params, NULL);
        if (!strstr(knobs, "rowsum_mma=1 block_m=128 block_n=64 warps=12 stages=2"))
            fail_msg("%s: default %s", params, knobs);
        free(knobs);
    }
}

/* The candidate list puts the family's defaults at other sizes right after
 * this size's default: at long rows the one-warpgroup tile of short rows is
 * second, at short rows the shared ring of long ones, though the analytic
 * prior ranks them far apart (a tuner that times 8 candidates must still
 * time the rival). */
static void test_candidates_put_rivals_next(void **state) {
    static const struct { const char *sizes, *first, *second; } cases[] = {
        {"batch=4 heads_q=32 heads_kv=32 seq_q=16384 seq_k=16384 sms=132", "block_m=192", "block_m=64"},
        {"batch=4 heads_q=32 heads_kv=32 seq_q=1024 seq_k=1024 sms=132", "block_m=64", "block_m=192"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *list = gen_call(g, "candidates", "family=int8-fp8 head_dim=128", cases[i].sizes);
        char *first = strtok(list, "\n"), *second = strtok(NULL, "\n");
        assert_non_null(second);
        if (!strstr(first, cases[i].first) || !strstr(second, cases[i].second))
            fail_msg("%s: candidates start '%s', '%s'; want %s, then %s", cases[i].sizes, first, second,
                     cases[i].first, cases[i].second);
        int n = 2;
        while (strtok(NULL, "\n")) n++;
        free(list);
        /* The same set, only reordered, but for the decode tiles: never a
         * candidate at thousands of query rows (DEC.candidate). */
        char *plain = gen_call(g, "candidates", "family=int8-fp8 head_dim=128", NULL);
        int m = 0;
        for (char *line = strtok(plain, "\n"); line; line = strtok(NULL, "\n")) m += !strstr(line, "variant=decode");
        assert_int_equal(n, m);
        free(plain);
    }
    /* At 16384 keys the default is the ring (overlap=3) and its rival at
     * 8192, the shared ring (overlap=0, block_m=192), is among the first
     * four: a tune of four candidates times both. */
    char *list = gen_call(g, "candidates", "family=int8-fp8 head_dim=128",
                          "batch=4 heads_q=32 heads_kv=32 seq_q=16384 seq_k=16384 sms=132");
    int shared_at = 0, i = 0;
    for (char *line = strtok(list, "\n"); line && i < 4; line = strtok(NULL, "\n"), i++) {
        if (i == 0 && !strstr(line, "overlap=3")) fail_msg("16384 keys: default '%s', want the ring (overlap=3)", line);
        if (strstr(line, "overlap=0") && strstr(line, "block_m=192") && strstr(line, "warps=12")) shared_at = i + 1;
    }
    if (!shared_at) fail_msg("16384 keys: the shared ring is not among the first four candidates");
    free(list);
}

/* Compiles the attention kernel (the launch plan's last) with NVRTC; returns
 * 0 (and the caller skips) when NVRTC is absent. */
static int compile(const char *params, mx_compile_result *r) {
    char *src = gen_call(g, "render", params, NULL);
    char *lp = gen_call(g, "launch", params, "batch=1 heads_q=1 heads_kv=1 seq_q=128 seq_k=128");
    char kernel[128];
    gen_plan_last_kernel(lp, kernel, sizeof kernel);
    free(lp);
    mx_compile_options opt = {.arch = "sm_90a", .want_ptx = 1};
    mxattn_status st = mx_nvrtc_compile(src, kernel, &opt, r);
    free(src);
    if (st == MXATTN_ERROR_NO_COMPILER) return 0;
    if (st != MXATTN_OK) fail_msg("%s: %s", params, mxattn_last_error());
    return 1;
}

/* The value of the last `key` in a parameter string (a later key overrides). */
static int count_in_kernel(const char *ptx, const char *what);

static int last_int(const char *params, const char *key) {
    int v = 0;
    for (const char *p = strstr(params, key); p; p = strstr(p + 1, key)) v = atoi(p + strlen(key));
    return v;
}

/* The PTX has S's s8 wgmma at block_n keys and P V's e4m3 wgmma at the P V
 * width: the head dim rounded up to 16, in two column slices above 128. */
static void expect_wgmma_shapes(const char *params, const char *ptx, int head_dim) {
    int block_n = last_int(params, "block_n="), dv = (head_dim + 15) / 16 * 16;
    if (dv > 128) dv /= 2;
    char want[128];
    snprintf(want, sizeof want, "wgmma.mma_async.sync.aligned.m64n%dk32.s32.s8.s8", block_n);
    if (!strstr(ptx, want)) fail_msg("%s: PTX lacks %s", params, want);
    snprintf(want, sizeof want, "wgmma.mma_async.sync.aligned.m64n%dk32.f32.e4m3.e4m3", dv);
    if (!strstr(ptx, want)) fail_msg("%s: PTX lacks %s", params, want);
}

static void test_nvrtc_sm90a_emits_int8_and_fp8_wgmma(void **state) {
    static const char *extra[] = {"", "causal=1 lse=1", "dtype=f16 out_dtype=f16 lse=1 smooth_k=0",
                                  "block_m=64 warps=4 block_n=128 stages=3 causal=1",
                                  "block_m=128 warps=8 block_n=64 stages=3 causal=1 lse=1",
                                  "block_m=64 warps=8 block_n=32 stages=2",
                                  "block_m=128 warps=12 block_n=64 stages=3"};
    for (int i = 0; i < N_DIMS; i++)
        for (size_t j = 0; j < sizeof extra / sizeof *extra; j++) {
            char params[256];
            wg_params(params, sizeof params, DIMS[i], extra[j]);
            if (DIMS[i] > 128 && strstr(extra[j], "block_n=128")) continue;   /* rejected: registers */
            char *canon = NULL;
            if (mx_gen_call(g, "validate", params, NULL, &canon) != MXATTN_OK)
                fail_msg("%s: %s", params, mxattn_last_error());
            free(canon);
            mx_compile_result r;
            if (!compile(params, &r)) skip();
            expect_wgmma_shapes(params, r.ptx, DIMS[i]);
            assert_non_null(strstr(r.ptx, "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"));
            assert_non_null(strstr(r.ptx, "mbarrier.try_wait.parity"));
            assert_non_null(strstr(r.ptx, "wgmma.fence.sync.aligned"));
            assert_non_null(strstr(r.ptx, "wgmma.wait_group.sync.aligned"));
            assert_non_null(strstr(r.ptx, "cvt.rn.satfinite.e4m3x2.f32"));
            assert_non_null(strstr(r.ptx, "ex2.approx.ftz.f32"));
            /* Scores go to fp32 inside their FFMA (exact_s32_to_f32's bits), not
             * by I2F; only each row's maximum takes a cvt: two rows a thread, one
             * K scale group a thread and a tile (per-thread groups), in each copy
             * of the unmasked softmax. */
            int i2f = count_in_kernel(r.ptx, "cvt.rn.f32.s32"), groups = 2;
            if (i2f == 0 || i2f % groups != 0)
                fail_msg("%s: %d cvt.rn.f32.s32 in the kernel, want a multiple of %d (the group maxima)", params, i2f, groups);
            /* The attention kernel uses no mma.sync: pv_fp8's tile is compiled out. */
            assert_null(strstr(r.ptx, "mma.sync.aligned.m16n8k32"));
            char label[96];
            snprintf(label, sizeof label, "D=%-3d %s", DIMS[i], extra[j]);
            expect_lean_wgmma_kernel(params, label, &r);
            if (last_int(params, "warps=") == 12)
                assert_non_null(strstr(r.ptx, "setmaxnreg.inc.sync.aligned.u32 240"));
            mx_compile_result_free(&r);
        }
}

/* The candidates start with the H200-checked default, which with no sizes is
 * the long-row choice (above 64 channels the ring, overlap=3; up to 64 the
 * shared ring, overlap=0); none is the ping-pong (overlap=1), f16's only. */
static void test_candidates_start_with_the_default(void **state) {
    static const int dims[] = {128, 64, 96, 256};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) {
        char params[64], first[48];
        snprintf(params, sizeof params, "family=int8-fp8 head_dim=%d arch=sm_90a", dims[i]);
        char *cands = gen_call(g, "candidates", params, NULL);
        assert_non_null(strstr(cands, "overlap=0"));
        assert_null(strstr(cands, "overlap=1"));
        snprintf(first, sizeof first, "variant=wgmma overlap=%d", dims[i] > 64 && dims[i] <= 128 ? 3 : 0);
        if (strncmp(cands, first, strlen(first)) != 0)
            fail_msg("D=%d: candidates start '%.80s', want '%s'", dims[i], cands, first);
        free(cands);
    }
}

/* Barriers in the attention kernel's PTX (the module's last entry; the stats
 * kernel before it has its own __syncthreads): bar.sync / bar.arrive of 256
 * threads (named), and bar.sync 0 (__syncthreads). */
static const char *last_entry(const char *ptx) {
    const char *entry = NULL;
    for (const char *p = strstr(ptx, ".entry"); p; p = strstr(p + 1, ".entry")) entry = p;
    assert_non_null(entry);
    return entry;
}

static void count_named_barriers(const char *ptx, int *sync, int *arrive, int *sync0) {
    *sync = *arrive = *sync0 = 0;
    const char *entry = last_entry(ptx);
    for (const char *p = entry; (p = strstr(p, "bar.")) != NULL; p++) {
        const char *eol = strchr(p, ';');
        if (!eol) break;
        int len = (int)(eol - p);
        int counted = len > 5 && strncmp(eol - 5, ", 256", 5) == 0;
        if (strncmp(p, "bar.sync", 8) == 0 && !counted && strncmp(p, "bar.sync \t0", 11) == 0) (*sync0)++;
        if (strncmp(p, "bar.sync", 8) == 0 && counted) (*sync)++;
        if (strncmp(p, "bar.arrive", 10) == 0 && counted) (*arrive)++;
    }
}

/* ---- blocks_per_sm: four one-warpgroup blocks an SM up to D=64 ---- */

#define ONE_WG "variant=wgmma block_m=64 warps=4 "

/* The canonical text names a knob the family reads at its default 0 too, as
 * any other value (no knob is quiet at its default: a kernel's name and cache
 * key say all of its parameters), and leaves out the knobs the family does
 * not read (int8-fp8: f16's persistent). */
static void expect_zero_named(const char *knob) {
    char want[64];
    snprintf(want, sizeof want, " %s=0 ", knob);
    char *canon = gen_call(g, "validate", "family=int8-fp8 head_dim=64 " ONE_WG "block_n=128 stages=3", NULL);
    if (!strstr(canon, want) || strstr(canon, "persistent"))
        fail_msg("canonical text '%s': want%s, and no persistent", canon, want);
    free(canon);
}

static void test_more_blocks_validates(void **state) {
    static const char *const ok[] = {"head_dim=64 " ONE_WG "block_n=128 stages=3 blocks_per_sm=4",
                               "head_dim=64 " ONE_WG "block_n=64 stages=3 blocks_per_sm=4 causal=1",
                               "head_dim=40 " ONE_WG "block_n=32 stages=2 blocks_per_sm=4 v_terms=2"};
    gen_expect_valid(g, "family=int8-fp8", ok, sizeof ok / sizeof *ok, "blocks_per_sm=");
    expect_zero_named("blocks_per_sm");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=80 " ONE_WG "block_n=64 stages=3 blocks_per_sm=4", "head_dim<=64");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=64 variant=wgmma block_m=128 warps=8 block_n=64 stages=3 blocks_per_sm=4",
                       "one warpgroup");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=64 variant=mma block_m=64 warps=4 block_n=64 stages=2 blocks_per_sm=4",
                       "variant=wgmma");
    gen_expect_invalid(g, "family=f16 head_dim=64 " ONE_WG "block_n=64 stages=2 blocks_per_sm=4", "blocks_per_sm");
    /* The default up to D=64 (four blocks measured 5% faster), not above, and
     * not for a table that names its own tile or schedule; without a mask
     * and sizes, the shared ring's four consumers instead
     * (test_shared_ring_releases_slots_by_count_with_no_barrier). */
    static const struct { const char *params; int four; } defaults[] = {
        {"family=int8-fp8 head_dim=64 causal=1", 1}, {"family=int8-fp8 head_dim=40 causal=1", 1},
        {"family=int8-fp8 head_dim=64", 0},
        {"family=int8-fp8 head_dim=128", 0}, {"family=int8-fp8 head_dim=64 block_n=64", 0},
        {"family=int8-fp8 head_dim=64 variant=wgmma block_m=192 warps=12", 0}};
    for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++) {
        char *knobs = gen_call(g, "knobs", defaults[i].params, NULL);
        if ((strstr(knobs, "blocks_per_sm=4") != NULL) != defaults[i].four)
            fail_msg("%s: default knobs '%s'", defaults[i].params, knobs);
        free(knobs);
    }
}

/* Lean (no spills, no serialized wgmma) within 65536 / (128 x blocks)
 * registers wherever the check accepts the knob. */
static void test_more_blocks_compile_lean(void **state) {
    static const struct { int d, blocks; const char *extra; } cases[] = {
        {64, 4, "block_n=128 stages=3"}, {64, 4, "block_n=128 stages=2 causal=1 lse=1"},
        {56, 4, "block_n=128 stages=3"}, {40, 4, "block_n=128 stages=3 dtype=f16 out_dtype=f16"},
        {64, 4, "block_n=64 stages=3"}, {64, 4, "block_n=64 stages=3 v_terms=2 lse=1"},
        {48, 4, "block_n=64 stages=2 causal=1"}, {32, 4, "block_n=32 stages=3"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char params[256];
        snprintf(params, sizeof params, "family=int8-fp8 head_dim=%d " ONE_WG "%s blocks_per_sm=%d", cases[i].d,
                 cases[i].extra, cases[i].blocks);
        mx_compile_result r;
        if (!compile(params, &r)) skip();
        expect_wgmma_shapes(params, r.ptx, cases[i].d);
        char label[96];
        snprintf(label, sizeof label, "D=%-3d %s x%d", cases[i].d, cases[i].extra, cases[i].blocks);
        expect_lean_wgmma_kernel(params, label, &r);
        if (r.usage.registers > 65536 / (128 * cases[i].blocks))
            fail_msg("%s: %d registers do not fit %d blocks an SM", params, r.usage.registers, cases[i].blocks);
        mx_compile_result_free(&r);
    }
}

/* rowsum_mma: legal on the overlap=0 wgmma kernels of int8-fp8; its kernels
 * add one m64n8k32 e4m3 wgmma per k32 step of P V and drop the softmax's
 * FADD a score (both its paths: masked and not), lean, within the default's
 * registers; the canonical text names its 0 as every knob the family reads. */
/* A knob's twins: int8-fp8 at head dim d with `knobs` (into `plain`, compiled
 * into a) and with `knob` added (into `with`, b).  Returns 0 where NVRTC is
 * absent (the caller skips). */
static int compile_twins(int d, const char *knobs, const char *knob, char (*plain)[256], char (*with)[288],
                         mx_compile_result *a, mx_compile_result *b) {
    snprintf(*plain, sizeof *plain, "family=int8-fp8 head_dim=%d %s", d, knobs);
    snprintf(*with, sizeof *with, "%s %s", *plain, knob);
    if (!compile(*plain, a)) return 0;
    assert_true(compile(*with, b));
    return 1;
}


static void test_rowsum_mma_trades_adds_for_n8_wgmmas_keeping_occupancy(void **state) {
    gen_expect_invalid(g, "family=int8-fp8 head_dim=128 variant=mma block_m=128 warps=8 block_n=64 stages=2 rowsum_mma=1",
                       "variant=wgmma");
    gen_expect_invalid(g, "family=int8-f16 head_dim=128 rowsum_mma=1", "rowsum_mma");
    expect_zero_named("rowsum_mma");
    static const struct { int d; const char *knobs; } cases[] = {
        {128, ONE_WG "block_n=128 stages=2"}, {64, ONE_WG "block_n=128 stages=3 blocks_per_sm=4 causal=1 lse=1"},
        {96, ONE_WG "block_n=64 stages=3 v_terms=2"}, {40, ONE_WG "block_n=32 stages=3 dtype=f16 out_dtype=f16"},
        {64, "variant=wgmma block_m=192 warps=16 block_n=128 stages=2"}, {256, "variant=wgmma block_m=64 warps=8 block_n=64 stages=3"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char plain[256], summed[288];
        mx_compile_result a, b;
        if (!compile_twins(cases[i].d, cases[i].knobs, "rowsum_mma=1", &plain, &summed, &a, &b)) skip();
        int block_n = last_int(plain, "block_n=");
        int n8 = count_in_kernel(b.ptx, "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3");
        if (n8 != block_n / 32 || count_in_kernel(a.ptx, "m64n8k32") != 0)
            fail_msg("%s: %d n8 wgmma, want %d", summed, n8, block_n / 32);
        int adds_a = count_in_kernel(a.ptx, "add.f32"), adds_b = count_in_kernel(b.ptx, "add.f32");
        print_message("D=%-3d %s: add.f32 %d -> %d, registers %d -> %d\n", cases[i].d, cases[i].knobs, adds_a, adds_b,
                      a.usage.registers, b.usage.registers);
        if (adds_a - adds_b < block_n)     /* BN/2 a path per row half... 2 x BN/2 over both paths */
            fail_msg("%s: add.f32 %d -> %d, want %d fewer", summed, adds_a, adds_b, block_n);
        char label[96];
        snprintf(label, sizeof label, "rowsum D=%d", cases[i].d);
        expect_lean_wgmma_kernel(summed, label, &b);
        /* It may take registers up to the launch bounds' cap (the blocks an SM
         * the kernel is compiled for: blocks_per_sm, 3 one warpgroup, else 1),
         * not a block an SM. */
        int threads = 32 * last_int(plain, "warps="), target = last_int(plain, "blocks_per_sm=");
        if (!target) target = threads == 128 ? 3 : 1;
        int blocks_a = 65536 / (a.usage.registers * threads), blocks_b = 65536 / (b.usage.registers * threads);
        blocks_a = blocks_a < target ? blocks_a : target;
        blocks_b = blocks_b < target ? blocks_b : target;
        if (blocks_b < blocks_a)
            fail_msg("%s: %d registers against %d without: %d blocks an SM, not %d", summed, b.usage.registers,
                     a.usage.registers, blocks_b, blocks_a);
        mx_compile_result_free(&a);
        mx_compile_result_free(&b);
    }
}

/* overlap=3, the three-consumer ring: legal only on int8-fp8's wgmma kernel
 * with block_m=192, warps=12, head_dim <= 128; compiles lean (no spills, no
 * serialized MMAs) within the 168 registers that 384 threads allow, with one
 * block barrier (the set-up's), three bar.arrive sites (the kick-off, the
 * pass after a turn's S, the last turn's) and the empty mbarriers' arrives. */
#define RING "variant=wgmma overlap=3 block_m=192 warps=12 "
static void test_ring_overlap3_compiles_lean_with_named_barrier_turns(void **state) {
    gen_expect_invalid(g, "family=f16 head_dim=128 " RING "block_n=128 stages=3", "overlap=3");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=128 variant=wgmma overlap=3 block_m=128 warps=8 block_n=128 stages=3",
                       "block_m=192");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=256 " RING "block_n=64 stages=3", "head_dim<=128");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=128 variant=mma overlap=3 block_m=128 warps=8 block_n=64 stages=2",
                       "overlap=3");
    static const struct { int d; const char *knobs; } cases[] = {
        {128, RING "block_n=128 stages=3 rowsum_mma=1"}, {128, RING "block_n=128 stages=2 causal=1 lse=1"},
        {64, RING "block_n=128 stages=3 rowsum_mma=1"}, {96, RING "block_n=64 stages=3 v_terms=2"},
        {40, RING "block_n=128 stages=3 dtype=f16 out_dtype=f16"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char params[256];
        snprintf(params, sizeof params, "family=int8-fp8 head_dim=%d %s", cases[i].d, cases[i].knobs);
        mx_compile_result r;
        if (!compile(params, &r)) skip();
        char label[96];
        snprintf(label, sizeof label, "ring D=%d", cases[i].d);
        expect_lean_wgmma_kernel(params, label, &r);
        assert_true(r.usage.registers <= 168);
        int sync, arrive, sync0;
        count_named_barriers(r.ptx, &sync, &arrive, &sync0);
        if (sync0 != 1 || arrive != 3 || sync < 1)
            fail_msg("%s: %d block barriers, %d bar.arrive, %d bar.sync sites; want 1, 3, >= 1", params, sync0, arrive, sync);
        assert_true(count_in_kernel(r.ptx, "mbarrier.arrive") >= 1);
        mx_compile_result_free(&r);
    }
}

/* block_m=192: three consumer warpgroups on one K/V stream, as in the f16
 * family, at D <= 64 only (160 registers a consumer beside a producer, 168
 * without); both kernels compile lean for sm_90a, the producer's giving
 * 24 + 3 x 160. */
static void test_three_consumers_legal_to_d64_and_compile_lean(void **state) {
    gen_expect_invalid(g, "family=int8-fp8 head_dim=96 variant=wgmma block_m=192 warps=16 block_n=128 stages=2",
                       "head_dim <= 64");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=64 variant=wgmma block_m=192 warps=8 block_n=128 stages=2", "warps");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=64 variant=wgmma overlap=1 block_m=192 warps=16 block_n=128 stages=2",
                       "overlap");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=80 variant=wgmma block_m=256 warps=16 block_n=128 stages=2",
                       "block_m");
    static const char *cases[] = {"head_dim=64 block_m=192 warps=16 block_n=128 stages=2",
                                  "head_dim=64 block_m=192 warps=16 block_n=128 stages=3 causal=1 lse=1",
                                  "head_dim=40 block_m=192 warps=12 block_n=64 stages=3 dtype=f16 out_dtype=f16",
                                  "head_dim=64 block_m=192 warps=12 block_n=128 stages=2 v_terms=2"};
    if (!expect_three_consumer_kernels(compile, "family=int8-fp8 variant=wgmma", cases, sizeof cases / sizeof *cases))
        skip();
}

/* The shared ring (KERNEL_SHARED): three consumers without a producer up to
 * D=128 (four up to D=64), lean, releasing each slot by an acq_rel count with no block barrier
 * after the first release (the ring's point: a block barrier a tile puts the
 * warpgroups back in step); a producer beside them stays D <= 64, and the
 * one-warpgroup kernel keeps its barrier. */
static int last_kernel_has_barrier_after(const char *ptx, const char *mark) {
    const char *k = last_entry(ptx), *m = strstr(k, mark);
    return m && strstr(m, "bar.sync") != NULL;
}
static void test_shared_ring_releases_slots_by_count_with_no_barrier(void **state) {
    gen_expect_invalid(g, "family=int8-fp8 head_dim=136 variant=wgmma block_m=192 warps=12 block_n=64 stages=2",
                       "head_dim <= 128");
    gen_expect_invalid(g, "family=f16 head_dim=128 variant=wgmma block_m=192 warps=12 block_n=64 stages=2",
                       "head_dim <= 64");
    static const char *cases[] = {"head_dim=128 block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1",
                                  "head_dim=128 block_m=192 warps=12 block_n=128 stages=2 causal=1 lse=1",
                                  "head_dim=96 block_m=192 warps=12 block_n=64 stages=3 dtype=f16 out_dtype=f16",
                                  "head_dim=72 block_m=192 warps=12 block_n=128 stages=3",
                                  "head_dim=64 block_m=256 warps=16 block_n=128 stages=3 rowsum_mma=1"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char params[256];
        snprintf(params, sizeof params, "family=int8-fp8 variant=wgmma %s", cases[i]);
        mx_compile_result r;
        if (!compile(params, &r)) skip();
        expect_lean_wgmma_kernel(params, cases[i], &r);
        const char *release = "atom.acq_rel.cta.shared::cta.add.u32";
        if (!strstr(last_entry(r.ptx), release)) fail_msg("%s: no acq_rel slot release", params);
        if (last_kernel_has_barrier_after(r.ptx, release)) fail_msg("%s: a block barrier after the first release", params);
        mx_compile_result_free(&r);
    }
    mx_compile_result one;
    if (!compile("family=int8-fp8 head_dim=128 variant=wgmma block_m=64 warps=4 block_n=128 stages=2", &one)) skip();
    assert_null(strstr(last_entry(one.ptx), "atom.acq_rel"));
    mx_compile_result_free(&one);
}

/* Occurrences of `what` in the attention kernel's PTX (the module's last entry). */
static int count_in_kernel(const char *ptx, const char *what) {
    int n = 0;
    for (const char *p = strstr(last_entry(ptx), what); p; p = strstr(p + 1, what)) n++;
    return n;
}

/* v_terms=2 (V as two E4M3 terms): legal only for int8-fp8's wgmma kernels
 * up to D=128; the P V k-loop runs twice (twice the e4m3 wgmmas in the PTX)
 * over a V^T box of twice the rows, one warpgroup or behind a producer, without
 * spills. */
static void test_v_terms_2_doubles_pv_wgmmas_and_v_box_up_to_d128(void **state) {
    gen_expect_invalid(g, "family=int8-fp8 head_dim=128 variant=mma v_terms=2 block_m=128 warps=8 block_n=64 stages=2",
                       "v_terms");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=192 variant=wgmma v_terms=2 block_m=64 warps=8 block_n=64 stages=3",
                       "v_terms");
    gen_expect_invalid(g, "family=f16 head_dim=128 v_terms=2", "v_terms");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=128 v_terms=3", "v_terms");
    static const char *schedules[] = {"variant=wgmma block_m=64 warps=4 block_n=128 stages=2",
                                      "variant=wgmma block_m=128 warps=12 block_n=64 stages=2 causal=1 lse=1"};
    for (int s = 0; s < 2; s++) {
        int wgmmas[2];
        for (int terms = 1; terms <= 2; terms++) {
            char params[256];
            snprintf(params, sizeof params, "family=int8-fp8 head_dim=128 v_terms=%d %s", terms, schedules[s]);
            mx_compile_result r;
            if (!compile(params, &r)) skip();
            wgmmas[terms - 1] = count_in_kernel(r.ptx, "e4m3.e4m3");
            /* Two terms keep V^T in one slot in the one-warpgroup kernel (three blocks per SM). */
            char *src = gen_call(g, "render", params, NULL);
            assert_non_null(strstr(src, terms == 2 && s == 0 ? "constexpr int V_SLOTS = 1;" : "constexpr int V_SLOTS = 2;"));
            free(src);
            assert_int_equal(r.usage.spill_store_bytes, 0);
            mx_compile_result_free(&r);
            char *lp = gen_call(g, "launch", params, "batch=1 heads_q=1 heads_kv=1 seq_q=128 seq_k=256");
            char want[64];   /* V^T's map: 128 * terms channel rows, one box */
            int bn = s == 0 ? 128 : 64;
            snprintf(want, sizeof want, "tmapws 2 6 1 256 %d 1 1 %d %d %d", 128 * terms, bn, 128 * terms, bn);
            assert_non_null(strstr(lp, want));
            free(lp);
        }
        assert_true(wgmmas[0] > 0);
        assert_int_equal(wgmmas[1], 2 * wgmmas[0]);
    }
}

/* The schedules measured slower on every shape and chosen by no default or
 * tuned winner are gone (bench/NOTES.md has their figures): naming one is an
 * error that names the parameter and its legal values, not another kernel. */
static void test_deleted_schedules_are_refused(void **state) {
    gen_expect_invalid(g, "family=int8-fp8 head_dim=128 variant=wgmma overlap=2 block_m=64 warps=4 block_n=64 stages=3",
                       "overlap=2: must be one of 0|1|3");
    /* overlap=1, the ping-pong, is f16's alone. */
    gen_expect_invalid(g, "family=int8-fp8 head_dim=128 variant=wgmma overlap=1 block_m=128 warps=12 block_n=128 stages=2",
                       "needs overlap=0|3");
    /* blocks_per_sm=5 (102 registers a thread) is no value of the knob any more. */
    gen_expect_invalid(g, "family=int8-fp8 head_dim=64 variant=wgmma block_m=64 warps=4 block_n=64 stages=3 blocks_per_sm=5",
                       "blocks_per_sm=5: must be one of 0|4");
    /* exp_poly (exponentials by polynomial) is no parameter any more. */
    gen_expect_invalid(g, "family=int8-fp8 head_dim=128 exp_poly=1", "'exp_poly': no such parameter");
}

/* Each schedule is one CUDA file after a header of the constants it reads:
 * the header defines KERNEL_NAME to the plan's symbol before the kernel,
 * which is declared by it (under its own compile guard); the source holds
 * that schedule's kernel and no other's, and no template hole. */
static void test_each_schedule_is_one_cuda_file(void **state) {
    static const struct { const char *knobs, *mine, *constant; } cases[] = {
        {"block_m=64 warps=4 block_n=128 stages=2", "} else if (warp == 0 && elect_one()) {", "PRODUCER = false;"},
        {"block_m=128 warps=12 block_n=64 stages=2", "if constexpr (PRODUCER) {", "PRODUCER = true;"},
        {"block_m=192 warps=12 block_n=128 stages=3", "release_slot(released + 4 * slot) == last_count", "SM_RELEASED"},
        {"overlap=3 block_m=192 warps=12 block_n=128 stages=3", "tile_pv(o, row_sum, pa, alphas,", "RING_BAR = 1;"},
    };
    static const char *kernels[] = {"if constexpr (PRODUCER) {", "u32 last_count = 4 * live - 1;", "ring_wait(wg);"};
    static const int kernel_of[] = {0, 0, 1, 2};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char params[256], line[192];
        snprintf(params, sizeof params, "family=int8-fp8 head_dim=128 variant=wgmma %s", cases[i].knobs);
        char *src = gen_call(g, "render", params, NULL);
        gen_plan_kernel k[4];
        char *lp = gen_launch(g, params, "batch=1 heads_q=1 heads_kv=1 seq_q=256 seq_k=256", k, 4, 4);
        snprintf(line, sizeof line, "\n#define KERNEL_NAME %.150s\n", k[3].name);
        const char *header = strstr(src, line);
        const char *kernel = strstr(src, " KERNEL_NAME(const __grid_constant__ mx_kernel_args a) {");
        if (!header || !kernel || header > kernel) fail_msg("%s: no KERNEL_NAME header before the kernel", params);
        snprintf(line, sizeof line, "|| defined(MX_COMPILE_%.150s)\n", k[3].name);
        assert_non_null(strstr(src, line));
        if (!strstr(kernel, cases[i].mine)) fail_msg("%s: the kernel lacks '%s'", params, cases[i].mine);
        if (!strstr(src, cases[i].constant)) fail_msg("%s: the header lacks '%s'", params, cases[i].constant);
        for (int j = 0; j < 3; j++)
            if ((strstr(kernel, kernels[j]) != NULL) != (j == kernel_of[i]))
                fail_msg("%s: '%s' %s", params, kernels[j], j == kernel_of[i] ? "missing" : "from another schedule");
        assert_null(strstr(src, "${"));
        free(src); free(lp);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renders_deterministically),
        cmocka_unit_test(test_each_schedule_is_one_cuda_file),
        cmocka_unit_test(test_quant_kernels_unchanged),
        cmocka_unit_test(test_launch_plan_and_tensor_maps),
        cmocka_unit_test(test_invalid_tables_name_the_parameter),
        cmocka_unit_test(test_default_is_wgmma_on_hopper),
        cmocka_unit_test(test_nvrtc_sm90a_emits_int8_and_fp8_wgmma),
        cmocka_unit_test(test_candidates_start_with_the_default),
        cmocka_unit_test(test_more_blocks_validates),
        cmocka_unit_test(test_more_blocks_compile_lean),
        cmocka_unit_test(test_rowsum_mma_trades_adds_for_n8_wgmmas_keeping_occupancy),
        cmocka_unit_test(test_v_terms_2_doubles_pv_wgmmas_and_v_box_up_to_d128),
        cmocka_unit_test(test_deleted_schedules_are_refused),
        cmocka_unit_test(test_three_consumers_legal_to_d64_and_compile_lean),
        cmocka_unit_test(test_shared_ring_releases_slots_by_count_with_no_barrier),
        cmocka_unit_test(test_candidates_put_rivals_next),
        cmocka_unit_test(test_ring_overlap3_compiles_lean_with_named_barrier_turns),
    };
    return gen_run_tests(&g, tests, sizeof tests / sizeof *tests);
}
