/* The public builder functions: each turns its arguments into attributes and
 * appends one node through fedc__emit, which checks it with the op's type rule. */
#include <math.h>
#include <string.h>

#include "ir/ir.h"

static fedc_value emit1(fedc_program *p, fedc__op op, fedc_value x) { return fedc__emit(p, op, &x, 1, NULL, 0, NULL); }

static fedc_value emit2(fedc_program *p, fedc__op op, fedc_value a, fedc_value b) {
    fedc_value in[2] = {a, b};
    return fedc__emit(p, op, in, 2, NULL, 0, NULL);
}

static fedc_value emit1_attrs(fedc_program *p, fedc__op op, fedc_value x, const fedc__attr *attrs, int nattr) {
    return fedc__emit(p, op, &x, 1, attrs, nattr, NULL);
}

static fedc_value bad_argument(fedc_program *p, const char *op, const char *what) {
    if (p->status) return FEDC_NONE;
    fedc_error(FEDC_EINVAL, "%s: %s", op, what);
    return fedc__program_fail(p, FEDC_EINVAL);
}

/* -------------------------------------------------------------- sources -- */

/* A declared type (of an input or constant) must be one a program can hold. */
static bool bad_type(fedc_program *p, const char *op, const fedc_type *t) {
    const char *why = NULL;
    if (t->rank < 0 || t->rank > FEDC_MAX_RANK) why = "its rank is outside 0..6";
    else if ((unsigned)t->dtype >= FEDC_DTYPE_COUNT) why = "its dtype is unknown";
    else if ((unsigned)t->placement >= FEDC_PLACEMENT_COUNT) why = "its placement is unknown";
    for (int i = 0; !why && i < t->rank; i++)
        if (t->dims[i] < 0) why = "a dimension is negative";
    if (!why) return false;
    char buf[64] = "?";
    if (t->rank >= 0 && t->rank <= FEDC_MAX_RANK) fedc_type_str(t, buf, sizeof buf);
    fedc_error(FEDC_ESHAPE, "%s: bad type %s: %s", op, buf, why);
    fedc__program_fail(p, FEDC_ESHAPE);
    return true;
}

fedc_value fedc_input(fedc_program *p, const char *name, fedc_type type) {
    if (p->status) return FEDC_NONE;
    if (!name || !*name) return bad_argument(p, "input", "an input needs a name");
    if (fedc_program_find_input(p, name) != FEDC_NONE) {
        fedc_error(FEDC_EINVAL, "input: an input is already named \"%s\"", name);
        return fedc__program_fail(p, FEDC_EINVAL);
    }
    if (bad_type(p, "input", &type)) return FEDC_NONE;
    const char *copy = fedc__program_strdup(p, name);
    if (!copy) return fedc__program_fail(p, FEDC_ENOMEM);
    fedc_value v = fedc__emit(p, FEDC_OP_INPUT, NULL, 0, NULL, 0, &type);
    if (v != FEDC_NONE) p->nodes[v].name = copy;
    return v;
}

fedc_value fedc_constant(fedc_program *p, fedc_type type, const void *data) {
    if (p->status) return FEDC_NONE;
    if (bad_type(p, "constant", &type)) return FEDC_NONE;
    if (!data) return bad_argument(p, "constant", "data is NULL");
    const void *copy = fedc__program_copy(p, data, fedc_type_bytes(&type));
    if (!copy) return fedc__program_fail(p, FEDC_ENOMEM);
    fedc_value v = fedc__emit(p, FEDC_OP_CONSTANT, NULL, 0, NULL, 0, &type);
    if (v != FEDC_NONE) p->nodes[v].data = copy;
    return v;
}

/* Writes `value` as element i of an array of dtype dt. */
static void store(fedc_dtype dt, void *data, int64_t i, double value) {
    switch (dt) {
    case FEDC_F32: ((float *)data)[i] = (float)value; break;
    case FEDC_F64: ((double *)data)[i] = value; break;
    case FEDC_I32: ((int32_t *)data)[i] = (int32_t)value; break;
    case FEDC_U8: ((uint8_t *)data)[i] = (uint8_t)value; break;
    case FEDC_BOOL: ((uint8_t *)data)[i] = value != 0; break;
    default: break;
    }
}

