/* The public calls about this machine (mxattn info): NVRTC, the driver, the
 * GPUs and the default database path, each answering without a context. */
#include "cache/cache.h"
#include "runtime/device.h"
#include "runtime/nvrtc.h"
#include "util/err.h"
#include <stdio.h>
#include <string.h>

mxattn_status mxattn_nvrtc_version(char *out, size_t out_len) {
    if (!out || !out_len) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_nvrtc_version: no buffer");
    out[0] = 0;
    return mx_nvrtc_version(out, out_len);
}

mxattn_status mxattn_driver_version(int *version) {
    if (!version) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_driver_version: version is NULL");
    *version = 0;
    return mx_driver_version(version);
}

mxattn_status mxattn_device_count(int *count) {
    if (!count) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_device_count: count is NULL");
    *count = 0;
    return mx_device_count(count);
}

mxattn_status mxattn_device_get_info(int ordinal, mxattn_device_info *info) {
    if (!info) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_device_get_info: info is NULL");
    memset(info, 0, sizeof *info);
    if (ordinal < 0) return mx_fail(MXATTN_ERROR_INVALID_VALUE, "device ordinal %d is negative", ordinal);
    int count = 0;
    mxattn_status st = mx_device_count(&count);
    if (st != MXATTN_OK) return st;
    if (ordinal >= count)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "device ordinal %d: the driver sees %d GPU%s", ordinal, count,
                       count == 1 ? "" : "s");
    mx_device d;
    st = mx_device_query(&d, ordinal);
    if (st != MXATTN_OK) return st;
    info->ordinal = d.ordinal;
    snprintf(info->name, sizeof info->name, "%s", d.name);
    snprintf(info->arch, sizeof info->arch, "%s", d.arch);
    info->cc_major = d.cc_major;
    info->cc_minor = d.cc_minor;
    info->sm_count = d.sm_count;
    info->smem_per_block_optin = d.smem_per_block_optin;
    info->smem_per_sm = d.smem_per_sm;
    info->regs_per_sm = d.regs_per_sm;
    info->max_threads_per_sm = d.max_threads_per_sm;
    info->l2_bytes = d.l2_bytes;
    info->memory_bytes = d.memory_bytes;
    info->driver_version = d.driver_version;
    return MXATTN_OK;
}

mxattn_status mxattn_cache_default_path(char *out, size_t out_len) {
    if (!out || !out_len) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mxattn_cache_default_path: no buffer");
    out[0] = 0;
    return mx_cache_default_path(out, out_len);
}
