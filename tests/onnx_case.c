/*
 * What the ONNX builders share (onnx_case.h): reasons and notes, attribute
 * checks, and ONNX tensors as fedc inputs and expected outputs. int64 tensors
 * (indices, labels, shapes) become fedc's i32, checked to fit.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_case.h"

void onnx_unsupported(onnx_case *c, const char *fmt, ...) {
    if (c->unsupported[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->unsupported, sizeof c->unsupported, fmt, ap);
    va_end(ap);
}

void onnx_note(onnx_case *c, const char *fmt, ...) {
    size_t used = strlen(c->note);
    if (used + 3 >= sizeof c->note) return;
    if (used) used += (size_t)snprintf(c->note + used, sizeof c->note - used, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->note + used, sizeof c->note - used, fmt, ap);
    va_end(ap);
}

void onnx_bad_data(onnx_case *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", c->test);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    c->failed = true;
}

bool onnx_stop(const onnx_case *c) { return c->unsupported[0] || c->failed; }

/* Only the attributes in `known` (comma-separated) are understood; any other
 * could change the semantics, so it makes the test unsupported. */
void onnx_known_attrs(onnx_case *c, const char *known) {
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
        if (!found) onnx_unsupported(c, "attribute %s is not supported", name);
    }
}

/* ------------------------------------------------------------ tensors -- */

bool onnx_dtype_of(onnx_case *c, int onnx_dt, fedc_dtype *dt) {
    switch (onnx_dt) {
    case ONNX_FLOAT: *dt = FEDC_F32; return true;
    case ONNX_DOUBLE: *dt = FEDC_F64; return true;
    case ONNX_INT32: *dt = FEDC_I32; return true;
    case ONNX_INT64: *dt = FEDC_I32; return true; /* values range-checked */
    case ONNX_BOOL: *dt = FEDC_BOOL; return true;
    case ONNX_UINT8: *dt = FEDC_U8; return true;
    default: onnx_unsupported(c, "fedc has no dtype for ONNX data_type %d", onnx_dt); return false;
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
void onnx_permute(const onnx_tensor *t, const int *perm, onnx_tensor *y) {
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
    onnx_permute(t, id, &y);
    return y;
}

/* A fedc input holding `data` (count values of `dims`) as dtype dt. */
fedc_value onnx_input_data(onnx_case *c, fedc_dtype dt, int rank, const int64_t *dims, const double *data) {
    if (onnx_stop(c)) return FEDC_NONE;
    if (rank > FEDC_MAX_RANK) return onnx_unsupported(c, "rank %d is over fedc's %d", rank, FEDC_MAX_RANK), FEDC_NONE;
    if (c->nbinds == ONNX_CASE_MAX_BINDS) return onnx_bad_data(c, "too many inputs"), FEDC_NONE;
    fedc_type t = fedc_type_make(dt, rank, dims);
    int64_t n = fedc_type_count(&t);
    void *buf = malloc(n ? fedc_type_bytes(&t) : 1);
    if (!buf) return onnx_bad_data(c, "out of memory"), FEDC_NONE;
    for (int64_t i = 0; i < n; i++) {
        if (dt == FEDC_I32 && !(data[i] >= INT32_MIN && data[i] <= INT32_MAX)) {
            free(buf);
            return onnx_unsupported(c, "an integer (%g) does not fit fedc's i32", data[i]), FEDC_NONE;
        }
        store(buf, dt, i, data[i]);
    }
    int k = c->nbinds++;
    snprintf(c->bind_name[k], sizeof c->bind_name[k], "in%d", k);
    c->bind_data[k] = buf;
    return fedc_input(c->p, c->bind_name[k], t);
}

const onnx_tensor *onnx_need(onnx_case *c, int k) {
    if (onnx_stop(c)) return NULL;
    if (!c->in[k]) onnx_bad_data(c, "input %d is missing", k);
    return c->in[k];
}

/* ONNX input k as a fedc input of its own shape and layout. */
fedc_value onnx_arg(onnx_case *c, int k) {
    const onnx_tensor *t = onnx_need(c, k);
    fedc_dtype dt;
    if (!t || !onnx_dtype_of(c, t->data_type, &dt)) return FEDC_NONE;
    return onnx_input_data(c, dt, t->rank, t->dims, t->data);
}

/* ONNX input k, permuted on the host (NCHW images to NHWC, OIHW filters to HWIO). */
fedc_value onnx_arg_perm(onnx_case *c, int k, const int *perm) {
    const onnx_tensor *t = onnx_need(c, k);
    fedc_dtype dt;
    if (!t || !onnx_dtype_of(c, t->data_type, &dt)) return FEDC_NONE;
    onnx_tensor y;
    onnx_permute(t, perm, &y);
    fedc_value v = y.data ? onnx_input_data(c, dt, y.rank, y.dims, y.data) : FEDC_NONE;
    free(y.data);
    return v;
}

/* The values of a small integer input (shapes, axes, pads): at most `max`. */
int onnx_const_ints(onnx_case *c, int k, int64_t *out, int max) {
    const onnx_tensor *t = onnx_need(c, k);
    if (!t) return 0;
    if (t->count > max) return onnx_bad_data(c, "input %d has %lld values, over %d", k, (long long)t->count, max), 0;
    for (int64_t i = 0; i < t->count; i++) out[i] = (int64_t)t->data[i];
    return (int)t->count;
}

double onnx_const_scalar(onnx_case *c, int k, double dflt) {
    if (!c->in[k]) return dflt;
    if (c->in[k]->count != 1) return onnx_bad_data(c, "input %d is not a scalar", k), dflt;
    return c->in[k]->data[0];
}

/* The ONNX output k must equal v, after the host permutation perm (NULL: none). */
void onnx_expect_perm(onnx_case *c, int k, fedc_value v, const int *perm) {
    if (onnx_stop(c)) return;
    if (!c->out[k]) {
        onnx_bad_data(c, "output %d is missing", k);
        return;
    }
    if (c->nexpect == ONNX_CASE_MAX_EXPECT) {
        onnx_bad_data(c, "too many outputs");
        return;
    }
    onnx_expected *e = &c->expect[c->nexpect++];
    e->v = v;
    if (perm) onnx_permute(c->out[k], perm, &e->want);
    else e->want = copy_tensor(c->out[k]);
}

void onnx_expect(onnx_case *c, int k, fedc_value v) { onnx_expect_perm(c, k, v, NULL); }

/* Normalises an ONNX axis (negative counts from the end) for rank r. */
int onnx_axis_of(onnx_case *c, int64_t axis, int rank) {
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= (rank ? rank : 1)) return onnx_bad_data(c, "axis %lld out of range for rank %d", (long long)axis, rank), 0;
    return (int)axis;
}

fedc_type onnx_type_of(onnx_case *c, fedc_value v) { return fedc_value_type(c->p, v); }

/* The permutation that moves axis a of a rank-r value last, and its inverse. */
void onnx_axis_last(int a, int r, int *perm, int *inverse) {
    int k = 0;
    for (int i = 0; i < r; i++)
        if (i != a) perm[k++] = i;
    perm[r - 1] = a;
    for (int i = 0; i < r; i++) inverse[perm[i]] = i;
}

/* ------------------------------------------------------------ lookup -- */

onnx_build_fn onnx_builder(const char *op_type) {
    const onnx_builder_entry *tables[2] = {onnx_builders_basic, onnx_builders_nn};
    for (int t = 0; t < 2; t++)
        for (const onnx_builder_entry *e = tables[t]; e->op_type; e++)
            if (!strcmp(e->op_type, op_type)) return e->build;
    return NULL;
}
