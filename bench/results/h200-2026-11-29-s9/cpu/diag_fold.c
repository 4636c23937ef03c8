/* Built as: gcc -std=c11 -O2 -ffp-contract=off -Iinclude -I. diag_fold.c build-dev/libmxattn.a -lm -ldl
 * -lpthread -lsqlite3 /usr/lib/x86_64-linux-gnu/liblua5.4.a ; run with seeds as arguments.
 * A record of the s9 diagnosis (bench/NOTES.md); test_pipeline_p_fold keeps its point. */
/* Session 9 diagnostic: gpu_int8_wgmma's failing Nq=1 case on the CPU.  The pipeline
 * reference (double P) against a model of the kernel's fp32 P formula (softmax_acc). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "numerics/numerics.h"

enum { B = 2, HQ = 2, HKV = 2, NQ = 1, NK = 127, D = 128, BN = 32 };
static const float LOG2_448 = 8.8073549220576f;

static void make(mx_rng *r, int heads, int seq, float *x) {
    for (int i = 0; i < B * heads * seq * D; i++) x[i] = mx_f16_to_f32(mx_f32_to_f16((float)mx_rng_gaussian(r)));
}

/* The kernel's arithmetic for one row (q: D floats, k, v: NK x D). exact_c: c in double. */
static void model_row(const float *q, const float *k, const float *v, float prescale, int exact_c, int e4m3_p,
                      double *o) {
    float qs[D], ks[NK * D], mean[D];
    int8_t qc[D], kc[NK * D];
    float qscale, kscale[(NK + 15) / 16];
    for (int c = 0; c < D; c++) qs[c] = q[c] * prescale;
    mx_int8_quantize_blocks(qs, 1, D, D, 16, qc, &qscale);
    mx_channel_mean(k, NK, D, D, mean);
    mx_subtract_mean(k, NK, D, D, mean, ks);
    mx_int8_quantize_blocks(ks, NK, D, D, 16, kc, kscale);
    uint8_t vc[NK * D];
    float vscale[D];
    mx_e4m3_quantize_per_channel(v, NK, D, D, vc, vscale);
    float row_max = -INFINITY, row_sum = 0;
    double O[D] = {0};
    for (int t0 = 0; t0 < NK; t0 += BN) {
        int n = NK - t0 < BN ? NK - t0 : BN, masked = t0 + BN > NK;
        int acc[BN];
        for (int j = 0; j < n; j++) {
            int s = 0;
            for (int c = 0; c < D; c++) s += qc[c] * kc[(t0 + j) * D + c];
            acc[j] = s;
        }
        float m = -INFINITY, p[BN];
        for (int j = 0; j < n; j++) m = fmaxf(m, (float)acc[j] * (qscale * kscale[(t0 + j) / 16]));
        m = fmaxf(row_max, m);
        float alpha = exp2f(row_max - m);
        row_max = m;
        float sum = 0;
        for (int j = 0; j < n; j++) {
            float scale = qscale * kscale[(t0 + j) / 16];
            if (masked) {          /* softmax_tile: s + (shift - base) */
                float s = (float)acc[j] * scale;
                p[j] = exact_c ? (float)exp2((double)s - m + LOG2_448) : exp2f(s + (LOG2_448 - m));
            } else {               /* softmax_acc: fma(1.5*2^23 + acc, scale, -c) */
                float c = fmaf(12582912.f * qscale, kscale[(t0 + j) / 16], m - LOG2_448);
                float big = 12582912.f + (float)acc[j];
                p[j] = exact_c ? (float)exp2((double)acc[j] * scale - m + LOG2_448) : exp2f(fmaf(big, scale, -c));
            }
            sum += p[j];
        }
        row_sum = row_sum * alpha + sum;
        for (int c = 0; c < D; c++) {
            double pv = 0;
            for (int j = 0; j < n; j++)
                pv += (double)(e4m3_p ? mx_round_e4m3(p[j]) : p[j]) * mx_e4m3_to_f32(vc[(t0 + j) * D + c]);
            O[c] = O[c] * alpha + pv;
        }
    }
    for (int c = 0; c < D; c++) o[c] = O[c] * vscale[c] / row_sum;
}

int main(int argc, char **argv) {
    int n_seeds = argc - 1;
    for (int a = 0; a < n_seeds; a++) {
        uint64_t seed = strtoull(argv[a + 1], NULL, 10);
        mx_rng r;
        mx_rng_seed(&r, seed);
        static float q[B * HQ * NQ * D], k[B * HKV * NK * D], v[B * HKV * NK * D];
        make(&r, HQ, NQ, q); make(&r, HKV, NK, k); make(&r, HKV, NK, v);
        mx_ref_shape s = {B, HQ, HKV, NQ, NK, D, MXATTN_CAUSAL_NONE, 0};
        mx_ref_config cfg;
        mx_ref_family_config("int8-fp8", 0, 1, MXATTN_F16, &cfg);
        cfg.int8_block_q = cfg.int8_block_k = 16;
        cfg.p_tile = BN;
        mx_ref_config_set_v_terms(&cfg, 1);
        cfg.q_prescale = (float)((double)(1.0f / sqrtf((float)D)) * 1.4426950408889634);
        static double o_ref[B * HQ * NQ * D], o_model[B * HQ * NQ * D], o_exact_c[B * HQ * NQ * D];
        if (mx_ref_pipeline_attention(&s, &cfg, q, k, v, o_ref, NULL, NULL) != MXATTN_OK) { printf("ref failed\n"); return 1; }
        static double o_fold[B * HQ * NQ * D];
        mx_ref_config fc = cfg; fc.p_fold = 1;
        if (mx_ref_pipeline_attention(&s, &fc, q, k, v, o_fold, NULL, NULL) != MXATTN_OK) { printf("fold failed: %s\n", mxattn_last_error()); return 1; }
        for (int b = 0; b < B; b++)
            for (int h = 0; h < HQ; h++) {
                size_t row = (size_t)b * HQ + h, kv = (size_t)b * HKV + h;
                model_row(q + row * D, k + kv * NK * D, v + kv * NK * D, cfg.q_prescale, 0, 1, o_model + row * D);
                model_row(q + row * D, k + kv * NK * D, v + kv * NK * D, cfg.q_prescale, 1, 1, o_exact_c + row * D);
            }
        printf("  p_fold reference vs model %.2e, vs pipeline %.2e\n", mx_rel_l1(o_fold, o_model, B * HQ * NQ * D), mx_rel_l1(o_fold, o_ref, B * HQ * NQ * D));
        printf("seed %llu: model (fp32 c) vs pipeline rel_l1 %.2e | model (exact c) vs pipeline %.2e\n",
               (unsigned long long)seed, mx_rel_l1(o_model, o_ref, B * HQ * NQ * D), mx_rel_l1(o_exact_c, o_ref, B * HQ * NQ * D));
    }
    return 0;
}
