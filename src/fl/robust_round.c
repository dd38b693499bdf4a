/* A Byzantine-robust aggregator in a round (fedc_round_aggregate with
 * aggregation.robust set; fedc/robust.h): the clients' updates, a tree of
 * tensors, flattened into one vector each (the leaves in the tree's order), so
 * that Krum's distances and the geometric median see the whole update, as
 * Flower's flattened NDArrays do; the robust_aggregate op over the cohort; the
 * aggregate cut back into the update's leaves and shapes.
 *
 * Centered clipping starts from the previous round's aggregate, kept as server
 * state aggregator/center (zeros before the first round; Karimireddy et al.'s
 * v^{t-1}): the clients' updates are taken relative to it, clipped around 0, and
 * it is added back, which is the same iteration. Clients send their updates as
 * the algorithm makes them (no worker momentum). */
#include "fedc/aggregate.h"
#include "fl/fl.h"
#include "ir/ir.h"

enum { CONCAT_MAX = 64 }; /* the most operands one concat takes */

static int64_t count_of(fedc_program *p, fedc_value v) {
    fedc_type t = fedc_value_type(p, v);
    return fedc_type_count(&t);
}

/* t's leaves, each reshaped to one axis, concatenated: f32[D] at t's placement. */
static fedc_value flatten(fedc_program *p, const fedc_tree *t) {
    int n = fedc_tree_size(t), groups = 0;
    fedc_value flat[FEDC__FL_MAX_PARAMS], group[FEDC__FL_MAX_PARAMS / CONCAT_MAX + 1];
    if (n < 1 || n > FEDC__FL_MAX_PARAMS)
        return fedc_program_fail(p, FEDC_EINVAL, "robust aggregation: an update of %d tensors (1 to %d)", n,
                                 FEDC__FL_MAX_PARAMS);
    for (int i = 0; i < n; i++) {
        fedc_value v = fedc_tree_value(t, i);
        if (fedc_value_type(p, v).dtype != FEDC_F32)
            return fedc_program_fail(p, FEDC_ETYPE, "robust aggregation: the update's \"%s\" is not f32",
                                     fedc_tree_name(t, i));
        flat[i] = fedc_reshape(p, v, 1, (int64_t[]){count_of(p, v)});
    }
    for (int i = 0; i < n; i += CONCAT_MAX)
        group[groups++] = n - i == 1 ? flat[i] : fedc_concat(p, flat + i, n - i < CONCAT_MAX ? n - i : CONCAT_MAX, 0);
    return groups == 1 ? group[0] : fedc_concat(p, group, groups, 0);
}

/* flat (f32[D]@server) cut into `like`'s leaves, with their names and shapes. */
static fedc_tree *unflatten(fedc_program *p, fedc_value flat, const fedc_tree *like) {
    fedc_tree *t = fedc_tree_new(p);
    int64_t at = 0;
    for (int i = 0; t && i < fedc_tree_size(like); i++) {
        fedc_type lt = fedc_value_type(p, fedc_tree_value(like, i));
        int64_t n = fedc_type_count(&lt), end = at + n;
        fedc_value piece = fedc_slice(p, flat, &at, &end);
        fedc_tree_set(p, t, fedc_tree_name(like, i), fedc_reshape(p, piece, lt.rank, lt.dims));
        at = end;
    }
    return fedc_program_status(p) ? NULL : t;
}

/* The flat update computed in the clients' map, as its result "robust/update",
 * when update's leaves are all results of one map (an algorithm's local training
 * as it sends it: no attack, zeroing or centring after the map); else FEDC_NONE.
 * That result streams into the aggregator's store, one client at a time, so the
 * round's memory is the store's budget and not the cohort's updates. */
static fedc_value flatten_in_map(fedc_program *p, const fedc_tree *update) {
    int n = fedc_tree_size(update);
    fedc_value leaves[FEDC__FL_MAX_PARAMS], flat = FEDC_NONE;
    fedc_program *fn = NULL;
    if (n < 1 || n > FEDC__FL_MAX_PARAMS || fedc_program_create(&fn)) return FEDC_NONE;
    for (int i = 0; i < n; i++) leaves[i] = fedc_tree_value(update, i);
    fedc_tree *in = fedc_tree_input(fn, NULL, update, FEDC_LOCAL);
    fedc_status st = in ? fedc_program_output(fn, "robust/update", flatten(fn, in)) : fedc_program_status(fn);
    if (!st) st = fedc_program_status(fn);
    if (st) fedc_program_fail(p, st, "%s", fn->errmsg);
    else fedc__map_extend(p, leaves, n, fn, &flat); /* EUNSUPPORTED: flat stays FEDC_NONE */
    fedc_program_destroy(fn);
    return flat;
}

fedc_tree *fedc__robust_round(fedc_round *r, const fedc_tree *update, fedc_value weight) {
    fedc_program *p = r->p;
    const fedc_robust *rb = &r->alg->aggregation.robust;
    fedc_value x = rb->kind == FEDC_ROBUST_CCLIP ? FEDC_NONE : flatten_in_map(p, update), center = FEDC_NONE;
    if (x == FEDC_NONE && !fedc_program_status(p)) x = flatten(p, update);
    if (fedc_program_status(p)) return NULL;
    if (fedc_value_type(p, weight).dtype != FEDC_F32) weight = fedc_cast(p, weight, FEDC_F32);
    if (rb->kind == FEDC_ROBUST_CCLIP) {
        center = fedc_tree_get(p, r->server, FEDC_ROBUST_CENTER);
        if (center == FEDC_NONE) return NULL;
        if (count_of(p, center) != count_of(p, x))
            return fedc_program_fail(p, FEDC_EINVAL, "cclip: the centre (server state %s) has %lld numbers, the update "
                                     "%lld", FEDC_ROBUST_CENTER, (long long)count_of(p, center),
                                     (long long)count_of(p, x)), NULL;
        x = fedc_sub(p, x, fedc_broadcast(p, center));
    }
    fedc_value agg = fedc_robust_aggregate(p, x, weight, rb);
    if (center != FEDC_NONE) {
        agg = fedc_add(p, center, agg);
        fedc_program_output(p, "server/" FEDC_ROBUST_CENTER, agg);
    }
    return unflatten(p, agg, update);
}

fedc_status fedc__robust_server_state(fedc_program *p, const fedc_aggregation *a, fedc_tree *state) {
    if (a->robust.kind != FEDC_ROBUST_CCLIP) return FEDC_OK;
    fedc_tree *params = fedc_tree_subtree(p, state, "params");
    int64_t d = 0;
    for (int i = 0; params && i < fedc_tree_size(params); i++) d += count_of(p, fedc_tree_value(params, i));
    if (!params) return fedc_program_status(p) ? fedc_program_status(p) : FEDC_EINVAL;
    fedc_type t = fedc__placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){d}), FEDC_SERVER);
    return fedc_tree_set(p, state, FEDC_ROBUST_CENTER, fedc_full(p, t, 0));
}
