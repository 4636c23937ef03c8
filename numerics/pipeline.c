/* The quantized-pipeline reference: what each kernel family computes, one
 * stage at a time (round inputs, quantize Q/K, scores, softmax, quantize P,
 * quantize V, P.V).  Accumulation is fp64 so that only the quantization the
 * family does shows up as error. */
#include "numerics/numerics.h"
#include "util/err.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void mx_ref_config_exact(mx_ref_config *c) {
    memset(c, 0, sizeof *c);
    c->input_round = MX_ROUND_NONE;
    c->qk = MX_QK_EXACT;
    c->int8_block_q = 128;   /* SageAttention's quantization blocks */
    c->int8_block_k = 64;
    c->p = MX_P_EXACT;
    c->v = MX_V_EXACT;
    c->temperature = 1.0;
}

/* What each family quantizes, the one table of it on the reference's side.
 * The names are the templates' families (templates/space.lua); numerics sits
 * below gen and cannot ask it, so test_api checks that the two lists agree. */
typedef struct {
    const char *family;
    mx_qk_mode qk;
    mx_p_mode p, p_direct;     /* P's quantization, with the two-level scale and with direct_p */
    mx_v_mode v;
    int quantized_qk;          /* smooth_k applies (f16 has no K to smooth) */
    int kmean_sampled;         /* their stats kernel's mean (mx_kmean_step) */
    int int8_per_thread;       /* SageAttention2's per-thread scales, as its kernels group them */
} family_recipe;

/* f16's P is the input dtype's (MX_P_F16 here, bf16 below). */
static const family_recipe RECIPES[] = {
    {"f16", MX_QK_EXACT, MX_P_F16, MX_P_F16, MX_V_EXACT, 0, 0, 0},
    {"int8-f16", MX_QK_INT8, MX_P_F16, MX_P_F16, MX_V_F16, 1, 1, 0},
    {"int8-fp8", MX_QK_INT8, MX_P_E4M3, MX_P_E4M3, MX_V_E4M3, 1, 1, 1},
    {"nvfp4", MX_QK_NVFP4, MX_P_NVFP4_TWO_LEVEL, MX_P_NVFP4_DIRECT, MX_V_NVFP4, 1, 0, 0},
    {"mxfp4", MX_QK_MXFP4, MX_P_MXFP4_TWO_LEVEL, MX_P_MXFP4_DIRECT, MX_V_MXFP4, 1, 0, 0},
    {"nvfp4-int8qk", MX_QK_INT8, MX_P_NVFP4_TWO_LEVEL, MX_P_NVFP4_DIRECT, MX_V_NVFP4, 1, 0, 0},
};
#define N_RECIPES ((int)(sizeof RECIPES / sizeof RECIPES[0]))

int mx_ref_family_count(void) { return N_RECIPES; }
const char *mx_ref_family_name(int i) { return i >= 0 && i < N_RECIPES ? RECIPES[i].family : NULL; }

mxattn_status mx_ref_family_config(const char *family, int direct_p, int smooth_k,
                                   mxattn_dtype dtype, mx_ref_config *out) {
    if (!family || !out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "family config: NULL argument");
    const family_recipe *r = NULL;
    for (int i = 0; i < N_RECIPES; i++)
        if (!strcmp(family, RECIPES[i].family)) r = &RECIPES[i];
    if (!r) return mx_fail(MXATTN_ERROR_INVALID_VALUE, "unknown family '%s'", family);
    mx_ref_config c;
    mx_ref_config_exact(&c);
    c.input_round = dtype == MXATTN_BF16 ? MX_ROUND_BF16 : MX_ROUND_F16;
    c.qk = r->qk;
    c.p = direct_p ? r->p_direct : r->p;
    if (r->qk == MX_QK_EXACT && dtype == MXATTN_BF16) c.p = MX_P_BF16;
    c.v = r->v;
    c.smooth_k = r->quantized_qk && smooth_k != 0;
    c.kmean_sampled = r->kmean_sampled;
    c.int8_per_thread = r->int8_per_thread;
    *out = c;
    return MXATTN_OK;
}

/* The larger of a and b, NaN if either is: a row's maximum over scores of
 * which one is NaN is NaN, so that the whole row comes out NaN as exact
 * attention makes it (a max that skipped the NaN would leave a row whose every
 * score is NaN looking as if it saw no key, O = 0). */
static double max_nan(double a, double b) { return (b > a || isnan(b)) && !isnan(a) ? b : a; }

static int p_is_fp4(mx_p_mode p) { return p >= MX_P_NVFP4_DIRECT; }