fedc_value fedc_full(fedc_program *p, fedc_type type, double value) {
    if (p->status) return FEDC_NONE;
    if (bad_type(p, "constant", &type)) return FEDC_NONE;
    size_t bytes = fedc_type_bytes(&type);
    void *data = fedc_malloc(bytes);
    if (!data) {
        fedc_error(FEDC_ENOMEM, "constant: cannot allocate %zu bytes", bytes);
        return fedc__program_fail(p, FEDC_ENOMEM);
    }
    int64_t count = fedc_type_count(&type);
    for (int64_t i = 0; i < count; i++) store(type.dtype, data, i, value);
    fedc_value v = fedc_constant(p, type, data);
    fedc_free(data);
    return v;
}

fedc_value fedc_scalar(fedc_program *p, fedc_dtype dt, double value) {
    return fedc_full(p, fedc_type_scalar(dt), value);
}

fedc_value fedc_scalar_like(fedc_program *p, fedc_value like, double value) {
    if (like == FEDC_NONE || p->status) return FEDC_NONE;
    if (like < 0 || like >= p->n) return bad_argument(p, "scalar_like", "the value is not in this program");
    fedc_type t = fedc_type_scalar(p->nodes[like].type.dtype);
    t.placement = p->nodes[like].type.placement;
    return fedc_full(p, t, value);
}

fedc_value fedc_iota(fedc_program *p, fedc_type type, int axis) {
    fedc__attr attrs[3] = {fedc__attr_make_ints(FEDC_ATTR_SHAPE, type.rank, type.dims),
                           fedc__attr_make_int(FEDC_ATTR_AXIS, axis),
                           fedc__attr_make_int(FEDC_ATTR_DTYPE, type.dtype)};
    return fedc__emit(p, FEDC_OP_IOTA, NULL, 0, attrs, 3, NULL);
}

/* ---------------------------------------------------------- elementwise -- */

fedc_value fedc_add(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_ADD, a, b); }
fedc_value fedc_sub(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_SUB, a, b); }
fedc_value fedc_mul(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_MUL, a, b); }
fedc_value fedc_div(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_DIV, a, b); }
fedc_value fedc_maximum(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_MAXIMUM, a, b); }
fedc_value fedc_minimum(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_MINIMUM, a, b); }
fedc_value fedc_neg(fedc_program *p, fedc_value x) { return emit1(p, FEDC_OP_NEG, x); }
fedc_value fedc_exp(fedc_program *p, fedc_value x) { return emit1(p, FEDC_OP_EXP, x); }
fedc_value fedc_log(fedc_program *p, fedc_value x) { return emit1(p, FEDC_OP_LOG, x); }
fedc_value fedc_tanh(fedc_program *p, fedc_value x) { return emit1(p, FEDC_OP_TANH, x); }
fedc_value fedc_sigmoid(fedc_program *p, fedc_value x) { return emit1(p, FEDC_OP_SIGMOID, x); }
fedc_value fedc_relu(fedc_program *p, fedc_value x) { return emit1(p, FEDC_OP_RELU, x); }
fedc_value fedc_sqrt(fedc_program *p, fedc_value x) { return emit1(p, FEDC_OP_SQRT, x); }
fedc_value fedc_square(fedc_program *p, fedc_value x) { return emit1(p, FEDC_OP_SQUARE, x); }

fedc_value fedc_pow(fedc_program *p, fedc_value x, double exponent) {
    fedc__attr a = fedc__attr_make_float(FEDC_ATTR_EXPONENT, exponent);
    return emit1_attrs(p, FEDC_OP_POW, x, &a, 1);
}

