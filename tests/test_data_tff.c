/*
 * Tests of the TensorFlow Federated HDF5 reader (src/data/read_tff.c), through
 * fedc__open_tff. At start tests/data_tff_make.py writes small files shaped like
 * TFF's EMNIST, Shakespeare, Stack Overflow and CIFAR-100 (and broken ones) into a
 * temporary directory with h5py; the values follow formulas repeated here, so every
 * element is checked exactly. Without a python3 that has h5py (/usr/bin/python3 is
 * tried first: a pyenv python3 on PATH often lacks it), the tests that need those
 * files say so and pass.
 *
 * Beyond values: error messages and statuses, that HDF5 prints nothing to stderr
 * and the caller's HDF5 error handler comes back, that no HDF5 identifier stays
 * open on any path (counted with H5Inmembers), allocation failures at every point
 * of open + load, and loads from several threads at once.
 */
#include <dirent.h>
#include <fcntl.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/dataset.h"
#include "formats/formats.h"
#include "core/internal.h"
#include "harness.h"

static char dir[] = "/tmp/fedc_tff_XXXXXX";
static bool have_files;

/* The path of a file in the temporary directory (one at a time per thread). */
static const char *file(const char *name) {
    static _Thread_local char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

#define NEED_FILES()                                                     \
    do {                                                                 \
        if (!have_files) {                                               \
            fedc_test_skip("no test files (no h5py)");                   \
            return;                                                      \
        }                                                                \
    } while (0)

/* ------------------------------------------------------------- helpers -- */

static fedc_dataset *open_ok(const char *name) {
    fedc_dataset *ds = NULL;
    CHECK_OK(fedc__open_tff(&ds, file(name)));
    return ds;
}

static fedc_client_data *load_ok(fedc_dataset *ds, int64_t i) {
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_dataset_client(ds, i, &c));
    return c;
}

/* The feature `name`, checked to be an array of this dtype and shape. */
static const fedc_feature *array(const fedc_client_data *c, const char *name, fedc_dtype dt, int rank,
                                 const int64_t *dims) {
    const fedc_feature *f = fedc_client_feature(c, name);
    CHECK_MSG(f, "client %s has no feature %s", c->id, name);
    if (!f) return NULL;
    fedc_type want = fedc_type_make(dt, rank, dims);
    char a[64], b[64];
    CHECK_MSG(f->kind == FEDC_FEATURE_ARRAY && fedc_type_equal(&f->type, &want), "%s/%s: %s, expected %s", c->id,
              name, fedc_type_str(&f->type, a, sizeof a), fedc_type_str(&want, b, sizeof b));
    return f->kind == FEDC_FEATURE_ARRAY && fedc_type_equal(&f->type, &want) ? f : NULL;
}

static const fedc_feature *strings(const fedc_client_data *c, const char *name) {
    const fedc_feature *f = fedc_client_feature(c, name);
    CHECK_MSG(f && f->kind == FEDC_FEATURE_STRINGS, "client %s: no strings feature %s", c->id, name);
    if (!f || f->kind != FEDC_FEATURE_STRINGS) return NULL;
    CHECK(f->type.dtype == FEDC_U8 && f->type.rank == 1 && f->type.dims[0] == c->num_examples);
    CHECK_EQ_INT(f->offsets[0], 0);
    return f;
}

static bool string_is(const fedc_feature *f, int64_t i, const char *want) {
    size_t len = (size_t)(f->offsets[i + 1] - f->offsets[i]);
    bool same = len == strlen(want) && memcmp((const char *)f->data + f->offsets[i], want, len) == 0;
    if (!same)
        fedc_test_fail(__FILE__, __LINE__, "%s[%lld] = \"%.*s\", expected \"%s\"", f->name, (long long)i, (int)len,
                       (const char *)f->data + f->offsets[i], want);
    return same;
}

static void check_ids(const fedc_dataset *ds, const char *const *ids, const int64_t *counts, int n) {
    CHECK_EQ_INT(fedc_dataset_format(ds), FEDC_FORMAT_TFF);
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), n);
    int64_t total = 0;
    for (int i = 0; i < n && i < fedc_dataset_num_clients(ds); i++) {
        CHECK_MSG(strcmp(fedc_dataset_client_id(ds, i), ids[i]) == 0, "client %d is %s, expected %s", i,
                  fedc_dataset_client_id(ds, i), ids[i]);
        CHECK_EQ_INT(fedc_dataset_client_examples(ds, i), counts[i]);
        total += counts[i];
    }
    CHECK_EQ_INT(fedc_dataset_total_examples(ds), total);
}

