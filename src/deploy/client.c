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
 * A fleet runs many clients on threads of one process, sharing the plan and
 * the data (opened once), each with its own connection and buffers. One thread
 * of the process sends the heartbeats of all its clients that are working.
 * Every loop is bounded by the options' timeout and max_seconds. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "deploy/client_state.h"
#include "deploy/deploy.h"
#include "deploy/fleet.h"
#include "deploy/net.h"
#include "deploy/secure.h"
#include "deploy/warm.h"
#include "fl/plan_data.h"

void fedc_client_defaults(fedc_client_options *o) {
    memset(o, 0, sizeof *o);
    o->timeout = 60;
    o->max_seconds = 86400;
    o->max_message = (size_t)256 << 20;
    o->threads = 1;
}

/* A value the client holds by name during a round: a broadcast value or what
 * one of its phases computed (read by a later exchange or sent up). */
typedef struct held {
    char name[600];
    fedc_type type;
    void *data;
    size_t bytes;
    fedc__shared_value *shared; /* a broadcast value: data is the fleet's copy, not the client's */
} held;

/* What a client's heartbeats need, shared with the heartbeat thread: the
 * client's connection is used by one thread at a time (lock). */
typedef struct beat {
    pthread_mutex_t lock;
    atomic_int working;   /* a task's work is under way */
    fedc__net *net;
    const char *token, *id;
    char round[32], exchange[32], slot[32];
    int every_ms;
    double last;
} beat;

typedef struct client {
    const fedc_client_options *o;
    beat *beat;
    FILE *log;
    fedc__net net;
    const fedc_plan *plan;
    fedc__plan_client *pc;
    fedc__trainers *trainers; /* the process's seats for client_work, and their executors */
    fedc__trainers *warm_trainers; /* the same for the warm start's client_work (NULL: the plan has none) */
    fedc__shared *shared;     /* the process's copy of each broadcast value */
    const fedc_deployment_form *form; /* the task's program's: the round's, or the warm start's */
    int exchanges;
    char id[32];
    char hold_ms[16];   /* how long the server may hold its check-ins and readies: half its timeout */
    held *held;
    int nheld, cap;
    int64_t refused_round; /* a round whose report the server refused: left alone */
    int64_t refused_exchange; /* the exchange of that report: a task of an earlier exchange of that round
                                 is of the round started again (another attempt, or a server restarted
                                 whose warm start or round begins anew), which the client does */
    int64_t pending_round; /* a round whose report was counted: its new client state is kept as
                              next/client/<leaf> until a later round shows it committed */
    int reported;
    double start;       /* when it started: max_seconds count from there */
    fedc__secure_client sec; /* a secure round's state (client_secagg.c) */
} client;

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static held *find_held(client *c, const char *name) {
    for (int i = 0; i < c->nheld; i++)
        if (!strcmp(c->held[i].name, name)) return &c->held[i];
    return NULL;
}

static void unhold(client *c, held *h) {
    if (h->shared) fedc__shared_release(c->shared, h->shared);
    else fedc_free(h->data);
    h->data = NULL, h->shared = NULL, h->bytes = 0;
}

/* The entry of `name`, made if missing. */
static held *held_entry(client *c, const char *name) {
    held *h = find_held(c, name);
    if (!h) {
        if (c->nheld == c->cap) {
            int cap = c->cap ? 2 * c->cap : 16;
            held *t = fedc_realloc(c->held, (size_t)cap * sizeof *t);
            if (!t) return NULL;
            c->held = t, c->cap = cap;
        }
        h = &c->held[c->nheld++];
        memset(h, 0, sizeof *h);
        snprintf(h->name, sizeof h->name, "%s", name);
    }
    return h;
}

/* Keeps a copy of `data` as `name` (replacing an older one). */
static fedc_status hold(client *c, const char *name, fedc_type type, const void *data) {
    held *h = held_entry(c, name);
    size_t bytes = fedc_type_bytes(&type);
    if (!h) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    if (h->shared) unhold(c, h);
    if (h->bytes != bytes || !h->data) {
        fedc_free(h->data);
        if (!(h->data = fedc_malloc(bytes ? bytes : 1))) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    }
    memcpy(h->data, data, bytes);
    h->type = type, h->bytes = bytes;
    return FEDC_OK;
}

/* Holds a broadcast value as `name`: the process's copy of it, shared. */
static fedc_status hold_shared(client *c, const char *name, fedc_type type, const void *data) {
    held *h = held_entry(c, name);
    if (!h) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    unhold(c, h);
    fedc__shared_value *v;
    fedc_status st = fedc__shared_take(c->shared, name, data, fedc_type_bytes(&type), &v);
    if (st) return st;
    h->shared = v, h->data = (void *)fedc__shared_data(v), h->type = type, h->bytes = fedc_type_bytes(&type);
    return FEDC_OK;
}

/* After exchange e's report (sent or not wanted): the values no later phase of
 * the round reads are let go (the broadcast, the report), so that a client
 * between tasks holds only its state; the batches' buffers too. */
