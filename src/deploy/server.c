/* The deployment's server (fedc/deploy.h): a plan's server phases run on a
 * server's fedc_deployment_run (no clients values), and the clients' reports
 * streamed into its aggregation in slot order (collect.h). A round, for each
 * exchange of the form:
 *
 *     server_prepare          -> the values a task carries (the broadcast's)
 *     answer requests until every slot is settled or the deadline passes:
 *         check-in  -> plan | task (a selected client's open slot) | held until
 *                      there is one (a client of this round or the next) | wait
 *                      (come back after retry_ms) | done
 *         heartbeat -> noted: a client with a task not heard from for the
 *                      heartbeat timeout is given up
 *         report    -> checked (token, plan, round, slot, names, types, finite)
 *                      and added in slot order (or kept until its turn) -> ack;
 *                      else reject, logged
 *     the aggregates; server_result
 *
 * then the new server state is checkpointed atomically and a metrics row
 * written. Which clients a round selects, and in which slots, is fedc train's
 * sample (seed, round, population), so a round in which every client reports
 * has the simulation's bits whatever order the reports arrive in. A plan's warm
 * start runs once before round 1 of a fresh job, as round 0 on its own form,
 * run and collection (warm.h). Every wait is bounded: a receive waits 50 ms, a
 * held request what its client allows (held.h), a round until its deadline. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "deploy/held.h"
#include "fedc/secure_sum.h"

enum { MAX_ATTEMPTS = 3, RECV_MS = 50, MAX_HOLD_MS = 3600000 };

void fedc_server_defaults(fedc_server_options *o) {
    memset(o, 0, sizeof *o);
    o->rounds = 1, o->clients_per_round = 1;
    o->report_deadline = 600;
    o->min_reports = 1;
    o->over_select = 1;
    o->heartbeat = 0; /* a quarter of the heartbeat timeout */
    o->heartbeat_timeout = 30;
    o->reorder_window = 16;
    o->max_held = 4096;
    o->max_message = (size_t)256 << 20;
    o->threads = 1;
    o->linger = 2;
}

/* ---------------------------------------------------------- replies -- */

bool fedc__server_reply_to(server *s, const fedc__req *to, fedc__msg_type type, const fedc_metadata_entry *f, int nf,
                           const fedc_tensor_entry *t, int nt) {
    size_t bytes = 0;
    if (fedc__net_reply(&s->net, to, type, f, nf, t, nt, &bytes))
        fprintf(s->log, "fedc server: could not answer a request: %s\n", fedc_errmsg());
    s->bytes_out += (double)bytes;
    return true;
}

static bool reply(server *s, fedc__msg_type type, const fedc_metadata_entry *f, int nf, const fedc_tensor_entry *t, int nt) {
    return fedc__server_reply_to(s, &s->from, type, f, nf, t, nt);
}

bool fedc__server_wait(server *s, const fedc__req *to, int ms, const char *why) {
    char retry[32];
    snprintf(retry, sizeof retry, "%d", ms);
    return fedc__server_reply_to(s, to, FEDC__MSG_WAIT, (fedc_metadata_entry[]){{"retry_ms", retry}, {"reason", why}}, 2,
                                 NULL, 0);
}

/* Rejects the request, saying why, and logs it: the client's id when known. */
static bool refuse(server *s, const char *client, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool refuse(server *s, const char *client, const char *fmt, ...) {
    char why[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    for (char *c = why; *c; c++)
        if (*c == '"' || *c == '\\' || *c == '\n') *c = '\''; /* metadata holds no escapes */
    fprintf(s->log, "fedc server: round %d: refused %s%s: %s\n", s->round + 1, client ? "client " : "a request",
            client ? client : "", why);
    s->refused++;
    return reply(s, FEDC__MSG_REJECT, (fedc_metadata_entry[]){{"reason", why}}, 1, NULL, 0);
}

/* Token comparison whose time does not depend on where they differ. */
static bool same_token(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    unsigned diff = na != nb;
    for (size_t i = 0; i < na && i < nb; i++) diff |= (unsigned)(a[i] ^ b[i]);
    return diff == 0;
}

static bool send_plan(server *s) {
    fedc_plan_file f[FEDC__PLAN_MAX_FILES];
    int n = fedc_plan_files(s->plan, f, FEDC__PLAN_MAX_FILES);
    fedc_tensor_entry t[FEDC__PLAN_MAX_FILES];
    char names[FEDC__PLAN_MAX_FILES][72];
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "file/%s", f[i].name);
        t[i] = (fedc_tensor_entry){names[i], fedc_type_make(FEDC_U8, 1, (int64_t[]){(int64_t)f[i].size}), f[i].data};
    }
    return reply(s, FEDC__MSG_PLAN, (fedc_metadata_entry[]){{"hash", fedc_plan_hash(s->plan)}}, 1, t, n);
}

bool fedc__server_task(server *s, const fedc__req *to, int slot) {
    char round[32], exchange[32], slot_s[32], hb[32];
    snprintf(round, sizeof round, "%d", s->round);
    snprintf(exchange, sizeof exchange, "%d", s->exchange);
    snprintf(slot_s, sizeof slot_s, "%d", slot);
    snprintf(hb, sizeof hb, "%d", fedc__server_beat_ms(s));
    s->heard[s->sampled[slot]] = fedc_seconds(); /* its heartbeats are timed from its task */
    if (s->waited < 0) s->waited = s->heard[s->sampled[slot]] - s->opened;
    if (!s->sent[slot]) s->sent[slot] = 1, s->unconfirmed++;
    char added[32];
    snprintf(added, sizeof added, "%d", (int)s->added_round[s->sampled[slot]]);
    fedc_metadata_entry f[] = {{"round", round}, {"exchange", exchange}, {"slot", slot_s}, {"hash", fedc_plan_hash(s->plan)},
                               {"heartbeat_ms", hb}, {"added", added}, {"program", s->warm ? "warm_start" : "round"},
                               {"secagg", fedc__secure_field(s->sec)}};
    return fedc__server_reply_to(s, to, FEDC__MSG_TASK, f, s->sec ? 8 : 7, s->task, s->ntask);
}

