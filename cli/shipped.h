/* The tuning results installed with mxattn (<prefix>/share/mxattn/tuned). */
#ifndef MX_CLI_SHIPPED_H
#define MX_CLI_SHIPPED_H
#include "cli/cli.h"

/* Imports (or, with merge, merges) every shipped *.db into `db`, printing
 * one line per file (tuning results only: opt's row check applies); returns the exit status (1 if any file failed or none
 * was found, the others still taken). */
int cli_db_shipped(mxattn_db *db, int merge, const mxattn_db_import_options *opt);
#endif
