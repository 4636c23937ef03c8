/* NaN in Q, K or V on a GPU, every family: the output rows (and columns) that
 * come out NaN are exactly the ones the family's CPU reference in numerics/
 * makes NaN, and every other output still matches that reference.
 *
 * The rule (numerics/numerics.h): a NaN poisons the scale of the quantization
 * block (INT8 group, FP4 block, FP8 V channel) it sits in, so the block
 * dequantizes to NaN, and attention spreads it as exact attention (and SDPA)
 * does: NaN in Q row i makes the rows of i's Q group NaN; NaN in key j makes
 * every row that sees a key of j's K group NaN; NaN in V[j][c] makes column c
 * NaN in every row that sees a key of j's V block (all rows for int8-fp8,
 * whose V scale is per channel).  The reference's NaN set is checked to hold
 * SDPA's (the rows that see the NaN) and to leave rows finite where SDPA
 * does, up to the group, so a reference that spread NaN to everything fails.
 *
 * One latitude: with a causal mask, a row that does not see key j may still
 * meet V[j] in the P.V product of a key tile its query tile shares with j,
 * where its P is 0 and 0 * NaN is NaN (FlashAttention does the same).  Those
 * rows (below the reference's first NaN row, within 384 = the largest
 * block_m + block_n of them) may be NaN in V's column, or match.
 *
 * Inputs: fresh Gaussian bf16 each run (K with a channel mean, for smooth-K),
 * one NaN planted in head 1 of Q, K or V; B=1, H=2, N=200, D=64 and 128,
 * causal none and top-left; the library's default kernel and, where a family
 * has them, each MMA variant.  Output and LSE are poisoned with finite values
 * (bf16 0x7f7f, 1e30) before the run, so an unwritten row can pass neither
 * as NaN nor as a match.  Exits 77 (skipped) without a GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gen/gen.h"
#include "support/gpu_harness.h"
#include "support/ref_parallel.h"
#include "util/err.h"

static mx_device g_dev;
static mxattn_ctx *g_ctx;

enum { B = 1, H = 2, N = 200, Q_ROW = 37, KV_ROW = 150, V_COL = 5, NAN_HEAD = 1 };
/* Finite outputs against the reference: twice the families' pipeline bound
 * for bf16 (gpu_fp4, gpu_int8: 4e-3; gpu_f16 vs fp64: 3e-3), as these cases
 * are small; and the LSE within one P-code flip (GPU_LSE_ONE_FLIP). */
#define REL_L1_TOL 8e-3
#define LSE_TOL 0.07

typedef struct { const char *family, *config; int wgmma_only; } kernel_case;
static const kernel_case KERNELS[] = {
    {"f16", NULL, 0}, {"f16", "variant=mma", 0}, {"f16", "variant=wgmma", 1},
    {"int8-f16", NULL, 0},
    {"int8-fp8", NULL, 0}, {"int8-fp8", "variant=mma", 0}, {"int8-fp8", "variant=wgmma", 1},
    {"nvfp4", NULL, 0}, {"mxfp4", NULL, 0}, {"nvfp4-int8qk", NULL, 0},
};

/* The family's reference for the plan's canonical config (as gpu_f16,
 * gpu_int8 and gpu_fp4 compute theirs). */
static mxattn_status reference(const mxattn_problem *p, const char *config, const float *q, const float *k,
                               const float *v, double *o, double *lse) {
    mx_ref_shape s = {p->batch, p->heads_q, p->heads_kv, p->seq_q, p->seq_k, p->head_dim, p->causal, 0};
    if (!strcmp(p->family, "f16")) return ref_attention_parallel(&s, NULL, q, k, v, o, lse, 0);
    if (!strncmp(p->family, "int8", 4)) {
        gpu_case c = {.family = p->family, .batch = p->batch, .heads_q = p->heads_q, .heads_kv = p->heads_kv,
                      .seq_q = p->seq_q, .seq_k = p->seq_k, .head_dim = p->head_dim, .causal = p->causal,
                      .dtype = p->dtype, .v_terms = p->v_terms};
        return gpu_int8_pipeline_reference(&c, config, q, k, v, o, lse);
    }
    int bn = (int)mx_params_get_int(config, "block_n", -1);   /* P's scale tile: the plan's */
    return mx_ref_family_attention(p->family, p, bn, q, k, v, o, lse);
}

