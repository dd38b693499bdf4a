/* Asynchronous aggregation: FedBuff (Nguyen et al., AISTATS 2022, "Federated
 * Learning with Buffered Asynchronous Aggregation") and FedAsync (Xie et al. 2019,
 * "Asynchronous Federated Optimization"), as FLSim implements them
 * (flsim/optimizers/async_aggregators.py, flsim/utils/async_trainer/).
 *
 * Up to C clients (--clients-per-round) train at once, each on the model version
 * it was given; the simulation (src/fl/train_async.c) orders their reports by the
 * virtual clock. A round program is one server step on the reports it takes:
 *
 *     FedBuff, K reports (--set buffer=K), report i of staleness τ_i (server steps
 *     since its model version), Δ_i = start_i - w_i, example weight e_i:
 *         normalize=0 (FLSim's WEIGHTED_AVERAGE):  Δ = Σ e_i s(τ_i) Δ_i / Σ e_i s(τ_i)
 *         normalize=1 (the paper's 1/K Σ s Δ):     Δ = Σ e_i s(τ_i) Δ_i / Σ e_i
 *         w, opt = server_opt(w, Δ, opt)
 *     FedAsync, one report:  w = w - α s(τ) (w - w_client)
 *
 * s is FLSim's StalenessWeight: constant 1, polynomial 1 / (1 + τ)^a, or the
 * FedAsync paper's hinge (1 for τ <= b, else 1 / (a (τ - b) + 1)), each divided by
 * its value at avg_staleness (FLSim's normalisation; its default is 1, fedc's 0, so
 * that a fresh report has weight 1 and FedBuff with K = C and no latency is FedAvg,
 * bit for bit). */
#include <math.h>

#include "fl/fedbuff.h"

double fedc__staleness_weight(int kind, double a, double b, double avg_staleness, double staleness) {
    if (!(staleness >= 0) || !(avg_staleness >= 0)) return NAN;
    double raw, avg;
    switch (kind) {
    case FEDC_STALENESS_CONSTANT: return 1;
    case FEDC_STALENESS_POLYNOMIAL:
        raw = 1 / pow(1 + staleness, a);
        avg = 1 / pow(1 + avg_staleness, a);
        break;
    case FEDC_STALENESS_HINGE:
        raw = staleness <= b ? 1 : 1 / (a * (staleness - b) + 1);
        avg = avg_staleness <= b ? 1 : 1 / (a * (avg_staleness - b) + 1);
        break;
    default: return NAN;
    }
    return raw / avg;
}

/* The hyperparameters both share, first; FedBuff's two after. */
#define STALENESS_HPARAMS(default_kind)                                                                              \
    {"staleness", default_kind, 0, 2, "the staleness weight s(τ): 0 constant, 1 polynomial 1/(1+τ)^exponent, "       \
                                      "2 hinge (1 for τ <= hinge_b, else 1/(hinge_a (τ - hinge_b) + 1))"},           \
    {"exponent", 0.5, 0, 1, "the polynomial's exponent a (FLSim's, in [0, 1]; FedBuff's 0.5)"},                      \
    {"hinge_a", 10, 0, 1e6, "the hinge's slope a (FedAsync's 10)"},                                                  \
    {"hinge_b", 4, 0, 1e9, "the hinge's staleness b before which s = 1 (FedAsync's 4)"},                             \
    {"avg_staleness", 0, 0, 1e9, "s(τ) is divided by s(avg_staleness) (FLSim's normalisation; FLSim's default 1)"}

static const fedc_hparam_def fedbuff_hparams[] = {
    STALENESS_HPARAMS(1),
    {"buffer", 0, 0, 1 << 20, "K: the reports a server step takes (0: --clients-per-round, the clients in flight)"},
    {"normalize", 0, 0, 1, "the buffer divided by 0: the sum of the weights e_i s(τ_i) (FLSim's); "
                           "1: the sum of the example weights e_i (the paper's 1/K with --weighting uniform)"},
};

static const fedc_hparam_def fedasync_hparams[] = {
    STALENESS_HPARAMS(1),
    {"alpha", 0.6, 0, 1, "α: the model moves α s(τ) of the way to the client's"},
};

double fedc__staleness_of(const fedc_algorithm *a, double staleness) {
    int kind = (int)fedc_algorithm_hparam(a, "staleness");
    double slope = fedc_algorithm_hparam(a, kind == FEDC_STALENESS_HINGE ? "hinge_a" : "exponent");
    return fedc__staleness_weight(kind, slope, fedc_algorithm_hparam(a, "hinge_b"),
                                  fedc_algorithm_hparam(a, "avg_staleness"), staleness);
}

bool fedc__algorithm_is_async(const fedc_algorithm *a) {
    const fedc_algorithm_def *d = fedc__algorithm_def(a);
    return d == &fedc_algorithm_fedbuff || d == &fedc_algorithm_fedasync;
}

/* Local training from each report's own model version: delta/ (start - w_client),
 * examples, loss; and its staleness weight s, f32[] placed at `weight_at`
 * (@clients: FedBuff's, one per report; @server: FedAsync's, its one report's). */
