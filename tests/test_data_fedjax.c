/*
 * Tests of the FedJAX SQLite reader (src/data/read_fedjax.c): databases written
 * exactly as FedJAX writes them (tests/data_fedjax_make.py, which replicates
 * fedjax/core/serialization.py and SQLiteFederatedDataBuilder) are read back —
 * ids, order, counts, shapes, dtypes and every value, which the script computes
 * by formulas repeated here — and every way a file or a record can be broken is
 * refused with its status and a message naming the file and the client. Needs a
 * python3 with msgpack and numpy; without one the tests are skipped with a note.
 * Files go to a fresh mkdtemp directory, removed at the end.
 */
#include "core/internal.h"
#include "harness.h"

#include <dirent.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "data/dataset.h"
#include "formats/formats.h"
#include "formats/fedjax_records.h"

static const char *tmpdir; /* fedc_test_tmpdir */

/* The first python3 with msgpack and numpy (a pyenv python3 may lack them while
 * /usr/bin/python3 has them), or NULL. */
static const char *find_python(void) {
    static const char *const candidates[] = {"python3", "/usr/bin/python3", "/usr/local/bin/python3"};
    char cmd[256];
    for (int i = 0; i < FEDC_COUNT_OF(candidates); i++) {
        snprintf(cmd, sizeof cmd, "%s -c 'import msgpack, numpy' >/dev/null 2>&1", candidates[i]);
        if (system(cmd) == 0) return candidates[i];
    }
    return NULL;
}

static fedc_dataset *open_ok(const char *name) {
    fedc_dataset *ds = NULL;
    CHECK_OK(fedc__open_fedjax(&ds, fedc_test_tmp(name)));
    return ds;
}

static fedc_client_data *load_ok(fedc_dataset *ds, const char *id) {
    int64_t i = -1;
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_dataset_find(ds, id, &i));
    if (i >= 0) CHECK_OK(fedc_dataset_client(ds, i, &c));
    return c;
}

/* The feature `name` with this kind, dtype and shape (rank dims), or NULL. */
static const fedc_feature *feature(const fedc_client_data *c, const char *name, fedc_feature_kind kind,
                                   fedc_dtype dt, int rank, const int64_t *dims) {
    const fedc_feature *f = c ? fedc_client_feature(c, name) : NULL;
    CHECK_MSG(f != NULL, "no feature \"%s\"", name);
    if (!f) return NULL;
    fedc_type want = fedc_type_make(dt, rank, dims);
    char a[64], b[64];
    CHECK_EQ_INT(f->kind, kind);
    CHECK_MSG(fedc_type_equal(&f->type, &want), "feature \"%s\" is %s, expected %s", name,
              fedc_type_str(&f->type, a, sizeof a), fedc_type_str(&want, b, sizeof b));
    return f->kind == kind && fedc_type_equal(&f->type, &want) ? f : NULL;
}

/* String i of a STRINGS feature equals `s` (n bytes). */
static void check_string(const fedc_feature *f, int64_t i, const char *s, size_t n) {
    if (!f) return;
    int64_t len = f->offsets[i + 1] - f->offsets[i];
    CHECK_EQ_INT(len, n);
    CHECK_MSG(len == (int64_t)n && memcmp((const char *)f->data + f->offsets[i], s, n) == 0,
              "string %lld of \"%s\" differs", (long long)i, f->name);
}

#define CHECK_STRING(f, i, lit) check_string((f), (i), (lit), sizeof(lit) - 1)

/* ------------------------------------------------------------- reading -- */

