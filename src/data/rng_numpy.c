/* NumPy's legacy RandomState, as much of it as FedJAX's client sampling and
 * example shuffling draw (numpy/random/src/mt19937/mt19937.c, mt19937-jump's
 * seeding, numpy/random/src/distributions/distributions.c: random_interval,
 * random_bounded_uint64_fill; numpy/random/mtrand.pyx: shuffle, permutation,
 * choice). Bit-exact, so that `fedc train --rng fedjax` sees the clients and
 * batches FedJAX sees: tests/test_rng_numpy.c holds NumPy's own outputs.
 *
 * fedc's own runs use the counter RNG (src/core/rng.c) instead: a stream can be
 * entered at any (seed, round, client, step) without replaying what comes before,
 * which a Mersenne Twister cannot do. This file exists only to match FedJAX. */
#include "data/rng_numpy.h"

#define N FEDC__MT19937_N
#define M 397
#define MATRIX_A 0x9908b0dfu
#define UPPER_MASK 0x80000000u
#define LOWER_MASK 0x7fffffffu

void fedc__mt19937_seed(fedc__mt19937 *s, uint32_t seed) {
    for (int pos = 0; pos < N; pos++) {
        s->key[pos] = seed;
        seed = 1812433253u * (seed ^ (seed >> 30)) + (uint32_t)pos + 1;
    }
    s->pos = N;
}

void fedc__mt19937_seed_array(fedc__mt19937 *s, const uint32_t *key, int64_t n) {
    uint32_t *mt = s->key;
    int64_t i = 1, j = 0;
    fedc__mt19937_seed(s, 19650218u);
    for (int64_t k = N > n ? N : n; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
        i++, j++;
        if (i >= N) mt[0] = mt[N - 1], i = 1;
        if (j >= n) j = 0;
    }
    for (int64_t k = N - 1; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
        i++;
        if (i >= N) mt[0] = mt[N - 1], i = 1;
    }
    mt[0] = 0x80000000u; /* a non-zero state, whatever the key */
}

static uint32_t twist(uint32_t a, uint32_t b, uint32_t far) {
    uint32_t y = (a & UPPER_MASK) | (b & LOWER_MASK);
    return far ^ (y >> 1) ^ ((0u - (y & 1u)) & MATRIX_A);
}

static void generate(fedc__mt19937 *s) {
    uint32_t *k = s->key;
    int i = 0;
    for (; i < N - M; i++) k[i] = twist(k[i], k[i + 1], k[i + M]);
    for (; i < N - 1; i++) k[i] = twist(k[i], k[i + 1], k[i + M - N]);
    k[N - 1] = twist(k[N - 1], k[0], k[M - 1]);
    s->pos = 0;
}

uint32_t fedc__mt19937_next(fedc__mt19937 *s) {
    if (s->pos == N) generate(s);
    uint32_t y = s->key[s->pos++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
}

/* 64 bits as NumPy's mt19937_next64 puts two draws together: the first high. */
static uint64_t next64(fedc__mt19937 *s) {
    uint64_t hi = fedc__mt19937_next(s);
    return hi << 32 | fedc__mt19937_next(s);
}

/* The smallest 2^k - 1 at least v. */
static uint64_t mask_of(uint64_t v) {
    v |= v >> 1, v |= v >> 2, v |= v >> 4, v |= v >> 8, v |= v >> 16, v |= v >> 32;
    return v;
}

uint64_t fedc__numpy_interval(fedc__mt19937 *s, uint64_t max) {
    if (max == 0) return 0;
    uint64_t mask = mask_of(max), v;
    if (max <= 0xffffffffu) {
        while ((v = (fedc__mt19937_next(s) & mask)) > max) {}
    } else {
        while ((v = (next64(s) & mask)) > max) {}
    }
    return v;
}

int64_t fedc__numpy_randint(fedc__mt19937 *s, int64_t low, int64_t high) {
    uint64_t range = (uint64_t)high - (uint64_t)low - 1u, v;
    if (range == 0) return low;
    if (range == 0xffffffffu) return low + (int64_t)fedc__mt19937_next(s);
    if (range == UINT64_MAX) return (int64_t)((uint64_t)low + next64(s));
    uint64_t mask = mask_of(range);
    if (range < 0xffffffffu) {
        while ((v = (fedc__mt19937_next(s) & mask)) > range) {}
    } else {
        while ((v = (next64(s) & mask)) > range) {}
    }
    return (int64_t)((uint64_t)low + v);
}

void fedc__numpy_shuffle(fedc__mt19937 *s, int64_t *a, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)fedc__numpy_interval(s, (uint64_t)i), t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* Park and Miller's multiplicative congruential generator, the one FedJAX steps
 * from the seed's first draw to round round_num's state (16807^round_num times
 * the start, mod 2^31 - 1). */
#define MLCG_MODULUS 2147483647u
#define MLCG_MULTIPLIER 16807u

uint32_t fedc__fedjax_round_seed(uint32_t seed, uint32_t round_num) {
    fedc__mt19937 s;
    fedc__mt19937_seed(&s, seed);
    uint64_t start = (uint64_t)fedc__numpy_randint(&s, 1, MLCG_MODULUS - 1);
    uint64_t power = 1, base = MLCG_MULTIPLIER;
    for (uint32_t e = round_num; e; e >>= 1) { /* pow(16807, round_num, 2^31 - 1) */
        if (e & 1) power = power * base % MLCG_MODULUS;
        base = base * base % MLCG_MODULUS;
    }
    return (uint32_t)(power * start % MLCG_MODULUS);
}
