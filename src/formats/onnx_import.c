/* ONNX -> fedc program (fedc/formats.h, docs/onnx.md): the model decoded by
 * protobuf-c with the C code of ONNX's own onnx.proto, then its graph walked in
 * order: the graph's inputs become program inputs, the float initializers the
 * "params/..." inputs, each node one translator of onnx_ops*.c, the graph's
 * outputs the program's outputs.
 *
 * The file comes from outside, so nothing in it is trusted: protobuf-c checks the
 * wire format (lengths, varints, wire types), nesting is bounded before it runs
 * (its decoder recurses once per nested message), tensor data must match its
 * dims, and every name a node reads must have been defined before it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "formats/onnx_import.h"

/* ONNX's opsets that the translators follow (torch.onnx.export's range). */
#define MIN_OPSET 13
#define MAX_OPSET 18
/* Nesting of messages in a model: ONNX's own is a handful deep (a graph in an
 * attribute of a node of a graph ...); far more is an attack on the stack. */
#define MAX_DEPTH 32
#define MAX_FILE_BYTES ((size_t)2 << 30)
/* A graph input's dimension: far beyond any model, far below int64's overflow in
 * the window arithmetic of the translators. */
#define MAX_DIM ((int64_t)1 << 40)

/* ------------------------------------------------ the nesting bound -- */

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* Whether the message of descriptor d in [p, end) nests at most `depth` more
 * messages deep. Malformed bytes end the walk quietly: protobuf-c rejects them. */
static bool shallow(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, int depth) {
    while (p < end) {
        uint64_t key, len;
        if (!read_varint(&p, end, &key)) return true;
        switch (key & 7) {
        case 0: if (!read_varint(&p, end, &len)) return true; break;
        case 1: p += end - p < 8 ? end - p : 8; break;
        case 5: p += end - p < 4 ? end - p : 4; break;
        case 2: {
            if (!read_varint(&p, end, &len) || len > (uint64_t)(end - p)) return true;
            const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3));
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                (depth == 0 || !shallow(f->descriptor, p, p + len, depth - 1)))
                return false;
            p += len;
            break;
        }
        default: return true;
        }
    }
    return true;
}

/* ----------------------------------------------------- the graph's ends -- */

static fedc_status add_input(onnx_import *im, const Onnx__ValueInfoProto *vi, int64_t batch) {
    const char *name = vi->name ? vi->name : "";
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type || !tp->tensor_type->shape)
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "graph input '%s' is not a tensor of known rank", name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    bool ok;
    fedc_dtype dt = fedc__onnx_fedc_dtype(tt->elem_type, &ok);
    if (!ok) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "graph input '%s' has ONNX data type %d", name, tt->elem_type);
    if (tt->shape->n_dim > FEDC_MAX_RANK)
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "graph input '%s' has rank %zu, over fedc's %d", name, tt->shape->n_dim, FEDC_MAX_RANK);
    int64_t dims[FEDC_MAX_RANK];
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        dims[i] = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ? d->dim_value : batch;
        if (dims[i] < 0 || dims[i] > MAX_DIM)
            return fedc__onnx_fail(im, FEDC_EINVAL, "graph input '%s' has dimension %lld", name, (long long)dims[i]);
    }
    onnx_entry *e = fedc__onnx_define(im, name);
    if (!e) return FEDC_ENOMEM;
    e->v = fedc_input(im->p, name, fedc_type_make(dt, (int)tt->shape->n_dim, dims));
    return fedc_program_status(im->p);
}

static bool is_initializer(const Onnx__GraphProto *g, const char *name) {
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name)) return true;
    return false;
}

/* A float initializer as the parameter input "params/<name>", its values kept in
 * m->param_values; any other, one only needed known at import (onnx_known.c), or
 * every one when frozen, as a constant. */
