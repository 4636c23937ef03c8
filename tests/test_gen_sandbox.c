/* The templates' Lua sandbox.  A template directory given through
 * MXATTN_TEMPLATE_DIR is Lua that runs inside mxattn_create() in every
 * process that links the library; it may compute text, nothing else.  Each
 * test copies templates/ to a scratch directory, plants one escape in it
 * (running a program, opening a file, loading a C library or bytecode,
 * reaching outside the directory), and checks both the status
 * (MXATTN_ERROR_TEMPLATE, from mxattn_create or the first generator call)
 * and that the escape's side effect, creating the file `marker`, did not
 * happen.  With luaL_openlibs and Lua's own searchers every one of them
 * succeeds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "gen/gen.h"
#include "mxattn.h"
#include "support/temp_dir.h"
#include "util/file.h"

static char g_root[256];     /* scratch: templates in t/, the marker, outside modules */
static char g_tdir[320];     /* g_root/t, the MXATTN_TEMPLATE_DIR */
static char g_marker[320];   /* g_root/marker: exists only if an escape worked */

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static size_t g_src_len;
static int copy_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb; (void)ftw;
    char dst[1024];
    snprintf(dst, sizeof dst, "%s%s", g_tdir, path + g_src_len);
    if (type == FTW_D) return mkdir(dst, 0700) == 0 || ftw->level == 0 ? 0 : -1;
    size_t len = 0;
    char *text = mx_read_file(path, &len);
    if (!text) return -1;
    FILE *f = fopen(dst, "wb");
    int ok = f && fwrite(text, 1, len, f) == len;
    if (f) ok = fclose(f) == 0 && ok;
    free(text);
    return ok ? 0 : -1;
}

static int setup(void **state) {
    (void)state;
    if (temp_dir_make(g_root, sizeof g_root, "mxattn-sandbox") != 0) return -1;
    snprintf(g_tdir, sizeof g_tdir, "%s/t", g_root);
    snprintf(g_marker, sizeof g_marker, "%s/marker", g_root);
    if (mkdir(g_tdir, 0700) != 0) return -1;
    const char *src = MXATTN_SOURCE_DIR "/templates";
    g_src_len = strlen(src);
    if (nftw(src, copy_entry, 16, FTW_PHYS) != 0) return -1;
    setenv("MXATTN_TEMPLATE_DIR", g_tdir, 1);
    setenv("MXATTN_SANDBOX_MARKER", g_marker, 1);
    unsetenv("LUA_PATH"); unsetenv("LUA_PATH_5_4");
    unsetenv("LUA_CPATH"); unsetenv("LUA_CPATH_5_4");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unsetenv("MXATTN_TEMPLATE_DIR");
    unsetenv("LUA_PATH"); unsetenv("LUA_CPATH");
    temp_dir_remove(g_root);
    return 0;
}

/* Puts `code` (with "MARKER" and "ROOT" replaced by the paths) in front of
 * the template module `rel` (a path under t/). */
static void plant(const char *rel, const char *code) {
    char path[512], text[8192];
    snprintf(path, sizeof path, "%s/%s", g_tdir, rel);
    size_t n = 0;
    for (const char *c = code; *c && n < sizeof text - 400;) {
        if (strncmp(c, "MARKER", 6) == 0) { n += (size_t)snprintf(text + n, sizeof text - n, "%s", g_marker); c += 6; }
        else if (strncmp(c, "ROOT", 4) == 0) { n += (size_t)snprintf(text + n, sizeof text - n, "%s", g_root); c += 4; }
        else text[n++] = *c++;
    }
    text[n++] = '\n';
    size_t len = 0;
    char *old = mx_read_file(path, &len);
    char *all = malloc(n + len);
    assert_non_null(all);
    memcpy(all, text, n);
    if (old) memcpy(all + n, old, len);
    write_file(path, all, n + (old ? len : 0));
    free(all);
    free(old);
}

static int marker_exists(void) { return access(g_marker, F_OK) == 0; }

/* mxattn_create fails with MXATTN_ERROR_TEMPLATE, naming `needle`, and the
 * escape left no marker. */
