/* Templates of the INT8 families (int8-f16, int8-fp8): they render over a grid
 * of tables, deterministically; illegal tables say why; the launch plan has
 * three kernels and a workspace; NVRTC compiles them (no GPU) into the INT8
 * and FP8 tensor-core instructions we meant, without spills at the defaults. */
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
static const char *FAMILIES[] = {"int8-f16", "int8-fp8"};

static void test_grid_renders_deterministically(void **state) {
    static const int dims[] = {64, 80, 96, 128, 256};
    static const char *extra[] = {"", "causal=1 lse=1", "dtype=f16 out_dtype=f16", "smooth_k=0 lse=1",
                                  "block_m=64 warps=4 block_n=32 stages=1", "block_m=64 warps=2 block_n=64 stages=3"};
    int rendered = 0;
    for (int f = 0; f < 2; f++)
        for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
            for (size_t j = 0; j < sizeof extra / sizeof *extra; j++) {
                char params[256], *canon = NULL;
                snprintf(params, sizeof params, "family=%s head_dim=%d %s", FAMILIES[f], dims[i], extra[j]);
                if (mx_gen_call(g, "validate", params, NULL, &canon) != MXATTN_OK) {
                    assert_non_null(strstr(mxattn_last_error(), "invalid configuration"));
                    continue;
                }
                free(canon);
                static const char *const want[] = {"_stats(const mx_kernel_args a)", "_quant_q(const mx_kernel_args a)",
                                                   "_quant_kv(const mx_kernel_args a)"};
                char *a = gen_render_stable(g, params, FAMILIES[f]);
                gen_expect_contains(a, params, want, sizeof want / sizeof *want);
                rendered++;
                free(a);
            }
    assert_true(rendered >= 50);
}

/* The FP8 P V MMA reduces 32 keys; the decode schedule's fp16 one, 16. */
static void expect_no_16_key_tile(const char *canon) {
    if (strstr(canon, "variant=decode")) return;
    assert_int_not_equal(mx_params_get_int(canon, "block_n", -1), 16);
}

static void test_illegal_tables_say_why(void **state) {
    gen_expect_invalid(g, "family=int8-fp8 head_dim=64 block_m=64 warps=4 block_n=16", "block_n a multiple of 32");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=64 arch=sm_80", "sm_89");
    gen_expect_invalid(g, "family=int8-fp8 head_dim=64 arch=sm_86", "sm_89");
    char *src = gen_call(g, "render", "family=int8-f16 head_dim=64 arch=sm_80 block_m=64 warps=4 block_n=16", NULL);
    free(src);
    /* Every candidate the tuner would time is legal, and none of int8-fp8's
     * has block_n=16 but decode's. */
    assert_true(gen_expect_candidates_valid(g, "family=int8-fp8 head_dim=128", expect_no_16_key_tile) > 5);
}

static void test_launch_plan_sizes_quant_grids_workspace_and_pdl_chain(void **state) {
    gen_plan_kernel k[5];
    char *lp = gen_launch(g, "family=int8-fp8 head_dim=80 block_m=64 warps=4 block_n=32 stages=2",
                    "batch=2 heads_q=6 heads_kv=2 seq_q=100 seq_k=17", k, 5, 4);
    assert_non_null(strstr(k[0].name, "_stats"));
    assert_non_null(strstr(k[1].name, "_quant_q"));
    assert_non_null(strstr(k[2].name, "_quant_kv"));
    expect_plan_kernel(&k[0], 3, 2, 2, 256);   /* D32 = 96: three 32-channel blocks, KV heads, batch */
    expect_plan_kernel(&k[1], 1, 6, 2, 256);   /* nqp = 128: 8 blocks of 16 rows, 8 warps a block; Q heads */
    /* nkp = 32: one 128-key window (per-thread groups: a block spans K's window); KV heads */
    expect_plan_kernel(&k[2], 1, 2, 2, 256);
    expect_plan_kernel(&k[3], 2, 6, 2, 128);   /* 128 / 64 row blocks */
    /* Workspace: q8 2*6*128*96, k8 2*2*32*96, qscale, kscale, kmean, vscale, v8t 2*2*80*32, corr. */
    unsigned long long q8 = 2ull * 6 * 128 * 96, k8 = 2ull * 2 * 32 * 96;
    assert_int_equal(gen_plan_value(lp, "wsoff 1 "), q8);
    assert_int_equal(gen_plan_value(lp, "wsoff 2 "), q8 + k8);
    unsigned long long v8t_at = gen_plan_value(lp, "wsoff 6 "), corr_at = gen_plan_value(lp, "wsoff 7 ");
    assert_int_equal(corr_at - v8t_at, 2ull * 2 * 80 * 32);
    assert_true(gen_plan_value(lp, "workspace ") >= corr_at + 2ull * 6 * 128 * 4);
    /* Every kernel after the stats kernel is a programmatic dependent of
     * the kernel before it. */
    assert_non_null(strstr(lp, "\npdl 1"));
    assert_non_null(strstr(lp, "\npdl 2"));
    assert_non_null(strstr(lp, "\npdl 3"));
    assert_null(strstr(lp, "\npdl 0"));
    free(lp);
    /* int8-f16 keeps one scale a 16-row block: four warps a quant block. */
    lp = gen_call(g, "launch", "family=int8-f16 head_dim=80 block_m=64 warps=4 block_n=32 stages=2",
                  "batch=2 heads_q=6 heads_kv=2 seq_q=100 seq_k=17");
    assert_int_equal(gen_plan_kernels(lp, k, 5), 4);
    assert_non_null(strstr(k[1].name, "_quant_q"));
    expect_plan_kernel(&k[1], 2, 6, 2, 128);   /* nqp = 128: 8 blocks of 16 rows, 4 warps a block */
    assert_int_equal(k[2].grid[0], 1);          /* nkp = 32: two 16-key blocks, 4 warps a block */
    free(lp);
}

