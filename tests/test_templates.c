/* Templates: every family renders over a grid of parameter tables, renders
 * deterministically, rejects bad tables naming the parameter, and compiles
 * with NVRTC (no GPU) into the tensor-core instructions we meant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gen/gen.h"
#include "support/gen_harness.h"
#include "runtime/kernel_args.h"
#include "runtime/nvrtc.h"

static mx_gen *g;

static void test_f16_grid_renders_deterministically(void **state) {
    static const int dims[] = {8, 17, 40, 64, 80, 96, 100, 128, 160, 192, 256};
    static const char *extra[] = {"", "causal=1 lse=1", "dtype=f16 out_dtype=bf16", "block_m=64 warps=4 block_n=32 stages=1",
                                  "block_m=64 warps=2 block_n=16 stages=3"};
    int rendered = 0;
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
        for (size_t j = 0; j < sizeof extra / sizeof *extra; j++) {
            char params[256], *a = NULL, *b = NULL, *canon = NULL;
            int align = dims[i] % 8 == 0 ? 8 : dims[i] % 4 == 0 ? 4 : dims[i] % 2 == 0 ? 2 : 1;
            snprintf(params, sizeof params, "family=f16 head_dim=%d align=%d %s", dims[i], align, extra[j]);
            if (mx_gen_call(g, "validate", params, NULL, &canon) != MXATTN_OK) {
                /* Some grid points are illegal (registers at D=256); the message must say why. */
                assert_non_null(strstr(mxattn_last_error(), "invalid configuration"));
                continue;
            }
            a = gen_call(g, "render", params, NULL);
            b = gen_call(g, "render", canon, NULL);
            assert_string_equal(a, b);                     /* byte-identical for the same table */
            assert_non_null(strstr(a, "params: family=f16"));
            assert_null(strstr(a, "#include"));           /* self-contained */
            rendered++;
            free(a); free(b); free(canon);
        }
    assert_true(rendered >= 40);
}

static void test_invalid_tables_name_the_parameter(void **state) {
    static const gen_invalid_case cases[] = {
        {"family=f16 head_dim=0", "head_dim"},
        {"family=f16 head_dim=257", "head_dim"},
        {"family=f16", "head_dim"},
        {"family=f17 head_dim=64", "family"},
        {"family=f16 head_dim=64 block_m=48", "block_m"},
        {"family=f16 head_dim=64 block_m=128 warps=2", "block_m"},
        {"family=f16 head_dim=64 dtype=fp32", "dtype"},
        {"family=f16 head_dim=64 arch=sm_999", "arch"},
        {"family=f16 head_dim=66 align=8", "align"},
        {"family=f16 head_dim=64 bogus=1", "bogus"},
        {"family=f16 head_dim=256 block_m=128 warps=4 block_n=64 stages=1", "registers"},
        {"family=f16 head_dim=256 block_m=128 warps=8 block_n=128 stages=3", "shared memory"},
    };
    gen_expect_invalid_cases(g, cases, sizeof cases / sizeof *cases);
}

static void test_candidates_start_with_the_default(void **state) {
    char *cands = gen_call(g, "candidates", "family=f16 head_dim=128 causal=1", NULL);
    char *knobs = gen_call(g, "knobs", "family=f16 head_dim=128 causal=1", NULL);
    assert_true(strncmp(cands, knobs, strlen(knobs)) == 0);
    free(cands); free(knobs);
    assert_true(gen_expect_candidates_valid(g, "family=f16 head_dim=128 causal=1", NULL) > 10);
}

static void test_launch_geometry_is_row_blocks_heads_batch_and_smem(void **state) {
    gen_plan_kernel k;
    char *lp = gen_launch(g, "family=f16 head_dim=64 block_m=64 warps=4 block_n=64 stages=2",
                    "batch=3 heads_q=5 heads_kv=1 seq_q=1000 seq_k=17", &k, 1, 1);
    expect_plan_kernel(&k, 16, 5, 3, 128);   /* ceil(1000 / 64) row blocks x heads x batch */
    assert_int_equal(k.smem, (64 + 2 * 2 * 64) * (64 + 8) * 2);
    free(lp);
}

