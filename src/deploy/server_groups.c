/* A server's aggregators (groups.h): `fedc server --groups N`. The server
 * sends each group's aggregator its group task (the broadcast values, and the
 * group's clients in their slots), keeps its report (the aggregation tree's
 * blocks over the group's leaves) until every group before it is settled, and
 * then pushes its blocks into the round's aggregation and settles its slots,
 * reported or dropped as the aggregator says. A group whose aggregator falls
 * silent for the heartbeat timeout is given up, its clients dropped, as a
 * silent client's slot is; a restarted aggregator checks in again and gets the
 * group task of the open exchange, or of the next one. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "deploy/groups.h"

typedef enum group_state { GROUP_OPEN, GROUP_REPORTED, GROUP_SETTLED, GROUP_DROPPED } group_state;

struct fedc__groups {
    int n;
    int32_t *group_of;   /* pinned by the plan (plan build --groups): each client's group; NULL: the slots' */
    int64_t *scratch;    /* with group_of: the round's clients, while they are ordered by group */
    int *first;          /* group g's slots: [first[g], first[g + 1]) */
    uint8_t *state;      /* per group, this exchange: a group_state */
    double *heard;       /* per group: when its aggregator was last heard from (0: never) */
    char **report;       /* a report kept until the groups before it are settled: its frame */
    size_t *size;
    uint8_t *dropped;    /* per group: given up in this round (the metrics' groups_dropped) */
    int next;            /* the first group not settled */
    fedc_status failed;  /* a kept report the server could not add (out of memory): it stops at its next tick */
};

/* ------------------------------------------------------------ set-up -- */

static fedc_status plan_fits(const server *s) {
    const fedc_server_options *o = s->o;
    if (o->groups > s->k && !s->groups->group_of)
        return fedc_error(FEDC_EINVAL, "server: --groups %d is more groups than the round's %d clients; every group "
                          "needs a client", o->groups, s->k);
    if (s->commit != s->k) return fedc_error(FEDC_EUNSUPPORTED, "server: --groups with --over-select is not supported");
    if (s->credentials)
        return fedc_error(FEDC_EUNSUPPORTED, "server: --groups with --credentials-key is not supported: aggregators "
                          "present the shared token");
    if (fedc_plan_client_init(s->plan))
        return fedc_error(FEDC_EUNSUPPORTED, "server: --groups with a plan whose clients keep state (SCAFFOLD, FedDyn, "
                          "...) is not supported: a client's group, and so its aggregator, changes from round to round");
    if (fedc_plan_warm_start(s->plan))
        return fedc_error(FEDC_EUNSUPPORTED, "server: --groups with a plan that has a warm start is not supported");
    for (int e = 0; e < fedc_deployment_form_exchanges(s->form); e++) {
        const fedc_program *q = fedc_deployment_form_phase(s->form, e, FEDC_PHASE_AGGREGATION);
        for (int j = 0; j < fedc_program_num_outputs(q); j++)
            if (fedc__node_at(q, fedc_program_output_value(q, j))->op == FEDC_OP_ROBUST_AGGREGATE)
                return fedc_error(FEDC_EUNSUPPORTED, "server: --groups with a robust aggregator (plan build "
                                  "--aggregator), which needs every report at once, is not supported");
    }
    return FEDC_OK;
}

/* With --secure-agg each aggregator runs secure aggregation among its group's
 * clients (secure.h): the options must fit each group's size, checked here as
 * the aggregators will, before any of them comes. */
static fedc_status secure_fits(const server *s) {
    const fedc__groups *g = s->groups;
    fedc_status st = FEDC_OK;
    for (int i = 0; !st && s->o->secure_agg && i < g->n; i++) {
        int n = g->first[i + 1] - g->first[i];
        fedc__secure *x = NULL;
        st = fedc__secure_create(&x, s->form, &(fedc__secure_setup){s->o->secure_threshold, s->o->secure_neighbours, n, n,
                                 s->o->heartbeat_timeout, s->log, s->name, "group"});
        fedc__secure_destroy(x);
    }
    return st;
}

