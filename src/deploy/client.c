/* The deployment's clients (fedc/deploy.h): each asks its server for the plan,
 * verifies it (fedc_plan_from_files: the hash, the form, the tensors) before it
 * runs anything, then checks in until the server says the job is done:
 *
 *     task   -> of the round's program or the warm start's (its "program"),
 *               its batches of that round (as fedc train loads them), the
 *               broadcast values checked against client_work's inputs, the
 *               phase run (heartbeats sent meanwhile, every heartbeat_ms), and
 *               what the aggregation reads sent up as a report
 *     wait   -> check in again after retry_ms (0 to 30 s)
 *     done   -> finished
 *     reject -> the server's reason; a refused report leaves that round alone
 *
 * A client that keeps state (SCAFFOLD's c_i) starts from the plan's
 * client_init; a round's new state replaces it once the round has committed
 * (a later task, or done), so a dropped or retried round leaves it as it was.
 * With a state directory it is also on disk after every change
 * (client_state.h), and a client started again goes on from there.
 *
 * Every loop is bounded by the options' timeout and max_seconds. The client's
 * files: client.h. */
#include <string.h>
#include <time.h>

#include "deploy/client.h"
#include "deploy/credential.h"

void fedc_client_defaults(fedc_client_options *o) {
    memset(o, 0, sizeof *o);
    o->timeout = 60;
    o->max_seconds = 86400;
    o->max_message = (size_t)256 << 20;
    o->threads = 1;
}

void fedc__client_sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* A wait as a server asks for it: a server that says "retry in an hour" must
 * not keep the client past its own bound. */
void fedc__client_nap(int64_t ms, double deadline) {
    double left = deadline - fedc_seconds();
    if (ms > 30000) ms = 30000;
    if (left * 1000 < (double)ms) ms = left > 0 ? (int64_t)(left * 1000) + 1 : 0;
    if (ms > 0) fedc__client_sleep_ms((int)ms);
}

/* A request and its answer, the connection held meanwhile. */
fedc_status fedc__client_call(client *c, fedc__msg_type type, const fedc_metadata_entry *f, int nf,
                              const fedc_tensor_entry *t, int nt, fedc__msg *reply) {
    if (c->beat) pthread_mutex_lock(&c->beat->lock);
    fedc_status st = fedc__net_call(&c->net, type, f, nf, t, nt, reply);
    if (c->beat) pthread_mutex_unlock(&c->beat->lock);
    return st;
}

static fedc_status checkin(client *c, const char *hash, fedc__msg *reply) {
    char version[16];
    snprintf(version, sizeof version, "%d", FEDC__PROTOCOL_VERSION);
    fedc_metadata_entry f[] = {{"token", c->token}, {"client", c->id}, {"version", version},
                               {"plan_hash", hash}, {"hold_ms", c->hold_ms}};
    return fedc__client_call(c, FEDC__MSG_CHECKIN, f, 5, NULL, 0, reply);
}

/* The plan, from the server: its files checked as any plan is, and its hash
 * against the one the server gave. */
fedc_status fedc__client_fetch_plan(client *c, fedc_plan **out) {
    fedc__msg m;
    fedc__client_answer a;
    *out = NULL;
    fedc_status st = checkin(c, "", &m);
    if (st) return st;
    st = fedc__client_read_answer(c, FEDC__ASKED_PLAN, &m, &a);
    fedc__msg_free(&m);
    *out = a.plan;
    return st;
}

/* Checks in until done, at most o->max_seconds. */
fedc_status fedc__client_loop(client *c) {
    double start = c->start = fedc_seconds();
    while (fedc_seconds() - start < c->o->max_seconds) {
        fedc__msg m;
        fedc_status st = checkin(c, fedc_plan_hash(c->plan), &m);
        if (st) return st;
        fedc__client_answer a;
        st = fedc__client_read_answer(c, FEDC__ASKED_CHECKIN, &m, &a);
        if (!st && m.type == FEDC__MSG_DONE) {
            if (c->pending_round >= 0) st = fedc__client_settle_state(c, &m);
            fedc__msg_free(&m);
            return st;
        }
        if (!st && m.type == FEDC__MSG_TASK) st = fedc__client_task(c, &m, &a.task);
        fedc__msg_free(&m);
        if (st) return st;
        if (m.type == FEDC__MSG_WAIT) fedc__client_nap(a.ms, start + c->o->max_seconds); /* as told, within the bounds */
    }
    return fedc_error(FEDC_EIO, "client %s: the job did not end within %g s", c->id, c->o->max_seconds);
}

