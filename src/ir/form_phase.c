/* One phase of the deployment form as a program of its own: the round's values
 * of that phase, in the round's order; what they read from other phases becomes
 * inputs (by the values' names, deploy.h), what other phases read becomes
 * outputs. In client_work every value takes its per-client (local) type and each
 * map's body is inlined, so the program is one client's computation. */
#include <string.h>

#include "ir/form.h"

typedef struct extraction {
    const fedc__cut *c;
    int slot;
    bool client;          /* client_work: values are local */
    fedc_program *q;
    fedc_value *map;      /* round value -> phase value */
    bool *needed;         /* free values this phase copies */
    fedc_value **results; /* client_work: a map node's body outputs, inlined */
} extraction;

static fedc_type phase_type(const extraction *e, fedc_value v) {
    fedc_type t = fedc__node_at(e->c->round, v)->type;
    if (e->client) t.placement = FEDC_LOCAL;
    return t;
}

/* Round value u as a value of the phase: computed here already, or an input. */
static fedc_value get(extraction *e, fedc_value u) {
    if (e->map[u] != FEDC_NONE) return e->map[u];
    char name[600];
    return e->map[u] = fedc_input(e->q, fedc__deploy_name(e->c, u, name, sizeof name), phase_type(e, u));
}

/* The free values the phase's values and outputs read (operands come first, so
 * one pass backwards finds them all). */
static void mark_needed(extraction *e) {
    const fedc_program *p = e->c->round;
    for (int i = 0; i < p->noutputs; i++)
        if (e->c->output_slot[i] == e->slot && e->c->slot[p->outputs[i].value] == FEDC__DEPLOY_FREE)
            e->needed[p->outputs[i].value] = true;
    for (int v = p->n - 1; v >= 0; v--) {
        if (e->c->slot[v] != e->slot && !e->needed[v]) continue;
        const fedc__node *n = &p->nodes[v];
        for (int i = 0; i < n->nin; i++)
            if (e->c->slot[n->in[i]] == FEDC__DEPLOY_FREE) e->needed[n->in[i]] = true;
    }
}

/* A map in client_work: its body, inlined on the client's values. */
static fedc_status inline_map(extraction *e, fedc_value m, const fedc_value *in) {
    const fedc_program *body = fedc__body(e->c->round, fedc__node_at(e->c->round, m));
    fedc_value *bodymap = fedc__values(body->n ? body->n : 1);
    e->results[m] = fedc__values(body->noutputs);
    if (!bodymap || !e->results[m]) {
        fedc_free(bodymap);
        return fedc__program_fail(e->q, fedc_error(FEDC_ENOMEM, "deployment_form: out of memory")), FEDC_ENOMEM;
    }
    fedc_status st = fedc__program_inline_map(e->q, body, in, bodymap);
    for (int k = 0; !st && k < body->noutputs; k++) e->results[m][k] = bodymap[body->outputs[k].value];
    fedc_free(bodymap);
    return st;
}

/* Copies round value v into the phase. */
static void emit(extraction *e, fedc_value v) {
    const fedc_program *p = e->c->round;
    const fedc__node node = p->nodes[v], *n = &node;
    if (e->q->status) return;
    if (n->op == FEDC_OP_RESULT && e->results[n->in[0]]) {
        e->map[v] = e->results[n->in[0]][fedc__attr_int(n, FEDC_ATTR_INDEX, 0)];
        return;
    }
    if (n->op == FEDC_OP_CONSTANT) {
        e->map[v] = fedc_constant(e->q, phase_type(e, v), n->data);
        return;
    }
    for (int i = 0; i < n->nin; i++) get(e, n->in[i]);
    if (n->op == FEDC_OP_MAP) {
        fedc_value small[16], *in = fedc__values_scratch(small, 16, n->nin);
        if (!in) {
            fedc__program_fail(e->q, fedc_error(FEDC_ENOMEM, "deployment_form: out of memory"));
            return;
        }
        for (int i = 0; i < n->nin; i++) in[i] = e->map[n->in[i]];
        inline_map(e, v, in);
        fedc__values_release(in, small);
        return;
    }
    e->map[v] = fedc__program_copy_node(e->q, p, n, e->map);
}

