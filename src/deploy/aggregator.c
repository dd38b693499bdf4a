/* An aggregator (fedc/deploy.h, groups.h): a client of the server and a server
 * to the clients of its group. It is a `server` (server.h) whose rounds come
 * from upstream: its clients' requests are answered by the server's own code
 * (check-ins, heartbeats, readies, reports checked and collected in slot
 * order), and in place of the server phases it has the server's group task:
 *
 *     group-checkin          -> plan (once) | group-task | wait | done
 *     on a group task:       its clients' tasks carry the task's broadcast
 *                            values; their reports go into the group's part of
 *                            the aggregation's tree, slot by slot; it beats
 *                            upstream every beat interval while it collects
 *     every slot settled     -> group-report: the tree's blocks over its leaves,
 *                            and which slots reported
 *
 * With the server's --secure-agg (the group task's "secure": "T K") it runs
 * secure aggregation among its group's clients as a flat server does among
 * its own (server_secagg.c, the same code): their masks cancel within the
 * group, a dropped client's are rebuilt from the group's shares, and the
 * group's i32 sums, unmasked, stand in its report for the masked partial sums
 * of its tree (integer sums modulo 2^32, whose order does not change their
 * bits). The server sees each group's sum, never a client's. A group whose
 * secure round fails (fewer than T at some step) reports that instead, and
 * the server gives it up.
 *
 * It holds no server state and no checkpoint: one killed and started again
 * checks in again, and is given the open exchange's group task if the server
 * has not given its group up, else the next one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/client.h"
#include "deploy/groups.h"
#include "deploy/held.h"

typedef struct aggregator {
    const fedc_aggregator_options *o;
    fedc_server_options so; /* its server side's options (s.o) */
    server s;               /* the server its clients see */
    fedc__net up;           /* to the server */
    char group[16];
    int first, cohort;      /* its slots: [first, first + s.k) of a round's cohort */
    int32_t *group_of;      /* the groups the plan pins (plan_groups.c): each client's, else NULL */
    int up_beat_ms;         /* the server's beat interval */
    int forwarded;
} aggregator;

void fedc_aggregator_defaults(fedc_aggregator_options *o) {
    memset(o, 0, sizeof *o);
    fedc_server_options so;
    fedc_server_defaults(&so);
    o->timeout = 60, o->max_seconds = 86400;
    o->report_deadline = so.report_deadline;
    o->heartbeat = so.heartbeat, o->heartbeat_timeout = so.heartbeat_timeout;
    o->reorder_window = so.reorder_window, o->max_held = so.max_held;
    o->max_message = so.max_message, o->threads = so.threads, o->linger = so.linger;
}

static fedc_status call(aggregator *a, fedc__msg_type type, const fedc_metadata_entry *f, int nf, const fedc_tensor_entry *t,
                        int nt, fedc__msg *reply) {
    fedc_status st = fedc__net_call(&a->up, type, f, nf, t, nt, reply);
    if (!st && reply->type == FEDC__MSG_REJECT) {
        st = fedc_error(FEDC_EIO, "aggregator %s: the server refused: %s", a->group, fedc__msg_field(reply, "reason"));
        fedc__msg_free(reply);
    }
    return st;
}

static fedc_status checkin(aggregator *a, const char *hash, fedc__msg *reply) {
    char version[16];
    snprintf(version, sizeof version, "%d", FEDC__PROTOCOL_VERSION);
    fedc_metadata_entry f[] = {{"token", a->s.token}, {"group", a->group}, {"version", version}, {"plan_hash", hash}};
    return call(a, FEDC__MSG_GROUP_CHECKIN, f, 4, NULL, 0, reply);
}

