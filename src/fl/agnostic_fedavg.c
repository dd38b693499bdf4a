/* AgnosticFedAvg (Mohri et al. 2019, "Agnostic Federated Learning"; Ro et al.
 * 2021, "Communication-Efficient Agnostic Federated Averaging"; FedJAX's
 * agnostic_fed_avg.py): FedAvg that minimises the loss of the worst mixture of
 * the clients' domains. The server keeps a weight per domain, lambda, and a
 * window of the last rounds' example counts per domain, N:
 *
 *     alpha = lambda / mean(N_window)                       (per domain)
 *     each client i, at w:  L_i[d], N_i[d] = its loss sums and counts by domain
 *                           beta_i = sum_d alpha[d] N_i[d]
 *     each client i trains on  sum_d alpha[d] L_i[d](w) / beta_i  -> delta_i
 *     w, s = server_opt(w, sum_i beta_i delta_i / sum_i beta_i, s)
 *     lambda = lambda * exp(eta * L[d] / N[d]), normalised  (L, N: sums over i)
 *     N_window = N_window[1:] + [N]
 *
 * In fedc a client's examples share one domain, its meta/domain (EMNIST: the
 * writer's, as FedJAX's emnist.domain_id; docs/algorithms.md). The domain sums
 * are taken over the round's training batches at the server's model. */
#include <math.h>
#include <stdio.h>

#include "fl/agnostic_fedavg.h"

#define WEIGHT(d) {"init_domain_weight_" #d, 0, 0, 1, "initial weight of domain " #d " (all 0: uniform)"}
static const fedc_hparam_def hparams[] = {
    {"num_domains", 2, 1, FEDC__AGNOSTIC_MAX_DOMAINS, "domains; a client's meta/domain is in [0, num_domains) "
                                                      "(EMNIST: 0 high school, 1 census)"},
    {"domain_learning_rate", 0.01, 0, 1e6, "eta, the exponentiated gradient's step on the domain weights"},
    {"domain_window_size", 1, 1, 1000, "rounds of domain example counts averaged into alpha"},
    {"domain_algorithm", 0, 0, 1, "0: eg (exponentiated gradient), 1: none (the weights stay as they start)"},
    WEIGHT(0), WEIGHT(1), WEIGHT(2), WEIGHT(3), WEIGHT(4), WEIGHT(5), WEIGHT(6), WEIGHT(7),
};
enum { NHPARAMS = sizeof hparams / sizeof hparams[0] };

typedef struct settings {
    int domains, window;
    double lr;
    bool eg;
    float init[FEDC__AGNOSTIC_MAX_DOMAINS];
} settings;

static fedc_status whole(const fedc_algorithm *a, const char *name, int *out) {
    double v = fedc_algorithm_hparam(a, name);
    if (v != floor(v)) return fedc_error(FEDC_EINVAL, "agnostic_fedavg: %s must be a whole number, not %g", name, v);
    *out = (int)v;
    return FEDC_OK;
}

/* The hyperparameters, checked as FedJAX checks its arguments. */
static fedc_status read_settings(const fedc_algorithm *a, settings *s) {
    int algorithm = 0;
    fedc_status st = whole(a, "num_domains", &s->domains);
    if (!st) st = whole(a, "domain_window_size", &s->window);
    if (!st) st = whole(a, "domain_algorithm", &algorithm);
    if (st) return st;
    s->eg = algorithm == 0;
    s->lr = fedc_algorithm_hparam(a, "domain_learning_rate");
    double sum = 0;
    bool any = false;
    for (int d = 0; d < FEDC__AGNOSTIC_MAX_DOMAINS; d++) {
        char name[32];
        snprintf(name, sizeof name, "init_domain_weight_%d", d);
        double v = fedc_algorithm_hparam(a, name);
        if (d >= s->domains && v != 0)
            return fedc_error(FEDC_EINVAL, "agnostic_fedavg: %s is %g, but num_domains is %d", name, v, s->domains);
        s->init[d] = (float)v, sum += v, any |= v != 0;
    }
    for (int d = 0; !any && d < s->domains; d++) s->init[d] = (float)(1.0 / s->domains);
    if (any && fabs(sum - 1) > 1e-6)
        return fedc_error(FEDC_EINVAL, "agnostic_fedavg: init_domain_weights must sum to approximately 1 "
                          "(init_domain_weight_0..%d sum to %g)", s->domains - 1, sum);
    return FEDC_OK;
}