static void expect_create_refused(const char *needle) {
    mxattn_options o;
    mxattn_options_init(&o);
    o.no_cache = 1;
    mxattn_ctx *ctx = NULL;
    mxattn_status st = mxattn_create(&ctx, &o);
    mxattn_destroy(ctx);
    if (st != MXATTN_ERROR_TEMPLATE)
        fail_msg("mxattn_create: %s (%s), want MXATTN_ERROR_TEMPLATE", mxattn_status_string(st), mxattn_last_error());
    if (needle && !strstr(mxattn_last_error(), needle))
        fail_msg("message '%s' lacks '%s'", mxattn_last_error(), needle);
    assert_null(ctx);
    assert_false(marker_exists());
}

/* The generator opens, and its first render fails with MXATTN_ERROR_TEMPLATE. */
static void expect_render_refused(const char *needle) {
    mx_gen *g = NULL;
    assert_int_equal(mx_gen_open(&g), MXATTN_OK);
    char *src = NULL;
    mxattn_status st = mx_gen_call(g, "render", "family=f16 head_dim=64", NULL, &src);
    free(src);
    mx_gen_close(g);
    if (st != MXATTN_ERROR_TEMPLATE)
        fail_msg("render: %s (%s), want MXATTN_ERROR_TEMPLATE", mxattn_status_string(st), mxattn_last_error());
    if (needle && !strstr(mxattn_last_error(), needle))
        fail_msg("message '%s' lacks '%s'", mxattn_last_error(), needle);
    assert_false(marker_exists());
}

/* The copy itself works, and what templates do use still does: require
 * caches, package.loaded, pcall, string methods, math.  What the sandbox
 * leaves out is absent. */
static void test_the_copy_works(void **state) {
    (void)state;
    plant("mxattn.lua",
          "assert(require('util') == require('util') and package.loaded.util == require('util'))\n"
          "assert(select(2, pcall(require, 'no_such_module')):find('no template', 1, true))\n"
          "assert(('%d'):format(math.floor(2.5)) == '2' and table.concat({'a','b'}) == 'ab')\n"
          "assert(collectgarbage('count') > 0)\n"
          "assert(package.loadlib == nil and package.cpath == nil and package.searchers == nil)\n"
          "for _, g in ipairs({'os', 'io', 'debug', 'coroutine', 'utf8', 'load', 'loadfile', 'dofile', 'print', 'warn'}) do\n"
          "  assert(_G[g] == nil, g)\n"
          "end\n"
          "assert(string.dump == nil and ('').dump == nil)");
    mx_gen *g = NULL;
    assert_int_equal(mx_gen_open(&g), MXATTN_OK);
    char *src = NULL;
    assert_int_equal(mx_gen_call(g, "render", "family=f16 head_dim=64", NULL, &src), MXATTN_OK);
    assert_non_null(strstr(src, "__global__"));
    free(src);
    mx_gen_close(g);
}

static void test_os_execute_in_a_template_is_refused(void **state) {
    (void)state;
    plant("mxattn.lua", "os.execute('touch MARKER')");
    expect_create_refused("os");
}

static void test_io_open_in_a_template_is_refused(void **state) {
    (void)state;
    plant("mxattn.lua", "io.open('MARKER', 'w'):close()");
    expect_create_refused("io");
}

/* Escapes planted in a block run at the first render, not at create. */
static void test_os_execute_in_a_block(void **state) {
    (void)state;
    plant("blocks/softmax.lua", "os.execute('touch MARKER')");
    expect_render_refused("os");
}

/* A family module is required under pcall at load; its failure must still
 * surface, as a template error, at the first call that needs the family. */
static void test_io_open_in_a_family(void **state) {
    (void)state;
    plant("families/f16.lua", "io.open('MARKER', 'w'):close()");
    expect_render_refused("io");
}

/* A C module in the template directory, on LUA_CPATH: Lua's C searcher
 * would dlopen it and run luaopen_cmod, which creates the marker. */
