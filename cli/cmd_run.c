#include "cli.h"
/* Placeholder until the subcommand is written. */
int cmd_run(int argc, char **argv) {
    (void)argc; (void)argv;
    return cli_fail("run", "not implemented yet");
}
