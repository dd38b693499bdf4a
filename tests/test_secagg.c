/* The SecAgg protocol in one process (src/deploy/secagg*.c): the unmasked sum is
 * the secure sum's quantized sum, bit for bit (the C functions' and the round
 * program's); clients that drop after each round are recovered from while t
 * remain, and a round with fewer is refused, saying so; an honest client
 * refuses to reveal both shares of one client; a server that sums only some of
 * the masked inputs (over-selection) gets their sum, the others unmasked as
 * dropped and revealing nothing; malformed, truncated and forged
 * messages are refused, naming what; SecAgg+'s sparse graph gives the same sum. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "deploy/secagg.h"
#include "fedc/fedc.h"
#include "harness.h"

enum { MAXN = 128 };

/* After which round a client stops: 0 never advertises, 1 advertises only, 2
 * shares but sends no input, 3 sends its input but reveals nothing, 4 finishes. */
typedef struct sim {
    fedc__sa_params p;
    int n;
    uint32_t ids[MAXN];
    int stop[MAXN];
    fedc__sa_client *c[MAXN];
    fedc__sa_server *s;
    uint32_t *words; /* n x length */
} sim;

static uint32_t id_of(int i) { return 3 * (uint32_t)i + 5; } /* not 1..n: ids are any nonzero u32 */

/* Client vectors: the secure sum's words of random floats, 12 bits, bound 1. */
static void sim_init(sim *m, int n, uint32_t t, uint32_t length, uint32_t k) {
    memset(m, 0, sizeof *m);
    m->p = (fedc__sa_params){.threshold = t, .length = length, .neighbours = k, .graph_seed = 0x5EC0A66};
    m->n = n;
    m->words = malloc((size_t)n * length * sizeof *m->words);
    float *x = malloc(length * sizeof *x);
    for (int i = 0; i < n; i++) {
        fedc_rng_stream st = fedc_rng_stream_make(5, 0, (uint32_t)i, 0);
        for (uint32_t j = 0; j < length; j++) x[j] = (float)(2.4 * fedc_rng_uniform_f64(st, j) - 1.2);
        CHECK_OK(fedc_secure_sum_encode(12, 1, x, length, m->words + (size_t)i * length));
        m->ids[i] = id_of(i), m->stop[i] = 4;
    }
    free(x);
    CHECK_OK(fedc__sa_server_create(&m->s, &m->p));
    for (int i = 0; i < n; i++) CHECK_OK(fedc__sa_client_create(&m->c[i], m->ids[i], &m->p));
}

static void sim_free(sim *m) {
    for (int i = 0; i < m->n; i++) fedc__sa_client_destroy(m->c[i]);
    fedc__sa_server_destroy(m->s);
    free(m->words);
}

/* The sum of the words of the clients that sent their input (stop >= 3). */
static void expected_sum(const sim *m, uint32_t *want) {
    memset(want, 0, m->p.length * sizeof *want);
    for (int i = 0; i < m->n; i++)
        if (m->stop[i] >= 3) fedc_secure_sum_add(want, m->words + (size_t)i * m->p.length, m->p.length);
}

/* Client i's answer to `in` in round r, handed to the server. */
static fedc_status step(sim *m, int i, int r, const void *in, size_t in_size) {
    void *out = NULL;
    size_t size = 0;
    fedc_status st;
    if (r == 0) st = fedc__sa_client_advertise(m->c[i], &out, &size);
    else if (r == 1) st = fedc__sa_client_share(m->c[i], in, in_size, &out, &size);
    else if (r == 2) st = fedc__sa_client_mask(m->c[i], in, in_size, m->words + (size_t)i * m->p.length, &out, &size);
    else st = fedc__sa_client_unmask(m->c[i], in, in_size, &out, &size);
    if (!st) st = fedc__sa_server_receive(m->s, out, size);
    free(out);
    return st;
}

/* Rounds from..to-1 of the protocol; the first failure's status. */
static fedc_status run_rounds(sim *m, int from, int to) {
    fedc_status st = FEDC_OK;
    for (int r = from; !st && r < to; r++) {
        void *in = NULL;
        size_t size = 0;
        if (r == 1 || r == 3) st = fedc__sa_server_message(m->s, 0, &in, &size); /* one broadcast */
        for (int i = 0; !st && i < m->n; i++) {
            if (m->stop[i] <= r) continue;
            if (r == 2) st = fedc__sa_server_message(m->s, m->ids[i], &in, &size); /* each its own */
            if (!st) st = step(m, i, r, in, size);
            if (r == 2) free(in), in = NULL;
        }
        free(in);
        if (!st && r < 3) st = fedc__sa_server_close(m->s);
    }
    return st;
}

