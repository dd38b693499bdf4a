/*
 * ONNX op types as fedc programs, one builder per op type (see onnx_case.h).
 *
 * Layouts: ONNX images are NCHW and conv filters OIHW; fedc's are NHWC and HWIO,
 * so the builders permute the data of those inputs (and of the expected output)
 * on the host before binding it, and say nothing more about it. Everything else
 * keeps ONNX's layout, and where an ONNX op works on an axis that fedc's op does
 * not take (softmax over axis 0, gather along axis 1), the program moves the axis
 * with fedc_transpose, so transpose is exercised too. int64 tensors (indices,
 * labels, shapes) become fedc's i32, checked to fit.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/program.h"
#include "ir/ir.h"
#include "onnx_case.h"

static const int NCHW_TO_NHWC[4] = {0, 2, 3, 1};
static const int OIHW_TO_HWIO[4] = {2, 3, 1, 0};

static void unsupported(onnx_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void unsupported(onnx_case *c, const char *fmt, ...) {
    if (c->unsupported[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->unsupported, sizeof c->unsupported, fmt, ap);
    va_end(ap);
}

static void note(onnx_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(onnx_case *c, const char *fmt, ...) {
    size_t used = strlen(c->note);
    if (used + 3 >= sizeof c->note) return;
    if (used) used += (size_t)snprintf(c->note + used, sizeof c->note - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->note + used, sizeof c->note - used, fmt, ap);
    va_end(ap);
}

static void bad_data(onnx_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad_data(onnx_case *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", c->test);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    c->failed = true;
}

static bool stop(const onnx_case *c) { return c->unsupported[0] || c->failed; }

/* Only the attributes in `known` (comma-separated) are understood; any other
 * could change the semantics, so it makes the test unsupported. */
static void known_attrs(onnx_case *c, const char *known) {
    for (int i = 0; i < c->node->nattrs; i++) {
        const char *name = c->node->attrs[i].name;
        size_t n = strlen(name);
        const char *k = known;
        bool found = false;
        while (*k && !found) {
            size_t len = strcspn(k, ",");
            found = len == n && !strncmp(k, name, n);
            k += len + (k[len] == ',');
        }
        if (!found) unsupported(c, "attribute %s is not supported", name);
    }
}

/* ------------------------------------------------------------ tensors -- */

static bool dtype_of(onnx_case *c, int onnx_dt, fedc_dtype *dt) {
    switch (onnx_dt) {
    case ONNX_FLOAT: *dt = FEDC_F32; return true;
    case ONNX_DOUBLE: *dt = FEDC_F64; return true;
    case ONNX_INT32: *dt = FEDC_I32; return true;
    case ONNX_INT64: *dt = FEDC_I32; return true; /* values range-checked */
    case ONNX_BOOL: *dt = FEDC_BOOL; return true;
    case ONNX_UINT8: *dt = FEDC_U8; return true;
    default: unsupported(c, "fedc has no dtype for ONNX data_type %d", onnx_dt); return false;
    }
}

static void store(void *dst, fedc_dtype dt, int64_t i, double v) {
    switch (dt) {
    case FEDC_F32: ((float *)dst)[i] = (float)v; break;
    case FEDC_F64: ((double *)dst)[i] = v; break;
    case FEDC_I32: ((int32_t *)dst)[i] = (int32_t)v; break;
    case FEDC_U8: ((uint8_t *)dst)[i] = (uint8_t)v; break;
    default: ((uint8_t *)dst)[i] = v != 0; break;
    }
}

/* A copy of t with its axes permuted: y.dims[i] = t.dims[perm[i]]. */
static void permute(const onnx_tensor *t, const int *perm, onnx_tensor *y) {
    *y = *t;
    int64_t stride[ONNX_MAX_RANK], s = 1;
    for (int i = t->rank - 1; i >= 0; i--) stride[i] = s, s *= t->dims[i];
    for (int i = 0; i < t->rank; i++) y->dims[i] = t->dims[perm[i]];
    y->data = malloc((size_t)(t->count ? t->count : 1) * sizeof *y->data);
    if (!y->data) return;
    int64_t idx[ONNX_MAX_RANK] = {0};
    for (int64_t k = 0; k < t->count; k++) {
        int64_t src = 0;
        for (int i = 0; i < t->rank; i++) src += idx[i] * stride[perm[i]];
        y->data[k] = t->data[src];
        for (int i = t->rank - 1; i >= 0; i--) {
            if (++idx[i] < y->dims[i]) break;
            idx[i] = 0;
        }
    }
}

static onnx_tensor copy_tensor(const onnx_tensor *t) {
    static const int id[ONNX_MAX_RANK] = {0, 1, 2, 3, 4, 5, 6, 7};
    onnx_tensor y;
    permute(t, id, &y);
    return y;
}

/* A fedc input holding `data` (count values of `dims`) as dtype dt. */
static fedc_value input_data(onnx_case *c, fedc_dtype dt, int rank, const int64_t *dims, const double *data) {
    if (stop(c)) return FEDC_NONE;
    if (rank > FEDC_MAX_RANK) return unsupported(c, "rank %d is over fedc's %d", rank, FEDC_MAX_RANK), FEDC_NONE;
    if (c->nbinds == ONNX_CASE_MAX_BINDS) return bad_data(c, "too many inputs"), FEDC_NONE;
    fedc_type t = fedc_type_make(dt, rank, dims);
    int64_t n = fedc_type_count(&t);
    void *buf = malloc(n ? fedc_type_bytes(&t) : 1);
    if (!buf) return bad_data(c, "out of memory"), FEDC_NONE;
    for (int64_t i = 0; i < n; i++) {
        if (dt == FEDC_I32 && !(data[i] >= INT32_MIN && data[i] <= INT32_MAX)) {
            free(buf);
            return unsupported(c, "an integer (%g) does not fit fedc's i32", data[i]), FEDC_NONE;
        }
        store(buf, dt, i, data[i]);
    }
    int k = c->nbinds++;
    snprintf(c->bind_name[k], sizeof c->bind_name[k], "in%d", k);
    c->bind_data[k] = buf;
    return fedc_input(c->p, c->bind_name[k], t);
}

static const onnx_tensor *need(onnx_case *c, int k) {
    if (stop(c)) return NULL;
    if (!c->in[k]) bad_data(c, "input %d is missing", k);
    return c->in[k];
}

/* ONNX input k as a fedc input of its own shape and layout. */
static fedc_value arg(onnx_case *c, int k) {
    const onnx_tensor *t = need(c, k);
    fedc_dtype dt;
    if (!t || !dtype_of(c, t->data_type, &dt)) return FEDC_NONE;
    return input_data(c, dt, t->rank, t->dims, t->data);
}

