/* What gen's own files share beyond gen.h: the Lua state and the one
 * protected-call helper every call into Lua goes through (STYLE.md). */
#ifndef MX_GEN_INTERNAL_H
#define MX_GEN_INTERNAL_H
#include <lua.h>
#include "gen/gen.h"

lua_State *mx_gen_lua(mx_gen *g);
/* lua_pcall with a traceback handler; a failure becomes a status and the
 * thread's message (an "invalid ..." error INVALID_VALUE, else TEMPLATE). */
mxattn_status mx_gen_pcall(lua_State *L, int nargs, int nresults, const char *what);
/* Calls mxattn.<fn>(arg1, arg2) and leaves its one result on the stack; on
 * failure the stack is as it was. */
mxattn_status mx_gen_push_call(mx_gen *g, const char *fn, const char *arg1, const char *arg2);
#endif
