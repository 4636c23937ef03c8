/* `mxattn accuracy --gpu`: every kernel family run on the GPU on the design
 * notes' inputs and on harder ones, its output error against fp64 printed
 * beside the CPU oracle's (numerics/) for the same inputs. */
#ifndef MX_CLI_ACCURACY_GPU_H
#define MX_CLI_ACCURACY_GPU_H
#include <stdint.h>

typedef struct {
    long seed;
    int size, head_dim;       /* Q, K, V are size x head_dim, one head */
    double k_mean;            /* stddev of K's per-channel mean */
    int json, csv;
    const char *families;     /* comma-separated family names; NULL: all */
} accuracy_gpu_options;

/* Checks a --families list (names as in mxattn_problem.family).  Returns 1 if
 * every name is a family, else prints a one-line usage error and returns 0. */
int accuracy_gpu_check_families(const char *cmd, const char *list);

/* Runs the GPU table and prints it; returns the exit status (0, or 1 when
 * there is no GPU or a row failed). */
int accuracy_gpu_run(const accuracy_gpu_options *opt);

#endif