static void forget(client *c, int e) {
    const fedc_deployment_form *f = c->form;
    int kept = 0;
    for (int i = 0; i < c->nheld; i++) {
        held *h = &c->held[i];
        bool keep = !strncmp(h->name, "client/", 7) || !strncmp(h->name, "next/", 5);
        for (int x = e + 1; !keep && x < c->exchanges; x++)
            keep = fedc_program_find_input(fedc_deployment_form_phase(f, x, FEDC_PHASE_CLIENT_WORK), h->name) != FEDC_NONE ||
                   fedc_program_find_input(fedc_deployment_form_phase(f, x, FEDC_PHASE_AGGREGATION), h->name) != FEDC_NONE;
        if (keep) c->held[kept++] = *h;
        else unhold(c, h);
    }
    c->nheld = kept;
    if (e == c->exchanges - 1) fedc__plan_client_release(c->pc);
}

/* A request and its answer, the connection held meanwhile. */
static fedc_status call(client *c, fedc__msg_type type, const fedc_metadata_entry *f, int nf, const fedc_tensor_entry *t,
                        int nt, fedc__msg *reply) {
    if (c->beat) pthread_mutex_lock(&c->beat->lock);
    fedc_status st = fedc__net_call(&c->net, type, f, nf, t, nt, reply);
    if (c->beat) pthread_mutex_unlock(&c->beat->lock);
    return st;
}

static fedc_status checkin(client *c, const char *hash, fedc__msg *reply) {
    char version[16];
    snprintf(version, sizeof version, "%d", FEDC__PROTOCOL_VERSION);
    fedc_metadata_entry f[] = {{"token", c->o->token ? c->o->token : ""}, {"client", c->id}, {"version", version},
                               {"plan_hash", hash}, {"hold_ms", c->hold_ms}};
    return call(c, FEDC__MSG_CHECKIN, f, 5, NULL, 0, reply);
}

static fedc_status server_refused(const client *c, const fedc__msg *m) {
    return fedc_error(FEDC_EIO, "client %s: the server refused: %s", c->id, fedc__msg_field(m, "reason"));
}

/* The plan, from the server: its files checked as any plan is, and its hash
 * against the one the server gave. */
static fedc_status fetch_plan(client *c, fedc_plan **out) {
    fedc__msg m;
    fedc_status st = checkin(c, "", &m);
    if (st) return st;
    if (m.type == FEDC__MSG_REJECT) st = server_refused(c, &m);
    else if (m.type != FEDC__MSG_PLAN) st = fedc_error(FEDC_EPARSE, "client %s: asked for the plan, got a %s message", c->id, fedc__msg_name(m.type));
    int n = st ? 0 : fedc_safetensors_count(m.body);
    fedc_plan_file *f = st ? NULL : fedc_calloc((size_t)n + 1, sizeof *f);
    if (!st && !f) st = fedc_error(FEDC_ENOMEM, "client: out of memory");
    for (int i = 0; !st && i < n; i++) {
        fedc_tensor_entry e = fedc_safetensors_tensor(m.body, i);
        if (strncmp(e.name, "file/", 5) || e.type.dtype != FEDC_U8 || e.type.rank != 1)
            st = fedc_error(FEDC_EPARSE, "client %s: the plan message holds \"%s\", not a file/NAME of bytes", c->id, e.name);
        else f[i] = (fedc_plan_file){e.name + 5, e.data, (size_t)e.type.dims[0]};
    }
    if (!st) st = fedc_plan_from_files(f, n, "the server's plan", out);
    if (!st && strcmp(fedc_plan_hash(*out), fedc__msg_field(&m, "hash"))) {
        st = fedc_error(FEDC_EPARSE, "client %s: the plan hashes to %s, but the server said %s", c->id, fedc_plan_hash(*out),
                        fedc__msg_field(&m, "hash"));
        fedc_plan_destroy(*out);
        *out = NULL;
    }
    fedc_free(f);
    fedc__msg_free(&m);
    return st;
}

/* client_work's inputs from the task: each broadcast value, of its type. */
static fedc_status take_broadcasts(client *c, const fedc__msg *m, const fedc_program *q) {
    int want = 0;
    for (int i = 0; i < fedc_program_num_inputs(q); i++) {
        const char *name = fedc_program_input_name(q, i);
        if (strncmp(name, "broadcast/", 10)) continue;
        want++;
        fedc_tensor_entry e;
        fedc_type t = fedc_value_type(q, fedc_program_input(q, i));
        char a[64], b[64];
        if (fedc_safetensors_find(m->body, name, &e))
            return fedc_error(FEDC_EPARSE, "client %s: the task has no \"%s\"", c->id, name);
        if (e.type.dtype != t.dtype || !fedc_type_same_shape(&e.type, &t))
            return fedc_error(FEDC_EPARSE, "client %s: the task's \"%s\" is %s; client_work takes %s", c->id, name,
                              fedc_type_str(&e.type, a, sizeof a), fedc_type_str(&t, b, sizeof b));
        fedc_status st = hold_shared(c, name, t, e.data);
        if (st) return st;
    }
    if (fedc_safetensors_count(m->body) != want)
        return fedc_error(FEDC_EPARSE, "client %s: the task holds %d tensors; client_work takes %d broadcast values", c->id,
                          fedc_safetensors_count(m->body), want);
    return FEDC_OK;
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
        held *h = find_held(c, name);
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
        if (!st) st = hold(c, strncmp(name, "client/", 7) ? name : next, t, y);
    }
    return st;
}

