/* Shamir's secret sharing over GF(2^61 - 1) (src/deploy/secagg_shamir.c): the
 * field's product and inverse against 128-bit arithmetic; any t of n shares
 * rebuild the secrets, t - 1 do not; a forged share among more than t is caught
 * and named; bad points refused; a 32-byte secret through its chunks and back. */
#include <string.h>

#include <sodium.h>

#include "deploy/secagg.h"
#include "harness.h"

#define P FEDC__SA_PRIME

static uint64_t random_below_p(void) {
    uint64_t v;
    do randombytes_buf(&v, sizeof v), v &= P;
    while (v == P);
    return v;
}

static void test_field(void) {
    CHECK(sodium_init() >= 0);
    CHECK_EQ_INT(fedc__sa_field_mul(P - 1, P - 1), 1); /* (-1)^2 */
    CHECK_EQ_INT(fedc__sa_field_mul((UINT64_C(1) << 60), 2), 1); /* 2^61 = 1 */
    int bad_mul = 0, bad_inv = 0;
    for (int i = 0; i < 2000; i++) {
        uint64_t a = random_below_p(), b = random_below_p();
        bad_mul += fedc__sa_field_mul(a, b) != (uint64_t)((unsigned __int128)a * b % P);
        if (a) bad_inv += fedc__sa_field_mul(a, fedc__sa_field_inv(a)) != 1;
    }
    CHECK_EQ_INT(bad_mul, 0);
    CHECK_EQ_INT(bad_inv, 0);
}

enum { N = 9, T = 5 };

static void split(uint64_t secret[FEDC__SA_CHUNKS], uint64_t x[N], uint64_t y[N][FEDC__SA_CHUNKS]) {
    for (int c = 0; c < FEDC__SA_CHUNKS; c++) secret[c] = random_below_p();
    for (int i = 0; i < N; i++) x[i] = 1000 + 7 * (uint64_t)i; /* client ids */
    CHECK_OK(fedc__sa_shamir_split(secret, T, x, N, y));
}

/* Every window of t shares (and a shuffled set of all n) gives the secrets back;
 * t - 1 shares interpolate to something else. */
static void test_any_t_rebuild(void) {
    uint64_t secret[FEDC__SA_CHUNKS], x[N], y[N][FEDC__SA_CHUNKS], got[FEDC__SA_CHUNKS];
    split(secret, x, y);
    for (int start = 0; start + T <= N; start++) {
        CHECK_OK(fedc__sa_shamir_combine(T, x + start, (const uint64_t(*)[FEDC__SA_CHUNKS])(y + start), T, got));
        CHECK(!memcmp(got, secret, sizeof got));
    }
    uint64_t xs[N], ys[N][FEDC__SA_CHUNKS];
    for (int i = 0; i < N; i++) xs[i] = x[(i * 4) % N], memcpy(ys[i], y[(i * 4) % N], sizeof ys[i]); /* 4 is prime to 9 */
    CHECK_OK(fedc__sa_shamir_combine(T, xs, (const uint64_t(*)[FEDC__SA_CHUNKS])ys, N, got));
    CHECK(!memcmp(got, secret, sizeof got));
    CHECK_OK(fedc__sa_shamir_combine(T - 1, x, (const uint64_t(*)[FEDC__SA_CHUNKS])y, T - 1, got));
    CHECK(memcmp(got, secret, sizeof got)); /* a degree-(t-2) fit: wrong but for chance 2^-61 */
    CHECK_ERR(fedc__sa_shamir_combine(T, x, (const uint64_t(*)[FEDC__SA_CHUNKS])y, T - 1, got), FEDC_EINVAL,
              "4 shares, fewer than the threshold 5");
}

/* A share changed by one among n > t is named; the rebuild from t does not see it. */
static void test_forged_share_caught(void) {
    uint64_t secret[FEDC__SA_CHUNKS], x[N], y[N][FEDC__SA_CHUNKS], got[FEDC__SA_CHUNKS];
    split(secret, x, y);
    y[7][2] = (y[7][2] + 1) % P;
    CHECK_ERR(fedc__sa_shamir_combine(T, x, (const uint64_t(*)[FEDC__SA_CHUNKS])y, N, got), FEDC_EINVAL,
              "share 7 (at x = 1049) is not on the polynomial");
    y[7][2] = P; /* not a field element */
    CHECK_ERR(fedc__sa_shamir_combine(T, x, (const uint64_t(*)[FEDC__SA_CHUNKS])y, N, got), FEDC_EINVAL, "not below p");
}

static void test_bad_points(void) {
    uint64_t secret[FEDC__SA_CHUNKS] = {1, 2, 3, 4, 5}, y[3][FEDC__SA_CHUNKS];
    CHECK_ERR(fedc__sa_shamir_split(secret, 2, (uint64_t[]){1, 0, 3}, 3, y), FEDC_EINVAL, "share 1 is at x = 0");
    CHECK_ERR(fedc__sa_shamir_split(secret, 2, (uint64_t[]){4, 9, 4}, 3, y), FEDC_EINVAL, "shares 0 and 2 are both at x = 4");
    CHECK_ERR(fedc__sa_shamir_split(secret, 4, (uint64_t[]){1, 2, 3}, 3, y), FEDC_EINVAL, "threshold of 4 with 3 shares");
    secret[4] = P;
    CHECK_ERR(fedc__sa_shamir_split(secret, 2, (uint64_t[]){1, 2, 3}, 3, y), FEDC_EINVAL, "secret 4 is not below p");
}

static void test_secret_chunks(void) {
    uint8_t s[FEDC__SA_KEY], back[FEDC__SA_KEY];
    uint64_t c[FEDC__SA_CHUNKS];
    randombytes_buf(s, sizeof s);
    fedc__sa_secret_to_chunks(s, c);
    for (int i = 0; i < FEDC__SA_CHUNKS; i++) CHECK(c[i] < (UINT64_C(1) << 56));
    CHECK_OK(fedc__sa_chunks_to_secret(c, back));
    CHECK(!memcmp(s, back, sizeof s));
    c[4] = UINT64_C(1) << 32; /* the last chunk holds 4 bytes */
    CHECK_ERR(fedc__sa_chunks_to_secret(c, back), FEDC_EINVAL, "chunk 4 has more than 4 bytes");
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"the field's product and inverse", test_field},
        {"any t of n shares rebuild, t - 1 do not", test_any_t_rebuild},
        {"a forged share is caught", test_forged_share_caught},
        {"bad points and thresholds refused", test_bad_points},
        {"a 32-byte secret as chunks and back", test_secret_chunks},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
