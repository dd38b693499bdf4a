/* The deployment's asynchronous server: `fedc server --async K --concurrency C`
 * on a plan of fedbuff or fedasync (docs/deployment-async.md), FedBuff and
 * FedAsync over the network as src/fl/train_async.c simulates them:
 *
 *     up to C clients train at once, each on the model version its task
 *         carried; a free place goes to the client whose check-in has waited
 *         longest, with the next dispatch number d (its batches are round
 *         d / C's, as the simulation's; a client at most once in a block of C)
 *     a report is taken as it comes: its staleness τ = the server steps since
 *         its version, its weight s(τ) applied (below), added in the step's
 *         next place, its line appended to DIR/arrivals.jsonl; its place goes
 *         to the next client at once
 *     every K reports: server_result (the server optimizer's step), the
 *         checkpoint and a metrics row; the model is the next version
 *         (FedAsync: K = 1, so its mixing w - α s(τ) (w - w_client) runs as
 *         each report comes, on the model of that moment)
 *
 * Nothing waits for a straggler: a client silent for --heartbeat-timeout, or in
 * flight for --report-deadline, is given up and its place given to another; its
 * late report is refused. The arrival log holds all of the run's inputs (which
 * client, which batches, which version, in which order), so `fedc train
 * --replay DIR/arrivals.jsonl` with the job's flags gives the deployed model,
 * bit for bit.
 *
 * The staleness weight: FedBuff's client_work ends in mul(X, s) for the values
 * that carry s (a report's weight; its delta with normalize=1), but s is known
 * only once the report has come, after the client worked. So a task carries
 * s = 1 (X * 1 is X exactly) and the server multiplies those values by s(τ) as
 * they come: the simulation's product, rounded as it is. FedAsync's s is the
 * server's own input (@server, read by server_result with the client's model,
 * which is what it sends): the server sets it to the step's one report's s(τ).
 * A plan whose client_work uses s otherwise, or reads the model at the arrival
 * (FedAsync's w - w_client under an aggregator, src/fl/fedbuff.c), is refused.
 *
 * A checkpoint is written after every step. A server started again on it goes
 * on from that step, the log cut back to it: the clients that were in flight
 * are not waited for (their reports are refused, and they are given new tasks
 * as they check in), as if they had been given up, so the log still holds the
 * run's inputs, and the replay the resumed run's bits. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "deploy/held.h"
#include "fl/fedbuff.h"

typedef struct flight {
    int64_t client; /* -1: a free place */
    uint64_t dispatch;
    int version;    /* the server step whose model the task carried */
    double since;   /* when the task went out */
} flight;

struct fedc__async {
    int k, c;
    uint64_t dispatched;
    flight *flights;           /* [c] */
    int32_t *flight_of;        /* per client: its place, or -1 */
    int64_t *last_block;       /* per client: the block of its last dispatch (-1: none) */
    int kind;                  /* the staleness weight, the plan's async_staleness */
    double a, b, avg;
    float one;                 /* the s a task carries */
    float arrival;             /* the s(τ) of the step's one report, where server_result reads s (FedAsync's) */
    fedc_tensor_entry task[4096]; /* a task's async/ values: the current model as async/start/<leaf>, s */
    int ntask;
    const char *scaled[4096];  /* client_work's outputs that are mul(X, s) */
    int nscaled;
    bool *scale;               /* per upload of the step: multiplied by s(τ) */
    float **buf;               /* per upload: its values times s(τ) */
    FILE *arrivals;
    double t0;                 /* the run's start: an arrival's time counts from it */
    int taken;                 /* reports in the step's buffer */
    int given_up, stragglers, sent; /* in the step */
    int max_staleness;
    double staleness;          /* the step's sum */
};

/* ------------------------------------------------------------- set-up -- */

static fedc_status refused(const server *s, const char *why) {
    return fedc_error(FEDC_EINVAL, "server: --async: %s (%s)", why, s->o->plan);
}

/* Where client_work reads s, async/staleness_weight: only as a factor of a
 * value it sends (mul(X, s), read by nothing else), whose names are kept. */
