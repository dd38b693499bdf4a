/* secagg.h — secure aggregation (internal): the protocol of Bonawitz et al. 2017
 * ("Practical Secure Aggregation for Privacy-Preserving Machine Learning", CCS),
 * with the sparse graph of SecAgg+ (Bell et al. 2020, "Secure Single-Server
 * Aggregation with (Poly)Logarithmic Overhead", CCS) when `neighbours` is set.
 * docs/privacy.md describes it for users.
 *
 * Each client u holds a vector x_u of u32 words (fedc_secure_sum_encode's) and
 * the server learns only Σ_u x_u mod 2^32 over the clients that finish:
 *
 *   0 advertise  u → S: two X25519 public keys, c_u (to encrypt shares) and s_u
 *                (to agree masks). S → all: the keys of U1, the clients that
 *                advertised (at least t).
 *   1 share      u picks a self-mask seed b_u and splits b_u and the secret key
 *                of s_u into t-of-|N(u)| Shamir shares (secagg_shamir.c), one
 *                pair for each neighbour v, encrypted with the key u and v agree
 *                from c_u, c_v (XChaCha20-Poly1305). S forwards them; U2: the
 *                clients whose shares came.
 *   2 mask       u sends y_u = x_u + PRG(b_u) + Σ_{v ∈ N(u) ∩ U2} ±PRG(s_uv),
 *                s_uv agreed from s_u, s_v (+ when u < v); PRG: ChaCha20. U3: the
 *                clients whose y came.
 *   3 unmask     S names U3 (survivors) and U2 \ U3 (dropped). u sends its share
 *                of b_v for each neighbour v that survived and of s_v's secret
 *                key for each that dropped, never both for one v: it checks the
 *                two lists are disjoint and answers one request a round. S
 *                rebuilds each b_v and dropped secret key from t shares, and
 *                Σ x = Σ_{U3} y - Σ_{U3} PRG(b_v) - the pairwise masks that the
 *                survivors share with the dropped.
 *
 * N(u): every other client of U1 (SecAgg), or u's `neighbours` (even k) on a
 * ring of U1 in the order of a permutation drawn from graph_seed (SecAgg+'s
 * Harary graph), when k < |U1| - 1. The threshold must exceed half of every
 * neighbourhood (2t > |N(u)|): a server that asks some clients for b_v and
 * others for s_v's key then cannot gather t of both, each client answering once.
 *
 * Messages are byte strings (secagg_msg.c) that a decoder checks strictly; the
 * functions below decode what they are given and refuse, naming what is wrong,
 * anything out of place. Not here: the consistency round with signatures of the
 * malicious-server variant (the channel is assumed to authenticate clients,
 * e.g. TLS with client certificates); the PKI. */
#ifndef FEDC_DEPLOY_SECAGG_H
#define FEDC_DEPLOY_SECAGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fedc/core.h"

enum {
    FEDC__SA_KEY = 32,                     /* X25519 keys, seeds */
    FEDC__SA_CHUNKS = 5,                   /* a 32-byte secret as 5 field elements of 7 bytes */
    FEDC__SA_PLAIN = 8 + 16 * FEDC__SA_CHUNKS, /* a share pair: from, to, the two shares */
    FEDC__SA_CIPHER = 24 + FEDC__SA_PLAIN + 16, /* nonce, ciphertext, tag */
    FEDC__SA_MAX_CLIENTS = 1 << 16,
    FEDC__SA_MAX_LENGTH = 1 << 26          /* words of a vector */
};

/* What the server and every client agree on before the round (the plan). */
typedef struct fedc__sa_params {
    uint32_t threshold;  /* t >= 1 */
    uint32_t length;     /* words of each vector, 1 to FEDC__SA_MAX_LENGTH */
    uint32_t neighbours; /* k: 0 for all (SecAgg); else even, >= 2 (SecAgg+) */
    uint64_t graph_seed; /* SecAgg+: the ring's permutation */
} fedc__sa_params;

fedc_status fedc__sa_params_check(const fedc__sa_params *p);

/* ------------------------------------------------------------ Shamir -- */