/* HDF5 will not count a library type's identifiers (H5Inmembers refuses), but
 * its identifiers of a type are numbered in sequence: those made between two
 * probes and still valid are what the operation between them left open. Groups,
 * datasets and files are counted by H5Fget_obj_count; nothing else is open here. */
typedef struct id_probe {
    hid_t space, type;
} id_probe;

static id_probe probe(void) {
    id_probe p = {H5Screate(H5S_SCALAR), H5Tcopy(H5T_NATIVE_INT)};
    H5Sclose(p.space);
    H5Tclose(p.type);
    return p;
}

static long long still_open(id_probe a) {
    id_probe b = probe();
    long long n = 0;
    for (hid_t id = a.space + 1; id < b.space; id++) n += H5Iis_valid(id) > 0;
    for (hid_t id = a.type + 1; id < b.type; id++) n += H5Iis_valid(id) > 0;
    return n + (long long)H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
}

/* Opens `name` and loads every client; the first failure's status. */
static fedc_status open_load_all(const char *name) {
    fedc_dataset *ds;
    fedc_status st = fedc__open_tff(&ds, file(name));
    for (int64_t i = 0; !st && i < fedc_dataset_num_clients(ds); i++) {
        fedc_client_data *c;
        st = fedc_dataset_client(ds, i, &c);
        fedc_client_data_destroy(c);
    }
    fedc_dataset_destroy(ds);
    return st;
}

/* -------------------------------------------------------------- EMNIST -- */

static const char *const emnist_ids[] = {"f0000_14", "f0001_41", "f0002_07"};
static const int64_t emnist_counts[] = {5, 1, 7};

/* Counts the elements that differ from the formulas of data_tff_make.py. */
static int emnist_mismatches(const fedc_client_data *c, int ci) {
    int64_t n = c->num_examples;
    const fedc_feature *px = array(c, "pixels", FEDC_F32, 3, (int64_t[]){n, 28, 28});
    const fedc_feature *lb = array(c, "label", FEDC_I32, 1, &n);
    if (!px || !lb) return 1;
    int bad = 0;
    for (int64_t e = 0; e < n; e++) {
        bad += ((const int32_t *)lb->data)[e] != ci * 100 + e;
        for (int64_t p = 0; p < 28 * 28; p++)
            bad += ((const float *)px->data)[e * 784 + p] != (float)((ci * 1000 + e * 10 + p) * 0.25);
    }
    return bad;
}

static void test_emnist(void) {
    NEED_FILES();
    fedc_dataset *ds = open_ok("emnist.h5");
    if (!ds) return;
    check_ids(ds, emnist_ids, emnist_counts, 3);
    for (int i = 0; i < 3; i++) { /* client 2 is gzip-compressed in chunks */
        fedc_client_data *c = load_ok(ds, i);
        if (!c) continue;
        CHECK_EQ_INT(c->num_features, 2);
        CHECK(strcmp(c->features[0].name, "label") == 0); /* features in name order too */
        CHECK_EQ_INT(emnist_mismatches(c, i), 0);
        fedc_client_data_destroy(c);
    }
    int64_t index = -1;
    CHECK_OK(fedc_dataset_find(ds, "f0001_41", &index));
    CHECK_EQ_INT(index, 1);
    CHECK_ERR(fedc_dataset_find(ds, "f9999_99", &index), FEDC_ENOTFOUND, "f9999_99");
    fedc_client_data *c = NULL;
    CHECK_ERR(fedc_dataset_client(ds, 3, &c), FEDC_ERANGE, "emnist.h5");
    fedc_dataset *slice;
    CHECK_OK(fedc_dataset_slice(ds, 1, 3, &slice));
    if (slice) {
        c = load_ok(slice, 1);
        if (c) CHECK_EQ_INT(emnist_mismatches(c, 2), 0);
        fedc_client_data_destroy(c);
        fedc_dataset_destroy(slice);
    }
    fedc_dataset_destroy(ds);
}

