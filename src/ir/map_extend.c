/* Extending a map with per-client work after it: fn applied to some of a map's
 * results, computed inside the map's body instead of over the cohort after it.
 *
 * Why. The executor streams a map's result into the aggregation that reads it
 * (each client's value is added as the client finishes, src/exec/plan_memory.c),
 * but a result that an op outside the map reads is stored, one copy per client,
 * for the whole cohort. A robust aggregator reads each client's whole update as
 * one flat vector: flattened after the map, the cohort's updates would all be in
 * memory before the aggregator's budgeted store could spill them. Flattened in the
 * body, the flat vector is a result of the map that only the aggregation reads, so
 * it streams, and the store bounds the round's memory.
 *
 * The body computes the same ops on each client's values as the ops after the map
 * would on the cohort's, one client at a time: the same bits. */
#include <stdio.h>
#include <string.h>

#include "ir/ir.h"

static bool result_of_map(const fedc_program *p, fedc_value v) {
    if (v < 0 || v >= p->n) return false;
    const fedc__node *r = fedc__node_at(p, v);
    return r->op == FEDC_OP_RESULT && fedc__node_at(p, r->in[0])->op == FEDC_OP_MAP;
}

/* The map node whose results `values` are, or FEDC_NONE: at least one is, all
 * that are are results of the same map, and the others are values at the map's
 * placement defined before it (which it can take as operands). */
static fedc_value map_of(const fedc_program *p, const fedc_value *values, int n) {
    fedc_value m = FEDC_NONE;
    for (int i = 0; i < n; i++) {
        if (values[i] < 0 || values[i] >= p->n) return FEDC_NONE;
        if (!result_of_map(p, values[i])) continue;
        fedc_value mi = fedc__node_at(p, values[i])->in[0];
        if (m != FEDC_NONE && mi != m) return FEDC_NONE;
        m = mi;
    }
    for (int i = 0; m != FEDC_NONE && i < n; i++) {
        const fedc__node *v = fedc__node_at(p, values[i]);
        if (result_of_map(p, values[i])) continue;
        if (values[i] >= m || v->type.placement != fedc__node_at(p, fedc__node_at(p, m)->in[0])->type.placement)
            return FEDC_NONE;
    }
    return m;
}

/* The body's value of v, a result of map m or a value before it: a result's
 * value in the body; an operand's body input, m taking v as a new operand (a new
 * last input of the body) if it did not. */
static fedc_status body_value(fedc_program *p, fedc_value m, fedc_program *body, fedc_value v, fedc_value *out) {
    if (result_of_map(p, v)) {
        *out = body->outputs[fedc__attr_int(fedc__node_at(p, v), FEDC_ATTR_INDEX, 0)].value;
        return FEDC_OK;
    }
    fedc__node *map = &p->nodes[m];
    for (int k = 0; k < map->nin; k++)
        if (map->in[k] == v) return *out = fedc_program_input(body, k), FEDC_OK;
    if (map->nin >= FEDC__MAX_OPERANDS) return fedc_error(FEDC_EUNSUPPORTED, "map_extend: the map has %d operands", map->nin);
    char name[48];
    snprintf(name, sizeof name, "extend/%d", map->nin);
    fedc_type t = fedc__node_at(p, v)->type;
    t.placement = FEDC_LOCAL;
    fedc_value *more = fedc_malloc((size_t)(map->nin + 1) * sizeof *more), *in = NULL;
    if (more) memcpy(more, map->in, (size_t)map->nin * sizeof *more), more[map->nin] = v;
    if (more) in = fedc__program_copy(p, more, (size_t)(map->nin + 1) * sizeof *in);
    fedc_free(more);
    if (!in) return fedc_error(FEDC_ENOMEM, "map_extend: out of memory");
    *out = fedc_input(body, name, t);
    if (*out == FEDC_NONE) return fedc_program_status(body);
    map->in = in, map->nin++;
    return FEDC_OK;
}

fedc_status fedc__map_extend(fedc_program *p, const fedc_value *values, int n, const fedc_program *fn,
                             fedc_value *results) {
    for (int i = 0; i < fn->noutputs; i++) results[i] = FEDC_NONE;
    if (p->status) return fedc_program_status(p);
    fedc_value m = map_of(p, values, n);
    if (m == FEDC_NONE || n < 1 || fedc_program_num_inputs(fn) != n) return FEDC_EUNSUPPORTED; /* not recorded */
    fedc_program *body = p->bodies[fedc__attr_int(fedc__node_at(p, m), FEDC_ATTR_BODY, 0)];
    fedc_value small[16], *args = fedc__values_scratch(small, 16, n);
    fedc_value *map = fedc_malloc((size_t)(fn->n ? fn->n : 1) * sizeof *map);
    fedc_status st = args && map ? FEDC_OK : fedc_error(FEDC_ENOMEM, "map_extend: out of memory");
    for (int i = 0; !st && i < n; i++) st = body_value(p, m, body, values[i], &args[i]);
    int first = body->noutputs;
    if (!st) st = fedc__program_inline_map(body, fn, args, map);
    for (int i = 0; !st && i < fn->noutputs; i++) st = fedc_program_output(body, fn->outputs[i].name, map[fn->outputs[i].value]);
    if (!st) st = fedc_program_verify(body);
    for (int i = 0; !st && i < fn->noutputs; i++) {
        fedc__attr which = fedc__attr_make_int(FEDC_ATTR_INDEX, first + i);
        results[i] = fedc__emit(p, FEDC_OP_RESULT, &m, 1, &which, 1, NULL);
    }
    if (args) fedc__values_release(args, small);
    fedc_free(map);
    if (st) {
        char why[512];
        snprintf(why, sizeof why, "%s", body->status ? body->errmsg : fedc_errmsg());
        fedc_error(st, "map_extend: the map's body: %s", why);
        fedc__program_fail(p, st);
    }
    return st ? st : fedc_program_status(p);
}
