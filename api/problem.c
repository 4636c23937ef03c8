#include "api/problem.h"
#include "api/catalog.h"
#include "util/err.h"
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *mx_dtype_name(mxattn_dtype d) { return d == MXATTN_F16 ? "f16" : "bf16"; }

mxattn_status mxattn_problem_init(mxattn_problem *p, const char *family, int head_dim) {
    if (!p) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_problem_init: problem is NULL");
    memset(p, 0, sizeof *p);
    p->family = family ? family : "f16";
    p->head_dim = head_dim;
    p->batch = p->heads_q = p->heads_kv = 1;
    p->seq_q = p->seq_k = 1;
    p->dtype = p->out_dtype = MXATTN_BF16;
    p->smooth_k = 1;
    p->v_terms = 1;
    return MXATTN_OK;
}

/* Contiguous strides for a layout: BHND is [b][h][n][d], BNHD is [b][n][h][d]. */
static mxattn_strides layout_strides(mxattn_layout layout, int heads, int seq, int d) {
    mxattn_strides s;
    if (layout == MXATTN_LAYOUT_BHND) {
        s.seq = d; s.head = (int64_t)seq * d; s.batch = (int64_t)heads * seq * d;
    } else {
        s.head = d; s.seq = (int64_t)heads * d; s.batch = (int64_t)seq * heads * d;
    }
    return s;
}

static int is_zero(mxattn_strides s) { return s.batch == 0 && s.head == 0 && s.seq == 0; }

/* A tensor's strides must keep distinct (batch, head, row) slices apart: each
 * row holds head_dim contiguous elements, so a stride smaller than that along
 * a dimension with more than one entry would make rows overlap. */
static mxattn_status check_strides(const char *name, mxattn_strides s, int batch, int heads, int seq, int d) {
    if (s.batch < 0 || s.head < 0 || s.seq < 0)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s strides must be non-negative (got batch %lld, head %lld, seq %lld)",
                       name, (long long)s.batch, (long long)s.head, (long long)s.seq);
    if (s.batch > MX_MAX_STRIDE || s.head > MX_MAX_STRIDE || s.seq > MX_MAX_STRIDE)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s strides must be <= 2^40 elements (got batch %lld, head %lld, seq %lld)",
                       name, (long long)s.batch, (long long)s.head, (long long)s.seq);
    if (seq > 1 && s.seq < d)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s seq stride %lld is smaller than head_dim %d: rows would overlap",
                       name, (long long)s.seq, d);
    if (heads > 1 && s.head < d)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s head stride %lld is smaller than head_dim %d: heads would overlap",
                       name, (long long)s.head, d);
    if (batch > 1 && s.batch < d)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s batch stride %lld is smaller than head_dim %d",
                       name, (long long)s.batch, d);
    return MXATTN_OK;
}

static int largest_align(int64_t x) {
    for (int a = 8; a > 1; a /= 2) if (x % a == 0) return a;
    return 1;
}

/* v_terms=2 is int8-fp8's wgmma kernel's alone (templates/space.lua's
 * v_terms families, families/int8_fp8.lua's check), and its two terms of V^T
 * are one TMA box of 2 * head_dim <= 256 rows (families/int8_fp8_wgmma.lua):
 * mxattn_candidates refuses any other, so the problem check does too. */
static mxattn_status check_v_terms(const mxattn_problem *p) {
    if (p->v_terms != 1 && p->v_terms != 2)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "v_terms must be 1 or 2, got %d", p->v_terms);
    if (p->v_terms == 2 && !mx_catalog_family_reads("v_terms", p->family)) {
        const mxattn_param *v = mx_catalog_param("v_terms");
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "v_terms=2: only family %s reads a second V term (family %.40s)",
                       v ? v->families : "", p->family);
    }
    if (p->v_terms == 2 && p->head_dim > 128)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "v_terms=2 needs head_dim <= 128 (V^T's two terms are one TMA box of "
                       "at most 256 rows), not head_dim %d", p->head_dim);
    return MXATTN_OK;
}

