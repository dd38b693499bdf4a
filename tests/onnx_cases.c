/*
 * ONNX op types as fedc programs: elementwise ops, reductions, shapes,
 * products and indexing (onnx_cases_nn.c has the layers). Where an ONNX op works
 * on an axis that fedc's op does not take (gather along axis 1, one-hot's axis),
 * the program moves the axis with fedc_transpose, so transpose is exercised too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_case.h"

/* ------------------------------------------------------ elementwise -- */

typedef fedc_value (*binary_fn)(fedc_program *, fedc_value, fedc_value);
typedef fedc_value (*unary_fn)(fedc_program *, fedc_value);

static void binary(onnx_case *c, binary_fn fn) {
    onnx_known_attrs(c, "");
    fedc_value a = onnx_arg(c, 0), b = onnx_arg(c, 1);
    if (!onnx_stop(c) && c->in[0]->data_type != c->in[1]->data_type) onnx_unsupported(c, "operands of two dtypes (fedc does not promote)");
    onnx_expect(c, 0, fn(c->p, a, b));
}

static void b_add(onnx_case *c) { binary(c, fedc_add); }
static void b_sub(onnx_case *c) { binary(c, fedc_sub); }
static void b_mul(onnx_case *c) { binary(c, fedc_mul); }
static void b_div(onnx_case *c) { binary(c, fedc_div); }
static void b_equal(onnx_case *c) { binary(c, fedc_eq); }
static void b_greater(onnx_case *c) { binary(c, fedc_gt); }
static void b_greater_equal(onnx_case *c) { binary(c, fedc_ge); }
static void b_less(onnx_case *c) { binary(c, fedc_lt); }
static void b_less_equal(onnx_case *c) { binary(c, fedc_le); }

/* Max, Min, Sum, Mean take any number of inputs: a chain of binary ops. */
static void variadic(onnx_case *c, binary_fn fn, bool mean) {
    onnx_known_attrs(c, "");
    fedc_value acc = onnx_arg(c, 0);
    int n = c->node->ninputs;
    for (int k = 1; k < n; k++) acc = fn(c->p, acc, onnx_arg(c, k));
    if (n == 1) { /* one input is the identity: max(x, x) = x, (x + x) / 2 = x */
        acc = fn(c->p, acc, acc);
        if (fn == fedc_add) n = 2, mean = true;
    }
    if (mean && n > 1) acc = fedc_div(c->p, acc, fedc_scalar_like(c->p, acc, n));
    onnx_expect(c, 0, acc);
}

static void b_max(onnx_case *c) { variadic(c, fedc_maximum, false); }
static void b_min(onnx_case *c) { variadic(c, fedc_minimum, false); }
static void b_sum(onnx_case *c) { variadic(c, fedc_add, false); }
static void b_mean(onnx_case *c) { variadic(c, fedc_add, true); }

static void unary(onnx_case *c, unary_fn fn) {
    onnx_known_attrs(c, "");
    onnx_expect(c, 0, fn(c->p, onnx_arg(c, 0)));
}

static void b_neg(onnx_case *c) { unary(c, fedc_neg); }
static void b_exp(onnx_case *c) { unary(c, fedc_exp); }
static void b_log(onnx_case *c) { unary(c, fedc_log); }
static void b_tanh(onnx_case *c) { unary(c, fedc_tanh); }
static void b_sigmoid(onnx_case *c) { unary(c, fedc_sigmoid); }
static void b_relu(onnx_case *c) { unary(c, fedc_relu); }
static void b_sqrt(onnx_case *c) { unary(c, fedc_sqrt); }

/* fedc's pow raises to one constant exponent (an attribute). */
static void b_pow(onnx_case *c) {
    onnx_known_attrs(c, "");
    const onnx_tensor *y = onnx_need(c, 1);
    if (y && y->count != 1) onnx_unsupported(c, "the exponent is an array (fedc's pow has one constant exponent)");
    if (y && y->data_type != c->in[0]->data_type) onnx_unsupported(c, "operands of two dtypes (fedc does not promote)");
    if (onnx_stop(c)) return;
    onnx_note(c, "the exponent, a scalar input, is given to fedc_pow as its constant");
    onnx_expect(c, 0, fedc_pow(c->p, onnx_arg(c, 0), y->data[0]));
}

static void b_where(onnx_case *c) {
    onnx_known_attrs(c, "");
    fedc_value cond = onnx_arg(c, 0), a = onnx_arg(c, 1), b = onnx_arg(c, 2);
    onnx_expect(c, 0, fedc_select(c->p, cond, a, b));
}

