/* Shamir's secret sharing over GF(p), p = 2^61 - 1 (secagg.h).
 *
 * A Mersenne prime: a product reduces with two shifts and adds, and 61 bits hold
 * 7 bytes of a secret. Interpolation uses the barycentric form
 *
 *     f(z) = Σ_j a_j y_j / Σ_j a_j,   a_j = w_j / (z - x_j),   w_j = 1 / Π_{m≠j} (x_j - x_m)
 *
 * over the first t shares: the weights w_j once (O(t²)), then each point z in
 * O(t) with one inversion (Montgomery's batch trick), so that checking every
 * further share against the polynomial costs no more than the rebuild. */
#include <string.h>

#include <sodium.h>

#include "deploy/secagg.h"

#define P FEDC__SA_PRIME

static uint64_t add(uint64_t a, uint64_t b) {
    uint64_t r = a + b; /* < 2^62: no wrap */
    return r >= P ? r - P : r;
}

static uint64_t sub(uint64_t a, uint64_t b) { return a >= b ? a - b : a + P - b; }

uint64_t fedc__sa_field_mul(uint64_t a, uint64_t b) {
    unsigned __int128 x = (unsigned __int128)a * b; /* < 2^122 */
    uint64_t r = (uint64_t)(x & P) + (uint64_t)(x >> 61);
    r = (r & P) + (r >> 61);
    return r >= P ? r - P : r;
}

uint64_t fedc__sa_field_inv(uint64_t a) { /* a^(p-2), Fermat */
    uint64_t r = 1, e = P - 2;
    for (; e; e >>= 1, a = fedc__sa_field_mul(a, a))
        if (e & 1) r = fedc__sa_field_mul(r, a);
    return r;
}

/* A uniform element of [0, p): 61 random bits, drawn again when they are p. */
static uint64_t random_element(void) {
    uint64_t v;
    do {
        randombytes_buf(&v, sizeof v);
        v &= P;
    } while (v == P);
    return v;
}

static fedc_status check_points(const uint64_t *x, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        if (x[i] == 0 || x[i] >= P)
            return fedc_error(FEDC_EINVAL, "shamir: share %u is at x = %llu; shares are at 1 to p - 1", i,
                              (unsigned long long)x[i]);
        for (uint32_t j = 0; j < i; j++)
            if (x[j] == x[i])
                return fedc_error(FEDC_EINVAL, "shamir: shares %u and %u are both at x = %llu", j, i,
                                  (unsigned long long)x[i]);
    }
    return FEDC_OK;
}

fedc_status fedc__sa_shamir_split(const uint64_t secret[FEDC__SA_CHUNKS], uint32_t t, const uint64_t *x, uint32_t n,
                                  uint64_t (*y)[FEDC__SA_CHUNKS]) {
    if (t < 1 || t > n) return fedc_error(FEDC_EINVAL, "shamir: a threshold of %u with %u shares", t, n);
    fedc_status st = check_points(x, n);
    uint64_t *coef = st ? NULL : fedc_malloc((size_t)t * sizeof *coef);
    if (!st && !coef) st = fedc_error(FEDC_ENOMEM, "shamir: out of memory for %u coefficients", t);
    for (int c = 0; !st && c < FEDC__SA_CHUNKS; c++) {
        if (secret[c] >= P) {
            st = fedc_error(FEDC_EINVAL, "shamir: secret %d is not below p", c);
            break;
        }
        coef[0] = secret[c];
        for (uint32_t k = 1; k < t; k++) coef[k] = random_element();
        for (uint32_t i = 0; !st && i < n; i++) { /* Horner */
            uint64_t v = 0;
            for (uint32_t k = t; k-- > 0;) v = add(fedc__sa_field_mul(v, x[i]), coef[k]);
            y[i][c] = v;
        }
        sodium_memzero(coef, (size_t)t * sizeof *coef);
    }
    fedc_free(coef);
    return st;
}

/* v[i] = 1 / v[i], i < n (all nonzero), with one inversion; tmp: n elements. */
static void batch_invert(uint64_t *v, uint32_t n, uint64_t *tmp) {
    uint64_t acc = 1;
    for (uint32_t i = 0; i < n; i++) tmp[i] = acc, acc = fedc__sa_field_mul(acc, v[i]);
    acc = fedc__sa_field_inv(acc);
    for (uint32_t i = n; i-- > 0;) {
        uint64_t inv = fedc__sa_field_mul(acc, tmp[i]);
        acc = fedc__sa_field_mul(acc, v[i]);
        v[i] = inv;
    }
}

