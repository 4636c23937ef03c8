#include "cli.h"
#include "paramflags.h"
#include "space.h"
#include <stdlib.h>
#include <string.h>

static void usage(void) {
    const cli_param *arch = cli_space_find("arch");
    printf("usage: mxattn compile --family F --head-dim D [--arch %s] [--ptx] [--cubin FILE] [--json]\n"
           "                      [parameter flags]\n"
           "Renders the kernel and compiles it with NVRTC (no GPU needed) as a plan would, each kernel\n"
           "of the module in its own program on its own thread; prints the attention kernel's registers,\n"
           "shared memory and spills and the compile's wall time.  --ptx prints the PTX and --cubin\n"
           "writes the cubin of the whole module compiled as one program; --json prints the report as\n"
           "one JSON object.  Every parameter of `mxattn params` is a flag (--name VALUE or --name=VALUE):\n\n",
           arch ? arch->legal : "ARCH");
    cli_space_print_flags(stdout, "shape problem knob");
}

enum { OPT_PTX = 1, OPT_CUBIN, OPT_JSON };
static const cli_option options[] = {
    {"ptx", OPT_PTX, CLI_SWITCH}, {"cubin", OPT_CUBIN, CLI_VALUE}, {"json", OPT_JSON, CLI_SWITCH},
};

static int report_json(const mxattn_compile_result *r) {
    printf("{\"kernel\": ");
    cli_json_string(stdout, r->kernel_name);
    printf(", \"arch\": ");
    cli_json_string(stdout, r->arch);
    printf(", \"compile_ms\": %.3f, \"kernels\": %d, \"registers\": %d, \"shared_dynamic_bytes\": %d, "
           "\"shared_static_bytes\": %d, \"stack_bytes\": %d, \"spill_store_bytes\": %d, \"spill_load_bytes\": %d, "
           "\"binary_bytes\": %zu}\n", r->compile_ms, r->kernels, r->registers, r->shared_dynamic_bytes,
           r->shared_static_bytes, r->stack_bytes, r->spill_store_bytes, r->spill_load_bytes, r->binary_bytes);
    return 0;
}

static int report(const mxattn_compile_result *r) {
    printf("kernel        %s\narch          %s\n", r->kernel_name, r->arch);
    printf("compile       %.1f ms (NVRTC, %d kernel%s)\n", r->compile_ms, r->kernels,
           r->kernels > 1 ? "s, one thread each" : "");
    printf("registers     %d\nshared        %d bytes dynamic + %d static\n", r->registers,
           r->shared_dynamic_bytes, r->shared_static_bytes);
    printf("stack         %d bytes\nspills        %d bytes stored, %d loaded\nbinary        %zu bytes\n",
           r->stack_bytes, r->spill_store_bytes, r->spill_load_bytes, r->binary_bytes);
    return 0;
}

int cmd_compile(int argc, char **argv) {
    int want_ptx = 0, json = 0;
    const char *cubin_path = NULL;
    char params[2048], *canonical = NULL;
    cli_found found[8];
    int nfound = 0, rc = cli_param_flags("compile", argc, argv, options, 3, params, sizeof params,
                                         found, 8, &nfound);
    if (rc == -1) {
        usage();
        return 0;
    }
    for (int i = 0; rc == 0 && i < nfound; i++) {
        if (found[i].id == OPT_PTX) want_ptx = 1;
        else if (found[i].id == OPT_JSON) json = 1;
        else cubin_path = found[i].value;
    }
    if (rc == 0 && json && want_ptx) rc = cli_usage_error("compile", "--json and --ptx are exclusive");
    if (rc) return rc;
    mxattn_ctx *ctx = NULL;
    if ((rc = cli_template_ctx("compile", &ctx))) return rc;
    mxattn_compile_options opt;
    mxattn_compile_options_init(&opt);
    opt.whole_module = want_ptx || cubin_path;
    opt.want_ptx = want_ptx;
    opt.want_cubin = cubin_path != NULL;
    mxattn_compile_result r;
    memset(&r, 0, sizeof r);
    /* The flags' values are checked: a refusal here is a combination the
     * parameter space forbids, the command line's fault (exit 2). */
    mxattn_status st = mxattn_params_resolve(ctx, params, &canonical);
    if (st != MXATTN_OK) rc = cli_fail_input("compile", st);
    else if ((st = mxattn_compile(ctx, canonical, &opt, &r)) != MXATTN_OK) rc = cli_fail_status("compile", st);
    else if (want_ptx) fputs(r.ptx ? r.ptx : "", stdout);
    else if (!opt.whole_module) rc = json ? report_json(&r) : report(&r);
    if (rc == 0 && cubin_path) {
        FILE *f = cli_open_output("compile", cubin_path);
        if (!f) rc = 1;
        else if (fwrite(r.cubin, 1, r.binary_bytes, f) != r.binary_bytes || (f != stdout && fclose(f) != 0))
            rc = cli_fail("compile", "cannot write '%s'", cubin_path);
    }
    mxattn_compile_result_free(&r);
    mxattn_free(canonical);
    mxattn_destroy(ctx);
    return rc;
}
