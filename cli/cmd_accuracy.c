/* mxattn accuracy: prints the design notes' accuracy tables as the library
 * reproduces them on the CPU reference (mxattn_accuracy: the harness is
 * described there), deterministically from --seed.  With --gpu the command
 * prints the GPU table instead (cli/accuracy_gpu.c), from the same draw
 * (mxattn_accuracy_inputs). */
#include "cli.h"
#include "accuracy_gpu.h"
#include "space.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CMD "accuracy"
#define SWEEP_POINTS MXATTN_ACCURACY_SWEEP

typedef struct {
    long seed;
    int size, head_dim;
    double k_mean;
    int json, csv, gpu;
    const char *plot_path;
    const char *families;     /* --family, GPU table only */
    long head_dims[8];        /* --head-dim's list: the report once for each */
    int n_head_dims;
} options;

/* ---- output -------------------------------------------------------------- */
static const char *table_title(const char *table) {
    static const struct { const char *key, *title; } titles[] = {
        {"census", "E4M3 census (all 256 codes, S1111111 NaN)"},
        {"formats", "NVFP4 vs MXFP4 on Q, K, P, V (smooth-K, two-level P), output vs fp64"},
        {"p-scale", "Softmax operand P: two-level vs direct scale (NVFP4)"},
        {"smooth-k", "Smooth-K (NVFP4, two-level P)"},
        {"sweep", "Temperature sweep, NVFP4 output cosine"},
        {"split", "Quantizing only QK or only PV (NVFP4)"},
        {"int8", "INT8 QK"},
        {"throughput", "Throughput decomposition (arithmetic on the notes' inputs)"},
    };
    for (size_t i = 0; i < sizeof titles / sizeof titles[0]; i++)
        if (!strcmp(titles[i].key, table)) return titles[i].title;
    return table;
}

static void print_human(FILE *f, const mxattn_accuracy_report *r, const options *opt) {
    fprintf(f, "mxattn accuracy: seed %ld, %d x %d, K channel-mean stddev %g (CPU reference)\n",
            opt->seed, opt->size, opt->head_dim, opt->k_mean);
    const char *table = "";
    for (int i = 0; i < r->count; i++) {
        const mxattn_accuracy_figure *fg = &r->figures[i];
        if (strcmp(fg->table, table)) {
            table = fg->table;
            fprintf(f, "\n%s\n  %-46s %10s %10s\n", table_title(table), "", "ours", "notes");
        }
        fprintf(f, "  %-46s ", fg->name);
        cli_print_cell(f, fg->format, fg->ours, 10);
        fputc(' ', f);
        cli_print_cell(f, fg->format, fg->notes, 10);
        fputc('\n', f);
    }
}

static void print_json(FILE *f, const mxattn_accuracy_report *r, const options *opt) {
    fprintf(f, "{\"seed\": %ld, \"size\": %d, \"head_dim\": %d, \"k_mean\": ", opt->seed, opt->size, opt->head_dim);
    cli_json_number(f, opt->k_mean);
    fputs(", \"figures\": [", f);
    for (int i = 0; i < r->count; i++) {
        const mxattn_accuracy_figure *fg = &r->figures[i];
        fputs(i ? ",\n  {\"table\": " : "\n  {\"table\": ", f);
        cli_json_string(f, fg->table);
        fputs(", \"name\": ", f);
        cli_json_string(f, fg->name);
        fputs(", \"ours\": ", f);
        cli_json_number(f, fg->ours);
        fputs(", \"notes\": ", f);
        cli_json_number(f, fg->notes);
        fputc('}', f);
    }
    fputs("\n]}\n", f);
}

static void print_csv(FILE *f, const mxattn_accuracy_report *r) {
    fputs("table,name,ours,notes\n", f);
    for (int i = 0; i < r->count; i++) {
        const mxattn_accuracy_figure *fg = &r->figures[i];
        fprintf(f, "%s,\"%s\",%.17g,", fg->table, fg->name, fg->ours);
        if (!isnan(fg->notes)) fprintf(f, "%.17g", fg->notes);
        fputc('\n', f);
    }
}