static void test_emnist(void) {
    static const char *const ids[] = {"f0003_11", "f0001_07", "f0002_42"}; /* insertion (rowid) order */
    static const int64_t sizes[] = {3, 5, 2};
    fedc_dataset *ds = open_ok("emnist.sqlite");
    if (!ds) return;
    CHECK_EQ_INT(fedc_dataset_format(ds), FEDC_FORMAT_FEDJAX);
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), 3);
    CHECK_EQ_INT(fedc_dataset_total_examples(ds), 10);
    for (int c = 0; c < 3; c++) {
        CHECK(strcmp(fedc_dataset_client_id(ds, c), ids[c]) == 0);
        CHECK_EQ_INT(fedc_dataset_client_examples(ds, c), sizes[c]);
        fedc_client_data *cd = NULL;
        CHECK_OK(fedc_dataset_client(ds, c, &cd));
        if (!cd) continue;
        int64_t n = sizes[c];
        CHECK(strcmp(cd->id, ids[c]) == 0);
        CHECK_EQ_INT(cd->num_features, 2);
        CHECK(cd->num_features == 2 && strcmp(cd->features[0].name, "pixels") == 0); /* the record's order */
        const fedc_feature *px = feature(cd, "pixels", FEDC_FEATURE_ARRAY, FEDC_F32, 3, (int64_t[]){n, 28, 28});
        const fedc_feature *lb = feature(cd, "label", FEDC_FEATURE_ARRAY, FEDC_I32, 1, (int64_t[]){n});
        int bad = 0;
        for (int64_t k = 0; px && k < n * 784; k++) {
            float want = (float)((double)((k + 1000 * c) % 251) / 250.0);
            bad += ((const float *)px->data)[k] != want;
        }
        CHECK_EQ_INT(bad, 0);
        for (int64_t e = 0; lb && e < n; e++) CHECK_EQ_INT(((const int32_t *)lb->data)[e], (7 * c + e) % 10);
        fedc_client_data_destroy(cd);
    }
    int64_t i = -1;
    CHECK_OK(fedc_dataset_find(ds, "f0002_42", &i));
    CHECK_EQ_INT(i, 2);
    CHECK_ERR(fedc_dataset_find(ds, "f9999_99", &i), FEDC_ENOTFOUND, "f9999_99");
    fedc_dataset_destroy(ds);
}

static void test_slice(void) {
    fedc_dataset *ds = open_ok("emnist.sqlite"), *s = NULL;
    if (!ds) return;
    CHECK_OK(fedc_dataset_slice(ds, 1, 3, &s));
    fedc_client_data *c = NULL;
    if (s) CHECK_OK(fedc_dataset_client(s, 1, &c));
    CHECK(c && strcmp(c->id, "f0002_42") == 0 && c->num_examples == 2);
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(s);
    fedc_dataset_destroy(ds);
}

static void test_shakespeare(void) {
    fedc_dataset *ds = open_ok("shakespeare.sqlite");
    if (!ds) return;
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), 2);
    CHECK(strcmp(fedc_dataset_client_id(ds, 0), "THE_TRAGEDY_OF_KING_LEAR_KENT") == 0);
    fedc_client_data *c = load_ok(ds, "THE_TRAGEDY_OF_KING_LEAR_KENT");
    const fedc_feature *f = feature(c, "snippets", FEDC_FEATURE_STRINGS, FEDC_U8, 1, (int64_t[]){3});
    CHECK_STRING(f, 0, "Sir, I am too old to learn.");
    CHECK_STRING(f, 1, "");
    CHECK_STRING(f, 2, "caf\xc3\xa9 \0nul"); /* bytes as stored, a NUL included */
    fedc_client_data_destroy(c);
    c = load_ok(ds, "AS_YOU_LIKE_IT_ROSALIND");
    CHECK_STRING(feature(c, "snippets", FEDC_FEATURE_STRINGS, FEDC_U8, 1, (int64_t[]){1}), 0, "All the world's a stage");
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);
}