bool fedc__server_done(server *s, const fedc__req *to, int64_t client) {
    char rounds[32], added[32];
    snprintf(rounds, sizeof rounds, "%d", s->o->rounds);
    snprintf(added, sizeof added, "%d", (int)s->added_round[client]);
    return fedc__server_reply_to(s, to, FEDC__MSG_DONE, (fedc_metadata_entry[]){{"rounds", rounds}, {"added", added}}, 2,
                                 NULL, 0);
}

/* The slot client has an open task in, or -1; also -1 while reorder_window
 * tasks are on their way (the client gets it when one of those is heard from). */
int fedc__server_open_slot(const server *s, int64_t client) {
    int i = s->collecting ? s->slot_of[client] : -1;
    if (i < 0 || fedc__collect_state(s->collect, i) != FEDC__SLOT_OPEN) return -1;
    return s->sent[i] || s->unconfirmed < s->o->reorder_window ? i : -1;
}

/* Client c was heard from: a task sent to it has arrived. */
static void heard_from(server *s, int64_t c) {
    s->heard[c] = fedc_seconds();
    int i = s->collecting ? s->slot_of[c] : -1;
    if (i >= 0 && s->sent[i] == 1) s->sent[i] = 2, s->unconfirmed--, s->recheck = true;
}

/* A request's token and client id, checked; the client is heard from. */
static bool known_client(server *s, const fedc__msg *m, int64_t *client) {
    const char *who = fedc__msg_field(m, "client");
    if (!same_token(fedc__msg_field(m, "token"), s->token)) return !refuse(s, who, "invalid token");
    if (fedc__msg_int(m, "client", 0, s->population - 1, client)) return !refuse(s, who, "%s", fedc_errmsg());
    heard_from(s, *client);
    return true;
}

/* How long the client lets the server hold this request ("hold_ms", which it
 * keeps below its own timeout), in seconds; false, refused, without it. */
static bool hold_allowed(server *s, const fedc__msg *m, double *hold) {
    int64_t ms;
    if (fedc__msg_int(m, "hold_ms", 0, MAX_HOLD_MS, &ms)) return !refuse(s, fedc__msg_field(m, "client"), "%s", fedc_errmsg());
    *hold = (double)ms / 1000;
    return true;
}

static bool checkin(server *s, const fedc__msg *m) {
    const char *who = fedc__msg_field(m, "client"), *hash = fedc__msg_field(m, "plan_hash");
    int64_t client;
    char version[16];
    snprintf(version, sizeof version, "%d", FEDC__PROTOCOL_VERSION);
    if (!known_client(s, m, &client)) return true;
    if (strcmp(fedc__msg_field(m, "version"), version))
        return refuse(s, who, "the client speaks protocol version %.20s; this server speaks %s", fedc__msg_field(m, "version"),
                      version);
    if (!hash[0]) return send_plan(s);
    if (strcmp(hash, fedc_plan_hash(s->plan)))
        return refuse(s, who, "plan hash %.64s is not this server's plan (%s)", hash, fedc_plan_hash(s->plan));
    if (s->done) return fedc__server_done(s, &s->from, client);
    double hold = 0;
    if (!hold_allowed(s, m, &hold)) return true;
    int i = fedc__server_open_slot(s, client);
    if (i >= 0) return fedc__server_task(s, &s->from, i);
    fedc__held_checkin(s, client, hold);
    return true;
}

/* A client's report is ready: told to send it (go) when a grant is free,
 * held until then, or rejected when its slot wants none. */
static bool ready(server *s, const fedc__msg *m) {
    int64_t client, round, exchange, slot;
    if (!known_client(s, m, &client)) return true;
    if (fedc__msg_int(m, "round", FEDC__WARM_ROUND, INT32_MAX, &round) || fedc__msg_int(m, "exchange", 0, 1000, &exchange) ||
        fedc__msg_int(m, "slot", 0, s->k - 1, &slot))
        return refuse(s, fedc__msg_field(m, "client"), "%s", fedc_errmsg());
    double hold = 0;
    if (!hold_allowed(s, m, &hold)) return true;
    bool mine = s->collecting && round == s->round && exchange == s->exchange && s->sampled[slot] == client;
    if (!mine) return reply(s, FEDC__MSG_REJECT, (fedc_metadata_entry[]){{"reason", "not an open slot of this client's"}}, 1, NULL, 0);
    fedc__held_ready(s, client, (int)slot, hold);
    return true;
}

static bool heartbeat(server *s, const fedc__msg *m) {
    int64_t client;
    if (!known_client(s, m, &client)) return true;
    return fedc__server_wait(s, &s->from, fedc__server_beat_ms(s), "heartbeat noted");
}

/* Whether the n elements (of `size` bytes) at p, any alignment, hold a NaN
 * or an infinity: an all-ones exponent. One branch-free pass, read in place. */
static bool any_not_finite(const unsigned char *p, int64_t n, size_t size) {
    unsigned bad = 0;
    if (size == 4) {
        for (int64_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, p + 4 * i, 4);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            uint64_t u;
            memcpy(&u, p + 8 * i, 8);
            bad |= (u & 0x7ff0000000000000u) == 0x7ff0000000000000u;
        }
    }
    return bad != 0;
}

/* The first element of a float tensor that is NaN or infinite, or -1: checked
 * where the report lies, a block at a time, and only a bad block element by
 * element (for the index the refusal names). */
static int64_t first_not_finite(const fedc_tensor_entry *e) {
    if (e->type.dtype != FEDC_F32 && e->type.dtype != FEDC_F64) return -1;
    size_t size = fedc_dtype_size(e->type.dtype);
    int64_t n = fedc_type_count(&e->type);
    const unsigned char *p = e->data;
    for (int64_t at = 0; at < n; at += 4096) {
        int64_t m = n - at < 4096 ? n - at : 4096;
        if (!any_not_finite(p + (size_t)at * size, m, size)) continue;
        for (int64_t i = at; i < at + m; i++)
            if (any_not_finite(p + (size_t)i * size, 1, size)) return i;
    }
    return -1;
}

