/*
 * fedjax_records.c — FedJAX client records: a zlib stream of msgpack holding a map
 * from feature name to numpy array, decoded into a fedc_client_data.
 *
 * The encoding followed is FedJAX's own: fedjax/core/serialization.py
 * (msgpack_serialize, derived from flax/serialization.py), as
 * SQLiteFederatedDataBuilder in fedjax/core/sqlite_federated_data.py writes it,
 * data = zlib.compress(msgpack_serialize(examples)):
 *
 *   record  a msgpack map {feature name (str): array}, packed with
 *           strict_types=True and the arrays as extension types:
 *   ext 1   ndarray: payload = msgpack.packb((arr.shape, arr.dtype.name,
 *           arr.tobytes('C')), use_bin_type=True), i.e. [list of ints, str such as
 *           "float32", "int64", "bool" or "bytes80" (numpy's fixed-width 'S10'),
 *           bin of the row-major elements]
 *   ext 4   bytes_ndarray (numpy object arrays of bytes): payload =
 *           msgpack.packb((x.shape, list(x.flatten())), use_bin_type=True)
 *   ext 2   a Python complex, ext 3 a numpy scalar (an ext 1 payload of shape ()):
 *           neither is an array of examples, so both are refused by name.
 *
 * FedJAX reads the payloads with unpackb(raw=True), so str and bin are both taken
 * as bytes here. dtype.name carries no byte order and tobytes() writes the
 * writer's own, so elements are read as little-endian, the order of every machine
 * FedJAX runs on.
 */
#define ZLIB_CONST
#include "formats/fedjax_records.h"

#include <limits.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

enum { EXT_NDARRAY = 1, EXT_COMPLEX = 2, EXT_NPSCALAR = 3, EXT_BYTES_NDARRAY = 4 };

/* What is being decoded, for error messages. */
typedef struct where {
    const char *path, *client;
    const char *feature; /* NULL outside a feature */
    int64_t examples;
} where;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static fedc_status fail(const where *w, fedc_status st, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (w->feature)
        return fedc_error(st, "%s: client \"%s\": feature \"%s\": %s", w->path, w->client, w->feature, what);
    return fedc_error(st, "%s: client \"%s\": %s", w->path, w->client, what);
}

/* -------------------------------------------------------------- zlib -- */

/* zlib allocates through fedc too, so fault injection reaches its state. */
static voidpf z_alloc(voidpf opaque, uInt items, uInt size) {
    (void)opaque;
    return size && items > SIZE_MAX / size ? Z_NULL : fedc_malloc((size_t)items * size);
}

static void z_free(voidpf opaque, voidpf p) {
    (void)opaque;
    fedc_free(p);
}

static fedc_status z_fail(const where *w, int z, const z_stream *s) {
    if (z == Z_MEM_ERROR) return fail(w, FEDC_ENOMEM, "out of memory inflating the data");
    if (z == Z_BUF_ERROR) return fail(w, FEDC_EPARSE, "the data's zlib stream is truncated");
    if (z == Z_NEED_DICT) return fail(w, FEDC_EPARSE, "the data's zlib stream needs a preset dictionary");
    return fail(w, FEDC_EPARSE, "the data is not a valid zlib stream (%s)", s->msg ? s->msg : zError(z));
}

/* Doubles the output buffer, starting at four times the compressed size (records
 * of arrays compress a few times over). */
static fedc_status grow(const where *w, unsigned char **buf, size_t *cap, size_t in_size) {
    size_t want = *cap ? *cap * 2 : in_size < 1024 ? 4096 : in_size * 4;
    if (want < *cap || (!*cap && in_size > SIZE_MAX / 4))
        return fail(w, FEDC_ENOMEM, "the inflated data is too large");
    unsigned char *p = fedc_realloc(*buf, want);
    if (!p) return fail(w, FEDC_ENOMEM, "out of memory for %zu bytes of inflated data", want);
    *buf = p;
    *cap = want;
    return FEDC_OK;
}

/* As zlib.decompress(): one whole zlib stream. Bytes after its end are refused
 * (zlib.compress never writes them; they mean the blob is damaged). */
