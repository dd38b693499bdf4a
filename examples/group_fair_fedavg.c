/*
 * examples/group_fair_fedavg.c — a hierarchical algorithm of one's own in a dozen
 * lines (docs/federated.md, "Hierarchies"): FedAvg in which every group counts the
 * same, however many clients or examples it has. Each group (an edge server, a
 * region, a hospital network) averages its clients' updates weighted by their
 * examples; the server averages the groups' updates uniformly, so one large group
 * cannot outvote the others.
 *
 *     ./example_group_fair_fedavg           train on the heart-disease silos in 2 groups
 *     ./example_group_fair_fedavg --check   and exit non-zero unless one group gives
 *                                           FedAvg's result exactly and two groups of
 *                                           unequal size do not (run by the tests; 77,
 *                                           skipped, without the data)
 *
 * The silos are $FEDC_DATA/heart-disease-uci, FEDC_DATA being ../shared/data
 * unless set (the tests set it to a directory with the real silos or small ones).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fedc/fedc.h"

static fedc_status group_fair_round(fedc_round *r) {
    fedc_program *p = r->p;
    fedc_tree *w = fedc_tree_subtree(p, r->server, "params"), *out; /* out: delta/, examples, loss @clients */
    fedc_local_training from_groups = {.start = fedc_tree_broadcast_down(p, fedc_tree_broadcast_down(p, w))};
    fedc_status st = fedc_round_local_training(r, &from_groups, &out);
    if (st) return st;
    fedc_value n = fedc_tree_get(p, out, "examples");
    fedc_tree *group_delta = fedc_tree_weighted_mean_up(p, fedc_tree_subtree(p, out, "delta"), fedc_round_weight(r, n));
    fedc_tree *delta = fedc_tree_mean_up(p, group_delta); /* @groups -> @server, each group the same */
    fedc_tree *next = fedc_tree_copy(p, r->server);
    fedc_tree_set_tree(p, next, "params", fedc_tree_sub(p, w, delta));
    return fedc_round_finish(r, next, NULL, fedc_tree_get(p, out, "loss"), n);
}

static const fedc_algorithm_def group_fair = {.name = "group_fair_fedavg",
                                              .summary = "FedAvg in which every group counts the same",
                                              .round = group_fair_round,
                                              .grouped = true};

static char data[4096] = "../shared/data/heart-disease-uci";

/* The test loss after 5 rounds of `algorithm` over the 4 silos in `groups` groups
 * (contiguous: groups 2 puts 2 silos in each); -1 on an error. */
static double train(const char *algorithm, int groups) {
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = data, c.model = "heart", c.rounds = 5, c.clients_per_round = 4, c.groups = groups;
    c.algorithm.def = fedc_algorithm_find(algorithm), c.out_dir = "/tmp/fedc-example-group-fair", c.quiet = true;
    fedc_train_result res;
    if (!c.algorithm.def || fedc_train(&c, &res)) {
        fprintf(stderr, "group_fair_fedavg: %s\n", fedc_errmsg());
        return -1;
    }
    char how[32] = "no groups:";
    if (groups) snprintf(how, sizeof how, "%d group%s", groups, groups == 1 ? ": " : "s:");
    printf("%-17s %-10s test loss %.6f, accuracy %.2f%%\n", algorithm, how, res.test_loss, 100 * res.test_accuracy);
    return res.test_loss;
}

int main(int argc, char **argv) {
    if (getenv("FEDC_DATA")) snprintf(data, sizeof data, "%s/heart-disease-uci", getenv("FEDC_DATA"));
    if (access(data, R_OK)) return fprintf(stderr, "no heart-disease data at %s: skipped\n", data), 77;
    if (fedc_algorithm_register(&group_fair)) return fprintf(stderr, "group_fair_fedavg: %s\n", fedc_errmsg()), 1;
    double fedavg = train("fedavg", 0), one = train("group_fair_fedavg", 1), two = train("group_fair_fedavg", 2);
    if (fedavg < 0 || one < 0 || two < 0) return 1;
    bool check = argc > 1 && !strcmp(argv[1], "--check");
    return check && !(one == fedavg && two != fedavg) ? 1 : 0;
}
