/* The f16 family's decode schedule (variant=decode, templates/cuda/
 * fwd_decode.cuh): the default picks it for a few query rows and only then,
 * with the pieces its heuristic says; the launch plan's grid, combine kernel
 * and workspace; the tables it refuses, with a message naming the knob; the
 * tuner's list for a decode problem; and NVRTC compiles it for sm_90a (and
 * sm_80) into mma.sync and cp.async with no spills.  No GPU needed. */
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

#define SHAPE "family=f16 arch=sm_90a head_dim=128 dtype=bf16 out_dtype=bf16 causal=%d lse=0 align=8 gqa=%d"
#define DEC "variant=decode block_m=16 block_n=64 warps=4 stages=3"

static void test_renders_deterministically(void **state) {
    static const char *tables[] = {"family=f16 head_dim=128 " DEC " kv_splits=16",
                                   "family=f16 head_dim=72 causal=1 lse=1 " DEC,
                                   "family=f16 head_dim=64 dtype=f16 out_dtype=f16 variant=decode block_m=64 warps=8"};
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        char *a = gen_render_stable(g, tables[i], "f16");
        assert_non_null(strstr(a, "variant=decode"));
        assert_non_null(strstr(a, "decode_attend(a);"));
        assert_non_null(strstr(a, "decode_combine(a);"));
        free(a);
    }
}

/* Up to 16 query rows the default is the decode schedule, its rows a block
 * the packed rows gqa * seq_q rounded to 16, 32 or 64, a 3-deep ring where
 * two blocks fit an SM (else 2), its pieces the fewest whose blocks fill the
 * GPU's block slots evenly (B16 Hkv8: 128 row tiles x 2 = 256 blocks in 264
 * slots; B8 Hkv8: 64 x 4; B16 Hkv32: 512 in two waves, no pieces); above 16
 * rows, not. */
