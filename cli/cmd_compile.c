#include "cli.h"
/* Placeholder until the subcommand is written. */
int cmd_compile(int argc, char **argv) {
    (void)argc; (void)argv;
    return cli_fail("compile", "not implemented yet");
}
