/* mxattn db: export, import, merge, vacuum or check the database, and make
 * the key that signs exported kernels. */
#include "cli.h"
#include "cli/shipped.h"
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char USAGE[] =
    "usage: mxattn db export FILE [--with-kernels [--sign KEYFILE]] [--force] [--db PATH]\n"
    "       mxattn db import FILE|--shipped [--with-kernels --trust KEY [--trust KEY ...]] [--db PATH]\n"
    "       mxattn db merge FILE|--shipped [--db PATH]\n"
    "       mxattn db keygen --out KEYFILE\n"
    "       mxattn db vacuum [--db PATH]\n"
    "       mxattn db check [--db PATH]\n"
    "every action takes --json: its report as one JSON object on stdout.\n"
    "export writes the tuning results (and with --with-kernels the compiled kernels) to\n"
    "a standalone SQLite file for machines of the same GPU; --sign signs each kernel\n"
    "with the Ed25519 key made by keygen (KEYFILE, mode 0600; its public key is printed\n"
    "and written to KEYFILE.pub).  import takes an export's tuning results, replacing\n"
    "ours.  Compiled kernels are code: they are taken only with --with-kernels, only\n"
    "signed by a key given with --trust (64 hex digits, or a .pub file), and only when\n"
    "every blob matches the signed SHA-256.  merge takes another database's tuning\n"
    "results where they are faster than ours.  A tuning row with an impossible value\n"
    "or a configuration its problem cannot take is refused and counted; a malformed\n"
    "file or one untrusted kernel rejects the whole import and leaves the database\n"
    "unchanged.  check verifies the file and every kernel's hash and exits 1 if\n"
    "anything is wrong.  export refuses to replace an existing FILE unless --force; an\n"
    "export that is interrupted leaves no file behind.  --shipped takes the tuning\n"
    "results installed with mxattn (<prefix>/share/mxattn/tuned/*.db) for FILE.\n";

typedef struct {
    const char *action, *file, *db, *sign, *out;
    const char *trust[MXATTN_DB_MAX_TRUSTED];
    int n_trust, with_kernels, force, json, shipped;
} db_args;

static int takes_file(const char *action) {
    return !strcmp(action, "export") || !strcmp(action, "import") || !strcmp(action, "merge");
}

static int known_action(const char *action) {
    return takes_file(action) || !strcmp(action, "vacuum") || !strcmp(action, "check") || !strcmp(action, "keygen");
}

