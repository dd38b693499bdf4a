/* The type rules of the federated primitives (broadcast, the aggregations, map,
 * fold and the cohort's size): where a value is placed and what the bodies of map
 * and fold must be. The hierarchy's rules (broadcast_down, *_up) are in
 * hierarchy.c; the table in infer.c reaches all. */
#include <string.h>

#include "ir/rule.h"

fedc_status fedc__infer_BROADCAST(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0);
    if (x->placement == FEDC_CLIENTS)
        return fail(c, FEDC_ETYPE, "operand is %s, already at the clients; broadcast takes a server value",
                    TYPESTR(x));
    *out = *x;
    out->placement = FEDC_CLIENTS;
    return FEDC_OK;
}

/* sum, mean and weighted_mean take a clients value and give the server one. */
static fedc_status aggregate(const rule_ctx *c, fedc_type *out, bool floats_only) {
    const fedc_type *x = operand(c, 0);
    if (x->placement != FEDC_CLIENTS)
        return fail(c, FEDC_ETYPE, "operand is %s; %s aggregates a @clients value", TYPESTR(x), c->name);
    if (floats_only ? !fedc_dtype_is_float(x->dtype) : !(fedc_dtype_is_float(x->dtype) || x->dtype == FEDC_I32))
        return fail(c, FEDC_ETYPE, "cannot aggregate %s", TYPESTR(x));
    *out = *x;
    out->placement = FEDC_SERVER;
    return FEDC_OK;
}

fedc_status fedc__infer_SUM(const rule_ctx *c, fedc_type *out) { return aggregate(c, out, false); }
fedc_status fedc__infer_MEAN(const rule_ctx *c, fedc_type *out) { return aggregate(c, out, true); }

fedc_status fedc__infer_WEIGHTED_MEAN(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0), *w = operand(c, 1);
    fedc_status st = aggregate(c, out, true);
    if (st) return st;
    if (w->placement != FEDC_CLIENTS || w->rank != 0 || w->dtype != x->dtype)
        return fail(c, FEDC_ETYPE, "the weight is %s; it must be one %s scalar per client (%s[]@clients)", TYPESTR(w),
                    fedc_dtype_name(x->dtype), fedc_dtype_name(x->dtype));
    return FEDC_OK;
}

static fedc_status body_of(const rule_ctx *c, const fedc_program **body) {
    int64_t index = fedc__attr_int(c->n, FEDC_ATTR_BODY, -1);
    if (index < 0 || index >= c->p->nbodies)
        return fail(c, FEDC_EINVAL, "body %lld is not a body of this program (it has %d)", (long long)index,
                    c->p->nbodies);
    *body = c->p->bodies[index];
    return FEDC_OK;
}

/* Each argument is a clients value whose per-client type is the body's input, or
 * each a groups value (a map at the groups level). */
fedc_status fedc__infer_MAP(const rule_ctx *c, fedc_type *out) {
    const fedc_program *body = NULL;
    fedc_status st = body_of(c, &body);
    if (st) return st;
    int nin = fedc_program_num_inputs(body);
    if (c->n->nin != nin) return fail(c, FEDC_EINVAL, "the body takes %d inputs, given %d arguments", nin, c->n->nin);
    for (int i = 0; i < nin; i++) {
        const fedc_type *a = operand(c, i), *want = &body->nodes[fedc_program_input(body, i)].type;
        if (a->placement != FEDC_CLIENTS && a->placement != FEDC_GROUPS)
            return fail(c, FEDC_ETYPE, "argument %d is %s; map takes per-client values (@clients): broadcast it first",
                        i, TYPESTR(a));
        if (a->placement != operand(c, 0)->placement)
            return fail(c, FEDC_ETYPE, "argument %d is %s but argument 0 is %s; a map runs at one level (broadcast_down "
                        "or aggregate up first)", i, TYPESTR(a), TYPESTR(operand(c, 0)));
        if (a->dtype != want->dtype || !fedc_type_same_shape(a, want))
            return fail(c, FEDC_ETYPE, "argument %d is %s but the body's input \"%s\" is %s", i, TYPESTR(a),
                        fedc_program_input_name(body, i), TYPESTR(want));
    }
    if (body->noutputs < 1) return fail(c, FEDC_EINVAL, "the body has no outputs");
    memset(out, 0, sizeof *out);
    out->dtype = FEDC__TUPLE;
    out->placement = operand(c, 0)->placement;
    return FEDC_OK;
}

/* fold(carries..., sequences..., length): body(carries..., one step of each
 * sequence) -> (new carries..., per-step outputs...). The results are the final
 * carries and the per-step outputs stacked along a leading axis. */
