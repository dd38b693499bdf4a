/* The server's side of secure aggregation in a deployment (secure.h): one
 * SecAgg server (secagg_server.c) per exchange whose aggregation sums i32
 * words, its rounds opened and closed around the collection of the reports.
 *
 * The reports' masked words still go through the collection (collect.c) in
 * slot order with the rest of each report, so the aggregation's i32 sums hold
 * Σ y_u mod 2^32; the unmasked sum replaces them before server_result. The
 * order of a sum modulo 2^32 does not change its bits (integer addition is
 * associative and commutative), and the float values still go in slot order,
 * so a round has fedc train's bits over the clients whose reports were added.
 *
 * The server chooses U3, the masked inputs it sums: those of the reports the
 * collection adds, handed to SecAgg as it adds them (its hook), so with
 * over-selection the first `commit` in slot order. A masked input that came but
 * is not added never reaches SecAgg: its client is in U2 \ U3, unmasked as a
 * dropped one (its mask key rebuilt, its pairwise masks taken off the sum), its
 * self-mask seed never asked for, so its input stays hidden. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/fault.h"
#include "deploy/secure.h"

struct fedc__secure {
    const fedc_deployment_form *form;
    const int64_t *sampled; /* the round's clients, by slot */
    fedc__collect *collect; /* the exchange's: a slot refused in the secure round is given up there */
    int threshold, neighbours, slots, commit; /* commit < slots: over-selection */
    double timeout; /* the heartbeat timeout: rounds 0, 1 and 3 last at most that */
    FILE *log;
    char name[64];  /* its log lines' prefix */
    /* the exchange */
    bool active;
    int round, exchange, stage; /* stage: the SecAgg round open (0 to 3); 4: the sum is taken */
    uint64_t session;
    double opened;     /* when the open round opened; round 0: when its first client advertised (0: none yet) */
    fedc__sa_params p;
    fedc__sa_server *sa;
    int idx[FEDC__SECURE_MAX_INPUTS], nidx;
    uint8_t *done;     /* per slot: the rounds it has finished (its last message taken) */
    uint32_t *words;   /* a report's words; then the sum */
    void *cached;      /* the keys or unmask message (the same for every client) */
    size_t ncached;
    int cached_stage;
    char field[160], failed[400];
    uint32_t counts[4]; /* |U1|, |U2|, |U3|, reveals */
    int left_out;       /* masked inputs that came but are not in U3 (over-selected) */
};

fedc_status fedc__secure_inputs(const fedc_program *agg, int *idx, int *n, uint64_t *length) {
    *n = 0, *length = 0;
    for (int i = 0; i < fedc_program_num_inputs(agg); i++) {
        fedc_value v = fedc_program_input(agg, i);
        fedc_type t = fedc_value_type(agg, v);
        if (t.dtype != FEDC_I32) continue;
        for (int u = 0; u < agg->n; u++) {
            const fedc__node *d = fedc__node_at(agg, u);
            for (int k = 0; k < d->nin; k++)
                if (d->in[k] == v && d->op != FEDC_OP_SUM)
                    return fedc_error(FEDC_EUNSUPPORTED, "secure aggregation: the aggregation uses its i32 input \"%s\" "
                                      "other than in a sum over the clients", fedc_program_input_name(agg, i));
        }
        if (*n == FEDC__SECURE_MAX_INPUTS)
            return fedc_error(FEDC_EUNSUPPORTED, "secure aggregation: more than %d i32 inputs", FEDC__SECURE_MAX_INPUTS);
        idx[(*n)++] = i;
        *length += (uint64_t)fedc_type_count(&t);
    }
    if (*length > FEDC__SA_MAX_LENGTH)
        return fedc_error(FEDC_EUNSUPPORTED, "secure aggregation: %llu words a client, more than the %d it takes",
                          (unsigned long long)*length, FEDC__SA_MAX_LENGTH);
    return FEDC_OK;
}

/* A client's neighbours when every client of the slots takes part. */
static int full_neighbourhood(int slots, int k) { return k > 0 && k < slots - 1 ? k : slots - 1; }

/* The least summed neighbours a summed client has when `slots` are selected
 * and `commit` summed: every one left out may be its neighbour. */
static int least_summed(int slots, int commit, int k) { return full_neighbourhood(slots, k) - (slots - commit); }

