/* HypCluster (Mansour et al. 2020, "Three Approaches for Personalization with
 * Applications to Federated Learning"; FedJAX's hyp_cluster.py): k models, each
 * client served by the one that fits it best:
 *
 *     each client i:  c_i = argmin_j loss_i(w_j)              (maximization step)
 *                     delta_i = w_{c_i} - local_training(w_{c_i}, data_i)
 *     each cluster j with clients:                             (expectation step)
 *                     w_j, s_j = server_opt(w_j, weighted_mean_{c_i = j}(delta_i), s_j)
 *
 * Evaluation serves each test client the cluster of least loss on its data.
 * `fedc train` starts the clusters from the data, by FedJAX's kmeans_init
 * (src/fl/hypcluster_kmeans.c, the warm start), unless --set kmeans_init=0.
 * server_init (then, and where a program drives rounds by hand) starts them as the model's initial parameters (cluster
 * 0) and, for j >= 1, the same with independent random signs on every weight
 * matrix (rank >= 2; biases and scales as they are): a draw from the same
 * symmetric initialiser, FedJAX's random_init given only one initialisation. */
#include <stdio.h>

#include "fl/hypcluster.h"

static const fedc_hparam_def hparams[] = {
    {"num_clusters", 2, 1, FEDC__HYPCLUSTER_MAX_CLUSTERS, "k, the number of cluster models"},
    {"kmeans_init", 1, 0, 1, "1: start the clusters by k-means++ on a cohort (FedJAX's kmeans_init); 0: random signs"},
};

static fedc_status clusters(const fedc_algorithm *a, int *k) {
    double v = fedc_algorithm_hparam(a, "num_clusters");
    if (v != (int)v) return fedc_error(FEDC_EINVAL, "hypcluster: num_clusters must be a whole number, not %g", v);
    *k = (int)v;
    return FEDC_OK;
}

void fedc__hypcluster_prefix(int j, const char *leaf, char *out, size_t size) {
    if (j) snprintf(out, size, "clusters/%d/%s", j, leaf);
    else snprintf(out, size, "%s", leaf);
}

static fedc_tree *cluster_tree(fedc_program *p, const fedc_tree *server, int j, const char *leaf) {
    char name[64];
    fedc__hypcluster_prefix(j, leaf, name, sizeof name);
    if (!strcmp(leaf, "opt") && !fedc_tree_has(server, name)) return fedc_tree_new(p); /* SGD's: empty */
    return fedc_tree_subtree(p, server, name);
}

/* params * random signs on the weight matrices; key (cluster, leaf). */
static fedc_tree *random_signs(fedc_program *p, const fedc_tree *params, int j) {
    fedc_tree *t = fedc_tree_new(p);
    for (int i = 0; i < fedc_tree_size(params); i++) {
        fedc_value v = fedc_tree_value(params, i);
        fedc_type ty = fedc_value_type(p, v);
        if (ty.rank >= 2) {
            fedc_value key = fedc_constant(p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), (int32_t[]){0x68797063, j, i, 0});
            fedc_value two_or_zero = fedc_dropout(p, fedc_full(p, ty, 1), key, 0.5);
            v = fedc_mul(p, v, fedc_sub(p, two_or_zero, fedc_scalar(p, FEDC_F32, 1)));
        }
        fedc_tree_set(p, t, fedc_tree_name(params, i), v);
    }
    return t;
}

static fedc_status server_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p, const fedc_tree *params,
                               fedc_tree **state) {
    (void)m;
    int k = 1;
    fedc_status st = clusters(a, &k);
    if (st) return st;
    fedc_tree *t = fedc_tree_new(p);
    for (int j = 0; j < k; j++) {
        char name[64];
        fedc_tree *w = j ? random_signs(p, params, j) : (fedc_tree *)params;
        fedc__hypcluster_prefix(j, "params", name, sizeof name);
        fedc_tree_set_tree(p, t, name, w);
        fedc__hypcluster_prefix(j, "opt", name, sizeof name);
        fedc_tree_set_tree(p, t, name, fedc_optimizer_init_tree(&a->server_opt, p, w));
    }
    *state = t;
    return fedc_program_status(p);
}

/* ------------------------------------------------ maximization step -- */

/* The fold's body: carries m/<j>/<param>, loss_sum f32[k], correct f32[k] (if
 * any), count, t, key; steps x, y, mask. */
