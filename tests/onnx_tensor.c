/*
 * The protobuf wire format, as far as ONNX's node tests need it. A message is a
 * sequence of (key, value) pairs; key = field << 3 | wire type; wire type 0 is a
 * varint, 1 eight little-endian bytes, 2 a varint length then that many bytes
 * (strings, sub-messages, packed repeated scalars), 5 four bytes. Unknown fields
 * are skipped, as protobuf does; groups (3, 4) are obsolete and rejected. A
 * repeated scalar may come packed (wire type 2) or one per key; both are read.
 */
#include "onnx_tensor.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pb {
    const uint8_t *p, *end;
    const uint8_t *base; /* start of the whole buffer, for offsets in messages */
    char *err;
    size_t errsize;
} pb;

typedef struct pb_field {
    uint32_t number;
    int wire;
    uint64_t u;             /* wire types 0, 1, 5 */
    const uint8_t *data;    /* wire type 2 */
    size_t len;
    size_t offset;          /* of the key, from the start of the buffer */
} pb_field;

static int fail(pb *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(pb *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (r->err && r->errsize) vsnprintf(r->err, r->errsize, fmt, ap);
    va_end(ap);
    return -1;
}

static size_t offset(const pb *r) { return (size_t)(r->p - r->base); }

static pb sub(const pb *r, const pb_field *f) {
    pb s = *r;
    s.p = f->data;
    s.end = f->data + f->len;
    return s;
}

/* At most 10 bytes; the 10th may only hold the top bit of a 64-bit value. */
static int read_varint(pb *r, uint64_t *out) {
    uint64_t v = 0;
    size_t at = offset(r);
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->p >= r->end) return fail(r, "truncated varint at byte %zu", at);
        uint8_t b = *r->p++;
        if (shift == 63 && (b & 0x7e)) return fail(r, "varint at byte %zu overflows 64 bits", at);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return fail(r, "varint at byte %zu is longer than 10 bytes", at);
}