static mx_fp4_kind p_fp4_kind(mx_p_mode p) {
    return (p == MX_P_MXFP4_DIRECT || p == MX_P_MXFP4_TWO_LEVEL) ? MX_FP4_MXFP4 : MX_FP4_NVFP4;
}

static mxattn_status check_config(const mx_ref_config *c) {
    if (!c) return mx_fail(MXATTN_ERROR_NULL_POINTER, "pipeline reference: NULL config");
    if (c->qk == MX_QK_INT8 && (c->int8_block_q < 1 || c->int8_block_k < 1))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "pipeline reference: INT8 blocks %d/%d",
                       c->int8_block_q, c->int8_block_k);
    if (c->p_tile < 0 || (c->p_tile > 0 && p_is_fp4(c->p) &&
                          c->p_tile % mx_fp4_block_size(p_fp4_kind(c->p)) != 0))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE,
                       "pipeline reference: p_tile %d is not a multiple of the P block", c->p_tile);
    if (c->p_fold && (c->qk != MX_QK_INT8 || c->p != MX_P_E4M3 || c->p_tile <= 0 || c->q_prescale == 0))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE,
                       "pipeline reference: p_fold needs INT8 QK, E4M3 P, p_tile > 0 and q_prescale");
    if (c->int8_per_thread && c->qk != MX_QK_INT8)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "pipeline reference: int8_per_thread needs INT8 QK");
    if (c->l_from_p_hat && !c->p_fold)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "pipeline reference: l_from_p_hat models a p_fold kernel; set p_fold");
    if (c->kv_tile < 0 || (c->kv_tile > 0 && (c->p_fold || c->kmean_sampled)))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE,
                       "pipeline reference: kv_tile %d (needs p_fold 0 and kmean_sampled 0)", c->kv_tile);
    if (c->p_base_pow2 && (c->p_tile <= 0 || c->p_fold))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "pipeline reference: p_base_pow2 needs p_tile > 0 and p_fold 0");
    if (!(c->temperature > 0) || isinf(c->temperature))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "pipeline reference: bad temperature %g", c->temperature);
    return MXATTN_OK;
}

/* Scratch for one (batch, head) slice; sized once for the whole call. */
typedef struct {
    int d, nq, nk;
    int kv_tile, kv_tiles;  /* keys a smooth-K mean and a V scale cover (nk: all), and their count */
    float *rounded;      /* max(nq, nk) * d: an input slice after dtype rounding */
    float *smoothed;     /* nk * d: K minus its channel mean */
    float *kmean;        /* kv_tiles * d */
    float *transposed;   /* nk * d: V^T, then its dequantized form */
    double *qhat, *khat, *vhat;   /* dequantized operands */
    double *corr;        /* kv_tiles * nq: smooth-K correction q . mean of key tile t at [t * nq + i] */
    double *scores, *p, *phat;    /* nk: one row */
    double *o;           /* d: one output row */
    double *tile_max;    /* nk: the running max each tile was quantized under */
    unsigned char *vbad; /* nk: key j's V^ row holds a NaN or an infinity */
    float *pf, *pdeq, *row_scale; /* nk: P segment in fp32, dequantized, s1 */
    uint8_t *codes, *scale_codes; /* P segment packed */
    int8_t *qcode, *kcode;        /* INT8 QK: Q's (nq * d) and K's (nk * d) codes */
    float *qscale, *kscale;       /* and their block scales */
    int *acc;                     /* nk: p_fold's INT8 accumulators of one row */
} workspace;

/* Keys of kv tile t: the first, and how many (the last tile may be short). */
static int kv_tile_keys(const workspace *w, int t, int *first) {
    *first = t * w->kv_tile;
    return w->nk - *first < w->kv_tile ? w->nk - *first : w->kv_tile;
}

static void workspace_free(workspace *w) {
    free(w->rounded); free(w->smoothed); free(w->kmean); free(w->transposed);
    free(w->qhat); free(w->khat); free(w->vhat); free(w->corr);
    free(w->scores); free(w->p); free(w->phat); free(w->o); free(w->tile_max); free(w->vbad);
    free(w->pf); free(w->pdeq); free(w->row_scale); free(w->codes); free(w->scale_codes);
    free(w->qcode); free(w->kcode); free(w->qscale); free(w->kscale); free(w->acc);
}

