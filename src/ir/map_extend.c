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

#include "ir/ir.h"

/* The map node whose results `values` all are, or FEDC_NONE. */
static fedc_value map_of(const fedc_program *p, const fedc_value *values, int n) {
    fedc_value m = FEDC_NONE;
    for (int i = 0; i < n; i++) {
        if (values[i] < 0 || values[i] >= p->n) return FEDC_NONE;
        const fedc__node *r = fedc__node_at(p, values[i]);
        if (r->op != FEDC_OP_RESULT || fedc__node_at(p, r->in[0])->op != FEDC_OP_MAP) return FEDC_NONE;
        if (m != FEDC_NONE && r->in[0] != m) return FEDC_NONE;
        m = r->in[0];
    }
    return m;
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
    for (int i = 0; !st && i < n; i++) /* the body's value of each result */
        args[i] = body->outputs[fedc__attr_int(fedc__node_at(p, values[i]), FEDC_ATTR_INDEX, 0)].value;
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