static fedc_status add_initializer(onnx_import *im, const Onnx__TensorProto *t, bool constant, fedc_onnx_model *m) {
    onnx_const *c;
    fedc_status st = fedc__onnx_const_of_tensor(t, im->what, &c);
    if (st) return st;
    const char *name = t->name ? t->name : "";
    onnx_entry *e = fedc__onnx_define(im, name);
    if (!e) return fedc__onnx_const_free(c), FEDC_ENOMEM;
    if (constant || (c->dtype != ONNX_FLOAT && c->dtype != ONNX_DOUBLE)) {
        e->k = c;
        return FEDC_OK;
    }
    fedc_type type = fedc_type_make(c->dtype == ONNX_FLOAT ? FEDC_F32 : FEDC_F64, c->rank, c->dims);
    size_t nlen = strlen(name);
    char *input = fedc_malloc(nlen + 8), *pname = fedc_malloc(nlen + 1);
    void *data = fedc_malloc(c->count ? fedc_type_bytes(&type) : 1);
    if (!input || !pname || !data) {
        fedc_free(input), fedc_free(pname), fedc_free(data), fedc__onnx_const_free(c);
        return fedc__onnx_fail(im, FEDC_ENOMEM, "out of memory");
    }
    for (int64_t i = 0; i < c->count; i++) {
        if (type.dtype == FEDC_F32) ((float *)data)[i] = (float)c->data[i];
        else ((double *)data)[i] = c->data[i];
    }
    fedc__onnx_const_free(c);
    memcpy(pname, name, nlen + 1);
    snprintf(input, nlen + 8, "params/%s", name);
    m->param_values[m->num_params++] = (fedc_tensor_entry){.name = pname, .type = type, .data = data};
    e->v = fedc_input(im->p, input, type);
    fedc_free(input);
    return fedc_program_status(im->p);
}

fedc_status fedc__onnx_add_update(onnx_import *im, const char *param, fedc_value v) {
    for (int i = 0; i < im->nupdates; i++)
        if (!strcmp(im->updates[i].param, param))
            return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "%s is updated by two nodes", param);
    if (im->nupdates == im->updates_cap) {
        int cap = im->updates_cap ? 2 * im->updates_cap : 8;
        onnx_update *u = fedc_realloc(im->updates, (size_t)cap * sizeof *u);
        if (!u) return fedc__onnx_fail(im, FEDC_ENOMEM, "out of memory");
        im->updates = u, im->updates_cap = cap;
    }
    im->updates[im->nupdates++] = (onnx_update){.param = param, .v = v};
    return FEDC_OK;
}

/* The training form's updates, after the graph's outputs (the first is the logits). */
static fedc_status add_updates(onnx_import *im) {
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < im->nupdates; i++) {
        size_t len = strlen(im->updates[i].param) + 8;
        char *name = fedc_malloc(len);
        if (!name) return fedc__onnx_fail(im, FEDC_ENOMEM, "out of memory");
        snprintf(name, len, "update/%s", im->updates[i].param);
        st = fedc_program_output(im->p, name, im->updates[i].v);
        fedc_free(name);
    }
    return st;
}

static fedc_status add_output(onnx_import *im, const Onnx__ValueInfoProto *vi) {
    const char *name = vi->name ? vi->name : "";
    onnx_entry *e = fedc__onnx_find(im, name);
    if (!e) return fedc__onnx_fail(im, FEDC_EINVAL, "graph output '%s' is computed by no node", name);
    fedc_value v = fedc__onnx_value(im, e, FEDC_NONE);
    return v == FEDC_NONE ? fedc_program_status(im->p) : fedc_program_output(im->p, name, v);
}

/* ------------------------------------------------------------ the nodes -- */

static onnx_op_fn op_of(const char *op_type) {
    const onnx_op_entry *tables[] = {fedc__onnx_ops_basic, fedc__onnx_ops_shape, fedc__onnx_ops_nn, fedc__onnx_ops_rnn};
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (const onnx_op_entry *e = tables[t]; e->op_type; e++)
            if (!strcmp(e->op_type, op_type)) return e->fn;
    return NULL;
}

static fedc_status add_node(onnx_import *im, const Onnx__NodeProto *n) {
    im->node = n;
    const char *domain = n->domain ? n->domain : "";
    if (domain[0] && strcmp(domain, "ai.onnx"))
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "domain '%s' is not ONNX's own (fedc imports ai.onnx ops)", domain);
    onnx_op_fn fn = op_of(n->op_type ? n->op_type : "");
    if (!fn) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "fedc does not import the op %s", n->op_type ? n->op_type : "(none)");
    fedc_status st = fn(im);
    if (!st && fedc_program_status(im->p)) st = fedc_program_status(im->p);
    if (st && im->p && fedc_program_status(im->p) == st) {
        char why[512];
        snprintf(why, sizeof why, "%s", fedc_errmsg());
        return fedc__onnx_fail(im, st, "%s", why);
    }
    return st;
}

