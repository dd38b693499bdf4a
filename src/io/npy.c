/* numpy .npy files: the reader and writer behind fedc/npy.h.
 *
 * The format (numpy/lib/format.py, NEP 1): the magic "\x93NUMPY", a major and a
 * minor version byte, the header length (2 bytes little-endian in 1.0, 4 in 2.0 and
 * 3.0, which differ only in allowing UTF-8 names), then the header, a Python dict
 * literal
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a final '\n' so that the data starts at a multiple of 64
 * bytes, then the elements. The header is read into a buffer of its declared length
 * and parsed by a small bounded parser (numpy itself uses ast.literal_eval); the
 * data size the shape implies is checked against the file before anything is
 * allocated for it, so a corrupt shape cannot ask for gigabytes. */
#include "fedc/npy.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#define MAGIC "\x93NUMPY"
#define MAGIC_LEN 6
#define ALIGN 64
/* Far above any header fedc or numpy writes for the arrays fedc supports (numpy's
 * own default limit is 10000): a longer one means a corrupt file, not a big array. */
#define MAX_HEADER 65536
/* numpy leaves room in the header for the first dimension to grow to this many
 * digits, so that appending to a file can rewrite its header in place. */
#define GROWTH_AXIS_MAX_DIGITS 21

static const char *const descrs[FEDC_DTYPE_COUNT] = {
    [FEDC_F32] = "<f4", [FEDC_F64] = "<f8", [FEDC_I32] = "<i4", [FEDC_U8] = "|u1", [FEDC_BOOL] = "|b1",
};

/* ------------------------------------------------------------- helpers -- */

/* The data on disk is little-endian; a big-endian host swaps each element. */
static bool host_is_little(void) {
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static void swap_elements(unsigned char *p, size_t count, size_t size) {
    for (size_t i = 0; i < count; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* Makes the elements fedc's in-memory form: host byte order, bools 0 or 1. */
static void to_host(unsigned char *p, size_t count, fedc_dtype dt) {
    size_t size = fedc_dtype_size(dt);
    if (size > 1 && !host_is_little()) swap_elements(p, count, size);
    if (dt == FEDC_BOOL)
        for (size_t i = 0; i < count; i++) p[i] = p[i] != 0;
}

/* A shape as Python writes a tuple: "()", "(3,)", "(2, 3)". */
static const char *shape_str(int rank, const int64_t *dims, char *buf, size_t size) {
    size_t n = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < rank && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, i ? ", %lld" : "%lld", (long long)dims[i]);
    if (n < size) snprintf(buf + n, size - n, rank == 1 ? ",)" : ")");
    return buf;
}

/* Element count of a shape, or -1 if it overflows. */
static int64_t checked_count(int rank, const int64_t *dims) {
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || (dims[i] && n > INT64_MAX / dims[i])) return -1;
        n *= dims[i];
    }
    return n;
}

/* -------------------------------------------------------------- header -- */

typedef struct header {
    char descr[32];
    bool fortran;
    int rank; /* may exceed FEDC_MAX_RANK; only that many dims are kept */
    int64_t dims[FEDC_MAX_RANK];
    bool seen_descr, seen_order, seen_shape;
} header;

/* A bounded parser over the header text [begin, end). */
typedef struct cursor {
    const char *begin, *p, *end;
    const char *path;
} cursor;

