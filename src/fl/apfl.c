/* APFL, adaptive personalized federated learning (Deng, Kamani and Mahdavi 2020;
 * FedJAX's apfl.py, followed step for step). Every client keeps a personal model
 * v_i and one interpolation coefficient alpha per parameter tensor; its
 * personalized model is alpha v_i + (1 - alpha) w. Each local step, with the same
 * client optimizer (fresh each round) for all three:
 *
 *     p   = alpha v + (1 - alpha) w
 *     w   = opt(w, grad loss(w))                       the global model's local copy
 *     v   = opt(v, grad loss(p))                       the personal model
 *     alpha = clip(opt(alpha, <v - w, grad loss(p)>), 0, 1)    (v and w before the step)
 *
 * and the server steps on the weighted mean of w - w_i. A client never seen
 * starts from v = the server's model (meta/seen) and alpha = client_coefficient.
 * Evaluation is personalized: each test client at its own interpolated model. */
#include "fl/apfl.h"
#include "fl/fl.h"

static const fedc_hparam_def hparams[] = {
    {"client_coefficient", 0.5, 0, 1, "a new client's interpolation coefficient alpha"},
};

static fedc_status apfl_client_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p, fedc_tree **state) {
    fedc_tree *s = fedc_tree_new(p), *alpha = fedc_tree_new(p);
    double coefficient = fedc_algorithm_hparam(a, "client_coefficient");
    for (int i = 0; i < fedc_model_num_params(m); i++)
        fedc_tree_set(p, alpha, fedc_model_param_name(m, i), fedc_scalar(p, FEDC_F32, coefficient));
    fedc_tree_set_tree(p, s, "params", fedc_model_full_tree(m, p, FEDC_LOCAL, 0)); /* unused until seen */
    fedc_tree_set_tree(p, s, "alpha", alpha);
    *state = s;
    return fedc_program_status(p);
}

/* What a local step carries: the three models and their optimizer states. */
static const char *const carried[6] = {"w", "v", "alpha", "sw", "sv", "sa"};

/* alpha v + (1 - alpha) w, leaf by leaf (alpha a scalar per leaf). */
static fedc_tree *interpolate(fedc_program *p, const fedc_tree *alpha, const fedc_tree *v, const fedc_tree *w) {
    fedc_tree *out = fedc_tree_new(p);
    for (int i = 0; i < fedc_tree_size(w); i++) {
        const char *name = fedc_tree_name(w, i);
        fedc_value a = fedc_tree_get(p, alpha, name), one = fedc_scalar(p, FEDC_F32, 1);
        fedc_value personal = fedc_mul(p, a, fedc_tree_get(p, v, name));
        fedc_value global = fedc_mul(p, fedc_sub(p, one, a), fedc_tree_value(w, i));
        fedc_tree_set(p, out, name, fedc_add(p, personal, global));
    }
    return out;
}

/* The gradient program's results at model w on the step's batch. */
static fedc_tree *gradient_at(fedc_program *p, const fedc_program *grad, const fedc_tree *w, const fedc_tree *batch,
                              fedc_value key) {
    fedc_tree *args = fedc_tree_copy(p, batch);
    fedc_tree_set_tree(p, args, "w", w);
    fedc_tree_set(p, args, "key", key);
    return fedc_tree_call(p, grad, args);
}

/* The fold's body: carries w/, v/, alpha/, their optimizer states sw/, sv/, sa/,
 * loss_sum, count, t, key; sequences x, y, mask. */
