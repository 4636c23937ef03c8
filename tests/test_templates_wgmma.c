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
#include "runtime/nvrtc.h"

static mx_gen *g;

#define KNOBS "variant=wgmma q_regs=0 block_m=128 warps=8 block_n=64 stages=2"

static const int DIMS[] = {64, 72, 80, 96, 128, 192, 256};
#define N_DIMS (int)(sizeof DIMS / sizeof *DIMS)

__attribute__((noinline)) static char *call(const char *fn, const char *a1, const char *a2) {
    char *out = NULL;
    mxattn_status st = mx_gen_call(g, fn, a1, a2, &out);
    if (st != MXATTN_OK) fail_msg("%s(%s): %s", fn, a1 ? a1 : "", mxattn_last_error());
    return out;
}

static void test_renders_deterministically(void **state) {
    static const char *extra[] = {"", "causal=1 lse=1", "dtype=f16 out_dtype=f16", "dtype=f16 out_dtype=bf16 causal=1",
                                  "block_m=64 warps=4 block_n=32 stages=3"};
    for (int i = 0; i < N_DIMS; i++)
        for (size_t j = 0; j < sizeof extra / sizeof *extra; j++) {
            char params[256];
            snprintf(params, sizeof params, "family=f16 head_dim=%d " KNOBS " %s", DIMS[i], extra[j]);
            char *canon = call("validate", params, NULL);
            char *a = call("render", params, NULL), *b = call("render", canon, NULL), *c = call("render", params, NULL);
            assert_string_equal(a, b);
            assert_string_equal(a, c);
            assert_non_null(strstr(a, "params: family=f16"));
            assert_non_null(strstr(a, "variant=wgmma"));
            assert_non_null(strstr(a, "__grid_constant__"));
            assert_null(strstr(a, "#include"));
            free(a); free(b); free(c); free(canon);
        }
}

/* The tensor maps: one 2W-byte-swizzled box of W columns per panel, W the
 * widest of 64/32/16 dividing the head dim padded to 16. */
static void test_launch_asks_for_tensor_maps(void **state) {
    static const struct { int d, w; } cases[] = {{64, 64}, {80, 16}, {96, 32}, {128, 64}, {192, 64}, {256, 64}, {40, 16}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char params[256], want[64];
        snprintf(params, sizeof params, "family=f16 head_dim=%d " KNOBS, cases[i].d);
        char *lp = call("launch", params, "batch=3 heads_q=8 heads_kv=2 seq_q=1000 seq_k=17");
        unsigned gx, gy, gz, threads, smem;
        char name[128];
        const char *k = strstr(lp, "kernel ");
        assert_non_null(k);
        assert_int_equal(sscanf(k, "kernel %127s %u %u %u %u %u", name, &gx, &gy, &gz, &threads, &smem), 6);
        assert_int_equal(gx, 8);   /* ceil(1000 / 128) */
        assert_int_equal(gy, 8);
        assert_int_equal(gz, 3);
        assert_int_equal(threads, 256);
        assert_true(smem <= 227 * 1024);
        snprintf(want, sizeof want, "tmap 0 q %d 128 %d", cases[i].w, 2 * cases[i].w);
        if (!strstr(lp, want)) fail_msg("D=%d: launch plan lacks '%s':\n%s", cases[i].d, want, lp);
        snprintf(want, sizeof want, "tmap 1 k %d 64 %d", cases[i].w, 2 * cases[i].w);
        assert_non_null(strstr(lp, want));
        snprintf(want, sizeof want, "tmap 2 v %d 64 %d", cases[i].w, 2 * cases[i].w);
        assert_non_null(strstr(lp, want));
        free(lp);
    }
}

static void expect_invalid(const char *params, const char *needle) {
    char *out = NULL;
    assert_int_equal(mx_gen_call(g, "validate", params, NULL, &out), MXATTN_ERROR_INVALID_VALUE);
    if (!strstr(mxattn_last_error(), needle))
        fail_msg("'%s': message '%s' lacks '%s'", params, mxattn_last_error(), needle);
    assert_null(out);
}

static void test_invalid_tables_name_the_parameter(void **state) {
    expect_invalid("family=f16 head_dim=64 arch=sm_80 " KNOBS, "arch");
    expect_invalid("family=f16 head_dim=64 align=4 " KNOBS, "align");
    expect_invalid("family=f16 head_dim=64 variant=wgmma q_regs=1 block_m=128 warps=8 block_n=64 stages=2", "q_regs");
    expect_invalid("family=f16 head_dim=64 variant=wgmma q_regs=0 block_m=32 warps=8 block_n=64 stages=2", "block_m");
    expect_invalid("family=f16 head_dim=64 variant=wgmma q_regs=0 block_m=128 warps=4 block_n=64 stages=2", "warps");
    expect_invalid("family=f16 head_dim=64 variant=wgmma q_regs=0 block_m=64 warps=12 block_n=64 stages=2", "warps");
    expect_invalid("family=f16 head_dim=64 variant=wgmma q_regs=0 block_m=128 warps=8 block_n=64 stages=1", "stages");
    expect_invalid("family=f16 head_dim=256 variant=wgmma q_regs=0 block_m=128 warps=8 block_n=128 stages=2",
                   "shared memory");
    expect_invalid("family=int8-f16 head_dim=64 " KNOBS, "variant");
}

/* Compiles with NVRTC; returns 0 (and skips) when NVRTC is absent. */
static int compile(const char *params, mx_compile_result *r) {
    char *src = call("render", params, NULL);
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
            snprintf(params, sizeof params, "family=f16 head_dim=%d " KNOBS " %s", DIMS[i], extra[j]);
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
            assert_true(r.usage.found);
            printf("  D=%-3d %-48s %3d registers, %d spill bytes\n", DIMS[i], extra[j], r.usage.registers,
                   r.usage.spill_store_bytes + r.usage.spill_load_bytes);
            if (r.usage.spill_store_bytes || r.usage.spill_load_bytes || r.usage.stack_bytes)
                fail_msg("%s: spills (%d stored, %d loaded, stack %d)", params, r.usage.spill_store_bytes,
                         r.usage.spill_load_bytes, r.usage.stack_bytes);
            /* ptxas says so when it has to serialize the warpgroup MMAs or ignores setmaxnreg. */
            if (strstr(r.log, "serialized") || strstr(r.log, "C7508")) fail_msg("%s: %s", params, r.log);
            if (strstr(params, "warps=12")) assert_non_null(strstr(r.ptx, "setmaxnreg.inc.sync.aligned.u32 240"));
            mx_compile_result_free(&r);
        }
}

static int setup(void **state) { return mx_gen_open(&g) == MXATTN_OK ? 0 : -1; }
static int teardown(void **state) { mx_gen_close(g); return 0; }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renders_deterministically),
        cmocka_unit_test(test_launch_asks_for_tensor_maps),
        cmocka_unit_test(test_invalid_tables_name_the_parameter),
        cmocka_unit_test(test_nvrtc_sm90a_emits_wgmma_and_tma),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