static fedc_status weight_uses(fedc__async *a, const server *s, const fedc_program *q) {
    fedc_value w = fedc_program_find_input(q, FEDC_ASYNC_WEIGHT);
    for (int v = 0; w != FEDC_NONE && v < q->n; v++) {
        const fedc__node *n = &q->nodes[v];
        bool reads = false, used = false;
        for (int i = 0; i < n->nin; i++) reads |= n->in[i] == w;
        if (!reads) continue;
        for (int u = v + 1; u < q->n; u++)
            for (int i = 0; i < q->nodes[u].nin; i++) used |= q->nodes[u].in[i] == v;
        if (n->op != FEDC_OP_MUL || n->nin != 2 || (n->in[0] == w) == (n->in[1] == w) || n->type.dtype != FEDC_F32 || used)
            return refused(s, "the plan's client_work uses the staleness weight otherwise than as the last factor of a "
                              "value it sends, which the server cannot apply when the report comes");
        for (int j = 0; j < q->noutputs && a->nscaled < 4096; j++)
            if (q->outputs[j].value == v) a->scaled[a->nscaled++] = q->outputs[j].name;
    }
    return FEDC_OK;
}

/* A task's async/ values: async/start/<leaf> the server's params/<leaf> (the
 * state the server steps), async/staleness_weight 1. */
static fedc_status task_values(fedc__async *a, const server *s, const fedc_program *q) {
    for (int i = 0; i < fedc_program_num_inputs(q); i++) {
        const char *name = fedc_program_input_name(q, i);
        if (!strncmp(name, "broadcast/", 10))
            return refused(s, "the plan's client_work reads the server's model when the report comes (fedasync's "
                              "w - w_client under --dp-clip, --robust-zero, --compress or an attack, which act on each "
                              "client's update), which a client that trained on an earlier version does not have");
        if (strncmp(name, "async/", 6)) continue;
        if (a->ntask == 4096) return refused(s, "the plan's client_work reads more than 4096 async/ values");
        fedc_type t = fedc_value_type(q, fedc_program_input(q, i));
        t.placement = FEDC_LOCAL;
        const void *data = !strcmp(name, FEDC_ASYNC_WEIGHT) ? &a->one : NULL;
        char want[600];
        snprintf(want, sizeof want, "server/params/%s", name + strlen(FEDC_ASYNC_START "/"));
        for (int j = 0; !data && !strncmp(name, FEDC_ASYNC_START "/", strlen(FEDC_ASYNC_START "/")) && j < s->ntensors; j++)
            if (!strcmp(fedc_plan_tensor(s->plan, j).name, want)) data = s->state[j];
        if (!data) return refused(s, "the plan's client_work reads an async/ value the server does not know");
        a->task[a->ntask++] = (fedc_tensor_entry){name, t, data};
    }
    return FEDC_OK;
}

/* Where server_result reads s (FedAsync's, @server): bound to the step's one
 * report's s(τ), set as the report is taken; a step of K > 1 reports has no
 * one s. */
static fedc_status arrival_weight(fedc__async *a, server *s) {
    const fedc_program *round = fedc_plan_round(s->plan);
    fedc_value w = fedc_program_find_input(round, FEDC_ASYNC_WEIGHT);
    if (w == FEDC_NONE || fedc_value_type(round, w).placement != FEDC_SERVER) return FEDC_OK;
    if (a->k != 1) {
        char why[160];
        snprintf(why, sizeof why, "--async %d, but fedasync mixes each report in as it comes: a step of one (--async 1)",
                 a->k);
        return refused(s, why);
    }
    return fedc_deployment_run_bind(s->run, FEDC_ASYNC_WEIGHT, &a->arrival);
}

/* What the plan must be: fedbuff's or fedasync's one exchange, no warm start,
 * client state or secure aggregation; its staleness weight read. */