static fedc_status inflate_all(const where *w, const unsigned char *in, size_t n, unsigned char **out,
                               size_t *out_n) {
    *out = NULL;
    *out_n = 0;
    if (n > UINT_MAX) return fail(w, FEDC_EUNSUPPORTED, "a data blob of %zu bytes is too large", n);
    z_stream s;
    memset(&s, 0, sizeof s);
    s.zalloc = z_alloc;
    s.zfree = z_free;
    s.next_in = in;
    s.avail_in = (uInt)n;
    int z = inflateInit(&s);
    if (z != Z_OK) return z_fail(w, z, &s);
    unsigned char *buf = NULL;
    size_t cap = 0, used = 0;
    fedc_status st = FEDC_OK;
    for (;;) {
        if (used == cap && (st = grow(w, &buf, &cap, n))) break;
        size_t room = cap - used;
        s.next_out = buf + used;
        s.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
        uInt before = s.avail_out;
        z = inflate(&s, Z_NO_FLUSH);
        used += before - s.avail_out;
        if (z == Z_STREAM_END) break;
        if (z == Z_OK || (z == Z_BUF_ERROR && s.avail_out == 0)) continue;
        st = z_fail(w, z, &s); /* Z_BUF_ERROR with room left: the input ran out */
        break;
    }
    if (!st && s.avail_in) st = fail(w, FEDC_EPARSE, "%u bytes follow the end of the data's zlib stream", s.avail_in);
    inflateEnd(&s);
    if (st) {
        fedc_free(buf);
        return st;
    }
    *out = buf;
    *out_n = used;
    return FEDC_OK;
}

/* ----------------------------------------------------------- msgpack -- */

static const char *kind(const msgpack_object *o) {
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: return "nil";
    case MSGPACK_OBJECT_BOOLEAN: return "boolean";
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return "integer";
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: return "float";
    case MSGPACK_OBJECT_STR: return "string";
    case MSGPACK_OBJECT_ARRAY: return "array";
    case MSGPACK_OBJECT_MAP: return "map";
    case MSGPACK_OBJECT_BIN: return "binary string";
    case MSGPACK_OBJECT_EXT: return "extension";
    }
    return "unknown object";
}

/* FedJAX unpacks payloads with raw=True: str and bin are both bytes to it. */
static bool as_bytes(const msgpack_object *o, const char **p, size_t *n) {
    if (o->type == MSGPACK_OBJECT_STR) {
        *p = o->via.str.ptr;
        *n = o->via.str.size;
        return true;
    }
    if (o->type == MSGPACK_OBJECT_BIN) {
        *p = o->via.bin.ptr;
        *n = o->via.bin.size;
        return true;
    }
    return false;
}

/* msgpack-c allocates a container's objects as soon as it reads the count, so a
 * damaged 5-byte header could make it ask for 2^32 of them. This first pass walks
 * the bytes and checks that every declared size fits in what remains (each
 * pending element takes at least a byte), so msgpack-c only sees counts the data
 * can hold. It finds the end of the first object too, and refuses nesting deeper
 * than msgpack-c's stack (32), which msgpack-c reports as running out of memory;
 * FedJAX's records nest two deep. */
typedef enum scan_result { SCAN_OK, SCAN_TRUNCATED, SCAN_INVALID, SCAN_TOO_DEEP } scan_result;

#define MAX_DEPTH 16

enum { SKIP_BYTES, ITEMS, PAIRS };

/* Formats 0xc4..0xdf: bytes of the length field, fixed bytes after it, and what
 * the length counts (bytes to skip, elements, or key-value pairs). */