/* --------------------------------------------------------- Shakespeare -- */

/* ("%d/%d naïve ☃ 😀|" % (c, e)) * e, as the script writes it. */
static void snippet(char *buf, size_t size, int c, int e) {
    buf[0] = '\0';
    for (int k = 0; k < e; k++) {
        size_t used = strlen(buf);
        snprintf(buf + used, size - used, "%d/%d na\xc3\xafve \xe2\x98\x83 \xf0\x9f\x98\x80|", c, e);
    }
}

static void test_shakespeare(void) {
    NEED_FILES();
    static const char *const ids[] = {"ALLS_WELL_THAT_ENDS_WELL_CELIA", "MUCH_ADO_ABOUT_NOTHING_OTHELLO",
                                      "THE_TRAGEDY_OF_KING_LEAR_KING"};
    fedc_dataset *ds = open_ok("shakespeare.h5");
    if (!ds) return;
    check_ids(ds, ids, (const int64_t[]){3, 1, 4}, 3);
    for (int c = 0; c < 3; c++) {
        fedc_client_data *cd = load_ok(ds, c);
        const fedc_feature *f = cd ? strings(cd, "snippets") : NULL;
        for (int e = 0; f && e < cd->num_examples; e++) {
            char want[256];
            snippet(want, sizeof want, c, e); /* e = 0 is the empty string */
            string_is(f, e, want);
        }
        fedc_client_data_destroy(cd);
    }
    fedc_dataset_destroy(ds);
}

/* ------------------------------------------------------ Stack Overflow -- */

static void check_stackoverflow_client(const fedc_client_data *cd, int c) {
    static const char *const order[] = {"creation_date", "score", "tags", "title", "tokens", "type"};
    CHECK_EQ_INT(cd->num_features, 6);
    for (int k = 0; k < 6 && k < cd->num_features; k++) CHECK(strcmp(cd->features[k].name, order[k]) == 0);
    int64_t n = cd->num_examples;
    const int32_t scores[] = {2147483647, -2147483647 - 1, c * 10 - 5};
    const fedc_feature *score = array(cd, "score", FEDC_I32, 1, &n);
    const fedc_feature *tokens = strings(cd, "tokens"), *title = strings(cd, "title"), *tags = strings(cd, "tags");
    const fedc_feature *type = strings(cd, "type"), *date = strings(cd, "creation_date");
    if (!score || !tokens || !title || !tags || !type || !date) return;
    for (int e = 0; e < n; e++) {
        char want[64];
        CHECK_EQ_INT(((const int32_t *)score->data)[e], scores[e]);
        snprintf(want, sizeof want, "tok%d %d caf\xc3\xa9", c, e); /* vlen UTF-8 */
        string_is(tokens, e, want);
        snprintf(want, sizeof want, "title %d %d", c, e); /* vlen ASCII */
        string_is(title, e, want);
        string_is(tags, e, e % 2 ? "c|python" : ""); /* vlen bytes */
        string_is(type, e, e == 0 ? "question" : "answer"); /* fixed-length, null-padded */
        snprintf(want, sizeof want, "2010-0%d-1%d 00:00:00.1+00:00", c + 1, e); /* fixed-length UTF-8 */
        string_is(date, e, want);
    }
}

static void test_stackoverflow(void) {
    NEED_FILES();
    fedc_dataset *ds = open_ok("stackoverflow.h5");
    if (!ds) return;
    check_ids(ds, (const char *const[]){"00000001", "00000002"}, (const int64_t[]){3, 2}, 2);
    for (int c = 0; c < 2; c++) {
        fedc_client_data *cd = load_ok(ds, c);
        if (cd) check_stackoverflow_client(cd, c);
        fedc_client_data_destroy(cd);
    }
    fedc_dataset_destroy(ds);
}

/* ----------------------------------------------------------- CIFAR-100 -- */

static const char *const cifar_ids[] = {"0", "1", "10", "2"}; /* by bytes: "10" < "2" */
static const int64_t cifar_counts[] = {2, 3, 1, 2};

