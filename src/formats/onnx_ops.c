/* ONNX's arithmetic, products and activations as fedc ops (onnx_import.h).
 *
 * Elementwise ops are layout-free: on an image that exists only as NHWC (a
 * convolution's output) they run on the NHWC value, so no transpose is added.
 * Arithmetic on two constants (shape arithmetic: sizes, indices) is computed at
 * import instead, with numpy's broadcasting, as ONNX defines it. */
#include <math.h>
#include <string.h>

#include "formats/onnx_import.h"

/* ------------------------------------------------------------ unary -- */

typedef fedc_value (*unary_fn)(fedc_program *p, fedc_value x);

/* f on x's NHWC value when that is all there is, else on its ONNX value. */
static fedc_status unary(onnx_import *im, unary_fn f) {
    fedc_status st = fedc__onnx_known_attrs(im, "");
    onnx_entry *x = fedc__onnx_in(im, 0);
    if (st || !x) return st ? st : fedc__onnx_error(im);
    if (x->v == FEDC_NONE && x->nhwc != FEDC_NONE) return fedc__onnx_set_nhwc(im, 0, f(im->p, x->nhwc));
    return fedc__onnx_set(im, 0, f(im->p, fedc__onnx_value(im, x, FEDC_NONE)));
}

static fedc_value identity(fedc_program *p, fedc_value x) { return (void)p, x; }

/* erf(x) to 1.5e-7 (Abramowitz and Stegun 7.1.26), from ops fedc has: PyTorch's
 * exact GELU exports as x / 2 * (1 + Erf(x / sqrt 2)), and fedc has no erf op. */
static fedc_value erf_approx(fedc_program *p, fedc_value x) {
    static const double a[5] = {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429};
    fedc_value zero = fedc_scalar_like(p, x, 0);
    fedc_value negative = fedc_lt(p, x, zero);
    fedc_value minus_x = fedc_neg(p, x);
    fedc_value ax = fedc_select(p, negative, minus_x, x);
    fedc_value one = fedc_scalar_like(p, x, 1);
    fedc_value px = fedc_mul(p, ax, fedc_scalar_like(p, x, 0.3275911));
    fedc_value t = fedc_div(p, one, fedc_add(p, one, px));
    fedc_value poly = fedc_scalar_like(p, x, a[4]);
    for (int k = 3; k >= 0; k--) {
        fedc_value c = fedc_scalar_like(p, x, a[k]);
        poly = fedc_add(p, fedc_mul(p, poly, t), c);
    }
    poly = fedc_mul(p, poly, t);
    fedc_value gauss = fedc_exp(p, fedc_neg(p, fedc_square(p, ax)));
    fedc_value y = fedc_sub(p, one, fedc_mul(p, poly, gauss));
    fedc_value minus_y = fedc_neg(p, y);
    return fedc_select(p, negative, minus_y, y);
}

static fedc_status op_relu(onnx_import *im) { return unary(im, fedc_relu); }
static fedc_status op_tanh(onnx_import *im) { return unary(im, fedc_tanh); }
static fedc_status op_sigmoid(onnx_import *im) { return unary(im, fedc_sigmoid); }
static fedc_status op_sqrt(onnx_import *im) { return unary(im, fedc_sqrt); }
static fedc_status op_neg(onnx_import *im) { return unary(im, fedc_neg); }
static fedc_status op_exp(onnx_import *im) { return unary(im, fedc_exp); }
static fedc_status op_log(onnx_import *im) { return unary(im, fedc_log); }
static fedc_status op_erf(onnx_import *im) { return unary(im, erf_approx); }
/* Identity keeps a constant a constant (shape arithmetic may pass through it). */
static fedc_status op_identity(onnx_import *im) {
    onnx_entry *x = fedc__onnx_in(im, 0);
    if (!x || !x->k) return x ? unary(im, identity) : fedc__onnx_error(im);
    return fedc__onnx_set_const(im, 0, fedc__onnx_const_reshaped(x->k, x->k->dtype, x->k->rank, x->k->dims));
}

