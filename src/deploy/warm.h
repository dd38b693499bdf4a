/* warm.h — a server's warm start (internal; src/deploy/warm.c).
 *
 * An algorithm's warm start (fl.h: HypCluster's k-means++) is a first pass
 * over a cohort before round 1 whose server outputs replace server_init's. A
 * plan carries its program and form (fedc_plan_warm_form); the server runs
 * that form once, before round 1 of a fresh job, as a round of its own ("round
 * 0" in its log and metrics, -1 on the wire): on the clients fedc train's warm
 * start draws (fedc__warm_start_cohort), one slot each, with its own run and
 * collection, which exist only while it runs. Its clients load their batches
 * for round UINT32_MAX, as fedc train loads them, so the state it leaves has
 * the simulation's bits. */
#ifndef FEDC_DEPLOY_WARM_H
#define FEDC_DEPLOY_WARM_H

#include "deploy/collect.h"
#include "deploy/deploy.h"
#include "fl/train.h" /* fedc__warm_start_cohort: fedc train's warm cohort */

enum { FEDC__WARM_ROUND = -1 }; /* a warm task's round, on the wire */

typedef struct fedc__warm {
    const fedc_deployment_form *form;
    fedc_deployment_run *run;
    fedc__collect *collect;
    int slots, commit; /* the cohort: every slot is needed (no over-selection) */
} fedc__warm;

/* Whether the server's options can run plan p's warm start (none: yes): its
 * cohort is the round's --clients-per-round, as in fedc train, and its sums
 * are of floats, which secure aggregation does not take. */
fedc_status fedc__warm_check(const fedc_plan *p, const fedc_server_options *o);
/* The warm start's run, its inputs bound: the server state (state[i] for the
 * plan's tensor i, which its outputs are written over by the caller) and
 * meta/population; its collection spills to out_dir/warm.spill. */
fedc_status fedc__warm_create(fedc__warm **out, const fedc_plan *p, const fedc_server_options *o, void *const *state,
                              const float *population);
void fedc__warm_destroy(fedc__warm *w); /* safe on NULL */

#endif