/* Where a report's tensors do not fit what the aggregation takes: NULL if they do. */
static const char *check_uploads(const server *s, const fedc__msg *m, char *why, size_t size) {
    if (fedc_safetensors_count(m->body) != s->nup) {
        snprintf(why, size, "%d tensors; the aggregation takes %d", fedc_safetensors_count(m->body), s->nup);
        return why;
    }
    for (int j = 0; j < s->nup; j++) {
        fedc_tensor_entry e;
        char a[64], b[64];
        if (fedc_safetensors_find(m->body, s->up[j].name, &e)) {
            snprintf(why, size, "no tensor \"%s\"", s->up[j].name);
            return why;
        }
        if (e.type.dtype != s->up[j].local.dtype || !fedc_type_same_shape(&e.type, &s->up[j].local)) {
            snprintf(why, size, "tensor \"%s\" is %s, not %s", e.name, fedc_type_str(&e.type, a, sizeof a),
                     fedc_type_str(&s->up[j].local, b, sizeof b));
            return why;
        }
        int64_t bad = first_not_finite(&e);
        if (bad >= 0) {
            snprintf(why, size, "tensor \"%s\" is not finite (element %lld)", e.name, (long long)bad);
            return why;
        }
    }
    return NULL;
}

/* The one place a report enters the aggregation, once the protocol has said it
 * is this slot's (token, plan, round, exchange, slot): its tensors checked
 * against what the aggregation takes, then added in slot order (or kept until
 * the slots before it are settled). A secure round checks it between the two
 * (and sums its masked words when it is added). NULL, or why it is refused. */
static const char *take_report(server *s, int slot, const fedc__msg *m, char *why, size_t size) {
    if (check_uploads(s, m, why, size)) return why;
    if (fedc__secure_admit(s->sec, slot, why, size)) return why; /* the masked words go to SecAgg once added */
    const void *values[4096];
    for (int j = 0; j < s->nup; j++) {
        fedc_tensor_entry e;
        fedc_safetensors_find(m->body, s->up[j].name, &e);
        values[j] = e.data;
    }
    if (fedc__collect_add(s->collect, slot, values)) {
        snprintf(why, size, "the server could not take it: %s", fedc_errmsg());
        return why;
    }
    return NULL;
}

static bool report(server *s, const fedc__msg *m) {
    const char *who = fedc__msg_field(m, "client");
    int64_t client, round, exchange, slot;
    char why[400];
    if (!known_client(s, m, &client)) return true;
    if (strcmp(fedc__msg_field(m, "hash"), fedc_plan_hash(s->plan))) return refuse(s, who, "a report for another plan");
    if (fedc__msg_int(m, "round", FEDC__WARM_ROUND, INT32_MAX, &round) || fedc__msg_int(m, "exchange", 0, 1000, &exchange) ||
        fedc__msg_int(m, "slot", 0, s->k - 1, &slot))
        return refuse(s, who, "%s", fedc_errmsg());
    bool open = !s->done && s->collecting && round == s->round && exchange == s->exchange;
    if (!open && round == s->taken_round[client] && exchange == s->taken_exchange[client]) {
        /* a retried upload of an exchange that has closed */
        s->duplicates++;
        return reply(s, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "0"}}, 1, NULL, 0);
    }
    if (s->done) return refuse(s, who, "a report for round %lld, but the job is over", (long long)round + 1);
    if (!open)
        return refuse(s, who, "a report for round %lld exchange %lld, but round %d exchange %d is open", (long long)round + 1,
                      (long long)exchange, s->round + 1, s->exchange);
    if (s->sampled[slot] != client) return refuse(s, who, "slot %lld of round %d is not this client's", (long long)slot, s->round + 1);
    fedc__slot_state state = fedc__collect_state(s->collect, (int)slot);
    fedc__held_ungrant(s, (int)slot);
    if (state == FEDC__SLOT_DROPPED) {
        s->stragglers++;
        return refuse(s, who, "round %d gave slot %lld up (no heartbeat for %g s) before this report came", s->round + 1,
                      (long long)slot, s->o->heartbeat_timeout);
    }
    if (state != FEDC__SLOT_OPEN) { /* an upload is keyed by (round, slot): counted once */
        s->duplicates++;
        return reply(s, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "0"}}, 1, NULL, 0);
    }
    if (take_report(s, (int)slot, m, why, sizeof why)) return refuse(s, who, "%s", why);
    s->taken_round[client] = (int32_t)round, s->taken_exchange[client] = (int32_t)exchange;
    return reply(s, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "1"}}, 1, NULL, 0);
}

/* A secure round's request (secure.h), from the client of its slot. */
static bool secagg(server *s, const fedc__msg *m) {
    int64_t client, slot;
    if (!known_client(s, m, &client)) return true;
    if (fedc__msg_int(m, "slot", 0, s->k - 1, &slot)) return refuse(s, fedc__msg_field(m, "client"), "%s", fedc_errmsg());
    if (!s->sec || s->sampled[slot] != client)
        return refuse(s, fedc__msg_field(m, "client"), "a secagg request of slot %lld, which is not this client's in a "
                      "secure round", (long long)slot);
    fedc__secure_answer a;
    char retry[32], step[8];
    fedc__secure_request(s->sec, (int)slot, m, &a);
    snprintf(retry, sizeof retry, "%d", a.retry_ms);
    snprintf(step, sizeof step, "%.4s", fedc__msg_field(m, "step"));
    fedc_tensor_entry t = {"secagg", fedc_type_make(FEDC_U8, 1, (int64_t[]){(int64_t)a.size}), a.bytes};
    if (a.type == FEDC__MSG_REJECT) refuse(s, fedc__msg_field(m, "client"), "%s", a.reason);
    else if (a.type == FEDC__MSG_WAIT) fedc__server_wait(s, &s->from, a.retry_ms, a.reason);
    else if (a.type == FEDC__MSG_ACK) reply(s, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "1"}}, 1, NULL, 0);
    else reply(s, a.type, (fedc_metadata_entry[]){{"step", step}}, 1, &t, 1);
    fedc__secure_answer_free(&a);
    return true;
}

static void handle(server *s, const void *data, size_t size) {
    fedc__msg m;
    s->bytes_in += (double)size, s->requests++;
    if (fedc__wire_view(data, size, s->net.max, &m)) { /* read in place: the request outlives m */
        refuse(s, NULL, "%s", fedc_errmsg());
        return;
    }
    if (m.type == FEDC__MSG_CHECKIN) checkin(s, &m);
    else if (m.type == FEDC__MSG_REPORT) report(s, &m);
    else if (m.type == FEDC__MSG_HEARTBEAT) heartbeat(s, &m);
    else if (m.type == FEDC__MSG_READY) ready(s, &m);
    else if (m.type == FEDC__MSG_SECAGG) secagg(s, &m);
    else refuse(s, NULL, "a %s message is not a client's request", fedc__msg_name(m.type));
    fedc__msg_free(&m);
}

