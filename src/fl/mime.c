/* Mime (Karimireddy et al. 2020, "Mime: Mimicking Centralized Stochastic
 * Algorithms in Federated Learning"; FedJAX's fedjax/algorithms/mime.py): the
 * clients take steps of a base optimizer (fedc's client optimizer) whose state
 * is the server's, applied but not updated, on a gradient corrected by the
 * cohort's full gradient (a control variate, as SCAFFOLD's):
 *
 *     c = weighted_mean_i(mean gradient of client i's batches at x)     (x: server params)
 *     each client i:  w = x
 *         for each batch b:  w = base_opt.apply(g_b(w) - g_b(x) + c, s, w)   (s frozen)
 *         delta_i = x - w
 *     x = x - server_learning_rate * weighted_mean(delta_i, |data_i|)
 *     s = base_opt.apply(c, s, x).state                         (its params discarded)
 *
 * This file also holds what MimeLite (src/fl/mimelite.c) shares with it: the
 * server state, the full gradient, the clients' frozen optimizer state, the
 * server's update and FedJAX's client diagnostics. */
#include "fl/mime.h"

static const fedc_hparam_def hparams[] = {
    {"server_learning_rate", 1.0, 0, 1e6, "the server's step: params -= server_learning_rate * mean client delta"},
};

/* ------------------------------------------------------ shared pieces -- */

fedc_status fedc__mime_server_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p,
                                   const fedc_tree *params, fedc_tree **state) {
    (void)m;
    *state = fedc_tree_new(p);
    fedc_tree_set_tree(p, *state, "params", params);
    fedc_tree_set_tree(p, *state, "opt", fedc_optimizer_init_tree(&a->client_opt, p, params));
    return fedc_program_status(p);
}

fedc_status fedc__mime_check(fedc_round *r) {
    const fedc_optimizer *o = &r->alg->server_opt;
    if (o->kind != FEDC_OPT_SGD || o->learning_rate != 1)
        return fedc_program_fail(r->p, FEDC_EINVAL,
                                 "%s: the server steps by server_learning_rate (--set server_learning_rate=X) and "
                                 "keeps the client optimizer's state, so it takes no server optimizer (it needs "
                                 "--server-opt sgd --server-lr 1, not %s with lr %g)",
                                 fedc_algorithm_name(r->alg), fedc_optimizer_name(o->kind), o->learning_rate),
               FEDC_EINVAL;
    return fedc_program_status(r->p);
}

fedc_status fedc__mime_server_grads(fedc_round *r, const fedc_program *objective, fedc_tree **grads) {
    fedc_program *p = r->p;
    fedc_tree *out = NULL, *x = fedc_tree_broadcast(p, fedc_tree_subtree(p, r->server, "params"));
    fedc_status st = x ? fedc__round_gradients_with(r, objective, x, &out) : fedc_program_status(p);
    /* FedJAX: grads_sum_total / num_sum_total, i.e. weighted by the examples counted */
    *grads = st ? NULL : fedc_tree_weighted_mean(p, fedc_tree_subtree(p, out, "grad"), fedc_tree_get(p, out, "examples"));
    return st ? st : fedc_program_status(p);
}

fedc_tree *fedc__mime_client_opt_state(fedc_round *r) {
    if (!fedc_tree_has(r->server, "opt")) return NULL; /* SGD keeps none */
    return fedc_tree_broadcast(r->p, fedc_tree_subtree(r->p, r->server, "opt"));
}

/* The map's body of fedc__mime_clip: delta/<param> -> delta/<param> (clipped when
 * clip > 0), delta_l2_norm (before), clipped_delta_l2_norm (after; with clip). */
