/*
 * Tests of the LEAF JSON reader (src/data/read_leaf.c) and its tokenizer
 * (src/data/json.c): the real FEMNIST and Shakespeare files under ../shared/data
 * (skipped with a note where they are absent), small hand-written files, plain and
 * gzipped, for the shapes and types a feature can have, every way a file is
 * refused (status and message), and allocation failures. Files are written under
 * a fresh mkdtemp directory, removed at the end.
 */
#include "core/internal.h"
#include "data_fixtures.h"
#include "harness.h"

#include <dirent.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "data/dataset.h"

static const char *tmpdir; /* fedc_test_tmpdir */

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Writes bytes to fedc_test_tmp(name), gzipped when the name ends in .gz. */
static void write_bytes(const char *name, const void *bytes, size_t n) {
    const char *path = fedc_test_tmp(name);
    if (ends_with(name, ".gz")) {
        gzFile gz = gzopen(path, "wb");
        CHECK(gz != NULL);
        if (!gz) return;
        CHECK_EQ_INT(gzwrite(gz, bytes, (unsigned)n), n);
        CHECK_EQ_INT(gzclose(gz), Z_OK);
        return;
    }
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK_EQ_INT(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

static void write_text(const char *name, const char *text) { write_bytes(name, text, strlen(text)); }

static void make_dir(const char *name) { CHECK(mkdir(fedc_test_tmp(name), 0700) == 0); }

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ------------------------------------------------------------ real data -- */

/* Loads every client and checks FEMNIST's shapes and ranges; returns the examples. */
static int64_t check_femnist_clients(fedc_dataset *ds) {
    int64_t total = 0;
    for (int64_t i = 0; i < fedc_dataset_num_clients(ds); i++) {
        fedc_client_data *c;
        CHECK_OK(fedc_dataset_client(ds, i, &c));
        if (!c) return -1;
        int64_t n = c->num_examples;
        total += n;
        const fedc_feature *x = fedc_client_feature(c, "x"), *y = fedc_client_feature(c, "y");
        CHECK(x && y && c->num_features == 2);
        if (!x || !y) return -1;
        CHECK(x->kind == FEDC_FEATURE_ARRAY && x->type.dtype == FEDC_F32 && x->type.rank == 2);
        CHECK(x->type.dims[0] == n && x->type.dims[1] == 784);
        CHECK(y->type.dtype == FEDC_I32 && y->type.rank == 1 && y->type.dims[0] == n);
        int bad = 0;
        for (int64_t k = 0; k < n * 784; k++) bad += !(((float *)x->data)[k] >= 0 && ((float *)x->data)[k] <= 1);
        for (int64_t k = 0; k < n; k++) bad += ((int32_t *)y->data)[k] < 0 || ((int32_t *)y->data)[k] > 61;
        CHECK_EQ_INT(bad, 0);
        fedc_client_data_destroy(c);
    }
    return total;
}

/* What a FEMNIST set must hold: the real one's numbers (computed with Python's
 * json module) or what data_fixtures.c wrote. */
typedef struct femnist_want {
    int64_t clients, examples;
    const char *first_id;
    int64_t first_examples;
    double first_x_sum;
    const int32_t *first_y;
    int first_y_count;
} femnist_want;

static void check_femnist(const char *path, femnist_want w) {
    fedc_dataset *ds;
    double t0 = seconds();
    CHECK_OK(fedc__open_leaf(&ds, path));
    double t1 = seconds();
    if (!ds) return;
    fprintf(stderr, "    opened %s in %.3f s\n", path, t1 - t0);
    CHECK_EQ_INT(fedc_dataset_format(ds), FEDC_FORMAT_LEAF);
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), w.clients);
    CHECK_EQ_INT(fedc_dataset_total_examples(ds), w.examples);
    CHECK_EQ_INT(check_femnist_clients(ds), w.examples);
    if (!w.first_id) {
        fedc_dataset_destroy(ds);
        return;
    }
    CHECK(strcmp(fedc_dataset_client_id(ds, 0), w.first_id) == 0);
    CHECK_EQ_INT(fedc_dataset_client_examples(ds, 0), w.first_examples);
    fedc_client_data *c;
    CHECK_OK(fedc_dataset_client(ds, 0, &c));
    if (c && c->num_examples == w.first_examples) {
        const float *x = fedc_client_feature(c, "x")->data;
        const int32_t *y = fedc_client_feature(c, "y")->data;
        double sum = 0;
        for (int64_t k = 0; k < w.first_examples * 784; k++) sum += x[k];
        CHECK_NEAR(sum, w.first_x_sum, 1e-6);
        for (int k = 0; k < w.first_y_count; k++) CHECK_EQ_INT(y[k], w.first_y[k]);
    }
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);
}

static femnist_want femnist_fixture(const char *set) {
    static fedc_test_fixture_facts f[2];
    fedc_test_fixture_facts *m = &f[strstr(set, "test") != NULL];
    *m = fedc_test_fixture_facts_of(set);
    return (femnist_want){m->clients, m->examples, m->first_id, m->first_examples, m->first_x_sum, m->first_y,
                          m->first_examples < 4 ? (int)m->first_examples : 4};
}

