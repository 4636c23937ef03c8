/* mxattn: the command-line program.  Subcommands are in cli/cmd_*.c. */
#include "cli.h"
#include <string.h>

static const cli_command commands[] = {
    {"accuracy", cmd_accuracy, "reproduce the design notes' accuracy tables (CPU; --gpu for the kernels)"},
    {"params",   cmd_params,   "describe every kernel parameter, its legal values and constraints"},
    {"gen",      cmd_gen,      "print the CUDA source generated for a parameter table"},
    {"compile",  cmd_compile,  "compile generated source with NVRTC (no GPU needed) and report resources"},
    {"run",      cmd_run,      "run one problem on the GPU and check it against the CPU reference"},
    {"tune",     cmd_tune,     "tune kernels on this GPU and store the winners (--compile-only without one)"},
    {"query",    cmd_query,    "list tuned configurations from the database"},
    {"db",       cmd_db,       "export, import, merge, vacuum or check the database"},
    {"info",     cmd_info,     "show the driver, GPU, NVRTC and database this machine has"},
};
#define N_COMMANDS (int)(sizeof commands / sizeof commands[0])

static void usage(FILE *f) {
    fprintf(f, "usage: mxattn <command> [options]   (mxattn <command> --help for more)\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nOptions are --name VALUE or --name=VALUE.  The commands that describe a problem share\n"
               "--family F, --head-dim D (a list where several are run) and --causal none|top-left|\n"
               "bottom-right (or all); those that print data take --json.  Exit status: 0 done, 1 the\n"
               "operation failed, 2 the command line is wrong (nothing was done).\n");
    fprintf(f, "\nmxattn %s\n", mxattn_version());
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return 2; }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        usage(stdout);
        return cli_finish_stdout("help", 0);
    }
    if (!strcmp(name, "--version") || !strcmp(name, "version")) {
        printf("mxattn %s\n", mxattn_version());
        return cli_finish_stdout("version", 0);
    }
    /* Every command's stdout is checked here, once: output that did not reach
     * its file (a full disk, `> /dev/full`) is a failure, not a success. */
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(name, commands[i].name)) return cli_finish_stdout(name, commands[i].fn(argc - 1, argv + 1));
    fprintf(stderr, "mxattn: error: unknown command '%s'\n", name);
    usage(stderr);
    return 2;
}
