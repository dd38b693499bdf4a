/* HypCluster's start from the data: FedJAX's kmeans_init, a k-means++ variant
 * (hyp_cluster.py, ModelKMeansInitializer), as a warm start (fl.h) on a cohort:
 *
 *     w_i = local_training(w, data_i) for each client i    (from the model's start)
 *     center_0 = w_c for a client c drawn at random
 *     for j = 1 .. k-1:
 *         best_i = min(best_i, mean loss_i(center_{j-1}))  (best_i starts at +inf)
 *         center_j = w_c for c = argmax_i best_i            (the worst served; ties: the first)
 *
 * Clusters may repeat a center, as FedJAX's do. Where fedc differs: FedJAX
 * evaluates the losses on each client's whole dataset in padded batches; here on
 * the batches the client trained on (its data once per epoch), and the random
 * client is the one whose 24 random bits (its key's own stream) are largest. */
#include <math.h>

#include "fl/hypcluster.h"

/* v (f32[]@clients) as a server vector f32[cohort]: client i's value at i. */
static fedc_value gathered(fedc_program *p, fedc_value v, fedc_value place) {
    fedc_value zero = fedc_scalar(p, FEDC_F32, 0);
    fedc_value here = fedc_gt(p, place, zero);
    return fedc_sum(p, fedc_select(p, here, fedc_mul(p, place, v), zero));
}

/* Client c's (i32[]@server) values of w (@clients), at the server. */
static fedc_tree *client_at(fedc_program *p, const fedc_tree *w, fedc_value index, fedc_value c) {
    fedc_value is = fedc_eq(p, index, fedc_broadcast(p, fedc_cast(p, c, FEDC_F32)));
    fedc_tree *t = fedc_tree_new(p);
    for (int i = 0; i < fedc_tree_size(w); i++)
        fedc_tree_set(p, t, fedc_tree_name(w, i),
                      fedc_sum(p, fedc_select(p, is, fedc_tree_value(w, i), fedc_scalar(p, FEDC_F32, 0))));
    return t;
}

/* The map's body: key -> u, a whole number in [0, 2^24) from the key's stream. */
static fedc_status random_body(fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    int64_t n = 24;
    float half_powers[24];
    for (int i = 0; i < 24; i++) half_powers[i] = ldexpf(0.5f, i); /* dropout keeps a bit as 2 */
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_value salt = fedc_constant(p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), (int32_t[]){0, 0, 0x6b6d, 0});
    fedc_value ones = fedc_full(p, fedc_type_make(FEDC_F32, 1, &n), 1);
    fedc_value bits = fedc_dropout(p, ones, fedc_add(p, key, salt), 0.5);
    fedc_value u = fedc_reduce_sum(p, fedc_mul(p, bits, fedc_constant(p, fedc_type_make(FEDC_F32, 1, &n), half_powers)),
                                   NULL, -1, false);
    st = fedc_program_output(p, "u", u);
    return fedc__fl_done(p, st, out);
}

static fedc_value random_client(fedc_round *r, fedc_value place) {
    fedc_program *p = r->p, *body = NULL;
    fedc_status st = random_body(&body);
    if (st) return fedc_program_fail(p, st, "%s", fedc_errmsg());
    fedc_tree *args = fedc_tree_new(p);
    fedc_tree_set(p, args, "key", fedc_tree_get(p, r->data, "key"));
    fedc_value u = fedc_tree_get(p, fedc_tree_map(p, body, args), "u");
    fedc_program_destroy(body);
    return fedc_argmax(p, gathered(p, u, place), 0);
}

/* Sets cluster j of `state` to params w and a fresh server optimizer state. */
static void set_cluster(fedc_round *r, fedc_tree *state, int j, const fedc_tree *w) {
    char name[64];
    fedc__hypcluster_prefix(j, "params", name, sizeof name);
    fedc_tree_set_tree(r->p, state, name, w);
    fedc__hypcluster_prefix(j, "opt", name, sizeof name);
    fedc_tree *opt = fedc_optimizer_init_tree(&r->alg->server_opt, r->p, w);
    if (fedc_tree_size(opt)) fedc_tree_set_tree(r->p, state, name, opt);
}

fedc_status fedc__hypcluster_kmeans_with(fedc_round *r, const fedc_program *objective, int k, fedc_value first) {
    fedc_program *p = r->p, *grad = NULL;
    if (r->cohort < 1) return fedc_program_fail(p, FEDC_EINVAL, "hypcluster: k-means needs the cohort's size"), FEDC_EINVAL;
    fedc_status st = fedc_grad_tree(objective, "loss", "w", &grad);
    if (st) return fedc_program_fail(p, st, "%s", fedc_errmsg()), st;
    fedc_tree *out = NULL;
    st = fedc_round_local_training(r, &(fedc_local_training){.objective = grad}, &out);
    fedc_program_destroy(grad);
    if (st) return st;
    fedc_tree *trained = fedc_tree_sub(p, fedc_tree_broadcast(p, fedc_tree_subtree(p, r->server, "params")),
                                       fedc_tree_subtree(p, out, "delta"));
    fedc_value index = fedc_round_meta(r, "index");
    fedc_value place = fedc_one_hot(p, fedc_cast(p, index, FEDC_I32), r->cohort, FEDC_F32);
    fedc_tree *center = client_at(p, trained, index, first != FEDC_NONE ? first : random_client(r, place));
    fedc_tree *next = fedc_tree_copy(p, r->server);
    set_cluster(r, next, 0, center);
    fedc_value best = fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), INFINITY);
    for (int j = 1; j < k; j++) {
        fedc_tree *sums = fedc__client_sums(r, fedc_tree_broadcast(p, center), objective);
        fedc_value count = fedc_maximum(p, fedc_tree_get(p, sums, "count"), fedc_scalar(p, FEDC_F32, 1));
        best = fedc_minimum(p, best, fedc_div(p, fedc_tree_get(p, sums, "loss_sum"), count));
        center = client_at(p, trained, index, fedc_argmax(p, gathered(p, best, place), 0));
        set_cluster(r, next, j, center);
    }
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), fedc_tree_get(p, out, "examples"));
}