static void test_femnist_train(void) {
    check_femnist(fedc_test_fixture("femnist-leaf/train"), femnist_fixture("femnist-leaf/train"));
    const char *real = fedc_test_real_data("femnist-leaf/train");
    static const int32_t first[] = {55, 55, 48, 54, 38, 42, 59, 38};
    if (real) check_femnist(real, (femnist_want){56, 7935, "f3313_11", 155, 116254.65098039222, first, 8});
}

static void test_femnist_test(void) {
    check_femnist(fedc_test_fixture("femnist-leaf/test"), femnist_fixture("femnist-leaf/test"));
    const char *real = fedc_test_real_data("femnist-leaf/test");
    if (real) check_femnist(real, (femnist_want){56, 909, NULL, 0, 0, NULL, 0});
}

/* Shakespeare's LEAF windows: 80 characters of x, one of y; the first client's
 * id and first window with its next character; client `which`'s examples. */
static void check_shakespeare(const char *path, int64_t clients, int64_t examples, const char *first_id,
                              int64_t which, int64_t which_examples, const char *first_x, char first_y) {
    fedc_dataset *ds;
    CHECK_OK(fedc__open_leaf(&ds, path));
    if (!ds) return;
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), clients);
    CHECK_EQ_INT(fedc_dataset_total_examples(ds), examples);
    CHECK(strcmp(fedc_dataset_client_id(ds, 0), first_id) == 0);
    CHECK_EQ_INT(fedc_dataset_client_examples(ds, which), which_examples);
    for (int64_t i = 0; i < fedc_dataset_num_clients(ds); i++) {
        fedc_client_data *c;
        CHECK_OK(fedc_dataset_client(ds, i, &c));
        if (!c) break;
        const fedc_feature *x = fedc_client_feature(c, "x"), *y = fedc_client_feature(c, "y");
        CHECK(x && y && x->kind == FEDC_FEATURE_STRINGS && y->kind == FEDC_FEATURE_STRINGS);
        int bad = 0;
        for (int64_t k = 0; x && y && k < c->num_examples; k++)
            bad += x->offsets[k + 1] - x->offsets[k] != 80 || y->offsets[k + 1] - y->offsets[k] != 1;
        CHECK_EQ_INT(bad, 0);
        if (i == 0 && x && y) {
            CHECK(memcmp(x->data, first_x, 80) == 0);
            CHECK(((const char *)y->data)[0] == first_y);
        }
        fedc_client_data_destroy(c);
    }
    fedc_dataset_destroy(ds);
}

static void test_shakespeare_train(void) {
    const char *set = "shakespeare-leaf/train";
    fedc_test_fixture_facts f = fedc_test_fixture_facts_of(set);
    check_shakespeare(fedc_test_fixture(set), f.clients, f.examples, f.first_id, 0, f.first_examples, f.first_x,
                      f.first_next);
    const char *real = fedc_test_real_data(set);
    if (real)
        check_shakespeare(real, 10, 41990, "THE_TRAGEDY_OF_KING_LEAR_PHILOSTRATE", 9, 13790,
                          "Here, mighty Theseus. There is a brief how many sports are ripe; Make choice of ", 'w');
}

/* One file of a directory: the clients in the order of its "users". */
static void test_single_file(void) {
    const char *set = "femnist-leaf/train";
    fedc_test_fixture_facts f = fedc_test_fixture_facts_of(set);
    char one[1200];
    snprintf(one, sizeof one, "%s/all_data_0_niid_05_keep_0_train_9.json.gz", fedc_test_fixture(set));
    fedc_dataset *ds;
    CHECK_OK(fedc__open_leaf(&ds, one));
    if (ds) {
        CHECK_EQ_INT(fedc_dataset_num_clients(ds), 5); /* data_fixtures.c: 5 writers a file */
        CHECK(strcmp(fedc_dataset_client_id(ds, 0), f.first_id) == 0);
        CHECK_EQ_INT(fedc_dataset_client_examples(ds, 0), f.first_examples);
        CHECK(fedc_dataset_total_examples(ds) < f.examples);
        fedc_dataset_destroy(ds);
    }
    const char *real = fedc_test_real_data("femnist-leaf/train/all_data_0_niid_05_keep_0_train_9.json.gz");
    if (!real) return;
    CHECK_OK(fedc__open_leaf(&ds, real));
    if (!ds) return;
    static const char *ids[] = {"f3313_11", "f3137_47", "f3135_37", "f3220_48", "f3579_30"};
    static const int64_t counts[] = {155, 162, 164, 161, 137};
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), 5);
    for (int i = 0; i < 5 && fedc_dataset_num_clients(ds) == 5; i++) {
        CHECK(strcmp(fedc_dataset_client_id(ds, i), ids[i]) == 0); /* the order of "users" */
        CHECK_EQ_INT(fedc_dataset_client_examples(ds, i), counts[i]);
    }
    CHECK_EQ_INT(fedc_dataset_total_examples(ds), 779);
    fedc_dataset_destroy(ds);
}

static void check_find(const char *path, const char *id, int64_t at) {
    fedc_dataset *ds;
    CHECK_OK(fedc__open_leaf(&ds, path));
    if (!ds) return;
    int64_t i = -1;
    CHECK_OK(fedc_dataset_find(ds, id, &i));
    CHECK_EQ_INT(i, at);
    CHECK_ERR(fedc_dataset_find(ds, "nobody", &i), FEDC_ENOTFOUND, "\"nobody\"");
    fedc_dataset_destroy(ds);
}

