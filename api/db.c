/* The public calls of a database's upkeep (mxattn db, mxattn query): a
 * database opened apart from any context, over cache/'s transfer, check and
 * query, with every imported row's configuration checked against the
 * templates (api/config_check.c) by a context that opens no database. */
#include "api/config_check.h"
#include "cache/cache.h"
#include "cache/sign.h"
#include "util/err.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(MXATTN_DB_MAX_TRUSTED == MX_IMPORT_MAX_TRUSTED, "the public and the cache's trusted-key limits agree");

struct mxattn_db {
    mx_cache *cache;
    mxattn_ctx *row_check;     /* the templates, for imported rows; made on first need */
};

mxattn_status mxattn_db_open(const char *path, int must_exist, mxattn_db **out) {
    if (!out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_db_open: out is NULL");
    *out = NULL;
    mxattn_db *db = calloc(1, sizeof *db);
    if (!db) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory");
    mxattn_status st = mx_cache_open_ex(path, must_exist ? MX_CACHE_OPEN_EXISTING : 0, &db->cache);
    if (st != MXATTN_OK) {
        free(db);
        return st;
    }
    *out = db;
    return MXATTN_OK;
}

void mxattn_db_close(mxattn_db *db) {
    if (!db) return;
    mx_cache_close(db->cache);
    mxattn_destroy(db->row_check);
    free(db);
}

const char *mxattn_db_path(const mxattn_db *db) { return db ? mx_cache_path(db->cache) : ""; }

const char *mxattn_db_recovered(const mxattn_db *db) {
    const char *r = db ? mx_cache_recovered(db->cache) : NULL;
    return r ? r : "";
}

mxattn_status mxattn_db_import_options_init(mxattn_db_import_options *o) {
    if (!o) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_db_import_options_init: options is NULL");
    memset(o, 0, sizeof *o);
    return MXATTN_OK;
}

static mxattn_status import_options(mxattn_db *db, const mxattn_db_import_options *in, mx_import_options *o) {
    mx_import_options_init(o);
    if (!db->row_check) {
        mxattn_options mo;
        mxattn_options_init(&mo);
        mo.no_cache = 1;
        mo.tune_policy = "off";
        mxattn_status st = mxattn_create(&db->row_check, &mo);
        if (st != MXATTN_OK) return st;
    }
    o->row_check = mx_api_check_tune_row;
    o->row_check_arg = db->row_check;
    if (!in) return MXATTN_OK;
    if (in->n_trusted < 0 || in->n_trusted > MX_IMPORT_MAX_TRUSTED || (in->n_trusted && !in->trusted))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "at most %d trusted keys, got %d", MX_IMPORT_MAX_TRUSTED,
                       in->n_trusted);
    o->with_kernels = in->with_kernels;
    for (int i = 0; i < in->n_trusted; i++) {
        mxattn_status st = mx_sign_parse_public(in->trusted[i], &o->trusted[i]);
        if (st != MXATTN_OK) return st;
        o->n_trusted++;
    }
    return MXATTN_OK;
}

static mxattn_status transfer(const char *what, mxattn_db *db, const char *file, const mxattn_db_import_options *opts,
                              mxattn_db_import_report *report, int merge) {
    if (!db || !file) return mx_fail(MXATTN_ERROR_NULL_POINTER, "%s: db and file must not be NULL", what);
    if (report) memset(report, 0, sizeof *report);
    mx_import_options o;
    mx_import_report r;
    memset(&r, 0, sizeof r);
    mxattn_status st = import_options(db, opts, &o);
    if (st != MXATTN_OK) return st;
    st = merge ? mx_cache_merge(db->cache, file, &o, &r) : mx_cache_import(db->cache, file, &o, &r);
    if (report) *report = r;
    return st;
}

mxattn_status mxattn_db_import(mxattn_db *db, const char *file, const mxattn_db_import_options *opts,
                               mxattn_db_import_report *report) {
    return transfer("mxattn_db_import", db, file, opts, report, 0);
}

mxattn_status mxattn_db_merge(mxattn_db *db, const char *file, const mxattn_db_import_options *opts,
                              mxattn_db_import_report *report) {
    return transfer("mxattn_db_merge", db, file, opts, report, 1);
}

mxattn_status mxattn_db_export(mxattn_db *db, const char *file, int with_kernels, const char *sign_key_file) {
    if (!db || !file) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_db_export: db and file must not be NULL");
    if (sign_key_file && !with_kernels)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "mxattn_db_export: a signing key signs kernels: with_kernels = 1");
    mx_sign_secret key;
    memset(&key, 0, sizeof key);
    mxattn_status st = sign_key_file ? mx_sign_load_secret(sign_key_file, &key) : MXATTN_OK;
    if (st == MXATTN_OK) st = mx_cache_export(db->cache, file, with_kernels, sign_key_file ? &key : NULL);
    memset(&key, 0, sizeof key);   /* the secret does not outlive the call */
    return st;
}

