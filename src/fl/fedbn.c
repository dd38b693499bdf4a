/* FedBN (Li et al., ICLR 2021, "FedBN: Federated Learning on Non-IID Features
 * via Local Batch Normalization"): FedAvg in which every BatchNorm's scale, bias
 * and running statistics stay with the client, so that each client normalises
 * its own feature distribution; every other parameter is averaged as FedAvg does.
 *
 *     for each client i, in parallel:                   (map)
 *         w_i = w, its BatchNorm values bn_i (w's on the client's first visit)
 *         local steps as FedAvg's (the running statistics moved by each batch)
 *         delta_i = w - w_i, BatchNorm's leaves zero (they never leave the client)
 *         bn_i = w_i's BatchNorm values                 (the client's state)
 *     w, s = server_opt(w, weighted_mean(delta_i), s), w's BatchNorm values as they were
 *
 * The model says which parameters are BatchNorm's (fedc_model_param_is_batchnorm:
 * an imported model's BatchNormalization inputs). A model without any is FedAvg
 * itself: no client state, the same round. Evaluation is the paper's: each test
 * client at the shared parameters and its own BatchNorm values (those kept for
 * the training client of its id; the server's, never trained, for a client that
 * never trained). */
#include "fl/fl.h"

static bool has_batchnorm(const fedc_model *m) {
    for (int i = 0; i < fedc_model_num_params(m); i++)
        if (fedc_model_param_is_batchnorm(m, i)) return true;
    return false;
}

/* bn/<param> for each BatchNorm parameter: zeros, unused until the client is seen
 * (meta/seen), when the round starts it from the server's values instead. */
static fedc_status fedbn_client_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p, fedc_tree **state) {
    (void)a;
    *state = NULL;
    if (!has_batchnorm(m)) return FEDC_OK; /* FedAvg's round, stateless */
    fedc_tree *s = fedc_tree_new(p);
    char name[160];
    for (int i = 0; i < fedc_model_num_params(m); i++)
        if (fedc_model_param_is_batchnorm(m, i)) {
            snprintf(name, sizeof name, "bn/%s", fedc_model_param_name(m, i));
            fedc_tree_set(p, s, name, fedc_full(p, fedc__placed(fedc_model_param_type(m, i), FEDC_LOCAL), 0));
        }
    *state = s;
    return fedc_program_status(p);
}

/* Each client's model (@clients): the server's params wb (broadcast) with the
 * BatchNorm leaves the client keeps, where it was seen. */
static fedc_tree *client_models(fedc_round *r, const fedc_tree *wb) {
    fedc_program *p = r->p;
    fedc_tree *kept = fedc_tree_subtree(p, r->client, "bn"), *w = fedc_tree_copy(p, wb);
    fedc_value zero = fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), 0);
    fedc_value seen = fedc_gt(p, fedc_round_meta(r, "seen"), zero);
    for (int i = 0; i < fedc_tree_size(kept); i++) {
        const char *name = fedc_tree_name(kept, i);
        fedc_tree_set(p, w, name, fedc_select(p, seen, fedc_tree_value(kept, i), fedc_tree_get(p, wb, name)));
    }
    return w;
}

/* The server state after the step, with params/<bn> and the optimizer's slots of
 * them (opt/<slot>/<bn>) as they were: no client sent them. */
static fedc_tree *keep_server_batchnorm(fedc_round *r, fedc_tree *next) {
    fedc_program *p = r->p;
    fedc_tree *w = fedc_tree_subtree(p, r->server, "params");
    fedc_tree *opt = fedc_tree_has(r->server, "opt") ? fedc_tree_subtree(p, r->server, "opt") : fedc_tree_new(p);
    char name[600];
    for (int i = 0; next && i < fedc_model_num_params(r->model); i++) {
        if (!fedc_model_param_is_batchnorm(r->model, i)) continue;
        const char *param = fedc_model_param_name(r->model, i);
        snprintf(name, sizeof name, "params/%s", param);
        fedc_tree_set(p, next, name, fedc_tree_get(p, w, param));
        for (int k = 0; k < fedc_tree_size(opt); k++) {
            const char *slot = fedc_tree_name(opt, k), *slash = strchr(slot, '/');
            if (!slash || strcmp(slash + 1, param)) continue;
            snprintf(name, sizeof name, "opt/%s", slot);
            fedc_tree_set(p, next, name, fedc_tree_value(opt, k));
        }
    }
    return next;
}

static fedc_status fedbn_round(fedc_round *r) {
    if (!r->client) return fedc_algorithm_fedavg.round(r); /* no BatchNorm: FedAvg */
    fedc_program *p = r->p;
    fedc_tree *out, *wb = fedc_tree_broadcast(p, fedc_tree_subtree(p, r->server, "params"));
    fedc_local_training how = {.start = client_models(r, wb), .with_model = true};
    fedc_status st = fedc_program_status(p);
    if (!st) st = fedc_round_local_training(r, &how, &out);
    if (st) return st;
    fedc_tree *delta = fedc_tree_copy(p, fedc_tree_subtree(p, out, "delta")), *model = fedc_tree_subtree(p, out, "model");
    fedc_tree *kept = fedc_tree_subtree(p, r->client, "bn"), *bn = fedc_tree_new(p);
    for (int i = 0; i < fedc_tree_size(kept); i++) {
        const char *name = fedc_tree_name(kept, i);
        fedc_value d = fedc_tree_get(p, delta, name);
        fedc_tree_set(p, delta, name, fedc_full(p, fedc_value_type(p, d), 0));
        fedc_tree_set(p, bn, name, fedc_tree_get(p, model, name));
    }
    fedc_value n = fedc_tree_get(p, out, "examples");
    fedc_tree *next = keep_server_batchnorm(r, fedc_round_server_opt(r, delta, fedc_round_weight(r, n)));
    fedc_tree *clients = fedc_tree_new(p);
    fedc_tree_set_tree(p, clients, "bn", bn);
    return fedc_round_finish(r, next, clients, fedc_tree_get(p, out, "loss"), n);
}

static fedc_status fedbn_evaluation(fedc_round *r) {
    fedc_tree *wb = fedc_tree_broadcast(r->p, fedc_tree_subtree(r->p, r->server, "params"));
    return fedc_round_evaluate(r, r->client ? client_models(r, wb) : wb, NULL);
}

const fedc_algorithm_def fedc_algorithm_fedbn = {
    .name = "fedbn",
    .summary = "FedBN: FedAvg with every BatchNorm's scale, bias and running statistics kept per client "
               "(an onnx: model's), each test client evaluated with its own",
    .client_init = fedbn_client_init,
    .round = fedbn_round,
    .evaluation = fedbn_evaluation,
};
