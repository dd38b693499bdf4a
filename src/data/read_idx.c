/* IDX reader (MNIST, Fashion-MNIST, EMNIST's IDX release): an images file and
 * its labels file as one centralized client "all" — a partitioner makes it
 * federated.
 *
 *   - `path` is the images file, e.g. train-images-idx3-ubyte.gz. The labels file
 *     is the same name with "images-idx3" replaced by "labels-idx1", in the same
 *     directory (train-labels-idx1-ubyte.gz).
 *   - Plain or gzipped: zlib's gzread reads a file without a gzip header as it
 *     is, so both go through the same code.
 *   - Images: magic 0x00000803 (unsigned bytes, 3 dimensions), big-endian dims
 *     [n, rows, cols]; labels: magic 0x00000801, dims [n].
 *   - Features: "x" u8[n, rows, cols], the raw pixels 0-255 (not scaled: a model
 *     that wants floats in [0, 1] converts, and the u8 array is a quarter of the
 *     size), and "y" i32[n].
 *
 * Opening reads the two headers (and, for a plain file, checks its size); the
 * pixels are read when the client is loaded, which is when a truncated gzip
 * stream shows. Byte offsets in errors count the uncompressed data. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "data/dataset.h"

#define IDX_IMAGES_MAGIC 0x00000803u
#define IDX_LABELS_MAGIC 0x00000801u

typedef struct idx_source {
    char *images, *labels;
    int64_t n, rows, cols;
} idx_source;

static void idx_destroy(void *impl) {
    idx_source *s = impl;
    if (!s) return;
    fedc_free(s->images);
    fedc_free(s->labels);
    fedc_free(s);
}

/* ---------------------------------------------------------- file access -- */

static fedc_status open_gz(const char *path, gzFile *f) {
    struct stat st;
    if (stat(path, &st) != 0) return fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return fedc_error(FEDC_EIO, "%s: not a regular file", path);
    *f = gzopen(path, "rb");
    if (!*f) return fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    gzbuffer(*f, 1u << 17); /* the default 8 KiB makes a 47 MB read slow */
    return FEDC_OK;
}

/* zlib's error text, less the path it starts with (our message has it). */
static const char *gz_message(gzFile f, const char *path, int *errnum) {
    const char *msg = gzerror(f, errnum);
    size_t skip = strlen(path);
    if (strncmp(msg, path, skip) == 0 && strncmp(msg + skip, ": ", 2) == 0) msg += skip + 2;
    return msg;
}

/* Reads bytes [from, to) of `what`, which is `total` bytes at uncompressed
 * offset `offset`, into buf; a short read is a truncated file. gzread takes an
 * unsigned count, hence the chunks. */
static fedc_status read_part(gzFile f, const char *path, int64_t offset, size_t total, size_t from, size_t to,
                             void *buf, const char *what) {
    for (size_t done = from; done < to;) {
        unsigned chunk = to - done > (1u << 30) ? 1u << 30 : (unsigned)(to - done);
        int got = gzread(f, (char *)buf + (done - from), chunk);
        int errnum = Z_OK;
        const char *msg = got <= 0 ? gz_message(f, path, &errnum) : "";
        if (got < 0 || (got == 0 && errnum != Z_OK))
            return fedc_error(FEDC_EPARSE, "%s: %s: truncated or corrupt gzip data at uncompressed byte %lld (%s)",
                              path, what, (long long)(offset + (int64_t)done), msg);
        if (got == 0)
            return fedc_error(FEDC_EPARSE, "%s: truncated: %s needs %zu bytes from byte %lld, the file ends at byte %lld",
                              path, what, total, (long long)offset, (long long)(offset + (int64_t)done));
        done += (size_t)got;
    }
    return FEDC_OK;
}

static fedc_status read_exact(gzFile f, const char *path, int64_t offset, void *buf, size_t len, const char *what) {
    return read_part(f, path, offset, len, 0, len, buf, what);
}

/* Reads `len` bytes into a new buffer of `room` >= len bytes. A gzip stream can
 * claim in its header far more than it holds (a 100-byte file, a terabyte of
 * pixels), so the buffer grows as the data arrives, doubling from 64 MiB, rather
 * than being allocated whole from the header. */