/* Runs exchange e's client_work for `round` (its broadcasts held) on a seat of
 * the process's trainers, and keeps its outputs. */
static fedc_status work(client *c, int64_t round, int e, int64_t slot) {
    job j = {c, round, e};
    return fedc__trainers_run(round == FEDC__WARM_ROUND ? c->warm_trainers : c->trainers, round, e, slot, run_job, &j);
}

/* The client's state (client/ and next/client/ values) written to its file, when
 * it keeps one (client_state.h). */
static fedc_status save_state(client *c) {
    if (!c->o->state_dir || !fedc_plan_client_init(c->plan)) return FEDC_OK;
    fedc_tensor_entry *t = fedc_calloc((size_t)c->nheld + 1, sizeof *t);
    if (!t) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    int n = 0;
    for (int i = 0; i < c->nheld; i++)
        if (!strncmp(c->held[i].name, "client/", 7) || !strncmp(c->held[i].name, "next/client/", 12))
            t[n++] = (fedc_tensor_entry){c->held[i].name, c->held[i].type, c->held[i].data};
    const float *seen = fedc__plan_client_input(c->pc, "meta/seen"); /* 1 once a round's state was kept */
    fedc_status st = fedc__client_state_save(c->o->state_dir, c->id, fedc_plan_hash(c->plan),
                                             fedc__plan_settings_hash(c->plan), t, n, c->pending_round, seen && *seen > 0);
    fedc_free(t);
    return st;
}

/* The state from the client's file, if it has one, over client_init's: each
 * value of the file must be one client_init made, of the same type. */
static fedc_status restore_state(client *c) {
    fedc__client_state k;
    if (!c->o->state_dir || !fedc_plan_client_init(c->plan)) return FEDC_OK;
    fedc_status st = fedc__client_state_load(c->o->state_dir, c->id, fedc_plan_hash(c->plan),
                                             fedc__plan_settings_hash(c->plan), &k);
    if (st || !k.file) return st;
    char path[4200], a[64], b[64];
    fedc__client_state_path(c->o->state_dir, c->id, path, sizeof path);
    for (int i = 0; !st && i < fedc_safetensors_count(k.file); i++) {
        fedc_tensor_entry e = fedc_safetensors_tensor(k.file, i);
        const char *leaf = strncmp(e.name, "next/", 5) ? e.name : e.name + 5;
        const held *init = find_held(c, leaf);
        if (!init) st = fedc_error(FEDC_EPARSE, "%s: \"%s\" is not in the plan's client state", path, leaf);
        else if (init->type.dtype != e.type.dtype || !fedc_type_same_shape(&init->type, &e.type))
            st = fedc_error(FEDC_EPARSE, "%s: \"%s\" is %s; the plan's client state has %s", path, e.name,
                            fedc_type_str(&e.type, a, sizeof a), fedc_type_str(&init->type, b, sizeof b));
        else st = hold(c, e.name, init->type, e.data);
    }
    if (!st) {
        c->pending_round = k.pending_round;
        if (k.seen) fedc__plan_client_seen(c->pc);
        fprintf(c->log, "fedc client %s: state from %s%s\n", c->id, path,
                k.pending_round >= 0 ? " (with a counted report of a round not yet known to have committed)" : "");
    }
    fedc_safetensors_destroy(k.file);
    return st;
}

/* The state of the last round whose report was counted, once that round is
 * over (a later task, or done: m): kept if the server added the report (m's
 * "added", the last round that added this client's, is that round), else let
 * go, as fedc train's client store keeps a client left out as it was. */
static fedc_status settle_state(client *c, const fedc__msg *m) {
    int64_t added = -1;
    fedc_status st = c->pending_round < 0 ? FEDC_OK : fedc__msg_int(m, "added", -1, INT32_MAX, &added);
    bool keep = !st && c->pending_round >= 0 && added == c->pending_round;
    for (int i = 0; !st && keep && i < c->nheld; i++) {
        held h = c->held[i]; /* hold() may move the table */
        if (!strncmp(h.name, "next/", 5)) st = hold(c, h.name + 5, h.type, h.data);
    }
    int kept = 0;
    for (int i = 0; i < c->nheld; i++) { /* the new state is the state now, or never */
        if (strncmp(c->held[i].name, "next/", 5)) c->held[kept++] = c->held[i];
        else unhold(c, &c->held[i]);
    }
    c->nheld = kept;
    if (!st && keep) fedc__plan_client_seen(c->pc);
    if (!st && !keep)
        fprintf(c->log, "fedc client %s: round %lld: the report was not added: the client's state stays as it was\n", c->id,
                (long long)c->pending_round + 1);
    c->pending_round = -1;
    return st ? st : save_state(c);
}

