/* SHA-256, for cache keys and for verifying imported binaries.  A cache key
 * must not collide across sources that differ by one byte, and an imported
 * cubin is executable code, so a cryptographic hash is worth its 100 lines. */
#ifndef MX_SHA256_H
#define MX_SHA256_H
#include <stddef.h>
#include <stdint.h>
typedef struct { uint32_t h[8]; uint64_t len; uint8_t buf[64]; size_t fill; } mx_sha256;
void mx_sha256_init(mx_sha256 *c);
void mx_sha256_update(mx_sha256 *c, const void *data, size_t n);
void mx_sha256_final(mx_sha256 *c, uint8_t out[32]);
/* Hex digest of one buffer into out[65]. */
void mx_sha256_hex(const void *data, size_t n, char out[65]);
#endif
