/* SCAFFOLD (Karimireddy et al. 2020, "SCAFFOLD: Stochastic Controlled Averaging
 * for Federated Learning", Algorithm 1 with option II): control variates correct
 * each client's drift. The server keeps x and c, every client its own c_i (zero
 * for a client never seen):
 *
 *     client i:  y_i = x;  K_i steps of  y_i -= lr * (g_i(y_i) - c_i + c)
 *                c_i+ = c_i - c + (x - y_i) / (K_i lr)                    (option II)
 *     server:    x = server_opt(x, weighted_mean(x - y_i))   (SGD, lr 1: x += mean(y_i - x))
 *                c = c + (|S| / N) mean_S(c_i+ - c_i) = c + sum_S(c_i+ - c_i) / N
 *
 * The correction c - c_i is added to every local step's gradient. K_i is the client's real local steps, N the
 * clients in the training data (meta/population). Option II's c_i+ assumes plain
 * SGD steps, so the client optimizer must be SGD. */
#include "fl/fl.h"

static fedc_status scaffold_server_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p,
                                        const fedc_tree *params, fedc_tree **state) {
    (void)m;
    fedc_tree *s = fedc_tree_new(p);
    fedc_tree_set_tree(p, s, "params", params);
    fedc_tree_set_tree(p, s, "opt", fedc_optimizer_init_tree(&a->server_opt, p, params));
    fedc_tree_set_tree(p, s, "c", fedc_tree_full_like(p, params, 0));
    *state = s;
    return fedc_program_status(p);
}

static fedc_status scaffold_client_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p,
                                        fedc_tree **state) {
    (void)a;
    fedc_tree *s = fedc_tree_new(p);
    fedc_tree_set_tree(p, s, "c", fedc_model_full_tree(m, p, FEDC_LOCAL, 0));
    *state = s;
    return fedc_program_status(p);
}

static fedc_status scaffold_round(fedc_round *r) {
    fedc_program *p = r->p;
    if (r->alg->client_opt.kind != FEDC_OPT_SGD)
        return fedc_program_fail(p, FEDC_EINVAL, "scaffold: the client optimizer must be sgd (option II's control "
                                 "variate assumes plain SGD steps), not %s", fedc_optimizer_name(r->alg->client_opt.kind)),
               FEDC_EINVAL;
    fedc_tree *c = fedc_tree_subtree(p, r->server, "c"), *c_i = fedc_tree_subtree(p, r->client, "c");
    fedc_tree *correction = fedc_tree_sub(p, fedc_tree_broadcast(p, c), c_i), *out = NULL;
    fedc_status st = fedc_program_status(p);
    if (!st) st = fedc_round_local_training(r, &(fedc_local_training){.gradient_offset = correction}, &out);
    if (st) return st;
    /* c_i+ = c_i - c + (x - y_i) / (K_i lr) */
    fedc_tree *delta = fedc_tree_subtree(p, out, "delta");
    fedc_value one = fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), 1);
    fedc_value k = fedc_maximum(p, fedc_tree_get(p, out, "steps"), one);
    fedc_value inverse = fedc_div(p, one, fedc_mul(p, k, fedc_scalar(p, FEDC_F32, r->alg->client_opt.learning_rate)));
    fedc_tree *next_ci = fedc_tree_axpy(p, inverse, delta, fedc_tree_sub(p, c_i, fedc_tree_broadcast(p, c)));
    /* c += sum (c_i+ - c_i) / N */
    fedc_value population = fedc_round_meta(r, "population");
    fedc_value n_inv = fedc_div(p, fedc_scalar(p, FEDC_F32, 1), population);
    fedc_tree *next_c = fedc_tree_axpy(p, n_inv, fedc_tree_sum(p, fedc_tree_sub(p, next_ci, c_i)), c);
    fedc_value n = fedc_tree_get(p, out, "examples");
    fedc_tree *next = fedc_round_server_opt(r, delta, fedc_round_weight(r, n));
    fedc_tree_set_tree(p, next, "c", next_c);
    fedc_tree *client = fedc_tree_new(p);
    fedc_tree_set_tree(p, client, "c", next_ci);
    return fedc_round_finish(r, next, client, fedc_tree_get(p, out, "loss"), n);
}

const fedc_algorithm_def fedc_algorithm_scaffold = {
    .name = "scaffold",
    .summary = "SCAFFOLD (option II): client and server control variates correct each client's drift; "
               "client state c_i in the store",
    .server_init = scaffold_server_init,
    .client_init = scaffold_client_init,
    .round = scaffold_round,
};