fedc_value fedc_eq(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_EQ, a, b); }
fedc_value fedc_ne(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_NE, a, b); }
fedc_value fedc_lt(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_LT, a, b); }
fedc_value fedc_le(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_LE, a, b); }
fedc_value fedc_gt(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_GT, a, b); }
fedc_value fedc_ge(fedc_program *p, fedc_value a, fedc_value b) { return emit2(p, FEDC_OP_GE, a, b); }

fedc_value fedc_select(fedc_program *p, fedc_value cond, fedc_value a, fedc_value b) {
    fedc_value in[3] = {cond, a, b};
    return fedc__emit(p, FEDC_OP_SELECT, in, 3, NULL, 0, NULL);
}

/* ----------------------------------------------------------- reductions -- */

static fedc_value reduce(fedc_program *p, fedc__op op, fedc_value x, const int *axes, int naxes, bool keepdims) {
    if (x == FEDC_NONE || p->status) return FEDC_NONE;
    if (x < 0 || x >= p->n) return bad_argument(p, fedc__ops[op].name, "the operand is not in this program");
    int64_t list[FEDC_MAX_RANK];
    int rank = p->nodes[x].type.rank;
    if (naxes < 0) { /* all axes */
        naxes = rank;
        for (int i = 0; i < rank; i++) list[i] = i;
    } else {
        if (naxes > FEDC_MAX_RANK) return bad_argument(p, fedc__ops[op].name, "too many axes");
        for (int i = 0; i < naxes; i++) list[i] = axes[i];
    }
    fedc__attr attrs[2] = {fedc__attr_make_ints(FEDC_ATTR_AXES, naxes, list),
                           fedc__attr_make_int(FEDC_ATTR_KEEPDIMS, keepdims)};
    return emit1_attrs(p, op, x, attrs, 2);
}

fedc_value fedc_reduce_sum(fedc_program *p, fedc_value x, const int *axes, int naxes, bool keepdims) {
    return reduce(p, FEDC_OP_REDUCE_SUM, x, axes, naxes, keepdims);
}
fedc_value fedc_reduce_mean(fedc_program *p, fedc_value x, const int *axes, int naxes, bool keepdims) {
    return reduce(p, FEDC_OP_REDUCE_MEAN, x, axes, naxes, keepdims);
}
fedc_value fedc_reduce_max(fedc_program *p, fedc_value x, const int *axes, int naxes, bool keepdims) {
    return reduce(p, FEDC_OP_REDUCE_MAX, x, axes, naxes, keepdims);
}

fedc_value fedc_argmax(fedc_program *p, fedc_value x, int axis) {
    fedc__attr a = fedc__attr_make_int(FEDC_ATTR_AXIS, axis);
    return emit1_attrs(p, FEDC_OP_ARGMAX, x, &a, 1);
}

/* --------------------------------------------------------------- shapes -- */

fedc_value fedc_reshape(fedc_program *p, fedc_value x, int rank, const int64_t *dims) {
    if (x == FEDC_NONE || p->status) return FEDC_NONE;
    if (x < 0 || x >= p->n) return bad_argument(p, "reshape", "the operand is not in this program");
    if (rank < 0 || rank > FEDC_MAX_RANK) return bad_argument(p, "reshape", "bad rank");
    int64_t shape[FEDC_MAX_RANK], known = 1;
    int infer_at = -1;
    for (int i = 0; i < rank; i++) {
        shape[i] = dims[i];
        if (dims[i] == -1 && infer_at < 0) infer_at = i;
        else known *= dims[i];
    }
    if (infer_at >= 0) { /* the one -1 dimension takes what is left */
        int64_t count = fedc_type_count(&p->nodes[x].type);
        shape[infer_at] = known ? count / known : 0;
    }
    fedc__attr a = fedc__attr_make_ints(FEDC_ATTR_SHAPE, rank, shape);
    return emit1_attrs(p, FEDC_OP_RESHAPE, x, &a, 1);
}

