#include "cli.h"
/* Placeholder until the subcommand is written. */
int cmd_accuracy(int argc, char **argv) {
    (void)argc; (void)argv;
    return cli_fail("accuracy", "not implemented yet");
}