static fedc_status clip_body(const fedc_tree *delta_like, double clip, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_tree *d = fedc_tree_input(p, "delta", delta_like, FEDC_LOCAL);
    fedc_value norm = fedc_sqrt(p, fedc_tree_sq_norm(p, d));
    if (clip > 0) { /* FedJAX's tree_clip_by_global_norm: scale = min(1, clip / norm) */
        fedc_value one = fedc_scalar(p, FEDC_F32, 1);
        fedc_value scale = fedc_minimum(p, one, fedc_div(p, fedc_scalar(p, FEDC_F32, clip), norm));
        d = fedc_tree_scale(p, d, scale);
        st = fedc_program_output(p, "clipped_delta_l2_norm", fedc_sqrt(p, fedc_tree_sq_norm(p, d)));
    }
    if (!st) st = fedc_tree_output(p, "delta", d);
    if (!st) st = fedc_program_output(p, "delta_l2_norm", norm);
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

fedc_tree *fedc__mime_clip(fedc_round *r, const fedc_tree *delta, double clip, fedc_tree **diagnostics) {
    if (diagnostics) *diagnostics = NULL;
    if (!(clip > 0) && !diagnostics) return (fedc_tree *)delta;
    fedc_program *p = r->p, *body = NULL;
    fedc_status st = delta ? clip_body(delta, clip, &body) : fedc_program_status(p);
    if (st) return fedc_program_status(p) ? NULL : (fedc_program_fail(p, st, "%s", fedc_errmsg()), NULL);
    fedc_tree *args = fedc_tree_new(p);
    fedc_tree_set_tree(p, args, "delta", delta);
    fedc_tree *res = fedc_tree_map(p, body, args);
    fedc_program_destroy(body);
    if (!res) return NULL;
    if (diagnostics) {
        *diagnostics = fedc_tree_new(p);
        fedc_tree_set(p, *diagnostics, "delta_l2_norm", fedc_tree_get(p, res, "delta_l2_norm"));
        if (clip > 0) fedc_tree_set(p, *diagnostics, "clipped_delta_l2_norm", fedc_tree_get(p, res, "clipped_delta_l2_norm"));
    }
    return fedc_tree_subtree(p, res, "delta");
}

fedc_status fedc__mime_finish(fedc_round *r, const fedc_tree *server_grads, const fedc_tree *delta,
                              const fedc_tree *trained) {
    fedc_program *p = r->p;
    fedc_tree *x = fedc_tree_subtree(p, r->server, "params");
    fedc_tree *s = fedc_tree_has(r->server, "opt") ? fedc_tree_subtree(p, r->server, "opt") : fedc_tree_new(p);
    /* weighted by the client's dataset size: FedJAX's len(cds), whatever --weighting says */
    fedc_tree *mean_delta = fedc_tree_weighted_mean(p, delta, fedc_round_meta(r, "num_examples"));
    fedc_value step = fedc_scalar(p, FEDC_F32, -fedc_round_hparam(r, "server_learning_rate"));
    fedc_tree *unused = NULL, *next_s = NULL;
    fedc_status st = fedc_program_status(p);
    if (!st) st = fedc_optimizer_step_tree(&r->alg->client_opt, p, FEDC_NONE, x, server_grads, s, &unused, &next_s);
    if (st) return st;
    fedc_tree *next = fedc_tree_copy(p, r->server);
    fedc_tree_set_tree(p, next, "params", fedc_tree_axpy(p, step, mean_delta, x));
    fedc_tree_set_tree(p, next, "opt", next_s);
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, trained, "loss"), fedc_tree_get(p, trained, "examples"));
}

fedc_status fedc__mime_on_model(fedc_round *r, fedc__mime_round_fn round) {
    fedc_program *objective = NULL;
    fedc_status st = fedc_round_objective(r, NULL, NULL, true, &objective);
    if (!st) st = round(r, objective, NULL);
    fedc_program_destroy(objective);
    return st;
}

/* ------------------------------------------------------------- Mime -- */

