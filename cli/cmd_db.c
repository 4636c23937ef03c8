#include "cli.h"
/* Placeholder until the subcommand is written. */
int cmd_db(int argc, char **argv) {
    (void)argc; (void)argv;
    return cli_fail("db", "not implemented yet");
}