/* ONNX input k, permuted on the host (NCHW images to NHWC, OIHW filters to HWIO). */
static fedc_value arg_perm(onnx_case *c, int k, const int *perm) {
    const onnx_tensor *t = need(c, k);
    fedc_dtype dt;
    if (!t || !dtype_of(c, t->data_type, &dt)) return FEDC_NONE;
    onnx_tensor y;
    permute(t, perm, &y);
    fedc_value v = y.data ? input_data(c, dt, y.rank, y.dims, y.data) : FEDC_NONE;
    free(y.data);
    return v;
}

/* The values of a small integer input (shapes, axes, pads): at most `max`. */
static int const_ints(onnx_case *c, int k, int64_t *out, int max) {
    const onnx_tensor *t = need(c, k);
    if (!t) return 0;
    if (t->count > max) return bad_data(c, "input %d has %lld values, over %d", k, (long long)t->count, max), 0;
    for (int64_t i = 0; i < t->count; i++) out[i] = (int64_t)t->data[i];
    return (int)t->count;
}

static double const_scalar(onnx_case *c, int k, double dflt) {
    if (!c->in[k]) return dflt;
    if (c->in[k]->count != 1) return bad_data(c, "input %d is not a scalar", k), dflt;
    return c->in[k]->data[0];
}

/* The ONNX output k must equal v, after the host permutation perm (NULL: none). */
static void expect_perm(onnx_case *c, int k, fedc_value v, const int *perm) {
    if (stop(c)) return;
    if (!c->out[k]) return bad_data(c, "output %d is missing", k);
    if (c->nexpect == ONNX_CASE_MAX_EXPECT) return bad_data(c, "too many outputs");
    onnx_expect *e = &c->expect[c->nexpect++];
    e->v = v;
    if (perm) permute(c->out[k], perm, &e->want);
    else e->want = copy_tensor(c->out[k]);
}

static void expect(onnx_case *c, int k, fedc_value v) { expect_perm(c, k, v, NULL); }

/* Normalises an ONNX axis (negative counts from the end) for rank r. */
static int axis_of(onnx_case *c, int64_t axis, int rank) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= (rank ? rank : 1)) return bad_data(c, "axis %lld out of range for rank %d", (long long)axis, rank), 0;
    return (int)axis;
}

static fedc_type type_of(onnx_case *c, fedc_value v) { return fedc_value_type(c->p, v); }

/* The permutation that moves axis a of a rank-r value last, and its inverse. */
static void axis_last(int a, int r, int *perm, int *inverse) {
    int k = 0;
    for (int i = 0; i < r; i++)
        if (i != a) perm[k++] = i;
    perm[r - 1] = a;
    for (int i = 0; i < r; i++) inverse[perm[i]] = i;
}

/* ------------------------------------------------------ elementwise -- */

typedef fedc_value (*binary_fn)(fedc_program *, fedc_value, fedc_value);
typedef fedc_value (*unary_fn)(fedc_program *, fedc_value);

static void binary(onnx_case *c, binary_fn fn) {
    known_attrs(c, "");
    fedc_value a = arg(c, 0), b = arg(c, 1);
    if (!stop(c) && c->in[0]->data_type != c->in[1]->data_type) unsupported(c, "operands of two dtypes (fedc does not promote)");
    expect(c, 0, fn(c->p, a, b));
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
    known_attrs(c, "");
    fedc_value acc = arg(c, 0);
    int n = c->node->ninputs;
    for (int k = 1; k < n; k++) acc = fn(c->p, acc, arg(c, k));
    if (n == 1) { /* one input is the identity: max(x, x) = x, (x + x) / 2 = x */
        acc = fn(c->p, acc, acc);
        if (fn == fedc_add) n = 2, mean = true;
    }
    if (mean && n > 1) acc = fedc_div(c->p, acc, fedc_scalar_like(c->p, acc, n));
    expect(c, 0, acc);
}

static void b_max(onnx_case *c) { variadic(c, fedc_maximum, false); }
static void b_min(onnx_case *c) { variadic(c, fedc_minimum, false); }
static void b_sum(onnx_case *c) { variadic(c, fedc_add, false); }
static void b_mean(onnx_case *c) { variadic(c, fedc_add, true); }

static void unary(onnx_case *c, unary_fn fn) {
    known_attrs(c, "");
    expect(c, 0, fn(c->p, arg(c, 0)));
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
    known_attrs(c, "");
    const onnx_tensor *y = need(c, 1);
    if (y && y->count != 1) unsupported(c, "the exponent is an array (fedc's pow has one constant exponent)");
    if (y && y->data_type != c->in[0]->data_type) unsupported(c, "operands of two dtypes (fedc does not promote)");
    if (stop(c)) return;
    note(c, "the exponent, a scalar input, is given to fedc_pow as its constant");
    expect(c, 0, fedc_pow(c->p, arg(c, 0), y->data[0]));
}

static void b_where(onnx_case *c) {
    known_attrs(c, "");
    fedc_value cond = arg(c, 0), a = arg(c, 1), b = arg(c, 2);
    expect(c, 0, fedc_select(c->p, cond, a, b));
}

static void cast_to(onnx_case *c, int onnx_dt) {
    fedc_dtype dt;
    fedc_value x = arg(c, 0);
    if (!dtype_of(c, onnx_dt, &dt)) return;
    expect(c, 0, fedc_cast(c->p, x, dt));
}

static void b_cast(onnx_case *c) {
    known_attrs(c, "to");
    cast_to(c, (int)onnx_attr_int(c->node, "to", 0));
}

static void b_castlike(onnx_case *c) {
    known_attrs(c, "");
    const onnx_tensor *like = need(c, 1);
    if (like) cast_to(c, like->data_type);
}

/* --------------------------------------------------------- reductions -- */

typedef fedc_value (*reduce_fn)(fedc_program *, fedc_value, const int *, int, bool);

/* Axes come as an attribute (ReduceMean, ReduceMax up to opset 17) or as input 1
 * (ReduceSum from opset 13); none means all, or none with noop_with_empty_axes. */
static void reduce(onnx_case *c, reduce_fn fn) {
    known_attrs(c, "axes,keepdims,noop_with_empty_axes");
    fedc_value x = arg(c, 0);
    if (stop(c)) return;
    int64_t axes64[ONNX_MAX_RANK];
    int n = 0;
    const onnx_attr *a = onnx_node_attr(c->node, "axes");
    if (a) {
        n = a->n > ONNX_MAX_RANK ? ONNX_MAX_RANK : a->n;
        memcpy(axes64, a->ints, (size_t)n * sizeof *axes64);
    } else if (c->node->ninputs > 1 && c->in[1]) {
        n = const_ints(c, 1, axes64, ONNX_MAX_RANK);
    }
    int axes[ONNX_MAX_RANK];
    for (int i = 0; i < n; i++) axes[i] = (int)axes64[i]; /* fedc takes negative axes as they are */
    bool keep = onnx_attr_int(c->node, "keepdims", 1) != 0;
    bool noop = onnx_attr_int(c->node, "noop_with_empty_axes", 0) != 0;
    if (n == 0 && noop) note(c, "no axes with noop_with_empty_axes: fedc reduces over no axes (naxes 0)");
    expect(c, 0, n || noop ? fn(c->p, x, axes, n, keep) : fn(c->p, x, NULL, -1, keep));
}