/* Groups the plan pins (plan_groups.c): they must be the server's --groups, and
 * as a round's groups change in size with its sample, every slot must begin a
 * leaf of the tree (groups.h). */
static fedc_status pinned(server *s) {
    fedc__groups *g = s->groups;
    int n = 0;
    fedc_status st = fedc_plan_groups(s->plan, &g->group_of, &n);
    if (st || !g->group_of) return st;
    if (n != s->o->groups)
        return fedc_error(FEDC_EINVAL, "server: the plan pins its clients to %d groups (plan build --groups); --groups "
                          "%d is not that", n, s->o->groups);
    if (s->k > 64)
        return fedc_error(FEDC_EUNSUPPORTED, "server: with groups the plan pins, a round's groups change in size with its "
                          "sample, so each slot must begin a leaf of the aggregation's tree (64 leaves): "
                          "--clients-per-round %d is above 64", s->k);
    if (s->o->secure_agg)
        return fedc_error(FEDC_EUNSUPPORTED, "server: --secure-agg with groups the plan pins is not supported yet: a "
                          "group's secure aggregation is set up for a group of one size");
    if (!(g->scratch = fedc_malloc((size_t)s->k * sizeof *g->scratch))) return fedc_error(FEDC_ENOMEM, "server: out of memory");
    fprintf(s->log, "fedc server: the plan pins its clients to the groups (%s): each round's clients ordered by group, "
            "each group's to its aggregator\n", fedc_plan_setting(s->plan, "groups"));
    return FEDC_OK;
}

fedc_status fedc__groups_create(server *s) {
    int n = s->o->groups;
    fedc__groups *g = fedc_calloc(1, sizeof *g);
    if (!g) return fedc_error(FEDC_ENOMEM, "server: out of memory");
    s->groups = g;
    fedc_status st = pinned(s);
    if (!st) st = plan_fits(s);
    if (st) return st;
    g->n = n;
    g->first = fedc_calloc((size_t)n + 1, sizeof *g->first);
    g->state = fedc_calloc((size_t)n, 1);
    g->heard = fedc_calloc((size_t)n, sizeof *g->heard);
    g->report = fedc_calloc((size_t)n, sizeof *g->report);
    g->size = fedc_calloc((size_t)n, sizeof *g->size);
    g->dropped = fedc_calloc((size_t)n, 1);
    if (!g->first || !g->state || !g->heard || !g->report || !g->size || !g->dropped)
        return fedc_error(FEDC_ENOMEM, "server: out of memory");
    for (int i = 0; i <= n; i++) g->first[i] = fedc__group_first(s->k, n, i);
    for (int i = 1; i < n && !g->group_of; i++) { /* the tree's leaves are the unit a group sums (groups.h) */
        int64_t f = g->first[i];
        if (fedc__deployment_leaf_start(s->k, fedc__deployment_leaf_of(s->k, f)) != f)
            return fedc_error(FEDC_EUNSUPPORTED, "server: with %d clients a round, group %d's first slot %lld does not "
                              "begin a leaf of the aggregation's tree (64 leaves of consecutive clients); choose "
                              "another --groups or --clients-per-round", s->k, i, (long long)f);
    }
    if ((st = secure_fits(s))) return st;
    fprintf(s->log, "fedc server: %d groups, each run by an aggregator (fedc aggregator --group G)%s\n", n,
            s->o->secure_agg ? ", each group's sum by secure aggregation among its clients" : "");
    return FEDC_OK;
}

void fedc__groups_destroy(fedc__groups *g) {
    if (!g) return;
    for (int i = 0; g->report && i < g->n; i++) fedc_free(g->report[i]);
    fedc_free(g->first), fedc_free(g->state), fedc_free(g->heard), fedc_free(g->report), fedc_free(g->size);
    fedc_free(g->dropped), fedc_free(g->group_of), fedc_free(g->scratch), fedc_free(g);
}

void fedc__groups_order(server *s) {
    fedc__groups *g = s->groups;
    if (g->group_of) fedc__order_by_group(g->group_of, g->n, s->sampled, s->k, g->scratch, g->first);
}