/* With over-selection only the `commit` summed clients (U3) reveal shares, and a
 * summed client's self-mask seed is rebuilt from the shares its summed
 * neighbours hold (a client holds none of its own): as few as nb - (slots -
 * commit) when every client left out is its neighbour. So t must be at most
 * that, on top of above half of nb; each summed client is then unmasked
 * whichever reports are added, once they all reveal. */
static fedc_status over_selection_fits(int threshold, int k, int slots, int commit) {
    int nb = full_neighbourhood(slots, k), least = least_summed(slots, commit, k);
    if (commit == slots || threshold <= least) return FEDC_OK;
    if (least <= nb / 2) { /* no threshold fits: the most clients a round with which one does */
        int most = slots - 1;
        while (most > commit && least_summed(most, commit, k) <= full_neighbourhood(most, k) / 2) most--;
        return fedc_error(FEDC_EINVAL, "server: --secure-agg with over-selection: a round selects %d clients and sums "
                          "%d, so a summed client may have only %d summed neighbours (of %d) whose shares rebuild its "
                          "self-mask, not above half of its neighbours as the threshold must be: select at most %d "
                          "clients a round (a smaller --over-select)", slots, commit, least, nb, most);
    }
    return fedc_error(FEDC_EINVAL, "server: --secure-agg %d with over-selection: a round selects %d clients and sums %d, "
                      "so a summed client may have only %d summed neighbours (of %d) whose shares rebuild its self-mask; "
                      "the threshold must be at most that and above half of %d (%d to %d)", threshold, slots, commit,
                      least, nb, nb, nb / 2 + 1, least);
}

fedc_status fedc__secure_create(fedc__secure **out, const fedc_deployment_form *form, const fedc__secure_setup *o) {
    int threshold = o->threshold, neighbours = o->neighbours, slots = o->slots, commit = o->commit;
    *out = NULL;
    bool any = false;
    for (int e = 0; e < fedc_deployment_form_exchanges(form); e++) {
        int idx[FEDC__SECURE_MAX_INPUTS], n;
        uint64_t length;
        fedc_status st = fedc__secure_inputs(fedc_deployment_form_phase(form, e, FEDC_PHASE_AGGREGATION), idx, &n, &length);
        if (st) return st;
        any |= length > 0;
    }
    if (!any)
        return fedc_error(FEDC_EINVAL, "server: --secure-agg needs a plan built with --secure-sum BITS: this plan's "
                          "aggregation sums no u32 words");
    if (neighbours < 0 || neighbours % 2)
        return fedc_error(FEDC_EINVAL, "server: --secure-neighbours %d must be even (a ring's both sides), 0 for all",
                          neighbours);
    int nb = full_neighbourhood(slots, neighbours);
    if (threshold == 0) threshold = nb / 2 + 1;
    if (slots >= FEDC__SA_MAX_CLIENTS)
        return fedc_error(FEDC_EINVAL, "server: --secure-agg takes at most %d clients a %s, not %d",
                          FEDC__SA_MAX_CLIENTS - 1, o->per, slots);
    if (slots < 2)
        return fedc_error(FEDC_EINVAL, "server: --secure-agg needs at least 2 clients a %s, not %d", o->per, slots);
    if (threshold < 1 || threshold > nb || 2 * threshold <= nb)
        return fedc_error(FEDC_EINVAL, "server: --secure-agg %d: with %d clients a %s each has %d neighbours, and the "
                          "threshold must be above half of that and at most it (%d to %d)", threshold, slots, o->per, nb,
                          nb / 2 + 1, nb);
    fedc_status st = over_selection_fits(threshold, neighbours, slots, commit);
    if (st) return st;
    fedc__secure *x = fedc_calloc(1, sizeof *x);
    if (x) x->done = fedc_calloc((size_t)slots, 1);
    if (!x || !x->done) {
        fedc_free(x);
        return fedc_error(FEDC_ENOMEM, "server: out of memory");
    }
    x->form = form, x->threshold = threshold, x->neighbours = neighbours, x->slots = slots, x->commit = commit;
    x->timeout = o->heartbeat_timeout, x->log = o->log;
    snprintf(x->name, sizeof x->name, "%s", o->name);
    *out = x;
    return FEDC_OK;
}

static void end_exchange(fedc__secure *x) {
    fedc__sa_server_destroy(x->sa);
    fedc_free(x->words), fedc_free(x->cached);
    x->sa = NULL, x->words = NULL, x->cached = NULL, x->active = false;
}

void fedc__secure_destroy(fedc__secure *x) {
    if (!x) return;
    end_exchange(x);
    fedc_free(x->done), fedc_free(x);
}