static fedc_status local_step(const fedc_round *r, const fedc_program *grad, const fedc_tree *w_like,
                              const fedc_tree *alpha_like, fedc_program **out) {
    const fedc_optimizer *o = &r->alg->client_opt;
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_tree_input(p, "w", w_like, FEDC_LOCAL), *v = fedc_tree_input(p, "v", w_like, FEDC_LOCAL);
    fedc_tree *alpha = fedc_tree_input(p, "alpha", alpha_like, FEDC_LOCAL);
    fedc_program *scratch = NULL; /* the optimizer states' types */
    st = fedc_program_create(&scratch);
    fedc_tree *sw_like = st ? NULL : fedc_optimizer_init_tree(o, scratch, fedc_tree_input(scratch, "w", w_like, FEDC_LOCAL));
    fedc_tree *sa_like = st ? NULL : fedc_optimizer_init_tree(o, scratch, fedc_tree_input(scratch, "a", alpha_like, FEDC_LOCAL));
    fedc_tree *sw = fedc_tree_input(p, "sw", sw_like, FEDC_LOCAL), *sv = fedc_tree_input(p, "sv", sw_like, FEDC_LOCAL);
    fedc_tree *sa = fedc_tree_input(p, "sa", sa_like, FEDC_LOCAL);
    fedc_program_destroy(scratch);
    fedc__step s;
    fedc__step_inputs(p, &s);
    fedc_tree *batch = fedc__step_batch(p, grad);
    /* FedJAX splits the step's key for the two gradients: here key + [0,0,0,t], and that with key[2] + 1 */
    fedc_value k1 = fedc__fl_step_key(p, s.key, s.t);
    fedc_value k2 = fedc_add(p, k1, fedc_constant(p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), (int32_t[]){0, 0, 1, 0}));
    fedc_tree *gs = gradient_at(p, grad, w, batch, k1);
    fedc_tree *gc = fedc_tree_subtree(p, gradient_at(p, grad, interpolate(p, alpha, v, w), batch, k2), "grad_w");
    fedc_tree *v_minus_w = fedc_tree_sub(p, v, w), *ig = fedc_tree_new(p);
    for (int i = 0; i < fedc_tree_size(v_minus_w); i++) /* <v - w, grad loss(p)>, per tensor */
        fedc_tree_set(p, ig, fedc_tree_name(v_minus_w, i),
                      fedc_reduce_sum(p, fedc_mul(p, fedc_tree_value(v_minus_w, i), fedc_tree_get(p, gc, fedc_tree_name(v_minus_w, i))),
                                      NULL, -1, false));
    fedc_tree *nw, *nsw, *nv, *nsv, *na, *nsa;
    st = fedc_optimizer_step_tree(o, p, FEDC_NONE, w, fedc_tree_subtree(p, gs, "grad_w"), sw, &nw, &nsw);
    if (!st) st = fedc_optimizer_step_tree(o, p, FEDC_NONE, v, gc, sv, &nv, &nsv);
    if (!st) st = fedc_optimizer_step_tree(o, p, FEDC_NONE, alpha, ig, sa, &na, &nsa);
    fedc_tree *clipped = fedc_tree_new(p);
    for (int i = 0; !st && i < fedc_tree_size(na); i++) {
        fedc_value at_least_0 = fedc_maximum(p, fedc_tree_value(na, i), fedc_scalar(p, FEDC_F32, 0));
        fedc_tree_set(p, clipped, fedc_tree_name(na, i), fedc_minimum(p, at_least_0, fedc_scalar(p, FEDC_F32, 1)));
    }
    const fedc_tree *next[6] = {nw, nv, clipped, nsw, nsv, nsa};
    for (int i = 0; !st && i < 6; i++) st = fedc_tree_output(p, carried[i], next[i]);
    if (!st) st = fedc__step_outputs(p, &s, fedc_tree_get(p, gs, "loss"), fedc_tree_get(p, gs, "count"));
    return fedc__fl_done(p, st, out);
}

/* The map's body: (w/, v/, alpha/, x, y, mask, steps, key) -> (delta/, v/, alpha/, examples, loss). */
static fedc_status client_update(fedc_round *r, const fedc_program *step, const fedc_tree *w_like,
                                 const fedc_tree *alpha_like, fedc_program **out) {
    const fedc_optimizer *o = &r->alg->client_opt;
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *w = fedc_tree_input(p, "w", w_like, FEDC_LOCAL), *v = fedc_tree_input(p, "v", w_like, FEDC_LOCAL);
    fedc_tree *alpha = fedc_tree_input(p, "alpha", alpha_like, FEDC_LOCAL);
    fedc_tree *carries = fedc_tree_new(p);
    const fedc_tree *start[6] = {w, v, alpha};
    for (int i = 0; i < 3; i++) start[3 + i] = fedc_optimizer_init_tree(o, p, start[i]);
    for (int i = 0; i < 6; i++) fedc_tree_set_tree(p, carries, carried[i], start[i]);
    fedc_tree *res = fedc__fold_batches(p, step, carries, fedc_tree_input(p, NULL, r->data, FEDC_LOCAL));
    st = fedc_tree_output(p, "delta", fedc_tree_sub(p, w, fedc_tree_subtree(p, res, "w")));
    if (!st) st = fedc_tree_output(p, "v", fedc_tree_subtree(p, res, "v"));
    if (!st) st = fedc_tree_output(p, "alpha", fedc_tree_subtree(p, res, "alpha"));
    if (!st) st = fedc__fold_outputs(p, res);
    return fedc__fl_done(p, st, out);
}

