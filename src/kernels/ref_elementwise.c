/*
 * Reference elementwise kernels: unary, binary (numpy broadcasting), select, cast,
 * iota and dropout. Float work is done in double and rounded once on store; for
 * + - * / that gives exactly the correctly rounded f32 result, and for the
 * transcendental functions it gives an answer at least as accurate as the libm
 * float versions a fast kernel would call. Integer arithmetic wraps modulo 2^32
 * instead of overflowing (which C leaves undefined).
 */
#include <math.h>
#include <string.h>

#include "kernels/ref.h"

static fedc_status unsupported(const char *kernel, fedc_dtype dt) {
    return fedc_error(FEDC_EUNSUPPORTED, "%s: dtype %s is not supported", kernel,
                      fedc_dtype_name(dt));
}

/* ----------------------------------------------------------------- unary -- */

/* Written so neither branch overflows: exp only ever sees a non-positive argument. */
static double sigmoid(double v) {
    if (v >= 0) return 1.0 / (1.0 + exp(-v));
    double e = exp(v);
    return e / (1.0 + e);
}

static double unary_f(fedc__unary_op op, double v, double param) {
    switch (op) {
    case FEDC_U_NEG: return -v;
    case FEDC_U_EXP: return exp(v);
    case FEDC_U_LOG: return log(v);
    case FEDC_U_TANH: return tanh(v);
    case FEDC_U_SIGMOID: return sigmoid(v);
    case FEDC_U_RELU: return v > 0 ? v : 0.0;
    case FEDC_U_SQRT: return sqrt(v);
    case FEDC_U_SQUARE: return v * v;
    case FEDC_U_POW: return pow(v, param);
    default: return NAN; /* unreachable: op is checked by the caller */
    }
}

fedc_status fedc__ref_unary(fedc__unary_op op, fedc_dtype dt, int64_t n, const void *x, void *y,
                           double param) {
    if ((unsigned)op >= FEDC_U_COUNT) return fedc_error(FEDC_EINVAL, "unary: bad op %d", (int)op);
    if (dt == FEDC_I32 && op == FEDC_U_NEG) {
        for (int64_t i = 0; i < n; i++) /* 0u - v wraps, so -INT32_MIN is INT32_MIN */
            ((int32_t *)y)[i] = fedc__ref_wrap_i32(0u - (uint32_t)((const int32_t *)x)[i]);
        return FEDC_OK;
    }
    if (!fedc_dtype_is_float(dt)) return unsupported("unary", dt);
    for (int64_t i = 0; i < n; i++)
        fedc__ref_storef(dt, y, i, unary_f(op, fedc__ref_loadf(dt, x, i), param));
    return FEDC_OK;
}

/* ---------------------------------------------------------------- binary -- */

static int is_comparison(fedc__binary_op op) { return op >= FEDC_B_EQ; }

static int compare(fedc__binary_op op, double a, double b) {
    switch (op) {
    case FEDC_B_EQ: return a == b;
    case FEDC_B_NE: return a != b;
    case FEDC_B_LT: return a < b;
    case FEDC_B_LE: return a <= b;
    case FEDC_B_GT: return a > b;
    default: return a >= b; /* FEDC_B_GE */
    }
}

/* Arithmetic on floats; MAX and MIN propagate NaN (as jnp.maximum does). */
static double arith_f(fedc__binary_op op, double a, double b) {
    switch (op) {
    case FEDC_B_ADD: return a + b;
    case FEDC_B_SUB: return a - b;
    case FEDC_B_MUL: return a * b;
    case FEDC_B_DIV: return a / b;
    case FEDC_B_MAX: return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
    default: return isnan(a) || isnan(b) ? NAN : (a < b ? a : b); /* FEDC_B_MIN */
    }
}

/* Arithmetic on i32, modulo 2^32. DIV truncates toward zero; x / 0 is 0 and
 * INT32_MIN / -1 wraps to INT32_MIN (both undefined in C, so defined here). */
static int32_t arith_i32(fedc__binary_op op, int32_t a, int32_t b) {
    uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
    switch (op) {
    case FEDC_B_ADD: return fedc__ref_wrap_i32(ua + ub);
    case FEDC_B_SUB: return fedc__ref_wrap_i32(ua - ub);
    case FEDC_B_MUL: return fedc__ref_wrap_i32(ua * ub);
    case FEDC_B_DIV:
        if (b == 0) return 0;
        if (a == INT32_MIN && b == -1) return INT32_MIN;
        return a / b;
    case FEDC_B_MAX: return a > b ? a : b;
    default: return a < b ? a : b; /* FEDC_B_MIN */
    }
}