static int cifar_mismatches(const fedc_client_data *cd, int c) {
    int64_t n = cd->num_examples;
    const fedc_feature *image = array(cd, "image", FEDC_U8, 4, (int64_t[]){n, 32, 32, 3});
    const fedc_feature *label = array(cd, "label", FEDC_I32, 1, &n);
    const fedc_feature *coarse = array(cd, "coarse_label", FEDC_I32, 1, &n);
    if (!image || !label || !coarse) return 1;
    int bad = 0;
    for (int64_t e = 0; e < n; e++) {
        bad += ((const int32_t *)label->data)[e] != c * 10 + e;
        bad += ((const int32_t *)coarse->data)[e] != e % 20;
        for (int64_t p = 0; p < 32 * 32 * 3; p++)
            bad += ((const uint8_t *)image->data)[e * 3072 + p] != (c * 7 + e * 3 + p) % 256;
    }
    return bad;
}

static void test_cifar100(void) {
    NEED_FILES();
    fedc_dataset *ds = open_ok("cifar100.h5");
    if (!ds) return;
    check_ids(ds, cifar_ids, cifar_counts, 4);
    for (int c = 0; c < 4; c++) {
        fedc_client_data *cd = load_ok(ds, c);
        if (cd) CHECK_EQ_INT(cifar_mismatches(cd, c), 0);
        fedc_client_data_destroy(cd);
    }
    fedc_dataset_destroy(ds);
}

/* -------------------------------------------------------------- dtypes -- */

static void check_dtypes_numbers(const fedc_client_data *cd) {
    int64_t n = cd->num_examples, d6[] = {n, 1, 2, 1, 2, 1};
    const fedc_feature *f16 = array(cd, "f16", FEDC_F32, 1, &n);
    const fedc_feature *f64 = array(cd, "f64", FEDC_F64, 3, (int64_t[]){n, 2, 3});
    const fedc_feature *i8 = array(cd, "i8", FEDC_I32, 1, &n), *i16 = array(cd, "i16", FEDC_I32, 1, &n);
    const fedc_feature *u16 = array(cd, "u16", FEDC_I32, 1, &n), *u32 = array(cd, "u32", FEDC_I32, 1, &n);
    const fedc_feature *u64 = array(cd, "u64", FEDC_I32, 1, &n), *u8 = array(cd, "u8", FEDC_U8, 1, &n);
    const fedc_feature *flag = array(cd, "flag", FEDC_BOOL, 1, &n), *r6 = array(cd, "rank6", FEDC_I32, 6, d6);
    if (!f16 || !f64 || !i8 || !i16 || !u16 || !u32 || !u64 || !u8 || !flag || !r6) return;
    for (int i = 0; i < n; i++) {
        CHECK(((const float *)f16->data)[i] == i * 0.5f);
        CHECK_EQ_INT(((const int32_t *)i8->data)[i], -i - 100);
        CHECK_EQ_INT(((const int32_t *)i16->data)[i], -i * 1000);
        CHECK_EQ_INT(((const int32_t *)u16->data)[i], i + 65000);
        CHECK_EQ_INT(((const int32_t *)u32->data)[i], i + 7);
        CHECK_EQ_INT(((const int32_t *)u64->data)[i], i + 9);
        CHECK_EQ_INT(((const uint8_t *)u8->data)[i], i + 250);
        CHECK_EQ_INT(((const uint8_t *)flag->data)[i], i % 2);
    }
    for (int k = 0; k < n * 6; k++) CHECK(((const double *)f64->data)[k] == k / 3.0);
    for (int k = 0; k < n * 4; k++) CHECK_EQ_INT(((const int32_t *)r6->data)[k], k);
}

static void test_dtypes(void) {
    NEED_FILES();
    fedc_dataset *ds = open_ok("dtypes.h5");
    if (!ds) return;
    check_ids(ds, (const char *const[]){"a", "b"}, (const int64_t[]){3, 0}, 2);
    for (int c = 0; c < 2; c++) { /* b has no examples: empty arrays and strings */
        fedc_client_data *cd = load_ok(ds, c);
        if (!cd) continue;
        CHECK_EQ_INT(cd->num_features, 12);
        check_dtypes_numbers(cd);
        const fedc_feature *space = strings(cd, "spacepad"), *nul = strings(cd, "nullterm");
        static const char *const words[] = {"ab", "", "abcdef"};
        for (int e = 0; space && nul && e < cd->num_examples; e++) {
            string_is(space, e, words[e]);
            string_is(nul, e, words[e]);
        }
        fedc_client_data_destroy(cd);
    }
    fedc_dataset_destroy(ds);
}