/* Dropout at inference is the identity (its mask output, if read, is refused). */
static fedc_status op_dropout(onnx_import *im) {
    if (im->node->n_output > 1 && im->node->output[1][0])
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "its mask output is read (fedc imports Dropout at inference)");
    if (fedc__onnx_has_in(im, 2)) {
        const onnx_const *training = fedc__onnx_const_in(im, 2, "training_mode");
        if (!training) return fedc__onnx_error(im);
        if (training->count && training->data[0] != 0)
            return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "training_mode is true (fedc imports the inference form)");
    }
    onnx_entry *x = fedc__onnx_in(im, 0);
    if (!x) return fedc__onnx_error(im);
    if (x->v == FEDC_NONE && x->nhwc != FEDC_NONE) return fedc__onnx_set_nhwc(im, 0, x->nhwc);
    return fedc__onnx_set(im, 0, fedc__onnx_value(im, x, FEDC_NONE));
}

/* ----------------------------------------------------------- binary -- */

typedef fedc_value (*binary_fn)(fedc_program *p, fedc_value a, fedc_value b);

/* numpy broadcasting of two constants' dims: false when they do not broadcast. */
static bool broadcast_dims(const onnx_const *a, const onnx_const *b, int *rank, int64_t *dims) {
    *rank = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < *rank; i++) {
        int ia = i - (*rank - a->rank), ib = i - (*rank - b->rank);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) return false;
        dims[i] = da == 1 ? db : da;
    }
    return true;
}

/* The flat index into c of the broadcast result's element at `idx`. */
static int64_t source_index(const onnx_const *c, int rank, const int64_t *idx) {
    int64_t at = 0;
    for (int i = 0; i < c->rank; i++) {
        int64_t d = c->dims[i];
        at = at * d + (d == 1 ? 0 : idx[i + rank - c->rank]);
    }
    return at;
}

static double host_op(char op, double a, double b, bool integer) {
    switch (op) {
    case '+': return a + b;
    case '-': return a - b;
    case '*': return a * b;
    case '%': /* Mod, fmod 0: the divisor's sign (Python's %), as the exporter's head sizes use */
        if (b == 0) return 0;
        return fmod(a, b) != 0 && (fmod(a, b) < 0) != (b < 0) ? fmod(a, b) + b : fmod(a, b);
    case 'f': return b == 0 ? 0 : fmod(a, b); /* Mod, fmod 1: the dividend's sign (C's fmod) */
    default: return integer ? (b == 0 ? 0 : trunc(a / b)) : a / b;
    }
}

static fedc_status const_binary(onnx_import *im, const onnx_const *a, const onnx_const *b, char op) {
    int rank;
    int64_t dims[FEDC_MAX_RANK], idx[FEDC_MAX_RANK] = {0};
    if (!broadcast_dims(a, b, &rank, dims)) return fedc__onnx_fail(im, FEDC_ESHAPE, "the operands do not broadcast");
    onnx_const *y = fedc__onnx_const_new(a->dtype, rank, dims);
    if (!y) return fedc__onnx_fail(im, FEDC_ERANGE, "%s", "the result is too large");
    bool integer = a->dtype != ONNX_FLOAT && a->dtype != ONNX_DOUBLE;
    for (int64_t k = 0; k < y->count; k++) {
        y->data[k] = host_op(op, a->data[source_index(a, rank, idx)], b->data[source_index(b, rank, idx)], integer);
        for (int i = rank - 1; i >= 0 && ++idx[i] == dims[i]; i--) idx[i] = 0;
    }
    return fedc__onnx_set_const(im, 0, y);
}

/* Whether e is a one-element constant (a scalar that broadcasts over any layout). */
static bool is_scalar_const(const onnx_entry *e) { return e->k && e->k->count == 1; }