/* The collection's hook: a report it adds, whose masked words go into U3. */
static fedc_status add_masked(void *ctx, int slot, const void *const *values) {
    fedc__secure *x = ctx;
    if (!x->active || x->failed[0]) return FEDC_OK;
    const fedc_program *agg = fedc_deployment_form_phase(x->form, x->exchange, FEDC_PHASE_AGGREGATION);
    size_t at = 0;
    for (int i = 0; i < x->nidx; i++) {
        fedc_type t = fedc_value_type(agg, fedc_program_input(agg, x->idx[i]));
        size_t n = (size_t)fedc_type_count(&t);
        memcpy(x->words + at, values[x->idx[i]], n * sizeof *x->words);
        at += n;
    }
    fedc__sa_msg m = {.type = FEDC__SA_MASKED, .id = (uint32_t)slot + 1, .count = x->p.length, .words = x->words};
    void *bytes = NULL;
    size_t nbytes = 0;
    fedc_status st = fedc__sa_encode(&m, &bytes, &nbytes);
    if (!st) st = fedc__sa_server_receive(x->sa, bytes, nbytes);
    fedc_free(bytes);
    return st;
}

fedc_status fedc__secure_begin(fedc__secure *x, fedc__collect *c, int round, int exchange, uint64_t seed,
                               const int64_t *sampled, double now) {
    x->sampled = sampled, x->collect = c;
    end_exchange(x);
    const fedc_program *agg = fedc_deployment_form_phase(x->form, exchange, FEDC_PHASE_AGGREGATION);
    uint64_t length;
    fedc_status st = fedc__secure_inputs(agg, x->idx, &x->nidx, &length);
    (void)now;
    x->round = round, x->exchange = exchange, x->stage = 0, x->opened = 0, x->session++;
    x->failed[0] = x->field[0] = '\0', x->cached_stage = -1;
    memset(x->counts, 0, sizeof x->counts);
    x->left_out = 0;
    memset(x->done, 0, (size_t)x->slots);
    if (st || length == 0) return st;
    x->p = (fedc__sa_params){(uint32_t)x->threshold, (uint32_t)length, (uint32_t)x->neighbours,
                             seed ^ (UINT64_C(0x9e3779b97f4a7c15) * (x->session + 1))};
    st = fedc__sa_server_create(&x->sa, &x->p);
    if (!st && !(x->words = fedc_malloc(length * sizeof *x->words))) st = fedc_error(FEDC_ENOMEM, "server: out of memory");
    if (st) return st;
    fedc__collect_on_add(c, add_masked, x);
    snprintf(x->field, sizeof x->field, "%u %u %llu %llu %u", x->p.threshold, x->p.neighbours,
             (unsigned long long)x->p.graph_seed, (unsigned long long)x->session, x->p.length);
    x->active = true;
    return FEDC_OK;
}

bool fedc__secure_active(const fedc__secure *x) { return x && x->active; }
const char *fedc__secure_field(const fedc__secure *x) { return x && x->active ? x->field : ""; }
bool fedc__secure_settled(const fedc__secure *x) { return !x || !x->active || x->failed[0] || x->stage == 4; }
const char *fedc__secure_failed(const fedc__secure *x) { return x && x->active && x->failed[0] ? x->failed : NULL; }

/* The secure round cannot go on (fewer than t at some round): logged. */
static void fail(fedc__secure *x, const char *why) {
    snprintf(x->failed, sizeof x->failed, "%s", why);
    fprintf(x->log, "%s: round %d: secure aggregation failed: %s\n", x->name, x->round + 1, why);
}

/* ------------------------------------------------------------ requests -- */

static void answer(fedc__secure_answer *a, fedc__msg_type type, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void answer(fedc__secure_answer *a, fedc__msg_type type, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->reason, sizeof a->reason, fmt, ap);
    va_end(ap);
    a->type = type;
}

void fedc__secure_answer_free(fedc__secure_answer *a) {
    fedc_free(a->bytes);
    a->bytes = NULL;
}

/* Test hook (core/fault.h): FEDC_FAULT=secagg-forge-unmask makes the
 * server ask for the self-mask seed and the mask key of one survivor at once,
 * as a server that wants its input would; an honest client refuses. */