static void b_reduce_sum(onnx_case *c) { reduce(c, fedc_reduce_sum); }
static void b_reduce_mean(onnx_case *c) { reduce(c, fedc_reduce_mean); }
static void b_reduce_max(onnx_case *c) { reduce(c, fedc_reduce_max); }

static void b_argmax(onnx_case *c) {
    known_attrs(c, "axis,keepdims,select_last_index");
    fedc_value x = arg(c, 0);
    if (stop(c)) return;
    fedc_type t = type_of(c, x);
    int axis = axis_of(c, onnx_attr_int(c->node, "axis", 0), t.rank);
    fedc_value y = fedc_argmax(c->p, x, axis);
    if (onnx_attr_int(c->node, "select_last_index", 0))
        note(c, "fedc's argmax takes the first maximum: checked on data without ties");
    if (onnx_attr_int(c->node, "keepdims", 1)) {
        t.dims[axis] = 1;
        y = fedc_reshape(c->p, y, t.rank, t.dims);
    }
    expect(c, 0, y);
}

/* -------------------------------------------------------------- shapes -- */

static void b_reshape(onnx_case *c) {
    known_attrs(c, "allowzero");
    fedc_value x = arg(c, 0);
    int64_t dims[ONNX_MAX_RANK];
    int n = const_ints(c, 1, dims, ONNX_MAX_RANK);
    if (stop(c)) return;
    bool allowzero = onnx_attr_int(c->node, "allowzero", 0) != 0;
    for (int i = 0; i < n; i++)
        if (dims[i] == 0 && !allowzero) dims[i] = c->in[0]->dims[i]; /* ONNX: 0 copies the input's dim */
    expect(c, 0, fedc_reshape(c->p, x, n, dims));
}

/* Expand broadcasts both ways; fedc's broadcast_to takes the result's shape. */
static void b_expand(onnx_case *c) {
    known_attrs(c, "");
    fedc_value x = arg(c, 0);
    int64_t shape[ONNX_MAX_RANK];
    int n = const_ints(c, 1, shape, ONNX_MAX_RANK);
    if (stop(c)) return;
    const onnx_tensor *t = c->in[0];
    int r = n > t->rank ? n : t->rank;
    int64_t dims[ONNX_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int64_t a = i - (r - t->rank) >= 0 ? t->dims[i - (r - t->rank)] : 1;
        int64_t b = i - (r - n) >= 0 ? shape[i - (r - n)] : 1;
        dims[i] = a == 1 ? b : a;
    }
    expect(c, 0, fedc_broadcast_to(c->p, x, r, dims));
}

static void b_transpose(onnx_case *c) {
    known_attrs(c, "perm");
    fedc_value x = arg(c, 0);
    if (stop(c)) return;
    int r = c->in[0]->rank, perm[ONNX_MAX_RANK];
    const onnx_attr *a = onnx_node_attr(c->node, "perm");
    if (a && a->n != r) return bad_data(c, "perm has %d entries for rank %d", a->n, r);
    for (int i = 0; i < r; i++) perm[i] = a ? (int)a->ints[i] : r - 1 - i;
    expect(c, 0, fedc_transpose(c->p, x, perm));
}

/* ONNX's starts and ends are clamped to the axis (negative ones count from
 * its end); fedc's slice takes the clamped [start, limit) with unit steps. */
static void b_slice(onnx_case *c) {
    known_attrs(c, "");
    fedc_value x = arg(c, 0);
    int64_t starts[ONNX_MAX_RANK], ends[ONNX_MAX_RANK], axes[ONNX_MAX_RANK], steps[ONNX_MAX_RANK];
    int n = const_ints(c, 1, starts, ONNX_MAX_RANK);
    if (const_ints(c, 2, ends, ONNX_MAX_RANK) != n) bad_data(c, "starts and ends differ in length");
    int na = c->node->ninputs > 3 && c->in[3] ? const_ints(c, 3, axes, ONNX_MAX_RANK) : -1;
    int ns = c->node->ninputs > 4 && c->in[4] ? const_ints(c, 4, steps, ONNX_MAX_RANK) : -1;
    if (stop(c)) return;
    const onnx_tensor *t = c->in[0];
    int64_t lo[FEDC_MAX_RANK] = {0}, hi[FEDC_MAX_RANK];
    for (int i = 0; i < t->rank; i++) hi[i] = t->dims[i];
    for (int i = 0; i < n; i++) {
        int axis = axis_of(c, na >= 0 ? axes[i] : i, t->rank);
        if (ns >= 0 && steps[i] != 1) return unsupported(c, "step %lld (fedc's slice has unit steps)", (long long)steps[i]);
        int64_t d = t->dims[axis], s = starts[i], e = ends[i];
        s = s < 0 ? s + d : s;
        e = e < 0 ? e + d : e;
        s = s < 0 ? 0 : s > d ? d : s;
        e = e < 0 ? 0 : e > d ? d : e;
        lo[axis] = s;
        hi[axis] = e < s ? s : e;
    }
    expect(c, 0, fedc_slice(c->p, x, lo, hi));
}

static void b_concat(onnx_case *c) {
    known_attrs(c, "axis");
    fedc_value xs[ONNX_MAX_IO];
    for (int k = 0; k < c->node->ninputs; k++) xs[k] = arg(c, k);
    if (stop(c)) return;
    expect(c, 0, fedc_concat(c->p, xs, c->node->ninputs, (int)onnx_attr_int(c->node, "axis", 0)));
}

/* fedc pads with zeros; ONNX's constant mode pads with `value`: pad(x - v) + v. */
static void b_pad(onnx_case *c) {
    known_attrs(c, "mode");
    const onnx_attr *mode = onnx_node_attr(c->node, "mode");
    if (mode && strcmp(mode->s, "constant")) return unsupported(c, "mode %s (fedc pads with zeros)", mode->s);
    fedc_value x = arg(c, 0);
    int64_t pads[2 * ONNX_MAX_RANK];
    int n = const_ints(c, 1, pads, 2 * ONNX_MAX_RANK);
    if (stop(c)) return;
    int r = c->in[0]->rank;
    if (n != 2 * r) return bad_data(c, "%d pads for rank %d", n, r);
    for (int i = 0; i < n; i++)
        if (pads[i] < 0) return unsupported(c, "negative pads (cropping)");
    double v = c->node->ninputs > 2 ? const_scalar(c, 2, 0) : 0;
    if (v != 0) {
        note(c, "pad value %g: fedc pads with zeros, so this checks pad(x - v) + v", v);
        x = fedc_sub(c->p, x, fedc_scalar_like(c->p, x, v));
    }
    fedc_value y = fedc_pad(c->p, x, pads, pads + r);
    if (v != 0) y = fedc_add(c->p, y, fedc_scalar_like(c->p, y, v));
    expect(c, 0, y);
}