void fedc__client_free(client *c) {
    if (c->beat) pthread_mutex_lock(&c->beat->lock); /* not while a heartbeat is on the wire */
    if (c->beat) atomic_store(&c->beat->working, 0);
    if (c->beat) pthread_mutex_unlock(&c->beat->lock);
    fedc__secure_client_free(&c->sec);
    fedc__client_unhold_all(c);
    fedc__plan_client_destroy(c->pc);
    fedc__net_close(&c->net);
}

/* A client of `plan` on `data`, connected. */
fedc_status fedc__client_init(client *c, const fedc_client_options *o, int64_t id) {
    memset(c, 0, sizeof *c);
    c->o = o;
    c->log = o->log ? o->log : stderr;
    c->pending_round = -1;
    c->refused_round = INT64_MIN; /* none: -1 is the warm start's */
    snprintf(c->id, sizeof c->id, "%lld", (long long)id);
    if (!o->connect || !o->data || !(o->timeout > 0) || !(o->max_seconds > 0))
        return fedc_error(FEDC_EINVAL, "client: needs an address, data, a timeout and max_seconds above 0");
    if (o->credentials_dir) {
        fedc_status st = fedc__credential_read(o->credentials_dir, id, c->token);
        if (st) return st;
    } else if (o->token && strlen(o->token) >= sizeof c->token) {
        return fedc_error(FEDC_EINVAL, "client: the token must be at most %zu bytes", sizeof c->token - 1);
    } else {
        snprintf(c->token, sizeof c->token, "%s", o->token ? o->token : "");
    }
    /* half the timeout: the server's answer to a request it held still comes in time when it is busy (an
     * aggregation, a checkpoint) as the hold ends; an hour at most (the protocol's bound) */
    snprintf(c->hold_ms, sizeof c->hold_ms, "%d", o->timeout < 7200 ? (int)(o->timeout * 500) : 3600000);
    return fedc__net_dial(&c->net, o->connect, o->max_message, (int)(o->timeout * 1000),
                          &(fedc__tls){.ca = o->tls_ca, .server_name = o->tls_server_name});
}

fedc_status fedc__client_start(client *c, const fedc_plan *plan, fedc__plan_data *d, int64_t id, const fedc__commons *k) {
    c->plan = plan;
    c->form = fedc_plan_form(plan);
    c->exchanges = fedc_deployment_form_exchanges(c->form);
    c->trainers = k->trainers, c->warm_trainers = k->warm_trainers, c->shared = k->shared;
    fedc_status st = fedc__plan_client_create(d, id, &c->pc);
    if (!st) st = fedc__client_init_state(c);
    return st ? st : fedc__client_restore_state(c);
}

fedc_status fedc_client_run(const fedc_client_options *o) {
    client c;
    beater t;
    fedc_plan *plan = NULL;
    fedc__plan_data *d = NULL;
    fedc__commons k = {0};
    fedc_status st = fedc__beater_start(&t, 1);
    fedc_status st2 = fedc__client_init(&c, o, o->client);
    if (!st) st = st2;
    c.beat = t.beats;
    if (!st) st = fedc__client_fetch_plan(&c, &plan);
    if (!st) st = fedc__plan_data_open(plan, o->data, &d);
    if (!st) st = fedc__commons_create(&k, o, plan, 1);
    if (!st) st = fedc__client_start(&c, plan, d, o->client, &k);
    if (!st) fprintf(c.log, "fedc client %s: ready, plan %.16s..., server %s\n", c.id, fedc_plan_hash(plan), o->connect);
    if (!st) st = fedc__client_loop(&c);
    if (!st) fprintf(c.log, "fedc client %s: done: %d reports\n", c.id, c.reported);
    fedc__client_free(&c);
    fedc__commons_destroy(&k);
    fedc__beater_stop(&t);
    fedc__plan_data_destroy(d);
    fedc_plan_destroy(plan);
    return st;
}
