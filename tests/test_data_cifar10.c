/*
 * The CIFAR-10 reader (src/data/read_cifar10.c, src/data/pickle_cifar10.c) on
 * batches written here byte for byte as the tarball's are (Python 2 cPickle,
 * protocol 2: the dict of 'data', 'labels', 'batch_label', 'filenames', the
 * ndarray through numpy's _reconstruct, memo puts after every object, appends in
 * batches of 1,000), so no Python or numpy is needed: the planes moved to
 * height x width x channel, the labels, a directory's batches in order and its
 * test_batch; every truncation and a set of damaged files refused with the file
 * and the byte offset; then fedc train on such a directory (partitioned IID,
 * the cifar10 task, pfl_cnn) and on synthetic:cifar10 images.
 */
#include "core/internal.h"
#include "harness.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "data/pickle_cifar10.h"
#include "fedc/fl.h"

/* ------------------------------------------------- writing a batch -- */

typedef struct bytes {
    uint8_t *p;
    size_t n, cap;
    int memo;
} bytes;

static void put(bytes *b, const void *data, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = (b->n + n) * 2;
        uint8_t *grown = fedc_realloc(b->p, cap);
        if (!grown) return;
        b->p = grown, b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}
static void op(bytes *b, uint8_t o) { put(b, &o, 1); }
static void binput(bytes *b) { op(b, 'q'), op(b, (uint8_t)++b->memo); }
static void str(bytes *b, const char *s) { op(b, 'U'), op(b, (uint8_t)strlen(s)), put(b, s, strlen(s)); }
static void global(bytes *b, const char *name) { op(b, 'c'), put(b, name, strlen(name)); }

/* BININT1, BININT2 or BININT, as cPickle picks. */
static void integer(bytes *b, int64_t v) {
    uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    if (v >= 0 && v < 256) op(b, 'K'), put(b, le, 1);
    else if (v >= 0 && v < 65536) op(b, 'M'), put(b, le, 2);
    else op(b, 'J'), put(b, le, 4);
}

/* The pixel of example e, channel c, position p (row-major in the plane). */
static uint8_t pixel(int64_t e, int c, int p) { return (uint8_t)(e * 7 + c * 31 + p * 13); }
static int32_t label(int64_t e, int salt) { return (int32_t)((e * 3 + salt) % 10); }

typedef struct damage {
    int64_t shape_cols;  /* 3072 */
    const char *dtype;   /* "u1" */
    const char *reconstruct; /* "numpy.core.multiarray\n_reconstruct\n" */
    int64_t labels;      /* how many labels (n) */
    int bad_label;       /* -1: none; else that label is 10 */
} damage;

static const damage INTACT = {3072, "u1", "numpy.core.multiarray\n_reconstruct\n", -1, -1};

/* Items of a list, as cPickle appends them: MARK ... APPENDS per 1,000, a lone APPEND for one. */
static void list_items(bytes *b, int64_t n, void (*item)(bytes *, int64_t, int), int salt) {
    for (int64_t at = 0; at < n; at += 1000) {
        int64_t k = n - at < 1000 ? n - at : 1000;
        if (k > 1) op(b, '(');
        for (int64_t i = at; i < at + k; i++) item(b, i, salt);
        op(b, k > 1 ? 'e' : 'a');
    }
}
static void label_item(bytes *b, int64_t e, int salt) { integer(b, label(e, salt)); }
static void name_item(bytes *b, int64_t e, int salt) {
    char name[32];
    snprintf(name, sizeof name, "img_%d_%lld.png", salt, (long long)e);
    str(b, name), binput(b);
}

static void ndarray(bytes *b, int64_t n, const damage *d) {
    global(b, d->reconstruct), binput(b);
    global(b, "numpy\nndarray\n"), binput(b);
    integer(b, 0), op(b, 0x85), str(b, "b"), op(b, 0x87), op(b, 'R'), binput(b);
    op(b, '('), integer(b, 1), integer(b, n), integer(b, d->shape_cols), op(b, 0x86);
    global(b, "numpy\ndtype\n"), binput(b);
    str(b, d->dtype), integer(b, 0), integer(b, 1), op(b, 0x87), op(b, 'R'), binput(b);
    op(b, '('), integer(b, 3), str(b, "|"), op(b, 'N'), op(b, 'N'), op(b, 'N');
    integer(b, -1), integer(b, -1), integer(b, 0), op(b, 't'), op(b, 'b');
    op(b, 0x89);
    uint32_t len = (uint32_t)(n * 3072);
    uint8_t le[4] = {(uint8_t)len, (uint8_t)(len >> 8), (uint8_t)(len >> 16), (uint8_t)(len >> 24)};
    op(b, 'T'), put(b, le, 4);
    for (int64_t e = 0; e < n; e++)
        for (int c = 0; c < 3; c++)
            for (int p = 0; p < 1024; p++) op(b, pixel(e, c, p));
    binput(b);
    op(b, 't'), op(b, 'b');
}