/* ------------------------------------------------ products, indexing -- */

static void b_matmul(onnx_case *c) {
    known_attrs(c, "");
    fedc_value a = arg(c, 0), b = arg(c, 1);
    if (!stop(c) && (c->in[0]->rank < 2 || c->in[1]->rank < 2)) return unsupported(c, "a rank-1 operand");
    expect(c, 0, fedc_matmul(c->p, a, b, false, false));
}

/* y = alpha A' B' + beta C */
static void b_gemm(onnx_case *c) {
    known_attrs(c, "alpha,beta,transA,transB");
    fedc_value a = arg(c, 0), b = arg(c, 1);
    fedc_value y = fedc_matmul(c->p, a, b, onnx_attr_int(c->node, "transA", 0), onnx_attr_int(c->node, "transB", 0));
    double alpha = onnx_attr_float(c->node, "alpha", 1), beta = onnx_attr_float(c->node, "beta", 1);
    if (alpha != 1) y = fedc_mul(c->p, fedc_scalar_like(c->p, y, alpha), y);
    if (c->node->ninputs > 2 && c->in[2]) {
        fedc_value bias = arg(c, 2);
        if (beta != 1) bias = fedc_mul(c->p, fedc_scalar_like(c->p, bias, beta), bias);
        y = fedc_add(c->p, y, bias);
    }
    expect(c, 0, y);
}

/* Indices as fedc's i32, negative ones (allowed by ONNX, counted from the end)
 * wrapped by `size` on the host: fedc refuses them. */
static fedc_value wrapped_indices(onnx_case *c, int k, int64_t size) {
    const onnx_tensor *t = need(c, k);
    if (!t) return FEDC_NONE;
    double *idx = malloc((size_t)(t->count ? t->count : 1) * sizeof *idx);
    if (!idx) return bad_data(c, "out of memory"), FEDC_NONE;
    bool negative = false;
    for (int64_t i = 0; i < t->count; i++) {
        idx[i] = trunc(t->data[i]);
        if (idx[i] < 0) idx[i] += size, negative = true;
    }
    if (negative) note(c, "negative indices, which fedc refuses, are wrapped (+%lld) on the host", (long long)size);
    fedc_value v = input_data(c, FEDC_I32, t->rank, t->dims, idx);
    free(idx);
    return v;
}

/* fedc gathers rows (axis 0): another axis is moved first, and back after. */
static void b_gather(onnx_case *c) {
    known_attrs(c, "axis");
    fedc_value table = arg(c, 0);
    if (stop(c)) return;
    const onnx_tensor *t = c->in[0];
    int axis = axis_of(c, onnx_attr_int(c->node, "axis", 0), t->rank);
    fedc_value idx = wrapped_indices(c, 1, t->dims[axis]);
    if (stop(c)) return;
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
    expect(c, 0, y);
}

/* ScatterND with reduction add and one index per update row is data +
 * scatter_add(updates, idx): duplicate indices add up in both. */
static void b_scatternd(onnx_case *c) {
    known_attrs(c, "reduction");
    const onnx_attr *red = onnx_node_attr(c->node, "reduction");
    if (!red || strcmp(red->s, "add")) return unsupported(c, "reduction %s (fedc's scatter adds)", red ? red->s : "none");
    fedc_value data = arg(c, 0);
    const onnx_tensor *it = need(c, 1);
    if (stop(c)) return;
    if (it->dims[it->rank - 1] != 1) return unsupported(c, "index tuples of %lld coordinates", (long long)it->dims[it->rank - 1]);
    fedc_value idx = wrapped_indices(c, 1, c->in[0]->dims[0]);
    fedc_value upd = arg(c, 2);
    if (stop(c)) return;
    idx = fedc_reshape(c->p, idx, it->rank - 1, it->dims);
    expect(c, 0, fedc_add(c->p, data, fedc_scatter_add(c->p, upd, idx, c->in[0]->dims[0])));
}

/* y = off + (on - off) one_hot(idx), with the depth axis moved to `axis`. */
static void b_onehot(onnx_case *c) {
    known_attrs(c, "axis");
    const onnx_tensor *values = need(c, 2);
    int64_t depth = (int64_t)const_scalar(c, 1, 0);
    fedc_value idx = wrapped_indices(c, 0, depth);
    if (stop(c)) return;
    if (values->count != 2) return bad_data(c, "values must be [off, on]");
    fedc_dtype dt;
    if (!dtype_of(c, values->data_type, &dt)) return;
    int r = c->in[0]->rank + 1, axis = axis_of(c, onnx_attr_int(c->node, "axis", -1), r);
    fedc_value y = fedc_one_hot(c->p, idx, depth, dt);
    double off = values->data[0], on = values->data[1];
    y = fedc_add(c->p, fedc_mul(c->p, y, fedc_scalar(c->p, dt, on - off)), fedc_scalar(c->p, dt, off));
    if (axis != r - 1) {
        int perm[FEDC_MAX_RANK];
        for (int i = 0; i < r; i++) perm[i] = i < axis ? i : i == axis ? r - 1 : i - 1;
        y = fedc_transpose(c->p, y, perm);
    }
    expect(c, 0, y);
}

/* ----------------------------------------------- convolution, pooling -- */

/* The explicit [top, bottom, left, right] pads of ONNX's attributes for an
 * in_h x in_w image: pads ([t, l, b, r] in ONNX) or auto_pad. */
static void window_pads(onnx_case *c, const int64_t in[2], const int64_t k[2], const int64_t s[2], int64_t pads[4]) {
    memset(pads, 0, 4 * sizeof *pads);
    const onnx_attr *ap = onnx_node_attr(c->node, "auto_pad");
    const char *mode = ap ? ap->s : "NOTSET";
    if (!strcmp(mode, "SAME_UPPER") || !strcmp(mode, "SAME_LOWER")) {
        for (int i = 0; i < 2; i++) {
            int64_t out = (in[i] + s[i] - 1) / s[i], total = (out - 1) * s[i] + k[i] - in[i];
            if (total < 0) total = 0;
            int64_t small = total / 2, big = total - small;
            bool upper = !strcmp(mode, "SAME_UPPER");
            pads[2 * i] = upper ? small : big;
            pads[2 * i + 1] = upper ? big : small;
        }
        return;
    }
    if (strcmp(mode, "NOTSET") && strcmp(mode, "VALID")) return unsupported(c, "auto_pad %s", mode);
    const onnx_attr *p = onnx_node_attr(c->node, "pads");
    if (!p) return;
    if (p->n != 4) return unsupported(c, "%d pads (fedc pools and convolves 2-D images)", p->n);
    pads[0] = p->ints[0], pads[1] = p->ints[2], pads[2] = p->ints[1], pads[3] = p->ints[3];
}