fedc_value fedc_broadcast_to(fedc_program *p, fedc_value x, int rank, const int64_t *dims) {
    if (rank < 0 || rank > FEDC_MAX_RANK) return bad_argument(p, "broadcast_to", "bad rank");
    fedc__attr a = fedc__attr_make_ints(FEDC_ATTR_SHAPE, rank, dims);
    return emit1_attrs(p, FEDC_OP_BROADCAST_TO, x, &a, 1);
}

fedc_value fedc_transpose(fedc_program *p, fedc_value x, const int *perm) {
    if (x == FEDC_NONE || p->status) return FEDC_NONE;
    if (x < 0 || x >= p->n) return bad_argument(p, "transpose", "the operand is not in this program");
    int rank = p->nodes[x].type.rank;
    int64_t list[FEDC_MAX_RANK];
    for (int i = 0; i < rank; i++) list[i] = perm[i];
    fedc__attr a = fedc__attr_make_ints(FEDC_ATTR_PERM, rank, list);
    return emit1_attrs(p, FEDC_OP_TRANSPOSE, x, &a, 1);
}

fedc_value fedc_slice(fedc_program *p, fedc_value x, const int64_t *start, const int64_t *limit) {
    if (x == FEDC_NONE || p->status) return FEDC_NONE;
    if (x < 0 || x >= p->n) return bad_argument(p, "slice", "the operand is not in this program");
    int rank = p->nodes[x].type.rank;
    int64_t size[FEDC_MAX_RANK];
    for (int i = 0; i < rank; i++) size[i] = limit[i] - start[i];
    fedc__attr attrs[2] = {fedc__attr_make_ints(FEDC_ATTR_START, rank, start),
                           fedc__attr_make_ints(FEDC_ATTR_SHAPE, rank, size)};
    return emit1_attrs(p, FEDC_OP_SLICE, x, attrs, 2);
}

fedc_value fedc_concat(fedc_program *p, const fedc_value *xs, int n, int axis) {
    fedc__attr a = fedc__attr_make_int(FEDC_ATTR_AXIS, axis);
    return fedc__emit(p, FEDC_OP_CONCAT, xs, n, &a, 1, NULL);
}

fedc_value fedc_pad(fedc_program *p, fedc_value x, const int64_t *lo, const int64_t *hi) {
    if (x == FEDC_NONE || p->status) return FEDC_NONE;
    if (x < 0 || x >= p->n) return bad_argument(p, "pad", "the operand is not in this program");
    int rank = p->nodes[x].type.rank;
    fedc__attr attrs[2] = {fedc__attr_make_ints(FEDC_ATTR_LO, rank, lo), fedc__attr_make_ints(FEDC_ATTR_HI, rank, hi)};
    return emit1_attrs(p, FEDC_OP_PAD, x, attrs, 2);
}

/* ------------------------------------------------- algebra and indexing -- */

fedc_value fedc_matmul(fedc_program *p, fedc_value a, fedc_value b, bool transpose_a, bool transpose_b) {
    fedc_value in[2] = {a, b};
    fedc__attr attrs[2] = {fedc__attr_make_int(FEDC_ATTR_TRANSPOSE_A, transpose_a),
                           fedc__attr_make_int(FEDC_ATTR_TRANSPOSE_B, transpose_b)};
    return fedc__emit(p, FEDC_OP_MATMUL, in, 2, attrs, 2, NULL);
}

fedc_value fedc_gather(fedc_program *p, fedc_value table, fedc_value idx) { return emit2(p, FEDC_OP_GATHER, table, idx); }

fedc_value fedc_scatter_add(fedc_program *p, fedc_value updates, fedc_value idx, int64_t rows) {
    fedc_value in[2] = {updates, idx};
    fedc__attr a = fedc__attr_make_int(FEDC_ATTR_ROWS, rows);
    return fedc__emit(p, FEDC_OP_SCATTER_ADD, in, 2, &a, 1, NULL);
}

