/* ONNX's shapes, indexing and constants as fedc ops (onnx_import.h).
 *
 * fedc's shapes are static, so Shape is a constant, and what PyTorch's exporter
 * computes from it (Gather, Unsqueeze, Concat, Slice, Cast, arithmetic) is
 * computed at import when every operand is a constant: a Reshape's target shape
 * then reaches it as a constant, as fedc_reshape needs. */
#include <string.h>

#include "formats/onnx_import.h"

/* x (constant or not) given `rank` and `dims` as its new shape. */
static fedc_status reshape_to(onnx_import *im, onnx_entry *x, int rank, const int64_t *dims) {
    int64_t count = 1, in[FEDC_MAX_RANK], have = 1;
    int r = fedc__onnx_dims(im, x, in);
    for (int i = 0; i < r; i++) have *= in[i]; /* a value's count fits */
    for (int i = 0; i < rank; i++)
        if (__builtin_mul_overflow(count, dims[i], &count)) return fedc__onnx_fail(im, FEDC_ESHAPE, "a shape of more than 2^63 elements");
    if (count != have) return fedc__onnx_fail(im, FEDC_ESHAPE, "%lld elements cannot take a shape of %lld", (long long)have, (long long)count);
    if (x->k) return fedc__onnx_set_const(im, 0, fedc__onnx_const_reshaped(x->k, x->k->dtype, rank, dims));
    return fedc__onnx_set(im, 0, fedc_reshape(im->p, fedc__onnx_value(im, x, FEDC_NONE), rank, dims));
}

static fedc_status op_reshape(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "allowzero");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0);
    int64_t in[FEDC_MAX_RANK], dims[FEDC_MAX_RANK], known = 1, have = 1;
    int rank = x ? fedc__onnx_shape_in(im, 1, dims) : -1;
    if (rank < 0) return st ? st : fedc__onnx_error(im);
    int r = fedc__onnx_dims(im, x, in), infer = -1;
    for (int i = 0; i < r; i++) have *= in[i];
    bool allowzero = fedc__onnx_attr_int(im, "allowzero", 0) != 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0 && !allowzero) {
            if (i >= r) return fedc__onnx_fail(im, FEDC_ESHAPE, "shape[%d] = 0 copies an axis the input does not have", i);
            dims[i] = in[i];
        }
        if (dims[i] == -1 && infer < 0) infer = i;
        else if (dims[i] < 0 || __builtin_mul_overflow(known, dims[i], &known))
            return fedc__onnx_fail(im, FEDC_ESHAPE, "shape[%d] = %lld", i, (long long)dims[i]);
    }
    if (infer >= 0) {
        if (known == 0 || have % known) return fedc__onnx_fail(im, FEDC_ESHAPE, "no size for the -1 of the shape");
        dims[infer] = have / known;
    }
    return reshape_to(im, x, rank, dims);
}

static fedc_status op_flatten(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "axis");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0);
    if (!x) return st ? st : fedc__onnx_error(im);
    int64_t in[FEDC_MAX_RANK], dims[2] = {1, 1}, axis = fedc__onnx_attr_int(im, "axis", 1);
    int r = fedc__onnx_dims(im, x, in);
    if (axis < -r || axis > r) return fedc__onnx_fail(im, FEDC_EINVAL, "axis %lld for rank %d", (long long)axis, r);
    if (axis < 0) axis += r;
    for (int i = 0; i < r; i++) dims[i >= axis] *= in[i];
    return reshape_to(im, x, 2, dims);
}

static fedc_status op_transpose(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "perm");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0);
    if (!x) return st ? st : fedc__onnx_error(im);
    int r = fedc__onnx_rank(im, x), perm[FEDC_MAX_RANK];
    int64_t given[FEDC_MAX_RANK];
    int n = fedc__onnx_attr_ints(im, "perm", given, FEDC_MAX_RANK);
    if (n == -2) return fedc__onnx_error(im);
    if (n >= 0 && n != r) return fedc__onnx_fail(im, FEDC_EINVAL, "perm has %d axes for rank %d", n, r);
    for (int i = 0; i < r; i++) perm[i] = n < 0 ? r - 1 - i : (int)given[i];
    static const int NCHW_TO_NHWC[4] = {0, 2, 3, 1};
    if (r == 4 && x->v == FEDC_NONE && x->nhwc != FEDC_NONE && !memcmp(perm, NCHW_TO_NHWC, sizeof NCHW_TO_NHWC))
        return fedc__onnx_set(im, 0, x->nhwc); /* the NHWC view is this transpose already */
    return fedc__onnx_set(im, 0, fedc_transpose(im->p, fedc__onnx_value(im, x, FEDC_NONE), perm));
}

