/*
 * fast_elementwise.c — unary, binary and reduce for f32 and f64 as flat loops the
 * compiler can vectorise. The reference resolves every element through broadcast
 * strides (a division per dim); here the common layouts get a direct loop:
 * operands of the output's shape, a scalar operand, and an operand that repeats
 * along the leading dims (a bias: its shape is the output's trailing dims). Other
 * broadcasts, i32 and bad arguments go to the reference, which also reports the
 * errors; cast has flat loops between f32 and i32 (the compression's floor), and
 * an f32 max over trailing axes a plain loop.
 * Reduce has a fast path when the reduced axes are the leading ones or the
 * trailing ones (size-1 axes do not matter); sums accumulate in double, as the
 * reference's do, in a fixed order, so results are deterministic.
 *
 * Aliasing: the output may be the very buffer of an operand (the kernel contract
 * allows it for unary and binary). The loops write through a restrict pointer, so
 * they are only ever given an output that overlaps no input; when it does, they
 * write into a stack tile that is then copied out, tile by tile, which is correct
 * for exact aliasing because each tile reads only the elements it replaces.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/fast.h"
#include "kernels/fast_math.h"
#include "kernels/ref.h"

#define TILE 1024     /* elements per tile on the aliased path */
#define COL_BLOCK 256 /* columns summed together by the leading-axes reduction */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Whether byte ranges [p, p+pn) and [q, q+qn) share a byte. */
static int overlaps(const void *p, size_t pn, const void *q, size_t qn) {
    uintptr_t a = (uintptr_t)p, b = (uintptr_t)q;
    return pn && qn && a < b + qn && b < a + pn;
}

static int shape_ok(const fedc__kshape *s) {
    if (s->rank < 0 || s->rank > FEDC_MAX_RANK) return 0;
    for (int d = 0; d < s->rank; d++)
        if (s->dims[d] < 0) return 0;
    return 1;
}

/* Large elementwise runs are cut into spans of SPAN elements for the kernels'
 * pool (fedc__kernels_spans); each element is computed the same way in any span,
 * so the bits do not depend on the threads. Smaller runs stay whole. */
enum { SPAN = 1 << 15 };

/* ----------------------------------------------------------------- unary -- */

/* Both branches keep exp's argument non-positive, so neither overflows. */
static float sigmoid_f32(float v) {
    if (v >= 0) return 1.0f / (1.0f + expf(-v));
    float e = expf(v);
    return e / (1.0f + e);
}

static double sigmoid_f64(double v) {
    if (v >= 0) return 1.0 / (1.0 + exp(-v));
    double e = exp(v);
    return e / (1.0 + e);
}

/* y[i] = op(x[i]); y overlaps no x. f32 uses the float libm functions (within an
 * ulp or two of the reference's double evaluation); POW stays in double so that
 * an exponent like 0.1 is not rounded to float first. */
#define UNARY_FN(T, S, EXP, LOG, TANH, SQRT)                                                     \
    static void unary_##S(fedc__unary_op op, int64_t n, const void *xv, void *restrict yv,        \
                          double p) {                                                            \
        const T *x = xv;                                                                         \
        T *restrict y = yv;                                                                      \
        switch (op) {                                                                            \
        case FEDC_U_NEG: for (int64_t i = 0; i < n; i++) y[i] = -x[i]; break;                    \
        case FEDC_U_EXP: for (int64_t i = 0; i < n; i++) y[i] = EXP(x[i]); break;                \
        case FEDC_U_LOG: for (int64_t i = 0; i < n; i++) y[i] = LOG(x[i]); break;                \
        case FEDC_U_TANH: for (int64_t i = 0; i < n; i++) y[i] = TANH(x[i]); break;              \
        case FEDC_U_SIGMOID: for (int64_t i = 0; i < n; i++) y[i] = sigmoid_##S(x[i]); break;    \
        case FEDC_U_RELU: for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0; break;     \
        case FEDC_U_SQRT: for (int64_t i = 0; i < n; i++) y[i] = SQRT(x[i]); break;              \
        case FEDC_U_SQUARE: for (int64_t i = 0; i < n; i++) y[i] = x[i] * x[i]; break;           \
        case FEDC_U_POW: for (int64_t i = 0; i < n; i++) y[i] = (T)pow(x[i], p); break;          \
        default: break;                                                                          \
        }                                                                                        \
    }