static uint64_t little_endian(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The next field, or 1 at the end of the message. */
static int next_field(pb *r, pb_field *f) {
    if (r->p >= r->end) return 1;
    f->offset = offset(r);
    uint64_t key;
    if (read_varint(r, &key)) return -1;
    if (key >> 3 == 0 || key >> 3 > 0x1fffffff) return fail(r, "bad field number %llu at byte %zu", (unsigned long long)(key >> 3), f->offset);
    f->number = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    size_t left;
    switch (f->wire) {
    case 0:
        return read_varint(r, &f->u);
    case 1:
    case 5: {
        int n = f->wire == 1 ? 8 : 4;
        if ((size_t)(r->end - r->p) < (size_t)n)
            return fail(r, "field %u at byte %zu: %d-byte value runs past the end", f->number, f->offset, n);
        f->u = little_endian(r->p, n);
        r->p += n;
        return 0;
    }
    case 2:
        if (read_varint(r, &f->u)) return -1;
        left = (size_t)(r->end - r->p);
        if (f->u > left)
            return fail(r, "field %u at byte %zu: length %llu runs past the end (%zu bytes left)", f->number, f->offset,
                        (unsigned long long)f->u, left);
        f->data = r->p;
        f->len = (size_t)f->u;
        r->p += f->len;
        return 0;
    default:
        return fail(r, "field %u at byte %zu: wire type %d is not supported", f->number, f->offset, f->wire);
    }
}

static int want_wire(pb *r, const pb_field *f, int wire, const char *what) {
    if (f->wire == wire) return 0;
    return fail(r, "%s (field %u) at byte %zu has wire type %d, expected %d", what, f->number, f->offset, f->wire, wire);
}

static int copy_name(pb *r, const pb_field *f, char *dst, const char *what) {
    if (want_wire(r, f, 2, what)) return -1;
    if (f->len >= ONNX_NAME) return fail(r, "%s at byte %zu is %zu bytes long, over %d", what, f->offset, f->len, ONNX_NAME - 1);
    if (memchr(f->data, 0, f->len)) return fail(r, "%s at byte %zu holds a NUL byte", what, f->offset);
    memcpy(dst, f->data, f->len);
    dst[f->len] = 0;
    return 0;
}

/* ------------------------------------------------- repeated scalar values -- */

typedef struct vec {
    uint64_t *v;
    size_t n, cap;
} vec;

static int vec_push(pb *r, vec *a, uint64_t x) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        if (cap > ((size_t)1 << 28)) return fail(r, "more than %zu repeated values", a->cap);
        uint64_t *v = realloc(a->v, cap * sizeof *v);
        if (!v) return fail(r, "out of memory");
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

/* A repeated scalar field whose elements are `scalar_wire` (0, 1 or 5): one
 * element, or a packed run of them. */
static int read_repeated(pb *r, const pb_field *f, int scalar_wire, vec *a, const char *what) {
    if (f->wire == scalar_wire) return vec_push(r, a, f->u);
    if (f->wire != 2) return want_wire(r, f, scalar_wire, what);
    pb s = sub(r, f);
    int width = scalar_wire == 1 ? 8 : scalar_wire == 5 ? 4 : 0;
    if (width && f->len % (size_t)width)
        return fail(r, "packed %s at byte %zu: %zu bytes is not a whole number of %d-byte values", what, f->offset, f->len,
                    width);
    while (s.p < s.end) {
        uint64_t x;
        if (width) {
            x = little_endian(s.p, width);
            s.p += width;
        } else if (read_varint(&s, &x)) {
            return -1;
        }
        if (vec_push(r, a, x)) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ TensorProto -- */

typedef struct tensor_fields {
    vec dims, floats, int32s, int64s, doubles, uint64s;
    const uint8_t *raw;
    size_t raw_len;
    int has_raw;
} tensor_fields;

static void fields_free(tensor_fields *tf) {
    free(tf->dims.v);
    free(tf->floats.v);
    free(tf->int32s.v);
    free(tf->int64s.v);
    free(tf->doubles.v);
    free(tf->uint64s.v);
}

static int elem_size(int dt) {
    switch (dt) {
    case ONNX_UINT8: case ONNX_INT8: case ONNX_BOOL: return 1;
    case ONNX_UINT16: case ONNX_INT16: return 2;
    case ONNX_FLOAT: case ONNX_INT32: case ONNX_UINT32: return 4;
    case ONNX_INT64: case ONNX_DOUBLE: case ONNX_UINT64: return 8;
    default: return 0; /* strings, float16, bfloat16, complex: not read */
    }
}

static float bits_to_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double bits_to_double(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* One element of raw_data (little-endian, as ONNX stores it). */
static double raw_value(int dt, const uint8_t *p) {
    uint64_t u = little_endian(p, elem_size(dt));
    switch (dt) {
    case ONNX_FLOAT: return bits_to_float((uint32_t)u);
    case ONNX_DOUBLE: return bits_to_double(u);
    case ONNX_INT8: return (int8_t)u;
    case ONNX_INT16: return (int16_t)u;
    case ONNX_INT32: return (int32_t)u;
    case ONNX_INT64: return (double)(int64_t)u;
    case ONNX_BOOL: return u != 0;
    default: return (double)u; /* the unsigned types */
    }
}

/* One element of the typed field for dt: int32_data carries every type of 32 bits
 * or fewer but float, as protobuf int32 varints (sign-extended to 64 bits). */
static double typed_value(int dt, uint64_t u) {
    switch (dt) {
    case ONNX_FLOAT: return bits_to_float((uint32_t)u);
    case ONNX_DOUBLE: return bits_to_double(u);
    case ONNX_INT8: return (int8_t)(int32_t)u;
    case ONNX_INT16: return (int16_t)(int32_t)u;
    case ONNX_INT32: return (int32_t)u;
    case ONNX_UINT8: return (uint8_t)u;
    case ONNX_UINT16: return (uint16_t)u;
    case ONNX_BOOL: return (uint32_t)u != 0;
    case ONNX_INT64: return (double)(int64_t)u;
    default: return (double)u; /* uint32, uint64 */
    }
}

static const vec *typed_field(tensor_fields *tf, int dt, const char **name) {
    switch (dt) {
    case ONNX_FLOAT: *name = "float_data"; return &tf->floats;
    case ONNX_DOUBLE: *name = "double_data"; return &tf->doubles;
    case ONNX_INT64: *name = "int64_data"; return &tf->int64s;
    case ONNX_UINT32: case ONNX_UINT64: *name = "uint64_data"; return &tf->uint64s;
    default: *name = "int32_data"; return &tf->int32s;
    }
}

static int tensor_field(pb *r, const pb_field *f, onnx_tensor *t, tensor_fields *tf) {
    switch (f->number) {
    case 1: return read_repeated(r, f, 0, &tf->dims, "dims");
    case 2:
        if (want_wire(r, f, 0, "data_type")) return -1;
        if (f->u > 64) return fail(r, "data_type %llu at byte %zu is not an ONNX type", (unsigned long long)f->u, f->offset);
        t->data_type = (int)f->u;
        return 0;
    case 3: return fail(r, "segmented tensors (field 3 at byte %zu) are not supported", f->offset);
    case 4: return read_repeated(r, f, 5, &tf->floats, "float_data");
    case 5: return read_repeated(r, f, 0, &tf->int32s, "int32_data");
    case 6: return fail(r, "string tensors (string_data at byte %zu) are not supported", f->offset);
    case 7: return read_repeated(r, f, 0, &tf->int64s, "int64_data");
    case 8: return copy_name(r, f, t->name, "name");
    case 9:
        if (want_wire(r, f, 2, "raw_data")) return -1;
        tf->raw = f->data;
        tf->raw_len = f->len;
        tf->has_raw = 1;
        return 0;
    case 10: return read_repeated(r, f, 1, &tf->doubles, "double_data");
    case 11: return read_repeated(r, f, 0, &tf->uint64s, "uint64_data");
    case 13: return fail(r, "external data (field 13 at byte %zu) is not supported", f->offset);
    case 14:
        if (want_wire(r, f, 0, "data_location")) return -1;
        return f->u ? fail(r, "data_location %llu (external) is not supported", (unsigned long long)f->u) : 0;
    default: return 0; /* doc_string and fields of later versions */
    }
}

static int tensor_shape(pb *r, onnx_tensor *t, const tensor_fields *tf) {
    if (tf->dims.n > ONNX_MAX_RANK) return fail(r, "rank %zu is over %d", tf->dims.n, ONNX_MAX_RANK);
    t->rank = (int)tf->dims.n;
    t->count = 1;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = (int64_t)tf->dims.v[i];
        if (d < 0) return fail(r, "dims[%d] is negative (%lld)", i, (long long)d);
        if (d && t->count > ((int64_t)1 << 30) / d) return fail(r, "more than 2^30 elements");
        t->dims[i] = d;
        t->count *= d;
    }
    return 0;
}

static int tensor_values(pb *r, onnx_tensor *t, tensor_fields *tf) {
    int dt = t->data_type, size = elem_size(dt);
    if (!size) return fail(r, "data_type %d is not supported (strings, float16, bfloat16, complex)", dt);
    const char *name;
    const vec *typed = typed_field(tf, dt, &name);
    size_t given = tf->floats.n + tf->int32s.n + tf->int64s.n + tf->doubles.n + tf->uint64s.n;
    if (tf->has_raw && given) return fail(r, "both raw_data and typed data given");
    if (!tf->has_raw && given != typed->n) return fail(r, "data in a field other than %s, for data_type %d", name, dt);
    size_t n = tf->has_raw ? tf->raw_len / (size_t)size : typed->n;
    if (tf->has_raw && tf->raw_len % (size_t)size)
        return fail(r, "raw_data of %zu bytes is not a whole number of %d-byte values", tf->raw_len, size);
    if (n != (size_t)t->count)
        return fail(r, "%zu values for dims holding %lld", n, (long long)t->count);
    t->data = malloc((n ? n : 1) * sizeof *t->data);
    if (!t->data) return fail(r, "out of memory for %zu values", n);
    for (size_t i = 0; i < n; i++)
        t->data[i] = tf->has_raw ? raw_value(dt, tf->raw + i * (size_t)size) : typed_value(dt, typed->v[i]);
    return 0;
}

static int tensor_message(pb *r, onnx_tensor *t) {
    memset(t, 0, sizeof *t);
    tensor_fields tf = {0};
    pb_field f;
    int st;
    while ((st = next_field(r, &f)) == 0)
        if (tensor_field(r, &f, t, &tf)) break;
    /* st is 1 at the end of the message; 0 here means a field was refused */
    int bad = st != 1 || tensor_shape(r, t, &tf) || tensor_values(r, t, &tf);
    fields_free(&tf);
    if (bad) onnx_tensor_free(t);
    return bad ? -1 : 0;
}

int onnx_tensor_parse(const uint8_t *buf, size_t len, onnx_tensor *t, char *err, size_t errsize) {
    pb r = {buf, buf + len, buf, err, errsize};
    return tensor_message(&r, t);
}

void onnx_tensor_free(onnx_tensor *t) {
    free(t->data);
    t->data = NULL;
}

/* ----------------------------------------------------- AttributeProto ... -- */

static int read_list(pb *r, const pb_field *f, int scalar_wire, onnx_attr *a, int is_float) {
    vec v = {0};
    int st = read_repeated(r, f, scalar_wire, &v, is_float ? "floats" : "ints");
    if (!st && a->n + v.n > ONNX_MAX_INTS) st = fail(r, "attribute %s has over %d values", a->name, ONNX_MAX_INTS);
    for (size_t i = 0; !st && i < v.n; i++, a->n++) {
        if (is_float) a->floats[a->n] = bits_to_float((uint32_t)v.v[i]);
        else a->ints[a->n] = (int64_t)v.v[i];
    }
    free(v.v);
    return st;
}

static int attr_field(pb *r, const pb_field *f, onnx_attr *a) {
    switch (f->number) {
    case 1: return copy_name(r, f, a->name, "attribute name");
    case 2:
        if (want_wire(r, f, 5, "attribute f")) return -1;
        a->f = bits_to_float((uint32_t)f->u);
        return 0;
    case 3:
        if (want_wire(r, f, 0, "attribute i")) return -1;
        a->i = (int64_t)f->u;
        return 0;
    case 4:
        /* strings values (auto_pad, direction, activations) are short; a longer
         * one is not an error of the file, so it is cut, and marked by '\1' */
        if (want_wire(r, f, 2, "attribute s")) return -1;
        memcpy(a->s, f->data, f->len < ONNX_NAME - 1 ? f->len : ONNX_NAME - 2);
        if (f->len >= ONNX_NAME - 1) a->s[ONNX_NAME - 2] = '\1';
        return 0;
    case 7: return read_list(r, f, 5, a, 1);
    case 8: return read_list(r, f, 0, a, 0);
    case 20:
        if (want_wire(r, f, 0, "attribute type")) return -1;
        a->type = (int)(f->u & 0xff);
        return 0;
    default: return 0; /* tensors, graphs, doc strings: not needed here */
    }
}

static int node_field(pb *r, const pb_field *f, onnx_node *n) {
    switch (f->number) {
    case 1:
    case 2: {
        int *count = f->number == 1 ? &n->ninputs : &n->noutputs;
        if (*count == ONNX_MAX_IO) return fail(r, "node has over %d %s", ONNX_MAX_IO, f->number == 1 ? "inputs" : "outputs");
        char *dst = f->number == 1 ? n->inputs[*count] : n->outputs[*count];
        if (copy_name(r, f, dst, f->number == 1 ? "node input" : "node output")) return -1;
        ++*count;
        return 0;
    }
    case 4: return copy_name(r, f, n->op_type, "op_type");
    case 5: {
        if (want_wire(r, f, 2, "attribute")) return -1;
        if (n->nattrs == ONNX_MAX_ATTRS) return fail(r, "node has over %d attributes", ONNX_MAX_ATTRS);
        onnx_attr *a = &n->attrs[n->nattrs++];
        memset(a, 0, sizeof *a);
        pb s = sub(r, f);
        pb_field g;
        int st;
        while ((st = next_field(&s, &g)) == 0)
            if (attr_field(&s, &g, a)) return -1;
        return st < 0 ? -1 : 0;
    }
    default: return 0; /* name, doc_string, domain */
    }
}

/* ValueInfoProto: only its name (field 1). */
static int value_info_name(pb *r, const pb_field *f, char *dst) {
    if (want_wire(r, f, 2, "graph input/output")) return -1;
    pb s = sub(r, f);
    pb_field g;
    int st;
    dst[0] = 0;
    while ((st = next_field(&s, &g)) == 0)
        if (g.number == 1 && copy_name(&s, &g, dst, "value name")) return -1;
    return st < 0 ? -1 : 0;
}

static int graph_field(pb *r, const pb_field *f, onnx_model *m) {
    if (f->number == 1) {
        if (want_wire(r, f, 2, "node")) return -1;
        if (m->nnodes++) return 0; /* only the first node is kept */
        pb s = sub(r, f);
        pb_field g;
        int st;
        while ((st = next_field(&s, &g)) == 0)
            if (node_field(&s, &g, &m->node)) return -1;
        return st < 0 ? -1 : 0;
    }
    if (f->number == 11 || f->number == 12) {
        int *count = f->number == 11 ? &m->ninputs : &m->noutputs;
        if (*count == ONNX_MAX_IO) return fail(r, "graph has over %d inputs or outputs", ONNX_MAX_IO);
        char *dst = f->number == 11 ? m->inputs[*count] : m->outputs[*count];
        if (value_info_name(r, f, dst)) return -1;
        ++*count;
    }
    return 0; /* name, initializers, value_info, doc_string */
}

/* OperatorSetIdProto: domain (1), version (2). */
static int opset_field(pb *r, const pb_field *f, onnx_model *m) {
    if (want_wire(r, f, 2, "opset_import")) return -1;
    pb s = sub(r, f);
    pb_field g;
    int st, default_domain = 1;
    int64_t version = 0;
    while ((st = next_field(&s, &g)) == 0) {
        if (g.number == 1) {
            if (want_wire(&s, &g, 2, "opset domain")) return -1;
            default_domain = g.len == 0 || (g.len == 7 && !memcmp(g.data, "ai.onnx", 7));
        } else if (g.number == 2) {
            if (want_wire(&s, &g, 0, "opset version")) return -1;
            version = (int64_t)g.u;
        }
    }
    if (st < 0) return -1;
    if (default_domain) m->opset = version;
    return 0;
}

int onnx_model_parse(const uint8_t *buf, size_t len, onnx_model *m, char *err, size_t errsize) {
    memset(m, 0, sizeof *m);
    pb r = {buf, buf + len, buf, err, errsize};
    pb_field f;
    int st, graphs = 0;
    while ((st = next_field(&r, &f)) == 0) {
        if (f.number == 8 && opset_field(&r, &f, m)) return -1;
        if (f.number != 7) continue;
        if (want_wire(&r, &f, 2, "graph") || graphs++) return graphs > 1 ? fail(&r, "two graphs in one model") : -1;
        pb s = sub(&r, &f);
        pb_field g;
        int gst;
        while ((gst = next_field(&s, &g)) == 0)
            if (graph_field(&s, &g, m)) return -1;
        if (gst < 0) return -1;
    }
    if (st < 0) return -1;
    if (!graphs) return fail(&r, "no graph in the model");
    return 0;
}

/* ------------------------------------------------------------------ files -- */

int onnx_read_file(const char *path, uint8_t **buf, size_t *len, char *err, size_t errsize) {
    *buf = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return snprintf(err, errsize, "%s: cannot open", path), -1;
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || size > (256L << 20) || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return snprintf(err, errsize, "%s: cannot size it (or over 256 MiB)", path), -1;
    }
    *buf = malloc(size ? (size_t)size : 1);
    if (!*buf || fread(*buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        free(*buf);
        *buf = NULL;
        return snprintf(err, errsize, "%s: cannot read %ld bytes", path, size), -1;
    }
    fclose(f);
    *len = (size_t)size;
    return 0;
}

/* A file through one of the parsers, its path prefixed to any message. */
typedef int (*parse_fn)(const uint8_t *buf, size_t len, void *out, char *err, size_t errsize);

static int read_parsed(const char *path, parse_fn parse, void *out, char *err, size_t errsize) {
    uint8_t *buf;
    size_t len;
    if (onnx_read_file(path, &buf, &len, err, errsize)) return -1;
    int st = parse(buf, len, out, err, errsize);
    free(buf);
    if (st) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", err);
        snprintf(err, errsize, "%s: %s", path, msg);
    }
    return st;
}

static int parse_tensor(const uint8_t *b, size_t n, void *t, char *err, size_t size) { return onnx_tensor_parse(b, n, t, err, size); }
static int parse_model(const uint8_t *b, size_t n, void *m, char *err, size_t size) { return onnx_model_parse(b, n, m, err, size); }

int onnx_tensor_read(const char *path, onnx_tensor *t, char *err, size_t errsize) {
    memset(t, 0, sizeof *t);
    return read_parsed(path, parse_tensor, t, err, errsize);
}

int onnx_model_read(const char *path, onnx_model *m, char *err, size_t errsize) {
    memset(m, 0, sizeof *m);
    return read_parsed(path, parse_model, m, err, errsize);
}

/* -------------------------------------------------------------- attributes -- */

const onnx_attr *onnx_node_attr(const onnx_node *n, const char *name) {
    for (int i = 0; i < n->nattrs; i++)
        if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
    return NULL;
}

int64_t onnx_attr_int(const onnx_node *n, const char *name, int64_t dflt) {
    const onnx_attr *a = onnx_node_attr(n, name);
    return a ? a->i : dflt;
}

double onnx_attr_float(const onnx_node *n, const char *name, double dflt) {
    const onnx_attr *a = onnx_node_attr(n, name);
    return a ? a->f : dflt;
}
