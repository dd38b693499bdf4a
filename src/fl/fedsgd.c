/* FedSGD (McMahan et al. 2017): each client computes the gradient of its loss on
 * all its data (the example-weighted mean of its batches' gradients), the server
 * averages the gradients and takes one optimizer step:
 *
 *     g_i, n_i = map(client_gradient)(broadcast(w), data_i)
 *     w, s = server_opt(w, weighted_mean(g_i, weight(n_i)), s)
 */
#include "fl/fl.h"

static fedc_status fedsgd_round(fedc_round *r) {
    fedc_program *p = r->p;
    fedc_tree *out;
    fedc_status st = fedc_round_gradients(r, fedc_tree_broadcast(p, fedc_tree_subtree(p, r->server, "params")), &out);
    if (st) return st;
    fedc_value n = fedc_tree_get(p, out, "examples");
    fedc_tree *next = fedc_round_server_opt(r, fedc_tree_subtree(p, out, "grad"), fedc_round_weight(r, n));
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), n);
}

const fedc_algorithm_def fedc_algorithm_fedsgd = {
    .name = "fedsgd",
    .summary = "FedSGD: one gradient of each client's data, weighted mean, a server optimizer step",
    .one_pass = true,
    .round = fedsgd_round,
};