static void test_find(void) {
    const char *small = fedc_test_fixture("femnist-leaf/train");
    fedc_dataset *ds;
    CHECK_OK(fedc__open_leaf(&ds, small));
    if (ds) {
        char id[64];
        snprintf(id, sizeof id, "%s", fedc_dataset_client_id(ds, 5));
        fedc_dataset_destroy(ds);
        check_find(small, id, 5);
    }
    const char *real = fedc_test_real_data("femnist-leaf/train");
    if (real) check_find(real, "f3137_47", 1);
}

/* ------------------------------------------------------- small files -- */

/* Keys in another order than LEAF writes them, keys to skip, a 3-axis x, i32 y. */
static const char small_json[] =
    "{\"user_data\": {\"b\": {\"y\": [1, 2], \"extra\": {\"k\": [1, {\"z\": null}], \"t\": true},\n"
    "                      \"x\": [[[1, 2], [3, 4]], [[5, 6], [7, 8.5]]]},\n"
    "               \"a\": {\"x\": [0.5], \"y\": [-3]}},\n"
    " \"hierarchies\": [[\"h1\"], [], {\"deep\": [[[]]]}], \"num_samples\": [1, 2], \"users\": [\"a\", \"b\"]}\n";

static fedc_client_data *load(fedc_dataset *ds, int64_t i) {
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_dataset_client(ds, i, &c));
    return c;
}

static void check_small(fedc_dataset *ds) {
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), 2);
    CHECK_EQ_INT(fedc_dataset_total_examples(ds), 3);
    CHECK(strcmp(fedc_dataset_client_id(ds, 0), "a") == 0 && strcmp(fedc_dataset_client_id(ds, 1), "b") == 0);
    fedc_client_data *a = load(ds, 0), *b = load(ds, 1);
    if (!a || !b) goto done;
    const fedc_feature *ax = fedc_client_feature(a, "x"), *ay = fedc_client_feature(a, "y");
    CHECK(ax->type.dtype == FEDC_F32 && ax->type.rank == 1 && ax->type.dims[0] == 1);
    CHECK(((float *)ax->data)[0] == 0.5f);
    CHECK(ay->type.dtype == FEDC_I32 && ay->type.rank == 1 && ((int32_t *)ay->data)[0] == -3);
    const fedc_feature *bx = fedc_client_feature(b, "x"), *by = fedc_client_feature(b, "y");
    CHECK(bx->type.dtype == FEDC_F32 && bx->type.rank == 3);
    CHECK(bx->type.dims[0] == 2 && bx->type.dims[1] == 2 && bx->type.dims[2] == 2);
    static const float want[] = {1, 2, 3, 4, 5, 6, 7, 8.5f};
    CHECK(memcmp(bx->data, want, sizeof want) == 0);
    CHECK(by->type.dtype == FEDC_I32 && ((int32_t *)by->data)[1] == 2);
    CHECK(strcmp(a->features[0].name, "x") == 0 && strcmp(a->features[1].name, "y") == 0);
done:
    fedc_client_data_destroy(a);
    fedc_client_data_destroy(b);
}

static void test_small_plain_and_gzip(void) {
    write_text("small.json", small_json);
    write_text("small.json.gz", small_json);
    const char *names[] = {"small.json", "small.json.gz"};
    for (int k = 0; k < 2; k++) {
        fedc_dataset *ds;
        CHECK_OK(fedc__open_leaf(&ds, fedc_test_tmp(names[k])));
        if (!ds) continue;
        check_small(ds);
        /* a loaded client is the caller's: changing it leaves the dataset's alone */
        fedc_client_data *a = load(ds, 0);
        if (a) ((float *)a->features[0].data)[0] = 99;
        fedc_client_data_destroy(a);
        check_small(ds);
        fedc_dataset_destroy(ds);
    }
}

