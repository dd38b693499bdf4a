/*
 * tests/test_rng.h — a small deterministic generator for test data (xorshift64*),
 * one stream per `rng` value, so that a test's data depend on its seed only.
 */
#ifndef FEDC_TEST_RNG_H
#define FEDC_TEST_RNG_H

#include <stdint.h>

typedef struct rng {
    uint64_t s;
} rng;

static inline uint64_t rng_next(rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ull;
}

/* Uniform in [lo, hi). */
static inline double rng_uniform(rng *r, double lo, double hi) {
    return lo + (hi - lo) * (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static inline int rng_int(rng *r, int n) { return (int)(rng_next(r) % (uint64_t)n); }

static inline void fill_f32(rng *r, float *x, int64_t n, double lo, double hi) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)rng_uniform(r, lo, hi);
}

#endif
