/* `mxattn db import --shipped`: the tuning results installed with mxattn.
 *
 * cmake --install puts them (every .db file) in <prefix>/share/mxattn/tuned,
 * beside <prefix>/bin/mxattn, so they are found from where the running
 * program lies (/proc/self/exe): any prefix works, a moved one too, with no
 * path compiled in. */
#include "cli/shipped.h"
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_db(const struct dirent *e) {
    size_t n = strlen(e->d_name);
    return e->d_name[0] != '.' && n > 3 && !strcmp(e->d_name + n - 3, ".db");
}

static int shipped_dir(char *dir, size_t cap) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return cli_fail("db", "cannot find the running program (/proc/self/exe): %s", strerror(errno));
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash) *slash = 0;
    if (snprintf(dir, cap, "%s/../share/mxattn/tuned", exe) >= (int)cap)
        return cli_fail("db", "the program's path '%s' is too long", exe);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return cli_fail("db", "no shipped tuning results: %s is not a directory (they come with "
                        "`cmake --install`; in a build tree, name data/tuned/FILE instead)", dir);
    return 0;
}

int cli_db_shipped(mxattn_db *db, int merge, const mxattn_db_import_options *opt) {
    char dir[PATH_MAX];
    int rc = shipped_dir(dir, sizeof dir);
    if (rc) return rc;
    struct dirent **names;
    int count = scandir(dir, &names, is_db, alphasort);
    if (count < 0) return cli_fail("db", "cannot list %s: %s", dir, strerror(errno));
    if (count == 0) rc = cli_fail("db", "no *.db files in %s", dir);
    for (int i = 0; i < count; i++) {
        char file[PATH_MAX + 256];
        mxattn_db_import_report r;
        snprintf(file, sizeof file, "%s/%s", dir, names[i]->d_name);
        mxattn_status s = merge ? mxattn_db_merge(db, file, opt, &r) : mxattn_db_import(db, file, opt, &r);
        if (s) rc = cli_fail_status("db", s);  /* the other files are still taken */
        else
            printf("%s %s: %ld tuning results read, %ld taken, %ld kept (ours faster), %ld refused; "
                   "%ld measurements read, %ld taken, %ld refused%s%s\n",
                   merge ? "merged" : "imported", file, r.tune_rows_read, r.tune_rows_taken, r.tune_rows_kept,
                   r.tune_rows_refused, r.measurements_read, r.measurements_taken, r.measurements_refused,
                   r.first_refusal[0] ? ": " : "", r.first_refusal);
        free(names[i]);
    }
    free(names);
    return rc;
}