static void cast_to(onnx_case *c, int onnx_dt) {
    fedc_dtype dt;
    fedc_value x = onnx_arg(c, 0);
    if (!onnx_dtype_of(c, onnx_dt, &dt)) return;
    onnx_expect(c, 0, fedc_cast(c->p, x, dt));
}

static void b_cast(onnx_case *c) {
    onnx_known_attrs(c, "to");
    cast_to(c, (int)onnx_attr_int(c->node, "to", 0));
}

static void b_castlike(onnx_case *c) {
    onnx_known_attrs(c, "");
    const onnx_tensor *like = onnx_need(c, 1);
    if (like) cast_to(c, like->data_type);
}

/* --------------------------------------------------------- reductions -- */

typedef fedc_value (*reduce_fn)(fedc_program *, fedc_value, const int *, int, bool);

/* Axes come as an attribute (ReduceMean, ReduceMax up to opset 17) or as input 1
 * (ReduceSum from opset 13); none means all, or none with noop_with_empty_axes. */
static void reduce(onnx_case *c, reduce_fn fn) {
    onnx_known_attrs(c, "axes,keepdims,noop_with_empty_axes");
    fedc_value x = onnx_arg(c, 0);
    if (onnx_stop(c)) return;
    int64_t axes64[ONNX_MAX_RANK];
    int n = 0;
    const onnx_attr *a = onnx_node_attr(c->node, "axes");
    if (a) {
        n = a->n > ONNX_MAX_RANK ? ONNX_MAX_RANK : a->n;
        memcpy(axes64, a->ints, (size_t)n * sizeof *axes64);
    } else if (c->node->ninputs > 1 && c->in[1]) {
        n = onnx_const_ints(c, 1, axes64, ONNX_MAX_RANK);
    }
    int axes[ONNX_MAX_RANK];
    for (int i = 0; i < n; i++) axes[i] = (int)axes64[i]; /* fedc takes negative axes as they are */
    bool keep = onnx_attr_int(c->node, "keepdims", 1) != 0;
    bool noop = onnx_attr_int(c->node, "noop_with_empty_axes", 0) != 0;
    if (n == 0 && noop) onnx_note(c, "no axes with noop_with_empty_axes: fedc reduces over no axes (naxes 0)");
    onnx_expect(c, 0, n || noop ? fn(c->p, x, axes, n, keep) : fn(c->p, x, NULL, -1, keep));
}

static void b_reduce_sum(onnx_case *c) { reduce(c, fedc_reduce_sum); }
static void b_reduce_mean(onnx_case *c) { reduce(c, fedc_reduce_mean); }
static void b_reduce_max(onnx_case *c) { reduce(c, fedc_reduce_max); }

static void b_argmax(onnx_case *c) {
    onnx_known_attrs(c, "axis,keepdims,select_last_index");
    fedc_value x = onnx_arg(c, 0);
    if (onnx_stop(c)) return;
    fedc_type t = onnx_type_of(c, x);
    int axis = onnx_axis_of(c, onnx_attr_int(c->node, "axis", 0), t.rank);
    fedc_value y = fedc_argmax(c->p, x, axis);
    if (onnx_attr_int(c->node, "select_last_index", 0))
        onnx_note(c, "fedc's argmax takes the first maximum: checked on data without ties");
    if (onnx_attr_int(c->node, "keepdims", 1)) {
        t.dims[axis] = 1;
        y = fedc_reshape(c->p, y, t.rank, t.dims);
    }
    onnx_expect(c, 0, y);
}

/* -------------------------------------------------------------- shapes -- */

static void b_reshape(onnx_case *c) {
    onnx_known_attrs(c, "allowzero");
    fedc_value x = onnx_arg(c, 0);
    int64_t dims[ONNX_MAX_RANK];
    int n = onnx_const_ints(c, 1, dims, ONNX_MAX_RANK);
    if (onnx_stop(c)) return;
    bool allowzero = onnx_attr_int(c->node, "allowzero", 0) != 0;
    for (int i = 0; i < n; i++)
        if (dims[i] == 0 && !allowzero) dims[i] = c->in[0]->dims[i]; /* ONNX: 0 copies the input's dim */
    onnx_expect(c, 0, fedc_reshape(c->p, x, n, dims));
}

