/* `db import` (and merge) of a mutated database file: the input is written
 * to a file and imported, kernels included, into one database kept for the
 * whole run.  The seed is an export the library made itself (fuzz_seeds).
 * An import either succeeds or is rejected with a status and a message and
 * the target unchanged: its row counts are checked after every rejection. */
#include "fuzz_common.h"

#include <unistd.h>

#include "api/config_check.h"
#include "cache/cache.h"

static char g_dir[64], g_src[128];
static mx_cache *g_cache;

static void remove_files(void) {
    mx_cache_close(g_cache);
    g_cache = NULL;
    const char *const names[] = { "target.db", "target.db-wal", "target.db-shm", "target.db-journal",
                                  "import.mxdb", "import.mxdb-journal", "import.mxdb-wal", "import.mxdb-shm" };
    char path[160];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", g_dir, names[i]);
        unlink(path);
    }
    rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc; (void)argv;
    snprintf(g_dir, sizeof g_dir, "/tmp/mxattn-fuzz-import-XXXXXX");
    if (!mkdtemp(g_dir)) fz_fail("mkdtemp failed");
    char db[128];
    snprintf(db, sizeof db, "%s/target.db", g_dir);
    snprintf(g_src, sizeof g_src, "%s/import.mxdb", g_dir);
    if (mx_cache_open(db, &g_cache) != MXATTN_OK) fz_fail("mx_cache_open: %s", mxattn_last_error());
    atexit(remove_files);
    return 0;
}

static void counts(mx_cache_counts *c) {
    if (mx_cache_count(g_cache, c) != MXATTN_OK) fz_fail("mx_cache_count: %s", mxattn_last_error());
}

static void check(const char *call, mxattn_status st, const mx_cache_counts *before) {
    /* UNSUPPORTED: a schema version from the future; CACHE_FOREIGN: not an
     * mxattn database.  Whatever SQLite cannot read in the source is
     * INVALID_VALUE (or IO): a CACHE status would blame the target. */
    static const mxattn_status allowed[] = { MXATTN_OK, MXATTN_ERROR_INVALID_VALUE, MXATTN_ERROR_UNSUPPORTED,
                                             MXATTN_ERROR_CACHE_FOREIGN, MXATTN_ERROR_IO,
                                             MXATTN_ERROR_OUT_OF_MEMORY, MXATTN_ERROR_UNTRUSTED,
                                             MXATTN_ERROR_CACHE_CORRUPT };
    fz_expect(call, st, allowed, sizeof allowed / sizeof allowed[0]);
    if (st == MXATTN_OK) return;
    mx_cache_counts after;
    counts(&after);
    if (after.kernels != before->kernels || after.tune_results != before->tune_results ||
        after.measurements != before->measurements)
        fz_fail("%s was rejected (%s) but changed the target: %ld/%ld/%ld rows, were %ld/%ld/%ld", call,
                mxattn_last_error(), after.kernels, after.tune_results, after.measurements, before->kernels,
                before->tune_results, before->measurements);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* A fresh file each time: SQLite must not see a journal of the last one. */
    char side[160];
    snprintf(side, sizeof side, "%s-journal", g_src); unlink(side);
    snprintf(side, sizeof side, "%s-wal", g_src); unlink(side);
    snprintf(side, sizeof side, "%s-shm", g_src); unlink(side);
    FILE *f = fopen(g_src, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) fz_fail("cannot write %s", g_src);
    mx_cache_counts before;
    counts(&before);
    mx_import_report rep;
    /* As `db import --with-kernels --trust KEY` runs it: the seed's signer
     * trusted, every row through the templates' check. */
    static mx_import_options opt;
    static int opt_ready;
    if (!opt_ready) {
        mx_sign_secret key;
        fz_signer(&key);
        mx_import_options_init(&opt);
        opt.trusted[0] = key.pk;
        opt.n_trusted = 1;
        opt.row_check = mx_api_check_tune_row;
        opt.row_check_arg = fz_context();
        opt_ready = 1;
    }
    opt.with_kernels = 1;
    check("mx_cache_import", mx_cache_import(g_cache, g_src, &opt, &rep), &before);
    counts(&before);
    opt.with_kernels = 0;
    check("mx_cache_merge", mx_cache_merge(g_cache, g_src, &opt, &rep), &before);
    return 0;
}
