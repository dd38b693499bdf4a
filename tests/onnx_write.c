/* ONNX models built through protobuf-c (onnx_write.h). */
#include "onnx_write.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void *own(onnx_writer *w, void *p) {
    if (p && w->nowned < (int)(sizeof w->owned / sizeof *w->owned)) w->owned[w->nowned++] = p;
    return p;
}

static void *zalloc(onnx_writer *w, size_t n) { return own(w, calloc(1, n ? n : 1)); }

static char *dup(onnx_writer *w, const char *s) {
    char *c = zalloc(w, strlen(s) + 1);
    if (c) strcpy(c, s);
    return c;
}

void ow_init(onnx_writer *w) {
    memset(w, 0, sizeof *w);
    onnx__graph_proto__init(&w->graph);
    w->graph.name = "test";
    w->graph.node = w->nodes;
    w->graph.initializer = w->inits;
    w->graph.input = w->inputs;
    w->graph.output = w->outputs;
}

void ow_free(onnx_writer *w) {
    for (int i = 0; i < w->nowned; i++) free(w->owned[i]);
    w->nowned = 0;
}

static Onnx__ValueInfoProto *value_info(onnx_writer *w, const char *name) {
    Onnx__ValueInfoProto *vi = zalloc(w, sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = dup(w, name);
    return vi;
}

void ow_input(onnx_writer *w, const char *name, int elem, int rank, const int64_t *dims) {
    Onnx__ValueInfoProto *vi = value_info(w, name);
    Onnx__TypeProto *tp = zalloc(w, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = zalloc(w, sizeof *tt);
    Onnx__TensorShapeProto *shape = zalloc(w, sizeof *shape);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(shape);
    shape->n_dim = (size_t)rank;
    shape->dim = zalloc(w, (size_t)rank * sizeof *shape->dim);
    for (int i = 0; i < rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = zalloc(w, sizeof *d);
        onnx__tensor_shape_proto__dimension__init(d);
        if (dims[i] < 0) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = dup(w, "batch");
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = dims[i];
        }
        shape->dim[i] = d;
    }
    tt->has_elem_type = 1, tt->elem_type = elem, tt->shape = shape;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, tp->tensor_type = tt;
    vi->type = tp;
    w->inputs[w->graph.n_input++] = vi;
}

void ow_output(onnx_writer *w, const char *name) { w->outputs[w->graph.n_output++] = value_info(w, name); }

static Onnx__TensorProto *tensor(onnx_writer *w, const char *name, int dtype, int rank, const int64_t *dims) {
    Onnx__TensorProto *t = zalloc(w, sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = dup(w, name);
    t->has_data_type = 1, t->data_type = dtype;
    t->n_dims = (size_t)rank;
    t->dims = zalloc(w, (size_t)rank * sizeof *t->dims);
    if (rank) memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
    return t;
}

static size_t count_of(int rank, const int64_t *dims) {
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
    return n;
}

void ow_init_f32(onnx_writer *w, const char *name, int rank, const int64_t *dims, const float *data) {
    Onnx__TensorProto *t = tensor(w, name, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, rank, dims);
    size_t n = count_of(rank, dims);
    uint8_t *raw = zalloc(w, 4 * n);
    for (size_t i = 0; i < n; i++) { /* little-endian, as ONNX stores raw_data */
        uint32_t u;
        memcpy(&u, &data[i], 4);
        for (int k = 0; k < 4; k++) raw[4 * i + (size_t)k] = (uint8_t)(u >> (8 * k));
    }
    t->has_raw_data = 1, t->raw_data.len = 4 * n, t->raw_data.data = raw;
    w->inits[w->graph.n_initializer++] = t;
}

static Onnx__TensorProto *tensor_i64(onnx_writer *w, const char *name, int rank, const int64_t *dims, const int64_t *data) {
    Onnx__TensorProto *t = tensor(w, name, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, rank, dims);
    size_t n = count_of(rank, dims);
    t->n_int64_data = n;
    t->int64_data = zalloc(w, n * sizeof *t->int64_data);
    memcpy(t->int64_data, data, n * sizeof *data);
    return t;
}

void ow_init_i64(onnx_writer *w, const char *name, int rank, const int64_t *dims, const int64_t *data) {
    w->inits[w->graph.n_initializer++] = tensor_i64(w, name, rank, dims, data);
}

static Onnx__AttributeProto *attr(onnx_writer *w, const char *name, Onnx__AttributeProto__AttributeType type) {
    Onnx__AttributeProto *a = zalloc(w, sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = dup(w, name);
    a->has_type = 1, a->type = type;
    return a;
}

Onnx__AttributeProto *ow_int(onnx_writer *w, const char *name, int64_t v) {
    Onnx__AttributeProto *a = attr(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    a->has_i = 1, a->i = v;
    return a;
}

Onnx__AttributeProto *ow_float(onnx_writer *w, const char *name, float v) {
    Onnx__AttributeProto *a = attr(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    a->has_f = 1, a->f = v;
    return a;
}

Onnx__AttributeProto *ow_ints(onnx_writer *w, const char *name, int n, const int64_t *v) {
    Onnx__AttributeProto *a = attr(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    a->n_ints = (size_t)n;
    a->ints = zalloc(w, (size_t)n * sizeof *a->ints);
    memcpy(a->ints, v, (size_t)n * sizeof *v);
    return a;
}

Onnx__AttributeProto *ow_tensor_i64(onnx_writer *w, const char *name, int rank, const int64_t *dims, const int64_t *data) {
    Onnx__AttributeProto *a = attr(w, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    a->t = tensor_i64(w, "", rank, dims, data);
    return a;
}

/* "a,,b" -> {"a", "", "b"} */
static char **names(onnx_writer *w, const char *list, size_t *n) {
    *n = 0;
    if (!list[0]) return NULL;
    size_t count = 1;
    for (const char *c = list; *c; c++) count += *c == ',';
    char **v = zalloc(w, count * sizeof *v);
    const char *s = list;
    for (size_t i = 0; i < count; i++) {
        size_t len = strcspn(s, ",");
        v[i] = zalloc(w, len + 1);
        memcpy(v[i], s, len);
        s += len + (s[len] == ',');
    }
    *n = count;
    return v;
}

void ow_node(onnx_writer *w, const char *op, const char *name, const char *inputs, const char *outputs, int nattrs, ...) {
    Onnx__NodeProto *n = zalloc(w, sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = dup(w, op);
    n->name = dup(w, name);
    n->input = names(w, inputs, &n->n_input);
    n->output = names(w, outputs, &n->n_output);
    n->attribute = zalloc(w, (size_t)nattrs * sizeof *n->attribute);
    va_list ap;
    va_start(ap, nattrs);
    for (int i = 0; i < nattrs; i++) n->attribute[i] = va_arg(ap, Onnx__AttributeProto *);
    va_end(ap);
    n->n_attribute = (size_t)nattrs;
    w->nodes[w->graph.n_node++] = n;
}

uint8_t *ow_pack(onnx_writer *w, int64_t opset, size_t *size) {
    Onnx__ModelProto m;
    Onnx__OperatorSetIdProto os, *osp = &os;
    onnx__model_proto__init(&m);
    onnx__operator_set_id_proto__init(&os);
    os.domain = "", os.has_version = 1, os.version = opset;
    m.has_ir_version = 1, m.ir_version = 8;
    m.producer_name = "fedc tests";
    m.n_opset_import = 1, m.opset_import = &osp;
    m.graph = &w->graph;
    *size = onnx__model_proto__get_packed_size(&m);
    uint8_t *buf = malloc(*size ? *size : 1);
    if (buf) onnx__model_proto__pack(&m, buf);
    return buf;
}