fedc_value fedc_one_hot(fedc_program *p, fedc_value idx, int64_t depth, fedc_dtype dt) {
    fedc__attr attrs[2] = {fedc__attr_make_int(FEDC_ATTR_DEPTH, depth), fedc__attr_make_int(FEDC_ATTR_DTYPE, dt)};
    return emit1_attrs(p, FEDC_OP_ONE_HOT, idx, attrs, 2);
}

/* ---------------------------------------------------- convolution, pools -- */

static fedc_value window_op(fedc_program *p, fedc__op op, const fedc_value *in, int nin, const int64_t *window,
                            int64_t sh, int64_t sw, const int64_t pads[4], const fedc_type *x_type) {
    fedc__attr attrs[4];
    int n = 0;
    int64_t strides[2] = {sh, sw};
    if (x_type) attrs[n++] = fedc__attr_make_ints(FEDC_ATTR_SHAPE, x_type->rank, x_type->dims);
    if (window) attrs[n++] = fedc__attr_make_ints(FEDC_ATTR_WINDOW, 2, window);
    attrs[n++] = fedc__attr_make_ints(FEDC_ATTR_STRIDES, 2, strides);
    attrs[n++] = fedc__attr_make_ints(FEDC_ATTR_PADS, 4, pads);
    return fedc__emit(p, op, in, nin, attrs, n, NULL);
}

/* Explicit pads for `padding` over the NHWC value x with a kh x kw window. */
static bool pads_for(fedc_program *p, fedc_value x, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                     fedc_padding padding, int64_t pads[4]) {
    if (x == FEDC_NONE || p->status || x < 0 || x >= p->n) return false;
    const fedc_type *t = &p->nodes[x].type;
    if (t->rank != 4 || sh < 1 || sw < 1) {
        memset(pads, 0, 4 * sizeof *pads);
        return true; /* the type rule reports the problem */
    }
    fedc__same_pads(t->dims[1], t->dims[2], kh, kw, sh, sw, padding, pads);
    return true;
}

fedc_value fedc_conv2d(fedc_program *p, fedc_value x, fedc_value w, int stride_h, int stride_w, fedc_padding padding) {
    if (w == FEDC_NONE || p->status) return FEDC_NONE;
    if (w < 0 || w >= p->n) return bad_argument(p, "conv2d", "the filter is not in this program");
    const fedc_type *wt = &p->nodes[w].type;
    int64_t pads[4];
    if (!pads_for(p, x, wt->rank == 4 ? wt->dims[0] : 1, wt->rank == 4 ? wt->dims[1] : 1, stride_h, stride_w, padding,
                  pads))
        return x == FEDC_NONE || p->status ? FEDC_NONE : bad_argument(p, "conv2d", "the input is not in this program");
    fedc_value in[2] = {x, w};
    return window_op(p, FEDC_OP_CONV2D, in, 2, NULL, stride_h, stride_w, pads, NULL);
}

static fedc_value pool(fedc_program *p, fedc__op op, fedc_value x, int kh, int kw, int sh, int sw, fedc_padding padding) {
    int64_t pads[4], window[2] = {kh, kw};
    if (!pads_for(p, x, kh, kw, sh, sw, padding, pads))
        return x == FEDC_NONE || p->status ? FEDC_NONE : bad_argument(p, fedc__ops[op].name, "the input is not in this program");
    return window_op(p, op, &x, 1, window, sh, sw, pads, NULL);
}

fedc_value fedc_max_pool2d(fedc_program *p, fedc_value x, int window_h, int window_w, int stride_h, int stride_w,
                           fedc_padding padding) {
    return pool(p, FEDC_OP_MAX_POOL2D, x, window_h, window_w, stride_h, stride_w, padding);
}

fedc_value fedc_avg_pool2d(fedc_program *p, fedc_value x, int window_h, int window_w, int stride_h, int stride_w,
                           fedc_padding padding) {
    return pool(p, FEDC_OP_AVG_POOL2D, x, window_h, window_w, stride_h, stride_w, padding);
}