/* The values of the phase, then its outputs: exported values by their names,
 * the round's outputs it writes by theirs. */
static fedc_status fill(extraction *e) {
    const fedc_program *p = e->c->round;
    mark_needed(e);
    for (int v = 0; v < p->n && !e->q->status; v++)
        if (e->c->slot[v] == e->slot || e->needed[v]) {
            if (p->nodes[v].op == FEDC_OP_INPUT) get(e, v);
            else emit(e, v);
        }
    char name[600];
    fedc_status st = fedc_program_status(e->q);
    for (int v = 0; v < p->n && !st; v++)
        if (e->c->slot[v] == e->slot && e->c->exported[v])
            st = fedc_program_output(e->q, fedc__deploy_name(e->c, v, name, sizeof name), e->map[v]);
    for (int i = 0; i < p->noutputs && !st; i++)
        if (e->c->output_slot[i] == e->slot) {
            fedc_value v = get(e, p->outputs[i].value);
            st = fedc_program_status(e->q);
            if (!st) st = fedc_program_output(e->q, p->outputs[i].name, v);
        }
    return st;
}

/* What a phase may hold: server phases no @clients value, client_work only
 * local ones, the broadcast only broadcasts and the aggregation only
 * aggregations (of inputs, and of local constants). */
static fedc_status check_phase(const fedc_program *q, fedc_phase_kind kind) {
    for (int v = 0; v < q->n; v++) {
        const fedc__node *n = &q->nodes[v];
        bool ok = true;
        if (kind == FEDC_PHASE_CLIENT_WORK) ok = n->type.placement == FEDC_LOCAL;
        else if (kind == FEDC_PHASE_BROADCAST)
            ok = n->op == FEDC_OP_BROADCAST || n->op == FEDC_OP_INPUT || n->type.placement == FEDC_LOCAL;
        else if (kind == FEDC_PHASE_AGGREGATION)
            ok = n->op == FEDC_OP_SUM || n->op == FEDC_OP_MEAN || n->op == FEDC_OP_WEIGHTED_MEAN ||
                 n->op == FEDC_OP_ROBUST_AGGREGATE || n->op == FEDC_OP_INPUT || n->type.placement == FEDC_LOCAL;
        else ok = n->type.placement != FEDC_CLIENTS;
        if (ok) continue;
        char t[64];
        return fedc_error(FEDC_EINTERNAL, "it holds %%%d (%s) of type %s, which crosses placements the wrong way", v,
                          fedc__ops[n->op].name, fedc_type_str(&n->type, t, sizeof t));
    }
    return fedc_program_verify(q);
}

fedc_status fedc__deploy_extract(const fedc__cut *c, int slot, fedc_program **out) {
    *out = NULL;
    const fedc_program *p = c->round;
    fedc_phase_kind kind = (fedc_phase_kind)(slot % FEDC_PHASE_COUNT);
    size_t n = (size_t)(p->n ? p->n : 1);
    extraction e = {c, slot, kind == FEDC_PHASE_CLIENT_WORK, NULL, fedc__values((int)n), fedc_calloc(n, sizeof(bool)),
                    fedc_calloc(n, sizeof(fedc_value *))};
    fedc_status st = e.map && e.needed && e.results ? fedc_program_create(&e.q)
                                                    : fedc_error(FEDC_ENOMEM, "deployment_form: out of memory");
    for (size_t v = 0; !st && v < n; v++) e.map[v] = FEDC_NONE;
    if (!st) st = fill(&e);
    if (!st) st = check_phase(e.q, kind);
    for (size_t v = 0; e.results && v < n; v++) fedc_free(e.results[v]);
    fedc_free(e.map), fedc_free(e.needed), fedc_free(e.results);
    if (st) {
        char msg[900];
        snprintf(msg, sizeof msg, "%s", fedc_errmsg());
        fedc_program_destroy(e.q);
        return fedc_error(st, "deployment_form: %s of exchange %d: %s", fedc_phase_name(kind),
                          slot / FEDC_PHASE_COUNT, msg);
    }
    *out = e.q;
    return FEDC_OK;
}
