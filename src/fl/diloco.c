/* DiLoCo (Douillard et al. 2023, "DiLoCo: Distributed Low-Communication Training
 * of Language Models"), as MaxText writes it on DrJAX
 * (src/maxtext/trainers/diloco/diloco.py, utils/spmd_diloco_sync.py): each replica
 * (a client) runs H inner steps of its own optimizer, AdamW, whose state it keeps
 * from one synchronisation to the next; the server takes an outer Nesterov step on
 * the replicas' mean delta and every replica restarts from the new model:
 *
 *     each client i of the cohort, from the server's w and its own state s_i:
 *         for H steps: w_i, s_i = adamw(w_i, grad loss(w_i, b), s_i)   (s_i kept: client state)
 *     w, m = nesterov_sgd(w, mean_i (w - w_i), m)                      (outer_lr, outer_momentum)
 *
 * H is the number of local steps (`fedc train --steps`); the inner optimizer is the
 * client optimizer (--client-opt adam, --client-lr) with decoupled weight
 * decay `weight_decay` added as optax.adamw adds it; the outer optimizer is
 * optax.sgd(outer_lr, momentum=outer_momentum, nesterov=True), as MaxText builds
 * it, so --server-optimizer does not apply. The mean is plain (drjax.reduce_mean):
 * --weighting does not apply either. A never-seen client starts from a fresh
 * optimizer state, as every replica does at step 0. */
#include <math.h>

#include "fl/fl.h"

static const fedc_hparam_def hparams[] = {
    {"outer_lr", 0.7, 0, 1e6, "the outer Nesterov SGD's learning rate (the paper's 0.7; MaxText's default 0.3)"},
    {"outer_momentum", 0.9, 0, 1, "the outer Nesterov SGD's momentum"},
    {"weight_decay", 0.1, 0, 1e6, "the inner optimizer's decoupled weight decay (AdamW's; the paper's 0.1)"},
};

static fedc_optimizer outer_optimizer(const fedc_algorithm *a) {
    fedc_optimizer o = fedc_optimizer_defaults(FEDC_OPT_MOMENTUM, fedc_algorithm_hparam(a, "outer_lr"));
    o.momentum = fedc_algorithm_hparam(a, "outer_momentum");
    o.nesterov = true;
    return o;
}

static fedc_optimizer inner_optimizer(const fedc_algorithm *a) {
    fedc_optimizer o = a->client_opt;
    o.weight_decay = fedc_algorithm_hparam(a, "weight_decay");
    return o;
}

static fedc_status diloco_server_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p,
                                      const fedc_tree *params, fedc_tree **state) {
    (void)m;
    fedc_optimizer outer = outer_optimizer(a);
    *state = fedc__server_state(p, params, &outer);
    return fedc_program_status(p);
}

/* A replica's inner optimizer state at step 0: opt/<leaf>, as
 * fedc_optimizer_init_tree names it (mu/, nu/, count for adam). */
static fedc_status diloco_client_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p, fedc_tree **state) {
    fedc_optimizer inner = inner_optimizer(a);
    if (!fedc_optimizer_state_size(&inner, 1))
        return fedc_error(FEDC_EINVAL, "diloco: the client optimizer %s keeps no state, and DiLoCo's replicas keep "
                          "their optimizer's state across rounds: use --client-opt adam (AdamW, as the paper)",
                          fedc_optimizer_name(inner.kind));
    *state = fedc_tree_new(p);
    fedc_tree_set_tree(p, *state, "opt", fedc_optimizer_init_tree(&inner, p, fedc_model_full_tree(m, p, FEDC_LOCAL, 0)));
    return fedc_program_status(p);
}

static fedc_status diloco_round(fedc_round *r) {
    fedc_program *p = r->p;
    for (int i = 0; i < 3; i++) /* a wrapper without them fails the round, naming the one missing */
        if (isnan(fedc_round_hparam(r, hparams[i].name))) return fedc_program_status(p);
    fedc_algorithm alg = *r->alg; /* the round as DiLoCo's optimizers run it */
    alg.client_opt = inner_optimizer(r->alg);
    alg.server_opt = outer_optimizer(r->alg);
    fedc_round diloco = *r;
    diloco.alg = &alg;
    fedc_tree *out;
    fedc_local_training how = {.opt_state = fedc_tree_subtree(p, r->client, "opt")};
    fedc_status st = fedc_round_local_training(&diloco, &how, &out);
    if (st) return st;
    fedc_value ones = fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), 1);
    fedc_tree *next = fedc_round_server_opt(&diloco, fedc_tree_subtree(p, out, "delta"), ones);
    fedc_tree *client = fedc_tree_new(p);
    fedc_tree_set_tree(p, client, "opt", fedc_tree_subtree(p, out, "opt"));
    return fedc_round_finish(r, next, client, fedc_tree_get(p, out, "loss"), fedc_tree_get(p, out, "examples"));
}

const fedc_algorithm_def fedc_algorithm_diloco = {
    .name = "diloco",
    .summary = "DiLoCo: H local steps of AdamW whose state each client keeps, an outer Nesterov SGD step on the "
               "mean delta",
    .hparams = hparams,
    .nhparams = 3,
    .server_init = diloco_server_init,
    .client_init = diloco_client_init,
    .round = diloco_round,
};
