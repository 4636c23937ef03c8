/* gen: the template engine.  A Lua 5.4 state that holds the templates and the
 * parameter space (templates/space.lua) and answers string questions:
 *
 *   mx_gen_call(g, "render", "family=f16 head_dim=80 ...", NULL, &source)
 *
 * Every value crossing this boundary is a string: parameter tables travel as
 * canonical "key=value key=value" text, which is also what cache keys hash.
 * The callable functions are those of templates/mxattn.lua.
 *
 * One mx_gen per thread at a time (a lua_State is not thread-safe). */
#ifndef MX_GEN_H
#define MX_GEN_H
#include "mxattn.h"

typedef struct mx_gen mx_gen;

/* Loads templates from $MXATTN_TEMPLATE_DIR when set, else the copies compiled
 * into the binary. */
mxattn_status mx_gen_open(mx_gen **out);
void mx_gen_close(mx_gen *g);

/* Calls mxattn.<fn>(arg1, arg2) (arg2 may be NULL) and returns its string
 * result in *result (free() it).  A Lua error whose message starts with
 * "invalid" becomes MXATTN_ERROR_INVALID_VALUE, any other MXATTN_ERROR_TEMPLATE;
 * the message carries the Lua traceback's first line. */
mxattn_status mx_gen_call(mx_gen *g, const char *fn, const char *arg1, const char *arg2,
                          char **result);

/* Hash of all template text loaded, so tuning results from other templates
 * are never reused (hex, 64 chars + NUL). */
const char *mx_gen_template_hash(mx_gen *g);

/* "key=value" lookup in a canonical parameter string; returns 1 when found,
 * 0 if absent, -1 (value "") when the key is there twice or its value does
 * not fit in value_len. */
int mx_params_get(const char *params, const char *key, char *value, size_t value_len);
/* Integer flavour; returns `fallback` when absent, ambiguous or not a number. */
long mx_params_get_int(const char *params, const char *key, long fallback);
#endif
