#include "cli.h"
/* Placeholder until the subcommand is written. */
int cmd_info(int argc, char **argv) {
    (void)argc; (void)argv;
    return cli_fail("info", "not implemented yet");
}