static fedc_status check_plan(fedc__async *a, server *s) {
    const fedc_server_options *o = s->o;
    const char *alg = fedc_plan_setting(s->plan, "algorithm"), *w = fedc_plan_setting(s->plan, "async_staleness");
    if (!alg || (strcmp(alg, "fedbuff") && strcmp(alg, "fedasync")) || !w)
        return refused(s, "the plan is not of fedbuff or fedasync (build it with fedc plan build --algorithm fedbuff "
                          "or fedasync)");
    if (sscanf(w, "%d %lf %lf %lf", &a->kind, &a->a, &a->b, &a->avg) != 4 || isnan(fedc__staleness_weight(a->kind, a->a, a->b, a->avg, 0)))
        return refused(s, "the plan's async_staleness setting is not a staleness weight");
    if (o->secure_agg || o->over_select != 1 || o->groups || fedc_plan_warm_start(s->plan) || fedc_plan_client_init(s->plan))
        return refused(s, "secure aggregation, over-selection, aggregators (--groups), a warm start and client state "
                          "are for synchronous rounds");
    if (fedc_deployment_form_exchanges(s->form) != 1) return refused(s, "the plan's round has several exchanges");
    if (a->c < 1 || a->c > s->population) {
        char why[160];
        snprintf(why, sizeof why, "--concurrency %d, but the plan's population is %lld clients", a->c, (long long)s->population);
        return refused(s, why);
    }
    const fedc_program *q = fedc_deployment_form_phase(s->form, 0, FEDC_PHASE_CLIENT_WORK);
    fedc_status st = task_values(a, s, q); /* first: a client_work that reads the model at the arrival is why */
    if (!st) st = weight_uses(a, s, q);
    return st ? st : arrival_weight(a, s);
}

fedc_status fedc__async_create(server *s) {
    const fedc_server_options *o = s->o;
    fedc__async *a = s->async = fedc_calloc(1, sizeof *a);
    if (!a) return fedc_error(FEDC_ENOMEM, "server: out of memory");
    a->k = s->k, a->c = o->concurrency > 0 ? o->concurrency : o->clients_per_round, a->one = 1;
    fedc_status st = check_plan(a, s);
    if (st) return st;
    size_t pop = (size_t)s->population;
    a->flights = fedc_calloc((size_t)a->c, sizeof *a->flights);
    a->flight_of = fedc_malloc(pop * sizeof *a->flight_of);
    a->last_block = fedc_malloc(pop * sizeof *a->last_block);
    a->scale = fedc_calloc(4096, sizeof *a->scale);
    a->buf = fedc_calloc(4096, sizeof *a->buf);
    if (!a->flights || !a->flight_of || !a->last_block || !a->scale || !a->buf)
        return fedc_error(FEDC_ENOMEM, "server: out of memory");
    for (int i = 0; i < a->c; i++) a->flights[i].client = -1;
    for (size_t i = 0; i < pop; i++) a->flight_of[i] = -1, a->last_block[i] = -1;
    fprintf(s->log, "fedc server: asynchronous: a server step every %d reports, %d clients training at once\n", a->k, a->c);
    return FEDC_OK;
}

void fedc__async_destroy(fedc__async *a) {
    if (!a) return;
    for (int i = 0; a->buf && i < 4096; i++) fedc_free(a->buf[i]);
    if (a->arrivals) fclose(a->arrivals);
    fedc_free(a->flights), fedc_free(a->flight_of), fedc_free(a->last_block), fedc_free(a->scale), fedc_free(a->buf);
    fedc_free(a);
}

/* ---------------------------------------------------- the clients in flight -- */

static void release(server *s, int place) {
    fedc__async *a = s->async;
    a->flight_of[a->flights[place].client] = -1;
    a->flights[place].client = -1;
    s->recheck = true; /* a held check-in may have this place now */
}

static bool mine(const server *s, int64_t client, int64_t round, int64_t place) {
    const fedc__async *a = s->async;
    return !s->done && place < a->c && a->flights[place].client == client &&
           (int64_t)(a->flights[place].dispatch / (uint64_t)a->c) == round;
}

/* A place for client, reserved for it (its task is sent next), or -1: none
 * free, the step's buffer full (the next clients start on the next version),
 * or the job done. A client in flight that checks in has lost its task (it
 * started again): that place is given up for a new one. */