static void labels_list(bytes *b, int64_t n, int salt, const damage *d) {
    op(b, ']'), binput(b);
    int64_t count = d->labels >= 0 ? d->labels : n;
    bytes tmp = {0};
    list_items(&tmp, count, label_item, salt);
    if (d->bad_label >= 0) { /* the bad_label-th label's BININT1 operand becomes 10 */
        for (size_t i = 0, seen = 0; i + 1 < tmp.n; i++)
            if (tmp.p[i] == 'K' && seen++ == (size_t)d->bad_label) {
                tmp.p[i + 1] = 10;
                break;
            }
    }
    put(b, tmp.p, tmp.n);
    fedc_free(tmp.p);
}

/* A batch of n examples; labels label(e, salt). */
static bytes batch(int64_t n, int salt, const damage *d) {
    bytes b = {0};
    op(&b, 0x80), op(&b, 2), op(&b, '}'), binput(&b), op(&b, '(');
    str(&b, "data"), binput(&b), ndarray(&b, n, d);
    str(&b, "labels"), binput(&b), labels_list(&b, n, salt, d);
    str(&b, "batch_label"), binput(&b), str(&b, "training batch 1 of 5"), binput(&b);
    str(&b, "filenames"), binput(&b), op(&b, ']'), binput(&b), list_items(&b, n, name_item, salt);
    op(&b, 'u'), op(&b, '.');
    return b;
}

static void write_file(const char *path, const bytes *b) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b->p, 1, b->n, f) == b->n);
    if (f) fclose(f);
}

/* ------------------------------------------------------------ reading -- */

/* Client 0 of `ds` is examples [0, n) of the batches, the i-th with labels salt i + 1. */
static void check_client(fedc_dataset *ds, const int64_t *sizes, int batches) {
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_dataset_client(ds, 0, &c));
    const fedc_feature *x = c ? fedc_client_feature(c, "x") : NULL, *y = c ? fedc_client_feature(c, "y") : NULL;
    CHECK(x && y && x->type.dtype == FEDC_U8 && x->type.rank == 4 && y->type.dtype == FEDC_I32);
    if (!x || !y) {
        fedc_client_data_destroy(c);
        return;
    }
    CHECK(x->type.dims[1] == 32 && x->type.dims[2] == 32 && x->type.dims[3] == 3);
    const uint8_t *px = x->data;
    const int32_t *labels = y->data;
    int64_t at = 0, wrong = 0;
    for (int k = 0; k < batches; k++)
        for (int64_t e = 0; e < sizes[k]; e++, at++) {
            wrong += labels[at] != label(e, k + 1);
            for (int h = 0; h < 32; h++)
                for (int w = 0; w < 32; w++)
                    for (int ch = 0; ch < 3; ch++)
                        wrong += px[((at * 32 + h) * 32 + w) * 3 + ch] != pixel(e, ch, h * 32 + w);
        }
    CHECK_EQ_INT(at, x->type.dims[0]);
    CHECK_EQ_INT(wrong, 0);
    fedc_client_data_destroy(c);
}

static const char *dir;

static void write_dir(void) {
    static const int64_t sizes[3] = {1003, 2, 3}; /* 1,003: two batches of appends */
    static const char *names[3] = {"data_batch_1", "data_batch_2", "test_batch"};
    for (int k = 0; k < 3; k++) {
        bytes b = batch(sizes[k], k + 1, &INTACT);
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        write_file(path, &b);
        fedc_free(b.p);
    }
}

static void test_directory_and_files(void) {
    fedc_dataset *ds = NULL;
    CHECK_OK(fedc_dataset_open(&ds, dir, FEDC_FORMAT_AUTO));
    if (!ds) return;
    CHECK(fedc_dataset_format(ds) == FEDC_FORMAT_CIFAR10);
    CHECK(!strcmp(fedc_data_format_name(FEDC_FORMAT_CIFAR10), "cifar10"));
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), 1);
    CHECK_EQ_INT(fedc_dataset_client_examples(ds, 0), 1005);
    check_client(ds, (const int64_t[]){1003, 2}, 2);
    fedc_dataset_destroy(ds);
    char path[512];
    snprintf(path, sizeof path, "%s/test_batch", dir);
    ds = NULL;
    CHECK_OK(fedc_dataset_open(&ds, path, FEDC_FORMAT_AUTO)); /* by its name */
    if (ds) {
        CHECK_EQ_INT(fedc_dataset_client_examples(ds, 0), 3);
        /* test_batch was written with salt 3: check_client's batch 0 has salt 1, so compare by hand */
        fedc_client_data *c = NULL;
        CHECK_OK(fedc_dataset_client(ds, 0, &c));
        const fedc_feature *y = c ? fedc_client_feature(c, "y") : NULL;
        for (int e = 0; y && e < 3; e++) CHECK_EQ_INT(((const int32_t *)y->data)[e], label(e, 3));
        fedc_client_data_destroy(c);
        fedc_dataset_destroy(ds);
    }
    const char *empty = fedc_test_tmp("empty");
    CHECK(mkdir(empty, 0700) == 0);
    CHECK_ERR(fedc_dataset_open(&ds, empty, FEDC_FORMAT_CIFAR10), FEDC_ENOTFOUND, "data_batch_1");
    CHECK_ERR(fedc_dataset_open(&ds, empty, FEDC_FORMAT_AUTO), FEDC_EUNSUPPORTED, "data_batch_1");
}