UNARY_FN(float, f32, expf, logf, tanhf, sqrtf)
UNARY_FN(double, f64, exp, log, tanh, sqrt)

typedef void (*unary_fn)(fedc__unary_op op, int64_t n, const void *x, void *restrict y, double p);

/* f32 tanh without libm's call per element (the LSTM models' tanh between layers
 * spent 7% of a step there): Cephes' odd polynomial below |x| = 0.625, where
 * 1 - 2 / (e^2|x| + 1) would lose the relative precision, and that formula with
 * x's sign above; within a few ulp. Branch-free so that it vectorises; compiled
 * for the baseline and for AVX2. NaN stays NaN. */
FEDC_FAST_INLINE float tanh_f32(float x) {
    float a = fabsf(x), z = x * x;
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
                   3.33332819422e-1f) * z * x + x;
    float e = fedc__fast_expf(a < 44.0f ? 2.0f * a : 88.0f); /* past 44, tanh is 1 in float; NaN goes here too */
    float big = copysignf(1.0f - 2.0f / (e + 1.0f), x);
    float y = a < 0.625f ? small : big;
    return x != x ? x : y;
}

FEDC_FAST_INLINE void tanh_span(int64_t n, const float *x, float *restrict y) {
    for (int64_t i = 0; i < n; i++) y[i] = tanh_f32(x[i]);
}

static void tanh_plain(int64_t n, const float *x, float *restrict y) { tanh_span(n, x, y); }
FEDC_FAST_AVX2 static void tanh_avx2(int64_t n, const float *x, float *restrict y) { tanh_span(n, x, y); }

static void unary_tanh_f32(fedc__unary_op op, int64_t n, const void *x, void *restrict y, double p) {
    (void)op, (void)p;
    if (FEDC_FAST_HAS_AVX2()) tanh_avx2(n, x, y);
    else tanh_plain(n, x, y);
}

/* Runs fn over n elements of size es, through stack tiles when y overlaps x. */
static void run_unary(unary_fn fn, fedc__unary_op op, int64_t n, size_t es, const void *x, void *y,
                      double p) {
    if (!overlaps(x, (size_t)n * es, y, (size_t)n * es)) {
        fn(op, n, x, y, p);
        return;
    }
    _Alignas(64) unsigned char tile[TILE * sizeof(double)];
    for (int64_t i = 0; i < n; i += TILE) {
        int64_t len = min64(TILE, n - i);
        fn(op, len, (const char *)x + (size_t)i * es, tile, p);
        memcpy((char *)y + (size_t)i * es, tile, (size_t)len * es);
    }
}

typedef struct unary_job {
    unary_fn fn;
    fedc__unary_op op;
    size_t es;
    const char *x;
    char *y;
    double p;
} unary_job;

static void unary_span(const void *ctx, int64_t i0, int64_t i1) {
    const unary_job *j = ctx;
    run_unary(j->fn, j->op, i1 - i0, j->es, j->x + (size_t)i0 * j->es, j->y + (size_t)i0 * j->es, j->p);
}

fedc_status fedc__fast_unary(fedc__unary_op op, fedc_dtype dt, int64_t n, const void *x, void *y,
                            double param) {
    if ((unsigned)op >= FEDC_U_COUNT || n < 0 || (dt != FEDC_F32 && dt != FEDC_F64))
        return fedc__ref_unary(op, dt, n, x, y, param);
    unary_job j = {unary_f64, op, sizeof(double), x, y, param};
    if (dt == FEDC_F32) j.fn = op == FEDC_U_TANH ? unary_tanh_f32 : unary_f32, j.es = sizeof(float);
    fedc__kernels_spans(n, SPAN, unary_span, &j);
    return FEDC_OK;
}

/* ---------------------------------------------------------------- binary -- */

/* out[t] = A op B for t in [0, n), where A and B are expressions in a[t], a[0], b[t]
 * or b[0]; out overlaps neither operand. MAX and MIN return NaN when either side is
 * NaN (the first test catches a NaN in A, the comparison failing picks a NaN B) and
 * otherwise pick exactly what the reference picks, ties included. Comparisons write
 * bytes. */
