/* FedAvg with per-group server optimizers (hierfedopt): HierFAVG's hierarchy
 * (Liu et al. 2020; src/fl/hierfavg.c) whose groups are FedOpt servers (Reddi
 * et al. 2021, "Adaptive Federated Optimization"). Each group keeps its own
 * server-optimizer state s_g (--server-opt, --server-lr: Adam, Yogi, momentum,
 * ...) from round to round, untouched in a round without the group, and steps
 * its model by it on its clients' mean update every group round; the server
 * averages the groups' models weighted by their clients' weights (FedAvg's mean;
 * the server itself has no optimizer):
 *
 *     w_g = w                                                   (each of the round's groups)
 *     for e = 1 .. E:                                           (group rounds)
 *         each client i of group g: local training from w_g: δ_i, n_i
 *         w_g, s_g = opt(w_g, Σ_{i∈g} n_i δ_i / W_g, s_g)       (W_g = Σ_{i∈g} n_i)
 *     w = Σ_g (W_g / Σ_h W_h) w_g
 *
 * The weights are shares, 1 for a lone group, whose model is then the server's
 * to the bit: one group with E = 1 is FedOpt (fedavg --server-opt) bit for bit.
 *
 * Plain SGD at rate η (no state, no weight decay) is linear, so the groups' last
 * steps average to η times the cohort's flat weighted mean, which the round
 * computes as HierFAVG does:
 *
 *     w = w - [Σ_g W_g (w - w_g^{E-1}) / Σ_g W_g + η Σ_i n_i δ_i / Σ_i n_i]
 *
 * With η = 1 that is hierfavg's round bit for bit, and with E = 1 fedavg's with
 * --server-opt sgd --server-lr η, the aggregators included. */
#include "fl/fl.h"

static const fedc_hparam_def hparams[] = {
    {"group_rounds", 1, 1, 1000, "E: group rounds (each group's optimizer step on its clients' mean update) per server "
                                 "average"},
};

/* Plain SGD: no state, and a step linear in the update (the mean of the groups'
 * steps is the step of the mean). */
static bool linear(const fedc_optimizer *o) { return o->kind == FEDC_OPT_SGD && o->weight_decay == 0; }

/* The server's own step: the groups' average, SGD at rate 1 on w - average. */
static fedc_optimizer averaging(void) { return fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0); }

static fedc_status hierfedopt_server_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p,
                                          const fedc_tree *params, fedc_tree **state) {
    (void)m, (void)a;
    fedc_optimizer avg = averaging();
    *state = fedc__server_state(p, params, &avg);
    return fedc_program_status(p);
}

/* A never-seen group's state: its server optimizer's initial state, opt/<leaf>
 * (none for plain SGD). */
static fedc_status hierfedopt_group_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p,
                                         fedc_tree **state) {
    *state = fedc_tree_new(p);
    fedc_tree *zeros = fedc_model_full_tree(m, p, FEDC_LOCAL, 0);
    fedc_tree_set_tree(p, *state, "opt", fedc_optimizer_init_tree(&a->server_opt, p, zeros));
    return fedc_program_status(p);
}

/* Each group's optimizer step on its clients' mean update in the group round
 * whose local training is `out`: w_g and s_g move on. */
static fedc_status group_step(fedc_round *r, const fedc_tree *out, fedc_tree **w_g, fedc_tree **s_g) {
    fedc_program *p = r->p;
    fedc_value n = fedc_round_weight(r, fedc_tree_get(p, out, "examples"));
    fedc_tree *mean = fedc_tree_weighted_mean_up(p, fedc_tree_subtree(p, out, "delta"), n);
    fedc_tree *next_w = NULL, *next_s = NULL;
    fedc_status st = fedc_optimizer_step_tree(&r->alg->server_opt, p, FEDC_NONE, *w_g, mean, *s_g, &next_w, &next_s);
    if (!st) *w_g = next_w, *s_g = next_s;
    return st ? st : fedc_program_status(p);
}

/* The new server state with plain SGD groups (above): with E = 1 fedavg's step,
 * through fedc_round_aggregate; else the groups' drift before the last group
 * round plus η times the last one's flat mean, which the server subtracts. */