static fedc_status forge_unmask(void **msg, size_t *size) {
    fedc__sa_msg m;
    if (!fedc__fault_on(FEDC__FAULT_SECAGG_FORGE_UNMASK) || fedc__sa_decode(*msg, *size, &m)) return FEDC_OK;
    uint32_t *d = fedc_malloc(((size_t)m.ndropped + 1) * sizeof *d);
    fedc_status st = d ? FEDC_OK : fedc_error(FEDC_ENOMEM, "server: out of memory");
    if (!st && m.count) {
        d[0] = m.survivors[0]; /* lowest: the list stays ascending unless a lower one dropped */
        memcpy(d + 1, m.dropped, (size_t)m.ndropped * sizeof *d);
        fedc_free(m.dropped);
        m.dropped = d, m.ndropped++, d = NULL;
        fedc_free(*msg);
        st = fedc__sa_encode(&m, msg, size);
    }
    fedc_free(d);
    fedc__sa_msg_free(&m);
    return st;
}

/* The server's message opening round r for slot's client. */
static void server_message(fedc__secure *x, int slot, int r, fedc__secure_answer *a) {
    const uint32_t *ids;
    uint32_t n = fedc__sa_server_clients(x->sa, r, &ids);
    if (r == 3 && x->done[slot] == 3 && !fedc__sa_has(ids, n, (uint32_t)slot + 1)) {
        answer(a, FEDC__MSG_REJECT, "this client's masked input is not in the sum (the round adds the first %d reports "
               "in slot order): it reveals nothing", x->commit);
        return;
    }
    if (!fedc__sa_has(ids, n, (uint32_t)slot + 1)) {
        answer(a, FEDC__MSG_REJECT, "this client is not among those of the secure round's step %d", r);
        return;
    }
    fedc_status st = FEDC_OK;
    if (r == 2) { /* its own forwarded shares */
        st = fedc__sa_server_message(x->sa, (uint32_t)slot + 1, &a->bytes, &a->size);
    } else if (x->cached_stage != r) {
        fedc_free(x->cached);
        x->cached = NULL;
        st = fedc__sa_server_message(x->sa, 0, &x->cached, &x->ncached);
        if (!st && r == 3) st = forge_unmask(&x->cached, &x->ncached);
        x->cached_stage = st ? -1 : r;
    }
    if (!st && r != 2 && !(a->bytes = fedc_malloc(x->ncached))) st = fedc_error(FEDC_ENOMEM, "server: out of memory");
    if (!st && r != 2) memcpy(a->bytes, x->cached, a->size = x->ncached);
    if (st) answer(a, FEDC__MSG_REJECT, "the server cannot make the message of step %d: %s", r, fedc_errmsg());
    else a->type = FEDC__MSG_SECAGG_REPLY;
}

/* A client's message of round r (0, 1 or 3), from slot's client only. */
static void client_message(fedc__secure *x, int slot, int r, const fedc_tensor_entry *e, fedc__secure_answer *a) {
    fedc__sa_msg m;
    size_t size = e->type.rank == 1 ? (size_t)e->type.dims[0] : 0;
    if (e->type.dtype != FEDC_U8 || e->type.rank != 1) {
        answer(a, FEDC__MSG_REJECT, "the secagg tensor is not a vector of bytes");
        return;
    }
    if (fedc__sa_decode(e->data, size, &m)) {
        answer(a, FEDC__MSG_REJECT, "%s", fedc_errmsg());
        return;
    }
    uint32_t id = m.id;
    fedc__sa_msg_free(&m);
    if (id != (uint32_t)slot + 1) {
        answer(a, FEDC__MSG_REJECT, "a secagg message of client %u from the client of slot %d (id %d)", id, slot, slot + 1);
        return;
    }
    if (fedc__sa_server_receive(x->sa, e->data, size)) {
        answer(a, FEDC__MSG_REJECT, "%s", fedc_errmsg());
        return;
    }
    x->done[slot] = (uint8_t)(r + 1);
    if (r == 0 && x->opened == 0) x->opened = fedc_seconds();
    a->type = FEDC__MSG_ACK;
}

