#include "gen/gen.h"
#include "util/err.h"
#include "util/sha256.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const char *name; const char *text; size_t len; } mx_embedded_template;
extern const mx_embedded_template mx_embedded_templates[];

struct mx_gen {
    lua_State *L;
    char template_dir[1024]; /* empty: use embedded copies */
    mx_sha256 hash_state;    /* over every module loaded, in load order */
    char template_hash[65];
};

/* Reads a whole file; NULL if it cannot. */
static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
    fclose(f);
    if (buf) { buf[n] = 0; *len = (size_t)n; }
    return buf;
}

/* package.searchers entry: finds a module among the templates, so that
 * `require "blocks.softmax"` works the same from the binary or a directory. */
static int template_searcher(lua_State *L) {
    const char *name = luaL_checkstring(L, 1);
    mx_gen *g = lua_touserdata(L, lua_upvalueindex(1));
    const char *text = NULL;
    size_t len = 0;
    char *owned = NULL;
    if (g->template_dir[0]) {
        char path[1400], rel[256];
        snprintf(rel, sizeof rel, "%s", name);
        for (char *p = rel; *p; p++) if (*p == '.') *p = '/';
        snprintf(path, sizeof path, "%s/%s.lua", g->template_dir, rel);
        owned = slurp(path, &len);
        text = owned;
    } else {
        for (const mx_embedded_template *t = mx_embedded_templates; t->name; t++)
            if (strcmp(t->name, name) == 0) { text = t->text; len = t->len; break; }
    }
    if (!text) {
        lua_pushfstring(L, "\n\tno template '%s'", name);
        return 1;
    }
    mx_sha256_update(&g->hash_state, name, strlen(name));
    mx_sha256_update(&g->hash_state, text, len);
    int rc = luaL_loadbuffer(L, text, len, name);
    free(owned);
    if (rc != LUA_OK) return lua_error(L);
    lua_pushstring(L, name);
    return 2;
}

static int traceback(lua_State *L) {
    const char *msg = lua_tostring(L, 1);
    luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
    return 1;
}

/* Runs the function on top of the stack (with nargs below it) under pcall
 * with a traceback; on failure records the message and returns a status. */
static mxattn_status protected_call(lua_State *L, int nargs, int nresults, const char *what) {
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, traceback);
    lua_insert(L, base);
    int rc = lua_pcall(L, nargs, nresults, base);
    lua_remove(L, base);
    if (rc == LUA_OK) return MXATTN_OK;
    const char *msg = lua_tostring(L, -1);
    char text[4096];
    snprintf(text, sizeof text, "%s", msg ? msg : "unknown Lua error");
    /* Templates reject bad parameters with error("invalid ...", 0): level 0
     * adds no position, so the user sees only the sentence. */
    mxattn_status s;
    if (strncmp(text, "invalid", 7) == 0) {
        char *cut = strchr(text, '\n');
        if (cut) *cut = 0;
        s = mx_fail(MXATTN_ERROR_INVALID_VALUE, "%s", text);
    } else {
        s = mx_fail(MXATTN_ERROR_TEMPLATE, "template %s failed: %s", what, text);
    }
    lua_pop(L, 1);
    return s;
}