/* The plan from the server, and what a server of it holds per client. */
static fedc_status fetch_plan(aggregator *a) {
    server *s = &a->s;
    fedc__msg m;
    char who[32];
    snprintf(who, sizeof who, "aggregator %s", a->group);
    fedc_status st = checkin(a, "", &m);
    if (st) return st;
    if (m.type != FEDC__MSG_PLAN) st = fedc_error(FEDC_EPARSE, "%s: asked for the plan, got a %s message", who, fedc__msg_name(m.type));
    if (!st) st = fedc__plan_of_message(&m, who, &s->plan);
    fedc__msg_free(&m);
    if (st) return st;
    s->form = fedc_plan_form(s->plan);
    const char *pop = fedc_plan_setting(s->plan, "population"), *seed = fedc_plan_setting(s->plan, "seed");
    s->seed = seed ? strtoull(seed, NULL, 10) : 0; /* secure aggregation's graph seed */
    s->population = pop ? strtoll(pop, NULL, 10) : 0;
    if (s->population < 1 || s->population > (int64_t)1 << 31)
        return fedc_error(FEDC_EPARSE, "%s: the plan's population is missing or out of range", who);
    size_t n = (size_t)s->population;
    s->slot_of = fedc_malloc(n * sizeof *s->slot_of);
    s->next_round = fedc_calloc(n, 1);
    s->heard = fedc_calloc(n, sizeof *s->heard);
    s->taken_round = fedc_malloc(n * sizeof *s->taken_round);
    s->taken_exchange = fedc_calloc(n, sizeof *s->taken_exchange);
    s->added_round = fedc_malloc(n * sizeof *s->added_round);
    s->task = fedc_calloc(4096, sizeof *s->task);
    s->up = fedc_calloc(4096, sizeof *s->up);
    s->maxheld = a->so.max_held;
    s->held = fedc_calloc((size_t)s->maxheld + 1, sizeof *s->held);
    if (!s->slot_of || !s->next_round || !s->heard || !s->taken_round || !s->taken_exchange || !s->added_round || !s->task ||
        !s->up || !s->held)
        return fedc_error(FEDC_ENOMEM, "%s: out of memory", who);
    for (size_t i = 0; i < n; i++) s->slot_of[i] = s->added_round[i] = -1, s->taken_round[i] = INT32_MIN;
    int groups = 0;
    st = fedc_plan_groups(s->plan, &a->group_of, &groups);
    if (!st && a->group_of && a->o->group >= groups)
        st = fedc_error(FEDC_EINVAL, "%s: the plan pins its clients to %d groups (0 to %d); group %s is not one", who,
                        groups, groups - 1, a->group);
    if (!st && a->group_of) s->group_of = a->group_of, s->group = a->o->group; /* the others' clients refused */
    return st;
}

/* Its slots, as a group task says: the same every round, or, with groups the
 * plan pins, its clients' slots among the round's (a collection of their
 * number, made again when they change). */
static fedc_status group_slots(aggregator *a, int cohort, int first, int n) {
    server *s = &a->s;
    if (n < 1 || first < 0 || first + n > cohort)
        return fedc_error(FEDC_EPARSE, "aggregator %s: a group task of slots %d to %d of %d", a->group, first, first + n - 1, cohort);
    if (s->collect && cohort == a->cohort && first == a->first && n == s->k) return FEDC_OK;
    if (s->collect && (!a->group_of || cohort != a->cohort))
        return fedc_error(FEDC_EPARSE, "aggregator %s: the group was slots %d to %d of %d, and is now %d to %d of %d",
                          a->group, a->first, a->first + s->k - 1, a->cohort, first, first + n - 1, cohort);
    fedc_status st = FEDC_OK;
    if (!s->collect) { /* the first task: room for a group of the whole cohort */
        s->sampled = fedc_calloc((size_t)cohort, sizeof *s->sampled);
        s->left_out = fedc_calloc((size_t)cohort, 1);
        s->sent = fedc_calloc((size_t)cohort, 1);
        s->granted = fedc_calloc((size_t)cohort, 1);
        if (!s->sampled || !s->left_out || !s->sent || !s->granted) return fedc_error(FEDC_ENOMEM, "aggregator: out of memory");
        st = fedc__deployment_run_create_server(&s->run, s->form, &(fedc_exec_options){.clients = cohort,
                                                                                       .threads = a->so.threads});
    }
    fedc__collect_destroy(s->collect);
    s->collect = NULL;
    a->cohort = cohort, a->first = first;
    s->k = s->commit = n;
    char spill[4200];
    snprintf(spill, sizeof spill, "%s/group-%s.spill", a->so.out_dir, a->group);
    if (!st) st = fedc__collect_create(&s->collect, s->run, n, n, a->so.reorder_window, spill);
    if (!st) fedc__collect_set_base(s->collect, first);
    return st;
}