static int workspace_alloc(workspace *w, const mx_ref_shape *s, const mx_ref_config *c) {
    memset(w, 0, sizeof *w);
    w->d = s->head_dim; w->nq = s->seq_q; w->nk = s->seq_k;
    w->kv_tile = c->kv_tile > 0 && c->kv_tile < w->nk ? c->kv_tile : w->nk > 0 ? w->nk : 1;
    w->kv_tiles = (w->nk + w->kv_tile - 1) / w->kv_tile;
    size_t d = (size_t)w->d, nq = (size_t)w->nq, nk = (size_t)w->nk, tiles = (size_t)w->kv_tiles;
    size_t rows = nq > nk ? nq : nk, padded = nk + 32;
    w->rounded = malloc(rows * d * sizeof(float));
    w->smoothed = malloc(nk * d * sizeof(float));
    w->kmean = malloc(tiles * d * sizeof(float));
    w->transposed = malloc(nk * d * sizeof(float));
    w->qhat = malloc(nq * d * sizeof(double));
    w->khat = malloc(nk * d * sizeof(double));
    w->vhat = malloc(nk * d * sizeof(double));
    w->corr = malloc((nq * tiles + 1) * sizeof(double));
    w->scores = malloc(nk * sizeof(double));
    w->p = malloc(nk * sizeof(double));
    w->phat = malloc(nk * sizeof(double));
    w->o = malloc(d * sizeof(double));
    w->tile_max = malloc(nk * sizeof(double));
    w->vbad = malloc(nk + 1);
    w->pf = malloc(padded * sizeof(float));
    w->pdeq = malloc(padded * sizeof(float));
    w->row_scale = malloc(sizeof(float));
    w->codes = malloc(padded);
    w->scale_codes = malloc(padded);
    w->qcode = malloc(nq * d + 1);
    w->kcode = malloc(nk * d + 1);
    w->qscale = malloc((nq + 16) * sizeof(float));   /* per-thread groups: 8 a 16 rows, a block may be short */
    w->kscale = malloc((nk + 16) * sizeof(float));
    w->acc = malloc((nk + 1) * sizeof(int));
    return w->rounded && w->smoothed && w->kmean && w->transposed && w->qhat && w->khat &&
           w->vhat && w->corr && w->scores && w->p && w->phat && w->o && w->tile_max && w->vbad && w->pf &&
           w->pdeq && w->row_scale && w->codes && w->scale_codes &&
           w->qcode && w->kcode && w->qscale && w->kscale && w->acc;
}

static float round_input(mx_round_mode mode, float x) {
    if (mode == MX_ROUND_F16) return mx_round_f16(x);
    if (mode == MX_ROUND_BF16) return mx_round_bf16(x);
    return x;
}

static void round_slice(mx_round_mode mode, const float *x, size_t n, float *out) {
    for (size_t i = 0; i < n; i++) out[i] = round_input(mode, x[i]);
}

/* Dequantized rows x cols operand of the QK product, quantized along cols.
 * INT8 also leaves its codes and block scales in codes8 / scales8 (sized
 * rows * cols and rows + 1), which p_fold reads. */
static mxattn_status quantize_qk_operand(mx_qk_mode mode, const float *x, int rows, int cols,
                                         int int8_block, int8_t *codes8, float *scales8, double *out) {
    size_t n = (size_t)rows * (size_t)cols;
    if (mode == MX_QK_EXACT) {
        for (size_t i = 0; i < n; i++) out[i] = x[i];
        return MXATTN_OK;
    }
    mxattn_status st = MXATTN_OK;
    if (mode == MX_QK_INT8) {
        st = mx_int8_quantize_blocks(x, rows, cols, cols, int8_block, codes8, scales8);
        if (st == MXATTN_OK)
            for (size_t i = 0; i < n; i++)
                out[i] = (double)codes8[i] * scales8[(i / (size_t)cols) / (size_t)int8_block];
        return st;
    }
    mx_fp4_kind kind = mode == MX_QK_MXFP4 ? MX_FP4_MXFP4 : MX_FP4_NVFP4;
    uint8_t *codes = malloc(mx_fp4_codes_bytes(kind, rows, cols) + 1);
    uint8_t *scales = malloc(mx_fp4_scales_bytes(kind, rows, cols) + 1);
    float *deq = malloc((n ? n : 1) * sizeof(float));
    if (!codes || !scales || !deq) st = mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "pipeline reference: out of memory");
    if (st == MXATTN_OK) st = mx_fp4_quantize(kind, x, rows, cols, cols, codes, scales);
    if (st == MXATTN_OK) st = mx_fp4_dequantize(kind, codes, scales, rows, cols, deq, cols);
    if (st == MXATTN_OK)
        for (size_t i = 0; i < n; i++) out[i] = deq[i];
    free(codes); free(scales); free(deq);
    return st;
}

