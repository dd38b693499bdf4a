/* FedNova (Wang et al. 2020, "Tackling the Objective Inconsistency Problem in
 * Heterogeneous Federated Optimization"; the authors' distoptim/FedNova.py): FedAvg
 * whose clients may run different numbers of local steps tau_i, with each client's
 * update normalised by how far its steps carry it, so that the server optimises
 * sum_i p_i F_i and not an objective skewed towards the clients that ran longest:
 *
 *     each client i: delta_i = w - w_i after tau_i local steps; a_i = ||a_i||_1 of
 *         its normalising vector: tau_i for SGD, sum_{k=1..tau_i} (1 - rho^k)/(1 - rho)
 *         for SGD with momentum rho (the reference's local_normalizing_vec)
 *     tau_eff = sum_i p_i a_i
 *     w, s = server_opt(w, sum_i p_i (tau_eff / a_i) delta_i, s)     // SGD lr 1: the paper
 *
 * p_i are the round's client weights (fedc_round_weight: --weighting dataset is the
 * reference's ratio, n_i / n; the default, examples trained on, is the same when
 * every client trains whole epochs). tau_i is the number of real batches each
 * client ran (its steps@clients, the fold's length). With equal tau_i every scale
 * is 1 and FedNova is FedAvg. */
#include <math.h>

#include "fl/fl.h"

/* a_i from tau_i (f32[]@clients) for the client optimizer: the reference's
 * recursion c_k = rho c_{k-1} + 1, a = sum_k c_k, in closed form:
 * a = (tau - rho (1 - rho^tau) / (1 - rho)) / (1 - rho). */
static fedc_value normaliser(fedc_round *r, fedc_value tau) {
    const fedc_optimizer *o = &r->alg->client_opt;
    fedc_program *p = r->p;
    if (o->kind != FEDC_OPT_SGD && o->kind != FEDC_OPT_MOMENTUM)
        return fedc_program_fail(p, FEDC_EINVAL, "fednova: the client optimizer is %s; FedNova normalises SGD "
                                 "and SGD with momentum (--client-opt sgd|momentum|nesterov)",
                                 fedc_optimizer_name(o->kind));
    double rho = o->kind == FEDC_OPT_MOMENTUM ? o->momentum : 0;
    if (rho == 0) return tau;
    if (!(rho > 0 && rho < 1))
        return fedc_program_fail(p, FEDC_EINVAL, "fednova: client momentum %g must be in [0, 1)", rho);
    fedc_value rho_tau = fedc_exp(p, fedc_mul(p, tau, fedc_scalar_like(p, tau, log(rho))));
    fedc_value ratio = fedc_scalar_like(p, tau, rho / (1 - rho)), one = fedc_scalar_like(p, tau, 1);
    fedc_value tail = fedc_mul(p, ratio, fedc_sub(p, one, rho_tau));
    fedc_value numerator = fedc_sub(p, tau, tail);
    return fedc_div(p, numerator, fedc_scalar_like(p, tau, 1 - rho));
}

static fedc_status fednova_round(fedc_round *r) {
    fedc_program *p = r->p;
    fedc_tree *out;
    fedc_status st = fedc_round_local_training(r, NULL, &out);
    if (st) return st;
    fedc_value n = fedc_tree_get(p, out, "examples"), weight = fedc_round_weight(r, n);
    fedc_value a = normaliser(r, fedc_cast(p, fedc_tree_get(p, r->data, "steps"), FEDC_F32));
    fedc_value tau_eff = fedc_weighted_mean(p, a, weight);
    /* a client that ran no step has delta 0: scale it by anything finite */
    fedc_value tau_eff_b = fedc_broadcast(p, tau_eff);
    fedc_value scale = fedc_div(p, tau_eff_b, fedc_maximum(p, a, fedc_scalar_like(p, a, 1)));
    fedc_tree *update = fedc_tree_scale(p, fedc_tree_subtree(p, out, "delta"), scale);
    fedc_tree *next = fedc_round_server_opt(r, update, weight);
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), n);
}

const fedc_algorithm_def fedc_algorithm_fednova = {
    .name = "fednova",
    .summary = "FedNova: FedAvg with each client's update normalised by its local steps (SGD, momentum), "
               "scaled by the mean steps tau_eff",
    .round = fednova_round,
};
