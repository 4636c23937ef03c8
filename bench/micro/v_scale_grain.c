/* How fine must FP8 V's scale be, and must it see every key?  int8-fp8
 * quantizes V to E4M3 with one scale per channel over all keys, which is why
 * its stats pass reads V once more than the quant pass (134 of its 151 MB at
 * D=128 N=4096 B=4 H=32; bench/NOTES.md, 2026-11-30).  This runs V
 * quantized several ways, against fp64 attention:
 *   channel          one scale per channel over all keys (the library's; the
 *                    "library" column is numerics' own pipeline, a check of
 *                    this harness's copy)
 *   channel/128      one per channel and 128-key window
 *   window           one per 128-key window for all channels
 *   sampled          one per channel from keys 0, 8, 16, ... (the stride of
 *                    smooth-K's mean), saturating what lies above it
 *   sampled x pow2   that channel scale times a power of two per window over
 *                    all channels, w = 2^ceil(log2(max |v| / scale / 448)), so
 *                    nothing saturates: E4M3 is floating point, so w moves the
 *                    window's codes by whole binades and keeps their relative
 *                    precision until they reach the subnormals; the attention
 *                    kernel would fold w into O's per-row factor of each tile
 *   s x pow2/8ch     the same with a power of two per window and 8 channels:
 *                    a spike then pushes only its group's codes down; the
 *                    fold takes each group's factor (16 a row and tile at
 *                    D=128) in its one FFMA a value
 *   sampled x w,     as the two above with w = max / 448 exactly rather than
 *   s x w/8ch        a power of two, so each group's largest value is exact
 *                    (as amax scaling makes each channel's)
 * Two errors each: "V only" (fp64 attention on the quantized V against fp64
 * on the bf16 V: V's own share) and "pipeline" (numerics' int8-fp8 pipeline,
 * Q, K and P quantized too, against fp64).  Three seeds an input; each cell
 * is the mean rel-L1 and, in brackets, the seeds' spread (max - min).
 *
 *   cc -O2 -std=c11 -I. -Iinclude bench/micro/v_scale_grain.c \
 *      build-dev/libmxattn.a -lm -lpthread -ldl -o /tmp/v_scale_grain && /tmp/v_scale_grain
 *
 * (libmxattn.a holds numerics/; link flags as the CMake build's tests.) */
#include "numerics/numerics.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 1, H = 2, N = 1024, D = 128, WINDOW = 128, SAMPLE_STEP = 8, SEEDS = 3 };

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

static float e4m3_times(float x, float scale) {
    return scale > 0 ? mx_e4m3_to_f32(mx_f32_to_e4m3(x / scale)) * scale : 0.f;
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
            for (int r = r0; r < r1; r++)
                for (int c = c0; c < c1; c++) out[r * D + c] = e4m3_times(x[r * D + c], amax / 448.0f);
        }
    }
}

/* Channel scales from every SAMPLE_STEP-th key; with pow2 channels a group,
 * times a power of two per WINDOW keys and pow2 channels that brings the
 * group's largest |v| / scale to at most 448; with 0, E4M3 saturates. */
static void e4m3_sampled(const float *x, float *out, int rows, int pow2, int exact) {
    float scale[D];
    for (int c = 0; c < D; c++) {
        float amax = 0.f;
        for (int r = 0; r < rows; r += SAMPLE_STEP) amax = fmaxf(amax, fabsf(x[r * D + c]));
        scale[c] = amax > 0 ? amax / 448.0f : 1.0f;   /* a channel all zeros in the sample: the window decides */
    }
    const int group = pow2 ? pow2 : D;
    for (int r0 = 0; r0 < rows; r0 += WINDOW) {
        int r1 = r0 + WINDOW < rows ? r0 + WINDOW : rows;
        for (int c0 = 0; c0 < D; c0 += group) {
            float w = 1.f;
            if (pow2) {
                float m = 0.f;
                for (int r = r0; r < r1; r++)
                    for (int c = c0; c < c0 + group; c++) m = fmaxf(m, fabsf(x[r * D + c]) / scale[c]);
                w = m > 0 ? (exact ? m / 448.0f : exp2f(ceilf(log2f(m / 448.0f)))) : 1.f;
            }
            for (int r = r0; r < r1; r++)
                for (int c = c0; c < c0 + group; c++) out[r * D + c] = e4m3_times(x[r * D + c], scale[c] * w);
        }
    }
}

