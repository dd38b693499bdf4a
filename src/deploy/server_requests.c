/* The deployment server's answers to requests (server.h): check-ins (the plan, a
 * task, held, wait or done), heartbeats, readies, reports checked and taken in
 * slot order, and secure aggregation's messages; each refused with its reason,
 * logged, when it is not what the job expects. Between requests, every 50 ms
 * at most, the timers: held requests answered when their time comes, and the
 * clients not heard from for the heartbeat timeout given up. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/credential.h"
#include "deploy/groups.h"
#include "deploy/held.h"

enum { MAX_HOLD_MS = 3600000 };

bool fedc__server_reply_to(server *s, const fedc__req *to, fedc__msg_type type, const fedc_metadata_entry *f, int nf,
                           const fedc_tensor_entry *t, int nt) {
    size_t bytes = 0;
    if (fedc__net_reply(&s->net, to, type, f, nf, t, nt, &bytes))
        fprintf(s->log, "%s: could not answer a request: %s\n", s->name, fedc_errmsg());
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

/* Text that holds what a peer sent, made fit for a log line and a reason: no
 * quotes or backslashes (metadata holds no escapes), and no control characters
 * (a newline in a claimed client id must not forge a line of the log). */
static void plain(char *t) {
    for (; *t; t++)
        if (*t == '"' || *t == '\\' || (unsigned char)*t < 0x20 || *t == 0x7f) *t = '\'';
}

/* Rejects the request, saying why, and logs it: the client's id when known. */
bool fedc__server_refuse(server *s, const char *client, const char *fmt, ...) {
    char why[600], id[40];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(id, sizeof id, "%.32s", client ? client : "");
    plain(why), plain(id);
    fprintf(s->log, "%s: round %d: refused %s%s: %s\n", s->name, s->round + 1, client ? "client " : "a request", id, why);
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

bool fedc__server_send_plan(server *s, const fedc__req *to) {
    fedc_plan_file f[FEDC__PLAN_MAX_FILES];
    int n = fedc_plan_files(s->plan, f, FEDC__PLAN_MAX_FILES);
    fedc_tensor_entry t[FEDC__PLAN_MAX_FILES];
    char names[FEDC__PLAN_MAX_FILES][72];
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "file/%s", f[i].name);
        t[i] = (fedc_tensor_entry){names[i], fedc_type_make(FEDC_U8, 1, (int64_t[]){(int64_t)f[i].size}), f[i].data};
    }
    return fedc__server_reply_to(s, to, FEDC__MSG_PLAN, (fedc_metadata_entry[]){{"hash", fedc_plan_hash(s->plan)}}, 1, t, n);
}

bool fedc__server_task(server *s, const fedc__req *to, int slot) {
    if (s->async) return fedc__async_task(s, to, slot);
    double now = fedc_seconds();
    if (s->waited < 0) s->waited = now - s->opened;
    if (!s->sent[slot]) s->sent[slot] = 1, s->unconfirmed++;
    return fedc__server_send_task(s, to, s->round, slot, s->sampled[slot]);
}

/* A task of `round` (an asynchronous run's: the block of its batches) into
 * slot, with the exchange's values (s->task), and the asynchronous run's
 * (async/...), to client. */
