/* A server's warm start (warm.h): the plan's warm form run on a server's
 * deployment run of its own, bound to the server state, with a collection of
 * its own; the server (server.c) runs it as a round before round 1. */
#include <stdio.h>

#include "deploy/warm.h"

fedc_status fedc__warm_check(const fedc_plan *p, const fedc_server_options *o) {
    int k = fedc_plan_warm_clients(p);
    if (!fedc_plan_warm_start(p)) return FEDC_OK;
    if (o->clients_per_round != k)
        return fedc_error(FEDC_EINVAL, "server: the plan's warm start runs on %d clients (it was built with "
                          "--clients-per-round %d, fedc train's warm cohort), but --clients-per-round is %d", k, k,
                          o->clients_per_round);
    if (o->secure_agg)
        return fedc_error(FEDC_EUNSUPPORTED, "server: --secure-agg with a warm start, whose aggregations sum floats "
                          "(the clients' trained models), not words that secure aggregation can hide");
    return FEDC_OK;
}

fedc_status fedc__warm_create(fedc__warm **out, const fedc_plan *p, const fedc_server_options *o, void *const *state,
                              const float *population) {
    *out = NULL;
    fedc__warm *w = fedc_calloc(1, sizeof *w);
    if (!w) return fedc_error(FEDC_ENOMEM, "server: out of memory");
    const fedc_program *q = fedc_plan_warm_start(p);
    w->form = fedc_plan_warm_form(p);
    w->slots = w->commit = fedc_plan_warm_clients(p);
    fedc_status st = fedc__deployment_run_create_server(&w->run, w->form,
                                                         &(fedc_exec_options){.clients = w->slots, .threads = o->threads});
    for (int i = 0; !st && i < fedc_plan_num_tensors(p); i++) { /* what it reads of the state */
        const char *name = fedc_plan_tensor(p, i).name;
        if (fedc_program_find_input(q, name) != FEDC_NONE) st = fedc_deployment_run_bind(w->run, name, state[i]);
    }
    if (!st && fedc_program_find_input(q, "meta/population") != FEDC_NONE)
        st = fedc_deployment_run_bind(w->run, "meta/population", population);
    char spill[4200];
    snprintf(spill, sizeof spill, "%s/warm.spill", o->out_dir);
    if (!st) st = fedc__collect_create(&w->collect, w->run, w->slots, w->commit, o->reorder_window, spill);
    if (st) fedc__warm_destroy(w);
    else *out = w;
    return st;
}

void fedc__warm_destroy(fedc__warm *w) {
    if (!w) return;
    fedc__collect_destroy(w->collect);
    fedc_deployment_run_destroy(w->run);
    fedc_free(w);
}
