#include "gen/gen.h"
#include "gen/gen_internal.h"
#include "util/err.h"
#include "util/file.h"
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

/* A module name is a dotted path of letters, digits and '_' ("blocks.softmax"):
 * no '/', no "..", nothing absolute, so a name cannot reach outside the
 * template directory however the directory is laid out. */
static int module_name_ok(const char *name, size_t n) {
    if (n == 0 || n > 200 || name[0] == '.' || name[n - 1] == '.') return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || (c == '.' && name[i + 1] != '.');
        if (!ok) return 0;
    }
    return 1;
}

/* Finds a template file's text: `rel` under template_dir when one is set, else
 * the embedded copy called `name`; NULL when there is none.  *owned is what
 * the caller must free. */
static const char *find_text(mx_gen *g, const char *name, const char *rel, size_t *len, char **owned) {
    *owned = NULL;
    if (g->template_dir[0]) {
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", g->template_dir, rel);
        *owned = mx_read_file(path, len);
        return *owned;
    }
    for (const mx_embedded_template *t = mx_embedded_templates; t->name; t++)
        if (strcmp(t->name, name) == 0) { *len = t->len; return t->text; }
    return NULL;
}

/* A template module's text ("blocks.softmax" is blocks/softmax.lua). */
static const char *template_text(mx_gen *g, const char *name, size_t *len, char **owned) {
    char rel[256];   /* module_name_ok: at most 200 characters */
    snprintf(rel, sizeof rel, "%s", name);
    for (char *p = rel; *p; p++) if (*p == '.') *p = '/';
    strncat(rel, ".lua", sizeof rel - strlen(rel) - 1);
    return find_text(g, name, rel, len, owned);
}

/* require(name), the only loader templates get: it reads modules from the
 * templates alone, as source text.  Lua's own require would also search
 * LUA_PATH, LUA_CPATH, "./?.lua" and "./?.so" and load C libraries, so a
 * template directory (or the working directory) could run native code in
 * every process that links mxattn.  Like Lua's, it caches results in the
 * registry's _LOADED table, so `require` returns the same table every time. */
static int template_require(lua_State *L) {
    size_t n = 0;
    const char *name = luaL_checklstring(L, 1, &n);
    lua_settop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE); /* 2: package.loaded */
    if (lua_getfield(L, 2, name) != LUA_TNIL && lua_toboolean(L, -1)) return 1;
    lua_pop(L, 1);
    mx_gen *g = lua_touserdata(L, lua_upvalueindex(1));
    if (!module_name_ok(name, n))
        return luaL_error(L, "module '%s' not found: a template name is letters, digits, '_' and '.'", name);
    size_t len = 0;
    char *owned = NULL;
    const char *text = template_text(g, name, &len, &owned);
    if (!text)
        return luaL_error(L, "module '%s' not found: no template '%s'%s%s", name, name,
                          g->template_dir[0] ? " in " : "", g->template_dir);
    mx_sha256_update(&g->hash_state, name, strlen(name));
    mx_sha256_update(&g->hash_state, text, len);
    /* Mode "t": a precompiled chunk is refused, since Lua does not verify
     * bytecode and a crafted one can read and write any memory. */
    int rc = luaL_loadbufferx(L, text, len, name, "t");
    free(owned);
    if (rc != LUA_OK) return lua_error(L);
    lua_pushstring(L, name);
    lua_call(L, 1, 1);
    if (!lua_isnil(L, -1)) lua_setfield(L, 2, name);
    else lua_pop(L, 1);
    if (lua_getfield(L, 2, name) == LUA_TNIL) { /* a module that returned nothing */
        lua_pushboolean(L, 1);
        lua_copy(L, -1, -2);
        lua_setfield(L, 2, name);
    }
    return 1;
}

/* A CUDA file's name is a relative path of letters, digits and '_' in
 * '/'-separated parts, ending in ".cuh" ("cuda/softmax.cuh"): no "..", nothing
 * absolute, so it stays inside the template directory. */
static int cuda_name_ok(const char *name, size_t n) {
    if (n < 5 || n > 200 || strcmp(name + n - 4, ".cuh") != 0 || name[0] == '/') return 0;
    for (size_t i = 0; i + 4 < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || (c == '/' && i > 0 && name[i - 1] != '/');
        if (!ok) return 0;
    }
    return name[n - 5] != '/';
}

/* cuda_file(name): the text of a CUDA file of the templates (templates/cuda/),
 * embedded or under the template directory.  A schedule is real CUDA in such a
 * file, parameterised by the constants a Lua template writes before it; the
 * template only concatenates.  Files read while the templates load are in the
 * template hash, so a template reads its files at load time (a module's top
 * level), as mxattn.lua requires every family up front. */
