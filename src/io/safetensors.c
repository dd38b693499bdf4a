/* .safetensors files: an atomic writer, and a reader with a small parser for the
 * JSON header (objects, arrays, strings without escapes beyond \" and \\, and
 * integers: what safetensors headers contain). */
#include "fedc/safetensors.h"
#include "io/safetensors_io.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const struct {
    fedc_dtype dt;
    const char *name;
} dtypes[] = {{FEDC_F32, "F32"}, {FEDC_F64, "F64"}, {FEDC_I32, "I32"}, {FEDC_U8, "U8"}, {FEDC_BOOL, "BOOL"}};

static const char *dtype_tag(fedc_dtype dt) {
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (dtypes[i].dt == dt) return dtypes[i].name;
    return NULL;
}

/* ---------------------------------------------------------------- write -- */

/* A growable string (fedc_realloc), for the header. */
typedef struct text {
    char *s;
    size_t n, cap;
    bool failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
    for (int tries = 0; tries < 2 && !t->failed; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(t->s ? t->s + t->n : NULL, t->s ? t->cap - t->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) t->failed = true;
        else if (t->s && t->n + (size_t)k < t->cap) {
            t->n += (size_t)k;
            return;
        } else {
            size_t cap = (t->cap + (size_t)k + 1) * 2;
            char *s = fedc_realloc(t->s, cap);
            if (!s) t->failed = true;
            else t->s = s, t->cap = cap;
        }
    }
}

static fedc_status header(text *h, const fedc_tensor_entry *tensors, int n, const fedc_metadata_entry *meta,
                          int nmeta) {
    size_t offset = 0;
    put(h, "{");
    for (int i = 0; i < n; i++) {
        const char *tag = dtype_tag(tensors[i].type.dtype);
        if (!tag || strpbrk(tensors[i].name, "\"\\"))
            return fedc_error(FEDC_EINVAL, "safetensors: tensor \"%s\" has an unsupported dtype or name", tensors[i].name);
        size_t bytes = fedc_type_bytes(&tensors[i].type);
        put(h, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", i ? "," : "", tensors[i].name, tag);
        for (int d = 0; d < tensors[i].type.rank; d++) put(h, d ? ",%lld" : "%lld", (long long)tensors[i].type.dims[d]);
        put(h, "],\"data_offsets\":[%zu,%zu]}", offset, offset + bytes);
        offset += bytes;
    }
    if (nmeta) {
        put(h, "%s\"__metadata__\":{", n ? "," : "");
        for (int i = 0; i < nmeta; i++) {
            if (strpbrk(meta[i].key, "\"\\\n") || strpbrk(meta[i].value, "\"\\\n"))
                return fedc_error(FEDC_EINVAL, "safetensors: metadata \"%s\" needs escaping, which is not supported", meta[i].key);
            put(h, "%s\"%s\":\"%s\"", i ? "," : "", meta[i].key, meta[i].value);
        }
        put(h, "}");
    }
    put(h, "}");
    while (!h->failed && h->n % 8) put(h, " "); /* the data starts 8-aligned, as the format recommends */
    return h->failed ? fedc_error(FEDC_ENOMEM, "safetensors: out of memory for the header") : FEDC_OK;
}

static bool write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        c += k, n -= (size_t)k;
    }
    return true;
}

/* A file of `bytes` past the file-size limit (ulimit -f) would be cut short, and
 * the process killed by SIGXFSZ unless it ignores the signal: refused first. */
static fedc_status check_size_limit(const char *tmp, uint64_t bytes) {
    struct rlimit r;
    if (getrlimit(RLIMIT_FSIZE, &r) != 0 || r.rlim_cur == RLIM_INFINITY || bytes <= (uint64_t)r.rlim_cur) return FEDC_OK;
    return fedc_error(FEDC_EIO, "%s: cannot write %llu bytes: the file-size limit (ulimit -f) is %llu bytes", tmp,
                      (unsigned long long)bytes, (unsigned long long)r.rlim_cur);
}

/* After the rename, the directory's entry is flushed too, so that a power loss
 * cannot lose the new file. */
