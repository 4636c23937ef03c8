/* Shared by the GPU tests: a device or a skip, tensors with arbitrary
 * strides, and the comparison against the CPU reference in numerics/. */
#ifndef MX_TEST_GPU_HARNESS_H
#define MX_TEST_GPU_HARNESS_H
#include <stddef.h>
#include <stdint.h>
#include "mxattn.h"
#include "numerics/numerics.h"
#include "runtime/device.h"

/* Exit code that ctest reports as "skipped". */
#define MX_TEST_SKIP 77

/* Opens GPU 0 or exits the process with MX_TEST_SKIP and a message. */
void gpu_open_or_skip(mx_device *dev, const char *test_name);

/* The base of a test's seeds: the time, so every run draws fresh inputs, or
 * MXATTN_TEST_SEED to replay a run (a failing case prints its seed; its base
 * is that seed minus the case's offset in the test's source). */
uint64_t gpu_seed_base(void);

/* Runs `tests` (count of them) as the cmocka group `group`, as the command
 * line asks.  No argument: all but the speed lines, which are measurements,
 * not checks, and cost minutes of GPU time.  A glob: the tests it
 * names (`'*speed*'` included).  `--part K/N`: every Nth test from the Kth
 * on, speed lines left out, so that ctest runs a suite too long for its
 * timeout as N processes side by side (GPU_TEST_PARTS in tests/
 * CMakeLists.txt; the interleaving spreads the long tests over the parts). */
struct CMUnitTest;
int gpu_run_tests(const char *group, const struct CMUnitTest *tests, size_t count, int argc, char **argv);

/* The main of a GPU test whose tests share a scratch directory and a
 * database in it (gpu_plan_store, gpu_tune_rows): skips without a GPU, makes
 * dir ("/tmp/<prefix>-XXXXXX") and db (`db_name` in it), runs the tests as
 * the cmocka group "tests" and removes dir.  1 when dir cannot be made. */
int gpu_run_in_temp_dir(const char *name, const char *prefix, char *dir, size_t cap, char *db, size_t dbcap,
                        const char *db_name, const struct CMUnitTest *tests, size_t count);
/* An f16 problem of `batch` x `heads` query and KV heads, `seq` queries and
 * keys, the rest mxattn_problem_init's: the plan-level tests' shape. */
mxattn_problem gpu_f16_problem(int head_dim, int batch, int heads, int seq);

/* One attention case. */
typedef struct {
    const char *family;
    int batch, heads_q, heads_kv, seq_q, seq_k, head_dim;
    mxattn_causal causal;
    mxattn_dtype dtype;
    mxattn_layout layout;
    int pad;          /* extra elements per row (and per head/batch) to make strides non-contiguous */
    int lse;
    const char *config;   /* NULL: the library chooses; else an explicit "block_m=.. ..." */
    int v_terms;          /* int8-fp8: E4M3 terms of V (0 reads as 1) */
    int launches;         /* runs of the same plan, the output poisoned again before the
                             last, which is checked (0 reads as 1): state a plan keeps
                             between runs (a persistent kernel's counters) must be right */
} gpu_case;

typedef struct {
    mx_error_stats o;      /* kernel vs reference */
    double lse_max_abs;    /* max |lse - lse_ref| over rows that see a key */
    long lse_rows_over;    /* rows whose |lse - lse_ref| is above GPU_LSE_VS_PIPE */
    long unwritten;        /* outputs still holding the poison */
    double ms;             /* one launch, events */
    char config[256];
} gpu_result;

/* A case's kernel run: random inputs (Gaussian, rounded to the dtype) at
 * the case's strides with NaN in the gaps, the plan of c->config run on them
 * with a poisoned output (c->launches times), and what it wrote, all in BHND
 * contiguous order.  Freed with gpu_output_free (also on failure). */
