/* The ONNX importer's tensors (onnx_import.h): entries by name, constants known
 * at import and their materialisation as program constants, the NCHW <-> NHWC
 * views of images, and the node's attributes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "formats/onnx_import.h"

static const int NCHW_TO_NHWC[4] = {0, 2, 3, 1};
static const int NHWC_TO_NCHW[4] = {0, 3, 1, 2};

static const char *str(const char *s) { return s ? s : ""; }

fedc_status fedc__onnx_fail(onnx_import *im, fedc_status status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const Onnx__NodeProto *n = im->node;
    im->failed = status;
    if (!n) return fedc_error(status, "%s: %s", im->what, msg);
    return fedc_error(status, "%s: node '%s' (%s, opset %lld): %s", im->what, str(n->name), str(n->op_type),
                      (long long)im->opset, msg);
}

fedc_status fedc__onnx_error(const onnx_import *im) {
    fedc_status st = im->p ? fedc_program_status(im->p) : FEDC_OK;
    return st ? st : im->failed ? im->failed : FEDC_EINVAL;
}

/* ------------------------------------------------------------ entries -- */

onnx_entry *fedc__onnx_find(onnx_import *im, const char *name) {
    for (int i = im->n - 1; i >= 0; i--)
        if (!strcmp(im->entries[i].name, name)) return &im->entries[i];
    return NULL;
}

onnx_entry *fedc__onnx_define(onnx_import *im, const char *name) {
    if (im->n == im->cap) {
        int cap = im->cap ? 2 * im->cap : 64;
        onnx_entry *e = fedc_realloc(im->entries, (size_t)cap * sizeof *e);
        if (!e) return fedc__onnx_fail(im, FEDC_ENOMEM, "out of memory"), NULL;
        im->entries = e, im->cap = cap;
    }
    onnx_entry *e = &im->entries[im->n++];
    *e = (onnx_entry){.name = name, .v = FEDC_NONE, .nhwc = FEDC_NONE};
    return e;
}

bool fedc__onnx_has_in(const onnx_import *im, int k) {
    return k < (int)im->node->n_input && im->node->input[k][0];
}

onnx_entry *fedc__onnx_in(onnx_import *im, int k) {
    if (!fedc__onnx_has_in(im, k)) return fedc__onnx_fail(im, FEDC_EINVAL, "input %d is missing", k), NULL;
    onnx_entry *e = fedc__onnx_find(im, im->node->input[k]);
    if (!e) fedc__onnx_fail(im, FEDC_EINVAL, "input '%s' is not defined before the node", im->node->input[k]);
    return e;
}

int fedc__onnx_dims(onnx_import *im, onnx_entry *e, int64_t *dims) {
    if (e->k) {
        memcpy(dims, e->k->dims, (size_t)e->k->rank * sizeof *dims);
        return e->k->rank;
    }
    if (e->v != FEDC_NONE) {
        fedc_type t = fedc_value_type(im->p, e->v);
        memcpy(dims, t.dims, (size_t)t.rank * sizeof *dims);
        return t.rank;
    }
    fedc_type t = fedc_value_type(im->p, e->nhwc);
    for (int i = 0; i < 4; i++) dims[i] = t.dims[NHWC_TO_NCHW[i]];
    return 4;
}

int fedc__onnx_rank(onnx_import *im, onnx_entry *e) {
    int64_t dims[FEDC_MAX_RANK];
    return fedc__onnx_dims(im, e, dims);
}

fedc_dtype fedc__onnx_fedc_dtype(int onnx_dtype, bool *ok) {
    *ok = true;
    switch (onnx_dtype) {
    case ONNX_FLOAT: return FEDC_F32;
    case ONNX_DOUBLE: return FEDC_F64;
    case ONNX_INT32: case ONNX_INT64: return FEDC_I32; /* fedc's indices; values range-checked */
    case ONNX_BOOL: return FEDC_BOOL;
    case ONNX_UINT8: return FEDC_U8;
    default: *ok = false; return FEDC_F32;
    }
}

int64_t fedc__onnx_i64(double v) {
    const double limit = 4611686018427387904.0; /* 2^62 */
    return v != v ? 0 : v > limit ? (int64_t)limit : v < -limit ? -(int64_t)limit : (int64_t)v;
}