#define BINARY_FN(T, NAME, A, B)                                                                 \
    static void NAME(fedc__binary_op op, int64_t n, const void *av, const void *bv,               \
                     void *restrict ov) {                                                        \
        const T *a = av, *b = bv;                                                                \
        T *restrict y = ov;                                                                      \
        uint8_t *restrict m = ov;                                                                \
        switch (op) {                                                                            \
        case FEDC_B_ADD: for (int64_t t = 0; t < n; t++) y[t] = (A) + (B); break;                \
        case FEDC_B_SUB: for (int64_t t = 0; t < n; t++) y[t] = (A) - (B); break;                \
        case FEDC_B_MUL: for (int64_t t = 0; t < n; t++) y[t] = (A) * (B); break;                \
        case FEDC_B_DIV: for (int64_t t = 0; t < n; t++) y[t] = (A) / (B); break;                \
        case FEDC_B_MAX:                                                                         \
            for (int64_t t = 0; t < n; t++) y[t] = (A) != (A) || (A) > (B) ? (A) : (B);          \
            break;                                                                               \
        case FEDC_B_MIN:                                                                         \
            for (int64_t t = 0; t < n; t++) y[t] = (A) != (A) || (A) < (B) ? (A) : (B);          \
            break;                                                                               \
        case FEDC_B_EQ: for (int64_t t = 0; t < n; t++) m[t] = (A) == (B); break;                \
        case FEDC_B_NE: for (int64_t t = 0; t < n; t++) m[t] = (A) != (B); break;                \
        case FEDC_B_LT: for (int64_t t = 0; t < n; t++) m[t] = (A) < (B); break;                 \
        case FEDC_B_LE: for (int64_t t = 0; t < n; t++) m[t] = (A) <= (B); break;                \
        case FEDC_B_GT: for (int64_t t = 0; t < n; t++) m[t] = (A) > (B); break;                 \
        case FEDC_B_GE: for (int64_t t = 0; t < n; t++) m[t] = (A) >= (B); break;                \
        default: break;                                                                          \
        }                                                                                        \
    }

BINARY_FN(float, bin_vv_f32, a[t], b[t])
BINARY_FN(float, bin_vs_f32, a[t], b[0])
BINARY_FN(float, bin_sv_f32, a[0], b[t])
BINARY_FN(double, bin_vv_f64, a[t], b[t])
BINARY_FN(double, bin_vs_f64, a[t], b[0])
BINARY_FN(double, bin_sv_f64, a[0], b[t])

typedef void (*binary_fn)(fedc__binary_op op, int64_t n, const void *a, const void *b,
                          void *restrict out);

/* One flat run: an operand with step 0 is a scalar, otherwise it advances one
 * element (es bytes) per output; outputs are oes bytes. */
typedef struct bin_run {
    binary_fn fn;
    fedc__binary_op op;
    size_t es, oes;
    size_t astep, bstep;
} bin_run;

static void run_binary_whole(const bin_run *r, int64_t n, const void *a, const void *b, void *out) {
    size_t abytes = r->astep ? (size_t)n * r->es : r->es;
    size_t bbytes = r->bstep ? (size_t)n * r->es : r->es;
    size_t obytes = (size_t)n * r->oes;
    if (!overlaps(out, obytes, a, abytes) && !overlaps(out, obytes, b, bbytes)) {
        r->fn(r->op, n, a, b, out);
        return;
    }
    _Alignas(64) unsigned char tile[TILE * sizeof(double)];
    for (int64_t i = 0; i < n; i += TILE) {
        int64_t len = min64(TILE, n - i);
        r->fn(r->op, len, (const char *)a + (size_t)i * r->astep,
              (const char *)b + (size_t)i * r->bstep, tile);
        memcpy((char *)out + (size_t)i * r->oes, tile, (size_t)len * r->oes);
    }
}

typedef struct binary_job {
    const bin_run *r;
    const char *a, *b;
    char *out;
} binary_job;

static void binary_span(const void *ctx, int64_t i0, int64_t i1) {
    const binary_job *j = ctx;
    run_binary_whole(j->r, i1 - i0, j->a + (size_t)i0 * j->r->astep, j->b + (size_t)i0 * j->r->bstep,
                     j->out + (size_t)i0 * j->r->oes);
}

static void run_binary(const bin_run *r, int64_t n, const void *a, const void *b, void *out) {
    binary_job j = {r, a, b, out};
    fedc__kernels_spans(n, SPAN, binary_span, &j);
}

/* s right-aligned against out's rank, with 1 for the dims it lacks. */
static int align_dims(const fedc__kshape *s, const fedc__kshape *out, int64_t *dims) {
    int lead = out->rank - s->rank;
    if (!shape_ok(s) || lead < 0) return 0;
    for (int d = 0; d < out->rank; d++) dims[d] = d < lead ? 1 : s->dims[d - lead];
    return 1;
}

