/* Tests of the .safetensors reader against hostile files (src/io/safetensors.c):
 * one test per way a header was found to break it (each checks the error message),
 * and a mutation test: a checkpoint laid out as `fedc train` writes one, damaged
 * 200 seeded ways (bit flips, truncations, length and header edits), must each
 * load or fail with an error naming the file. Under AddressSanitizer (make test),
 * a leak, an out-of-bounds read or undefined behaviour on any of them fails. */
#include "harness.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/safetensors.h"

static void write_file(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK_EQ_INT(fwrite(bytes, 1, n, f), n);
    fclose(f);
}

/* A file of an 8-byte length `len` (which need not be the header's), the header
 * text (its bytes, NULs included, `hlen` of them) and `data`. */
static const char *raw_file(const char *name, uint64_t len, const char *header, size_t hlen, const void *data,
                            size_t ndata) {
    static unsigned char buf[4096];
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(len >> (8 * i));
    memcpy(buf + 8, header, hlen);
    if (ndata) memcpy(buf + 8 + hlen, data, ndata);
    const char *path = fedc_test_tmp(name);
    write_file(path, buf, 8 + hlen + ndata);
    return path;
}

/* The header as its length says, followed by `data`. */
static const char *with_header(const char *header, const void *data, size_t ndata) {
    return raw_file("h.safetensors", strlen(header), header, strlen(header), data, ndata);
}

static void check_fails(const char *path, fedc_status want, const char *needle) {
    fedc_safetensors *s = (fedc_safetensors *)1;
    CHECK_ERR(fedc_safetensors_read(path, &s), want, needle);
    CHECK(s == NULL);
}

static const unsigned char eight[8] = {1, 2, 3, 4, 5, 6, 7, 8};

static void test_valid_hand_made(void) {
    const char *path = with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[2,4],\"data_offsets\":[0,8]},"
                                   "\"__metadata__\":{\"k\":\"v\\\"q\"}}   ", eight, 8);
    fedc_safetensors *s = NULL;
    CHECK_OK(fedc_safetensors_read(path, &s));
    if (!s) return;
    fedc_tensor_entry e;
    CHECK_OK(fedc_safetensors_find(s, "a", &e));
    CHECK_EQ_INT(fedc_type_count(&e.type), 8);
    CHECK_EQ_INT(((const unsigned char *)e.data)[7], 8);
    CHECK(fedc_safetensors_metadata(s, "k") && !strcmp(fedc_safetensors_metadata(s, "k"), "v\"q"));
    fedc_safetensors_destroy(s);
}

/* A metadata value must be a string; the key parsed before it was leaked. */
static void test_metadata_value_not_a_string(void) {
    check_fails(with_header("{\"__metadata__\":{\"format\":5}}", NULL, 0), FEDC_EPARSE, "expected a string");
    check_fails(with_header("{\"__metadata__\":{\"format\":\"x\",\"n\":[1]}}", NULL, 0), FEDC_EPARSE,
                "expected a string");
    check_fails(with_header("{\"__metadata__\":{\"a\":\"b\"},\"__metadata__\":{}}", NULL, 0), FEDC_EPARSE,
                "one __metadata__");
    check_fails(with_header("{\"__metadata__\":{\"a\":\"b\",\"a\":\"c\"}}", NULL, 0), FEDC_EPARSE,
                "metadata \"a\" appears twice");
}

/* A header one or two bytes short: the parser read the integers on into the
 * tensor data (strtoll needs a NUL), and here the data even completes the JSON. */
static void test_header_short(void) {
    const char *h = "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}";
    unsigned char data[4] = {'}', '}', 7, 7};
    check_fails(raw_file("short2.safetensors", strlen(h) - 2, h, strlen(h) - 2, data, 4), FEDC_EPARSE,
                "expected '}'");
    const char *digits = "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2";
    unsigned char more[6] = {'2', ']', '}', '}', 7, 7};
    check_fails(raw_file("short_digits.safetensors", strlen(digits), digits, strlen(digits), more, 6), FEDC_EPARSE,
                "expected ']'");
    const char *open = "{\"a\\";
    check_fails(raw_file("escape_end.safetensors", strlen(open), open, strlen(open), "\"x", 2), FEDC_EPARSE,
                "the end of a string");
}

