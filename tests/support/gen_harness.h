/* Helpers of the template tests (test_templates*.c): calls into the template
 * engine that fail the calling cmocka test with the engine's message. */
#ifndef MXATTN_TESTS_GEN_HARNESS_H
#define MXATTN_TESTS_GEN_HARNESS_H

#include "gen/gen.h"
#include "runtime/nvrtc.h"

/* "family=F head_dim=D", then `knobs` without the keys that `extra` sets,
 * then `extra`: a parameter text names each key once (the templates refuse
 * a duplicate). */
void gen_params_with(char *out, size_t cap, const char *family, int head_dim, const char *knobs,
                     const char *extra);
/* mx_gen_call(g, fn, a1, a2), failing the test on error; the caller frees the result. */
char *gen_call(mx_gen *g, const char *fn, const char *a1, const char *a2);
/* Renders `params`, its canonical text and `params` again, asserts the three
 * sources are the same text, name `family` in their params line and include
 * no header; returns the source (the caller frees it) for the caller's own
 * structure checks.  Every template test's determinism check. */
char *gen_render_stable(mx_gen *g, const char *params, const char *family);
/* A launch plan's kernel lines ("kernel NAME GX GY GZ THREADS SMEM [RESIDENT]
 * ..."), in launch order: fills out[0..max-1], fails the test on a malformed
 * line and returns how many kernels the plan names.  resident: a persistent
 * kernel's blocks an SM, 0 for a grid of one block a unit. */
typedef struct { char name[128]; unsigned grid[3], threads, smem; int resident; } gen_plan_kernel;
int gen_plan_kernels(const char *plan, gen_plan_kernel *out, int max);
/* The name of the plan's last kernel (the attention kernel), into name[cap];
 * fails the test when the plan names none. */
void gen_plan_last_kernel(const char *plan, char *name, size_t cap);
/* The launch plan of `params` for `shape` (free it), its kernels parsed
 * into k (at most cap); asserts that it has `expect` of them. */
char *gen_launch(mx_gen *g, const char *params, const char *shape, gen_plan_kernel *k, int cap, int expect);
/* Asserts a plan kernel's grid and block size. */
void expect_plan_kernel(const gen_plan_kernel *k, unsigned gx, unsigned gy, unsigned gz, unsigned threads);
/* The number after the plan's first `key` ("workspace ", "wsoff 2 "); 0 if absent. */
unsigned long long gen_plan_value(const char *plan, const char *key);
/* Asserts that rendering `params` is refused as an invalid value, with a
 * message that contains `needle`, and returns no source. */
void gen_expect_invalid(mx_gen *g, const char *params, const char *needle);
/* gen_expect_invalid for each of a table of cases. */
typedef struct { const char *params, *needle; } gen_invalid_case;
void gen_expect_invalid_cases(mx_gen *g, const gen_invalid_case *cases, size_t n);
/* Asserts that every line of candidates(params) validates when appended to
 * params, hands each canonical text to `check` (unless NULL), and returns
 * the number of candidates. */
int gen_expect_candidates_valid(mx_gen *g, const char *params, void (*check)(const char *canon));
/* Each "prefix table" validates, and its canonical text holds `needle`. */
void gen_expect_valid(mx_gen *g, const char *prefix, const char *const *tables, size_t n, const char *needle);
/* Prints the registers of a compiled warpgroup kernel (`label` names the
 * row) and fails the test if ptxas spilled, used a stack, serialized its
 * warpgroup MMAs or ignored its setmaxnreg (warnings C7508, C7510). */
void expect_lean_wgmma_kernel(const char *params, const char *label, const mx_compile_result *r);
/* Compiles `prefix` + each case with `compile` (the test file's: 0 when NVRTC
 * is absent, and then this returns 0 for the caller to skip) and checks each
 * block_m=192 kernel (three consumer warpgroups) with
 * expect_lean_wgmma_kernel; a producer (warps=16) must split the registers
 * 24 + 3 x 160. */
int expect_three_consumer_kernels(int (*compile)(const char *, mx_compile_result *), const char *prefix,
                                  const char *const *cases, size_t n);

/* Opens the template engine into *g, runs `tests` as the cmocka group
 * "tests" and closes it: the one main of the template tests.  1, with the
 * engine's message, when it does not open. */
struct CMUnitTest;
int gen_run_tests(mx_gen **g, const struct CMUnitTest *tests, size_t count);
/* Asserts that `src` holds each of want[0..n-1], naming `what` and the first
 * it lacks: a rendered kernel's structure checks as a table. */
void gen_expect_contains(const char *src, const char *what, const char *const *want, size_t n);
/* Renders `params`, plans it on `shape` (one kernel) and returns the source
 * (the caller frees it), with header[cap] set to the line that must declare
 * the plan's kernel ("\n#define KERNEL_NAME <name>\n"); asserts the kernel's
 * own compile guard and that no template hole is left.  The
 * header-then-CUDA-file tests' common part. */
char *gen_render_with_header(mx_gen *g, const char *params, const char *shape, char *header, size_t cap);
/* The determinism sweep of a family's templates: for each head dim and
 * extra, "family=F head_dim=D" with knobs(D) and the extra (gen_params_with)
 * renders stably (gen_render_stable) and holds each of want[]. */
void gen_expect_stable_sweep(mx_gen *g, const char *family, const int *dims, size_t n_dims, const char *(*knobs)(int d),
                             const char *const *extra, size_t n_extra, const char *const *want, size_t n_want);

#endif
