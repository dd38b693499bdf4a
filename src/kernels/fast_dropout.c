/* Fast dropout and random_uniform: the reference's mask and values, bit for bit,
 * at a fraction of its cost. The reference computes a whole Philox4x32-10 block (four words) for
 * every element and keeps one word; in the EMNIST CNN's training step that made
 * dropout (two masks forward, the same two on the cotangents backward) a quarter
 * of the time. Here each block is computed once for its four elements, and the
 * blocks of a tile are computed side by side in lanes (structure of arrays), a
 * loop that the compiler turns into SIMD 32x32->64 multiplies.
 *
 * Equality with the reference, element i:
 *  - the word: word i % 4 of block i / 4 of the stream, as fedc_rng_uniform_f32;
 *  - keep: the reference tests (double)u >= rate with u = (w >> 8) * 2^-24. Since
 *    u * 2^24 and rate * 2^24 are exact in double, that is (w >> 8) >= rate * 2^24,
 *    that is (w >> 8) >= ceil(rate * 2^24) for the integer w >> 8;
 *  - the value: x / (1 - rate) in double, rounded once to float, as the reference
 *    (fedc__ref_storef) does. When 1 - rate is a float (rate 0.5, 0.25, ...), that
 *    is x / (float)(1 - rate) in float: a quotient of two floats rounded to double
 *    (53 bits >= 2 * 24 + 2) and then to float is the quotient rounded to float
 *    once (double rounding is innocuous for division at that precision; Figueroa,
 *    "When is double rounding innocuous?", 1995), and float division is several
 *    times cheaper than double. test_kernels_fast checks both on 2^22 values. */
#include <math.h>
#include <stdbool.h>

#include "kernels/fast.h"
#include "kernels/ref.h"

enum { LANES = 64 }; /* Philox blocks per tile: 256 elements */

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

/* w[4 l + j] = word j of block first + l of the stream (counter {block lo, block
 * hi, c2, c3}, key = the stream's), as fedc_rng_block computes them one at a time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

VECTOR_CLONES static void philox_tile(fedc_rng_stream s, uint64_t first, uint32_t w[4 * LANES]) {
    uint32_t c0[LANES], c1[LANES], c2[LANES], c3[LANES];
    for (int l = 0; l < LANES; l++) {
        uint64_t b = first + (uint64_t)l;
        c0[l] = (uint32_t)b, c1[l] = (uint32_t)(b >> 32), c2[l] = s.c2, c3[l] = s.c3;
    }
    uint32_t k0 = s.key.k[0], k1 = s.key.k[1];
    for (int r = 0; r < 10; r++) {
        if (r > 0) k0 += PHILOX_W0, k1 += PHILOX_W1;
        for (int l = 0; l < LANES; l++) {
            uint64_t p0 = (uint64_t)PHILOX_M0 * c0[l], p1 = (uint64_t)PHILOX_M1 * c2[l];
            uint32_t y0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0, y2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
            c1[l] = (uint32_t)p1, c3[l] = (uint32_t)p0, c0[l] = y0, c2[l] = y2;
        }
    }
    for (int l = 0; l < LANES; l++) w[4 * l] = c0[l], w[4 * l + 1] = c1[l], w[4 * l + 2] = c2[l], w[4 * l + 3] = c3[l];
}

/* y[e] = kept ? x / (1 - rate) : 0 for the `end` elements of one tile, without a
 * branch so that the divisions vectorise (each is still one correctly rounded
 * double division, so the bits do not depend on the vector width). */
VECTOR_CLONES static void apply_tile(int64_t end, const uint32_t *w, uint32_t threshold, double scale_div,
                                     const float *x, float *y) {
    for (int64_t e = 0; e < end; e++) {
        float v = (float)((double)x[e] / scale_div);
        y[e] = (w[e] >> 8) >= threshold ? v : 0.0f;
    }
}

/* The same when 1 - rate is a float: the same bits (see the top of the file). */
VECTOR_CLONES static void apply_tile_f32(int64_t end, const uint32_t *w, uint32_t threshold, float scale_div,
                                         const float *x, float *y) {
    for (int64_t e = 0; e < end; e++) {
        float v = x[e] / scale_div;
        y[e] = (w[e] >> 8) >= threshold ? v : 0.0f;
    }
}