fedc_status fedc__apfl_round_with(fedc_round *r, const fedc_program *grad) {
    fedc_program *p = r->p, *step = NULL, *client = NULL;
    fedc_tree *w = fedc_tree_subtree(p, r->server, "params"), *wb = fedc_tree_broadcast(p, w);
    fedc_tree *alpha = fedc_tree_subtree(p, r->client, "alpha"), *kept = fedc_tree_subtree(p, r->client, "params");
    fedc_value seen_count = fedc_round_meta(r, "seen");
    fedc_value seen = fedc_gt(p, seen_count, fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), 0));
    fedc_tree *v = fedc_tree_new(p); /* a new client's personal model starts as the server's */
    for (int i = 0; i < fedc_tree_size(wb); i++)
        fedc_tree_set(p, v, fedc_tree_name(wb, i), fedc_select(p, seen, fedc_tree_get(p, kept, fedc_tree_name(wb, i)),
                                                               fedc_tree_value(wb, i)));
    fedc_status st = fedc_program_status(p);
    if (!st) st = local_step(r, grad, w, alpha, &step);
    if (!st) st = client_update(r, step, w, alpha, &client);
    fedc_tree *args = st ? NULL : fedc_tree_copy(p, r->data), *out = NULL;
    if (args) {
        fedc_tree_set_tree(p, args, "w", wb);
        fedc_tree_set_tree(p, args, "v", v);
        fedc_tree_set_tree(p, args, "alpha", alpha);
        out = fedc_tree_map(p, client, args);
    }
    fedc_program_destroy(step);
    fedc_program_destroy(client);
    if (!st) st = fedc_program_status(p);
    if (st) return st;
    fedc_value n = fedc_tree_get(p, out, "examples");
    fedc_tree *next = fedc_round_server_opt(r, fedc_tree_subtree(p, out, "delta"), fedc_round_weight(r, n));
    fedc_tree *clients = fedc_tree_new(p);
    fedc_tree_set_tree(p, clients, "params", fedc_tree_subtree(p, out, "v"));
    fedc_tree_set_tree(p, clients, "alpha", fedc_tree_subtree(p, out, "alpha"));
    return fedc_round_finish(r, next, clients, fedc_tree_get(p, out, "loss"), n);
}

/* Each test client at its personalized model alpha v + (1 - alpha) w; a client
 * never trained is evaluated at the server's model (alpha 0), as FedJAX's
 * eval_adaptive_personalized_federated_learning does. */
fedc_status fedc__apfl_evaluation_with(fedc_round *r, const fedc_program *objective) {
    fedc_program *p = r->p;
    fedc_tree *wb = fedc_tree_broadcast(p, fedc_tree_subtree(p, r->server, "params"));
    fedc_tree *alpha = fedc_tree_subtree(p, r->client, "alpha"), *used = fedc_tree_new(p);
    fedc_value zero = fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), 0);
    fedc_value seen = fedc_gt(p, fedc_round_meta(r, "seen"), zero);
    for (int i = 0; i < fedc_tree_size(alpha); i++)
        fedc_tree_set(p, used, fedc_tree_name(alpha, i), fedc_select(p, seen, fedc_tree_value(alpha, i), zero));
    fedc_tree *personal = interpolate(p, used, fedc_tree_subtree(p, r->client, "params"), wb);
    return fedc_round_evaluate(r, personal, objective);
}

static fedc_status apfl_evaluation(fedc_round *r) { return fedc__apfl_evaluation_with(r, NULL); }

static fedc_status apfl_round(fedc_round *r) {
    fedc_program *grad = NULL;
    fedc_status st = fedc_round_objective(r, NULL, NULL, true, &grad);
    if (!st) st = fedc__apfl_round_with(r, grad);
    fedc_program_destroy(grad);
    return st;
}

const fedc_algorithm_def fedc_algorithm_apfl = {
    .name = "apfl",
    .summary = "APFL: each client keeps a personal model and its interpolation with the global one (FedJAX's apfl.py)",
    .hparams = hparams,
    .nhparams = 1,
    .client_init = apfl_client_init,
    .round = apfl_round,
    .evaluation = apfl_evaluation,
};
