/* Error metrics and the deterministic RNG. */
#include "numerics/numerics.h"
#include <math.h>
#include <stdlib.h>

double mx_cosine(const double *a, const double *b, size_t n) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; i++) { ab += a[i] * b[i]; aa += a[i] * a[i]; bb += b[i] * b[i]; }
    if (aa == 0 && bb == 0) return 1;
    if (aa == 0 || bb == 0) return 0;
    return ab / (sqrt(aa) * sqrt(bb));
}

double mx_rel_l1(const double *a, const double *b, size_t n) {
    double diff = 0, ref = 0;
    for (size_t i = 0; i < n; i++) { diff += fabs(a[i] - b[i]); ref += fabs(b[i]); }
    if (ref == 0) return diff == 0 ? 0 : INFINITY;
    return diff / ref;
}

double mx_rmse(const double *a, const double *b, size_t n) {
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += (a[i] - b[i]) * (a[i] - b[i]);
    return n ? sqrt(sum / (double)n) : 0;
}

double mx_max_abs_error(const double *a, const double *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs(a[i] - b[i]);
        if (e > m || isnan(e)) m = e;   /* a NaN must not hide behind fmax */
    }
    return m;
}

mx_error_stats mx_compare(const double *a, const double *b, size_t n) {
    mx_error_stats st = {mx_cosine(a, b, n), mx_rel_l1(a, b, n), mx_rmse(a, b, n),
                         mx_max_abs_error(a, b, n)};
    return st;
}

mx_error_stats mx_compare_f32(const float *a, const double *b, size_t n) {
    mx_error_stats st = {NAN, NAN, NAN, NAN};
    double *wide = malloc((n ? n : 1) * sizeof *wide);
    if (!wide) return st;
    for (size_t i = 0; i < n; i++) wide[i] = a[i];
    st = mx_compare(wide, b, n);
    free(wide);
    return st;
}

double mx_mean_normalized_entropy(const double *p, int rows, int cols) {
    if (rows < 1 || cols < 2) return 0;
    double total = 0;
    for (int r = 0; r < rows; r++) {
        double h = 0;
        for (int c = 0; c < cols; c++) {
            double x = p[(size_t)r * cols + c];
            if (x > 0) h -= x * log(x);
        }
        total += h / log((double)cols);
    }
    return total / rows;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

long mx_count_distinct_magnitudes(const double *x, size_t n) {
    if (n == 0) return 0;
    double *m = malloc(n * sizeof *m);
    if (!m) return -1;
    for (size_t i = 0; i < n; i++) m[i] = fabs(x[i]);
    qsort(m, n, sizeof *m, compare_double);
    long distinct = 1;
    for (size_t i = 1; i < n; i++)
        if (m[i] != m[i - 1]) distinct++;
    free(m);
    return distinct;
}

/* ---- RNG: splitmix64 seeds xoshiro256** (Vigna's reference algorithms) ---- */
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void mx_rng_seed(mx_rng *r, uint64_t seed) {
    uint64_t state = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&state);
    r->has_spare = 0;
    r->spare = 0;
}

uint64_t mx_rng_next(mx_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double mx_rng_uniform(mx_rng *r) { return (double)(mx_rng_next(r) >> 11) * 0x1.0p-53; }

double mx_rng_gaussian(mx_rng *r) {
    if (r->has_spare) { r->has_spare = 0; return r->spare; }
    double u1 = 1.0 - mx_rng_uniform(r);     /* (0, 1]: log stays finite */
    double u2 = mx_rng_uniform(r);
    double radius = sqrt(-2.0 * log(u1)), angle = 2.0 * M_PI * u2;
    r->spare = radius * sin(angle);
    r->has_spare = 1;
    return radius * cos(angle);
}

void mx_rng_fill_gaussian(mx_rng *r, float *x, size_t n, double mean, double stddev) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(mean + stddev * mx_rng_gaussian(r));
}