/* Strings with escapes and empty ones, float y, 5 axes (the most), an empty client. */
static void test_types(void) {
    write_text("types.json",
               "{\"users\": [\"s\", \"f\", \"deep\", \"empty\", \"blank\"], \"num_samples\": [2, 3, 1, 0, 2], "
               "\"user_data\": {\"blank\": {\"x\": [\"\", \"\"], \"y\": [0, 1]},\n"
               " \"s\": {\"x\": [\"ab\\\"c\\n\", \"\\u00e9\\ud83d\\ude00/\\/\"], \"y\": [\"a\", \"\"]},\n"
               " \"f\": {\"x\": [[], [], []], \"y\": [1, 2.5, -1e2]},\n"
               " \"deep\": {\"x\": [[[[[[7]]]]]], \"y\": [2147483648]},\n"
               " \"empty\": {\"x\": [], \"y\": []}}}");
    fedc_dataset *ds;
    CHECK_OK(fedc__open_leaf(&ds, fedc_test_tmp("types.json")));
    if (!ds) return;
    fedc_client_data *s = load(ds, 0), *f = load(ds, 1), *deep = load(ds, 2), *empty = load(ds, 3),
                     *blank = load(ds, 4);
    if (!s || !f || !deep || !empty || !blank) goto done;
    const fedc_feature *sx = fedc_client_feature(s, "x"), *sy = fedc_client_feature(s, "y");
    CHECK(sx->kind == FEDC_FEATURE_STRINGS && sx->type.dtype == FEDC_U8 && sx->type.dims[0] == 2);
    static const char want[] = "ab\"c\n\xc3\xa9\xf0\x9f\x98\x80//";
    CHECK_EQ_INT(sx->offsets[1], 5);
    CHECK_EQ_INT(sx->offsets[2], sizeof want - 1);
    CHECK(memcmp(sx->data, want, sizeof want - 1) == 0);
    CHECK(sy->kind == FEDC_FEATURE_STRINGS && sy->offsets[1] == 1 && sy->offsets[2] == 1);
    const fedc_feature *fx = fedc_client_feature(f, "x"), *fy = fedc_client_feature(f, "y");
    CHECK(fx->type.rank == 2 && fx->type.dims[0] == 3 && fx->type.dims[1] == 0);
    CHECK(fy->type.dtype == FEDC_F32); /* one non-integer makes y floats */
    CHECK(((float *)fy->data)[0] == 1 && ((float *)fy->data)[1] == 2.5f && ((float *)fy->data)[2] == -100);
    const fedc_feature *dx = fedc_client_feature(deep, "x"), *dy = fedc_client_feature(deep, "y");
    CHECK_EQ_INT(dx->type.rank, FEDC_MAX_RANK);
    CHECK(((float *)dx->data)[0] == 7);
    CHECK(dy->type.dtype == FEDC_F32 && ((float *)dy->data)[0] == 2147483648.0f); /* beyond i32 */
    CHECK_EQ_INT(empty->num_examples, 0);
    CHECK(fedc_client_feature(empty, "x")->type.dims[0] == 0);
    const fedc_feature *bx = fedc_client_feature(blank, "x");
    CHECK(bx->kind == FEDC_FEATURE_STRINGS && bx->offsets[0] == 0 && bx->offsets[1] == 0 && bx->offsets[2] == 0);
done:
    fedc_client_data_destroy(s);
    fedc_client_data_destroy(f);
    fedc_client_data_destroy(deep);
    fedc_client_data_destroy(empty);
    fedc_client_data_destroy(blank);
    fedc_dataset_destroy(ds);
}

/* Numbers are the float nearest the correctly rounded double, as strtod then a
 * cast gives, whichever path (exact or strtod) the tokenizer takes. */
static void test_numbers(void) {
    static const char *spellings[] = {
        "0", "-0", "1", "0.1", "0.996078431372549", "0.9921568627450981", "1e-45", "1.5E+3", "2e-0",
        "123456789012345678901234567890", "3.4028234663852886e38", "-2.5e-10", "1.17549435e-38",
        "0.30000000000000004", "9007199254740993", "1e22", "1e23", "4.9406564584124654e-324", "1e-400",
        "0.000000000000000000000000000000000000000000001401298464324817", "16777217", "-7.0e-1"};
    int n = FEDC_COUNT_OF(spellings);
    char text[2048] = "{\"users\": [\"u\"], \"num_samples\": [1], \"user_data\": {\"u\": {\"y\": [0], \"x\": [[";
    for (int i = 0; i < n; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%s", i ? ", " : "", spellings[i]);
    strcat(text, "]]}}}");
    write_text("numbers.json", text);
    fedc_dataset *ds;
    CHECK_OK(fedc__open_leaf(&ds, fedc_test_tmp("numbers.json")));
    fedc_client_data *c = ds ? load(ds, 0) : NULL;
    if (c) {
        const float *x = fedc_client_feature(c, "x")->data;
        for (int i = 0; i < n; i++) {
            float want = (float)strtod(spellings[i], NULL);
            CHECK_MSG(memcmp(&x[i], &want, 4) == 0, "%s: got %.9g, want %.9g", spellings[i], x[i], want);
        }
    }
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);
}

/* Tokens cut by the end of a read: the tokenizer reads 256 KiB at a time, so the
 * tail of this file is slid across that boundary a byte at a time. */
static void test_block_boundaries(void) {
    static const char tail[] = "\"users\": [\"a\"], \"num_samples\": [1], \"user_data\": {\"a\": {\"x\": "
                               "[[1.25e-1, -0.9921568627450981, 1234567, "
                               "0.00000000000000000000000000000000000000000001, true]], "
                               "\"y\": [\"\\u00e9\\\"z\\ud83d\\ude00\"]}}}";
    size_t block = 256 * 1024, n = block + sizeof tail;
    char *text = malloc(n);
    if (!text) return;
    int bad = 0;
    for (size_t pad = block - sizeof tail; pad < block; pad++) {
        text[0] = '{';
        memset(text + 1, pad % 2 ? ' ' : '\n', pad - 1);
        memcpy(text + pad, tail, sizeof tail);
        write_bytes("boundary.json", text, strlen(text));
        fedc_dataset *ds;
        fedc_status st = fedc__open_leaf(&ds, fedc_test_tmp("boundary.json"));
        /* the "true" is refused, at its own offset */
        char want[64];
        size_t at = pad + (size_t)(strstr(tail, "true") - tail);
        snprintf(want, sizeof want, "byte %zu: client \"a\": \"x\" example 0: expected", at);
        bad += st != FEDC_EPARSE || !strstr(fedc_errmsg(), want);
    }
    CHECK_EQ_INT(bad, 0);
    /* without the "true": every value read back */
    const char *t = strstr(tail, ", true");
    size_t cut = (size_t)(t - tail);
    for (size_t pad = block - sizeof tail; pad < block; pad += 1) {
        memset(text + 1, ' ', pad - 1);
        memcpy(text + pad, tail, cut);
        memcpy(text + pad + cut, tail + cut + 6, sizeof tail - cut - 6);
        write_bytes("boundary.json", text, strlen(text));
        fedc_dataset *ds;
        fedc_client_data *c = NULL;
        fedc_status st = fedc__open_leaf(&ds, fedc_test_tmp("boundary.json"));
        if (!st) st = fedc_dataset_client(ds, 0, &c);
        CHECK_OK(st);
        if (c) {
            const float *x = fedc_client_feature(c, "x")->data;
            const fedc_feature *y = fedc_client_feature(c, "y");
            bad += x[0] != 0.125f || x[1] != (float)-0.9921568627450981 || x[2] != 1234567.0f ||
                   x[3] != (float)1e-44 || y->offsets[1] != 8 || memcmp(y->data, "\xc3\xa9\"z\xf0\x9f\x98\x80", 8) != 0;
        }
        fedc_client_data_destroy(c);
        if (!st) fedc_dataset_destroy(ds);
        if (st) break;
    }
    CHECK_EQ_INT(bad, 0);
    free(text);
}

