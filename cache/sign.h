/* Signing keys for exported kernels (Ed25519, libsodium).
 *
 * A kernel is code the GPU runs in the importing process, and its SHA-256
 * proves only that the blob is the one its row names, not who built it: a
 * tampered cubin with its hash updated passes.  So an export made with
 * `db export --with-kernels --sign KEYFILE` carries, per kernel, the signer's
 * public key and an Ed25519 signature over mx_kernel_signing_message(), and
 * an import takes kernels only when each one is signed by a key the user
 * named as trusted.
 *
 * Files: the secret key is one line of 128 hex digits (libsodium's 64-byte
 * secret key: seed then public key) after a comment line, mode 0600; the
 * public key is 64 hex digits, in KEYFILE.pub and printed by keygen. */
#ifndef MX_CACHE_SIGN_H
#define MX_CACHE_SIGN_H
#include <stddef.h>
#include "cache/cache.h"

#define MX_SIGN_SECRET_BYTES 64
#define MX_SIGN_BYTES 64

typedef struct mx_sign_secret {
    unsigned char sk[MX_SIGN_SECRET_BYTES];
    mx_sign_public pk;
} mx_sign_secret;

/* Makes a key pair: the secret key into `secret_path` (created 0600, never
 * overwritten: IO if it exists), the public key into `secret_path`.pub and
 * `pub_hex` (64 hex digits and a NUL). */
mxattn_status mx_sign_keygen(const char *secret_path, char pub_hex[65]);
/* Reads a secret key file; IO if it cannot be read or others may read it
 * (group or world bits set), INVALID_VALUE if it is not one. */
mxattn_status mx_sign_load_secret(const char *path, mx_sign_secret *out);
/* `text` is 64 hex digits, or the path of a file holding them (a .pub file). */
mxattn_status mx_sign_parse_public(const char *text, mx_sign_public *out);
void mx_sign_public_hex(const mx_sign_public *pk, char out[65]);

/* The text a kernel's signature covers; every field that decides what runs
 * or how it is launched and pruned, each on its own line:
 *   mxattn kernel signature v1
 *   key=<64 hex>
 *   arch=<arch>
 *   nvrtc_version=<int>
 *   kernel_names=<names>
 *   cubin_size=<bytes>
 *   cubin_sha256=<64 hex>
 *   registers=<int>
 *   shared_bytes=<int>
 *   spill_bytes=<int>
 * The fields must already be checked (hex, an arch and names of [A-Za-z0-9_ ]
 * only, so no field can hold a newline).  Returns the length, or 0 if it did
 * not fit in `cap`. */
size_t mx_kernel_signing_message(const mx_kernel_record *k, const char *cubin_sha256, char *out, size_t cap);

mxattn_status mx_sign_kernel(const mx_sign_secret *key, const mx_kernel_record *k, const char *cubin_sha256,
                             unsigned char sig[MX_SIGN_BYTES]);
/* 1 if `sig` is `pk`'s signature of the kernel's message. */
int mx_verify_kernel(const mx_sign_public *pk, const mx_kernel_record *k, const char *cubin_sha256,
                     const unsigned char sig[MX_SIGN_BYTES]);

/* Hex <-> bytes; mx_hex_decode returns 0 unless `hex` is exactly 2n lowercase or uppercase digits. */
void mx_hex_encode(const unsigned char *in, size_t n, char *out);
int mx_hex_decode(const char *hex, unsigned char *out, size_t n);
#endif