static fedc_status read_new(gzFile f, const char *path, int64_t offset, size_t len, size_t room, const char *what,
                            unsigned char **out) {
    enum { FIRST = 64 << 20 };
    unsigned char *buf = NULL;
    size_t done = 0, cap = 0;
    fedc_status st = FEDC_OK;
    while (!st && done < len) {
        size_t next = cap < FIRST / 2 ? FIRST : 2 * cap;
        next = next < len ? next : len;
        unsigned char *grown = fedc_realloc(buf, next);
        if (!grown) st = fedc_error(FEDC_ENOMEM, "%s: out of memory for %zu bytes of %s", path, next, what);
        else buf = grown, cap = next;
        if (!st) st = read_part(f, path, offset, len, done, cap, buf + done, what);
        done = cap;
    }
    unsigned char *whole = st ? NULL : fedc_realloc(buf, room ? room : 1);
    if (!st && !whole) st = fedc_error(FEDC_ENOMEM, "%s: out of memory for %zu bytes of %s", path, room, what);
    if (st) {
        fedc_free(buf);
        return st;
    }
    *out = whole;
    return FEDC_OK;
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads the magic and `rank` dims and checks the magic, saying what is wrong
 * with it (not IDX at all, another element type, another rank). */
static fedc_status read_header(gzFile f, const char *path, uint32_t magic, int64_t *dims) {
    int rank = (int)(magic & 0xff);
    unsigned char h[16];
    fedc_status st = read_exact(f, path, 0, h, 4 + 4 * (size_t)rank, "the header");
    if (st) return st;
    uint32_t got = be32(h);
    if (got >> 16 != 0)
        return fedc_error(FEDC_EPARSE, "%s: not an IDX file (magic 0x%08x; IDX starts with two zero bytes)", path, got);
    if ((got >> 8 & 0xff) != 0x08)
        return fedc_error(FEDC_EUNSUPPORTED, "%s: IDX element type 0x%02x is not supported (only unsigned bytes, 0x08)",
                          path, got >> 8 & 0xff);
    if (got != magic)
        return fedc_error(FEDC_EPARSE, "%s: magic 0x%08x: %u dimensions, expected %d (magic 0x%08x)", path, got,
                          got & 0xff, rank, magic);
    for (int i = 0; i < rank; i++) dims[i] = be32(h + 4 + 4 * i);
    return FEDC_OK;
}

/* The header of one file, and its size when it is plain (not gzipped; else
 * -1), so that truncation shows at open where it can. */
static fedc_status probe(const char *path, uint32_t magic, int64_t *dims, int64_t *plain_size) {
    gzFile f;
    fedc_status st = open_gz(path, &f);
    if (st) return st;
    st = read_header(f, path, magic, dims);
    bool plain = gzdirect(f);
    gzclose(f);
    struct stat sb;
    *plain_size = plain && stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
    return st;
}

static fedc_status check_size(const char *path, uint32_t magic, int64_t plain_size, int64_t n, int64_t per_example) {
    int64_t need = 4 + 4 * (int64_t)(magic & 0xff) + n * per_example;
    if (plain_size >= 0 && plain_size < need)
        return fedc_error(FEDC_EPARSE, "%s: truncated: %lld examples need %lld bytes, the file has %lld", path,
                          (long long)n, (long long)need, (long long)plain_size);
    return FEDC_OK;
}

/* ------------------------------------------------------------- the index -- */

/* The labels file's path: "images-idx3" in the file name becomes "labels-idx1". */
static fedc_status labels_path(const char *images, char **out) {
    static const char from[] = "images-idx3", to[] = "labels-idx1";
    const char *slash = strrchr(images, '/');
    const char *name = slash ? slash + 1 : images, *at = strstr(name, from);
    if (!at)
        return fedc_error(FEDC_EINVAL, "%s: an IDX images file's name must contain \"%s\" (its labels file is the "
                          "same name with \"%s\")", images, from, to);
    *out = fedc__strdup(images);
    if (!*out) return fedc_error(FEDC_ENOMEM, "%s: out of memory", images);
    memcpy(*out + (at - images), to, sizeof to - 1); /* same length, so in place */
    return FEDC_OK;
}

/* Reads both headers and checks that they agree. The element count is capped so
 * that every size below fits size_t and int64_t. */
static fedc_status read_shapes(idx_source *s) {
    int64_t dims[3], ldims[1], size, lsize;
    fedc_status st = probe(s->images, IDX_IMAGES_MAGIC, dims, &size);
    if (!st && (dims[1] == 0 || dims[2] == 0))
        st = fedc_error(FEDC_EPARSE, "%s: images of %lld x %lld pixels", s->images, (long long)dims[1],
                        (long long)dims[2]);
    const int64_t limit = INT64_C(1) << 40; /* rows and cols are each below 2^32: divide, never multiply */
    if (!st && (dims[1] > limit / dims[2] || dims[0] > limit / (dims[1] * dims[2])))
        st = fedc_error(FEDC_EUNSUPPORTED, "%s: %lld images of %lld x %lld pixels are more than 2^40 bytes",
                        s->images, (long long)dims[0], (long long)dims[1], (long long)dims[2]);
    if (!st) st = check_size(s->images, IDX_IMAGES_MAGIC, size, dims[0], dims[1] * dims[2]);
    struct stat sb;
    if (!st && stat(s->labels, &sb) != 0)
        st = fedc_error(FEDC_ENOTFOUND, "%s: no labels file: looked for %s", s->images, s->labels);
    if (!st) st = probe(s->labels, IDX_LABELS_MAGIC, ldims, &lsize);
    if (!st) st = check_size(s->labels, IDX_LABELS_MAGIC, lsize, ldims[0], 1);
    if (!st && ldims[0] != dims[0])
        st = fedc_error(FEDC_EPARSE, "%s has %lld images but %s has %lld labels", s->images, (long long)dims[0],
                        s->labels, (long long)ldims[0]);
    if (!st) s->n = dims[0], s->rows = dims[1], s->cols = dims[2];
    return st;
}

/* ------------------------------------------------------------- loading -- */

/* Opens a file again and reads the header it had at open. */
static fedc_status reopen(const char *path, uint32_t magic, const int64_t *want, gzFile *f) {
    int64_t dims[3] = {0};
    fedc_status st = open_gz(path, f);
    if (st) return st;
    st = read_header(*f, path, magic, dims);
    for (int i = 0; !st && i < (int)(magic & 0xff); i++)
        if (dims[i] != want[i]) st = fedc_error(FEDC_EPARSE, "%s: the header changed since it was opened", path);
    if (st) gzclose(*f);
    return st;
}

static fedc_status load_images(const idx_source *s, fedc_client_data *c) {
    int64_t dims[3] = {s->n, s->rows, s->cols};
    size_t bytes = (size_t)(s->n * s->rows * s->cols);
    gzFile f;
    fedc_status st = reopen(s->images, IDX_IMAGES_MAGIC, dims, &f);
    if (st) return st;
    unsigned char *x = NULL;
    st = read_new(f, s->images, 16, bytes, bytes, "the pixels", &x);
    gzclose(f);
    return st ? st : fedc__client_adopt_array(c, "x", fedc_type_make(FEDC_U8, 3, dims), x);
}

/* The label bytes are read into the front of the i32 array and widened in
 * place from the back: y[i] lands on bytes 4i..4i+3, never on a byte j < i
 * still to be read. One buffer instead of two. */
static fedc_status load_labels(const idx_source *s, fedc_client_data *c) {
    gzFile f;
    fedc_status st = reopen(s->labels, IDX_LABELS_MAGIC, &s->n, &f);
    if (st) return st;
    unsigned char *bytes = NULL;
    st = read_new(f, s->labels, 8, (size_t)s->n, (size_t)s->n * sizeof(int32_t), "the labels", &bytes);
    gzclose(f);
    if (st) return st;
    int32_t *y = (void *)bytes;
    for (int64_t i = s->n - 1; i >= 0; i--) {
        int32_t label = bytes[i];
        memcpy((unsigned char *)y + 4 * i, &label, sizeof label);
    }
    return fedc__client_adopt_array(c, "y", fedc_type_make(FEDC_I32, 1, &s->n), y);
}

static fedc_status idx_load(fedc_dataset *ds, int64_t i, fedc_client_data **out) {
    (void)i; /* the only client */
    const idx_source *s = ds->impl;
    fedc_status st = fedc_client_data_create(out, ds->ids[0], s->n);
    if (!st) st = load_images(s, *out);
    if (!st) st = load_labels(s, *out);
    if (st) {
        fedc_client_data_destroy(*out);
        *out = NULL;
    }
    return st;
}

static const fedc__dataset_ops idx_ops = {idx_load, idx_destroy};

fedc_status fedc__open_idx(fedc_dataset **out, const char *path) {
    *out = NULL;
    idx_source *s = fedc_calloc(1, sizeof *s);
    if (!s) return fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    s->images = fedc__strdup(path);
    fedc_status st = s->images ? labels_path(path, &s->labels) : fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    if (!st) st = read_shapes(s);
    if (st) {
        idx_destroy(s);
        return st;
    }
    st = fedc__dataset_create(out, &idx_ops, FEDC_FORMAT_IDX, path, s);
    if (!st) st = fedc__dataset_add_client(*out, "all", s->n);
    if (st) {
        fedc_dataset_destroy(*out);
        *out = NULL;
    }
    return st;
}