/* An SVG line chart: cosine against temperature (log2 axis), ours and notes. */
static void write_plot(FILE *f, const mxattn_accuracy_report *r) {
    const double w = 640, hgt = 400, left = 70, right = 170, top = 40, bottom = 60;
    const double pw = w - left - right, ph = hgt - top - bottom, y_min = 50, y_max = 100;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", w, hgt);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"14\">NVFP4 attention output cosine vs temperature</text>\n", left);
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n",
            left, top, pw, ph);
    for (int y = (int)y_min; y <= (int)y_max; y += 10) {
        double py = top + ph * (1 - (y - y_min) / (y_max - y_min));
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%d%%</text>\n",
                left, py, left + pw, py, left - 6, py + 4, y);
    }
    double x_max = log2(r->sweep_temperature[SWEEP_POINTS - 1]);
    for (int i = 0; i < SWEEP_POINTS; i++) {
        double px = left + pw * log2(r->sweep_temperature[i]) / x_max;
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">t=%g (H=%.3f)</text>\n",
                px, top + ph + 18, r->sweep_temperature[i], r->sweep_entropy[i]);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">temperature (normalized entropy)</text>\n",
            left + pw / 2, hgt - 12);
    const struct { const double *y; const char *color, *dash, *label; } series[] = {
        {r->sweep_two_level, "#1f77b4", "", "two-level (ours)"},
        {r->sweep_direct, "#d62728", "", "direct (ours)"},
        {r->notes_sweep_two_level, "#1f77b4", "5,4", "two-level (notes)"},
        {r->notes_sweep_direct, "#d62728", "5,4", "direct (notes)"},
    };
    for (size_t s = 0; s < sizeof series / sizeof series[0]; s++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"%s\" points=\"",
                series[s].color, series[s].dash);
        for (int i = 0; i < SWEEP_POINTS; i++) {
            double y = fmax(y_min, fmin(y_max, series[s].y[i]));
            fprintf(f, "%.1f,%.1f ", left + pw * log2(r->sweep_temperature[i]) / x_max,
                    top + ph * (1 - (y - y_min) / (y_max - y_min)));
        }
        fputs("\"/>\n", f);
        double ly = top + 20 + 20 * (double)s;
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"%s\" stroke-width=\"2\" "
                   "stroke-dasharray=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n",
                left + pw + 10, ly, left + pw + 34, ly, series[s].color, series[s].dash,
                left + pw + 40, ly + 4, series[s].label);
    }
    fputs("</svg>\n", f);
}

/* ---- arguments ---------------------------------------------------------- */
static void usage(FILE *f) {
    char families[256];
    cli_space_load(CMD);
    cli_space_legal("family", families, sizeof families);
    fprintf(f,
        "usage: mxattn accuracy [--seed N] [--size N] [--head-dim D[,D...]] [--k-mean X]\n"
        "                       [--json | --csv] [--plot FILE.svg]\n"
        "       mxattn accuracy --gpu [--family LIST] [--seed N] [--size N] [--head-dim D[,D...]]\n"
        "                       [--k-mean X] [--json | --csv]\n\n"
        "Reproduces the design notes' accuracy tables on the CPU reference, beside the\n"
        "notes' own figures.  Deterministic for a given seed.  With --gpu, runs every\n"
        "kernel family on the GPU on the notes' inputs, a temperature sweep, heavy-tailed\n"
        "inputs and a large logit scale, and prints each output's error against fp64\n"
        "beside the CPU oracle's for the same (bf16) inputs.\n\n"
        "  --seed N       RNG seed (default 0)\n"
        "  --size N       sequence length of Q, K, V (default 1024; 32 .. 4096)\n"
        "  --head-dim D   head dimension (default 128; 8 .. 256); a list runs the report for\n"
        "                 each (--json: an array of the reports)\n"
        "  --k-mean X     stddev of K's per-channel mean (default 3.0)\n"
        "  --json, --csv  machine-readable output instead of the table\n"
        "  --plot FILE    write the temperature sweep as an SVG chart\n"
        "  --gpu          the GPU table instead of the CPU tables (needs a GPU)\n"
        "  --causal none  the tables are without a mask (the only value taken)\n"
        "  --family L     with --gpu: comma-separated families (default all: %s;\n"
        "                 the FP4 families also get a row with the direct P scale, int8-fp8\n"
        "                 one with V in two terms; --families: the old spelling)\n", families);
}