static bool ints_pair(onnx_case *c, const char *name, int64_t dflt, int64_t out[2]) {
    const onnx_attr *a = onnx_node_attr(c->node, name);
    out[0] = out[1] = dflt;
    if (!a) return true;
    if (a->n != 2) return unsupported(c, "%s of %d values (fedc's windows are 2-D)", name, a->n), false;
    out[0] = a->ints[0], out[1] = a->ints[1];
    return true;
}

static fedc_value window_op(onnx_case *c, fedc__op op, const fedc_value *in, int nin, const int64_t *window,
                            const int64_t s[2], const int64_t pads[4]) {
    if (stop(c)) return FEDC_NONE;
    fedc__attr attrs[3];
    int n = 0;
    if (window) attrs[n++] = fedc__attr_make_ints(FEDC_ATTR_WINDOW, 2, window);
    attrs[n++] = fedc__attr_make_ints(FEDC_ATTR_STRIDES, 2, s);
    attrs[n++] = fedc__attr_make_ints(FEDC_ATTR_PADS, 4, pads);
    return fedc__emit(c->p, op, in, nin, attrs, n, NULL);
}

static void no_dilations(onnx_case *c) {
    int64_t d[2];
    if (ints_pair(c, "dilations", 1, d) && (d[0] != 1 || d[1] != 1)) unsupported(c, "dilations (fedc has none)");
}

/* fedc's conv2d takes explicit pads ([t, b, l, r]), so every ONNX padding is
 * expressed; programs built with the public API get VALID or SAME. */
static void b_conv(onnx_case *c) {
    known_attrs(c, "auto_pad,dilations,group,kernel_shape,pads,strides");
    no_dilations(c);
    if (onnx_attr_int(c->node, "group", 1) != 1) unsupported(c, "grouped convolution");
    const onnx_tensor *w = need(c, 1), *x = need(c, 0);
    if (stop(c)) return;
    if (x->rank != 4) return unsupported(c, "a %d-D convolution (fedc's is 2-D)", x->rank - 2);
    int64_t s[2], k[2] = {w->dims[2], w->dims[3]}, pads[4], in[2] = {x->dims[2], x->dims[3]};
    ints_pair(c, "strides", 1, s);
    window_pads(c, in, k, s, pads);
    fedc_value v[2] = {arg_perm(c, 0, NCHW_TO_NHWC), arg_perm(c, 1, OIHW_TO_HWIO)};
    fedc_value y = window_op(c, FEDC_OP_CONV2D, v, 2, NULL, s, pads);
    if (c->node->ninputs > 2 && c->in[2]) y = fedc_add(c->p, y, arg(c, 2)); /* [O] bias, last axis */
    expect_perm(c, 0, y, NCHW_TO_NHWC);
}

/* ConvTranspose is the adjoint of a convolution in its input: fedc's
 * conv2d_input_grad, with the filter [C_in, C_out, kh, kw] read as the forward
 * convolution's HWIO filter [kh, kw, C_out, C_in]. */
static void b_convtranspose(onnx_case *c) {
    known_attrs(c, "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,strides");
    no_dilations(c);
    if (onnx_attr_int(c->node, "group", 1) != 1) unsupported(c, "grouped convolution");
    const onnx_tensor *w = need(c, 1), *x = need(c, 0);
    if (stop(c)) return;
    if (x->rank != 4) return unsupported(c, "a %d-D convolution (fedc's is 2-D)", x->rank - 2);
    int64_t s[2], op[2], k[2] = {w->dims[2], w->dims[3]}, pads[4] = {0}, out[2];
    ints_pair(c, "strides", 1, s);
    ints_pair(c, "output_padding", 0, op);
    const onnx_attr *shape = onnx_node_attr(c->node, "output_shape"), *ap = onnx_node_attr(c->node, "auto_pad");
    const onnx_attr *p = onnx_node_attr(c->node, "pads");
    for (int i = 0; i < 2; i++) {
        int64_t full = s[i] * (x->dims[2 + i] - 1) + op[i] + k[i];
        int64_t want = shape ? shape->ints[shape->n - 2 + i] : ap && !strncmp(ap->s, "SAME", 4) ? x->dims[2 + i] * s[i] : -1;
        if (want >= 0) {
            /* ONNX: the padding that gives the output shape, its larger half at
             * the start unless SAME_UPPER; a shape larger than the full output
             * adds rows and columns at the end that no window reaches (zeros) */
            int64_t total = full - want;
            bool upper = ap && !strcmp(ap->s, "SAME_UPPER");
            pads[2 * i] = total < 0 ? 0 : upper ? total / 2 : total - total / 2;
            pads[2 * i + 1] = total < 0 ? 0 : total - pads[2 * i];
            out[i] = want;
        } else {
            if (p) pads[2 * i] = p->ints[i], pads[2 * i + 1] = p->ints[2 + i];
            out[i] = full - pads[2 * i] - pads[2 * i + 1];
        }
    }
    /* [C_in, C_out, kh, kw] -> [kh, kw, C_out, C_in]: the same permutation as OIHW -> HWIO */
    fedc_value v[2] = {arg_perm(c, 0, NCHW_TO_NHWC), arg_perm(c, 1, OIHW_TO_HWIO)};
    if (stop(c)) return;
    int64_t xdims[4] = {x->dims[0], out[0], out[1], w->dims[1]};
    fedc__attr attrs[3] = {fedc__attr_make_ints(FEDC_ATTR_SHAPE, 4, xdims), fedc__attr_make_ints(FEDC_ATTR_STRIDES, 2, s),
                           fedc__attr_make_ints(FEDC_ATTR_PADS, 4, pads)};
    fedc_value y = fedc__emit(c->p, FEDC_OP_CONV2D_INPUT_GRAD, v, 2, attrs, 3, NULL);
    if (op[0] || op[1]) note(c, "output_padding: rows and columns no window reaches, zeros in both");
    if (c->node->ninputs > 2 && c->in[2]) y = fedc_add(c->p, y, arg(c, 2));
    expect_perm(c, 0, y, NCHW_TO_NHWC);
}

