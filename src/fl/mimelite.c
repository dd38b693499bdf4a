/* MimeLite (Karimireddy et al. 2020; FedJAX's fedjax/algorithms/mime_lite.py):
 * Mime without the control variate. The clients step with the base optimizer
 * (fedc's client optimizer) on their plain gradient, applying the server's
 * optimizer state without updating it; the server moves by the mean delta and
 * advances the state with the cohort's full gradient at its params:
 *
 *     each client i:  w = x
 *         for each batch b:  w = base_opt.apply(g_b(w), s, w)            (s frozen)
 *         delta_i = clip(x - w, client_delta_clip_norm)                  (0: no clip)
 *     c = weighted_mean_i(mean gradient of client i's batches at x)
 *     x = x - server_learning_rate * weighted_mean(delta_i, |data_i|)
 *     s = base_opt.apply(c, s, x).state
 *
 * The shared pieces are Mime's (src/fl/mime.c, fl/mime.h). */
#include <math.h>

#include "fl/mime.h"

static const fedc_hparam_def hparams[] = {
    {"server_learning_rate", 1.0, 0, 1e6, "the server's step: params -= server_learning_rate * mean client delta"},
    {"client_delta_clip_norm", 0, 0, INFINITY, "clip each client's delta to this global L2 norm (0: no clipping)"},
};

fedc_status fedc__mimelite_round_with(fedc_round *r, const fedc_program *objective, fedc_tree **diagnostics) {
    fedc_tree *trained = NULL, *grads = NULL;
    fedc_status st = fedc__mime_check(r);
    fedc_local_training how = {.objective = objective, .opt_state = st ? NULL : fedc__mime_client_opt_state(r),
                               .frozen_opt_state = true};
    if (!st) st = fedc_program_status(r->p);
    if (!st) st = fedc_round_local_training(r, &how, &trained);
    if (st) return st;
    double clip = fedc_round_hparam(r, "client_delta_clip_norm");
    fedc_tree *delta = fedc__mime_clip(r, fedc_tree_subtree(r->p, trained, "delta"), clip, diagnostics);
    st = fedc__mime_server_grads(r, objective, &grads);
    return st ? st : fedc__mime_finish(r, grads, delta, trained);
}

static fedc_status mimelite_round(fedc_round *r) { return fedc__mime_on_model(r, fedc__mimelite_round_with); }

const fedc_algorithm_def fedc_algorithm_mimelite = {
    .name = "mimelite",
    .summary = "MimeLite: local steps with the client optimizer's server-kept state; the server advances it "
               "with the cohort's full gradient",
    .hparams = hparams,
    .nhparams = 2,
    .server_init = fedc__mime_server_init,
    .round = mimelite_round,
};