/* -------------------------------------------------------------- errors -- */

static void test_errors_without_h5py(void) {
    fedc_dataset *ds = (fedc_dataset *)1;
    CHECK_ERR(fedc__open_tff(&ds, file("missing.h5")), FEDC_EIO, "missing.h5");
    CHECK(ds == NULL);
    CHECK_ERR(fedc__open_tff(&ds, dir), FEDC_EIO, "directory");
    CHECK_ERR(fedc__open_tff(&ds, file("notes.h5")), FEDC_EPARSE, "not an HDF5 file");
    CHECK(strstr(fedc_errmsg(), "notes.h5"));
}

static void test_errors_at_open(void) {
    NEED_FILES();
    fedc_dataset *ds = (fedc_dataset *)1;
    CHECK_ERR(fedc__open_tff(&ds, file("noexamples.h5")), FEDC_EPARSE, "no /examples group");
    CHECK(ds == NULL);
    CHECK_ERR(fedc__open_tff(&ds, file("examples_dataset.h5")), FEDC_EPARSE, "/examples is not a group");
    CHECK_ERR(fedc__open_tff(&ds, file("client_dataset.h5")), FEDC_EPARSE, "/examples/c1 is not a group");
    CHECK_ERR(fedc__open_tff(&ds, file("ragged.h5")), FEDC_EPARSE,
              "client \"uneven\", feature \"y\": has 4 examples, \"x\" has 3");
    CHECK(strstr(fedc_errmsg(), "ragged.h5"));
    CHECK_ERR(fedc__open_tff(&ds, file("empty_client.h5")), FEDC_EPARSE, "client \"c1\" has no datasets");
    CHECK_ERR(fedc__open_tff(&ds, file("nested.h5")), FEDC_EPARSE, "feature \"sub\": is not a dataset");
    CHECK_ERR(fedc__open_tff(&ds, file("scalar.h5")), FEDC_EPARSE, "feature \"x\": is a scalar");
    CHECK_ERR(fedc__open_tff(&ds, file("rank7.h5")), FEDC_EUNSUPPORTED, "has rank 7");
    CHECK_ERR(fedc__open_tff(&ds, file("truncated.h5")), FEDC_EPARSE, "truncated");
    CHECK(strstr(fedc_errmsg(), "truncated.h5"));
    CHECK_ERR(fedc__open_tff(&ds, file("corrupt.h5")), FEDC_EPARSE, "corrupt.h5: cannot open the HDF5 file");
    fedc_status st = fedc__open_tff(&ds, file("truncated_head.h5"));
    CHECK_MSG(st == FEDC_EPARSE || st == FEDC_EIO, "%s: %s", fedc_status_str(st), fedc_errmsg());
    CHECK(strstr(fedc_errmsg(), "truncated_head.h5"));
    CHECK(ds == NULL);
}

/* Opens `name` (which must succeed) and loads client `id`, expecting `st`/`needle`. */
static void load_fails(const char *name, const char *id, fedc_status want, const char *needle, int line) {
    fedc_dataset *ds = open_ok(name);
    int64_t i = -1;
    if (ds) CHECK_OK(fedc_dataset_find(ds, id, &i));
    if (!ds || i < 0) {
        fedc_dataset_destroy(ds);
        return;
    }
    fedc_client_data *c = (fedc_client_data *)1;
    fedc_test_check_err(fedc_dataset_client(ds, i, &c), want, needle, id, __FILE__, line);
    CHECK(c == NULL);
    fedc_dataset_destroy(ds);
}