/* The data must be exactly the tensors' bytes. A header length one byte short
 * of a space-padded header still parses, and every tensor was read one byte
 * off (here the padding's space, then 1..7); a hole, an overlap or bytes past
 * the last tensor are as wrong. */
static void test_data_extent(void) {
    const char *padded = "{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}   ";
    check_fails(raw_file("one_short.safetensors", strlen(padded) - 1, padded, strlen(padded), eight, 8), FEDC_EPARSE,
                "the tensors' data is 8 bytes but 9 follow");
    check_fails(with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                            "\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[5,8]}}",
                            eight, 8),
                FEDC_EPARSE, "tensor \"b\" starts at data byte 5 where the one before ends at 4");
    check_fails(with_header("{\"b\":{\"dtype\":\"U8\",\"shape\":[5],\"data_offsets\":[3,8]},"
                            "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
                            eight, 8),
                FEDC_EPARSE, "tensor \"b\" starts at data byte 3 where the one before ends at 4");
    check_fails(with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[7],\"data_offsets\":[0,7]}}", eight, 8),
                FEDC_EPARSE, "the tensors' data is 7 bytes but 8 follow");
    /* Out of header order, and an empty tensor between two others, is still exact. */
    const char *path = with_header("{\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]},"
                                   "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
                                   "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
                                   eight, 8);
    fedc_safetensors *s = NULL;
    CHECK_OK(fedc_safetensors_read(path, &s));
    if (!s) return;
    CHECK_EQ_INT(fedc_safetensors_count(s), 3);
    CHECK_EQ_INT(((const unsigned char *)fedc_safetensors_tensor(s, 0).data)[0], 5);
    fedc_safetensors_destroy(s);
}

/* Dims whose product overflows int64 (fedc_type_count's signed overflow), a
 * negative dim, and offsets whose difference or end overflows. */
static void test_shape_and_offset_overflow(void) {
    check_fails(with_header("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,2],\"data_offsets\":[0,0]}}",
                            NULL, 0),
                FEDC_EPARSE, "too many elements");
    check_fails(with_header("{\"a\":{\"dtype\":\"F64\",\"shape\":[2147483648,2147483648],\"data_offsets\":[0,0]}}",
                            NULL, 0),
                FEDC_EPARSE, "too many elements");
    check_fails(with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[-1,-8],\"data_offsets\":[0,8]}}", eight, 8),
                FEDC_EPARSE, "negative dimension");
    check_fails(with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[1,-9223372036854775808]}}",
                            eight, 8),
                FEDC_EPARSE, "do not fit");
    check_fails(with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],"
                            "\"data_offsets\":[9223372036854775799,9223372036854775807]}}",
                            eight, 8),
                FEDC_EPARSE, "do not fit");
    check_fails(with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,99999999999999999999]}}",
                            eight, 8),
                FEDC_EPARSE, "an integer");
}

static void test_duplicates_nul_and_trailing(void) {
    check_fails(with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                            "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}",
                            eight, 8),
                FEDC_EPARSE, "\"a\" appears twice");
    check_fails(with_header("{\"a\":{\"dtype\":\"U8\",\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[0,8]}}",
                            eight, 8),
                FEDC_EPARSE, "one dtype");
    const char nul[] = "{\"a\0b\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}";
    check_fails(raw_file("nul.safetensors", sizeof nul - 1, nul, sizeof nul - 1, eight, 8), FEDC_EPARSE, "NUL");
    check_fails(with_header("{}x", NULL, 0), FEDC_EPARSE, "the end of the header");
    check_fails(with_header("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}} }", eight, 8),
                FEDC_EPARSE, "the end of the header");
}

/* ------------------------------------------------------- mutation test -- */