static fedc_status run(sim *m, uint32_t *sum) {
    fedc_status st = run_rounds(m, 0, 4);
    return st ? st : fedc__sa_server_sum(m->s, sum);
}

/* The round program's i32 sum of the same clients' words (fedc_aggregate_secure_encode
 * then the sum over clients) for the clients given. */
static void program_sum(const sim *m, int length, uint32_t *out) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_type t = fedc_type_make(FEDC_F32, 1, (int64_t[]){length});
    t.placement = FEDC_CLIENTS;
    fedc_tree *x = fedc_tree_new(p);
    fedc_tree_set(p, x, "x", fedc_input(p, "x", t));
    fedc_tree_output(p, "sum", fedc_tree_sum(p, fedc_aggregate_secure_encode(p, x, 12, 1)));
    CHECK_OK(fedc_program_status(p));
    float *xs = malloc((size_t)m->n * length * sizeof *xs);
    for (int i = 0; i < m->n; i++) { /* the floats sim_init encoded */
        fedc_rng_stream st = fedc_rng_stream_make(5, 0, (uint32_t)i, 0);
        for (int j = 0; j < length; j++) xs[i * length + j] = (float)(2.4 * fedc_rng_uniform_f64(st, (uint64_t)j) - 1.2);
    }
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = m->n, .threads = 2};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    CHECK_OK(fedc_executor_bind(ex, "x", xs));
    CHECK_OK(fedc_executor_run(ex));
    const void *v = NULL;
    CHECK_OK(fedc_executor_output(ex, "sum/x", &v, NULL));
    if (v) memcpy(out, v, (size_t)length * sizeof *out);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    free(xs);
}

/* ------------------------------------------------------------ the sum -- */

/* 10 clients, t 6, 1000 words (not a multiple of a ChaCha20 block): the server's
 * sum is Σ words mod 2^32, and the round program's secure sum, bit for bit. */
static void test_sum_equals_the_quantized_sum(void) {
    enum { L = 1000 };
    sim m;
    sim_init(&m, 10, 6, L, 0);
    uint32_t sum[L], want[L], prog[L];
    CHECK_OK(run(&m, sum));
    expected_sum(&m, want);
    program_sum(&m, L, prog);
    CHECK(!memcmp(sum, want, sizeof sum));
    CHECK(!memcmp(sum, prog, sizeof sum));
    sim_free(&m);
}

/* A masked input is not the input: the server sees y_u, which differs from x_u
 * in (nearly) every word. */
static void test_inputs_are_masked(void) {
    enum { L = 64 };
    sim m;
    sim_init(&m, 4, 2, L, 0);
    CHECK_OK(run_rounds(&m, 0, 2));
    void *fwd = NULL, *y = NULL;
    size_t fs = 0, ys = 0;
    CHECK_OK(fedc__sa_server_message(m.s, m.ids[0], &fwd, &fs));
    CHECK_OK(fedc__sa_client_mask(m.c[0], fwd, fs, m.words, &y, &ys));
    fedc__sa_msg msg;
    CHECK_OK(fedc__sa_decode_as(y, ys, FEDC__SA_MASKED, &msg));
    int same = 0;
    for (int j = 0; j < L && msg.words; j++) same += msg.words[j] == m.words[j];
    CHECK(same < 3);
    fedc__sa_msg_free(&msg);
    free(fwd), free(y);
    sim_free(&m);
}

/* ------------------------------------------------------------ dropouts -- */

/* 12 clients, t 6: one never advertises, one drops after advertising, two after
 * sharing (their pairwise masks are rebuilt from their key shares), one after
 * sending its input (not revealing: the others' shares suffice). */
