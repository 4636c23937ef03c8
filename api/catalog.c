/* The families and kernel parameters, read from the templates once per
 * process (mxattn_families, mxattn_params): the one table of
 * templates/space.lua, so that C keeps no list of its own.
 *
 * Read with a generator of its own rather than a context's: a problem is
 * checked (mxattn_problem_check) before any context exists.  Only a
 * successful read is kept: one that failed (a broken MXATTN_TEMPLATE_DIR)
 * is tried again by the next call, as mxattn_create tries again. */
#include "api/catalog.h"
#include "gen/gen.h"
#include "util/err.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FAMILIES 32

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;
static mx_gen_param *records;
static mxattn_param *params;
static int n_params;
static char family_text[512];              /* the family parameter's legal values, '|' made NUL */
static const char *families[MAX_FAMILIES + 1];
static int n_families;
static char family_list[600];

static mxattn_status load_locked(void) {
    mx_gen *g = NULL;
    mx_gen_param *rec = NULL;
    int n = 0;
    mxattn_status st = mx_gen_open(&g);
    if (st == MXATTN_OK) st = mx_gen_params(g, &rec, &n);
    mx_gen_close(g);
    if (st != MXATTN_OK) return st;
    mxattn_param *pub = calloc((size_t)n, sizeof *pub);
    if (!pub) {
        free(rec);
        return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    const mx_gen_param *family = NULL;
    for (int i = 0; i < n; i++) {
        const mx_gen_param *r = &rec[i];
        pub[i] = (mxattn_param){r->name, r->role, r->legal, r->default_value, r->families, r->help,
                                r->is_bool, r->is_range, r->min, r->max};
        if (!strcmp(r->name, "family")) family = r;
    }
    if (!family || family->is_range || strlen(family->legal) >= sizeof family_text) {
        free(pub);
        free(rec);
        return mx_fail(MXATTN_ERROR_TEMPLATE, "the templates' parameter table has no list of families");
    }
    snprintf(family_text, sizeof family_text, "%s", family->legal);
    n_families = 0;
    family_list[0] = 0;
    for (char *s = family_text; s && n_families < MAX_FAMILIES;) {
        char *bar = strchr(s, '|');
        if (bar) *bar = 0;
        families[n_families++] = s;
        size_t used = strlen(family_list);
        snprintf(family_list + used, sizeof family_list - used, "%s%s", used ? ", " : "", s);
        s = bar ? bar + 1 : NULL;
    }
    families[n_families] = NULL;
    records = rec;
    params = pub;
    n_params = n;
    loaded = 1;
    return MXATTN_OK;
}

mxattn_status mx_catalog_load(void) {
    pthread_mutex_lock(&lock);
    mxattn_status st = loaded ? MXATTN_OK : load_locked();
    pthread_mutex_unlock(&lock);
    return st;
}

mxattn_status mxattn_families(const char *const **names, int *count) {
    if (!names || !count) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_families: names or count is NULL");
    *names = NULL;
    *count = 0;
    mxattn_status st = mx_catalog_load();
    if (st != MXATTN_OK) return st;
    *names = families;
    *count = n_families;
    return MXATTN_OK;
}

mxattn_status mxattn_params(const mxattn_param **out, int *count) {
    if (!out || !count) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_params: params or count is NULL");
    *out = NULL;
    *count = 0;
    mxattn_status st = mx_catalog_load();
    if (st != MXATTN_OK) return st;
    *out = params;
    *count = n_params;
    return MXATTN_OK;
}

const mxattn_param *mx_catalog_param(const char *name) {
    if (mx_catalog_load() != MXATTN_OK) return NULL;
    for (int i = 0; i < n_params; i++)
        if (!strcmp(params[i].name, name)) return &params[i];
    return NULL;
}

int mx_catalog_is_family(const char *family) {
    if (mx_catalog_load() != MXATTN_OK) return 0;
    for (int i = 0; i < n_families; i++)
        if (!strcmp(families[i], family)) return 1;
    return 0;
}

int mx_catalog_family_reads(const char *name, const char *family) {
    const mxattn_param *p = mx_catalog_param(name);
    if (!p) return 0;
    if (!*p->families) return 1;
    size_t n = strlen(family);
    for (const char *s = p->families; *s;) {
        size_t len = strcspn(s, " ");
        if (len == n && !strncmp(s, family, n)) return 1;
        s += len;
        while (*s == ' ') s++;
    }
    return 0;
}

const char *mx_catalog_family_list(void) {
    return mx_catalog_load() == MXATTN_OK ? family_list : "";
}

void mx_catalog_reset(void) {
    pthread_mutex_lock(&lock);
    free(params);
    free(records);
    params = NULL;
    records = NULL;
    n_params = n_families = 0;
    families[0] = NULL;
    loaded = 0;
    pthread_mutex_unlock(&lock);
}
