/* CIFAR-10 reader: the batches of the python tarball (cifar-10-python.tar.gz,
 * unpacked to cifar-10-batches-py/) as one centralized client "all" — a
 * partitioner makes it federated, as for IDX.
 *
 *   - `path` is one batch file (data_batch_3, test_batch), or a directory:
 *     then its data_batch_1, data_batch_2, ... in order, as many as are there
 *     from 1 on (the training set: all five). A directory without data_batch_1
 *     is FEDC_ENOTFOUND, so that format detection tries the next reader.
 *   - Each file is a Python 2 pickle (src/data/pickle_cifar10.c parses it,
 *     bounded, calling nothing).
 *   - Features: "x" u8[n, 32, 32, 3], the pixels 0-255 moved from the file's
 *     three colour planes to height x width x channel (what the image models
 *     take), and "y" i32[n], the labels 0-9.
 *
 * Opening parses every file (for its count, and so that a damaged file fails
 * at open); loading parses them again and keeps nothing in between. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "data/pickle_cifar10.h"

enum { MAX_BATCHES = 64 };

typedef struct cifar_source {
    char *files[MAX_BATCHES];
    int nfiles;
    int64_t n;
} cifar_source;

static void cifar_destroy(void *impl) {
    cifar_source *s = impl;
    if (!s) return;
    for (int i = 0; i < s->nfiles; i++) fedc_free(s->files[i]);
    fedc_free(s);
}

/* Reads and parses one file; *buf holds the bytes b->pixels points into. */
static fedc_status parse_file(const char *path, char **buf, fedc__cifar10_batch *b) {
    size_t len = 0;
    fedc_status st = fedc__read_file(path, buf, &len);
    if (!st) st = fedc__cifar10_parse(path, (const uint8_t *)*buf, len, b);
    if (st) fedc_free(*buf), *buf = NULL;
    return st;
}

static fedc_status add_file(cifar_source *s, char *path) {
    if (!path) return fedc_error(FEDC_ENOMEM, "CIFAR-10: out of memory");
    s->files[s->nfiles++] = path;
    return FEDC_OK;
}

/* The batch files of `path`: itself, or a directory's data_batch_1, 2, ... */
static fedc_status list_files(cifar_source *s, const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return fedc_error(FEDC_EIO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return add_file(s, fedc__strdup(path));
    fedc_status st = FEDC_OK;
    for (int i = 1; !st && i <= MAX_BATCHES; i++) {
        char name[32];
        snprintf(name, sizeof name, "data_batch_%d", i);
        char *file = fedc__path_join(path, name);
        if (file && (stat(file, &sb) != 0 || !S_ISREG(sb.st_mode))) {
            fedc_free(file);
            break;
        }
        st = add_file(s, file);
    }
    if (!st && s->nfiles == 0)
        st = fedc_error(FEDC_ENOTFOUND, "%s: no CIFAR-10 python batch (data_batch_1) in the directory", path);
    return st;
}

static fedc_status count_examples(cifar_source *s) {
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < s->nfiles; i++) {
        char *buf = NULL;
        fedc__cifar10_batch b;
        st = parse_file(s->files[i], &buf, &b);
        if (!st) s->n += b.n;
        if (!st) fedc__cifar10_batch_free(&b);
        fedc_free(buf);
    }
    return st;
}

/* Example e's three planes (R, G, B; 32 x 32 each) to 32 x 32 x 3. */
static void planes_to_hwc(const uint8_t *planes, uint8_t *hwc) {
    for (int p = 0; p < FEDC__CIFAR10_PLANE; p++)
        for (int c = 0; c < 3; c++) hwc[p * 3 + c] = planes[c * FEDC__CIFAR10_PLANE + p];
}

/* Fills x and y from every file; a file whose count changed since open is an error. */
static fedc_status fill(const cifar_source *s, uint8_t *x, int32_t *y) {
    int64_t at = 0;
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < s->nfiles; i++) {
        char *buf = NULL;
        fedc__cifar10_batch b;
        st = parse_file(s->files[i], &buf, &b);
        if (!st && at + b.n > s->n) st = fedc_error(FEDC_EPARSE, "%s: the file changed since it was opened", s->files[i]);
        for (int64_t e = 0; !st && e < b.n; e++) {
            planes_to_hwc(b.pixels + e * 3 * FEDC__CIFAR10_PLANE, x + (at + e) * 3 * FEDC__CIFAR10_PLANE);
            y[at + e] = b.labels[e];
        }
        if (!st) at += b.n;
        if (!st) fedc__cifar10_batch_free(&b);
        fedc_free(buf);
    }
    if (!st && at != s->n) st = fedc_error(FEDC_EPARSE, "%s: the files changed since they were opened", s->files[0]);
    return st;
}

static fedc_status cifar_load(fedc_dataset *ds, int64_t i, fedc_client_data **out) {
    (void)i; /* the only client */
    const cifar_source *s = ds->impl;
    int64_t dims[4] = {s->n, FEDC__CIFAR10_SIDE, FEDC__CIFAR10_SIDE, 3};
    uint8_t *x = fedc_malloc((size_t)(s->n ? s->n : 1) * 3 * FEDC__CIFAR10_PLANE);
    int32_t *y = fedc_malloc((size_t)(s->n ? s->n : 1) * sizeof *y);
    fedc_status st = x && y ? fedc_client_data_create(out, ds->ids[0], s->n)
                            : fedc_error(FEDC_ENOMEM, "%s: out of memory for %lld images", ds->path, (long long)s->n);
    if (!st) st = fill(s, x, y);
    if (!st) st = fedc__client_adopt_array(*out, "x", fedc_type_make(FEDC_U8, 4, dims), x), x = NULL;
    if (!st) st = fedc__client_adopt_array(*out, "y", fedc_type_make(FEDC_I32, 1, dims), y), y = NULL;
    fedc_free(x), fedc_free(y); /* what no feature took */
    if (st) {
        fedc_client_data_destroy(*out);
        *out = NULL;
    }
    return st;
}

static const fedc__dataset_ops cifar_ops = {cifar_load, cifar_destroy};

fedc_status fedc__open_cifar10(fedc_dataset **out, const char *path) {
    *out = NULL;
    cifar_source *s = fedc_calloc(1, sizeof *s);
    if (!s) return fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    fedc_status st = list_files(s, path);
    if (!st) st = count_examples(s);
    if (st) {
        cifar_destroy(s);
        return st;
    }
    st = fedc__dataset_create(out, &cifar_ops, FEDC_FORMAT_CIFAR10, path, s);
    if (!st) st = fedc__dataset_add_client(*out, "all", s->n);
    if (st) {
        fedc_dataset_destroy(*out);
        *out = NULL;
    }
    return st;
}