static void test_stackoverflow(void) {
    fedc_dataset *ds = open_ok("stackoverflow.sqlite");
    if (!ds) return;
    fedc_client_data *c = load_ok(ds, "00000001");
    const int64_t three[] = {3};
    const fedc_feature *t = feature(c, "tokens", FEDC_FEATURE_STRINGS, FEDC_U8, 1, three);
    CHECK_STRING(t, 0, "how do i");
    CHECK_STRING(t, 1, "use msgpack in c");
    CHECK_STRING(t, 2, "?");
    const fedc_feature *s = feature(c, "score", FEDC_FEATURE_ARRAY, FEDC_I32, 1, three); /* int64 on disk */
    if (s) {
        CHECK_EQ_INT(((const int32_t *)s->data)[0], -3);
        CHECK_EQ_INT(((const int32_t *)s->data)[1], INT32_MAX);
        CHECK_EQ_INT(((const int32_t *)s->data)[2], INT32_MIN);
    }
    /* numpy fixed-width 'S10' (dtype name "bytes80"): the NUL padding dropped */
    const fedc_feature *d = feature(c, "creation_date", FEDC_FEATURE_STRINGS, FEDC_U8, 1, three);
    CHECK_STRING(d, 0, "2010-01-02");
    CHECK_STRING(d, 2, "2012-06");
    const fedc_feature *k = feature(c, "type", FEDC_FEATURE_STRINGS, FEDC_U8, 1, three);
    CHECK_STRING(k, 0, "question");
    CHECK_STRING(k, 1, "answer");
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);
}

static void check_i32(const fedc_feature *f, int32_t a, int32_t b) {
    if (!f) return;
    CHECK_EQ_INT(((const int32_t *)f->data)[0], a);
    CHECK_EQ_INT(((const int32_t *)f->data)[1], b);
}

static void test_dtypes(void) {
    fedc_dataset *ds = open_ok("dtypes.sqlite");
    if (!ds) return;
    fedc_client_data *c = load_ok(ds, "typed");
    const int64_t two[] = {2};
    const fedc_feature *f = feature(c, "f64", FEDC_FEATURE_ARRAY, FEDC_F64, 2, (int64_t[]){2, 2});
    if (f) {
        const double *x = f->data;
        CHECK(x[0] == 1.5 && x[1] == -2.25 && x[2] == 1e300 && x[3] == 0.0);
    }
    if ((f = feature(c, "u8", FEDC_FEATURE_ARRAY, FEDC_U8, 1, two)))
        CHECK(((const uint8_t *)f->data)[0] == 0 && ((const uint8_t *)f->data)[1] == 255);
    if ((f = feature(c, "flag", FEDC_FEATURE_ARRAY, FEDC_BOOL, 1, two)))
        CHECK(((const uint8_t *)f->data)[0] == 1 && ((const uint8_t *)f->data)[1] == 0);
    check_i32(feature(c, "i8", FEDC_FEATURE_ARRAY, FEDC_I32, 1, two), -128, 127);
    check_i32(feature(c, "i16", FEDC_FEATURE_ARRAY, FEDC_I32, 1, two), -32768, 32767);
    check_i32(feature(c, "u16", FEDC_FEATURE_ARRAY, FEDC_I32, 1, two), 0, 65535);
    check_i32(feature(c, "u32", FEDC_FEATURE_ARRAY, FEDC_I32, 1, two), 7, INT32_MAX);
    check_i32(feature(c, "u64", FEDC_FEATURE_ARRAY, FEDC_I32, 1, two), 0, INT32_MAX);
    f = feature(c, "words", FEDC_FEATURE_STRINGS, FEDC_U8, 1, two); /* [n, 1] of bytes */
    CHECK_STRING(f, 0, "a");
    CHECK_STRING(f, 1, "bc");
    f = feature(c, "cube", FEDC_FEATURE_ARRAY, FEDC_I32, 6, (int64_t[]){2, 1, 2, 1, 2, 1});
    for (int i = 0; f && i < 8; i++) CHECK_EQ_INT(((const int32_t *)f->data)[i], i);
    fedc_client_data_destroy(c);
    c = load_ok(ds, "empty");
    CHECK(c && c->num_examples == 0);
    feature(c, "pixels", FEDC_FEATURE_ARRAY, FEDC_F32, 3, (int64_t[]){0, 28, 28});
    f = feature(c, "text", FEDC_FEATURE_STRINGS, FEDC_U8, 1, (int64_t[]){0});
    if (f) CHECK_EQ_INT(f->offsets[0], 0);
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);
}

