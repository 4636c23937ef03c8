/* mxattn db: export, import, merge, vacuum or check the database. */
#include "cli.h"
#include "cache/cache.h"
#include <string.h>

static const char USAGE[] =
    "usage: mxattn db export FILE [--with-kernels] [--db PATH]\n"
    "       mxattn db import FILE [--with-kernels] [--db PATH]\n"
    "       mxattn db merge FILE [--db PATH]\n"
    "       mxattn db vacuum [--db PATH]\n"
    "       mxattn db check [--db PATH]\n"
    "export writes the tuning results (and with --with-kernels the compiled kernels) to\n"
    "a standalone SQLite file for machines of the same GPU.  import takes an export's\n"
    "tuning results, replacing ours; compiled kernels are code, so they are taken only\n"
    "with --with-kernels and only when every blob matches its SHA-256.  merge takes\n"
    "another database's tuning results where they are faster than ours.  A malformed\n"
    "file is rejected and the database left unchanged.  check verifies the file and\n"
    "every kernel's hash and exits 1 if anything is wrong.\n";

typedef struct { const char *action, *file, *db; int with_kernels; } db_args;

static int takes_file(const char *action) {
    return !strcmp(action, "export") || !strcmp(action, "import") || !strcmp(action, "merge");
}

static int known_action(const char *action) {
    return takes_file(action) || !strcmp(action, "vacuum") || !strcmp(action, "check");
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, db_args *a) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) { fputs(USAGE, stdout); return 0; }
        if (!strcmp(arg, "--with-kernels")) { a->with_kernels = 1; continue; }
        if (!strcmp(arg, "--db")) {
            if (i + 1 >= argc) return cli_usage_error("db", "--db needs a value");
            a->db = argv[++i];
            continue;
        }
        if (arg[0] == '-' && arg[1]) return cli_usage_error("db", "unknown option '%s'", arg);
        if (!a->action) a->action = arg;
        else if (!a->file) a->file = arg;
        else return cli_usage_error("db", "unexpected argument '%s'", arg);
    }
    if (!a->action) return cli_usage_error("db", "which action? export, import, merge, vacuum or check");
    if (!known_action(a->action)) return cli_usage_error("db", "unknown action '%s'", a->action);
    if (takes_file(a->action) && !a->file) return cli_usage_error("db", "%s needs a FILE", a->action);
    if (!takes_file(a->action) && a->file) return cli_usage_error("db", "%s takes no FILE", a->action);
    if (a->with_kernels && strcmp(a->action, "export") && strcmp(a->action, "import"))
        return cli_usage_error("db", "--with-kernels applies to export and import only");
    return -1;
}

static void print_import(const char *verb, const char *file, const mx_import_report *r) {
    printf("%s %s: %ld tuning results read, %ld taken, %ld kept (ours faster); %ld kernels read, %ld taken\n",
           verb, file, r->tune_rows_read, r->tune_rows_taken, r->tune_rows_kept, r->kernels_read, r->kernels_taken);
}

static int run_check(mx_cache *cache) {
    mx_cache_check_report r;
    mxattn_status s = mx_cache_check(cache, &r);
    if (s) return cli_fail_status("db", s);
    printf("database:     %s\n", mx_cache_path(cache));
    printf("integrity:    %s\n", r.integrity_message);
    printf("kernels:      %ld checked, %ld with a bad hash%s%s\n", r.kernels_checked, r.kernels_bad,
           r.kernels_bad ? ", first " : "", r.kernels_bad ? r.first_bad_kernel : "");
    printf("tuning rows:  %ld\nmeasurements: %ld\n", r.counts.tune_results, r.counts.measurements);
    if (!r.integrity_ok || r.kernels_bad)
        return cli_fail("db", "check found problems (bad kernels are removed when next read)");
    printf("ok\n");
    return 0;
}

static int run_action(mx_cache *cache, const db_args *a) {
    mx_import_report report;
    mxattn_status s = MXATTN_OK;
    if (!strcmp(a->action, "check")) return run_check(cache);
    if (!strcmp(a->action, "export")) {
        if (!(s = mx_cache_export(cache, a->file, a->with_kernels)))
            printf("exported %s to %s\n", a->with_kernels ? "tuning results and kernels" : "tuning results", a->file);
    } else if (!strcmp(a->action, "import")) {
        if (!(s = mx_cache_import(cache, a->file, a->with_kernels, &report))) print_import("imported", a->file, &report);
    } else if (!strcmp(a->action, "merge")) {
        if (!(s = mx_cache_merge(cache, a->file, &report))) print_import("merged", a->file, &report);
    } else if (!(s = mx_cache_vacuum(cache))) {
        printf("vacuumed %s\n", mx_cache_path(cache));
    }
    return s ? cli_fail_status("db", s) : 0;
}

int cmd_db(int argc, char **argv) {
    db_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    mx_cache *cache;
    /* check and export only read it: a missing database is an error, never created. */
    unsigned flags = !strcmp(a.action, "check") || !strcmp(a.action, "export") ? MX_CACHE_OPEN_EXISTING : 0;
    mxattn_status s = mx_cache_open_ex(a.db, flags, &cache);
    if (s) return cli_fail_status("db", s);
    if (mx_cache_recovered(cache)) fprintf(stderr, "mxattn db: warning: %s\n", mx_cache_recovered(cache));
    rc = run_action(cache, &a);
    mx_cache_close(cache);
    return rc;
}