static const unsigned char formats[28][3] = {
    {1, 0, SKIP_BYTES}, {2, 0, SKIP_BYTES}, {4, 0, SKIP_BYTES}, /* bin 8/16/32 */
    {1, 1, SKIP_BYTES}, {2, 1, SKIP_BYTES}, {4, 1, SKIP_BYTES}, /* ext 8/16/32 (then the type byte) */
    {0, 4, 0},          {0, 8, 0},                              /* float 32/64 */
    {0, 1, 0},          {0, 2, 0},          {0, 4, 0}, {0, 8, 0}, /* uint 8..64 */
    {0, 1, 0},          {0, 2, 0},          {0, 4, 0}, {0, 8, 0}, /* int 8..64 */
    {0, 2, 0},          {0, 3, 0},          {0, 5, 0}, {0, 9, 0}, {0, 17, 0}, /* fixext 1..16 */
    {1, 0, SKIP_BYTES}, {2, 0, SKIP_BYTES}, {4, 0, SKIP_BYTES}, /* str 8/16/32 */
    {2, 0, ITEMS},      {4, 0, ITEMS},                          /* array 16/32 */
    {2, 0, PAIRS},      {4, 0, PAIRS},                          /* map 16/32 */
};

static scan_result scan(const unsigned char *p, size_t n, size_t *off) {
    uint64_t left[MAX_DEPTH + 1] = {1}; /* elements still to come at each open level */
    int depth = 0;
    uint64_t pending = 1; /* their sum */
    size_t i = 0;
    while (pending) {
        while (!left[depth]) depth--;
        left[depth]--;
        *off = i;
        if (i >= n) return SCAN_TRUNCATED;
        unsigned b = p[i++];
        uint64_t skip = 0, items = 0;
        if ((b & 0xf0) == 0x80) items = 2 * (b & 0x0f); /* fixmap */
        else if ((b & 0xf0) == 0x90) items = b & 0x0f;  /* fixarray */
        else if ((b & 0xe0) == 0xa0) skip = b & 0x1f;   /* fixstr */
        else if (b == 0xc1) return SCAN_INVALID;        /* the one byte msgpack never uses */
        else if (b >= 0xc4 && b <= 0xdf) {
            const unsigned char *f = formats[b - 0xc4];
            if (f[0] > n - i) return SCAN_TRUNCATED;
            uint64_t len = 0;
            for (unsigned k = 0; k < f[0]; k++) len = len << 8 | p[i++];
            skip = f[1] + (f[2] == SKIP_BYTES ? len : 0);
            items = f[2] == ITEMS ? len : f[2] == PAIRS ? 2 * len : 0;
        } /* else fixints, nil, false, true: the byte itself */
        if (skip > n - i) return SCAN_TRUNCATED;
        i += (size_t)skip;
        pending += items - 1;
        if (pending > n - i) return SCAN_TRUNCATED;
        if (items && depth == MAX_DEPTH) return SCAN_TOO_DEEP;
        if (items) left[++depth] = items;
    }
    *off = i;
    return SCAN_OK;
}

/* As msgpack.unpackb(): one object spanning exactly the n bytes. The objects
 * point into p, which must outlive them. */
static fedc_status unpack(const where *w, const char *p, size_t n, msgpack_unpacked *u, const char *what) {
    size_t off = 0;
    scan_result r = scan((const unsigned char *)p, n, &off);
    if (r == SCAN_TRUNCATED)
        return fail(w, FEDC_EPARSE, "%s is truncated msgpack (%zu bytes; an object at byte %zu needs more)", what, n,
                    off);
    if (r == SCAN_INVALID) return fail(w, FEDC_EPARSE, "%s is not valid msgpack (byte %zu is 0xc1)", what, off);
    if (r == SCAN_TOO_DEEP)
        return fail(w, FEDC_EPARSE, "%s nests more than %d deep at byte %zu; FedJAX's records nest 2 deep", what,
                    MAX_DEPTH, off);
    if (off != n) return fail(w, FEDC_EPARSE, "%zu bytes follow the msgpack object of %s", n - off, what);
    size_t used = 0;
    msgpack_unpack_return m = msgpack_unpack_next(u, p, n, &used);
    if (m == MSGPACK_UNPACK_NOMEM_ERROR) return fail(w, FEDC_ENOMEM, "out of memory unpacking %s", what);
    if (m < 0 || m == MSGPACK_UNPACK_CONTINUE || used != n) /* e.g. nested deeper than msgpack-c goes */
        return fail(w, FEDC_EPARSE, "%s cannot be unpacked (msgpack-c stopped near byte %zu of %zu)", what, used, n);
    return FEDC_OK;
}

