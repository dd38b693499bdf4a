/* The deployment form (fedc/deploy.h): which phase of which exchange computes
 * each value of a round program, then one program per phase (form_phase.c).
 *
 * The cut follows the data. A value's stage counts the aggregations on its
 * longest path from the inputs: a server value of stage k is known once exchange
 * k's aggregates are, and a clients value of stage k is client work of exchange k
 * (it may read broadcasts of stage <= k). So a clients value is computed in
 * client_work of its stage, an aggregation of a stage-k value in exchange k's
 * aggregation phase (its result is of stage k + 1), and a broadcast is sent in the
 * first exchange whose client work reads it. A server value of stage k goes into
 * server_prepare of exchange k when a broadcast of exchange k needs it, and
 * otherwise waits for server_result of exchange k (min(k, last)): TFF's form
 * computes in server_prepare only what the clients need. Local values that no
 * input reaches are copied into every phase that reads them. */
#include <stdlib.h>
#include <string.h>

#include "ir/form.h"

static const char *const phase_names[FEDC_PHASE_COUNT] = {"server_prepare", "server_to_client_broadcast",
                                                          "client_work", "client_to_server_aggregation",
                                                          "server_result"};
/* The prefixes of the values' names: the aggregation phase's values are its aggregates. */
static const char *const value_prefix[FEDC_PHASE_COUNT] = {"server_prepare", "broadcast", "client_work", "aggregate",
                                                           "server_result"};

const char *fedc_phase_name(fedc_phase_kind kind) {
    return (unsigned)kind < FEDC_PHASE_COUNT ? phase_names[kind] : "?";
}

const char *fedc__deploy_name(const fedc__cut *c, fedc_value v, char *buf, size_t size) {
    const fedc__node *n = fedc__node_at(c->round, v);
    if (n->op == FEDC_OP_INPUT) snprintf(buf, size, "%s", n->name);
    else snprintf(buf, size, "%s/%%%d", value_prefix[c->slot[v] % FEDC_PHASE_COUNT], v);
    return buf;
}

static bool is_aggregation(fedc__op op) {
    return op == FEDC_OP_SUM || op == FEDC_OP_MEAN || op == FEDC_OP_WEIGHTED_MEAN || op == FEDC_OP_ROBUST_AGGREGATE;
}

/* A local value no input reaches. */
static bool is_free(const fedc_program *p, fedc_value v) {
    const fedc__node *n = fedc__node_at(p, v);
    return n->op != FEDC_OP_INPUT && n->type.placement == FEDC_LOCAL;
}

/* stage[v] (above); returns the number of exchanges, 0 when no value is @clients. */
static int stages(const fedc_program *p, int *stage, bool *free_value) {
    int exchanges = 0;
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        free_value[v] = is_free(p, v);
        int s = 0;
        for (int i = 0; i < n->nin; i++)
            if (stage[n->in[i]] > s) s = stage[n->in[i]];
        if (is_aggregation(n->op)) s++;
        stage[v] = s;
        if (is_aggregation(n->op) && s > exchanges) exchanges = s;
        if (n->type.placement == FEDC_CLIENTS && s + 1 > exchanges) exchanges = s + 1;
    }
    return exchanges;
}

/* The exchange of a broadcast: the first that reads it (its own stage if none). */
static void broadcast_exchanges(const fedc_program *p, const int *stage, int *exchange) {
    for (int v = 0; v < p->n; v++) exchange[v] = p->nodes[v].op == FEDC_OP_BROADCAST ? -1 : stage[v];
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        int at = is_aggregation(n->op) ? stage[v] - 1 : stage[v];
        for (int i = 0; i < n->nin; i++) {
            int *b = &exchange[n->in[i]];
            if (p->nodes[n->in[i]].op == FEDC_OP_BROADCAST && (*b < 0 || at < *b)) *b = at;
        }
    }
    for (int v = 0; v < p->n; v++)
        if (exchange[v] < 0) exchange[v] = stage[v];
}

