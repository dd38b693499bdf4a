/* A SecAgg client (secagg.h): its keys, its shares of its secrets, the shares it
 * holds of its neighbours', and its answers to the four rounds. An honest
 * client checks what the server sends against what it knows, and refuses to
 * reveal both shares of one client. */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "deploy/secagg.h"

typedef struct held {           /* what client `id` gave this client */
    bool present;
    uint64_t key[FEDC__SA_CHUNKS];  /* a share of its mask key's secret */
    uint64_t self[FEDC__SA_CHUNKS]; /* a share of its self-mask seed */
} held;

struct fedc__sa_client {
    uint32_t id;
    fedc__sa_params p;
    int round; /* the next round to answer: 0 advertise ... 3 unmask, 4 done */
    uint8_t enc_pk[FEDC__SA_KEY], enc_sk[FEDC__SA_KEY], mask_pk[FEDC__SA_KEY], mask_sk[FEDC__SA_KEY];
    uint8_t seed[FEDC__SA_KEY]; /* b_u */
    fedc__sa_key *keys;         /* U1's, ids increasing */
    uint32_t nkeys;
    uint32_t *nb, nnb; /* N(u), ids increasing */
    held *held;        /* per neighbour */
};

static fedc_status refuse(const fedc__sa_client *c, const char *what) {
    return fedc_error(FEDC_EINVAL, "secagg: client %u refuses: %s", c->id, what);
}

fedc_status fedc__sa_client_create(fedc__sa_client **out, uint32_t id, const fedc__sa_params *p) {
    *out = NULL;
    fedc_status st = fedc__sa_params_check(p);
    if (st) return st;
    if (id == 0) return fedc_error(FEDC_EINVAL, "secagg: client id 0; ids are 1 to 2^32 - 1");
    if (sodium_init() < 0) return fedc_error(FEDC_EINTERNAL, "secagg: libsodium failed to initialise");
    fedc__sa_client *c = fedc_calloc(1, sizeof *c);
    if (!c) return fedc_error(FEDC_ENOMEM, "secagg: out of memory for a client");
    c->id = id, c->p = *p;
    crypto_box_keypair(c->enc_pk, c->enc_sk); /* X25519 key pairs */
    crypto_box_keypair(c->mask_pk, c->mask_sk);
    *out = c;
    return FEDC_OK;
}

void fedc__sa_client_destroy(fedc__sa_client *c) {
    if (!c) return;
    if (c->held) sodium_memzero(c->held, (size_t)c->nnb * sizeof *c->held);
    fedc_free(c->keys), fedc_free(c->nb), fedc_free(c->held);
    sodium_memzero(c, sizeof *c);
    fedc_free(c);
}

static fedc_status in_round(const fedc__sa_client *c, int round, const char *name) {
    if (c->round == round) return FEDC_OK;
    return fedc_error(FEDC_EINVAL, "secagg: client %u is asked to %s in round %d, but it is at round %d", c->id, name,
                      round, c->round);
}

fedc_status fedc__sa_client_advertise(fedc__sa_client *c, void **msg, size_t *size) {
    fedc_status st = in_round(c, 0, "advertise its keys");
    if (st) return st;
    fedc__sa_msg m = {.type = FEDC__SA_ADVERTISE, .id = c->id, .key.id = c->id};
    memcpy(m.key.enc_pk, c->enc_pk, FEDC__SA_KEY), memcpy(m.key.mask_pk, c->mask_pk, FEDC__SA_KEY);
    st = fedc__sa_encode(&m, msg, size);
    if (!st) c->round = 1;
    return st;
}

/* ------------------------------------------------------------- round 1 -- */