static fedc_status assign_step(const fedc_program *objective, int k, bool correct, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_type vk = fedc_type_make(FEDC_F32, 1, (int64_t[]){k});
    fedc_tree *w_like = fedc_tree_of_inputs(objective, "w"), *m = fedc_tree_new(p);
    for (int j = 0; j < k; j++) {
        char name[32];
        snprintf(name, sizeof name, "m/%d", j);
        fedc_tree_set_tree(p, m, name + 2, fedc_tree_input_same(p, name, w_like));
    }
    fedc_value loss = fedc_input(p, "loss_sum", vk), right = correct ? fedc_input(p, "correct", vk) : FEDC_NONE;
    fedc_value count = fedc_input(p, "count", fedc_type_scalar(FEDC_F32));
    fedc_value t = fedc_input(p, "t", fedc_type_scalar(FEDC_I32));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_tree *args = fedc_tree_new(p);
    const char *batch[3] = {"x", "y", "mask"};
    for (int i = 0; i < 3; i++)
        fedc_tree_set(p, args, batch[i],
                      fedc_input(p, batch[i], fedc_value_type(objective, fedc_program_find_input(objective, batch[i]))));
    fedc_value step_key = fedc__fl_step_key(p, key, t), l[FEDC__HYPCLUSTER_MAX_CLUSTERS], c[FEDC__HYPCLUSTER_MAX_CLUSTERS];
    fedc_value n = FEDC_NONE;
    for (int j = 0; j < k; j++) {
        char name[32];
        snprintf(name, sizeof name, "%d", j);
        fedc_tree_set_tree(p, args, "w", fedc_tree_subtree(p, m, name));
        int32_t unit[4] = {0, 0, 1 + j, 0};
        fedc_tree_set(p, args, "key", fedc_add(p, step_key, fedc_constant(p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), unit)));
        fedc_tree *res = fedc_tree_call(p, objective, args);
        n = fedc_tree_get(p, res, "count");
        l[j] = fedc_reshape(p, fedc_mul(p, fedc_tree_get(p, res, "loss"), n), 1, (int64_t[]){1});
        if (correct) c[j] = fedc_reshape(p, fedc_tree_get(p, res, "correct"), 1, (int64_t[]){1});
    }
    st = fedc_tree_output(p, "m", m);
    if (!st) st = fedc_program_output(p, "loss_sum", fedc_add(p, loss, k > 1 ? fedc_concat(p, l, k, 0) : l[0]));
    if (!st && correct) st = fedc_program_output(p, "correct", fedc_add(p, right, k > 1 ? fedc_concat(p, c, k, 0) : c[0]));
    if (!st) st = fedc_program_output(p, "count", fedc_add(p, count, n));
    if (!st) st = fedc_program_output(p, "t", fedc_add(p, t, fedc_scalar(p, FEDC_I32, 1)));
    if (!st) st = fedc_program_output(p, "key", key);
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

/* The map's body: (m/<j>/..., x, y, mask, steps[, key]) -> the sums, the mean
 * losses and the cluster of least loss. */
static fedc_status assign_client(fedc_round *r, const fedc_program *step, const fedc_tree *m_like, int k, bool correct,
                                 fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *m = fedc_tree_input(p, "m", m_like, FEDC_LOCAL);
    fedc_tree *data = fedc_tree_input(p, NULL, r->data, FEDC_LOCAL);
    fedc_type vk = fedc_type_make(FEDC_F32, 1, (int64_t[]){k});
    fedc_value key = fedc_tree_has(data, "key") ? fedc_tree_get(p, data, "key") /* evaluation has none */
                                                : fedc_full(p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), 0);
    fedc_tree *carries = fedc_tree_new(p), *xs = fedc_tree_new(p);
    fedc_tree_set_tree(p, carries, "m", m);
    fedc_tree_set(p, carries, "loss_sum", fedc_full(p, vk, 0));
    if (correct) fedc_tree_set(p, carries, "correct", fedc_full(p, vk, 0));
    fedc_tree_set(p, carries, "count", fedc_scalar(p, FEDC_F32, 0));
    fedc_tree_set(p, carries, "t", fedc_scalar(p, FEDC_I32, 0));
    fedc_tree_set(p, carries, "key", key);
    const char *seq[3] = {"x", "y", "mask"};
    for (int i = 0; i < 3; i++) fedc_tree_set(p, xs, seq[i], fedc_tree_get(p, data, seq[i]));
    fedc_tree *res = fedc_tree_fold(p, step, carries, xs, fedc_tree_get(p, data, "steps"));
    fedc_value count = fedc_tree_get(p, res, "count"), sum = fedc_tree_get(p, res, "loss_sum");
    fedc_value mean = fedc_div(p, sum, fedc_maximum(p, count, fedc_scalar(p, FEDC_F32, 1)));
    st = fedc_program_output(p, "loss_sum", sum);
    if (!st && correct) st = fedc_program_output(p, "correct", fedc_tree_get(p, res, "correct"));
    if (!st) st = fedc_program_output(p, "count", count);
    if (!st) st = fedc_program_output(p, "losses", mean);
    if (!st) st = fedc_program_output(p, "cluster", fedc_argmax(p, fedc_neg(p, mean), 0)); /* argmin, the first */
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

