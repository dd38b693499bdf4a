/* The verifier: re-checks a whole program, however it was made (built, parsed,
 * transformed), against the rules every program keeps. */
#include <string.h>

#include "ir/ir.h"

static fedc_status verify_operands(const fedc_program *p, fedc_value v) {
    const fedc__node *n = &p->nodes[v];
    const fedc__op_info *info = &fedc__ops[n->op];
    if (n->nin < info->min_inputs || n->nin > info->max_inputs)
        return fedc_error(FEDC_EINVAL, "%%%d (%s): takes %d to %d operands, has %d", v, info->name,
                          info->min_inputs, info->max_inputs, n->nin);
    for (int i = 0; i < n->nin; i++) {
        fedc_value u = n->in[i];
        if (u < 0 || u >= p->n)
            return fedc_error(FEDC_EINVAL, "%%%d (%s): operand %d refers to %%%d, which does not exist (dangling)",
                              v, info->name, i, u);
        if (u >= v)
            return fedc_error(FEDC_EINVAL, "%%%d (%s): operand %d refers to %%%d, which is not defined before it "
                              "(a cycle or a forward reference)", v, info->name, i, u);
    }
    return FEDC_OK;
}

/* The stored type must be what the op's rule computes from the operands. */
static fedc_status verify_type(const fedc_program *p, fedc_value v) {
    const fedc__node *n = &p->nodes[v];
    fedc_type t;
    fedc_status st = fedc__infer(p, n, &t);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", fedc_errmsg());
        return fedc_error(st, "%%%d %s", v, msg);
    }
    if (!fedc_type_equal(&t, &n->type)) {
        char want[64], got[64];
        return fedc_error(FEDC_ETYPE, "%%%d (%s): declared type %s but its operands give %s", v,
                          fedc__ops[n->op].name, fedc_type_str(&n->type, got, sizeof got),
                          fedc_type_str(&t, want, sizeof want));
    }
    return FEDC_OK;
}

static fedc_status verify_names(const fedc_program *p) {
    for (int v = 0; v < p->n; v++) {
        if (p->nodes[v].op != FEDC_OP_INPUT) continue;
        for (int u = 0; u < v; u++)
            if (p->nodes[u].op == FEDC_OP_INPUT && strcmp(p->nodes[u].name, p->nodes[v].name) == 0)
                return fedc_error(FEDC_EINVAL, "%%%d (input): the name \"%s\" is also the name of %%%d", v,
                                  p->nodes[v].name, u);
    }
    for (int i = 0; i < p->noutputs; i++) {
        const fedc__output *o = &p->outputs[i];
        if (o->value < 0 || o->value >= p->n)
            return fedc_error(FEDC_EINVAL, "output \"%s\" refers to %%%d, which does not exist", o->name, o->value);
        if (p->nodes[o->value].type.dtype == FEDC__TUPLE)
            return fedc_error(FEDC_ETYPE, "output \"%s\" is %%%d, a tuple of results; output its results", o->name,
                              o->value);
        for (int j = 0; j < i; j++)
            if (strcmp(p->outputs[j].name, o->name) == 0)
                return fedc_error(FEDC_EINVAL, "two outputs are named \"%s\"", o->name);
    }
    return FEDC_OK;
}

fedc_status fedc_program_verify(const fedc_program *p) {
    if (p->status) return fedc_program_status(p);
    for (int v = 0; v < p->n; v++) {
        if ((unsigned)p->nodes[v].op >= FEDC_OP_COUNT)
            return fedc_error(FEDC_EINVAL, "%%%d: unknown op %d", v, (int)p->nodes[v].op);
        fedc_status st = verify_operands(p, v);
        if (!st) st = verify_type(p, v);
        if (st) return st;
    }
    fedc_status st = verify_names(p);
    return st ? st : fedc__verify_bodies(p);
}