/* Every proper prefix of a valid batch is refused as truncated or damaged, naming the file. */
static void test_every_truncation(void) {
    bytes b = batch(2, 1, &INTACT);
    fedc__cifar10_batch out;
    CHECK_OK(fedc__cifar10_parse("whole", b.p, b.n, &out));
    CHECK_EQ_INT(out.n, 2);
    fedc__cifar10_batch_free(&out);
    int refused = 0;
    for (size_t len = 0; len < b.n; len++) {
        fedc_status st = fedc__cifar10_parse("cut", b.p, len, &out);
        refused += st == FEDC_EPARSE && strstr(fedc_errmsg(), "cut: ") == fedc_errmsg();
        if (st == FEDC_OK) fedc__cifar10_batch_free(&out);
    }
    CHECK_EQ_INT(refused, (int64_t)b.n);
    fedc_free(b.p);
}

static void expect_refused(const bytes *b, fedc_status want, const char *text) {
    fedc__cifar10_batch out;
    fedc_status st = fedc__cifar10_parse("bad_batch", b->p, b->n, &out);
    CHECK_MSG(st == want && strstr(fedc_errmsg(), "bad_batch") && strstr(fedc_errmsg(), text),
              "wanted %s with \"%s\", got %s: %s", fedc_status_str(want), text, fedc_status_str(st), fedc_errmsg());
    if (st == FEDC_OK) fedc__cifar10_batch_free(&out);
}

static void test_damaged(void) {
    damage d = INTACT;
    d.shape_cols = 3071;
    bytes b = batch(2, 1, &d);
    expect_refused(&b, FEDC_EPARSE, "shape is not (n, 3072)");
    fedc_free(b.p);
    d = INTACT, d.dtype = "f4";
    b = batch(2, 1, &d);
    expect_refused(&b, FEDC_EPARSE, "not uint8");
    fedc_free(b.p);
    d = INTACT, d.reconstruct = "os\nsystem\n";
    b = batch(2, 1, &d);
    expect_refused(&b, FEDC_EUNSUPPORTED, "global os.system");
    expect_refused(&b, FEDC_EUNSUPPORTED, "byte 14:");
    fedc_free(b.p);
    d = INTACT, d.labels = 3;
    b = batch(2, 1, &d);
    expect_refused(&b, FEDC_EPARSE, "2 images but 3 labels");
    fedc_free(b.p);
    d = INTACT, d.bad_label = 1;
    b = batch(2, 1, &d);
    expect_refused(&b, FEDC_EPARSE, "label 1 is 10");
    fedc_free(b.p);
    b = batch(2, 1, &INTACT);
    b.p[1] = 4; /* protocol 4 */
    expect_refused(&b, FEDC_EPARSE, "protocol 2");
    b.p[1] = 2;
    op(&b, 'N'); /* a byte after STOP */
    expect_refused(&b, FEDC_EPARSE, "after the pickle's STOP");
    b.n--;
    b.p[b.n - 2] = 'h'; /* BINGET instead of SETITEMS */
    expect_refused(&b, FEDC_EUNSUPPORTED, "opcode 0x68");
    memcpy(b.p + 8, "dada", 4); /* no "data" key any more */
    b.p[b.n - 2] = 'u';
    expect_refused(&b, FEDC_EPARSE, "no \"data\"");
    fedc_free(b.p);
}

/* ------------------------------------------------------------ training -- */

static void train(const char *data, const char *test, const char *name) {
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = data, c.test_data = test, c.model = "pfl_cnn", c.num_clients = 4, c.rounds = 2;
    c.clients_per_round = 2, c.algorithm.batch_size = 10, c.steps = 1, c.threads = 1, c.quiet = true;
    c.out_dir = fedc_test_tmp(name);
    fedc_train_result r;
    CHECK_OK(fedc_train(&c, &r));
    CHECK_MSG(isfinite(r.test_loss) && r.test_accuracy >= 0 && r.test_accuracy <= 1, "%s: loss %g, accuracy %g", name,
              r.test_loss, r.test_accuracy);
}

static void test_train(void) {
    train(dir, NULL, "train-dir"); /* the test split: the directory's test_batch */
    train("synthetic:cifar10:4:10", "synthetic:cifar10:1:20", "train-synthetic");
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = dir, c.model = "stackoverflow_lstm", c.quiet = true, c.out_dir = fedc_test_tmp("train-bad");
    fedc_train_result r;
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "pfl_cnn");
}

int main(int argc, char **argv) {
    dir = fedc_test_tmpdir("cifar10");
    if (!dir) return 1;
    write_dir();
    static const fedc_test tests[] = {
        {"directory_and_files", test_directory_and_files},
        {"every_truncation", test_every_truncation},
        {"damaged", test_damaged},
        {"train", test_train},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