/* The group's secure aggregation, as the group task's "secure" field ("T K",
 * or "" or none: without) says, made the first time (the group's slots are the
 * same every round); then begun for the task's exchange. */
static fedc_status secure_begin(aggregator *a, const char *field) {
    server *s = &a->s;
    int t, k, used = 0;
    if (!field || !field[0]) return FEDC_OK;
    if (sscanf(field, "%d %d%n", &t, &k, &used) != 2 || field[used])
        return fedc_error(FEDC_EPARSE, "aggregator %s: the group task's secure field \"%.40s\" is not \"T K\"", a->group,
                          field);
    fedc_status st = FEDC_OK;
    if (!s->sec)
        st = fedc__secure_create(&s->sec, s->form, &(fedc__secure_setup){t, k, s->k, s->k, a->so.heartbeat_timeout, s->log,
                                 s->name, "group"});
    /* each group's own graph seed: the groups' rings differ */
    if (!st) st = fedc__secure_begin(s->sec, s->collect, s->round, s->exchange, s->seed + (uint64_t)a->o->group, s->sampled,
                                     fedc_seconds());
    return st;
}

/* The task's clients in their slots, the rounds that added their reports, and
 * the broadcast values (pointing into the task, which outlives the exchange). */
static fedc_status take_task(aggregator *a, const fedc__msg *m) {
    server *s = &a->s;
    int64_t round, e, cohort, first, hb, rounds;
    fedc_status st = FEDC_OK;
    if (fedc__msg_int(m, "round", 0, INT32_MAX, &round) || fedc__msg_int(m, "exchange", 0, 1000, &e) ||
        fedc__msg_int(m, "cohort", 1, 1 << 30, &cohort) || fedc__msg_int(m, "first", 0, 1 << 30, &first) ||
        fedc__msg_int(m, "heartbeat_ms", 1, 3600000, &hb) || fedc__msg_int(m, "rounds", 1, INT32_MAX, &rounds))
        return fedc_error(FEDC_EPARSE, "aggregator %s: a group task: %s", a->group, fedc_errmsg());
    const char *ids = fedc__msg_field(m, "clients"), *left = fedc__msg_field(m, "left_out");
    int n = (int)strlen(left);
    for (int i = 0; i < s->k; i++) s->slot_of[s->sampled[i]] = -1; /* the last task's */
    if ((st = group_slots(a, (int)cohort, (int)first, n))) return st;
    const char *p = ids;
    for (int i = 0; i < n; i++) {
        char *end;
        long long id = strtoll(p, &end, 10);
        if (end == p || id < 0 || id >= s->population || (*end != (i + 1 < n ? ',' : '\0')))
            return fedc_error(FEDC_EPARSE, "aggregator %s: the group task's clients are not %d ids of the plan's population",
                              a->group, n);
        if (a->group_of && a->group_of[id] != a->o->group)
            return fedc_error(FEDC_EPARSE, "aggregator %s: the group task gives it client %lld, of group %d of the plan's "
                              "groups", a->group, id, (int)a->group_of[id]);
        s->sampled[i] = id, s->slot_of[id] = i, p = end + 1;
    }
    if ((st = fedc__added_parse(fedc__msg_field(m, "added"), s->added_round, s->population, rounds))) return st;
    a->so.rounds = (int)rounds, a->up_beat_ms = (int)hb;
    s->round = (int)round, s->exchange = (int)e;
    if ((st = fedc__server_exchange_io(s, (int)e))) return st;
    if (fedc_safetensors_count(m->body) != s->ntask)
        return fedc_error(FEDC_EPARSE, "aggregator %s: the group task carries %d values; exchange %d broadcasts %d", a->group,
                          fedc_safetensors_count(m->body), (int)e, s->ntask);
    for (int j = 0; j < s->ntask; j++) {
        fedc_tensor_entry t;
        if (fedc_safetensors_find(m->body, s->task[j].name, &t) || t.type.dtype != s->task[j].type.dtype ||
            !fedc_type_same_shape(&t.type, &s->task[j].type))
            return fedc_error(FEDC_EPARSE, "aggregator %s: the group task has no \"%s\" of its type", a->group, s->task[j].name);
        s->task[j].data = t.data;
    }
    for (int i = 0; !st && i < n; i++) /* out of the round since an earlier exchange */
        if ((s->left_out[i] = left[i] == '1')) st = fedc__collect_drop(s->collect, i);
    if (!st) st = secure_begin(a, fedc__msg_field(m, "secure"));
    return st;
}