static void test_errors_at_load(void) {
    NEED_FILES();
    load_fails("range.h5", "high", FEDC_ERANGE, "client \"high\", feature \"label\": value 2147483648 at index 2",
               __LINE__);
    load_fails("range.h5", "low", FEDC_ERANGE, "value -2147483649 at index 0", __LINE__);
    load_fails("range.h5", "u64", FEDC_ERANGE, "value 18446744073709551615 at index 0", __LINE__);
    load_fails("unsupported.h5", "compound", FEDC_EUNSUPPORTED, "feature \"x\": unsupported HDF5 type: compound",
               __LINE__);
    load_fails("unsupported.h5", "complex", FEDC_EUNSUPPORTED, "compound", __LINE__);
    load_fails("unsupported.h5", "ragged_ints", FEDC_EUNSUPPORTED, "variable-length sequence", __LINE__);
    load_fails("unsupported.h5", "enum", FEDC_EUNSUPPORTED, "enum", __LINE__);
    load_fails("unsupported.h5", "strings2d", FEDC_EUNSUPPORTED, "strings of rank 2", __LINE__);
    if (access(file("lzf.h5"), R_OK) == 0) { /* a filter libhdf5 does not have */
        load_fails("lzf.h5", "c0", FEDC_EIO, "client \"c0\", feature \"x\": cannot read", __LINE__);
        CHECK_MSG(strstr(fedc_errmsg(), "lzf"), "%s", fedc_errmsg()); /* HDF5's reason */
    }
}

/* ------------------------------------------- hostile types and shapes -- */

/* Writes name with one client "c0" holding one dataset "x" of `type` and `dims`
 * through the HDF5 C API (no h5py needed): chunked and never written when
 * `data` is NULL, so only its fill value would be there. */
static void write_one(const char *name, hid_t type, int rank, const hsize_t *dims, const void *data) {
    hid_t f = H5Fcreate(file(name), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hsize_t chunk[FEDC_MAX_RANK];
    for (int i = 0; i < rank; i++) chunk[i] = dims[i] < 1024 ? dims[i] : 1024;
    if (!data) H5Pset_chunk(dcpl, rank, chunk);
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(f, "examples/c0/x", type, space, lcpl, dcpl, H5P_DEFAULT);
    CHECK(f >= 0 && d >= 0);
    if (data) CHECK(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    H5Dclose(d), H5Sclose(space), H5Pclose(dcpl), H5Pclose(lcpl), H5Fclose(f);
}

/* A 2-byte float type: IEEE half, or bfloat16's layout (8 exponent bits). */
static hid_t float16_type(bool bfloat) {
    hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    H5Tset_fields(t, 15, bfloat ? 7 : 10, bfloat ? 8 : 5, 0, bfloat ? 7 : 10);
    H5Tset_precision(t, 16);
    H5Tset_size(t, 2);
    H5Tset_ebias(t, bfloat ? 127 : 15);
    return t;
}

/* HDF5 converts any float layout it is told: only IEEE binary16/32/64 are taken. */
static void test_float_layouts(void) {
    const uint16_t half[3] = {0x3800, 0x3c00, 0xc000}; /* 0.5, 1, -2 */
    hid_t t = float16_type(false);
    write_one("half.h5", t, 1, (hsize_t[]){3}, half);
    H5Tclose(t);
    fedc_dataset *ds = open_ok("half.h5");
    fedc_client_data *c = ds ? load_ok(ds, 0) : NULL;
    const fedc_feature *x = c ? array(c, "x", FEDC_F32, 1, (int64_t[]){3}) : NULL;
    if (x) CHECK(((const float *)x->data)[0] == 0.5f && ((const float *)x->data)[2] == -2.0f);
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);
    t = float16_type(true);
    write_one("bfloat16.h5", t, 1, (hsize_t[]){3}, half);
    H5Tclose(t);
    load_fails("bfloat16.h5", "c0", FEDC_EUNSUPPORTED, "a 16-bit float that is not IEEE binary16", __LINE__);
}

/* A label dataset declaring 2^40 rows in a file of a few KB: refused at open
 * instead of allocating and filling terabytes. */
static void test_huge_declared_rows(void) {
    write_one("huge.h5", H5T_STD_I64LE, 1, (hsize_t[]){(hsize_t)1 << 40}, NULL);
    fedc_dataset *ds = (fedc_dataset *)1;
    CHECK_ERR(fedc__open_tff(&ds, file("huge.h5")), FEDC_EPARSE,
              "feature \"x\": declares 1099511627776 elements (1099511627776 rows), more than a file of");
    CHECK(ds == NULL);
    write_one("wide.h5", H5T_IEEE_F32LE, 2, (hsize_t[]){2, (hsize_t)1 << 36}, NULL);
    CHECK_ERR(fedc__open_tff(&ds, file("wide.h5")), FEDC_EPARSE, "declares 137438953472 elements (2 rows)");
}

/* --------------------------------------------------- quiet, no leaks -- */

static int handler_calls;
static herr_t count_handler(hid_t stack, void *data) {
    (void)stack, (void)data;
    handler_calls++;
    return 0;
}

/* Every failure the tests above provoke, with HDF5 error stacks underneath. */
static void provoke_failures(fedc_status *got) {
    static const char *const bad[] = {"notes.h5", "noexamples.h5", "ragged.h5", "truncated.h5", "corrupt.h5"};
    int k = 0;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fedc_dataset *ds;
        got[k++] = fedc__open_tff(&ds, file(bad[i]));
    }
    got[k++] = open_load_all("range.h5");
    got[k++] = open_load_all("unsupported.h5");
    got[k++] = access(file("lzf.h5"), R_OK) == 0 ? open_load_all("lzf.h5") : FEDC_EIO;
}