enum { OPT_WITH_KERNELS = 1, OPT_DB, OPT_FORCE, OPT_JSON, OPT_SHIPPED, OPT_SIGN, OPT_TRUST, OPT_OUT };
static const cli_option options[] = {
    {"with-kernels", OPT_WITH_KERNELS, CLI_SWITCH}, {"db", OPT_DB, CLI_VALUE},
    {"force", OPT_FORCE, CLI_SWITCH}, {"json", OPT_JSON, CLI_SWITCH},
    {"shipped", OPT_SHIPPED, CLI_SWITCH}, {"sign", OPT_SIGN, CLI_VALUE}, {"trust", OPT_TRUST, CLI_VALUE},
    {"out", OPT_OUT, CLI_VALUE}, {NULL, 0, 0},
};

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, db_args *a) {
    cli_parser ps;
    cli_parser_init(&ps, "db", argc, argv, options, -1);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        const char *arg = ps.value;
        switch (id) {
        case CLI_HELP: fputs(USAGE, stdout); return 0;
        case CLI_ERROR: return 2;
        case OPT_WITH_KERNELS: a->with_kernels = 1; break;
        case OPT_DB: a->db = arg; break;
        case OPT_FORCE: a->force = 1; break;
        case OPT_JSON: a->json = 1; break;
        case OPT_SHIPPED: a->shipped = 1; break;
        case OPT_SIGN: a->sign = arg; break;
        case OPT_OUT: a->out = arg; break;
        case OPT_TRUST:
            if (a->n_trust == MXATTN_DB_MAX_TRUSTED)
                return cli_usage_error("db", "at most %d --trust keys", MXATTN_DB_MAX_TRUSTED);
            a->trust[a->n_trust++] = arg;
            break;
        default: /* CLI_ARG */
            if (!a->action) a->action = arg;
            else if (!a->file) a->file = arg;
            else return cli_usage_error("db", "unexpected argument '%s'", arg);
        }
    }
    if (!a->action) return cli_usage_error("db", "which action? export, import, merge, vacuum or check");
    if (!known_action(a->action)) return cli_usage_error("db", "unknown action '%s'", a->action);
    if (a->shipped && strcmp(a->action, "import") && strcmp(a->action, "merge"))
        return cli_usage_error("db", "--shipped applies to import and merge only");
    if (a->shipped && a->file) return cli_usage_error("db", "give a FILE or --shipped, not both");
    if (takes_file(a->action) && !a->file && !a->shipped) return cli_usage_error("db", "%s needs a FILE", a->action);
    if (!takes_file(a->action) && a->file) return cli_usage_error("db", "%s takes no FILE", a->action);
    if (a->with_kernels && strcmp(a->action, "export") && strcmp(a->action, "import"))
        return cli_usage_error("db", "--with-kernels applies to export and import only");
    if (a->force && strcmp(a->action, "export")) return cli_usage_error("db", "--force applies to export only");
    if (a->sign && (strcmp(a->action, "export") || !a->with_kernels))
        return cli_usage_error("db", "--sign applies to export --with-kernels only");
    if (a->n_trust && (strcmp(a->action, "import") || !a->with_kernels))
        return cli_usage_error("db", "--trust applies to import --with-kernels only");
    if (a->with_kernels && !strcmp(a->action, "import") && !a->n_trust)
        return cli_usage_error("db", "import --with-kernels needs --trust KEY: the public key of the signer "
                               "whose kernels may run here");
    if (a->with_kernels && a->shipped) return cli_usage_error("db", "--shipped brings tuning results only");
    if ((a->out != NULL) != !strcmp(a->action, "keygen"))
        return cli_usage_error("db", a->out ? "--out applies to keygen only" : "keygen needs --out KEYFILE");
    return -1;
}

static void print_import(const char *verb, const char *file, const mxattn_db_import_report *r, int json) {
    long refused = r->tune_rows_refused + r->measurements_refused;
    if (json) {
        printf("{\"action\": \"%s\", \"file\": ", verb);
        cli_json_string(stdout, file);
        printf(", \"tune_rows_read\": %ld, \"tune_rows_taken\": %ld, \"tune_rows_kept\": %ld, "
               "\"tune_rows_refused\": %ld, \"first_refusal\": ", r->tune_rows_read, r->tune_rows_taken,
               r->tune_rows_kept, r->tune_rows_refused);
        if (refused) cli_json_string(stdout, r->first_refusal);
        else printf("null");
        printf(", \"kernels_read\": %ld, \"kernels_taken\": %ld, \"measurements_read\": %ld, "
               "\"measurements_taken\": %ld, \"measurements_refused\": %ld}\n", r->kernels_read, r->kernels_taken,
               r->measurements_read, r->measurements_taken, r->measurements_refused);
    } else {
        printf("%s %s: %ld tuning results read, %ld taken, %ld kept (ours faster), %ld refused; %ld kernels read, "
               "%ld taken; %ld measurements read, %ld taken, %ld refused\n", verb, file, r->tune_rows_read,
               r->tune_rows_taken, r->tune_rows_kept, r->tune_rows_refused, r->kernels_read, r->kernels_taken,
               r->measurements_read, r->measurements_taken, r->measurements_refused);
    }
    if (refused)
        fprintf(stderr, "mxattn db: warning: refused %ld row%s: %s%s\n", refused, refused == 1 ? "" : "s",
                r->first_refusal, refused > 1 ? " (the first)" : "");
}

