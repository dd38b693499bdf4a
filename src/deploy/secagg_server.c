/* The SecAgg server (secagg.h): collects each round's messages, checks each
 * against the protocol's state (who may send what, once), relays the
 * encrypted shares, sums the masked inputs as they come (memory: one vector),
 * and in the end rebuilds the survivors' self-mask seeds and the dropped
 * clients' mask keys from t shares each and takes their masks off the sum. */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "deploy/secagg.h"

typedef struct member { /* a client of U1 */
    fedc__sa_key key;
    uint32_t *nb, nnb;          /* its neighbours */
    fedc__sa_cipher *ciphers;   /* its shares message's (round 1), NULL if none came */
    bool masked, revealed;
    uint32_t nshares;           /* shares of its secrets revealed (one kind) */
    uint64_t *x, (*y)[FEDC__SA_CHUNKS];
} member;

struct fedc__sa_server {
    fedc__sa_params p;
    int round; /* collecting round r's messages; 4: sum taken */
    fedc__sa_key *adv;
    uint32_t nadv, cap;
    member *m; /* U1, ids increasing */
    uint32_t n;
    uint32_t *set[4], count[4]; /* U1, U2, U3 (set[1..3]) */
    uint32_t *sum;
    uint32_t reveals;
};

fedc_status fedc__sa_server_create(fedc__sa_server **out, const fedc__sa_params *p) {
    *out = NULL;
    fedc_status st = fedc__sa_params_check(p);
    if (st) return st;
    if (sodium_init() < 0) return fedc_error(FEDC_EINTERNAL, "secagg: libsodium failed to initialise");
    fedc__sa_server *s = fedc_calloc(1, sizeof *s);
    if (s) s->sum = fedc_calloc(p->length, sizeof *s->sum);
    if (!s || !s->sum) {
        fedc_free(s);
        return fedc_error(FEDC_ENOMEM, "secagg: out of memory for a server of %u words", p->length);
    }
    s->p = *p;
    *out = s;
    return FEDC_OK;
}

void fedc__sa_server_destroy(fedc__sa_server *s) {
    if (!s) return;
    for (uint32_t i = 0; i < s->n; i++)
        fedc_free(s->m[i].nb), fedc_free(s->m[i].ciphers), fedc_free(s->m[i].x), fedc_free(s->m[i].y);
    for (int r = 1; r < 4; r++) fedc_free(s->set[r]);
    fedc_free(s->adv), fedc_free(s->m), fedc_free(s->sum);
    fedc_free(s);
}