static int same_dims(const int64_t *dims, const fedc__kshape *out) {
    for (int d = 0; d < out->rank; d++)
        if (dims[d] != out->dims[d]) return 0;
    return 1;
}

static int64_t dims_count(const int64_t *dims, int rank) {
    int64_t count = 1;
    for (int d = 0; d < rank; d++) count *= dims[d];
    return count;
}

/* If dims are 1 up to some axis r and equal out's from r on (a bias), the number of
 * elements of that trailing block; otherwise 0. */
static int64_t trailing_block(const int64_t *dims, const fedc__kshape *out) {
    int r = 0;
    while (r < out->rank && dims[r] == 1) r++;
    int64_t inner = 1;
    for (int d = r; d < out->rank; d++) {
        if (dims[d] != out->dims[d]) return 0;
        inner *= dims[d];
    }
    return inner;
}

/* The bias layouts: `full` has out's shape and `bias` repeats every `inner`
 * elements; bias_is_b says which side of op the bias is on. */
typedef struct bias_job {
    const bin_run *r;
    int64_t inner;
    const char *full, *bias;
    int bias_is_b;
    char *out;
} bias_job;

/* Repeats [o0, o1) of the bias. */
static void bias_span(const void *ctx, int64_t o0, int64_t o1) {
    const bias_job *j = ctx;
    for (int64_t o = o0; o < o1; o++) {
        const char *f = j->full + (size_t)(o * j->inner) * j->r->es;
        char *dst = j->out + (size_t)(o * j->inner) * j->r->oes;
        if (j->bias_is_b) run_binary_whole(j->r, j->inner, f, j->bias, dst);
        else run_binary_whole(j->r, j->inner, j->bias, f, dst);
    }
}

static void run_bias(bin_run *r, int64_t count, int64_t inner, const void *full,
                     const void *bias, int bias_is_b, void *out) {
    r->astep = r->bstep = r->es;
    bias_job j = {r, inner, full, bias, bias_is_b, out};
    fedc__kernels_spans(count / inner, (SPAN + inner - 1) / inner, bias_span, &j);
}

/* Dispatches to a fast layout; returns 0 when none applies. */
static int binary_fast(bin_run *r, const fedc__kshape *as, const void *a, const fedc__kshape *bs,
                       const void *b, const fedc__kshape *outs, void *out, const binary_fn fns[3]) {
    int64_t ad[FEDC_MAX_RANK], bd[FEDC_MAX_RANK], inner;
    if (!shape_ok(outs) || !align_dims(as, outs, ad) || !align_dims(bs, outs, bd)) return 0;
    int afull = same_dims(ad, outs), bfull = same_dims(bd, outs);
    int64_t count = fedc__kshape_count(outs), na = dims_count(ad, outs->rank),
            nb = dims_count(bd, outs->rank);
    r->fn = fns[0];
    r->astep = r->bstep = r->es;
    if (afull && bfull) {
        run_binary(r, count, a, b, out);
    } else if (afull && nb == 1) {
        r->fn = fns[1], r->bstep = 0;
        run_binary(r, count, a, b, out);
    } else if (bfull && na == 1) {
        r->fn = fns[2], r->astep = 0;
        run_binary(r, count, a, b, out);
    } else if (afull && (inner = trailing_block(bd, outs)) > 0) {
        run_bias(r, count, inner, a, b, 1, out);
    } else if (bfull && (inner = trailing_block(ad, outs)) > 0) {
        run_bias(r, count, inner, b, a, 0, out);
    } else {
        return 0;
    }
    return 1;
}

static const binary_fn binary_f32[3] = {bin_vv_f32, bin_vs_f32, bin_sv_f32};
static const binary_fn binary_f64[3] = {bin_vv_f64, bin_vs_f64, bin_sv_f64};

fedc_status fedc__fast_binary(fedc__binary_op op, fedc_dtype dt, const fedc__kshape *as, const void *a,
                             const fedc__kshape *bs, const void *b, const fedc__kshape *outs,
                             void *out) {
    if ((unsigned)op < FEDC_B_COUNT && (dt == FEDC_F32 || dt == FEDC_F64)) {
        bin_run r = {.op = op, .es = fedc_dtype_size(dt)};
        r.oes = op >= FEDC_B_EQ ? 1 : r.es;
        if (binary_fast(&r, as, a, bs, b, outs, out, dt == FEDC_F32 ? binary_f32 : binary_f64))
            return FEDC_OK;
    }
    return fedc__ref_binary(op, dt, as, a, bs, b, outs, out);
}

