/* The tuner's decisions, as pure functions: no GPU, no cache, no generator.
 * tune.c strings them together around the GPU; tests/test_tuner.c checks them
 * on recorded numbers.  Nothing here allocates except where it says so. */
#ifndef MX_TUNER_TUNE_LOGIC_H
#define MX_TUNER_TUNE_LOGIC_H
/* Spill bytes (stores + loads) a candidate may have and still be measured. */
#define MX_TUNE_SPILL_ALLOWANCE 128

#include <stddef.h>
#include <stdint.h>
#include "cache/cache.h"
#include "tuner/tune.h"

/* ---- candidates ----------------------------------------------------------- */

/* Splits the templates' candidate text (one knob string per line, the
 * heuristic default first) into at most `max` (0: all) strings pointing into
 * `text`, which is modified in place (newlines become NULs).  Blank lines are
 * skipped.  Returns the number kept. */
int mx_tune_split_candidates(char *text, const char **out, int cap, int max);

/* ---- pruning by resources ------------------------------------------------- */

/* What one compiled kernel asks of an SM, from ptxas and the launch plan. */
typedef struct {
    int registers;             /* per thread */
    int spill_bytes;           /* spill stores + loads; > 0 means local-memory traffic */
    int threads;               /* per block */
    int smem_bytes;            /* dynamic + static shared memory per block */
} mx_kernel_resources;

/* What the GPU offers (device.h's fields). */
typedef struct {
    int smem_per_block_optin;
    int smem_per_sm;
    int regs_per_sm;
    int max_threads_per_sm;
    int max_threads_per_block; /* 1024 on every GPU mxattn targets */
} mx_resource_limits;

void mx_resource_limits_of(const mx_device *dev, mx_resource_limits *out);

/* Thread blocks of this kernel that fit on one SM at once (0: it cannot
 * launch).  Registers are allocated per warp in units of 256. */
int mx_tune_blocks_per_sm(const mx_kernel_resources *k, const mx_resource_limits *lim);

/* NULL when the kernel may be measured, else MX_MEASURE_OUT_OF_RESOURCES with
 * the reason in `why`: it spills (a spilling attention kernel is never the
 * fastest, and timing it only costs time), or it cannot launch at all. */
const char *mx_tune_prune(const mx_kernel_resources *k, const mx_resource_limits *lim,
                          char *why, size_t why_len);

/* ---- timing statistics ---------------------------------------------------- */

typedef struct { double median, p10, p90, spread; } mx_timing_stats;

/* Sorts `ms` in place; percentiles by linear interpolation; spread is
 * (p90 - p10) / median (0 when the median is 0).  n >= 1. */
void mx_tune_stats(float *ms, int n, mx_timing_stats *out);

/* ---- checking a candidate's output against the default's ------------------ */

/* How far a candidate's bf16/f16 output may lie from the default's on the
 * same inputs: element-wise |got - ref| <= atol + rtol * |ref|, like
 * torch.allclose, and over the whole tensor sum |got - ref| / sum |ref| <=
 * rel_l1.  A NaN or infinity where the reference is finite (O is poisoned
 * with NaN before the check run, so an element the kernel never wrote shows
 * up this way) is always a mismatch.
 *
 * Two correct kernels of one family differ by their rounding of P, and a
 * family's knobs may legitimately change it (the key tile is an FP4 family's
 * P scale block; int8-fp8's ping-pong keeps P's unit 448 and its plain row
 * sum).  The CPU reference measured, on the tuner's inputs (scores ~
 * N(0, 2.5^2), N=4096, D=128), between variants of one family: P in f16 /
 * bf16 under 2e-5 rel-L1; E4M3 P 1-2.3e-3 rel-L1 (the GPU: 2.3e-3, one
 * element in 67M 0.047 off); NVFP4 P 5-8e-3; MXFP4 P 2.8-4.4e-2, elements
 * up to 0.08 off in 32K.  So the bounds follow P's format, each several
 * times what was measured: what they must catch is a wrong kernel, whose
 * output is NaN (unwritten) or off by its whole magnitude somewhere. */
typedef struct { double atol, rtol, rel_l1; } mx_tune_tolerance;
#define MX_TUNE_ATOL 2e-2      /* P in f16 / bf16 (or exact) */
#define MX_TUNE_RTOL 2e-2
#define MX_TUNE_REL_L1 5e-3

/* The bounds for a family's candidates (and its direct_p choice: the FP4
 * families' P with one level of scales or two).  An unknown family gets the
 * f16 bounds. */
void mx_tune_tolerance_of(const char *family, int direct_p, mx_tune_tolerance *out);

typedef struct {
    double max_abs;            /* largest |got - ref| */
    double max_excess;         /* largest |got - ref| - (atol + rtol |ref|); <= 0 passes */
    double rel_l1;
    size_t nonfinite;          /* elements non-finite in got but finite in ref */
    size_t first_bad;          /* index of the first element over the tolerance */
    int ok;
} mx_output_diff;

void mx_tune_compare(const float *ref, const float *got, size_t n, const mx_tune_tolerance *tol,
                     mx_output_diff *d);

/* ---- choosing the winner -------------------------------------------------- */

/* Two medians within this fraction are a tie: GPU timing noise is about 1%,
 * so a smaller "win" is not evidence. */
#define MX_TUNE_TIE_FRACTION 0.01

/* Index of the winner among `m` (status "ok" only), or -1 when none is ok.
 * The fastest median wins, except that the heuristic default (`default_config`,
 * may be NULL) wins any tie with it: switching away from it needs a real
 * speed-up.  Exactly equal medians go to the smaller spread, then the
 * smaller config string, so the choice never depends on the input order. */
int mx_tune_choose_winner(const mx_measurement *m, int n, const char *default_config);

/* ---- sizes ---------------------------------------------------------------- */

/* The sizes as the templates read them ("batch=.. heads_q=.. seq_q=.."): the
 * launch plan's problem and the default's choice (mxattn.candidates). */
void mx_tune_sizes_text(const mx_tune_sizes *s, char *out, size_t cap);

/* Tensor operations of one attention call: 4 * B * Hq * Nq * Nk * D
 * (two matrix products of 2 flops per multiply-add), halved under a causal
 * mask. */
double mx_tune_flops(const mx_tune_sizes *s);
/* Tera-operations per second at `ms`; 0 when ms <= 0. */
double mx_tune_tops(const mx_tune_sizes *s, double ms);

/* Copies of the inputs to rotate among so that the bytes touched between two
 * launches of the same copy exceed the L2 cache twice over: 1 when one set
 * alone does, at most `max_sets`. */
int mx_tune_input_sets(size_t set_bytes, size_t l2_bytes, int max_sets);

/* Expected seconds left given `done` of `total` units took `elapsed_s`. */
double mx_tune_eta(double elapsed_s, int done, int total);
#endif