/* Gives up the open slots whose clients, heard from before, have been silent
 * for the heartbeat timeout (since the exchange began, at the earliest): dead,
 * not slow, as a slow client's heartbeats go on. */
static fedc_status give_up_silent(server *s) {
    double now = fedc_seconds();
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && s->collecting && i < s->k; i++) {
        double heard = s->heard[s->sampled[i]];
        if (heard == 0 || fedc__collect_state(s->collect, i) != FEDC__SLOT_OPEN) continue;
        if (now - (heard > s->opened ? heard : s->opened) < s->o->heartbeat_timeout) continue;
        fprintf(s->log, "fedc server: round %d: client %lld (slot %d) not heard from for %g s: given up\n", s->round + 1,
                (long long)s->sampled[i], i, s->o->heartbeat_timeout);
        s->missed++;
        if (s->sent[i] == 1) s->sent[i] = 2, s->unconfirmed--, s->recheck = true;
        fedc__held_ungrant(s, i);
        st = fedc__collect_drop(s->collect, i);
    }
    return st;
}

/* Answers requests until `until` (fedc_seconds), or, while collecting, until
 * every slot is settled. */
static fedc_status serve(server *s, double until) {
    double checked = 0;
    while (fedc_seconds() < until && !(s->collecting && fedc__collect_closed(s->collect)) &&
           !(s->unmasking && fedc__secure_settled(s->sec))) {
        nng_msg *msg;
        bool timed_out;
        fedc_status st = fedc__net_recv_req(&s->net, &msg, &s->from, &timed_out);
        if (st) return st;
        if (!timed_out) {
            handle(s, nng_msg_body(msg), nng_msg_len(msg));
            nng_msg_free(msg);
            if (s->nheld && s->collecting) fedc__held_after_request(s); /* a report in frees a grant; a heard task, a task */
        }
        if (fedc_seconds() - checked < RECV_MS / 1000.0) continue; /* the timers, every 50 ms at most */
        checked = fedc_seconds();
        fedc__held_answer(s);
        if ((st = give_up_silent(s))) return st;
        if ((s->collecting || s->unmasking) && (st = fedc__secure_tick(s->sec, s->collect, checked))) return st;
    }
    return FEDC_OK;
}

/* ---------------------------------------------------------- set-up -- */

/* The broadcast values of exchange e (a task's tensors: one client's copy,
 * the server value itself) and the values a report holds. */
static fedc_status exchange_io(server *s, int e) {
    const fedc_program *work = fedc_deployment_form_phase(s->form, e, FEDC_PHASE_CLIENT_WORK);
    const fedc_program *agg = fedc_deployment_form_phase(s->form, e, FEDC_PHASE_AGGREGATION);
    if (fedc_program_num_inputs(work) > 4096 || fedc_program_num_inputs(agg) > 4096)
        return fedc_error(FEDC_EUNSUPPORTED, "server: exchange %d passes more than 4096 values", e);
    s->ntask = fedc__deployment_run_broadcasts(s->run, e, s->task, 4096);
    for (int i = 0; i < fedc_program_num_inputs(work); i++) {
        const char *name = fedc_program_input_name(work, i);
        bool found = strncmp(name, "broadcast/", 10) != 0;
        for (int j = 0; j < s->ntask && !found; j++) found = !strcmp(s->task[j].name, name);
        if (!found) return fedc_error(FEDC_EINTERNAL, "server: exchange %d broadcasts no \"%s\"", e, name);
    }
    size_t bytes[4096], align[4096];
    s->nup = fedc_program_num_inputs(agg);
    for (int i = 0; i < s->nup; i++) {
        upload *u = &s->up[i];
        u->name = fedc_program_input_name(agg, i);
        u->local = fedc_value_type(agg, fedc_program_input(agg, i));
        u->local.placement = FEDC_LOCAL;
        bytes[i] = u->bytes = fedc_type_bytes(&u->local);
        align[i] = fedc_dtype_size(u->local.dtype);
    }
    return fedc__collect_begin(s->collect, e, s->nup, bytes, align);
}

static fedc_status plan_int(const server *s, const char *key, int64_t *out) {
    const char *v = fedc_plan_setting(s->plan, key);
    char *end = NULL;
    long long x = v ? strtoll(v, &end, 10) : -1;
    if (!v || *end || x < 1) return fedc_error(FEDC_EPARSE, "%s: setting %s is missing or not a positive number", s->o->plan, key);
    *out = x;
    return FEDC_OK;
}

/* A token of 32 hex digits, the first line of out_dir/token, as make_token wrote it. */
static bool read_token(server *s, const char *path) {
    FILE *f = fopen(path, "r");
    char line[64] = "";
    bool ok = f && fgets(line, sizeof line, f) && strlen(line) == 33 && line[32] == '\n' &&
              strspn(line, "0123456789abcdef") == 32;
    if (f) fclose(f);
    if (ok) snprintf(s->token, sizeof s->token, "%.32s", line);
    return ok;
}

/* The token: given, the one out_dir/token holds (a restarted server keeps its
 * clients), or 32 random hex digits written there (0600). */
static fedc_status make_token(server *s) {
    if (s->o->token) {
        if (!s->o->token[0] || strlen(s->o->token) >= sizeof s->token || strpbrk(s->o->token, "\"\\\n"))
            return fedc_error(FEDC_EINVAL, "server: the token must be 1 to 159 bytes without quotes, backslashes or newlines");
        snprintf(s->token, sizeof s->token, "%s", s->o->token);
        return FEDC_OK;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/token", s->o->out_dir);
    if (read_token(s, path)) {
        fprintf(s->log, "fedc server: clients' token in %s (kept)\n", path);
        return FEDC_OK;
    }
    unsigned char r[16];
    FILE *f = fopen("/dev/urandom", "rb");
    bool ok = f && fread(r, 1, sizeof r, f) == sizeof r;
    if (f) fclose(f);
    if (!ok) return fedc_error(FEDC_EIO, "server: cannot read /dev/urandom for a token");
    for (int i = 0; i < 16; i++) snprintf(s->token + 2 * i, 3, "%02x", r[i]);
    mode_t old = umask(077);
    f = fopen(path, "w");
    umask(old);
    ok = f && fprintf(f, "%s\n", s->token) > 0;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) return fedc_error(FEDC_EIO, "%s: cannot write the token", path);
    fprintf(s->log, "fedc server: clients' token in %s\n", path);
    return FEDC_OK;
}

