#include "runtime/tensor_map.h"
#include <string.h>
#include "runtime/cuda.h"

_Static_assert(sizeof(CUtensorMap) == MX_TENSOR_MAP_BYTES, "CUtensorMap size");

static CUtensorMapSwizzle swizzle_mode(int bytes) {
    switch (bytes) {
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
    }
}

static mxattn_status encode(const mx_cuda_api *cu, const mx_tensor_map_desc *d, void *out);

mxattn_status mx_tensor_map_encode(const mx_device *dev, const mx_tensor_map_desc *d, void *out) {
    const mx_cuda_api *cu;
    mx_context_guard guard;
    mxattn_status st = mx_cuda_get(&cu);
    if (st != MXATTN_OK) return st;
    if ((st = mx_device_enter(dev, &guard)) != MXATTN_OK) return st;
    st = encode(cu, d, out);
    mxattn_status left = mx_device_leave(&guard);
    return st != MXATTN_OK ? st : left;
}

static mxattn_status encode(const mx_cuda_api *cu, const mx_tensor_map_desc *d, void *out) {
    /* TMA wants every stride a multiple of 16 bytes; a size-1 dimension's
     * stride is never used, so give it a legal value. */
    cuuint64_t dims[4] = {d->dim, d->seq, d->heads, d->batch};
    int64_t raw[3] = {d->seq_stride, d->head_stride, d->batch_stride};
    int elem = d->elem_bytes ? d->elem_bytes : 2;
    cuuint64_t strides[3];
    for (int i = 0; i < 3; i++) {
        int64_t s = raw[i] * elem;
        if (dims[i + 1] == 1 && s % 16 != 0) s = 16;
        if (s <= 0 || s % 16 != 0)
            return mx_fail(MXATTN_ERROR_MISALIGNED, "tensor map: stride %lld bytes is not a positive multiple of 16",
                           (long long)s);
        strides[i] = (cuuint64_t)s;
    }
    if ((uintptr_t)d->base % 16 != 0)
        return mx_fail(MXATTN_ERROR_MISALIGNED, "tensor map: base address %p is not 16-byte aligned", d->base);
    cuuint32_t box[4] = {d->box_cols, d->box_rows, 1, 1};
    cuuint32_t elem_strides[4] = {1, 1, 1, 1};
    CUtensorMap map;
    /* TMA copies bytes; the type only sets the element size (and OOB fill). */
    CUtensorMapDataType type = elem == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    CUresult r = cu->TensorMapEncodeTiled(&map, type, 4, (void *)d->base, dims, strides,
                                          box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          swizzle_mode(d->swizzle_bytes), CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) return mx_cuda_fail(r, "cuTensorMapEncodeTiled", __FILE__, __LINE__);
    memcpy(out, &map, sizeof map);
    return MXATTN_OK;
}
