/* Shared by the libFuzzer targets in tests/fuzz: turning fuzz bytes into a
 * problem, the property every call must keep (a status from the set its
 * contract allows, and a message with every failure), and a CUDA driver that
 * is never found, so that a target behaves the same on a machine with a GPU
 * as on CI's machine without one (and never compiles a kernel per input). */
#ifndef MXATTN_FUZZ_COMMON_H
#define MXATTN_FUZZ_COMMON_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mxattn.h"

/* UBSan's reports are fatal, so libFuzzer records the input that caused them
 * (UBSAN_OPTIONS=halt_on_error=0 overrides this to see every report). */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) { return "halt_on_error=1:print_stacktrace=1"; }

/* Linked with -Wl,--wrap=dlopen: the library's dlopen of libcuda and libnvrtc
 * fails as it does where neither is installed.  Everything else loads. */
void *__real_dlopen(const char *file, int mode);
void *__wrap_dlopen(const char *file, int mode);
void *__wrap_dlopen(const char *file, int mode) {
    if (file && (strstr(file, "libcuda") || strstr(file, "libnvrtc"))) return NULL;
    return __real_dlopen(file, mode);
}

/* A broken property: say which and abort, so libFuzzer saves the input. */
__attribute__((noreturn, format(printf, 1, 2))) static inline void fz_fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "\n== property broken: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

/* `st` is one of the `n` statuses allowed, and a failure has a message. */
static inline void fz_expect(const char *call, mxattn_status st, const mxattn_status *allowed, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (st == allowed[i]) {
            if (st != MXATTN_OK && !mxattn_last_error()[0])
                fz_fail("%s returned %s with no message", call, mxattn_status_string(st));
            return;
        }
    fz_fail("%s returned %s: %s", call, mxattn_status_string(st), mxattn_last_error());
}

typedef struct { const uint8_t *p; size_t n; } fz_bytes;

/* The next `size` bytes into *out (native byte order), or 0 when the input
 * has run out (*out untouched: the field keeps its default). */
static inline int fz_take(fz_bytes *in, void *out, size_t size) {
    if (in->n < size) { in->n = 0; return 0; }
    memcpy(out, in->p, size);
    in->p += size;
    in->n -= size;
    return 1;
}

/* The problem encoding (tests/fuzz/fuzz_seeds.c writes seeds in it): one
 * family selector byte, then every field of mxattn_problem in declaration
 * order as raw int32 (enums too, so out-of-range values come through),
 * int64 strides and sm_scale's float bits.  A short input leaves the fields
 * after it at mxattn_problem_init's defaults.  Selector 6 is a NULL family;
 * 7 or more takes the family name from the bytes left after the fields. */
#define FZ_PROBLEM_BYTES (1 + 10 * 4 + 12 * 8 + 4 + 4 * 4)
static const char *const FZ_FAMILIES[] = { "f16", "int8-f16", "int8-fp8", "nvfp4", "mxfp4", "nvfp4-int8qk" };

static inline void fz_problem(fz_bytes *in, mxattn_problem *p, char *family_buf, size_t family_cap) {
    uint8_t sel = 0;
    fz_take(in, &sel, 1);
    mxattn_problem_init(p, "f16", 128);
    int32_t v;
    int32_t *ints[] = { &p->head_dim, &p->batch, &p->heads_q, &p->heads_kv, &p->seq_q, &p->seq_k };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        if (fz_take(in, &v, 4)) *ints[i] = v;
    if (fz_take(in, &v, 4)) p->causal = (mxattn_causal)v;
    if (fz_take(in, &v, 4)) p->dtype = (mxattn_dtype)v;
    if (fz_take(in, &v, 4)) p->out_dtype = (mxattn_dtype)v;
    if (fz_take(in, &v, 4)) p->layout = (mxattn_layout)v;
    mxattn_strides *strides[] = { &p->q_strides, &p->k_strides, &p->v_strides, &p->o_strides };
    for (size_t i = 0; i < 4; i++) {
        fz_take(in, &strides[i]->batch, 8);
        fz_take(in, &strides[i]->head, 8);
        fz_take(in, &strides[i]->seq, 8);
    }
    fz_take(in, &p->sm_scale, 4);
    int *flags[] = { &p->return_lse, &p->direct_p, &p->smooth_k, &p->v_terms };
    for (size_t i = 0; i < 4; i++)
        if (fz_take(in, &v, 4)) *flags[i] = v;
    if (sel < 6) {
        p->family = FZ_FAMILIES[sel];
    } else if (sel == 6) {
        p->family = NULL;
    } else {
        size_t n = in->n < family_cap - 1 ? in->n : family_cap - 1;
        memcpy(family_buf, in->p, n);
        family_buf[n] = 0;
        p->family = family_buf;
        in->p += n;
        in->n -= n;
    }
}

/* The problem targets' start: the whole input decoded by fz_problem. */
static inline void fz_problem_of(const uint8_t *data, size_t size, mxattn_problem *p, char *family_buf,
                                 size_t family_cap) {
    fz_bytes in = { data, size };
    fz_problem(&in, p, family_buf, family_cap);
}

/* The key the seed export is signed with and the import target trusts: a
 * fixed seed, so that fuzz_seeds and fuzz_import agree without a file. */
#include <sodium.h>
#include "cache/sign.h"
static inline void fz_signer(mx_sign_secret *key) {
    unsigned char seed[crypto_sign_SEEDBYTES];
    for (size_t i = 0; i < sizeof seed; i++) seed[i] = (unsigned char)(i * 13 + 5);
    if (sodium_init() < 0 || crypto_sign_seed_keypair(key->pk.bytes, key->sk, seed) != 0)
        fz_fail("libsodium could not make the fuzz key");
}

/* One context for the whole run: opening the templates costs ~10 ms. */
static inline mxattn_ctx *fz_context(void) {
    static mxattn_ctx *ctx;
    if (!ctx) {
        mxattn_options o;
        mxattn_options_init(&o);
        o.no_cache = 1;
        if (mxattn_create(&ctx, &o) != MXATTN_OK) fz_fail("mxattn_create: %s", mxattn_last_error());
    }
    return ctx;
}

#endif
