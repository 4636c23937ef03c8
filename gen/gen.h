/* gen: the template engine.  A Lua 5.4 state that holds the templates and the
 * parameter space (templates/space.lua) and answers string questions:
 *
 *   mx_gen_call(g, "render", "family=f16 head_dim=80 ...", NULL, &source)
 *
 * Parameter tables cross this boundary as canonical "key=value key=value"
 * text, which is also what cache keys hash.  The callable functions are those
 * of templates/mxattn.lua.  The one structured answer, a launch plan, is read
 * from the Lua table the templates return (mx_gen_launch), never as text.
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

/* A launch plan as the templates computed it (mxattn.launch_plan): plain data,
 * declared here because gen reads it and sits beside runtime/, which runs it;
 * jit/ turns it into runtime's mx_launch_plan. */
#define MX_GEN_MAX_KERNELS 4
#define MX_GEN_MAX_TMAPS 4
#define MX_GEN_MAX_WS_OFF 8

typedef struct {
    char name[128];
    unsigned grid[3];
    unsigned block;          /* threads */
    int smem;                /* dynamic shared memory, bytes */
    int resident;            /* > 0: persistent, at most this many blocks per SM (grid[1] = grid[2] = 1) */
    int pdl;                 /* 1: a programmatic dependent of the kernel before it (never the first) */
} mx_gen_kernel;

typedef struct {
    int slot;                /* 0 .. MX_GEN_MAX_TMAPS-1 */
    char tensor;             /* 'q', 'k', 'v', 'o', or 'w': a workspace section */
    unsigned head_dim;       /* q/k/v/o: the head dimension; w: the section's columns */
    int section, elem_bytes; /* w only: ws_off index, 1 or 2 */
    unsigned rows, heads, batch;  /* w only */
    unsigned box_cols, box_rows;
    int swizzle;
} mx_gen_tmap;

typedef struct {
    unsigned long long workspace;
    unsigned long long ws_off[MX_GEN_MAX_WS_OFF];
    int n_kernels, n_tmaps;
    int main;                /* the attention kernel's index (0-based; the plan's 'main', default the last) */
    mx_gen_kernel kernels[MX_GEN_MAX_KERNELS];
    mx_gen_tmap tmaps[MX_GEN_MAX_TMAPS];
} mx_gen_launch;

/* Calls mxattn.launch_plan(params, sizes) and reads the table it returns
 * through Lua's C API: { workspace = N, ws_off = {N, ...}, main = i (the
 * attention kernel, 1-based; optional, the last), kernels = {{name =,
 * grid = {x, y, z}, block =, smem =, resident =, pdl =}, ...}, tmaps = {{slot =,
 * tensor = "q", box_cols =, box_rows =, swizzle =, head_dim =} or {slot =,
 * section =, elem_bytes =, cols =, rows =, heads =, batch =, box_cols =,
 * box_rows =, swizzle =}, ...} }.  A table of another shape (a missing or
 * unknown field, a wrong type, a value out of range) is MXATTN_ERROR_TEMPLATE
 * with a message naming the field, e.g. "kernels[2].grid[3]". */
mxattn_status mx_gen_launch_plan(mx_gen *g, const char *params, const char *sizes, mx_gen_launch *out);
/* The same reader over the table that `chunk` (Lua text, "return {...}")
 * returns, run in a bare state with no library: for tests of the reader. */
mxattn_status mx_gen_launch_from_chunk(const char *chunk, mx_gen_launch *out);

/* One parameter of the parameter space (templates/space.lua), as
 * mxattn.param_table returns it. */
typedef struct {
    char name[32];
    char role[16];           /* shape, problem or knob */
    char legal[256];         /* "16|32|64", or "8..256" for a range */
    char default_value[32];  /* "" when the table gives none */
    char families[128];      /* "" (every family) or the families that read it, space-separated */
    char help[1024];
    int is_bool, is_range;
    long min, max;           /* is_range only */
} mx_gen_param;

/* Calls mxattn.param_table() and reads its list of tables: *out is malloc'd
 * (free() it), *count entries.  A malformed table is MXATTN_ERROR_TEMPLATE. */
mxattn_status mx_gen_params(mx_gen *g, mx_gen_param **out, int *count);

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
