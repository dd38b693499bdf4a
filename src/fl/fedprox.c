/* FedProx (Li et al. 2020; FedJAX's fed_prox.py): FedAvg whose clients minimise
 * their loss plus mu/2 ||w - w_server||^2, which keeps heterogeneous clients near
 * the server's model:
 *
 *     each client: w_i = argmin-by-local-steps  loss_i(w) + mu/2 ||w - w||^2
 *     w, s = server_opt(w, weighted_mean(w - w_i, n_i), s)
 *
 * mu = 0 is FedAvg, to the bit (the term is not built). */
#include "fl/fl.h"

static const fedc_hparam_def hparams[] = {
    {"mu", 0.01, 0, 1e6, "weight of the proximal term mu/2 ||w - w_server||^2"},
};

/* mu/2 ||w - start||^2, start the model the client started from. */
static fedc_value proximal(fedc_program *p, const fedc_round *r, const fedc_tree *w, const fedc_tree *extra) {
    fedc_tree *start = fedc_tree_subtree(p, extra, "start");
    fedc_value sq = fedc_tree_sq_norm(p, fedc_tree_sub(p, w, start));
    return fedc_mul(p, fedc_scalar(p, FEDC_F32, fedc_round_hparam(r, "mu") / 2), sq);
}

static fedc_status fedprox_round(fedc_round *r) {
    fedc_program *p = r->p, *objective = NULL;
    if (fedc_round_hparam(r, "mu") == 0) return fedc_algorithm_fedavg.round(r);
    fedc_tree *like = fedc_tree_new(p); /* the objective's extra inputs: start/<param> */
    fedc_tree_set_tree(p, like, "start", fedc_tree_subtree(p, r->server, "params"));
    fedc_status st = fedc_program_status(p);
    if (!st) st = fedc_round_objective(r, like, proximal, true, &objective);
    fedc_tree *out = NULL;
    if (!st) st = fedc_round_local_training(r, &(fedc_local_training){.objective = objective}, &out);
    fedc_program_destroy(objective);
    return st ? st : fedc__fedavg_finish(r, out);
}

const fedc_algorithm_def fedc_algorithm_fedprox = {
    .name = "fedprox",
    .summary = "FedProx: FedAvg with mu/2 ||w - w_server||^2 added to each client's loss",
    .hparams = hparams,
    .nhparams = 1,
    .round = fedprox_round,
};