/* The slot of every value, from its stage (exchange: the broadcasts' exchanges). */
static void assign(fedc__cut *c, const int *stage, const int *exchange, const bool *free_value, bool *prepare) {
    const fedc_program *p = c->round;
    int last = c->exchanges - 1;
    /* server values a broadcast needs in its own stage: server_prepare (backwards: operands come first) */
    for (int v = p->n - 1; v >= 0; v--) {
        const fedc__node *n = &p->nodes[v];
        bool bcast = n->op == FEDC_OP_BROADCAST;
        if (!bcast && !(prepare[v] && n->type.placement == FEDC_SERVER)) continue;
        for (int i = 0; i < n->nin; i++) {
            fedc_value u = n->in[i];
            if (stage[u] == (bcast ? exchange[v] : stage[v]) && !free_value[u] && p->nodes[u].op != FEDC_OP_INPUT)
                prepare[u] = true;
        }
    }
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        if (n->op == FEDC_OP_INPUT) c->slot[v] = FEDC__DEPLOY_INPUT;
        else if (free_value[v]) c->slot[v] = FEDC__DEPLOY_FREE;
        else if (n->op == FEDC_OP_BROADCAST) c->slot[v] = fedc__deploy_slot(exchange[v], FEDC_PHASE_BROADCAST);
        else if (is_aggregation(n->op)) c->slot[v] = fedc__deploy_slot(stage[v] - 1, FEDC_PHASE_AGGREGATION);
        else if (n->type.placement == FEDC_CLIENTS) c->slot[v] = fedc__deploy_slot(stage[v], FEDC_PHASE_CLIENT_WORK);
        else if (prepare[v] && stage[v] <= last) c->slot[v] = fedc__deploy_slot(stage[v], FEDC_PHASE_SERVER_PREPARE);
        else c->slot[v] = fedc__deploy_slot(stage[v] <= last ? stage[v] : last, FEDC_PHASE_SERVER_RESULT);
    }
}

/* Which phase writes output i of the round: the one that computes it; for an
 * input, a broadcast, an aggregate or a constant, the last phase on its side. */
static int output_slot(const fedc__cut *c, fedc_value v) {
    int slot = c->slot[v], last = c->exchanges - 1;
    if (slot >= 0) {
        fedc_phase_kind kind = (fedc_phase_kind)(slot % FEDC_PHASE_COUNT);
        if (kind == FEDC_PHASE_BROADCAST) return fedc__deploy_slot(last, FEDC_PHASE_CLIENT_WORK);
        if (kind == FEDC_PHASE_AGGREGATION) return slot + 1;
        return slot;
    }
    bool clients = fedc__node_at(c->round, v)->type.placement == FEDC_CLIENTS;
    return fedc__deploy_slot(last, clients ? FEDC_PHASE_CLIENT_WORK : FEDC_PHASE_SERVER_RESULT);
}

/* Values read by a phase other than their own are exported by their own. */
static void exports(fedc__cut *c) {
    const fedc_program *p = c->round;
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        for (int i = 0; i < n->nin; i++) {
            fedc_value u = n->in[i];
            if (c->slot[u] >= 0 && c->slot[u] != c->slot[v]) c->exported[u] = true;
        }
    }
    for (int i = 0; i < p->noutputs; i++) {
        fedc_value v = p->outputs[i].value;
        c->output_slot[i] = output_slot(c, v);
        if (c->slot[v] >= 0 && c->slot[v] != c->output_slot[i]) c->exported[v] = true;
    }
}

/* An input or output of the round named like a value between phases would be
 * taken for it. */
static fedc_status check_names(const fedc_program *p) {
    for (int i = 0; i < p->n + p->noutputs; i++) {
        const char *name = i < p->n ? p->nodes[i].name : p->outputs[i - p->n].name;
        if (i < p->n && p->nodes[i].op != FEDC_OP_INPUT) continue;
        for (int k = 0; k < FEDC_PHASE_COUNT; k++) {
            size_t len = strlen(value_prefix[k]);
            if (!strncmp(name, value_prefix[k], len) && name[len] == '/' && name[len + 1] == '%')
                return fedc_error(FEDC_EINVAL, "deployment_form: the round's %s \"%s\" is named as a value between "
                                  "phases (%s/%%N); rename it", i < p->n ? "input" : "output", name, value_prefix[k]);
        }
    }
    return FEDC_OK;
}

static fedc_status cut(fedc__cut *c) {
    const fedc_program *p = c->round;
    size_t n = (size_t)(p->n ? p->n : 1);
    int *stage = fedc_calloc(n, sizeof *stage), *exchange = fedc_calloc(n, sizeof *exchange);
    bool *free_value = fedc_calloc(n, sizeof *free_value), *prepare = fedc_calloc(n, sizeof *prepare);
    c->slot = fedc_calloc(n, sizeof *c->slot);
    c->exported = fedc_calloc(n, sizeof *c->exported);
    c->output_slot = fedc_calloc((size_t)p->noutputs + 1, sizeof *c->output_slot);
    fedc_status st = FEDC_OK;
    if (!stage || !exchange || !free_value || !prepare || !c->slot || !c->exported || !c->output_slot)
        st = fedc_error(FEDC_ENOMEM, "deployment_form: out of memory");
    if (!st && !(c->exchanges = stages(p, stage, free_value)))
        st = fedc_error(FEDC_EINVAL, "deployment_form: the program has no @clients value: there is nothing for "
                        "clients to do (run it on the server as it is)");
    if (!st) {
        broadcast_exchanges(p, stage, exchange);
        assign(c, stage, exchange, free_value, prepare);
        exports(c);
    }
    fedc_free(stage), fedc_free(exchange), fedc_free(free_value), fedc_free(prepare);
    return st;
}