/* A never-seen client's state, from the plan's client_init. */
static fedc_status init_state(client *c) {
    const fedc_program *init = fedc_plan_client_init(c->plan);
    if (!init) return FEDC_OK;
    fedc_executor *ex = NULL;
    fedc_status st = fedc_executor_create(&ex, init, &(fedc_exec_options){.clients = 1});
    if (!st) st = fedc_executor_run(ex);
    for (int i = 0; !st && i < fedc_program_num_outputs(init); i++) {
        const void *y;
        fedc_type t;
        st = fedc_executor_output(ex, fedc_program_output_name(init, i), &y, &t);
        if (!st) st = hold(c, fedc_program_output_name(init, i), t, y);
    }
    fedc_executor_destroy(ex);
    return st;
}

/* Which task a client works on, as the task named it (its message is let go
 * before the work: what it carried is held). */
typedef struct task_id {
    char round[32], exchange[32], slot[32];
} task_id;

/* Asks to send the report of the task (ready), waiting for the server's go: true
 * when it may; false when the slot wants no report any more (given up, closed).
 * Bounded: each answer comes within hold_ms (and the server's beat interval),
 * and the client's max_seconds bound the whole. */
static fedc_status may_report(client *c, const task_id *task, double start, bool *go) {
    fedc_metadata_entry f[] = {{"token", c->o->token ? c->o->token : ""}, {"client", c->id},
                               {"round", task->round}, {"exchange", task->exchange}, {"slot", task->slot},
                               {"hold_ms", c->hold_ms}};
    *go = false;
    while (fedc_seconds() - start < c->o->max_seconds) {
        fedc__msg r;
        fedc_status st = call(c, FEDC__MSG_READY, f, 6, NULL, 0, &r);
        if (st) return st;
        fedc__msg_type type = r.type;
        if (type == FEDC__MSG_REJECT)
            fprintf(c->log, "fedc client %s: round %lld: the server wants no report: %s\n", c->id,
                    atoll(task->round) + 1, fedc__msg_field(&r, "reason"));
        fedc__msg_free(&r);
        if (type == FEDC__MSG_GO) *go = true;
        if (type == FEDC__MSG_GO || type == FEDC__MSG_REJECT) return FEDC_OK;
        if (type != FEDC__MSG_WAIT) return fedc_error(FEDC_EPARSE, "client %s: a ready answered by a %s message", c->id, fedc__msg_name(type));
    }
    return fedc_error(FEDC_EIO, "client %s: the job did not end within %g s", c->id, c->o->max_seconds);
}

/* The report: what exchange e's aggregation reads, from the client's values. */
static fedc_status send_report(client *c, const task_id *task, int e, fedc__msg *reply) {
    const fedc_program *agg = fedc_deployment_form_phase(c->form, e, FEDC_PHASE_AGGREGATION);
    int n = fedc_program_num_inputs(agg);
    fedc_tensor_entry *t = fedc_calloc((size_t)n + 1, sizeof *t);
    fedc_status st = t ? FEDC_OK : fedc_error(FEDC_ENOMEM, "client: out of memory");
    for (int i = 0; !st && i < n; i++) {
        const char *name = fedc_program_input_name(agg, i);
        held *h = find_held(c, name);
        const void *own = h ? NULL : fedc__plan_client_input(c->pc, name); /* an input it aggregates itself */
        fedc_type type = fedc_value_type(agg, fedc_program_input(agg, i));
        type.placement = FEDC_LOCAL;
        if (h) t[i] = (fedc_tensor_entry){h->name, h->type, h->data};
        else if (own) t[i] = (fedc_tensor_entry){name, type, own};
        else st = fedc_error(FEDC_EUNSUPPORTED, "client %s: the aggregation reads \"%s\", which the client does not hold",
                             c->id, name);
    }
    fedc_metadata_entry f[] = {{"token", c->o->token ? c->o->token : ""}, {"client", c->id},
                               {"round", task->round}, {"exchange", task->exchange}, {"slot", task->slot},
                               {"hash", fedc_plan_hash(c->plan)}};
    if (!st) st = call(c, FEDC__MSG_REPORT, f, 6, t, n, reply);
    fedc_free(t);
    return st;
}

/* Test hooks (docs/deployment.md): FEDC_FAULT=slow:S makes a client sleep S
 * seconds before each task's work (a straggler, or one to kill mid-round);
 * FEDC_FAULT=report-twice sends every report again after its ack, as a client
 * whose answer was lost would (the server counts it once). */
static double fault_slow(void) {
    const char *f = getenv("FEDC_FAULT");
    return f && !strncmp(f, "slow:", 5) ? atof(f + 5) : 0;
}

