/* How fine must FP8 V's scale be?  int8-fp8 quantizes V to E4M3 with one
 * scale per channel over all keys, which is why its stats pass reads V once
 * more than the quant pass (134 of its 151 MB at D=128 N=4096 B=4 H=32,
 * bench/NOTES.md, nineteenth session).  A scale per 128-key window (one for
 * all channels of the window, or one per channel of it) could be found in the
 * quant pass itself (or one per window and 32-channel group, four factors a
 * row in the fold at D=128).  This runs numerics' int8-fp8 pipeline with V
 * quantized each way, against fp64 attention, on inputs where the grain could
 * matter.
 *
 *   cc -O2 -std=c11 -I. -Iinclude bench/micro/v_scale_grain.c \
 *      build-dev/libmxattn.a -lm -lpthread -ldl -o /tmp/v_scale_grain && /tmp/v_scale_grain
 *
 * (libmxattn.a holds numerics/; link flags as the CMake build's tests.)  The
 * first variant must read as the library's own per-channel path (a check of
 * this harness). */
#include "numerics/numerics.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 1, H = 2, N = 1024, D = 128, WINDOW = 128 };

static double gauss(unsigned long long *s) {
    double u1, u2;
    do {
        *s = *s * 6364136223846793005ull + 1442695040888963407ull;
        u1 = (double)(*s >> 11) / 9007199254740992.0;
    } while (u1 <= 0);
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    u2 = (double)(*s >> 11) / 9007199254740992.0;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

/* x (rows x D, one head) quantized to E4M3 and back in groups: a group is
 * the keys [r0, r0 + rows_per) and the channels [c0, c0 + cols_per). */
static void e4m3_groups(const float *x, float *out, int rows, int rows_per, int cols_per) {
    for (int r0 = 0; r0 < rows; r0 += rows_per) {
        int r1 = r0 + rows_per < rows ? r0 + rows_per : rows;
        for (int c0 = 0; c0 < D; c0 += cols_per) {
            int c1 = c0 + cols_per;
            float amax = 0.f;
            for (int r = r0; r < r1; r++)
                for (int c = c0; c < c1; c++) amax = fmaxf(amax, fabsf(x[r * D + c]));
            float scale = amax / 448.0f;
            for (int r = r0; r < r1; r++)
                for (int c = c0; c < c1; c++)
                    out[r * D + c] = scale > 0 ? mx_e4m3_to_f32(mx_f32_to_e4m3(x[r * D + c] / scale)) * scale : 0.f;
        }
    }
}

typedef enum { IN_GAUSS, IN_CHANNEL_SCALES, IN_OUTLIER_TOKENS, IN_PEAKED, IN_CHANNEL_OFFSETS, N_INPUTS } input_kind;
static const char *INPUT_NAMES[] = {"gaussian", "V channel scales 1e-2..1e1", "V 1% tokens x50",
                                    "peaked (Q, K x3)", "V channel offsets N(0,4^2)"};

static void make_inputs(input_kind kind, unsigned long long seed, float *q, float *k, float *v) {
    unsigned long long s = seed;
    size_t n = (size_t)B * H * N * D;
    float qk_gain = kind == IN_PEAKED ? 3.f : 1.f;
    for (size_t i = 0; i < n; i++) q[i] = (float)gauss(&s) * qk_gain;
    for (size_t i = 0; i < n; i++) k[i] = (float)gauss(&s) * qk_gain;
    float sigma[D], mu[D];
    for (int c = 0; c < D; c++) {
        double u = (double)(c * 2654435761u % 1000) / 1000.0;
        sigma[c] = kind == IN_CHANNEL_SCALES ? (float)pow(10.0, -2 + 3 * u) : 1.f;
        mu[c] = kind == IN_CHANNEL_OFFSETS ? (float)(4 * gauss(&s)) : 0.f;
    }
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % D), row = (int)(i / D % N);
        float x = mu[c] + sigma[c] * (float)gauss(&s);
        if (kind == IN_OUTLIER_TOKENS && row % 100 == 7) x *= 50.f;
        v[i] = mx_round_bf16(x);
    }
    for (size_t i = 0; i < n; i++) { q[i] = mx_round_bf16(q[i]); k[i] = mx_round_bf16(k[i]); }
}

int main(void) {
    size_t n = (size_t)B * H * N * D;
    float *q = malloc(n * 4), *k = malloc(n * 4), *v = malloc(n * 4), *vq = malloc(n * 4);
    double *ref = malloc(n * 8), *o = malloc(n * 8);
    mx_ref_shape shape = {B, H, H, N, N, D, MXATTN_CAUSAL_NONE, 0};
    mx_ref_config lib;
    if (mx_ref_family_config("int8-fp8", 0, 1, MXATTN_BF16, &lib) != MXATTN_OK) return 1;
    lib.p_tile = 128;
    mx_ref_config pre = lib;           /* V handed over already quantized */
    pre.input_round = MX_ROUND_NONE;   /* the inputs are bf16 already */
    pre.v = MX_V_EXACT;
    printf("int8-fp8 pipeline vs fp64, B=%d H=%d N=%d D=%d, rel-L1 (cosine)\n", B, H, N, D);
    printf("%-28s %-22s %-22s %-22s %-22s %-22s\n", "input", "library (channel)", "channel, all keys",
           "channel, 128 keys", "32 channels, 128 keys", "one per 128 keys");
    for (int kind = 0; kind < N_INPUTS; kind++) {
        make_inputs((input_kind)kind, 1234 + kind, q, k, v);
        if (mx_ref_attention(&shape, q, k, v, ref, NULL) != MXATTN_OK) return 1;
        printf("%-28s", INPUT_NAMES[kind]);
        for (int variant = 0; variant < 5; variant++) {
            mxattn_status st;
            if (variant == 0) {
                st = mx_ref_pipeline_attention(&shape, &lib, q, k, v, o, NULL, NULL);
            } else {
                for (int h = 0; h < B * H; h++) {
                    const float *x = v + (size_t)h * N * D;
                    float *out = vq + (size_t)h * N * D;
                    if (variant == 1) e4m3_groups(x, out, N, N, 1);
                    else if (variant == 2) e4m3_groups(x, out, N, WINDOW, 1);
                    else if (variant == 3) e4m3_groups(x, out, N, WINDOW, 32);
                    else e4m3_groups(x, out, N, WINDOW, D);
                }
                st = mx_ref_pipeline_attention(&shape, &pre, q, k, vq, o, NULL, NULL);
            }
            if (st != MXATTN_OK) { printf(" failed: %s\n", mxattn_last_error()); return 1; }
            mx_error_stats e = mx_compare(o, ref, n);
            printf(" %.5f (%.6f)    ", e.rel_l1, e.cosine);
        }
        printf("\n");
    }
    free(q); free(k); free(v); free(vq); free(ref); free(o);
    return 0;
}
