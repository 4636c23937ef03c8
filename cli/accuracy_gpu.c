/* `mxattn accuracy --gpu`: prints the GPU table mxattn_accuracy_gpu makes
 * (each kernel family on the GPU, its output error against fp64 beside the
 * CPU oracle's on the same inputs; the reasons are given there). */
#include "accuracy_gpu.h"
#include "cli.h"
#include "space.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CMD "accuracy"
#define MESSAGE_LEN 256

/* The run's report and what it was asked. */
typedef struct {
    const accuracy_gpu_options *opt;
    const mxattn_accuracy_gpu_report *r;
} accuracy_run;

int accuracy_gpu_check_families(const char *cmd, const char *list) {
    /* Every family of the library has a row: the templates' list is the check. */
    return !cli_space_load(cmd) && cli_space_check_list(cmd, "--family", "family", list);
}

/* 1 if the driver reports a GPU; else writes why into `why`. */
static int gpu_present(char *why, size_t len) {
    int count = 0;
    mxattn_status st = mxattn_device_count(&count);
    if (st != MXATTN_OK) {
        snprintf(why, len, "%s", mxattn_last_error());
        why[strcspn(why, "\r\n")] = 0;
        return 0;
    }
    if (count < 1) snprintf(why, len, "the driver reports no device");
    return count >= 1;
}

/* ---- output --------------------------------------------------------------- */
/* A short word for the status column; the message goes beside it. */
static const char *status_word(const mxattn_accuracy_row *r) {
    if (r->status != MXATTN_OK) return mxattn_status_string(r->status);
    if (r->unwritten > 0) return "unwritten";
    if (!isfinite(r->gpu_cosine)) return "non-finite";
    return "ok";
}

static void print_human_row(FILE *f, const mxattn_accuracy_gpu_report *rep, const mxattn_accuracy_row *r) {
    const mxattn_accuracy_plan *p = &rep->plans[r->plan];
    fprintf(f, "  %-18s ", p->label);
    cli_print_cell(f, "%.0f", p->key_block > 0 ? p->key_block : NAN, 7);
    const double cos[3] = {r->gpu_cosine, r->offline_cosine, r->tile_cosine};
    const double l1[3] = {r->gpu_rel_l1, r->offline_rel_l1, r->tile_rel_l1};
    for (int i = 0; i < 3; i++) {
        cli_print_cell(f, "%.6f", cos[i], 11);
        cli_print_cell(f, "%.4f", l1[i], 8);
    }
    fprintf(f, "  %s%s", r->failed ? "FAIL " : "", status_word(r));
    if (r->unwritten > 0) fprintf(f, ": %ld of %zu outputs", r->unwritten, rep->outputs);
    if (*r->error) fprintf(f, ": %.100s", r->error);
    fputc('\n', f);
}

static void print_human(FILE *f, const accuracy_run *s) {
    const accuracy_gpu_options *o = s->opt;
    fprintf(f, "mxattn accuracy --gpu: seed %ld, %d x %d, one head, bf16 inputs and output, "
               "K channel-mean stddev %g\n", o->seed, o->size, o->head_dim, o->k_mean);
    const mxattn_accuracy_gpu_report *rep = s->r;
    fprintf(f, "GPU 0: %s (%s)\n", rep->gpu, rep->arch);
    fprintf(f, "Output error against fp64 (cosine, rel-L1) of: the GPU kernel; the CPU oracle in the\n"
               "offline form (p=0, the notes' harness); the oracle with P in the kernel's tiles of\n"
               "block_n keys (tile).  All three read the same bf16-rounded inputs.\n");
    for (int e = 0; e < rep->n_experiments; e++) {
        fprintf(f, "\n%s: %s; normalized entropy %.3f\n", rep->experiments[e].name, rep->experiments[e].description,
                rep->experiments[e].entropy);
        fprintf(f, "  %-18s %7s %11s %8s %11s %8s %11s %8s  %s\n", "family", "block_n", "gpu cos", "rel-L1",
                "p=0 cos", "rel-L1", "tile cos", "rel-L1", "status");
        for (int i = 0; i < rep->n_rows; i++)
            if (rep->rows[i].experiment == e) print_human_row(f, rep, &rep->rows[i]);
    }
    fprintf(f, "\nPlans\n");
    for (int i = 0; i < rep->n_plans; i++) {
        const mxattn_accuracy_plan *p = &rep->plans[i];
        fprintf(f, "  %-18s %s\n", p->label, p->status == MXATTN_OK ? p->config : mxattn_status_string(p->status));
    }
}

static void print_json_field(FILE *f, const char *key, double x) {
    fprintf(f, ", \"%s\": ", key);
    cli_json_number(f, x);
}