/* FEDC_FAULT=slow:S: the task held S seconds before its work, said first, so
 * that a test kills the client only once it holds a task (its first heartbeat
 * sent, so the server counts it heard from). */
static void hold_task(client *c, int64_t round, int64_t e) {
    fprintf(c->log, "fedc client %s: round %lld: exchange %lld's task held %g s (FEDC_FAULT=slow)\n", c->id,
            (long long)round + 1, (long long)e, fault_slow());
    fflush(c->log);
    sleep_ms((int)(fault_slow() * 1000));
}

static bool fault_report_twice(void) {
    const char *f = getenv("FEDC_FAULT");
    return f && !strcmp(f, "report-twice");
}

/* FEDC_FAULT=exit-after-report:R ends the process once round R's report was
 * counted (and the state saved), as a phone that dies between rounds would. */
static void fault_exit_after_report(int64_t round) {
    const char *f = getenv("FEDC_FAULT");
    if (f && !strncmp(f, "exit-after-report:", 18) && atoll(f + 18) == round + 1) _exit(3);
}

static void send_beat(struct beat *b);

/* The heartbeats of the task m, sent by the heartbeat thread while it works. */
static void start_beating(client *c, const fedc__msg *m) {
    beat *b = c->beat;
    int64_t every = 1000;
    if (!b || fedc__msg_int(m, "heartbeat_ms", 1, 3600000, &every)) return;
    pthread_mutex_lock(&b->lock);
    b->net = &c->net, b->token = c->o->token ? c->o->token : "", b->id = c->id;
    snprintf(b->round, sizeof b->round, "%s", fedc__msg_field(m, "round"));
    snprintf(b->exchange, sizeof b->exchange, "%s", fedc__msg_field(m, "exchange"));
    snprintf(b->slot, sizeof b->slot, "%s", fedc__msg_field(m, "slot"));
    b->every_ms = (int)every;
    send_beat(b); /* at once: the server sends more tasks once it knows this one has arrived */
    atomic_store(&b->working, 1);
    pthread_mutex_unlock(&b->lock);
}

/* The secure round's hooks (client_secagg.c, secure.h), over this client's calls and values. */
static fedc_status secure_call(void *ctx, fedc__msg_type type, const fedc_metadata_entry *f, int nf,
                               const fedc_tensor_entry *t, int nt, fedc__msg *reply) {
    return call(ctx, type, f, nf, t, nt, reply);
}

static fedc_status secure_share(client *c, const fedc__msg *m, int e, bool *go) {
    c->sec.call = secure_call, c->sec.ctx = c, c->sec.log = c->log, c->sec.id = c->id;
    c->sec.token = c->o->token ? c->o->token : "", c->sec.start = c->start, c->sec.max_seconds = c->o->max_seconds;
    return fedc__secure_client_share(&c->sec, m, fedc_deployment_form_phase(c->form, e, FEDC_PHASE_AGGREGATION), go);
}

static fedc_status secure_mask(client *c, int e, bool *go) {
    const fedc_program *agg = fedc_deployment_form_phase(c->form, e, FEDC_PHASE_AGGREGATION);
    int n = fedc_program_num_inputs(agg);
    void **in = fedc_calloc((size_t)n + 1, sizeof *in);
    if (!in) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    for (int i = 0; i < n; i++) {
        held *h = find_held(c, fedc_program_input_name(agg, i));
        in[i] = h ? h->data : NULL;
    }
    fedc_status st = fedc__secure_client_mask(&c->sec, agg, in, go);
    fedc_free(in);
    return st;
}

/* Which program task m is of (its "program": the round, or the warm start, whose
 * round is FEDC__WARM_ROUND), as the client's form from now on. */
static fedc_status task_program(client *c, const fedc__msg *m, int64_t round) {
    const char *program = fedc__msg_field(m, "program");
    bool warm = !strcmp(program, "warm_start");
    if ((!warm && strcmp(program, "round")) || warm != (round == FEDC__WARM_ROUND))
        return fedc_error(FEDC_EPARSE, "client %s: a task of round %lld for program \"%.40s\" (a task is of the round, or "
                          "of the warm start in round -1)", c->id, (long long)round, program);
    if (warm && !fedc_plan_warm_form(c->plan))
        return fedc_error(FEDC_EPARSE, "client %s: a task of the warm start, but the plan has none", c->id);
    c->form = warm ? fedc_plan_warm_form(c->plan) : fedc_plan_form(c->plan);
    c->exchanges = fedc_deployment_form_exchanges(c->form);
    return FEDC_OK;
}

/* A task: its broadcasts held, its message let go (what it carried is the
 * process's shared copy now), the work done on a trainer's seat, the report
 * sent when the server says go; then only the client's state is kept. */
