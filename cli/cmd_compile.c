#include "cli.h"
#include "gen/gen.h"
#include "paramflags.h"
#include "space.h"
#include "runtime/launch_plan.h"
#include "runtime/nvrtc.h"
#include "jit/jit.h"
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

static int report_json(const char *name, const char *arch, const mx_launch_plan *lp, const mx_jit_image *img) {
    const mx_ptxas_usage *u = &img->usage;
    printf("{\"kernel\": ");
    cli_json_string(stdout, name);
    printf(", \"arch\": ");
    cli_json_string(stdout, arch);
    printf(", \"compile_ms\": %.3f, \"kernels\": %d, \"registers\": %d, \"shared_dynamic_bytes\": %d, "
           "\"shared_static_bytes\": %d, \"stack_bytes\": %d, \"spill_store_bytes\": %d, \"spill_load_bytes\": %d, "
           "\"binary_bytes\": %zu}\n", img->compile_ms, lp->n_steps, u->registers, lp->steps[lp->n_steps - 1].smem_bytes,
           u->shared_bytes, u->stack_bytes, u->spill_store_bytes, u->spill_load_bytes, img->size);
    return 0;
}

static int report(const char *name, const char *arch, const mx_launch_plan *lp, const mx_jit_image *img) {
    const mx_ptxas_usage *u = &img->usage;
    printf("kernel        %s\narch          %s\n", name, arch);
    printf("compile       %.1f ms (NVRTC, %d kernel%s)\n", img->compile_ms, lp->n_steps,
           lp->n_steps > 1 ? "s, one thread each" : "");
    printf("registers     %d\nshared        %d bytes dynamic + %d static\n", u->registers,
           lp->steps[lp->n_steps - 1].smem_bytes, u->shared_bytes);
    printf("stack         %d bytes\nspills        %d bytes stored, %d loaded\nbinary        %zu bytes\n",
           u->stack_bytes, u->spill_store_bytes, u->spill_load_bytes, img->size);
    return 0;
}

int cmd_compile(int argc, char **argv) {
    int want_ptx = 0, json = 0;
    const char *cubin_path = NULL;
    mx_gen *g = NULL;
    mxattn_status st = mx_gen_open(&g);
    if (st != MXATTN_OK) return cli_fail_status("compile", st);
    char params[2048], *canonical = NULL, *source = NULL, *launch = NULL, arch[32];
    cli_found found[8];
    int nfound = 0, rc = cli_param_flags("compile", g, argc, argv, options, 3, params, sizeof params,
                                         found, 8, &nfound);
    if (rc == -1) {
        usage();
        mx_gen_close(g);
        return 0;
    }
    for (int i = 0; rc == 0 && i < nfound; i++) {
        if (found[i].id == OPT_PTX) want_ptx = 1;
        else if (found[i].id == OPT_JSON) json = 1;
        else cubin_path = found[i].value;
    }
    if (rc == 0 && json && want_ptx) rc = cli_usage_error("compile", "--json and --ptx are exclusive");
    mx_launch_plan lp;
    mx_compile_result r;
    mx_jit_image img;
    memset(&r, 0, sizeof r);
    memset(&img, 0, sizeof img);
    if (rc == 0) {
        if (!mx_params_get(params, "arch", arch, sizeof arch)) snprintf(arch, sizeof arch, "sm_90a");
        st = mx_gen_call(g, "validate", params, NULL, &canonical);
        /* The flags' values are checked: a refusal here is a combination the
         * parameter space forbids, the command line's fault (exit 2). */
        if (st != MXATTN_OK) rc = cli_fail_input("compile", st);
        if (st == MXATTN_OK) st = mx_gen_call(g, "render", canonical, NULL, &source);
        if (st == MXATTN_OK)
            st = mx_jit_launch_plan(g, canonical, "batch=1 heads_q=1 heads_kv=1 seq_q=1 seq_k=1", &lp);
        const char *name = st == MXATTN_OK ? lp.steps[lp.n_steps - 1].name : "";
        mx_compile_options opt = {.arch = arch, .want_ptx = want_ptx};
        int whole_module = want_ptx || cubin_path;
        if (st == MXATTN_OK && whole_module) st = mx_nvrtc_compile(source, name, &opt, &r);
        else if (st == MXATTN_OK) st = mx_jit_compile(source, arch, &lp, 1, &img);
        if (st != MXATTN_OK) { if (!rc) rc = cli_fail_status("compile", st); }
        else if (want_ptx) fputs(r.ptx ? r.ptx : "", stdout);
        else if (!whole_module) rc = json ? report_json(name, arch, &lp, &img) : report(name, arch, &lp, &img);
        if (rc == 0 && cubin_path) {
            FILE *f = cli_open_output("compile", cubin_path);
            if (!f) rc = 1;
            else if (fwrite(r.cubin, 1, r.cubin_size, f) != r.cubin_size || (f != stdout && fclose(f) != 0))
                rc = cli_fail("compile", "cannot write '%s'", cubin_path);
        }
    }
    mx_compile_result_free(&r);
    mx_jit_image_free(&img);
    free(canonical); free(source); free(launch);
    mx_gen_close(g);
    return rc;
}