/* The scale group of Q row i and of key j (mx_ref_config.int8_per_thread). */
static int q_group(const mx_ref_config *c, int i) {
    return c->int8_per_thread ? mx_int8_per_thread_group(i, 0) : i / c->int8_block_q;
}
static int k_group(const mx_ref_config *c, int j) {
    return c->int8_per_thread ? mx_int8_per_thread_group(j, 1) : j / c->int8_block_k;
}

/* INT8 in per-thread groups (mx_int8_quantize_per_thread), dequantized into out. */
static mxattn_status quantize_int8_per_thread(const float *x, int rows, int cols, int keys, int8_t *codes,
                                              float *scales, double *out) {
    mxattn_status st = mx_int8_quantize_per_thread(x, rows, cols, cols, keys, codes, scales);
    for (size_t i = 0; st == MXATTN_OK && i < (size_t)rows * cols; i++)
        out[i] = (double)codes[i] * scales[mx_int8_per_thread_group((int)(i / (size_t)cols), keys)];
    return st;
}

/* V^ for one kv head.  FP4 V is quantized along the keys: V^T's rows. */
static mxattn_status prepare_v_hat(workspace *w, const mx_ref_config *c, const float *v) {
    int d = w->d, nk = w->nk;
    size_t n = (size_t)nk * (size_t)d;
    round_slice(c->input_round, v, n, w->rounded);
    const float *x = w->rounded;
    switch (c->v) {
    case MX_V_EXACT:
        for (size_t i = 0; i < n; i++) w->vhat[i] = x[i];
        return MXATTN_OK;
    case MX_V_F16:
    case MX_V_BF16:
        for (size_t i = 0; i < n; i++)
            w->vhat[i] = c->v == MX_V_F16 ? mx_round_f16(x[i]) : mx_round_bf16(x[i]);
        return MXATTN_OK;
    case MX_V_E4M3:
    case MX_V_E4M3X2: {
        int two = c->v == MX_V_E4M3X2;
        uint8_t *codes = malloc(n ? n : 1), *lo = two ? malloc(n ? n : 1) : NULL;
        float *scales = malloc((size_t)d * sizeof(float));
        mxattn_status st = !codes || !scales || (two && !lo)
            ? (mxattn_status)mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "pipeline reference: out of memory")
            : MXATTN_OK;
        /* One set of channel scales a key tile (all of the keys: one tile). */
        for (int t = 0; t < w->kv_tiles && st == MXATTN_OK; t++) {
            int j0, rows = kv_tile_keys(w, t, &j0);
            size_t at = (size_t)j0 * (size_t)d, len = (size_t)rows * (size_t)d;
            st = two ? mx_e4m3x2_quantize_per_channel(x + at, rows, d, d, codes + at, lo + at, scales)
                     : mx_e4m3_quantize_per_channel(x + at, rows, d, d, codes + at, scales);
            for (size_t i = at; st == MXATTN_OK && i < at + len; i++) {
                double code = (double)mx_e4m3_to_f32(codes[i]) + (two ? (double)mx_e4m3_to_f32(lo[i]) : 0.0);
                w->vhat[i] = code * scales[i % (size_t)d];
            }
        }
        free(codes); free(lo); free(scales);
        return st;
    }
    case MX_V_NVFP4:
    case MX_V_MXFP4: {
        for (int j = 0; j < nk; j++)
            for (int ch = 0; ch < d; ch++) w->transposed[(size_t)ch * nk + j] = x[(size_t)j * d + ch];
        double *vt = malloc(n * sizeof(double) + 1);
        if (!vt) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "pipeline reference: out of memory");
        mxattn_status st = quantize_qk_operand(c->v == MX_V_MXFP4 ? MX_QK_MXFP4 : MX_QK_NVFP4,
                                               w->transposed, d, nk, 1, NULL, NULL, vt);
        if (st == MXATTN_OK)
            for (int j = 0; j < nk; j++)
                for (int ch = 0; ch < d; ch++) w->vhat[(size_t)j * d + ch] = vt[(size_t)ch * nk + j];
        free(vt);
        return st;
    }
    }
    return mx_fail(MXATTN_ERROR_INVALID_VALUE, "pipeline reference: bad V mode %d", (int)c->v);
}

/* V^ and which of its rows are not finite (accumulate_pv). */
static mxattn_status prepare_v(workspace *w, const mx_ref_config *c, const float *v) {
    mxattn_status st = prepare_v_hat(w, c, v);
    for (int j = 0; j < w->nk && st == MXATTN_OK; j++) {
        const double *vj = w->vhat + (size_t)j * (size_t)w->d;
        int bad = 0;
        for (int ch = 0; ch < w->d; ch++) bad |= !isfinite(vj[ch]);
        w->vbad[j] = (unsigned char)bad;
    }
    return st;
}