/* ---------------------------------------------------------------- select -- */

/* out[i] = cond[i] ? a : b, where a and b are either full (step 1) or scalars
 * (step 0): the layouts derivatives produce (relu's is select(x > 0, ct, 0)). Each
 * element reads only index i, so out may alias a full operand. The choice is made
 * on the bits, with a mask of all ones or all zeros (U is the unsigned type of T's
 * size): the same bits as `c ? a : b`, but branch-free in a form the compiler
 * vectorises well; with the ternary on floats, gcc's SSE2 code ran relu's
 * derivative 2.5x slower than a memcpy of the same bytes, with the mask at par. */
#define SELECT_LOOP(T, U)                                                                            \
    static inline U bits_##T(const T *p) {                                                         \
        U u;                                                                                       \
        memcpy(&u, p, sizeof u);                                                                   \
        return u;                                                                                  \
    }                                                                                              \
                                                                                                   \
    static inline __attribute__((always_inline)) void select_body_##T(                             \
        int64_t n, const uint8_t *restrict c, const T *a, int64_t sa, const T *b, int64_t sb, T *out) { \
        for (int64_t i = 0; i < n; i++) {                                                          \
            U m = (U)0 - (U)(c[i] != 0);                                                           \
            U v = (bits_##T(a + i * sa) & m) | (bits_##T(b + i * sb) & ~m);                        \
            memcpy(out + i, &v, sizeof v);                                                         \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* Constant steps in each call, so that every layout gets its own vector loop. */             \
    static void select_##T(int64_t n, const uint8_t *restrict c, const T *a, int64_t sa, const T *b, \
                           int64_t sb, T *out) {                                                   \
        if (sa == 1 && sb == 0) select_body_##T(n, c, a, 1, b, 0, out);                            \
        else if (sa == 0 && sb == 1) select_body_##T(n, c, a, 0, b, 1, out);                       \
        else if (sa == 1 && sb == 1) select_body_##T(n, c, a, 1, b, 1, out);                       \
        else select_body_##T(n, c, a, 0, b, 0, out);                                               \
    }
SELECT_LOOP(float, uint32_t)
SELECT_LOOP(double, uint64_t)
SELECT_LOOP(int32_t, uint32_t)
SELECT_LOOP(uint8_t, uint8_t)

/* The step of an operand against out: 1 when full, 0 when one element, -1 otherwise. */
static int64_t select_step(const fedc__kshape *s, const fedc__kshape *outs) {
    int64_t dims[FEDC_MAX_RANK];
    if (!align_dims(s, outs, dims)) return -1;
    if (same_dims(dims, outs)) return 1;
    return dims_count(dims, outs->rank) == 1 ? 0 : -1;
}

fedc_status fedc__fast_select(fedc_dtype dt, const fedc__kshape *cs, const uint8_t *cond, const fedc__kshape *as,
                             const void *a, const fedc__kshape *bs, const void *b, const fedc__kshape *outs, void *out) {
    int64_t sc = select_step(cs, outs), sa = select_step(as, outs), sb = select_step(bs, outs);
    if (sc != 1 || sa < 0 || sb < 0 || !shape_ok(outs))
        return fedc__ref_select(dt, cs, cond, as, a, bs, b, outs, out);
    int64_t n = fedc__kshape_count(outs);
    switch (fedc_dtype_size(dt)) {
    case 4:
        if (dt == FEDC_F32) select_float(n, cond, a, sa, b, sb, out);
        else select_int32_t(n, cond, a, sa, b, sb, out);
        return FEDC_OK;
    case 8: select_double(n, cond, a, sa, b, sb, out); return FEDC_OK;
    case 1: select_uint8_t(n, cond, a, sa, b, sb, out); return FEDC_OK;
    default: return fedc__ref_select(dt, cs, cond, as, a, bs, b, outs, out);
    }
}

/* ---------------------------------------------------------------- reduce -- */

/* Sums in double, as the reference does. row_sum keeps 8 independent partial sums
 * so the loop vectorises without reassociation; the order is fixed, so the result
 * is too. col_sums adds `outer` rows of `inner` columns in row order (exactly the
 * reference's order), COL_BLOCK columns at a time so the accumulators stay on the
 * stack; its rows lie ldx apart (a span of the columns). `div` is 1 for SUM and the count for MEAN. */
#define REDUCE_FNS(T, S)                                                                         \
    static double row_sum_##S(int64_t n, const T *x) {                                           \
        double lane[8] = {0};                                                                    \
        int64_t t = 0;                                                                           \
        for (; t + 8 <= n; t += 8)                                                               \
            for (int l = 0; l < 8; l++) lane[l] += (double)x[t + l];                             \
        for (; t < n; t++) lane[t % 8] += (double)x[t];                                          \
        return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +                                     \
               ((lane[4] + lane[5]) + (lane[6] + lane[7]));                                      \
    }                                                                                            \
                                                                                                 \
    static void row_sums_##S(int64_t outer, int64_t inner, const T *x, T *y, double div) {       \
        for (int64_t o = 0; o < outer; o++) y[o] = (T)(row_sum_##S(inner, x + o * inner) / div); \
    }                                                                                            \
                                                                                                 \
    FEDC_FAST_INLINE void col_sums_##S(int64_t outer, int64_t inner, int64_t ldx, const T *x, T *y, double div) { \
        for (int64_t j0 = 0; j0 < inner; j0 += COL_BLOCK) {                                      \
            int64_t len = min64(COL_BLOCK, inner - j0);                                          \
            double acc[COL_BLOCK];                                                               \
            for (int64_t t = 0; t < len; t++) acc[t] = 0;                                        \
            for (int64_t o = 0; o < outer; o++) {                                                \
                const T *row = x + o * ldx + j0;                                                 \
                for (int64_t t = 0; t < len; t++) acc[t] += (double)row[t];                      \
            }                                                                                    \
            for (int64_t t = 0; t < len; t++) y[j0 + t] = (T)(acc[t] / div);                     \
        }                                                                                        \
    }

