/* fedbuff.h — asynchronous aggregation (FedBuff, FedAsync: src/fl/fedbuff.c),
 * what their round programs and the simulation that feeds them share (internal). */
#ifndef FEDC_FL_FEDBUFF_H
#define FEDC_FL_FEDBUFF_H

#include <stdio.h>

#include "fl/fl.h"

/* The round program's two inputs of an asynchronous step, besides a round's:
 * each report's model version, async/start/<param>@clients, and its staleness
 * weight s(τ), async/staleness_weight: f32[]@clients, or f32[]@server where the
 * server applies it (FedAsync's, of the step's one report, mixed in on the
 * server: src/fl/fedbuff.c). */
#define FEDC_ASYNC_START "async/start"
#define FEDC_ASYNC_WEIGHT "async/staleness_weight"

enum { FEDC_STALENESS_CONSTANT = 0, FEDC_STALENESS_POLYNOMIAL = 1, FEDC_STALENESS_HINGE = 2 };

/* FLSim's StalenessWeight.weight(staleness): kind's raw weight at `staleness`
 * divided by its raw weight at avg_staleness; a: the polynomial's exponent or the
 * hinge's slope, b: the hinge's knee. NAN for a negative staleness or an unknown
 * kind. */
FEDC_INTERNAL_API double fedc__staleness_weight(int kind, double a, double b, double avg_staleness, double staleness);
/* The same under a's hyperparameters (staleness, exponent, hinge_a, hinge_b, avg_staleness). */
FEDC_INTERNAL_API double fedc__staleness_of(const fedc_algorithm *a, double staleness);
/* Whether a is fedbuff or fedasync. */
FEDC_INTERNAL_API bool fedc__algorithm_is_async(const fedc_algorithm *a);
/* A line of an asynchronous run's arrival log (RUN/arrivals.jsonl, which fedc
 * train --replay reads: src/fl/train_replay.c), flushed; false if it could not
 * be written. The simulation's and the deployed server's (src/deploy/server_async.c). */
FEDC_INTERNAL_API bool fedc__arrival_write(FILE *f, int step, int64_t client, uint64_t dispatch, int version, double time);
/* A resumed run's log cut back to its first `steps` steps (the killed run's
 * later lines go; a missing file is an empty log); what is kept: its lines,
 * the last one's time and the highest dispatch. */
typedef struct fedc_arrivals_kept {
    int64_t lines;
    double time;
    uint64_t max_dispatch;
} fedc_arrivals_kept;
FEDC_INTERNAL_API fedc_status fedc__arrivals_cut_back(const char *path, int steps, fedc_arrivals_kept *kept);

#endif