/* out[e] = a[ea] op b[eb]: one output element, of any supported dtype. */
static void binary_one(fedc__binary_op op, fedc_dtype dt, const void *a, int64_t ea, const void *b,
                       int64_t eb, void *out, int64_t e) {
    if (dt == FEDC_I32) {
        int32_t va = ((const int32_t *)a)[ea], vb = ((const int32_t *)b)[eb];
        if (is_comparison(op))
            ((uint8_t *)out)[e] = (uint8_t)compare(op, va, vb); /* i32 is exact in double */
        else
            ((int32_t *)out)[e] = arith_i32(op, va, vb);
        return;
    }
    double va = fedc__ref_loadf(dt, a, ea), vb = fedc__ref_loadf(dt, b, eb);
    if (is_comparison(op))
        ((uint8_t *)out)[e] = (uint8_t)compare(op, va, vb);
    else
        fedc__ref_storef(dt, out, e, arith_f(op, va, vb));
}

fedc_status fedc__ref_binary(fedc__binary_op op, fedc_dtype dt, const fedc__kshape *as, const void *a,
                            const fedc__kshape *bs, const void *b, const fedc__kshape *outs,
                            void *out) {
    if ((unsigned)op >= FEDC_B_COUNT)
        return fedc_error(FEDC_EINVAL, "binary: bad op %d", (int)op);
    if (!fedc_dtype_is_float(dt) && dt != FEDC_I32) return unsupported("binary", dt);
    int64_t astr[FEDC_MAX_RANK], bstr[FEDC_MAX_RANK];
    fedc_status st = fedc__ref_bcast_strides("binary", as, outs, astr);
    if (!st) st = fedc__ref_bcast_strides("binary", bs, outs, bstr);
    if (st) return st;
    int64_t count = fedc__kshape_count(outs);
    for (int64_t e = 0; e < count; e++)
        binary_one(op, dt, a, fedc__ref_offset(outs, astr, e), b, fedc__ref_offset(outs, bstr, e),
                   out, e);
    return FEDC_OK;
}

/* ---------------------------------------------------------------- select -- */

fedc_status fedc__ref_select(fedc_dtype dt, const fedc__kshape *cs, const uint8_t *cond,
                            const fedc__kshape *as, const void *a, const fedc__kshape *bs,
                            const void *b, const fedc__kshape *outs, void *out) {
    size_t elsize = fedc_dtype_size(dt);
    if (elsize == 0) return unsupported("select", dt);
    int64_t cstr[FEDC_MAX_RANK], astr[FEDC_MAX_RANK], bstr[FEDC_MAX_RANK];
    fedc_status st = fedc__ref_bcast_strides("select", cs, outs, cstr);
    if (!st) st = fedc__ref_bcast_strides("select", as, outs, astr);
    if (!st) st = fedc__ref_bcast_strides("select", bs, outs, bstr);
    if (st) return st;
    int64_t count = fedc__kshape_count(outs);
    for (int64_t e = 0; e < count; e++) {
        const char *src = cond[fedc__ref_offset(outs, cstr, e)]
                              ? (const char *)a + (size_t)fedc__ref_offset(outs, astr, e) * elsize
                              : (const char *)b + (size_t)fedc__ref_offset(outs, bstr, e) * elsize;
        memcpy((char *)out + (size_t)e * elsize, src, elsize);
    }
    return FEDC_OK;
}

/* ------------------------------------------------------------------ cast -- */

/* Float to integer: truncate toward zero, saturate to [lo, hi], NaN -> 0. C leaves
 * out-of-range conversions undefined, so the clamping happens in double first. */
static int64_t float_to_int(double v, double lo, double hi) {
    if (isnan(v)) return 0;
    v = trunc(v);
    return (int64_t)(v < lo ? lo : v > hi ? hi : v);
}

/* Integer sources (i32, u8, bool) as int64, exactly. */
static int64_t load_int(fedc_dtype dt, const void *x, int64_t i) {
    return dt == FEDC_I32 ? ((const int32_t *)x)[i] : ((const uint8_t *)x)[i];
}

/* y[i] = x[i] as `to`, from a float source. */
static void cast_from_float(fedc_dtype from, fedc_dtype to, const void *x, int64_t i, void *y) {
    double v = fedc__ref_loadf(from, x, i);
    switch (to) {
    case FEDC_F32: ((float *)y)[i] = (float)v; break;
    case FEDC_F64: ((double *)y)[i] = v; break;
    case FEDC_I32: ((int32_t *)y)[i] = (int32_t)float_to_int(v, INT32_MIN, INT32_MAX); break;
    case FEDC_U8: ((uint8_t *)y)[i] = (uint8_t)float_to_int(v, 0, UINT8_MAX); break;
    default: ((uint8_t *)y)[i] = v != 0; break; /* FEDC_BOOL */
    }
}