static uint64_t mut_state;

static uint64_t next(void) { /* xorshift64 */
    mut_state ^= mut_state << 13;
    mut_state ^= mut_state >> 7;
    mut_state ^= mut_state << 17;
    return mut_state;
}

static size_t below(size_t n) { return n ? (size_t)(next() % n) : 0; }

/* The checkpoint: a small CNN's parameters, server optimiser state and the
 * metadata keys fedc_train writes (fl/train_io.c), via the real writer. */
static size_t make_checkpoint(unsigned char *buf, size_t cap) {
    static float conv[3 * 3 * 1 * 4], bias[4], dense[36 * 10], state[36 * 10], step[1] = {7};
    for (size_t i = 0; i < sizeof conv / sizeof *conv; i++) conv[i] = (float)i * 0.25f - 3;
    for (size_t i = 0; i < sizeof dense / sizeof *dense; i++) dense[i] = (float)i / 100, state[i] = -(float)i;
    fedc_tensor_entry e[] = {
        {"conv1.w", fedc_type_make(FEDC_F32, 4, (int64_t[]){3, 3, 1, 4}), conv},
        {"conv1.b", fedc_type_make(FEDC_F32, 1, (int64_t[]){4}), bias},
        {"dense.w", fedc_type_make(FEDC_F32, 2, (int64_t[]){36, 10}), dense},
        {"server_state0", fedc_type_make(FEDC_F32, 2, (int64_t[]){36, 10}), state},
        {"server_state1", fedc_type_scalar(FEDC_F32), step},
    };
    fedc_metadata_entry meta[] = {{"format", "fedc checkpoint 1"}, {"next_round", "12"},
                                  {"settings", "model=cnn algorithm=fedavg seed=1"}};
    const char *path = fedc_test_tmp("checkpoint.safetensors");
    CHECK_OK(fedc_safetensors_write(path, e, FEDC_COUNT_OF(e), meta, FEDC_COUNT_OF(meta)));
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* Numbers that break parsers: edges of int64, negatives, overflowing products. */
static const char *const hostile_numbers[] = {"-1", "0", "9223372036854775807", "-9223372036854775808",
                                              "4294967296", "18446744073709551616", "99999999999", "1e3"};
static const char hostile_bytes[] = {'"', '\\', ',', ':', '{', '}', '[', ']', '-', '\0', ' ', '9'};

/* Replaces the integer at or after a random header position with a hostile one
 * (and moves the rest), returning the new size; the length field is fixed up or
 * not by a coin flip. */
static size_t edit_number(unsigned char *b, size_t n, size_t cap, size_t hlen) {
    size_t at = 8 + below(hlen);
    while (at < 8 + hlen && !(b[at] >= '0' && b[at] <= '9')) at++;
    size_t end = at;
    while (end < 8 + hlen && b[end] >= '0' && b[end] <= '9') end++;
    const char *num = hostile_numbers[below(FEDC_COUNT_OF(hostile_numbers))];
    size_t k = strlen(num);
    if (at >= 8 + hlen || n - (end - at) + k > cap) return n;
    memmove(b + at + k, b + end, n - end);
    memcpy(b + at, num, k);
    n = n - (end - at) + k;
    if (next() & 1) {
        uint64_t len = hlen - (end - at) + k;
        for (int i = 0; i < 8; i++) b[i] = (unsigned char)(len >> (8 * i));
    }
    return n;
}

static size_t mutate(int kind, unsigned char *b, size_t n, size_t cap, size_t hlen) {
    switch (kind) {
    case 0: /* bit flips anywhere */
        for (int k = 1 + (int)below(8); k > 0; k--) b[below(n)] ^= (unsigned char)(1u << below(8));
        return n;
    case 1: /* bit flips in the length and header */
        for (int k = 1 + (int)below(4); k > 0; k--) b[below(8 + hlen)] ^= (unsigned char)(1u << below(8));
        return n;
    case 2: /* truncation */
        return below(n);
    case 3: { /* the length field off by a little or a lot */
        static const int64_t deltas[] = {-1, 1, -8, 8, -1000, INT64_C(1) << 40};
        uint64_t len = hlen + (uint64_t)deltas[below(FEDC_COUNT_OF(deltas))];
        for (int i = 0; i < 8; i++) b[i] = (unsigned char)(len >> (8 * i));
        return n;
    }
    case 4: /* a header byte replaced by JSON punctuation or a NUL */
        b[8 + below(hlen)] = (unsigned char)hostile_bytes[below(sizeof hostile_bytes)];
        return n;
    case 5: return edit_number(b, n, cap, hlen);
    default: /* a header byte removed, the length kept */
        if (hlen) {
            size_t at = 8 + below(hlen);
            memmove(b + at, b + at + 1, n - at - 1);
            return n - 1;
        }
        return n;
    }
}

/* Reads every byte of every tensor and every lookup, for ASan to check. */
static unsigned touch(const fedc_safetensors *s) {
    unsigned sum = 0;
    for (int i = 0; i < fedc_safetensors_count(s); i++) {
        fedc_tensor_entry e = fedc_safetensors_tensor(s, i), found;
        const unsigned char *p = e.data;
        for (size_t k = 0; k < fedc_type_bytes(&e.type); k++) sum += p[k];
        if (fedc_safetensors_find(s, e.name, &found) == FEDC_OK) sum += found.data == e.data;
    }
    const char *v = fedc_safetensors_metadata(s, "settings");
    return sum + (v ? (unsigned)strlen(v) : 0);
}

static void test_mutated_checkpoints(void) {
    static unsigned char orig[65536], b[65536 + 256];
    size_t n0 = make_checkpoint(orig, sizeof orig);
    CHECK(n0 > 8 && n0 < sizeof orig);
    if (n0 <= 8 || n0 >= sizeof orig) return;
    size_t hlen = 0;
    for (int i = 0; i < 8; i++) hlen |= (size_t)orig[i] << (8 * i);
    CHECK(hlen < n0);
    mut_state = 0x5afe7e45u;
    int loaded = 0, refused = 0;
    const char *path = fedc_test_tmp("mutant.safetensors");
    for (int m = 0; m < 200; m++) {
        memcpy(b, orig, n0);
        size_t n = mutate(m % 7, b, n0, sizeof b, hlen);
        write_file(path, b, n);
        fedc_safetensors *s = NULL;
        fedc_status st = fedc_safetensors_read(path, &s);
        if (st == FEDC_OK) {
            loaded++;
            CHECK(touch(s) > 0 || fedc_safetensors_count(s) == 0);
            fedc_safetensors_destroy(s);
        } else {
            refused++;
            CHECK_MSG(s == NULL, "mutant %d: an error left a reader", m);
            CHECK_MSG(st == FEDC_EPARSE || st == FEDC_EUNSUPPORTED, "mutant %d: %s: %s", m, fedc_status_str(st),
                      fedc_errmsg());
            CHECK_MSG(strstr(fedc_errmsg(), path) != NULL, "mutant %d: the error does not name the file: %s", m,
                      fedc_errmsg());
        }
    }
    /* Both outcomes happen: flips in the tensor bytes load, most header edits do not. */
    CHECK(loaded >= 10);
    CHECK(refused >= 100);
    printf("    200 mutants: %d loaded, %d refused\n", loaded, refused);
}

int main(int argc, char **argv) {
    if (!fedc_test_tmpdir("safetensors")) return 1;
    static const fedc_test tests[] = {
        {"valid_hand_made", test_valid_hand_made},
        {"metadata_value_not_a_string", test_metadata_value_not_a_string},
        {"header_short", test_header_short},
        {"data_extent", test_data_extent},
        {"shape_and_offset_overflow", test_shape_and_offset_overflow},
        {"duplicates_nul_and_trailing", test_duplicates_nul_and_trailing},
        {"mutated_checkpoints", test_mutated_checkpoints},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
