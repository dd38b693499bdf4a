/* The placement hierarchy server ⊃ groups ⊃ clients: the builders and type rules
 * of the primitives that move a value one level (broadcast_down; sum_up, mean_up,
 * weighted_mean_up) and of the level sizes (num_groups, group_size).
 *
 * A @groups value is one value per group, a @clients value one per client with
 * the clients ordered by group (group g's clients are a contiguous range of the
 * cohort, its size given at run time: fedc_exec_options.group_sizes). So a
 * @clients value is the same in a flat program and in a hierarchical one, and the
 * flat primitives (broadcast server -> clients, sum clients -> server) stay valid
 * beside the per-level ones. map runs at either level (its arguments all @clients
 * or all @groups). */
#include "ir/rule.h"

fedc_value fedc_broadcast_down(fedc_program *p, fedc_value x) {
    return fedc__emit(p, FEDC_OP_BROADCAST_DOWN, &x, 1, NULL, 0, NULL);
}
fedc_value fedc_sum_up(fedc_program *p, fedc_value x) { return fedc__emit(p, FEDC_OP_SUM_UP, &x, 1, NULL, 0, NULL); }
fedc_value fedc_mean_up(fedc_program *p, fedc_value x) { return fedc__emit(p, FEDC_OP_MEAN_UP, &x, 1, NULL, 0, NULL); }

fedc_value fedc_weighted_mean_up(fedc_program *p, fedc_value x, fedc_value w) {
    fedc_value in[2] = {x, w};
    return fedc__emit(p, FEDC_OP_WEIGHTED_MEAN_UP, in, 2, NULL, 0, NULL);
}

fedc_value fedc_num_groups(fedc_program *p, fedc_dtype dt) {
    fedc__attr a = fedc__attr_make_int(FEDC_ATTR_DTYPE, dt);
    return fedc__emit(p, FEDC_OP_NUM_GROUPS, NULL, 0, &a, 1, NULL);
}

fedc_value fedc_group_size(fedc_program *p, fedc_dtype dt) {
    fedc__attr a = fedc__attr_make_int(FEDC_ATTR_DTYPE, dt);
    return fedc__emit(p, FEDC_OP_GROUP_SIZE, NULL, 0, &a, 1, NULL);
}

fedc_placement fedc_placement_up(fedc_placement pl) {
    return pl == FEDC_CLIENTS ? FEDC_GROUPS : pl == FEDC_GROUPS ? FEDC_SERVER : FEDC_LOCAL;
}

fedc_placement fedc_placement_down(fedc_placement pl) {
    return pl == FEDC_SERVER ? FEDC_GROUPS : pl == FEDC_GROUPS ? FEDC_CLIENTS : FEDC_LOCAL;
}

/* ---------------------------------------------------------- type rules -- */

fedc_status fedc__infer_BROADCAST_DOWN(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0);
    fedc_placement to = fedc_placement_down(x->placement);
    if (to == FEDC_LOCAL)
        return fail(c, FEDC_ETYPE, "operand is %s; broadcast_down moves a @server value to @groups or a @groups "
                    "value to @clients (one level down)", TYPESTR(x));
    *out = *x;
    out->placement = to;
    return FEDC_OK;
}

/* The aggregations one level up: @clients -> @groups (each group's clients),
 * @groups -> @server (the groups). */
static fedc_status aggregate_up(const rule_ctx *c, fedc_type *out, bool floats_only) {
    const fedc_type *x = operand(c, 0);
    fedc_placement to = fedc_placement_up(x->placement);
    if (to == FEDC_LOCAL)
        return fail(c, FEDC_ETYPE, "operand is %s; %s moves a @clients value to @groups or a @groups value to "
                    "@server (one level up)", TYPESTR(x), c->name);
    if (floats_only ? !fedc_dtype_is_float(x->dtype) : !(fedc_dtype_is_float(x->dtype) || x->dtype == FEDC_I32))
        return fail(c, FEDC_ETYPE, "cannot aggregate %s", TYPESTR(x));
    *out = *x;
    out->placement = to;
    return FEDC_OK;
}

fedc_status fedc__infer_SUM_UP(const rule_ctx *c, fedc_type *out) { return aggregate_up(c, out, false); }
fedc_status fedc__infer_MEAN_UP(const rule_ctx *c, fedc_type *out) { return aggregate_up(c, out, true); }

fedc_status fedc__infer_WEIGHTED_MEAN_UP(const rule_ctx *c, fedc_type *out) {
    const fedc_type *x = operand(c, 0), *w = operand(c, 1);
    fedc_status st = aggregate_up(c, out, true);
    if (st) return st;
    if (w->placement != x->placement || w->rank != 0 || w->dtype != x->dtype)
        return fail(c, FEDC_ETYPE, "the weight is %s; it must be one %s scalar per member (%s[]@%s)", TYPESTR(w),
                    fedc_dtype_name(x->dtype), fedc_dtype_name(x->dtype), fedc_placement_name(x->placement));
    return FEDC_OK;
}