static member *find(const fedc__sa_server *s, uint32_t id) {
    uint32_t lo = 0, hi = s->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->m[mid].key.id == id) return &s->m[mid];
        if (s->m[mid].key.id < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

static fedc_status refuse(uint32_t id, const char *type, const char *why) {
    return fedc_error(FEDC_EINVAL, "secagg: server refuses client %u's %s message: %s", id, type, why);
}

/* ------------------------------------------------------------ receive -- */

static fedc_status receive_advertise(fedc__sa_server *s, const fedc__sa_msg *m) {
    for (uint32_t i = 0; i < s->nadv; i++)
        if (s->adv[i].id == m->id) return refuse(m->id, "advertise", "it advertised keys already");
    if (s->nadv == FEDC__SA_MAX_CLIENTS) return refuse(m->id, "advertise", "the round has the most clients it takes");
    if (s->nadv == s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 64;
        fedc__sa_key *a = fedc_realloc(s->adv, cap * sizeof *a);
        if (!a) return fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u clients' keys", cap);
        s->adv = a, s->cap = cap;
    }
    s->adv[s->nadv++] = m->key;
    return FEDC_OK;
}

/* A shares message: from a client of U1, once, one ciphertext for each of its
 * neighbours exactly. */
static fedc_status receive_shares(fedc__sa_server *s, fedc__sa_msg *m) {
    member *u = find(s, m->id);
    if (!u) return refuse(m->id, "shares", "it is not among the clients that advertised keys");
    if (u->ciphers) return refuse(m->id, "shares", "it sent its shares already");
    bool same = m->count == u->nnb;
    for (uint32_t i = 0; same && i < m->count; i++) same = m->ciphers[i].peer == u->nb[i];
    if (!same) return refuse(m->id, "shares", "its ciphertexts are not one for each of its neighbours");
    u->ciphers = m->ciphers, m->ciphers = NULL;
    return FEDC_OK;
}

static fedc_status receive_masked(fedc__sa_server *s, const fedc__sa_msg *m) {
    member *u = find(s, m->id);
    if (!u || !u->ciphers) return refuse(m->id, "masked", "it did not share its keys in round 1");
    if (u->masked) return refuse(m->id, "masked", "it sent its masked input already");
    if (m->count != s->p.length) {
        char why[96];
        snprintf(why, sizeof why, "its input has %u words, not the round's %u", m->count, s->p.length);
        return refuse(m->id, "masked", why);
    }
    for (uint32_t i = 0; i < m->count; i++) s->sum[i] += m->words[i]; /* modulo 2^32 */
    u->masked = true;
    return FEDC_OK;
}

/* Keeps share sh (from client `from`) with the other shares of its client. */
static fedc_status keep_share(fedc__sa_server *s, uint32_t from, const fedc__sa_share *sh) {
    member *v = find(s, sh->about);
    if (!v->x) {
        v->x = fedc_malloc((size_t)v->nnb * sizeof *v->x), v->y = fedc_malloc((size_t)v->nnb * sizeof *v->y);
        if (!v->x || !v->y) return fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u shares", v->nnb);
    }
    v->x[v->nshares] = from;
    memcpy(v->y[v->nshares++], sh->y, sizeof sh->y);
    return FEDC_OK;
}

/* A reveal message: from a survivor, once, one share for each of its
 * neighbours that shared keys, of the kind the unmask request asked for. */
static fedc_status receive_reveal(fedc__sa_server *s, const fedc__sa_msg *m) {
    member *u = find(s, m->id);
    if (!u || !u->masked) return refuse(m->id, "reveal", "it is not a survivor");
    if (u->revealed) return refuse(m->id, "reveal", "it revealed its shares already");
    uint32_t want = 0;
    for (uint32_t i = 0; i < u->nnb; i++) want += find(s, u->nb[i])->ciphers != NULL;
    bool ok = m->count == want;
    for (uint32_t i = 0, k = 0; ok && i < u->nnb; i++) {
        const member *v = find(s, u->nb[i]);
        if (!v->ciphers) continue;
        const fedc__sa_share *sh = &m->shares[k++];
        ok = sh->about == v->key.id && sh->kind == (v->masked ? FEDC__SA_SELF_MASK : FEDC__SA_MASK_KEY);
    }
    if (!ok)
        return refuse(m->id, "reveal", "its shares are not one of the asked kind for each neighbour that shared keys");
    fedc_status st = FEDC_OK;
    for (uint32_t i = 0; !st && i < m->count; i++) st = keep_share(s, m->id, &m->shares[i]);
    if (!st) u->revealed = true, s->reveals++;
    return st;
}

static const fedc__sa_type EXPECTED[4] = {FEDC__SA_ADVERTISE, FEDC__SA_SHARES, FEDC__SA_MASKED, FEDC__SA_REVEAL};

fedc_status fedc__sa_server_receive(fedc__sa_server *s, const void *msg, size_t size) {
    if (s->round > 3) return fedc_error(FEDC_EINVAL, "secagg: the server's round is over; it takes no more messages");
    fedc__sa_msg m;
    fedc_status st = fedc__sa_decode_as(msg, size, EXPECTED[s->round], &m);
    if (st) return st;
    switch (s->round) {
    case 0: st = receive_advertise(s, &m); break;
    case 1: st = receive_shares(s, &m); break;
    case 2: st = receive_masked(s, &m); break;
    default: st = receive_reveal(s, &m);
    }
    fedc__sa_msg_free(&m);
    return st;
}

/* -------------------------------------------------------------- close -- */

static int by_id(const void *a, const void *b) {
    uint32_t x = ((const fedc__sa_key *)a)->id, y = ((const fedc__sa_key *)b)->id;
    return (x > y) - (x < y);
}

/* U1: the advertised clients in id order, each with its neighbourhood. */
static fedc_status close_advertise(fedc__sa_server *s) {
    qsort(s->adv, s->nadv, sizeof *s->adv, by_id);
    s->m = fedc_calloc(s->nadv ? s->nadv : 1, sizeof *s->m);
    s->set[1] = fedc_malloc((s->nadv ? s->nadv : 1) * sizeof *s->set[1]);
    if (!s->m || !s->set[1]) return fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u clients", s->nadv);
    s->n = s->count[1] = s->nadv;
    for (uint32_t i = 0; i < s->n; i++) s->m[i].key = s->adv[i], s->set[1][i] = s->adv[i].id;
    fedc_status st = FEDC_OK;
    for (uint32_t i = 0; !st && i < s->n; i++) {
        member *u = &s->m[i];
        if (!(u->nb = fedc_malloc((s->n ? s->n : 1) * sizeof *u->nb)))
            return fedc_error(FEDC_ENOMEM, "secagg: out of memory for a neighbourhood");
        st = fedc__sa_neighbours(&s->p, s->set[1], s->n, u->key.id, u->nb, &u->nnb);
        if (!st && !(s->p.threshold <= u->nnb && 2 * (uint64_t)s->p.threshold > u->nnb))
            st = fedc_error(FEDC_EINVAL, "secagg: client %u has %u neighbours; the threshold %u must be at most that "
                            "and above half of it", u->key.id, u->nnb, s->p.threshold);
    }
    return st;
}

/* set[r] = the members for which `in` holds. */
static fedc_status make_set(fedc__sa_server *s, int r, bool (*in)(const member *)) {
    s->set[r] = fedc_malloc((s->n ? s->n : 1) * sizeof *s->set[r]);
    if (!s->set[r]) return fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u clients", s->n);
    s->count[r] = 0;
    for (uint32_t i = 0; i < s->n; i++)
        if (in(&s->m[i])) s->set[r][s->count[r]++] = s->m[i].key.id;
    return FEDC_OK;
}

static bool shared(const member *u) { return u->ciphers != NULL; }
static bool masked(const member *u) { return u->masked; }

fedc_status fedc__sa_server_close(fedc__sa_server *s) {
    static const char *const what[3] = {"advertised keys", "shared their secrets", "sent masked inputs"};
    if (s->round > 2) return fedc_error(FEDC_EINVAL, "secagg: round 3 ends with the sum (fedc__sa_server_sum)");
    if (s->round == 0 && s->nadv < s->p.threshold)
        return fedc_error(FEDC_EINVAL, "secagg: only %u clients %s, fewer than the threshold %u: the round cannot go on",
                          s->nadv, what[0], s->p.threshold);
    fedc_status st = s->round == 0 ? close_advertise(s) : make_set(s, s->round + 1, s->round == 1 ? shared : masked);
    uint32_t got = s->count[s->round + 1];
    if (!st && got < s->p.threshold)
        st = fedc_error(FEDC_EINVAL, "secagg: only %u clients %s, fewer than the threshold %u: the round cannot go on",
                        got, what[s->round], s->p.threshold);
    if (!st) s->round++;
    return st;
}

uint32_t fedc__sa_server_clients(const fedc__sa_server *s, int r, const uint32_t **ids) {
    *ids = r >= 1 && r <= 3 ? s->set[r] : NULL;
    return *ids ? s->count[r] : 0;
}

/* ------------------------------------------------------------ messages -- */

static fedc_status forward_for(const fedc__sa_server *s, uint32_t to, fedc__sa_msg *m) {
    const member *v = find(s, to);
    if (!v || !v->ciphers)
        return fedc_error(FEDC_EINVAL, "secagg: client %u shared no keys: there is nothing to forward to it", to);
    m->ciphers = fedc_malloc((v->nnb ? v->nnb : 1) * sizeof *m->ciphers);
    if (!m->ciphers) return fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u ciphertexts", v->nnb);
    for (uint32_t i = 0; i < v->nnb; i++) { /* u's ciphertext for v: u and v are each other's neighbours */
        const member *u = find(s, v->nb[i]);
        if (!u->ciphers) continue;
        uint32_t k = 0;
        while (u->nb[k] != to) k++;
        m->ciphers[m->count] = u->ciphers[k];
        m->ciphers[m->count++].peer = u->key.id;
    }
    return FEDC_OK;
}

fedc_status fedc__sa_server_message(const fedc__sa_server *s, uint32_t to, void **msg, size_t *size) {
    fedc__sa_msg m = {.id = to};
    fedc_status st = FEDC_OK;
    if (s->round == 1) {
        m.type = FEDC__SA_KEYS, m.params = s->p, m.count = s->n;
        m.keys = fedc_malloc((s->n ? s->n : 1) * sizeof *m.keys);
        if (!m.keys) st = fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u keys", s->n);
        for (uint32_t i = 0; !st && i < s->n; i++) m.keys[i] = s->m[i].key;
    } else if (s->round == 2) {
        m.type = FEDC__SA_FORWARD;
        st = forward_for(s, to, &m);
    } else if (s->round == 3) {
        m.type = FEDC__SA_UNMASK, m.count = s->count[3];
        m.survivors = fedc_malloc((s->count[3] ? s->count[3] : 1) * sizeof *m.survivors);
        m.dropped = fedc_malloc((s->count[2] ? s->count[2] : 1) * sizeof *m.dropped);
        if (!m.survivors || !m.dropped) st = fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u ids", s->count[2]);
        for (uint32_t i = 0; !st && i < s->count[3]; i++) m.survivors[i] = s->set[3][i];
        for (uint32_t i = 0; !st && i < s->count[2]; i++)
            if (!find(s, s->set[2][i])->masked) m.dropped[m.ndropped++] = s->set[2][i];
    } else {
        st = fedc_error(FEDC_EINVAL, "secagg: the server has no message to send in round %d", s->round);
    }
    if (!st) st = fedc__sa_encode(&m, msg, size);
    fedc__sa_msg_free(&m);
    return st;
}

/* ---------------------------------------------------------------- sum -- */

/* v's secret of the kind it has shares of, from t of them (all checked). */
static fedc_status rebuild(const fedc__sa_server *s, const member *v, uint8_t secret[FEDC__SA_KEY]) {
    const char *kind = v->masked ? "self-mask seed" : "mask key";
    if (v->nshares < s->p.threshold)
        return fedc_error(FEDC_EINVAL, "secagg: cannot unmask: client %u's %s has %u shares of the %u needed (too many "
                          "clients dropped)", v->key.id, kind, v->nshares, s->p.threshold);
    uint64_t chunks[FEDC__SA_CHUNKS];
    fedc_status st = fedc__sa_shamir_combine(s->p.threshold, v->x, (const uint64_t(*)[FEDC__SA_CHUNKS])v->y, v->nshares,
                                             chunks);
    if (!st) st = fedc__sa_chunks_to_secret(chunks, secret);
    if (st) return fedc_error(st, "secagg: client %u's %s: %s", v->key.id, kind, fedc_errmsg());
    uint8_t pk[FEDC__SA_KEY];
    if (!v->masked && (crypto_scalarmult_base(pk, secret) || memcmp(pk, v->key.mask_pk, FEDC__SA_KEY)))
        return fedc_error(FEDC_EINVAL, "secagg: client %u's mask key as rebuilt from its shares is not the one it "
                          "advertised: a share is forged", v->key.id);
    return FEDC_OK;
}

/* Takes v's masks off the sum: its self-mask if it survived; if it dropped, the
 * pairwise masks that its surviving neighbours added for it. */
static fedc_status unmask(fedc__sa_server *s, const member *v) {
    uint8_t secret[FEDC__SA_KEY], k[FEDC__SA_KEY];
    fedc_status st = rebuild(s, v, secret);
    if (!st && v->masked) st = fedc__sa_add_mask(s->sum, s->p.length, secret, -1);
    for (uint32_t i = 0; !st && !v->masked && i < v->nnb; i++) {
        const member *w = find(s, v->nb[i]);
        if (!w->masked) continue;
        st = fedc__sa_agree(secret, v->key.mask_pk, w->key.mask_pk, v->key.id, w->key.id, "mask", k);
        if (!st) st = fedc__sa_add_mask(s->sum, s->p.length, k, w->key.id < v->key.id ? -1 : 1); /* w added ±PRG */
    }
    sodium_memzero(secret, sizeof secret), sodium_memzero(k, sizeof k);
    return st;
}

fedc_status fedc__sa_server_sum(fedc__sa_server *s, uint32_t *sum) {
    if (s->round != 3) return fedc_error(FEDC_EINVAL, "secagg: the sum comes after round 3's reveals (at round %d)", s->round);
    if (s->reveals < s->p.threshold)
        return fedc_error(FEDC_EINVAL, "secagg: only %u survivors revealed shares, fewer than the threshold %u", s->reveals,
                          s->p.threshold);
    fedc_status st = FEDC_OK;
    s->round = 4; /* over either way: a failure leaves the sum half unmasked */
    for (uint32_t i = 0; !st && i < s->n; i++)
        if (s->m[i].ciphers) st = unmask(s, &s->m[i]); /* U2: survivors and the dropped */
    if (st) return st;
    memcpy(sum, s->sum, (size_t)s->p.length * sizeof *sum);
    return FEDC_OK;
}