bool fedc__server_send_task(server *s, const fedc__req *to, int64_t round_no, int slot, int64_t client) {
    char round[32], exchange[32], slot_s[32], hb[32];
    snprintf(round, sizeof round, "%lld", (long long)round_no);
    snprintf(exchange, sizeof exchange, "%d", s->exchange);
    snprintf(slot_s, sizeof slot_s, "%d", slot);
    snprintf(hb, sizeof hb, "%d", fedc__server_beat_ms(s));
    s->heard[client] = fedc_seconds(); /* its heartbeats are timed from its task */
    char added[32];
    snprintf(added, sizeof added, "%d", (int)s->added_round[client]);
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
    if (s->async) return fedc__async_open_slot(s, client);
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

/* A request's token and client id, checked: the one place a request is
 * authenticated, before anything it says is acted on. With per-client
 * credentials, its "token" must be the credential of the id it claims (which
 * is then checked first: the credential is the id's); else the shared token.
 * Refused, counted as unauthenticated, when not; the client is heard from. */
bool fedc__server_known_client(server *s, const fedc__msg *m, int64_t *client) {
    const char *who = fedc__msg_field(m, "client"), *token = fedc__msg_field(m, "token");
    bool authentic = s->credentials || same_token(token, s->token);
    if (authentic && fedc__msg_int(m, "client", 0, s->population - 1, client))
        return !fedc__server_refuse(s, who, "%s", fedc_errmsg());
    if (authentic && s->credentials) authentic = fedc__credential_verify(s->credential_key, *client, token);
    if (!authentic) {
        s->unauthenticated++;
        return s->credentials ? !fedc__server_refuse(s, who, "the credential is not client %lld's", (long long)*client)
                              : !fedc__server_refuse(s, who, "invalid token");
    }
    heard_from(s, *client);
    return true;
}

/* How long the client lets the server hold this request ("hold_ms", which it
 * keeps below its own timeout), in seconds; false, refused, without it. */
bool fedc__server_hold_allowed(server *s, const fedc__msg *m, double *hold) {
    int64_t ms;
    if (fedc__msg_int(m, "hold_ms", 0, MAX_HOLD_MS, &ms)) return !fedc__server_refuse(s, fedc__msg_field(m, "client"), "%s", fedc_errmsg());
    *hold = (double)ms / 1000;
    return true;
}

static bool checkin(server *s, const fedc__msg *m) {
    const char *who = fedc__msg_field(m, "client"), *hash = fedc__msg_field(m, "plan_hash");
    int64_t client;
    char version[16];
    snprintf(version, sizeof version, "%d", FEDC__PROTOCOL_VERSION);
    double hold = 0;
    if (!fedc__server_known_client(s, m, &client)) return true;
    if (strcmp(fedc__msg_field(m, "version"), version))
        return fedc__server_refuse(s, who, "the client speaks protocol version %.20s; this server speaks %s", fedc__msg_field(m, "version"),
                      version);
    /* every field checked before any is acted on: a malformed check-in is refused whatever the server's state */
    if (!fedc__server_hold_allowed(s, m, &hold)) return true;
    if (!hash[0]) return fedc__server_send_plan(s, &s->from);
    if (strcmp(hash, fedc_plan_hash(s->plan)))
        return fedc__server_refuse(s, who, "plan hash %.64s is not this server's plan (%s)", hash, fedc_plan_hash(s->plan));
    if (s->group_of && s->group_of[client] != s->group) /* a client speaking for another group (groups.h) */
        return fedc__server_refuse(s, who, "client %lld is in group %d of the plan's groups (plan build --groups), and "
                                   "this is the aggregator of group %d: connect it to group %d's aggregator",
                                   (long long)client, (int)s->group_of[client], s->group, (int)s->group_of[client]);
    if (s->done) return fedc__server_done(s, &s->from, client);
    int i = fedc__server_open_slot(s, client);
    if (i >= 0) return fedc__server_task(s, &s->from, i);
    fedc__held_checkin(s, client, hold);
    return true;
}

/* A client's report is ready: told to send it (go) when a grant is free,
 * held until then, or rejected when its slot wants none. */
static bool ready(server *s, const fedc__msg *m) {
    int64_t client, round, exchange, slot;
    if (!fedc__server_known_client(s, m, &client)) return true;
    if (fedc__msg_int(m, "round", FEDC__WARM_ROUND, INT32_MAX, &round) || fedc__msg_int(m, "exchange", 0, 1000, &exchange) ||
        fedc__msg_int(m, "slot", 0, s->k - 1, &slot))
        return fedc__server_refuse(s, fedc__msg_field(m, "client"), "%s", fedc_errmsg());
    double hold = 0;
    if (!fedc__server_hold_allowed(s, m, &hold)) return true;
    bool mine = s->collecting && round == s->round && exchange == s->exchange && s->sampled[slot] == client;
    if (!mine) return reply(s, FEDC__MSG_REJECT, (fedc_metadata_entry[]){{"reason", "not an open slot of this client's"}}, 1, NULL, 0);
    fedc__held_ready(s, client, (int)slot, hold);
    return true;
}

static bool heartbeat(server *s, const fedc__msg *m) {
    int64_t client;
    if (!fedc__server_known_client(s, m, &client)) return true;
    return fedc__server_wait(s, &s->from, fedc__server_beat_ms(s), "heartbeat noted");
}

/* Where a report's tensors do not fit what the aggregation takes: NULL if they do. */
const char *fedc__server_check_uploads(const server *s, const fedc__msg *m, char *why, size_t size) {
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
        int64_t bad = fedc__tensor_first_not_finite(&e);
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
    if (fedc__server_check_uploads(s, m, why, size)) return why;
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
    if (!fedc__server_known_client(s, m, &client)) return true;
    if (strcmp(fedc__msg_field(m, "hash"), fedc_plan_hash(s->plan))) return fedc__server_refuse(s, who, "a report for another plan");
    if (fedc__msg_int(m, "round", FEDC__WARM_ROUND, INT32_MAX, &round) || fedc__msg_int(m, "exchange", 0, 1000, &exchange) ||
        fedc__msg_int(m, "slot", 0, s->k - 1, &slot))
        return fedc__server_refuse(s, who, "%s", fedc_errmsg());
    bool open = !s->done && s->collecting && round == s->round && exchange == s->exchange;
    if (!open && round == s->taken_round[client] && exchange == s->taken_exchange[client]) {
        /* a retried upload of an exchange that has closed */
        s->duplicates++;
        return reply(s, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "0"}}, 1, NULL, 0);
    }
    if (s->done) return fedc__server_refuse(s, who, "a report for round %lld, but the job is over", (long long)round + 1);
    if (!open)
        return fedc__server_refuse(s, who, "a report for round %lld exchange %lld, but round %d exchange %d is open", (long long)round + 1,
                      (long long)exchange, s->round + 1, s->exchange);
    if (s->sampled[slot] != client) return fedc__server_refuse(s, who, "slot %lld of round %d is not this client's", (long long)slot, s->round + 1);
    fedc__slot_state state = fedc__collect_state(s->collect, (int)slot);
    fedc__held_ungrant(s, (int)slot);
    if (state == FEDC__SLOT_DROPPED) {
        s->stragglers++;
        return fedc__server_refuse(s, who, "round %d gave slot %lld up (no heartbeat for %g s) before this report came", s->round + 1,
                      (long long)slot, s->o->heartbeat_timeout);
    }
    if (state != FEDC__SLOT_OPEN) { /* an upload is keyed by (round, slot): counted once */
        s->duplicates++;
        return reply(s, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "0"}}, 1, NULL, 0);
    }
    if (take_report(s, (int)slot, m, why, sizeof why)) return fedc__server_refuse(s, who, "%s", why);
    s->taken_round[client] = (int32_t)round, s->taken_exchange[client] = (int32_t)exchange;
    return reply(s, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "1"}}, 1, NULL, 0);
}