/* The mma.sync kernel is cuda/fwd_mma.cuh after a header of the constants it
 * reads: the header says what the table asked for, the kernel is declared by
 * the header's KERNEL_NAME (the plan's symbol, under its own compile guard),
 * and no template hole is left. */
static void test_mma_source_is_header_then_cuda_file(void **state) {
    static const struct { const char *params, *want[4]; } cases[] = {
        {"family=f16 head_dim=80 variant=mma q_regs=1 causal=1 block_m=64 warps=4 block_n=32 stages=3",
         {"constexpr int D = 80, D_PAD = 80, RS = 88;", "STAGES = 3;", "CAUSAL = true, WRITE_LSE = false, Q_REGS = true;",
          "constexpr int ALIGN = 8;"}},
        {"family=f16 head_dim=36 align=4 dtype=f16 out_dtype=bf16 lse=1 variant=mma",
         {"constexpr int ALIGN = 4;", "constexpr bool MMA_BF16 = false;", "constexpr bool OUT_BF16 = true;",
          "WRITE_LSE = true"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char line[192];
        char *src = gen_render_with_header(g, cases[i].params, "batch=1 heads_q=1 heads_kv=1 seq_q=64 seq_k=64", line, sizeof line);
        const char *header = strstr(src, line), *kernel = strstr(src, " KERNEL_NAME(const mx_kernel_args a) {");
        if (!header || !kernel || header > kernel) fail_msg("%s: no KERNEL_NAME header before the kernel", cases[i].params);
        for (int j = 0; j < 4; j++) {
            const char *at = strstr(src, cases[i].want[j]);
            if (!at || at > strstr(src, "struct mx_kernel_args {"))
                fail_msg("%s: the header lacks '%s'", cases[i].params, cases[i].want[j]);
        }
        free(src);
    }
}

/* Compiles a kernel and returns its PTX (NULL and a skip when NVRTC is absent). */
static char *compile_ptx(const char *params, const char *arch, const char *append) {
    char *src = gen_call(g, "render", params, NULL);
    if (append) {
        src = realloc(src, strlen(src) + strlen(append) + 1);
        strcat(src, append);
    }
    mx_compile_options opt = {.arch = arch, .want_ptx = 1};
    mx_compile_result r;
    mxattn_status st = mx_nvrtc_compile(src, "k", &opt, &r);
    free(src);
    if (st == MXATTN_ERROR_NO_COMPILER) return NULL;
    if (st != MXATTN_OK) fail_msg("%s for %s: %s", params, arch, mxattn_last_error());
    char *ptx = strdup(r.ptx);
    mx_compile_result_free(&r);
    return ptx;
}

static void test_nvrtc_sm90a_ptx_has_tensor_core_mma(void **state) {
    static const char *tables[] = {
        "family=f16 head_dim=128 dtype=bf16 variant=mma",
        "family=f16 head_dim=80 dtype=f16 out_dtype=f16 causal=1 lse=1 variant=mma",
        "family=f16 head_dim=17 align=1 block_m=64 warps=4 block_n=32 stages=1",
    };
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++) {
        char *ptx = compile_ptx(tables[i], "sm_90a", NULL);
        if (!ptx) skip();
        const char *want = strstr(tables[i], "dtype=f16") ? "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
                                                          : "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
        if (!strstr(ptx, want)) fail_msg("%s: PTX lacks %s", tables[i], want);
        assert_non_null(strstr(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
        assert_non_null(strstr(ptx, "ex2.approx.ftz.f32"));
        /* 16-byte rows (align=8) leave through shared memory in 16-byte
         * stores; narrower ones store each element pair where it is. */
        int staged = strstr(tables[i], "align=") == NULL;
        if (staged != (strstr(ptx, "st.global.v4.u32") != NULL))
            fail_msg("%s: PTX %s 16-byte output stores", tables[i], staged ? "lacks" : "has");
        free(ptx);
    }
}

/* On sm_90a an open table gets the Hopper path: warpgroup MMA fed by TMA. */
static void test_sm90a_default_is_wgmma(void **state) {
    char *ptx = compile_ptx("family=f16 head_dim=128", "sm_90a", NULL);
    if (!ptx) skip();
    assert_non_null(strstr(ptx, "wgmma.mma_async.sync.aligned"));
    assert_non_null(strstr(ptx, "cp.async.bulk.tensor"));
    free(ptx);
    /* Without 16-byte rows TMA cannot move the tiles: mma.sync it is. */
    ptx = compile_ptx("family=f16 head_dim=100 align=4", "sm_90a", NULL);
    assert_null(strstr(ptx, "wgmma"));
    assert_non_null(strstr(ptx, "mma.sync.aligned.m16n8k16"));
    free(ptx);
}

static void test_nvrtc_sm120a_compiles(void **state) {
    char *ptx = compile_ptx("family=f16 head_dim=64 arch=sm_120a", "sm_120a", NULL);
    if (!ptx) skip();
    assert_non_null(strstr(ptx, ".target sm_120a"));
    free(ptx);
}

/* Field names of a struct body, in order: identifiers followed by , ; or [. */
static void field_names(const char *body, size_t len, char *out, size_t cap) {
    size_t used = 0;
    out[0] = 0;
    for (size_t i = 0; i < len; i++) {
        if (body[i] == '/' && i + 1 < len && body[i + 1] == '/') { while (i < len && body[i] != '\n') i++; continue; }
        if (body[i] == '/' && i + 1 < len && body[i + 1] == '*') { i += 2; while (i + 1 < len && !(body[i] == '*' && body[i + 1] == '/')) i++; i++; continue; }
        if (body[i] != ',' && body[i] != ';' && body[i] != '[') continue;
        size_t e = i;
        while (e > 0 && body[e - 1] == ' ') e--;
        size_t b = e;
        while (b > 0 && (body[b - 1] == '_' || (body[b - 1] >= 'a' && body[b - 1] <= 'z') || (body[b - 1] >= '0' && body[b - 1] <= '9'))) b--;
        if (e > b && used + (e - b) + 2 < cap) { memcpy(out + used, body + b, e - b); used += e - b; out[used++] = ' '; out[used] = 0; }
        if (body[i] == '[') while (i < len && body[i] != ';') i++;
    }
}

/* The kernel's view of mx_kernel_args must match the C struct: same size
 * (checked by NVRTC) and the same fields in the same order (checked here). */
static void test_kernel_args_layout_matches(void **state) {
    char check[256];
    snprintf(check, sizeof check, "\nstatic_assert(sizeof(mx_kernel_args) == %zu, \"size\");\n", sizeof(mx_kernel_args));
    char *ptx = compile_ptx("family=f16 head_dim=64", "sm_90a", check);
    if (!ptx) skip();
    free(ptx);
    char *src = gen_call(g, "render", "family=f16 head_dim=64", NULL);
    const char *kb = strstr(src, "struct mx_kernel_args {");
    assert_non_null(kb);
    const char *ke = strstr(kb, "};");
    FILE *f = fopen(MXATTN_SOURCE_DIR "/runtime/kernel_args.h", "r");
    assert_non_null(f);
    static char header[8192];
    size_t n = fread(header, 1, sizeof header - 1, f);
    fclose(f);
    header[n] = 0;
    const char *hb = strstr(header, "typedef struct {");
    const char *he = hb ? strstr(hb, "} mx_kernel_args;") : NULL;
    assert_non_null(he);
    char kernel_fields[1024], c_fields[1024];
    field_names(kb + 23, (size_t)(ke - kb - 23), kernel_fields, sizeof kernel_fields);
    field_names(hb + 16, (size_t)(he - hb - 16), c_fields, sizeof c_fields);
    assert_string_equal(kernel_fields, c_fields);
    assert_non_null(strstr(c_fields, "q k v o lse ws q_sb"));
    free(src);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_grid_renders_deterministically),
        cmocka_unit_test(test_invalid_tables_name_the_parameter),
        cmocka_unit_test(test_candidates_start_with_the_default),
        cmocka_unit_test(test_launch_geometry_is_row_blocks_heads_batch_and_smem),
        cmocka_unit_test(test_mma_source_is_header_then_cuda_file),
        cmocka_unit_test(test_nvrtc_sm90a_ptx_has_tensor_core_mma),
        cmocka_unit_test(test_sm90a_default_is_wgmma),
        cmocka_unit_test(test_nvrtc_sm120a_compiles),
        cmocka_unit_test(test_kernel_args_layout_matches),
    };
    return gen_run_tests(&g, tests, sizeof tests / sizeof *tests);
}