/* A text id (not FedJAX's bytes) is found again when loaded: SQLite never finds
 * a BLOB equal to TEXT. */
static void test_text_id(void) {
    fedc_dataset *ds = open_ok("text_id.sqlite");
    if (!ds) return;
    fedc_client_data *c = load_ok(ds, "text id");
    CHECK(c != NULL);
    fedc_client_data_destroy(c);
    c = load_ok(ds, "blob id");
    CHECK(c != NULL);
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);
}

/* A client deleted after the index was read is ENOTFOUND, not a crash. */
static void test_vanished_client(void) {
    fedc_dataset *ds = open_ok("text_id.sqlite");
    if (!ds) return;
    sqlite3 *db = NULL;
    CHECK_EQ_INT(sqlite3_open(fedc_test_tmp("text_id.sqlite"), &db), SQLITE_OK);
    CHECK_EQ_INT(sqlite3_exec(db, "DELETE FROM federated_data WHERE client_id = 'text id'", NULL, NULL, NULL),
                 SQLITE_OK);
    sqlite3_close(db);
    fedc_client_data *c = NULL;
    CHECK_ERR(fedc_dataset_client(ds, 0, &c), FEDC_ENOTFOUND, "client \"text id\" is no longer in the file");
    CHECK(c == NULL);
    CHECK_OK(fedc_dataset_client(ds, 1, &c));
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);
}

/* -------------------------------------------------------------- errors -- */

static void open_fails(const char *name, fedc_status want, const char *needle) {
    fedc_dataset *ds = (fedc_dataset *)&ds; /* must come back NULL */
    CHECK_ERR(fedc__open_fedjax(&ds, fedc_test_tmp(name)), want, needle);
    CHECK_MSG(strstr(fedc_errmsg(), fedc_test_tmp(name)) != NULL, "%s: the message does not name the file: %s", name,
              fedc_errmsg());
    CHECK(ds == NULL);
}

static void test_missing_file(void) { open_fails("missing.sqlite", FEDC_EIO, "cannot open"); }

static void test_open_errors(void) {
    open_fails("not_sqlite.sqlite", FEDC_EPARSE, "not an SQLite database");
    open_fails("no_table.sqlite", FEDC_EPARSE, "no such table: federated_data");
    open_fails("no_column.sqlite", FEDC_EPARSE, "no such column: data");
    open_fails("bad_count.sqlite", FEDC_EPARSE, "client \"b\": num_examples is negative");
    open_fails("text_count.sqlite", FEDC_EPARSE, "num_examples is text, not a count");
    open_fails("null_count.sqlite", FEDC_EPARSE, "num_examples is NULL");
    open_fails("nul_id.sqlite", FEDC_EPARSE, "holds a NUL byte");
    open_fails("int_id.sqlite", FEDC_EPARSE, "client 0: client_id is an integer, not bytes");
}

/* A copy of `name` cut to `len` bytes, as cut.sqlite. */
static void copy_cut(const char *name, long len) {
    static unsigned char buf[1 << 16];
    FILE *in = fopen(fedc_test_tmp(name), "rb"), *out = fopen(fedc_test_tmp("cut.sqlite"), "wb");
    CHECK(in && out);
    size_t n = in ? fread(buf, 1, sizeof buf, in) : 0;
    if (out) CHECK_EQ_INT(fwrite(buf, 1, n < (size_t)len ? n : (size_t)len, out), n < (size_t)len ? n : (size_t)len);
    if (in) fclose(in);
    if (out) fclose(out);
}

/* SQLite reads a truncated file's missing pages as zeros: cut anywhere past its
 * 100-byte header, the file was opened and lost clients or read them empty. */