static int run_keygen(const char *out) {
    char pub[65];
    mxattn_status s = mxattn_db_keygen(out, pub);
    if (s) return cli_fail_status("db", s);
    printf("%s\n", pub);
    fprintf(stderr, "mxattn db: secret key in %s (keep it private), public key in %s.pub: give importers the "
            "public key for --trust\n", out, out);
    return 0;
}

static void import_options(const db_args *a, mxattn_db_import_options *o) {
    mxattn_db_import_options_init(o);
    o->with_kernels = a->with_kernels;
    o->trusted = a->trust;
    o->n_trusted = a->n_trust;
}

static void print_check_json(mxattn_db *db, const mxattn_db_check_report *r) {
    printf("{\"action\": \"check\", \"database\": ");
    cli_json_string(stdout, mxattn_db_path(db));
    printf(", \"integrity_ok\": %s, \"integrity\": ", r->integrity_ok ? "true" : "false");
    cli_json_string(stdout, r->integrity_message);
    printf(", \"kernels_checked\": %ld, \"kernels_bad\": %ld, \"first_bad_kernel\": ", r->kernels_checked,
           r->kernels_bad);
    if (r->kernels_bad) cli_json_string(stdout, r->first_bad_kernel);
    else printf("null");
    printf(", \"tune_rows\": %ld, \"measurements\": %ld, \"ok\": %s}\n", r->tune_rows,
           r->measurements, r->integrity_ok && !r->kernels_bad ? "true" : "false");
}

static int run_check(mxattn_db *db, int json) {
    mxattn_db_check_report r;
    mxattn_status s = mxattn_db_check(db, &r);
    if (s) return cli_fail_status("db", s);
    if (json) {
        print_check_json(db, &r);
        return r.integrity_ok && !r.kernels_bad ? 0 : cli_fail("db", "check found problems (bad kernels are removed when next read)");
    }
    printf("database:     %s\n", mxattn_db_path(db));
    printf("integrity:    %s\n", r.integrity_message);
    printf("kernels:      %ld checked, %ld with a bad hash%s%s\n", r.kernels_checked, r.kernels_bad,
           r.kernels_bad ? ", first " : "", r.kernels_bad ? r.first_bad_kernel : "");
    printf("tuning rows:  %ld\nmeasurements: %ld\n", r.tune_rows, r.measurements);
    if (!r.integrity_ok || r.kernels_bad)
        return cli_fail("db", "check found problems (bad kernels are removed when next read)");
    printf("ok\n");
    return 0;
}

/* ---- export: no file replaced unasked, nothing left behind ----------------
 * mxattn_db_export writes DEST.tmp-PID (and SQLite its -journal) and renames it
 * into place.  A signal between the two would leave them: the handlers below
 * remove them (unlink is async-signal-safe) and die of the signal as before.
 * A kill -9 cannot be caught, so the next export of the same DEST removes the
 * temporaries of processes that no longer exist. */
static char export_tmp[PATH_MAX + 32], export_journal[PATH_MAX + 48];
static const int export_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_EXPORT_SIGNALS (int)(sizeof export_signals / sizeof export_signals[0])
static struct sigaction export_old[N_EXPORT_SIGNALS];

static void export_on_signal(int sig) {
    unlink(export_tmp);
    unlink(export_journal);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Removes DEST.tmp-PID and DEST.tmp-PID-journal of PIDs that are gone. */
static void remove_stale_temporaries(const char *dest) {
    char dir[PATH_MAX];
    const char *slash = strrchr(dest, '/');
    const char *base = slash ? slash + 1 : dest;
    if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash - dest) + (slash == dest), dest);
    else snprintf(dir, sizeof dir, ".");
    DIR *d = opendir(dir);
    if (!d) return;
    size_t blen = strlen(base);
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, base, blen) || strncmp(e->d_name + blen, ".tmp-", 5)) continue;
        char *end;
        errno = 0;
        long pid = strtol(e->d_name + blen + 5, &end, 10);
        if (errno || pid <= 0 || end == e->d_name + blen + 5 || (*end && strcmp(end, "-journal"))) continue;
        if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char path[PATH_MAX + 300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) == 0) fprintf(stderr, "mxattn db: removed %s, left by an export that was killed\n", path);
    }
    closedir(d);
}