static int64_t default_opset(const Onnx__ModelProto *m) {
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain ? m->opset_import[i]->domain : "";
        if (!d[0] || !strcmp(d, "ai.onnx")) return m->opset_import[i]->has_version ? m->opset_import[i]->version : 0;
    }
    return 0;
}

static fedc_status import_graph(onnx_import *im, const Onnx__GraphProto *g, const fedc_onnx_options *o,
                                fedc_onnx_model *m) {
    fedc_status st = FEDC_OK;
    for (size_t i = 0; !st && i < g->n_input; i++)
        if (!is_initializer(g, g->input[i]->name ? g->input[i]->name : "")) st = add_input(im, g->input[i], o->batch ? o->batch : 1);
    bool *known = fedc_calloc(g->n_initializer + 1, sizeof *known);
    if (!known) st = fedc__onnx_fail(im, FEDC_ENOMEM, "out of memory");
    if (!st) st = fedc__onnx_known_initializers(g, known);
    for (size_t i = 0; !st && i < g->n_initializer; i++) st = add_initializer(im, g->initializer[i], o->frozen || known[i], m);
    fedc_free(known);
    if (!st && g->n_sparse_initializer) st = fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "sparse initializers are not supported");
    if (!st && im->batchnorm != FEDC_ONNX_BATCHNORM_INFERENCE) {
        int64_t batch = o->batch ? o->batch : 1;
        im->mask = fedc_input(im->p, "mask", fedc_type_make(FEDC_F32, 1, &batch));
        st = fedc_program_status(im->p);
    }
    for (size_t i = 0; !st && i < g->n_node; i++) st = add_node(im, g->node[i]);
    im->node = NULL;
    if (!st && !g->n_output) st = fedc__onnx_fail(im, FEDC_EINVAL, "the graph has no output");
    for (size_t i = 0; !st && i < g->n_output; i++) st = add_output(im, g->output[i]);
    if (!st) st = add_updates(im);
    if (!st) st = fedc_program_dce(im->p);
    if (!st) st = fedc_program_verify(im->p);
    return st;
}

/* The parameter inputs as a tree, by initializer name (after dce renumbered). */
static fedc_status params_tree(fedc_onnx_model *m) {
    m->params = fedc_tree_new(m->program);
    char input[512];
    for (int i = 0; m->params && i < m->num_params; i++) {
        snprintf(input, sizeof input, "params/%s", m->param_values[i].name);
        fedc_tree_set(m->program, m->params, m->param_values[i].name, fedc_program_find_input(m->program, input));
    }
    return fedc_program_status(m->program);
}

void fedc_onnx_model_destroy(fedc_onnx_model *m) {
    if (!m) return;
    for (int i = 0; i < m->num_params; i++) {
        fedc_free((void *)m->param_values[i].name);
        fedc_free((void *)m->param_values[i].data);
    }
    fedc_free(m->param_values);
    fedc_free(m->param_batchnorm);
    fedc_program_destroy(m->program);
    fedc_free(m);
}

/* Which parameters a BatchNormalization node reads as its scale, B, mean or var
 * (inputs 1 to 4): FedBN keeps them per client. */
static fedc_status mark_batchnorm(const Onnx__GraphProto *g, fedc_onnx_model *m) {
    m->param_batchnorm = fedc_calloc((size_t)m->num_params + 1, sizeof *m->param_batchnorm);
    if (!m->param_batchnorm) return fedc_error(FEDC_ENOMEM, "ONNX import: out of memory");
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (!n->op_type || strcmp(n->op_type, "BatchNormalization")) continue;
        for (size_t k = 1; k < n->n_input && k <= 4; k++)
            for (int j = 0; j < m->num_params; j++)
                if (n->input[k] && !strcmp(n->input[k], m->param_values[j].name)) m->param_batchnorm[j] = true;
    }
    return FEDC_OK;
}

static fedc_status import_model(const Onnx__ModelProto *mp, onnx_import *im, const fedc_onnx_options *o,
                                fedc_onnx_model *m) {
    if (!mp->graph) return fedc__onnx_fail(im, FEDC_EPARSE, "the model has no graph");
    im->opset = m->opset = default_opset(mp);
    if (im->opset < MIN_OPSET || im->opset > MAX_OPSET)
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "opset %lld of the default domain: fedc imports opsets %d to %d "
                               "(torch.onnx.export(..., opset_version=17))", (long long)im->opset, MIN_OPSET, MAX_OPSET);
    m->param_values = fedc_calloc(mp->graph->n_initializer + 1, sizeof *m->param_values);
    fedc_status st = m->param_values ? fedc_program_create(&m->program) : FEDC_ENOMEM;
    if (st) return st;
    im->p = m->program;
    st = import_graph(im, mp->graph, o, m);
    if (!st) st = mark_batchnorm(mp->graph, m);
    return st ? st : params_tree(m);
}

