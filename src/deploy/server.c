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

#include "deploy/groups.h"
#include "deploy/held.h"
#include "fedc/secure_sum.h"

enum { MAX_ATTEMPTS = 3 };

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
/* ---------------------------------------------------------- a round -- */

typedef struct round_stats {
    int attempt, reported, dropped, skipped, stragglers, missed, spilled, held_peak, refused, duplicates;
    int unauthenticated;
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

fedc_status fedc__server_unmask(server *s, fedc__server_serve_fn serve, void *ctx) {
    fedc__secure_close_masked(s->sec, fedc_seconds());
    s->unmasking = true;
    fedc_status st = serve(s, fedc_seconds() + s->o->heartbeat_timeout + 1, ctx);
    s->unmasking = false;
    if (!st && !fedc__secure_settled(s->sec)) st = fedc__secure_tick(s->sec, s->collect, fedc_seconds() + 1e9);
    return st;
}

static fedc_status serve(server *s, double until, void *ctx) {
    (void)ctx;
    return fedc__server_serve(s, until);
}

/* A secure round's last step; a failed secure round (fewer than its threshold
 * at some step) abandons the round. */
static fedc_status secure_unmask(server *s, bool *abandoned) {
    fedc_status st = fedc__server_unmask(s, serve, NULL);
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
    if (!st) st = fedc__server_exchange_io(s, e);
    /* a client left out of an earlier exchange is out of the round, as fedc_train's dropped
     * client is absent from the whole round program: its slot is settled now, not waited for */
    for (int i = 0; !st && i < s->k; i++)
        if (s->left_out[i]) st = fedc__collect_drop(s->collect, i);
    if (!st && s->groups) fedc__groups_begin(s);
    if (!st && s->sec) st = fedc__secure_begin(s->sec, s->collect, s->round, e, s->seed, s->sampled, fedc_seconds());
    double t1 = fedc_seconds();
    s->collecting = !st, s->opened = t1;
    memset(s->sent, 0, (size_t)s->k);
    memset(s->granted, 0, (size_t)s->k);
    s->unconfirmed = s->ngranted = 0;
    if (!st) fedc__held_answer(s); /* the held check-ins of this exchange's clients get their tasks now */
    if (!st) st = fedc__server_serve(s, t1 + s->o->report_deadline);
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
fedc_status fedc__server_take_state(server *s, float *train_loss, float *train_examples) {
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
    *train_loss = loss ? *loss : NAN;
    *train_examples = examples ? *examples : NAN;
    return FEDC_OK;
}

fedc_status fedc__server_checkpoint(server *s, int next_round) {
    fedc_tensor_entry *t = fedc_calloc((size_t)s->ntensors + 1, sizeof *t);
    if (!t) return fedc_error(FEDC_ENOMEM, "server: out of memory");
    for (int i = 0; i < s->ntensors; i++) {
        fedc_tensor_entry e = fedc_plan_tensor(s->plan, i);
        t[i] = (fedc_tensor_entry){fedc__server_saved_name(e.name), e.type, s->state[i]};
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
            "\"unauthenticated\": %d, \"attempt\": %d, \"abandoned\": %s, \"not_needed\": %d, \"stragglers\": %d, "
            "\"missed_heartbeats\": %d, "
            "\"spilled\": %d, \"held_peak\": %d, \"left_out\": [", s->round + 1, s->k, rs->reported, rs->dropped,
            rs->refused, rs->duplicates, rs->unauthenticated, rs->attempt + 1, rs->abandoned ? "true" : "false", rs->skipped,
            rs->stragglers,
            rs->missed, rs->spilled, rs->held_peak);
    for (int i = 0, n = 0; i < s->k; i++)
        if (s->left_out[i]) fprintf(f, "%s%lld", n++ ? ", " : "", (long long)s->sampled[i]);
    fprintf(f, "], ");
    const int *kept;
    int nkept = rs->abandoned ? -1 : fedc__deployment_run_kept(s->run, &kept);
    if (nkept >= 0) { /* Krum's choice, as fedc train's metrics name it: population indices */
        fprintf(f, "\"kept\": [");
        for (int i = 0; i < nkept; i++) fprintf(f, "%s%lld", i ? ", " : "", (long long)s->sampled[kept[i]]);
        fprintf(f, "], ");
    }
    fedc__secure_metrics(s->sec, f);
    fedc__groups_metrics(s->groups, f);
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
    if (!st && s->groups) fedc__groups_order(s);
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
        int unauthenticated = s->unauthenticated;
        s->round = r, s->waited = -1;
        abandoned = false;
        st = select_round(s, r);
        for (int e = 0; !st && !abandoned && e < fedc_deployment_form_exchanges(s->form); e++)
            st = run_exchange(s, e, &rs, &abandoned);
        if (!st && !abandoned) st = fedc__server_take_state(s, &rs.train_loss, &rs.examples);
        for (int i = 0; !st && !abandoned && i < s->k; i++)
            if (!s->left_out[i]) s->added_round[s->sampled[i]] = (int32_t)r; /* before the checkpoint keeps it */
        double t = fedc_seconds();
        if (!st && !abandoned) st = fedc__server_checkpoint(s, r + 1);
        rs.t_checkpoint = fedc_seconds() - t;
        rs.t_round = fedc_seconds() - t0;
        rs.t_wait = s->waited >= 0 ? s->waited : rs.t_collect; /* no task sent: it waited throughout */
        rs.bytes_in = s->bytes_in - in, rs.bytes_out = s->bytes_out - out, rs.refused = s->refused - refused;
        rs.requests = s->requests - requests;
        rs.duplicates = s->duplicates - duplicates, rs.unauthenticated = s->unauthenticated - unauthenticated;
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
    snprintf(s.name, sizeof s.name, "fedc server");
    int first = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/metrics.jsonl", o->out_dir);
    fedc_status st = fedc__server_setup(&s);
    if (!st && o->async_buffer > 0) st = fedc__async_create(&s);
    if (!st) st = fedc__server_resume(&s, &first);
    if (!st && !(s.metrics = fopen(path, s.resumed ? "a" : "w"))) st = fedc_error(FEDC_EIO, "%s: cannot write", path);
    if (!st) st = fedc__net_listen(&s.net, o->listen, o->max_message, FEDC__SERVER_RECV_MS,
                                             &(fedc__tls){.cert = o->tls_cert, .key = o->tls_key});
    if (!st) fprintf(s.log, "fedc server: listening on %s, plan %s, rounds %d to %d of %d clients\n", o->listen,
                     fedc_plan_hash(s.plan), first + 1, o->rounds, s.k);
    if (!st && !s.resumed && fedc_plan_warm_start(s.plan)) st = warm_start(&s);
    if (!st && s.async) st = fedc__async_run(&s, first);
    for (int r = first; !st && !s.async && r < o->rounds; r++) st = run_round(&s, r);
    if (!st) {
        s.done = true;
        fprintf(s.log, "fedc server: done: %d %s; %s/checkpoint.safetensors\n", o->rounds, s.async ? "steps" : "rounds",
                o->out_dir);
        fedc__held_answer(&s);
        /* clients that ask are told the job is over, for --linger seconds from
         * now or from when the last client told to come back (--max-held) is due */
        double now = fedc_seconds();
        st = fedc__server_serve(&s, (s.retry_until > now ? s.retry_until : now) + o->linger);
    }
    fedc__server_teardown(&s);
    return st;
}