/* ------------------------------------------------------ shape arithmetic -- */

static fedc_status op_shape(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "start,end");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0);
    if (!x) return st ? st : fedc__onnx_error(im);
    int64_t dims[FEDC_MAX_RANK];
    int r = fedc__onnx_dims(im, x, dims);
    int64_t start = fedc__onnx_attr_int(im, "start", 0), end = fedc__onnx_attr_int(im, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < start ? start : end > r ? r : end;
    int64_t n = end - start;
    onnx_const *y = fedc__onnx_const_new(ONNX_INT64, 1, &n);
    for (int64_t i = 0; y && i < n; i++) y->data[i] = (double)dims[start + i];
    return fedc__onnx_set_const(im, 0, y);
}

/* The axes input (opset 13 on) or attribute of Unsqueeze and Squeeze. */
static int axes_of(onnx_import *im, int64_t *axes) {
    if (!fedc__onnx_has_in(im, 1)) return fedc__onnx_attr_ints(im, "axes", axes, FEDC_MAX_RANK);
    const onnx_const *c = fedc__onnx_const_in(im, 1, "axes");
    if (!c || c->count > FEDC_MAX_RANK) return c ? (fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "too many axes"), -2) : -2;
    for (int64_t i = 0; i < c->count; i++) axes[i] = fedc__onnx_i64(c->data[i]);
    return (int)c->count;
}

static fedc_status op_unsqueeze(onnx_import *im) {
    onnx_entry *x = fedc__onnx_in(im, 0);
    int64_t axes[FEDC_MAX_RANK], in[FEDC_MAX_RANK], dims[FEDC_MAX_RANK];
    int n = x ? axes_of(im, axes) : -2;
    if (n < 0) return n == -1 ? fedc__onnx_fail(im, FEDC_EINVAL, "no axes") : fedc__onnx_error(im);
    int r = fedc__onnx_dims(im, x, in), rank = r + n;
    if (rank > FEDC_MAX_RANK) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "rank %d is over fedc's %d", rank, FEDC_MAX_RANK);
    bool inserted[FEDC_MAX_RANK] = {false};
    for (int i = 0; i < n; i++) {
        int a;
        if (fedc__onnx_axis(im, axes[i], rank, &a)) return fedc__onnx_error(im);
        inserted[a] = true;
    }
    for (int i = 0, k = 0; i < rank; i++) dims[i] = inserted[i] ? 1 : in[k++];
    return reshape_to(im, x, rank, dims);
}

static fedc_status op_squeeze(onnx_import *im) {
    onnx_entry *x = fedc__onnx_in(im, 0);
    int64_t axes[FEDC_MAX_RANK], in[FEDC_MAX_RANK], dims[FEDC_MAX_RANK];
    int n = x ? axes_of(im, axes) : -2;
    if (n == -2) return fedc__onnx_error(im);
    int r = fedc__onnx_dims(im, x, in), rank = 0;
    bool drop[FEDC_MAX_RANK] = {false};
    for (int i = 0; i < r; i++) drop[i] = n < 0 && in[i] == 1;
    for (int i = 0; i < n; i++) {
        int a;
        if (fedc__onnx_axis(im, axes[i], r, &a)) return fedc__onnx_error(im);
        if (in[a] != 1) return fedc__onnx_fail(im, FEDC_ESHAPE, "axis %d has size %lld, not 1", a, (long long)in[a]);
        drop[a] = true;
    }
    for (int i = 0; i < r; i++)
        if (!drop[i]) dims[rank++] = in[i];
    return reshape_to(im, x, rank, dims);
}