/* The answer to a request; a->current when it is of the open session. */
static void request(fedc__secure *x, int slot, const fedc__msg *m, fedc__secure_answer *a) {
    int64_t round, exchange, step;
    uint64_t session = strtoull(fedc__msg_field(m, "session"), NULL, 10);
    fedc_tensor_entry e;
    if (fedc__msg_int(m, "round", 0, INT32_MAX, &round) || fedc__msg_int(m, "exchange", 0, 1000, &exchange) ||
        fedc__msg_int(m, "step", 0, 3, &step)) {
        answer(a, FEDC__MSG_REJECT, "%s", fedc_errmsg());
        return;
    }
    if (!x->active || round != x->round || exchange != x->exchange || session != x->session) {
        answer(a, FEDC__MSG_REJECT, "no secure round %lld.%lld (session %llu) is open", (long long)round + 1,
               (long long)exchange, (unsigned long long)session);
        return;
    }
    a->current = true;
    bool sends = !fedc_safetensors_find(m->body, "secagg", &e);
    if (x->failed[0]) {
        answer(a, FEDC__MSG_REJECT, "the secure round failed: %s", x->failed);
    } else if (!sends && (step < 1 || x->stage < step)) {
        a->retry_ms = 20 + x->slots / 4;
        answer(a, FEDC__MSG_WAIT, "the secure round's step %lld is not open yet", (long long)step);
    } else if (!sends && x->stage > step) {
        answer(a, FEDC__MSG_REJECT, "the secure round is past step %lld", (long long)step);
    } else if (!sends) {
        server_message(x, slot, (int)step, a);
    } else if (step == 2) {
        answer(a, FEDC__MSG_REJECT, "step 2's masked input comes as the report");
    } else if (step != x->stage) {
        answer(a, FEDC__MSG_REJECT, "a message of the secure round's step %lld, but step %d is open", (long long)step,
               x->stage);
    } else {
        client_message(x, slot, (int)step, &e, a);
    }
}

void fedc__secure_request(fedc__secure *x, int slot, const fedc__msg *m, fedc__secure_answer *a) {
    memset(a, 0, sizeof *a);
    request(x, slot, m, a);
    /* refused within the open session, the client cannot take part any more: its slot is given up
     * (else it would be sent its task again); a stale request leaves the slot alone */
    if (a->type == FEDC__MSG_REJECT && a->current && fedc__collect_state(x->collect, slot) == FEDC__SLOT_OPEN &&
        fedc__collect_drop(x->collect, slot))
        fprintf(x->log, "%s: round %d: %s\n", x->name, x->round + 1, fedc_errmsg());
}

const char *fedc__secure_admit(fedc__secure *x, int slot, char *why, size_t size) {
    if (!x || !x->active) return NULL;
    if (x->failed[0]) return snprintf(why, size, "the secure round failed: %s", x->failed), why;
    if (x->stage != 2) return snprintf(why, size, "a report at the secure round's step %d, not 2", x->stage), why;
    const uint32_t *ids;
    uint32_t n = fedc__sa_server_clients(x->sa, 2, &ids);
    if (!fedc__sa_has(ids, n, (uint32_t)slot + 1))
        return snprintf(why, size, "a masked input from slot %d, which did not share its keys in step 1", slot), why;
    x->done[slot] = 3;
    return NULL;
}

/* -------------------------------------------------------------- timers -- */

/* Every client of the open round has sent its message. */
static bool all_in(const fedc__secure *x) {
    const uint32_t *ids;
    uint32_t n = x->stage == 0 ? (uint32_t)x->slots : fedc__sa_server_clients(x->sa, x->stage, &ids);
    for (uint32_t i = 0; i < n; i++) {
        int slot = x->stage == 0 ? (int)i : (int)ids[i] - 1;
        if (x->done[slot] <= x->stage) return false;
    }
    return true;
}

/* Gives up in c the open slots outside round r's set (all when r < 0). */
static fedc_status drop_outside(fedc__secure *x, fedc__collect *c, int r) {
    const uint32_t *ids = NULL;
    uint32_t n = r < 0 ? 0 : fedc__sa_server_clients(x->sa, r, &ids);
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && i < x->slots; i++)
        if (!fedc__sa_has(ids, n, (uint32_t)i + 1) && fedc__collect_state(c, i) == FEDC__SLOT_OPEN)
            st = fedc__collect_drop(c, i);
    return st;
}

static void close_last(fedc__secure *x) {
    for (int i = 0; i < x->slots; i++) x->counts[3] += x->done[i] == 4;
    if (fedc__sa_server_sum(x->sa, x->words)) fail(x, fedc_errmsg());
    else x->stage = 4;
}