fedc_value fedc_conv2d_input_grad(fedc_program *p, fedc_value dy, fedc_value w, const fedc_type *x_type, int stride_h,
                                  int stride_w, const int64_t pads[4]) {
    fedc_value in[2] = {dy, w};
    return window_op(p, FEDC_OP_CONV2D_INPUT_GRAD, in, 2, NULL, stride_h, stride_w, pads, x_type);
}

fedc_value fedc_conv2d_filter_grad(fedc_program *p, fedc_value x, fedc_value dy, int kh, int kw, int stride_h,
                                   int stride_w, const int64_t pads[4]) {
    fedc_value in[2] = {x, dy};
    int64_t window[2] = {kh, kw};
    return window_op(p, FEDC_OP_CONV2D_FILTER_GRAD, in, 2, window, stride_h, stride_w, pads, NULL);
}

fedc_value fedc_max_pool2d_grad(fedc_program *p, fedc_value x, fedc_value dy, int window_h, int window_w, int stride_h,
                                int stride_w, const int64_t pads[4]) {
    fedc_value in[2] = {x, dy};
    int64_t window[2] = {window_h, window_w};
    return window_op(p, FEDC_OP_MAX_POOL2D_GRAD, in, 2, window, stride_h, stride_w, pads, NULL);
}

fedc_value fedc_avg_pool2d_grad(fedc_program *p, fedc_value dy, const fedc_type *x_type, int window_h, int window_w,
                                int stride_h, int stride_w, const int64_t pads[4]) {
    int64_t window[2] = {window_h, window_w};
    return window_op(p, FEDC_OP_AVG_POOL2D_GRAD, &dy, 1, window, stride_h, stride_w, pads, x_type);
}

/* ------------------------------------------------------- losses and misc -- */

fedc_value fedc_log_softmax(fedc_program *p, fedc_value x) { return emit1(p, FEDC_OP_LOG_SOFTMAX, x); }

fedc_value fedc_softmax_cross_entropy(fedc_program *p, fedc_value logits, fedc_value labels, fedc_value weight) {
    fedc_value in[3] = {logits, labels, weight};
    if (weight == FEDC_NONE) return fedc__emit(p, FEDC_OP_SOFTMAX_XENT, in, 2, NULL, 0, NULL);
    return fedc__emit(p, FEDC_OP_SOFTMAX_XENT, in, 3, NULL, 0, NULL);
}

fedc_value fedc_softmax_cross_entropy_grad(fedc_program *p, fedc_value logits, fedc_value labels, fedc_value scale) {
    return fedc__emit(p, FEDC_OP_SOFTMAX_XENT_GRAD, (fedc_value[]){logits, labels, scale}, 3, NULL, 0, NULL);
}

fedc_value fedc_dropout(fedc_program *p, fedc_value x, fedc_value key, double rate) {
    fedc_value in[2] = {x, key};
    fedc__attr a = fedc__attr_make_float(FEDC_ATTR_RATE, rate);
    return fedc__emit(p, FEDC_OP_DROPOUT, in, 2, &a, 1, NULL);
}

static fedc_value random_op(fedc_program *p, int op, fedc_value key, fedc_type type) {
    fedc__attr attrs[2] = {fedc__attr_make_ints(FEDC_ATTR_SHAPE, type.rank, type.dims),
                           fedc__attr_make_int(FEDC_ATTR_DTYPE, type.dtype)};
    return fedc__emit(p, op, &key, 1, attrs, 2, NULL);
}

fedc_value fedc_random_normal(fedc_program *p, fedc_value key, fedc_type type) {
    return random_op(p, FEDC_OP_RANDOM_NORMAL, key, type);
}

fedc_value fedc_random_uniform(fedc_program *p, fedc_value key, fedc_type type) {
    return random_op(p, FEDC_OP_RANDOM_UNIFORM, key, type);
}

fedc_value fedc_cast(fedc_program *p, fedc_value x, fedc_dtype dt) {
    fedc__attr a = fedc__attr_make_int(FEDC_ATTR_DTYPE, dt);
    return emit1_attrs(p, FEDC_OP_CAST, x, &a, 1);
}