void fedc__groups_begin(server *s) {
    fedc__groups *g = s->groups;
    for (int i = 0; i < g->n; i++) {
        fedc_free(g->report[i]);
        /* a group with no client in the round (groups the plan pins) has nothing to report */
        g->report[i] = NULL, g->state[i] = g->first[i] < g->first[i + 1] ? GROUP_OPEN : GROUP_SETTLED;
        if (s->exchange == 0) g->dropped[i] = 0;
    }
    g->next = 0;
}

void fedc__groups_metrics(const fedc__groups *g, FILE *f) {
    if (!g) return;
    fprintf(f, "\"groups\": %d, \"groups_dropped\": [", g->n);
    for (int i = 0, n = 0; i < g->n; i++)
        if (g->dropped[i]) fprintf(f, "%s%d", n++ ? ", " : "", i);
    fprintf(f, "], \"group_clients\": [");
    for (int i = 0; i < g->n; i++) fprintf(f, "%s%d", i ? ", " : "", g->first[i + 1] - g->first[i]);
    fprintf(f, "], ");
}

/* ---------------------------------------------------------- answers -- */

/* Text that holds what a peer sent, made fit for a log line and a reason. */
static void plain(char *t) {
    for (; *t; t++)
        if (*t == '"' || *t == '\\' || (unsigned char)*t < 0x20) *t = '\'';
}