static void test_drops_at_every_round(void) {
    enum { L = 300 };
    sim m;
    sim_init(&m, 12, 6, L, 0);
    m.stop[0] = 0, m.stop[3] = 1, m.stop[5] = 2, m.stop[6] = 2, m.stop[11] = 3;
    uint32_t sum[L], want[L];
    CHECK_OK(run(&m, sum));
    expected_sum(&m, want);
    CHECK(!memcmp(sum, want, sizeof sum));
    const uint32_t *ids;
    CHECK_EQ_INT(fedc__sa_server_clients(m.s, 1, &ids), 11);
    CHECK_EQ_INT(fedc__sa_server_clients(m.s, 2, &ids), 10);
    CHECK_EQ_INT(fedc__sa_server_clients(m.s, 3, &ids), 8);
    sim_free(&m);
    /* each kind of drop alone */
    for (int r = 0; r < 4; r++) {
        sim_init(&m, 8, 4, L, 0);
        m.stop[2] = m.stop[7] = r;
        CHECK_OK(run(&m, sum));
        expected_sum(&m, want);
        CHECK_MSG(!memcmp(sum, want, sizeof sum), "two clients dropped after round %d: the sum differs", r);
        sim_free(&m);
    }
}

/* Fewer than t left: refused at the round that finds it, saying how many. */
static void test_too_few_refused(void) {
    enum { L = 16 };
    uint32_t sum[L];
    sim m;
    sim_init(&m, 8, 5, L, 0);
    m.stop[0] = m.stop[1] = m.stop[2] = m.stop[3] = 0; /* 4 advertise */
    CHECK_ERR(run(&m, sum), FEDC_EINVAL, "only 4 clients advertised keys, fewer than the threshold 5");
    sim_free(&m);
    sim_init(&m, 8, 5, L, 0);
    m.stop[0] = m.stop[1] = 2, m.stop[2] = m.stop[3] = 1;
    CHECK_ERR(run(&m, sum), FEDC_EINVAL, "only 4 clients sent masked inputs, fewer than the threshold 5");
    sim_free(&m);
    sim_init(&m, 8, 5, L, 0);
    m.stop[0] = m.stop[1] = m.stop[2] = 3; /* 5 survivors reveal: each survivor's seed has 4 shares */
    CHECK_ERR(run(&m, sum), FEDC_EINVAL, "has 4 shares of the 5 needed (too many clients dropped)");
    sim_free(&m);
    /* a threshold at most half the neighbourhood: refused before anything is shared */
    sim_init(&m, 8, 3, L, 0);
    CHECK_ERR(run(&m, sum), FEDC_EINVAL, "has 7 neighbours; the threshold 3 must be at most that and above half of it");
    sim_free(&m);
}

/* ------------------------------------------------------------ the rule -- */

/* Runs 6 clients (t 4) through round 2, client 5 dropping after sharing; then
 * a client is asked to unmask by `survivors` and `dropped`. */
static fedc_status ask(sim *m, const uint32_t *survivors, uint32_t ns, const uint32_t *dropped, uint32_t nd, int who,
                       fedc__sa_msg *reveal) {
    fedc__sa_msg req = {.type = FEDC__SA_UNMASK, .count = ns, .ndropped = nd, .survivors = (uint32_t *)survivors,
                        .dropped = (uint32_t *)dropped};
    void *bytes = NULL, *out = NULL;
    size_t size = 0, out_size = 0;
    CHECK_OK(fedc__sa_encode(&req, &bytes, &size));
    fedc_status st = fedc__sa_client_unmask(m->c[who], bytes, size, &out, &out_size);
    if (!st && reveal) st = fedc__sa_decode_as(out, out_size, FEDC__SA_REVEAL, reveal);
    free(bytes), free(out);
    return st;
}