fedc_status fedc__fast_dropout(fedc_dtype dt, int64_t n, const void *x, fedc_rng_stream stream, double rate,
                              void *y) {
    if (dt != FEDC_F32 || !(rate >= 0 && rate < 1)) return fedc__ref_dropout(dt, n, x, stream, rate, y);
    const float *xf = x;
    float *yf = y;
    uint32_t threshold = (uint32_t)ceil(rate * 0x1p24), w[4 * LANES];
    double scale_div = 1.0 - rate;
    bool in_float = (double)(float)scale_div == scale_div;
    for (int64_t base = 0; base < n; base += 4 * LANES) {
        philox_tile(stream, (uint64_t)base / 4, w);
        int64_t end = n - base < 4 * LANES ? n - base : 4 * LANES;
        if (in_float) apply_tile_f32(end, w, threshold, (float)scale_div, xf + base, yf + base);
        else apply_tile(end, w, threshold, scale_div, xf + base, yf + base);
    }
    return FEDC_OK;
}

/* random_uniform (f32): word i % 4 of block i / 4, (w >> 8) 2^-24, as
 * fedc_rng_uniform_f32, four elements a block; the stochastic rounding of the
 * compression (src/fl/compress.c) draws one per number of every update. */
VECTOR_CLONES static void uniform_tile(int64_t end, const uint32_t *w, float *y) {
    for (int64_t e = 0; e < end; e++) y[e] = (float)(w[e] >> 8) * 0x1p-24f;
}

fedc_status fedc__fast_random_uniform(fedc_dtype dt, int64_t n, fedc_rng_stream stream, void *y) {
    if (dt != FEDC_F32) return fedc__ref_random_uniform(dt, n, stream, y);
    uint32_t w[4 * LANES];
    for (int64_t base = 0; base < n; base += 4 * LANES) {
        philox_tile(stream, (uint64_t)base / 4, w);
        uniform_tile(n - base < 4 * LANES ? n - base : 4 * LANES, w, (float *)y + base);
    }
    return FEDC_OK;
}

/* ------------------------------------------------------- kept masks -- */

/* The forward's mask kept for the backward (dropout_save, dropout_apply): the
 * backward reads one byte per element instead of computing Philox again. The
 * value is computed as apply_tile(_f32) computes it, so the bits are dropout's. */

static fedc_status keep_args(const char *what, fedc_dtype dt, double rate) {
    if (dt != FEDC_F32) return fedc_error(FEDC_EINVAL, "%s: dtype %s, only f32 has a kept mask", what, fedc_dtype_name(dt));
    if (!(rate >= 0 && rate < 1)) return fedc_error(FEDC_EINVAL, "%s: rate %g is outside [0, 1)", what, rate);
    return FEDC_OK;
}

VECTOR_CLONES static void apply_keep(int64_t n, const uint8_t *keep, double scale_div, const float *x, float *y) {
    if ((double)(float)scale_div == scale_div) {
        float d = (float)scale_div;
        for (int64_t e = 0; e < n; e++) y[e] = keep[e] ? x[e] / d : 0.0f;
    } else {
        for (int64_t e = 0; e < n; e++) y[e] = keep[e] ? (float)((double)x[e] / scale_div) : 0.0f;
    }
}

fedc_status fedc__fast_dropout_save(fedc_dtype dt, int64_t n, const void *x, fedc_rng_stream stream, double rate,
                                   void *y, uint8_t *keep) {
    fedc_status st = keep_args("dropout_save", dt, rate);
    if (st) return st;
    uint32_t threshold = (uint32_t)ceil(rate * 0x1p24), w[4 * LANES];
    for (int64_t base = 0; base < n; base += 4 * LANES) {
        philox_tile(stream, (uint64_t)base / 4, w);
        int64_t end = n - base < 4 * LANES ? n - base : 4 * LANES;
        for (int64_t e = 0; e < end; e++) keep[base + e] = (w[e] >> 8) >= threshold;
        apply_keep(end, keep + base, 1.0 - rate, (const float *)x + base, (float *)y + base);
    }
    return FEDC_OK;
}

fedc_status fedc__fast_dropout_apply(fedc_dtype dt, int64_t n, const void *x, const uint8_t *keep, double rate,
                                    void *y) {
    fedc_status st = keep_args("dropout_apply", dt, rate);
    if (!st) apply_keep(n, keep, 1.0 - rate, x, y);
    return st;
}
