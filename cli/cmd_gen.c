#include "cli.h"
/* Placeholder until the subcommand is written. */
int cmd_gen(int argc, char **argv) {
    (void)argc; (void)argv;
    return cli_fail("gen", "not implemented yet");
}