fedc_status fedc_program_from_onnx_bytes(const void *bytes, size_t size, const char *what,
                                         const fedc_onnx_options *options, fedc_onnx_model **out) {
    if (!out) return fedc_error(FEDC_EINVAL, "fedc_program_from_onnx: out is NULL");
    *out = NULL;
    if (!what) what = "ONNX model";
    if (!bytes && size) return fedc_error(FEDC_EINVAL, "%s: no bytes", what);
    fedc_onnx_options o = options ? *options : (fedc_onnx_options){0};
    if (o.batch < 0) return fedc_error(FEDC_EINVAL, "%s: batch %lld is negative", what, (long long)o.batch);
    if ((unsigned)o.batchnorm > FEDC_ONNX_BATCHNORM_FROZEN)
        return fedc_error(FEDC_EINVAL, "%s: batchnorm %d is none of fedc_onnx_batchnorm's", what, (int)o.batchnorm);
    if (o.frozen && o.batchnorm != FEDC_ONNX_BATCHNORM_INFERENCE)
        return fedc_error(FEDC_EINVAL, "%s: a program to train (batchnorm not INFERENCE) needs the running statistics as "
                          "parameters, which frozen makes constants", what);
    Onnx__ModelProto *mp;
    fedc_status st = fedc__onnx_unpack(bytes, size, what, &mp);
    if (st) return st;
    fedc_onnx_model *m = fedc_calloc(1, sizeof *m);
    onnx_import im = {.what = what, .batchnorm = o.batchnorm, .mask = FEDC_NONE};
    st = m ? import_model(mp, &im, &o, m) : fedc_error(FEDC_ENOMEM, "%s: out of memory", what);
    for (int i = 0; i < im.n; i++) fedc__onnx_const_free(im.entries[i].k);
    fedc_free(im.entries);
    fedc_free(im.updates);
    onnx__model_proto__free_unpacked(mp, NULL);
    if (st) {
        fedc_onnx_model_destroy(m);
        return st;
    }
    *out = m;
    return FEDC_OK;
}

fedc_status fedc__onnx_unpack(const void *bytes, size_t size, const char *what, Onnx__ModelProto **out) {
    *out = NULL;
    if (!shallow(&onnx__model_proto__descriptor, bytes, (const uint8_t *)bytes + size, MAX_DEPTH))
        return fedc_error(FEDC_EPARSE, "%s: messages nested more than %d deep: not an ONNX model", what, MAX_DEPTH);
    *out = onnx__model_proto__unpack(NULL, size, bytes);
    if (!*out) return fedc_error(FEDC_EPARSE, "%s: not an ONNX model (protobuf-c cannot decode it as onnx.ModelProto)", what);
    return FEDC_OK;
}

fedc_status fedc__onnx_read_file(const char *path, uint8_t **out, size_t *size) {
    *out = NULL, *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    fedc_status st = FEDC_OK;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? 2 * cap : 1 << 16;
            uint8_t *nb = ncap <= MAX_FILE_BYTES ? fedc_realloc(buf, ncap) : NULL;
            if (!nb) {
                st = fedc_error(ncap > MAX_FILE_BYTES ? FEDC_ERANGE : FEDC_ENOMEM, "%s: too large to read (%zu bytes and more)", path, len);
                break;
            }
            buf = nb, cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) st = fedc_error(FEDC_EIO, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (st) {
        fedc_free(buf);
        return st;
    }
    *out = buf, *size = len;
    return FEDC_OK;
}

fedc_status fedc_program_from_onnx(const char *path, const fedc_onnx_options *options, fedc_onnx_model **out) {
    if (!out) return fedc_error(FEDC_EINVAL, "fedc_program_from_onnx: out is NULL");
    *out = NULL;
    if (!path) return fedc_error(FEDC_EINVAL, "fedc_program_from_onnx: path is NULL");
    uint8_t *buf;
    size_t len;
    fedc_status st = fedc__onnx_read_file(path, &buf, &len);
    if (!st) st = fedc_program_from_onnx_bytes(buf, len, path, options, out);
    fedc_free(buf);
    return st;
}