/* MaxPool, AveragePool, and their global forms. A 1-D pool runs as a 2-D one of
 * height 1. ceil_mode becomes extra padding at the end: fedc's pools never count
 * padded positions (max never picks one, average divides by the in-image count),
 * which is also what ONNX's ceil_mode windows do. count_include_pad pads with
 * fedc_pad's zeros first, which then count. */
static void pool(onnx_case *c, fedc__op op, bool global) {
    known_attrs(c, "auto_pad,ceil_mode,count_include_pad,dilations,kernel_shape,pads,storage_order,strides");
    no_dilations(c);
    const onnx_tensor *x = need(c, 0);
    if (stop(c)) return;
    if (x->rank != 4 && x->rank != 3) return unsupported(c, "a %d-D pool (fedc's are 2-D)", x->rank - 2);
    if (x->data_type != ONNX_FLOAT && x->data_type != ONNX_DOUBLE) return unsupported(c, "integer images (fedc pools floats)");
    onnx_tensor img = *x; /* a 1-D pool's [N, C, W] as [N, C, 1, W] */
    if (x->rank == 3) {
        img.rank = 4, img.dims[3] = x->dims[2], img.dims[2] = 1;
        note(c, "1-D, as a 2-D pool of height 1");
    }
    int64_t in[2] = {img.dims[2], img.dims[3]}, k[2] = {in[0], in[1]}, s[2] = {1, 1}, pads[4] = {0};
    const onnx_attr *ks = onnx_node_attr(c->node, "kernel_shape"), *st = onnx_node_attr(c->node, "strides");
    if (!global) {
        if (!ks || ks->n != x->rank - 2) return bad_data(c, "kernel_shape");
        k[0] = x->rank == 4 ? ks->ints[0] : 1, k[1] = ks->ints[ks->n - 1];
        if (st) s[0] = x->rank == 4 ? st->ints[0] : 1, s[1] = st->ints[st->n - 1];
        const onnx_attr *p = onnx_node_attr(c->node, "pads");
        if (p && x->rank == 3) pads[2] = p->ints[0], pads[3] = p->ints[1];
        else window_pads(c, in, k, s, pads);
    }
    for (int i = 0; i < 2 && onnx_attr_int(c->node, "ceil_mode", 0); i++) {
        int64_t span = in[i] + pads[2 * i] + pads[2 * i + 1] - k[i], out = (span + s[i] - 1) / s[i] + 1;
        int64_t extra = (out - 1) * s[i] + k[i] - (in[i] + pads[2 * i] + pads[2 * i + 1]);
        if (extra > 0) pads[2 * i + 1] += extra;
        if (i == 0) note(c, "ceil_mode as extra padding at the end");
    }
    const onnx_tensor *saved = c->in[0];
    c->in[0] = &img;
    fedc_value v = arg_perm(c, 0, NCHW_TO_NHWC);
    c->in[0] = saved;
    if (onnx_attr_int(c->node, "count_include_pad", 0)) {
        int64_t lo[4] = {0, pads[0], pads[2], 0}, hi[4] = {0, pads[1], pads[3], 0};
        v = fedc_pad(c->p, v, lo, hi);
        memset(pads, 0, sizeof pads);
        note(c, "count_include_pad: fedc_pad's zeros, then an unpadded pool");
    }
    fedc_value y = window_op(c, op, &v, 1, k, s, pads);
    if (c->node->noutputs > 1 && c->out[1]) note(c, "the Indices output is not checked (fedc has no argmax pool)");
    if (stop(c)) return;
    if (x->rank == 3) { /* back to [N, C, W]: NHWC [N, 1, W, C] -> [N, W, C] vs the output as [N, W, C] */
        fedc_type t = type_of(c, y);
        int64_t dims[3] = {t.dims[0], t.dims[2], t.dims[3]};
        static const int NCW_TO_NWC[3] = {0, 2, 1};
        expect_perm(c, 0, fedc_reshape(c->p, y, 3, dims), NCW_TO_NWC);
        return;
    }
    expect_perm(c, 0, y, NCHW_TO_NHWC);
}

static void b_maxpool(onnx_case *c) { pool(c, FEDC_OP_MAX_POOL2D, false); }
static void b_avgpool(onnx_case *c) { pool(c, FEDC_OP_AVG_POOL2D, false); }
static void b_global_maxpool(onnx_case *c) { pool(c, FEDC_OP_MAX_POOL2D, true); }
static void b_global_avgpool(onnx_case *c) { pool(c, FEDC_OP_AVG_POOL2D, true); }

/* ------------------------------------------------------------ losses -- */

/* fedc's log_softmax is over the last axis; another axis is moved last and back. */
static void softmax(onnx_case *c, bool log) {
    known_attrs(c, "axis");
    fedc_value x = arg(c, 0);
    if (stop(c)) return;
    if (c->model->opset < 13) return unsupported(c, "opset %lld softmax (over flattened trailing axes)", (long long)c->model->opset);
    int r = c->in[0]->rank, a = axis_of(c, onnx_attr_int(c->node, "axis", -1), r), perm[FEDC_MAX_RANK], inv[FEDC_MAX_RANK];
    if (a != r - 1) {
        axis_last(a, r, perm, inv);
        x = fedc_transpose(c->p, x, perm);
    }
    fedc_value y = fedc_log_softmax(c->p, x);
    if (!log) y = fedc_exp(c->p, y);
    if (a != r - 1) y = fedc_transpose(c->p, y, inv);
    expect(c, 0, y);
}

static void b_logsoftmax(onnx_case *c) { softmax(c, true); }
static void b_softmax(onnx_case *c) { softmax(c, false); }

/* SoftmaxCrossEntropyLoss on scores [N, C, d...]: the scores are permuted on the
 * host to [N, d..., C] and seen as [M, C] rows (the rank-7 tests exceed fedc's
 * rank 6). Class weights and ignore_index become fedc's per-example weight:
 * w[label] * (label != ignore_index), with ignored labels replaced by 0 so
 * they are in range; the mean is sum(w l) / sum(w), as ONNX defines it. */