static const fedc__sa_key *key_of(const fedc__sa_client *c, uint32_t id) {
    uint32_t lo = 0, hi = c->nkeys;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->keys[mid].id == id) return &c->keys[mid];
        if (c->keys[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* The keys message against this client's own knowledge: its parameters, its own
 * keys as it advertised them, enough clients. */
static fedc_status check_keys(const fedc__sa_client *c, const fedc__sa_msg *m) {
    const fedc__sa_params *p = &m->params;
    if (p->threshold != c->p.threshold || p->length != c->p.length || p->neighbours != c->p.neighbours ||
        p->graph_seed != c->p.graph_seed)
        return refuse(c, "the keys message's parameters (threshold, length, neighbours, graph seed) are not the plan's");
    const fedc__sa_key *own = NULL;
    for (uint32_t i = 0; i < m->count; i++)
        if (m->keys[i].id == c->id) own = &m->keys[i];
    if (!own || memcmp(own->enc_pk, c->enc_pk, FEDC__SA_KEY) || memcmp(own->mask_pk, c->mask_pk, FEDC__SA_KEY))
        return refuse(c, "the keys message does not hold its keys as it advertised them");
    return FEDC_OK;
}

/* Neighbourhood size n against the threshold: t <= n (the shares can be rebuilt)
 * and 2t > n (no two disjoint sets of t answers). */
static fedc_status check_neighbourhood(uint32_t id, uint32_t n, uint32_t t) {
    if (t <= n && 2 * (uint64_t)t > n) return FEDC_OK;
    return fedc_error(FEDC_EINVAL, "secagg: client %u has %u neighbours; the threshold %u must be at most that and "
                      "above half of it", id, n, t);
}

/* The plaintext of the shares for v: from, to, the key share, the self share. */
static void pack_plain(uint8_t out[FEDC__SA_PLAIN], uint32_t from, uint32_t to, const uint64_t *key, const uint64_t *self) {
    for (int i = 0; i < 4; i++) out[i] = (uint8_t)(from >> (8 * i)), out[4 + i] = (uint8_t)(to >> (8 * i));
    for (int c = 0; c < FEDC__SA_CHUNKS; c++)
        for (int b = 0; b < 8; b++) {
            out[8 + 8 * c + b] = (uint8_t)(key[c] >> (8 * b));
            out[8 + 8 * (FEDC__SA_CHUNKS + c) + b] = (uint8_t)(self[c] >> (8 * b));
        }
}

/* The associated data: the magic and (from, to), so a ciphertext cannot be
 * passed off as another pair's. */
static void pack_ad(uint8_t ad[12], uint32_t from, uint32_t to) {
    memcpy(ad, "FSA1", 4);
    for (int i = 0; i < 4; i++) ad[4 + i] = (uint8_t)(from >> (8 * i)), ad[8 + i] = (uint8_t)(to >> (8 * i));
}

static fedc_status encrypt_for(const fedc__sa_client *c, uint32_t v, const uint64_t *key, const uint64_t *self,
                               fedc__sa_cipher *out) {
    uint8_t k[FEDC__SA_KEY], plain[FEDC__SA_PLAIN], ad[12];
    fedc_status st = fedc__sa_agree(c->enc_sk, c->enc_pk, key_of(c, v)->enc_pk, c->id, v, "share", k);
    if (st) return st;
    pack_plain(plain, c->id, v, key, self);
    pack_ad(ad, c->id, v);
    out->peer = v;
    randombytes_buf(out->bytes, crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
    crypto_aead_xchacha20poly1305_ietf_encrypt(out->bytes + 24, NULL, plain, sizeof plain, ad, sizeof ad, NULL,
                                               out->bytes, k);
    sodium_memzero(k, sizeof k), sodium_memzero(plain, sizeof plain);
    return FEDC_OK;
}

/* Splits the mask key's secret and the seed among the neighbours, each pair
 * encrypted for its holder. */
static fedc_status make_shares(fedc__sa_client *c, fedc__sa_msg *out) {
    uint32_t n = c->nnb;
    uint64_t *x = fedc_malloc((size_t)n * sizeof *x), (*ks)[FEDC__SA_CHUNKS] = fedc_malloc((size_t)n * sizeof *ks);
    uint64_t (*ss)[FEDC__SA_CHUNKS] = fedc_malloc((size_t)n * sizeof *ss), kc[FEDC__SA_CHUNKS], sc[FEDC__SA_CHUNKS];
    out->ciphers = fedc_calloc(n, sizeof *out->ciphers);
    fedc_status st = x && ks && ss && out->ciphers ? FEDC_OK
                                                   : fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u shares", n);
    for (uint32_t i = 0; !st && i < n; i++) x[i] = c->nb[i];
    randombytes_buf(c->seed, sizeof c->seed);
    fedc__sa_secret_to_chunks(c->mask_sk, kc), fedc__sa_secret_to_chunks(c->seed, sc);
    if (!st) st = fedc__sa_shamir_split(kc, c->p.threshold, x, n, ks);
    if (!st) st = fedc__sa_shamir_split(sc, c->p.threshold, x, n, ss);
    for (uint32_t i = 0; !st && i < n; i++) st = encrypt_for(c, c->nb[i], ks[i], ss[i], &out->ciphers[i]);
    out->count = n;
    if (ks) sodium_memzero(ks, (size_t)n * sizeof *ks);
    if (ss) sodium_memzero(ss, (size_t)n * sizeof *ss);
    sodium_memzero(kc, sizeof kc), sodium_memzero(sc, sizeof sc);
    fedc_free(x), fedc_free(ks), fedc_free(ss);
    return st;
}

fedc_status fedc__sa_client_share(fedc__sa_client *c, const void *keys, size_t keys_size, void **msg, size_t *size) {
    fedc_status st = in_round(c, 1, "share its secrets");
    fedc__sa_msg m, out = {.type = FEDC__SA_SHARES, .id = c->id};
    if (st || (st = fedc__sa_decode_as(keys, keys_size, FEDC__SA_KEYS, &m))) return st;
    fedc_free(c->keys), fedc_free(c->nb), fedc_free(c->held); /* what a refused attempt left */
    c->keys = NULL, c->nb = NULL, c->held = NULL, c->nkeys = c->nnb = 0;
    st = check_keys(c, &m);
    uint32_t *ids = st ? NULL : fedc_malloc((size_t)m.count * sizeof *ids);
    c->nb = st ? NULL : fedc_malloc((size_t)m.count * sizeof *c->nb);
    if (!st && (!ids || !c->nb)) st = fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u clients", m.count);
    for (uint32_t i = 0; !st && i < m.count; i++) ids[i] = m.keys[i].id;
    if (!st) st = fedc__sa_neighbours(&c->p, ids, m.count, c->id, c->nb, &c->nnb);
    if (!st) st = check_neighbourhood(c->id, c->nnb, c->p.threshold);
    if (!st) {
        c->keys = m.keys, c->nkeys = m.count, m.keys = NULL;
        c->held = fedc_calloc(c->nnb ? c->nnb : 1, sizeof *c->held);
        st = c->held ? make_shares(c, &out) : fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u shares", c->nnb);
    }
    if (!st) st = fedc__sa_encode(&out, msg, size);
    if (!st) c->round = 2;
    fedc_free(ids), fedc__sa_msg_free(&out), fedc__sa_msg_free(&m);
    return st;
}

/* ------------------------------------------------------------- round 2 -- */

static int64_t neighbour_index(const fedc__sa_client *c, uint32_t id) {
    uint32_t lo = 0, hi = c->nnb;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->nb[mid] == id) return mid;
        if (c->nb[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

static uint64_t get_u64(const uint8_t *b) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)b[i] << (8 * i);
    return v;
}

/* Decrypts v's ciphertext into the shares this client holds of v. */
static fedc_status receive_from(fedc__sa_client *c, const fedc__sa_cipher *ct) {
    uint32_t v = ct->peer;
    int64_t k = neighbour_index(c, v);
    char why[160];
    if (k < 0) {
        snprintf(why, sizeof why, "the forward message holds shares from client %u, which is not its neighbour", v);
        return refuse(c, why);
    }
    uint8_t key[FEDC__SA_KEY], plain[FEDC__SA_PLAIN], ad[12];
    fedc_status st = fedc__sa_agree(c->enc_sk, c->enc_pk, key_of(c, v)->enc_pk, c->id, v, "share", key);
    if (st) return st;
    pack_ad(ad, v, c->id);
    int bad = crypto_aead_xchacha20poly1305_ietf_decrypt(plain, NULL, NULL, ct->bytes + 24, FEDC__SA_CIPHER - 24, ad,
                                                         sizeof ad, ct->bytes, key);
    sodium_memzero(key, sizeof key);
    if (bad) {
        snprintf(why, sizeof why, "the shares from client %u do not decrypt: forged or corrupted", v);
        return refuse(c, why);
    }
    held *h = &c->held[k];
    for (int i = 0; i < FEDC__SA_CHUNKS; i++) {
        h->key[i] = get_u64(plain + 8 + 8 * i), h->self[i] = get_u64(plain + 8 + 8 * (FEDC__SA_CHUNKS + i));
        if (h->key[i] >= FEDC__SA_PRIME || h->self[i] >= FEDC__SA_PRIME) bad = 1;
    }
    if (!bad && get_u64(plain) != ((uint64_t)c->id << 32 | v)) bad = 1; /* from v, to c->id */
    sodium_memzero(plain, sizeof plain);
    h->present = !bad;
    if (bad) snprintf(why, sizeof why, "the shares from client %u are not well formed", v);
    return bad ? refuse(c, why) : FEDC_OK;
}

/* y = x + PRG(b_u) + Σ_{v ∈ N(u) ∩ U2} ±PRG(s_uv). */
static fedc_status mask_words(const fedc__sa_client *c, uint32_t *y) {
    fedc_status st = fedc__sa_add_mask(y, c->p.length, c->seed, 1);
    for (uint32_t i = 0; !st && i < c->nnb; i++) {
        if (!c->held[i].present) continue;
        uint8_t s[FEDC__SA_KEY];
        uint32_t v = c->nb[i];
        st = fedc__sa_agree(c->mask_sk, c->mask_pk, key_of(c, v)->mask_pk, c->id, v, "mask", s);
        if (!st) st = fedc__sa_add_mask(y, c->p.length, s, c->id < v ? 1 : -1);
        sodium_memzero(s, sizeof s);
    }
    return st;
}

fedc_status fedc__sa_client_mask(fedc__sa_client *c, const void *forward, size_t forward_size, const uint32_t *words,
                                 void **msg, size_t *size) {
    fedc_status st = in_round(c, 2, "mask its input");
    fedc__sa_msg m, out = {.type = FEDC__SA_MASKED, .id = c->id, .count = c->p.length};
    if (st || (st = fedc__sa_decode_as(forward, forward_size, FEDC__SA_FORWARD, &m))) return st;
    if (m.id != c->id) st = refuse(c, "the forward message is addressed to another client");
    for (uint32_t i = 0; i < c->nnb; i++) c->held[i].present = false; /* only this message's senders count */
    uint32_t got = 0;
    for (uint32_t i = 0; !st && i < m.count; i++, got++) st = receive_from(c, &m.ciphers[i]);
    if (!st && got < c->p.threshold) {
        char why[128];
        snprintf(why, sizeof why, "only %u of its neighbours shared keys, fewer than the threshold %u", got, c->p.threshold);
        st = refuse(c, why);
    }
    out.words = st ? NULL : fedc_malloc((size_t)c->p.length * sizeof *out.words);
    if (!st && !out.words) st = fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u words", c->p.length);
    if (!st) memcpy(out.words, words, (size_t)c->p.length * sizeof *words);
    if (!st) st = mask_words(c, out.words);
    if (!st) st = fedc__sa_encode(&out, msg, size);
    if (!st) c->round = 3;
    fedc__sa_msg_free(&out), fedc__sa_msg_free(&m);
    return st;
}

/* ------------------------------------------------------------- round 3 -- */

/* The unmask request against what this client knows: two disjoint lists (never
 * both shares of one client), itself a survivor, at least t survivors, and each
 * neighbour that shared keys in exactly one list. */
static fedc_status check_unmask(const fedc__sa_client *c, const fedc__sa_msg *m) {
    char why[200];
    for (uint32_t i = 0; i < m->count; i++)
        if (fedc__sa_has(m->dropped, m->ndropped, m->survivors[i])) {
            snprintf(why, sizeof why, "the server asks for both the self-mask share and the mask-key share of client "
                     "%u (named a survivor and dropped)", m->survivors[i]);
            return refuse(c, why);
        }
    if (!fedc__sa_has(m->survivors, m->count, c->id)) return refuse(c, "the unmask request does not name it a survivor");
    if (m->count < c->p.threshold) {
        snprintf(why, sizeof why, "the unmask request names %u survivors, fewer than the threshold %u", m->count,
                 c->p.threshold);
        return refuse(c, why);
    }
    for (uint32_t i = 0; i < m->count + m->ndropped; i++) {
        uint32_t v = i < m->count ? m->survivors[i] : m->dropped[i - m->count];
        if (!key_of(c, v)) {
            snprintf(why, sizeof why, "the unmask request names client %u, which is not among the clients", v);
            return refuse(c, why);
        }
    }
    for (uint32_t i = 0; i < c->nnb; i++) {
        bool s = fedc__sa_has(m->survivors, m->count, c->nb[i]), d = fedc__sa_has(m->dropped, m->ndropped, c->nb[i]);
        if (c->held[i].present != (s || d)) {
            snprintf(why, sizeof why, "the unmask request %s client %u, which %s keys with it", s || d ? "names" : "leaves out",
                     c->nb[i], c->held[i].present ? "shared" : "did not share");
            return refuse(c, why);
        }
    }
    return FEDC_OK;
}

fedc_status fedc__sa_client_unmask(fedc__sa_client *c, const void *unmask, size_t unmask_size, void **msg,
                                   size_t *size) {
    if (c->round == 4)
        return refuse(c, "it has answered an unmask request this round already; answering another could reveal both "
                      "shares of one client");
    fedc_status st = in_round(c, 3, "reveal shares");
    fedc__sa_msg m, out = {.type = FEDC__SA_REVEAL, .id = c->id};
    if (st || (st = fedc__sa_decode_as(unmask, unmask_size, FEDC__SA_UNMASK, &m))) return st;
    st = check_unmask(c, &m);
    out.shares = st ? NULL : fedc_calloc(c->nnb ? c->nnb : 1, sizeof *out.shares);
    if (!st && !out.shares) st = fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u shares", c->nnb);
    for (uint32_t i = 0; !st && i < c->nnb; i++) {
        if (!c->held[i].present) continue;
        fedc__sa_share *s = &out.shares[out.count++];
        s->about = c->nb[i];
        s->kind = fedc__sa_has(m.survivors, m.count, c->nb[i]) ? FEDC__SA_SELF_MASK : FEDC__SA_MASK_KEY;
        memcpy(s->y, s->kind == FEDC__SA_SELF_MASK ? c->held[i].self : c->held[i].key, sizeof s->y);
    }
    if (!st) st = fedc__sa_encode(&out, msg, size);
    if (!st) c->round = 4;
    if (out.shares) sodium_memzero(out.shares, (c->nnb ? c->nnb : 1) * sizeof *out.shares);
    fedc__sa_msg_free(&out), fedc__sa_msg_free(&m);
    return st;
}
