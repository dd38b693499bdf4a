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

/* The numbers in t's leaves. */
static int64_t tree_count(fedc_program *p, const fedc_tree *t) {
    int64_t d = 0;
    for (int i = 0; t && i < fedc_tree_size(t); i++) d += count_of(p, fedc_tree_value(t, i));
    return d;
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

/* What a client sends the aggregator, from its update (a tree of values at one
 * placement: the cohort's, or one client's in the map's body): attacked by the
 * clients whose `bad` is 1 when an attack is given (its per-client kinds:
 * sign_flip, scale, gaussian from `key`), zeroed when its norm is above `zero`
 * (> 0; *zeroed: 1 if it was), flattened, and taken relative to cclip's centre
 * (FEDC_NONE: none). With `flag_last` it is not zeroed: the flag follows its
 * numbers, for the store to zero it after ALIE or IPM (fedc__robust_aggregate_attacked).
 * The same ops either way, so the same bits. */
static fedc_value sent(fedc_program *p, const fedc_attack *a, double zero, bool flag_last, const fedc_tree *update,
                       fedc_value bad, fedc_value key, fedc_value center, fedc_value *zeroed) {
    const fedc_tree *t = a ? fedc_attack_update(p, a, update, bad, key) : update;
    fedc_value flag = FEDC_NONE;
    if (t && zero > 0 && flag_last) { /* fedc_aggregate_zero's flag */
        fedc_value kept = fedc_le(p, fedc_aggregate_norm(p, t), fedc_scalar(p, FEDC_F32, zero));
        flag = fedc_select(p, kept, fedc_scalar(p, FEDC_F32, 0), fedc_scalar(p, FEDC_F32, 1));
    } else if (t && zero > 0) {
        t = fedc_aggregate_zero(p, t, fedc_aggregate_norm(p, t), fedc_scalar(p, FEDC_F32, zero), zeroed);
    }
    fedc_value x = t ? flatten(p, t) : FEDC_NONE;
    if (flag != FEDC_NONE && x != FEDC_NONE)
        x = fedc_concat(p, (fedc_value[]){x, fedc_reshape(p, flag, 1, (int64_t[]){1})}, 2, 0);
    return center == FEDC_NONE || x == FEDC_NONE ? x : fedc_sub(p, x, center);
}

/* What each client sends (sent()) computed in the clients' map, as its result
 * "robust/update" (and with a zeroing "robust/zeroed", its flag, into *zeroed),
 * when update's leaves are all results of one map (an algorithm's local training
 * as it sends it) and the other operands (bad, key, the broadcast centre:
 * FEDC_NONE where unused) come before it; else FEDC_NONE. That result streams
 * into the aggregator's store, one client at a time, so the round's memory is the
 * store's budget and not the cohort's updates. */
static fedc_value sent_in_map(fedc_program *p, const fedc_attack *a, double zero, bool flag_last,
                              const fedc_tree *update, fedc_value bad, fedc_value key, fedc_value center,
                              fedc_value *zeroed) {
    int n = fedc_tree_size(update), nv = n;
    fedc_value values[FEDC__FL_MAX_PARAMS + 3], results[2] = {FEDC_NONE, FEDC_NONE};
    fedc_value local[3] = {FEDC_NONE, FEDC_NONE, FEDC_NONE}, flag = FEDC_NONE;
    fedc_program *fn = NULL;
    if (n < 1 || n > FEDC__FL_MAX_PARAMS || fedc_program_create(&fn)) return FEDC_NONE;
    for (int i = 0; i < n; i++) values[i] = fedc_tree_value(update, i);
    fedc_tree *in = fedc_tree_input(fn, NULL, update, FEDC_LOCAL);
    const fedc_value extra[3] = {a ? bad : FEDC_NONE, a ? key : FEDC_NONE, center};
    static const char *const names[3] = {"robust/malicious", "robust/key", "robust/center"};
    for (int k = 0; k < 3; k++) {
        if (extra[k] == FEDC_NONE) continue;
        fedc_type t = fedc_value_type(p, extra[k]);
        t.placement = FEDC_LOCAL;
        local[k] = fedc_input(fn, names[k], t), values[nv++] = extra[k];
    }
    fedc_status st = in ? fedc_program_output(fn, "robust/update", sent(fn, a, zero, flag_last, in, local[0], local[1],
                                                                        local[2], &flag))
                        : fedc_program_status(fn);
    if (!st && zero > 0 && !flag_last) st = fedc_program_output(fn, "robust/zeroed", flag);
    if (!st) st = fedc_program_status(fn);
    if (st) fedc_program_fail(p, st, "%s", fn->errmsg);
    else fedc__map_extend(p, values, nv, fn, results); /* EUNSUPPORTED: the results stay FEDC_NONE */
    fedc_program_destroy(fn);
    *zeroed = results[1];
    return results[0];
}

/* The broadcast of v made before the clients' map (fedc__robust_round_inputs), or FEDC_NONE. */
static fedc_value broadcast_before(const fedc_program *p, fedc_value v) {
    for (int i = 0; v != FEDC_NONE && i < p->n; i++)
        if (p->nodes[i].op == FEDC_OP_BROADCAST && p->nodes[i].in[0] == v) return i;
    return FEDC_NONE;
}

fedc_status fedc__robust_round_inputs(fedc_round *r) {
    fedc_program *p = r->p;
    const fedc_aggregation *a = &r->alg->aggregation;
    if (a->attack.kind != FEDC_ATTACK_NONE) fedc__attack_malicious(p);
    if (a->robust.kind == FEDC_ROBUST_CCLIP && fedc_tree_has(r->server, FEDC_ROBUST_CENTER))
        fedc_broadcast(p, fedc_tree_get(p, r->server, FEDC_ROBUST_CENTER));
    return fedc_program_status(p);
}

/* The aggregate of x (f32[d]@clients; with a zeroing, d + 1: the flag last) by
 * rb with ALIE or IPM made in its store, the zeroing after it (zero > 0, of the
 * update's leaves: "aggregator/zeroed" counts whom it zeroed) and cclip's centre
 * (FEDC_NONE: none): f32[d]@server. */
static fedc_value attacked_aggregate(fedc_program *p, const fedc_robust *rb, const fedc_attack *attack, fedc_value x,
                                     fedc_value weight, fedc_value bad, fedc_value center, double zero,
                                     const fedc_tree *update) {
    fedc_value bound = FEDC_NONE, sizes = FEDC_NONE;
    int n = fedc_tree_size(update);
    int64_t d = tree_count(p, update);
    if (zero > 0) {
        int32_t count[FEDC__FL_MAX_PARAMS];
        for (int i = 0; i < n && i < FEDC__FL_MAX_PARAMS; i++)
            count[i] = (int32_t)count_of(p, fedc_tree_value(update, i));
        bound = fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_SERVER), zero);
        sizes = fedc_constant(p, fedc__placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){n}), FEDC_SERVER), count);
    }
    fedc__robust_attack kind = attack->kind == FEDC_ATTACK_ALIE ? FEDC__ROBUST_ATTACK_ALIE : FEDC__ROBUST_ATTACK_IPM;
    fedc_value agg = fedc__robust_aggregate_attacked(p, x, weight, rb, kind, attack->value, bad, center, bound, sizes);
    if (zero > 0) {
        int64_t at[2] = {0, d}, end[2] = {d, d + 1};
        fedc_program_output(p, "aggregator/zeroed", fedc_reshape(p, fedc_slice(p, agg, &at[1], &end[1]), 0, NULL));
        agg = fedc_slice(p, agg, &at[0], &end[0]);
    }
    return agg;
}

