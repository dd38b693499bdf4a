/* FedAvg (McMahan et al. 2017) and FedOpt (Reddi et al. 2020): local training on
 * every client, then the server's optimizer on the weighted mean of the deltas as
 * a pseudo-gradient (SGD with learning rate 1 is FedAvg's plain average):
 *
 *     for each client i, in parallel:              (map)
 *         w_i = w; s_i = client_opt.init()
 *         for each batch b of client i:            (fold, length = its batches)
 *             w_i, s_i = client_opt(w_i, grad loss(w_i, b), s_i)
 *         delta_i = w - w_i; n_i = examples trained on
 *     w, s = server_opt(w, weighted_mean(delta_i, weight(n_i)), s)
 */
#include "fl/fl.h"

fedc_tree *fedc__server_step(fedc_round *r, const fedc_tree *grad) {
    fedc_program *p = r->p;
    fedc_tree *w = fedc_tree_subtree(p, r->server, "params"), *next_w = NULL, *next_opt = NULL;
    fedc_tree *opt = fedc_tree_has(r->server, "opt") ? fedc_tree_subtree(p, r->server, "opt") : fedc_tree_new(p);
    if (fedc_optimizer_step_tree(&r->alg->server_opt, p, FEDC_NONE, w, grad, opt, &next_w, &next_opt)) return NULL;
    fedc_tree *next = fedc_tree_copy(p, r->server);
    fedc_tree_set_tree(p, next, "params", next_w);
    fedc_tree_set_tree(p, next, "opt", next_opt);
    return fedc_program_status(p) ? NULL : next;
}

fedc_tree *fedc_round_server_opt(fedc_round *r, const fedc_tree *update, fedc_value weight) {
    return fedc__server_step(r, fedc_round_aggregate(r, update, weight));
}

fedc_status fedc__fedavg_finish(fedc_round *r, const fedc_tree *out) {
    fedc_program *p = r->p;
    fedc_value n = fedc_tree_get(p, out, "examples");
    fedc_tree *next = fedc_round_server_opt(r, fedc_tree_subtree(p, out, "delta"), fedc_round_weight(r, n));
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), n);
}

static fedc_status fedavg_round(fedc_round *r) {
    fedc_tree *out;
    fedc_status st = fedc_round_local_training(r, NULL, &out);
    return st ? st : fedc__fedavg_finish(r, out);
}

const fedc_algorithm_def fedc_algorithm_fedavg = {
    .name = "fedavg",
    .summary = "FedAvg: local epochs of the client optimizer, weighted mean of the deltas; "
               "with a server optimizer, FedOpt (FedAdam, FedYogi, FedAdagrad, FedAvgM)",
    .round = fedavg_round,
};
