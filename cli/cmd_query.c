#include "cli.h"
/* Placeholder until the subcommand is written. */
int cmd_query(int argc, char **argv) {
    (void)argc; (void)argv;
    return cli_fail("query", "not implemented yet");
}
