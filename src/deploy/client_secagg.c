/* A client's side of secure aggregation in a deployment (secure.h): its SecAgg
 * client (secagg_client.c) driven by the task's "secagg" field, each message
 * sent as a secagg request and each of the server's asked for until it comes.
 * Every wait is bounded by the client's max_seconds. A client that refuses
 * what the server asks (secagg_client.c's checks: both shares of one client)
 * says why in its log, sends nothing and goes on to its next check-in. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fault.h"
#include "deploy/secure.h"

/* Test hooks (core/fault.h): FEDC_FAULT=secagg-exit:R ends the client's
 * process before it sends its message of secure round R (2: its report), as a
 * phone that dies there would; FEDC_FAULT=secagg-garble:R sends round R's
 * message (0, 1 or 3) without its last byte, which the server must refuse. */
static void fault_exit(int r) {
    if (fedc__fault_at(FEDC__FAULT_SECAGG_EXIT, r, -1)) _exit(3);
}

static void stop(fedc__secure_client *c) {
    fedc__sa_client_destroy(c->sa);
    c->sa = NULL;
}

void fedc__secure_client_free(fedc__secure_client *c) { stop(c); }

/* One secagg request of `step` (bytes: the client's message; NULL: ask for the
 * server's) answered into *r. */
static fedc_status request(fedc__secure_client *c, int step, const void *bytes, size_t size, fedc__msg *r) {
    char s[8];
    snprintf(s, sizeof s, "%d", step);
    fedc_metadata_entry f[] = {{"token", c->token}, {"client", c->id}, {"round", c->round}, {"exchange", c->exchange},
                               {"slot", c->slot}, {"session", c->session}, {"step", s}};
    fedc_tensor_entry t = {"secagg", fedc_type_make(FEDC_U8, 1, (int64_t[]){(int64_t)size}), bytes};
    return c->call(c->ctx, FEDC__MSG_SECAGG, f, 7, bytes ? &t : NULL, bytes ? 1 : 0, r);
}

/* Logs the server's refusal; the client leaves this exchange. */
static void left_out(fedc__secure_client *c, int step, const fedc__msg *r) {
    fprintf(c->log, "fedc client %s: round %lld: secure step %d: the server said: %s\n", c->id, atoll(c->round) + 1, step,
            fedc__msg_field(r, "reason"));
    stop(c);
}

/* Sends the client's message of `step`: *ok when acknowledged. */
static fedc_status send_step(fedc__secure_client *c, int step, void *bytes, size_t size, bool *ok) {
    fedc__msg r;
    fault_exit(step);
    if (fedc__fault_at(FEDC__FAULT_SECAGG_GARBLE, step, -1) && size) size--;
    fedc_status st = request(c, step, bytes, size, &r);
    fedc_free(bytes);
    if (st) return st;
    *ok = r.type == FEDC__MSG_ACK;
    if (r.type == FEDC__MSG_REJECT) left_out(c, step, &r);
    else if (!*ok) st = fedc_error(FEDC_EPARSE, "client %s: a secagg message answered by a %s message", c->id, fedc__msg_name(r.type));
    fedc__msg_free(&r);
    return st;
}

/* The server's message opening `step`, asked for until it comes (*got, into
 * *out: fedc__msg_free it; *e: its tensor) or the server refuses. */
static fedc_status await_step(fedc__secure_client *c, int step, fedc__msg *out, fedc_tensor_entry *e, bool *got) {
    *got = false;
    while (fedc_seconds() - c->start < c->max_seconds) {
        int64_t ms = 50;
        fedc_status st = request(c, step, NULL, 0, out);
        if (st) return st;
        if (out->type == FEDC__MSG_SECAGG_REPLY && !fedc_safetensors_find(out->body, "secagg", e) &&
            e->type.dtype == FEDC_U8 && e->type.rank == 1) {
            *got = true;
            return FEDC_OK;
        }
        if (out->type == FEDC__MSG_SECAGG_REPLY)
            st = fedc_error(FEDC_EPARSE, "client %s: the server's secagg message of step %d is not a \"secagg\" tensor of "
                            "bytes", c->id, step);
        else if (out->type == FEDC__MSG_WAIT) st = fedc__msg_int(out, "retry_ms", 0, 30000, &ms);
        else if (out->type == FEDC__MSG_REJECT) left_out(c, step, out);
        else st = fedc_error(FEDC_EPARSE, "client %s: a secagg request answered by a %s message", c->id, fedc__msg_name(out->type));
        bool again = out->type == FEDC__MSG_WAIT && !st;
        fedc__msg_free(out);
        if (!again) return st;
        fedc__client_nap(ms, c->start + c->max_seconds);
    }
    return fedc_error(FEDC_EIO, "client %s: the job did not end within %g s", c->id, c->max_seconds);
}

/* The library refused what the server sent: logged, the exchange left. */
static fedc_status refused(fedc__secure_client *c, int step) {
    fprintf(c->log, "fedc client %s: round %lld: secure step %d: %s\n", c->id, atoll(c->round) + 1, step, fedc_errmsg());
    stop(c);
    return FEDC_OK;
}

