/* Trained parameters written back into an ONNX model (fedc/formats.h,
 * fedc_onnx_write_params; docs/onnx.md): the model is decoded as the importer
 * decodes it, each float initializer's data replaced by the tensor of the same
 * name (as raw_data, the form torch.onnx.export writes), and the model packed
 * again. Everything else (the graph, opsets, metadata, fields this onnx.proto
 * does not know) is kept as it was, so the file runs where the original ran.
 *
 * The decoded message's own fields are restored before it is freed: protobuf-c
 * frees them with its allocator, and the replacements are not its. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "formats/onnx_import.h"

/* The saved fields of one replaced initializer. */
typedef struct saved {
    Onnx__TensorProto *t;
    ProtobufCBinaryData raw;
    protobuf_c_boolean has_raw;
    size_t n_float, n_double;
} saved;

static const fedc_tensor_entry *param_named(const fedc_tensor_entry *params, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (params[i].name && !strcmp(params[i].name, name)) return &params[i];
    return NULL;
}

/* e must be t's type and shape: a parameter of this model, not of another. */
static fedc_status check_like(const Onnx__TensorProto *t, const fedc_tensor_entry *e, const char *what) {
    fedc_dtype want = t->data_type == ONNX_FLOAT ? FEDC_F32 : FEDC_F64;
    bool same = e->type.dtype == want && e->type.rank == (int)t->n_dims && e->data;
    for (size_t i = 0; same && i < t->n_dims; i++) same = e->type.dims[i] == t->dims[i];
    if (same) return FEDC_OK;
    char got[64];
    return fedc_error(FEDC_ESHAPE, "%s: parameter %s is %s, but the model's initializer is %s of %zu dimensions", what,
                      e->name, fedc_type_str(&e->type, got, sizeof got), want == FEDC_F32 ? "f32" : "f64", t->n_dims);
}

static bool is_param(const Onnx__TensorProto *t) { return t->data_type == ONNX_FLOAT || t->data_type == ONNX_DOUBLE; }

/* Whether the graph has a float initializer called name. */
static bool has_param(const Onnx__GraphProto *g, const char *name) {
    for (size_t k = 0; k < g->n_initializer; k++)
        if (is_param(g->initializer[k]) && g->initializer[k]->name && !strcmp(g->initializer[k]->name, name)) return true;
    return false;
}

/* Points each float initializer at its new values (saving what it had). Every
 * one must be given, and nothing else: values of another model are refused. */
static fedc_status replace(Onnx__GraphProto *g, const fedc_tensor_entry *params, int n, const char *what, saved *s,
                           int *nsaved) {
    for (int i = 0; i < n; i++)
        if (!params[i].name || !has_param(g, params[i].name))
            return fedc_error(FEDC_ENOTFOUND, "%s: the model has no float initializer %s", what,
                              params[i].name ? params[i].name : "(null)");
    for (size_t i = 0; i < g->n_initializer; i++) {
        Onnx__TensorProto *t = g->initializer[i];
        if (!is_param(t)) continue; /* integer initializers are constants, not parameters */
        const char *name = t->name ? t->name : "";
        const fedc_tensor_entry *e = param_named(params, n, name);
        if (!e) return fedc_error(FEDC_ENOTFOUND, "%s: no value is given for the model's parameter %s", what, name);
        fedc_status st = check_like(t, e, what);
        if (st) return st;
        s[(*nsaved)++] = (saved){t, t->raw_data, t->has_raw_data, t->n_float_data, t->n_double_data};
        t->raw_data = (ProtobufCBinaryData){.len = fedc_type_bytes(&e->type), .data = (uint8_t *)e->data};
        t->has_raw_data = true, t->n_float_data = 0, t->n_double_data = 0;
    }
    return FEDC_OK;
}

static void restore(saved *s, int n) {
    for (int i = 0; i < n; i++) {
        s[i].t->raw_data = s[i].raw, s[i].t->has_raw_data = s[i].has_raw;
        s[i].t->n_float_data = s[i].n_float, s[i].t->n_double_data = s[i].n_double;
    }
}

/* bytes to `out` under a temporary name, then renamed: a reader never sees half a model. */
static fedc_status write_file(const char *out, const uint8_t *bytes, size_t size) {
    size_t len = strlen(out);
    char *tmp = fedc_malloc(len + 5);
    if (!tmp) return fedc_error(FEDC_ENOMEM, "%s: out of memory", out);
    snprintf(tmp, len + 5, "%s.tmp", out);
    FILE *f = fopen(tmp, "wb");
    fedc_status st = FEDC_OK;
    if (!f) st = fedc_error(FEDC_EIO, "%s: cannot write: %s", tmp, strerror(errno));
    else {
        bool ok = fwrite(bytes, 1, size, f) == size;
        ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp, out) != 0) {
            st = fedc_error(FEDC_EIO, "%s: cannot write: %s", out, strerror(errno));
            remove(tmp);
        }
    }
    fedc_free(tmp);
    return st;
}

static fedc_status pack_to(const Onnx__ModelProto *mp, const char *out) {
    size_t size = onnx__model_proto__get_packed_size(mp);
    uint8_t *bytes = fedc_malloc(size ? size : 1);
    if (!bytes) return fedc_error(FEDC_ENOMEM, "%s: out of memory for %zu bytes", out, size);
    onnx__model_proto__pack(mp, bytes);
    fedc_status st = write_file(out, bytes, size);
    fedc_free(bytes);
    return st;
}

fedc_status fedc_onnx_write_params(const char *path, const char *out, const fedc_tensor_entry *params, int n) {
    if (!path || !out || n < 0 || (n && !params))
        return fedc_error(FEDC_EINVAL, "fedc_onnx_write_params: a path or the parameters are missing");
    uint8_t *bytes;
    size_t size;
    fedc_status st = fedc__onnx_read_file(path, &bytes, &size);
    if (st) return st;
    Onnx__ModelProto *mp = NULL;
    st = fedc__onnx_unpack(bytes, size, path, &mp);
    if (!st && !mp->graph) st = fedc_error(FEDC_EPARSE, "%s: the model has no graph", path);
    saved *s = st ? NULL : fedc_calloc(mp->graph->n_initializer + 1, sizeof *s);
    if (!st && !s) st = fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    int nsaved = 0;
    if (!st) st = replace(mp->graph, params, n, path, s, &nsaved);
    if (!st) st = pack_to(mp, out);
    if (s) restore(s, nsaved);
    fedc_free(s);
    if (mp) onnx__model_proto__free_unpacked(mp, NULL);
    fedc_free(bytes);
    return st;
}
