/* The launch plan, read from the table mxattn.launch_plan returns.
 *
 * The reader is strict: every field is checked for its type and range, and a
 * field it does not know is an error rather than ignored, so a template that
 * misspells one (a "resdent" that would silently launch a persistent kernel
 * as an ordinary one) fails its first test instead of running wrongly.  Each
 * message names the field's path in the table ("kernels[2].grid[3]"). */
#include "gen/gen.h"
#include "gen/gen_internal.h"
#include "util/err.h"
#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

/* The reader's state: the Lua state, and the path of the table being read. */
typedef struct {
    lua_State *L;
    char path[64];
} reader;

static mxattn_status bad(const reader *r, const char *field, const char *fmt, const char *detail) {
    char what[256];
    snprintf(what, sizeof what, fmt, detail);
    const char *sep = *r->path && *field ? "." : "";
    if (!*r->path && !*field) field = "the plan";
    return mx_fail(MXATTN_ERROR_TEMPLATE, "templates returned a launch plan mxattn cannot read: %s%s%s %s",
                   r->path, sep, field, what);
}

/* The table on top of the stack has only string keys from `allowed`. */
static mxattn_status check_keys(const reader *r, const char *const *allowed) {
    lua_State *L = r->L;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        int known = 0;
        if (lua_type(L, -1) == LUA_TSTRING) {
            const char *key = lua_tostring(L, -1);
            for (const char *const *a = allowed; *a; a++) known |= !strcmp(*a, key);
        }
        if (!known) {
            char key[48];
            if (lua_type(L, -1) == LUA_TSTRING) snprintf(key, sizeof key, "'%.40s'", lua_tostring(L, -1));
            else snprintf(key, sizeof key, "a %s key", luaL_typename(L, -1));
            lua_pop(L, 1);
            return bad(r, "", "has an unknown field %s", key);
        }
    }
    return MXATTN_OK;
}

/* Pushes t[key] (t on top); it is the caller's to pop. */
static int push_field(lua_State *L, const char *key) { return lua_getfield(L, -1, key); }

/* An integer in [min, max] at t[key]; absent: `fallback` when `optional`. */
static mxattn_status read_int(const reader *r, const char *key, long long min, long long max, int optional,
                              long long fallback, long long *out) {
    lua_State *L = r->L;
    int type = push_field(L, key);
    mxattn_status st = MXATTN_OK;
    if (type == LUA_TNIL && optional) {
        *out = fallback;
    } else if (type != LUA_TNUMBER) {
        st = bad(r, key, "is %s, must be an integer", type == LUA_TNIL ? "missing" : luaL_typename(L, -1));
    } else {
        int is_int = 0;
        lua_Integer v = lua_tointegerx(L, -1, &is_int);
        char text[64];
        if (!is_int) {
            snprintf(text, sizeof text, "%.17g", (double)lua_tonumber(L, -1));
            st = bad(r, key, "is %s, must be an integer", text);
        } else if (v < min || v > max) {
            snprintf(text, sizeof text, "%lld, must be %lld .. %lld", (long long)v, min, max);
            st = bad(r, key, "is %s", text);
        } else {
            *out = v;
        }
    }
    lua_pop(L, 1);
    return st;
}

/* An unsigned field, in [min, max]. */
static mxattn_status read_uint(const reader *r, const char *key, long long min, long long max, unsigned *out) {
    long long v = 0;
    mxattn_status st = read_int(r, key, min, max, 0, 0, &v);
    if (st == MXATTN_OK) *out = (unsigned)v;
    return st;
}

static mxattn_status read_i(const reader *r, const char *key, long long min, long long max, int *out) {
    long long v = 0;
    mxattn_status st = read_int(r, key, min, max, 0, 0, &v);
    if (st == MXATTN_OK) *out = (int)v;
    return st;
}

/* The value on top is a sequence t[1..n] (no other keys) of at most `max`
 * entries; *n gets its length.  Absent (nil) is an empty one when `optional`. */
static mxattn_status sequence(const reader *r, const char *key, int max, int optional, int *n) {
    lua_State *L = r->L;
    *n = 0;
    if (lua_isnil(L, -1) && optional) return MXATTN_OK;
    if (!lua_istable(L, -1))
        return bad(r, key, "is %s, must be a list", lua_isnil(L, -1) ? "missing" : luaL_typename(L, -1));
    lua_Integer len = (lua_Integer)lua_rawlen(L, -1), count = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        lua_pop(L, 1);
        int is_int = 0;
        lua_Integer k = lua_type(L, -1) == LUA_TNUMBER ? lua_tointegerx(L, -1, &is_int) : 0;
        if (!is_int || k < 1 || k > len) {
            lua_pop(L, 1);
            return bad(r, key, "%s", "is not a list (it has keys other than 1 .. n)");
        }
        count++;
    }
    if (count != len) return bad(r, key, "%s", "is not a list (it has holes)");
    if (len > max) {
        char text[64];
        snprintf(text, sizeof text, "%lld entries, at most %d", (long long)len, max);
        return bad(r, key, "has %s", text);
    }
    *n = (int)len;
    return MXATTN_OK;
}

