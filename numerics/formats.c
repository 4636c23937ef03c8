/* Scalar number formats: encode with round-to-nearest-even, decode exactly. */
#include "numerics/numerics.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A small binary float format: sign bit above exp_bits exponent bits above
 * man_bits mantissa bits.  Exponent field 0 is subnormal. */
typedef struct {
    int exp_bits, man_bits, bias;
    double max_finite;
} minifloat;

static const minifloat E2M1 = {2, 1, 1, 6.0};
static const minifloat E4M3 = {4, 3, 7, 448.0};
static const minifloat E5M2 = {5, 2, 15, 57344.0};
static const minifloat F16 = {5, 10, 15, 65504.0};

/* Rounds |x| (finite, >= 0) onto the format's grid, RNE, without any limit on
 * the top exponent: the caller decides between saturating and overflowing.
 * Exact because every step is a power-of-two scaling of a double that holds
 * the float exactly, and nearbyint rounds half to even. */
static double round_to_grid(const minifloat *f, double a) {
    if (a == 0) return 0;
    int e2;
    frexp(a, &e2);            /* a = m * 2^e2, m in [0.5, 1) */
    int e = e2 - 1;           /* a in [2^e, 2^(e+1)) */
    int emin = 1 - f->bias;
    if (e < emin) e = emin;   /* subnormal range shares emin's quantum */
    double quantum = ldexp(1.0, e - f->man_bits);
    return nearbyint(a / quantum) * quantum;
}

/* Code bits (without sign) of a magnitude already on the grid and <= max. */
static unsigned grid_to_bits(const minifloat *f, double a) {
    int emin = 1 - f->bias;
    if (a < ldexp(1.0, emin))       /* subnormal (or zero) */
        return (unsigned)(a / ldexp(1.0, emin - f->man_bits));
    int e2;
    frexp(a, &e2);
    int e = e2 - 1;
    unsigned mantissa = (unsigned)(a / ldexp(1.0, e - f->man_bits)) - (1u << f->man_bits);
    return ((unsigned)(e + f->bias) << f->man_bits) | mantissa;
}

static double bits_to_value(const minifloat *f, unsigned bits) {
    unsigned exp_field = (bits >> f->man_bits) & ((1u << f->exp_bits) - 1);
    unsigned mantissa = bits & ((1u << f->man_bits) - 1);
    int emin = 1 - f->bias;
    if (exp_field == 0) return ldexp((double)mantissa, emin - f->man_bits);
    return ldexp((double)(mantissa + (1u << f->man_bits)), (int)exp_field - f->bias - f->man_bits);
}

static unsigned sign_bit(const minifloat *f) { return 1u << (f->exp_bits + f->man_bits); }

/* Encodes a finite or infinite x, saturating to the largest finite value. */
static unsigned encode_saturating(const minifloat *f, float x) {
    unsigned sign = signbit(x) ? sign_bit(f) : 0;
    double a = fabs((double)x);
    double r = isinf(x) ? f->max_finite : round_to_grid(f, a);
    if (r > f->max_finite) r = f->max_finite;
    return sign | grid_to_bits(f, r);
}

/* ---- E2M1 ---------------------------------------------------------------- */
uint8_t mx_f32_to_e2m1(float x) {
    if (isnan(x)) return 0x7;
    return (uint8_t)encode_saturating(&E2M1, x);
}

float mx_e2m1_to_f32(uint8_t code) {
    double v = bits_to_value(&E2M1, code & 0x7);
    return (float)((code & 0x8) ? -v : v);
}

/* ---- E4M3 ---------------------------------------------------------------- */
uint8_t mx_f32_to_e4m3(float x) {
    if (isnan(x)) return 0x7F;
    return (uint8_t)encode_saturating(&E4M3, x);
}

float mx_e4m3_to_f32(uint8_t code) {
    if ((code & 0x7F) == 0x7F) return NAN;
    double v = bits_to_value(&E4M3, code & 0x7F);
    return (float)((code & 0x80) ? -v : v);
}

/* ---- E5M2 ---------------------------------------------------------------- */
uint8_t mx_f32_to_e5m2(float x) {
    if (isnan(x)) return 0x7F;
    if (isinf(x)) return x > 0 ? 0x7C : 0xFC;
    return (uint8_t)encode_saturating(&E5M2, x);
}

float mx_e5m2_to_f32(uint8_t code) {
    unsigned bits = code & 0x7F;
    if (bits > 0x7C) return NAN;
    double v = bits == 0x7C ? INFINITY : bits_to_value(&E5M2, bits);
    return (float)((code & 0x80) ? -v : v);
}

/* ---- UE4M3 --------------------------------------------------------------- */
uint8_t mx_f32_to_ue4m3(float x) {
    if (isnan(x)) return 0x7F;
    if (x <= 0) return 0;                 /* also -0: a scale has no sign */
    return (uint8_t)encode_saturating(&E4M3, x);
}

float mx_ue4m3_to_f32(uint8_t code) {
    if (code & 0x80) return NAN;
    return mx_e4m3_to_f32(code);
}

