/* TMA tensor maps (Hopper's bulk tensor copy engine), encoded on the host for
 * each run: a map holds the tensor's address, so it cannot be baked into the
 * plan.  Encoding is a pure host call of about a microsecond. */
#ifndef MX_RUNTIME_TENSOR_MAP_H
#define MX_RUNTIME_TENSOR_MAP_H
#include <stdint.h>
#include "mxattn.h"
#include "runtime/device.h"

#define MX_TENSOR_MAP_BYTES 128

/* A rank-4 view [batch][heads][seq][dim] of 1- or 2-byte elements (innermost
 * first in dims: dim, seq, heads, batch; strides in elements for seq, heads,
 * batch), read in boxes of box_cols x box_rows (dim x seq) with the given
 * shared-memory swizzle (0, 32, 64 or 128 bytes).  Out-of-bounds reads fill
 * zeros, which is how tails and padded head dims come for free. */
typedef struct {
    const void *base;
    int elem_bytes;              /* 2 (bf16/fp16) or 1 (int8/fp8 workspace operands); 0 means 2 */
    uint64_t dim, seq, heads, batch;
    int64_t seq_stride, head_stride, batch_stride;
    uint32_t box_cols, box_rows;
    int swizzle_bytes;
} mx_tensor_map_desc;

/* The driver validates against the current context, so the device's
 * context is made current for the call. */
mxattn_status mx_tensor_map_encode(const mx_device *dev, const mx_tensor_map_desc *d, void *out);
#endif
