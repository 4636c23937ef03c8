/* The parameter space as the api/ files read it: the families and the
 * parameters of the templates, loaded once per process (api/catalog.c). */
#ifndef MX_API_CATALOG_H
#define MX_API_CATALOG_H
#include "mxattn.h"

/* Loads the table if it is not loaded yet; OK, or why it could not be read. */
mxattn_status mx_catalog_load(void);
/* The parameter named `name`, or NULL (also when the table cannot be read). */
const mxattn_param *mx_catalog_param(const char *name);
/* 1: `family` is one of the templates' families. */
int mx_catalog_is_family(const char *family);
/* 1: parameter `name` is read by `family` (its families list is empty or names it). */
int mx_catalog_family_reads(const char *name, const char *family);
/* "f16, int8-f16, ...": the families for messages. */
const char *mx_catalog_family_list(void);
/* Forgets the table read, so the next call reads the templates again: for
 * tests that point MXATTN_TEMPLATE_DIR elsewhere.  Not while other threads
 * use the strings. */
void mx_catalog_reset(void);
#endif