typedef struct {
    float *q, *k, *v;      /* the rounded inputs */
    float *o;              /* the kernel's output */
    float *lse;            /* the kernel's LSE; NULL unless c->lse */
    long unwritten;        /* outputs still holding the poison */
    double ms;             /* the last launch, events */
    char config[256];      /* the plan's canonical config */
} gpu_output;
mxattn_status gpu_run_output(mxattn_ctx *ctx, const mx_device *dev, const gpu_case *c, uint64_t seed,
                             gpu_output *out);
void gpu_output_free(gpu_output *out);

/* Builds random inputs (Gaussian, rounded to the dtype), runs the family's
 * plan on them with a poisoned output, and compares with the fp64 reference
 * (or with `reference`, when given: a function computing the expected O
 * from the rounded float inputs, in BHND contiguous layout, for the plan's
 * canonical `config`). */
typedef mxattn_status (*gpu_reference_fn)(const gpu_case *c, const char *config, const float *q, const float *k,
                                          const float *v, double *o, double *lse);
mxattn_status gpu_run_case(mxattn_ctx *ctx, const mx_device *dev, const gpu_case *c, uint64_t seed,
                           gpu_reference_fn reference, gpu_result *r);
/* Milliseconds per run of a plan of `p` with `config` (NULL: the library's
 * choice): the mean of 10 runs after 3 warm-ups, or -1 if the plan or a run
 * failed.  `used` receives the plan's config and register count. */
double gpu_time_plan(mxattn_ctx *ctx, const mx_device *dev, const mxattn_problem *p, const char *config,
                     void *q, void *k, void *v, void *o, char *used, size_t used_len);
void gpu_case_describe(const gpu_case *c, char *out, size_t cap);
/* The speed lines' problem: `family`, B x H heads (MHA) of N queries and
 * keys at head dim D, top-left causal or none; *flops gets 4 B H N^2 D,
 * halved for causal. */
mxattn_problem gpu_speed_problem(const char *family, int head_dim, int batch, int heads, int seq, int causal,
                                 double *flops);
/* The f16 kernels' check of one case, gpu_f16's and gpu_decode's alike: the
 * fp64 reference within 3e-3 relative L1 for bf16 (8 significant bits:
 * rounding P and O costs ~1e-3) or 1e-3 for f16, the LSE within 1e-3, every
 * output written and, unless `variant` is NULL, a config that names it
 * ("variant=decode").  Prints a line; returns 1 on failure, else 0. */
int gpu_check_f16_case(mxattn_ctx *ctx, const mx_device *dev, const gpu_case *c, uint64_t seed,
                       const char *variant);
/* Runs `plan` (made for `p`) on BHND contiguous bf16 copies of q, k, v
 * (floats already bf16-exact) with O and the LSE poisoned first, and returns
 * O as floats and, unless lse is NULL, the LSE.  The poison (bf16 3.39e38,
 * an LSE of 1e30) is finite and never an output, so a NaN check and the
 * written check stay apart. */
#define GPU_OUT_POISON 0x7f7fu
#define GPU_LSE_POISON 1e30f
mxattn_status gpu_run_bf16(const mx_device *dev, mxattn_plan *plan, const mxattn_problem *p, const float *q,
                           const float *k, const float *v, float *o, float *lse);
/* n Gaussian values of mean and sd, rounded to bf16. */
void gpu_random_bf16(mx_rng *rng, float *x, size_t n, double mean, double sd);
/* A context with no cache, so that every kernel is compiled: the GPU tests
 * check the code path, not the cache.  NULL (and a line printed) on failure. */
mxattn_ctx *gpu_cacheless_ctx(void);
/* Mix j of the warpgroup kernels' head-dim sweeps: batch, KV heads and query
 * heads per KV head, causal alignment, dtype, layout, padding, LSE and the
 * lengths (ragged, Nq != Nk, one row) all turn over with j. */
gpu_case gpu_head_dim_case(const char *family, int head_dim, int j);
/* Case i of the tile sweeps (one kernel configuration each): D=128, batch 2,
 * 4 query heads on 2 KV heads, Nq=333, Nk=1000, padded BNHD strides, the
 * LSE; causal none/top-left/bottom-right and bf16/f16 turn over with i. */