fedc_tree *fedc__hypcluster_assign(fedc_round *r, const fedc_program *objective, int k) {
    fedc_program *p = r->p, *step = NULL, *client = NULL;
    bool correct = fedc_program_find_output(objective, "correct") != FEDC_NONE;
    fedc_tree *m = fedc_tree_new(p);
    for (int j = 0; j < k; j++) {
        char name[32];
        snprintf(name, sizeof name, "%d", j);
        fedc_tree_set_tree(p, m, name, cluster_tree(p, r->server, j, "params"));
    }
    fedc_status st = fedc_program_status(p);
    if (!st) st = assign_step(objective, k, correct, &step);
    if (!st) st = assign_client(r, step, m, k, correct, &client);
    fedc_tree *out = NULL, *args = st ? NULL : fedc_tree_new(p);
    if (args) {
        fedc_tree_set_tree(p, args, "m", fedc_tree_broadcast(p, m));
        fedc_tree_set_tree(p, args, NULL, r->data);
        out = fedc_tree_map(p, client, args);
    }
    if (st) fedc_program_fail(p, st, "%s", fedc_errmsg());
    fedc_program_destroy(step);
    fedc_program_destroy(client);
    return out;
}

/* ------------------------------------------------- expectation step -- */

/* Leaf by leaf, cond ? a : b. */
static fedc_tree *tree_select(fedc_program *p, fedc_value cond, const fedc_tree *a, const fedc_tree *b) {
    fedc_tree *t = fedc_tree_new(p);
    for (int i = 0; i < fedc_tree_size(a); i++)
        fedc_tree_set(p, t, fedc_tree_name(a, i),
                      fedc_select(p, cond, fedc_tree_value(a, i), fedc_tree_get(p, b, fedc_tree_name(a, i))));
    return t;
}

static fedc_value is_cluster(fedc_program *p, fedc_value cluster, int j) {
    return fedc_eq(p, cluster, fedc_scalar(p, FEDC_I32, j));
}

fedc_tree *fedc__hypcluster_expectation(fedc_round *r, const fedc_program *grad, fedc_value cluster, int k) {
    fedc_program *p = r->p;
    fedc_tree *start = fedc_tree_broadcast(p, cluster_tree(p, r->server, 0, "params")), *out = NULL;
    for (int j = 1; j < k; j++) {
        fedc_value here = is_cluster(p, cluster, j);
        start = tree_select(p, here, fedc_tree_broadcast(p, cluster_tree(p, r->server, j, "params")), start);
    }
    if (fedc_program_status(p) ||
        fedc_round_local_training(r, &(fedc_local_training){.objective = grad, .start = start}, &out))
        return NULL;
    fedc_value n = fedc_tree_get(p, out, "examples"), weight = fedc_round_weight(r, n);
    fedc_tree *delta = fedc_tree_subtree(p, out, "delta"), *res = fedc_tree_new(p);
    fedc_value zero = fedc_scalar(p, FEDC_F32, 0), one = fedc_scalar(p, FEDC_F32, 1);
    for (int j = 0; j < k; j++) { /* sum(w_i delta_i) / sum(w_i) over the cluster's clients */
        fedc_value w = fedc_select(p, is_cluster(p, cluster, j), weight, zero), total = fedc_sum(p, w);
        fedc_value denominator = fedc_select(p, fedc_gt(p, total, zero), total, one);
        char name[64];
        for (int i = 0; i < fedc_tree_size(delta); i++) {
            snprintf(name, sizeof name, "delta/%d/%s", j, fedc_tree_name(delta, i));
            fedc_tree_set(p, res, name, fedc_div(p, fedc_sum(p, fedc_mul(p, fedc_tree_value(delta, i), w)), denominator));
        }
        snprintf(name, sizeof name, "weight/%d", j);
        fedc_tree_set(p, res, name, total);
    }
    fedc_tree_set(p, res, "loss", fedc_tree_get(p, out, "loss"));
    fedc_tree_set(p, res, "examples", n);
    return fedc_program_status(p) ? NULL : res;
}

/* ------------------------------------------------------------ round -- */

