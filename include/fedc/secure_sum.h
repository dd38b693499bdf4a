/*
 * fedc/secure_sum.h — secure sum's arithmetic: what a client sends to a secure
 * aggregation (SecAgg) and what the server decodes from the sum (docs/privacy.md).
 *
 * A secure sum adds integers modulo 2^32, so a float vector is first made into
 * fixed point. With BITS bits (2..24) and a bound B > 0, L = 2^(BITS-1) - 1 and
 * the scale s = f32(L / B):
 *
 *     per client, per element:  u = clamp(f32(x · s), -L, L)          (NaN: 0)
 *                               q = trunc(u ± 0.5)  (round half away from zero)
 *                               word = q as u32 (two's complement)
 *     server:                   S = Σ_clients word  (mod 2^32, exactly)
 *                               sum = f32(S read as i32) / s
 *
 * The clip is elementwise (L-infinity, as TFF's SecureSumFactory clips to its
 * [lower, upper] thresholds), the rounding deterministic (as TFF's
 * secure_quantized_sum); the levels are symmetric, 2^BITS - 1 of them, so 0 is
 * exact. The sum of the words equals the integer sum Σ q bitwise as long as
 * |Σ q| < 2^31, which n clients guarantee when n · L < 2^31 (BITS 16: 65,538
 * clients). Beyond that it wraps modulo 2^32 (the decoded value is Σ q - k 2^32
 * for the k that brings it into [-2^31, 2^31)); nothing is undefined.
 *
 * BITS stops at 24 because every step is f32 arithmetic (a float has a 24-bit
 * significand): L and u ± 0.5 are then exact, and the round program computes
 * the same words as these functions, bit for bit.
 */
#ifndef FEDC_SECURE_SUM_H
#define FEDC_SECURE_SUM_H

#include <stdint.h>

#include "fedc/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { FEDC_SECURE_SUM_MIN_BITS = 2, FEDC_SECURE_SUM_MAX_BITS = 24 };

/* EINVAL, naming the value and its range, unless bits is in [2, 24] and bound is
 * finite and > 0. */
FEDC_API fedc_status fedc_secure_sum_check(int bits, double bound);
/* L = 2^(bits-1) - 1, the largest quantized magnitude (0 for bits outside 2..24, as
 * the next two functions are then 0). */
FEDC_API int32_t fedc_secure_sum_levels(int bits);
/* The scale s = f32(L / bound). */
FEDC_API float fedc_secure_sum_scale(int bits, double bound);
/* How many clients' words can be summed without wrapping: floor((2^31 - 1) / L). */
FEDC_API int64_t fedc_secure_sum_max_clients(int bits);
/* One client's x[0..n) as words[0..n), as above. */
FEDC_API fedc_status fedc_secure_sum_encode(int bits, double bound, const float *x, int64_t n, uint32_t *words);
/* acc[i] = acc[i] + words[i] mod 2^32. */
FEDC_API void fedc_secure_sum_add(uint32_t *acc, const uint32_t *words, int64_t n);
/* The decoded sum of the words sum[0..n) into out[0..n). */
FEDC_API fedc_status fedc_secure_sum_decode(int bits, double bound, const uint32_t *sum, int64_t n, float *out);

/* The same in a round program. fedc_aggregate_secure_encode: t (f32 leaves,
 * @clients) as i32 leaves @clients, each element's word; fedc_aggregate_secure_sum:
 * the decoded sum over the clients of those words (f32 leaves @server): the words
 * are summed by the program's i32 sum over clients, which wraps modulo 2^32 in
 * every executor (src/exec/aggregate.c), so the sum's bits do not depend on the
 * number of threads or ranks. */
FEDC_API fedc_tree *fedc_aggregate_secure_encode(fedc_program *p, const fedc_tree *t, int bits, double bound);
FEDC_API fedc_tree *fedc_aggregate_secure_sum(fedc_program *p, const fedc_tree *t, int bits, double bound);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_SECURE_SUM_H */