/* ------------------------------------------------------------ shapes -- */

typedef struct shape {
    int rank;
    int64_t dims[FEDC_MAX_RANK];
    int64_t count;
} shape;

static const char *shape_str(const shape *s, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < s->rank && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, i ? ",%lld" : "%lld", (long long)s->dims[i]);
    if (n < size) snprintf(buf + n, size - n, "]");
    return buf;
}

static fedc_status read_shape(const where *w, const msgpack_object *o, shape *s) {
    if (o->type != MSGPACK_OBJECT_ARRAY)
        return fail(w, FEDC_EPARSE, "the array's shape is a msgpack %s, not a list", kind(o));
    if (o->via.array.size > FEDC_MAX_RANK)
        return fail(w, FEDC_EUNSUPPORTED, "the array has %u dimensions; fedc takes at most %d", o->via.array.size,
                    FEDC_MAX_RANK);
    s->rank = (int)o->via.array.size;
    s->count = 1;
    for (int i = 0; i < s->rank; i++) {
        const msgpack_object *d = &o->via.array.ptr[i];
        if (d->type != MSGPACK_OBJECT_POSITIVE_INTEGER || d->via.u64 > INT64_MAX)
            return fail(w, FEDC_EPARSE, "dimension %d of the array's shape is a msgpack %s, not a size", i, kind(d));
        s->dims[i] = (int64_t)d->via.u64;
        if (s->dims[i] && s->count > INT64_MAX / s->dims[i])
            return fail(w, FEDC_EPARSE, "the array's shape has more than 2^63 elements");
        s->count *= s->dims[i];
    }
    return FEDC_OK;
}

/* Every feature has one row per example. */
static fedc_status check_examples(const where *w, const shape *s) {
    if (s->rank == 0) return fail(w, FEDC_EUNSUPPORTED, "a scalar, not an array with one row per example");
    if (s->dims[0] != w->examples)
        return fail(w, FEDC_EPARSE, "%lld examples (its leading dimension), but num_examples is %lld",
                    (long long)s->dims[0], (long long)w->examples);
    return FEDC_OK;
}

/* ----------------------------------------------------------- strings -- */

/* Byte strings come as msgpack items (ext 4) or as numpy fixed-width elements. */
typedef struct strings_src {
    const msgpack_object *items; /* ext 4: each a str or bin */
    const unsigned char *fixed;  /* 'S' arrays: `width` bytes each, NUL-padded */
    size_t width;
} strings_src;

static void string_at(const strings_src *src, int64_t i, const char **p, size_t *n) {
    if (src->items) {
        if (!as_bytes(&src->items[i], p, n)) { /* checked before; this keeps p and n defined */
            *p = "";
            *n = 0;
        }
        return;
    }
    *p = (const char *)src->fixed + (size_t)i * src->width;
    *n = src->width;
    while (*n && (*p)[*n - 1] == '\0') --*n; /* numpy drops the padding on access */
}

/* One string per example: a shape [n] or [n, 1, ...]. */
static fedc_status build_strings(const where *w, const shape *s, const strings_src *src, fedc_feature *f) {
    char buf[128];
    for (int i = 1; i < s->rank; i++)
        if (s->dims[i] != 1)
            return fail(w, FEDC_EUNSUPPORTED, "a byte-string array of shape %s; fedc takes one string per example",
                        shape_str(s, buf, sizeof buf));
    int64_t n = s->count; /* bounded by the record's size, so the sizes below fit */
    size_t total = 0, len;
    const char *p;
    for (int64_t i = 0; i < n; i++) {
        string_at(src, i, &p, &len);
        total += len;
    }
    f->kind = FEDC_FEATURE_STRINGS;
    f->type = fedc_type_make(FEDC_U8, 1, &n);
    f->data = fedc_malloc(total ? total : 1);
    f->offsets = fedc_malloc((size_t)(n + 1) * sizeof *f->offsets);
    if (!f->data || !f->offsets) return fail(w, FEDC_ENOMEM, "out of memory for %zu bytes of strings", total);
    f->offsets[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        string_at(src, i, &p, &len);
        if (len) memcpy((char *)f->data + f->offsets[i], p, len);
        f->offsets[i + 1] = f->offsets[i] + (int64_t)len;
    }
    return FEDC_OK;
}