static fedc_status sync_dir(const char *path) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return fedc_error(FEDC_EIO, "%s: cannot open to sync: %s", dir, strerror(errno));
    int rc = fsync(fd), err = errno;
    close(fd);
    /* some file systems cannot sync a directory; the file itself was synced */
    if (rc != 0 && err != EINVAL && err != ENOTSUP) return fedc_error(FEDC_EIO, "%s: cannot sync: %s", dir, strerror(err));
    return FEDC_OK;
}

fedc_status fedc__safetensors_encode_into(const fedc_tensor_entry *tensors, int n, const fedc_metadata_entry *metadata,
                                          int nmeta, const fedc__byte_sink *sink) {
    text h = {0};
    fedc_status st = header(&h, tensors, n, metadata, nmeta);
    size_t bytes = 8 + h.n;
    for (int i = 0; !st && i < n; i++) bytes += fedc_type_bytes(&tensors[i].type);
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
    bool ok = !st && sink->begin(sink->ctx, bytes) && sink->put(sink->ctx, len, 8) && sink->put(sink->ctx, h.s, h.n);
    for (int i = 0; ok && i < n; i++) ok = sink->put(sink->ctx, tensors[i].data, fedc_type_bytes(&tensors[i].type));
    if (!st && !ok) st = fedc_error(FEDC_ENOMEM, "safetensors: out of memory for %zu bytes", bytes);
    fedc_free(h.s);
    return st;
}

static bool memory_begin(void *ctx, size_t total) {
    fedc__memory_sink *o = ctx;
    o->size = total, o->at = 0;
    return (o->data = fedc_malloc(total ? total : 1)) != NULL;
}

static bool memory_put(void *ctx, const void *data, size_t n) {
    fedc__memory_sink *o = ctx;
    if (n) memcpy(o->data + o->at, data, n);
    o->at += n;
    return true;
}

fedc__byte_sink fedc__memory_sink_of(fedc__memory_sink *m) { return (fedc__byte_sink){memory_begin, memory_put, m}; }

fedc_status fedc_safetensors_encode(const fedc_tensor_entry *tensors, int n, const fedc_metadata_entry *metadata,
                                    int nmeta, void **out, size_t *size) {
    fedc__memory_sink o = {0};
    fedc__byte_sink sink = fedc__memory_sink_of(&o);
    fedc_status st = fedc__safetensors_encode_into(tensors, n, metadata, nmeta, &sink);
    if (st) fedc_free(o.data), o.data = NULL, o.size = 0;
    *out = o.data, *size = o.size;
    return st;
}

/* Written to PATH.tmp, synced, renamed over PATH and the directory synced: PATH is
 * the old file or the new one, whole. On any failure the temporary is removed. */
fedc_status fedc_safetensors_write(const char *path, const fedc_tensor_entry *tensors, int n,
                                   const fedc_metadata_entry *metadata, int nmeta) {
    text h = {0};
    fedc_status st = header(&h, tensors, n, metadata, nmeta);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    uint64_t bytes = 8 + h.n;
    for (int i = 0; i < n; i++) bytes += fedc_type_bytes(&tensors[i].type);
    if (!st) st = check_size_limit(tmp, bytes);
    int fd = st ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!st && fd < 0) st = fedc_error(FEDC_EIO, "%s: cannot create: %s", tmp, strerror(errno));
    unsigned char len[8];
    for (int i = 0; i < 8; i++) len[i] = (unsigned char)((uint64_t)h.n >> (8 * i));
    bool ok = !st && write_all(fd, len, 8) && write_all(fd, h.s, h.n);
    for (int i = 0; ok && i < n; i++) ok = write_all(fd, tensors[i].data, fedc_type_bytes(&tensors[i].type));
    if (!st && !(ok && fsync(fd) == 0))
        st = fedc_error(FEDC_EIO, "%s: cannot write: %s", tmp, errno ? strerror(errno) : "short write");
    if (fd >= 0 && close(fd) != 0 && !st) st = fedc_error(FEDC_EIO, "%s: cannot close: %s", tmp, strerror(errno));
    if (!st && rename(tmp, path) != 0) st = fedc_error(FEDC_EIO, "%s: cannot rename to %s: %s", tmp, path, strerror(errno));
    if (st && fd >= 0) unlink(tmp); /* the previous file, if any, is untouched */
    if (!st) st = sync_dir(path);
    fedc_free(h.s);
    return st;
}

