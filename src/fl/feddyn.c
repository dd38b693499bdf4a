/* FedDyn (Acar et al. 2021, "Federated Learning Based on Dynamic Regularization";
 * the authors' utils_methods.py train_FedDyn): each client keeps the gradient of
 * its last local objective, grad_i, and minimises its loss corrected by it, so
 * that its stationary points agree with the global objective's:
 *
 *     each client i of the cohort P, from the server's w:
 *         w_i = argmin-by-local-steps  loss_i(v) - <grad_i, v> + alpha/2 ||v - w||^2
 *         grad_i = grad_i - alpha (w_i - w)                  (client state; 0 at first)
 *     h = h - alpha/m sum_{i in P} (w_i - w)                 (server state; 0 at first)
 *     w = mean_{i in P} w_i - h / alpha
 *
 * m is the population's size, the training data's number of clients (metadata
 * meta/population). The means are plain, over the cohort, as in the paper and the
 * authors' code (np.mean); --weighting and the server optimizer do not apply. */
#include "fl/fl.h"

static const fedc_hparam_def hparams[] = {
    {"alpha", 0.01, 1e-9, 1e6, "weight of the dynamic regulariser alpha/2 ||w - w_server||^2 (the paper's alpha)"},
};

static fedc_status feddyn_server_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p,
                                      const fedc_tree *params, fedc_tree **state) {
    (void)m, (void)a;
    *state = fedc_tree_new(p);
    fedc_tree_set_tree(p, *state, "params", params);
    fedc_tree_set_tree(p, *state, "h", fedc_tree_full_like(p, params, 0));
    return fedc_program_status(p);
}

static fedc_status feddyn_client_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p, fedc_tree **state) {
    (void)a;
    *state = fedc_tree_new(p);
    fedc_tree_set_tree(p, *state, "grad", fedc_model_full_tree(m, p, FEDC_LOCAL, 0));
    return fedc_program_status(p);
}

/* alpha/2 ||w - start||^2 - <w, grad>, start the server's model. */
static fedc_value dynamic(fedc_program *p, const fedc_round *r, const fedc_tree *w, const fedc_tree *extra) {
    fedc_value sq = fedc_tree_sq_norm(p, fedc_tree_sub(p, w, fedc_tree_subtree(p, extra, "start")));
    fedc_value prox = fedc_mul(p, fedc_scalar_like(p, sq, fedc_round_hparam(r, "alpha") / 2), sq);
    return fedc_sub(p, prox, fedc_tree_dot(p, w, fedc_tree_subtree(p, extra, "grad")));
}

/* The new server state from the cohort's deltas w - w_i (@clients). */
static fedc_tree *server_update(fedc_round *r, const fedc_tree *delta, double alpha) {
    fedc_program *p = r->p;
    fedc_tree *w = fedc_tree_subtree(p, r->server, "params"), *h = fedc_tree_subtree(p, r->server, "h");
    fedc_value m = fedc_round_meta(r, "population");
    /* h + alpha/m sum_P delta_i */
    fedc_value alpha_over_m = fedc_div(p, fedc_scalar_like(p, m, alpha), m);
    fedc_tree *h_next = fedc_tree_axpy(p, alpha_over_m, fedc_tree_sum(p, delta), h);
    fedc_tree *mean_w = fedc_tree_sub(p, w, fedc_tree_mean(p, delta));
    fedc_value k = h_next ? fedc_scalar_like(p, fedc_tree_value(h_next, 0), -1 / alpha) : FEDC_NONE;
    fedc_tree *next = fedc_tree_copy(p, r->server);
    fedc_tree_set_tree(p, next, "params", fedc_tree_axpy(p, k, h_next, mean_w));
    fedc_tree_set_tree(p, next, "h", h_next);
    return fedc_program_status(p) ? NULL : next;
}

static fedc_status feddyn_round(fedc_round *r) {
    fedc_program *p = r->p, *objective = NULL;
    double alpha = fedc_round_hparam(r, "alpha");
    fedc_tree *grad = fedc_tree_subtree(p, r->client, "grad");
    fedc_tree *like = fedc_tree_new(p), *extra = fedc_tree_new(p); /* the objective's extras: start/, grad/ */
    fedc_tree_set_tree(p, like, "start", fedc_tree_subtree(p, r->server, "params"));
    fedc_tree_set_tree(p, like, "grad", grad);
    fedc_tree_set_tree(p, extra, "grad", grad);
    fedc_status st = fedc_program_status(p);
    if (!st) st = fedc_round_objective(r, like, dynamic, true, &objective);
    fedc_tree *out = NULL;
    if (!st) st = fedc_round_local_training(r, &(fedc_local_training){.objective = objective, .extra = extra}, &out);
    fedc_program_destroy(objective);
    if (st) return st;
    fedc_tree *delta = fedc_tree_subtree(p, out, "delta");
    if (!delta) return fedc_program_status(p);
    /* grad_i - alpha (w_i - w) = grad_i + alpha delta_i */
    fedc_value k = fedc_scalar_like(p, fedc_tree_value(delta, 0), alpha);
    fedc_tree *client = fedc_tree_new(p);
    fedc_tree_set_tree(p, client, "grad", fedc_tree_axpy(p, k, delta, grad));
    fedc_tree *next = server_update(r, delta, alpha);
    fedc_value n = fedc_tree_get(p, out, "examples");
    return fedc_round_finish(r, next, client, fedc_tree_get(p, out, "loss"), n);
}

const fedc_algorithm_def fedc_algorithm_feddyn = {
    .name = "feddyn",
    .summary = "FedDyn: clients minimise loss - <grad_i, w> + alpha/2 ||w - w_server||^2, keeping grad_i; "
               "the server corrects the mean model by its state h",
    .hparams = hparams,
    .nhparams = 1,
    .server_init = feddyn_server_init,
    .client_init = feddyn_client_init,
    .round = feddyn_round,
};
