/* The small part of the public API that needs nothing else: version, status
 * names and the thread's last error. */
#include "mxattn.h"
#include "util/err.h"

const char *mxattn_version(void) { return MXATTN_VERSION; }

const char *mxattn_last_error(void) { return mx_error_message(); }

const char *mxattn_status_string(mxattn_status s) {
    switch (s) {
    case MXATTN_OK: return "ok";
    case MXATTN_ERROR_INVALID_VALUE: return "invalid value";
    case MXATTN_ERROR_NULL_POINTER: return "null pointer";
    case MXATTN_ERROR_MISALIGNED: return "misaligned";
    case MXATTN_ERROR_UNSUPPORTED: return "unsupported";
    case MXATTN_ERROR_NO_DRIVER: return "no CUDA driver";
    case MXATTN_ERROR_NO_DEVICE: return "no CUDA device";
    case MXATTN_ERROR_NO_COMPILER: return "no NVRTC";
    case MXATTN_ERROR_COMPILE: return "compile failed";
    case MXATTN_ERROR_TEMPLATE: return "template error";
    case MXATTN_ERROR_CUDA: return "CUDA error";
    case MXATTN_ERROR_OUT_OF_MEMORY: return "out of memory";
    case MXATTN_ERROR_OUT_OF_RESOURCES: return "out of resources";
    case MXATTN_ERROR_CACHE: return "cache error";
    case MXATTN_ERROR_CACHE_CORRUPT: return "cache corrupt";
    case MXATTN_ERROR_IO: return "I/O error";
    case MXATTN_ERROR_NOT_FOUND: return "not found";
    case MXATTN_ERROR_WRONG_RESULT: return "wrong result";
    case MXATTN_ERROR_INTERNAL: return "internal error";
    case MXATTN_ERROR_CACHE_READ_ONLY: return "cache read-only";
    case MXATTN_ERROR_CACHE_FULL: return "cache disk full";
    case MXATTN_ERROR_CACHE_BUSY: return "cache busy";
    case MXATTN_ERROR_CACHE_FOREIGN: return "not an mxattn database";
    case MXATTN_ERROR_UNTRUSTED: return "untrusted kernel";
    }
    return "unknown status";
}