/* A secure round's request (secure.h), from the client of its slot. */
static bool secagg(server *s, const fedc__msg *m) {
    int64_t client, slot;
    if (!fedc__server_known_client(s, m, &client)) return true;
    if (fedc__msg_int(m, "slot", 0, s->k - 1, &slot)) return fedc__server_refuse(s, fedc__msg_field(m, "client"), "%s", fedc_errmsg());
    if (!s->sec || s->sampled[slot] != client)
        return fedc__server_refuse(s, fedc__msg_field(m, "client"), "a secagg request of slot %lld, which is not this client's in a "
                      "secure round", (long long)slot);
    fedc__secure_answer a;
    char retry[32], step[8];
    fedc__secure_request(s->sec, (int)slot, m, &a);
    snprintf(retry, sizeof retry, "%d", a.retry_ms);
    snprintf(step, sizeof step, "%.4s", fedc__msg_field(m, "step"));
    fedc_tensor_entry t = {"secagg", fedc_type_make(FEDC_U8, 1, (int64_t[]){(int64_t)a.size}), a.bytes};
    if (a.type == FEDC__MSG_REJECT) fedc__server_refuse(s, fedc__msg_field(m, "client"), "%s", a.reason);
    else if (a.type == FEDC__MSG_WAIT) fedc__server_wait(s, &s->from, a.retry_ms, a.reason);
    else if (a.type == FEDC__MSG_ACK) reply(s, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "1"}}, 1, NULL, 0);
    else reply(s, a.type, (fedc_metadata_entry[]){{"step", step}}, 1, &t, 1);
    fedc__secure_answer_free(&a);
    return true;
}