/* A checkpoint keeps the model by its parameters' names, as fedc train's does
 * (fedc eval reads either), and the rest of the state as server/<leaf>. */
static const char *saved_name(const char *name) {
    return !strncmp(name, "server/params/", 14) ? name + 14 : name;
}

static fedc_status resume(server *s, int *first) {
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", s->o->out_dir);
    struct stat sb;
    *first = 0;
    if (stat(path, &sb) != 0) return FEDC_OK;
    fedc_safetensors *c = NULL;
    fedc_status st = fedc_safetensors_read(path, &c);
    const char *hash = st ? NULL : fedc_safetensors_metadata(c, "plan_hash");
    const char *next = st ? NULL : fedc_safetensors_metadata(c, "next_round");
    if (!st && (!hash || strcmp(hash, fedc_plan_hash(s->plan)) || !next))
        st = fedc_error(FEDC_EINVAL, "%s is not a checkpoint of this plan (%s): move it away to start afresh", path,
                        fedc_plan_hash(s->plan));
    const char *settings = st ? NULL : fedc_safetensors_metadata(c, "plan_settings"); /* absent before 2026-12-06 */
    if (settings && strcmp(settings, fedc__plan_settings_hash(s->plan)))
        st = fedc_error(FEDC_EINVAL, "%s is a checkpoint of this plan's programs under other settings (seed, population, "
                        "batch size, ...: the plan was built again differently): move it away to start afresh", path);
    for (int i = 0; !st && i < s->ntensors; i++) {
        fedc_tensor_entry want = fedc_plan_tensor(s->plan, i), e;
        st = fedc_safetensors_find(c, saved_name(want.name), &e);
        if (!st && fedc_type_bytes(&e.type) != fedc_type_bytes(&want.type))
            st = fedc_error(FEDC_EPARSE, "%s: tensor \"%s\" has the wrong size", path, e.name);
        if (!st) memcpy(s->state[i], e.data, fedc_type_bytes(&want.type));
    }
    const char *added = st ? NULL : fedc_safetensors_metadata(c, "added_rounds");
    if (!st && added) st = fedc__added_parse(added, s->added_round, s->population, atoi(next));
    if (!st && !added && fedc_plan_client_init(s->plan) && atoi(next) > 0)
        st = fedc_error(FEDC_EPARSE, "%s: no added_rounds (which round added each client's report), which a plan whose "
                        "clients keep state needs", path);
    if (st && added) {
        char why[600];
        snprintf(why, sizeof why, "%s", fedc_errmsg());
        st = fedc_error(st, "%s: %s", path, why);
    }
    if (!st) *first = atoi(next);
    s->resumed = !st;
    if (!st) fprintf(s->log, "fedc server: resumed from %s at round %d\n", path, *first + 1);
    fedc_safetensors_destroy(c);
    return st;
}

/* A plan built with --secure-sum BITS sums the words of the reports a round
 * adds modulo 2^32: more than fedc_secure_sum_max_clients(BITS) could wrap. */
static fedc_status secure_sum_fits(const server *s) {
    int64_t bits = 0;
    fedc_status st = fedc_plan_setting(s->plan, "secure_sum_bits") ? plan_int(s, "secure_sum_bits", &bits) : FEDC_OK;
    if (!st && bits && s->commit > fedc_secure_sum_max_clients((int)bits))
        st = fedc_error(FEDC_EINVAL, "server: the plan's --secure-sum %d sums at most %lld clients without wrapping "
                        "modulo 2^32, but a round adds %d; build the plan with fewer bits", (int)bits,
                        (long long)fedc_secure_sum_max_clients((int)bits), s->commit);
    return st;
}

/* The slots a round selects: ceil(over_select x K), at most the population. */
static fedc_status selection(server *s) {
    const fedc_server_options *o = s->o;
    int64_t k = o->clients_per_round;
    if (k < 1 || k > s->population)
        return fedc_error(FEDC_EINVAL, "server: %lld clients per round, but the plan's population is %lld clients",
                          (long long)k, (long long)s->population);
    if (!(o->over_select >= 1 && o->over_select <= 100))
        return fedc_error(FEDC_EINVAL, "server: over-selection %g is not between 1 and 100", o->over_select);
    double selected = ceil(o->over_select * (double)k - 1e-9);
    s->commit = (int)k;
    s->k = selected > (double)s->population ? (int)s->population : (int)selected;
    if (o->min_reports > s->commit)
        return fedc_error(FEDC_EINVAL, "server: --min-reports %d is above the %d clients a round adds", o->min_reports, s->commit);
    return secure_sum_fits(s);
}