static fedc_status async_training(fedc_round *r, fedc_placement weight_at, fedc_tree **out, fedc_value *s,
                                  fedc_tree **start) {
    fedc_program *p = r->p;
    *start = fedc_model_input_tree(r->model, p, FEDC_ASYNC_START, FEDC_CLIENTS);
    *s = fedc_input(p, FEDC_ASYNC_WEIGHT, fedc__placed(fedc_type_scalar(FEDC_F32), weight_at));
    fedc_local_training how = {.start = *start};
    fedc_status st = fedc_program_status(p);
    return st ? st : fedc_round_local_training(r, &how, out);
}

static fedc_status fedbuff_round(fedc_round *r) {
    fedc_program *p = r->p;
    fedc_tree *out, *start;
    fedc_value s;
    bool by_examples = fedc_round_hparam(r, "normalize") == 1;
    fedc_status st = async_training(r, FEDC_CLIENTS, &out, &s, &start);
    if (st) return st;
    fedc_value n = fedc_tree_get(p, out, "examples"), e = fedc_round_weight(r, n);
    fedc_tree *delta = fedc_tree_subtree(p, out, "delta");
    fedc_tree *next = by_examples ? fedc_round_server_opt(r, fedc_tree_scale(p, delta, s), e)
                                  : fedc_round_server_opt(r, delta, fedc_mul(p, e, s));
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), n);
}

static fedc_optimizer fedasync_optimizer(const fedc_algorithm *a) {
    return fedc_optimizer_defaults(FEDC_OPT_SGD, fedc_algorithm_hparam(a, "alpha"));
}

static fedc_status fedasync_server_init(const fedc_model *m, const fedc_algorithm *a, fedc_program *p,
                                        const fedc_tree *params, fedc_tree **state) {
    (void)m;
    fedc_optimizer sgd = fedasync_optimizer(a);
    *state = fedc__server_state(p, params, &sgd);
    return fedc_program_status(p);
}

/* w - α s (w - w_client): SGD of rate α on s (w - w_client), the client's model
 * being start - delta. w is the model when the report comes, which a deployed
 * client, that trained on an earlier version, does not have; so the client sends
 * its model and the server mixes it in (w and s @server): a deployed server
 * runs that step as the report comes, with the model then (src/deploy/
 * server_async.c). A step takes one report, whose mean is itself bit for bit
 * (1 × x, then × 1), so mixing on the server has the bits of mixing on the client.
 * An aggregator (--dp-clip, --robust-zero, --compress, an attack) acts on each
 * client's own update, so with one the client computes s (w - w_client) from the
 * model broadcast at the arrival, which only the simulation can give it. */
static fedc_status fedasync_round(fedc_round *r) {
    fedc_program *p = r->p;
    fedc_tree *out, *start;
    fedc_value s;
    if (isnan(fedc_round_hparam(r, "alpha"))) return fedc_program_status(p);
    bool on_clients = fedc_aggregation_active(&r->alg->aggregation);
    fedc_status st = async_training(r, on_clients ? FEDC_CLIENTS : FEDC_SERVER, &out, &s, &start);
    if (st) return st;
    fedc_tree *w = fedc_tree_subtree(p, r->server, "params");
    fedc_tree *client = fedc_tree_sub(p, start, fedc_tree_subtree(p, out, "delta"));
    fedc_algorithm alg = *r->alg;
    alg.server_opt = fedasync_optimizer(r->alg);
    fedc_round fedasync = *r;
    fedasync.alg = &alg;
    fedc_value ones = fedc_full(p, fedc__placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), 1);
    fedc_value n = fedc_tree_get(p, out, "examples");
    fedc_tree *next;
    if (on_clients) {
        fedc_tree *toward = fedc_tree_scale(p, fedc_tree_sub(p, fedc_tree_broadcast(p, w), client), s);
        next = fedc_round_server_opt(&fedasync, toward, ones);
    } else {
        fedc_tree *reported = fedc_tree_weighted_mean(p, client, ones);
        next = fedc__server_step(&fedasync, fedc_tree_scale(p, fedc_tree_sub(p, w, reported), s));
    }
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), n);
}

const fedc_algorithm_def fedc_algorithm_fedbuff = {
    .name = "fedbuff",
    .summary = "FedBuff: asynchronous; up to C clients in flight, each report's delta weighted by its staleness into "
               "a buffer, a server optimizer step every K reports",
    .hparams = fedbuff_hparams,
    .nhparams = sizeof fedbuff_hparams / sizeof fedbuff_hparams[0],
    .round = fedbuff_round,
};

const fedc_algorithm_def fedc_algorithm_fedasync = {
    .name = "fedasync",
    .summary = "FedAsync: asynchronous; the model moves alpha s(staleness) of the way to each arriving client's",
    .hparams = fedasync_hparams,
    .nhparams = sizeof fedasync_hparams / sizeof fedasync_hparams[0],
    .server_init = fedasync_server_init,
    .round = fedasync_round,
};
