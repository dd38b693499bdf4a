/* SecAgg's messages (secagg.h) as bytes, little-endian:
 *
 *     "FSA1", type u8, then by type:
 *     advertise  id u32, enc_pk [32], mask_pk [32]
 *     keys       threshold u32, length u32, neighbours u32, graph_seed u64,
 *                count u32, count x (id u32, enc_pk [32], mask_pk [32])
 *     shares     id u32, count u32, count x (peer u32, ciphertext [128])
 *     forward    the same as shares (id: the recipient; peer: the sender)
 *     masked     id u32, count u32, count x word u32
 *     unmask     count u32, count x survivor u32, ndropped u32, ndropped x id u32
 *     reveal     id u32, count u32, count x (about u32, kind u8, 5 x share u64)
 *
 * The decoder takes nothing on trust: the length must be exactly what the
 * counts say, counts and ids within their ranges, the lists strictly
 * increasing (so no id twice), field elements below p, kinds known. */
#include <stdio.h>
#include <string.h>

#include "deploy/secagg.h"

static const char MAGIC[4] = {'F', 'S', 'A', '1'};
static const char *const NAMES[FEDC__SA_TYPES] = {"?", "advertise", "keys", "shares", "forward", "masked", "unmask", "reveal"};

const char *fedc__sa_type_name(int type) { return type > 0 && type < FEDC__SA_TYPES ? NAMES[type] : "?"; }

void fedc__sa_msg_free(fedc__sa_msg *m) {
    fedc_free(m->keys), fedc_free(m->ciphers), fedc_free(m->words), fedc_free(m->shares);
    fedc_free(m->survivors), fedc_free(m->dropped);
    memset(m, 0, sizeof *m);
}

/* ----------------------------------------------------------- encoding -- */

typedef struct writer {
    uint8_t *p;
    size_t at;
} writer;

static void put(writer *w, const void *b, size_t n) { memcpy(w->p + w->at, b, n), w->at += n; }
static void put_u32(writer *w, uint32_t v) {
    for (int i = 0; i < 4; i++) w->p[w->at++] = (uint8_t)(v >> (8 * i));
}
static void put_u64(writer *w, uint64_t v) {
    for (int i = 0; i < 8; i++) w->p[w->at++] = (uint8_t)(v >> (8 * i));
}
static void put_ids(writer *w, const uint32_t *ids, uint32_t n) {
    put_u32(w, n);
    for (uint32_t i = 0; i < n; i++) put_u32(w, ids[i]);
}

enum { KEY_ENTRY = 4 + 2 * FEDC__SA_KEY, CIPHER_ENTRY = 4 + FEDC__SA_CIPHER, SHARE_ENTRY = 5 + 8 * FEDC__SA_CHUNKS };

static size_t body_size(const fedc__sa_msg *m) {
    size_t n = m->count;
    switch (m->type) {
    case FEDC__SA_ADVERTISE: return KEY_ENTRY;
    case FEDC__SA_KEYS: return 12 + 8 + 4 + n * KEY_ENTRY;
    case FEDC__SA_SHARES:
    case FEDC__SA_FORWARD: return 8 + n * CIPHER_ENTRY;
    case FEDC__SA_MASKED: return 8 + 4 * n;
    case FEDC__SA_UNMASK: return 8 + 4 * (n + m->ndropped);
    case FEDC__SA_REVEAL: return 8 + n * SHARE_ENTRY;
    default: return 0;
    }
}

static void put_key(writer *w, const fedc__sa_key *k) {
    put_u32(w, k->id), put(w, k->enc_pk, FEDC__SA_KEY), put(w, k->mask_pk, FEDC__SA_KEY);
}

static void put_body(writer *w, const fedc__sa_msg *m) {
    const fedc__sa_params *p = &m->params;
    switch (m->type) {
    case FEDC__SA_ADVERTISE: put_key(w, &m->key); break;
    case FEDC__SA_KEYS:
        put_u32(w, p->threshold), put_u32(w, p->length), put_u32(w, p->neighbours), put_u64(w, p->graph_seed);
        put_u32(w, m->count);
        for (uint32_t i = 0; i < m->count; i++) put_key(w, &m->keys[i]);
        break;
    case FEDC__SA_SHARES:
    case FEDC__SA_FORWARD:
        put_u32(w, m->id), put_u32(w, m->count);
        for (uint32_t i = 0; i < m->count; i++) put_u32(w, m->ciphers[i].peer), put(w, m->ciphers[i].bytes, FEDC__SA_CIPHER);
        break;
    case FEDC__SA_MASKED: put_u32(w, m->id), put_ids(w, m->words, m->count); break;
    case FEDC__SA_UNMASK: put_ids(w, m->survivors, m->count), put_ids(w, m->dropped, m->ndropped); break;
    default: /* reveal */
        put_u32(w, m->id), put_u32(w, m->count);
        for (uint32_t i = 0; i < m->count; i++) {
            put_u32(w, m->shares[i].about), put(w, &m->shares[i].kind, 1);
            for (int c = 0; c < FEDC__SA_CHUNKS; c++) put_u64(w, m->shares[i].y[c]);
        }
    }
}