enum { OPT_JSON = 1, OPT_CSV, OPT_GPU, OPT_SEED, OPT_SIZE, OPT_HEAD_DIM, OPT_K_MEAN, OPT_PLOT, OPT_FAMILY, OPT_CAUSAL };
static const cli_option cli_options[] = {
    {"json", OPT_JSON, CLI_SWITCH}, {"csv", OPT_CSV, CLI_SWITCH}, {"gpu", OPT_GPU, CLI_SWITCH},
    {"seed", OPT_SEED, CLI_VALUE}, {"size", OPT_SIZE, CLI_VALUE}, {"head-dim", OPT_HEAD_DIM, CLI_VALUE},
    {"k-mean", OPT_K_MEAN, CLI_VALUE}, {"plot", OPT_PLOT, CLI_VALUE}, {"family", OPT_FAMILY, CLI_VALUE},
    {"families", OPT_FAMILY, CLI_VALUE}, {"causal", OPT_CAUSAL, CLI_VALUE}, {NULL, 0, 0},
};

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, options *opt) {
    *opt = (options){.seed = 0, .size = 1024, .head_dim = 128, .k_mean = 3.0};
    cli_parser ps;
    cli_parser_init(&ps, CMD, argc, argv, cli_options, -1);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        const char *a = ps.flag, *value = ps.value;
        long n;
        mxattn_causal c[3];
        int nc;
        switch (id) {
        case CLI_HELP: usage(stdout); return 0;
        case CLI_ERROR: return 2;
        case CLI_ARG: return cli_usage_error(CMD, "unexpected argument '%s'", value);
        case OPT_JSON: opt->json = 1; break;
        case OPT_CSV: opt->csv = 1; break;
        case OPT_GPU: opt->gpu = 1; break;
        case OPT_PLOT: opt->plot_path = value; break;
        case OPT_FAMILY: opt->families = value; break;
        case OPT_K_MEAN: if (!cli_parse_double(CMD, a, value, 0, 100, &opt->k_mean)) return 2; break;
        case OPT_SEED:
            if (!cli_parse_long(CMD, a, value, 0, 0x7FFFFFFFL, &n)) return 2;
            opt->seed = n;
            break;
        case OPT_SIZE:
            if (!cli_parse_long(CMD, a, value, 32, 4096, &n)) return 2;
            opt->size = (int)n;
            break;
        case OPT_HEAD_DIM:
            if (!cli_parse_long_list(CMD, a, value, 8, 256, opt->head_dims, 8, &opt->n_head_dims)) return 2;
            opt->head_dim = (int)opt->head_dims[0];
            break;
        default: /* OPT_CAUSAL: the notes' harness has no mask; its figures compare to that */
            if (!cli_parse_causal(CMD, a, value, 0, c, &nc)) return 2;
            if (c[0] != MXATTN_CAUSAL_NONE)
                return cli_usage_error(CMD, "%s: the accuracy tables are measured without a mask (none only)", a);
        }
    }
    if (opt->json && opt->csv) return cli_usage_error(CMD, "--json and --csv are exclusive");
    if (opt->n_head_dims > 1 && (opt->csv || opt->plot_path))
        return cli_usage_error(CMD, "--csv and --plot take one --head-dim");
    if (opt->n_head_dims == 0) opt->head_dims[opt->n_head_dims++] = opt->head_dim;
    if (opt->families && !opt->gpu) return cli_usage_error(CMD, "--family needs --gpu (the CPU tables are per format)");
    if (opt->gpu && opt->plot_path) return cli_usage_error(CMD, "--plot draws the CPU sweep; it does not go with --gpu");
    if (opt->families && !accuracy_gpu_check_families(CMD, opt->families)) return 2;
    return -1;
}

/* The report for one head dimension (opt.head_dim). */
static int run_one(const options *o) {
    options opt = *o;
    int rc;
    if (opt.gpu) {
        accuracy_gpu_options g = {opt.seed, opt.size, opt.head_dim, opt.k_mean, opt.json, opt.csv, opt.families};
        return accuracy_gpu_run(&g);
    }
    FILE *plot = NULL;
    if (opt.plot_path && !(plot = cli_open_output(CMD, opt.plot_path))) return 1;

    mxattn_accuracy_report *r = calloc(1, sizeof *r);
    if (!r) {
        if (plot && plot != stdout) fclose(plot);
        return cli_fail(CMD, "out of memory for size %d", opt.size);
    }
    mxattn_accuracy_options ao = {opt.seed, opt.size, opt.head_dim, opt.k_mean};
    mxattn_status st = mxattn_accuracy(&ao, r);
    if (st != MXATTN_OK) {
        free(r);
        if (plot && plot != stdout) fclose(plot);
        if (st == MXATTN_ERROR_OUT_OF_MEMORY) return cli_fail(CMD, "out of memory for size %d", opt.size);
        return cli_fail(CMD, "%s: %s", mxattn_status_string(st), mxattn_last_error());
    }
    if (opt.json) print_json(stdout, r, &opt);
    else if (opt.csv) print_csv(stdout, r);
    else print_human(stdout, r, &opt);
    rc = 0;
    if (plot) {
        write_plot(plot, r);
        if ((plot != stdout && fclose(plot) != 0) || (plot == stdout && fflush(plot) != 0))
            rc = cli_fail(CMD, "could not finish writing '%s'", opt.plot_path);
    }
    free(r);
    return rc;
}

int cmd_accuracy(int argc, char **argv) {
    options opt;
    int rc = parse_args(argc, argv, &opt);
    if (rc >= 0) return rc;
    int several = opt.n_head_dims > 1;
    if (several && opt.json) printf("[");
    for (int i = 0; i < opt.n_head_dims; i++) {
        opt.head_dim = (int)opt.head_dims[i];
        if (several && opt.json && i) printf(",\n");
        else if (several && i) printf("\n");
        int one = run_one(&opt);
        if (one) rc = one;
        if (one) break;
    }
    if (several && opt.json) printf("]\n");
    return rc < 0 ? 0 : rc;
}