/* ----------------------------------------------------------------- read -- */

enum { MAX_TENSORS = 4096, MAX_META = 64 };

struct fedc_safetensors {
    char *path;
    unsigned char *bytes; /* the whole file */
    bool borrowed;        /* bytes are the caller's (fedc__safetensors_view), not freed here */
    size_t size, data_start;
    int n, cap, nmeta;
    /* grown as the header is read: a message of a few tensors costs a few
     * entries, not MAX_TENSORS of them zeroed */
    fedc_tensor_entry *tensors;
    char **names;
    char *meta_key[MAX_META], *meta_value[MAX_META];
};

/* Room for one more tensor entry, or false (out of memory). */
static bool grow(fedc_safetensors *s) {
    if (s->n < s->cap) return true;
    int cap = s->cap ? 2 * s->cap : 8;
    fedc_tensor_entry *t = fedc_realloc(s->tensors, (size_t)cap * sizeof *t);
    if (t) s->tensors = t;
    char **names = t ? fedc_realloc(s->names, (size_t)cap * sizeof *names) : NULL;
    if (names) s->names = names, s->cap = cap;
    return names != NULL;
}

typedef struct cursor {
    const char *s, *end, *start, *path;
} cursor;

static fedc_status bad(const cursor *c, const char *what) {
    return fedc_error(FEDC_EPARSE, "%s: header byte %td: expected %s", c->path, c->s - c->start, what);
}

static void skip_ws(cursor *c) {
    while (c->s < c->end && (*c->s == ' ' || *c->s == '\n' || *c->s == '\t' || *c->s == '\r')) c->s++;
}

static bool eat(cursor *c, char ch) {
    skip_ws(c);
    if (c->s < c->end && *c->s == ch) {
        c->s++;
        return true;
    }
    return false;
}

/* A string into a fedc_malloc'd copy. A NUL byte would cut the C string short
 * (two names could then collide), so it is refused. */
static fedc_status string(cursor *c, char **out) {
    if (!eat(c, '"')) return bad(c, "a string");
    const char *start = c->s;
    while (c->s < c->end && *c->s != '"') {
        if (*c->s == '\0') return bad(c, "a string without NUL bytes");
        if (*c->s == '\\' && c->end - c->s < 2) return bad(c, "the end of a string");
        c->s += *c->s == '\\' ? 2 : 1;
    }
    if (c->s >= c->end) return bad(c, "the end of a string");
    size_t n = (size_t)(c->s - start);
    c->s++;
    char *s = fedc_malloc(n + 1);
    if (!s) return fedc_error(FEDC_ENOMEM, "%s: out of memory", c->path);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) s[k++] = start[i] == '\\' ? start[++i] : start[i];
    s[k] = '\0';
    *out = s;
    return FEDC_OK;
}

/* The header is not NUL-terminated (the tensor data follows it, or the end of
 * the buffer), so the digits are copied out before strtoll sees them. */
static fedc_status integer(cursor *c, long long *v) {
    skip_ws(c);
    char digits[24];
    size_t n = 0;
    while (c->s + n < c->end && n < sizeof digits - 1 && (c->s[n] == '-' || (c->s[n] >= '0' && c->s[n] <= '9')))
        digits[n] = c->s[n], n++;
    digits[n] = '\0';
    char *end;
    errno = 0;
    *v = strtoll(digits, &end, 10);
    if (end == digits || errno || (c->s + n < c->end && c->s[n] >= '0' && c->s[n] <= '9'))
        return bad(c, "an integer (of at most 19 digits)");
    c->s += end - digits;
    return FEDC_OK;
}

