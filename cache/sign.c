/* Ed25519 keys and kernel signatures, through libsodium (a well-kept,
 * audited library in Debian; hand-written curve code would be the riskiest
 * code in the tree).  See sign.h for the formats. */
#include "cache/sign.h"
#include "util/err.h"
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(crypto_sign_PUBLICKEYBYTES == sizeof(((mx_sign_public *)0)->bytes), "public key size");
_Static_assert(crypto_sign_SECRETKEYBYTES == MX_SIGN_SECRET_BYTES, "secret key size");
_Static_assert(crypto_sign_BYTES == MX_SIGN_BYTES, "signature size");

static const char SECRET_HEADER[] = "# mxattn kernel signing key (Ed25519 secret key): keep it private\n";

static mxattn_status ready(void) {
    /* Safe to call from any thread, any number of times. */
    if (sodium_init() < 0) return mx_fail(MXATTN_ERROR_INTERNAL, "libsodium could not be initialised");
    return MXATTN_OK;
}

void mx_hex_encode(const unsigned char *in, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = 0;
}

static int nibble(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int mx_hex_decode(const char *hex, unsigned char *out, size_t n) {
    if (strlen(hex) != 2 * n) return 0;
    for (size_t i = 0; i < n; i++) {
        int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return 0;
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 1;
}

void mx_sign_public_hex(const mx_sign_public *pk, char out[65]) { mx_hex_encode(pk->bytes, sizeof pk->bytes, out); }

static mxattn_status write_all(int fd, const char *text, const char *path) {
    size_t n = strlen(text), done = 0;
    while (done < n) {
        ssize_t w = write(fd, text + done, n - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return mx_fail(MXATTN_ERROR_IO, "cannot write '%s': %s", path, strerror(errno));
        done += (size_t)w;
    }
    return MXATTN_OK;
}

/* Creates `path` with `mode`, refusing to replace a file (a key lost to an
 * overwrite cannot be recovered). */
static mxattn_status write_new_file(const char *path, const char *text, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) return mx_fail(MXATTN_ERROR_IO, "cannot create '%s': %s", path, strerror(errno));
    mxattn_status st = write_all(fd, text, path);
    if (!st && fsync(fd) != 0) st = mx_fail(MXATTN_ERROR_IO, "cannot write '%s': %s", path, strerror(errno));
    if (close(fd) != 0 && !st) st = mx_fail(MXATTN_ERROR_IO, "cannot write '%s': %s", path, strerror(errno));
    if (st) unlink(path);
    return st;
}

mxattn_status mx_sign_keygen(const char *secret_path, char pub_hex[65]) {
    if (!secret_path || !*secret_path || !pub_hex) return mx_fail(MXATTN_ERROR_NULL_POINTER, "keygen: no key file");
    mxattn_status st = ready();
    if (st) return st;
    char pub_path[4096];
    if (snprintf(pub_path, sizeof pub_path, "%s.pub", secret_path) >= (int)sizeof pub_path)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "key path '%s' is too long", secret_path);
    mx_sign_secret key;
    crypto_sign_keypair(key.pk.bytes, key.sk);
    char text[sizeof SECRET_HEADER + 2 * MX_SIGN_SECRET_BYTES + 2];
    char sk_hex[2 * MX_SIGN_SECRET_BYTES + 1], pub_line[66];
    mx_hex_encode(key.sk, sizeof key.sk, sk_hex);
    snprintf(text, sizeof text, "%s%s\n", SECRET_HEADER, sk_hex);
    mx_sign_public_hex(&key.pk, pub_hex);
    snprintf(pub_line, sizeof pub_line, "%s\n", pub_hex);
    st = write_new_file(secret_path, text, 0600);
    if (!st && (st = write_new_file(pub_path, pub_line, 0644))) unlink(secret_path);
    sodium_memzero(&key, sizeof key);
    sodium_memzero(text, sizeof text);
    sodium_memzero(sk_hex, sizeof sk_hex);
    return st;
}

/* The first line of `path` that is not a comment, without its newline. */
static mxattn_status read_key_line(const char *path, char *line, size_t cap) {
    FILE *f = fopen(path, "re");
    if (!f) return mx_fail(MXATTN_ERROR_IO, "cannot read key file '%s': %s", path, strerror(errno));
    mxattn_status st = mx_fail(MXATTN_ERROR_INVALID_VALUE, "key file '%s' holds no key", path);
    while (fgets(line, (int)cap, f)) {
        if (line[0] == '#') continue;
        line[strcspn(line, "\r\n")] = 0;
        st = MXATTN_OK;
        break;
    }
    fclose(f);
    return st;
}

mxattn_status mx_sign_load_secret(const char *path, mx_sign_secret *out) {
    if (!path || !out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_sign_load_secret: NULL argument");
    mxattn_status st = ready();
    if (st) return st;
    struct stat sb;
    if (stat(path, &sb) != 0) return mx_fail(MXATTN_ERROR_IO, "cannot read key file '%s': %s", path, strerror(errno));
    /* As ssh does for its keys: a secret others can read is no longer one. */
    if (sb.st_mode & 077)
        return mx_fail(MXATTN_ERROR_IO, "key file '%s' may be read by others (mode %03o): chmod 600 it",
                       path, (unsigned)(sb.st_mode & 0777));
    char line[2 * MX_SIGN_SECRET_BYTES + 8];
    if ((st = read_key_line(path, line, sizeof line))) return st;
    if (!mx_hex_decode(line, out->sk, sizeof out->sk)) {
        sodium_memzero(line, sizeof line);
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "key file '%s' is not an mxattn secret key (128 hex digits)", path);
    }
    sodium_memzero(line, sizeof line);
    crypto_sign_ed25519_sk_to_pk(out->pk.bytes, out->sk);
    return MXATTN_OK;
}

mxattn_status mx_sign_parse_public(const char *text, mx_sign_public *out) {
    if (!text || !out) return mx_fail(MXATTN_ERROR_NULL_POINTER, "mx_sign_parse_public: NULL argument");
    if (mx_hex_decode(text, out->bytes, sizeof out->bytes)) return MXATTN_OK;
    char line[160];
    mxattn_status st = read_key_line(text, line, sizeof line);
    if (st == MXATTN_ERROR_IO)
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "'%s' is neither a public key (64 hex digits) nor a readable key file",
                       text);
    if (st) return st;
    if (!mx_hex_decode(line, out->bytes, sizeof out->bytes))
        return mx_fail(MXATTN_ERROR_INVALID_VALUE, "'%s' does not hold a public key (64 hex digits)", text);
    return MXATTN_OK;
}