static fedc_status op_constant(onnx_import *im) {
    if (im->node->n_attribute != 1) return fedc__onnx_fail(im, FEDC_EINVAL, "a Constant needs exactly one attribute");
    const Onnx__AttributeProto *a = im->node->attribute[0];
    const char *name = a->name ? a->name : "";
    onnx_const *c = NULL;
    if (!strcmp(name, "value") && a->t) {
        fedc_status st = fedc__onnx_const_of_tensor(a->t, im->what, &c);
        if (st) return st;
    } else if (!strcmp(name, "value_float") || !strcmp(name, "value_int")) {
        c = fedc__onnx_const_new(name[6] == 'f' ? ONNX_FLOAT : ONNX_INT64, 0, NULL);
        if (c) c->data[0] = name[6] == 'f' ? a->f : (double)a->i;
    } else if (!strcmp(name, "value_floats") || !strcmp(name, "value_ints")) {
        bool f = name[6] == 'f';
        int64_t n = (int64_t)(f ? a->n_floats : a->n_ints);
        c = fedc__onnx_const_new(f ? ONNX_FLOAT : ONNX_INT64, 1, &n);
        for (int64_t i = 0; c && i < n; i++) c->data[i] = f ? a->floats[i] : (double)a->ints[i];
    } else {
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "a Constant given by '%s'", name);
    }
    return c ? fedc__onnx_set_const(im, 0, c) : fedc__onnx_fail(im, FEDC_ERANGE, "the constant is too large");
}

static fedc_status op_constant_of_shape(onnx_import *im) {
    int64_t dims[FEDC_MAX_RANK];
    int rank = fedc__onnx_shape_in(im, 0, dims);
    if (rank < 0) return fedc__onnx_error(im);
    onnx_const *value = NULL;
    const Onnx__AttributeProto *a = fedc__onnx_attr(im, "value");
    fedc_status st = a && a->t ? fedc__onnx_const_of_tensor(a->t, im->what, &value) : FEDC_OK;
    if (st) return st;
    if (value && value->count != 1) {
        fedc__onnx_const_free(value);
        return fedc__onnx_fail(im, FEDC_EINVAL, "value holds more than one element");
    }
    onnx_const *y = fedc__onnx_const_new(value ? value->dtype : ONNX_FLOAT, rank, dims);
    for (int64_t i = 0; y && i < y->count; i++) y->data[i] = value ? value->data[0] : 0;
    fedc__onnx_const_free(value);
    return y ? fedc__onnx_set_const(im, 0, y) : fedc__onnx_fail(im, FEDC_ERANGE, "the constant is too large");
}

static fedc_status op_cast(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "to,saturate");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0);
    if (!x) return st ? st : fedc__onnx_error(im);
    int to = (int)fedc__onnx_attr_int(im, "to", 0);
    bool ok;
    fedc_dtype dt = fedc__onnx_fedc_dtype(to, &ok);
    if (!ok) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "a cast to ONNX data type %d", to);
    if (x->k) {
        onnx_const *y = fedc__onnx_const_reshaped(x->k, to, x->k->rank, x->k->dims);
        bool integer = to != ONNX_FLOAT && to != ONNX_DOUBLE;
        for (int64_t i = 0; y && i < y->count; i++)
            y->data[i] = to == ONNX_BOOL ? y->data[i] != 0 : integer ? (double)fedc__onnx_i64(y->data[i]) : y->data[i];
        return fedc__onnx_set_const(im, 0, y);
    }
    fedc_value v = fedc__onnx_value(im, x, FEDC_NONE);
    if (v != FEDC_NONE && fedc_value_type(im->p, v).dtype == dt) return fedc__onnx_set(im, 0, v);
    return fedc__onnx_set(im, 0, fedc_cast(im->p, v, dt));
}

/* ------------------------------------------------------------ indexing -- */

static fedc_status op_concat(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "axis");
    int n = (int)im->node->n_input;
    if (st || n < 1 || n > 64) return st ? st : fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "%d inputs", n);
    onnx_entry *e[64];
    bool all_const = true;
    for (int i = 0; i < n; i++) {
        if (!(e[i] = fedc__onnx_in(im, i))) return fedc__onnx_error(im);
        all_const &= e[i]->k != NULL;
    }
    int r = fedc__onnx_rank(im, e[0]), axis;
    if (fedc__onnx_axis(im, fedc__onnx_attr_int(im, "axis", 0), r, &axis)) return fedc__onnx_error(im);
    if (all_const && r == 1) { /* shapes: 1-D constants end to end */
        int64_t total = 0;
        for (int i = 0; i < n; i++) total += e[i]->k->rank == 1 ? e[i]->k->count : -1 - total;
        if (total < 0) return fedc__onnx_fail(im, FEDC_ESHAPE, "inputs of different ranks");
        onnx_const *y = fedc__onnx_const_new(e[0]->k->dtype, 1, &total);
        for (int i = 0, at = 0; y && i < n; at += (int)e[i]->k->count, i++)
            memcpy(y->data + at, e[i]->k->data, (size_t)e[i]->k->count * sizeof *y->data);
        return fedc__onnx_set_const(im, 0, y);
    }
    fedc_value v[64], like = FEDC_NONE;
    for (int i = 0; i < n && like == FEDC_NONE; i++)
        if (!e[i]->k) like = fedc__onnx_value(im, e[i], FEDC_NONE);
    for (int i = 0; i < n; i++) v[i] = fedc__onnx_value(im, e[i], like);
    return fedc__onnx_set(im, 0, fedc_concat(im->p, v, n, axis));
}

