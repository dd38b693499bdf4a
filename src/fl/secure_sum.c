/* Secure sum's arithmetic (fedc/secure_sum.h): fixed point in, integers modulo
 * 2^32 summed, fixed point out; in C for a deployment's clients and server
 * (src/deploy/secagg.c masks these words), and as ops of a round program for the
 * simulation. Both do the same f32 operations in the same order (this file is
 * built with -ffp-contract=off: x · s must round before the clamp), so a client's
 * words are the same bits whichever computes them. */
#include <math.h>

#include "fedc/secure_sum.h"
#include "fl/fl.h"

static bool bits_ok(int bits) { return bits >= FEDC_SECURE_SUM_MIN_BITS && bits <= FEDC_SECURE_SUM_MAX_BITS; }

fedc_status fedc_secure_sum_check(int bits, double bound) {
    if (!bits_ok(bits))
        return fedc_error(FEDC_EINVAL, "secure sum: %d bits; it takes %d to %d (f32 arithmetic: a float's significand "
                          "has 24 bits)", bits, FEDC_SECURE_SUM_MIN_BITS, FEDC_SECURE_SUM_MAX_BITS);
    if (!(bound > 0 && isfinite(bound) && bound <= 3.4e38))
        return fedc_error(FEDC_EINVAL, "secure sum: the bound %g must be finite and > 0", bound);
    float s = (float)((double)fedc_secure_sum_levels(bits) / bound);
    if (!(isfinite(s) && s > 0))
        return fedc_error(FEDC_EINVAL, "secure sum: the bound %g is too small or too large for %d bits (the scale "
                          "2^%d / bound must be a finite f32 above 0)", bound, bits, bits - 1);
    return FEDC_OK;
}

int32_t fedc_secure_sum_levels(int bits) { return bits_ok(bits) ? (int32_t)((UINT32_C(1) << (bits - 1)) - 1) : 0; }

float fedc_secure_sum_scale(int bits, double bound) { return (float)((double)fedc_secure_sum_levels(bits) / bound); }

int64_t fedc_secure_sum_max_clients(int bits) { return bits_ok(bits) ? INT32_MAX / fedc_secure_sum_levels(bits) : 0; }

/* One element: clamp(x · s, -L, L) rounded half away from zero; NaN: 0. */
static int32_t quantize(float x, float s, float levels) {
    float u = x * s;
    if (isnan(u)) return 0;
    u = u < -levels ? -levels : u > levels ? levels : u;
    return (int32_t)(u >= 0 ? u + 0.5f : u - 0.5f); /* |u ± 0.5| <= L + 0.5: in range */
}

fedc_status fedc_secure_sum_encode(int bits, double bound, const float *x, int64_t n, uint32_t *words) {
    fedc_status st = fedc_secure_sum_check(bits, bound);
    if (st) return st;
    float s = fedc_secure_sum_scale(bits, bound), levels = (float)fedc_secure_sum_levels(bits);
    for (int64_t i = 0; i < n; i++) words[i] = (uint32_t)quantize(x[i], s, levels); /* two's complement */
    return FEDC_OK;
}

void fedc_secure_sum_add(uint32_t *acc, const uint32_t *words, int64_t n) {
    for (int64_t i = 0; i < n; i++) acc[i] += words[i]; /* unsigned: wraps modulo 2^32 */
}

/* A word read as a two's complement i32, without C's implementation-defined
 * conversion of an out-of-range unsigned value. */
static int64_t as_signed(uint32_t w) { return w <= INT32_MAX ? (int64_t)w : (int64_t)w - ((int64_t)1 << 32); }

fedc_status fedc_secure_sum_decode(int bits, double bound, const uint32_t *sum, int64_t n, float *out) {
    fedc_status st = fedc_secure_sum_check(bits, bound);
    if (st) return st;
    float s = fedc_secure_sum_scale(bits, bound);
    for (int64_t i = 0; i < n; i++) out[i] = (float)as_signed(sum[i]) / s;
    return FEDC_OK;
}

/* ------------------------------------------------------ in the program -- */

static fedc_value encode_leaf(fedc_program *p, fedc_value v, float s, float levels) {
    fedc_value u = fedc_mul(p, v, fedc_scalar(p, FEDC_F32, s)); /* NaN stays NaN through max and min: cast makes 0 */
    u = fedc_maximum(p, u, fedc_scalar(p, FEDC_F32, -levels));
    u = fedc_minimum(p, u, fedc_scalar(p, FEDC_F32, levels));
    fedc_value up = fedc_ge(p, u, fedc_scalar(p, FEDC_F32, 0));
    fedc_value plus_half = fedc_scalar(p, FEDC_F32, 0.5), minus_half = fedc_scalar(p, FEDC_F32, -0.5);
    fedc_value half = fedc_select(p, up, plus_half, minus_half);
    return fedc_cast(p, fedc_add(p, u, half), FEDC_I32); /* the cast truncates toward zero */
}

fedc_tree *fedc_aggregate_secure_encode(fedc_program *p, const fedc_tree *t, int bits, double bound) {
    if (fedc_secure_sum_check(bits, bound)) return fedc_program_fail(p, FEDC_EINVAL, "%s", fedc_errmsg()), NULL;
    float s = fedc_secure_sum_scale(bits, bound), levels = (float)fedc_secure_sum_levels(bits);
    fedc_tree *r = fedc_tree_new(p);
    for (int i = 0; r && i < fedc_tree_size(t); i++)
        fedc_tree_set(p, r, fedc_tree_name(t, i), encode_leaf(p, fedc_tree_value(t, i), s, levels));
    return fedc_program_status(p) ? NULL : r;
}

fedc_tree *fedc_aggregate_secure_sum(fedc_program *p, const fedc_tree *t, int bits, double bound) {
    fedc_tree *words = fedc_aggregate_secure_encode(p, t, bits, bound);
    fedc_tree *sum = words ? fedc_tree_sum(p, words) : NULL, *r = sum ? fedc_tree_new(p) : NULL;
    fedc_value s = fedc_scalar(p, FEDC_F32, fedc_secure_sum_scale(bits, bound));
    for (int i = 0; r && i < fedc_tree_size(sum); i++)
        fedc_tree_set(p, r, fedc_tree_name(sum, i), fedc_div(p, fedc_cast(p, fedc_tree_value(sum, i), FEDC_F32), s));
    return fedc_program_status(p) ? NULL : r;
}