int fedc__async_open_slot(const server *s, int64_t client) {
    fedc__async *a = s->async;
    if (s->done || !s->collecting || fedc__collect_closed(s->collect)) return -1;
    if (a->flight_of[client] >= 0) release((server *)s, a->flight_of[client]);
    int place = -1;
    for (int i = 0; i < a->c && place < 0; i++)
        if (a->flights[i].client < 0) place = i;
    if (place < 0) return -1;
    uint64_t block = a->dispatched / (uint64_t)a->c;
    if (a->last_block[client] == (int64_t)block) a->dispatched = (block + 1) * (uint64_t)a->c; /* its batches again: next block */
    a->flights[place] = (flight){client, a->dispatched++, s->round, fedc_seconds()};
    a->flight_of[client] = place;
    a->last_block[client] = (int64_t)(a->flights[place].dispatch / (uint64_t)a->c);
    a->sent++;
    return place;
}

bool fedc__async_task(server *s, const fedc__req *to, int place) {
    const flight *f = &s->async->flights[place];
    return fedc__server_send_task(s, to, (int64_t)(f->dispatch / (uint64_t)s->async->c), place, f->client);
}

/* Fields round (the task's block), exchange and slot (its place), checked. */
static bool task_fields(server *s, const fedc__msg *m, int64_t *round, int64_t *place) {
    int64_t exchange;
    if (fedc__msg_int(m, "round", 0, INT32_MAX, round) || fedc__msg_int(m, "exchange", 0, 0, &exchange) ||
        fedc__msg_int(m, "slot", 0, s->async->c - 1, place))
        return !fedc__server_refuse(s, fedc__msg_field(m, "client"), "%s", fedc_errmsg());
    return true;
}

/* A report is taken as it comes: "go" at once to a client in flight. */
bool fedc__async_ready(server *s, const fedc__msg *m) {
    int64_t client, round, place;
    double hold;
    if (!fedc__server_known_client(s, m, &client) || !task_fields(s, m, &round, &place) ||
        !fedc__server_hold_allowed(s, m, &hold))
        return true;
    if (!mine(s, client, round, place))
        return fedc__server_reply_to(s, &s->from, FEDC__MSG_REJECT,
                                     (fedc_metadata_entry[]){{"reason", "not a task of this client's in flight"}}, 1, NULL, 0);
    return fedc__server_reply_to(s, &s->from, FEDC__MSG_GO, NULL, 0, NULL, 0);
}

/* The report's values, those that carry s multiplied by w (into a->buf). */
static fedc_status weighed(server *s, const fedc__msg *m, float w, const void **values) {
    fedc__async *a = s->async;
    for (int j = 0; j < s->nup; j++) {
        fedc_tensor_entry e;
        fedc_safetensors_find(m->body, s->up[j].name, &e);
        values[j] = e.data;
        if (!a->scale[j]) continue;
        size_t n = s->up[j].bytes / sizeof(float);
        if (!a->buf[j] && !(a->buf[j] = fedc_malloc(s->up[j].bytes + sizeof(float))))
            return fedc_error(FEDC_ENOMEM, "server: out of memory");
        for (size_t i = 0; i < n; i++) {
            float x;
            memcpy(&x, (const char *)e.data + i * sizeof x, sizeof x);
            a->buf[j][i] = x * w;
        }
        values[j] = a->buf[j];
    }
    return FEDC_OK;
}

/* A report of a client in flight: weighed by its staleness, added in the
 * step's next place, logged; its place freed for the next client. */