static fedc_status setup(server *s) {
    const fedc_server_options *o = s->o;
    fedc_status st = fedc_plan_read(o->plan, &s->plan);
    if (st) return st;
    s->form = fedc_plan_form(s->plan);
    const char *seed = fedc_plan_setting(s->plan, "seed");
    if (!seed) return fedc_error(FEDC_EPARSE, "%s: no seed setting", o->plan);
    s->seed = strtoull(seed, NULL, 10);
    if ((st = plan_int(s, "population", &s->population))) return st;
    if ((st = selection(s))) return st;
    size_t k = (size_t)s->k, pop = (size_t)s->population;
    s->population_f = (float)s->population;
    s->ntensors = fedc_plan_num_tensors(s->plan);
    s->state = fedc_calloc((size_t)s->ntensors + 1, sizeof *s->state);
    s->sampled = fedc_calloc(k, sizeof *s->sampled);
    s->next = fedc_calloc(k, sizeof *s->next);
    s->left_out = fedc_calloc(k, 1);
    s->sent = fedc_calloc(k, 1);
    s->granted = fedc_calloc(k, 1);
    s->slot_of = fedc_malloc(pop * sizeof *s->slot_of);
    s->next_round = fedc_calloc(pop, 1);
    s->heard = fedc_calloc(pop, sizeof *s->heard);
    s->taken_round = fedc_malloc(pop * sizeof *s->taken_round + 1);
    s->taken_exchange = fedc_calloc(pop, sizeof *s->taken_exchange);
    s->added_round = fedc_malloc(pop * sizeof *s->added_round + 1);
    s->task = fedc_calloc(4096, sizeof *s->task);
    s->up = fedc_calloc(4096, sizeof *s->up);
    s->maxheld = o->max_held;
    s->held = fedc_calloc((size_t)s->maxheld + 1, sizeof *s->held);
    if (!s->state || !s->sampled || !s->next || !s->left_out || !s->sent || !s->granted || !s->slot_of || !s->next_round || !s->heard || !s->taken_round ||
        !s->taken_exchange || !s->added_round || !s->task || !s->up || !s->held)
        return fedc_error(FEDC_ENOMEM, "server: out of memory");
    for (size_t i = 0; i < pop; i++) s->slot_of[i] = s->added_round[i] = -1, s->taken_round[i] = INT32_MIN;
    st = fedc__deployment_run_create_server(&s->run, s->form, &(fedc_exec_options){.clients = s->k, .threads = o->threads});
    for (int i = 0; !st && i < s->ntensors; i++) {
        fedc_tensor_entry e = fedc_plan_tensor(s->plan, i);
        size_t n = fedc_type_bytes(&e.type);
        if (!(s->state[i] = fedc_malloc(n ? n : 1))) return fedc_error(FEDC_ENOMEM, "server: out of memory");
        memcpy(s->state[i], e.data, n);
        st = fedc_deployment_run_bind(s->run, e.name, s->state[i]);
    }
    if (!st && fedc_program_find_input(fedc_plan_round(s->plan), "meta/population") != FEDC_NONE)
        st = fedc_deployment_run_bind(s->run, "meta/population", &s->population_f);
    if (!st) st = fedc_make_dirs(o->out_dir);
    char spill[4200];
    snprintf(spill, sizeof spill, "%s/reports.spill", o->out_dir);
    if (!st) st = fedc__collect_create(&s->collect, s->run, s->k, s->commit, o->reorder_window, spill);
    if (!st) st = make_token(s);
    if (!st) st = fedc__warm_check(s->plan, o);
    if (!st && o->secure_agg)
        st = fedc__secure_create(&s->sec, s->form, o->secure_threshold, o->secure_neighbours, s->k, s->commit,
                                 o->heartbeat_timeout, s->log);
    return st;
}

static void teardown(server *s) {
    fedc__net_close(&s->net);
    for (int i = 0; s->state && i < s->ntensors; i++) fedc_free(s->state[i]);
    fedc_free(s->state), fedc_free(s->sampled), fedc_free(s->task), fedc_free(s->up), fedc_free(s->held);
    fedc_free(s->slot_of), fedc_free(s->next_round), fedc_free(s->heard), fedc_free(s->next), fedc_free(s->left_out), fedc_free(s->sent), fedc_free(s->granted);
    fedc_free(s->taken_round), fedc_free(s->taken_exchange), fedc_free(s->added_round);
    fedc__collect_destroy(s->collect);
    fedc__secure_destroy(s->sec);
    fedc_deployment_run_destroy(s->run);
    fedc_plan_destroy(s->plan);
    if (s->metrics) fclose(s->metrics);
}

/* ---------------------------------------------------------- a round -- */

typedef struct round_stats {
    int attempt, reported, dropped, skipped, stragglers, missed, spilled, held_peak, refused, duplicates;
    double bytes_in, bytes_out, requests, t_wait, t_prepare, t_collect, t_aggregate, t_result, t_checkpoint, t_round;
    float train_loss, examples;
    bool abandoned;
} round_stats;

/* The exchange that closed: who was left out, and its counts. */
static void close_exchange(server *s, round_stats *rs) {
    for (int i = 0; i < s->k; i++) {
        fedc__slot_state st = fedc__collect_state(s->collect, i);
        s->left_out[i] |= st != FEDC__SLOT_ADDED;
    }
    s->collecting = false;
    fedc__held_answer(s); /* the readies of this exchange are told it wants no report now */
    fedc__collect_stats c = fedc__collect_stats_of(s->collect);
    rs->reported = c.added, rs->dropped = c.dropped, rs->skipped = c.skipped;
    rs->stragglers += c.unused, rs->spilled += c.spilled;
    if (c.held_peak > rs->held_peak) rs->held_peak = c.held_peak;
    rs->t_aggregate += c.seconds;
}

/* A secure round's last step, after the collection: the survivors reveal their
 * shares (each within the heartbeat timeout), and the sum is unmasked; a failed
 * secure round (fewer than its threshold at some step) abandons the round. */
static fedc_status secure_unmask(server *s, bool *abandoned) {
    fedc__secure_close_masked(s->sec, fedc_seconds());
    s->unmasking = true;
    fedc_status st = serve(s, fedc_seconds() + s->o->heartbeat_timeout + 1);
    s->unmasking = false;
    if (!st && !fedc__secure_settled(s->sec)) st = fedc__secure_tick(s->sec, s->collect, fedc_seconds() + 1e9);
    if (!st && fedc__secure_failed(s->sec)) {
        fprintf(s->log, "fedc server: round %d: the secure aggregation failed: the round is abandoned\n", s->round + 1);
        *abandoned = true;
    }
    return st;
}

/* One exchange: prepare, the clients' reports streamed into the aggregation,
 * server_result. *abandoned: too few reports by the deadline. */