gpu_case gpu_tile_sweep_case(const char *family, int i);
/* Case i of the ragged-lengths sweeps: Nq and Nk each from the first n_lens
 * of {1, 17, 127, 1000, 4097} (the pairs above 1000 x 4097 left out for the
 * CPU reference's time), D 128 or 64, both causal alignments, both layouts,
 * padded strides, the LSE.  Returns 0 past the last case. */
int gpu_lengths_case(const char *family, int n_lens, int i, gpu_case *c);
/* The sweeps that the wgmma suites (gpu_wgmma, gpu_int8_wgmma) run the same
 * way through their own check: `check` runs one case under an explicit
 * configuration and returns 1 on failure; config_for(D, i) is the file's
 * i-th configuration for head dim D.  Both return the failures. */
typedef int (*gpu_check_fn)(const gpu_case *c, const char *config, uint64_t seed);
typedef const char *(*gpu_config_fn)(int head_dim, int i);
/* Case i of gpu_lengths_case(family, n_lens) under config_for(D, i), seed
 * gpu_seed_base() + seed + i. */
int gpu_check_lengths(const char *family, int n_lens, gpu_config_fn config_for, gpu_check_fn check, uint64_t seed);
/* Grouped-query heads: 1, 4 and 8 query heads on each of 2 KV heads, `batch`
 * batches, Nq=200, Nk=333, bottom-right causal, bf16, both layouts, padding
 * 8 * i, the LSE, D=other_dim for case 1 and 128 for the others; under
 * config_for(D, i), seed gpu_seed_base() + seed + i. */
int gpu_check_gqa(const char *family, int batch, int other_dim, gpu_config_fn config_for, gpu_check_fn check,
                  uint64_t seed);
/* `count` device buffers of `elems` bf16 values each, filled with a repeating
 * 1M-element Gaussian pattern (inputs for timing, not for checking); freed
 * with gpu_free_buffers.  Fails the calling cmocka test on error. */
void gpu_gaussian_buffers(const mx_device *dev, int count, size_t elems, void **bufs);
void gpu_free_buffers(const mx_device *dev, int count, void **bufs);
/* The quantized-pipeline reference of an INT8 family (int8-f16, int8-fp8) as
 * the kernel of `config` (a plan's canonical config) quantizes: Q and K as the
 * family's numerics say (Q pre-scaled by sm_scale*log2 e, as api/plan.c
 * computes it), P per key tile of the config's block_n; the wgmma kernels
 * but the ping-pong (overlap=0, 2 and 3) fold P's exponent (mx_ref_config.p_fold:
 * their fp32 constant flips a P code now and then, 2-4e-3 on a one-row case,
 * bench/NOTES.md), rowsum_mma=1 sums P as E4M3 (l_from_p_hat). Reading all of
 * it from the config keeps every GPU test's reference in step with the
 * defaults: gpu_int8 once assumed mma.sync kernels after int8-fp8's default
 * had become wgmma with rowsum_mma=1 (2-6e-3 off). */
mxattn_status gpu_int8_pipeline_reference(const gpu_case *c, const char *config, const float *q, const float *k,
                                          const float *v, double *o, double *lse);

/* The LSE of an INT8 kernel against its pipeline reference: within 2e-3 but
 * in a few rows.  One P code that fp32 and fp64 round apart moves l by up to
 * an E4M3 step of that P (1/16 to 1/8 of it), and with rowsum_mma=1 l sums
 * the codes themselves: in a row of 17 keys that reads 2-3e-3 (seen in one
 * row of 8194).  So at most 1 + rows/4096 rows above 2e-3, and none above
 * what one flip can do, ln(1 + 1/16) (two keys that share the row's mass; the
 * row's maximum is exactly 1 and never flips).  A wrong scale or mask moves
 * the LSE of many rows, by 0.1 or more. */
