/* A deployment client's task (client.h): the task message read (its round or
 * the warm start, exchange and slot, of the client's plan: client_answer.c), what it carries
 * taken (the last round's state settled, the broadcast values held), its
 * message let go (what it carried is the process's shared copy now), the
 * work done on a trainer's seat with the heartbeats going, the report sent
 * when the server says go; then only the client's state is kept. A secure
 * round's steps come before the work and around the report (client_secure.c). */
#include <string.h>

#include "core/fault.h"
#include "deploy/client.h"

/* Whether the task is of a round whose report the server refused: that round
 * is left alone, unless the task is of an earlier exchange of it (the round
 * started again: another attempt, or a server restarted). */
static bool refused(client *c, const task *t) {
    if (t->round == c->refused_round && t->e < c->refused_exchange) c->refused_round = INT64_MIN;
    return t->round == c->refused_round;
}

/* What task m carries, taken: the last counted round's state settled once a
 * later round's task shows it over, the broadcast values held, and the
 * client's place in the cohort. */
static fedc_status take_task(client *c, const fedc__msg *m, const task *t) {
    fedc_status st = FEDC_OK;
    if (c->pending_round >= 0 && t->round > c->pending_round) st = fedc__client_settle_state(c, m);
    if (!st) st = fedc__client_task_broadcasts(c, m, fedc_deployment_form_phase(c->form, (int)t->e, FEDC_PHASE_CLIENT_WORK),
                                               fedc__client_hold_shared);
    float index = (float)t->slot; /* meta/index, the client's place in the cohort (a warm start's reads it) */
    if (!st) st = fedc__client_hold(c, "meta/index", fedc_type_scalar(FEDC_F32), &index);
    return st;
}

/* A client's work on a seat (fleet.h): its batches loaded, every input bound
 * (the executor ran another client's work before), the phase run, and its
 * outputs kept; the new state waits for the round to commit. */
typedef struct job {
    client *c;
    int64_t round;
    int e;
} job;

static fedc_status run_job(void *arg, fedc_executor *ex) {
    job *j = arg;
    client *c = j->c;
    const fedc_program *q = fedc_deployment_form_phase(c->form, j->e, FEDC_PHASE_CLIENT_WORK);
    fedc_status st = fedc__plan_client_load(c->pc, (uint32_t)j->round, ex, q);
    for (int i = 0; !st && i < fedc_program_num_inputs(q); i++) {
        const char *name = fedc_program_input_name(q, i);
        held *h = fedc__client_find(c, name);
        if (h) st = fedc_executor_bind(ex, name, h->data);
        else if (!fedc__plan_client_input(c->pc, name))
            st = fedc_error(FEDC_EINTERNAL, "client %s: client_work reads \"%s\", which the client does not hold", c->id, name);
    }
    if (!st) st = fedc_executor_run(ex);
    for (int i = 0; !st && i < fedc_program_num_outputs(q); i++) {
        const char *name = fedc_program_output_name(q, i);
        const void *y;
        fedc_type t;
        char next[600];
        snprintf(next, sizeof next, "next/%s", name);
        st = fedc_executor_output(ex, name, &y, &t);
        if (!st) st = fedc__client_hold(c, strncmp(name, "client/", 7) ? name : next, t, y);
    }
    return st;
}

/* Runs exchange e's client_work for `round` (its broadcasts held) on a seat of
 * the process's trainers, and keeps its outputs. */
static fedc_status work(client *c, int64_t round, int e, int64_t slot) {
    job j = {c, round, e};
    return fedc__trainers_run(round == FEDC__WARM_ROUND ? c->warm_trainers : c->trainers, round, e, slot, run_job, &j);
}

/* Test hook (core/fault.h): FEDC_FAULT=slow:S holds each task S seconds before
 * its work (a straggler, or one to kill mid-round), said first, so that a test
 * kills the client only once it holds a task (its first heartbeat sent, so the
 * server counts it heard from). */
static void fault_slow(client *c, const task *t) {
    double s = fedc__fault_seconds(FEDC__FAULT_SLOW);
    if (!(s > 0)) return;
    fprintf(c->log, "fedc client %s: round %lld: exchange %lld's task held %g s (FEDC_FAULT=slow)\n", c->id,
            (long long)t->round + 1, (long long)t->e, s);
    fflush(c->log);
    fedc__client_sleep_ms((int)(s * 1000));
}

fedc_status fedc__client_task(client *c, fedc__msg *m, const task *task_fields) {
    task t = *task_fields;
    fedc_status st;
    if (refused(c, &t)) {
        fedc__client_sleep_ms(200); /* the server refused this round's report; the next round may do */
        return FEDC_OK;
    }
    if ((st = take_task(c, m, &t))) return st;
    int e = (int)t.e;
    bool go = false;
    fedc__client_beat_start(c, m);
    st = fedc__client_secure_share(c, m, e, &go); /* a secure round's first steps: nothing otherwise */
    fedc__msg_free(m);
    if (st) return st;
    if (go) {
        fault_slow(c, &t);
        st = work(c, t.round, e, t.slot);
    }
    fedc__client_beat_stop(c);
    if (!st && go) st = fedc__client_secure_mask(c, e, &go); /* a secure round's masked words: nothing otherwise */
    if (!st && go) st = fedc__client_report(c, &t.id, t.round, e, &go); /* not wanted: the next check-in says */
    if (!st && go) st = fedc__secure_client_unmask(&c->sec); /* a secure round's last step: nothing otherwise */
    if (!st) fedc__client_forget(c, e);
    return st;
}