static void skip_space(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static bool accept(cursor *c, char ch) {
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

static bool accept_word(cursor *c, const char *word) {
    size_t n = strlen(word);
    skip_space(c);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return false;
    c->p += n;
    return true;
}

/* The header without its padding, for messages. */
static fedc_status malformed(const cursor *c, const char *expected) {
    int len = (int)(c->end - c->begin);
    while (len > 0 && (c->begin[len - 1] == ' ' || c->begin[len - 1] == '\n')) len--;
    return fedc_error(FEDC_EPARSE, "npy: %s: malformed header: expected %s at column %d of \"%.*s\"", c->path,
                      expected, (int)(c->p - c->begin) + 1, len > 200 ? 200 : len, c->begin);
}

/* A quoted string without escapes (dtype strings and the three keys have none). */
static fedc_status parse_string(cursor *c, char *out, size_t size) {
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return malformed(c, "a quoted string");
    char quote = *c->p++;
    const char *start = c->p;
    while (c->p < c->end && *c->p != quote && *c->p != '\\') c->p++;
    if (c->p >= c->end || *c->p != quote) return malformed(c, "the end of the string");
    size_t n = (size_t)(c->p - start);
    if (n >= size) return malformed(c, "a shorter string");
    memcpy(out, start, n);
    out[n] = '\0';
    c->p++;
    return FEDC_OK;
}

static fedc_status parse_descr(cursor *c, header *h) {
    skip_space(c);
    if (c->p < c->end && *c->p == '[')
        return fedc_error(FEDC_EUNSUPPORTED, "npy: %s: structured dtypes (record arrays) are not supported; "
                          "save each field as its own array", c->path);
    return parse_string(c, h->descr, sizeof h->descr);
}

static fedc_status parse_order(cursor *c, header *h) {
    if (accept_word(c, "True")) h->fortran = true;
    else if (accept_word(c, "False")) h->fortran = false;
    else return malformed(c, "True or False");
    return FEDC_OK;
}

/* A non-negative integer; Python 2 numpy wrote longs with an 'L' suffix. */
static fedc_status parse_dim(cursor *c, int64_t *out) {
    skip_space(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return malformed(c, "a dimension (a non-negative integer)");
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        int digit = *c->p++ - '0';
        if (v > (INT64_MAX - digit) / 10) return malformed(c, "a dimension that fits in 64 bits");
        v = v * 10 + digit;
    }
    if (c->p < c->end && *c->p == 'L') c->p++;
    *out = v;
    return FEDC_OK;
}

/* "(" [dim {"," dim}] [","] ")" */
static fedc_status parse_shape(cursor *c, header *h) {
    if (!accept(c, '(')) return malformed(c, "a shape tuple");
    h->rank = 0;
    while (!accept(c, ')')) {
        int64_t d = 0;
        fedc_status st = parse_dim(c, &d);
        if (st) return st;
        if (h->rank < FEDC_MAX_RANK) h->dims[h->rank] = d;
        h->rank++;
        if (accept(c, ')')) break;
        if (!accept(c, ',')) return malformed(c, "',' or ')' in the shape");
    }
    return FEDC_OK;
}

static fedc_status parse_entry(cursor *c, header *h) {
    char key[32];
    fedc_status st = parse_string(c, key, sizeof key);
    if (st) return st;
    if (!accept(c, ':')) return malformed(c, "':' after the key");
    bool *seen = strcmp(key, "descr") == 0           ? &h->seen_descr
                 : strcmp(key, "fortran_order") == 0 ? &h->seen_order
                 : strcmp(key, "shape") == 0         ? &h->seen_shape
                                                     : NULL;
    if (!seen)
        return fedc_error(FEDC_EPARSE, "npy: %s: malformed header: unknown key '%s' (expected descr, "
                          "fortran_order and shape)", c->path, key);
    if (*seen) return fedc_error(FEDC_EPARSE, "npy: %s: malformed header: key '%s' appears twice", c->path, key);
    *seen = true;
    if (seen == &h->seen_descr) return parse_descr(c, h);
    if (seen == &h->seen_order) return parse_order(c, h);
    return parse_shape(c, h);
}

static fedc_status parse_header(cursor *c, header *h) {
    memset(h, 0, sizeof *h);
    if (!accept(c, '{')) return malformed(c, "'{'");
    while (!accept(c, '}')) {
        fedc_status st = parse_entry(c, h);
        if (st) return st;
        if (accept(c, '}')) break;
        if (!accept(c, ',')) return malformed(c, "',' or '}'");
    }
    skip_space(c);
    if (c->p != c->end) return malformed(c, "only padding after '}'");
    if (!h->seen_descr || !h->seen_order || !h->seen_shape)
        return fedc_error(FEDC_EPARSE, "npy: %s: malformed header: missing key '%s'", c->path,
                          !h->seen_descr ? "descr" : !h->seen_order ? "fortran_order" : "shape");
    return FEDC_OK;
}

/* ------------------------------------------------------------- checks -- */

/* The supported dtype to suggest converting an unsupported one to, by its kind letter. */
static const char *suggested_descr(const char *descr) {
    switch (descr[0] ? descr[1] : '\0') {
    case 'f': return "<f4";
    case 'i': case 'u': return "<i4";
    case 'b': return "|b1";
    default: return NULL;
    }
}

static bool supported_descr(const char *descr, fedc_dtype *dt) {
    for (int i = 0; i < FEDC_DTYPE_COUNT; i++) {
        /* Byte order means nothing for one-byte types; numpy writes '|' but accepts any. */
        bool one_byte = descrs[i][0] == '|' && descr[0] && strchr("<>=|", descr[0]);
        if (strcmp(descr, descrs[i]) == 0 || (one_byte && strcmp(descr + 1, descrs[i] + 1) == 0)) {
            *dt = (fedc_dtype)i;
            return true;
        }
    }
    return false;
}

static fedc_status resolve_dtype(const char *path, const char *descr, fedc_dtype *dt) {
    if (supported_descr(descr, dt)) return FEDC_OK;
    const char *to = suggested_descr(descr);
    if (descr[0] == '>') {
        char little[sizeof ((header *)0)->descr];
        snprintf(little, sizeof little, "<%.30s", descr + 1);
        fedc_dtype same = FEDC_F32;
        if (supported_descr(little, &same)) to = descrs[same];
        if (to)
            return fedc_error(FEDC_EUNSUPPORTED, "npy: %s: big-endian dtype '%s' is not supported; convert it "
                              "with a.astype('%s')", path, descr, to);
    }
    if (!to)
        return fedc_error(FEDC_EUNSUPPORTED, "npy: %s: dtype '%s' is not supported (fedc reads <f4, <f8, <i4, "
                          "|u1 and |b1)", path, descr);
    return fedc_error(FEDC_EUNSUPPORTED, "npy: %s: dtype '%s' is not supported (fedc reads <f4, <f8, <i4, |u1 "
                      "and |b1); convert it with a.astype('%s')", path, descr, to);
}

/* What the header describes, as a fedc type and a byte count. */
static fedc_status header_type(const char *path, const header *h, fedc_type *type, size_t *bytes) {
    fedc_dtype dt = FEDC_F32;
    fedc_status st = resolve_dtype(path, h->descr, &dt);
    if (st) return st;
    if (h->fortran)
        return fedc_error(FEDC_EUNSUPPORTED, "npy: %s: Fortran-order (column-major) arrays are not supported; "
                          "save np.ascontiguousarray(a) instead", path);
    if (h->rank > FEDC_MAX_RANK)
        return fedc_error(FEDC_EUNSUPPORTED, "npy: %s: the array has %d dimensions; fedc supports at most %d",
                          path, h->rank, FEDC_MAX_RANK);
    int64_t count = checked_count(h->rank, h->dims);
    size_t size = fedc_dtype_size(dt);
    if (count < 0 || (uint64_t)count > SIZE_MAX / size) {
        char s[160];
        return fedc_error(FEDC_EPARSE, "npy: %s: shape %s is too large", path,
                          shape_str(h->rank, h->dims, s, sizeof s));
    }
    *type = fedc_type_make(dt, h->rank, h->dims);
    *bytes = (size_t)count * size;
    return FEDC_OK;
}

/* ------------------------------------------------------------- reading -- */

/* Reads the magic, version and header length. */
static fedc_status read_preamble(FILE *f, const char *path, uint32_t *hlen) {
    unsigned char pre[MAGIC_LEN + 2 + 4];
    size_t n = fread(pre, 1, MAGIC_LEN + 2, f);
    if (memcmp(pre, MAGIC, n < MAGIC_LEN ? n : MAGIC_LEN) != 0 || n == 0)
        return fedc_error(FEDC_EPARSE, "npy: %s: not a .npy file (bad magic: it does not start with "
                          "\"\\x93NUMPY\")", path);
    if (n < MAGIC_LEN + 2)
        return fedc_error(FEDC_EPARSE, "npy: %s: truncated header: the file has only %zu bytes", path, n);
    int major = pre[MAGIC_LEN], minor = pre[MAGIC_LEN + 1];
    if (major < 1 || major > 3 || minor != 0)
        return fedc_error(FEDC_EUNSUPPORTED, "npy: %s: format version %d.%d is not supported (1.0, 2.0 and 3.0 "
                          "are)", path, major, minor);
    size_t width = major == 1 ? 2 : 4;
    if (fread(pre + MAGIC_LEN + 2, 1, width, f) != width)
        return fedc_error(FEDC_EPARSE, "npy: %s: truncated header: the header length is missing", path);
    const unsigned char *l = pre + MAGIC_LEN + 2;
    *hlen = l[0] | (uint32_t)l[1] << 8 | (width == 4 ? (uint32_t)l[2] << 16 | (uint32_t)l[3] << 24 : 0);
    if (*hlen > MAX_HEADER)
        return fedc_error(FEDC_EPARSE, "npy: %s: header length %lu is implausible (over %d bytes); the file is "
                          "corrupt", path, (unsigned long)*hlen, MAX_HEADER);
    return FEDC_OK;
}

static fedc_status read_header(FILE *f, const char *path, header *h) {
    uint32_t hlen = 0;
    fedc_status st = read_preamble(f, path, &hlen);
    if (st) return st;
    char *text = fedc_malloc(hlen);
    if (!text) return fedc_error(FEDC_ENOMEM, "npy: %s: out of memory for a %lu-byte header", path,
                                 (unsigned long)hlen);
    size_t got = fread(text, 1, hlen, f);
    if (got != hlen) {
        st = fedc_error(FEDC_EPARSE, "npy: %s: truncated header: %lu bytes declared, %zu present", path,
                        (unsigned long)hlen, got);
    } else {
        cursor c = {text, text, text + hlen, path};
        st = parse_header(&c, h);
    }
    fedc_free(text);
    return st;
}

/* Bytes from the current position to the end, or -1 if the stream cannot seek. */
static long long bytes_left(FILE *f) {
    off_t here = ftello(f);
    if (here < 0 || fseeko(f, 0, SEEK_END) != 0) return -1;
    off_t end = ftello(f);
    if (fseeko(f, here, SEEK_SET) != 0 || end < here) return -1;
    return (long long)(end - here);
}

static fedc_status size_mismatch(const char *path, const fedc_type *t, size_t want, long long have) {
    char s[160];
    const char *what = have < (long long)want ? "truncated data" : "data size mismatch";
    return fedc_error(FEDC_EPARSE, "npy: %s: %s: shape %s of '%s' needs %zu bytes, the file has %lld after "
                      "the header", path, what, shape_str(t->rank, t->dims, s, sizeof s), descrs[t->dtype], want,
                      have);
}

static fedc_status read_data(FILE *f, const char *path, const fedc_type *t, size_t bytes, void **data) {
    long long left = bytes_left(f);
    if (left >= 0 && left != (long long)bytes) return size_mismatch(path, t, bytes, left);
    unsigned char *buf = fedc_malloc(bytes);
    if (!buf) return fedc_error(FEDC_ENOMEM, "npy: %s: out of memory for %zu bytes of data", path, bytes);
    size_t got = fread(buf, 1, bytes, f);
    fedc_status st = FEDC_OK;
    if (ferror(f)) st = fedc_error(FEDC_EIO, "npy: %s: read error: %s", path, strerror(errno));
    else if (got != bytes) st = size_mismatch(path, t, bytes, (long long)got);
    else if (fgetc(f) != EOF) st = size_mismatch(path, t, bytes, (long long)bytes + 1);
    if (st) {
        fedc_free(buf);
        return st;
    }
    to_host(buf, (size_t)fedc_type_count(t), t->dtype);
    *data = buf;
    return FEDC_OK;
}

fedc_status fedc_npy_read(const char *path, fedc_type *type, void **data) {
    if (!path || !type || !data) return fedc_error(FEDC_EINVAL, "npy_read: path, type and data must not be NULL");
    *data = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return fedc_error(FEDC_EIO, "npy: cannot open %s: %s", path, strerror(errno));
    header h;
    fedc_type t;
    size_t bytes = 0;
    fedc_status st = read_header(f, path, &h);
    if (!st) st = header_type(path, &h, &t, &bytes);
    if (!st) st = read_data(f, path, &t, bytes, data);
    fclose(f);
    if (!st) *type = t;
    return st;
}

/* ------------------------------------------------------------- writing -- */

static fedc_status check_type(const char *path, const fedc_type *t) {
    if (!t || (unsigned)t->dtype >= FEDC_DTYPE_COUNT)
        return fedc_error(FEDC_EINVAL, "npy: cannot write %s: invalid dtype", path);
    if (t->rank < 0 || t->rank > FEDC_MAX_RANK)
        return fedc_error(FEDC_EINVAL, "npy: cannot write %s: rank %d is outside [0, %d]", path, t->rank,
                          FEDC_MAX_RANK);
    if (checked_count(t->rank, t->dims) < 0 || fedc_type_count(t) > (int64_t)(SIZE_MAX / 8))
        return fedc_error(FEDC_EINVAL, "npy: cannot write %s: negative or overflowing dimensions", path);
    return FEDC_OK;
}

/* The preamble and header exactly as numpy 1.24+ writes them (format.py,
 * _write_array_header and _wrap_header): keys sorted, the growth padding, then
 * spaces and '\n' up to a multiple of 64 bytes -- a whole 64 more when already
 * aligned, as numpy's formula gives. Returns the total length. */
static size_t format_header(const fedc_type *t, char *out, size_t size) {
    char shape[160], dict[320];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     descrs[t->dtype], shape_str(t->rank, t->dims, shape, sizeof shape));
    if (t->rank > 0) {
        char first[24];
        int digits = snprintf(first, sizeof first, "%lld", (long long)t->dims[0]);
        for (int i = digits; i < GROWTH_AXIS_MAX_DIGITS; i++) dict[n++] = ' ';
        dict[n] = '\0';
    }
    size_t hlen = (size_t)n + 1;
    size_t pad = ALIGN - (MAGIC_LEN + 2 + 2 + hlen) % ALIGN;
    size_t total = MAGIC_LEN + 2 + 2 + hlen + pad;
    if (total > size) return 0;
    memcpy(out, MAGIC "\x01\x00", MAGIC_LEN + 2);
    out[MAGIC_LEN + 2] = (char)((hlen + pad) & 0xff);
    out[MAGIC_LEN + 3] = (char)((hlen + pad) >> 8);
    memcpy(out + MAGIC_LEN + 4, dict, (size_t)n);
    memset(out + MAGIC_LEN + 4 + n, ' ', pad);
    out[total - 1] = '\n';
    return total;
}

/* Writes the elements in the file's form, through a small buffer when they need
 * changing on the way (byte swapping on a big-endian host, bools made 0 or 1). */
static bool write_elements(FILE *f, const fedc_type *t, const unsigned char *p) {
    size_t size = fedc_dtype_size(t->dtype), count = (size_t)fedc_type_count(t);
    if ((size == 1 || host_is_little()) && t->dtype != FEDC_BOOL) return fwrite(p, size, count, f) == count;
    unsigned char chunk[4096];
    size_t per = sizeof chunk / size;
    for (size_t done = 0; done < count; done += per) {
        size_t k = count - done < per ? count - done : per;
        memcpy(chunk, p + done * size, k * size);
        if (size > 1) swap_elements(chunk, k, size);
        if (t->dtype == FEDC_BOOL)
            for (size_t i = 0; i < k; i++) chunk[i] = chunk[i] != 0;
        if (fwrite(chunk, size, k, f) != k) return false;
    }
    return true;
}

fedc_status fedc_npy_write(const char *path, const fedc_type *type, const void *data) {
    if (!path) return fedc_error(FEDC_EINVAL, "npy_write: path must not be NULL");
    fedc_status st = check_type(path, type);
    if (st) return st;
    if (!data && fedc_type_count(type) > 0) return fedc_error(FEDC_EINVAL, "npy: cannot write %s: no data", path);
    char head[512];
    size_t n = format_header(type, head, sizeof head);
    if (n == 0) return fedc_error(FEDC_EINTERNAL, "npy: %s: header does not fit", path);
    FILE *f = fopen(path, "wb");
    if (!f) return fedc_error(FEDC_EIO, "npy: cannot create %s: %s", path, strerror(errno));
    bool ok = fwrite(head, 1, n, f) == n && write_elements(f, type, data);
    int err = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (ok) return FEDC_OK;
    remove(path); /* a partial file would look like a valid but wrong array */
    return fedc_error(FEDC_EIO, "npy: cannot write %s: %s", path, strerror(err));
}
