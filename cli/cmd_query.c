/* mxattn query: list tuned configurations from the database, as a table or JSON. */
#include "cli.h"
#include "cache/cache.h"
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: mxattn query [--db PATH] [--gpu S] [--family F] [--head-dim N] [--dtype f16|bf16]\n"
    "                    [--causal 0|1|2] [--json]\n"
    "Lists the tuned configurations in the database (default $MXATTN_CACHE, else\n"
    "$XDG_CACHE_HOME/mxattn/mxattn.db, else ~/.cache/mxattn/mxattn.db).\n"
    "  --gpu S       GPU name contains S (any case)\n"
    "  --json        print a JSON array of objects instead of a table\n";

typedef struct { const char *db; int json; mx_tune_filter filter; } query_args;

static int copy_flag(const char *flag, const char *value, char *dst, size_t cap) {
    if (strlen(value) >= cap) return cli_usage_error("query", "%s value is too long", flag), 0;
    strcpy(dst, value);
    return 1;
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, query_args *a) {
    mx_tune_filter_init(&a->filter);
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        long n;
        if (!strcmp(flag, "--help") || !strcmp(flag, "-h")) { fputs(USAGE, stdout); return 0; }
        if (!strcmp(flag, "--json")) { a->json = 1; continue; }
        if (flag[0] != '-' || flag[1] != '-') return cli_usage_error("query", "unexpected argument '%s'", flag);
        if (i + 1 >= argc) return cli_usage_error("query", "%s needs a value", flag);
        const char *value = argv[++i];
        if (!strcmp(flag, "--db")) a->db = value;
        else if (!strcmp(flag, "--gpu")) { if (!copy_flag(flag, value, a->filter.gpu, sizeof a->filter.gpu)) return 2; }
        else if (!strcmp(flag, "--family")) { if (!copy_flag(flag, value, a->filter.family, sizeof a->filter.family)) return 2; }
        else if (!strcmp(flag, "--dtype")) {
            if (strcmp(value, "f16") && strcmp(value, "bf16"))
                return cli_usage_error("query", "--dtype must be f16 or bf16, got '%s'", value);
            strcpy(a->filter.dtype, value);
        } else if (!strcmp(flag, "--head-dim")) {
            if (!cli_parse_long("query", flag, value, 1, 4096, &n)) return 2;
            a->filter.head_dim = (int)n;
        } else if (!strcmp(flag, "--causal")) {
            if (!cli_parse_long("query", flag, value, 0, 2, &n)) return 2;
            a->filter.causal = (int)n;
        } else {
            return cli_usage_error("query", "unknown option '%s'", flag);
        }
    }
    return -1;
}

static void print_table(const mx_tune_row *rows, int count) {
    printf("%-24s %-12s %4s %-4s %6s %3s %6s %6s %9s %8s %7s  %s\n", "gpu", "family", "dim", "dt", "causal", "gqa",
           "bucket", "q", "ms", "TOPS", "speedup", "config");
    for (int i = 0; i < count; i++) {
        const mx_tune_key *k = &rows[i].key;
        const mx_tune_result *r = &rows[i].result;
        double speedup = r->default_ms > 0 && r->median_ms > 0 ? r->default_ms / r->median_ms : 0;
        printf("%-24.24s %-12.12s %4d %-4s %6d %3d %6d %6d %9.4f %8.1f %6.2fx  %s\n", k->gpu_name, k->family,
               k->head_dim, k->dtype, k->causal, k->gqa, k->seq_bucket, k->q_bucket, r->median_ms, r->tops, speedup,
               r->config);
    }
    if (count == 0) printf("(no tuned configurations match)\n");
}

static int open_cache(const char *path, mx_cache **cache) {
    mxattn_status s = mx_cache_open_ex(path, MX_CACHE_OPEN_EXISTING, cache); /* a missing one is not created */
    if (s) return cli_fail_status("query", s);
    if (mx_cache_recovered(*cache)) fprintf(stderr, "mxattn query: warning: %s\n", mx_cache_recovered(*cache));
    return 0;
}

int cmd_query(int argc, char **argv) {
    query_args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    mx_cache *cache;
    if ((rc = open_cache(a.db, &cache))) return rc;
    mx_tune_row *rows = NULL;
    int count = 0;
    mxattn_status s = mx_cache_query(cache, &a.filter, &rows, &count);
    char *json = NULL;
    if (!s && a.json) s = mx_tune_rows_json(rows, count, &json);
    if (!s) {
        if (json) fputs(json, stdout);
        else print_table(rows, count);
    }
    free(json);
    free(rows);
    mx_cache_close(cache);
    if (s) return cli_fail_status("query", s);
    return fflush(stdout) == 0 ? 0 : cli_fail("query", "cannot write the output");
}