fedc_status fedc__sa_encode(const fedc__sa_msg *m, void **out, size_t *size) {
    *out = NULL, *size = 0;
    if (m->type < 1 || m->type >= FEDC__SA_TYPES) return fedc_error(FEDC_EINVAL, "secagg: no message type %d", m->type);
    size_t n = 5 + body_size(m);
    writer w = {fedc_malloc(n), 0};
    if (!w.p) return fedc_error(FEDC_ENOMEM, "secagg: out of memory for a %s message of %zu bytes", NAMES[m->type], n);
    put(&w, MAGIC, 4);
    w.p[w.at++] = (uint8_t)m->type;
    put_body(&w, m);
    *out = w.p, *size = n;
    return FEDC_OK;
}

/* ----------------------------------------------------------- decoding -- */

typedef struct reader {
    const uint8_t *p;
    size_t size, at;
    const char *type;
    fedc_status st;
} reader;

static fedc_status bad(reader *r, const char *field, uint32_t entry, const char *what, unsigned long long v) {
    if (r->st) return r->st;
    char where[64] = "";
    if (entry != UINT32_MAX) snprintf(where, sizeof where, " of entry %u", entry);
    return r->st = fedc_error(FEDC_EPARSE, "secagg: %s message: %s%s %s (%llu)", r->type, field, where, what, v);
}