static mxattn_status check_sizes(const mxattn_problem *p) {
    if (p->head_dim < 8 || p->head_dim > 256)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "head_dim %d is out of range: mxattn supports 8..256", p->head_dim);
    if (p->batch < 1) return mx_fail(MXATTN_ERROR_INVALID_VALUE, "batch must be >= 1, got %d", p->batch);
    if (p->heads_q < 1 || p->heads_kv < 1)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "heads_q and heads_kv must be >= 1, got %d and %d", p->heads_q, p->heads_kv);
    if (p->heads_q % p->heads_kv != 0)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "heads_q (%d) must be a multiple of heads_kv (%d)", p->heads_q, p->heads_kv);
    if (p->seq_q < 1 || p->seq_k < 1)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "seq_q and seq_k must be >= 1 (got %d and %d): an empty sequence has no attention to compute",
                       p->seq_q, p->seq_k);
    if (p->seq_q > MX_MAX_SEQ || p->seq_k > MX_MAX_SEQ)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "seq_q and seq_k must be <= %d (got %d and %d)", MX_MAX_SEQ,
                       p->seq_q, p->seq_k);
    if (p->heads_q > 65535 || p->batch > 65535)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "heads_q and batch must be <= 65535 (grid limits)");
    /* The templates' gqa parameter takes 1..256 (space.lua). */
    if (p->heads_q / p->heads_kv > 256)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "heads_q / heads_kv must be <= 256 query heads per KV head, got %d",
                       p->heads_q / p->heads_kv);
    if ((unsigned)p->causal > MXATTN_CAUSAL_BOTTOM_RIGHT)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "causal must be NONE, TOP_LEFT or BOTTOM_RIGHT, got %d", (int)p->causal);
    if ((unsigned)p->dtype > MXATTN_BF16 || (unsigned)p->out_dtype > MXATTN_BF16)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "dtype and out_dtype must be MXATTN_F16 or MXATTN_BF16");
    if ((unsigned)p->layout > MXATTN_LAYOUT_BNHD)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "layout must be MXATTN_LAYOUT_BHND or MXATTN_LAYOUT_BNHD");
    /* 0 means 1/sqrt(head_dim).  The kernels take exp2 of scores times
     * sm_scale * log2(e), which must be a finite float too (FLT_MAX's is inf). */
    if (!(p->sm_scale >= 0) || !isfinite(p->sm_scale) || !((double)p->sm_scale * M_LOG2E <= FLT_MAX))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "sm_scale must be finite and > 0, with sm_scale * log2(e) a finite "
                       "float (0 means 1/sqrt(head_dim)), got %g", (double)p->sm_scale);
    const struct { const char *name; int v; } flags[3] = {
        {"return_lse", p->return_lse}, {"direct_p", p->direct_p}, {"smooth_k", p->smooth_k}};
    for (int i = 0; i < 3; i++)
        if (flags[i].v != 0 && flags[i].v != 1)
            return mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s must be 0 or 1, got %d", flags[i].name, flags[i].v);
    return check_v_terms(p);
}

/* The elements a tensor spans from its first element, and that in bytes,
 * computed in checked steps: with every size and stride bounded the result
 * fits int64 by far, but the bound is what this proves, not what it assumes. */
static mxattn_status tensor_extent(const char *name, mxattn_strides s, int batch, int heads, int seq, int d,
                                   int64_t *bytes) {
    int64_t a, b, c, sum;
    int bad = __builtin_mul_overflow((int64_t)(batch - 1), s.batch, &a) ||
              __builtin_mul_overflow((int64_t)(heads - 1), s.head, &b) ||
              __builtin_mul_overflow((int64_t)(seq - 1), s.seq, &c) ||
              __builtin_add_overflow(a, b, &sum) || __builtin_add_overflow(sum, c, &sum) ||
              __builtin_add_overflow(sum, (int64_t)d, &sum) || __builtin_mul_overflow(sum, (int64_t)2, &sum);
    if (bad)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s spans more than 2^63 bytes with these strides", name);
    *bytes = sum;
    return MXATTN_OK;
}

mxattn_status mx_problem_resolve(const mxattn_problem *in, mx_problem *out) {
    if (!in || !out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "problem is NULL");
    if (!in->family) return mx_fail(MXATTN_ERROR_NULL_POINTER, "problem.family is NULL");
    mxattn_status st = mx_catalog_load();
    if (st != MXATTN_OK) return st;
    if (!mx_catalog_is_family(in->family))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "unknown family '%.40s': one of %s", in->family,
                       mx_catalog_family_list());
    st = check_sizes(in);
    if (st != MXATTN_OK) return st;
    memset(out, 0, sizeof *out);
    out->p = *in;
    snprintf(out->family, sizeof out->family, "%s", in->family);
    out->p.family = out->family;
    mxattn_problem *p = &out->p;
    if (p->sm_scale == 0) p->sm_scale = 1.0f / sqrtf((float)p->head_dim);
    struct { const char *name; mxattn_strides *s; int heads, seq; } t[4] = {
        {"q", &p->q_strides, p->heads_q, p->seq_q}, {"k", &p->k_strides, p->heads_kv, p->seq_k},
        {"v", &p->v_strides, p->heads_kv, p->seq_k}, {"o", &p->o_strides, p->heads_q, p->seq_q}};
    int align = largest_align(p->head_dim);
    for (int i = 0; i < 4; i++) {
        if (is_zero(*t[i].s)) *t[i].s = layout_strides(p->layout, t[i].heads, t[i].seq, p->head_dim);
        st = check_strides(t[i].name, *t[i].s, p->batch, t[i].heads, t[i].seq, p->head_dim);
        if (st == MXATTN_OK) st = tensor_extent(t[i].name, *t[i].s, p->batch, t[i].heads, t[i].seq, p->head_dim, &out->bytes[i]);
        if (st != MXATTN_OK) return st;
        int a = largest_align(t[i].s->seq);
        if (t[i].heads > 1 && largest_align(t[i].s->head) < a) a = largest_align(t[i].s->head);
        if (p->batch > 1 && largest_align(t[i].s->batch) < a) a = largest_align(t[i].s->batch);
        if (a < align) align = a;
    }
    out->align = align;
    return MXATTN_OK;
}

