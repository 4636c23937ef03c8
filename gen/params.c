/* The parameter space as data for C: mxattn.param_table's list, read through
 * Lua's C API into fixed records (the public mxattn_params, the CLI's flags
 * and --help, the Python package's FAMILIES all come from it). */
#include "gen/gen.h"
#include "gen/gen_internal.h"
#include "util/err.h"
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A text field of the table on top, copied out (it must fit). */
static mxattn_status text_field(lua_State *L, int index, const char *key, char *out, size_t cap) {
    size_t len = 0;
    const char *s = lua_getfield(L, -1, key) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    mxattn_status st = MXATTN_OK;
    if (!s || len >= cap)
        st = mx_fail(MXATTN_ERROR_TEMPLATE, "mxattn.param_table()[%d].%s is %s", index, key,
                     s ? "too long" : "not a string");
    else memcpy(out, s, len + 1);
    lua_pop(L, 1);
    return st;
}

static mxattn_status int_field(lua_State *L, int index, const char *key, long *out) {
    int is_int = 0;
    lua_getfield(L, -1, key);
    lua_Integer v = lua_type(L, -1) == LUA_TNUMBER ? lua_tointegerx(L, -1, &is_int) : 0;
    lua_pop(L, 1);
    if (!is_int) return mx_fail(MXATTN_ERROR_TEMPLATE, "mxattn.param_table()[%d].%s is not an integer", index, key);
    *out = (long)v;
    return MXATTN_OK;
}

mxattn_status mx_gen_params(mx_gen *g, mx_gen_param **out, int *count) {
    *out = NULL;
    *count = 0;
    lua_State *L = mx_gen_lua(g);
    int top = lua_gettop(L);
    mxattn_status st = mx_gen_push_call(g, "param_table", NULL, NULL);
    if (st != MXATTN_OK) return st;
    mx_gen_param *list = NULL;
    int n = lua_istable(L, -1) ? (int)lua_rawlen(L, -1) : 0;
    if (n <= 0 || n > 256) {
        st = mx_fail(MXATTN_ERROR_TEMPLATE, "mxattn.param_table() returned no list of parameters");
        goto fail;
    }
    list = calloc((size_t)n, sizeof *list);
    if (!list) { st = mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory"); goto fail; }
    for (int i = 0; i < n; i++) {
        mx_gen_param *p = &list[i];
        long is_bool = 0;
        if (lua_rawgeti(L, -1, i + 1) != LUA_TTABLE) {
            st = mx_fail(MXATTN_ERROR_TEMPLATE, "mxattn.param_table()[%d] is not a table", i + 1);
            goto fail;
        }
        MX_TRY(text_field(L, i + 1, "name", p->name, sizeof p->name));
        MX_TRY(text_field(L, i + 1, "role", p->role, sizeof p->role));
        MX_TRY(text_field(L, i + 1, "legal", p->legal, sizeof p->legal));
        MX_TRY(text_field(L, i + 1, "default", p->default_value, sizeof p->default_value));
        MX_TRY(text_field(L, i + 1, "families", p->families, sizeof p->families));
        MX_TRY(text_field(L, i + 1, "help", p->help, sizeof p->help));
        MX_TRY(int_field(L, i + 1, "is_bool", &is_bool));
        MX_TRY(int_field(L, i + 1, "min", &p->min));
        MX_TRY(int_field(L, i + 1, "max", &p->max));
        p->is_bool = is_bool != 0;
        p->is_range = strstr(p->legal, "..") != NULL;
        lua_pop(L, 1);
    }
    lua_settop(L, top);
    *out = list;
    *count = n;
    return MXATTN_OK;
fail:
    free(list);
    lua_settop(L, top);
    return st;
}