static void test_both_shares_refused(void) {
    sim m;
    sim_init(&m, 6, 4, 8, 0);
    m.stop[5] = 2;
    CHECK_OK(run_rounds(&m, 0, 3));
    uint32_t s[5] = {id_of(0), id_of(1), id_of(2), id_of(3), id_of(4)}, d[1] = {id_of(5)};
    /* client 4 named both a survivor and dropped */
    uint32_t d2[2] = {id_of(4), id_of(5)};
    CHECK_ERR(ask(&m, s, 5, d2, 2, 0, NULL), FEDC_EINVAL,
              "refuses: the server asks for both the self-mask share and the mask-key share of client 17");
    /* the honest request: self-mask shares of 1..4, the key share of 5 */
    fedc__sa_msg r;
    CHECK_OK(ask(&m, s, 5, d, 1, 0, &r));
    CHECK_EQ_INT(r.count, 5);
    for (uint32_t i = 0; i < r.count; i++)
        CHECK_EQ_INT(r.shares[i].kind, r.shares[i].about == id_of(5) ? FEDC__SA_MASK_KEY : FEDC__SA_SELF_MASK);
    fedc__sa_msg_free(&r);
    /* asked again, now with client 4 dropped (its key share): refused */
    uint32_t s3[4] = {id_of(0), id_of(1), id_of(2), id_of(3)};
    CHECK_ERR(ask(&m, s3, 4, d2, 2, 0, NULL), FEDC_EINVAL, "has answered an unmask request this round already");
    /* a request that leaves out a client that shared keys, or names one that did not */
    CHECK_ERR(ask(&m, s, 5, NULL, 0, 1, NULL), FEDC_EINVAL, "leaves out client 20, which shared keys");
    uint32_t s6[6] = {id_of(0), id_of(1), id_of(2), id_of(3), id_of(4), 99};
    CHECK_ERR(ask(&m, s6, 6, d, 1, 1, NULL), FEDC_EINVAL, "names client 99");
    uint32_t without1[4] = {id_of(0), id_of(2), id_of(3), id_of(4)};
    CHECK_ERR(ask(&m, without1, 4, d, 1, 1, NULL), FEDC_EINVAL, "does not name it a survivor");
    sim_free(&m);
}

/* ---------------------------------------------------- the server's U3 -- */

/* Round 2 as over-selection has it: every client masks its input, and the
 * server takes the first `summed` (U3, its choice); the others' masked inputs
 * never reach its sum, and those clients reveal nothing (stop 3). */
static fedc_status mask_all_sum_first(sim *m, int summed) {
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < m->n; i++) {
        void *fwd = NULL, *y = NULL;
        size_t fs = 0, ys = 0;
        st = fedc__sa_server_message(m->s, m->ids[i], &fwd, &fs);
        if (!st) st = fedc__sa_client_mask(m->c[i], fwd, fs, m->words + (size_t)i * m->p.length, &y, &ys);
        if (!st && i < summed) st = fedc__sa_server_receive(m->s, y, ys);
        if (i >= summed) m->stop[i] = 3;
        free(fwd), free(y);
    }
    return st ? st : fedc__sa_server_close(m->s);
}

/* 6 clients, t 3, all mask, the server sums 4: the sum is theirs alone, the 2
 * left out are unmasked as dropped (named so, their mask keys asked for), one
 * of them asked to reveal refuses, not being a survivor, and a survivor asked
 * afterwards for a left-out client's self-mask share refuses. With t 4 the 4
 * summed are too few: each summed seed has the 3 shares of the other summed
 * (why the deployment refuses t above N - (S - K)). */
static void test_server_chooses_u3(void) {
    enum { L = 40 };
    sim m;
    sim_init(&m, 6, 3, L, 0);
    uint32_t sum[L], want[L] = {0};
    CHECK_OK(run_rounds(&m, 0, 2));
    CHECK_OK(mask_all_sum_first(&m, 4));
    const uint32_t *ids;
    CHECK_EQ_INT(fedc__sa_server_clients(m.s, 3, &ids), 4);
    void *req = NULL;
    size_t rs = 0;
    fedc__sa_msg u;
    CHECK_OK(fedc__sa_server_message(m.s, 0, &req, &rs));
    CHECK_OK(fedc__sa_decode_as(req, rs, FEDC__SA_UNMASK, &u));
    CHECK_EQ_INT(u.count, 4);
    CHECK_EQ_INT(u.ndropped, 2);
    CHECK(u.ndropped == 2 && u.dropped[0] == id_of(4) && u.dropped[1] == id_of(5));
    fedc__sa_msg_free(&u);
    void *out = NULL;
    size_t os = 0;
    CHECK_ERR(fedc__sa_client_unmask(m.c[5], req, rs, &out, &os), FEDC_EINVAL, "does not name it a survivor");
    free(req), free(out);
    CHECK_OK(run_rounds(&m, 3, 4));
    CHECK_OK(fedc__sa_server_sum(m.s, sum));
    for (int i = 0; i < 4; i++) fedc_secure_sum_add(want, m.words + (size_t)i * L, L);
    CHECK(!memcmp(sum, want, sizeof sum));
    /* the server holds client 4's masked input and now its mask key: asked next for
     * the self-mask share of client 4 (named a survivor), a survivor refuses */
    uint32_t s5[5] = {id_of(0), id_of(1), id_of(2), id_of(3), id_of(4)}, d1[1] = {id_of(5)};
    CHECK_ERR(ask(&m, s5, 5, d1, 1, 0, NULL), FEDC_EINVAL, "has answered an unmask request this round already");
    sim_free(&m);
    sim_init(&m, 6, 4, L, 0);
    CHECK_OK(run_rounds(&m, 0, 2));
    CHECK_OK(mask_all_sum_first(&m, 4));
    CHECK_OK(run_rounds(&m, 3, 4));
    CHECK_ERR(fedc__sa_server_sum(m.s, sum), FEDC_EINVAL, "has 3 shares of the 4 needed");
    sim_free(&m);
}