/* Expand broadcasts both ways; fedc's broadcast_to takes the result's shape. */
static void b_expand(onnx_case *c) {
    onnx_known_attrs(c, "");
    fedc_value x = onnx_arg(c, 0);
    int64_t shape[ONNX_MAX_RANK];
    int n = onnx_const_ints(c, 1, shape, ONNX_MAX_RANK);
    if (onnx_stop(c)) return;
    const onnx_tensor *t = c->in[0];
    int r = n > t->rank ? n : t->rank;
    int64_t dims[ONNX_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int64_t a = i - (r - t->rank) >= 0 ? t->dims[i - (r - t->rank)] : 1;
        int64_t b = i - (r - n) >= 0 ? shape[i - (r - n)] : 1;
        dims[i] = a == 1 ? b : a;
    }
    onnx_expect(c, 0, fedc_broadcast_to(c->p, x, r, dims));
}

static void b_transpose(onnx_case *c) {
    onnx_known_attrs(c, "perm");
    fedc_value x = onnx_arg(c, 0);
    if (onnx_stop(c)) return;
    int r = c->in[0]->rank, perm[ONNX_MAX_RANK];
    const onnx_attr *a = onnx_node_attr(c->node, "perm");
    if (a && a->n != r) {
        onnx_bad_data(c, "perm has %d entries for rank %d", a->n, r);
        return;
    }
    for (int i = 0; i < r; i++) perm[i] = a ? (int)a->ints[i] : r - 1 - i;
    onnx_expect(c, 0, fedc_transpose(c->p, x, perm));
}

/* ONNX's starts and ends are clamped to the axis (negative ones count from
 * its end); fedc's slice takes the clamped [start, limit) with unit steps. */
static void b_slice(onnx_case *c) {
    onnx_known_attrs(c, "");
    fedc_value x = onnx_arg(c, 0);
    int64_t starts[ONNX_MAX_RANK], ends[ONNX_MAX_RANK], axes[ONNX_MAX_RANK], steps[ONNX_MAX_RANK];
    int n = onnx_const_ints(c, 1, starts, ONNX_MAX_RANK);
    if (onnx_const_ints(c, 2, ends, ONNX_MAX_RANK) != n) onnx_bad_data(c, "starts and ends differ in length");
    int na = c->node->ninputs > 3 && c->in[3] ? onnx_const_ints(c, 3, axes, ONNX_MAX_RANK) : -1;
    int ns = c->node->ninputs > 4 && c->in[4] ? onnx_const_ints(c, 4, steps, ONNX_MAX_RANK) : -1;
    if (onnx_stop(c)) return;
    const onnx_tensor *t = c->in[0];
    int64_t lo[FEDC_MAX_RANK] = {0}, hi[FEDC_MAX_RANK];
    for (int i = 0; i < t->rank; i++) hi[i] = t->dims[i];
    for (int i = 0; i < n; i++) {
        int axis = onnx_axis_of(c, na >= 0 ? axes[i] : i, t->rank);
        if (ns >= 0 && steps[i] != 1) {
            onnx_unsupported(c, "step %lld (fedc's slice has unit steps)", (long long)steps[i]);
            return;
        }
        int64_t d = t->dims[axis], s = starts[i], e = ends[i];
        s = s < 0 ? s + d : s;
        e = e < 0 ? e + d : e;
        s = s < 0 ? 0 : s > d ? d : s;
        e = e < 0 ? 0 : e > d ? d : e;
        lo[axis] = s;
        hi[axis] = e < s ? s : e;
    }
    onnx_expect(c, 0, fedc_slice(c->p, x, lo, hi));
}

static void b_concat(onnx_case *c) {
    onnx_known_attrs(c, "axis");
    fedc_value xs[ONNX_MAX_IO];
    for (int k = 0; k < c->node->ninputs; k++) xs[k] = onnx_arg(c, k);
    if (onnx_stop(c)) return;
    onnx_expect(c, 0, fedc_concat(c->p, xs, c->node->ninputs, (int)onnx_attr_int(c->node, "axis", 0)));
}

