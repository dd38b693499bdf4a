/* The wire format (src/deploy/wire.h): frames round-trip their fields and
 * tensors bit for bit, and every kind of bad frame (cut short, another magic or
 * version, an unknown type, a huge or wrong declared length, a field missing, a
 * damaged payload, random bytes) is refused with a message saying which, in a
 * bounded loop of random damage (fuzz/fuzz_wire.c runs longer). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "deploy/wire.h"

enum { MAX = 1 << 20 };

static void *report(size_t *size) {
    static float v[6] = {1.5f, -2, 3, 4, 5, 6};
    fedc_metadata_entry f[] = {{"token", "t0k"}, {"client", "3"}, {"round", "12"}, {"exchange", "0"},
                               {"slot", "1"},    {"hash", "ab"}};
    fedc_tensor_entry t = {"client_work/%12", fedc_type_make(FEDC_F32, 2, (int64_t[]){2, 3}), v};
    void *out = NULL;
    CHECK_OK(fedc__wire_encode(FEDC__MSG_REPORT, f, 6, &t, 1, &out, size));
    return out;
}

static void test_round_trip(void) {
    size_t size;
    unsigned char *b = report(&size);
    if (!b) return;
    CHECK(!memcmp(b, "FDCW", 4));
    CHECK_EQ_INT(b[4] | b[5] << 8, FEDC__WIRE_VERSION);
    CHECK_EQ_INT(b[6] | b[7] << 8, FEDC__MSG_REPORT);
    fedc__msg m;
    CHECK_OK(fedc__wire_decode(b, size, MAX, &m));
    CHECK_EQ_INT(m.type, FEDC__MSG_REPORT);
    CHECK(!strcmp(fedc__msg_field(&m, "token"), "t0k"));
    int64_t r = 0;
    CHECK_OK(fedc__msg_int(&m, "round", 0, 100, &r));
    CHECK_EQ_INT(r, 12);
    CHECK_ERR(fedc__msg_int(&m, "round", 0, 10, &r), FEDC_EPARSE, "report message: field \"round\" is \"12\"");
    CHECK_ERR(fedc__msg_int(&m, "token", 0, 10, &r), FEDC_EPARSE, "field \"token\" is \"t0k\", not a whole number");
    fedc_tensor_entry t;
    CHECK_OK(fedc_safetensors_find(m.body, "client_work/%12", &t));
    float want[6] = {1.5f, -2, 3, 4, 5, 6};
    CHECK(t.type.dtype == FEDC_F32 && t.type.rank == 2 && t.type.dims[1] == 3 && !memcmp(t.data, want, sizeof want));
    fedc__msg_free(&m);
    fedc_free(b);
}

/* A number is read as fedc writes it, so no other spelling of a client id
 * passes for it (" 4" and "+4" are not client 4). */
static void test_numbers_plain(void) {
    const char *spellings[] = {"4", "-4", " 4", "+4", "4 ", "\t4", "04x", "", "-"};
    const bool ok[] = {true, true, false, false, false, false, false, false, false};
    for (int i = 0; i < 9; i++) {
        void *b = NULL;
        size_t size = 0;
        fedc__msg m;
        int64_t x = 0;
        CHECK_OK(fedc__wire_encode(FEDC__MSG_WAIT, (fedc_metadata_entry[]){{"retry_ms", spellings[i]}, {"reason", "r"}}, 2,
                                   NULL, 0, &b, &size));
        CHECK_OK(fedc__wire_decode(b, size, MAX, &m));
        fedc_status st = fedc__msg_int(&m, "retry_ms", -10, 10, &x);
        CHECK_MSG((st == FEDC_OK) == ok[i], "\"%s\": %s", spellings[i], st ? fedc_errmsg() : "taken");
        fedc__msg_free(&m);
        fedc_free(b);
    }
}

/* A copy of frame b with byte `at` set to v (at < 0: none), `size` long. */
static fedc_status decode_edited(const unsigned char *b, size_t size, int at, unsigned char v) {
    unsigned char *c = malloc(size + 1);
    memcpy(c, b, size);
    if (at >= 0) c[at] = v;
    fedc__msg m;
    fedc_status st = fedc__wire_decode(c, size, MAX, &m);
    if (!st) fedc__msg_free(&m);
    free(c);
    return st;
}