/* f(z) for each chunk from the t shares (x, y) of weights w; a, tmp: t elements.
 * z is none of the x. */
static void evaluate(uint64_t z, uint32_t t, const uint64_t *x, const uint64_t (*y)[FEDC__SA_CHUNKS], const uint64_t *w,
                     uint64_t *a, uint64_t *tmp, uint64_t out[FEDC__SA_CHUNKS]) {
    for (uint32_t j = 0; j < t; j++) a[j] = sub(z, x[j]);
    batch_invert(a, t, tmp);
    uint64_t den = 0, num[FEDC__SA_CHUNKS] = {0};
    for (uint32_t j = 0; j < t; j++) {
        a[j] = fedc__sa_field_mul(a[j], w[j]);
        den = add(den, a[j]);
        for (int c = 0; c < FEDC__SA_CHUNKS; c++) num[c] = add(num[c], fedc__sa_field_mul(a[j], y[j][c]));
    }
    uint64_t inv = fedc__sa_field_inv(den);
    for (int c = 0; c < FEDC__SA_CHUNKS; c++) out[c] = fedc__sa_field_mul(num[c], inv);
}

fedc_status fedc__sa_shamir_combine(uint32_t t, const uint64_t *x, const uint64_t (*y)[FEDC__SA_CHUNKS], uint32_t n,
                                    uint64_t secret[FEDC__SA_CHUNKS]) {
    if (t < 1 || n < t) return fedc_error(FEDC_EINVAL, "shamir: %u shares, fewer than the threshold %u", n, t);
    fedc_status st = check_points(x, n);
    for (uint32_t i = 0; !st && i < n; i++)
        for (int c = 0; c < FEDC__SA_CHUNKS; c++)
            if (y[i][c] >= P) st = fedc_error(FEDC_EINVAL, "shamir: share %u's value %d is not below p", i, c);
    uint64_t *w = st ? NULL : fedc_malloc(3 * (size_t)t * sizeof *w);
    if (!st && !w) st = fedc_error(FEDC_ENOMEM, "shamir: out of memory for %u shares", t);
    if (st) return st;
    uint64_t *a = w + t, *tmp = a + t;
    for (uint32_t j = 0; j < t; j++) {
        w[j] = 1;
        for (uint32_t m = 0; m < t; m++)
            if (m != j) w[j] = fedc__sa_field_mul(w[j], sub(x[j], x[m]));
    }
    batch_invert(w, t, tmp);
    evaluate(0, t, x, y, w, a, tmp, secret);
    for (uint32_t k = t; !st && k < n; k++) { /* the others must agree */
        uint64_t v[FEDC__SA_CHUNKS];
        evaluate(x[k], t, x, y, w, a, tmp, v);
        if (memcmp(v, y[k], sizeof v))
            st = fedc_error(FEDC_EINVAL, "shamir: share %u (at x = %llu) is not on the polynomial of the first %u: "
                            "forged or corrupted", k, (unsigned long long)x[k], t);
    }
    fedc_free(w);
    return st;
}

void fedc__sa_secret_to_chunks(const uint8_t secret[FEDC__SA_KEY], uint64_t chunks[FEDC__SA_CHUNKS]) {
    for (int c = 0; c < FEDC__SA_CHUNKS; c++) {
        chunks[c] = 0;
        for (int b = 0; b < 7 && 7 * c + b < FEDC__SA_KEY; b++) chunks[c] |= (uint64_t)secret[7 * c + b] << (8 * b);
    }
}

fedc_status fedc__sa_chunks_to_secret(const uint64_t chunks[FEDC__SA_CHUNKS], uint8_t secret[FEDC__SA_KEY]) {
    for (int c = 0; c < FEDC__SA_CHUNKS; c++) {
        int bytes = 7 * c + 7 <= FEDC__SA_KEY ? 7 : FEDC__SA_KEY - 7 * c;
        if (chunks[c] >> (8 * bytes))
            return fedc_error(FEDC_EINVAL, "shamir: the rebuilt secret's chunk %d has more than %d bytes: the shares "
                              "are not of one secret", c, bytes);
        for (int b = 0; b < bytes; b++) secret[7 * c + b] = (uint8_t)(chunks[c] >> (8 * b));
    }
    return FEDC_OK;
}