/* Compiles a table; returns its PTX (NULL: no NVRTC) and the attention kernel's usage. */
static char *compile(const char *params, const char *arch, mx_ptxas_usage *usage) {
    char *src = gen_call(g, "render", params, NULL);
    char *lp = gen_call(g, "launch", params, "batch=1 heads_q=1 heads_kv=1 seq_q=128 seq_k=128 head_dim=64");
    char name[128];
    gen_plan_last_kernel(lp, name, sizeof name);
    free(lp);
    mx_compile_options opt = {.arch = arch, .want_ptx = 1};
    mx_compile_result r;
    mxattn_status st = mx_nvrtc_compile(src, name, &opt, &r);
    free(src);
    if (st == MXATTN_ERROR_NO_COMPILER) return NULL;
    if (st != MXATTN_OK) fail_msg("%s for %s: %s", params, arch, mxattn_last_error());
    if (usage) *usage = r.usage;
    char *ptx = strdup(r.ptx);
    mx_compile_result_free(&r);
    return ptx;
}

static void test_nvrtc_ptx_has_int8_and_fp8_mma(void **state) {
    static const struct { const char *params, *arch; } cases[] = {
        {"family=int8-f16 head_dim=128", "sm_90a"},
        {"family=int8-f16 head_dim=80 dtype=f16 out_dtype=f16 causal=1 lse=1", "sm_90a"},
        {"family=int8-f16 head_dim=64 arch=sm_80", "sm_80"},
        {"family=int8-f16 head_dim=256 lse=1 smooth_k=0 arch=sm_80", "sm_80"},
        {"family=int8-fp8 head_dim=128 variant=mma", "sm_90a"},
        {"family=int8-fp8 head_dim=96 causal=1 lse=1 dtype=f16 out_dtype=f16 variant=mma", "sm_90a"},
        {"family=int8-fp8 head_dim=256 lse=1 variant=mma", "sm_90a"},
        {"family=int8-fp8 head_dim=64 arch=sm_89", "sm_89"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *ptx = compile(cases[i].params, cases[i].arch, NULL);
        if (!ptx) skip();
        if (!strstr(ptx, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"))
            fail_msg("%s: PTX lacks the INT8 MMA", cases[i].params);
        int fp8 = strstr(cases[i].params, "int8-fp8") != NULL;
        if (fp8 != (strstr(ptx, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32") != NULL))
            fail_msg("%s: FP8 MMA %s", cases[i].params, fp8 ? "missing" : "unexpected");
        if (!fp8) assert_non_null(strstr(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
        if (fp8) assert_non_null(strstr(ptx, "cvt.rn.satfinite.e4m3x2.f32"));
        assert_null(strstr(ptx, ".local"));           /* no local arrays */
        /* Scores convert with integer and fp32 adds (exact_s32_to_f32), never
         * with the quarter-rate I2F: cvt.rn.f32.s32 is the one to avoid. */
        assert_null(strstr(ptx, "cvt.rn.f32.s32"));
        /* Programmatic dependent launch (the plan's "pdl" lines) from sm_90 on:
         * the stats and quant kernels let the next one start, the quant and
         * attention kernels wait for the one before; none of it below sm_90. */
        int sm90 = strncmp(cases[i].arch, "sm_9", 4) == 0;
        if (sm90 != (strstr(ptx, "griddepcontrol.wait") != NULL) ||
            sm90 != (strstr(ptx, "griddepcontrol.launch_dependents") != NULL))
            fail_msg("%s for %s: griddepcontrol %s", cases[i].params, cases[i].arch, sm90 ? "missing" : "unexpected");
        free(ptx);
    }
}

/* " NAME(const ": how kernel `name` is declared in src, where a CUDA file
 * declares it by the macro the header defines to its symbol
 * ("#define KERNEL_NAME mxattn_...") or the source spells it out. */
static void kernel_decl(const char *src, const char *name, char *decl, size_t cap) {
    char def[192];
    snprintf(def, sizeof def, " %.180s\n", name);
    for (const char *p = strstr(src, "\n#define "); p; p = strstr(p + 1, "\n#define ")) {
        const char *macro = p + 9, *sp = strchr(macro, ' ');
        if (sp && strncmp(sp, def, strlen(def)) == 0) {
            snprintf(decl, cap, " %.*s(const ", (int)(sp - macro), macro);
            return;
        }
    }
    snprintf(decl, cap, " %.127s(const ", name);
}

/* A "pdl" kernel's griddepcontrol.wait covers only the kernel launched just
 * before it, so the chain is ordered only if every pdl kernel waits on every
 * path before it exits: the attention kernel's wait then implies all the
 * kernels before it.  quant_q needs the stats kernel only for the LSE's term,
 * and once waited only there; a wait at the top level of each body (two
 * spaces in, not inside a branch) is what this checks, on the plans of both
 * variants and int8-f16. */
static void test_every_pdl_kernel_waits(void **state) {
    static const char *tables[] = {
        "family=int8-fp8 head_dim=128",
        "family=int8-fp8 head_dim=96 causal=1 lse=1",
        "family=int8-fp8 head_dim=128 variant=mma block_m=128 warps=8 block_n=64 stages=2",
        "family=int8-fp8 head_dim=128 variant=wgmma block_m=64 warps=4 block_n=128 stages=2",
        "family=int8-f16 head_dim=64 lse=1",
    };
    const char *problem = "batch=2 heads_q=4 heads_kv=2 seq_q=300 seq_k=500";
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        char params[256];
        snprintf(params, sizeof params, "%s arch=sm_90a", tables[i]);
        char *src = gen_call(g, "render", params, NULL), *lp = gen_call(g, "launch", params, problem);
        gen_plan_kernel k[8];
        int n = gen_plan_kernels(lp, k, 8), pdl_kernels = 0;
        assert_true(n <= 8);
        for (int index = 0; index < n; index++) {
            char decl[160], pdl[16];
            snprintf(pdl, sizeof pdl, "\npdl %d", index);
            if (!strstr(lp, pdl)) continue;
            kernel_decl(src, k[index].name, decl, sizeof decl);
            const char *body = strstr(src, decl), *end = body ? strstr(body, "\n}\n") : NULL;
            assert_non_null(end);
            const char *wait = strstr(body, "\n  wait_for_previous_kernel();");
            /* The wgmma schedules wait inside block_start (cuda/int8_fp8_block.cuh),
             * called at their top level: then block_start's own top level must. */
            const char *start = strstr(body, "\n  const Block b = block_start(smem, a);");
            if (start && start < end && (!wait || wait > end)) {
                const char *fn = strstr(src, "MX_INLINE Block block_start("), *fn_end = fn ? strstr(fn, "\n}\n") : NULL;
                wait = fn ? strstr(fn, "\n  wait_for_previous_kernel();") : NULL;
                wait = wait && fn_end && wait < fn_end ? body : NULL;   /* block_start waits, so the kernel does */
            }
            if (!wait || wait > end)
                fail_msg("%s: kernel %s is a pdl launch but does not wait at its top level", tables[i], k[index].name);
            pdl_kernels++;
        }
        assert_true(pdl_kernels >= 2);                  /* quant_q, quant_kv and attention */
        assert_null(strstr(lp, "\npdl 0"));              /* the stats kernel follows no kernel of the call */
        free(src); free(lp);
    }
}

/* Every kernel of a plan sits under the compile guard of its own symbol, so
 * that compiling the kernels apart (MX_COMPILE_ONE) keeps each of them; a
 * kernel declared by its header's KERNEL_NAME macro once got the macro's
 * name in its guard and vanished from its program. */
static void test_every_kernel_has_its_compile_guard(void **state) {
    static const char *tables[] = {"family=int8-f16 head_dim=64", "family=int8-fp8 head_dim=128 variant=mma causal=1",
                                   "family=int8-fp8 head_dim=128"};
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        char *src = gen_call(g, "render", tables[i], NULL);
        char *lp = gen_call(g, "launch", tables[i], "batch=1 heads_q=2 heads_kv=2 seq_q=100 seq_k=100");
        gen_plan_kernel k[8];
        int n = gen_plan_kernels(lp, k, 8);
        assert_true(n >= 3 && n <= 8);
        for (int j = 0; j < n; j++) {
            char guard[192];
            snprintf(guard, sizeof guard, "|| defined(MX_COMPILE_%.150s)\n", k[j].name);
            if (!strstr(src, guard)) fail_msg("%s: kernel %s has no compile guard of its own", tables[i], k[j].name);
        }
        free(src); free(lp);
    }
}

/* The mma.sync kernels are CUDA files after a header of the constants they
 * read: the header says what the table asked for (V's product, the input
 * format, the vector width), each kernel's symbol is a KERNEL_NAME macro the
 * header defines, and no template hole is left. */
static void test_mma_source_is_header_then_cuda_files(void **state) {
    static const struct { const char *params, *want[3]; } cases[] = {
        {"family=int8-fp8 head_dim=128 variant=mma dtype=f16",
         {"FP8_V = true;", "constexpr bool IN_BF16 = false;", "constexpr int VEC = 8;"}},
        {"family=int8-f16 head_dim=36 align=4", {"FP8_V = false;", "constexpr bool IN_BF16 = true;", "constexpr int VEC = 4;"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *src = gen_call(g, "render", cases[i].params, NULL);
        char *lp = gen_call(g, "launch", cases[i].params, "batch=1 heads_q=1 heads_kv=1 seq_q=64 seq_k=64");
        gen_plan_kernel k[8];
        int n = gen_plan_kernels(lp, k, 8);
        assert_int_equal(n, 4);
        const char *args = strstr(src, "struct mx_kernel_args {");
        for (int j = 0; j < 3; j++) {
            const char *at = strstr(src, cases[i].want[j]);
            if (!at || at > args) fail_msg("%s: the header lacks '%s'", cases[i].params, cases[i].want[j]);
        }
        static const char *suffix[] = {"_stats", "_quant_q", "_quant_kv"};
        for (int j = 0; j < n; j++) {
            char def[192], decl[64];
            const char *sfx = "";
            for (int s = 0; s < 3; s++)
                if (strstr(k[j].name, suffix[s])) sfx = suffix[s];
            snprintf(def, sizeof def, "\n#define KERNEL_NAME%s %.150s\n", sfx, k[j].name);
            snprintf(decl, sizeof decl, " KERNEL_NAME%s(const mx_kernel_args a) {", sfx);
            const char *d = strstr(src, def), *kernel = strstr(src, decl);
            if (!d || !kernel || d > kernel) fail_msg("%s: kernel %s is not declared by its macro", cases[i].params, k[j].name);
        }
        assert_null(strstr(src, "${"));
        free(src); free(lp);
    }
}

/* The defaults at D=64 and D=128 fit in registers. */
static void test_defaults_do_not_spill(void **state) {
    static const char *tables[] = {"family=int8-f16 head_dim=64", "family=int8-f16 head_dim=128",
                                   "family=int8-fp8 head_dim=64", "family=int8-fp8 head_dim=128"};
    for (size_t i = 0; i < 4; i++) {
        mx_ptxas_usage u;
        char *ptx = compile(tables[i], "sm_90a", &u);
        if (!ptx) skip();
        printf("%s sm_90a: %d registers, spills %d/%d bytes, stack %d\n", tables[i], u.registers,
               u.spill_store_bytes, u.spill_load_bytes, u.stack_bytes);
        assert_true(u.found);
        assert_int_equal(u.spill_store_bytes, 0);
        assert_int_equal(u.spill_load_bytes, 0);
        free(ptx);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_renders_deterministically),
        cmocka_unit_test(test_illegal_tables_say_why),
        cmocka_unit_test(test_launch_plan_sizes_quant_grids_workspace_and_pdl_chain),
        cmocka_unit_test(test_every_pdl_kernel_waits),
        cmocka_unit_test(test_every_kernel_has_its_compile_guard),
        cmocka_unit_test(test_mma_source_is_header_then_cuda_files),
        cmocka_unit_test(test_nvrtc_ptx_has_int8_and_fp8_mma),
        cmocka_unit_test(test_defaults_do_not_spill),
    };
    return gen_run_tests(&g, tests, sizeof tests / sizeof *tests);
}
