/* The federated primitives' builders, the checks on map bodies, and the split of
 * a program into segments (server, broadcast, client work, aggregation). */
#include <string.h>

#include "ir/ir.h"

fedc_value fedc_broadcast(fedc_program *p, fedc_value x) { return fedc__emit(p, FEDC_OP_BROADCAST, &x, 1, NULL, 0, NULL); }
fedc_value fedc_sum(fedc_program *p, fedc_value x) { return fedc__emit(p, FEDC_OP_SUM, &x, 1, NULL, 0, NULL); }
fedc_value fedc_mean(fedc_program *p, fedc_value x) { return fedc__emit(p, FEDC_OP_MEAN, &x, 1, NULL, 0, NULL); }

fedc_value fedc_weighted_mean(fedc_program *p, fedc_value x, fedc_value w) {
    fedc_value in[2] = {x, w};
    return fedc__emit(p, FEDC_OP_WEIGHTED_MEAN, in, 2, NULL, 0, NULL);
}

fedc_value fedc_num_clients(fedc_program *p, fedc_dtype dt) {
    fedc__attr a = fedc__attr_make_int(FEDC_ATTR_DTYPE, dt);
    return fedc__emit(p, FEDC_OP_NUM_CLIENTS, NULL, 0, &a, 1, NULL);
}

/* A body computes on one client's values (map) or one step (fold): every value
 * is local, and it neither communicates nor maps. It may fold. `who` starts the
 * messages: "map: the body" or "body 2". */
static fedc_status check_body(const char *who, const fedc_program *body) {
    fedc_status st = fedc_program_verify(body);
    if (st) {
        char msg[900];
        snprintf(msg, sizeof msg, "%s", fedc_errmsg());
        return fedc_error(st, "%s is not a valid program: %s", who, msg);
    }
    for (int v = 0; v < body->n; v++) {
        const fedc__node *n = &body->nodes[v];
        char t[64];
        if (fedc__op_is_federated(n->op))
            return fedc_error(FEDC_ETYPE, "%s: %%%d is a %s; a body computes on local values and "
                              "cannot communicate or map", who, v, fedc__ops[n->op].name);
        if (n->type.placement != FEDC_LOCAL)
            return fedc_error(FEDC_ETYPE, "%s: %%%d (%s) is %s; a body's values are local (no @server or "
                              "@clients)", who, v, fedc__ops[n->op].name, fedc_type_str(&n->type, t, sizeof t));
    }
    return FEDC_OK;
}

/* Adds a copy of `body` to p and emits `op` on `in` with it, then one result node
 * per body output. */
static fedc_status emit_with_body(fedc_program *p, fedc__op op, const fedc_program *body, const fedc_value *in, int nin,
                                  const fedc__attr *extra, int nextra, fedc_value *results) {
    for (int i = 0; i < body->noutputs; i++) results[i] = FEDC_NONE;
    if (p->status) return fedc_program_status(p);
    for (int i = 0; i < nin; i++)
        if (in[i] == FEDC_NONE) return fedc_program_status(p);
    char who[32];
    snprintf(who, sizeof who, "%s: the body", fedc__ops[op].name);
    fedc_status st = check_body(who, body);
    fedc_program *copy = NULL;
    if (!st) st = fedc_program_clone(body, &copy);
    if (st) {
        fedc__program_fail(p, st);
        return st;
    }
    int index = fedc__program_add_body(p, copy);
    if (index < 0) {
        fedc__program_fail(p, FEDC_ENOMEM);
        return FEDC_ENOMEM;
    }
    fedc__attr attrs[FEDC__MAX_ATTRS];
    attrs[0] = fedc__attr_make_int(FEDC_ATTR_BODY, index);
    for (int i = 0; i < nextra; i++) attrs[1 + i] = extra[i];
    fedc_value node = fedc__emit(p, op, in, nin, attrs, 1 + nextra, NULL);
    for (int i = 0; i < body->noutputs; i++) {
        fedc__attr which = fedc__attr_make_int(FEDC_ATTR_INDEX, i);
        results[i] = fedc__emit(p, FEDC_OP_RESULT, &node, 1, &which, 1, NULL);
    }
    return fedc_program_status(p);
}