bool fedc__async_report(server *s, const fedc__msg *m) {
    fedc__async *a = s->async;
    const char *who = fedc__msg_field(m, "client");
    int64_t client, round, place;
    char why[400];
    if (!fedc__server_known_client(s, m, &client)) return true;
    if (strcmp(fedc__msg_field(m, "hash"), fedc_plan_hash(s->plan))) return fedc__server_refuse(s, who, "a report for another plan");
    if (!task_fields(s, m, &round, &place)) return true;
    if (round == s->taken_round[client] && place == s->taken_exchange[client]) { /* a retried upload */
        s->duplicates++;
        return fedc__server_reply_to(s, &s->from, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "0"}}, 1, NULL, 0);
    }
    if (!mine(s, client, round, place) || !s->collecting || fedc__collect_closed(s->collect)) {
        a->stragglers++;
        return fedc__server_refuse(s, who, "not a task of this client's in flight (given up, or the job is over)");
    }
    if (fedc__server_check_uploads(s, m, why, sizeof why)) return fedc__server_refuse(s, who, "%s", why);
    flight f = a->flights[place];
    int tau = s->round - f.version;
    const void *values[4096];
    a->arrival = (float)fedc__staleness_weight(a->kind, a->a, a->b, a->avg, tau);
    fedc_status st = weighed(s, m, a->arrival, values);
    if (!st) st = fedc__collect_add(s->collect, a->taken, values);
    if (st) return fedc__server_refuse(s, who, "the server could not take it: %s", fedc_errmsg());
    if (!fedc__arrival_write(a->arrivals, s->round + 1, f.client, f.dispatch, f.version, fedc_seconds() - a->t0))
        fprintf(s->log, "fedc server: cannot write %s/arrivals.jsonl: %s\n", s->o->out_dir, strerror(errno));
    a->taken++, a->staleness += tau;
    if (tau > a->max_staleness) a->max_staleness = tau;
    release(s, (int)place);
    s->taken_round[client] = (int32_t)round, s->taken_exchange[client] = (int32_t)place;
    s->added_round[client] = (int32_t)round; /* taken: the client is told so with its next task */
    return fedc__server_reply_to(s, &s->from, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", "1"}}, 1, NULL, 0);
}

fedc_status fedc__async_give_up_silent(server *s) {
    fedc__async *a = s->async;
    double now = fedc_seconds();
    for (int i = 0; i < a->c; i++) {
        const flight *f = &a->flights[i];
        if (f->client < 0) continue;
        double heard = s->heard[f->client] > f->since ? s->heard[f->client] : f->since;
        bool silent = now - heard >= s->o->heartbeat_timeout, late = now - f->since >= s->o->report_deadline;
        if (!silent && !late) continue;
        fprintf(s->log, "fedc server: step %d: client %lld (place %d) %s: given up, its place to another\n", s->round + 1,
                (long long)f->client, i, silent ? "not heard from for the heartbeat timeout" : "past --report-deadline");
        s->missed++, a->given_up++;
        release(s, i);
    }
    return FEDC_OK;
}

/* ---------------------------------------------------------------- steps -- */

/* Which of the step's uploads carry s. */
static void mark_scaled(server *s) {
    fedc__async *a = s->async;
    for (int j = 0; j < s->nup; j++) {
        a->scale[j] = false;
        for (int i = 0; i < a->nscaled; i++) a->scale[j] |= !strcmp(s->up[j].name, a->scaled[i]);
    }
}

static void log_step(server *s, int r, float loss, float examples, const double *t, double in, double out, double requests) {
    fedc__async *a = s->async;
    int flying = 0;
    for (int i = 0; i < a->c; i++) flying += a->flights[i].client >= 0;
    fprintf(s->metrics, "{\"round\": %d, \"step\": %d, \"reported\": %d, \"sent\": %d, \"in_flight\": %d, \"given_up\": %d, "
            "\"stragglers\": %d, \"refused\": %d, \"duplicates\": %d, \"staleness\": {\"max\": %d, \"mean\": %.6g}, "
            "\"bytes_in\": %.0f, \"bytes_out\": %.0f, \"requests\": %.0f, \"train_loss\": %.9g, \"examples\": %.0f, "
            "\"seconds\": {\"prepare\": %.6f, \"collect\": %.6f, \"result\": %.6f, \"checkpoint\": %.6f, \"round\": %.6f}}\n",
            r + 1, r + 1, a->taken, a->sent, flying, a->given_up, a->stragglers, s->refused, s->duplicates,
            a->max_staleness, a->taken ? a->staleness / a->taken : 0.0, s->bytes_in - in, s->bytes_out - out,
            s->requests - requests, loss, examples, t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3], t[4] - t[0]);
    fflush(s->metrics);
}

/* Step r: the reports taken as they come until K are in, then the server's
 * step on them, checkpointed. */
