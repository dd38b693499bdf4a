/* SecAgg's cryptography and graph (secagg.h): libsodium's X25519 for the keys
 * two clients agree, BLAKE2b to derive a key for a purpose from the shared
 * point, ChaCha20's keystream as the masks' PRG; SecAgg+'s neighbourhoods. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "deploy/secagg.h"

fedc_status fedc__sa_params_check(const fedc__sa_params *p) {
    if (p->threshold < 1 || p->threshold > FEDC__SA_MAX_CLIENTS)
        return fedc_error(FEDC_EINVAL, "secagg: a threshold of %u; it takes 1 to %d", p->threshold, FEDC__SA_MAX_CLIENTS);
    if (p->length < 1 || p->length > FEDC__SA_MAX_LENGTH)
        return fedc_error(FEDC_EINVAL, "secagg: vectors of %u words; they take 1 to %d", p->length, FEDC__SA_MAX_LENGTH);
    if (p->neighbours % 2 || p->neighbours > FEDC__SA_MAX_CLIENTS)
        return fedc_error(FEDC_EINVAL, "secagg: %u neighbours; SecAgg+ takes an even number up to %d (0: all clients)",
                          p->neighbours, FEDC__SA_MAX_CLIENTS);
    return FEDC_OK;
}

bool fedc__sa_has(const uint32_t *ids, uint32_t n, uint32_t id) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ids[mid] == id) return true;
        if (ids[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return false;
}

fedc_status fedc__sa_agree(const uint8_t sk[FEDC__SA_KEY], const uint8_t pk_self[FEDC__SA_KEY],
                           const uint8_t pk_other[FEDC__SA_KEY], uint32_t self, uint32_t other, const char *purpose,
                           uint8_t key[FEDC__SA_KEY]) {
    uint8_t shared[crypto_scalarmult_BYTES];
    if (crypto_scalarmult(shared, sk, pk_other))
        return fedc_error(FEDC_EINVAL, "secagg: client %u's public key is degenerate (a low-order point)", other);
    /* H(purpose, shared point, the lower id's key, the higher's): the same both ways */
    const uint8_t *first = self < other ? pk_self : pk_other, *second = self < other ? pk_other : pk_self;
    crypto_generichash_state h;
    crypto_generichash_init(&h, NULL, 0, FEDC__SA_KEY);
    crypto_generichash_update(&h, (const uint8_t *)purpose, strlen(purpose) + 1);
    crypto_generichash_update(&h, shared, sizeof shared);
    crypto_generichash_update(&h, first, FEDC__SA_KEY);
    crypto_generichash_update(&h, second, FEDC__SA_KEY);
    crypto_generichash_final(&h, key, FEDC__SA_KEY);
    sodium_memzero(shared, sizeof shared);
    return FEDC_OK;
}

enum { CHUNK_WORDS = 4096 }; /* 16 KiB of keystream at a time: 256 ChaCha20 blocks */

fedc_status fedc__sa_add_mask(uint32_t *acc, uint32_t n, const uint8_t seed[FEDC__SA_KEY], int sign) {
    static const uint8_t nonce[crypto_stream_chacha20_NONCEBYTES] = {0}; /* every seed is used once */
    uint8_t *ks = fedc_malloc(4 * CHUNK_WORDS);
    if (!ks) return fedc_error(FEDC_ENOMEM, "secagg: out of memory for a mask's keystream");
    for (uint32_t at = 0; at < n; at += CHUNK_WORDS) {
        uint32_t len = n - at < CHUNK_WORDS ? n - at : CHUNK_WORDS;
        memset(ks, 0, 4 * (size_t)len);
        crypto_stream_chacha20_xor_ic(ks, ks, 4 * (unsigned long long)len, nonce, (uint64_t)at / 16, seed);
        for (uint32_t i = 0; i < len; i++) {
            const uint8_t *b = ks + 4 * i;
            uint32_t w = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            acc[at + i] += sign > 0 ? w : 0u - w; /* unsigned: modulo 2^32 */
        }
    }
    sodium_memzero(ks, 4 * CHUNK_WORDS);
    fedc_free(ks);
    return FEDC_OK;
}

/* ------------------------------------------------------------- graph -- */

static int by_id(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* perm[0..n): a permutation of 0..n-1 drawn from the seed (Fisher-Yates on
 * ChaCha20's keystream, read little-endian), the same for every party. */
static void permutation(uint64_t seed, uint32_t n, uint32_t *perm) {
    uint8_t key[FEDC__SA_KEY] = {0}, nonce[crypto_stream_chacha20_NONCEBYTES] = {'g', 'r', 'a', 'p', 'h'};
    for (int i = 0; i < 8; i++) key[i] = (uint8_t)(seed >> (8 * i));
    for (uint32_t i = 0; i < n; i++) perm[i] = i;
    uint8_t block[512]; /* 64 draws, 8 ChaCha20 blocks */
    for (uint32_t i = n, drawn = 0; i > 1; i--, drawn++) {
        if (drawn % 64 == 0) {
            memset(block, 0, sizeof block);
            crypto_stream_chacha20_xor_ic(block, block, sizeof block, nonce, drawn / 64 * 8, key);
        }
        uint64_t r = 0;
        for (int b = 0; b < 8; b++) r |= (uint64_t)block[8 * (drawn % 64) + b] << (8 * b);
        uint32_t j = (uint32_t)(r % i), t = perm[i - 1]; /* bias below 2^-47 for i <= 2^16 */
        perm[i - 1] = perm[j], perm[j] = t;
    }
}

fedc_status fedc__sa_neighbours(const fedc__sa_params *p, const uint32_t *ids, uint32_t n, uint32_t self,
                                uint32_t *out, uint32_t *count) {
    *count = 0;
    if (!fedc__sa_has(ids, n, self)) return fedc_error(FEDC_EINVAL, "secagg: client %u is not among the clients", self);
    if (p->neighbours == 0 || p->neighbours >= n - 1) { /* everyone: SecAgg */
        for (uint32_t i = 0; i < n; i++)
            if (ids[i] != self) out[(*count)++] = ids[i];
        return FEDC_OK;
    }
    uint32_t *perm = fedc_malloc((size_t)n * sizeof *perm), pos = 0;
    if (!perm) return fedc_error(FEDC_ENOMEM, "secagg: out of memory for a graph of %u clients", n);
    permutation(p->graph_seed, n, perm);
    while (ids[perm[pos]] != self) pos++;
    for (uint32_t d = 1; d <= p->neighbours / 2; d++) /* Harary: k/2 on each side of the ring */
        out[(*count)++] = ids[perm[(pos + d) % n]], out[(*count)++] = ids[perm[(pos + n - d) % n]];
    fedc_free(perm);
    qsort(out, *count, sizeof *out, by_id);
    return FEDC_OK;
}