/* ---------------------------------------------------------- numerics -- */

/* How a numpy dtype becomes a fedc one: as is, or widened/narrowed to i32 (fedc's
 * integer type), checking the range where it can overflow. */
typedef enum conversion { AS_IS, TO_BOOL, FROM_SIGNED, FROM_UNSIGNED } conversion;

typedef struct dtype_rule {
    const char *name; /* numpy's dtype.name */
    size_t size;
    fedc_dtype to;
    conversion how;
} dtype_rule;

static const dtype_rule rules[] = {
    {"float32", 4, FEDC_F32, AS_IS},       {"float64", 8, FEDC_F64, AS_IS},       {"int32", 4, FEDC_I32, AS_IS},
    {"uint8", 1, FEDC_U8, AS_IS},          {"bool", 1, FEDC_BOOL, TO_BOOL},       {"int64", 8, FEDC_I32, FROM_SIGNED},
    {"int8", 1, FEDC_I32, FROM_SIGNED},    {"int16", 2, FEDC_I32, FROM_SIGNED},   {"uint16", 2, FEDC_I32, FROM_UNSIGNED},
    {"uint32", 4, FEDC_I32, FROM_UNSIGNED}, {"uint64", 8, FEDC_I32, FROM_UNSIGNED},
};

static const dtype_rule *find_rule(const char *name) {
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
        if (strcmp(rules[i].name, name) == 0) return &rules[i];
    return NULL;
}

/* numpy names fixed-width byte strings by their size in bits: 'S10' is
 * "bytes80". Returns the width in bytes, 0 for any other name. */
static size_t bytes_width(const char *name) {
    if (strncmp(name, "bytes", 5) != 0 || !name[5]) return 0;
    size_t bits = 0;
    for (const char *p = name + 5; *p; p++) {
        if (*p < '0' || *p > '9' || bits > SIZE_MAX / 10 - 10) return 0;
        bits = bits * 10 + (size_t)(*p - '0');
    }
    return bits % 8 ? 0 : bits / 8;
}

