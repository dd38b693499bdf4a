/* A deployment client's report (client.h): once its work is done it asks to
 * send it (a ready), the server answering go when the report may come (its
 * slot near the frontier), and sends what the exchange's aggregation reads;
 * counted, the round's new state waits for the round to commit. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fault.h"
#include "deploy/client.h"

/* Asks to send the report of the task (ready), waiting for the server's go: true
 * when it may; false when the slot wants no report any more (given up, closed).
 * Bounded: each answer comes within hold_ms (and the server's beat interval),
 * and the client's max_seconds bound the whole. */
static fedc_status may_report(client *c, const task_id *task, double start, bool *go) {
    fedc_metadata_entry f[] = {{"token", c->token}, {"client", c->id},
                               {"round", task->round}, {"exchange", task->exchange}, {"slot", task->slot},
                               {"hold_ms", c->hold_ms}};
    *go = false;
    while (fedc_seconds() - start < c->o->max_seconds) {
        fedc__msg r;
        fedc_status st = fedc__client_call(c, FEDC__MSG_READY, f, 6, NULL, 0, &r);
        if (st) return st;
        fedc__msg_type type = r.type;
        fedc__client_answer a; /* a wait's ms: 0 once a held ready's hold ends, more when the server holds all it can */
        st = fedc__client_read_answer(c, FEDC__ASKED_READY, &r, &a);
        if (type == FEDC__MSG_REJECT)
            fprintf(c->log, "fedc client %s: round %lld: the server wants no report: %s\n", c->id,
                    atoll(task->round) + 1, fedc__msg_field(&r, "reason"));
        fedc__msg_free(&r);
        if (st) return st;
        if (type == FEDC__MSG_GO) *go = true;
        if (type == FEDC__MSG_GO || type == FEDC__MSG_REJECT) return FEDC_OK;
        fedc__client_nap(a.ms, start + c->o->max_seconds); /* as told, not at once: a server answering at once is not hammered */
    }
    return fedc_error(FEDC_EIO, "client %s: the job did not end within %g s", c->id, c->o->max_seconds);
}

/* The report: what exchange e's aggregation reads, from the client's values;
 * over the client's connection, or `over` another one (NULL: the client's). */
static fedc_status send_report_over(client *c, fedc__net *over, const task_id *task, int e, fedc__msg *reply) {
    const fedc_program *agg = fedc_deployment_form_phase(c->form, e, FEDC_PHASE_AGGREGATION);
    int n = fedc_program_num_inputs(agg);
    fedc_tensor_entry *t = fedc_calloc((size_t)n + 1, sizeof *t);
    fedc_status st = t ? FEDC_OK : fedc_error(FEDC_ENOMEM, "client: out of memory");
    for (int i = 0; !st && i < n; i++) {
        const char *name = fedc_program_input_name(agg, i);
        held *h = fedc__client_find(c, name);
        const void *own = h ? NULL : fedc__plan_client_input(c->pc, name); /* an input it aggregates itself */
        fedc_type type = fedc_value_type(agg, fedc_program_input(agg, i));
        type.placement = FEDC_LOCAL;
        if (h) t[i] = (fedc_tensor_entry){h->name, h->type, h->data};
        else if (own) t[i] = (fedc_tensor_entry){name, type, own};
        else st = fedc_error(FEDC_EUNSUPPORTED, "client %s: the aggregation reads \"%s\", which the client does not hold",
                             c->id, name);
    }
    fedc_metadata_entry f[] = {{"token", c->token}, {"client", c->id},
                               {"round", task->round}, {"exchange", task->exchange}, {"slot", task->slot},
                               {"hash", fedc_plan_hash(c->plan)}};
    if (!st && over) st = fedc__net_call(over, FEDC__MSG_REPORT, f, 6, t, n, reply);
    else if (!st) st = fedc__client_call(c, FEDC__MSG_REPORT, f, 6, t, n, reply);
    fedc_free(t);
    return st;
}

static fedc_status send_report(client *c, const task_id *task, int e, fedc__msg *reply) {
    return send_report_over(c, NULL, task, e, reply);
}

/* Test hooks (core/fault.h): FEDC_FAULT=report-twice sends every report again
 * after its ack, as a client whose answer was lost would, and report-replay
 * over a connection of its own, as someone who replays a recorded report would
 * (the server counts it once, either way); FEDC_FAULT=exit-after-report:R ends
 * the process once round R's report was counted (and the state saved), as a
 * phone that dies between rounds would. */
static fedc_status fault_report_twice(client *c, const task_id *task, int e, fedc__msg *r) {
    bool twice = fedc__fault_on(FEDC__FAULT_REPORT_TWICE), replay = fedc__fault_on(FEDC__FAULT_REPORT_REPLAY);
    if (r->type != FEDC__MSG_ACK || !(twice || replay)) return FEDC_OK;
    fedc__net other = {0};
    fedc_status st = replay ? fedc__net_dial(&other, c->o->connect, c->o->max_message, (int)(c->o->timeout * 1000),
                                             &(fedc__tls){.ca = c->o->tls_ca, .server_name = c->o->tls_server_name})
                            : FEDC_OK;
    fedc__msg_free(r);
    if (!st) st = send_report_over(c, replay ? &other : NULL, task, e, r);
    if (!st && (r->type != FEDC__MSG_ACK || strcmp(fedc__msg_field(r, "counted"), "0")))
        st = fedc_error(FEDC_EINTERNAL, "client %s: a %s report was answered %s, not \"counted 0\"", c->id,
                        replay ? "replayed" : "repeated",
                        r->type == FEDC__MSG_REJECT ? fedc__msg_field(r, "reason") : "otherwise");
    fedc__net_close(&other);
    return st;
}

static void fault_exit_after_report(int64_t round) {
    if (fedc__fault_at(FEDC__FAULT_EXIT_AFTER_REPORT, round + 1, -1)) _exit(3);
}

/* The server's answer r to the report of `round`'s exchange e: refused (the
 * round left alone from then on), or counted (its state the client's once the
 * round commits with it added; saved at once). */
static fedc_status take_answer(client *c, const fedc__msg *r, int64_t round, int e) {
    fedc__client_answer a;
    fedc_status st = fedc__client_read_answer(c, FEDC__ASKED_REPORT, r, &a);
    if (!st && r->type == FEDC__MSG_REJECT) {
        fprintf(c->log, "fedc client %s: round %lld: the server refused the report: %s\n", c->id, (long long)round + 1,
                fedc__msg_field(r, "reason"));
        c->refused_round = round, c->refused_exchange = e;
        return FEDC_OK;
    }
    if (st) return st;
    c->reported++;
    c->pending_round = round; /* counted: its state is the client's once the round commits, if added */
    st = fedc__client_save_state(c);
    if (!st) fault_exit_after_report(round);
    return st;
}

fedc_status fedc__client_report(client *c, const task_id *task, int64_t round, int e, bool *sent) {
    fedc__msg r = {0};
    fedc_status st = may_report(c, task, c->start, sent);
    if (!st && *sent) st = send_report(c, task, e, &r);
    if (!st && *sent) st = fault_report_twice(c, task, e, &r);
    if (!st && *sent) st = take_answer(c, &r, round, e);
    fedc__msg_free(&r);
    return st;
}