mxattn_status mxattn_db_vacuum(mxattn_db *db) {
    if (!db) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_db_vacuum: db is NULL");
    return mx_cache_vacuum(db->cache);
}

mxattn_status mxattn_db_check(mxattn_db *db, mxattn_db_check_report *report) {
    if (!db || !report) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_db_check: NULL argument");
    memset(report, 0, sizeof *report);
    mx_cache_check_report r;
    mxattn_status st = mx_cache_check(db->cache, &r);
    if (st != MXATTN_OK) return st;
    report->integrity_ok = r.integrity_ok;
    snprintf(report->integrity_message, sizeof report->integrity_message, "%s", r.integrity_message);
    report->kernels_checked = r.kernels_checked;
    report->kernels_bad = r.kernels_bad;
    snprintf(report->first_bad_kernel, sizeof report->first_bad_kernel, "%s", r.first_bad_kernel);
    report->kernels = r.counts.kernels;
    report->tune_rows = r.counts.tune_results;
    report->measurements = r.counts.measurements;
    return MXATTN_OK;
}

mxattn_status mxattn_db_keygen(const char *secret_path, char pub_hex[65]) {
    if (!secret_path || !pub_hex) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_db_keygen: NULL argument");
    return mx_sign_keygen(secret_path, pub_hex);
}

mxattn_status mxattn_db_filter_init(mxattn_db_filter *f) {
    if (!f) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_db_filter_init: filter is NULL");
    memset(f, 0, sizeof *f);
    f->head_dim = -1;
    f->causal = -1;
    return MXATTN_OK;
}

/* A filter string into the cache's field: it must fit, never cut (a cut
 * name would match other rows than the caller named). */
static mxattn_status filter_text(const char *name, const char *in, char *out, size_t cap) {
    out[0] = 0;
    if (!in) return MXATTN_OK;
    if (strlen(in) >= cap) return mx_fail(MXATTN_ERROR_INVALID_VALUE, "filter %s is too long (at most %zu characters)",
                                          name, cap - 1);
    memcpy(out, in, strlen(in) + 1);
    return MXATTN_OK;
}

mxattn_status mxattn_db_query(mxattn_db *db, const mxattn_db_filter *filter, mxattn_tuned_row **rows,
                              int *count, char **json) {
    if (!db || !rows || !count) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_db_query: NULL argument");
    *rows = NULL;
    *count = 0;
    if (json) *json = NULL;
    mx_tune_filter f;
    mx_tune_filter_init(&f);
    mxattn_status st = MXATTN_OK;
    mx_tune_row *found = NULL;
    int n = 0;
    if (filter) {
        MX_TRY(filter_text("gpu", filter->gpu, f.gpu, sizeof f.gpu));
        MX_TRY(filter_text("family", filter->family, f.family, sizeof f.family));
        MX_TRY(filter_text("dtype", filter->dtype, f.dtype, sizeof f.dtype));
        f.head_dim = filter->head_dim > 0 ? filter->head_dim : f.head_dim;
        f.causal = filter->causal >= 0 ? filter->causal : f.causal;
    }
    MX_TRY(mx_cache_query(db->cache, &f, &found, &n));
    if (json) MX_TRY(mx_tune_rows_json(found, n, json));
    if (n > 0) {
        *rows = calloc((size_t)n, sizeof **rows);
        if (!*rows) MX_TRY(mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory"));
    }
    for (int i = 0; i < n; i++) {
        const mx_tune_key *k = &found[i].key;
        const mx_tune_result *r = &found[i].result;
        mxattn_tuned_row *o = &(*rows)[i];
        *o = (mxattn_tuned_row){.head_dim = k->head_dim, .causal = k->causal, .gqa = k->gqa,
                                .seq_bucket = k->seq_bucket, .q_bucket = k->q_bucket,
                                .median_ms = r->median_ms, .tops = r->tops, .default_ms = r->default_ms};
        snprintf(o->gpu, sizeof o->gpu, "%s", k->gpu_name);
        snprintf(o->family, sizeof o->family, "%s", k->family);
        snprintf(o->dtype, sizeof o->dtype, "%s", k->dtype);
        snprintf(o->config, sizeof o->config, "%s", r->config);
    }
    *count = n;
    free(found);
    return MXATTN_OK;
fail:
    free(found);
    if (json) { free(*json); *json = NULL; }
    return st;
}