static bool host_is_little(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static void reverse_bytes(unsigned char *p, size_t size) {
    for (size_t a = 0, b = size - 1; a < b; a++, b--) {
        unsigned char t = p[a];
        p[a] = p[b];
        p[b] = t;
    }
}

static uint64_t load_le(const unsigned char *p, size_t size) {
    uint64_t u = 0;
    for (size_t i = 0; i < size; i++) u |= (uint64_t)p[i] << (8 * i);
    return u;
}

static int64_t sign_extend(uint64_t u, size_t size) {
    unsigned bits = 8 * (unsigned)size;
    if (bits < 64 && ((u >> (bits - 1)) & 1)) u |= ~UINT64_C(0) << bits;
    return u > INT64_MAX ? -(int64_t)~u - 1 : (int64_t)u;
}

static fedc_status to_i32(const where *w, const dtype_rule *r, const unsigned char *in, int64_t count, int32_t *out) {
    for (int64_t i = 0; i < count; i++) {
        uint64_t u = load_le(in + (size_t)i * r->size, r->size);
        if (r->how == FROM_UNSIGNED && u > INT32_MAX)
            return fail(w, FEDC_ERANGE, "element %lld is %llu, outside the range of i32 (fedc's integer type)",
                        (long long)i, (unsigned long long)u);
        int64_t v = r->how == FROM_SIGNED ? sign_extend(u, r->size) : (int64_t)u;
        if (v < INT32_MIN || v > INT32_MAX)
            return fail(w, FEDC_ERANGE, "element %lld is %lld, outside the range of i32 (fedc's integer type)",
                        (long long)i, (long long)v);
        out[i] = (int32_t)v;
    }
    return FEDC_OK;
}

static fedc_status convert(const where *w, const dtype_rule *r, const unsigned char *in, int64_t count, void *out) {
    unsigned char *o = out;
    switch (r->how) {
    case AS_IS:
        if (count) memcpy(o, in, (size_t)count * r->size);
        if (r->size > 1 && !host_is_little())
            for (unsigned char *e = o; e < o + (size_t)count * r->size; e += r->size) reverse_bytes(e, r->size);
        return FEDC_OK;
    case TO_BOOL: /* fedc's bools hold 0 or 1 */
        for (int64_t i = 0; i < count; i++) o[i] = in[i] != 0;
        return FEDC_OK;
    default: return to_i32(w, r, in, count, out);
    }
}

/* ------------------------------------------------------------ arrays -- */

/* ext 1: [shape, dtype name, bytes]. */
static fedc_status decode_ndarray(const where *w, const msgpack_object *o, fedc_feature *f) {
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3)
        return fail(w, FEDC_EPARSE, "the ndarray payload is a msgpack %s, not [shape, dtype, bytes]", kind(o));
    const msgpack_object *it = o->via.array.ptr;
    shape s;
    fedc_status st = read_shape(w, &it[0], &s);
    if (st) return st;
    const char *name, *data;
    size_t name_len, size;
    if (!as_bytes(&it[1], &name, &name_len))
        return fail(w, FEDC_EPARSE, "the array's dtype is a msgpack %s, not a name", kind(&it[1]));
    if (!as_bytes(&it[2], &data, &size))
        return fail(w, FEDC_EPARSE, "the array's data is a msgpack %s, not bytes", kind(&it[2]));
    char dtype[32];
    snprintf(dtype, sizeof dtype, "%.*s", (int)(name_len < sizeof dtype ? name_len : sizeof dtype - 1), name);
    const dtype_rule *r = name_len < sizeof dtype && !memchr(name, 0, name_len) ? find_rule(dtype) : NULL;
    size_t width = r ? r->size : name_len < sizeof dtype ? bytes_width(dtype) : 0;
    for (char *c = dtype; *c; c++)
        if (*c < ' ' || *c > '~') *c = '?'; /* a damaged name is printed, not its bytes */
    if (!width)
        return fail(w, FEDC_EUNSUPPORTED, "dtype '%s' is not supported (fedc reads float32, float64, int32, uint8, "
                    "bool, other integers as i32, and bytes as strings)", dtype);
    char buf[128];
    if (size % width || (uint64_t)s.count != size / width)
        return fail(w, FEDC_EPARSE, "%zu bytes of data for shape %s of %s (%lld elements of %zu bytes)", size,
                    shape_str(&s, buf, sizeof buf), dtype, (long long)s.count, width);
    if ((st = check_examples(w, &s))) return st;
    if (!r) return build_strings(w, &s, &(strings_src){NULL, (const unsigned char *)data, width}, f);
    f->kind = FEDC_FEATURE_ARRAY;
    f->type = fedc_type_make(r->to, s.rank, s.dims);
    size_t bytes = (size_t)s.count * fedc_dtype_size(r->to);
    f->data = fedc_malloc(bytes ? bytes : 1);
    if (!f->data) return fail(w, FEDC_ENOMEM, "out of memory for %zu bytes", bytes);
    return convert(w, r, (const unsigned char *)data, s.count, f->data);
}

/* ext 4: [shape, flat list of byte strings]. */
static fedc_status decode_bytes_ndarray(const where *w, const msgpack_object *o, fedc_feature *f) {
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 2)
        return fail(w, FEDC_EPARSE, "the bytes array payload is a msgpack %s, not [shape, elements]", kind(o));
    const msgpack_object *it = o->via.array.ptr;
    shape s;
    fedc_status st = read_shape(w, &it[0], &s);
    if (st) return st;
    if (it[1].type != MSGPACK_OBJECT_ARRAY)
        return fail(w, FEDC_EPARSE, "the bytes array's elements are a msgpack %s, not a list", kind(&it[1]));
    char buf[128];
    if ((uint64_t)s.count != it[1].via.array.size)
        return fail(w, FEDC_EPARSE, "%u byte strings for shape %s (%lld elements)", it[1].via.array.size,
                    shape_str(&s, buf, sizeof buf), (long long)s.count);
    const char *p;
    size_t n;
    for (uint32_t i = 0; i < it[1].via.array.size; i++)
        if (!as_bytes(&it[1].via.array.ptr[i], &p, &n))
            return fail(w, FEDC_EPARSE, "element %u of the bytes array is a msgpack %s, not bytes", i,
                        kind(&it[1].via.array.ptr[i]));
    if ((st = check_examples(w, &s))) return st;
    return build_strings(w, &s, &(strings_src){it[1].via.array.ptr, NULL, 0}, f);
}