static fedc_status run_exchange(server *s, int e, round_stats *rs, bool *abandoned) {
    double t0 = fedc_seconds();
    s->exchange = e;
    fedc_status st = fedc__deployment_run_phase(s->run, e, FEDC_PHASE_SERVER_PREPARE, NULL);
    if (!st) st = exchange_io(s, e);
    /* a client left out of an earlier exchange is out of the round, as fedc_train's dropped
     * client is absent from the whole round program: its slot is settled now, not waited for */
    for (int i = 0; !st && i < s->k; i++)
        if (s->left_out[i]) st = fedc__collect_drop(s->collect, i);
    if (!st && s->sec) st = fedc__secure_begin(s->sec, s->collect, s->round, e, s->seed, s->sampled, fedc_seconds());
    double t1 = fedc_seconds();
    s->collecting = !st, s->opened = t1;
    memset(s->sent, 0, (size_t)s->k);
    memset(s->granted, 0, (size_t)s->k);
    s->unconfirmed = s->ngranted = 0;
    if (!st) fedc__held_answer(s); /* the held check-ins of this exchange's clients get their tasks now */
    if (!st) st = serve(s, t1 + s->o->report_deadline);
    for (int i = 0; !st && i < s->k; i++) st = fedc__collect_drop(s->collect, i); /* the deadline: the rest given up */
    double t2 = fedc_seconds();
    rs->t_prepare += t1 - t0, rs->t_collect += t2 - t1;
    close_exchange(s, rs);
    if (!st && fedc__secure_active(s->sec) && (st = secure_unmask(s, abandoned), *abandoned)) return st;
    if (!st && rs->reported < s->o->min_reports) {
        fprintf(s->log, "fedc server: round %d: %d of %d clients reported by the deadline, fewer than %d: the round "
                "is abandoned\n", s->round + 1, rs->reported, s->k, s->o->min_reports);
        *abandoned = true;
        return FEDC_OK;
    }
    if (!st) st = fedc__collect_end(s->collect);
    if (!st) st = fedc__secure_end(s->sec, s->run); /* the unmasked sums in place of the masked */
    double t3 = fedc_seconds();
    if (!st) st = fedc__deployment_run_phase(s->run, e, FEDC_PHASE_SERVER_RESULT, NULL);
    rs->t_aggregate += t3 - t2, rs->t_result += fedc_seconds() - t3;
    return st;
}

/* The round's new state, if finite, becomes the state. */
static fedc_status take_state(server *s, round_stats *rs) {
    for (int i = 0; i < s->ntensors; i++) {
        fedc_tensor_entry e = fedc_plan_tensor(s->plan, i);
        const void *v = fedc__deployment_run_buffer(s->run, e.name, true, NULL);
        if (!v) return fedc_error(FEDC_EINTERNAL, "server: the round has no output \"%s\"", e.name);
        int64_t n = e.type.dtype == FEDC_F32 ? fedc_type_count(&e.type) : 0;
        for (int64_t j = 0; j < n; j++)
            if (!isfinite(((const float *)v)[j]))
                return fedc_error(FEDC_ENONFINITE, "round %d: the model diverged: \"%s\" is not finite (element %lld); "
                                  "this round is not saved", s->round + 1, e.name, (long long)j);
    }
    for (int i = 0; i < s->ntensors; i++) {
        fedc_tensor_entry e = fedc_plan_tensor(s->plan, i);
        memcpy(s->state[i], fedc__deployment_run_buffer(s->run, e.name, true, NULL), fedc_type_bytes(&e.type));
    }
    const float *loss = fedc__deployment_run_buffer(s->run, "train_loss", true, NULL);
    const float *examples = fedc__deployment_run_buffer(s->run, "examples", true, NULL);
    rs->train_loss = loss ? *loss : NAN;
    rs->examples = examples ? *examples : NAN;
    return FEDC_OK;
}

static fedc_status checkpoint(server *s, int next_round) {
    fedc_tensor_entry *t = fedc_calloc((size_t)s->ntensors + 1, sizeof *t);
    if (!t) return fedc_error(FEDC_ENOMEM, "server: out of memory");
    for (int i = 0; i < s->ntensors; i++) {
        fedc_tensor_entry e = fedc_plan_tensor(s->plan, i);
        t[i] = (fedc_tensor_entry){saved_name(e.name), e.type, s->state[i]};
    }
    char next[32], path[4200];
    snprintf(next, sizeof next, "%d", next_round);
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", s->o->out_dir);
    char *added = NULL; /* which round added each client's report: its state, for clients that keep one */
    fedc_status st = fedc_plan_client_init(s->plan) ? fedc__added_encode(s->added_round, s->population, &added) : FEDC_OK;
    fedc_metadata_entry m[] = {{"format", "fedc deployment checkpoint"}, {"next_round", next},
                               {"plan_hash", fedc_plan_hash(s->plan)}, {"plan_settings", fedc__plan_settings_hash(s->plan)},
                               {"added_rounds", added}};
    if (!st) st = fedc_safetensors_write(path, t, s->ntensors, m, added ? 5 : 4);
    fedc_free(t), fedc_free(added);
    return st;
}

/* A row of metrics.jsonl: a committed round, or an abandoned attempt at one. */
static void log_metrics(server *s, const round_stats *rs) {
    FILE *f = s->metrics;
    fprintf(f, "{\"round\": %d, \"selected\": %d, \"reported\": %d, \"dropped\": %d, \"refused\": %d, \"duplicates\": %d, "
            "\"attempt\": %d, \"abandoned\": %s, \"not_needed\": %d, \"stragglers\": %d, \"missed_heartbeats\": %d, "
            "\"spilled\": %d, \"held_peak\": %d, \"left_out\": [", s->round + 1, s->k, rs->reported, rs->dropped,
            rs->refused, rs->duplicates, rs->attempt + 1, rs->abandoned ? "true" : "false", rs->skipped, rs->stragglers,
            rs->missed, rs->spilled, rs->held_peak);
    for (int i = 0, n = 0; i < s->k; i++)
        if (s->left_out[i]) fprintf(f, "%s%lld", n++ ? ", " : "", (long long)s->sampled[i]);
    fprintf(f, "], ");
    fedc__secure_metrics(s->sec, f);
    fprintf(f, "\"bytes_in\": %.0f, \"bytes_out\": %.0f, \"requests\": %.0f, ", rs->bytes_in, rs->bytes_out, rs->requests);
    if (!rs->abandoned) fprintf(f, "\"train_loss\": %.9g, \"examples\": %.0f, ", rs->train_loss, rs->examples);
    fprintf(f, "\"seconds\": {\"wait\": %.6f, \"prepare\": %.6f, \"collect\": %.6f, \"aggregate\": %.6f, "
            "\"result\": %.6f, \"checkpoint\": %.6f, \"round\": %.6f}}\n", rs->t_wait, rs->t_prepare, rs->t_collect,
            rs->t_aggregate, rs->t_result, rs->t_checkpoint, rs->t_round);
    fflush(f);
}

/* Round r's clients in their slots, and who is in the next round (their
 * check-ins are held for it). */
