/* Scratch directories for the tests that write databases and files. */
#ifndef MXATTN_TESTS_TEMP_DIR_H
#define MXATTN_TESTS_TEMP_DIR_H

#include <stddef.h>

/* Creates a fresh directory "/tmp/<prefix>-XXXXXX" and writes its path to
 * dir (cap bytes).  Returns 0, or -1 when the path does not fit or mkdtemp fails. */
int temp_dir_make(char *dir, size_t cap, const char *prefix);
/* temp_dir_make, then the path "<dir>/<db_name>" in db (dbcap bytes): the
 * cache tests' scratch directory and their database in it.  0, or -1. */
int temp_dir_make_db(char *dir, size_t cap, const char *prefix, char *db, size_t dbcap, const char *db_name);
/* Removes dir and everything below it; returns nftw's result. */
int temp_dir_remove(const char *dir);
/* "dir/name" in one of eight buffers used in turn, so that a call can take
 * several paths at once; the path is cut at 299 bytes. */
const char *temp_dir_path(const char *dir, const char *name);

#endif
