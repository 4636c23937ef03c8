/* The fp64 reference attention: the plainest correct loop, no tiling. */
#include "numerics/numerics.h"
#include "util/err.h"
#include <math.h>
#include <stdlib.h>

void mx_ref_shape_from_problem(const mxattn_problem *p, mx_ref_shape *out) {
    out->batch = p->batch;
    out->heads_q = p->heads_q;
    out->heads_kv = p->heads_kv;
    out->seq_q = p->seq_q;
    out->seq_k = p->seq_k;
    out->head_dim = p->head_dim;
    out->causal = p->causal;
    out->sm_scale = p->sm_scale;
}

mxattn_status mx_ref_shape_check(const mx_ref_shape *s) {
    if (!s) return mx_fail(MXATTN_ERROR_NULL_POINTER, "reference attention: NULL shape");
    if (s->batch < 1 || s->heads_q < 1 || s->heads_kv < 1 || s->seq_q < 1 || s->seq_k < 1 ||
        s->head_dim < 1)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE,
                       "reference attention: every dimension must be >= 1 (batch %d, heads %d/%d, "
                       "seq %d/%d, head_dim %d)", s->batch, s->heads_q, s->heads_kv, s->seq_q,
                       s->seq_k, s->head_dim);
    if (s->heads_q % s->heads_kv != 0)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE,
                       "reference attention: heads_q %d is not a multiple of heads_kv %d",
                       s->heads_q, s->heads_kv);
    if (s->causal != MXATTN_CAUSAL_NONE && s->causal != MXATTN_CAUSAL_TOP_LEFT &&
        s->causal != MXATTN_CAUSAL_BOTTOM_RIGHT)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "reference attention: bad causal mode %d", (int)s->causal);
    if (!(s->sm_scale >= 0) || isinf(s->sm_scale))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "reference attention: bad sm_scale %g", s->sm_scale);
    return MXATTN_OK;
}

double mx_ref_sm_scale(const mx_ref_shape *s) {
    return s->sm_scale > 0 ? s->sm_scale : 1.0 / sqrt((double)s->head_dim);
}

int mx_ref_key_visible(const mx_ref_shape *s, int i, int j) {
    switch (s->causal) {
    case MXATTN_CAUSAL_TOP_LEFT: return j <= i;
    case MXATTN_CAUSAL_BOTTOM_RIGHT: return (long)j <= (long)i + s->seq_k - s->seq_q;
    default: return 1;
    }
}

/* One query row against its kv head: max-subtracted softmax in fp64. */
static void attend_row(const mx_ref_shape *s, int i, const float *q, const float *k,
                       const float *v, double scale, double *scores, double *o, double *lse) {
    int d = s->head_dim, nk = s->seq_k;
    double m = -INFINITY;
    for (int j = 0; j < nk; j++) {
        if (!mx_ref_key_visible(s, i, j)) continue;
        double dot = 0;
        for (int c = 0; c < d; c++) dot += (double)q[c] * k[(size_t)j * d + c];
        scores[j] = scale * dot;
        /* A NaN score makes the max NaN (fmax would skip it), so that a row
         * whose every score is NaN comes out NaN, not as a row with no key. */
        if (scores[j] > m || isnan(scores[j])) m = isnan(m) ? m : scores[j];
    }
    for (int c = 0; c < d; c++) if (o) o[c] = 0;
    if (m == -INFINITY) {                      /* no visible key */
        if (lse) *lse = -INFINITY;
        return;
    }
    double l = 0;
    for (int j = 0; j < nk; j++)
        if (mx_ref_key_visible(s, i, j)) l += exp(scores[j] - m);
    if (o)
        for (int j = 0; j < nk; j++) {
            if (!mx_ref_key_visible(s, i, j)) continue;
            double p = exp(scores[j] - m) / l;
            for (int c = 0; c < d; c++) o[c] += p * v[(size_t)j * d + c];
        }
    if (lse) *lse = m + log(l);
}

mxattn_status mx_ref_attention(const mx_ref_shape *s, const float *q, const float *k,
                               const float *v, double *o, double *lse) {
    mxattn_status st = mx_ref_shape_check(s);
    if (st != MXATTN_OK) return st;
    if (!q || !k || !v) return mx_fail(MXATTN_ERROR_NULL_POINTER, "reference attention: NULL input");
    double *scores = malloc((size_t)s->seq_k * sizeof *scores);
    if (!scores) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "reference attention: out of memory");
    size_t d = (size_t)s->head_dim, group = (size_t)(s->heads_q / s->heads_kv);
    double scale = mx_ref_sm_scale(s);
    for (size_t b = 0; b < (size_t)s->batch; b++)
        for (size_t h = 0; h < (size_t)s->heads_q; h++) {
            size_t kvh = h / group;
            size_t qh = b * s->heads_q + h, kh = b * s->heads_kv + kvh;
            const float *kk = k + kh * s->seq_k * d, *vv = v + kh * s->seq_k * d;
            for (int i = 0; i < s->seq_q; i++) {
                size_t row = qh * s->seq_q + (size_t)i;
                attend_row(s, i, q + row * d, kk, vv, scale, scores, o ? o + row * d : NULL,
                           lse ? lse + row : NULL);
            }
        }
    free(scores);
    return MXATTN_OK;
}
