/* FedProx (Li et al. 2020): FedAvg whose clients minimise their loss plus
 * mu/2 ||w - w_server||^2, which keeps heterogeneous clients near the server's
 * model. The proximal term is added to the client's objective (src/fl/round.c);
 * the round is FedAvg's. */
#include "fl/fl.h"

static fedc_status fedprox_round(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    if (!(a->prox_mu >= 0)) return fedc_error(FEDC_EINVAL, "fedprox: mu must be >= 0, got %g", a->prox_mu);
    return fedc__fedavg_round(m, a, out);
}

const fedc_algorithm_def fedc_algorithm_fedprox = {
    .name = "fedprox",
    .summary = "FedProx: FedAvg with mu/2 ||w - w_server||^2 added to each client's loss (--prox-mu)",
    .round = fedprox_round,
};