static mxattn_status prepare_k(workspace *w, const mx_ref_config *c, const float *k) {
    int d = w->d, nk = w->nk;
    round_slice(c->input_round, k, (size_t)nk * d, w->rounded);
    const float *x = w->rounded;
    if (c->smooth_k && c->qk != MX_QK_EXACT) {
        for (int t = 0; t < w->kv_tiles; t++) {
            int j0, rows = kv_tile_keys(w, t, &j0);
            float *mean = w->kmean + (size_t)t * d;
            mx_channel_mean_sampled(x + (size_t)j0 * d, rows, d, d, c->kmean_sampled ? mx_kmean_step(nk) : 1, mean);
            mx_subtract_mean(x + (size_t)j0 * d, rows, d, d, mean, w->smoothed + (size_t)j0 * d);
        }
        x = w->smoothed;
    }
    if (c->qk == MX_QK_INT8 && c->int8_per_thread)
        return quantize_int8_per_thread(x, nk, d, 1, w->kcode, w->kscale, w->khat);
    return quantize_qk_operand(c->qk, x, nk, d, c->int8_block_k, w->kcode, w->kscale, w->khat);
}

/* Call after prepare_k: the correction needs K's mean. */
static mxattn_status prepare_q(workspace *w, const mx_ref_config *c, const float *q) {
    int d = w->d, nq = w->nq;
    round_slice(c->input_round, q, (size_t)nq * d, w->rounded);
    /* The whole-head form keeps q . mean in every score of the row (a
     * constant: the LSE's), the tiled form needs it (each tile's differs). */
    if (c->smooth_k && c->qk != MX_QK_EXACT)
        for (int t = 0; t < w->kv_tiles; t++)
            mx_smooth_k_correction(w->rounded, nq, d, d, w->kmean + (size_t)t * d, w->corr + (size_t)t * nq);
    else
        for (size_t i = 0; i < (size_t)nq * w->kv_tiles; i++) w->corr[i] = 0;
    if (c->q_prescale != 0)
        for (size_t i = 0; i < (size_t)nq * d; i++) w->rounded[i] = w->rounded[i] * c->q_prescale;
    if (c->qk == MX_QK_INT8 && c->int8_per_thread)
        return quantize_int8_per_thread(w->rounded, nq, d, 0, w->qcode, w->qscale, w->qhat);
    return quantize_qk_operand(c->qk, w->rounded, nq, d, c->int8_block_q, w->qcode, w->qscale, w->qhat);
}

/* Four partial sums: keeps the dependency chain short without reassociating
 * anything that the tolerance of a kernel test could notice. */
static double dot(const double *a, const double *b, int n) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i]; s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2]; s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++) s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

/* P^ of a segment of n probabilities (a whole row, or one key tile). */
static mxattn_status quantize_p_segment(workspace *w, mx_p_mode mode, const double *p, int n,
                                        double *out) {
    switch (mode) {
    case MX_P_EXACT: for (int j = 0; j < n; j++) out[j] = p[j]; return MXATTN_OK;
    case MX_P_F16: for (int j = 0; j < n; j++) out[j] = mx_round_f16((float)p[j]); return MXATTN_OK;
    case MX_P_BF16: for (int j = 0; j < n; j++) out[j] = mx_round_bf16((float)p[j]); return MXATTN_OK;
    case MX_P_E4M3:   /* P onto E4M3's range: [0, 1] -> [0, 448] */
        for (int j = 0; j < n; j++) out[j] = mx_round_e4m3((float)p[j] * 448.0f) / 448.0;
        return MXATTN_OK;
    default: break;
    }
    mx_fp4_kind kind = p_fp4_kind(mode);
    for (int j = 0; j < n; j++) w->pf[j] = (float)p[j];
    mxattn_status st;
    if (mode == MX_P_NVFP4_TWO_LEVEL || mode == MX_P_MXFP4_TWO_LEVEL) {
        st = mx_p_quantize_two_level(kind, w->pf, 1, n, n, w->codes, w->scale_codes, w->row_scale);
        if (st == MXATTN_OK)
            st = mx_p_dequantize_two_level(kind, w->codes, w->scale_codes, w->row_scale, 1, n, w->pdeq, n);
    } else {
        st = mx_fp4_quantize(kind, w->pf, 1, n, n, w->codes, w->scale_codes);
        if (st == MXATTN_OK) st = mx_fp4_dequantize(kind, w->codes, w->scale_codes, 1, n, w->pdeq, n);
    }
    for (int j = 0; j < n && st == MXATTN_OK; j++) out[j] = w->pdeq[j];
    return st;
}