static const char *const kernel_keys[] = {"name", "grid", "block", "smem", "resident", "pdl", NULL};

static mxattn_status read_kernel(reader *r, int index, mx_gen_kernel *k) {
    lua_State *L = r->L;
    mxattn_status st = check_keys(r, kernel_keys);
    if (st != MXATTN_OK) return st;
    size_t len = 0;
    int type = push_field(L, "name");
    const char *name = type == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    if (!name || len == 0 || len >= sizeof k->name || strlen(name) != len) {
        st = bad(r, "name", "is %s, must be a kernel name of 1 .. 127 characters",
                 type == LUA_TNIL ? "missing" : type == LUA_TSTRING ? "not one" : luaL_typename(L, -1));
        lua_pop(L, 1);
        return st;
    }
    memcpy(k->name, name, len + 1);   /* copied out before the pop */
    lua_pop(L, 1);
    push_field(L, "grid");
    int n = 0;
    st = sequence(r, "grid", 3, 0, &n);
    if (st == MXATTN_OK && n != 3) st = bad(r, "grid", "%s", "must list 3 numbers (x, y, z)");
    for (int i = 0; st == MXATTN_OK && i < 3; i++) {
        char key[24];
        snprintf(key, sizeof key, "grid[%d]", i + 1);
        lua_rawgeti(L, -1, i + 1);
        /* read_int reads a field of the table on top: wrap the value in one. */
        lua_createtable(L, 0, 1);
        lua_insert(L, -2);
        lua_setfield(L, -2, key);
        st = read_uint(r, key, 1, 2147483647, &k->grid[i]);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (st != MXATTN_OK) return st;
    long long resident = 0;
    MX_TRY(read_uint(r, "block", 1, 1024, &k->block));
    MX_TRY(read_i(r, "smem", 0, 1 << 30, &k->smem));
    MX_TRY(read_int(r, "resident", 1, 1024, 1, 0, &resident));
    k->resident = (int)resident;
    if (k->resident && (k->grid[1] != 1 || k->grid[2] != 1))
        return bad(r, "resident", "%s", "is set, but a persistent kernel's grid is {units, 1, 1}");
    type = push_field(L, "pdl");
    if (type != LUA_TNIL && type != LUA_TBOOLEAN) st = bad(r, "pdl", "is %s, must be true or false", luaL_typename(L, -1));
    k->pdl = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (st == MXATTN_OK && k->pdl && index == 0)
        st = bad(r, "pdl", "%s", "is true on the first kernel, which has no kernel before it to depend on");
fail:
    return st;
}

static const char *const tmap_keys[] = {"slot", "tensor", "section", "elem_bytes", "cols", "rows", "heads",
                                        "batch", "box_cols", "box_rows", "swizzle", "head_dim", NULL};

static mxattn_status read_tmap(reader *r, mx_gen_tmap *t) {
    lua_State *L = r->L;
    mxattn_status st = check_keys(r, tmap_keys);
    if (st != MXATTN_OK) return st;
    long long section = -1;
    MX_TRY(read_i(r, "slot", 0, MX_GEN_MAX_TMAPS - 1, &t->slot));
    MX_TRY(read_int(r, "section", 0, MX_GEN_MAX_WS_OFF - 1, 1, -1, &section));
    int type = push_field(L, "tensor");
    const char *tensor = type == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    int tensor_ok = tensor && strlen(tensor) == 1 && strchr("qkvo", tensor[0]);
    char c = tensor_ok ? tensor[0] : 0;
    lua_pop(L, 1);
    if (section >= 0 && type != LUA_TNIL)
        return bad(r, "tensor", "%s", "is given with section: a map reads a tensor or a workspace section");
    if (section < 0 && !tensor_ok)
        return bad(r, "tensor", "is %s, must be \"q\", \"k\", \"v\" or \"o\" (or give section)",
                   type == LUA_TNIL ? "missing" : "not one of them");
    MX_TRY(read_uint(r, "box_cols", 1, 256, &t->box_cols));
    MX_TRY(read_uint(r, "box_rows", 1, 256, &t->box_rows));
    MX_TRY(read_i(r, "swizzle", 0, 128, &t->swizzle));
    if (section >= 0) {
        t->tensor = 'w';
        t->section = (int)section;
        MX_TRY(read_i(r, "elem_bytes", 1, 2, &t->elem_bytes));
        MX_TRY(read_uint(r, "cols", 1, 1u << 31, &t->head_dim));
        MX_TRY(read_uint(r, "rows", 1, 1u << 31, &t->rows));
        MX_TRY(read_uint(r, "heads", 1, 1u << 31, &t->heads));
        MX_TRY(read_uint(r, "batch", 1, 1u << 31, &t->batch));
    } else {
        t->tensor = c;
        MX_TRY(read_uint(r, "head_dim", 1, 1024, &t->head_dim));
    }
fail:
    return st;
}

static const char *const plan_keys[] = {"workspace", "ws_off", "main", "kernels", "tmaps", NULL};

/* Reads the table on top of L's stack into *out; the stack is left as it was. */
static mxattn_status read_plan(lua_State *L, mx_gen_launch *out) {
    memset(out, 0, sizeof *out);
    reader r = {.L = L};
    int top = lua_gettop(L), n = 0;
    mxattn_status st = MXATTN_OK;
    if (!lua_istable(L, -1)) {
        st = mx_fail(MXATTN_ERROR_TEMPLATE, "templates returned a launch plan mxattn cannot read: %s, not a table",
                     luaL_typename(L, -1));
        goto done;
    }
    MX_TRY(check_keys(&r, plan_keys));
    long long ws = 0;
    MX_TRY(read_int(&r, "workspace", 0, (long long)1 << 50, 0, 0, &ws));
    out->workspace = (unsigned long long)ws;
    push_field(L, "ws_off");
    MX_TRY(sequence(&r, "ws_off", MX_GEN_MAX_WS_OFF, 1, &n));
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, -1, i + 1);
        int is_int = 0;
        lua_Integer v = lua_type(L, -1) == LUA_TNUMBER ? lua_tointegerx(L, -1, &is_int) : 0;
        lua_pop(L, 1);
        if (!is_int || v < 0 || (unsigned long long)v > out->workspace) {
            char key[24];
            snprintf(key, sizeof key, "ws_off[%d]", i + 1);
            MX_TRY(bad(&r, key, "%s", "must be an integer offset within the workspace"));
        }
        out->ws_off[i] = (unsigned long long)v;
    }
    lua_pop(L, 1);
    push_field(L, "kernels");
    MX_TRY(sequence(&r, "kernels", MX_GEN_MAX_KERNELS, 0, &n));
    if (n == 0) MX_TRY(bad(&r, "kernels", "%s", "is empty: a plan launches at least one kernel"));
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, -1, i + 1);
        snprintf(r.path, sizeof r.path, "kernels[%d]", i + 1);
        if (!lua_istable(L, -1)) MX_TRY(bad(&r, "", "is %s, must be a table", luaL_typename(L, -1)));
        MX_TRY(read_kernel(&r, i, &out->kernels[i]));
        lua_pop(L, 1);
        r.path[0] = 0;
    }
    out->n_kernels = n;
    lua_pop(L, 1);
    /* The attention kernel, whose registers and spills a plan reports and the
     * tuner judges: the last one unless a kernel runs after it (decode's
     * combine kernel). */
    long long main_kernel = 0;
    MX_TRY(read_int(&r, "main", 1, n, 1, n, &main_kernel));
    out->main = (int)main_kernel - 1;
    push_field(L, "tmaps");
    MX_TRY(sequence(&r, "tmaps", MX_GEN_MAX_TMAPS, 1, &n));
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, -1, i + 1);
        snprintf(r.path, sizeof r.path, "tmaps[%d]", i + 1);
        if (!lua_istable(L, -1)) MX_TRY(bad(&r, "", "is %s, must be a table", luaL_typename(L, -1)));
        MX_TRY(read_tmap(&r, &out->tmaps[i]));
        for (int j = 0; j < i; j++)
            if (out->tmaps[j].slot == out->tmaps[i].slot) MX_TRY(bad(&r, "slot", "%s", "is used by an earlier map"));
        lua_pop(L, 1);
        r.path[0] = 0;
    }
    out->n_tmaps = n;
    goto done;
fail:
    memset(out, 0, sizeof *out);
done:
    lua_settop(L, top);
    return st;
}

mxattn_status mx_gen_launch_plan(mx_gen *g, const char *params, const char *sizes, mx_gen_launch *out) {
    memset(out, 0, sizeof *out);
    lua_State *L = mx_gen_lua(g);
    int top = lua_gettop(L);
    mxattn_status st = mx_gen_push_call(g, "launch_plan", params, sizes);
    if (st == MXATTN_OK) st = read_plan(L, out);
    lua_settop(L, top);
    return st;
}

mxattn_status mx_gen_launch_from_chunk(const char *chunk, mx_gen_launch *out) {
    memset(out, 0, sizeof *out);
    lua_State *L = luaL_newstate();
    if (!L) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "cannot create a Lua state");
    mxattn_status st = MXATTN_OK;
    if (luaL_loadbufferx(L, chunk, strlen(chunk), "=chunk", "t") != LUA_OK)
        st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "launch plan chunk: %s", lua_tostring(L, -1));
    else if ((st = mx_gen_pcall(L, 0, 1, "chunk")) == MXATTN_OK)
        st = read_plan(L, out);
    lua_close(L);
    return st;
}