static fedc_value materialise(onnx_import *im, const onnx_const *c, fedc_dtype dt) {
    fedc_type t = fedc_type_make(dt, c->rank, c->dims);
    void *buf = fedc_malloc(c->count ? fedc_type_bytes(&t) : 1);
    if (!buf) return fedc__onnx_fail(im, FEDC_ENOMEM, "out of memory"), FEDC_NONE;
    for (int64_t i = 0; i < c->count; i++) {
        double x = c->data[i];
        switch (dt) {
        case FEDC_F32: ((float *)buf)[i] = (float)x; break;
        case FEDC_F64: ((double *)buf)[i] = x; break;
        case FEDC_U8: ((uint8_t *)buf)[i] = (uint8_t)(x >= 0 && x <= 255 ? x : 0); break;
        case FEDC_BOOL: ((uint8_t *)buf)[i] = x != 0; break;
        default:
            if (!(x >= INT32_MIN && x <= INT32_MAX)) {
                fedc_free(buf);
                return fedc__onnx_fail(im, FEDC_ERANGE, "constant value %.17g does not fit fedc's i32", x), FEDC_NONE;
            }
            ((int32_t *)buf)[i] = (int32_t)x;
        }
    }
    fedc_value v = fedc_constant(im->p, t, buf);
    fedc_free(buf);
    return v;
}

fedc_value fedc__onnx_value(onnx_import *im, onnx_entry *e, fedc_value like) {
    if (!e) return FEDC_NONE;
    if (e->k) {
        bool ok;
        fedc_dtype own = fedc__onnx_fedc_dtype(e->k->dtype, &ok);
        if (!ok) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "'%s' has ONNX data type %d", e->name, e->k->dtype), FEDC_NONE;
        fedc_dtype dt = like == FEDC_NONE ? own : fedc_value_type(im->p, like).dtype;
        if (dt != own) return materialise(im, e->k, dt);
        if (e->v == FEDC_NONE) e->v = materialise(im, e->k, dt);
        return e->v;
    }
    if (e->v == FEDC_NONE && e->nhwc != FEDC_NONE) e->v = fedc_transpose(im->p, e->nhwc, NHWC_TO_NCHW);
    return e->v;
}

fedc_value fedc__onnx_nhwc(onnx_import *im, onnx_entry *e) {
    if (!e) return FEDC_NONE;
    if (e->nhwc != FEDC_NONE) return e->nhwc;
    if (fedc__onnx_rank(im, e) != 4)
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "'%s' is not a 4-D NCHW image", e->name), FEDC_NONE;
    fedc_value v = fedc__onnx_value(im, e, FEDC_NONE);
    if (v == FEDC_NONE) return FEDC_NONE;
    return e->nhwc = fedc_transpose(im->p, v, NCHW_TO_NHWC);
}

static onnx_entry *out_entry(onnx_import *im, int k) {
    if (k >= (int)im->node->n_output || !im->node->output[k][0]) return NULL; /* an output nobody reads */
    return fedc__onnx_define(im, im->node->output[k]);
}

fedc_status fedc__onnx_set(onnx_import *im, int k, fedc_value v) {
    if (v == FEDC_NONE) return fedc_program_status(im->p);
    onnx_entry *e = out_entry(im, k);
    if (e) e->v = v;
    return FEDC_OK;
}

fedc_status fedc__onnx_set_nhwc(onnx_import *im, int k, fedc_value nhwc) {
    if (nhwc == FEDC_NONE) return fedc_program_status(im->p);
    onnx_entry *e = out_entry(im, k);
    if (e) e->nhwc = nhwc;
    return FEDC_OK;
}

fedc_status fedc__onnx_set_const(onnx_import *im, int k, onnx_const *c) {
    if (!c) return FEDC_ENOMEM;
    onnx_entry *e = out_entry(im, k);
    if (!e) {
        fedc__onnx_const_free(c);
        return im->n == im->cap ? FEDC_ENOMEM : FEDC_OK;
    }
    e->k = c;
    return FEDC_OK;
}

/* ----------------------------------------------------------- constants -- */

/* At most this many values in one constant computed at import (a hostile
 * ConstantOfShape must not allocate the machine). */
#define MAX_CONST_COUNT ((int64_t)1 << 26)