static void test_default_for_a_few_rows(void **state) {
    static const struct { int causal, gqa; const char *sizes, *want; } cases[] = {
        {0, 4, "batch=8 heads_q=32 heads_kv=8 seq_q=1 seq_k=32768 head_dim=128 sms=132",
         "variant=decode q_regs=1 kv_splits=4 block_m=16 block_n=64 warps=4 stages=3"},
        {1, 4, "batch=16 heads_q=32 heads_kv=8 seq_q=4 seq_k=8192 head_dim=128 sms=132", "kv_splits=2 block_m=16 "},
        {1, 4, "batch=16 heads_q=32 heads_kv=8 seq_q=16 seq_k=8192 head_dim=128 sms=132",
         "kv_splits=2 block_m=64 block_n=64 warps=4 stages=2"},
        {0, 1, "batch=16 heads_q=32 heads_kv=32 seq_q=1 seq_k=32768 head_dim=128 sms=132",
         "variant=decode q_regs=1 kv_splits=1 block_m=16 "},
        {1, 8, "batch=4 heads_q=32 heads_kv=4 seq_q=4 seq_k=32768 head_dim=128 sms=132", "kv_splits=16 block_m=32 block_n=64 warps=4 stages=3"},
        {1, 8, "batch=1 heads_q=8 heads_kv=1 seq_q=4 seq_k=63 head_dim=128 sms=132", "variant=decode q_regs=1 kv_splits=1 block_m=32 "},
        {0, 4, "batch=8 heads_q=32 heads_kv=8 seq_q=17 seq_k=32768 head_dim=128 sms=132", "variant=wgmma"},
        {0, 4, "batch=8 heads_q=32 heads_kv=8 seq_q=1024 seq_k=1024 head_dim=128 sms=132", "variant=wgmma"},
        {0, 4, NULL, "variant=wgmma"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char shape[256];
        snprintf(shape, sizeof shape, SHAPE, cases[i].causal, cases[i].gqa);
        char *knobs = gen_call(g, "default_knobs", shape, cases[i].sizes);
        if (!strstr(knobs, cases[i].want)) fail_msg("%s: default %s, want %s", cases[i].sizes, knobs, cases[i].want);
        /* A plan builds the shape plus these knobs, completed again without
         * the sizes (mx_jit_build): the same kernel, whatever the canonical
         * text says (every knob the variant reads, at its default too). */
        char table[512];
        snprintf(table, sizeof table, "%s %s", shape, knobs);
        char *again = gen_call(g, "knobs", table, NULL);
        if (strcmp(again, knobs)) fail_msg("%s: default %s builds %s", cases[i].sizes, knobs, again);
        free(again);
        free(knobs);
    }
    /* int8-fp8 decodes the same way, quantizing as the tiles land. */
    char *q8 = gen_call(g, "default_knobs", "family=int8-fp8 arch=sm_90a head_dim=128 gqa=4",
                        "batch=8 heads_q=32 heads_kv=8 seq_q=1 seq_k=32768 head_dim=128 sms=132");
    assert_non_null(strstr(q8, "variant=decode"));
    assert_non_null(strstr(q8, "kv_splits=4 block_m=16 block_n=64 warps=4 "));
    free(q8);
    /* Above 16 packed rows (and above 16 queries) the prefill kernel keeps them. */
    static const char *const prefill[] = {"batch=8 heads_q=32 heads_kv=8 seq_q=17 seq_k=32768 head_dim=128 sms=132",
                                          "batch=16 heads_q=32 heads_kv=8 seq_q=16 seq_k=32768 head_dim=128 sms=132"};
    for (int i = 0; i < 2; i++) {
        q8 = gen_call(g, "default_knobs", "family=int8-fp8 arch=sm_90a head_dim=128 gqa=4", prefill[i]);
        assert_non_null(strstr(q8, "variant=wgmma"));
        free(q8);
    }
    /* Odd vector widths keep the mma.sync kernel. */
    char *odd = gen_call(g, "default_knobs", "family=f16 head_dim=100 align=4", "batch=1 heads_q=8 heads_kv=8 seq_q=1 seq_k=4096");
    assert_null(strstr(odd, "decode"));
    free(odd);
}

/* Grid: pieces x row tiles, KV heads, batch; the combine kernel (one warp a
 * (batch, head, query) row) as a programmatic dependent, and the pieces'
 * fp32 rows and LSEs in the workspace.  One piece: no combine, no workspace. */
static void test_launch_plan_adds_combine_and_workspace_only_when_split(void **state) {
    gen_plan_kernel k[2];
    char *lp = gen_launch(g, "family=f16 head_dim=128 causal=1 " DEC " kv_splits=16",
                        "batch=8 heads_q=32 heads_kv=8 seq_q=4 seq_k=32768", k, 2, 2);
    expect_plan_kernel(&k[0], 16, 8, 8, 128);            /* 16 packed rows: 1 row tile x 16 pieces */
    expect_plan_kernel(&k[1], 8 * 32 * 4 / 4, 1, 1, 128);
    assert_non_null(strstr(k[1].name, "_combine"));
    assert_non_null(strstr(lp, "\npdl 1"));
    assert_int_equal(gen_plan_value(lp, "workspace "), 16ull * 8 * 32 * 4 * 129 * 4);
    free(lp);
    lp = gen_call(g, "launch", "family=f16 head_dim=72 variant=decode block_m=32 warps=8 kv_splits=1",
                  "batch=3 heads_q=64 heads_kv=2 seq_q=16 seq_k=100");
    assert_int_equal(gen_plan_kernels(lp, k, 2), 1);
    expect_plan_kernel(&k[0], 16, 2, 3, 256);             /* 32 x 16 packed rows / 32 */
    assert_int_equal(gen_plan_value(lp, "workspace "), 0);
    free(lp);
}

static void test_invalid_tables_name_the_knob(void **state) {
    static const gen_invalid_case cases[] = {
        {"family=f16 head_dim=100 align=4 " DEC, "align"},
        {"family=f16 head_dim=128 variant=decode block_m=128 warps=8", "block_m"},
        {"family=f16 head_dim=128 variant=decode block_m=16 warps=12", "warps"},
        {"family=f16 head_dim=128 variant=decode block_m=16 warps=4 block_n=32", "block_n"},
        {"family=f16 head_dim=128 variant=decode block_m=16 warps=4 stages=1", "stages"},
        {"family=f16 head_dim=128 variant=decode block_m=16 warps=4 overlap=1", "overlap"},
        {"family=f16 head_dim=128 variant=wgmma kv_splits=4", "kv_splits"},
        {"family=f16 head_dim=128 variant=mma kv_splits=2", "kv_splits"},
        {"family=int8-fp8 head_dim=128 arch=sm_86 variant=decode", "sm_89"},
        {"family=int8-fp8 head_dim=128 v_terms=2 variant=decode", "v_terms"},
        {"family=int8-fp8 head_dim=128 variant=decode rowsum_mma=1", "rowsum_mma"},
        {"family=int8-fp8 head_dim=128 kv_splits=2", "kv_splits"},
        {"family=int8-f16 head_dim=128 variant=decode", "variant=decode"},
    };
    gen_expect_invalid_cases(g, cases, sizeof cases / sizeof *cases);
}

/* The tuner's list for a decode problem: the default first, then decode
 * tiles (the prior reads the sizes), other piece counts among the first 24. */
static void test_candidates_for_decode(void **state) {
    char shape[256];
    snprintf(shape, sizeof shape, SHAPE, 0, 4);
    const char *sizes = "batch=8 heads_q=32 heads_kv=8 seq_q=1 seq_k=32768 head_dim=128 sms=132";
    char *list = gen_call(g, "candidates", shape, sizes);
    char *first = gen_call(g, "default_knobs", shape, sizes);
    assert_int_equal(strncmp(list, first, strlen(first)), 0);
    int decode = 0, other_splits = 0, n = 0;
    for (char *line = strtok(list, "\n"); line && n < 24; line = strtok(NULL, "\n"), n++) {
        if (strstr(line, "variant=decode")) decode++;
        if (strstr(line, "variant=decode") && !strstr(line, "kv_splits=16")) other_splits++;
    }
    if (decode < 20 || other_splits < 4) fail_msg("first 24 candidates: %d decode, %d with other pieces", decode, other_splits);
    free(list);
    free(first);
    /* Prefill keeps the wgmma tiles first, and the decode schedule is no
     * candidate at all at 1024 rows: the packed rows (gqa * seq_q) no longer
     * fit one block of it. */
    list = gen_call(g, "candidates", shape, "batch=4 heads_q=32 heads_kv=8 seq_q=4096 seq_k=4096 head_dim=128 sms=132");
    assert_non_null(strstr(strtok(list, "\n"), "variant=wgmma"));
    free(list);
    list = gen_call(g, "candidates", shape, "batch=2 heads_q=8 heads_kv=2 seq_q=1024 seq_k=1024 head_dim=128 sms=132");
    n = 0;
    for (char *line = strtok(list, "\n"); line; line = strtok(NULL, "\n"), n++)
        if (strstr(line, "variant=decode")) fail_msg("prefill candidate %d is the decode schedule: %s", n, line);
    assert_true(n > 24);
    free(list);
    /* 16 query rows of a 4-head group pack into 64 rows: one block, still a candidate. */
    list = gen_call(g, "candidates", shape, "batch=2 heads_q=8 heads_kv=2 seq_q=16 seq_k=8192 head_dim=128 sms=132");
    assert_non_null(strstr(list, "variant=decode"));
    free(list);
    list = gen_call(g, "candidates", shape, "batch=2 heads_q=8 heads_kv=2 seq_q=17 seq_k=8192 head_dim=128 sms=132");
    assert_null(strstr(list, "variant=decode"));
    free(list);
}

/* The attention kernel and the combine kernel of one module, compiled apart. */
static int compile(const char *params, const char *arch, const char *suffix, mx_compile_result *r) {
    char *src = gen_call(g, "render", params, NULL);
    mx_compile_options opt = {.arch = arch, .want_ptx = 1};
    const char *name = strstr(src, "#define KERNEL_NAME ");
    char kernel[96] = "";
    if (name) sscanf(name + strlen("#define KERNEL_NAME "), "%63[A-Za-z0-9_]", kernel);
    strncat(kernel, suffix, sizeof kernel - strlen(kernel) - 1);
    mxattn_status st = mx_nvrtc_compile(src, kernel, &opt, r);
    free(src);
    if (st == MXATTN_ERROR_NO_COMPILER) return 0;
    if (st != MXATTN_OK) fail_msg("%s: %s", params, mxattn_last_error());
    return 1;
}

static void test_nvrtc_compiles_lean(void **state) {
    static const char *tables[] = {
        "family=f16 head_dim=128 " DEC " kv_splits=16",
        "family=f16 head_dim=128 causal=1 lse=1 variant=decode block_m=64 block_n=64 warps=8 stages=3 kv_splits=4",
        "family=f16 head_dim=72 causal=1 lse=1 variant=decode block_m=32 block_n=128 warps=8 stages=2 kv_splits=2",
        "family=f16 head_dim=64 dtype=f16 out_dtype=f16 variant=decode block_m=16 block_n=128 warps=4 stages=3",
        "family=f16 head_dim=256 variant=decode q_regs=0 block_m=16 block_n=64 warps=4 stages=2 kv_splits=4",
        "family=f16 head_dim=72 causal=1 lse=1 " DEC " kv_splits=3",
        "family=int8-fp8 head_dim=128 " DEC " kv_splits=4",
        "family=int8-fp8 head_dim=72 causal=1 lse=1 dtype=f16 out_dtype=f16 variant=decode block_m=16 block_n=128 warps=4 stages=2 kv_splits=2",
    };
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        mx_compile_result r;
        if (!compile(tables[i], "sm_90a", "", &r)) skip();
        /* int8-fp8: scores on the s8 MMA, P V on fp16 values of E4M3 codes
         * whatever the inputs are; E4M3 by cvt, INT8 by adding 1.5 * 2^23
         * (0f4B400000). */
        int quant = strstr(tables[i], "int8-fp8") != NULL;
        const char *mma = quant || strstr(tables[i], "dtype=f16") ? "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
                                                                  : "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
        if (!strstr(r.ptx, mma)) fail_msg("%s: PTX lacks %s", tables[i], mma);
        if (quant && (!strstr(r.ptx, "cvt.rn.satfinite.e4m3x2.f32") || !strstr(r.ptx, "0f4B400000")))
            fail_msg("%s: PTX lacks the E4M3 or INT8 rounding", tables[i]);
        if (quant && !strstr(r.ptx, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"))
            fail_msg("%s: PTX lacks the s8 MMA of the scores", tables[i]);
        assert_non_null(strstr(r.ptx, "cp.async.cg.shared.global.L2::128B"));
        assert_non_null(strstr(r.ptx, "griddepcontrol.launch_dependents"));
        assert_true(r.usage.found);
        printf("%-110s %3d registers, %d bytes of spills, %d of stack\n", tables[i], r.usage.registers,
               r.usage.spill_store_bytes + r.usage.spill_load_bytes, r.usage.stack_bytes);
        assert_int_equal(r.usage.spill_store_bytes + r.usage.spill_load_bytes, 0);
        assert_int_equal(r.usage.stack_bytes, 0);
        mx_compile_result_free(&r);
        if (!strstr(tables[i], "kv_splits=")) continue;
        if (!compile(tables[i], "sm_90a", "_combine", &r)) skip();
        assert_true(r.usage.found);
        assert_non_null(strstr(r.ptx, "griddepcontrol.wait"));
        assert_int_equal(r.usage.spill_store_bytes + r.usage.spill_load_bytes, 0);
        mx_compile_result_free(&r);
    }
    /* mma.sync and cp.async are sm_80's: the schedule compiles there too. */
    mx_compile_result r;
    if (!compile("family=f16 arch=sm_80 head_dim=128 " DEC " kv_splits=8", "sm_80", "", &r)) skip();
    assert_null(strstr(r.ptx, "griddepcontrol"));
    mx_compile_result_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renders_deterministically),
        cmocka_unit_test(test_default_for_a_few_rows),
        cmocka_unit_test(test_launch_plan_adds_combine_and_workspace_only_when_split),
        cmocka_unit_test(test_invalid_tables_name_the_knob),
        cmocka_unit_test(test_candidates_for_decode),
        cmocka_unit_test(test_nvrtc_compiles_lean),
    };
    return gen_run_tests(&g, tests, sizeof tests / sizeof *tests);
}