static void print_json_row(FILE *f, const accuracy_run *s, const mxattn_accuracy_row *r) {
    const mxattn_accuracy_experiment *e = &s->r->experiments[r->experiment];
    const mxattn_accuracy_plan *p = &s->r->plans[r->plan];
    fputs("  {\"experiment\": ", f);
    cli_json_string(f, e->name);
    print_json_field(f, "temperature", e->temperature);
    print_json_field(f, "entropy", e->entropy);
    fputs(", \"family\": ", f);
    cli_json_string(f, p->family);
    fprintf(f, ", \"direct_p\": %d, \"v_terms\": %d, \"block_n\": %d, \"config\": ", p->direct_p,
            p->v_terms, p->key_block);
    cli_json_string(f, p->status == MXATTN_OK ? p->config : "");
    fputs(", \"status\": ", f);
    cli_json_string(f, status_word(r));
    fputs(", \"error\": ", f);
    cli_json_string(f, r->error);
    fprintf(f, ", \"failed\": %s, \"unwritten\": %ld", r->failed ? "true" : "false", r->unwritten);
    print_json_field(f, "gpu_cos", r->gpu_cosine);
    print_json_field(f, "gpu_rel_l1", r->gpu_rel_l1);
    print_json_field(f, "oracle_offline_cos", r->offline_cosine);
    print_json_field(f, "oracle_offline_rel_l1", r->offline_rel_l1);
    print_json_field(f, "oracle_tile_cos", r->tile_cosine);
    print_json_field(f, "oracle_tile_rel_l1", r->tile_rel_l1);
    fputc('}', f);
}

static void print_json(FILE *f, const accuracy_run *s) {
    const accuracy_gpu_options *o = s->opt;
    fprintf(f, "{\"seed\": %ld, \"size\": %d, \"head_dim\": %d", o->seed, o->size, o->head_dim);
    print_json_field(f, "k_mean", o->k_mean);
    fputs(", \"gpu\": ", f);
    cli_json_string(f, s->r->gpu);
    fputs(", \"arch\": ", f);
    cli_json_string(f, s->r->arch);
    fputs(", \"rows\": [\n", f);
    for (int i = 0; i < s->r->n_rows; i++) {
        print_json_row(f, s, &s->r->rows[i]);
        fputs(i + 1 < s->r->n_rows ? ",\n" : "\n", f);
    }
    fputs("]}\n", f);
}

static void print_csv_number(FILE *f, double x) {
    fputc(',', f);
    if (isfinite(x)) fprintf(f, "%.17g", x);
}

static void print_csv(FILE *f, const accuracy_run *s) {
    fputs("experiment,family,direct_p,block_n,status,failed,unwritten,gpu_cos,gpu_rel_l1,"
          "oracle_offline_cos,oracle_offline_rel_l1,oracle_tile_cos,oracle_tile_rel_l1,entropy,v_terms\n", f);
    const mxattn_accuracy_gpu_report *rep = s->r;
    for (int i = 0; i < rep->n_rows; i++) {
        const mxattn_accuracy_row *r = &rep->rows[i];
        const mxattn_accuracy_plan *p = &rep->plans[r->plan];
        /* Every text field is a fixed word without commas or quotes. */
        fprintf(f, "%s,%s,%d,%d,%s,%d,%ld", rep->experiments[r->experiment].name, p->family,
                p->direct_p, p->key_block, status_word(r), r->failed, r->unwritten);
        print_csv_number(f, r->gpu_cosine);
        print_csv_number(f, r->gpu_rel_l1);
        print_csv_number(f, r->offline_cosine);
        print_csv_number(f, r->offline_rel_l1);
        print_csv_number(f, r->tile_cosine);
        print_csv_number(f, r->tile_rel_l1);
        print_csv_number(f, rep->experiments[r->experiment].entropy);
        fprintf(f, ",%d\n", p->v_terms);   /* last: the columns before it keep their places */
    }
}

/* ---- the command ---------------------------------------------------------- */
static int count_failures(const mxattn_accuracy_gpu_report *r) {
    int n = 0;
    for (int i = 0; i < r->n_rows; i++) n += r->rows[i].failed;
    return n;
}

int accuracy_gpu_run(const accuracy_gpu_options *opt) {
    char why[MESSAGE_LEN];
    if (!gpu_present(why, sizeof why)) return cli_fail(CMD, "--gpu: no GPU found: %s", why);
    mxattn_accuracy_gpu_report *r = calloc(1, sizeof *r);
    if (!r) return cli_fail(CMD, "out of memory");
    mxattn_accuracy_options o = {opt->seed, opt->size, opt->head_dim, opt->k_mean};
    mxattn_status st = mxattn_accuracy_gpu(&o, opt->families, r);
    int rc = 0;
    if (st != MXATTN_OK) {
        rc = cli_fail_status(CMD, st);
    } else {
        accuracy_run s = {opt, r};
        if (opt->json) print_json(stdout, &s);
        else if (opt->csv) print_csv(stdout, &s);
        else print_human(stdout, &s);
        int failures = count_failures(r);
        if (fflush(stdout) != 0) rc = cli_fail(CMD, "could not write the table");
        else if (failures) rc = cli_fail(CMD, "%d of %d GPU rows failed (see the status column)", failures, r->n_rows);
    }
    free(r);
    return rc;
}