fedc_tree *fedc__robust_round(fedc_round *r, const fedc_tree *update, fedc_value weight, fedc_value bad, double zero) {
    fedc_program *p = r->p;
    const fedc_aggregation *ag = &r->alg->aggregation;
    const fedc_robust *rb = &ag->robust;
    const fedc_attack *attack = bad != FEDC_NONE ? &ag->attack : NULL;
    bool stored = attack && fedc__attack_from_honest(attack); /* ALIE, IPM: made in the store, zeroing, centre and all */
    const fedc_attack *a = stored ? NULL : attack; /* the attack each client makes */
    fedc_value key = a && a->kind == FEDC_ATTACK_GAUSSIAN ? fedc__round_client_key(r) : FEDC_NONE;
    fedc_value center = FEDC_NONE, centered = FEDC_NONE;
    if (rb->kind == FEDC_ROBUST_CCLIP) {
        center = fedc_tree_get(p, r->server, FEDC_ROBUST_CENTER);
        if (center == FEDC_NONE) return NULL;
        if (count_of(p, center) != tree_count(p, update))
            return fedc_program_fail(p, FEDC_EINVAL, "cclip: the centre (server state %s) has %lld numbers, the update "
                                     "%lld", FEDC_ROBUST_CENTER, (long long)count_of(p, center),
                                     (long long)tree_count(p, update)), NULL;
        centered = broadcast_before(p, center);
    }
    fedc_value off = stored ? FEDC_NONE : center; /* the centre the clients take off */
    fedc_value zeroed = FEDC_NONE;
    fedc_value x = sent_in_map(p, a, zero, stored, update, bad, key, off == FEDC_NONE ? FEDC_NONE : centered, &zeroed);
    if (x == FEDC_NONE && !fedc_program_status(p))
        x = sent(p, a, zero, stored, update, bad, key, off == FEDC_NONE ? FEDC_NONE
                                               : centered != FEDC_NONE ? centered : fedc_broadcast(p, center), &zeroed);
    if (zero > 0 && !stored && !fedc_program_status(p)) fedc_program_output(p, "aggregator/zeroed", fedc_sum(p, zeroed));
    if (fedc_program_status(p)) return NULL;
    if (fedc_value_type(p, weight).dtype != FEDC_F32) weight = fedc_cast(p, weight, FEDC_F32);
    fedc_value agg = stored ? attacked_aggregate(p, rb, attack, x, weight, bad, center, zero, update)
                            : fedc_robust_aggregate(p, x, weight, rb);
    if (center != FEDC_NONE) {
        agg = fedc_add(p, center, agg);
        fedc_program_output(p, "server/" FEDC_ROBUST_CENTER, agg);
    }
    return unflatten(p, agg, update);
}

fedc_status fedc__robust_server_state(fedc_program *p, const fedc_aggregation *a, fedc_tree *state) {
    if (a->robust.kind != FEDC_ROBUST_CCLIP) return FEDC_OK;
    fedc_tree *params = fedc_tree_subtree(p, state, "params");
    int64_t d = tree_count(p, params);
    if (!params) return fedc_program_status(p) ? fedc_program_status(p) : FEDC_EINVAL;
    fedc_type t = fedc__placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){d}), FEDC_SERVER);
    return fedc_tree_set(p, state, FEDC_ROBUST_CENTER, fedc_full(p, t, 0));
}