static int export_begin(const db_args *a) {
    struct stat sb;
    if (!a->force && stat(a->file, &sb) == 0)
        return cli_fail("db", "'%s' exists: export does not replace a file unless --force", a->file);
    remove_stale_temporaries(a->file);
    snprintf(export_tmp, sizeof export_tmp, "%s.tmp-%ld", a->file, (long)getpid());
    snprintf(export_journal, sizeof export_journal, "%s-journal", export_tmp);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = export_on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < N_EXPORT_SIGNALS; i++) {
        sigaction(export_signals[i], NULL, &export_old[i]);
        /* A signal the caller ignores (nohup) stays ignored. */
        if (export_old[i].sa_handler != SIG_IGN) sigaction(export_signals[i], &sa, NULL);
    }
    return 0;
}

static void export_end(void) {
    for (int i = 0; i < N_EXPORT_SIGNALS; i++) sigaction(export_signals[i], &export_old[i], NULL);
}

static int run_action(mxattn_db *db, const db_args *a) {
    mxattn_db_import_report report;
    mxattn_status s = MXATTN_OK;
    if (!strcmp(a->action, "check")) return run_check(db, a->json);
    mxattn_db_import_options opt;
    import_options(a, &opt);
    if (a->shipped) return cli_db_shipped(db, !strcmp(a->action, "merge"), &opt);
    if (!strcmp(a->action, "export")) {
        int rc = export_begin(a);
        if (rc) return rc;
        s = mxattn_db_export(db, a->file, a->with_kernels, a->sign);
        export_end();
        if (!s && a->json) {
            printf("{\"action\": \"export\", \"file\": ");
            cli_json_string(stdout, a->file);
            printf(", \"with_kernels\": %s, \"signed\": %s}\n", a->with_kernels ? "true" : "false",
                   a->sign ? "true" : "false");
        } else if (!s) {
            printf("exported %s to %s\n", a->with_kernels ? a->sign ? "tuning results and signed kernels"
                                                                      : "tuning results and kernels (unsigned)"
                                                        : "tuning results", a->file);
        }
    } else if (!strcmp(a->action, "import")) {
        if (!(s = mxattn_db_import(db, a->file, &opt, &report))) print_import("imported", a->file, &report, a->json);
    } else if (!strcmp(a->action, "merge")) {
        if (!(s = mxattn_db_merge(db, a->file, &opt, &report))) print_import("merged", a->file, &report, a->json);
    } else if (!(s = mxattn_db_vacuum(db))) {
        if (a->json) {
            printf("{\"action\": \"vacuum\", \"database\": ");
            cli_json_string(stdout, mxattn_db_path(db));
            printf("}\n");
        } else {
            printf("vacuumed %s\n", mxattn_db_path(db));
        }
    }
    return s ? cli_fail_status("db", s) : 0;
}

int cmd_db(int argc, char **argv) {
    db_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    if (!strcmp(a.action, "keygen")) return run_keygen(a.out);
    mxattn_db *db;
    /* check and export only read it: a missing database is an error, never created. */
    int must_exist = !strcmp(a.action, "check") || !strcmp(a.action, "export");
    mxattn_status s = mxattn_db_open(a.db, must_exist, &db);
    if (s) return cli_fail_status("db", s);
    if (*mxattn_db_recovered(db)) fprintf(stderr, "mxattn db: warning: %s\n", mxattn_db_recovered(db));
    rc = run_action(db, &a);
    mxattn_db_close(db);
    return rc;
}