/* Shamir's scheme over GF(p), p = 2^61 - 1: share i of a secret is f(x_i), f
 * of degree t - 1 with f(0) = the secret. */
#define FEDC__SA_PRIME ((UINT64_C(1) << 61) - 1)
uint64_t fedc__sa_field_mul(uint64_t a, uint64_t b);
uint64_t fedc__sa_field_inv(uint64_t a); /* a != 0 */
/* Shares of FEDC__SA_CHUNKS secrets at once (the chunks of one 32-byte secret):
 * y[i][c] = f_c(x[i]), i < n, f_c of degree t - 1 with f_c(0) = secret[c] (< p),
 * its other coefficients random. x: distinct, nonzero, < p. */
fedc_status fedc__sa_shamir_split(const uint64_t secret[FEDC__SA_CHUNKS], uint32_t t, const uint64_t *x, uint32_t n,
                                  uint64_t (*y)[FEDC__SA_CHUNKS]);
/* The secrets from n >= t shares: interpolated at 0 from the first t, and the
 * others checked to lie on the same polynomials (EINVAL naming the first that
 * does not: a forged or corrupted share). */
fedc_status fedc__sa_shamir_combine(uint32_t t, const uint64_t *x, const uint64_t (*y)[FEDC__SA_CHUNKS], uint32_t n,
                                    uint64_t secret[FEDC__SA_CHUNKS]);
/* A 32-byte secret as FEDC__SA_CHUNKS field elements and back (EINVAL if the
 * elements are not ones that a secret gives). */
void fedc__sa_secret_to_chunks(const uint8_t secret[FEDC__SA_KEY], uint64_t chunks[FEDC__SA_CHUNKS]);
fedc_status fedc__sa_chunks_to_secret(const uint64_t chunks[FEDC__SA_CHUNKS], uint8_t secret[FEDC__SA_KEY]);

/* ---------------------------------------------------------- messages -- */

typedef enum fedc__sa_type {
    FEDC__SA_ADVERTISE = 1, /* client: id, its two public keys */
    FEDC__SA_KEYS,          /* server: params, the keys of U1 (ids increasing) */
    FEDC__SA_SHARES,        /* client: id, a ciphertext for each neighbour (peer: the recipient) */
    FEDC__SA_FORWARD,       /* server: id (the recipient), the ciphertexts for it (peer: the sender) */
    FEDC__SA_MASKED,        /* client: id, y_u */
    FEDC__SA_UNMASK,        /* server: survivors (U3) and dropped (U2 \ U3), ids increasing */
    FEDC__SA_REVEAL,        /* client: id, its shares (about: whose; kind) */
    FEDC__SA_TYPES
} fedc__sa_type;

typedef struct fedc__sa_key {
    uint32_t id;
    uint8_t enc_pk[FEDC__SA_KEY], mask_pk[FEDC__SA_KEY];
} fedc__sa_key;

typedef struct fedc__sa_cipher {
    uint32_t peer;
    uint8_t bytes[FEDC__SA_CIPHER];
} fedc__sa_cipher;

enum { FEDC__SA_SELF_MASK = 0, FEDC__SA_MASK_KEY = 1 }; /* a revealed share's kind */

typedef struct fedc__sa_share {
    uint32_t about;
    uint8_t kind;
    uint64_t y[FEDC__SA_CHUNKS];
} fedc__sa_share;

typedef struct fedc__sa_msg {
    fedc__sa_type type;
    uint32_t id;
    fedc__sa_params params;     /* keys */
    fedc__sa_key key;           /* advertise (key.id == id) */
    uint32_t count;             /* entries of keys, ciphers, words, shares, survivors */
    fedc__sa_key *keys;
    fedc__sa_cipher *ciphers;
    uint32_t *words;
    fedc__sa_share *shares;
    uint32_t *survivors, *dropped;
    uint32_t ndropped;
} fedc__sa_msg;