/* O = alpha O + the P^ V^ of keys [first, first + n): a key tile's step of
 * the online form (alpha: the running max's move), or the whole row (1), for
 * row i.  A visible key whose P^ is 0 still multiplies its V^ row when that
 * holds a NaN or an infinity (0 * NaN is NaN, in exact attention and on the
 * tensor cores); a key the row does not see never does. */
static void accumulate_pv(const workspace *w, const mx_ref_shape *s, int i, const double *phat, int first,
                          int n, double alpha, double *o) {
    for (int ch = 0; ch < w->d; ch++) o[ch] *= alpha;
    for (int j = first; j < first + n; j++) {
        double pj = phat[j];
        if (pj == 0 && (!w->vbad[j] || !mx_ref_key_visible(s, i, j))) continue;
        const double *vj = w->vhat + (size_t)j * w->d;
        for (int ch = 0; ch < w->d; ch++) o[ch] += pj * vj[ch];
    }
}

/* The final softmax of a score row, 0 on masked keys; returns the row max
 * (-inf if no key is visible) and writes the sum of exponentials to *l. */
static double softmax_row(const mx_ref_shape *s, int i, const double *scores, double *p, double *l) {
    double m = -INFINITY, sum = 0;
    for (int j = 0; j < s->seq_k; j++)
        if (mx_ref_key_visible(s, i, j)) m = max_nan(m, scores[j]);
    for (int j = 0; j < s->seq_k; j++) {
        p[j] = (m != -INFINITY && mx_ref_key_visible(s, i, j)) ? exp(scores[j] - m) : 0;
        sum += p[j];
    }
    for (int j = 0; j < s->seq_k && sum > 0; j++) p[j] /= sum;
    *l = sum;
    return m;
}

/* Offline form: quantize the final normalised row once. */
static mxattn_status attend_offline(workspace *w, const mx_ref_shape *s, const mx_ref_config *c,
                                    int i, double *lse) {
    double l, m = softmax_row(s, i, w->scores, w->p, &l);
    memset(w->o, 0, (size_t)w->d * sizeof(double));
    if (m == -INFINITY) {
        memset(w->phat, 0, (size_t)w->nk * sizeof(double));
        *lse = -INFINITY;
        return MXATTN_OK;
    }
    mxattn_status st = quantize_p_segment(w, c->p, w->p, w->nk, w->phat);
    if (st != MXATTN_OK) return st;
    accumulate_pv(w, s, i, w->phat, 0, w->nk, 1.0, w->o);
    *lse = m + log(l);
    return MXATTN_OK;
}

static const double LOG2_E = 1.4426950408889634, LN_2 = 0.6931471805599453;

/* Online form: the kernel's loop over key tiles with a running max. */
static mxattn_status attend_tiled(workspace *w, const mx_ref_shape *s, const mx_ref_config *c,
                                  int i, double *lse) {
    int nk = w->nk, tile = c->p_tile;
    double m = -INFINITY, l = 0;
    memset(w->o, 0, (size_t)w->d * sizeof(double));
    for (int t0 = 0; t0 < nk; t0 += tile) {
        int n = nk - t0 < tile ? nk - t0 : tile;
        double tile_max = -INFINITY;
        for (int j = t0; j < t0 + n; j++)
            if (mx_ref_key_visible(s, i, j)) tile_max = max_nan(tile_max, w->scores[j]);
        double m_new = max_nan(m, tile_max);
        if (c->p_base_pow2 && isfinite(m_new)) m_new = ceil(m_new * LOG2_E) * LN_2;
        w->tile_max[t0 / tile] = m_new;
        if (m_new == -INFINITY) {                         /* nothing visible yet */
            for (int j = t0; j < t0 + n; j++) w->phat[j] = 0;
            continue;
        }
        double alpha = m == -INFINITY ? 0 : exp(m - m_new);
        double sum = 0;
        for (int j = t0; j < t0 + n; j++) {
            double pj = mx_ref_key_visible(s, i, j) ? exp(w->scores[j] - m_new) : 0;
            w->phat[j] = pj;          /* P~, quantized in place below */
            sum += pj;
        }
        mxattn_status st = quantize_p_segment(w, c->p, w->phat + t0, n, w->phat + t0);
        if (st != MXATTN_OK) return st;
        l = l * alpha + sum;
        accumulate_pv(w, s, i, w->phat, t0, n, alpha, w->o);
        m = m_new;
    }
    if (m == -INFINITY) { *lse = -INFINITY; return MXATTN_OK; }
    for (int ch = 0; ch < w->d; ch++) w->o[ch] /= l;
    /* Express P^ in the final normalisation so that traces compare. */
    for (int j = 0; j < nk; j++) {
        double tm = w->tile_max[j / tile];
        w->phat[j] = tm == -INFINITY ? 0 : w->phat[j] * exp(tm - m) / l;
    }
    *lse = m + log(l);
    return MXATTN_OK;
}