/* HDF5's errors reach neither stderr nor the caller's handler, which is restored. */
static void test_quiet(void) {
    NEED_FILES();
    H5E_auto2_t old_func;
    void *old_data;
    H5Eget_auto2(H5E_DEFAULT, &old_func, &old_data);
    H5Eset_auto2(H5E_DEFAULT, count_handler, &handler_calls);
    char log[4200];
    snprintf(log, sizeof log, "%s", file("stderr.log"));
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2);
    close(fd);
    fedc_status got[8];
    provoke_failures(got);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    for (int k = 0; k < 8; k++) CHECK_MSG(got[k] != FEDC_OK, "failure %d did not fail", k);
    struct stat st;
    CHECK(stat(log, &st) == 0 && st.st_size == 0);
    CHECK_EQ_INT(handler_calls, 0);
    H5E_auto2_t func = NULL;
    void *data = NULL;
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    CHECK(func == count_handler && data == &handler_calls);
    H5Eset_auto2(H5E_DEFAULT, old_func, old_data);
}

/* No HDF5 identifier left open by any success or failure path. */
static void test_no_open_ids(void) {
    NEED_FILES();
    id_probe p = probe(); /* first, the probe finds a leak made on purpose */
    hid_t leak = H5Screate(H5S_SCALAR);
    CHECK_EQ_INT(still_open(p), 1);
    H5Sclose(leak);
    static const char *const good[] = {"emnist.h5", "shakespeare.h5", "stackoverflow.h5", "cifar100.h5", "dtypes.h5"};
    p = probe();
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) CHECK_OK(open_load_all(good[i]));
    CHECK_EQ_INT(still_open(p), 0);
    fedc_status got[8];
    provoke_failures(got);
    static const char *const bad_open[] = {"examples_dataset.h5", "client_dataset.h5", "empty_client.h5",
                                           "nested.h5", "scalar.h5", "rank7.h5", "truncated_head.h5"};
    for (size_t i = 0; i < sizeof bad_open / sizeof *bad_open; i++) CHECK(open_load_all(bad_open[i]) != FEDC_OK);
    CHECK_EQ_INT(still_open(p), 0);
}

/* Every allocation of open + load fails in turn: FEDC_ENOMEM each time, nothing
 * left open (LeakSanitizer checks the memory), then success. */
static void alloc_failures(const char *name) {
    uint64_t k = 1;
    for (; k < 100000; k++) {
        id_probe p = probe();
        fedc__alloc_fail_after(k);
        fedc_status st = open_load_all(name);
        fedc__alloc_fail_after(0);
        if (st == FEDC_OK) break;
        CHECK_MSG(st == FEDC_ENOMEM, "%s, allocation %llu: %s: %s", name, (unsigned long long)k, fedc_status_str(st),
                  fedc_errmsg());
        CHECK_EQ_INT(still_open(p), 0);
        if (st != FEDC_ENOMEM) return;
    }
    CHECK(k > 10);
    fprintf(stderr, "    %s: %llu allocation points\n", name, (unsigned long long)(k - 1));
}

