/* The fixed plan of the deployment's harnesses (fuzz_plan.c, fuzz_client_answer.c):
 * HypCluster (2 clusters) on the heart model with batches of 4 and 2 steps, with
 * its warm start (k-means++ on 3 clients), so that the warm_start and
 * warm_phase lines of plan.txt and a task of the warm start are reached; its
 * server state zeros. Written to `dir` and read back. */
#ifndef FEDC_FUZZ_PLAN_BASE_H
#define FEDC_FUZZ_PLAN_BASE_H

#include <string.h>

#include "deploy/deploy.h"

static inline fedc_plan *fuzz_plan_base(const char *dir) {
    fedc_model *m = NULL;
    fedc_algorithm a = {.def = &fedc_algorithm_hypcluster, .batch_size = 4, .max_steps = 2};
    a.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.1);
    a.server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1);
    fedc_program *round = NULL, *warm = NULL;
    if (fedc_model_create(&m, "heart", NULL) || fedc_algorithm_round(m, &a, &round) ||
        fedc_algorithm_warm_start(m, &a, 3, &warm) || !warm)
        __builtin_trap();
    static float zeros[64];
    fedc_tensor_entry t[64];
    int n = 0;
    for (int i = 0; i < fedc_program_num_inputs(round); i++) {
        const char *name = fedc_program_input_name(round, i);
        if (!strncmp(name, "server/", 7)) t[n++] = (fedc_tensor_entry){name, fedc_value_type(round, fedc_program_input(round, i)), zeros};
    }
    fedc__plan_setting s[1] = {{"seed", "0"}};
    fedc_plan *base = NULL;
    if (fedc__plan_write(dir, round, NULL, warm, 3, NULL, s, 1, t, n) || fedc_plan_read(dir, &base)) __builtin_trap();
    fedc_program_destroy(round);
    fedc_program_destroy(warm);
    fedc_model_destroy(m);
    return base;
}

#endif