/* y[i] = x[i] as `to`, from an integer source; to u8 wraps modulo 256 as C does. */
static void cast_from_int(fedc_dtype from, fedc_dtype to, const void *x, int64_t i, void *y) {
    int64_t v = load_int(from, x, i);
    switch (to) {
    case FEDC_F32: ((float *)y)[i] = (float)v; break;
    case FEDC_F64: ((double *)y)[i] = (double)v; break;
    case FEDC_I32: ((int32_t *)y)[i] = (int32_t)v; break; /* from u8/bool/i32: fits */
    case FEDC_U8: ((uint8_t *)y)[i] = (uint8_t)((uint64_t)v & 0xFFu); break;
    default: ((uint8_t *)y)[i] = v != 0; break; /* FEDC_BOOL */
    }
}

fedc_status fedc__ref_cast(fedc_dtype from, fedc_dtype to, int64_t n, const void *x, void *y) {
    if ((unsigned)from >= FEDC_DTYPE_COUNT) return unsupported("cast", from);
    if ((unsigned)to >= FEDC_DTYPE_COUNT) return unsupported("cast", to);
    for (int64_t i = 0; i < n; i++) {
        if (fedc_dtype_is_float(from))
            cast_from_float(from, to, x, i, y);
        else
            cast_from_int(from, to, x, i, y);
    }
    return FEDC_OK;
}

/* ------------------------------------------------------------------ iota -- */

fedc_status fedc__ref_iota(fedc_dtype dt, const fedc__kshape *ys, int axis, void *y) {
    fedc_status st = fedc__ref_check_shape("iota", ys);
    if (st) return st;
    if (!fedc_dtype_is_float(dt) && dt != FEDC_I32) return unsupported("iota", dt);
    if (axis < 0 || axis >= ys->rank)
        return fedc_error(FEDC_EINVAL, "iota: axis %d is outside [0, %d)", axis, ys->rank);
    int64_t inner = 1; /* elements per step along `axis` */
    for (int d = axis + 1; d < ys->rank; d++) inner *= ys->dims[d];
    int64_t count = fedc__kshape_count(ys);
    for (int64_t e = 0; e < count; e++) {
        int64_t coord = (e / inner) % ys->dims[axis];
        if (dt == FEDC_I32)
            ((int32_t *)y)[e] = (int32_t)coord;
        else
            fedc__ref_storef(dt, y, e, (double)coord);
    }
    return FEDC_OK;
}

/* --------------------------------------------------------- random_normal -- */

fedc_status fedc__ref_random_normal(fedc_dtype dt, int64_t n, fedc_rng_stream stream, void *y) {
    if (!fedc_dtype_is_float(dt)) return unsupported("random_normal", dt);
    for (int64_t i = 0; i < n; i++) fedc__ref_storef(dt, y, i, fedc_rng_normal(stream, (uint64_t)i));
    return FEDC_OK;
}

fedc_status fedc__ref_random_uniform(fedc_dtype dt, int64_t n, fedc_rng_stream stream, void *y) {
    if (!fedc_dtype_is_float(dt)) return unsupported("random_uniform", dt);
    for (int64_t i = 0; i < n; i++)
        fedc__ref_storef(dt, y, i, dt == FEDC_F64 ? fedc_rng_uniform_f64(stream, (uint64_t)i)
                                                  : (double)fedc_rng_uniform_f32(stream, (uint64_t)i));
    return FEDC_OK;
}

/* --------------------------------------------------------------- dropout -- */

fedc_status fedc__ref_dropout(fedc_dtype dt, int64_t n, const void *x, fedc_rng_stream stream,
                             double rate, void *y) {
    if (!fedc_dtype_is_float(dt)) return unsupported("dropout", dt);
    if (!(rate >= 0 && rate < 1))
        return fedc_error(FEDC_EINVAL, "dropout: rate %g is outside [0, 1)", rate);
    for (int64_t i = 0; i < n; i++) {
        int keep = (double)fedc_rng_uniform_f32(stream, (uint64_t)i) >= rate;
        fedc__ref_storef(dt, y, i, keep ? fedc__ref_loadf(dt, x, i) / (1.0 - rate) : 0.0);
    }
    return FEDC_OK;
}