static void test_alloc_failures(void) {
    NEED_FILES();
    alloc_failures("emnist.h5");
    alloc_failures("stackoverflow.h5");
    alloc_failures("dtypes.h5");
}

/* ------------------------------------------------------------- threads -- */

/* Threads share one dataset and open their own at the same time; each counts
 * what it found wrong (the harness's CHECKs are for the main thread). */
typedef struct worker {
    fedc_dataset *shared;
    int wrong;
} worker;

static void *run_worker(void *arg) {
    worker *w = arg;
    for (int round = 0; round < 10; round++) {
        fedc_dataset *own = NULL;
        if (fedc__open_tff(&own, file("cifar100.h5"))) w->wrong++;
        for (int c = 0; own && c < 4; c++) {
            fedc_client_data *a = NULL, *b = NULL;
            if (fedc_dataset_client(w->shared, c, &a) || fedc_dataset_client(own, c, &b)) w->wrong++;
            else w->wrong += a->num_examples != cifar_counts[c] || b->num_examples != cifar_counts[c] ||
                             memcmp(a->features[1].data, b->features[1].data, (size_t)a->num_examples * 3072);
            fedc_client_data_destroy(a);
            fedc_client_data_destroy(b);
        }
        fedc_dataset_destroy(own);
    }
    return NULL;
}

static void test_threads(void) {
    NEED_FILES();
    fedc_dataset *ds = open_ok("cifar100.h5");
    if (!ds) return;
    enum { N = 4 };
    pthread_t t[N];
    worker w[N];
    for (int i = 0; i < N; i++) {
        w[i] = (worker){ds, 0};
        CHECK(pthread_create(&t[i], NULL, run_worker, &w[i]) == 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        CHECK_EQ_INT(w[i].wrong, 0);
    }
    for (int c = 0; c < 4; c++) { /* and the values are the script's */
        fedc_client_data *cd = load_ok(ds, c);
        if (cd) CHECK_EQ_INT(cifar_mismatches(cd, c), 0);
        fedc_client_data_destroy(cd);
    }
    fedc_dataset_destroy(ds);
}

/* --------------------------------------------------------------- setup -- */

/* A python3 that can import h5py: Debian's first, as pyenv's often lacks it. */
static const char *find_python(void) {
    static const char *const candidates[] = {"/usr/bin/python3", "python3"};
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s -c 'import h5py, numpy' >/dev/null 2>&1", candidates[i]);
        if (system(cmd) == 0) return candidates[i];
    }
    return NULL;
}

/* Writes the test files; false (with a message) only if the script fails. */
static bool make_files(void) {
    FILE *f = fopen(file("notes.h5"), "w"); /* text, whatever the name says */
    if (!f || fputs("these are notes, not HDF5\n", f) < 0 || fclose(f) != 0) {
        fprintf(stderr, "error: cannot write %s\n", file("notes.h5"));
        return false;
    }
    const char *python = find_python();
    if (!python) {
        fprintf(stderr, "note: no python3 with h5py (tried /usr/bin/python3, python3): HDF5 file tests skipped\n");
        return true;
    }
    char cmd[8400];
    snprintf(cmd, sizeof cmd, "%s '%s' '%s'", python, fedc_test_path("tests/data_tff_make.py"), dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "error: %s failed\n", cmd);
        return false;
    }
    have_files = true;
    return true;
}

static void remove_dir(void) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlink(file(e->d_name));
    if (d) closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"emnist", test_emnist},
        {"shakespeare", test_shakespeare},
        {"stackoverflow", test_stackoverflow},
        {"cifar100", test_cifar100},
        {"dtypes", test_dtypes},
        {"errors_without_h5py", test_errors_without_h5py},
        {"errors_at_open", test_errors_at_open},
        {"errors_at_load", test_errors_at_load},
        {"float_layouts", test_float_layouts},
        {"huge_declared_rows", test_huge_declared_rows},
        {"quiet", test_quiet},
        {"no_open_ids", test_no_open_ids},
        {"alloc_failures", test_alloc_failures},
        {"threads", test_threads},
    };
    if (!mkdtemp(dir)) {
        fprintf(stderr, "error: cannot create a temporary directory\n");
        return 1;
    }
    bool made = make_files();
    int rc = made ? fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests)) : 1;
    remove_dir();
    return rc;
}