static fedc_status do_task(client *c, fedc__msg *m) {
    int64_t round, e, slot;
    fedc_status st = fedc__msg_int(m, "round", FEDC__WARM_ROUND, INT32_MAX, &round);
    if (!st) st = task_program(c, m, round);
    if (!st) st = fedc__msg_int(m, "exchange", 0, c->exchanges - 1, &e);
    if (!st) st = fedc__msg_int(m, "slot", 0, INT32_MAX, &slot);
    if (!st && strcmp(fedc__msg_field(m, "hash"), fedc_plan_hash(c->plan)))
        st = fedc_error(FEDC_EPARSE, "client %s: a task of another plan", c->id);
    if (st) return st;
    if (round == c->refused_round && e < c->refused_exchange) c->refused_round = INT64_MIN;
    if (round == c->refused_round) {
        sleep_ms(200); /* the server refused this round's report; the next round may do */
        return FEDC_OK;
    }
    fedc__msg r = {0};
    if (c->pending_round >= 0 && round > c->pending_round) st = settle_state(c, m);
    if (!st) st = take_broadcasts(c, m, fedc_deployment_form_phase(c->form, (int)e, FEDC_PHASE_CLIENT_WORK));
    float index = (float)slot; /* meta/index, the client's place in the cohort (a warm start's reads it) */
    if (!st) st = hold(c, "meta/index", fedc_type_scalar(FEDC_F32), &index);
    if (st) return st;
    task_id id;
    snprintf(id.round, sizeof id.round, "%s", fedc__msg_field(m, "round"));
    snprintf(id.exchange, sizeof id.exchange, "%s", fedc__msg_field(m, "exchange"));
    snprintf(id.slot, sizeof id.slot, "%s", fedc__msg_field(m, "slot"));
    start_beating(c, m);
    bool go = false;
    st = secure_share(c, m, (int)e, &go); /* a secure round's first steps: nothing otherwise */
    fedc__msg_free(m);
    if (!st && !go && c->beat) atomic_store(&c->beat->working, 0);
    if (!st && !go) forget(c, (int)e);
    if (st || !go) return st;
    if (fault_slow() > 0) hold_task(c, round, e);
    st = work(c, round, (int)e, slot);
    if (c->beat) atomic_store(&c->beat->working, 0);
    if (!st) st = secure_mask(c, (int)e, &go); /* a secure round's masked words: nothing otherwise */
    if (!st && go) st = may_report(c, &id, c->start, &go);
    if (!st && !go) forget(c, (int)e);
    if (!st && !go) return FEDC_OK; /* not wanted: the next check-in says what next */
    if (!st) st = send_report(c, &id, (int)e, &r);
    if (!st && r.type == FEDC__MSG_ACK && fault_report_twice()) {
        fedc__msg_free(&r);
        st = send_report(c, &id, (int)e, &r);
        if (!st && (r.type != FEDC__MSG_ACK || strcmp(fedc__msg_field(&r, "counted"), "0")))
            st = fedc_error(FEDC_EINTERNAL, "client %s: a repeated report was not answered \"counted 0\"", c->id);
    }
    if (!st && r.type == FEDC__MSG_REJECT) {
        fprintf(c->log, "fedc client %s: round %lld: the server refused the report: %s\n", c->id, (long long)round + 1,
                fedc__msg_field(&r, "reason"));
        c->refused_round = round, c->refused_exchange = e;
    } else if (!st && r.type != FEDC__MSG_ACK) {
        st = fedc_error(FEDC_EPARSE, "client %s: a report answered by a %s message", c->id, fedc__msg_name(r.type));
    } else if (!st) {
        c->reported++;
        c->pending_round = round; /* counted: its state is the client's once the round commits, if added */
        st = save_state(c);
        if (!st) fault_exit_after_report(round);
    }
    fedc__msg_free(&r);
    if (!st) st = fedc__secure_client_unmask(&c->sec); /* a secure round's last step: nothing otherwise */
    if (!st) forget(c, (int)e);
    return st;
}

/* Checks in until done, at most o->max_seconds. */
static fedc_status loop(client *c) {
    double start = c->start = fedc_seconds();
    while (fedc_seconds() - start < c->o->max_seconds) {
        fedc__msg m;
        fedc_status st = checkin(c, fedc_plan_hash(c->plan), &m);
        if (st) return st;
        int64_t ms = 200;
        if (m.type == FEDC__MSG_DONE) {
            st = c->pending_round >= 0 ? settle_state(c, &m) : FEDC_OK;
            fedc__msg_free(&m);
            return st;
        }
        if (m.type == FEDC__MSG_TASK) st = do_task(c, &m);
        else if (m.type == FEDC__MSG_WAIT) st = fedc__msg_int(&m, "retry_ms", 0, 1 << 30, &ms);
        else if (m.type == FEDC__MSG_REJECT) st = server_refused(c, &m);
        else st = fedc_error(FEDC_EPARSE, "client %s: a check-in answered by a %s message", c->id, fedc__msg_name(m.type));
        fedc__msg_free(&m);
        if (st) return st;
        if (m.type == FEDC__MSG_WAIT && ms > 0) sleep_ms((int)(ms > 30000 ? 30000 : ms)); /* as told, 30 s at most */
    }
    return fedc_error(FEDC_EIO, "client %s: the job did not end within %g s", c->id, c->o->max_seconds);
}