/* A locale with a decimal comma (where one is installed) changes nothing. */
static void test_locale(void) {
    static const char *locales[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"};
    const char *set = NULL;
    for (int i = 0; i < FEDC_COUNT_OF(locales) && !set; i++) set = setlocale(LC_NUMERIC, locales[i]);
    if (!set) {
        fprintf(stderr, "    note: no locale with a decimal comma is installed; skipping\n");
        return;
    }
    write_text("locale.json", "{\"users\": [\"u\"], \"num_samples\": [1], \"user_data\": {\"u\": {\"y\": [0], "
                              "\"x\": [[0.5, 0.99215686274509810, 1.5e-50]]}}}");
    fedc_dataset *ds;
    CHECK_OK(fedc__open_leaf(&ds, fedc_test_tmp("locale.json")));
    setlocale(LC_NUMERIC, "C");
    fedc_client_data *c = ds ? load(ds, 0) : NULL;
    if (c) {
        const float *x = fedc_client_feature(c, "x")->data;
        CHECK(x[0] == 0.5f && x[1] == (float)0.9921568627450981 && x[2] == 0);
    }
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);
}

/* A directory: *.json and *.json.gz in name order; other files, hidden files and
 * subdirectories are not read. */
static void test_directory(void) {
    make_dir("dir");
    make_dir("dir/sub.json");
    write_text("dir/b.json", "{\"users\": [\"b1\", \"b0\"], \"num_samples\": [1, 1], \"user_data\": "
                             "{\"b0\": {\"x\": [0], \"y\": [0]}, \"b1\": {\"x\": [1], \"y\": [1]}}}");
    write_text("dir/a.json.gz", "{\"users\": [\"a\"], \"num_samples\": [2], \"user_data\": "
                                "{\"a\": {\"x\": [2, 3], \"y\": [2, 3]}}}");
    write_text("dir/notes.txt", "not json");
    write_text("dir/.hidden.json", "not json either");
    fedc_dataset *ds;
    CHECK_OK(fedc__open_leaf(&ds, fedc_test_tmp("dir")));
    if (!ds) return;
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), 3);
    static const char *order[] = {"a", "b1", "b0"};
    for (int i = 0; i < 3 && fedc_dataset_num_clients(ds) == 3; i++)
        CHECK(strcmp(fedc_dataset_client_id(ds, i), order[i]) == 0);
    CHECK_EQ_INT(fedc_dataset_total_examples(ds), 4);
    fedc_client_data *c = load(ds, 2);
    CHECK(c && ((int32_t *)fedc_client_feature(c, "y")->data)[0] == 0);
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);

    make_dir("empty");
    CHECK_ERR(fedc__open_leaf(&ds, fedc_test_tmp("empty")), FEDC_ENOTFOUND, "no .json or .json.gz");
    make_dir("other");
    write_text("other/data.csv", "1,2\n");
    CHECK_ERR(fedc__open_leaf(&ds, fedc_test_tmp("other")), FEDC_ENOTFOUND, "other");
    CHECK(ds == NULL);
}

/* ------------------------------------------------------------- errors -- */

#define HEAD "{\"users\": [\"a\"], \"num_samples\": [1], \"user_data\": {\"a\": "

typedef struct bad_file {
    const char *name, *text;
    fedc_status status;
    const char *needle, *needle2; /* both must be in the message */
} bad_file;