/* p_fold: does the kernel mask key tile [t0, t0 + tile) for row i?  Its warps
 * own 16-row groups and mask a tile when the tile's last key is past seq_k or
 * not visible from the group's first row (tile_needs_mask). */
static int kernel_masks_tile(const mx_ref_shape *s, int i, int t0, int tile) {
    int last = t0 + tile - 1;
    return last >= s->seq_k || !mx_ref_key_visible(s, i - i % 16, last);
}

/* p_fold's form of attend_tiled (mx_ref_config.p_fold says what it emulates),
 * in base 2 from the INT8 accumulators.  P~ is 448 * 2^(x - m) as the kernel
 * makes it (E4M3's range), and so is l; nat converts a base-2 score to the
 * scores' units (for the LSE). */
static const float LOG2_448 = 8.8073549220576f;
static mxattn_status attend_folded(workspace *w, const mx_ref_shape *s, const mx_ref_config *c,
                                   int i, double nat, double corr, double *lse) {
    int nk = w->nk, d = w->d, tile = c->p_tile;
    const int8_t *qc = w->qcode + (size_t)i * d;
    const float qs = w->qscale[q_group(c, i)];
    float m = -INFINITY;
    double l = 0;
    memset(w->o, 0, (size_t)d * sizeof(double));
    for (int t0 = 0; t0 < nk; t0 += tile) {
        int n = nk - t0 < tile ? nk - t0 : tile, masked = kernel_masks_tile(s, i, t0, tile);
        float tile_m = -INFINITY;
        for (int j = t0; j < t0 + n; j++) {
            int acc = 0;
            for (int ch = 0; ch < d; ch++) acc += qc[ch] * w->kcode[(size_t)j * d + ch];
            w->acc[j] = acc;
            float scale = qs * w->kscale[k_group(c, j)];
            if (mx_ref_key_visible(s, i, j)) tile_m = (float)max_nan(tile_m, (float)acc * scale);
        }
        float m_new = (float)max_nan(m, tile_m), base = m_new == -INFINITY ? 0.f : m_new;
        double alpha = exp2((double)(m - base));
        double sum = 0;
        for (int j = t0; j < t0 + n; j++) {
            float scale = qs * w->kscale[k_group(c, j)], acc = (float)w->acc[j], x;
            if (!mx_ref_key_visible(s, i, j)) {
                x = -INFINITY;
            } else if (masked) {                        /* softmax_tile: s + (log2 448 - m) */
                x = acc * scale + (LOG2_448 - base);
            } else {                                    /* softmax_acc: the folded constant */
                float cg = fmaf(12582912.f * qs, w->kscale[k_group(c, j)], base - LOG2_448);
                x = fmaf(12582912.f + acc, scale, -cg);
            }
            double p = exp2((double)x);
            w->phat[j] = mx_round_e4m3((float)p);
            sum += c->l_from_p_hat ? w->phat[j] : p;
        }
        w->tile_max[t0 / tile] = base;
        l = l * alpha + sum;
        accumulate_pv(w, s, i, w->phat, t0, n, alpha, w->o);
        m = m_new;
    }
    if (m == -INFINITY) {
        memset(w->o, 0, (size_t)d * sizeof(double));
        memset(w->phat, 0, (size_t)nk * sizeof(double));
        *lse = -INFINITY;
        return MXATTN_OK;
    }
    for (int ch = 0; ch < d; ch++) w->o[ch] /= l;
    for (int j = 0; j < nk; j++) w->phat[j] *= exp2(w->tile_max[j / tile] - (double)m) / l;
    *lse = ((double)m + log2(l) - LOG2_448) * nat + corr;
    return MXATTN_OK;
}

/* The trace of row i (flat index `row`).  The exact softmax is made here, only
 * when asked for: the tiled and folded forms never need it themselves. */