static bool take(reader *r, size_t n, const char *field, uint32_t entry) {
    if (r->st) return false;
    if (r->size - r->at < n) {
        bad(r, field, entry, "is cut off: the message ends at byte", (unsigned long long)r->size);
        return false;
    }
    r->at += n;
    return true;
}
static uint32_t get_u32(reader *r, const char *field, uint32_t entry) {
    if (!take(r, 4, field, entry)) return 0;
    const uint8_t *b = r->p + r->at - 4;
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t get_u64(reader *r, const char *field, uint32_t entry) {
    uint64_t lo = get_u32(r, field, entry);
    return lo | (uint64_t)get_u32(r, field, entry) << 32;
}
static void get(reader *r, void *out, size_t n, const char *field, uint32_t entry) {
    if (take(r, n, field, entry)) memcpy(out, r->p + r->at - n, n);
}

/* A client id: 1 to 2^32 - 1 (the Shamir points are the ids). */
static uint32_t get_id(reader *r, const char *field, uint32_t entry) {
    uint32_t id = get_u32(r, field, entry);
    if (!r->st && id == 0) bad(r, field, entry, "is 0; client ids are 1 to 2^32 - 1", 0);
    return id;
}

/* A count of entries of `bytes` each, at most max and within what is left. */
static uint32_t get_count(reader *r, const char *field, uint32_t max, size_t bytes) {
    uint32_t n = get_u32(r, field, UINT32_MAX);
    if (!r->st && n > max) bad(r, field, UINT32_MAX, "is above the limit", n);
    if (!r->st && bytes && (r->size - r->at) / bytes < n)
        bad(r, field, UINT32_MAX, "promises more entries than the message holds", n);
    return r->st ? 0 : n;
}

static void *entries(reader *r, uint32_t n, size_t size) {
    void *v = r->st ? NULL : fedc_calloc(n ? n : 1, size);
    if (!r->st && !v) r->st = fedc_error(FEDC_ENOMEM, "secagg: out of memory for %u entries of a %s message", n, r->type);
    return v;
}

/* A strictly increasing list of ids (none twice). */
static uint32_t *get_ids(reader *r, const char *field, uint32_t *count) {
    uint32_t n = *count = get_count(r, field, FEDC__SA_MAX_CLIENTS, 4), *ids = entries(r, n, sizeof *ids);
    for (uint32_t i = 0; ids && !r->st && i < n; i++) {
        ids[i] = get_id(r, field, i);
        if (!r->st && i && ids[i] <= ids[i - 1]) bad(r, field, i, "is not above the one before: ids increase", ids[i]);
    }
    return ids;
}

static void get_key(reader *r, fedc__sa_key *k, uint32_t entry) {
    k->id = get_id(r, "id", entry);
    get(r, k->enc_pk, FEDC__SA_KEY, "enc_pk", entry);
    get(r, k->mask_pk, FEDC__SA_KEY, "mask_pk", entry);
}

static void get_params(reader *r, fedc__sa_params *p) {
    p->threshold = get_u32(r, "threshold", UINT32_MAX);
    p->length = get_u32(r, "length", UINT32_MAX);
    p->neighbours = get_u32(r, "neighbours", UINT32_MAX);
    p->graph_seed = get_u64(r, "graph_seed", UINT32_MAX);
    if (!r->st && fedc__sa_params_check(p)) r->st = fedc_error(FEDC_EPARSE, "secagg: keys message: %s", fedc_errmsg());
}

static void get_keys(reader *r, fedc__sa_msg *m) {
    get_params(r, &m->params);
    m->count = get_count(r, "count", FEDC__SA_MAX_CLIENTS, KEY_ENTRY);
    m->keys = entries(r, m->count, sizeof *m->keys);
    for (uint32_t i = 0; m->keys && !r->st && i < m->count; i++) {
        get_key(r, &m->keys[i], i);
        if (!r->st && i && m->keys[i].id <= m->keys[i - 1].id)
            bad(r, "id", i, "is not above the one before: ids increase", m->keys[i].id);
    }
}

static void get_ciphers(reader *r, fedc__sa_msg *m) {
    m->id = get_id(r, "id", UINT32_MAX);
    m->count = get_count(r, "count", FEDC__SA_MAX_CLIENTS, CIPHER_ENTRY);
    m->ciphers = entries(r, m->count, sizeof *m->ciphers);
    for (uint32_t i = 0; m->ciphers && !r->st && i < m->count; i++) {
        m->ciphers[i].peer = get_id(r, "peer", i);
        if (!r->st && i && m->ciphers[i].peer <= m->ciphers[i - 1].peer)
            bad(r, "peer", i, "is not above the one before: peers increase", m->ciphers[i].peer);
        if (!r->st && m->ciphers[i].peer == m->id) bad(r, "peer", i, "is the message's own client", m->id);
        get(r, m->ciphers[i].bytes, FEDC__SA_CIPHER, "ciphertext", i);
    }
}

static void get_reveal(reader *r, fedc__sa_msg *m) {
    m->id = get_id(r, "id", UINT32_MAX);
    m->count = get_count(r, "count", FEDC__SA_MAX_CLIENTS, SHARE_ENTRY);
    m->shares = entries(r, m->count, sizeof *m->shares);
    for (uint32_t i = 0; m->shares && !r->st && i < m->count; i++) {
        fedc__sa_share *s = &m->shares[i];
        s->about = get_id(r, "about", i);
        if (!r->st && i && s->about <= m->shares[i - 1].about)
            bad(r, "about", i, "is not above the one before: one share a client, ids increase", s->about);
        get(r, &s->kind, 1, "kind", i);
        if (!r->st && s->kind > FEDC__SA_MASK_KEY) bad(r, "kind", i, "is neither 0 (self-mask) nor 1 (mask key)", s->kind);
        for (int c = 0; c < FEDC__SA_CHUNKS && !r->st; c++)
            if ((s->y[c] = get_u64(r, "share", i)) >= FEDC__SA_PRIME && !r->st)
                bad(r, "share", i, "is not below the field's prime 2^61 - 1", s->y[c]);
    }
}

static void get_body(reader *r, fedc__sa_msg *m) {
    switch (m->type) {
    case FEDC__SA_ADVERTISE: get_key(r, &m->key, UINT32_MAX), m->id = m->key.id; break;
    case FEDC__SA_KEYS: get_keys(r, m); break;
    case FEDC__SA_SHARES:
    case FEDC__SA_FORWARD: get_ciphers(r, m); break;
    case FEDC__SA_MASKED:
        m->id = get_id(r, "id", UINT32_MAX);
        m->count = get_count(r, "count", FEDC__SA_MAX_LENGTH, 4);
        m->words = entries(r, m->count, sizeof *m->words);
        for (uint32_t i = 0; m->words && !r->st && i < m->count; i++) m->words[i] = get_u32(r, "word", i);
        break;
    case FEDC__SA_UNMASK:
        m->survivors = get_ids(r, "survivors", &m->count);
        m->dropped = get_ids(r, "dropped", &m->ndropped);
        break;
    default: get_reveal(r, m);
    }
}

fedc_status fedc__sa_decode(const void *bytes, size_t size, fedc__sa_msg *m) {
    memset(m, 0, sizeof *m);
    const uint8_t *b = bytes;
    if (size < 5) return fedc_error(FEDC_EPARSE, "secagg: a message of %zu bytes; the header alone has 5", size);
    if (memcmp(b, MAGIC, 4)) return fedc_error(FEDC_EPARSE, "secagg: not a SecAgg message (no \"FSA1\" magic)");
    if (b[4] < 1 || b[4] >= FEDC__SA_TYPES) return fedc_error(FEDC_EPARSE, "secagg: unknown message type %u", b[4]);
    m->type = (fedc__sa_type)b[4];
    reader r = {b, size, 5, NAMES[b[4]], FEDC_OK};
    get_body(&r, m);
    if (!r.st && r.at != size)
        r.st = fedc_error(FEDC_EPARSE, "secagg: %s message: %zu bytes after its end (at byte %zu)", r.type, size - r.at, r.at);
    if (r.st) fedc__sa_msg_free(m);
    return r.st;
}

fedc_status fedc__sa_decode_as(const void *bytes, size_t size, fedc__sa_type want, fedc__sa_msg *m) {
    fedc_status st = fedc__sa_decode(bytes, size, m);
    if (!st && m->type != want) {
        st = fedc_error(FEDC_EPARSE, "secagg: a %s message where a %s message belongs", NAMES[m->type], NAMES[want]);
        fedc__sa_msg_free(m);
    }
    return st;
}