static void test_require_of_a_c_module(void **state) {
    (void)state;
    size_t len = 0;
    char *so = mx_read_file(GEN_SANDBOX_CMOD, &len);
    assert_non_null(so);
    char path[512];
    snprintf(path, sizeof path, "%s/cmod.so", g_tdir);
    write_file(path, so, len);
    free(so);
    snprintf(path, sizeof path, "%s/?.so", g_tdir);
    setenv("LUA_CPATH", path, 1);
    plant("mxattn.lua", "require('cmod')");
    expect_create_refused("cmod");
}

static void write_outside_script(void) {
    char path[512], text[600];
    snprintf(path, sizeof path, "%s/outside.lua", g_root);
    int n = snprintf(text, sizeof text, "io.open('%s', 'w'):close() return {}", g_marker);
    write_file(path, text, (size_t)n);
}

/* A module outside the template directory, found through LUA_PATH. */
static void test_require_through_lua_path(void **state) {
    (void)state;
    char path[512];
    write_outside_script();
    snprintf(path, sizeof path, "%s/?.lua", g_root);
    setenv("LUA_PATH", path, 1);
    plant("mxattn.lua", "require('outside')");
    expect_create_refused("outside");
}

/* A module in the working directory ("./?.lua" on Lua's default path). */
static void test_require_from_the_working_directory(void **state) {
    (void)state;
    char cwd[1024];
    write_outside_script();
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_root), 0);
    plant("mxattn.lua", "require('outside')");
    expect_create_refused("outside");
    assert_int_equal(chdir(cwd), 0);
}

/* Names are dotted identifiers only: "../x", "/abs" and "a/b" are refused
 * even where a file of that name exists. */
static void test_require_of_a_path(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/x.lua", g_tdir);
    write_file(path, "return {}", 9);
    snprintf(path, sizeof path, "%s/x.lua", g_root);
    write_file(path, "return {}", 9);
    const char *names[] = { "../x", "/x", "ROOT/x", "..x", "x.", ".x", "blocks/softmax", "x-y", "" };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char code[600];
        snprintf(code, sizeof code, "require('%s')", names[i]);
        plant("mxattn.lua", code);
        expect_create_refused("template name");
        /* Take the line out again: plant() prepends. */
        snprintf(path, sizeof path, "%s/mxattn.lua", g_tdir);
        size_t len = 0;
        char *text = mx_read_file(path, &len);
        char *nl = strchr(text, '\n');
        write_file(path, nl + 1, len - (size_t)(nl + 1 - text));
        free(text);
    }
    plant("mxattn.lua", "assert(require('x'))"); /* the same file by its proper name loads */
    mx_gen *g = NULL;
    assert_int_equal(mx_gen_open(&g), MXATTN_OK);
    mx_gen_close(g);
}

static void test_dofile_of_a_script_outside_is_refused(void **state) {
    (void)state;
    write_outside_script();
    plant("mxattn.lua", "dofile('ROOT/outside.lua')");
    expect_create_refused("dofile");
}

static void test_loadfile_of_a_script_outside_is_refused(void **state) {
    (void)state;
    write_outside_script();
    plant("mxattn.lua", "loadfile('ROOT/outside.lua')()");
    expect_create_refused("loadfile");
}

typedef struct { unsigned char data[4096]; size_t len; } chunk;

static int dump_writer(lua_State *L, const void *p, size_t sz, void *ud) {
    (void)L;
    chunk *c = ud;
    if (sz > sizeof c->data - c->len) return 1;
    memcpy(c->data + c->len, p, sz);
    c->len += sz;
    return 0;
}

/* A real Lua 5.4 binary chunk for `code`, as luac writes it. */
static void bytecode(const char *code, chunk *out) {
    lua_State *L = luaL_newstate();
    assert_non_null(L);
    assert_int_equal(luaL_loadstring(L, code), LUA_OK);
    out->len = 0;
    assert_int_equal(lua_dump(L, dump_writer, out, 0), 0);
    lua_close(L);
    assert_true(out->len > 4 && out->data[0] == 0x1b);
}