static void test_truncated_file(void) {
    for (long len = 100; len < 12288; len += 997) {
        copy_cut("emnist.sqlite", len);
        char want[64];
        snprintf(want, sizeof want, "(12288 bytes), the file has %ld", len);
        open_fails("cut.sqlite", FEDC_EPARSE, "truncated: its header says 3 pages of 4096 bytes");
        CHECK_MSG(strstr(fedc_errmsg(), want) != NULL, "%s", fedc_errmsg());
    }
    copy_cut("emnist.sqlite", 50); /* no header left to trust: SQLite's own error */
    open_fails("cut.sqlite", FEDC_EPARSE, "cut.sqlite");
}

typedef struct bad_record {
    const char *client;
    fedc_status status;
    const char *needle;
} bad_record;

static const bad_record bad_records[] = {
    {"bad_zlib", FEDC_EPARSE, "not a valid zlib stream (incorrect header check)"},
    {"truncated_zlib", FEDC_EPARSE, "zlib stream is truncated"},
    {"empty_blob", FEDC_EPARSE, "zlib stream is truncated"},
    {"zlib_trailing", FEDC_EPARSE, "4 bytes follow the end of the data's zlib stream"},
    {"null_data", FEDC_EPARSE, "data is NULL"},
    {"truncated_msgpack", FEDC_EPARSE, "the data is truncated msgpack"},
    {"msgpack_trailing", FEDC_EPARSE, "1 bytes follow the msgpack object of the data"},
    {"invalid_msgpack", FEDC_EPARSE, "the data is not valid msgpack"},
    {"not_a_map", FEDC_EPARSE, "the data is a msgpack array, not a map"},
    {"not_ext", FEDC_EPARSE, "feature \"x\": a msgpack array, not a FedJAX array"},
    {"key_not_string", FEDC_EPARSE, "a feature name is a msgpack integer"},
    {"unknown_ext", FEDC_EPARSE, "msgpack extension type 7, which FedJAX does not write"},
    {"complex", FEDC_EUNSUPPORTED, "a complex number (msgpack extension type 2)"},
    {"npscalar", FEDC_EUNSUPPORTED, "a numpy scalar (msgpack extension type 3)"},
    {"scalar_ndarray", FEDC_EUNSUPPORTED, "a scalar, not an array with one row per example"},
    {"payload_truncated", FEDC_EPARSE, "the ndarray payload is truncated msgpack"},
    {"payload_not_list", FEDC_EPARSE, "the ndarray payload is a msgpack map, not [shape, dtype, bytes]"},
    {"shape_not_list", FEDC_EPARSE, "shape is a msgpack string, not a list"},
    {"shape_negative", FEDC_EPARSE, "dimension 0 of the array's shape is a msgpack integer, not a size"},
    {"dtype_not_string", FEDC_EPARSE, "dtype is a msgpack integer, not a name"},
    {"data_not_bytes", FEDC_EPARSE, "data is a msgpack array, not bytes"},
    {"byte_length", FEDC_EPARSE, "20 bytes of data for shape [3,2] of float32 (6 elements of 4 bytes)"},
    {"float16", FEDC_EUNSUPPORTED, "dtype 'float16' is not supported"},
    {"complex64", FEDC_EUNSUPPORTED, "dtype 'complex64' is not supported"},
    {"unicode", FEDC_EUNSUPPORTED, "dtype 'str32' is not supported"},
    {"int64_range", FEDC_ERANGE, "element 1 is 2147483648, outside the range of i32"},
    {"uint32_range", FEDC_ERANGE, "element 2 is 4294967295, outside the range of i32"},
    {"rank7", FEDC_EUNSUPPORTED, "the array has 7 dimensions; fedc takes at most 6"},
    {"examples_mismatch", FEDC_EPARSE, "4 examples (its leading dimension), but num_examples is 3"},
    {"bytes_count", FEDC_EPARSE, "2 byte strings for shape [3] (3 elements)"},
    {"bytes_item", FEDC_EPARSE, "element 1 of the bytes array is a msgpack integer, not bytes"},
    {"bytes_rank2", FEDC_EUNSUPPORTED, "a byte-string array of shape [3,2]; fedc takes one string per example"},
    {"duplicate", FEDC_EPARSE, "feature \"x\": the record names the feature twice"},
    {"huge_count", FEDC_EPARSE, "the data is truncated msgpack (5 bytes; an object at byte 0 needs more)"},
    {"huge_payload_count", FEDC_EPARSE, "the bytes array payload is truncated msgpack (8 bytes; an object at byte 3"},
    {"too_deep", FEDC_EPARSE, "the data nests more than 16 deep at byte 16"},
};