mxattn_status mx_gen_open(mx_gen **out) {
    mxattn_status st = MXATTN_OK;
    *out = NULL;
    mx_gen *g = calloc(1, sizeof *g);
    if (!g) return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory creating the template engine");
    const char *dir = getenv("MXATTN_TEMPLATE_DIR");
    if (dir && *dir) snprintf(g->template_dir, sizeof g->template_dir, "%s", dir);
    mx_sha256_init(&g->hash_state);
    g->L = luaL_newstate();
    if (!g->L) { free(g); return mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "cannot create a Lua state"); }
    luaL_openlibs(g->L);

    /* Put our searcher first, so templates never come from LUA_PATH by accident. */
    lua_State *L = g->L;
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "searchers");
    lua_pushlightuserdata(L, g);
    lua_pushcclosure(L, template_searcher, 1);
    for (lua_Integer i = (lua_Integer)luaL_len(L, -2); i >= 1; i--) {
        lua_rawgeti(L, -2, i);
        lua_rawseti(L, -3, i + 1);
    }
    lua_rawseti(L, -2, 1);
    lua_pop(L, 2);

    lua_getglobal(L, "require");
    lua_pushstring(L, "mxattn");
    MX_TRY(protected_call(L, 1, 1, "loading"));
    if (!lua_istable(L, -1)) {
        st = mx_fail(MXATTN_ERROR_TEMPLATE, "templates/mxattn.lua did not return a table");
        goto fail;
    }
    lua_setglobal(L, "mxattn");
    /* The hash covers what loading required; modules required lazily later are
     * not in it, so mxattn.lua requires every family up front. */
    uint8_t d[32];
    mx_sha256 copy = g->hash_state;
    mx_sha256_final(&copy, d);
    for (int i = 0; i < 32; i++) sprintf(g->template_hash + 2 * i, "%02x", d[i]);
    *out = g;
    return MXATTN_OK;
fail:
    mx_gen_close(g);
    return st;
}

void mx_gen_close(mx_gen *g) {
    if (!g) return;
    if (g->L) lua_close(g->L);
    free(g);
}

const char *mx_gen_template_hash(mx_gen *g) { return g->template_hash; }

mxattn_status mx_gen_call(mx_gen *g, const char *fn, const char *arg1, const char *arg2,
                          char **result) {
    lua_State *L = g->L;
    int top = lua_gettop(L);
    *result = NULL;
    lua_getglobal(L, "mxattn");
    lua_getfield(L, -1, fn);
    lua_remove(L, -2);
    if (!lua_isfunction(L, -1)) {
        lua_settop(L, top);
        return mx_fail(MXATTN_ERROR_TEMPLATE, "templates have no function mxattn.%s", fn);
    }
    int nargs = 0;
    if (arg1) { lua_pushstring(L, arg1); nargs++; }
    if (arg2) { if (!arg1) { lua_pushnil(L); nargs++; } lua_pushstring(L, arg2); nargs++; }
    mxattn_status st = protected_call(L, nargs, 1, fn);
    if (st != MXATTN_OK) { lua_settop(L, top); return st; }
    size_t len = 0;
    const char *s = lua_tolstring(L, -1, &len);
    if (!s) {
        lua_settop(L, top);
        return mx_fail(MXATTN_ERROR_TEMPLATE, "mxattn.%s returned no string", fn);
    }
    /* Copy out before popping: the Lua string dies with the stack slot. */
    *result = malloc(len + 1);
    if (*result) { memcpy(*result, s, len); (*result)[len] = 0; }
    lua_settop(L, top);
    return *result ? MXATTN_OK : mx_fail(MXATTN_ERROR_OUT_OF_MEMORY, "out of memory");
}

/* Strict, as the templates' S.parse: a key given twice or a value that does
 * not fit is -1 with value "", never the first or last of two nor a value cut
 * short (either would name another kernel than the text does). */
int mx_params_get(const char *params, const char *key, char *value, size_t value_len) {
    size_t klen = strlen(key);
    int found = 0;
    if (!value_len) return -1;
    value[0] = 0;
    for (const char *p = params; p && *p;) {
        while (*p == ' ' || *p == '\n') p++;
        const char *end = p + strcspn(p, " \n");
        if ((size_t)(end - p) > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
            size_t n = (size_t)(end - p) - klen - 1;
            if (found || n >= value_len) { value[0] = 0; return -1; }
            memcpy(value, p + klen + 1, n);
            value[n] = 0;
            found = 1;
        }
        p = end;
    }
    return found;
}

long mx_params_get_int(const char *params, const char *key, long fallback) {
    char v[64], *end;
    if (mx_params_get(params, key, v, sizeof v) != 1) return fallback;
    long x = strtol(v, &end, 10);
    return *end == 0 && end != v ? x : fallback;
}
