/* The tuner's measuring bench: one problem's inputs on the GPU, and the three
 * things the tuner does with a candidate kernel (check its output once, time
 * it, find out whether a failure broke the context).
 *
 * Inputs: Q, K, V and O for the problem's sizes, contiguous in the layout the
 * shape parameters name (layout=bhnd|bnhd), filled from a fixed-seed RNG with
 * non-zero values.  Q is scaled so the scores have a standard deviation of
 * about 2.5: softmax is then dominated by a few keys, as in real attention,
 * and the outputs are O(1), so a wrong tile stands out against the tolerance.
 * The same values are copied into several buffer sets, enough that the bytes
 * between two uses of one set exceed twice the L2: the L2 caches addresses,
 * so rotating among them each launch keeps the timings from being flattered
 * by a warm cache. */
#ifndef MX_TUNER_BENCH_H
#define MX_TUNER_BENCH_H
#include "runtime/launch_plan.h"
#include "tuner/tune.h"

typedef struct mx_bench mx_bench;

/* At most this many buffer sets, whatever the L2. */
#define MX_BENCH_MAX_SETS 64

/* Allocates and fills the inputs: K and V ~ N(0, 1), Q scaled so that the
 * scores (with the problem's sm_scale) are ~ N(0, scores_std^2).
 * shape_params supplies dtype, out_dtype, layout and lse. */
mxattn_status mx_bench_open(const mx_device *dev, const char *shape_params, const mx_tune_sizes *sizes,
                            double scores_std, mx_bench **out);
void mx_bench_close(mx_bench *b); /* NULL is a no-op */
int mx_bench_sets(const mx_bench *b);
size_t mx_bench_output_elems(const mx_bench *b);

/* Poisons O of set 0 with NaN, runs the kernel once on set 0, waits, and
 * returns O as floats in *out (the bench's buffer, valid until the next
 * call) and the run's time in *ms. */
mxattn_status mx_bench_check_run(mx_bench *b, const mx_launch_plan *lp, const float **out, float *ms);

/* `warmup` untimed launches, then `reps` launches each between its own pair of
 * events, all enqueued before one wait, rotating among the buffer sets.
 * ms[] gets the reps times. */
mxattn_status mx_bench_time(mx_bench *b, const mx_launch_plan *lp, int warmup, int reps, float *ms);

/* Launches the kernel, untimed, for at least `ms` milliseconds of the GPU's
 * time: its clocks ramp up out of idle, and under the power limit settle to
 * what this kernel's own draw allows. */
mxattn_status mx_bench_warm_gpu(mx_bench *b, const mx_launch_plan *lp, double ms);

/* After a failed launch: OK when the context still works (a failure such as
 * too many resources leaves it intact), else the sticky error. */
mxattn_status mx_bench_context_usable(mx_bench *b);
#endif