static void test_record_errors(void) {
    fedc_dataset *ds = open_ok("corrupt.sqlite");
    if (!ds) return;
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), FEDC_COUNT_OF(bad_records) + 1);
    fedc_client_data *c = load_ok(ds, "good"); /* the others fail for their own reasons only */
    CHECK(c != NULL);
    fedc_client_data_destroy(c);
    for (int k = 0; k < FEDC_COUNT_OF(bad_records); k++) {
        const bad_record *b = &bad_records[k];
        int64_t i = -1;
        CHECK_OK(fedc_dataset_find(ds, b->client, &i));
        if (i < 0) continue;
        c = (fedc_client_data *)&c;
        fedc_status st = fedc_dataset_client(ds, i, &c);
        CHECK_ERR(st, b->status, b->needle);
        char who[128];
        snprintf(who, sizeof who, "%s: client \"%s\": ", fedc_test_tmp("corrupt.sqlite"), b->client);
        CHECK_MSG(strstr(fedc_errmsg(), who) != NULL, "%s: the message does not name file and client: %s", b->client,
                  fedc_errmsg());
        CHECK(c == NULL);
    }
    fedc_dataset_destroy(ds);
}

/* The msgpack of one client's record, inflated: *n bytes the caller frees. */
static unsigned char *record_msgpack(const char *name, const char *client, size_t *n) {
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    unsigned char *out = NULL;
    *n = 0;
    if (sqlite3_open_v2(fedc_test_tmp(name), &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT data FROM federated_data WHERE client_id = ?", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_bind_blob(q, 1, client, (int)strlen(client), SQLITE_STATIC) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW) {
        uLongf len = 1 << 20;
        out = malloc(len);
        if (out && uncompress(out, &len, sqlite3_column_blob(q, 0), (uLong)sqlite3_column_bytes(q, 0)) == Z_OK)
            *n = len;
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    CHECK_MSG(*n > 0, "cannot read the record of %s in %s", client, name);
    return out;
}

/* Records damaged at random — bytes changed, cut short — fail cleanly (or still
 * decode): no crash, no leak, never a status outside the reader's. */
static void fuzz_record(const char *name, const char *client, int64_t examples, int rounds) {
    size_t n;
    unsigned char *good = record_msgpack(name, client, &n);
    unsigned char *bad = malloc(n ? n : 1), *z = malloc(compressBound(n));
    uint64_t x = 88172645463325252u; /* xorshift64: the same damage every run */
    int decoded = 0;
    for (int r = 0; good && bad && z && r < rounds; r++) {
        memcpy(bad, good, n);
        size_t len = n;
        for (int k = 0; k < 1 + r % 4; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (r % 8 == 7) len = len ? (size_t)(x % len) : 0;
            else bad[(x >> 8) % n] = (unsigned char)(r % 3 ? x : (x >> 40) % 2 ? 0xff : 0);
        }
        uLongf zn = compressBound(n);
        compress(z, &zn, bad, len);
        fedc_client_data *c = NULL;
        fedc_status st = fedc__fedjax_decode("fuzz", client, examples, z, zn, &c);
        CHECK_MSG(st == FEDC_OK || st == FEDC_EPARSE || st == FEDC_EUNSUPPORTED || st == FEDC_ERANGE,
                  "round %d: %s: %s", r, fedc_status_str(st), fedc_errmsg());
        CHECK(st ? c == NULL : c != NULL);
        decoded += st == FEDC_OK;
        fedc_client_data_destroy(c);
    }
    CHECK(decoded < rounds);
    free(good);
    free(bad);
    free(z);
}

static void test_fuzz(void) {
    fuzz_record("stackoverflow.sqlite", "00000001", 3, 4000);
    fuzz_record("dtypes.sqlite", "typed", 2, 4000);
    fuzz_record("shakespeare.sqlite", "THE_TRAGEDY_OF_KING_LEAR_KENT", 3, 2000);
}

/* ---------------------------------------------------- allocation failure -- */

/* Opens `name` and loads every client. */
static fedc_status open_and_load_all(const char *name) {
    fedc_dataset *ds = NULL;
    fedc_status st = fedc__open_fedjax(&ds, fedc_test_tmp(name));
    for (int64_t i = 0; !st && i < fedc_dataset_num_clients(ds); i++) {
        fedc_client_data *c = NULL;
        st = fedc_dataset_client(ds, i, &c);
        fedc_client_data_destroy(c);
    }
    fedc_dataset_destroy(ds);
    return st;
}

/* Every fedc allocation of open and load failing in turn (SQLite and msgpack-c
 * allocate on their own, zlib through fedc): each is ENOMEM and leaks nothing. */
static void test_alloc_failure(void) {
    static const char *const files[] = {"emnist.sqlite", "shakespeare.sqlite", "stackoverflow.sqlite",
                                        "dtypes.sqlite"};
    for (int f = 0; f < FEDC_COUNT_OF(files); f++) {
        int failures = 0;
        for (uint64_t k = 1; k < 10000; k++) {
            fedc__alloc_fail_after(k);
            fedc_status st = open_and_load_all(files[f]);
            fedc__alloc_fail_after(0);
            if (st == FEDC_OK) break;
            CHECK_MSG(st == FEDC_ENOMEM, "%s, allocation %llu failing: %s: %s", files[f], (unsigned long long)k,
                      fedc_status_str(st), fedc_errmsg());
            failures++;
        }
        CHECK_MSG(failures > 5, "%s: only %d allocations", files[f], failures);
    }
}

/* ---------------------------------------------------------------- main -- */

/* Writes the databases with FedJAX's encoding: 1 done, 0 skipped (no python3
 * with msgpack and numpy), -1 failed. */
static int make_databases(void) {
    const char *py = find_python();
    if (!py) {
        printf("python3 with msgpack and numpy not available: FedJAX database tests skipped\n");
        return 0;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s '%s' '%s'", py, fedc_test_path("tests/data_fedjax_make.py"), tmpdir);
    if (system(cmd) != 0) {
        fprintf(stderr, "%s failed\n", cmd);
        return -1;
    }
    return 1;
}

int main(int argc, char **argv) {
    if (!(tmpdir = fedc_test_tmpdir("fedjax"))) return 1;
    static const fedc_test tests[] = {
        {"missing_file", test_missing_file}, /* the one that needs no database */
        {"emnist", test_emnist},
        {"slice", test_slice},
        {"shakespeare", test_shakespeare},
        {"stackoverflow", test_stackoverflow},
        {"dtypes", test_dtypes},
        {"text_id", test_text_id},
        {"open_errors", test_open_errors},
        {"truncated_file", test_truncated_file},
        {"record_errors", test_record_errors},
        {"fuzz", test_fuzz},
        {"alloc_failure", test_alloc_failure},
        {"vanished_client", test_vanished_client}, /* last: it edits text_id.sqlite */
    };
    int made = make_databases();
    int rc = made < 0 ? 1 : fedc_test_main(argc, argv, tests, made ? FEDC_COUNT_OF(tests) : 1);
    if (made == 0 && rc == 0) rc = FEDC_TEST_SKIPPED; /* the tests that need the databases did not run */
    fedc_test_tmpdir_remove();
    return rc;
}