/* [a, b, ...] of at most `max` integers. */
static fedc_status int_list(cursor *c, long long *v, int max, int *n) {
    *n = 0;
    if (!eat(c, '[')) return bad(c, "'['");
    if (eat(c, ']')) return FEDC_OK;
    do {
        if (*n == max) return bad(c, "fewer entries");
        fedc_status st = integer(c, &v[(*n)++]);
        if (st) return st;
    } while (eat(c, ','));
    return eat(c, ']') ? FEDC_OK : bad(c, "']'");
}

static fedc_status tensor(fedc_safetensors *s, cursor *c, char *name) {
    char *key = NULL, *tag = NULL;
    long long shape[FEDC_MAX_RANK], off[2] = {-1, -1};
    int rank = -1, noff = 0;
    fedc_status st = eat(c, '{') ? FEDC_OK : bad(c, "'{'");
    do {
        fedc_free(key);
        key = NULL;
        if (!st) st = string(c, &key);
        if (!st && !eat(c, ':')) st = bad(c, "':'");
        if (st) break;
        if (!strcmp(key, "dtype") && tag) st = bad(c, "one dtype");
        else if (!strcmp(key, "dtype")) st = string(c, &tag);
        else if (!strcmp(key, "shape")) st = int_list(c, shape, FEDC_MAX_RANK, &rank);
        else if (!strcmp(key, "data_offsets")) st = int_list(c, off, 2, &noff);
        else st = bad(c, "dtype, shape or data_offsets");
    } while (!st && eat(c, ','));
    if (!st && !eat(c, '}')) st = bad(c, "'}'");
    fedc_dtype dt = FEDC_DTYPE_COUNT;
    for (size_t i = 0; !st && tag && i < sizeof dtypes / sizeof *dtypes; i++)
        if (!strcmp(tag, dtypes[i].name)) dt = dtypes[i].dt;
    if (!st && (dt == FEDC_DTYPE_COUNT || rank < 0 || noff != 2))
        st = fedc_error(FEDC_EPARSE, "%s: tensor \"%s\": missing or unsupported dtype \"%s\", shape or offsets", s->path,
                        name, tag ? tag : "");
    fedc_type t = {0};
    if (!st) {
        int64_t dims[FEDC_MAX_RANK];
        for (int d = 0; d < rank; d++) dims[d] = shape[d];
        t = fedc_type_make(dt, rank, dims);
        if (fedc_type_count(&t) < 0 || fedc_type_bytes(&t) == SIZE_MAX)
            st = fedc_error(FEDC_EPARSE, "%s: tensor \"%s\": shape with a negative dimension or too many elements",
                            s->path, name);
    }
    /* Compared as unsigned, with the bytes available, so no sum can overflow. */
    if (!st && (off[0] < 0 || off[1] < off[0] || (uint64_t)(off[1] - off[0]) != (uint64_t)fedc_type_bytes(&t) ||
                (uint64_t)off[1] > (uint64_t)(s->size - s->data_start)))
        st = fedc_error(FEDC_EPARSE, "%s: tensor \"%s\": offsets [%lld, %lld] do not fit its shape or the file",
                        s->path, name, off[0], off[1]);
    for (int i = 0; !st && i < s->n; i++)
        if (!strcmp(s->names[i], name))
            st = fedc_error(FEDC_EPARSE, "%s: tensor \"%s\" appears twice in the header", s->path, name);
    if (!st && s->n == MAX_TENSORS) st = fedc_error(FEDC_EUNSUPPORTED, "%s: more than %d tensors", s->path, MAX_TENSORS);
    if (!st && !grow(s)) st = fedc_error(FEDC_ENOMEM, "%s: out of memory for tensor \"%s\"", s->path, name);
    if (!st) {
        s->names[s->n] = name;
        s->tensors[s->n] = (fedc_tensor_entry){name, t, s->bytes + s->data_start + off[0]};
        s->n++;
    } else {
        fedc_free(name);
    }
    fedc_free(key);
    fedc_free(tag);
    return st;
}

