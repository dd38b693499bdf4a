/*
 * Tests of the .npy reader and writer (fedc/npy.h): the exact bytes numpy writes,
 * a write/read round trip of every dtype at every rank from 0 to 6, files of
 * format versions 2.0 and 3.0, header spellings numpy accepts, and every way a
 * file can be refused -- each with its status and a check of its message. Files
 * that must be malformed are built byte by byte here, not with the writer under
 * test. Everything is written under a fresh mkdtemp directory, removed at the end.
 */
#include "core/internal.h"
#include "harness.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fedc/npy.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define TY(dt, ...) fedc_type_make((dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))


static void write_bytes(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK_EQ_INT(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* Reads a whole (small) file; returns its length. */
static size_t slurp(const char *path, unsigned char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return 0;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* A .npy file put together by hand: version major.0, header `dict` padded with
 * spaces and '\n' to a multiple of 64, then `ndata` bytes of `data`. */
static const char *raw_npy(const char *name, int major, const char *dict, const void *data, size_t ndata) {
    unsigned char buf[1024];
    size_t lenbytes = major == 1 ? 2 : 4, pre = 8 + lenbytes, dlen = strlen(dict);
    size_t total = (pre + dlen + 1 + 63) / 64 * 64, hlen = total - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    for (size_t i = 0; i < lenbytes; i++) buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + pre, dict, dlen);
    memset(buf + pre + dlen, ' ', total - pre - dlen);
    buf[total - 1] = '\n';
    memcpy(buf + total, data, ndata);
    const char *path = fedc_test_tmp(name);
    write_bytes(path, buf, total + ndata);
    return path;
}

static const float six[6] = {0, 1, 2, 3, 4, 5};

/* ---------------------------------------------------------- exact bytes -- */

/* The header np.save writes (numpy 1.24; hand-copied), then the data. */
static void check_header_bytes(const fedc_type *t, const void *data, const char *dict) {
    CHECK_OK(fedc_npy_write(fedc_test_tmp("exact.npy"), t, data));
    unsigned char got[1024], want[128];
    size_t n = slurp(fedc_test_tmp("exact.npy"), got, sizeof got), dlen = strlen(dict);
    memcpy(want, "\x93NUMPY\x01\x00\x76\x00", 10); /* version 1.0, header length 118 */
    memcpy(want + 10, dict, dlen);
    memset(want + 10 + dlen, ' ', 128 - 10 - dlen);
    want[127] = '\n';
    CHECK_EQ_INT(n, 128 + fedc_type_bytes(t));
    CHECK_MSG(n >= 128 && memcmp(got, want, 128) == 0, "header differs: \"%.118s\"", (const char *)got + 10);
    CHECK(n == 128 + fedc_type_bytes(t) && memcmp(got + 128, data, fedc_type_bytes(t)) == 0);
}

static void test_exact_bytes(void) {
    fedc_type f32_23 = TY(FEDC_F32, 2, 3);
    check_header_bytes(&f32_23, six, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    /* The data of the f32 file, little-endian, as numpy lays it out. */
    unsigned char got[256];
    slurp(fedc_test_tmp("exact.npy"), got, sizeof got);
    static const unsigned char floats[24] = {0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0, 0x40,
                                             0, 0, 0x40, 0x40, 0, 0, 0x80, 0x40, 0, 0, 0xa0, 0x40};
    CHECK(memcmp(got + 128, floats, 24) == 0);

    fedc_type f32_scalar = fedc_type_scalar(FEDC_F32);
    check_header_bytes(&f32_scalar, six, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }");
    fedc_type b3 = TY(FEDC_BOOL, 3);
    check_header_bytes(&b3, (const unsigned char[]){1, 0, 1}, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }");
    fedc_type u8_6 = TY(FEDC_U8, 1, 1, 1, 1, 1, 1);
    check_header_bytes(&u8_6, (const unsigned char[]){7},
                       "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1), }");
}

/* ----------------------------------------------------------- round trip -- */

/* Distinct values of each dtype, with the awkward ones: -0, inf, NaN, extremes. */
static void fill(fedc_dtype dt, void *data, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        switch (dt) {
        case FEDC_F32: ((float *)data)[i] = i % 7 == 3 ? -0.0f : i % 7 == 5 ? (float)INFINITY : (float)i * -1.25f; break;
        case FEDC_F64: ((double *)data)[i] = i % 5 == 4 ? (double)NAN : (double)i / 3.0 - 1e300 * (i % 2); break;
        case FEDC_I32: ((int32_t *)data)[i] = i % 3 == 2 ? INT32_MIN : (int32_t)(i * 1000003 - 7); break;
        case FEDC_U8: ((uint8_t *)data)[i] = (uint8_t)(i * 37 + 255); break;
        default: ((uint8_t *)data)[i] = (uint8_t)(i % 3 == 0); break;
        }
    }
}

static void round_trip(const fedc_type *t) {
    size_t bytes = fedc_type_bytes(t);
    unsigned char *data = malloc(bytes + 1);
    fill(t->dtype, data, fedc_type_count(t));
    CHECK_OK(fedc_npy_write(fedc_test_tmp("rt.npy"), t, data));
    fedc_type got;
    void *back = NULL;
    CHECK_OK(fedc_npy_read(fedc_test_tmp("rt.npy"), &got, &back));
    char a[64], b[64];
    CHECK_MSG(fedc_type_equal(&got, t), "type %s read back as %s", fedc_type_str(t, a, sizeof a),
              fedc_type_str(&got, b, sizeof b));
    CHECK_MSG(back && memcmp(back, data, bytes) == 0, "data of %s differs", fedc_type_str(t, a, sizeof a));
    fedc_free(back);
    free(data);
}

static void test_round_trip_all(void) {
    static const int64_t dims[FEDC_MAX_RANK] = {2, 3, 1, 4, 2, 3};
    for (int dt = 0; dt < FEDC_DTYPE_COUNT; dt++)
        for (int rank = 0; rank <= FEDC_MAX_RANK; rank++) {
            fedc_type t = fedc_type_make((fedc_dtype)dt, rank, dims);
            round_trip(&t);
        }
}

static void test_round_trip_empty_and_placement(void) {
    fedc_type empty = TY(FEDC_F32, 0, 3);
    round_trip(&empty);
    /* The placement is not part of a file: a @clients type reads back local. */
    fedc_type t = TY(FEDC_I32, 2, 2);
    t.placement = FEDC_CLIENTS;
    CHECK_OK(fedc_npy_write(fedc_test_tmp("placed.npy"), &t, (const int32_t[]){1, 2, 3, 4}));
    fedc_type got;
    void *back;
    CHECK_OK(fedc_npy_read(fedc_test_tmp("placed.npy"), &got, &back));
    CHECK_EQ_INT(got.placement, FEDC_LOCAL);
    CHECK_EQ_INT(got.rank, 2);
    fedc_free(back);
}

/* The writer makes bools 0 or 1, as numpy's bool arrays always hold. */
static void test_bool_normalized(void) {
    fedc_type t = TY(FEDC_BOOL, 3);
    CHECK_OK(fedc_npy_write(fedc_test_tmp("b.npy"), &t, (const unsigned char[]){0, 2, 255}));
    unsigned char got[256];
    CHECK_EQ_INT(slurp(fedc_test_tmp("b.npy"), got, sizeof got), 131);
    CHECK(got[128] == 0 && got[129] == 1 && got[130] == 1);
    /* And a file holding other bytes reads as 0 or 1 too. */
    const char *p = raw_npy("b2.npy", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", "\0\7", 2);
    fedc_type rt;
    unsigned char *back;
    CHECK_OK(fedc_npy_read(p, &rt, (void **)&back));
    CHECK(back && back[0] == 0 && back[1] == 1);
    fedc_free(back);
}

/* ------------------------------------------------------- other headers -- */

/* Reads `path`, expecting f32[2,3] holding 0..5. */
static void check_six(const char *path) {
    fedc_type t;
    void *data = NULL;
    CHECK_OK(fedc_npy_read(path, &t, &data));
    fedc_type want = TY(FEDC_F32, 2, 3);
    CHECK(fedc_type_equal(&t, &want));
    CHECK(data && memcmp(data, six, sizeof six) == 0);
    fedc_free(data);
}

static void test_versions_2_and_3(void) {
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    check_six(raw_npy("v2.npy", 2, dict, six, sizeof six));
    check_six(raw_npy("v3.npy", 3, dict, six, sizeof six));
}

/* Spellings Python's literal syntax allows and old numpy versions wrote. */
static void test_header_spellings(void) {
    check_six(raw_npy("dq.npy", 1, "{\"shape\": (2,3), \"descr\": \"<f4\", \"fortran_order\": False}", six,
                      sizeof six));
    check_six(raw_npy("py2.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", six,
                      sizeof six));
    check_six(raw_npy("sp.npy", 1, "  { 'descr' : '<f4' ,'fortran_order':False,'shape':( 2 , 3 , ) }  ", six,
                      sizeof six));
    /* One-byte types with any byte-order mark. */
    const char *p = raw_npy("u1.npy", 1, "{'descr': '<u1', 'fortran_order': False, 'shape': (), }", "\5", 1);
    fedc_type t;
    void *data;
    CHECK_OK(fedc_npy_read(p, &t, &data));
    CHECK(t.dtype == FEDC_U8 && t.rank == 0 && *(unsigned char *)data == 5);
    fedc_free(data);
}

/* --------------------------------------------------------------- errors -- */

/* Reading `path` fails with `status`, a message naming the file and containing
 * `needle`, and *data left NULL. */
static void check_read_fails(const char *path, fedc_status status, const char *needle) {
    fedc_type t;
    void *data = (void *)1;
    CHECK_ERR(fedc_npy_read(path, &t, &data), status, needle);
    CHECK_MSG(strstr(fedc_errmsg(), path) != NULL, "message \"%s\" does not name %s", fedc_errmsg(), path);
    CHECK(data == NULL);
}

static const char *with_dict(const char *name, const char *dict) { return raw_npy(name, 1, dict, six, sizeof six); }

static void test_missing_file(void) { check_read_fails(fedc_test_tmp("nonexistent.npy"), FEDC_EIO, "cannot open"); }

static void test_bad_magic(void) {
    write_bytes(fedc_test_tmp("magic.npy"), "\x93NUMPZ\x01\x00\x10\x00{}", 12);
    check_read_fails(fedc_test_tmp("magic.npy"), FEDC_EPARSE, "not a .npy file (bad magic");
    write_bytes(fedc_test_tmp("text.npy"), "hello, world\n", 13);
    check_read_fails(fedc_test_tmp("text.npy"), FEDC_EPARSE, "bad magic");
    write_bytes(fedc_test_tmp("empty.npy"), "", 0);
    check_read_fails(fedc_test_tmp("empty.npy"), FEDC_EPARSE, "bad magic");
}

static void test_truncated_header(void) {
    write_bytes(fedc_test_tmp("t1.npy"), "\x93NUMPY\x01", 7);
    check_read_fails(fedc_test_tmp("t1.npy"), FEDC_EPARSE, "truncated header: the file has only 7 bytes");
    write_bytes(fedc_test_tmp("t2.npy"), "\x93NUMPY\x02\x00\x10\x00", 10);
    check_read_fails(fedc_test_tmp("t2.npy"), FEDC_EPARSE, "truncated header: the header length is missing");
    write_bytes(fedc_test_tmp("t3.npy"), "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', ", 27);
    check_read_fails(fedc_test_tmp("t3.npy"), FEDC_EPARSE, "truncated header: 118 bytes declared, 17 present");
    /* A declared length beyond all reason is refused before anything is allocated. */
    write_bytes(fedc_test_tmp("t4.npy"), "\x93NUMPY\x02\x00\x00\x00\x00\x40{", 13);
    check_read_fails(fedc_test_tmp("t4.npy"), FEDC_EPARSE, "header length 1073741824 is implausible");
}

static void test_truncated_data(void) {
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    check_read_fails(raw_npy("td.npy", 1, dict, six, 20), FEDC_EPARSE,
                     "truncated data: shape (2, 3) of '<f4' needs 24 bytes, the file has 20 after the header");
    /* A huge shape over a small file: a parse error, not an attempt to allocate it. */
    check_read_fails(with_dict("huge.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }"),
                     FEDC_EPARSE, "truncated data: shape (1000000000000,) of '<f8' needs 8000000000000 bytes");
}

static void test_data_size_mismatch(void) {
    float seven[7] = {0};
    const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    check_read_fails(raw_npy("extra.npy", 1, dict, seven, sizeof seven), FEDC_EPARSE,
                     "data size mismatch: shape (2, 3) of '<f4' needs 24 bytes, the file has 28 after the header");
}

static void test_unsupported_dtypes(void) {
    check_read_fails(with_dict("i8.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }"),
                     FEDC_EUNSUPPORTED, "dtype '<i8' is not supported (fedc reads <f4, <f8, <i4, |u1 and |b1); "
                                        "convert it with a.astype('<i4')");
    check_read_fails(with_dict("f2.npy", "{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }"),
                     FEDC_EUNSUPPORTED, "a.astype('<f4')");
    check_read_fails(with_dict("str.npy", "{'descr': '<U5', 'fortran_order': False, 'shape': (1,), }"),
                     FEDC_EUNSUPPORTED, "dtype '<U5' is not supported");
    check_read_fails(with_dict("rec.npy", "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }"),
                     FEDC_EUNSUPPORTED, "structured dtypes");
}

static void test_big_endian(void) {
    check_read_fails(with_dict("be.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }"),
                     FEDC_EUNSUPPORTED, "big-endian dtype '>f4' is not supported; convert it with a.astype('<f4')");
    check_read_fails(with_dict("be8.npy", "{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }"),
                     FEDC_EUNSUPPORTED, "big-endian dtype '>i8' is not supported; convert it with a.astype('<i4')");
}

static void test_fortran_order(void) {
    check_read_fails(with_dict("f.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"),
                     FEDC_EUNSUPPORTED, "Fortran-order (column-major) arrays are not supported");
}

static void test_too_many_dims(void) {
    check_read_fails(with_dict("r7.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 2, 1, 3, 1), }"),
                     FEDC_EUNSUPPORTED, "the array has 7 dimensions; fedc supports at most 6");
}

static void test_unsupported_version(void) {
    write_bytes(fedc_test_tmp("v4.npy"), "\x93NUMPY\x04\x00\x10\x00", 10);
    check_read_fails(fedc_test_tmp("v4.npy"), FEDC_EUNSUPPORTED, "format version 4.0 is not supported");
    write_bytes(fedc_test_tmp("v11.npy"), "\x93NUMPY\x01\x01\x10\x00", 10);
    check_read_fails(fedc_test_tmp("v11.npy"), FEDC_EUNSUPPORTED, "format version 1.1");
}

static void test_malformed_headers(void) {
    static const struct {
        const char *dict, *needle;
    } cases[] = {
        {"{'descr': '<f4', 'shape': (2, 3), }", "missing key 'fortran_order'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", "unknown key 'extra'"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", "key 'descr' appears twice"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", "expected a dimension"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", "expected True or False"},
        {"{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3), }", "expected ',' or '}' at column 18"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } x", "only padding after '}'"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", "',' or ')' in the shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "fits in 64 bits"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296)}", "is too large"},
        {"['descr', '<f4']", "expected '{' at column 1"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", "expected ',' or '}'"},
    };
    for (int i = 0; i < FEDC_COUNT_OF(cases); i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%d.npy", i);
        check_read_fails(with_dict(name, cases[i].dict), FEDC_EPARSE, cases[i].needle);
    }
}

static void test_write_errors(void) {
    fedc_type t = TY(FEDC_F32, 2, 3);
    const char *p = fedc_test_tmp("no/such/dir/x.npy");
    CHECK_ERR(fedc_npy_write(p, &t, six), FEDC_EIO, "cannot create");
    CHECK(strstr(fedc_errmsg(), p) != NULL);
    fedc_type bad = t;
    bad.rank = 7;
    CHECK_ERR(fedc_npy_write(fedc_test_tmp("r7w.npy"), &bad, six), FEDC_EINVAL, "rank 7 is outside [0, 6]");
    bad = t;
    bad.dtype = FEDC_DTYPE_COUNT;
    CHECK_ERR(fedc_npy_write(fedc_test_tmp("dtw.npy"), &bad, six), FEDC_EINVAL, "invalid dtype");
    bad = t;
    bad.dims[1] = -1;
    CHECK_ERR(fedc_npy_write(fedc_test_tmp("negw.npy"), &bad, six), FEDC_EINVAL, "negative or overflowing");
    CHECK(access(fedc_test_tmp("negw.npy"), F_OK) != 0);
}

/* Every allocation the reader makes can fail; each failure is FEDC_ENOMEM with
 * nothing leaked (LeakSanitizer checks in the ASan build). */
static void test_alloc_failure(void) {
    fedc_type t = TY(FEDC_F64, 3, 2);
    double data[6] = {1, 2, 3, 4, 5, 6};
    CHECK_OK(fedc_npy_write(fedc_test_tmp("af.npy"), &t, data));
    int failures = 0;
    for (uint64_t k = 1; k < 10; k++) {
        fedc__alloc_fail_after(k);
        fedc_type got;
        void *back = NULL;
        fedc_status st = fedc_npy_read(fedc_test_tmp("af.npy"), &got, &back);
        fedc__alloc_fail_after(0);
        if (st == FEDC_OK) {
            CHECK(memcmp(back, data, sizeof data) == 0);
            fedc_free(back);
            break;
        }
        CHECK_EQ_INT(st, FEDC_ENOMEM);
        CHECK(back == NULL);
        failures++;
    }
    CHECK_EQ_INT(failures, 2); /* the header, then the data */
}

int main(int argc, char **argv) {
    if (!fedc_test_tmpdir("npy")) return 1;
    static const fedc_test tests[] = {
        {"exact_bytes", test_exact_bytes},
        {"round_trip_all", test_round_trip_all},
        {"round_trip_empty_and_placement", test_round_trip_empty_and_placement},
        {"bool_normalized", test_bool_normalized},
        {"versions_2_and_3", test_versions_2_and_3},
        {"header_spellings", test_header_spellings},
        {"missing_file", test_missing_file},
        {"bad_magic", test_bad_magic},
        {"truncated_header", test_truncated_header},
        {"truncated_data", test_truncated_data},
        {"data_size_mismatch", test_data_size_mismatch},
        {"unsupported_dtypes", test_unsupported_dtypes},
        {"big_endian", test_big_endian},
        {"fortran_order", test_fortran_order},
        {"too_many_dims", test_too_many_dims},
        {"unsupported_version", test_unsupported_version},
        {"malformed_headers", test_malformed_headers},
        {"write_errors", test_write_errors},
        {"alloc_failure", test_alloc_failure},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
