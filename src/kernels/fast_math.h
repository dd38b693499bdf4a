/* fast_math.h — branch-free float exp and tanh that the compiler vectorises
 * (libm's expf and tanhf are calls per element, which dominate GELU and softmax
 * over large arrays). Internal to the fast kernels. */
#ifndef FEDC_KERNELS_FAST_MATH_H
#define FEDC_KERNELS_FAST_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The hottest loops are compiled three times, for the baseline, for AVX2 (8
 * floats a vector) and for AVX-512 (16), and chosen at run time: FEDC_FAST_AVX2
 * and FEDC_FAST_AVX512 mark the wider copies. Without FMA (no-fma: AVX-512
 * would allow contracting a * b + c) the copies do the same IEEE operations in
 * the same order, lane by lane, so they give the same bits; only the speed
 * differs. */
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define FEDC_FAST_AVX2 __attribute__((target("avx2")))
#define FEDC_FAST_HAS_AVX2() __builtin_cpu_supports("avx2")
#define FEDC_FAST_AVX512 __attribute__((target("avx512f,no-fma")))
#define FEDC_FAST_HAS_AVX512() __builtin_cpu_supports("avx512f")
#else
#define FEDC_FAST_AVX2
#define FEDC_FAST_HAS_AVX2() 0
#define FEDC_FAST_AVX512
#define FEDC_FAST_HAS_AVX512() 0
#endif
/* The copy of function f (f_base, f_avx2, f_avx512) for this machine. */
#define FEDC_FAST_PICK(f) (FEDC_FAST_HAS_AVX512() ? f##_avx512 : FEDC_FAST_HAS_AVX2() ? f##_avx2 : f##_base)
/* For a loop body written once and instantiated in both copies. */
#define FEDC_FAST_INLINE static inline __attribute__((always_inline))

/* e^x for x in any range, within about 2 ulp: x = n ln2 + r with |r| <= ln2 / 2,
 * e^r by Cephes' expf polynomial, 2^n placed in the exponent bits. A finite x is
 * clamped to [-87.3, 88.3], so the result is a normal float; the infinities and
 * NaN give what IEEE exp gives (0, inf, NaN), chosen after the polynomial, which
 * runs on a NaN-free x so that the conversion to int is always defined. Every
 * step is a compare-and-select, which keeps the loops vectorised. */
FEDC_FAST_INLINE float fedc__fast_expf(float x) {
    float c = x < -87.3f ? -87.3f : x;
    c = c > 88.3f ? 88.3f : c;
    c = c == c ? c : 0.0f; /* NaN: any number will do, the result is replaced */
    float z = c * 1.44269504088896341f + 126.5f; /* > 0, so truncation is floor */
    int32_t n = (int32_t)z - 126;
    float fn = (float)n;
    float r = c - fn * 0.693359375f + fn * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = (n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    float e = p * scale;
    e = x == -INFINITY ? 0.0f : e;
    e = x == INFINITY ? x : e;
    return x == x ? e : x;
}

/* tanh(x) = 1 - 2 / (e^(2x) + 1): absolute error about 1e-7 (relative error
 * grows near 0, where callers add it to 1). */
FEDC_FAST_INLINE float fedc__fast_tanhf(float x) { return 1.0f - 2.0f / (fedc__fast_expf(2.0f * x) + 1.0f); }

#endif