static void client_free(client *c) {
    if (c->beat) pthread_mutex_lock(&c->beat->lock); /* not while a heartbeat is on the wire */
    if (c->beat) atomic_store(&c->beat->working, 0);
    if (c->beat) pthread_mutex_unlock(&c->beat->lock);
    fedc__secure_client_free(&c->sec);
    for (int i = 0; i < c->nheld; i++) unhold(c, &c->held[i]);
    fedc_free(c->held);
    fedc__plan_client_destroy(c->pc);
    fedc__net_close(&c->net);
}

/* A client of `plan` on `data`, connected. */
static fedc_status client_init(client *c, const fedc_client_options *o, int64_t id) {
    memset(c, 0, sizeof *c);
    c->o = o;
    c->log = o->log ? o->log : stderr;
    c->pending_round = -1;
    c->refused_round = INT64_MIN; /* none: -1 is the warm start's */
    snprintf(c->id, sizeof c->id, "%lld", (long long)id);
    if (!o->connect || !o->data || !(o->timeout > 0) || !(o->max_seconds > 0))
        return fedc_error(FEDC_EINVAL, "client: needs an address, data, a timeout and max_seconds above 0");
    /* half the timeout: the server's answer to a request it held still comes in time when it is busy (an
     * aggregation, a checkpoint) as the hold ends; an hour at most (the protocol's bound) */
    snprintf(c->hold_ms, sizeof c->hold_ms, "%d", o->timeout < 7200 ? (int)(o->timeout * 500) : 3600000);
    return fedc__net_dial(&c->net, o->connect, o->max_message, (int)(o->timeout * 1000),
                          &(fedc__tls){.ca = o->tls_ca, .server_name = o->tls_server_name});
}

/* What the process's clients share: the trainers' seats (default: the cores,
 * at most a seat a client) and one copy of each broadcast value. */
typedef struct commons {
    fedc__trainers *trainers, *warm_trainers;
    fedc__shared *shared;
} commons;

static fedc_status commons_create(commons *k, const fedc_client_options *o, const fedc_plan *plan, int clients) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int seats = o->trainers > 0 ? o->trainers : cores > 0 ? (int)cores : 1;
    memset(k, 0, sizeof *k);
    fedc_status st = fedc__shared_create(&k->shared);
    if (seats > clients) seats = clients;
    if (!st) st = fedc__trainers_create(&k->trainers, fedc_plan_form(plan), seats, o->threads);
    if (!st && fedc_plan_warm_form(plan)) st = fedc__trainers_create(&k->warm_trainers, fedc_plan_warm_form(plan), seats, o->threads);
    return st;
}

static void commons_destroy(commons *k) {
    fedc__trainers_destroy(k->trainers);
    fedc__trainers_destroy(k->warm_trainers);
    fedc__shared_destroy(k->shared);
}

static fedc_status client_start(client *c, const fedc_plan *plan, fedc__plan_data *d, int64_t id, const commons *k) {
    c->plan = plan;
    c->form = fedc_plan_form(plan);
    c->exchanges = fedc_deployment_form_exchanges(c->form);
    c->trainers = k->trainers, c->warm_trainers = k->warm_trainers, c->shared = k->shared;
    fedc_status st = fedc__plan_client_create(d, id, &c->pc);
    if (!st) st = init_state(c);
    return st ? st : restore_state(c);
}

/* ------------------------------------------------------- heartbeats -- */

/* One thread sends the heartbeats of a process's clients: every 50 ms it looks
 * for a working client whose heartbeat is due and whose connection is free. */
typedef struct beater {
    beat *beats;
    int n;
    atomic_int stop;
    pthread_t thread;
    bool started;
} beater;

/* Posted, not called: nothing in the server's answer matters to the client,
 * and waiting for it would hold the work (the first beat) or the connection. */
static void send_beat(beat *b) {
    fedc_metadata_entry f[] = {{"token", b->token}, {"client", b->id}, {"round", b->round}, {"exchange", b->exchange},
                               {"slot", b->slot}};
    fedc__net_post(b->net, FEDC__MSG_HEARTBEAT, f, 5); /* a beat that fails is a beat missed: the server decides */
    b->last = fedc_seconds();
}

static void *beater_main(void *arg) {
    beater *t = arg;
    while (!atomic_load(&t->stop)) {
        sleep_ms(50);
        for (int i = 0; i < t->n; i++) {
            beat *b = &t->beats[i];
            if (!atomic_load(&b->working) || pthread_mutex_trylock(&b->lock)) continue;
            if (atomic_load(&b->working) && fedc_seconds() - b->last >= b->every_ms / 1000.0) send_beat(b);
            pthread_mutex_unlock(&b->lock);
        }
    }
    return NULL;
}