/* A constant index tensor as fedc's i32 indices into an axis of size `size`
 * (negative indices counted from the end, as ONNX allows). */
static fedc_value index_constant(onnx_import *im, const onnx_const *idx, int64_t size) {
    onnx_const *fixed = fedc__onnx_const_reshaped(idx, ONNX_INT32, idx->rank, idx->dims);
    if (!fixed) return fedc__onnx_fail(im, FEDC_ENOMEM, "out of memory"), FEDC_NONE;
    for (int64_t i = 0; i < fixed->count; i++) {
        double k = fixed->data[i] < 0 ? fixed->data[i] + (double)size : fixed->data[i];
        if (k < 0 || k >= (double)size) {
            fedc__onnx_const_free(fixed);
            return fedc__onnx_fail(im, FEDC_ERANGE, "index %.0f is outside an axis of %lld", idx->data[i], (long long)size), FEDC_NONE;
        }
        fixed->data[i] = k;
    }
    onnx_entry tmp = {.name = "indices", .v = FEDC_NONE, .nhwc = FEDC_NONE, .k = fixed};
    fedc_value v = fedc__onnx_value(im, &tmp, FEDC_NONE);
    fedc__onnx_const_free(fixed);
    return v;
}

/* Gather along `axis`: fedc gathers rows (axis 0), so another axis is moved
 * first and the result's axes put back in ONNX's order:
 * data[:axis] + indices.shape + data[axis + 1:]. */
static fedc_status op_gather(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "axis");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0), *ie = x ? fedc__onnx_in(im, 1) : NULL;
    if (!ie) return st ? st : fedc__onnx_error(im);
    int64_t in[FEDC_MAX_RANK], idims[FEDC_MAX_RANK];
    int r = fedc__onnx_dims(im, x, in), ir = fedc__onnx_dims(im, ie, idims), axis;
    if (fedc__onnx_axis(im, fedc__onnx_attr_int(im, "axis", 0), r, &axis)) return fedc__onnx_error(im);
    if (r - 1 + ir > FEDC_MAX_RANK) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "the result's rank is over fedc's %d", FEDC_MAX_RANK);
    if (x->k && ie->k && r == 1) { /* shape arithmetic: elements of a 1-D constant */
        onnx_const *y = fedc__onnx_const_new(x->k->dtype, ie->k->rank, ie->k->dims);
        for (int64_t i = 0; y && i < y->count; i++) {
            int64_t k = fedc__onnx_i64(ie->k->data[i]);
            if (k < 0) k += in[0];
            if (k < 0 || k >= in[0]) {
                fedc__onnx_const_free(y);
                return fedc__onnx_fail(im, FEDC_ERANGE, "index %lld is outside an axis of %lld", (long long)ie->k->data[i], (long long)in[0]);
            }
            y->data[i] = x->k->data[k];
        }
        return fedc__onnx_set_const(im, 0, y);
    }
    fedc_program *p = im->p;
    fedc_value data = fedc__onnx_value(im, x, FEDC_NONE);
    fedc_value idx = ie->k ? index_constant(im, ie->k, in[axis]) : fedc__onnx_value(im, ie, FEDC_NONE);
    if (idx != FEDC_NONE && fedc_value_type(p, idx).dtype != FEDC_I32) idx = fedc_cast(p, idx, FEDC_I32);
    if (axis == 0) return fedc__onnx_set(im, 0, fedc_gather(p, data, idx));
    int front[FEDC_MAX_RANK], back[FEDC_MAX_RANK];
    front[0] = axis;
    for (int i = 0, k = 1; i < r; i++)
        if (i != axis) front[k++] = i;
    fedc_value y = fedc_gather(p, fedc_transpose(p, data, front), idx); /* idx dims, then data's others */
    int yr = ir + r - 1;
    for (int i = 0; i < yr; i++) back[i] = i < axis ? ir + i : i < axis + ir ? i - axis : i;
    return fedc__onnx_set(im, 0, fedc_transpose(p, y, back));
}

