/* Text in and out of queries: the "key=value ..." filter and JSON rows. */
#include "cache/cache_internal.h"
#include "util/err.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- filter ---------------------------------------------------------------- */

static mxattn_status parse_int(const char *name, const char *value, int min, int max, int *out) {
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (!*value || *end || errno || v < min || v > max)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "filter: %s must be an integer in [%d, %d], got '%s'",
                       name, min, max, value);
    *out = (int)v;
    return MXATTN_OK;
}

static mxattn_status copy_value(const char *name, const char *value, char *dst, size_t cap) {
    if (strlen(value) >= cap)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "filter: %s value '%.40s' is too long", name, value);
    strcpy(dst, value);
    return MXATTN_OK;
}

static mxattn_status apply_term(const char *name, const char *value, mx_tune_filter *f) {
    if (!strcmp(name, "gpu")) return copy_value(name, value, f->gpu, sizeof f->gpu);
    if (!strcmp(name, "family")) return copy_value(name, value, f->family, sizeof f->family);
    if (!strcmp(name, "dtype")) {
        if (strcmp(value, "f16") && strcmp(value, "bf16"))
            return mx_fail(MXATTN_ERROR_INVALID_VALUE, "filter: dtype must be f16 or bf16, got '%s'", value);
        return copy_value(name, value, f->dtype, sizeof f->dtype);
    }
    if (!strcmp(name, "head_dim")) return parse_int(name, value, 1, 4096, &f->head_dim);
    if (!strcmp(name, "causal")) return parse_int(name, value, 0, 2, &f->causal);
    return mx_fail(MXATTN_ERROR_INVALID_VALUE,
                   "filter: unknown key '%s' (known: gpu, family, head_dim, dtype, causal)", name);
}

mxattn_status mx_tune_filter_parse(const char *text, mx_tune_filter *f) {
    if (!f) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_tune_filter_parse: filter is NULL");
    mx_tune_filter_init(f);
    if (!text) return MXATTN_OK;
    char term[512];
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        size_t len = strcspn(p, " \t");
        if (len >= sizeof term) return mx_fail(MXATTN_ERROR_INVALID_VALUE, "filter: a term is too long");
        memcpy(term, p, len);
        term[len] = 0;
        p += len;
        char *eq = strchr(term, '=');
        if (!eq) return mx_fail(MXATTN_ERROR_INVALID_VALUE, "filter: '%s' is not key=value", term);
        *eq = 0;
        mxattn_status st = apply_term(term, eq + 1, f);
        if (st) return st;
    }
    return MXATTN_OK;
}

/* ---- JSON ------------------------------------------------------------------ */

typedef struct { char *data; size_t len, cap; int failed; } text_buffer;

static void buffer_append(text_buffer *b, const char *s, size_t n) {
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (b->len + n + 1 > cap) cap *= 2;
        char *bigger = realloc(b->data, cap);
        if (!bigger) { b->failed = 1; return; }
        b->data = bigger;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

static void buffer_printf(text_buffer *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buffer_printf(text_buffer *b, const char *fmt, ...) {
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof small) { b->failed = 1; return; }
    buffer_append(b, small, (size_t)n);
}

/* A JSON string; control characters escaped, other bytes passed through
 * (names are UTF-8 or ASCII). */
static void buffer_json_string(text_buffer *b, const char *s) {
    buffer_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') { buffer_append(b, "\\", 1); buffer_append(b, (const char *)p, 1); }
        else if (*p < 0x20) buffer_printf(b, "\\u%04x", *p);
        else buffer_append(b, (const char *)p, 1);
    }
    buffer_append(b, "\"", 1);
}

static void buffer_json_number(text_buffer *b, double v) {
    if (isfinite(v)) buffer_printf(b, "%.6g", v);
    else buffer_append(b, "null", 4);
}

static void field_string(text_buffer *b, const char *name, const char *value) {
    buffer_printf(b, ", \"%s\": ", name);
    buffer_json_string(b, value);
}

static void field_int(text_buffer *b, const char *name, long long value) {
    buffer_printf(b, ", \"%s\": %lld", name, value);
}

static void field_number(text_buffer *b, const char *name, double value) {
    buffer_printf(b, ", \"%s\": ", name);
    buffer_json_number(b, value);
}

static void row_json(text_buffer *b, const mx_tune_row *row) {
    const mx_tune_key *k = &row->key;
    const mx_tune_result *r = &row->result;
    buffer_append(b, "{\"gpu\": ", 8);
    buffer_json_string(b, k->gpu_name);
    field_int(b, "sm_count", k->sm_count);
    field_int(b, "compute_capability", k->compute_capability);
    field_int(b, "driver_version", k->driver_version);
    field_int(b, "nvrtc_version", k->nvrtc_version);
    field_string(b, "mxattn_version", k->mxattn_version);
    field_string(b, "template_hash", k->template_hash);
    field_string(b, "family", k->family);
    field_int(b, "head_dim", k->head_dim);
    field_string(b, "dtype", k->dtype);
    field_string(b, "out_dtype", k->out_dtype);
    field_int(b, "causal", k->causal);
    field_int(b, "gqa", k->gqa);
    field_string(b, "layout", k->layout);
    field_int(b, "seq_bucket", k->seq_bucket);
    field_int(b, "q_bucket", k->q_bucket);
    field_string(b, "config", r->config);
    field_number(b, "median_ms", r->median_ms);
    field_number(b, "tops", r->tops);
    field_number(b, "default_ms", r->default_ms);
    field_number(b, "speedup", r->median_ms > 0 && r->default_ms > 0 ? r->default_ms / r->median_ms : NAN);
    field_int(b, "tuned_at", (long long)r->tuned_at);
    buffer_append(b, "}", 1);
}

mxattn_status mx_tune_rows_json(const mx_tune_row *rows, int count, char **json) {
    if (!json || (count > 0 && !rows)) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_tune_rows_json: NULL argument");
    text_buffer b = {0};
    buffer_append(&b, "[", 1);
    for (int i = 0; i < count; i++) {
        buffer_append(&b, i ? ",\n " : "\n ", i ? 3 : 2);
        row_json(&b, &rows[i]);
    }
    buffer_append(&b, count ? "\n]\n" : "]\n", count ? 3 : 2);
    if (b.failed) { free(b.data); return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "cache: out of memory writing JSON"); }
    *json = b.data;
    return MXATTN_OK;
}
