/* mxattn query: list tuned configurations from the database, as a table or JSON. */
#include "cli.h"
#include "space.h"
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: mxattn query [--db PATH] [--gpu S] [--family F] [--head-dim N] [--dtype f16|bf16]\n"
    "                    [--causal none|top-left|bottom-right] [--json]\n"
    "Lists the tuned configurations in the database (default $MXATTN_CACHE, else\n"
    "$XDG_CACHE_HOME/mxattn/mxattn.db, else ~/.cache/mxattn/mxattn.db).\n"
    "  --gpu S       GPU name contains S (any case)\n"
    "  --family F    one kernel family (mxattn params lists them)\n"
    "  --causal M    the mask (the old 0|1|2 are none, top-left, bottom-right)\n"
    "  --json        print a JSON array of objects instead of a table\n"
    "Columns: bucket = the key-length bucket (the next power of two of seq_k), q = the\n"
    "query-length bucket (1: decoding); ms = the tuned kernel's median time and TOPS its\n"
    "throughput at the problem tuned; speedup = the heuristic default's time over the\n"
    "tuned kernel's, both measured on the same GPU in the same tuning run.\n";

typedef struct { const char *db; int json; mxattn_db_filter filter; } query_args;

/* The filter's fields hold at most this much (mxattn_tuned_row's gpu and family). */
static int check_length(const char *flag, const char *value, size_t cap) {
    if (strlen(value) >= cap) return cli_usage_error("query", "%s value is too long", flag), 0;
    return 1;
}

enum { OPT_DB = 1, OPT_GPU, OPT_FAMILY, OPT_DTYPE, OPT_HEAD_DIM, OPT_CAUSAL, OPT_JSON };
static const cli_option options[] = {
    {"db", OPT_DB, CLI_VALUE}, {"gpu", OPT_GPU, CLI_VALUE}, {"family", OPT_FAMILY, CLI_VALUE},
    {"dtype", OPT_DTYPE, CLI_VALUE}, {"head-dim", OPT_HEAD_DIM, CLI_VALUE}, {"causal", OPT_CAUSAL, CLI_VALUE},
    {"json", OPT_JSON, CLI_SWITCH}, {NULL, 0, 0},
};

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, query_args *a) {
    mxattn_db_filter_init(&a->filter);
    cli_parser ps;
    cli_parser_init(&ps, "query", argc, argv, options, -1);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        const char *flag = ps.flag, *value = ps.value;
        long n;
        mxattn_dtype dtype;
        mxattn_causal causal[3];
        int nc;
        switch (id) {
        case CLI_HELP: fputs(USAGE, stdout); return 0;
        case CLI_ERROR: return 2;
        case CLI_ARG: return cli_usage_error("query", "unexpected argument '%s'", value);
        case OPT_JSON: a->json = 1; break;
        case OPT_DB: a->db = value; break;
        case OPT_GPU:
            if (!check_length(flag, value, sizeof ((mxattn_tuned_row *)0)->gpu)) return 2;
            a->filter.gpu = value;
            break;
        case OPT_FAMILY:
            if (cli_space_load("query") || !cli_space_check_list("query", flag, "family", value)) return 2;
            if (strchr(value, ',')) return cli_usage_error("query", "%s takes one family here", flag);
            if (!check_length(flag, value, sizeof ((mxattn_tuned_row *)0)->family)) return 2;
            a->filter.family = value;
            break;
        case OPT_DTYPE:
            if (!cli_parse_dtype("query", flag, value, &dtype)) return 2;
            a->filter.dtype = value;
            break;
        case OPT_HEAD_DIM:
            if (!cli_parse_long("query", flag, value, 1, 4096, &n)) return 2;
            a->filter.head_dim = (int)n;
            break;
        default: /* OPT_CAUSAL */
            if (!cli_parse_causal("query", flag, value, 0, causal, &nc)) return 2;
            a->filter.causal = (int)causal[0];
            break;
        }
    }
    return -1;
}

static void print_table(const mxattn_tuned_row *rows, int count) {
    printf("%-24s %-12s %4s %-4s %6s %3s %6s %6s %9s %8s %7s  %s\n", "gpu", "family", "dim", "dt", "causal", "gqa",
           "bucket", "q", "ms", "TOPS", "speedup", "config");
    for (int i = 0; i < count; i++) {
        const mxattn_tuned_row *r = &rows[i];
        double speedup = r->default_ms > 0 && r->median_ms > 0 ? r->default_ms / r->median_ms : 0;
        printf("%-24.24s %-12.12s %4d %-4s %6d %3d %6d %6d %9.4f %8.1f %6.2fx  %s\n", r->gpu, r->family,
               r->head_dim, r->dtype, r->causal, r->gqa, r->seq_bucket, r->q_bucket, r->median_ms, r->tops, speedup,
               r->config);
    }
    if (count == 0) printf("(no tuned configurations match)\n");
    else printf("(causal: 0 none, 1 top-left, 2 bottom-right; speedup: the heuristic default's time over the tuned\n"
                " kernel's on the same GPU)\n");
}

int cmd_query(int argc, char **argv) {
    query_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    mxattn_db *db;
    mxattn_status s = mxattn_db_open(a.db, 1, &db);   /* a missing one is not created */
    if (s) return cli_fail_status("query", s);
    if (*mxattn_db_recovered(db)) fprintf(stderr, "mxattn query: warning: %s\n", mxattn_db_recovered(db));
    mxattn_tuned_row *rows = NULL;
    int count = 0;
    char *json = NULL;
    s = mxattn_db_query(db, &a.filter, &rows, &count, a.json ? &json : NULL);
    if (!s) {
        if (json) fputs(json, stdout);
        else print_table(rows, count);
    }
    mxattn_free(json);
    mxattn_free(rows);
    mxattn_db_close(db);
    return s ? cli_fail_status("query", s) : 0;
}