static void free_cut(fedc__cut *c) {
    fedc_free(c->slot), fedc_free(c->exported), fedc_free(c->output_slot);
}

void fedc_deployment_form_destroy(fedc_deployment_form *f) {
    if (!f) return;
    for (int i = 0; f->phase && i < f->exchanges * FEDC_PHASE_COUNT; i++) fedc_program_destroy(f->phase[i]);
    fedc_free(f->phase);
    fedc_program_destroy(f->round);
    fedc_free(f);
}

/* The phases: every one built and verified. */
static fedc_status build(fedc_deployment_form *f, const fedc__cut *c) {
    f->exchanges = c->exchanges;
    f->phase = fedc_calloc((size_t)c->exchanges * FEDC_PHASE_COUNT, sizeof *f->phase);
    if (!f->phase) return fedc_error(FEDC_ENOMEM, "deployment_form: out of memory");
    for (int s = 0; s < c->exchanges * FEDC_PHASE_COUNT; s++) {
        fedc_status st = fedc__deploy_extract(c, s, &f->phase[s]);
        if (st) return st;
    }
    return FEDC_OK;
}

fedc_status fedc_program_deployment_form(const fedc_program *round, fedc_deployment_form **out) {
    *out = NULL;
    fedc_status st = fedc_program_verify(round);
    if (st) {
        char msg[900];
        snprintf(msg, sizeof msg, "%s", fedc_errmsg());
        return fedc_error(FEDC_EINVAL, "deployment_form: the program cannot be split: %s", msg);
    }
    if ((st = check_names(round))) return st;
    for (int v = 0; v < round->n; v++) { /* a group level's phases run in an aggregator, which is not written yet */
        const fedc__node *n = &round->nodes[v];
        if (n->type.placement == FEDC_GROUPS || n->op == FEDC_OP_BROADCAST_DOWN || n->op == FEDC_OP_SUM_UP ||
            n->op == FEDC_OP_MEAN_UP || n->op == FEDC_OP_WEIGHTED_MEAN_UP)
            return fedc_error(FEDC_EUNSUPPORTED, "deployment_form: %%%d (%s) uses the placement hierarchy (@groups); a "
                              "hierarchical program is not deployed yet", v, fedc__ops[n->op].name);
    }
    fedc_deployment_form *f = fedc_calloc(1, sizeof *f);
    if (!f) return fedc_error(FEDC_ENOMEM, "deployment_form: out of memory");
    st = fedc_program_clone(round, &f->round);
    fedc__cut c = {.round = f->round};
    if (!st) st = cut(&c);
    if (!st) st = build(f, &c);
    free_cut(&c);
    if (st) fedc_deployment_form_destroy(f);
    else *out = f;
    return st;
}

int fedc_deployment_form_exchanges(const fedc_deployment_form *f) { return f->exchanges; }

const fedc_program *fedc_deployment_form_phase(const fedc_deployment_form *f, int exchange, fedc_phase_kind kind) {
    if (exchange < 0 || exchange >= f->exchanges || (unsigned)kind >= FEDC_PHASE_COUNT) return NULL;
    return f->phase[fedc__deploy_slot(exchange, kind)];
}

/* The round's value behind a name some phase reads or writes. */
static fedc_value named(const fedc_deployment_form *f, const char *name) {
    for (int s = 0; s < f->exchanges * FEDC_PHASE_COUNT; s++) {
        const fedc_program *q = f->phase[s];
        bool used = fedc_program_find_input(q, name) != FEDC_NONE || fedc_program_find_output(q, name) != FEDC_NONE;
        if (!used) continue;
        fedc_value v = fedc_program_find_input(f->round, name);
        if (v == FEDC_NONE) v = fedc_program_find_output(f->round, name);
        const char *at = strstr(name, "/%");
        if (v == FEDC_NONE && at) v = (fedc_value)strtol(at + 2, NULL, 10);
        return v >= 0 && v < f->round->n ? v : FEDC_NONE;
    }
    return FEDC_NONE;
}

bool fedc_deployment_form_value_type(const fedc_deployment_form *f, const char *name, fedc_type *type) {
    fedc_value v = named(f, name);
    if (v == FEDC_NONE) return false;
    *type = fedc__node_at(f->round, v)->type;
    return true;
}