/* The box [lo, hi) of a constant (shape arithmetic, or a constant state that
 * an LSTM reads), its elements walked in row-major order. */
static onnx_const *slice_const(const onnx_const *x, const int64_t *lo, const int64_t *hi) {
    int64_t dims[FEDC_MAX_RANK], at[FEDC_MAX_RANK] = {0};
    for (int i = 0; i < x->rank; i++) dims[i] = hi[i] - lo[i];
    onnx_const *y = fedc__onnx_const_new(x->dtype, x->rank, dims);
    for (int64_t n = 0; y && n < y->count; n++) {
        int64_t from = 0;
        for (int i = 0; i < x->rank; i++) from = from * x->dims[i] + lo[i] + at[i];
        y->data[n] = x->data[from];
        for (int i = x->rank - 1; i >= 0 && ++at[i] == dims[i]; i--) at[i] = 0;
    }
    return y;
}

/* Slice with constant starts, ends, axes and unit steps. */
static fedc_status op_slice(onnx_import *im) {
    onnx_entry *x = fedc__onnx_in(im, 0);
    const onnx_const *starts = x ? fedc__onnx_const_in(im, 1, "starts") : NULL;
    const onnx_const *ends = starts ? fedc__onnx_const_in(im, 2, "ends") : NULL;
    if (!ends) return fedc__onnx_error(im);
    const onnx_const *axes = fedc__onnx_has_in(im, 3) ? fedc__onnx_const_in(im, 3, "axes") : NULL;
    const onnx_const *steps = fedc__onnx_has_in(im, 4) ? fedc__onnx_const_in(im, 4, "steps") : NULL;
    if ((fedc__onnx_has_in(im, 3) && !axes) || (fedc__onnx_has_in(im, 4) && !steps)) return fedc__onnx_error(im);
    int64_t in[FEDC_MAX_RANK], lo[FEDC_MAX_RANK] = {0}, hi[FEDC_MAX_RANK];
    int r = fedc__onnx_dims(im, x, in);
    memcpy(hi, in, sizeof in);
    if (starts->count != ends->count || (axes && axes->count != starts->count) || (steps && steps->count != starts->count))
        return fedc__onnx_fail(im, FEDC_EINVAL, "starts, ends, axes and steps differ in length");
    for (int64_t i = 0; i < starts->count; i++) {
        int a;
        if (fedc__onnx_axis(im, axes ? fedc__onnx_i64(axes->data[i]) : i, r, &a)) return fedc__onnx_error(im);
        if (steps && steps->data[i] != 1) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "step %.0f (fedc slices with step 1)", steps->data[i]);
        double s = (double)fedc__onnx_i64(starts->data[i]), e = (double)fedc__onnx_i64(ends->data[i]), d = (double)in[a];
        s = s < 0 ? s + d : s, e = e < 0 ? e + d : e;
        lo[a] = (int64_t)(s < 0 ? 0 : s > d ? d : s);
        hi[a] = (int64_t)(e < (double)lo[a] ? (double)lo[a] : e > d ? d : e);
    }
    if (x->k) return fedc__onnx_set_const(im, 0, slice_const(x->k, lo, hi));
    return fedc__onnx_set(im, 0, fedc_slice(im->p, fedc__onnx_value(im, x, FEDC_NONE), lo, hi));
}

const onnx_op_entry fedc__onnx_ops_shape[] = {
    {"Reshape", op_reshape}, {"Flatten", op_flatten}, {"Transpose", op_transpose}, {"Shape", op_shape},
    {"Unsqueeze", op_unsqueeze}, {"Squeeze", op_squeeze}, {"Constant", op_constant},
    {"ConstantOfShape", op_constant_of_shape}, {"Cast", op_cast}, {"Concat", op_concat}, {"Gather", op_gather},
    {"Slice", op_slice}, {NULL, NULL},
};