static fedc_status binary(onnx_import *im, binary_fn f, char op) {
    fedc_status st = fedc__onnx_known_attrs(im, "");
    onnx_entry *a = fedc__onnx_in(im, 0), *b = st ? NULL : fedc__onnx_in(im, 1);
    if (st || !a || !b) return st ? st : fedc__onnx_error(im);
    if (a->k && b->k) return const_binary(im, a->k, b->k, op);
    fedc_program *p = im->p;
    bool a_nhwc = a->v == FEDC_NONE && a->nhwc != FEDC_NONE, b_nhwc = b->v == FEDC_NONE && b->nhwc != FEDC_NONE;
    if ((a_nhwc || is_scalar_const(a)) && (b_nhwc || is_scalar_const(b))) { /* a residual sum, a scale */
        fedc_value x = a_nhwc ? a->nhwc : FEDC_NONE, y = b_nhwc ? b->nhwc : FEDC_NONE;
        if (x == FEDC_NONE) x = fedc_reshape(p, fedc__onnx_value(im, a, y), 0, NULL);
        if (y == FEDC_NONE) y = fedc_reshape(p, fedc__onnx_value(im, b, x), 0, NULL);
        return fedc__onnx_set_nhwc(im, 0, f(p, x, y));
    }
    fedc_value x = a->k ? FEDC_NONE : fedc__onnx_value(im, a, FEDC_NONE);
    fedc_value y = fedc__onnx_value(im, b, x);
    if (x == FEDC_NONE) x = fedc__onnx_value(im, a, y);
    return fedc__onnx_set(im, 0, f(p, x, y));
}

static fedc_status op_add(onnx_import *im) { return binary(im, fedc_add, '+'); }
static fedc_status op_sub(onnx_import *im) { return binary(im, fedc_sub, '-'); }
static fedc_status op_mul(onnx_import *im) { return binary(im, fedc_mul, '*'); }
static fedc_status op_div(onnx_import *im) { return binary(im, fedc_div, '/'); }

/* Expand: x broadcast both ways with `shape` (numpy's rule), which is x * ones(shape):
 * on a constant computed at import (the dynamo exporter's zero initial state of an
 * LSTM is one, and the LSTM needs it known), else fedc's broadcast_to. */
static fedc_status op_expand(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0);
    int64_t dims[FEDC_MAX_RANK], xd[FEDC_MAX_RANK];
    int rank = x ? fedc__onnx_shape_in(im, 1, dims) : -1;
    if (rank < 0) return st ? st : fedc__onnx_error(im);
    int xr = fedc__onnx_dims(im, x, xd);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0) return fedc__onnx_fail(im, FEDC_EINVAL, "dimension %lld", (long long)dims[i]);
    onnx_const *ones = fedc__onnx_const_new(x->k ? x->k->dtype : ONNX_FLOAT, rank, dims);
    if (!ones) return fedc__onnx_fail(im, FEDC_ERANGE, "%s", "the shape is too large");
    for (int64_t i = 0; x->k && i < ones->count; i++) ones->data[i] = 1;
    if (x->k) {
        st = const_binary(im, x->k, ones, '*');
        fedc__onnx_const_free(ones);
        return st;
    }
    int out_rank;
    int64_t out[FEDC_MAX_RANK];
    onnx_const xs = {.rank = xr};
    memcpy(xs.dims, xd, sizeof xd);
    bool fits = broadcast_dims(&xs, ones, &out_rank, out);
    fedc__onnx_const_free(ones);
    if (!fits) return fedc__onnx_fail(im, FEDC_ESHAPE, "the input does not broadcast to the shape");
    return fedc__onnx_set(im, 0, fedc_broadcast_to(im->p, fedc__onnx_value(im, x, FEDC_NONE), out_rank, out));
}

/* Pow with an exponent known at import (fedc's pow takes a constant exponent). */
/* Mod on values known at import (shape arithmetic: torch's multi-head attention
 * checks its head size with it); fedc has no remainder op for a program value. */