static void test_bad_frames(void) {
    size_t size;
    unsigned char *b = report(&size);
    if (!b) return;
    CHECK_ERR(decode_edited(b, 9, -1, 0), FEDC_EPARSE, "truncated frame: 9 bytes, a header has 16");
    CHECK_ERR(decode_edited(b, size - 1, -1, 0), FEDC_EPARSE, "truncated frame: report message declares");
    CHECK_ERR(decode_edited(b, size, 0, 'X'), FEDC_EPARSE, "not a fedc message");
    CHECK_ERR(decode_edited(b, size, 4, 2), FEDC_EUNSUPPORTED, "message version 2; this fedc speaks version 1");
    CHECK_ERR(decode_edited(b, size, 6, 99), FEDC_EPARSE, "unknown message type 99");
    CHECK_ERR(decode_edited(b, size, 6, 0), FEDC_EPARSE, "unknown message type 0");
    CHECK_ERR(decode_edited(b, size, 15, 0x40), FEDC_EPARSE, "declares 4611686018427388"); /* huge length */
    CHECK_ERR(decode_edited(b, size, 15, 0x40), FEDC_EPARSE, "above the limit of 1048576");
    CHECK_ERR(decode_edited(b, size, 16, 0xff), FEDC_EPARSE, "wire: report message: not a safetensors file");
    /* a checkin type on a report's fields: "version" and "plan_hash" are missing */
    CHECK_ERR(decode_edited(b, size, 6, FEDC__MSG_CHECKIN), FEDC_EPARSE, "checkin message: no field \"version\"");
    /* a tensor's offsets past the payload */
    unsigned char *c = malloc(size);
    memcpy(c, b, size);
    char *at = NULL;
    for (size_t i = 0; !at && i + 20 <= size; i++)
        if (!memcmp(c + i, "data_offsets\":[0,24]", 20)) at = (char *)c + i;
    CHECK(at != NULL);
    if (at) memcpy(at, "data_offsets\":[0,94]", 20);
    fedc__msg m;
    CHECK_ERR(fedc__wire_decode(c, size, MAX, &m), FEDC_EPARSE, "offsets [0, 94] do not fit its shape or the file");
    free(c);
    fedc_free(b);
}

/* Random damage to valid frames and plain random bytes: a status, never a
 * crash; what decodes is a frame of a known type with its fields. */
static void test_random_frames(void) {
    size_t size;
    unsigned char *b = report(&size);
    if (!b) return;
    unsigned char *c = malloc(size + 64);
    fedc_test_seed(5);
    int decoded = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = size;
        memcpy(c, b, size);
        if (iter % 10 == 9) { /* random bytes, sometimes behind a valid header */
            n = (size_t)fedc_test_uniform(0, (double)size + 64);
            for (size_t i = iter % 20 == 19 ? 16 : 0; i < n; i++) c[i] = (unsigned char)(int)fedc_test_uniform(0, 256);
        } else {
            int edits = 1 + (int)fedc_test_uniform(0, 3);
            for (int e = 0; e < edits; e++) {
                size_t i = (size_t)fedc_test_uniform(0, (double)n);
                double k = fedc_test_uniform(0, 1);
                if (k < 0.7) c[i] = (unsigned char)(int)fedc_test_uniform(0, 256);
                else if (k < 0.85) n = i;
                else c[i] = (unsigned char)"{}[]\":,0123456789"[(int)fedc_test_uniform(0, 17)];
            }
        }
        fedc__msg m;
        fedc_status st = fedc__wire_decode(c, n, MAX, &m);
        CHECK(st == FEDC_OK || st == FEDC_EPARSE || st == FEDC_EUNSUPPORTED);
        if (st == FEDC_OK) {
            decoded++;
            CHECK(m.type > 0 && m.type < FEDC__MSG_TYPES && strcmp(fedc__msg_name(m.type), "?"));
            for (int i = 0; i < fedc_safetensors_count(m.body); i++) {
                fedc_tensor_entry e = fedc_safetensors_tensor(m.body, i);
                volatile unsigned char sink = 0;
                for (size_t k = 0; k < fedc_type_bytes(&e.type); k++) sink ^= ((const unsigned char *)e.data)[k];
                (void)sink;
            }
            fedc__msg_free(&m);
        }
    }
    fprintf(stderr, "    %d of 20000 damaged frames still decode (a changed value or tensor byte)\n", decoded);
    free(c);
    fedc_free(b);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"round_trip", test_round_trip}, {"numbers_plain", test_numbers_plain}, {"bad_frames", test_bad_frames}, {"random_frames", test_random_frames}};
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
