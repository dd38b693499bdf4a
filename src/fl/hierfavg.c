/* HierFAVG (Liu et al. 2020, "Client-Edge-Cloud Hierarchical Federated
 * Learning"): the cohort is split into groups (edge servers; `fedc train
 * --groups`); each group runs FedAvg on its own clients for E group rounds, and
 * the server averages the groups' models once, at the end of its round:
 *
 *     w_g = w                                           (broadcast_down)
 *     for e = 1 .. E:                                   (group rounds)
 *         each client i of group g: local training from w_g: δ_i, n_i
 *         e < E: w_g = w_g - weighted_mean_up(δ_i, n_i)  (the group's FedAvg)
 *     Δ = w - Σ_g W_g w_g^E / Σ_g W_g,  W_g = Σ_{i in g} n_i
 *     w, s = server_opt(w, Δ, s)
 *
 * With w_g^E = w_g - Σ_{i in g} n_i δ_i / W_g the server's aggregate is
 *
 *     Δ = weighted_mean_up(w - w_g, W_g) + weighted_mean(δ_i, n_i)
 *
 * over the last group round's δ_i: the groups' last averages and the server's in
 * one flat weighted mean over the cohort. With E = 1 the first term is 0 (w_g is
 * w) and is not built, so the round is FedAvg's bit for bit however the cohort is
 * grouped, as the math says (the groups only matter through their drift between
 * server rounds), and it keeps fedc_round_aggregate's options. */
#include <math.h>
#include <string.h>

#include "fl/fl.h"

static const fedc_hparam_def hparams[] = {
    {"group_rounds", 2, 1, 1000, "E: group rounds (each group's FedAvg over its clients) per server aggregation"},
};

/* r->data with each client's dropout key moved past the steps of the group rounds
 * before e, so that no two group rounds share a stream. */
static fedc_tree *data_of_group_round(fedc_round *r, int e) {
    fedc_program *p = r->p;
    fedc_tree *d = fedc_tree_new(p);
    uint32_t skip = (uint32_t)e * (uint32_t)r->alg->max_steps; /* i32 addition wraps, as the keys' */
    for (int i = 0; d && i < fedc_tree_size(r->data); i++) {
        const char *name = fedc_tree_name(r->data, i);
        fedc_value v = fedc_tree_value(r->data, i);
        fedc_tree_set(p, d, name, strcmp(name, "key") ? v : fedc__key_plus(p, v, (int32_t)skip));
    }
    return d;
}

fedc_status fedc__hier_group_round(fedc_round *r, const fedc_tree *w_g, int e, fedc_tree **out) {
    fedc_tree *data = r->data;
    if (e > 0) r->data = data_of_group_round(r, e);
    fedc_local_training how = {.start = fedc_tree_broadcast_down(r->p, w_g)};
    fedc_status st = fedc_program_status(r->p);
    if (!st) st = fedc_round_local_training(r, &how, out);
    r->data = data;
    return st;
}

fedc_status fedc__hier_group_loss(fedc_round *r, const fedc_tree *out) {
    fedc_program *p = r->p;
    return fedc_program_output(p, FEDC_GROUP_LOSS, fedc_weighted_mean_up(p, fedc_tree_get(p, out, "loss"),
                                                                         fedc_tree_get(p, out, "examples")));
}

fedc_status fedc__hier_group_rounds(fedc_round *r, int *rounds) {
    double e_set = fedc_round_hparam(r, "group_rounds");
    *rounds = 1;
    if (isnan(e_set)) return fedc_program_status(r->p); /* a wrapper without it: the round failed, naming it */
    if (e_set != floor(e_set))
        return fedc_program_fail(r->p, FEDC_EINVAL, "%s: group_rounds must be a whole number, not %g",
                                 fedc_algorithm_name(r->alg), e_set), FEDC_EINVAL;
    *rounds = (int)e_set;
    return FEDC_OK;
}

static fedc_status hierfavg_round(fedc_round *r) {
    fedc_program *p = r->p;
    int rounds;
    fedc_status st = fedc__hier_group_rounds(r, &rounds);
    if (st) return st;
    if (rounds > 1 && fedc_aggregation_active(&r->alg->aggregation))
        return fedc_program_fail(p, FEDC_EINVAL, "hierfavg: the robust, DP and compressing aggregators (--aggregator, "
                                 "--robust-zero, --dp-clip, --compress) apply with group_rounds=1 only; with %d group "
                                 "rounds the groups average their clients' updates before the server sees them",
                                 rounds), FEDC_EINVAL;
    fedc_tree *w = fedc_tree_subtree(p, r->server, "params");
    fedc_tree *w_g = fedc_tree_broadcast_down(p, w), *out = NULL;
    st = fedc_program_status(p);
    for (int e = 0; !st && e < rounds; e++) {
        if (e > 0) { /* the group's FedAvg of the group round before */
            fedc_value n = fedc_round_weight(r, fedc_tree_get(p, out, "examples"));
            w_g = fedc_tree_sub(p, w_g, fedc_tree_weighted_mean_up(p, fedc_tree_subtree(p, out, "delta"), n));
        }
        st = fedc__hier_group_round(r, w_g, e, &out);
    }
    if (!st) st = fedc__hier_group_loss(r, out);
    if (st) return st;
    if (rounds == 1) return fedc__fedavg_finish(r, out);
    /* the groups' drift: an optimizer step on Δ, not through fedc_round_aggregate,
     * which would see only the last group round's updates */
    fedc_value examples = fedc_tree_get(p, out, "examples"), n = fedc_round_weight(r, examples);
    fedc_tree *next = fedc__server_step(r, fedc__hier_flat_grad(r, w_g, out, n, FEDC_NONE));
    /* the loss of the last group round's local training */
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), examples);
}

fedc_tree *fedc__hier_flat_grad(fedc_round *r, const fedc_tree *w_g, const fedc_tree *out, fedc_value n,
                                fedc_value eta) {
    fedc_program *p = r->p;
    const fedc_tree *w = fedc_tree_subtree(p, r->server, "params");
    fedc_tree *drift = fedc_tree_weighted_mean_up(p, fedc_tree_sub(p, fedc_tree_broadcast_down(p, w), w_g),
                                                  fedc_sum_up(p, n));
    fedc_tree *mean = fedc_tree_weighted_mean(p, fedc_tree_subtree(p, out, "delta"), n);
    return fedc_tree_add(p, drift, eta == FEDC_NONE ? mean : fedc_tree_scale(p, mean, eta));
}

const fedc_algorithm_def fedc_algorithm_hierfavg = {
    .name = "hierfavg",
    .summary = "HierFAVG: each group (fedc train --groups) runs FedAvg on its clients for group_rounds rounds, "
               "then the server averages the groups' models (weighted by their clients' weights)",
    .hparams = hparams,
    .nhparams = 1,
    .round = hierfavg_round,
    .grouped = true,
};
