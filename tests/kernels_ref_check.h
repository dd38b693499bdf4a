/*
 * tests/kernels_ref_check.h — what the reference kernels' tests share
 * (test_kernels_ref.c, test_kernels_ref_nn.c): shapes, buffers filled from
 * doubles, element-wise comparison with a tolerance per dtype, and deterministic
 * test values.
 */
#ifndef FEDC_TEST_KERNELS_REF_CHECK_H
#define FEDC_TEST_KERNELS_REF_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "kernels/ref.h"

static const fedc__kernels *const K = &fedc__kernels_ref;
static const fedc_dtype FLOATS[] = {FEDC_F32, FEDC_F64};

#define KS(...)                                                                            \
    kshape((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__})
static inline fedc__kshape kshape(int rank, const int64_t *dims) {
    fedc__kshape s = {.rank = rank};
    for (int d = 0; d < rank; d++) s.dims[d] = dims[d];
    return s;
}
static const fedc__kshape SCALAR = {.rank = 0};

/* A zeroed buffer of n elements of dt, filled from vals (double) when vals is set. */
static inline void *make(fedc_dtype dt, int64_t n, const double *vals) {
    void *p = calloc((size_t)(n > 0 ? n : 1), fedc_dtype_size(dt));
    for (int64_t i = 0; vals && i < n; i++) {
        if (dt == FEDC_F32) ((float *)p)[i] = (float)vals[i];
        else if (dt == FEDC_F64) ((double *)p)[i] = vals[i];
        else if (dt == FEDC_I32) ((int32_t *)p)[i] = (int32_t)vals[i];
        else ((uint8_t *)p)[i] = (uint8_t)vals[i];
    }
    return p;
}

static inline double get(fedc_dtype dt, const void *p, int64_t i) {
    if (dt == FEDC_F32) return ((const float *)p)[i];
    if (dt == FEDC_F64) return ((const double *)p)[i];
    if (dt == FEDC_I32) return ((const int32_t *)p)[i];
    return ((const uint8_t *)p)[i];
}

/* got (dt) ~= want elementwise: |g - w| <= tol * max(1, |w|); NaN matches NaN. */
#define CHECK_ARR(dt, got, want, n, tol) check_arr(__FILE__, __LINE__, #got, dt, got, want, n, tol)
static inline void check_arr(const char *file, int line, const char *what, fedc_dtype dt, const void *got,
                      const double *want, int64_t n, double tol) {
    for (int64_t i = 0; i < n; i++) {
        double g = get(dt, got, i), w = want[i];
        double scale = fabs(w) > 1 ? fabs(w) : 1;
        if (isnan(g) && isnan(w)) continue;
        if (g == w) continue; /* also covers equal infinities */
        if (!(fabs(g - w) <= tol * scale)) {
            fedc_test_fail(file, line, "%s (%s)[%lld]: got %.9g, want %.9g", what,
                           fedc_dtype_name(dt), (long long)i, g, w);
            return;
        }
    }
}

static inline double tol_of(fedc_dtype dt) { return dt == FEDC_F32 ? 1e-6 : 1e-13; }

/* Deterministic values in [-1, 1) (a 64-bit LCG): test data, not the library's RNG. */
static inline double lcg(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) * 0x1p-52 - 1.0;
}
static inline double *randoms(int64_t n, uint64_t seed) {
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = lcg(&seed);
    return v;
}
static inline double dot(const double *a, const double *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

#endif