static fedc_status metadata(fedc_safetensors *s, cursor *c) {
    if (!eat(c, '{')) return bad(c, "'{'");
    if (eat(c, '}')) return FEDC_OK;
    do {
        if (s->nmeta == MAX_META) return fedc_error(FEDC_EUNSUPPORTED, "%s: more than %d metadata entries", s->path, MAX_META);
        char *key = NULL, *value = NULL;
        fedc_status st = string(c, &key);
        if (!st && !eat(c, ':')) st = bad(c, "':'");
        if (!st) st = string(c, &value); /* safetensors metadata values are strings */
        for (int i = 0; !st && i < s->nmeta; i++)
            if (!strcmp(s->meta_key[i], key))
                st = fedc_error(FEDC_EPARSE, "%s: metadata \"%s\" appears twice in the header", s->path, key);
        if (st) {
            fedc_free(value);
            fedc_free(key);
            return st;
        }
        s->meta_key[s->nmeta] = key, s->meta_value[s->nmeta] = value;
        s->nmeta++;
    } while (eat(c, ','));
    return eat(c, '}') ? FEDC_OK : bad(c, "'}'");
}

/* One "name": {...} of the header, a tensor or the metadata. */
static fedc_status entry(fedc_safetensors *s, cursor *c, bool *seen_meta) {
    char *name = NULL;
    fedc_status st = string(c, &name);
    if (!st && !eat(c, ':')) st = bad(c, "':'");
    bool is_meta = !st && !strcmp(name, "__metadata__");
    if (is_meta && *seen_meta) st = bad(c, "one __metadata__");
    if (st || is_meta) fedc_free(name);
    if (st) return st;
    if (!is_meta) return tensor(s, c, name); /* takes name */
    *seen_meta = true;
    return metadata(s, c);
}

static fedc_status parse_header(fedc_safetensors *s, size_t len) {
    const char *h = (const char *)s->bytes + 8;
    cursor c = {h, h + len, h, s->path};
    if (!eat(&c, '{')) return bad(&c, "'{'");
    if (!eat(&c, '}')) {
        bool seen_meta = false;
        do {
            fedc_status st = entry(s, &c, &seen_meta);
            if (st) return st;
        } while (eat(&c, ','));
        if (!eat(&c, '}')) return bad(&c, "'}'");
    }
    skip_ws(&c); /* writers pad the header with spaces */
    return c.s == c.end ? FEDC_OK : bad(&c, "the end of the header");
}

