/* A Lua C module for test_gen_sandbox: loading it creates the file named by
 * $MXATTN_SANDBOX_MARKER, so the test can tell whether a template managed to
 * load native code.  It calls no Lua function, so it needs no Lua library. */
#include <stdio.h>
#include <stdlib.h>

int luaopen_cmod(void *L);

int luaopen_cmod(void *L) {
    (void)L;
    const char *path = getenv("MXATTN_SANDBOX_MARKER");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) fclose(f);
    return 0; /* no results: require returns true */
}