/* Mime's client objective on one batch: the loss at w, and the corrected gradient
 * g(w) - g(start) + c, both gradients on this batch with the same dropout key
 * (FedJAX's client_step). g(start) is a second call of the objective, at the
 * server's params: it is an input to the step, not differentiated through. */
static fedc_status corrected_objective(const fedc_program *objective, fedc_program **out) {
    fedc_program *p;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    const fedc_tree *like = fedc_tree_of_inputs(objective, "w");
    fedc_tree *w = fedc_tree_input_same(p, "w", like), *start = fedc_tree_input_same(p, "start", like);
    fedc_tree *c = fedc_tree_input_same(p, "c", like), *at_w = fedc_tree_new(p), *at_start = fedc_tree_new(p);
    for (int i = 0; i < fedc_program_num_inputs(objective); i++) { /* x, y, mask, key: the same batch */
        const char *name = fedc_program_input_name(objective, i);
        if (!strncmp(name, "w/", 2)) continue;
        fedc_value v = fedc_input(p, name, fedc_value_type(objective, fedc_program_input(objective, i)));
        fedc_tree_set(p, at_w, name, v);
        fedc_tree_set(p, at_start, name, v);
    }
    fedc_tree_set_tree(p, at_w, "w", w);
    fedc_tree_set_tree(p, at_start, "w", start);
    fedc_tree *rw = fedc_tree_call(p, objective, at_w), *rs = fedc_tree_call(p, objective, at_start);
    fedc_tree *g = fedc_tree_sub(p, fedc_tree_subtree(p, rw, "grad_w"), fedc_tree_subtree(p, rs, "grad_w"));
    st = fedc_tree_output(p, "grad_w", fedc_tree_add(p, g, c));
    if (!st) st = fedc_program_output(p, "loss", fedc_tree_get(p, rw, "loss"));
    if (!st) st = fedc_program_output(p, "count", fedc_tree_get(p, rw, "count"));
    if (!st) st = fedc_program_status(p);
    if (st) fedc_program_destroy(p);
    else *out = p;
    return st;
}

fedc_status fedc__mime_client_training(fedc_round *r, const fedc_program *objective, const fedc_tree *server_grads,
                                       fedc_tree **out) {
    *out = NULL;
    fedc_program *p = r->p, *corrected = NULL;
    fedc_status st = corrected_objective(objective, &corrected);
    if (st) return st;
    fedc_tree *extra = fedc_tree_new(p); /* c/<param>@clients; start/<param> is bound by local training */
    fedc_tree_set_tree(p, extra, "c", fedc_tree_broadcast(p, server_grads));
    fedc_local_training how = {.objective = corrected, .extra = extra, .opt_state = fedc__mime_client_opt_state(r),
                               .frozen_opt_state = true};
    st = fedc_program_status(p);
    if (!st) st = fedc_round_local_training(r, &how, out);
    fedc_program_destroy(corrected);
    return st;
}

fedc_status fedc__mime_round_with(fedc_round *r, const fedc_program *objective, fedc_tree **diagnostics) {
    fedc_tree *grads = NULL, *trained = NULL;
    fedc_status st = fedc__mime_check(r);
    if (!st) st = fedc__mime_server_grads(r, objective, &grads);
    if (!st) st = fedc__mime_client_training(r, objective, grads, &trained);
    if (st) return st;
    fedc_tree *delta = fedc__mime_clip(r, fedc_tree_subtree(r->p, trained, "delta"), 0, diagnostics);
    return fedc__mime_finish(r, grads, delta, trained);
}

static fedc_status mime_round(fedc_round *r) { return fedc__mime_on_model(r, fedc__mime_round_with); }

const fedc_algorithm_def fedc_algorithm_mime = {
    .name = "mime",
    .summary = "Mime: the client optimizer's server-kept state and the cohort's full gradient as a control "
               "variate on every local step",
    .hparams = hparams,
    .nhparams = 1,
    .server_init = fedc__mime_server_init,
    .round = mime_round,
};