/* Beats upstream; false when the server no longer wants this group's report. */
static bool beat_upstream(aggregator *a) {
    char round[16], exchange[16];
    snprintf(round, sizeof round, "%d", a->s.round), snprintf(exchange, sizeof exchange, "%d", a->s.exchange);
    fedc_metadata_entry f[] = {{"token", a->s.token}, {"group", a->group}, {"round", round}, {"exchange", exchange}};
    fedc__msg m;
    if (call(a, FEDC__MSG_GROUP_BEAT, f, 4, NULL, 0, &m)) {
        fprintf(a->s.log, "fedc aggregator %s: round %d: %s\n", a->group, a->s.round + 1, fedc_errmsg());
        return false;
    }
    fedc__msg_free(&m);
    return true;
}

/* Output j's blocks of a secure sum: the tree summed masked inputs, so the
 * first block with clients carries the group's unmasked sum, the others zeros
 * (the server adds them modulo 2^32: the group's sum, whatever the order). */
static void unmasked_blocks(fedc__group_block *b, int n, const uint32_t *sum, const void *zeros) {
    bool first = true;
    for (int k = 0; k < n; k++)
        if (b[k].clients) b[k].data = first ? (const void *)sum : zeros, first = false;
}

/* The group's report: which slots reported, and each aggregate's blocks; or,
 * when its secure round failed, why (no blocks: its sums are masked). */
static fedc_status forward(aggregator *a) {
    server *s = &a->s;
    const char *failed = fedc__secure_failed(s->sec);
    int outputs = fedc__deployment_agg_outputs(s->run, s->exchange), nt = 0, added = 0;
    size_t cap = (size_t)outputs * FEDC__GROUP_MAX_BLOCKS;
    char *reported = fedc_malloc((size_t)s->k + 1), *text = fedc_malloc(cap * 96 + 1);
    fedc_tensor_entry *t = fedc_calloc(cap + 1, sizeof *t);
    char (*names)[24] = fedc_calloc(cap + 1, sizeof *names);
    void **zeros = fedc_calloc((size_t)outputs + 1, sizeof *zeros);
    fedc_status st = reported && text && t && names && zeros ? FEDC_OK : fedc_error(FEDC_ENOMEM, "aggregator: out of memory");
    size_t len = 0;
    for (int i = 0; !st && i < s->k; i++) added += (reported[i] = fedc__collect_state(s->collect, i) == FEDC__SLOT_ADDED ? '1' : '0') == '1';
    if (!st) reported[failed ? 0 : s->k] = text[0] = 0;
    for (int j = 0; !st && !failed && j < outputs; j++) {
        fedc__group_block b[FEDC__GROUP_MAX_BLOCKS];
        int n;
        size_t bytes;
        st = fedc__deployment_agg_blocks(s->run, s->exchange, j, b, &n, &bytes);
        const uint32_t *sum = st ? NULL : fedc__secure_sum_of(s->sec, j);
        if (sum && !(zeros[j] = fedc_calloc(1, bytes))) st = fedc_error(FEDC_ENOMEM, "aggregator: out of memory");
        if (sum && !st) unmasked_blocks(b, n, sum, zeros[j]);
        for (int k = 0; !st && k < n; k++) {
            len += (size_t)snprintf(text + len, 96, "%s%d:%lld:%d:%d:%a", len ? "," : "", j, (long long)b[k].first,
                                    b[k].level, b[k].clients, b[k].weight);
            if (!b[k].clients) continue;
            snprintf(names[nt], sizeof names[nt], "block/%d", nt);
            t[nt] = (fedc_tensor_entry){names[nt], fedc_type_make(FEDC_U8, 1, (int64_t[]){(int64_t)bytes}), (void *)b[k].data};
            nt++;
        }
    }
    char round[16], exchange[16];
    snprintf(round, sizeof round, "%d", s->round), snprintf(exchange, sizeof exchange, "%d", s->exchange);
    fedc__msg m = {0};
    fedc_metadata_entry f[] = {{"token", s->token}, {"group", a->group}, {"round", round}, {"exchange", exchange},
                               {"hash", fedc_plan_hash(s->plan)}, {"reported", reported}, {"blocks", text},
                               {"secure_failed", failed}};
    if (!st) st = fedc__net_call(&a->up, FEDC__MSG_GROUP_REPORT, f, failed ? 8 : 7, t, nt, &m);
    if (!st && m.type == FEDC__MSG_REJECT) /* the group given up before it came, say: the next task is what counts */
        fprintf(s->log, "fedc aggregator %s: round %d exchange %d: the server refused the group's report: %s\n", a->group,
                s->round + 1, s->exchange, fedc__msg_field(&m, "reason"));
    else if (!st && failed)
        fprintf(s->log, "fedc aggregator %s: round %d exchange %d: the group's secure aggregation failed; the server is "
                "told so\n", a->group, s->round + 1, s->exchange);
    else if (!st)
        fprintf(s->log, "fedc aggregator %s: round %d exchange %d: %d of %d clients reported; forwarded as %d sums\n",
                a->group, s->round + 1, s->exchange, added, s->k, nt);
    a->forwarded += !st && m.type != FEDC__MSG_REJECT;
    if (!st) fedc__msg_free(&m);
    for (int j = 0; zeros && j < outputs; j++) fedc_free(zeros[j]);
    fedc_free(reported), fedc_free(text), fedc_free(t), fedc_free(names), fedc_free(zeros);
    return st;
}

