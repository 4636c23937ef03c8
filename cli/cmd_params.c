#include "cli.h"
/* Placeholder until the subcommand is written. */
int cmd_params(int argc, char **argv) {
    (void)argc; (void)argv;
    return cli_fail("params", "not implemented yet");
}