static fedc_status level_size(const rule_ctx *c, fedc_type *out, fedc_placement pl) {
    int64_t dt = fedc__attr_int(c->n, FEDC_ATTR_DTYPE, FEDC_F32);
    if (!(dt == FEDC_F32 || dt == FEDC_F64 || dt == FEDC_I32))
        return fail(c, FEDC_EINVAL, "dtype must be f32, f64 or i32");
    *out = fedc_type_scalar((fedc_dtype)dt);
    out->placement = pl;
    return FEDC_OK;
}

fedc_status fedc__infer_NUM_GROUPS(const rule_ctx *c, fedc_type *out) { return level_size(c, out, FEDC_SERVER); }
fedc_status fedc__infer_GROUP_SIZE(const rule_ctx *c, fedc_type *out) { return level_size(c, out, FEDC_GROUPS); }

/* ------------------------------------------------------------ map_groups -- */

/* The copy of a group body's node v, one level down the tree: the body's server
 * is the group, its clients the group's clients. A server constant becomes a
 * broadcast_down of it. */
static fedc_value lift_node(fedc_program *p, const fedc_program *body, fedc_value v, const fedc_value *map) {
    const fedc__node node = body->nodes[v], *n = &node; /* by value: p's nodes may move */
    fedc_value x = n->nin ? map[n->in[0]] : FEDC_NONE;
    switch (n->op) {
    case FEDC_OP_BROADCAST: return fedc_broadcast_down(p, x);
    case FEDC_OP_SUM: return fedc_sum_up(p, x);
    case FEDC_OP_MEAN: return fedc_mean_up(p, x);
    case FEDC_OP_WEIGHTED_MEAN: return fedc_weighted_mean_up(p, x, map[n->in[1]]);
    case FEDC_OP_NUM_CLIENTS: return fedc_group_size(p, n->type.dtype);
    case FEDC_OP_CONSTANT: {
        fedc_value c = fedc__program_copy_node(p, body, n, map);
        return n->type.placement == FEDC_SERVER ? fedc_broadcast_down(p, c) : c;
    }
    default:
        if (n->op != FEDC_OP_MAP && fedc__op_is_federated(n->op)) {
            fedc_error(FEDC_ETYPE, "map_groups: the body's %%%d (%s) cannot run in a group; a group's body is a flat "
                       "program (broadcast, sum, mean, weighted_mean, num_clients, map)", v, fedc__ops[n->op].name);
            return fedc__program_fail(p, FEDC_ETYPE);
        }
        return fedc__program_copy_node(p, body, n, map);
    }
}

/* Argument i must be body input i's type, a level down (server -> groups). */
static fedc_status check_group_arg(const fedc_program *p, const fedc_program *body, int i, fedc_value arg) {
    fedc_type want = fedc_value_type(body, fedc_program_input(body, i)), got = fedc_value_type(p, arg);
    char t[64], u[64];
    if (want.placement != FEDC_SERVER && want.placement != FEDC_CLIENTS)
        return fedc_error(FEDC_ETYPE, "map_groups: the body's input \"%s\" is %s; a group's body takes @server (the "
                          "group's) and @clients values", fedc_program_input_name(body, i), fedc_type_str(&want, t, 64));
    want.placement = want.placement == FEDC_SERVER ? FEDC_GROUPS : FEDC_CLIENTS;
    if (!fedc_type_equal(&want, &got))
        return fedc_error(FEDC_ETYPE, "map_groups: argument %d is %s but the body's input \"%s\" takes %s", i,
                          fedc_type_str(&got, t, 64), fedc_program_input_name(body, i), fedc_type_str(&want, u, 64));
    return FEDC_OK;
}

fedc_status fedc_map_groups(fedc_program *p, const fedc_program *body, const fedc_value *args, int nargs,
                            fedc_value *results) {
    for (int k = 0; k < body->noutputs; k++) results[k] = FEDC_NONE;
    if (p->status) return fedc_program_status(p);
    fedc_status st = fedc_program_verify(body);
    for (int i = 0; !st && i < nargs; i++)
        if (args[i] < 0 || args[i] >= p->n) st = fedc_error(FEDC_EINVAL, "map_groups: argument %d is not a value", i);
    if (!st && nargs != fedc_program_num_inputs(body))
        st = fedc_error(FEDC_EINVAL, "map_groups: the body takes %d inputs, given %d arguments",
                        fedc_program_num_inputs(body), nargs);
    for (int i = 0; !st && i < nargs; i++) st = check_group_arg(p, body, i, args[i]);
    fedc_value *map = st ? NULL : fedc__values(body->n ? body->n : 1);
    if (!st && !map) st = fedc_error(FEDC_ENOMEM, "map_groups: out of memory");
    if (st) {
        fedc__program_fail(p, st);
        return st;
    }
    for (int v = 0, input = 0; v < body->n && !p->status; v++)
        map[v] = body->nodes[v].op == FEDC_OP_INPUT ? args[input++] : lift_node(p, body, v, map);
    for (int k = 0; !p->status && k < body->noutputs; k++) results[k] = map[body->outputs[k].value];
    fedc_free(map);
    return fedc_program_status(p);
}
