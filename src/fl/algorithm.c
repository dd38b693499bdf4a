/* Algorithms by name, and the dispatch from an algorithm to its round builder. */
#include <string.h>

#include "fl/fl.h"

static const char *const names[FEDC_ALG_COUNT] = {"fedsgd", "fedavg", "fedprox"};

const char *fedc_algorithm_name(fedc_algorithm_kind kind) {
    return (unsigned)kind < FEDC_ALG_COUNT ? names[kind] : "?";
}

fedc_status fedc_algorithm_parse(const char *name, fedc_algorithm_kind *out) {
    for (int k = 0; k < FEDC_ALG_COUNT; k++) {
        if (strcmp(name, names[k]) == 0) {
            *out = (fedc_algorithm_kind)k;
            return FEDC_OK;
        }
    }
    return fedc_error(FEDC_EINVAL, "unknown algorithm \"%s\" (use fedsgd, fedavg or fedprox; FedAdam, FedYogi, "
                      "FedAdagrad and FedAvgM are fedavg with --server-opt adam|yogi|adagrad|momentum)", name);
}

static fedc_status check(const fedc_model *m, const fedc_algorithm *a) {
    if (a->batch_size < 1) return fedc_error(FEDC_EINVAL, "%s: batch size %lld < 1", names[a->kind], (long long)a->batch_size);
    if (a->max_steps < 1) return fedc_error(FEDC_EINVAL, "%s: max steps %lld < 1", names[a->kind], (long long)a->max_steps);
    if (a->kind == FEDC_ALG_FEDPROX && !(a->prox_mu >= 0))
        return fedc_error(FEDC_EINVAL, "fedprox: mu must be >= 0, got %g", a->prox_mu);
    if (fedc_model_num_params(m) > FEDC__FL_MAX_PARAMS)
        return fedc_error(FEDC_EUNSUPPORTED, "%s: the model has more than %d parameter tensors", names[a->kind],
                          FEDC__FL_MAX_PARAMS);
    return FEDC_OK;
}

fedc_status fedc_algorithm_round(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    *out = NULL;
    if ((unsigned)a->kind >= FEDC_ALG_COUNT) return fedc_error(FEDC_EINVAL, "unknown algorithm %d", (int)a->kind);
    fedc_status st = check(m, a);
    if (st) return st;
    return a->kind == FEDC_ALG_FEDSGD ? fedc__fedsgd_round(m, a, out) : fedc__fedavg_round(m, a, out);
}
