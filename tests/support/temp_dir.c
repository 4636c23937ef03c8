#include "temp_dir.h"
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int temp_dir_make(char *dir, size_t cap, const char *prefix) {
    int n = snprintf(dir, cap, "/tmp/%s-XXXXXX", prefix);
    if (n < 0 || (size_t)n >= cap) return -1;
    return mkdtemp(dir) ? 0 : -1;
}

int temp_dir_make_db(char *dir, size_t cap, const char *prefix, char *db, size_t dbcap, const char *db_name) {
    if (temp_dir_make(dir, cap, prefix) != 0) return -1;
    int n = snprintf(db, dbcap, "%s/%s", dir, db_name);
    return n < 0 || (size_t)n >= dbcap ? -1 : 0;
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb; (void)type; (void)ftw;
    return remove(path);
}

int temp_dir_remove(const char *dir) { return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

const char *temp_dir_path(const char *dir, const char *name) {
    static char paths[8][300];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", dir, name);
    return p;
}