static fedc_status beater_start(beater *t, int n) {
    memset(t, 0, sizeof *t);
    if (!(t->beats = fedc_calloc((size_t)n, sizeof *t->beats))) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    for (int i = 0; i < n; i++) pthread_mutex_init(&t->beats[i].lock, NULL);
    t->n = n;
    if (pthread_create(&t->thread, NULL, beater_main, t) != 0) return fedc_error(FEDC_EIO, "client: cannot start the heartbeat thread");
    t->started = true;
    return FEDC_OK;
}

static void beater_stop(beater *t) {
    atomic_store(&t->stop, 1);
    if (t->started) pthread_join(t->thread, NULL);
    for (int i = 0; t->beats && i < t->n; i++) pthread_mutex_destroy(&t->beats[i].lock);
    fedc_free(t->beats);
}

fedc_status fedc_client_run(const fedc_client_options *o) {
    client c;
    beater t;
    fedc_plan *plan = NULL;
    fedc__plan_data *d = NULL;
    commons k = {0};
    fedc_status st = beater_start(&t, 1);
    fedc_status st2 = client_init(&c, o, o->client);
    if (!st) st = st2;
    c.beat = t.beats;
    if (!st) st = fetch_plan(&c, &plan);
    if (!st) st = fedc__plan_data_open(plan, o->data, &d);
    if (!st) st = commons_create(&k, o, plan, 1);
    if (!st) st = client_start(&c, plan, d, o->client, &k);
    if (!st) fprintf(c.log, "fedc client %s: ready, plan %.16s..., server %s\n", c.id, fedc_plan_hash(plan), o->connect);
    if (!st) st = loop(&c);
    if (!st) fprintf(c.log, "fedc client %s: done: %d reports\n", c.id, c.reported);
    client_free(&c);
    commons_destroy(&k);
    beater_stop(&t);
    fedc__plan_data_destroy(d);
    fedc_plan_destroy(plan);
    return st;
}

/* ------------------------------------------------------------- a fleet -- */

typedef struct member {
    client c;
    const fedc_plan *plan;
    fedc__plan_data *d;
    const commons *k;
    int64_t id;
    fedc_status st;
    char err[1024];
    pthread_t thread;
    bool started;
} member;

static void *member_main(void *arg) {
    member *m = arg;
    beat *b = m->c.beat;
    m->st = client_init(&m->c, m->c.o, m->id);
    m->c.beat = b;
    if (!m->st) m->st = client_start(&m->c, m->plan, m->d, m->id, m->k);
    if (!m->st) m->st = loop(&m->c);
    if (m->st) snprintf(m->err, sizeof m->err, "%s", fedc_errmsg());
    client_free(&m->c);
    return NULL;
}

fedc_status fedc_fleet_run(const fedc_client_options *o, int n) {
    if (n < 1) return fedc_error(FEDC_EINVAL, "fleet: needs 1 client or more, not %d", n);
    client first;
    fedc_plan *plan = NULL;
    fedc__plan_data *d = NULL;
    member *m = NULL;
    beater t = {0};
    commons k = {0};
    FILE *log = o->log ? o->log : stderr;
    fedc_status st = client_init(&first, o, 0); /* the plan, once, over a connection of its own */
    if (!st) st = fetch_plan(&first, &plan);
    client_free(&first);
    if (!st) st = fedc__plan_data_open(plan, o->data, &d);
    if (!st && fedc__plan_data_clients(d) < n)
        st = fedc_error(FEDC_EINVAL, "fleet: %d clients, but %s has %lld", n, o->data, (long long)fedc__plan_data_clients(d));
    if (!st && !(m = fedc_calloc((size_t)n, sizeof *m))) st = fedc_error(FEDC_ENOMEM, "fleet: out of memory");
    if (!st) st = commons_create(&k, o, plan, n);
    if (!st) st = beater_start(&t, n);
    if (!st)
        fprintf(log, "fedc fleet: %d clients of %s ready, plan %.16s..., server %s\n", n, o->data,
                fedc_plan_hash(plan), o->connect);
    for (int i = 0; !st && i < n; i++) {
        m[i].c.o = o, m[i].plan = plan, m[i].d = d, m[i].k = &k, m[i].id = i, m[i].c.beat = &t.beats[i];
        if (pthread_create(&m[i].thread, NULL, member_main, &m[i]) != 0)
            st = fedc_error(FEDC_EIO, "fleet: cannot start client %d's thread", i);
        else m[i].started = true;
    }
    int failed = 0, reports = 0;
    for (int i = 0; m && i < n; i++) {
        if (!m[i].started) continue;
        pthread_join(m[i].thread, NULL);
        reports += m[i].c.reported;
        if (m[i].st && failed++ == 0 && !st) st = fedc_error(m[i].st, "fleet: %s", m[i].err);
    }
    beater_stop(&t);
    commons_destroy(&k);
    if (!st) fprintf(log, "fedc fleet: done: %d clients, %d reports\n", n, reports);
    else if (failed > 1) fprintf(log, "fedc fleet: %d clients failed\n", failed);
    fedc_free(m);
    fedc__plan_data_destroy(d);
    fedc_plan_destroy(plan);
    return st;
}