REDUCE_FNS(float, f32)
REDUCE_FNS(double, f64)

/* Column sums of f32 (bias gradients: a conv's [pixels, channels] summed over
 * pixels) also in an AVX2 and an AVX-512 copy, 4 or 8 double sums a vector
 * instead of 2: the same additions in the same order, so the same bits. */
static void col_sums_f32_base(int64_t outer, int64_t inner, int64_t ldx, const float *x, float *y, double div) {
    col_sums_f32(outer, inner, ldx, x, y, div);
}
FEDC_FAST_AVX2 static void col_sums_f32_avx2(int64_t outer, int64_t inner, int64_t ldx, const float *x, float *y,
                                             double div) {
    col_sums_f32(outer, inner, ldx, x, y, div);
}
FEDC_FAST_AVX512 static void col_sums_f32_avx512(int64_t outer, int64_t inner, int64_t ldx, const float *x, float *y,
                                                 double div) {
    col_sums_f32(outer, inner, ldx, x, y, div);
}

/* x viewed as [outer, inner] with either the outer part reduced (leading) or the
 * inner part (trailing). Size-1 axes are ignored. Returns 0 when the reduced and
 * kept axes interleave. */
typedef struct reduce_split {
    int leading;
    int64_t outer, inner, reduced;
} reduce_split;

static int split_axes(const fedc__kshape *xs, unsigned axes, reduce_split *sp) {
    int last_r = -1, first_r = FEDC_MAX_RANK, last_k = -1, first_k = FEDC_MAX_RANK;
    int64_t rprod = 1, kprod = 1;
    for (int d = 0; d < xs->rank; d++) {
        int red = (axes >> d) & 1u;
        if (red) rprod *= xs->dims[d];
        else kprod *= xs->dims[d];
        if (xs->dims[d] == 1) continue;
        if (red) last_r = d, first_r = first_r < d ? first_r : d;
        else last_k = d, first_k = first_k < d ? first_k : d;
    }
    sp->reduced = rprod;
    sp->leading = last_r < first_k;
    if (sp->leading) sp->outer = rprod, sp->inner = kprod;
    else sp->outer = kprod, sp->inner = rprod;
    return sp->leading || last_k < first_r;
}

/* Kept elements [i0, i1) of a reduction (columns when leading, else rows). */
typedef struct reduce_job {
    reduce_split sp;
    int f32;
    double div;
    const void *x;
    void *y;
} reduce_job;