fedc_status fedc_map(fedc_program *p, const fedc_program *body, const fedc_value *args, int nargs,
                     fedc_value *results) {
    return emit_with_body(p, FEDC_OP_MAP, body, args, nargs, NULL, 0, results);
}

fedc_status fedc__fold(fedc_program *p, const fedc_program *body, const fedc_value *operands, int nin, int ncarries,
                       bool reverse, fedc_value *results) {
    fedc__attr attrs[2] = {fedc__attr_make_int(FEDC_ATTR_CARRIES, ncarries), fedc__attr_make_int(FEDC_ATTR_REVERSE, reverse)};
    return emit_with_body(p, FEDC_OP_FOLD, body, operands, nin, attrs, 2, results);
}

fedc_status fedc_fold(fedc_program *p, const fedc_program *body, const fedc_value *init, int ncarries,
                      const fedc_value *xs, int nxs, fedc_value length, fedc_value *results) {
    int nin = ncarries + nxs + 1;
    fedc_status st = FEDC_OK;
    if (ncarries < 0 || nxs < 1 || nin > FEDC__MAX_OPERANDS)
        st = fedc_error(FEDC_EINVAL, "fold: needs 0 or more carries, 1 or more sequences, at most %d operands",
                        FEDC__MAX_OPERANDS - 1);
    fedc_value small[16], *in = st ? NULL : fedc__values_scratch(small, 16, nin);
    if (!st && !in) st = fedc_error(FEDC_ENOMEM, "fold: out of memory for %d operands", nin);
    if (st) {
        for (int i = 0; i < body->noutputs; i++) results[i] = FEDC_NONE;
        if (p->status) return fedc_program_status(p);
        fedc__program_fail(p, st);
        return st;
    }
    for (int i = 0; i < ncarries; i++) in[i] = init[i];
    for (int i = 0; i < nxs; i++) in[ncarries + i] = xs[i];
    in[ncarries + nxs] = length;
    st = fedc__fold(p, body, in, nin, ncarries, false, results);
    fedc__values_release(in, small);
    return st;
}

/* Verifies every body of p as a body (called by fedc_program_verify). */
fedc_status fedc__verify_bodies(const fedc_program *p) {
    for (int i = 0; i < p->nbodies; i++) {
        char who[32];
        snprintf(who, sizeof who, "body %d", i);
        fedc_status st = check_body(who, p->bodies[i]);
        if (st) return st;
    }
    return FEDC_OK;
}

/* ---------------------------------------------------------------- segments -- */

static const char *const segment_names[] = {"server", "broadcast", "clients", "aggregate"};

const char *fedc_segment_name(fedc_segment_kind kind) {
    return (unsigned)kind < sizeof segment_names / sizeof *segment_names ? segment_names[kind] : "?";
}

static fedc_segment_kind segment_of(const fedc__node *n) {
    switch (n->op) {
    case FEDC_OP_BROADCAST: return FEDC_SEGMENT_BROADCAST;
    case FEDC_OP_SUM:
    case FEDC_OP_MEAN:
    case FEDC_OP_WEIGHTED_MEAN:
    case FEDC_OP_ROBUST_AGGREGATE: return FEDC_SEGMENT_AGGREGATE;
    default: return n->type.placement == FEDC_CLIENTS ? FEDC_SEGMENT_CLIENTS : FEDC_SEGMENT_SERVER;
    }
}

int fedc_program_segments(const fedc_program *p, fedc_segment *out, int max) {
    int count = 0;
    fedc_segment current = {FEDC_SEGMENT_SERVER, FEDC_NONE, FEDC_NONE};
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        if (n->op == FEDC_OP_INPUT) continue;
        fedc_segment_kind kind = segment_of(n);
        if (current.first != FEDC_NONE && kind == current.kind) {
            current.last = v;
            continue;
        }
        if (current.first != FEDC_NONE && count++ < max) out[count - 1] = current;
        current = (fedc_segment){kind, v, v};
    }
    if (current.first != FEDC_NONE && count++ < max) out[count - 1] = current;
    return count;
}