static const bad_file bad_files[] = {
    /* malformed JSON */
    {"comma.json", "{\"users\": [\"a\"] \"num_samples\": [1]}", FEDC_EPARSE,
     "comma.json: byte 16: expected ',' or '}', found a string", NULL},
    {"comma.json.gz", "{\"users\": [\"a\"] \"num_samples\": [1]}", FEDC_EPARSE,
     "comma.json.gz: byte 16: expected ',' or '}', found a string", NULL},
    {"bracket.json", HEAD "{\"x\": [1}, \"y\": [1]}}}", FEDC_EPARSE, "byte 64: expected ',' or ']', found '}'", NULL},
    {"eof.json", "{\"users\": [\"a\",", FEDC_EPARSE, "eof.json: byte 15: expected a client id string", "end of file"},
    {"empty.json", "", FEDC_EPARSE, "empty.json: byte 0: expected '{' (a LEAF object), found end of file", NULL},
    {"array.json", "[1, 2]", FEDC_EPARSE, "byte 0: expected '{' (a LEAF object), found '['", NULL},
    {"trailing.json", HEAD "{\"x\": [1], \"y\": [1]}}} {}", FEDC_EPARSE, "byte 79: expected end of file, found '{'",
     NULL},
    {"garbage.json", HEAD "{\"x\": [1], \"y\": [1]}}} x", FEDC_EPARSE, "byte 79: unexpected character 'x'", NULL},
    {"string.json", "{\"users\": [\"a", FEDC_EPARSE, "string.json: byte 11: unterminated string", NULL},
    {"escape.json", "{\"users\": [\"a\\q\"]}", FEDC_EPARSE, "byte 13: invalid escape", NULL},
    {"surrogate.json", "{\"users\": [\"\\udc00\"]}", FEDC_EPARSE, "lone low surrogate", NULL},
    {"high.json", "{\"users\": [\"\\ud800x\"]}", FEDC_EPARSE, "byte 12: a \\u escape of a high surrogate without", NULL},
    {"hex.json", "{\"users\": [\"\\u12g4\"]}", FEDC_EPARSE, "byte 12: \\u is not followed by 4 hex digits", NULL},
    {"control.json", "{\"users\": [\"a\tb\"]}", FEDC_EPARSE, "byte 13: control character 0x09", NULL},
    {"literal.json", "{\"users\": tru}", FEDC_EPARSE, "byte 10: invalid literal", NULL},
    {"number.json", HEAD "{\"x\": [1.], \"y\": [1]}}}", FEDC_EPARSE, "malformed number \"1.\"", NULL},
    {"minus.json", HEAD "{\"x\": [-], \"y\": [1]}}}", FEDC_EPARSE, "malformed number \"-\"", NULL},
    {"char.json", "{\"users\": @}", FEDC_EPARSE, "byte 10: unexpected character '@'", NULL},
    {"skipped.json", "{\"hierarchies\": [1 2]}", FEDC_EPARSE, "byte 19: expected ',' or ']', found a number", NULL},
    {"key.json", "{\"users\": [], 3: 4}", FEDC_EPARSE, "byte 14: expected a key string, found a number", NULL},
    {"colon.json", "{\"users\" []}", FEDC_EPARSE, "byte 9: expected ':', found '['", NULL},
    /* keys missing, repeated or of the wrong type */
    {"nousers.json", "{\"num_samples\": [1], \"user_data\": {\"a\": {\"x\": [1], \"y\": [1]}}}", FEDC_EPARSE,
     "nousers.json: no \"users\"", NULL},
    {"nodata.json", "{\"users\": [\"a\"], \"num_samples\": [1]}", FEDC_EPARSE, "nodata.json: no \"user_data\"", NULL},
    {"nocounts.json", "{\"users\": [\"a\"], \"user_data\": {\"a\": {\"x\": [1], \"y\": [1]}}}", FEDC_EPARSE,
     "no \"num_samples\"", NULL},
    {"twice.json", "{\"users\": [], \"users\": []}", FEDC_EPARSE, "byte 14: a second \"users\"", NULL},
    {"userint.json", "{\"users\": [1]}", FEDC_EPARSE,
     "byte 11: expected a client id string in \"users\", found a number", NULL},
    {"countstr.json", "{\"num_samples\": [\"1\"]}", FEDC_EPARSE, "expected a non-negative integer", NULL},
    {"countfrac.json", "{\"num_samples\": [1.5]}", FEDC_EPARSE, "expected a non-negative integer", NULL},
    {"datalist.json", "{\"user_data\": []}", FEDC_EPARSE, "byte 14: expected an object of clients, found '['", NULL},
    {"clientnum.json", HEAD "7}}", FEDC_EPARSE, "client \"a\": expected an object of \"x\" and \"y\", found a number",
     NULL},
    {"noy.json", HEAD "{\"x\": [1]}}}", FEDC_EPARSE, "noy.json: byte 51: client \"a\": no \"y\"", NULL},
    {"twox.json", HEAD "{\"x\": [1], \"x\": [1]}}}", FEDC_EPARSE, "client \"a\": two \"x\" keys", NULL},
    /* counts that disagree */
    {"xy.json", HEAD "{\"x\": [1, 2], \"y\": [1]}}}", FEDC_EPARSE, "client \"a\": \"x\" has 2 examples, \"y\" 1",
     "xy.json"},
    {"counts.json", "{\"users\": [\"a\"], \"num_samples\": [2], \"user_data\": {\"a\": {\"x\": [1], \"y\": [1]}}}",
     FEDC_EPARSE, "counts.json: byte 51: client \"a\": \"num_samples\" says 2 examples, \"x\" and \"y\" have 1", NULL},
    {"lengths.json", "{\"users\": [\"a\", \"b\"], \"num_samples\": [1], \"user_data\": {}}", FEDC_EPARSE,
     "\"users\" lists 2 clients, \"num_samples\" 1", NULL},
    {"nodatafor.json", "{\"users\": [\"a\", \"b\"], \"num_samples\": [1, 1], \"user_data\": {\"a\": {\"x\": [1], "
                       "\"y\": [1]}}}",
     FEDC_EPARSE, "nodatafor.json: client \"b\" is in \"users\" but has no \"user_data\"", NULL},
    {"unlisted.json", HEAD "{\"x\": [1], \"y\": [1]}, \"z\": {\"x\": [], \"y\": []}}}", FEDC_EPARSE,
     "client \"z\": is in \"user_data\" but not in \"users\"", NULL},
    {"dupuser.json", "{\"users\": [\"a\", \"a\"], \"num_samples\": [1, 1], \"user_data\": {}}", FEDC_EPARSE,
     "client \"a\" is listed twice in \"users\"", NULL},
    {"dupdata.json", HEAD "{\"x\": [1], \"y\": [1]}, \"a\": {\"x\": [1], \"y\": [1]}}}", FEDC_EPARSE,
     "byte 78: client \"a\": appears twice in \"user_data\"", NULL},
    /* shapes and types */
    {"ragged.json", HEAD "{\"x\": [[1, 2], [3]], \"y\": [1, 2]}}}", FEDC_EPARSE,
     "ragged.json: byte 71: client \"a\": \"x\" example 1: a list of 1 where earlier ones have 2 (ragged)", NULL},
    {"ragged0.json", HEAD "{\"x\": [[[1], [2, 3]]], \"y\": [1]}}}", FEDC_EPARSE, "example 0: a list of 2", "ragged"},
    {"mixed.json", HEAD "{\"x\": [[1, [2]]], \"y\": [1]}}}", FEDC_EPARSE,
     "client \"a\": \"x\" example 0 mixes numbers and lists", NULL},
    {"mixed2.json", HEAD "{\"x\": [[1], 2], \"y\": [1, 2]}}}", FEDC_EPARSE, "\"x\" example 1 mixes numbers and lists",
     NULL},
    {"deep.json", HEAD "{\"x\": [[[[[[[1]]]]]]], \"y\": [1]}}}", FEDC_EPARSE, "nests lists deeper than 5 levels", NULL},
    {"bool.json", HEAD "{\"x\": [true], \"y\": [1]}}}", FEDC_EPARSE,
     "byte 63: client \"a\": \"x\" example 0: expected a number, a list or a string, found true", NULL},
    {"nested.json", HEAD "{\"x\": [[\"s\"]], \"y\": [1]}}}", FEDC_EPARSE,
     "\"x\" example 0: expected a number or a list, found a string", NULL},
    {"xobj.json", HEAD "{\"x\": {\"k\": 1}, \"y\": [1]}}}", FEDC_EPARSE,
     "client \"a\": \"x\" must be a list of examples", NULL},
    {"strnum.json", HEAD "{\"x\": [1], \"y\": [\"a\", 1]}}}", FEDC_EPARSE, "\"y\" example 1 is not a string", NULL},
    {"numstr.json", HEAD "{\"x\": [1, \"a\"], \"y\": [1, 2]}}}", FEDC_EPARSE, "\"x\" example 1 is a string", NULL},
    {"huge.json", HEAD "{\"x\": [1e39], \"y\": [1]}}}", FEDC_EPARSE, "too large for f32", NULL},
    {"nulid.json", "{\"users\": [\"a\\u0000b\"]}", FEDC_EPARSE, "byte 11: a client id holds a NUL", NULL},
};