/* {params, opt, domain_weights f32[D], domain_window f32[window, D]} (the window
 * starts as ones, FedJAX's default init_domain_window). */
static fedc_status server_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p, const fedc_tree *params,
                               fedc_tree **state) {
    (void)m;
    settings s;
    fedc_status st = read_settings(a, &s);
    if (st) return st;
    fedc_tree *t = fedc_tree_new(p);
    fedc_tree_set_tree(p, t, "params", params);
    fedc_tree_set_tree(p, t, "opt", fedc_optimizer_init_tree(&a->server_opt, p, params));
    int64_t dims[2] = {s.window, s.domains};
    fedc_type wt = fedc__placed(fedc_type_make(FEDC_F32, 1, &dims[1]), FEDC_SERVER);
    fedc_tree_set(p, t, "domain_weights", fedc_constant(p, wt, s.init));
    fedc_tree_set(p, t, "domain_window", fedc_full(p, fedc__placed(fedc_type_make(FEDC_F32, 2, dims), FEDC_SERVER), 1));
    *state = t;
    return fedc_program_status(p);
}

/* ------------------------------------------------------------- pieces -- */

fedc_status fedc__agnostic_model_stats(const fedc_round *r, int num_domains, fedc_program **out) {
    *out = NULL;
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_value domain = fedc_input(p, "domain", fedc_type_scalar(FEDC_I32));
    fedc_tree *w;
    fedc_model_outputs o;
    st = fedc__model_on_batch(r, p, false, &w, &o);
    fedc_value one_hot = st ? FEDC_NONE : fedc_one_hot(p, domain, num_domains, FEDC_F32); /* the whole batch's */
    if (!st) st = fedc_program_output(p, "domain_loss", fedc_mul(p, one_hot, fedc_mul(p, o.loss, o.count)));
    if (!st) st = fedc_program_output(p, "domain_num", fedc_mul(p, one_hot, o.count));
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

static fedc_value stats_output(const fedc_program *stats, const char *name) {
    return fedc_program_find_output(stats, name);
}

/* The metrics fold's body: carries w/..., domain_loss, domain_num, t, key, domain;
 * steps x, y, mask. */
static fedc_status metrics_step(const fedc_program *stats, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_type vt = fedc_value_type(stats, stats_output(stats, "domain_loss"));
    fedc_tree *w = fedc_tree_input_same(p, "w", fedc_tree_of_inputs(stats, "w"));
    fedc_value loss = fedc_input(p, "domain_loss", vt), num = fedc_input(p, "domain_num", vt);
    fedc_value t = fedc_input(p, "t", fedc_type_scalar(FEDC_I32));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_tree *args = fedc_tree_new(p);
    fedc_tree_set_tree(p, args, "w", w);
    const char *batch[4] = {"x", "y", "mask", "domain"};
    for (int i = 0; i < 4; i++)
        fedc_tree_set(p, args, batch[i], fedc_input(p, batch[i], fedc_value_type(stats, fedc_program_find_input(stats, batch[i]))));
    fedc_tree_set(p, args, "key", fedc__fl_step_key(p, key, t));
    fedc_tree *res = fedc_tree_call(p, stats, args);
    st = fedc_tree_output(p, "w", w);
    if (!st) st = fedc_program_output(p, "domain_loss", fedc_add(p, loss, fedc_tree_get(p, res, "domain_loss")));
    if (!st) st = fedc_program_output(p, "domain_num", fedc_add(p, num, fedc_tree_get(p, res, "domain_num")));
    if (!st) st = fedc_program_output(p, "t", fedc_add(p, t, fedc_scalar(p, FEDC_I32, 1)));
    if (!st) st = fedc_program_output(p, "key", key);
    if (!st) st = fedc_program_output(p, "domain", fedc_tree_get(p, args, "domain"));
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

/* The map's body: (w/..., x, y, mask, steps, key, domain, alpha) -> (domain_loss,
 * domain_num, beta), the sums over the client's batches. */
static fedc_status metrics_client(fedc_round *r, const fedc_program *stats, const fedc_program *step, fedc_type at,
                                  fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_type vt = fedc_value_type(stats, stats_output(stats, "domain_loss"));
    fedc_tree *w = fedc_tree_input(p, "w", fedc_tree_subtree(r->p, r->server, "params"), FEDC_LOCAL);
    fedc_tree *data = fedc_tree_input(p, NULL, r->data, FEDC_LOCAL);
    fedc_value domain = fedc_input(p, "domain", fedc_type_scalar(FEDC_I32));
    fedc_value alpha = fedc_input(p, "alpha", fedc__placed(at, FEDC_LOCAL));
    /* a stream of its own, apart from the training steps' (key + [0, 0, 0, t]) */
    fedc_value unit = fedc_constant(p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), (int32_t[]){0, 0, 1, 0});
    fedc_tree *carries = fedc_tree_new(p), *xs = fedc_tree_new(p);
    fedc_tree_set_tree(p, carries, "w", w);
    fedc_tree_set(p, carries, "domain_loss", fedc_full(p, vt, 0));
    fedc_tree_set(p, carries, "domain_num", fedc_full(p, vt, 0));
    fedc_tree_set(p, carries, "t", fedc_scalar(p, FEDC_I32, 0));
    fedc_tree_set(p, carries, "key", fedc_add(p, fedc_tree_get(p, data, "key"), unit));
    fedc_tree_set(p, carries, "domain", domain);
    const char *seq[3] = {"x", "y", "mask"};
    for (int i = 0; i < 3; i++) fedc_tree_set(p, xs, seq[i], fedc_tree_get(p, data, seq[i]));
    fedc_tree *res = fedc_tree_fold(p, step, carries, xs, fedc_tree_get(p, data, "steps"));
    fedc_value num = fedc_tree_get(p, res, "domain_num");
    st = fedc_program_output(p, "domain_loss", fedc_tree_get(p, res, "domain_loss"));
    if (!st) st = fedc_program_output(p, "domain_num", num);
    if (!st) st = fedc_program_output(p, "beta", fedc_reduce_sum(p, fedc_mul(p, alpha, num), NULL, -1, false));
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

fedc_tree *fedc__agnostic_metrics(fedc_round *r, const fedc_program *stats, fedc_value alpha, fedc_value domain) {
    fedc_program *p = r->p, *step = NULL, *client = NULL;
    fedc_status st = fedc_program_status(p);
    if (!st) st = metrics_step(stats, &step);
    if (!st) st = metrics_client(r, stats, step, fedc_value_type(p, alpha), &client);
    fedc_tree *out = NULL, *args = st ? NULL : fedc_tree_new(p);
    if (args) {
        fedc_tree_set_tree(p, args, "w", fedc_tree_broadcast(p, fedc_tree_subtree(p, r->server, "params")));
        fedc_tree_set_tree(p, args, NULL, r->data);
        fedc_tree_set(p, args, "domain", domain);
        fedc_tree_set(p, args, "alpha", fedc_broadcast(p, alpha));
        out = fedc_tree_map(p, client, args);
    }
    if (st) fedc_program_fail(p, st, "%s", fedc_errmsg());
    fedc_program_destroy(step);
    fedc_program_destroy(client);
    return out;
}

/* FedJAX's create_scaled_loss as an objective: inputs the statistics program's
 * and alpha f32[D], beta f32[]; outputs loss = sum(alpha * domain_loss) / beta,
 * count (the batch's real examples) and grad_w/<param>. */
static fedc_status scaled_objective(const fedc_program *stats, fedc_program **out) {
    *out = NULL;
    fedc_program *p, *g = NULL;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *args = fedc_tree_new(p);
    for (int i = 0; i < fedc_program_num_inputs(stats); i++) {
        const char *name = fedc_program_input_name(stats, i);
        fedc_tree_set(p, args, name, fedc_input(p, name, fedc_value_type(stats, fedc_program_input(stats, i))));
    }
    fedc_value alpha = fedc_input(p, "alpha", fedc_value_type(stats, stats_output(stats, "domain_loss")));
    fedc_value beta = fedc_input(p, "beta", fedc_type_scalar(FEDC_F32));
    fedc_tree *res = fedc_tree_call(p, stats, args);
    /* beta is 0 only for a client none of whose domains has weight: it trains on 0 */
    fedc_value zero = fedc_scalar(p, FEDC_F32, 0), one = fedc_scalar(p, FEDC_F32, 1);
    fedc_value safe = fedc_select(p, fedc_gt(p, beta, zero), beta, one);
    fedc_value weighted = fedc_reduce_sum(p, fedc_mul(p, alpha, fedc_tree_get(p, res, "domain_loss")), NULL, -1, false);
    st = fedc_program_output(p, "loss", fedc_div(p, weighted, safe));
    if (!st) st = fedc_program_output(p, "count", fedc_reduce_sum(p, fedc_tree_get(p, res, "domain_num"), NULL, -1, false));
    if (!st) st = fedc_program_status(p);
    if (!st) st = fedc_grad_tree(p, "loss", "w", &g);
    fedc_program_destroy(p);
    if (!st) *out = g;
    return st;
}

fedc_status fedc__agnostic_train(fedc_round *r, const fedc_program *stats, fedc_value alpha, fedc_value beta,
                                 fedc_value domain, fedc_tree **out) {
    *out = NULL;
    fedc_program *p = r->p, *objective = NULL;
    fedc_status st = fedc_program_status(p);
    if (!st) st = scaled_objective(stats, &objective);
    fedc_tree *extra = st ? NULL : fedc_tree_new(p);
    if (extra) {
        fedc_tree_set(p, extra, "alpha", fedc_broadcast(p, alpha));
        fedc_tree_set(p, extra, "beta", beta);
        fedc_tree_set(p, extra, "domain", domain);
        st = fedc_round_local_training(r, &(fedc_local_training){.objective = objective, .extra = extra}, out);
    }
    fedc_program_destroy(objective);
    return st;
}

fedc_value fedc__agnostic_update_weights(fedc_program *p, fedc_value weights, fedc_value loss, double lr, bool eg) {
    if (!eg) return weights;
    fedc_value w = fedc_mul(p, weights, fedc_exp(p, fedc_mul(p, fedc_scalar(p, FEDC_F32, lr), loss)));
    w = fedc_maximum(p, w, fedc_scalar(p, FEDC_F32, 0));
    return fedc_div(p, w, fedc_reduce_sum(p, w, NULL, -1, false));
}

/* -------------------------------------------------------------- round -- */

/* FedJAX's safe_div: x / y, 0 where y is 0. It keeps a domain that the window
 * has not seen out of the mixture (alpha 0) where FedJAX's alpha is inf and the
 * round NaN. */
static fedc_value safe_div(fedc_program *p, fedc_value x, fedc_value y) {
    fedc_value zero = fedc_scalar(p, FEDC_F32, 0), seen = fedc_ne(p, y, zero);
    return fedc_select(p, seen, fedc_div(p, x, fedc_select(p, seen, y, fedc_scalar(p, FEDC_F32, 1))), zero);
}

/* w, s = server_opt(w, sum_i beta_i delta_i / sum_i beta_i, s): the clients
 * weighted by beta, as FedJAX's (not by --weighting); a round whose betas are all
 * 0 (every client's domain unseen in the window) leaves the mean delta 0. */
static fedc_tree *server_step(fedc_round *r, const fedc_tree *delta, fedc_value beta) {
    fedc_program *p = r->p;
    fedc_tree *w = fedc_tree_subtree(p, r->server, "params"), *mean = fedc_tree_new(p), *next_w = NULL, *next_opt = NULL;
    fedc_tree *opt = fedc_tree_has(r->server, "opt") ? fedc_tree_subtree(p, r->server, "opt") : fedc_tree_new(p);
    fedc_value total = fedc_sum(p, beta);
    for (int i = 0; i < fedc_tree_size(delta); i++)
        fedc_tree_set(p, mean, fedc_tree_name(delta, i),
                      safe_div(p, fedc_sum(p, fedc_mul(p, fedc_tree_value(delta, i), beta)), total));
    if (fedc_optimizer_step_tree(&r->alg->server_opt, p, FEDC_NONE, w, mean, opt, &next_w, &next_opt)) return NULL;
    fedc_tree *next = fedc_tree_copy(p, r->server);
    fedc_tree_set_tree(p, next, "params", next_w);
    fedc_tree_set_tree(p, next, "opt", next_opt);
    return fedc_program_status(p) ? NULL : next;
}

/* The domain weights and window after a round with domain sums loss and num (@server f32[D]). */
static void update_domains(fedc_program *p, const settings *s, fedc_tree *next, fedc_value window, fedc_value loss,
                           fedc_value num) {
    fedc_value mean = safe_div(p, loss, num); /* 0 for a domain with no examples */
    fedc_value weights = fedc_tree_get(p, next, "domain_weights");
    fedc_tree_set(p, next, "domain_weights", fedc__agnostic_update_weights(p, weights, mean, s->lr, s->eg));
    fedc_value row = fedc_reshape(p, num, 2, (int64_t[]){1, s->domains});
    if (s->window > 1) {
        fedc_value older = fedc_slice(p, window, (int64_t[]){1, 0}, (int64_t[]){s->window, s->domains});
        row = fedc_concat(p, (fedc_value[]){older, row}, 2, 0);
    }
    fedc_tree_set(p, next, "domain_window", row);
}

fedc_status fedc__agnostic_round_with(fedc_round *r, const fedc_program *stats) {
    fedc_program *p = r->p;
    settings s;
    fedc_status st = read_settings(r->alg, &s);
    if (st) return fedc_program_fail(p, st, "%s", fedc_errmsg()), st;
    fedc_value window = fedc_tree_get(p, r->server, "domain_window");
    fedc_value alpha = safe_div(p, fedc_tree_get(p, r->server, "domain_weights"),
                                fedc_reduce_mean(p, window, (int[]){0}, 1, false));
    fedc_value domain = fedc_cast(p, fedc_round_meta(r, "domain"), FEDC_I32);
    fedc_tree *metrics = fedc__agnostic_metrics(r, stats, alpha, domain), *out = NULL;
    fedc_value beta = fedc_tree_get(p, metrics, "beta");
    fedc_value loss = fedc_tree_get(p, metrics, "domain_loss"), num = fedc_tree_get(p, metrics, "domain_num");
    st = fedc__agnostic_train(r, stats, alpha, beta, domain, &out);
    if (st) return st;
    fedc_tree *next = server_step(r, fedc_tree_subtree(p, out, "delta"), beta);
    if (next) {
        fedc_value loss_sum = fedc_sum(p, loss), num_sum = fedc_sum(p, num);
        update_domains(p, &s, next, window, loss_sum, num_sum);
    }
    /* the train loss: each client's mean loss at the server's model, before training */
    fedc_value examples = fedc_reduce_sum(p, num, NULL, -1, false);
    fedc_value total_loss = fedc_reduce_sum(p, loss, NULL, -1, false);
    fedc_value mean = fedc_div(p, total_loss, fedc_maximum(p, examples, fedc_scalar(p, FEDC_F32, 1)));
    return fedc_round_finish(r, next, NULL, mean, examples);
}

static fedc_status agnostic_round(fedc_round *r) {
    settings s;
    fedc_program *stats = NULL;
    fedc_status st = read_settings(r->alg, &s);
    if (st) return fedc_program_fail(r->p, st, "%s", fedc_errmsg()), st;
    st = fedc__agnostic_model_stats(r, s.domains, &stats);
    if (!st) st = fedc__agnostic_round_with(r, stats);
    fedc_program_destroy(stats);
    return st;
}

const fedc_algorithm_def fedc_algorithm_agnostic_fedavg = {
    .name = "agnostic_fedavg",
    .summary = "AgnosticFedAvg: FedAvg for the worst mixture of the clients' domains (meta/domain), its domain "
               "weights by exponentiated gradient",
    .hparams = hparams,
    .nhparams = NHPARAMS,
    .server_init = server_init,
    .round = agnostic_round,
};