/* An aggregator's request (groups.h): the shared token checked here, as a client's. */
static void group_request(server *s, const fedc__msg *m, const void *data, size_t size) {
    if (!s->groups) {
        fedc__server_refuse(s, NULL, "a %s message, but this server runs no groups (--groups)", fedc__msg_name(m->type));
    } else if (!same_token(fedc__msg_field(m, "token"), s->token)) {
        s->unauthenticated++;
        fedc__server_refuse(s, NULL, "invalid token");
    } else {
        fedc__groups_request(s, m, data, size);
    }
}

static void handle(server *s, const void *data, size_t size) {
    fedc__msg m;
    s->bytes_in += (double)size, s->requests++;
    if (fedc__wire_view(data, size, s->net.max, &m)) { /* read in place: the request outlives m */
        fedc__server_refuse(s, NULL, "%s", fedc_errmsg());
        return;
    }
    if (m.type == FEDC__MSG_CHECKIN) checkin(s, &m);
    else if (m.type == FEDC__MSG_REPORT) s->async ? fedc__async_report(s, &m) : report(s, &m);
    else if (m.type == FEDC__MSG_HEARTBEAT) heartbeat(s, &m);
    else if (m.type == FEDC__MSG_READY) s->async ? fedc__async_ready(s, &m) : ready(s, &m);
    else if (m.type == FEDC__MSG_SECAGG) secagg(s, &m);
    else if (fedc__groups_message(m.type)) group_request(s, &m, data, size);
    else fedc__server_refuse(s, NULL, "a %s message is not a client's request", fedc__msg_name(m.type));
    fedc__msg_free(&m);
}

/* Gives up the open slots whose clients, heard from before, have been silent
 * for the heartbeat timeout (since the exchange began, at the earliest): dead,
 * not slow, as a slow client's heartbeats go on. */
static fedc_status give_up_silent(server *s) {
    if (s->async) return fedc__async_give_up_silent(s);
    double now = fedc_seconds();
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && s->collecting && i < s->k; i++) {
        double heard = s->heard[s->sampled[i]];
        if (heard == 0 || fedc__collect_state(s->collect, i) != FEDC__SLOT_OPEN) continue;
        if (now - (heard > s->opened ? heard : s->opened) < s->o->heartbeat_timeout) continue;
        fprintf(s->log, "%s: round %d: client %lld (slot %d) not heard from for %g s: given up\n", s->name, s->round + 1,
                (long long)s->sampled[i], i, s->o->heartbeat_timeout);
        s->missed++;
        if (s->sent[i] == 1) s->sent[i] = 2, s->unconfirmed--, s->recheck = true;
        fedc__held_ungrant(s, i);
        st = fedc__collect_drop(s->collect, i);
    }
    return st;
}

bool fedc__server_settled(const server *s) {
    return (s->collecting && fedc__collect_closed(s->collect)) || (s->unmasking && fedc__secure_settled(s->sec));
}

/* Answers requests until `until` (fedc_seconds), or until what the server
 * waits for is settled. */
fedc_status fedc__server_serve(server *s, double until) {
    double checked = 0;
    while (fedc_seconds() < until && !fedc__server_settled(s)) {
        nng_msg *msg;
        bool timed_out;
        fedc_status st = fedc__net_recv_req(&s->net, &msg, &s->from, &timed_out);
        if (st) return st;
        if (!timed_out) {
            handle(s, nng_msg_body(msg), nng_msg_len(msg));
            nng_msg_free(msg);
            if (s->nheld && s->collecting) fedc__held_after_request(s); /* a report in frees a grant; a heard task, a task */
        }
        if (fedc_seconds() - checked < FEDC__SERVER_RECV_MS / 1000.0) continue; /* the timers, every 50 ms at most */
        checked = fedc_seconds();
        fedc__held_answer(s);
        if ((st = give_up_silent(s))) return st;
        if (s->groups && (st = fedc__groups_tick(s))) return st;
        if ((s->collecting || s->unmasking) && (st = fedc__secure_tick(s->sec, s->collect, checked))) return st;
    }
    return FEDC_OK;
}