static void test_bad_files(void) {
    make_dir("bad");
    for (int i = 0; i < FEDC_COUNT_OF(bad_files); i++) {
        const bad_file *b = &bad_files[i];
        char name[128];
        snprintf(name, sizeof name, "bad/%s", b->name);
        write_text(name, b->text);
        fedc_dataset *ds = (fedc_dataset *)1;
        fedc_status st = fedc__open_leaf(&ds, fedc_test_tmp(name));
        CHECK_MSG(st == b->status, "%s: expected %s, got %s (%s)", b->name, fedc_status_str(b->status),
                  fedc_status_str(st), fedc_errmsg());
        CHECK_MSG(strstr(fedc_errmsg(), b->needle), "%s: \"%s\" lacks \"%s\"", b->name, fedc_errmsg(), b->needle);
        CHECK_MSG(!b->needle2 || strstr(fedc_errmsg(), b->needle2), "%s: \"%s\" lacks \"%s\"", b->name,
                  fedc_errmsg(), b->needle2);
        CHECK(ds == NULL);
        unlink(fedc_test_tmp(name));
    }
}

/* A client in two files of a directory: the message names both. */
static void test_duplicate_across_files(void) {
    make_dir("dup");
    write_text("dup/one.json", HEAD "{\"x\": [1], \"y\": [1]}}}");
    write_text("dup/two.json.gz", "{\"users\": [\"b\", \"a\"], \"num_samples\": [1, 1], \"user_data\": "
                                  "{\"a\": {\"x\": [1], \"y\": [1]}, \"b\": {\"x\": [1], \"y\": [1]}}}");
    fedc_dataset *ds;
    CHECK_ERR(fedc__open_leaf(&ds, fedc_test_tmp("dup")), FEDC_EPARSE, "client \"a\" is in both");
    CHECK(strstr(fedc_errmsg(), "dup/one.json and ") && strstr(fedc_errmsg(), "dup/two.json.gz"));
    CHECK(ds == NULL);
}

static void test_missing_path(void) {
    fedc_dataset *ds;
    CHECK_ERR(fedc__open_leaf(&ds, fedc_test_tmp("nothing-here")), FEDC_EIO, "nothing-here");
    CHECK(ds == NULL);
}