static fedc_status step(server *s, int r) {
    fedc__async *a = s->async;
    double t[5], in = s->bytes_in, out = s->bytes_out, requests = s->requests;
    int refused0 = s->refused, duplicates0 = s->duplicates;
    t[0] = fedc_seconds();
    s->round = r, s->exchange = 0;
    a->taken = a->given_up = a->stragglers = a->sent = a->max_staleness = 0, a->staleness = 0;
    fedc_status st = fedc__deployment_run_phase(s->run, 0, FEDC_PHASE_SERVER_PREPARE, NULL);
    if (!st) st = fedc__server_exchange_io(s, 0);
    if (!st && s->ntask + a->ntask > 4096) st = fedc_error(FEDC_EUNSUPPORTED, "server: a task of more than 4096 values");
    if (st) return st;
    memcpy(s->task + s->ntask, a->task, (size_t)a->ntask * sizeof *a->task);
    s->ntask += a->ntask;
    mark_scaled(s);
    t[1] = s->opened = fedc_seconds();
    s->collecting = true;
    fedc__held_answer(s); /* the waiting clients take the free places */
    st = fedc__server_serve(s, t[1] + s->o->report_deadline);
    bool full = fedc__collect_closed(s->collect);
    s->collecting = false;
    if (!st && !full)
        st = fedc_error(FEDC_EIO, "step %d: %d of %d reports within --report-deadline (%g s): too few clients report",
                        r + 1, a->taken, a->k, s->o->report_deadline);
    if (!st) st = fedc__collect_end(s->collect);
    t[2] = fedc_seconds();
    if (!st) st = fedc__deployment_run_phase(s->run, 0, FEDC_PHASE_SERVER_RESULT, NULL);
    float loss = NAN, examples = NAN;
    if (!st) st = fedc__server_take_state(s, &loss, &examples);
    t[3] = fedc_seconds();
    if (!st) st = fedc__server_checkpoint(s, r + 1);
    t[4] = fedc_seconds();
    int refused = s->refused, duplicates = s->duplicates;
    s->refused -= refused0, s->duplicates -= duplicates0; /* the step's, in its row */
    if (!st) log_step(s, r, loss, examples, t, in, out, requests);
    s->refused = refused, s->duplicates = duplicates;
    return st;
}

/* The arrival log: a fresh run's made; a resumed run's cut back to the
 * checkpoint's steps, which it must hold whole (K reports a step), its clock
 * and dispatches going on from there (a new block: the clients in flight when
 * the server stopped had dispatches past the log's). */
static fedc_status open_log(server *s, int first) {
    fedc__async *a = s->async;
    char path[4200];
    snprintf(path, sizeof path, "%s/arrivals.jsonl", s->o->out_dir);
    fedc_arrivals_kept kept = {0};
    fedc_status st = first > 0 ? fedc__arrivals_cut_back(path, first, &kept) : FEDC_OK;
    if (!st && kept.lines != (int64_t)first * a->k)
        st = fedc_error(FEDC_EINVAL, "server: %s holds %lld reports of the checkpoint's %d steps, not %lld (%d a step): "
                        "the checkpoint is not this asynchronous run's (--async %d): move it away to start afresh", path,
                        (long long)kept.lines, first, (long long)first * a->k, a->k, a->k);
    if (!st && !(a->arrivals = fopen(path, first > 0 ? "a" : "w")))
        st = fedc_error(FEDC_EIO, "%s: cannot write: %s", path, strerror(errno));
    if (st) return st;
    a->t0 = fedc_seconds() - kept.time;
    a->dispatched = first > 0 ? (kept.max_dispatch / (uint64_t)a->c + 1) * (uint64_t)a->c : 0;
    if (first > 0)
        fprintf(s->log, "fedc server: step %d: the clients in flight when the server stopped are not waited for; "
                "%s goes on from its %lld reports\n", first + 1, path, (long long)kept.lines);
    return FEDC_OK;
}

fedc_status fedc__async_run(server *s, int first) {
    fedc_status st = open_log(s, first);
    for (int r = first; !st && r < s->o->rounds; r++) st = step(s, r);
    return st;
}