/* Answers the group's clients until `until`, or until what it waits for is
 * settled (the collection, or the unmasking), beating upstream every beat
 * interval; *wanted false once the server no longer wants the group's report. */
static fedc_status serve_beating(aggregator *a, double until, bool *wanted) {
    server *s = &a->s;
    fedc_status st = FEDC_OK;
    double now;
    while (!st && *wanted && !fedc__server_settled(s) && (now = fedc_seconds()) < until) {
        double next = now + a->up_beat_ms / 1000.0;
        st = fedc__server_serve(s, next < until ? next : until);
        if (!st && !fedc__server_settled(s)) *wanted = beat_upstream(a);
    }
    return st;
}

typedef struct unmasking {
    aggregator *a;
    bool wanted;
} unmasking;

static fedc_status serve_unmasking(server *s, double until, void *ctx) {
    unmasking *u = ctx;
    (void)s;
    return serve_beating(u->a, until, &u->wanted);
}

/* One group task: its clients' reports collected (until the deadline, or until
 * the server gives the group up), the group's secure round unmasked, if any;
 * then forwarded. */
static fedc_status run_task(aggregator *a, const fedc__msg *m) {
    server *s = &a->s;
    fedc_status st = take_task(a, m);
    if (st) return st;
    double now = fedc_seconds();
    s->collecting = true, s->opened = now, s->waited = -1;
    memset(s->sent, 0, (size_t)s->k), memset(s->granted, 0, (size_t)s->k);
    s->unconfirmed = s->ngranted = 0;
    fedc__held_answer(s); /* the held check-ins of its clients get their tasks now */
    unmasking u = {a, true};
    st = serve_beating(a, now + a->so.report_deadline, &u.wanted);
    for (int i = 0; !st && u.wanted && i < s->k; i++) st = fedc__collect_drop(s->collect, i); /* the deadline */
    s->collecting = false;
    fedc__held_answer(s); /* its readies are told the exchange wants no report now */
    if (!st && u.wanted && fedc__secure_active(s->sec)) {
        st = fedc__server_unmask(s, serve_unmasking, &u);
        fprintf(s->log, "%s: round %d exchange %d: secure aggregation ", s->name, s->round + 1, s->exchange);
        fedc__secure_summary(s->sec, s->log);
        fprintf(s->log, "\n");
    }
    return st || !u.wanted ? st : forward(a);
}

/* The job is over: its clients are told so, for the linger. */
static fedc_status finish(aggregator *a, const fedc__msg *m) {
    server *s = &a->s;
    int64_t rounds;
    fedc_status st = fedc__msg_int(m, "rounds", 1, INT32_MAX, &rounds);
    if (!st) a->so.rounds = (int)rounds;
    const char *added = fedc__msg_field(m, "added"); /* a done's field, absent from a plain server's */
    if (!st) st = fedc__added_parse(added ? added : "", s->added_round, s->population, rounds);
    if (st) return st;
    s->done = true;
    fprintf(s->log, "fedc aggregator %s: done: %d group reports forwarded\n", a->group, a->forwarded);
    fedc__held_answer(s);
    double now = fedc_seconds();
    return fedc__server_serve(s, (s->retry_until > now ? s->retry_until : now) + a->so.linger);
}

