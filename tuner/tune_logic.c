#include "tuner/tune_logic.h"
#include "numerics/numerics.h"
#include "util/err.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pow2_bucket(int n, int lo, int hi) {
    if (n <= lo) return lo;
    if (n >= hi) return hi;
    int bucket = lo;
    while (bucket < n) bucket *= 2;
    return bucket;
}

int mx_seq_bucket(int seq_k) { return pow2_bucket(seq_k, MX_SEQ_BUCKET_MIN, MX_SEQ_BUCKET_MAX); }

int mx_q_bucket(int seq_q) { return pow2_bucket(seq_q, MX_Q_BUCKET_MIN, MX_SEQ_BUCKET_MAX); }

int mx_tune_split_candidates(char *text, const char **out, int cap, int max) {
    int n = 0, limit = max > 0 && max < cap ? max : cap;
    for (char *line = text; line && *line && n < limit;) {
        char *end = strchr(line, '\n');
        if (end) *end = 0;
        while (*line == ' ' || *line == '\t' || *line == '\r') line++;
        size_t len = strlen(line);
        while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\r')) line[--len] = 0;
        if (len > 0) out[n++] = line;
        line = end ? end + 1 : NULL;
    }
    return n;
}

void mx_resource_limits_of(const mx_device *dev, mx_resource_limits *out) {
    out->smem_per_block_optin = dev->smem_per_block_optin;
    out->smem_per_sm = dev->smem_per_sm;
    out->regs_per_sm = dev->regs_per_sm;
    out->max_threads_per_sm = dev->max_threads_per_sm;
    out->max_threads_per_block = 1024;
}

int mx_tune_blocks_per_sm(const mx_kernel_resources *k, const mx_resource_limits *lim) {
    if (k->threads <= 0 || k->threads > lim->max_threads_per_block) return 0;
    if (k->smem_bytes > lim->smem_per_block_optin || k->registers > 255) return 0;
    int warps = (k->threads + 31) / 32;
    int regs_per_warp = ((k->registers > 0 ? k->registers : 1) * 32 + 255) / 256 * 256;
    int by_regs = lim->regs_per_sm / (regs_per_warp * warps);
    int by_threads = lim->max_threads_per_sm / k->threads;
    /* The driver reserves 1 KB of shared memory per block. */
    int by_smem = k->smem_bytes > 0 ? lim->smem_per_sm / (k->smem_bytes + 1024) : by_threads;
    int blocks = by_regs < by_threads ? by_regs : by_threads;
    return by_smem < blocks ? by_smem : blocks;
}