/* Does SDPA make output row r of head NAN_HEAD NaN in column col (which:
 * 0 Q, 1 K, 2 V)?  The least any family may do. */
static int sdpa_nan(int which, int causal, int r, int col) {
    if (which == 0) return r == Q_ROW;
    int sees = !causal || KV_ROW <= r;
    return which == 1 ? sees : sees && col == V_COL;
}

/* One plan (kernel, head_dim, causal mode: problem p, canonical config),
 * one planted NaN; returns the number of failures (0 or 1) and prints a line. */
static int check_one(const kernel_case *kc, mxattn_plan *plan, const mxattn_problem *pp, const char *config,
                     int which, uint64_t seed) {
    const mxattn_problem p = *pp;
    const int d = p.head_dim, causal = p.causal != MXATTN_CAUSAL_NONE;
    const size_t n = (size_t)B * H * N * d, rows = (size_t)B * H * N;
    float *q = malloc(n * 4), *k = malloc(n * 4), *v = malloc(n * 4), *o = malloc(n * 4), *lse = malloc(rows * 4);
    double *o_ref = malloc(n * 8), *lse_ref = malloc(rows * 8);
    assert_true(q && k && v && o && lse && o_ref && lse_ref);
    mx_rng rng;
    mx_rng_seed(&rng, seed);
    gpu_random_bf16(&rng, q, n, 0, 1);
    gpu_random_bf16(&rng, k, n, 0.5, 1);
    gpu_random_bf16(&rng, v, n, 0, 1);
    const size_t head = (size_t)NAN_HEAD * N * d;
    if (which == 0) q[head + (size_t)Q_ROW * d + 3] = NAN;
    if (which == 1) k[head + (size_t)KV_ROW * d + 3] = NAN;
    if (which == 2) v[head + (size_t)KV_ROW * d + V_COL] = NAN;
    char what[320];
    snprintf(what, sizeof what, "%s [%s] D=%d causal=%d NaN in %c", kc->family, kc->config ? kc->config : "default",
             d, causal, "QKV"[which]);
    int bad = 0;
    mxattn_status st = gpu_run_bf16(&g_dev, plan, &p, q, k, v, o, lse);
    if (st == MXATTN_OK) st = reference(&p, config, q, k, v, o_ref, lse_ref);
    if (st != MXATTN_OK) {
        printf("FAIL %s: %s: %s\n", what, mxattn_status_string(st), mxattn_last_error());
        bad = 1;
        goto done;
    }
    /* The reference itself: SDPA's NaN set within it, head 0 untouched, and
     * some row of head 1 finite where SDPA leaves one finite. */
    long ref_nan_rows = 0, sdpa_finite_rows = 0, ref_finite_rows = 0;
    int first_ref_nan = N;
    for (int hh = 0; hh < H; hh++)
        for (int r = 0; r < N; r++) {
            int row_nan = 0, sdpa_row = 0;
            for (int c = 0; c < d; c++) {
                int rn = isnan(o_ref[((size_t)hh * N + r) * d + c]) != 0;
                int sn = hh == NAN_HEAD && sdpa_nan(which, causal, r, c);
                row_nan |= rn;
                sdpa_row |= sn;
                if (sn && !rn && bad++ < 4) printf("  reference: head %d row %d col %d finite where SDPA is NaN\n", hh, r, c);
                if (hh != NAN_HEAD && rn && bad++ < 4) printf("  reference: head %d row %d NaN\n", hh, r);
            }
            if (hh == NAN_HEAD) {
                ref_nan_rows += row_nan;
                sdpa_finite_rows += !sdpa_row;
                ref_finite_rows += !row_nan;
                if (row_nan && r < first_ref_nan) first_ref_nan = r;
            }
        }
    /* V's per-channel FP8 scale (int8-fp8) makes its column NaN in every row:
     * then only the other columns stay finite, which the loop below checks. */
    if (sdpa_finite_rows > 0 && ref_finite_rows == 0 && !(which == 2 && !strcmp(kc->family, "int8-fp8"))) {
        printf("  reference: every row of head %d NaN where SDPA leaves %ld finite\n", NAN_HEAD, sdpa_finite_rows);
        bad++;
    }
    /* The kernel against it, element by element. */
    double err = 0, ref_sum = 0;
    long mismatched = 0, lse_bad = 0, may = 0;
    for (int hh = 0; hh < H; hh++)
        for (int r = 0; r < N; r++) {
            const size_t row = (size_t)hh * N + r;
            int latitude = causal && which == 2 && hh == NAN_HEAD && r < first_ref_nan && r >= first_ref_nan - 384;
            for (int c = 0; c < d; c++) {
                double want = o_ref[row * d + c], got = o[row * d + c];
                if (isnan(want) != isnan(got)) {
                    if (latitude && c == V_COL && isnan(got)) { may++; continue; }
                    if (mismatched++ < 6)
                        printf("  head %d row %d col %d: got %g, reference %g\n", hh, r, c, got, want);
                    continue;
                }
                if (!isnan(want)) { err += fabs(got - want); ref_sum += fabs(want); }
            }
            int lse_nan = isnan(lse_ref[row]) != 0;
            if (lse_nan != (isnan(lse[row]) != 0) || (!lse_nan && !(fabs(lse[row] - lse_ref[row]) <= LSE_TOL)))
                if (lse_bad++ < 4) printf("  head %d row %d LSE: got %g, reference %g\n", hh, r, lse[row], lse_ref[row]);
        }
    double rel_l1 = ref_sum > 0 ? err / ref_sum : 0;
    bad += mismatched > 0 || lse_bad > 0 || !(rel_l1 < REL_L1_TOL);
    printf("%s %s {%s}: NaN rows %ld (reference), NaN mismatches %ld, LSE mismatches %ld, "
           "V-tile latitude used %ld, finite rel_l1 %.2e, seed %llu\n",
           bad ? "FAIL" : "ok  ", what, config, ref_nan_rows, mismatched, lse_bad, may, rel_l1,
           (unsigned long long)seed);
done:
    free(q); free(k); free(v); free(o); free(lse); free(o_ref); free(lse_ref);
    return bad != 0;
}

