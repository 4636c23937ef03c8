/* mxattn db: export, import, merge, vacuum or check the database, and make
 * the key that signs exported kernels. */
#include "cli.h"
#include "cache/cache.h"
#include "cache/sign.h"
#include <string.h>

static const char USAGE[] =
    "usage: mxattn db export FILE [--with-kernels [--sign KEYFILE]] [--db PATH]\n"
    "       mxattn db import FILE [--with-kernels --trust KEY [--trust KEY ...]] [--db PATH]\n"
    "       mxattn db merge FILE [--db PATH]\n"
    "       mxattn db keygen --out KEYFILE\n"
    "       mxattn db vacuum [--db PATH]\n"
    "       mxattn db check [--db PATH]\n"
    "export writes the tuning results (and with --with-kernels the compiled kernels) to\n"
    "a standalone SQLite file for machines of the same GPU; --sign signs each kernel\n"
    "with the Ed25519 key made by keygen (KEYFILE, mode 0600; its public key is printed\n"
    "and written to KEYFILE.pub).  import takes an export's tuning results, replacing\n"
    "ours.  Compiled kernels are code: they are taken only with --with-kernels, only\n"
    "signed by a key given with --trust (64 hex digits, or a .pub file), and only when\n"
    "every blob matches the signed SHA-256.  merge takes another database's tuning\n"
    "results where they are faster than ours.  A tuning row with an impossible value\n"
    "is refused and counted; a malformed file or one untrusted kernel rejects the\n"
    "whole import and leaves the database unchanged.  check verifies the file and\n"
    "every kernel's hash and exits 1 if anything is wrong.\n";

#define MAX_TRUST MX_IMPORT_MAX_TRUSTED
typedef struct {
    const char *action, *file, *db, *sign, *out;
    const char *trust[MAX_TRUST];
    int n_trust, with_kernels;
} db_args;

static int takes_file(const char *action) {
    return !strcmp(action, "export") || !strcmp(action, "import") || !strcmp(action, "merge");
}

/* The value after option argv[*i], or NULL (then a usage error was printed into *rc). */
static const char *option_value(int argc, char **argv, int *i, int *rc) {
    if (*i + 1 >= argc) { *rc = cli_usage_error("db", "%s needs a value", argv[*i]); return NULL; }
    return argv[++*i];
}

static int known_action(const char *action) {
    return takes_file(action) || !strcmp(action, "vacuum") || !strcmp(action, "check") || !strcmp(action, "keygen");
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, db_args *a) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) { fputs(USAGE, stdout); return 0; }
        if (!strcmp(arg, "--with-kernels")) { a->with_kernels = 1; continue; }
        int rc = -1;
        const char **slot = !strcmp(arg, "--db") ? &a->db : !strcmp(arg, "--sign") ? &a->sign
                          : !strcmp(arg, "--out") ? &a->out : NULL;
        if (slot || !strcmp(arg, "--trust")) {
            const char *value = option_value(argc, argv, &i, &rc);
            if (!value) return rc;
            if (slot) *slot = value;
            else if (a->n_trust == MAX_TRUST) return cli_usage_error("db", "at most %d --trust keys", MAX_TRUST);
            else a->trust[a->n_trust++] = value;
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
    if (a->sign && (strcmp(a->action, "export") || !a->with_kernels))
        return cli_usage_error("db", "--sign applies to export --with-kernels only");
    if (a->n_trust && (strcmp(a->action, "import") || !a->with_kernels))
        return cli_usage_error("db", "--trust applies to import --with-kernels only");
    if (a->with_kernels && !strcmp(a->action, "import") && !a->n_trust)
        return cli_usage_error("db", "import --with-kernels needs --trust KEY: the public key of the signer "
                               "whose kernels may run here");
    if ((a->out != NULL) != !strcmp(a->action, "keygen"))
        return cli_usage_error("db", a->out ? "--out applies to keygen only" : "keygen needs --out KEYFILE");
    return -1;
}

static void print_import(const char *verb, const char *file, const mx_import_report *r) {
    printf("%s %s: %ld tuning results read, %ld taken, %ld kept (ours faster), %ld refused; %ld kernels read, "
           "%ld taken\n", verb, file, r->tune_rows_read, r->tune_rows_taken, r->tune_rows_kept, r->tune_rows_refused,
           r->kernels_read, r->kernels_taken);
    if (r->tune_rows_refused)
        fprintf(stderr, "mxattn db: warning: refused %ld row%s: %s%s\n", r->tune_rows_refused,
                r->tune_rows_refused == 1 ? "" : "s", r->first_refusal, r->tune_rows_refused > 1 ? " (the first)" : "");
}

static int run_keygen(const char *out) {
    char pub[65];
    mxattn_status s = mx_sign_keygen(out, pub);
    if (s) return cli_fail_status("db", s);
    printf("%s\n", pub);
    fprintf(stderr, "mxattn db: secret key in %s (keep it private), public key in %s.pub: give importers the "
            "public key for --trust\n", out, out);
    return 0;
}

static mxattn_status import_options(const db_args *a, mx_import_options *o) {
    mx_import_options_init(o);
    o->with_kernels = a->with_kernels;
    /* The templates' check (a config legal for the key's family) belongs to
     * the api layer; NULL runs the cache's own checks only. */
    o->row_check = NULL;
    for (int i = 0; i < a->n_trust; i++) {
        mxattn_status s = mx_sign_parse_public(a->trust[i], &o->trusted[i]);
        if (s) return s;
        o->n_trusted++;
    }
    return MXATTN_OK;
}

static mxattn_status run_export(mx_cache *cache, const db_args *a) {
    mx_sign_secret key;
    mxattn_status s = a->sign ? mx_sign_load_secret(a->sign, &key) : MXATTN_OK;
    if (!s) s = mx_cache_export(cache, a->file, a->with_kernels, a->sign ? &key : NULL);
    memset(&key, 0, sizeof key);
    if (!s)
        printf("exported %s to %s\n", a->with_kernels ? a->sign ? "tuning results and signed kernels"
                                                                  : "tuning results and kernels (unsigned)"
                                                    : "tuning results", a->file);
    return s;
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
    mx_import_options opt;
    if (!strcmp(a->action, "export")) {
        s = run_export(cache, a);
    } else if (!strcmp(a->action, "import")) {
        if (!(s = import_options(a, &opt)) && !(s = mx_cache_import(cache, a->file, &opt, &report)))
            print_import("imported", a->file, &report);
    } else if (!strcmp(a->action, "merge")) {
        if (!(s = import_options(a, &opt)) && !(s = mx_cache_merge(cache, a->file, &opt, &report)))
            print_import("merged", a->file, &report);
    } else if (!(s = mx_cache_vacuum(cache))) {
        printf("vacuumed %s\n", mx_cache_path(cache));
    }
    return s ? cli_fail_status("db", s) : 0;
}

int cmd_db(int argc, char **argv) {
    db_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    if (!strcmp(a.action, "keygen")) return run_keygen(a.out);
    mx_cache *cache;
    mxattn_status s = mx_cache_open(a.db, &cache);
    if (s) return cli_fail_status("db", s);
    if (mx_cache_recovered(cache)) fprintf(stderr, "mxattn db: warning: %s\n", mx_cache_recovered(cache));
    rc = run_action(cache, &a);
    mx_cache_close(cache);
    return rc;
}
