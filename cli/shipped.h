/* The tuning results installed with mxattn (<prefix>/share/mxattn/tuned). */
#ifndef MX_CLI_SHIPPED_H
#define MX_CLI_SHIPPED_H
#include "cli/cli.h"
#include "cache/cache.h"

/* Imports (or, with merge, merges) every shipped *.db into `cache`, printing
 * one line per file (tuning results only: opt's row check applies); returns the exit status (1 if any file failed or none
 * was found, the others still taken). */
int cli_db_shipped(mx_cache *cache, int merge, const mx_import_options *opt);
#endif