fedc_status fedc__infer_FOLD(const rule_ctx *c, fedc_type *out) {
    const fedc_program *body = NULL;
    fedc_status st = body_of(c, &body);
    if (!st) st = same_placement(c, &out->placement);
    if (st) return st;
    int k = (int)fedc__attr_int(c->n, FEDC_ATTR_CARRIES, -1), m = c->n->nin - k - 1;
    int nin = fedc_program_num_inputs(body);
    if (k < 0 || m < 1) return fail(c, FEDC_EINVAL, "needs carries >= 0, at least one sequence, and a length");
    if (nin != k + m) return fail(c, FEDC_EINVAL, "the body takes %d inputs, given %d carries and %d sequences", nin, k, m);
    if (body->noutputs < k) return fail(c, FEDC_EINVAL, "the body returns %d values for %d carries", body->noutputs, k);
    if (out->placement == FEDC_CLIENTS || out->placement == FEDC_GROUPS)
        return fail(c, FEDC_ETYPE, "operands are @%s values; fold inside a map body", fedc_placement_name(out->placement));
    const fedc_type *len = operand(c, c->n->nin - 1);
    if (len->dtype != FEDC_I32 || len->rank != 0) return fail(c, FEDC_ETYPE, "the length must be i32[], got %s", TYPESTR(len));
    int64_t steps = operand(c, k)->rank ? operand(c, k)->dims[0] : -1;
    for (int i = 0; i < k + m; i++) {
        const fedc_type *a = operand(c, i), *want = &body->nodes[fedc_program_input(body, i)].type;
        fedc_type slice = *a;
        if (i >= k) { /* one step of a sequence: drop the leading axis */
            if (a->rank < 1 || a->dims[0] != steps)
                return fail(c, FEDC_ESHAPE, "sequence %d is %s; every sequence needs the leading axis %lld", i - k,
                            TYPESTR(a), (long long)steps);
            slice.rank--;
            memmove(slice.dims, slice.dims + 1, sizeof slice.dims - sizeof slice.dims[0]);
        }
        if (a->dtype != want->dtype || !fedc_type_same_shape(&slice, want))
            return fail(c, FEDC_ETYPE, "operand %d is %s but the body's input \"%s\" takes %s", i, TYPESTR(a),
                        fedc_program_input_name(body, i), TYPESTR(want));
        if (i < k) {
            const fedc_type *back = &body->nodes[body->outputs[i].value].type;
            if (back->dtype != want->dtype || !fedc_type_same_shape(back, want))
                return fail(c, FEDC_ETYPE, "carry %d enters the body as %s but comes back as %s", i, TYPESTR(want),
                            TYPESTR(back));
        }
    }
    fedc_placement pl = out->placement;
    memset(out, 0, sizeof *out);
    out->dtype = FEDC__TUPLE;
    out->placement = pl;
    return FEDC_OK;
}

fedc_status fedc__infer_RESULT(const rule_ctx *c, fedc_type *out) {
    const fedc__node *m = &c->p->nodes[c->n->in[0]];
    if (!fedc__op_has_body(m->op)) return fail(c, FEDC_ETYPE, "operand is not a map or a fold");
    const fedc_program *body = fedc__body(c->p, m);
    int64_t index = fedc__attr_int(c->n, FEDC_ATTR_INDEX, -1);
    if (index < 0 || index >= body->noutputs)
        return fail(c, FEDC_EINVAL, "index %lld is outside the %d results", (long long)index, body->noutputs);
    *out = body->nodes[body->outputs[index].value].type;
    out->placement = m->type.placement;
    int64_t k = fedc__attr_int(m, FEDC_ATTR_CARRIES, 0);
    if (m->op == FEDC_OP_FOLD && index >= k) { /* a per-step output, stacked */
        if (out->rank == FEDC_MAX_RANK) return fail(c, FEDC_ESHAPE, "a stacked output would exceed rank %d", FEDC_MAX_RANK);
        memmove(out->dims + 1, out->dims, sizeof out->dims - sizeof out->dims[0]);
        out->dims[0] = c->p->nodes[m->in[k]].type.dims[0];
        out->rank++;
    }
    return FEDC_OK;
}

fedc_status fedc__infer_NUM_CLIENTS(const rule_ctx *c, fedc_type *out) {
    int64_t dt = fedc__attr_int(c->n, FEDC_ATTR_DTYPE, FEDC_F32);
    if (!(dt == FEDC_F32 || dt == FEDC_F64 || dt == FEDC_I32))
        return fail(c, FEDC_EINVAL, "dtype must be f32, f64 or i32");
    *out = fedc_type_scalar((fedc_dtype)dt);
    out->placement = FEDC_SERVER;
    return FEDC_OK;
}
