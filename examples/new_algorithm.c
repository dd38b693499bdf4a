/*
 * examples/new_algorithm.c — fl.h's worked example: an algorithm of one's own,
 * registered, then trained by name as `fedc train --algorithm` would: FedAvg whose
 * server moves `alpha` times the clients' mean delta (alpha = 1 is FedAvg).
 *
 *     ./example_new_algorithm           train on the heart-disease silos
 *     ./example_new_algorithm --check   and exit non-zero unless alpha = 1 gives
 *                                       FedAvg's result exactly (run by the tests;
 *                                       77, skipped, without the data)
 *
 * The silos are $FEDC_DATA/heart-disease-uci, FEDC_DATA being ../shared/data
 * unless set (the tests set it to a directory with the real silos or small ones).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fedc/fedc.h"

static const fedc_hparam_def hparams[] = {{"alpha", 1.0, 0, 10, "server step, times the mean delta"}};

static fedc_status damped_round(fedc_round *r) {
    fedc_program *p = r->p;
    fedc_tree *w = fedc_tree_subtree(p, r->server, "params"), *out; /* out: delta/, examples, loss */
    fedc_status st = fedc_round_local_training(r, NULL, &out);
    if (st) return st;
    fedc_value n = fedc_tree_get(p, out, "examples");
    fedc_tree *delta = fedc_tree_weighted_mean(p, fedc_tree_subtree(p, out, "delta"), fedc_round_weight(r, n));
    fedc_value step = fedc_scalar(p, FEDC_F32, -fedc_round_hparam(r, "alpha"));
    fedc_tree *next = fedc_tree_copy(p, r->server);
    fedc_tree_set_tree(p, next, "params", fedc_tree_axpy(p, step, delta, w)); /* w - alpha * delta */
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), n);
}

static const fedc_algorithm_def damped = {.name = "damped", .summary = "FedAvg with a server step alpha",
                                          .hparams = hparams, .nhparams = 1, .round = damped_round};

static char data[4096] = "../shared/data/heart-disease-uci";

static double train(const char *algorithm, const char *set) {
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = data, c.model = "heart", c.rounds = 5, c.clients_per_round = 4;
    c.algorithm.def = fedc_algorithm_find(algorithm), c.out_dir = "/tmp/fedc-example-new-algorithm", c.quiet = true;
    fedc_train_result r;
    if (!c.algorithm.def || (set && fedc_algorithm_set_text(&c.algorithm, set)) || fedc_train(&c, &r)) {
        fprintf(stderr, "new_algorithm: %s\n", fedc_errmsg());
        return -1;
    }
    printf("%-7s %-10s test loss %.6f, accuracy %.2f%%\n", algorithm, set ? set : "", r.test_loss, 100 * r.test_accuracy);
    return r.test_loss;
}

int main(int argc, char **argv) {
    if (getenv("FEDC_DATA")) snprintf(data, sizeof data, "%s/heart-disease-uci", getenv("FEDC_DATA"));
    if (access(data, R_OK)) return fprintf(stderr, "no heart-disease data at %s: skipped\n", data), 77;
    if (fedc_algorithm_register(&damped)) return fprintf(stderr, "new_algorithm: %s\n", fedc_errmsg()), 1;
    double fedavg = train("fedavg", NULL), same = train("damped", "alpha=1"), half = train("damped", "alpha=0.5");
    if (fedavg < 0 || same < 0 || half < 0) return 1;
    bool check = argc > 1 && !strcmp(argv[1], "--check");
    return check && !(same == fedavg && half != fedavg) ? 1 : 0;
}