/* ---- UE8M0 --------------------------------------------------------------- */
uint8_t mx_f32_to_ue8m0(float x) {
    if (isnan(x)) return 0xFF;
    if (x <= 0) return 0;
    if (isinf(x)) return 0xFE;
    int e2;
    double m = frexp((double)x, &e2);     /* x = m * 2^e2, m in [0.5, 1) */
    int e = e2 - 1;                       /* x = (2m) * 2^e, 2m in [1, 2) */
    double mant = 2 * m;
    if (mant > 1.5 || (mant == 1.5 && ((e + 127) & 1))) e += 1;
    int code = e + 127;
    if (code < 0) code = 0;
    if (code > 0xFE) code = 0xFE;
    return (uint8_t)code;
}

float mx_ue8m0_to_f32(uint8_t code) {
    if (code == 0xFF) return NAN;
    return ldexpf(1.0f, (int)code - 127);   /* 2^-127 is a float subnormal: exact */
}

/* ---- INT8 ---------------------------------------------------------------- */
int8_t mx_f32_to_int8(float x) {
    if (isnan(x)) return 0;
    if (x >= 127.0f) return 127;
    if (x <= -127.0f) return -127;
    return (int8_t)nearbyintf(x);
}

/* ---- fp16 / bf16 --------------------------------------------------------- */
uint16_t mx_f32_to_f16(float x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return sign | 0x7E00;
    if (isinf(x)) return sign | 0x7C00;
    double r = round_to_grid(&F16, fabs((double)x));
    if (r > F16.max_finite) return sign | 0x7C00;   /* IEEE: overflow rounds to inf */
    return sign | (uint16_t)grid_to_bits(&F16, r);
}

float mx_f16_to_f32(uint16_t h) {
    unsigned bits = h & 0x7FFF;
    float sign = (h & 0x8000) ? -1.0f : 1.0f;
    if (bits == 0x7C00) return sign * INFINITY;
    if (bits > 0x7C00) return copysignf(NAN, sign);
    return sign * (float)bits_to_value(&F16, bits);
}

uint16_t mx_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if (isnan(x)) return (uint16_t)((u >> 16) | 0x0040);   /* keep sign, force quiet */
    /* Adding 0x7FFF plus the kept LSB rounds half to even; a carry into the
     * exponent is the right answer, including overflow to inf. */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float mx_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

float mx_round_f16(float x) { return mx_f16_to_f32(mx_f32_to_f16(x)); }
float mx_round_bf16(float x) { return mx_bf16_to_f32(mx_f32_to_bf16(x)); }
float mx_round_e4m3(float x) { return mx_e4m3_to_f32(mx_f32_to_e4m3(x)); }
float mx_round_e2m1(float x) { return mx_e2m1_to_f32(mx_f32_to_e2m1(x)); }

/* ---- code listing and census -------------------------------------------- */
const char *mx_format_name(mx_format f) {
    switch (f) {
    case MX_FMT_E2M1: return "e2m1";
    case MX_FMT_E4M3: return "e4m3";
    case MX_FMT_E5M2: return "e5m2";
    case MX_FMT_UE8M0: return "ue8m0";
    case MX_FMT_UE4M3: return "ue4m3";
    case MX_FMT_INT8: return "int8";
    }
    return "?";
}

int mx_format_code_count(mx_format f) {
    switch (f) {
    case MX_FMT_E2M1: return 16;
    case MX_FMT_UE4M3: return 128;
    default: return 256;
    }
}

float mx_format_decode(mx_format f, unsigned code) {
    switch (f) {
    case MX_FMT_E2M1: return mx_e2m1_to_f32((uint8_t)code);
    case MX_FMT_E4M3: return mx_e4m3_to_f32((uint8_t)code);
    case MX_FMT_E5M2: return mx_e5m2_to_f32((uint8_t)code);
    case MX_FMT_UE8M0: return mx_ue8m0_to_f32((uint8_t)code);
    case MX_FMT_UE4M3: return mx_ue4m3_to_f32((uint8_t)code);
    case MX_FMT_INT8: return (float)(int8_t)(uint8_t)code;
    }
    return NAN;
}

unsigned mx_format_encode(mx_format f, float x) {
    switch (f) {
    case MX_FMT_E2M1: return mx_f32_to_e2m1(x);
    case MX_FMT_E4M3: return mx_f32_to_e4m3(x);
    case MX_FMT_E5M2: return mx_f32_to_e5m2(x);
    case MX_FMT_UE8M0: return mx_f32_to_ue8m0(x);
    case MX_FMT_UE4M3: return mx_f32_to_ue4m3(x);
    case MX_FMT_INT8: return (uint8_t)mx_f32_to_int8(x);
    }
    return 0;
}

static int compare_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int mx_format_distinct_magnitudes(mx_format f, double lo, double hi) {
    double mags[256];
    int n = 0, count = mx_format_code_count(f);
    for (int c = 0; c < count; c++) {
        double v = fabs((double)mx_format_decode(f, (unsigned)c));
        if (isfinite(v) && v >= lo && v <= hi) mags[n++] = v;
    }
    qsort(mags, (size_t)n, sizeof mags[0], compare_double);
    int distinct = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || mags[i] != mags[i - 1]) distinct++;
    return distinct;
}
