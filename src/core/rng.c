/* The counter-based random number generator: Philox4x32-10 exactly as Random123
 * defines it (Salmon et al., SC 2011), and the stream helpers that turn a
 * (seed, round, client, step) tuple and an element index into uniform and normal
 * variates. Everything here is a pure function of its arguments, so the value a
 * stream gives for index i never depends on which thread asks or in what order,
 * and a run can be reproduced exactly from its seed. */
#include "fedc/core.h"

#include <math.h>

/* Random123's constants: the multipliers and the Weyl key increments (the
 * golden ratio and sqrt(3) - 1 as 32-bit fractions). */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
#define PHILOX_ROUNDS 10

/* One Philox S-box round: two 32x32->64 multiplies, their high halves mixed
 * into the other words with the round key. */
static fedc_philox_ctr philox_round(fedc_philox_ctr x, fedc_philox_key k) {
    uint64_t p0 = (uint64_t)PHILOX_M0 * x.c[0];
    uint64_t p1 = (uint64_t)PHILOX_M1 * x.c[2];
    fedc_philox_ctr y;
    y.c[0] = (uint32_t)(p1 >> 32) ^ x.c[1] ^ k.k[0];
    y.c[1] = (uint32_t)p1;
    y.c[2] = (uint32_t)(p0 >> 32) ^ x.c[3] ^ k.k[1];
    y.c[3] = (uint32_t)p0;
    return y;
}

fedc_philox_ctr fedc_philox4x32(fedc_philox_ctr ctr, fedc_philox_key key) {
    /* Random123 bumps the key between rounds, not before the first one. */
    for (int r = 0; r < PHILOX_ROUNDS; r++) {
        if (r > 0) {
            key.k[0] += PHILOX_W0;
            key.k[1] += PHILOX_W1;
        }
        ctr = philox_round(ctr, key);
    }
    return ctr;
}

/* MurmurHash3's 32-bit finalizer. It is a bijection, so it spreads its input
 * over all 32 bits without creating collisions of its own. */
static uint32_t fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

/* The stream's third counter word. (round, client) is 64 bits and c2 only 32,
 * so some pairs must share a c2; a hash would make that happen at random (with
 * a million pairs, a collision is likely). Instead round is spread by a Weyl
 * step and client added: two pairs collide only if (round difference) * W is
 * within (client difference) of a multiple of 2^32, and for W = 0x9E3779B9 the
 * smallest such distance is 744616 over round differences below 4096 and 52777
 * below 65536. So c2 is distinct for all round < 4096 with client < 744616, and
 * for all round < 65536 with client < 52777. fmix32 then mixes the bits; being a
 * bijection it keeps that guarantee. */
static uint32_t mix_round_client(uint32_t round, uint32_t client) {
    return fmix32(round * PHILOX_W0 + client);
}

fedc_rng_stream fedc_rng_stream_make(uint64_t seed, uint32_t round, uint32_t client,
                                     uint32_t step) {
    fedc_rng_stream s;
    s.key.k[0] = (uint32_t)seed;
    s.key.k[1] = (uint32_t)(seed >> 32);
    s.c2 = mix_round_client(round, client);
    s.c3 = step;
    return s;
}

fedc_philox_ctr fedc_rng_block(fedc_rng_stream s, uint64_t block) {
    fedc_philox_ctr ctr = {{(uint32_t)block, (uint32_t)(block >> 32), s.c2, s.c3}};
    return fedc_philox4x32(ctr, s.key);
}

float fedc_rng_uniform_f32(fedc_rng_stream s, uint64_t i) {
    uint32_t w = fedc_rng_block(s, i / 4).c[i % 4];
    /* 24 bits is a float's precision: every value is exact and below 1. */
    return (float)(w >> 8) * 0x1p-24f;
}

double fedc_rng_uniform_f64(fedc_rng_stream s, uint64_t i) {
    fedc_philox_ctr b = fedc_rng_block(s, i / 2);
    int w = (int)(i % 2) * 2; /* words 0,1 for even i, 2,3 for odd i */
    /* 32 bits from the first word and the top 21 of the second make the 53 bits
     * of a double's precision, so the result is exact and below 1. */
    uint64_t bits = ((uint64_t)b.c[w] << 21) | (b.c[w + 1] >> 11);
    return (double)bits * 0x1p-53;
}

double fedc_rng_normal(fedc_rng_stream s, uint64_t i) {
    const double two_pi = 6.283185307179586476925286766559;
    double u1 = fedc_rng_uniform_f64(s, 2 * i);
    double u2 = fedc_rng_uniform_f64(s, 2 * i + 1);
    /* u1 can be 0 but never 1, so 1 - u1 is in (0, 1] and its log is finite. */
    double r = sqrt(-2.0 * log(1.0 - u1));
    return r * cos(two_pi * u2);
}