onnx_const *fedc__onnx_const_new(int dtype, int rank, const int64_t *dims) {
    if (rank < 0 || rank > FEDC_MAX_RANK) return fedc_error(FEDC_EUNSUPPORTED, "rank %d is over fedc's %d", rank, FEDC_MAX_RANK), NULL;
    int64_t count = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || (dims[i] && count > MAX_CONST_COUNT / dims[i]))
            return fedc_error(FEDC_ERANGE, "a constant of dimension %lld at axis %d (at most %lld values)",
                              (long long)dims[i], i, (long long)MAX_CONST_COUNT), NULL;
        count *= dims[i];
    }
    onnx_const *c = fedc_calloc(1, sizeof *c);
    double *data = fedc_calloc((size_t)(count ? count : 1), sizeof *data);
    if (!c || !data) {
        fedc_free(c), fedc_free(data);
        return fedc_error(FEDC_ENOMEM, "out of memory"), NULL;
    }
    *c = (onnx_const){.dtype = dtype, .rank = rank, .count = count, .data = data};
    if (rank) memcpy(c->dims, dims, (size_t)rank * sizeof *dims);
    return c;
}

onnx_const *fedc__onnx_const_reshaped(const onnx_const *c, int dtype, int rank, const int64_t *dims) {
    onnx_const *y = fedc__onnx_const_new(dtype, rank, dims);
    if (y && y->count == c->count) memcpy(y->data, c->data, (size_t)c->count * sizeof *y->data);
    return y;
}

void fedc__onnx_const_free(onnx_const *c) {
    if (!c) return;
    fedc_free(c->data);
    fedc_free(c);
}

/* Little-endian element i of raw_data, as a double. */
static double raw_value(const uint8_t *b, int dtype, int64_t i) {
    switch (dtype) {
    case ONNX_FLOAT: { uint32_t u = 0; for (int k = 3; k >= 0; k--) u = u << 8 | b[4 * i + k]; float f; memcpy(&f, &u, 4); return f; }
    case ONNX_DOUBLE: { uint64_t u = 0; for (int k = 7; k >= 0; k--) u = u << 8 | b[8 * i + k]; double d; memcpy(&d, &u, 8); return d; }
    case ONNX_INT32: { uint32_t u = 0; for (int k = 3; k >= 0; k--) u = u << 8 | b[4 * i + k]; return (int32_t)u; }
    case ONNX_INT64: { uint64_t u = 0; for (int k = 7; k >= 0; k--) u = u << 8 | b[8 * i + k]; return (double)(int64_t)u; }
    default: return b[i]; /* uint8, bool */
    }
}

static int elem_size(int dtype) {
    return dtype == ONNX_FLOAT || dtype == ONNX_INT32 ? 4 : dtype == ONNX_DOUBLE || dtype == ONNX_INT64 ? 8 : 1;
}

fedc_status fedc__onnx_const_of_tensor(const Onnx__TensorProto *t, const char *what, onnx_const **out) {
    *out = NULL;
    int dtype = t->has_data_type ? t->data_type : 0;
    bool ok;
    fedc__onnx_fedc_dtype(dtype, &ok);
    if (!ok) return fedc_error(FEDC_EUNSUPPORTED, "%s: tensor '%s' has ONNX data type %d, which fedc does not read", what, str(t->name), dtype);
    if (t->n_external_data || (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL))
        return fedc_error(FEDC_EUNSUPPORTED, "%s: tensor '%s' keeps its data in an external file (export with the weights inside)", what, str(t->name));
    if (t->n_dims > FEDC_MAX_RANK) return fedc_error(FEDC_EUNSUPPORTED, "%s: tensor '%s' has rank %zu, over fedc's %d", what, str(t->name), t->n_dims, FEDC_MAX_RANK);
    onnx_const *c = fedc__onnx_const_new(dtype, (int)t->n_dims, t->dims);
    if (!c) {
        char why[256];
        snprintf(why, sizeof why, "%s", fedc_errmsg());
        return fedc_error(FEDC_ERANGE, "%s: tensor '%s': %s", what, str(t->name), why);
    }
    size_t n = (size_t)c->count;
    size_t given = t->has_raw_data ? t->raw_data.len / (size_t)elem_size(dtype)
                 : dtype == ONNX_FLOAT ? t->n_float_data : dtype == ONNX_DOUBLE ? t->n_double_data
                 : dtype == ONNX_INT64 ? t->n_int64_data : t->n_int32_data;
    if (given != n || (t->has_raw_data && t->raw_data.len != n * (size_t)elem_size(dtype))) {
        fedc__onnx_const_free(c);
        return fedc_error(FEDC_EPARSE, "%s: tensor '%s' has %zu values for its %lld elements", what, str(t->name), given, (long long)n);
    }
    for (size_t i = 0; i < n; i++)
        c->data[i] = t->has_raw_data ? raw_value(t->raw_data.data, dtype, (int64_t)i)
                   : dtype == ONNX_FLOAT ? t->float_data[i] : dtype == ONNX_DOUBLE ? t->double_data[i]
                   : dtype == ONNX_INT64 ? (double)t->int64_data[i] : t->int32_data[i];
    *out = c;
    return FEDC_OK;
}