static void reduce_span(const void *ctx, int64_t i0, int64_t i1) {
    const reduce_job *j = ctx;
    int64_t outer = j->sp.outer, inner = j->sp.inner, n = i1 - i0;
    if (j->f32) {
        const float *x = j->x;
        float *y = j->y;
        if (j->sp.leading)
            FEDC_FAST_PICK(col_sums_f32)(outer, n, inner, x + i0, y + i0, j->div);
        else row_sums_f32(n, inner, x + i0 * inner, y + i0, j->div);
    } else {
        const double *x = j->x;
        double *y = j->y;
        if (j->sp.leading) col_sums_f64(outer, n, inner, x + i0, y + i0, j->div);
        else row_sums_f64(n, inner, x + i0 * inner, y + i0, j->div);
    }
}

/* The max of each of `rows` rows of `len` f32s, as the reference: the first of
 * equal values (-0 before 0 keeps -0), and a NaN's propagating, the row's last
 * one, quieted as the reference's trip through double quiets it. */
static void row_max_f32(int64_t rows, int64_t len, const float *x, float *y) {
    for (int64_t r = 0; r < rows; r++) {
        const float *row = x + r * len;
        float acc = -INFINITY;
        for (int64_t i = 0; i < len; i++) acc = row[i] > acc || row[i] != row[i] ? row[i] : acc;
        if (acc != acc) {
            uint32_t bits;
            memcpy(&bits, &acc, sizeof bits);
            bits |= 0x00400000u;
            memcpy(&acc, &bits, sizeof bits);
        }
        y[r] = acc;
    }
}

fedc_status fedc__fast_reduce(fedc_reduce_op op, fedc_dtype dt, const fedc__kshape *xs, unsigned axes,
                             const void *x, void *y) {
    reduce_split sp;
    /* a max over trailing axes (each client's min and max in the compression) */
    if (op == FEDC_R_MAX && dt == FEDC_F32 && shape_ok(xs) && (axes >> xs->rank) == 0 && split_axes(xs, axes, &sp) &&
        (!sp.leading || sp.inner == 1)) {
        int64_t rows = sp.leading ? 1 : sp.outer;
        row_max_f32(rows, sp.reduced, x, y);
        return FEDC_OK;
    }
    if ((op != FEDC_R_SUM && op != FEDC_R_MEAN) || (dt != FEDC_F32 && dt != FEDC_F64) ||
        !shape_ok(xs) || (axes >> xs->rank) != 0 || !split_axes(xs, axes, &sp))
        return fedc__ref_reduce(op, dt, xs, axes, x, y);
    reduce_job j = {sp, dt == FEDC_F32, op == FEDC_R_MEAN ? (double)sp.reduced : 1.0, x, y};
    /* Spans of kept elements, of about SPAN inputs each (whole COL_BLOCKs when
     * leading): every kept element is summed alone, so any split gives its bits. */
    int64_t kept = sp.leading ? sp.inner : sp.outer, per = sp.leading ? sp.outer : sp.inner;
    int64_t span = per > 0 ? (SPAN + per - 1) / per : kept;
    if (sp.leading) span = (span + COL_BLOCK - 1) / COL_BLOCK * COL_BLOCK;
    fedc__kernels_spans(kept, span > 0 ? span : 1, reduce_span, &j);
    return FEDC_OK;
}

/* ------------------------------------------------------------------ cast -- */

/* f32 -> i32 as the reference: truncation toward zero, saturated, NaN -> 0 (the
 * float bounds -2^31 and 2^31 are exact); i32 -> f32 rounds the same integer. */
fedc_status fedc__fast_cast(fedc_dtype from, fedc_dtype to, int64_t n, const void *x, void *y) {
    if (from == FEDC_F32 && to == FEDC_I32) {
        const float *restrict a = x;
        int32_t *restrict b = y;
        for (int64_t i = 0; i < n; i++) {
            float v = a[i];
            b[i] = v != v ? 0 : v >= 0x1p31f ? INT32_MAX : v <= -0x1p31f ? INT32_MIN : (int32_t)v;
        }
        return FEDC_OK;
    }
    if (from == FEDC_I32 && to == FEDC_F32) {
        const int32_t *restrict a = x;
        float *restrict b = y;
        for (int64_t i = 0; i < n; i++) b[i] = (float)a[i];
        return FEDC_OK;
    }
    return fedc__ref_cast(from, to, n, x, y);
}