static fedc_tree *linear_finish(fedc_round *r, const fedc_tree *w_g, const fedc_tree *out, int rounds) {
    fedc_program *p = r->p;
    fedc_value n = fedc_round_weight(r, fedc_tree_get(p, out, "examples"));
    const fedc_tree *delta = fedc_tree_subtree(p, out, "delta");
    if (rounds == 1) return fedc_round_server_opt(r, delta, n);
    fedc_value eta = fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_SERVER), r->alg->server_opt.learning_rate);
    fedc_tree *grad = fedc__hier_flat_grad(r, w_g, out, n, eta);
    fedc_algorithm avg = *r->alg;
    avg.server_opt = averaging();
    fedc_round top = *r;
    top.alg = &avg;
    return fedc__server_step(&top, grad);
}

/* The new server state: the groups' models averaged, each weighted by its
 * share of the cohort's weights. */
static fedc_tree *average(fedc_round *r, const fedc_tree *w_g, const fedc_tree *out) {
    fedc_program *p = r->p;
    fedc_value W = fedc_sum_up(p, fedc_round_weight(r, fedc_tree_get(p, out, "examples")));
    fedc_value share = fedc_div(p, W, fedc_broadcast_down(p, fedc_sum_up(p, W)));
    fedc_tree *next = fedc_tree_copy(p, r->server);
    fedc_tree_set_tree(p, next, "params", fedc_tree_weighted_mean_up(p, w_g, share));
    return next;
}

static fedc_status hierfedopt_round(fedc_round *r) {
    fedc_program *p = r->p;
    int rounds;
    fedc_status st = fedc__hier_group_rounds(r, &rounds);
    if (st) return st;
    bool flat = linear(&r->alg->server_opt);
    if ((rounds > 1 || !flat) && fedc_aggregation_active(&r->alg->aggregation))
        return fedc_program_fail(p, FEDC_EINVAL, "hierfedopt: the robust, DP and compressing aggregators "
                                 "(--aggregator, --robust-zero, --dp-clip, --compress) apply with plain SGD groups "
                                 "(--server-opt sgd) and group_rounds=1 only, where the round is fedavg's; otherwise "
                                 "each group's optimizer steps on its clients' mean update, which no aggregator sees"),
               FEDC_EINVAL;
    fedc_tree *w = fedc_tree_subtree(p, r->server, "params"), *w_g = fedc_tree_broadcast_down(p, w), *out = NULL;
    fedc_tree *s_g = r->group ? fedc_tree_subtree(p, r->group, "opt") : fedc_tree_new(p);
    st = fedc_program_status(p);
    for (int e = 0; !st && e < rounds; e++) {
        if (e > 0) st = group_step(r, out, &w_g, &s_g);
        if (!st) st = fedc__hier_group_round(r, w_g, e, &out);
    }
    if (!st) st = fedc__hier_group_loss(r, out);
    if (!st && !flat) st = group_step(r, out, &w_g, &s_g); /* the last group round's */
    if (st) return st;
    fedc_tree *next = flat ? linear_finish(r, w_g, out, rounds) : average(r, w_g, out);
    if (r->group) {
        fedc_tree *group = fedc_tree_new(p);
        fedc_tree_set_tree(p, group, "opt", s_g);
        st = fedc_round_group_state(r, group);
    }
    if (st) return st;
    /* the loss of the last group round's local training */
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), fedc_tree_get(p, out, "examples"));
}

const fedc_algorithm_def fedc_algorithm_hierfedopt = {
    .name = "hierfedopt",
    .summary = "FedAvg with per-group server optimizers: each group (fedc train --groups) steps its model by its own "
               "--server-opt state on its clients' mean update for group_rounds rounds, then the server averages the "
               "groups' models (weighted by their clients' weights)",
    .hparams = hparams,
    .nhparams = 1,
    .server_init = hierfedopt_server_init,
    .round = hierfedopt_round,
    .grouped = true,
    .group_init = hierfedopt_group_init,
};