static void b_sce(onnx_case *c) {
    known_attrs(c, "ignore_index,reduction");
    const onnx_tensor *x = need(c, 0), *lab = need(c, 1);
    if (stop(c)) return;
    int r = x->rank, perm[ONNX_MAX_RANK], inv[ONNX_MAX_RANK];
    axis_last(1, r, perm, inv);
    int64_t classes = x->dims[1], rows = lab->count;
    onnx_tensor xt;
    permute(x, perm, &xt);
    int64_t mc[2] = {rows, classes};
    fedc_value logits = xt.data ? input_data(c, FEDC_F32, 2, mc, xt.data) : FEDC_NONE;
    free(xt.data);
    if (x->data_type != ONNX_FLOAT) unsupported(c, "data_type %d scores", x->data_type);
    fedc_value labels = input_data(c, FEDC_I32, 1, &rows, lab->data);
    if (stop(c)) return;
    fedc_program *p = c->p;
    fedc_value weight = FEDC_NONE, safe = labels;
    const onnx_attr *ii = onnx_node_attr(c->node, "ignore_index");
    if (ii) {
        fedc_value keep = fedc_ne(p, labels, fedc_scalar(p, FEDC_I32, (double)ii->i));
        safe = fedc_select(p, keep, labels, fedc_scalar(p, FEDC_I32, 0));
        weight = fedc_cast(p, keep, FEDC_F32);
    }
    if (c->node->ninputs > 2 && c->in[2]) {
        fedc_value w = fedc_gather(p, arg(c, 2), safe);
        weight = weight == FEDC_NONE ? w : fedc_mul(p, weight, w);
    }
    fedc_value loss = fedc_softmax_cross_entropy(p, logits, safe, weight);
    const onnx_attr *red = onnx_node_attr(c->node, "reduction");
    const char *mode = red ? red->s : "mean";
    if (!strcmp(mode, "none")) {
        loss = fedc_reshape(p, loss, lab->rank, lab->dims);
    } else {
        loss = fedc_reduce_sum(p, loss, NULL, -1, false);
        if (!strcmp(mode, "mean"))
            loss = fedc_div(p, loss, weight == FEDC_NONE ? fedc_scalar(p, FEDC_F32, (double)rows)
                                                         : fedc_reduce_sum(p, weight, NULL, -1, false));
        else if (strcmp(mode, "sum"))
            return unsupported(c, "reduction %s", mode);
    }
    expect(c, 0, loss);
    if (c->node->noutputs > 1 && c->out[1]) { /* log_prob, compared in the [M, C] rows */
        onnx_tensor want;
        permute(c->out[1], perm, &want);
        want.rank = 2, want.dims[0] = rows, want.dims[1] = classes;
        if (c->nexpect == ONNX_CASE_MAX_EXPECT) return free(want.data), bad_data(c, "too many outputs");
        c->expect[c->nexpect++] = (onnx_expect){fedc_log_softmax(p, logits), want};
    }
}

/* LayerNormalization over the axes from `axis` on: fedc's layer_norm is over
 * the last axis, so x is seen as [outer, inner] with gamma and beta [inner]. Mean
 * and InvStdDev, which fedc's op does not return, are checked as fedc_reduce_mean
 * and 1 / sqrt(mean((x - mean)^2) + eps) when the test has them. */
static void b_layernorm(onnx_case *c) {
    known_attrs(c, "axis,epsilon,stash_type");
    const onnx_tensor *x = need(c, 0);
    if (stop(c)) return;
    int r = x->rank, a = axis_of(c, onnx_attr_int(c->node, "axis", -1), r);
    double eps = onnx_attr_float(c->node, "epsilon", 1e-5);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < r; i++) *(i < a ? &outer : &inner) *= x->dims[i];
    int64_t flat[2] = {outer, inner};
    fedc_program *p = c->p;
    fedc_value xv = fedc_reshape(p, arg(c, 0), 2, flat);
    fedc_value gamma = fedc_reshape(p, arg(c, 1), 1, &inner);
    fedc_value beta = c->node->ninputs > 2 && c->in[2] ? fedc_reshape(p, arg(c, 2), 1, &inner)
                                                       : fedc_full(p, fedc_type_make(FEDC_F32, 1, &inner), 0);
    if (stop(c)) return;
    expect(c, 0, fedc_reshape(p, fedc_layer_norm(p, xv, gamma, beta, eps), r, x->dims));
    int64_t stat_dims[ONNX_MAX_RANK];
    for (int i = 0; i < r; i++) stat_dims[i] = i < a ? x->dims[i] : 1;
    int one = 1;
    fedc_value mean = fedc_reduce_mean(p, xv, &one, 1, true);
    if (c->node->noutputs > 1 && c->out[1]) expect(c, 1, fedc_reshape(p, mean, r, stat_dims));
    if (c->node->noutputs > 2 && c->out[2]) {
        fedc_value var = fedc_reduce_mean(p, fedc_square(p, fedc_sub(p, xv, mean)), &one, 1, true);
        fedc_value inv = fedc_div(p, fedc_scalar(p, FEDC_F32, 1),
                                  fedc_sqrt(p, fedc_add(p, var, fedc_scalar(p, FEDC_F32, eps))));
        expect(c, 2, fedc_reshape(p, inv, r, stat_dims));
    }
}

/* ---------------------------------------------------------- dropout -- */

/* ONNX's inference mode (and ratio 0 in training) is the identity. fedc has no
 * inference mode (evaluation leaves dropout out), and its dropout at rate 0 is
 * the identity: that is what is checked. Training at a ratio > 0 draws from
 * numpy's generator, which fedc's Philox streams cannot reproduce. */
static void b_dropout(onnx_case *c) {
    known_attrs(c, "seed,ratio,is_test");
    double ratio = c->node->ninputs > 1 && c->in[1] ? const_scalar(c, 1, 0.5) : onnx_attr_float(c->node, "ratio", 0.5);
    bool training = c->node->ninputs > 2 && c->in[2] ? const_scalar(c, 2, 0) != 0
                                                     : onnx_attr_int(c->node, "is_test", 1) == 0; /* opset < 7 */
    if (training && ratio != 0) return unsupported(c, "random masks (numpy's generator)");
    fedc_value x = arg(c, 0);
    int32_t key[4] = {1, 2, 3, 4};
    fedc_value k = fedc_constant(c->p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), key);
    note(c, "%s: fedc's dropout at rate 0", training ? "ratio 0" : "inference mode");
    if (c->node->noutputs > 1 && c->out[1]) note(c, "the mask output is not checked (fedc's dropout has none)");
    expect(c, 0, fedc_dropout(c->p, x, k, 0));
}

/* ------------------------------------------------------------- LSTM -- */

/* ONNX's W [1, 4H, I] and R [1, 4H, H] hold the gates in the order i, o, f, c
 * (rows); fedc's w_x [I, 4H] and wh [H, 4H] in the order i, g (= c), f, o
 * (columns). So fedc gate block g takes ONNX block ONNX_BLOCK[g], transposed;
 * the bias is Wb + Rb, reordered the same way. */
static const int ONNX_BLOCK[4] = {0, 3, 2, 1};

static double *lstm_weights(const onnx_tensor *w, int64_t h) {
    int64_t in = w->dims[2];
    double *out = malloc((size_t)(in * 4 * h) * sizeof *out);
    if (!out) return NULL;
    for (int g = 0; g < 4; g++)
        for (int64_t j = 0; j < h; j++)
            for (int64_t k = 0; k < in; k++) out[k * 4 * h + g * h + j] = w->data[(ONNX_BLOCK[g] * h + j) * in + k];
    return out;
}