const char *fedc__sa_type_name(int type);
/* m as bytes, fedc_malloc'd into *out. */
fedc_status fedc__sa_encode(const fedc__sa_msg *m, void **out, size_t *size);
/* Strictly: FEDC_EPARSE naming the message, the field and what is wrong. */
fedc_status fedc__sa_decode(const void *bytes, size_t size, fedc__sa_msg *m);
/* Decodes, and refuses (EPARSE) a message of another type than `want`. */
fedc_status fedc__sa_decode_as(const void *bytes, size_t size, fedc__sa_type want, fedc__sa_msg *m);
void fedc__sa_msg_free(fedc__sa_msg *m);

/* ------------------------------------------------------------ crypto -- */

/* The key u and v agree from u's secret and v's public key (the same both
 * ways), for `purpose` "mask" or "share". EINVAL if v's key is degenerate. */
fedc_status fedc__sa_agree(const uint8_t sk[FEDC__SA_KEY], const uint8_t pk_self[FEDC__SA_KEY],
                           const uint8_t pk_other[FEDC__SA_KEY], uint32_t self, uint32_t other, const char *purpose,
                           uint8_t key[FEDC__SA_KEY]);
/* acc[i] += sign · PRG(seed)[i] mod 2^32, i < n (PRG: ChaCha20's keystream as
 * little-endian u32 words). */
fedc_status fedc__sa_add_mask(uint32_t *acc, uint32_t n, const uint8_t seed[FEDC__SA_KEY], int sign);
/* The neighbours of `self` among the sorted ids[0..n) (which hold self) under p:
 * into out (ascending, at most n - 1), their number in *count. */
fedc_status fedc__sa_neighbours(const fedc__sa_params *p, const uint32_t *ids, uint32_t n, uint32_t self,
                                uint32_t *out, uint32_t *count);
/* Whether sorted ids[0..n) holds id. */
bool fedc__sa_has(const uint32_t *ids, uint32_t n, uint32_t id);

/* ------------------------------------------------------------ client -- */

typedef struct fedc__sa_client fedc__sa_client;

fedc_status fedc__sa_client_create(fedc__sa_client **out, uint32_t id, const fedc__sa_params *p);
void fedc__sa_client_destroy(fedc__sa_client *c);
/* Round 0: the advertise message. */
fedc_status fedc__sa_client_advertise(fedc__sa_client *c, void **msg, size_t *size);
/* Round 1: from the keys message, the shares message. */
fedc_status fedc__sa_client_share(fedc__sa_client *c, const void *keys, size_t keys_size, void **msg, size_t *size);
/* Round 2: from the forward message, the masked input of words[0..length). */
fedc_status fedc__sa_client_mask(fedc__sa_client *c, const void *forward, size_t forward_size, const uint32_t *words,
                                 void **msg, size_t *size);
/* Round 3: from the unmask message, the reveal message (once). */
fedc_status fedc__sa_client_unmask(fedc__sa_client *c, const void *unmask, size_t unmask_size, void **msg,
                                   size_t *size);

/* ------------------------------------------------------------ server -- */

typedef struct fedc__sa_server fedc__sa_server;

fedc_status fedc__sa_server_create(fedc__sa_server **out, const fedc__sa_params *p);
void fedc__sa_server_destroy(fedc__sa_server *s);
/* A client's message of the current round (advertise, shares, masked, reveal). */
fedc_status fedc__sa_server_receive(fedc__sa_server *s, const void *msg, size_t size);
/* Ends the current round (EINVAL, saying how many came, if fewer than t did);
 * then the next round's messages: fedc__sa_server_message. */
fedc_status fedc__sa_server_close(fedc__sa_server *s);
/* After closing round 0: the keys message; 1: the forward message for client
 * `to`; 2: the unmask message (`to` ignored but for forward). */
fedc_status fedc__sa_server_message(const fedc__sa_server *s, uint32_t to, void **msg, size_t *size);
/* The clients of round r's set (r 1: U1, 2: U2, 3: U3), ascending; their number. */
uint32_t fedc__sa_server_clients(const fedc__sa_server *s, int r, const uint32_t **ids);
/* After round 3's reveals: the sum of the survivors' words (length of them). */
fedc_status fedc__sa_server_sum(fedc__sa_server *s, uint32_t *sum);

#endif /* FEDC_DEPLOY_SECAGG_H */
