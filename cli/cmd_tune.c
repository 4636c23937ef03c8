#include "cli.h"
/* Placeholder until the subcommand is written. */
int cmd_tune(int argc, char **argv) {
    (void)argc; (void)argv;
    return cli_fail("tune", "not implemented yet");
}