/* ------------------------------------------------------- bad messages -- */

/* Every prefix of a valid message is refused as cut off (or too short), and a
 * byte more after its end is refused. */
static void check_truncations(const void *msg, size_t size) {
    fedc__sa_msg m;
    int accepted = 0, unnamed = 0;
    for (size_t n = 0; n < size; n++) {
        fedc_status st = fedc__sa_decode(msg, n, &m);
        accepted += st == FEDC_OK;
        unnamed += st && !strstr(fedc_errmsg(), n < 5 ? "the header alone has 5" : "is cut off") &&
                   !strstr(fedc_errmsg(), "promises more entries than the message holds");
        if (!st) fedc__sa_msg_free(&m);
    }
    CHECK_EQ_INT(accepted, 0);
    CHECK_EQ_INT(unnamed, 0);
    uint8_t *more = malloc(size + 1);
    memcpy(more, msg, size), more[size] = 0;
    CHECK_ERR(fedc__sa_decode(more, size + 1, &m), FEDC_EPARSE, "1 bytes after its end");
    free(more);
}

static void test_truncated_messages_refused(void) {
    sim m;
    sim_init(&m, 4, 3, 5, 0);
    void *a = NULL, *k = NULL, *sh = NULL;
    size_t as = 0, ks = 0, shs = 0;
    CHECK_OK(fedc__sa_client_advertise(m.c[0], &a, &as));
    check_truncations(a, as);
    for (int i = 0; i < 4; i++) {
        void *b = NULL;
        size_t bs = 0;
        if (i) CHECK_OK(fedc__sa_client_advertise(m.c[i], &b, &bs));
        CHECK_OK(fedc__sa_server_receive(m.s, i ? b : a, i ? bs : as));
        free(b);
    }
    CHECK_OK(fedc__sa_server_close(m.s));
    CHECK_OK(fedc__sa_server_message(m.s, 0, &k, &ks));
    check_truncations(k, ks);
    CHECK_OK(fedc__sa_client_share(m.c[0], k, ks, &sh, &shs));
    check_truncations(sh, shs);
    free(a), free(k), free(sh);
    sim_free(&m);
}

