/* Whole files into memory: the template modules a template directory holds
 * (gen/) and anything else small enough to read at once. */
#ifndef MX_FILE_H
#define MX_FILE_H
#include <stddef.h>

/* Reads all of `path` into a malloc'd buffer with a NUL after its last byte
 * (so text can be used as a string); *len (unless NULL) gets the byte count.
 * NULL when the file cannot be opened, sized or read, or memory is short.
 * No message is set: the caller knows what the file was for. */
char *mx_read_file(const char *path, size_t *len);
#endif