static fedc_status serve_group(aggregator *a) {
    server *s = &a->s;
    double start = fedc_seconds();
    while (fedc_seconds() - start < a->o->max_seconds) {
        fedc__msg m;
        fedc_status st = checkin(a, fedc_plan_hash(s->plan), &m);
        if (st) return st;
        int64_t ms = 100;
        if (m.type == FEDC__MSG_GROUP_TASK) st = run_task(a, &m);
        else if (m.type == FEDC__MSG_DONE) st = finish(a, &m);
        else if (m.type == FEDC__MSG_WAIT && !fedc__msg_int(&m, "retry_ms", 0, 30000, &ms))
            st = fedc__server_serve(s, fedc_seconds() + (double)ms / 1000);
        else st = fedc_error(FEDC_EPARSE, "aggregator %s: a %s message in answer to a check-in", a->group, fedc__msg_name(m.type));
        bool done = m.type == FEDC__MSG_DONE;
        fedc__msg_free(&m);
        if (st || done) return st;
    }
    return fedc_error(FEDC_EIO, "aggregator %s: the job did not end within %g s", a->group, a->o->max_seconds);
}

fedc_status fedc_aggregator_run(const fedc_aggregator_options *o) {
    if (!o->connect || !o->listen || !o->token || !o->token[0] || o->group < 0 || !(o->timeout > 0) ||
        !(o->report_deadline > 0) || !(o->heartbeat_timeout > o->heartbeat) || o->reorder_window < 1 || o->max_held < 0)
        return fedc_error(FEDC_EINVAL, "aggregator: needs the server's address and token, an address to listen on, a "
                          "group of 0 or more, a timeout and deadline above 0, a heartbeat timeout above the heartbeat "
                          "interval and a reorder window of 1 or more");
    if (strlen(o->token) >= sizeof ((server *)0)->token || strpbrk(o->token, "\"\\\n"))
        return fedc_error(FEDC_EINVAL, "aggregator: the token must be 1 to 159 bytes without quotes, backslashes or newlines");
    aggregator *a = fedc_calloc(1, sizeof *a);
    if (!a) return fedc_error(FEDC_ENOMEM, "aggregator: out of memory");
    server *s = &a->s;
    a->o = o;
    fedc_server_defaults(&a->so);
    a->so.listen = o->listen, a->so.out_dir = o->out_dir ? o->out_dir : ".", a->so.token = o->token;
    a->so.report_deadline = o->report_deadline, a->so.heartbeat = o->heartbeat;
    a->so.heartbeat_timeout = o->heartbeat_timeout, a->so.reorder_window = o->reorder_window;
    a->so.max_held = o->max_held, a->so.max_message = o->max_message, a->so.threads = o->threads;
    a->so.linger = o->linger;
    s->o = &a->so, s->log = o->log ? o->log : stderr;
    snprintf(s->token, sizeof s->token, "%s", o->token);
    snprintf(a->group, sizeof a->group, "%d", o->group);
    snprintf(s->name, sizeof s->name, "fedc aggregator %s", a->group);
    fedc_status st = fedc__net_dial(&a->up, o->connect, o->max_message, (int)(o->timeout * 1000),
                                    &(fedc__tls){.ca = o->tls_ca, .server_name = o->tls_server_name});
    if (!st) st = fetch_plan(a);
    if (!st) st = fedc_make_dirs(a->so.out_dir);
    if (!st) st = fedc__net_listen(&s->net, o->listen, o->max_message, FEDC__SERVER_RECV_MS,
                                   &(fedc__tls){.cert = o->tls_cert, .key = o->tls_key});
    if (!st) fprintf(s->log, "fedc aggregator %s: listening on %s for the group's clients, plan %s, server %s\n", a->group,
                     o->listen, fedc_plan_hash(s->plan), o->connect);
    if (!st) st = serve_group(a);
    fedc__net_close(&a->up);
    fedc__server_teardown(s);
    fedc_free(a->group_of), fedc_free(a);
    return st;
}