/* Fields out of range, named. */
static void test_malformed_fields_refused(void) {
    fedc__sa_msg m;
    uint8_t zero_id[5 + 68] = {'F', 'S', 'A', '1', FEDC__SA_ADVERTISE};
    CHECK_ERR(fedc__sa_decode(zero_id, sizeof zero_id, &m), FEDC_EPARSE, "advertise message: id is 0");
    uint8_t bad_type[5 + 68] = {'F', 'S', 'A', '1', 9};
    CHECK_ERR(fedc__sa_decode(bad_type, sizeof bad_type, &m), FEDC_EPARSE, "unknown message type 9");
    CHECK_ERR(fedc__sa_decode("FDCW\1", 5, &m), FEDC_EPARSE, "no \"FSA1\" magic");
    fedc__sa_msg u = {.type = FEDC__SA_UNMASK, .count = 3, .survivors = (uint32_t[]){4, 9, 9}};
    void *b = NULL;
    size_t n = 0;
    CHECK_OK(fedc__sa_encode(&u, &b, &n));
    CHECK_ERR(fedc__sa_decode(b, n, &m), FEDC_EPARSE, "survivors of entry 2 is not above the one before");
    free(b);
    fedc__sa_share sh = {.about = 3, .kind = 2};
    fedc__sa_msg r = {.type = FEDC__SA_REVEAL, .id = 1, .count = 1, .shares = &sh};
    CHECK_OK(fedc__sa_encode(&r, &b, &n));
    CHECK_ERR(fedc__sa_decode(b, n, &m), FEDC_EPARSE, "kind of entry 0 is neither 0 (self-mask) nor 1");
    free(b);
    sh.kind = 1, sh.y[3] = FEDC__SA_PRIME;
    CHECK_OK(fedc__sa_encode(&r, &b, &n));
    CHECK_ERR(fedc__sa_decode(b, n, &m), FEDC_EPARSE, "share of entry 0 is not below the field's prime");
    free(b);
    fedc__sa_msg keys = {.type = FEDC__SA_KEYS, .params = {.threshold = 2, .length = 4, .neighbours = 3}};
    CHECK_OK(fedc__sa_encode(&keys, &b, &n));
    CHECK_ERR(fedc__sa_decode(b, n, &m), FEDC_EPARSE, "3 neighbours; SecAgg+ takes an even number");
    free(b);
    uint8_t big[5 + 8] = {'F', 'S', 'A', '1', FEDC__SA_MASKED, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f};
    CHECK_ERR(fedc__sa_decode(big, sizeof big, &m), FEDC_EPARSE, "count is above the limit");
    big[12] = 0, big[11] = 0, big[10] = 0, big[9] = 2;
    CHECK_ERR(fedc__sa_decode(big, sizeof big, &m), FEDC_EPARSE, "count promises more entries than the message holds");
}

/* Forgeries: a flipped ciphertext byte, a keys message with other parameters or
 * without the client's own keys, a message of the wrong round, a forged share
 * at the server. */
static void test_forged_messages_refused(void) {
    sim m;
    sim_init(&m, 5, 3, 8, 0);
    CHECK_OK(run_rounds(&m, 0, 1));
    void *k = NULL, *sh = NULL, *f = NULL;
    size_t ks = 0, shs = 0, fs = 0;
    CHECK_OK(fedc__sa_server_message(m.s, 0, &k, &ks));
    fedc__sa_msg km;
    CHECK_OK(fedc__sa_decode(k, ks, &km));
    km.params.threshold = 4;
    void *b = NULL;
    size_t n = 0;
    CHECK_OK(fedc__sa_encode(&km, &b, &n));
    CHECK_ERR(fedc__sa_client_share(m.c[0], b, n, &sh, &shs), FEDC_EINVAL, "parameters");
    free(b);
    km.params.threshold = 3, km.keys[0].mask_pk[0] ^= 1; /* client 0's key swapped */
    CHECK_OK(fedc__sa_encode(&km, &b, &n));
    CHECK_ERR(fedc__sa_client_share(m.c[0], b, n, &sh, &shs), FEDC_EINVAL, "does not hold its keys as it advertised them");
    free(b);
    fedc__sa_msg_free(&km);
    CHECK_ERR(fedc__sa_client_mask(m.c[0], k, ks, m.words, &sh, &shs), FEDC_EINVAL, "asked to mask its input in round 2");
    for (int i = 0; i < 5; i++) {
        CHECK_OK(fedc__sa_client_share(m.c[i], k, ks, &sh, &shs));
        CHECK_OK(fedc__sa_server_receive(m.s, sh, shs));
        if (i == 1) CHECK_ERR(fedc__sa_server_receive(m.s, sh, shs), FEDC_EINVAL, "it sent its shares already");
        free(sh);
    }
    CHECK_ERR(fedc__sa_server_receive(m.s, k, ks), FEDC_EPARSE, "a keys message where a shares message belongs");
    CHECK_OK(fedc__sa_server_close(m.s));
    CHECK_OK(fedc__sa_server_message(m.s, m.ids[0], &f, &fs));
    uint8_t *bad = malloc(fs);
    memcpy(bad, f, fs);
    bad[fs - 3] ^= 0x40; /* inside the last ciphertext's tag */
    CHECK_ERR(fedc__sa_client_mask(m.c[0], bad, fs, m.words, &sh, &shs), FEDC_EINVAL,
              "the shares from client 17 do not decrypt: forged or corrupted");
    free(bad);
    free(k), free(f);
    sim_free(&m);
    /* a forged key share at the server: the rebuilt key is not the advertised one */
    sim_init(&m, 6, 4, 8, 0);
    m.stop[5] = 2;
    CHECK_OK(run_rounds(&m, 0, 3));
    void *u = NULL, *rv = NULL;
    size_t us = 0, rs = 0;
    CHECK_OK(fedc__sa_server_message(m.s, 0, &u, &us));
    for (int i = 0; i < 5; i++) {
        CHECK_OK(fedc__sa_client_unmask(m.c[i], u, us, &rv, &rs));
        fedc__sa_msg r;
        CHECK_OK(fedc__sa_decode(rv, rs, &r));
        if (i == 4) r.shares[r.count - 1].y[0] ^= 1; /* its share of client 5's key */
        free(rv);
        CHECK_OK(fedc__sa_encode(&r, &rv, &rs));
        fedc__sa_msg_free(&r);
        CHECK_OK(fedc__sa_server_receive(m.s, rv, rs));
        free(rv);
    }
    uint32_t sum[8];
    CHECK_ERR(fedc__sa_server_sum(m.s, sum), FEDC_EINVAL, "client 20's mask key: shamir: share 4");
    free(u);
    sim_free(&m);
}