/* fedc pads with zeros; ONNX's constant mode pads with `value`: pad(x - v) + v. */
static void b_pad(onnx_case *c) {
    onnx_known_attrs(c, "mode");
    const onnx_attr *mode = onnx_node_attr(c->node, "mode");
    if (mode && strcmp(mode->s, "constant")) {
        onnx_unsupported(c, "mode %s (fedc pads with zeros)", mode->s);
        return;
    }
    fedc_value x = onnx_arg(c, 0);
    int64_t pads[2 * ONNX_MAX_RANK];
    int n = onnx_const_ints(c, 1, pads, 2 * ONNX_MAX_RANK);
    if (onnx_stop(c)) return;
    int r = c->in[0]->rank;
    if (n != 2 * r) {
        onnx_bad_data(c, "%d pads for rank %d", n, r);
        return;
    }
    for (int i = 0; i < n; i++)
        if (pads[i] < 0) {
            onnx_unsupported(c, "negative pads (cropping)");
            return;
        }
    double v = c->node->ninputs > 2 ? onnx_const_scalar(c, 2, 0) : 0;
    if (v != 0) {
        onnx_note(c, "pad value %g: fedc pads with zeros, so this checks pad(x - v) + v", v);
        x = fedc_sub(c->p, x, fedc_scalar_like(c->p, x, v));
    }
    fedc_value y = fedc_pad(c->p, x, pads, pads + r);
    if (v != 0) y = fedc_add(c->p, y, fedc_scalar_like(c->p, y, v));
    onnx_expect(c, 0, y);
}

/* ------------------------------------------------ products, indexing -- */

static void b_matmul(onnx_case *c) {
    onnx_known_attrs(c, "");
    fedc_value a = onnx_arg(c, 0), b = onnx_arg(c, 1);
    if (!onnx_stop(c) && (c->in[0]->rank < 2 || c->in[1]->rank < 2)) {
        onnx_unsupported(c, "a rank-1 operand");
        return;
    }
    onnx_expect(c, 0, fedc_matmul(c->p, a, b, false, false));
}

/* y = alpha A' B' + beta C */
static void b_gemm(onnx_case *c) {
    onnx_known_attrs(c, "alpha,beta,transA,transB");
    fedc_value a = onnx_arg(c, 0), b = onnx_arg(c, 1);
    fedc_value y = fedc_matmul(c->p, a, b, onnx_attr_int(c->node, "transA", 0), onnx_attr_int(c->node, "transB", 0));
    double alpha = onnx_attr_float(c->node, "alpha", 1), beta = onnx_attr_float(c->node, "beta", 1);
    if (alpha != 1) y = fedc_mul(c->p, fedc_scalar_like(c->p, y, alpha), y);
    if (c->node->ninputs > 2 && c->in[2]) {
        fedc_value bias = onnx_arg(c, 2);
        if (beta != 1) bias = fedc_mul(c->p, fedc_scalar_like(c->p, bias, beta), bias);
        y = fedc_add(c->p, y, bias);
    }
    onnx_expect(c, 0, y);
}

/* Indices as fedc's i32, negative ones (allowed by ONNX, counted from the end)
 * wrapped by `size` on the host: fedc refuses them. */
static fedc_value wrapped_indices(onnx_case *c, int k, int64_t size) {
    const onnx_tensor *t = onnx_need(c, k);
    if (!t) return FEDC_NONE;
    double *idx = malloc((size_t)(t->count ? t->count : 1) * sizeof *idx);
    if (!idx) return onnx_bad_data(c, "out of memory"), FEDC_NONE;
    bool negative = false;
    for (int64_t i = 0; i < t->count; i++) {
        idx[i] = trunc(t->data[i]);
        if (idx[i] < 0) idx[i] += size, negative = true;
    }
    if (negative) onnx_note(c, "negative indices, which fedc refuses, are wrapped (+%lld) on the host", (long long)size);
    fedc_value v = onnx_input_data(c, FEDC_I32, t->rank, t->dims, idx);
    free(idx);
    return v;
}

/* fedc gathers rows (axis 0): another axis is moved first, and back after. */
static void b_gather(onnx_case *c) {
    onnx_known_attrs(c, "axis");
    fedc_value table = onnx_arg(c, 0);
    if (onnx_stop(c)) return;
    const onnx_tensor *t = c->in[0];
    int axis = onnx_axis_of(c, onnx_attr_int(c->node, "axis", 0), t->rank);
    fedc_value idx = wrapped_indices(c, 1, t->dims[axis]);
    if (onnx_stop(c)) return;
    int q = c->in[1]->rank, r = t->rank, perm[FEDC_MAX_RANK], back[FEDC_MAX_RANK];
    if (axis) {
        perm[0] = axis;
        for (int i = 0, k = 1; i < r; i++)
            if (i != axis) perm[k++] = i;
        table = fedc_transpose(c->p, table, perm);
    }
    fedc_value y = fedc_gather(c->p, table, idx); /* idx dims, then t's dims but axis */
    if (axis) {
        int k = 0;
        for (int i = 0; i < axis; i++) back[k++] = q + i;
        for (int i = 0; i < q; i++) back[k++] = i;
        for (int i = axis + 1; i < r; i++) back[k++] = q + i - 1;
        y = fedc_transpose(c->p, y, back);
    }
    onnx_expect(c, 0, y);
}

