#include "records.h"
#include <stdio.h>
#include <string.h>
#include "util/sha256.h"

void tune_key_f16(mx_tune_key *k, const char *gpu) {
    memset(k, 0, sizeof *k);
    snprintf(k->gpu_name, sizeof k->gpu_name, "%s", gpu);
    snprintf(k->mxattn_version, sizeof k->mxattn_version, "0.1.0");
    snprintf(k->family, sizeof k->family, "f16");
    snprintf(k->dtype, sizeof k->dtype, "f16");
    snprintf(k->out_dtype, sizeof k->out_dtype, "f16");
    snprintf(k->layout, sizeof k->layout, "bhnd");
}

mx_tune_result tune_result_of(const char *config, double median_ms, double default_ms, double tops) {
    mx_tune_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.config, sizeof r.config, "%s", config);
    r.median_ms = median_ms;
    r.default_ms = default_ms;
    r.tops = tops;
    return r;
}

mx_measurement measurement_of(const char *config, const char *status, double median_ms, double spread,
                              int registers) {
    mx_measurement m;
    memset(&m, 0, sizeof m);
    snprintf(m.config, sizeof m.config, "%s", config);
    snprintf(m.status, sizeof m.status, "%s", status);
    m.median_ms = median_ms;
    m.spread = spread;
    m.registers = registers;
    return m;
}

mx_kernel_record kernel_record_of(unsigned char *blob, size_t n, int which) {
    mx_kernel_record k;
    memset(&k, 0, sizeof k);
    for (size_t i = 0; i < n; i++) blob[i] = (unsigned char)(i * 7 + which);
    char material[32];
    snprintf(material, sizeof material, "kernel %d", which);
    mx_sha256_hex(material, strlen(material), k.key);
    snprintf(k.arch, sizeof k.arch, "sm_90a");
    snprintf(k.kernel_names, sizeof k.kernel_names, "mxattn_f16_fwd");
    k.cubin = blob;
    k.cubin_size = n;
    return k;
}