typedef enum {
    IN_GAUSS, IN_CHANNEL_SCALES, IN_OUTLIER_TOKENS, IN_PEAKED, IN_CHANNEL_OFFSETS, IN_SPIKE_UNSAMPLED,
    IN_SPIKE_SAMPLED, N_INPUTS
} input_kind;
static const char *INPUT_NAMES[] = {"gaussian", "V channel scales 1e-2..1e1", "V 1% tokens x50",
                                    "peaked (Q, K x3)", "V channel offsets N(0,4^2)",
                                    "V key 13 x1000, 4 channels", "V key 16 x1000, 4 channels"};

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
    const int spike_row = kind == IN_SPIKE_UNSAMPLED ? 13 : 16;
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % D), row = (int)(i / D % N);
        float x = mu[c] + sigma[c] * (float)gauss(&s);
        if (kind == IN_OUTLIER_TOKENS && row % 100 == 7) x *= 50.f;
        if ((kind == IN_SPIKE_UNSAMPLED || kind == IN_SPIKE_SAMPLED) && row == spike_row && c % 32 == 5) x *= 1000.f;
        v[i] = mx_round_bf16(x);
    }
    for (size_t i = 0; i < n; i++) { q[i] = mx_round_bf16(q[i]); k[i] = mx_round_bf16(k[i]); }
}

enum { VARIANTS = 9 };
static const char *VARIANT_NAMES[VARIANTS] = {"library", "channel", "channel/128", "window", "sampled",
                                              "sampled x pow2", "s x pow2/8ch", "sampled x w", "s x w/8ch"};

static void quantize_v(int variant, const float *v, float *vq) {
    for (int h = 0; h < B * H; h++) {
        const float *x = v + (size_t)h * N * D;
        float *out = vq + (size_t)h * N * D;
        switch (variant) {
        case 1: e4m3_groups(x, out, N, N, 1); break;
        case 2: e4m3_groups(x, out, N, WINDOW, 1); break;
        case 3: e4m3_groups(x, out, N, WINDOW, D); break;
        case 4: e4m3_sampled(x, out, N, 0, 0); break;
        case 5: e4m3_sampled(x, out, N, D, 0); break;
        case 6: e4m3_sampled(x, out, N, 8, 0); break;
        case 7: e4m3_sampled(x, out, N, D, 1); break;
        default: e4m3_sampled(x, out, N, 8, 1); break;
        }
    }
}

int main(void) {
    size_t n = (size_t)B * H * N * D;
    float *q = malloc(n * 4), *k = malloc(n * 4), *v = malloc(n * 4), *vq = malloc(n * 4);
    double *ref = malloc(n * 8), *o = malloc(n * 8);
    if (!q || !k || !v || !vq || !ref || !o) return 1;
    mx_ref_shape shape = {B, H, H, N, N, D, MXATTN_CAUSAL_NONE, 0};
    mx_ref_config lib;
    if (mx_ref_family_config("int8-fp8", 0, 1, MXATTN_BF16, &lib) != MXATTN_OK) return 1;
    lib.p_tile = 128;
    mx_ref_config pre = lib;           /* V handed over already quantized */
    pre.input_round = MX_ROUND_NONE;   /* the inputs are bf16 already */
    pre.v = MX_V_EXACT;
    printf("V quantized to E4M3 against fp64 attention, B=%d H=%d N=%d D=%d: mean rel-L1 over %d seeds [spread]\n",
           B, H, N, D, SEEDS);
    for (int what = 0; what < 2; what++) {
        printf("\n%s\n%-28s", what == 0 ? "V only (fp64 attention on the quantized V)" : "pipeline (Q, K, P quantized too)",
               "input");
        for (int variant = what == 0; variant < VARIANTS; variant++) printf(" %-20s", VARIANT_NAMES[variant]);
        printf("\n");
        for (int kind = 0; kind < N_INPUTS; kind++) {
            double sum[VARIANTS] = {0}, lo[VARIANTS], hi[VARIANTS];
            for (int i = 0; i < VARIANTS; i++) lo[i] = 1e30, hi[i] = 0;
            for (int seed = 0; seed < SEEDS; seed++) {
                make_inputs((input_kind)kind, 1234 + 100 * seed + kind, q, k, v);
                if (mx_ref_attention(&shape, q, k, v, ref, NULL) != MXATTN_OK) return 1;
                /* V only has no "library" column: the pipeline quantizes Q, K and P too. */
                for (int variant = what == 0; variant < VARIANTS; variant++) {
                    mxattn_status st;
                    if (variant == 0) {
                        st = mx_ref_pipeline_attention(&shape, &lib, q, k, v, o, NULL, NULL);
                    } else {
                        quantize_v(variant, v, vq);
                        st = what == 0 ? mx_ref_attention(&shape, q, k, vq, o, NULL)
                                       : mx_ref_pipeline_attention(&shape, &pre, q, k, vq, o, NULL, NULL);
                    }
                    if (st != MXATTN_OK) { printf(" failed: %s\n", mxattn_last_error()); return 1; }
                    double e = mx_compare(o, ref, n).rel_l1;
                    sum[variant] += e;
                    lo[variant] = e < lo[variant] ? e : lo[variant];
                    hi[variant] = e > hi[variant] ? e : hi[variant];
                }
            }
            printf("%-28s", INPUT_NAMES[kind]);
            for (int variant = what == 0; variant < VARIANTS; variant++)
                printf(" %.5f [%.5f]    ", sum[variant] / SEEDS, hi[variant] - lo[variant]);
            printf("\n");
            fflush(stdout);
        }
    }
    free(q); free(k); free(v); free(vq); free(ref); free(o);
    return 0;
}