size_t mx_kernel_signing_message(const mx_kernel_record *k, const char *cubin_sha256, char *out, size_t cap) {
    int n = snprintf(out, cap,
                     "mxattn kernel signature v1\nkey=%s\narch=%s\nnvrtc_version=%d\nkernel_names=%s\n"
                     "cubin_size=%zu\ncubin_sha256=%s\nregisters=%d\nshared_bytes=%d\nspill_bytes=%d\n",
                     k->key, k->arch, k->nvrtc_version, k->kernel_names, k->cubin_size, cubin_sha256,
                     k->registers, k->shared_bytes, k->spill_bytes);
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

mxattn_status mx_sign_kernel(const mx_sign_secret *key, const mx_kernel_record *k, const char *cubin_sha256,
                             unsigned char sig[MX_SIGN_BYTES]) {
    mxattn_status st = ready();
    if (st) return st;
    char msg[1024];
    size_t n = mx_kernel_signing_message(k, cubin_sha256, msg, sizeof msg);
    if (!n) return mx_fail(MXATTN_ERROR_INTERNAL, "kernel %.16s...: its signing message is too long", k->key);
    crypto_sign_detached(sig, NULL, (const unsigned char *)msg, n, key->sk);
    return MXATTN_OK;
}

int mx_verify_kernel(const mx_sign_public *pk, const mx_kernel_record *k, const char *cubin_sha256,
                     const unsigned char sig[MX_SIGN_BYTES]) {
    if (ready()) return 0;
    char msg[1024];
    size_t n = mx_kernel_signing_message(k, cubin_sha256, msg, sizeof msg);
    return n && crypto_sign_verify_detached(sig, (const unsigned char *)msg, n, pk->bytes) == 0;
}