static fedc_status select_round(server *s, int r) {
    for (int i = 0; i < s->k; i++) s->slot_of[s->sampled[i]] = -1;
    memset(s->next_round, 0, (size_t)s->population);
    memset(s->left_out, 0, (size_t)s->k);
    fedc_status st = r == FEDC__WARM_ROUND ? fedc__warm_start_cohort(s->population, s->k, s->seed, s->sampled)
                                           : fedc_sample_clients(s->population, s->k, s->seed, (uint32_t)r, s->sampled);
    if (!st && r + 1 < s->o->rounds) {
        st = fedc_sample_clients(s->population, s->k, s->seed, (uint32_t)(r + 1), s->next);
        for (int i = 0; !st && i < s->k; i++) s->next_round[s->next[i]] = 1;
    }
    for (int i = 0; !st && i < s->k; i++) s->slot_of[s->sampled[i]] = i;
    return st;
}

static fedc_status run_round(server *s, int r) {
    fedc_status st = FEDC_OK;
    bool abandoned = true;
    for (int attempt = 0; !st && abandoned && attempt < MAX_ATTEMPTS; attempt++) {
        round_stats rs = {.attempt = attempt};
        double in = s->bytes_in, out = s->bytes_out, requests = s->requests, t0 = fedc_seconds();
        int refused = s->refused, duplicates = s->duplicates, stragglers = s->stragglers, missed = s->missed;
        s->round = r, s->waited = -1;
        abandoned = false;
        st = select_round(s, r);
        for (int e = 0; !st && !abandoned && e < fedc_deployment_form_exchanges(s->form); e++)
            st = run_exchange(s, e, &rs, &abandoned);
        if (!st && !abandoned) st = take_state(s, &rs);
        for (int i = 0; !st && !abandoned && i < s->k; i++)
            if (!s->left_out[i]) s->added_round[s->sampled[i]] = (int32_t)r; /* before the checkpoint keeps it */
        double t = fedc_seconds();
        if (!st && !abandoned) st = checkpoint(s, r + 1);
        rs.t_checkpoint = fedc_seconds() - t;
        rs.t_round = fedc_seconds() - t0;
        rs.t_wait = s->waited >= 0 ? s->waited : rs.t_collect; /* no task sent: it waited throughout */
        rs.bytes_in = s->bytes_in - in, rs.bytes_out = s->bytes_out - out, rs.refused = s->refused - refused;
        rs.requests = s->requests - requests;
        rs.duplicates = s->duplicates - duplicates;
        rs.stragglers += s->stragglers - stragglers, rs.missed = s->missed - missed;
        rs.abandoned = abandoned;
        if (!st) log_metrics(s, &rs);
    }
    if (!st && abandoned)
        return fedc_error(FEDC_EIO, "round %d: abandoned %d times (fewer than %d reports by the deadline%s)", r + 1,
                          MAX_ATTEMPTS, s->o->min_reports, s->sec ? ", or a failed secure aggregation" : "");
    return st;
}

/* The warm start's run, collection and slots in place of the round's, or back. */
static void swap_warm(server *s) {
    fedc__warm *w = s->warm, t = *w;
    w->form = s->form, w->run = s->run, w->collect = s->collect, w->slots = s->k, w->commit = s->commit;
    s->form = t.form, s->run = t.run, s->collect = t.collect, s->k = t.slots, s->commit = t.commit;
}

/* The plan's warm start, in a fresh job: run as round 0 (warm.h), its server
 * state checkpointed (next round 1), so that a server started again after it
 * goes on from there and one stopped during it runs it again. */
static fedc_status warm_start(server *s) {
    fedc_status st = fedc__warm_create(&s->warm, s->plan, s->o, s->state, &s->population_f);
    if (st) return st;
    fprintf(s->log, "fedc server: the warm start (round 0) on %d clients, %d exchanges\n", s->warm->slots,
            fedc_deployment_form_exchanges(s->warm->form));
    swap_warm(s);
    st = run_round(s, FEDC__WARM_ROUND);
    swap_warm(s);
    fedc__warm_destroy(s->warm);
    s->warm = NULL;
    return st;
}

fedc_status fedc_server_run(const fedc_server_options *o) {
    if (!o->plan || !o->listen || !o->out_dir || o->rounds < 1 || o->min_reports < 1 || !(o->report_deadline > 0) ||
        !(o->heartbeat >= 0) || !(o->heartbeat_timeout > 0) || o->reorder_window < 1 || o->max_held < 0)
        return fedc_error(FEDC_EINVAL, "server: needs a plan, an address, an output directory, rounds >= 1, "
                          "min_reports >= 1, a deadline, a heartbeat timeout above 0, a heartbeat interval of 0 (a "
                          "quarter of the timeout) or more and a reorder window of 1 or more");
    if (o->heartbeat_timeout <= o->heartbeat)
        return fedc_error(FEDC_EINVAL, "server: the heartbeat timeout (%g s) must be longer than the heartbeat interval "
                          "(%g s), or working clients are given up", o->heartbeat_timeout, o->heartbeat);
    server s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.log = o->log ? o->log : stderr;
    int first = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", o->out_dir);
    fedc_status st = setup(&s);
    if (!st) st = resume(&s, &first);
    if (!st && !(s.metrics = fopen(path, s.resumed ? "a" : "w"))) st = fedc_error(FEDC_EIO, "%s: cannot write", path);
    if (!st) st = fedc__net_listen(&s.net, o->listen, o->max_message, RECV_MS,
                                             &(fedc__tls){.cert = o->tls_cert, .key = o->tls_key});
    if (!st) fprintf(s.log, "fedc server: listening on %s, plan %s, rounds %d to %d of %d clients\n", o->listen,
                     fedc_plan_hash(s.plan), first + 1, o->rounds, s.k);
    if (!st && !s.resumed && fedc_plan_warm_start(s.plan)) st = warm_start(&s);
    for (int r = first; !st && r < o->rounds; r++) st = run_round(&s, r);
    if (!st) {
        s.done = true;
        fprintf(s.log, "fedc server: done: %d rounds; %s/checkpoint.safetensors\n", o->rounds, o->out_dir);
        fedc__held_answer(&s);
        /* clients that ask are told the job is over, for --linger seconds from
         * now or from when the last client told to come back (--max-held) is due */
        double now = fedc_seconds();
        st = serve(&s, (s.retry_until > now ? s.retry_until : now) + o->linger);
    }
    teardown(&s);
    return st;
}