static int template_cuda_file(lua_State *L) {
    size_t n = 0;
    const char *name = luaL_checklstring(L, 1, &n);
    lua_settop(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, "mxattn.cuda_files"); /* 2: name -> text */
    if (lua_getfield(L, 2, name) == LUA_TSTRING) return 1;
    lua_pop(L, 1);
    if (!cuda_name_ok(name, n))
        return luaL_error(L, "CUDA file '%s' not found: a name is a relative path ending in .cuh", name);
    mx_gen *g = lua_touserdata(L, lua_upvalueindex(1));
    size_t len = 0;
    char *owned = NULL;
    const char *text = find_text(g, name, name, &len, &owned);
    if (!text)
        return luaL_error(L, "CUDA file '%s' not found%s%s", name, g->template_dir[0] ? " in " : "",
                          g->template_dir);
    mx_sha256_update(&g->hash_state, name, n);
    mx_sha256_update(&g->hash_state, text, len);
    lua_pushlstring(L, text, len);
    free(owned);
    lua_pushvalue(L, -1);
    lua_setfield(L, 2, name);
    return 1;
}

/* The templates' whole world: the base library less what reads files, loads
 * code or prints, and string, table and math.  No os, io, debug, package.loadlib,
 * coroutine or utf8: a template computes text from text and needs none of
 * them (none of templates/ uses them).  A template directory is code the user
 * pointed at, but it must not be able to run a program, touch a file or load
 * a C library inside the process that asked for a kernel. */
static void open_sandbox(lua_State *L, mx_gen *g) {
    static const luaL_Reg libs[] = {
        { LUA_GNAME, luaopen_base },         { LUA_STRLIBNAME, luaopen_string },
        { LUA_TABLIBNAME, luaopen_table },   { LUA_MATHLIBNAME, luaopen_math },
        { NULL, NULL } };
    for (const luaL_Reg *lib = libs; lib->name; lib++) {
        luaL_requiref(L, lib->name, lib->func, 1);
        lua_pop(L, 1);
    }
    /* dofile/loadfile read files; load would accept binary chunks (and
     * string.dump makes them); print and warn write to the process's stdout
     * and stderr, which the library never does. */
    static const char *const removed[] = { "dofile", "loadfile", "load", "print", "warn", NULL };
    for (const char *const *f = removed; *f; f++) {
        lua_pushnil(L);
        lua_setglobal(L, *f);
    }
    lua_getglobal(L, LUA_STRLIBNAME);
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    lua_pop(L, 1);

    lua_pushlightuserdata(L, g);
    lua_pushcclosure(L, template_require, 1);
    lua_setglobal(L, "require");
    lua_newtable(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "mxattn.cuda_files");
    lua_pushlightuserdata(L, g);
    lua_pushcclosure(L, template_cuda_file, 1);
    lua_setglobal(L, "cuda_file");
    lua_newtable(L); /* package: only `loaded`, the table require fills */
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_setfield(L, -2, "loaded");
    lua_setglobal(L, "package");
}

#ifdef MXATTN_FUZZ_LUA_COVERAGE
/* Fuzz builds only (tests/fuzz): the templates' parser and enumerator are
 * Lua, which libFuzzer's instrumentation of C cannot see, so every template
 * line run is counted in libFuzzer's extra counters (a section it reads
 * besides its own), and an input that reaches a new line is kept.  A target
 * asks for it by defining mx_gen_fuzz_lua_coverage = 1: the hook makes
 * template code ~3x slower, too slow for the candidate enumerator. */
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t lua_line_counters[1 << 15];
__attribute__((weak)) int mx_gen_fuzz_lua_coverage;

static void lua_line_hook(lua_State *L, lua_Debug *ar) {
    if (!lua_getinfo(L, "S", ar)) return;
    uintptr_t h = ((uintptr_t)ar->source >> 4) * 0x9E3779B1u + (uintptr_t)ar->currentline;
    lua_line_counters[(h ^ (h >> 15)) % sizeof lua_line_counters]++;
}
#endif

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
    lua_State *L = g->L;
    open_sandbox(L, g);
#ifdef MXATTN_FUZZ_LUA_COVERAGE
    if (mx_gen_fuzz_lua_coverage) lua_sethook(L, lua_line_hook, LUA_MASKLINE, 0);
#endif

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

lua_State *mx_gen_lua(mx_gen *g) { return g->L; }

mxattn_status mx_gen_pcall(lua_State *L, int nargs, int nresults, const char *what) {
    return protected_call(L, nargs, nresults, what);
}

mxattn_status mx_gen_push_call(mx_gen *g, const char *fn, const char *arg1, const char *arg2) {
    lua_State *L = g->L;
    int top = lua_gettop(L);
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
    if (st != MXATTN_OK) lua_settop(L, top);
    return st;
}

mxattn_status mx_gen_call(mx_gen *g, const char *fn, const char *arg1, const char *arg2,
                          char **result) {
    lua_State *L = g->L;
    int top = lua_gettop(L);
    *result = NULL;
    mxattn_status st = mx_gen_push_call(g, fn, arg1, arg2);
    if (st != MXATTN_OK) return st;
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
