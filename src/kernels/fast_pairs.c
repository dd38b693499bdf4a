/*
 * fast_pairs.c — two elementwise ops in one pass, where the executor finds that
 * the first op's only reader is the second (src/exec/plan_fusion.c):
 *
 *     select(gt(x, s), a, b)   relu's derivative: a where x > s, else b
 *     sub(w, mul(s, g))        an SGD step: w - s g, the product rounded first
 *
 * Each element goes through exactly the two ops' operations (the comparison, then
 * the choice of bits; the rounded product, then the rounded difference), so the
 * bits are those of the pair run one op at a time. What goes is a pass and the
 * intermediate array: on the EMNIST CNN, SGD wrote and read back 4.7 MB of
 * scaled gradient for the dense kernel at every step, and relu's derivative a
 * byte mask per activation. This file is compiled with -ffp-contract=off, so that
 * w - s * g never becomes a fused multiply-add.
 */
#include <stdint.h>
#include <string.h>

#include "kernels/fast.h"

/* Same span as the other elementwise kernels: one thread or several, each element
 * is computed the same way. */
enum { SPAN = 1 << 15 };

typedef struct pair_job {
    fedc_dtype dt;
    const char *x, *s, *a, *b; /* select_gt: x, s, a, b; sub_scaled: x = w, s, a = g */
    int64_t sa, sb;            /* select_gt: steps of a and b (1 full, 0 scalar) */
    char *out;
} pair_job;

/* ------------------------------------------------------------ select_gt -- */

/* The choice made on the bits with an all-ones or all-zeros mask (U: the unsigned
 * type of T's size), as fedc__fast_select does: branch-free and vectorised. */
#define SELECT_GT(T, U)                                                                                   \
    static inline __attribute__((always_inline)) void select_gt_body_##T(                                 \
        int64_t n, const T *x, T s, const T *a, int64_t sa, const T *b, int64_t sb, T *out) {   \
        for (int64_t i = 0; i < n; i++) {                                                                 \
            U m = (U)0 - (U)(x[i] > s), ua, ub;                                                           \
            memcpy(&ua, a + i * sa, sizeof ua);                                                           \
            memcpy(&ub, b + i * sb, sizeof ub);                                                           \
            U v = (ua & m) | (ub & ~m);                                                                   \
            memcpy(out + i, &v, sizeof v);                                                                \
        }                                                                                                 \
    }                                                                                                     \
                                                                                                          \
    /* Constant steps in each call, so that every layout gets its own vector loop. */                    \
    static void select_gt_##T(int64_t n, const T *x, T s, const T *a, int64_t sa, const T *b, int64_t sb, \
                              T *out) {                                                                   \
        if (sa == 1 && sb == 0) select_gt_body_##T(n, x, s, a, 1, b, 0, out);                             \
        else if (sa == 0 && sb == 1) select_gt_body_##T(n, x, s, a, 0, b, 1, out);                        \
        else if (sa == 1 && sb == 1) select_gt_body_##T(n, x, s, a, 1, b, 1, out);                        \
        else select_gt_body_##T(n, x, s, a, 0, b, 0, out);                                                \
    }
SELECT_GT(float, uint32_t)
SELECT_GT(double, uint64_t)

static void select_gt_span(const void *ctx, int64_t i0, int64_t i1) {
    const pair_job *j = ctx;
    size_t es = fedc_dtype_size(j->dt);
    const char *x = j->x + (size_t)i0 * es, *a = j->a + (size_t)(i0 * j->sa) * es, *b = j->b + (size_t)(i0 * j->sb) * es;
    char *out = j->out + (size_t)i0 * es;
    if (j->dt == FEDC_F32)
        select_gt_float(i1 - i0, (const float *)x, *(const float *)j->s, (const float *)a, j->sa, (const float *)b,
                        j->sb, (float *)out);
    else
        select_gt_double(i1 - i0, (const double *)x, *(const double *)j->s, (const double *)a, j->sa,
                         (const double *)b, j->sb, (double *)out);
}

fedc_status fedc__fast_select_gt(fedc_dtype dt, int64_t n, const void *x, const void *s, const void *a, int64_t sa,
                                const void *b, int64_t sb, void *out) {
    if (dt != FEDC_F32 && dt != FEDC_F64)
        return fedc_error(FEDC_EUNSUPPORTED, "select_gt (fast): dtype %s is not supported", fedc_dtype_name(dt));
    if (n < 0 || (sa != 0 && sa != 1) || (sb != 0 && sb != 1))
        return fedc_error(FEDC_EINVAL, "select_gt (fast): bad count %lld or steps %lld, %lld", (long long)n,
                          (long long)sa, (long long)sb);
    pair_job j = {dt, x, s, a, b, sa, sb, out};
    fedc__kernels_spans(n, SPAN, select_gt_span, &j);
    return FEDC_OK;
}

/* ----------------------------------------------------------- sub_scaled -- */

#define SUB_SCALED(T)                                                                                   \
    static void sub_scaled_##T(int64_t n, const T *w, T s, const T *g, T *out) {                        \
        for (int64_t i = 0; i < n; i++) {                                                               \
            T product = s * g[i];                                                                       \
            out[i] = w[i] - product;                                                                    \
        }                                                                                               \
    }
SUB_SCALED(float)
SUB_SCALED(double)

void fedc__fast_sub_scaled_run(fedc_dtype dt, int64_t n, const void *w, const void *s, const void *g, void *out) {
    if (dt == FEDC_F32) sub_scaled_float(n, w, *(const float *)s, g, out);
    else sub_scaled_double(n, w, *(const double *)s, g, out);
}

static void sub_scaled_span(const void *ctx, int64_t i0, int64_t i1) {
    const pair_job *j = ctx;
    size_t at = (size_t)i0 * fedc_dtype_size(j->dt);
    fedc__fast_sub_scaled_run(j->dt, i1 - i0, j->x + at, j->s, j->a + at, j->out + at);
}


fedc_status fedc__fast_sub_scaled(fedc_dtype dt, int64_t n, const void *w, const void *s, const void *g, void *out) {
    if (dt != FEDC_F32 && dt != FEDC_F64)
        return fedc_error(FEDC_EUNSUPPORTED, "sub_scaled (fast): dtype %s is not supported", fedc_dtype_name(dt));
    if (n < 0) return fedc_error(FEDC_EINVAL, "sub_scaled (fast): negative count %lld", (long long)n);
    pair_job j = {dt, w, s, g, NULL, 0, 0, out};
    fedc__kernels_spans(n, SPAN, sub_scaled_span, &j);
    return FEDC_OK;
}