fedc_status fedc__hypcluster_round_with(fedc_round *r, const fedc_program *objective) {
    fedc_program *p = r->p, *grad = NULL;
    int k = 1;
    fedc_status st = clusters(r->alg, &k);
    if (st) return fedc_program_fail(p, st, "%s", fedc_errmsg()), st;
    if ((st = fedc_grad_tree(objective, "loss", "w", &grad))) return fedc_program_fail(p, st, "%s", fedc_errmsg()), st;
    fedc_tree *assigned = fedc__hypcluster_assign(r, objective, k);
    fedc_tree *e = fedc__hypcluster_expectation(r, grad, fedc_tree_get(p, assigned, "cluster"), k);
    fedc_program_destroy(grad);
    fedc_tree *next = fedc_tree_copy(p, r->server);
    for (int j = 0; e && j < k; j++) { /* a cluster without clients stays as it was */
        char name[64];
        snprintf(name, sizeof name, "delta/%d", j);
        fedc_tree *w = cluster_tree(p, r->server, j, "params"), *opt = cluster_tree(p, r->server, j, "opt");
        fedc_tree *next_w = NULL, *next_opt = NULL;
        st = fedc_optimizer_step_tree(&r->alg->server_opt, p, FEDC_NONE, w, fedc_tree_subtree(p, e, name), opt,
                                      &next_w, &next_opt);
        if (st) return st;
        snprintf(name, sizeof name, "weight/%d", j);
        fedc_value seen = fedc_gt(p, fedc_tree_get(p, e, name), fedc_scalar(p, FEDC_F32, 0));
        fedc__hypcluster_prefix(j, "params", name, sizeof name);
        fedc_tree_set_tree(p, next, name, tree_select(p, seen, next_w, w));
        fedc__hypcluster_prefix(j, "opt", name, sizeof name);
        if (fedc_tree_size(opt)) fedc_tree_set_tree(p, next, name, tree_select(p, seen, next_opt, opt));
    }
    if (!e) return fedc_program_status(p);
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, e, "loss"), fedc_tree_get(p, e, "examples"));
}

fedc_status fedc__hypcluster_evaluation_with(fedc_round *r, const fedc_program *objective) {
    fedc_program *p = r->p;
    int k = 1;
    fedc_status st = clusters(r->alg, &k);
    if (st) return fedc_program_fail(p, st, "%s", fedc_errmsg()), st;
    fedc_tree *a = fedc__hypcluster_assign(r, objective, k);
    fedc_value chosen = fedc_one_hot(p, fedc_tree_get(p, a, "cluster"), k, FEDC_F32);
    fedc_tree *sums = fedc_tree_new(p); /* each client's, at its chosen cluster */
    fedc_tree_set(p, sums, "loss_sum", fedc_reduce_sum(p, fedc_mul(p, chosen, fedc_tree_get(p, a, "loss_sum")), NULL, -1, false));
    fedc_tree_set(p, sums, "correct", fedc_reduce_sum(p, fedc_mul(p, chosen, fedc_tree_get(p, a, "correct")), NULL, -1, false));
    fedc_tree_set(p, sums, "count", fedc_tree_get(p, a, "count"));
    return fedc__eval_outputs(p, sums, false);
}

static fedc_status with_model(fedc_round *r, fedc_status (*build)(fedc_round *, const fedc_program *)) {
    fedc_program *objective = NULL;
    fedc_status st = fedc__model_objective(r, &objective);
    if (!st) st = build(r, objective);
    fedc_program_destroy(objective);
    return st;
}

static fedc_status hypcluster_round(fedc_round *r) { return with_model(r, fedc__hypcluster_round_with); }
static fedc_status hypcluster_evaluation(fedc_round *r) { return with_model(r, fedc__hypcluster_evaluation_with); }

static fedc_status kmeans(fedc_round *r, const fedc_program *objective) {
    int k = 1;
    fedc_status st = clusters(r->alg, &k);
    if (st) return fedc_program_fail(r->p, st, "%s", fedc_errmsg()), st;
    double on = fedc_round_hparam(r, "kmeans_init");
    if (on != 0 && on != 1) return fedc_program_fail(r->p, FEDC_EINVAL, "hypcluster: kmeans_init is 0 or 1, not %g", on), FEDC_EINVAL;
    return on ? fedc__hypcluster_kmeans_with(r, objective, k, FEDC_NONE) : FEDC_OK; /* 0: no warm start */
}

static fedc_status hypcluster_warm_start(fedc_round *r) { return with_model(r, kmeans); }

const fedc_algorithm_def fedc_algorithm_hypcluster = {
    .name = "hypcluster",
    .summary = "HypCluster: k models; each client trains, and is evaluated, with the one of least loss on its data",
    .hparams = hparams,
    .nhparams = 2,
    .server_init = server_init,
    .round = hypcluster_round,
    .evaluation = hypcluster_evaluation,
    .warm_start = hypcluster_warm_start,
};