const char *mx_tune_prune(const mx_kernel_resources *k, const mx_resource_limits *lim,
                          char *why, size_t why_len) {
    /* A few dozen bytes of spill often sit outside the key loop (prologue,
     * epilogue) and cost nothing measurable, while the tile shape they buy
     * can win; heavier spilling is local-memory traffic in the hot loop. */
    if (k->spill_bytes > MX_TUNE_SPILL_ALLOWANCE) {
        snprintf(why, why_len, "spills %d bytes to local memory (%d registers)", k->spill_bytes,
                 k->registers);
        return MX_MEASURE_OUT_OF_RESOURCES;
    }
    if (k->smem_bytes > lim->smem_per_block_optin) {
        snprintf(why, why_len, "needs %d bytes of shared memory per block, the GPU allows %d",
                 k->smem_bytes, lim->smem_per_block_optin);
        return MX_MEASURE_OUT_OF_RESOURCES;
    }
    if (mx_tune_blocks_per_sm(k, lim) < 1) {
        snprintf(why, why_len, "%d threads x %d registers with %d bytes of shared memory do not fit on an SM",
                 k->threads, k->registers, k->smem_bytes);
        return MX_MEASURE_OUT_OF_RESOURCES;
    }
    if (why_len) why[0] = 0;
    return NULL;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static double percentile(const float *sorted, int n, double q) {
    double pos = q * (n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
}

void mx_tune_stats(float *ms, int n, mx_timing_stats *out) {
    qsort(ms, (size_t)n, sizeof *ms, cmp_float);
    out->median = percentile(ms, n, 0.5);
    out->p10 = percentile(ms, n, 0.1);
    out->p90 = percentile(ms, n, 0.9);
    out->spread = out->median > 0 ? (out->p90 - out->p10) / out->median : 0;
}

void mx_tune_tolerance_of(const char *family, int direct_p, mx_tune_tolerance *out) {
    *out = (mx_tune_tolerance){MX_TUNE_ATOL, MX_TUNE_RTOL, MX_TUNE_REL_L1};
    mx_ref_config c;
    if (!family || mx_ref_family_config(family, direct_p, 1, MXATTN_BF16, &c) != MXATTN_OK) {
        mx_clear_error();
        return;
    }
    switch (c.p) {
    case MX_P_E4M3: *out = (mx_tune_tolerance){0.1, 0.1, 1e-2}; break;
    case MX_P_NVFP4_DIRECT:
    case MX_P_NVFP4_TWO_LEVEL: *out = (mx_tune_tolerance){0.1, 0.1, 3e-2}; break;
    case MX_P_MXFP4_DIRECT:
    case MX_P_MXFP4_TWO_LEVEL: *out = (mx_tune_tolerance){0.3, 0.3, 0.15}; break;
    default: break;
    }
}

void mx_tune_compare(const float *ref, const float *got, size_t n, const mx_tune_tolerance *tol,
                     mx_output_diff *d) {
    double sum_diff = 0, sum_ref = 0;
    memset(d, 0, sizeof *d);
    d->max_excess = -INFINITY;
    d->first_bad = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        double r = ref[i], g = got[i];
        if (!isfinite(r)) continue;          /* nothing to hold the candidate to */
        if (!isfinite(g)) {
            d->nonfinite++;
            if (d->first_bad == (size_t)-1) d->first_bad = i;
            continue;
        }
        double diff = fabs(g - r), excess = diff - (tol->atol + tol->rtol * fabs(r));
        if (diff > d->max_abs) d->max_abs = diff;
        if (excess > d->max_excess) d->max_excess = excess;
        if (excess > 0 && d->first_bad == (size_t)-1) d->first_bad = i;
        sum_diff += diff;
        sum_ref += fabs(r);
    }
    d->rel_l1 = sum_ref > 0 ? sum_diff / sum_ref : (sum_diff > 0 ? INFINITY : 0);
    d->ok = d->nonfinite == 0 && d->max_excess <= 0 && d->rel_l1 <= tol->rel_l1;
}

/* 1 when a should be preferred over b among exactly equal medians. */
static int better_tie_break(const mx_measurement *a, const mx_measurement *b) {
    if (a->spread != b->spread) return a->spread < b->spread;
    return strcmp(a->config, b->config) < 0;
}

int mx_tune_choose_winner(const mx_measurement *m, int n, const char *default_config) {
    int best = -1, dflt = -1;
    for (int i = 0; i < n; i++) {
        if (strcmp(m[i].status, MX_MEASURE_OK) != 0 || !(m[i].median_ms > 0)) continue;
        if (default_config && !strcmp(m[i].config, default_config)) dflt = i;
        if (best < 0 || m[i].median_ms < m[best].median_ms ||
            (m[i].median_ms == m[best].median_ms && better_tie_break(&m[i], &m[best])))
            best = i;
    }
    if (dflt >= 0 && m[dflt].median_ms <= m[best].median_ms * (1 + MX_TUNE_TIE_FRACTION)) return dflt;
    return best;
}

double mx_tune_flops(const mx_tune_sizes *s) {
    double f = 4.0 * s->batch * s->heads_q * (double)s->seq_q * s->seq_k * s->head_dim;
    return s->causal ? f / 2 : f;
}

double mx_tune_tops(const mx_tune_sizes *s, double ms) {
    return ms > 0 ? mx_tune_flops(s) / (ms * 1e-3) / 1e12 : 0;
}

int mx_tune_input_sets(size_t set_bytes, size_t l2_bytes, int max_sets) {
    if (set_bytes == 0) return 1;
    size_t want = 2 * l2_bytes / set_bytes + 1;
    if (want > (size_t)max_sets) want = (size_t)max_sets;
    return want < 1 ? 1 : (int)want;
}

double mx_tune_eta(double elapsed_s, int done, int total) {
    if (done <= 0 || total <= done) return 0;
    return elapsed_s / done * (total - done);
}

void mx_tune_sizes_text(const mx_tune_sizes *s, char *out, size_t cap) {
    snprintf(out, cap, "batch=%d heads_q=%d heads_kv=%d seq_q=%d seq_k=%d head_dim=%d", s->batch, s->heads_q,
             s->heads_kv, s->seq_q, s->seq_k, s->head_dim);
}