/* ------------------------------------------------------------ SecAgg+ -- */

/* 100 clients, k = 14 neighbours (~2 log2 n), t 8: a symmetric graph of k
 * neighbours each; with 5 clients dropped after sharing and 3 after their input,
 * the same sum; a client sends k ciphertexts, not n - 1. */
static void test_sparse_graph(void) {
    enum { L = 200, N = 100, K = 14 };
    sim m;
    sim_init(&m, N, 8, L, K);
    uint32_t ids[N], nb[N][N], cnt[N];
    for (int i = 0; i < N; i++) ids[i] = id_of(i);
    int asym = 0, wrong = 0;
    for (int i = 0; i < N; i++) {
        CHECK_OK(fedc__sa_neighbours(&m.p, ids, N, ids[i], nb[i], &cnt[i]));
        wrong += cnt[i] != K;
    }
    for (int i = 0; i < N; i++)
        for (uint32_t j = 0; j < cnt[i]; j++) asym += !fedc__sa_has(nb[(nb[i][j] - 5) / 3], cnt[(nb[i][j] - 5) / 3], ids[i]);
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(asym, 0);
    for (int i = 0; i < 5; i++) m.stop[7 + 19 * i] = 2;
    for (int i = 0; i < 3; i++) m.stop[3 + 31 * i] = 3;
    uint32_t sum[L], want[L];
    CHECK_OK(run(&m, sum));
    expected_sum(&m, want);
    CHECK(!memcmp(sum, want, sizeof sum));
    sim_free(&m);
    /* the shares message of one client: K ciphertexts */
    sim_init(&m, N, 8, L, K);
    CHECK_OK(run_rounds(&m, 0, 1));
    void *k = NULL, *sh = NULL;
    size_t ks = 0, shs = 0;
    CHECK_OK(fedc__sa_server_message(m.s, 0, &k, &ks));
    CHECK_OK(fedc__sa_client_share(m.c[0], k, ks, &sh, &shs));
    fedc__sa_msg msg;
    CHECK_OK(fedc__sa_decode(sh, shs, &msg));
    CHECK_EQ_INT(msg.count, K);
    fedc__sa_msg_free(&msg);
    free(k), free(sh);
    sim_free(&m);
}

int main(int argc, char **argv) {
    if (sodium_init() < 0) return 1;
    static const fedc_test tests[] = {
        {"the unmasked sum is the quantized sum, bit for bit", test_sum_equals_the_quantized_sum},
        {"the server sees masked inputs", test_inputs_are_masked},
        {"clients dropped after each round are recovered", test_drops_at_every_round},
        {"fewer than t clients: refused, saying so", test_too_few_refused},
        {"an honest client never reveals both shares of one client", test_both_shares_refused},
        {"the server chooses U3: the others' masked inputs are left out", test_server_chooses_u3},
        {"truncated messages refused", test_truncated_messages_refused},
        {"malformed fields refused, named", test_malformed_fields_refused},
        {"forged messages refused", test_forged_messages_refused},
        {"SecAgg+: the sparse graph gives the same sum", test_sparse_graph},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