fedc_status fedc__secure_tick(fedc__secure *x, fedc__collect *c, double now) {
    if (!x || !x->active || x->failed[0] || x->stage == 2 || x->stage == 4) return FEDC_OK;
    if (!all_in(x) && (x->opened == 0 || now - x->opened < x->timeout)) return FEDC_OK;
    if (x->stage == 3) {
        close_last(x);
        return FEDC_OK;
    }
    if (fedc__sa_server_close(x->sa)) {
        fail(x, fedc_errmsg());
        return drop_outside(x, c, -1);
    }
    x->stage++, x->opened = now;
    const uint32_t *ids;
    x->counts[x->stage - 1] = fedc__sa_server_clients(x->sa, x->stage, &ids);
    return drop_outside(x, c, x->stage);
}

void fedc__secure_close_masked(fedc__secure *x, double now) {
    if (!x || !x->active || x->failed[0]) return;
    if (x->stage < 2) { /* the deadline came first */
        char why[96];
        snprintf(why, sizeof why, "the collection ended with step %d of 3 still open", x->stage);
        fail(x, why);
        return;
    }
    if (fedc__sa_server_close(x->sa)) {
        fail(x, fedc_errmsg());
        return;
    }
    const uint32_t *ids;
    x->counts[2] = fedc__sa_server_clients(x->sa, 3, &ids);
    x->stage = 3, x->opened = now;
    for (int i = 0; i < x->slots; i++) x->left_out += x->done[i] == 3 && !fedc__sa_has(ids, x->counts[2], (uint32_t)i + 1);
    if (x->left_out)
        fprintf(x->log, "%s: round %d: secure aggregation sums %u masked inputs; %d more came and are left out "
                "(over-selected): unmasked as dropped, their inputs hidden\n", x->name, x->round + 1, x->counts[2],
                x->left_out);
}

const uint32_t *fedc__secure_sum_of(const fedc__secure *x, int j) {
    if (!x || !x->active || x->stage != 4) return NULL;
    const fedc_program *agg = fedc_deployment_form_phase(x->form, x->exchange, FEDC_PHASE_AGGREGATION);
    const fedc__node *d = fedc__node_at(agg, fedc_program_output_value(agg, j));
    size_t at = 0;
    for (int i = 0; i < x->nidx; i++) {
        fedc_value in = fedc_program_input(agg, x->idx[i]);
        if (d->op == FEDC_OP_SUM && d->in[0] == in) return x->words + at;
        fedc_type t = fedc_value_type(agg, in);
        at += (size_t)fedc_type_count(&t);
    }
    return NULL;
}

fedc_status fedc__secure_end(fedc__secure *x, fedc_deployment_run *run) {
    if (!x || !x->active) return FEDC_OK;
    const fedc_program *agg = fedc_deployment_form_phase(x->form, x->exchange, FEDC_PHASE_AGGREGATION);
    for (int j = 0; j < fedc_program_num_outputs(agg); j++) {
        const uint32_t *sum = fedc__secure_sum_of(x, j);
        if (!sum) continue;
        const char *name = fedc_program_output_name(agg, j);
        fedc_type t = fedc_value_type(agg, fedc_program_output_value(agg, j));
        void *buf = fedc__deployment_run_buffer(run, name, false, NULL);
        if (!buf) buf = fedc__deployment_run_buffer(run, name, true, NULL);
        if (!buf) return fedc_error(FEDC_EINTERNAL, "%s: the aggregation's \"%s\" has no buffer", x->name, name);
        memcpy(buf, sum, (size_t)fedc_type_count(&t) * sizeof *sum);
    }
    return FEDC_OK;
}

void fedc__secure_summary(const fedc__secure *x, FILE *f) {
    if (!x || !x->active) return;
    fprintf(f, "{\"threshold\": %d, \"neighbours\": %d, \"advertised\": %u, \"shared\": %u, \"masked\": %u, "
            "\"masked_left_out\": %d, \"revealed\": %u, \"unmasked\": %s, \"survivors\": [", x->threshold, x->neighbours,
            x->counts[0], x->counts[1], x->counts[2], x->left_out, x->counts[3], x->stage == 4 ? "true" : "false");
    const uint32_t *ids;
    uint32_t n = x->stage >= 3 ? fedc__sa_server_clients(x->sa, 3, &ids) : 0;
    for (uint32_t i = 0; i < n; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)x->sampled[ids[i] - 1]);
    fprintf(f, "]}");
}

void fedc__secure_metrics(const fedc__secure *x, FILE *f) {
    if (!x || !x->active) return;
    fprintf(f, "\"secure_agg\": ");
    fedc__secure_summary(x, f);
    fprintf(f, ", ");
}