/* Rounds 0 and 1, before the work: advertise, then share. */
fedc_status fedc__secure_client_share(fedc__secure_client *c, const fedc__msg *task, const fedc_program *agg, bool *go) {
    const char *field = fedc__msg_field(task, "secagg");
    *go = true;
    stop(c);
    if (!field || !field[0]) return FEDC_OK;
    unsigned t, k, length;
    unsigned long long seed, session;
    int idx[FEDC__SECURE_MAX_INPUTS], n;
    uint64_t words;
    int64_t slot;
    fedc_status st = fedc__msg_int(task, "slot", 0, FEDC__SA_MAX_CLIENTS - 2, &slot);
    if (!st) st = fedc__secure_inputs(agg, idx, &n, &words);
    if (st) return st;
    if (sscanf(field, "%u %u %llu %llu %u", &t, &k, &seed, &session, &length) != 5 || length != words)
        return fedc_error(FEDC_EPARSE, "client %s: the task's secagg field \"%.80s\" is not \"T K SEED SESSION %llu\"",
                          c->id, field, (unsigned long long)words);
    snprintf(c->round, sizeof c->round, "%s", fedc__msg_field(task, "round"));
    snprintf(c->exchange, sizeof c->exchange, "%s", fedc__msg_field(task, "exchange"));
    snprintf(c->slot, sizeof c->slot, "%s", fedc__msg_field(task, "slot"));
    snprintf(c->session, sizeof c->session, "%llu", session);
    fedc__sa_params p = {t, length, k, seed};
    void *msg = NULL;
    size_t size = 0;
    fedc__msg keys;
    fedc_tensor_entry e;
    bool ok = false;
    st = fedc__sa_client_create(&c->sa, (uint32_t)slot + 1, &p);
    if (!st) st = fedc__sa_client_advertise(c->sa, &msg, &size);
    if (!st) st = send_step(c, 0, msg, size, &ok);
    if (!st && ok) st = await_step(c, 1, &keys, &e, &ok);
    if (st || !ok) return *go = false, st;
    st = fedc__sa_client_share(c->sa, e.data, (size_t)e.type.dims[0], &msg, &size);
    fedc__msg_free(&keys);
    if (st) return *go = false, refused(c, 1);
    st = send_step(c, 1, msg, size, &ok);
    *go = !st && ok;
    return st;
}

fedc_status fedc__secure_client_mask(fedc__secure_client *c, const fedc_program *agg, void *const *inputs, bool *go) {
    *go = true;
    if (!c->sa) return FEDC_OK;
    int idx[FEDC__SECURE_MAX_INPUTS], n;
    uint64_t words;
    fedc_status st = fedc__secure_inputs(agg, idx, &n, &words);
    uint32_t *x = st ? NULL : fedc_malloc((size_t)words * sizeof *x + 1);
    if (!st && !x) st = fedc_error(FEDC_ENOMEM, "client: out of memory");
    size_t at = 0;
    for (int i = 0; !st && i < n; i++) {
        fedc_type t = fedc_value_type(agg, fedc_program_input(agg, idx[i]));
        if (!inputs[idx[i]])
            st = fedc_error(FEDC_EINTERNAL, "client %s: no value \"%s\" to mask", c->id, fedc_program_input_name(agg, idx[i]));
        else memcpy(x + at, inputs[idx[i]], (size_t)fedc_type_count(&t) * sizeof *x);
        at += st ? 0 : (size_t)fedc_type_count(&t);
    }
    fedc__msg fwd;
    fedc_tensor_entry e;
    bool ok = false;
    void *msg = NULL;
    size_t size = 0;
    if (!st) st = await_step(c, 2, &fwd, &e, &ok);
    if (!st && ok) {
        st = fedc__sa_client_mask(c->sa, e.data, (size_t)e.type.dims[0], x, &msg, &size);
        fedc__msg_free(&fwd);
        if (st) st = refused(c, 2), ok = false;
    }
    fedc__sa_msg m = {0};
    if (!st && ok && !(st = fedc__sa_decode_as(msg, size, FEDC__SA_MASKED, &m))) /* y into the report's words */
        for (int i = 0, at2 = 0; i < n; i++) {
            fedc_type t = fedc_value_type(agg, fedc_program_input(agg, idx[i]));
            memcpy(inputs[idx[i]], m.words + at2, (size_t)fedc_type_count(&t) * sizeof *x);
            at2 += (int)fedc_type_count(&t);
        }
    fedc__sa_msg_free(&m);
    fedc_free(msg), fedc_free(x);
    *go = !st && ok;
    if (*go) fault_exit(2);
    return st;
}

fedc_status fedc__secure_client_unmask(fedc__secure_client *c) {
    if (!c->sa) return FEDC_OK;
    fedc__msg req;
    fedc_tensor_entry e;
    bool ok = false;
    void *msg = NULL;
    size_t size = 0;
    fedc_status st = await_step(c, 3, &req, &e, &ok);
    if (st || !ok) return stop(c), st;
    st = fedc__sa_client_unmask(c->sa, e.data, (size_t)e.type.dims[0], &msg, &size);
    fedc__msg_free(&req);
    if (st) return refused(c, 3);
    st = send_step(c, 3, msg, size, &ok);
    stop(c);
    return st;
}