#define GPU_LSE_VS_PIPE 2e-3
#define GPU_LSE_ONE_FLIP 0.061
int gpu_lse_matches_pipeline(double worst, long rows_over, long rows);
/* The largest |lse - ref| over the rows that see a key (both -inf: none);
 * *rows_over (unless NULL) counts the rows above GPU_LSE_VS_PIPE. */
double gpu_lse_error(const float *lse, const double *ref, size_t rows, long *rows_over);

/* One run of a case checked against two references on the same output:
 * `pipeline`, the family's quantized reference, into r->pipe, and fp64 into
 * r->exact; r->design is what the pipeline itself scores against fp64, which
 * gpu_exact_bounds loosens the fp64 bounds by; r->what is the case in words
 * (gpu_case_describe).  `diagnose` (unless NULL) sees
 * the output and the pipeline's, to say where a failure sits.  On an error
 * prints a FAIL line for the case and returns the status. */
typedef struct { gpu_result pipe, exact; mx_error_stats design; char what[256]; } gpu_two_refs;
typedef void (*gpu_diagnose_fn)(const gpu_case *c, const float *o, const double *o_pipe, const gpu_result *pipe);
mxattn_status gpu_run_two_refs(mxattn_ctx *ctx, const mx_device *dev, const gpu_case *c, uint64_t seed,
                               gpu_reference_fn pipeline, gpu_diagnose_fn diagnose, gpu_two_refs *r);
/* The bounds of a kernel against fp64: the family's (family_rel_l1,
 * family_cos, what its design scores over many rows), loosened where the
 * design is further from fp64 on this case's own inputs (a handful of rows
 * varies more between seeds: int8-fp8 on one query row read 0.035-0.051
 * rel-L1 against a family bound of 0.05) to 1.25x the design's error plus
 * the kernel's rounding `tol`, at most 1.5x the family's.  The kernel's
 * match with the pipeline is checked tightly apart from this. */
typedef struct { double rel_l1, cos; } gpu_bounds;
gpu_bounds gpu_exact_bounds(double family_rel_l1, double family_cos, mx_error_stats design, double tol);

/* Bounds against fp64, from the pipeline reference itself (numerics, Gaussian
 * bf16 inputs, Q/K per 16, p_tile 32): int8-f16 measures cos 0.99993-0.99996,
 * rel-L1 0.008-0.012 over D 64-256 and N 17-1000 (INT8 scores: a relative
 * error ~0.9% per code, ~0.013 on a score, which softmax turns into ~1% on O);
 * int8-fp8 measures cos 0.99928-0.99961, rel-L1 0.028-0.038 (E4M3 keeps 3
 * mantissa bits: ~2.7% rms on each P and V element, the bulk of the error;
 * this matches SageAttention2's 0.9993 / 0.038).  The bounds leave room for
 * seed-to-seed variation and the output's bf16 rounding (~1e-3). */
#define F16_FAMILY_COS 0.9998
#define F16_FAMILY_REL_L1 0.02
#define FP8_FAMILY_COS 0.9985
#define FP8_FAMILY_REL_L1 0.05
#define LSE_VS_FP64 0.1        /* quantized scores shift each row's LSE by ~their error */
/* Against the pipeline: what remains is the output's rounding (bf16 ~2^-9
 * relative, f16 ~2^-12), ex2.approx, fp32 accumulation and rare code flips
 * where fp32 and fp64 round a P element differently. */
#define PIPE_REL_L1_BF16 4e-3
#define PIPE_REL_L1_F16 2e-3
#define PIPE_COS 0.99998

/* The INT8 kernels' check of one case (gpu_int8's, gpu_decode's): against
 * gpu_int8_pipeline_reference within the PIPE_* bounds and its LSE rule, and
 * against fp64 within the family's bounds loosened by gpu_exact_bounds;
 * every output written and, unless `variant` is NULL, a config that names it.
 * Prints a line; returns 1 on failure, else 0. */
int gpu_check_int8_case(mxattn_ctx *ctx, const mx_device *dev, const gpu_case *c, uint64_t seed,
                        const char *variant);
#endif