static void test_load_of_a_binary_chunk(void **state) {
    (void)state;
    char code[600], line[8400];
    snprintf(code, sizeof code, "io.open('%s', 'w'):close()", g_marker);
    chunk c;
    bytecode(code, &c);
    /* The bytes as a string literal of \ddd escapes. */
    size_t n = (size_t)snprintf(line, sizeof line, "load(\"");
    for (size_t i = 0; i < c.len && n < sizeof line - 8; i++) n += (size_t)snprintf(line + n, sizeof line - n, "\\%03u", c.data[i]);
    snprintf(line + n, sizeof line - n, "\")()");
    plant("mxattn.lua", line);
    expect_create_refused("load");
}

static void test_string_dump_and_load(void **state) {
    (void)state;
    plant("mxattn.lua", "assert(load(string.dump(function() return 1 end), 'x', 'b'))");
    expect_create_refused(NULL);
}

/* A template file that is bytecode, not source, is refused by require too. */
static void test_bytecode_template_file(void **state) {
    (void)state;
    char code[600];
    snprintf(code, sizeof code, "io.open('%s', 'w'):close() return {}", g_marker);
    chunk c;
    bytecode(code, &c);
    char path[512];
    snprintf(path, sizeof path, "%s/compiled.lua", g_tdir);
    write_file(path, c.data, c.len);
    plant("mxattn.lua", "require('compiled')");
    expect_create_refused("binary");
}


/* cuda_file(name) reads a CUDA file of the templates and nothing else: a path
 * that leaves the directory, an absolute one or another extension is
 * refused even where the file exists; a file read at load time is in the
 * template hash, so editing it makes new tuning keys. */
static void test_cuda_file_reads_only_template_cuda_files_into_hash(void **state) {
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/cuda", g_tdir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/cuda/probe.cuh", g_tdir);
    write_file(path, "// one", 6);
    snprintf(path, sizeof path, "%s/outside.cuh", g_root);
    write_file(path, "// out", 6);
    plant("mxattn.lua",
          "local a = cuda_file('cuda/probe.cuh')\n"
          "assert(a:sub(1, 3) == '// ' and #a == 6 and cuda_file('cuda/probe.cuh') == a)\n"
          "for _, n in ipairs({'../outside.cuh', 'ROOT/outside.cuh', '/etc/passwd', 'cuda//probe.cuh',\n"
          "                    'cuda/probe.lua', 'cuda/', '.cuh', 'cuda/../cuda/probe.cuh', 'cuda/nope.cuh'}) do\n"
          "  assert(not pcall(cuda_file, n), n)\n"
          "end");
    mx_gen *g = NULL;
    if (mx_gen_open(&g) != MXATTN_OK) fail_msg("%s", mxattn_last_error());
    char before[65];
    snprintf(before, sizeof before, "%s", mx_gen_template_hash(g));
    mx_gen_close(g);
    snprintf(path, sizeof path, "%s/cuda/probe.cuh", g_tdir);
    write_file(path, "// two", 6);
    assert_int_equal(mx_gen_open(&g), MXATTN_OK);
    assert_string_not_equal(before, mx_gen_template_hash(g));
    mx_gen_close(g);
}

/* Each test gets a fresh copy of the templates of its own. */
#define SANDBOX_TEST(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
    const struct CMUnitTest tests[] = {
        SANDBOX_TEST(test_the_copy_works),
        SANDBOX_TEST(test_os_execute_in_a_template_is_refused),
        SANDBOX_TEST(test_io_open_in_a_template_is_refused),
        SANDBOX_TEST(test_os_execute_in_a_block),
        SANDBOX_TEST(test_io_open_in_a_family),
        SANDBOX_TEST(test_require_of_a_c_module),
        SANDBOX_TEST(test_require_through_lua_path),
        SANDBOX_TEST(test_require_from_the_working_directory),
        SANDBOX_TEST(test_require_of_a_path),
        SANDBOX_TEST(test_dofile_of_a_script_outside_is_refused),
        SANDBOX_TEST(test_loadfile_of_a_script_outside_is_refused),
        SANDBOX_TEST(test_load_of_a_binary_chunk),
        SANDBOX_TEST(test_string_dump_and_load),
        SANDBOX_TEST(test_bytecode_template_file),
        SANDBOX_TEST(test_cuda_file_reads_only_template_cuda_files_into_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