static fedc_status op_mod(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "fmod");
    const onnx_const *a = st ? NULL : fedc__onnx_const_in(im, 0, "dividend");
    const onnx_const *b = a ? fedc__onnx_const_in(im, 1, "divisor") : NULL;
    if (!b) return st ? st : fedc__onnx_error(im);
    int64_t fmod_attr = fedc__onnx_attr_int(im, "fmod", 0);
    if (!fmod_attr && (a->dtype == ONNX_FLOAT || a->dtype == ONNX_DOUBLE))
        return fedc__onnx_fail(im, FEDC_EINVAL, "fmod 0 on floats (ONNX requires fmod 1)");
    return const_binary(im, a, b, fmod_attr ? 'f' : '%');
}

static fedc_status op_pow(onnx_import *im) {
    onnx_entry *x = fedc__onnx_in(im, 0);
    const onnx_const *e = x ? fedc__onnx_const_in(im, 1, "exponent") : NULL;
    if (!e) return fedc__onnx_error(im);
    if (e->count != 1) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "an exponent of %lld values (fedc's is one number)", (long long)e->count);
    fedc_value v = fedc__onnx_value(im, x, FEDC_NONE);
    return fedc__onnx_set(im, 0, e->data[0] == 2 ? fedc_square(im->p, v) : fedc_pow(im->p, v, e->data[0]));
}

/* ---------------------------------------------------------- products -- */

/* Gemm: alpha * A' B' + beta * C, A' and B' transposed as the attributes say
 * (PyTorch's Linear: transB = 1 with the weight [out, in] as stored). */
static fedc_status op_gemm(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "alpha,beta,transA,transB");
    if (st) return st;
    fedc_program *p = im->p;
    fedc_value a = fedc__onnx_value(im, fedc__onnx_in(im, 0), FEDC_NONE);
    fedc_value b = a == FEDC_NONE ? FEDC_NONE : fedc__onnx_value(im, fedc__onnx_in(im, 1), a);
    if (b == FEDC_NONE) return fedc__onnx_error(im);
    double alpha = fedc__onnx_attr_float(im, "alpha", 1), beta = fedc__onnx_attr_float(im, "beta", 1);
    fedc_value y = fedc_matmul(p, a, b, fedc__onnx_attr_int(im, "transA", 0) != 0, fedc__onnx_attr_int(im, "transB", 0) != 0);
    if (alpha != 1) y = fedc_mul(p, y, fedc_scalar_like(p, y, alpha));
    if (fedc__onnx_has_in(im, 2) && beta != 0) {
        fedc_value c = fedc__onnx_value(im, fedc__onnx_in(im, 2), y);
        if (beta != 1) c = fedc_mul(p, c, fedc_scalar_like(p, c, beta));
        y = fedc_add(p, y, c);
    }
    return fedc__onnx_set(im, 0, y);
}

/* MatMul of operands of rank 2 or more (numpy's batched product; fedc shares a
 * rank-2 operand over the batch). */
static fedc_status op_matmul(onnx_import *im) {
    onnx_entry *ea = fedc__onnx_in(im, 0), *eb = ea ? fedc__onnx_in(im, 1) : NULL;
    if (!eb) return fedc__onnx_error(im);
    if (fedc__onnx_rank(im, ea) < 2 || fedc__onnx_rank(im, eb) < 2)
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "a 1-D operand (fedc multiplies matrices)");
    fedc_value a = fedc__onnx_value(im, ea, FEDC_NONE);
    fedc_value b = fedc__onnx_value(im, eb, a);
    return fedc__onnx_set(im, 0, fedc_matmul(im->p, a, b, false, false));
}

const onnx_op_entry fedc__onnx_ops_basic[] = {
    {"Relu", op_relu}, {"Tanh", op_tanh}, {"Sigmoid", op_sigmoid}, {"Sqrt", op_sqrt}, {"Neg", op_neg},
    {"Exp", op_exp}, {"Log", op_log}, {"Erf", op_erf}, {"Identity", op_identity}, {"Dropout", op_dropout},
    {"Add", op_add}, {"Sub", op_sub}, {"Mul", op_mul}, {"Div", op_div}, {"Mod", op_mod}, {"Expand", op_expand}, {"Pow", op_pow},
    {"Gemm", op_gemm}, {"MatMul", op_matmul}, {NULL, NULL},
};