static void refuse(server *s, const char *group, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void refuse(server *s, const char *group, const char *fmt, ...) {
    char why[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    plain(why);
    fprintf(s->log, "fedc server: round %d: refused the aggregator of group %.12s: %s\n", s->round + 1, group, why);
    s->refused++;
    fedc__server_reply_to(s, &s->from, FEDC__MSG_REJECT, (fedc_metadata_entry[]){{"reason", why}}, 1, NULL, 0);
}

static void ack(server *s, const char *counted) {
    fedc__server_reply_to(s, &s->from, FEDC__MSG_ACK, (fedc_metadata_entry[]){{"counted", counted}}, 1, NULL, 0);
}

/* Group g's task: the exchange's broadcast values, its clients in their slots,
 * those left out of an earlier exchange, which round last added each client's
 * report (for clients that keep state), and, with --secure-agg, the threshold
 * and neighbours of the group's secure aggregation ("T K"; "" without). */
static void group_task(server *s, int g) {
    const fedc__groups *G = s->groups;
    int first = G->first[g], end = G->first[g + 1], n = end - first;
    char *clients = fedc_malloc((size_t)n * 24 + 1), *left = fedc_malloc((size_t)n + 1), *added = NULL;
    if (!clients || !left || fedc__added_encode(s->added_round, s->population, &added)) {
        fedc_free(clients), fedc_free(left);
        refuse(s, "?", "the server is out of memory");
        return;
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        at += (size_t)snprintf(clients + at, 24, "%s%lld", i ? "," : "", (long long)s->sampled[first + i]);
        left[i] = s->left_out[first + i] ? '1' : '0';
    }
    clients[at] = left[n] = 0;
    char round[16], exchange[16], hb[16], cohort[16], first_s[16], rounds[16], secure[32] = "";
    snprintf(round, sizeof round, "%d", s->round), snprintf(exchange, sizeof exchange, "%d", s->exchange);
    if (s->o->secure_agg) snprintf(secure, sizeof secure, "%d %d", s->o->secure_threshold, s->o->secure_neighbours);
    snprintf(hb, sizeof hb, "%d", fedc__server_beat_ms(s)), snprintf(cohort, sizeof cohort, "%d", s->k);
    snprintf(first_s, sizeof first_s, "%d", first), snprintf(rounds, sizeof rounds, "%d", s->o->rounds);
    fedc_metadata_entry f[] = {{"round", round}, {"exchange", exchange}, {"hash", fedc_plan_hash(s->plan)},
                               {"heartbeat_ms", hb}, {"cohort", cohort}, {"first", first_s}, {"clients", clients},
                               {"left_out", left}, {"added", added}, {"rounds", rounds}, {"secure", secure}};
    fedc__server_reply_to(s, &s->from, FEDC__MSG_GROUP_TASK, f, 11, s->task, s->ntask);
    fedc_free(clients), fedc_free(left), fedc_free(added);
}

static void checkin(server *s, const fedc__msg *m, int g) {
    char version[16];
    snprintf(version, sizeof version, "%d", FEDC__PROTOCOL_VERSION);
    const char *hash = fedc__msg_field(m, "plan_hash"), *who = fedc__msg_field(m, "group");
    if (strcmp(fedc__msg_field(m, "version"), version))
        return refuse(s, who, "the aggregator speaks protocol version %.20s; this server speaks %s",
                      fedc__msg_field(m, "version"), version);
    if (!hash[0]) {
        fedc__server_send_plan(s, &s->from);
        return;
    }
    if (strcmp(hash, fedc_plan_hash(s->plan)))
        return refuse(s, who, "plan hash %.64s is not this server's plan (%s)", hash, fedc_plan_hash(s->plan));
    if (s->done) {
        char rounds[16], *added = NULL;
        snprintf(rounds, sizeof rounds, "%d", s->o->rounds);
        if (fedc__added_encode(s->added_round, s->population, &added)) return refuse(s, who, "out of memory");
        fedc__server_reply_to(s, &s->from, FEDC__MSG_DONE, (fedc_metadata_entry[]){{"rounds", rounds}, {"added", added}},
                              2, NULL, 0);
        fedc_free(added);
        return;
    }
    if (s->collecting && s->groups->state[g] == GROUP_OPEN) return group_task(s, g);
    fedc__server_wait(s, &s->from, 100, "no group task now");
}

/* The round and exchange a message speaks of are the open ones. */
static bool is_open(const server *s, const fedc__msg *m, int64_t *round, int64_t *exchange) {
    *round = *exchange = -1;
    if (fedc__msg_int(m, "round", 0, INT32_MAX, round) || fedc__msg_int(m, "exchange", 0, 1000, exchange)) return false;
    return s->collecting && !s->done && *round == s->round && *exchange == s->exchange;
}

static void beat(server *s, const fedc__msg *m, int g) {
    int64_t round, exchange;
    if (!is_open(s, m, &round, &exchange) || s->groups->state[g] != GROUP_OPEN) {
        const char *why = s->groups->state[g] == GROUP_DROPPED ? "the server gave this group up" : "not an open exchange of this group's";
        fedc__server_reply_to(s, &s->from, FEDC__MSG_REJECT, (fedc_metadata_entry[]){{"reason", why}}, 1, NULL, 0);
        return;
    }
    fedc__server_wait(s, &s->from, fedc__server_beat_ms(s), "heartbeat noted");
}

/* A report's blocks, parsed and checked against group g (groups.h): for each
 * aggregation output in turn, blocks that tile the group's leaves, whose
 * clients are the reported slots, each sum of the output's size, finite. On
 * success, with `push`, each is pushed into the round's aggregation. NULL, or why. */
static const char *blocks(server *s, int g, const fedc__msg *m, bool push, char *why, size_t size) {
    const fedc__groups *G = s->groups;
    int first = G->first[g], end = G->first[g + 1], reported = 0;
    const char *rep = fedc__msg_field(m, "reported"), *b = fedc__msg_field(m, "blocks");
    if ((int)strlen(rep) != end - first || strspn(rep, "01") != strlen(rep))
        return snprintf(why, size, "\"reported\" is not %d flags (0 or 1), one per slot of the group", end - first), why;
    for (int i = first; i < end; i++) {
        if (rep[i - first] == '1' && s->left_out[i])
            return snprintf(why, size, "slot %d reported, but its client is out of the round", i), why;
        reported += rep[i - first] == '1';
    }
    const fedc_program *q = fedc_deployment_form_phase(s->form, s->exchange, FEDC_PHASE_AGGREGATION);
    int outputs = fedc_program_num_outputs(q), tensors = 0, j = -1;
    int64_t leaf = 0, last = fedc__deployment_leaf_of(s->k, end - 1) + 1, clients = 0;
    fedc_type type = {0};
    for (const char *p = b; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        int bj, level, nc, used = 0;
        long long bfirst;
        double weight;
        char w[64];
        if (sscanf(p, "%d:%lld:%d:%d:%63[^,]%n", &bj, &bfirst, &level, &nc, w, &used) != 5 ||
            (p[used] && p[used] != ','))
            return snprintf(why, size, "a block is not J:FIRST:LEVEL:CLIENTS:WEIGHT"), why;
        weight = strtod(w, NULL);
        if (bj < 0 || bj != j) { /* the next output's blocks: the one before must have tiled the group */
            if (bj != j + 1 || bj >= outputs || (j >= 0 && (leaf != last || clients != reported)))
                return snprintf(why, size, "the blocks of output %d do not tile the group's leaves", j < 0 ? 0 : j), why;
            j = bj, leaf = fedc__deployment_leaf_of(s->k, first), clients = 0;
            type = fedc_value_type(q, fedc_program_output_value(q, j));
            type.placement = FEDC_LOCAL;
        }
        if (level < 0 || level > 6 || bfirst != leaf || (bfirst & ((1 << level) - 1)) || nc < 0 || nc > end - first ||
            !isfinite(weight) || (nc == 0 && weight != 0))
            return snprintf(why, size, "block %lld:%d of output %d is not the next of the group's tree", bfirst, level, j), why;
        leaf += (int64_t)1 << level, clients += nc;
        fedc__group_block part = {bfirst, level, nc, weight, NULL};
        if (nc) {
            char name[32];
            fedc_tensor_entry e;
            snprintf(name, sizeof name, "block/%d", tensors++);
            if (fedc_safetensors_find(m->body, name, &e) || e.type.dtype != FEDC_U8 ||
                fedc_type_bytes(&e.type) != fedc_type_bytes(&type))
                return snprintf(why, size, "no tensor \"%s\" of %zu bytes", name, fedc_type_bytes(&type)), why;
            for (int64_t k = 0; (type.dtype == FEDC_F32 || type.dtype == FEDC_F64) && k < fedc_type_count(&type); k++) {
                double x = type.dtype == FEDC_F32 ? (double)((const float *)e.data)[k] : ((const double *)e.data)[k];
                if (!isfinite(x)) return snprintf(why, size, "tensor \"%s\" is not finite (element %lld)", name, (long long)k), why;
            }
            part.data = e.data;
        }
        if (push && fedc__deployment_agg_push(s->run, s->exchange, j, part))
            return snprintf(why, size, "the server could not take it: %s", fedc_errmsg()), why;
    }
    if (j != outputs - 1 || leaf != last || clients != reported || tensors != fedc_safetensors_count(m->body))
        return snprintf(why, size, "the blocks do not tile the group's leaves for each of the %d aggregates", outputs), why;
    return NULL;
}

/* Settles the groups in order while the next one can be: a kept report is
 * pushed once every slot before its group is settled. */
static fedc_status settle(server *s) {
    fedc__groups *G = s->groups;
    fedc_status st = FEDC_OK;
    while (!st && G->next < G->n) {
        int g = G->next;
        if (G->state[g] == GROUP_OPEN || (G->state[g] == GROUP_REPORTED && fedc__collect_frontier(s->collect) != G->first[g]))
            break;
        if (G->state[g] == GROUP_REPORTED) {
            fedc__msg m;
            char why[400];
            bool viewed = !(st = fedc__wire_view(G->report[g], G->size[g], G->size[g], &m));
            if (!st && blocks(s, g, &m, true, why, sizeof why)) st = fedc_error(FEDC_EINTERNAL, "group %d: %s", g, why);
            if (!st) st = fedc__collect_settle(s->collect, G->first[g], G->first[g + 1], fedc__msg_field(&m, "reported"));
            if (viewed) fedc__msg_free(&m);
            fedc_free(G->report[g]);
            G->report[g] = NULL, G->state[g] = GROUP_SETTLED;
        }
        G->next++;
    }
    return st;
}

/* Gives group g up: its aggregator `why`. */
static fedc_status give_up(server *s, int g, const char *why) {
    fedc__groups *G = s->groups;
    fprintf(s->log, "fedc server: round %d: the aggregator of group %d %s: the group (%d clients) is given up\n",
            s->round + 1, g, why, G->first[g + 1] - G->first[g]);
    G->state[g] = GROUP_DROPPED, G->dropped[g] = 1;
    fedc_status st = FEDC_OK;
    for (int i = G->first[g]; !st && i < G->first[g + 1]; i++) st = fedc__collect_drop(s->collect, i);
    return st ? st : settle(s);
}

static void report(server *s, const fedc__msg *m, const void *frame, size_t size, int g) {
    fedc__groups *G = s->groups;
    const char *who = fedc__msg_field(m, "group");
    int64_t round, exchange;
    char why[400];
    if (strcmp(fedc__msg_field(m, "hash"), fedc_plan_hash(s->plan))) return refuse(s, who, "a report for another plan");
    if (!is_open(s, m, &round, &exchange))
        return refuse(s, who, "a report for round %lld exchange %lld, which is not open", (long long)round + 1,
                      (long long)exchange);
    if (G->state[g] == GROUP_DROPPED) return refuse(s, who, "round %d gave this group up before its report came", s->round + 1);
    if (G->state[g] != GROUP_OPEN) { /* a retried upload: counted once */
        s->duplicates++;
        return ack(s, "0");
    }
    const char *failed = fedc__msg_field(m, "secure_failed");
    if (failed && failed[0]) { /* its clients' masked sum cannot be unmasked: the group is given up, as a silent one */
        char said[400];
        snprintf(said, sizeof said, "says its group's secure aggregation failed (%.300s)", failed);
        plain(said);
        if ((G->failed = give_up(s, g, said))) return refuse(s, who, "the server could not give the group up: %s", fedc_errmsg());
        return ack(s, "0");
    }
    if (blocks(s, g, m, false, why, sizeof why)) return refuse(s, who, "%s", why);
    if (!(G->report[g] = fedc_malloc(size))) return refuse(s, who, "the server is out of memory");
    memcpy(G->report[g], frame, size);
    G->size[g] = size, G->state[g] = GROUP_REPORTED;
    fedc_status st = settle(s);
    if (st) { /* the round's aggregation may hold part of a group's sums: the server stops */
        G->failed = st;
        return refuse(s, who, "the server could not add it: %s", fedc_errmsg());
    }
    ack(s, "1");
}

void fedc__groups_request(server *s, const fedc__msg *m, const void *frame, size_t size) {
    int64_t g;
    if (fedc__msg_int(m, "group", 0, s->groups->n - 1, &g)) return refuse(s, fedc__msg_field(m, "group"), "%s", fedc_errmsg());
    s->groups->heard[g] = fedc_seconds();
    if (m->type == FEDC__MSG_GROUP_CHECKIN) checkin(s, m, (int)g);
    else if (m->type == FEDC__MSG_GROUP_BEAT) beat(s, m, (int)g);
    else report(s, m, frame, size, (int)g);
}

/* ------------------------------------------------------------ timers -- */

/* Gives up the groups whose aggregators are silent, and, a timer's tick before
 * the server's deadline gives up every open slot in slot order, the groups that
 * have not reported: so the reports of the groups after them are still added. */
fedc_status fedc__groups_tick(server *s) {
    fedc__groups *G = s->groups;
    double now = fedc_seconds();
    bool deadline = now >= s->opened + s->o->report_deadline - 2.0 * FEDC__SERVER_RECV_MS / 1000;
    fedc_status st = G->failed ? fedc_error(G->failed, "server: a group's report could not be added; stopped") : FEDC_OK;
    for (int g = 0; !st && s->collecting && g < G->n; g++) {
        double heard = G->heard[g];
        if (G->state[g] != GROUP_OPEN) continue;
        char why[64];
        snprintf(why, sizeof why, "not heard from for %g s", s->o->heartbeat_timeout);
        if (deadline) st = give_up(s, g, "did not report by the deadline");
        else if (heard > 0 && now - (heard > s->opened ? heard : s->opened) >= s->o->heartbeat_timeout)
            st = give_up(s, g, why); /* never heard from: given up at the deadline */
    }
    return st;
}