const onnx_const *fedc__onnx_const_in(onnx_import *im, int k, const char *what) {
    onnx_entry *e = fedc__onnx_in(im, k);
    if (!e) return NULL;
    if (!e->k) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "its %s ('%s') must be known at import (fedc's shapes are static)", what, e->name), NULL;
    return e->k;
}

int fedc__onnx_shape_in(onnx_import *im, int k, int64_t *dims) {
    const onnx_const *shape = fedc__onnx_const_in(im, k, "shape");
    if (!shape) return -1;
    if (shape->dtype == ONNX_FLOAT || shape->dtype == ONNX_DOUBLE)
        return fedc__onnx_fail(im, FEDC_EINVAL, "its shape ('%s') is a float tensor (ONNX's shapes are int64)",
                               im->node->input[k]), -1;
    if (shape->rank != 1 || shape->count > FEDC_MAX_RANK)
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "a shape of %lld values (fedc's rank is at most %d)",
                               (long long)shape->count, FEDC_MAX_RANK), -1;
    for (int64_t i = 0; i < shape->count; i++) dims[i] = fedc__onnx_i64(shape->data[i]);
    return (int)shape->count;
}

/* --------------------------------------------------------- attributes -- */

const Onnx__AttributeProto *fedc__onnx_attr(const onnx_import *im, const char *name) {
    for (size_t i = 0; i < im->node->n_attribute; i++)
        if (!strcmp(str(im->node->attribute[i]->name), name)) return im->node->attribute[i];
    return NULL;
}

int64_t fedc__onnx_attr_int(const onnx_import *im, const char *name, int64_t dflt) {
    const Onnx__AttributeProto *a = fedc__onnx_attr(im, name);
    return a && a->has_i ? a->i : dflt;
}

double fedc__onnx_attr_float(const onnx_import *im, const char *name, double dflt) {
    const Onnx__AttributeProto *a = fedc__onnx_attr(im, name);
    return a && a->has_f ? a->f : dflt;
}

int fedc__onnx_attr_ints(onnx_import *im, const char *name, int64_t *out, int max) {
    const Onnx__AttributeProto *a = fedc__onnx_attr(im, name);
    if (!a) return -1;
    if (a->n_ints > (size_t)max) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "%s has %zu values (at most %d)", name, a->n_ints, max), -2;
    if (a->n_ints) memcpy(out, a->ints, a->n_ints * sizeof *out);
    return (int)a->n_ints;
}

const char *fedc__onnx_attr_string(const onnx_import *im, const char *name, const char *dflt, char *buf, size_t size) {
    const Onnx__AttributeProto *a = fedc__onnx_attr(im, name);
    if (!a || !a->has_s) return dflt;
    size_t n = a->s.len < size - 1 ? a->s.len : size - 1;
    if (n) memcpy(buf, a->s.data, n);
    buf[n] = '\0';
    return buf;
}

fedc_status fedc__onnx_known_attrs(onnx_import *im, const char *known) {
    for (size_t i = 0; i < im->node->n_attribute; i++) {
        const char *name = str(im->node->attribute[i]->name);
        size_t n = strlen(name);
        bool found = false;
        for (const char *k = known; *k && !found; k += strcspn(k, ",") + (k[strcspn(k, ",")] == ',')) {
            size_t len = strcspn(k, ",");
            found = len == n && !strncmp(k, name, n);
        }
        if (!found) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "attribute '%s' is not supported", name);
    }
    return FEDC_OK;
}

fedc_status fedc__onnx_axis(onnx_import *im, int64_t axis, int rank, int *out) {
    if (axis < -rank || axis >= rank) return fedc__onnx_fail(im, FEDC_EINVAL, "axis %lld is out of range for rank %d", (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return FEDC_OK;
}
