#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "numerics/numerics.h"
static double gauss(unsigned long long *s) {
    double u = 0; for (int i = 0; i < 12; i++) { *s = *s * 6364136223846793005ULL + 1442695040888963407ULL; u += (double)(*s >> 11) / 9007199254740992.0; }
    return u - 6;
}
int main(int argc, char **argv) {
    int n = 1024, d = 128;
    double temp = argc > 1 ? atof(argv[1]) : 1;
    unsigned long long seed = argc > 2 ? strtoull(argv[2], 0, 10) : 1;
    float *q = malloc(sizeof(float) * n * d), *k = malloc(sizeof(float) * n * d), *v = malloc(sizeof(float) * n * d);
    for (int i = 0; i < n * d; i++) { q[i] = gauss(&seed) * temp; k[i] = gauss(&seed) + (i % d) * 0.0; v[i] = gauss(&seed); }
    mx_ref_shape s = {1, 1, 1, n, n, d, MXATTN_CAUSAL_NONE, 0};
    double *o = malloc(sizeof(double) * n * d), *ref = malloc(sizeof(double) * n * d);
    mx_ref_attention(&s, q, k, v, ref, NULL);
    mx_ref_config c;
    if (mx_ref_family_config("int8-fp8", 0, 1, MXATTN_BF16, &c) != MXATTN_OK) return 1;
    c.p_tile = 128;
    if (mx_ref_pipeline_attention(&s, &c, q, k, v, o, NULL, NULL) != MXATTN_OK) return 2;
    mx_error_stats e = mx_compare(o, ref, (size_t)n * d);
    printf("temp %g seed %llu: cos %.6f rel_l1 %.5f rmse %.5f\n", temp, (unsigned long long)0, e.cosine, e.rel_l1, e.rmse);
    return 0;
}