mxattn_status mxattn_problem_check(const mxattn_problem *p) {
    mx_problem pr;
    return mx_problem_resolve(p, &pr);
}

void mx_problem_shape_params(const mx_problem *pr, const char *arch, char *out, size_t cap) {
    const mxattn_problem *p = &pr->p;
    snprintf(out, cap,
             "family=%s arch=%s head_dim=%d dtype=%s out_dtype=%s causal=%d lse=%d align=%d "
             "p_scale=%s smooth_k=%d v_terms=%d gqa=%d layout=%s",
             pr->family, arch, p->head_dim, mx_dtype_name(p->dtype), mx_dtype_name(p->out_dtype),
             p->causal != MXATTN_CAUSAL_NONE, p->return_lse ? 1 : 0, pr->align,
             p->direct_p ? "direct" : "two-level", p->smooth_k ? 1 : 0, p->v_terms, p->heads_q / p->heads_kv,
             p->layout == MXATTN_LAYOUT_BHND ? "bhnd" : "bnhd");
}

void mx_problem_sizes(const mx_problem *pr, char *out, size_t cap) {
    const mxattn_problem *p = &pr->p;
    snprintf(out, cap, "batch=%d heads_q=%d heads_kv=%d seq_q=%d seq_k=%d head_dim=%d",
             p->batch, p->heads_q, p->heads_kv, p->seq_q, p->seq_k, p->head_dim);
}

/* Byte range [lo, hi) a tensor spans, from its extent (mx_problem.bytes).
 * 0 when the range would pass the end of the address space: no such tensor. */
static int extent(const void *base, int64_t bytes, uintptr_t *lo, uintptr_t *hi) {
    *lo = (uintptr_t)base;
    return !__builtin_add_overflow(*lo, (uintptr_t)bytes, hi);
}

mxattn_status mx_problem_check_pointers(const mx_problem *pr, const void *q, const void *k,
                                        const void *v, const void *o, const float *lse) {
    const mxattn_problem *p = &pr->p;
    const void *ptrs[4] = {q, k, v, o};
    const char *names[4] = {"q", "k", "v", "o"};
    for (int i = 0; i < 4; i++) {
        if (!ptrs[i]) return mx_fail(MXATTN_ERROR_NULL_POINTER, "%s is NULL", names[i]);
        if ((uintptr_t)ptrs[i] % (uintptr_t)(2 * pr->align) != 0)
            return mx_fail(MXATTN_ERROR_MISALIGNED,
                           "%s (%p) is not %d-byte aligned, which this plan's vector loads need "
                           "(head_dim and strides allow it; pass aligned tensors or strides with a smaller alignment)",
                           names[i], ptrs[i], 2 * pr->align);
    }
    if (p->return_lse && !lse)
        return mx_fail(MXATTN_ERROR_NULL_POINTER, "lse is NULL but the problem asks for return_lse");
    if (lse && (uintptr_t)lse % 4 != 0) return mx_fail(MXATTN_ERROR_MISALIGNED, "lse is not 4-byte aligned");
    uintptr_t olo, ohi;
    if (!extent(o, pr->bytes[3], &olo, &ohi))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "o (%p) plus its %lld bytes passes the end of the address space",
                       o, (long long)pr->bytes[3]);
    for (int i = 0; i < 3; i++) {
        uintptr_t lo, hi;
        if (!extent(ptrs[i], pr->bytes[i], &lo, &hi))
            return mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s (%p) plus its %lld bytes passes the end of the address space",
                           names[i], ptrs[i], (long long)pr->bytes[i]);
        if (lo < ohi && olo < hi)
            return mx_fail(MXATTN_ERROR_INVALID_VALUE,
                           "o overlaps %s: attention reads every key while writing outputs, so the output must not alias an input",
                           names[i]);
    }
    return MXATTN_OK;
}