/* ScatterND with reduction add and one index per update row is data +
 * scatter_add(updates, idx): duplicate indices add up in both. */
static void b_scatternd(onnx_case *c) {
    onnx_known_attrs(c, "reduction");
    const onnx_attr *red = onnx_node_attr(c->node, "reduction");
    if (!red || strcmp(red->s, "add")) {
        onnx_unsupported(c, "reduction %s (fedc's scatter adds)", red ? red->s : "none");
        return;
    }
    fedc_value data = onnx_arg(c, 0);
    const onnx_tensor *it = onnx_need(c, 1);
    if (onnx_stop(c)) return;
    if (it->dims[it->rank - 1] != 1) {
        onnx_unsupported(c, "index tuples of %lld coordinates", (long long)it->dims[it->rank - 1]);
        return;
    }
    fedc_value idx = wrapped_indices(c, 1, c->in[0]->dims[0]);
    fedc_value upd = onnx_arg(c, 2);
    if (onnx_stop(c)) return;
    idx = fedc_reshape(c->p, idx, it->rank - 1, it->dims);
    onnx_expect(c, 0, fedc_add(c->p, data, fedc_scatter_add(c->p, upd, idx, c->in[0]->dims[0])));
}

/* y = off + (on - off) one_hot(idx), with the depth axis moved to `axis`. */
static void b_onehot(onnx_case *c) {
    onnx_known_attrs(c, "axis");
    const onnx_tensor *values = onnx_need(c, 2);
    int64_t depth = (int64_t)onnx_const_scalar(c, 1, 0);
    fedc_value idx = wrapped_indices(c, 0, depth);
    if (onnx_stop(c)) return;
    if (values->count != 2) {
        onnx_bad_data(c, "values must be [off, on]");
        return;
    }
    fedc_dtype dt;
    if (!onnx_dtype_of(c, values->data_type, &dt)) return;
    int r = c->in[0]->rank + 1, axis = onnx_axis_of(c, onnx_attr_int(c->node, "axis", -1), r);
    fedc_value y = fedc_one_hot(c->p, idx, depth, dt);
    double off = values->data[0], on = values->data[1];
    y = fedc_add(c->p, fedc_mul(c->p, y, fedc_scalar(c->p, dt, on - off)), fedc_scalar(c->p, dt, off));
    if (axis != r - 1) {
        int perm[FEDC_MAX_RANK];
        for (int i = 0; i < r; i++) perm[i] = i < axis ? i : i == axis ? r - 1 : i - 1;
        y = fedc_transpose(c->p, y, perm);
    }
    onnx_expect(c, 0, y);
}

const onnx_builder_entry onnx_builders_basic[] = {
    {"Add", b_add}, {"Sub", b_sub}, {"Mul", b_mul}, {"Div", b_div}, {"Max", b_max}, {"Min", b_min},
    {"Sum", b_sum}, {"Mean", b_mean}, {"Neg", b_neg}, {"Exp", b_exp}, {"Log", b_log}, {"Tanh", b_tanh},
    {"Sigmoid", b_sigmoid}, {"Relu", b_relu}, {"Sqrt", b_sqrt}, {"Pow", b_pow}, {"Equal", b_equal},
    {"Greater", b_greater}, {"GreaterOrEqual", b_greater_equal}, {"Less", b_less}, {"LessOrEqual", b_less_equal},
    {"Where", b_where}, {"Cast", b_cast}, {"CastLike", b_castlike}, {"ReduceSum", b_reduce_sum},
    {"ReduceMean", b_reduce_mean}, {"ReduceMax", b_reduce_max}, {"ArgMax", b_argmax}, {"Reshape", b_reshape},
    {"Expand", b_expand}, {"Transpose", b_transpose}, {"Slice", b_slice}, {"Concat", b_concat}, {"Pad", b_pad},
    {"MatMul", b_matmul}, {"Gemm", b_gemm}, {"Gather", b_gather}, {"ScatterND", b_scatternd}, {"OneHot", b_onehot},
    {NULL, NULL},
};