static void trace_row(const mx_ref_trace *t, const mx_ref_shape *s, const workspace *w, int i, size_t row) {
    if (!t) return;
    size_t nk = (size_t)w->nk, at = row * nk;
    double l;
    if (t->scores) memcpy(t->scores + at, w->scores, nk * sizeof(double));
    if (t->p) softmax_row(s, i, w->scores, t->p + at, &l);
    if (t->p_hat) memcpy(t->p_hat + at, w->phat, nk * sizeof(double));
}

/* All query heads that share kv head (b, kvh). */
static mxattn_status run_kv_group(workspace *w, const mx_ref_shape *s, const mx_ref_config *c,
                                  int b, int kvh, const float *q, const float *k, const float *v,
                                  double *o, double *lse, const mx_ref_trace *trace) {
    size_t d = (size_t)w->d, nq = (size_t)w->nq, nk = (size_t)w->nk;
    size_t kv_slice = ((size_t)b * s->heads_kv + (size_t)kvh) * nk * d;
    mxattn_status st = prepare_v(w, c, v + kv_slice);
    if (st == MXATTN_OK) st = prepare_k(w, c, k + kv_slice);
    int group = s->heads_q / s->heads_kv;
    double scale = mx_ref_sm_scale(s) * c->temperature;
    double unscale_q = c->q_prescale != 0 ? 1.0 / c->q_prescale : 1.0;
    /* p_fold makes its scores from the INT8 codes; the double ones are then only traced. */
    int need_scores = !c->p_fold || (trace && (trace->scores || trace->p));
    for (int g = 0; g < group && st == MXATTN_OK; g++) {
        size_t head = (size_t)b * s->heads_q + (size_t)kvh * group + (size_t)g;
        st = prepare_q(w, c, q + head * nq * d);
        for (size_t i = 0; i < nq && st == MXATTN_OK; i++) {
            const double *qi = w->qhat + i * d;
            for (size_t j = 0; j < nk && need_scores; j++)
                w->scores[j] = scale * (dot(qi, w->khat + j * d, (int)d) * unscale_q +
                                        w->corr[(j / (size_t)w->kv_tile) * nq + i]);
            double row_lse = -INFINITY;
            if (c->p_fold)
                st = attend_folded(w, s, c, (int)i, scale * unscale_q, scale * w->corr[i], &row_lse);
            else
                st = c->p_tile > 0 ? attend_tiled(w, s, c, (int)i, &row_lse)
                                   : attend_offline(w, s, c, (int)i, &row_lse);
            size_t row = head * nq + i;
            if (o) memcpy(o + row * d, w->o, d * sizeof(double));
            if (lse) lse[row] = row_lse;
            trace_row(trace, s, w, (int)i, row);
        }
    }
    return st;
}

mxattn_status mx_ref_pipeline_attention(const mx_ref_shape *s, const mx_ref_config *c,
                                        const float *q, const float *k, const float *v,
                                        double *o, double *lse, const mx_ref_trace *trace) {
    mxattn_status st = mx_ref_shape_check(s);
    if (st == MXATTN_OK) st = check_config(c);
    if (st != MXATTN_OK) return st;
    if (!q || !k || !v) return mx_fail(MXATTN_ERROR_NULL_POINTER, "pipeline reference: NULL input");
    workspace w;
    if (!workspace_alloc(&w, s, c)) {
        workspace_free(&w);
        return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "pipeline reference: out of memory");
    }
    for (int b = 0; b < s->batch && st == MXATTN_OK; b++)
        for (int kvh = 0; kvh < s->heads_kv && st == MXATTN_OK; kvh++)
            st = run_kv_group(&w, s, c, b, kvh, q, k, v, o, lse, trace);
    workspace_free(&w);
    return st;
}

void mx_ref_config_set_v_terms(mx_ref_config *c, int v_terms) {
    if (v_terms == 2 && c->v == MX_V_E4M3) c->v = MX_V_E4M3X2;
}

mxattn_status mx_ref_family_attention(const char *family, const mxattn_problem *p, int p_tile,
                                      const float *q, const float *k, const float *v,
                                      double *o, double *lse) {
    if (!p) return mx_fail(MXATTN_ERROR_NULL_POINTER, "family reference: NULL problem");
    mx_ref_config c;
    mxattn_status st = mx_ref_family_config(family ? family : p->family, p->direct_p, p->smooth_k,
                                            p->dtype, &c);
    if (st != MXATTN_OK) return st;
    mx_ref_config_set_v_terms(&c, p->v_terms);
    c.p_tile = p_tile;
    mx_ref_shape s;
    mx_ref_shape_from_problem(p, &s);
    return mx_ref_pipeline_attention(&s, &c, q, k, v, o, lse, NULL);
}