static fedc_status slurp(fedc_safetensors *s, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    fedc_status st = FEDC_OK;
    if (fseek(f, 0, SEEK_END) != 0 || (long)(s->size = (size_t)ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        st = fedc_error(FEDC_EIO, "%s: cannot read", path);
    if (!st && !(s->bytes = fedc_malloc(s->size ? s->size : 1))) st = fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    if (!st && fread(s->bytes, 1, s->size, f) != s->size) st = fedc_error(FEDC_EIO, "%s: cannot read", path);
    fclose(f);
    return st;
}

typedef struct extent {
    size_t start, end;
    int tensor;
} extent;

static int by_start(const void *a, const void *b) {
    const extent *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->end > y->end) - (x->end < y->end);
}

/* The format requires the data to be exactly the tensors' bytes, end to end:
 * no hole, no overlap, nothing after. Without this a header length one byte short
 * (a space-padded header still parses) would read every tensor one byte off. */
static fedc_status check_data_extent(const fedc_safetensors *s) {
    extent *e = fedc_malloc((size_t)(s->n ? s->n : 1) * sizeof *e);
    if (!e) return fedc_error(FEDC_ENOMEM, "%s: out of memory", s->path);
    for (int i = 0; i < s->n; i++) {
        size_t start = (size_t)((const unsigned char *)s->tensors[i].data - (s->bytes + s->data_start));
        e[i] = (extent){start, start + fedc_type_bytes(&s->tensors[i].type), i};
    }
    qsort(e, (size_t)s->n, sizeof *e, by_start);
    fedc_status st = FEDC_OK;
    size_t at = 0;
    for (int i = 0; !st && i < s->n; at = e[i++].end)
        if (e[i].start != at)
            st = fedc_error(FEDC_EPARSE, "%s: tensor \"%s\" starts at data byte %zu where the one before ends at %zu: "
                            "the data has a hole or an overlap", s->path, s->names[e[i].tensor], e[i].start, at);
    if (!st && at != s->size - s->data_start)
        st = fedc_error(FEDC_EPARSE, "%s: the tensors' data is %zu bytes but %zu follow the %zu-byte header", s->path,
                        at, s->size - s->data_start, s->data_start - 8);
    fedc_free(e);
    return st;
}

/* s->bytes and s->size hold the file: its header checked and parsed. */
static fedc_status parse_all(fedc_safetensors *s) {
    uint64_t len = 0;
    for (int i = 0; i < 8 && s->size >= 8; i++) len |= (uint64_t)s->bytes[i] << (8 * i);
    if (s->size < 8 || len > s->size - 8)
        return fedc_error(FEDC_EPARSE, "%s: not a safetensors file (a header of %llu bytes in %zu)", s->path,
                          (unsigned long long)len, s->size);
    s->data_start = 8 + (size_t)len;
    fedc_status st = parse_header(s, (size_t)len);
    return st ? st : check_data_extent(s);
}

static fedc_safetensors *make(const char *path) {
    fedc_safetensors *s = fedc_calloc(1, sizeof *s);
    if (!s || !(s->path = fedc_malloc(strlen(path) + 1))) {
        fedc_free(s);
        return NULL;
    }
    strcpy(s->path, path);
    return s;
}

fedc_status fedc_safetensors_read(const char *path, fedc_safetensors **out) {
    *out = NULL;
    fedc_safetensors *s = make(path);
    if (!s) return fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    fedc_status st = slurp(s, path);
    if (!st) st = parse_all(s);
    if (st) {
        fedc_safetensors_destroy(s);
        return st;
    }
    *out = s;
    return FEDC_OK;
}

/* bytes parsed: copied when copy, else borrowed (the caller keeps them alive). */
static fedc_status parse_bytes(const void *bytes, size_t size, const char *what, bool copy, fedc_safetensors **out) {
    *out = NULL;
    fedc_safetensors *s = make(what);
    if (s && !copy) s->bytes = (unsigned char *)bytes, s->borrowed = true;
    if (!s || (copy && !(s->bytes = fedc_malloc(size ? size : 1)))) {
        fedc_safetensors_destroy(s);
        return fedc_error(FEDC_ENOMEM, "%s: out of memory for %zu bytes", what, size);
    }
    if (copy && size) memcpy(s->bytes, bytes, size);
    s->size = size;
    fedc_status st = parse_all(s);
    if (st) {
        fedc_safetensors_destroy(s);
        return st;
    }
    *out = s;
    return FEDC_OK;
}

fedc_status fedc_safetensors_parse(const void *bytes, size_t size, const char *what, fedc_safetensors **out) {
    return parse_bytes(bytes, size, what, true, out);
}

fedc_status fedc__safetensors_view(const void *bytes, size_t size, const char *what, fedc_safetensors **out) {
    return parse_bytes(bytes, size, what, false, out);
}

void fedc_safetensors_destroy(fedc_safetensors *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) fedc_free(s->names[i]);
    for (int i = 0; i < s->nmeta; i++) fedc_free(s->meta_key[i]), fedc_free(s->meta_value[i]);
    fedc_free(s->tensors), fedc_free(s->names);
    if (!s->borrowed) fedc_free(s->bytes);
    fedc_free(s->path);
    fedc_free(s);
}

int fedc_safetensors_count(const fedc_safetensors *s) { return s->n; }
fedc_tensor_entry fedc_safetensors_tensor(const fedc_safetensors *s, int i) { return s->tensors[i]; }

fedc_status fedc_safetensors_find(const fedc_safetensors *s, const char *name, fedc_tensor_entry *out) {
    for (int i = 0; i < s->n; i++) {
        if (!strcmp(s->names[i], name)) {
            *out = s->tensors[i];
            return FEDC_OK;
        }
    }
    return fedc_error(FEDC_ENOTFOUND, "%s: no tensor \"%s\"", s->path, name);
}

const char *fedc_safetensors_metadata(const fedc_safetensors *s, const char *key) {
    for (int i = 0; i < s->nmeta; i++)
        if (!strcmp(s->meta_key[i], key)) return s->meta_value[i];
    return NULL;
}