static fedc_status decode_value(const where *w, const msgpack_object *v, fedc_feature *f) {
    if (v->type != MSGPACK_OBJECT_EXT)
        return fail(w, FEDC_EPARSE, "a msgpack %s, not a FedJAX array (msgpack extension type 1 or 4)", kind(v));
    int type = v->via.ext.type;
    if (type == EXT_COMPLEX)
        return fail(w, FEDC_EUNSUPPORTED, "a complex number (msgpack extension type 2), not an array of examples");
    if (type == EXT_NPSCALAR)
        return fail(w, FEDC_EUNSUPPORTED, "a numpy scalar (msgpack extension type 3), not an array of examples");
    if (type != EXT_NDARRAY && type != EXT_BYTES_NDARRAY)
        return fail(w, FEDC_EPARSE, "msgpack extension type %d, which FedJAX does not write "
                    "(1: ndarray, 4: array of bytes)", type);
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    bool nd = type == EXT_NDARRAY;
    fedc_status st = unpack(w, v->via.ext.ptr, v->via.ext.size, &u, nd ? "the ndarray payload" : "the bytes array payload");
    if (!st) st = nd ? decode_ndarray(w, &u.data, f) : decode_bytes_ndarray(w, &u.data, f);
    msgpack_unpacked_destroy(&u);
    return st;
}

/* ------------------------------------------------------------ record -- */

static fedc_status decode_feature(where *w, const msgpack_object_kv *kv, fedc_client_data *c) {
    const char *p;
    size_t n;
    if (!as_bytes(&kv->key, &p, &n))
        return fail(w, FEDC_EPARSE, "a feature name is a msgpack %s, not a string", kind(&kv->key));
    if (memchr(p, 0, n)) return fail(w, FEDC_EPARSE, "a feature name holds a NUL byte");
    fedc_feature f = {fedc_malloc(n + 1), FEDC_FEATURE_ARRAY, {0}, NULL, NULL};
    if (!f.name) return fail(w, FEDC_ENOMEM, "out of memory");
    if (n) memcpy(f.name, p, n);
    f.name[n] = '\0';
    w->feature = f.name;
    fedc_status st = fedc_client_feature(c, f.name) ? fail(w, FEDC_EPARSE, "the record names the feature twice")
                                                    : decode_value(w, &kv->val, &f);
    w->feature = NULL;
    if (!st) return fedc_client_adopt_feature(c, &f); /* frees f if it fails */
    fedc_free(f.name);
    fedc_free(f.data);
    fedc_free(f.offsets);
    return st;
}

fedc_status fedc__fedjax_decode(const char *path, const char *client, int64_t num_examples, const void *blob,
                                size_t size, fedc_client_data **out) {
    *out = NULL;
    where w = {path, client, NULL, num_examples};
    unsigned char *raw;
    size_t n;
    fedc_status st = inflate_all(&w, blob, size, &raw, &n);
    if (st) return st;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    st = unpack(&w, (const char *)raw, n, &u, "the data");
    if (!st && u.data.type != MSGPACK_OBJECT_MAP)
        st = fail(&w, FEDC_EPARSE, "the data is a msgpack %s, not a map of feature names to arrays", kind(&u.data));
    fedc_client_data *c = NULL;
    if (!st) st = fedc_client_data_create(&c, client, num_examples);
    for (uint32_t i = 0; !st && i < u.data.via.map.size; i++) st = decode_feature(&w, &u.data.via.map.ptr[i], c);
    msgpack_unpacked_destroy(&u);
    fedc_free(raw);
    if (st) {
        fedc_client_data_destroy(c);
        return st;
    }
    *out = c;
    return FEDC_OK;
}