static void test_nan_rows_follow_the_reference(void **state) {
    (void)state;
    static const int dims[] = {64, 128};
    int failures = 0, i = 0;
    for (size_t f = 0; f < sizeof KERNELS / sizeof KERNELS[0]; f++) {
        const kernel_case *kc = &KERNELS[f];
        if (kc->wgmma_only && strcmp(g_dev.arch, "sm_90a") != 0) continue;
        for (int di = 0; di < 2; di++)
            for (int causal = 0; causal <= 1; causal++) {
                mxattn_problem p;
                mxattn_problem_init(&p, kc->family, dims[di]);
                p.batch = B; p.heads_q = H; p.heads_kv = H; p.seq_q = N; p.seq_k = N;
                p.causal = causal ? MXATTN_CAUSAL_TOP_LEFT : MXATTN_CAUSAL_NONE;
                p.dtype = p.out_dtype = MXATTN_BF16; p.layout = MXATTN_LAYOUT_BHND; p.return_lse = 1;
                mxattn_plan *plan = NULL;
                mxattn_plan_info info;
                if (mxattn_plan_create(g_ctx, &p, kc->config, &plan) != MXATTN_OK ||
                    mxattn_plan_get_info(plan, &info) != MXATTN_OK) {
                    printf("FAIL %s [%s] D=%d causal=%d: plan: %s\n", kc->family, kc->config ? kc->config : "default",
                           dims[di], causal, mxattn_last_error());
                    mxattn_plan_destroy(plan);
                    failures++;
                    continue;
                }
                char config[256];
                snprintf(config, sizeof config, "%s", info.config);
                for (int which = 0; which < 3; which++)   /* one plan, fresh inputs each time */
                    failures += check_one(kc, plan, &p, config, which, gpu_seed_base() + (uint64_t)i++);
                mxattn_plan_destroy(plan);
            }
    }
    assert_int_equal(failures, 0);
}

int main(int argc, char **argv) {
    gpu_open_or_skip(&g_dev, "gpu_nan");
    mxattn_options opts;
    mxattn_options_init(&opts);
    opts.no_cache = 1;
    if (mxattn_create(&g_ctx, &opts) != MXATTN_OK) {
        printf("setup: %s\n", mxattn_last_error());
        return 1;
    }
    printf("gpu_nan on %s (%s)\n", g_dev.name, g_dev.arch);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nan_rows_follow_the_reference),
    };
    int rc = gpu_run_tests("gpu_nan", tests, sizeof tests / sizeof tests[0], argc, argv);
    mxattn_destroy(g_ctx);
    mx_device_close(&g_dev);
    return rc;
}