/* The bytes of a gzipped, valid LEAF file of some size. */
static size_t gzipped_file(unsigned char *out, size_t cap) {
    char text[8192] = "{\"users\": [\"a\"], \"num_samples\": [300], \"user_data\": {\"a\": {\"y\": [";
    for (int i = 0; i < 300; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s%d", i ? "," : "", i * 7919 % 1000);
    strcat(text, "], \"x\": [");
    for (int i = 0; i < 300; i++) snprintf(text + strlen(text), sizeof text - strlen(text), "%s%d", i ? "," : "", i);
    strcat(text, "]}}}");
    write_text("good.json.gz", text);
    FILE *f = fopen(fedc_test_tmp("good.json.gz"), "rb");
    size_t n = f ? fread(out, 1, cap, f) : 0;
    if (f) fclose(f);
    return n;
}

static void test_bad_gzip(void) {
    unsigned char gz[8192];
    size_t n = gzipped_file(gz, sizeof gz);
    CHECK(n > 100);
    fedc_dataset *ds;
    CHECK_OK(fedc__open_leaf(&ds, fedc_test_tmp("good.json.gz")));
    fedc_dataset_destroy(ds);

    write_bytes("truncated.json", gz, n / 2); /* not .gz: written as is */
    CHECK_ERR(fedc__open_leaf(&ds, fedc_test_tmp("truncated.json")), FEDC_EIO, "truncated.json: byte ");
    CHECK(strstr(fedc_errmsg(), "cannot read the data (unexpected end of file)"));
    write_bytes("notrailer.json", gz, n - 4); /* all the data, the length in the trailer cut */
    CHECK_ERR(fedc__open_leaf(&ds, fedc_test_tmp("notrailer.json")), FEDC_EIO, "notrailer.json: byte ");

    unsigned char bad[8192];
    memcpy(bad, gz, n);
    for (size_t i = n / 3; i < n / 3 + 8; i++) bad[i] ^= 0x5A;
    write_bytes("corrupt.json", bad, n);
    CHECK_ERR(fedc__open_leaf(&ds, fedc_test_tmp("corrupt.json")), FEDC_EIO, "corrupt.json: byte ");
    memcpy(bad, gz, n);
    bad[n - 6] ^= 1; /* the CRC */
    write_bytes("crc.json", bad, n);
    CHECK_ERR(fedc__open_leaf(&ds, fedc_test_tmp("crc.json")), FEDC_EIO, "crc.json: byte ");
    CHECK(ds == NULL);
}

/* ------------------------------------------------- allocation failures -- */

static void test_alloc_failure(void) {
    make_dir("af");
    write_text("af/1.json", small_json);
    write_text("af/2.json.gz", "{\"users\": [\"s\"], \"num_samples\": [2], \"user_data\": "
                               "{\"s\": {\"x\": [\"abc\", \"d\"], \"y\": [[1.5], [2]]}}}");
    int failures = 0;
    for (uint64_t k = 1; k < 1000; k++) {
        fedc__alloc_fail_after(k);
        fedc_dataset *ds = (fedc_dataset *)1;
        fedc_status st = fedc__open_leaf(&ds, fedc_test_tmp("af"));
        fedc__alloc_fail_after(0);
        if (st == FEDC_OK) {
            CHECK_EQ_INT(fedc_dataset_num_clients(ds), 3);
            CHECK_EQ_INT(fedc_dataset_total_examples(ds), 5);
            fedc_dataset_destroy(ds);
            break;
        }
        CHECK_MSG(st == FEDC_ENOMEM, "failing allocation %llu: %s (%s)", (unsigned long long)k, fedc_status_str(st),
                  fedc_errmsg());
        CHECK(ds == NULL);
        failures++;
    }
    CHECK(failures > 20);
    fprintf(stderr, "    %d allocations failed in turn\n", failures);

    /* loading a client */
    fedc_dataset *ds;
    CHECK_OK(fedc__open_leaf(&ds, fedc_test_tmp("af")));
    for (uint64_t k = 1; ds && k < 100; k++) {
        fedc_client_data *c = (fedc_client_data *)1;
        fedc__alloc_fail_after(k);
        fedc_status st = fedc_dataset_client(ds, 2, &c);
        fedc__alloc_fail_after(0);
        if (st == FEDC_OK) {
            CHECK(c->num_features == 2 && memcmp(c->features[0].data, "abcd", 4) == 0);
            fedc_client_data_destroy(c);
            break;
        }
        CHECK_EQ_INT(st, FEDC_ENOMEM);
        CHECK(c == NULL);
    }
    fedc_dataset_destroy(ds);
}

/* ---------------------------------------------------------------- main -- */

static void remove_tree(const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char sub[512];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

int main(int argc, char **argv) {
    if (!(tmpdir = fedc_test_tmpdir("leaf"))) return 1;
    static const fedc_test tests[] = {
        {"femnist_train", test_femnist_train},
        {"femnist_test", test_femnist_test},
        {"shakespeare_train", test_shakespeare_train},
        {"single_file", test_single_file},
        {"find", test_find},
        {"small_plain_and_gzip", test_small_plain_and_gzip},
        {"types", test_types},
        {"numbers", test_numbers},
        {"block_boundaries", test_block_boundaries},
        {"locale", test_locale},
        {"directory", test_directory},
        {"bad_files", test_bad_files},
        {"duplicate_across_files", test_duplicate_across_files},
        {"missing_path", test_missing_path},
        {"bad_gzip", test_bad_gzip},
        {"alloc_failure", test_alloc_failure},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    remove_tree(tmpdir);
    return rc;
}