static bool all_zero(const onnx_tensor *t) {
    for (int64_t i = 0; i < t->count; i++)
        if (t->data[i] != 0) return false;
    return true;
}

static void lstm_inputs_supported(onnx_case *c, int64_t steps) {
    const char *direction = onnx_node_attr(c->node, "direction") ? onnx_node_attr(c->node, "direction")->s : "forward";
    if (strcmp(direction, "forward")) unsupported(c, "direction %s (fedc's LSTM runs forward)", direction);
    if (onnx_attr_int(c->node, "input_forget", 0)) unsupported(c, "coupled input and forget gates");
    if (c->node->ninputs > 4 && c->in[4])
        for (int64_t i = 0; i < c->in[4]->count; i++)
            if (c->in[4]->data[i] != steps) unsupported(c, "sequence_lens shorter than the sequence");
    for (int k = 5; k < 7 && k < c->node->ninputs; k++)
        if (c->in[k] && !all_zero(c->in[k])) unsupported(c, "a nonzero initial state (fedc's starts at zero)");
    if (c->node->ninputs > 7 && c->in[7] && !all_zero(c->in[7])) unsupported(c, "peepholes (fedc's cell has none)");
}

static void b_lstm(onnx_case *c) {
    known_attrs(c, "hidden_size,layout,direction,input_forget");
    const onnx_tensor *x = need(c, 0), *w = need(c, 1), *rw = need(c, 2);
    if (stop(c)) return;
    bool batch_first = onnx_attr_int(c->node, "layout", 0) != 0;
    int64_t h = onnx_attr_int(c->node, "hidden_size", 0), in = x->dims[2];
    int64_t t = x->dims[batch_first], b = x->dims[!batch_first];
    lstm_inputs_supported(c, t);
    if (stop(c)) return;
    fedc_program *p = c->p;
    static const int SWAP01[3] = {1, 0, 2};
    fedc_value xs = batch_first ? arg_perm(c, 0, SWAP01) : arg(c, 0); /* [T, B, I] */
    double *wx = lstm_weights(w, h), *wh = lstm_weights(rw, h), *bias = calloc((size_t)(4 * h), sizeof *bias);
    if (wx && wh && bias && c->node->ninputs > 3 && c->in[3])
        for (int g = 0; g < 4; g++)
            for (int64_t j = 0; j < h; j++)
                bias[g * h + j] = c->in[3]->data[ONNX_BLOCK[g] * h + j] + c->in[3]->data[(4 + ONNX_BLOCK[g]) * h + j];
    int64_t wxd[2] = {in, 4 * h}, whd[2] = {h, 4 * h}, bd = 4 * h;
    fedc_value vwx = wx ? input_data(c, FEDC_F32, 2, wxd, wx) : FEDC_NONE;
    fedc_value vwh = wh ? input_data(c, FEDC_F32, 2, whd, wh) : FEDC_NONE;
    fedc_value vb = bias ? input_data(c, FEDC_F32, 1, &bd, bias) : FEDC_NONE;
    free(wx), free(wh), free(bias);
    if (stop(c)) return;
    int64_t rows[2] = {t * b, in}, seq[3] = {t, b, 4 * h};
    fedc_value xw = fedc_add(p, fedc_matmul(p, fedc_reshape(p, xs, 2, rows), vwx, false, false), vb);
    fedc_value trace = fedc_lstm(p, fedc_reshape(p, xw, 3, seq), vwh); /* [T, B, 6H]: h, c, gates */
    fedc_value hs = fedc_slice(p, trace, (int64_t[]){0, 0, 0}, (int64_t[]){t, b, h});
    if (c->node->noutputs > 0 && c->out[0]) { /* Y: [T, 1, B, H], or [B, T, 1, H] batch first */
        fedc_value y = batch_first ? fedc_transpose(p, hs, SWAP01) : hs;
        int64_t yd[4] = {t, 1, b, h}, yb[4] = {b, t, 1, h};
        expect(c, 0, fedc_reshape(p, y, 4, batch_first ? yb : yd));
    }
    int64_t last[3] = {batch_first ? b : 1, batch_first ? 1 : b, h};
    for (int k = 1; k < 3; k++) { /* Y_h, Y_c: the last step's h and c */
        if (c->node->noutputs <= k || !c->out[k]) continue;
        fedc_value s = fedc_slice(p, trace, (int64_t[]){t - 1, 0, (k - 1) * h}, (int64_t[]){t, b, k * h});
        expect(c, k, fedc_reshape(p, s, 3, last));
    }
}

/* ------------------------------------------------------------ table -- */

static const struct {
    const char *op_type;
    onnx_build_fn build;
} BUILDERS[] = {
    {"Add", b_add}, {"Sub", b_sub}, {"Mul", b_mul}, {"Div", b_div}, {"Max", b_max}, {"Min", b_min},
    {"Sum", b_sum}, {"Mean", b_mean}, {"Neg", b_neg}, {"Exp", b_exp}, {"Log", b_log}, {"Tanh", b_tanh},
    {"Sigmoid", b_sigmoid}, {"Relu", b_relu}, {"Sqrt", b_sqrt}, {"Pow", b_pow}, {"Equal", b_equal},
    {"Greater", b_greater}, {"GreaterOrEqual", b_greater_equal}, {"Less", b_less}, {"LessOrEqual", b_less_equal},
    {"Where", b_where}, {"Cast", b_cast}, {"CastLike", b_castlike}, {"ReduceSum", b_reduce_sum},
    {"ReduceMean", b_reduce_mean}, {"ReduceMax", b_reduce_max}, {"ArgMax", b_argmax}, {"Reshape", b_reshape},
    {"Expand", b_expand}, {"Transpose", b_transpose}, {"Slice", b_slice}, {"Concat", b_concat}, {"Pad", b_pad},
    {"MatMul", b_matmul}, {"Gemm", b_gemm}, {"Gather", b_gather}, {"ScatterND", b_scatternd}, {"OneHot", b_onehot},
    {"Conv", b_conv}, {"ConvTranspose", b_convtranspose}, {"MaxPool", b_maxpool}, {"AveragePool", b_avgpool},
    {"GlobalMaxPool", b_global_maxpool}, {"GlobalAveragePool", b_global_avgpool}, {"LogSoftmax", b_logsoftmax},
    {"Softmax", b_softmax}, {"SoftmaxCrossEntropyLoss", b_sce}, {"LayerNormalization", b_layernorm},
    {"Dropout", b_dropout}, {"LSTM", b_lstm},
};

onnx_build_fn onnx_builder(const char *op_type) {
    for (size_t i = 0; i < sizeof BUILDERS / sizeof BUILDERS[0]; i++)
        if (!strcmp(BUILDERS[i].op_type, op_type)) return BUILDERS[i].build;
    return NULL;
}
