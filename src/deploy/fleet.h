/* fleet.h — what the clients of one process share (internal; src/deploy/fleet.c).
 *
 * A fleet runs many clients on threads of one process. Each keeps its own
 * connection and its state (a few small fields, and its client/<leaf> state
 * when the plan has one), but what is as big as the model is shared:
 *
 *   - the trainers: `seats` threads run the clients' client_work, each on its
 *     executors (one per exchange, compiled on first use and reused by every
 *     client; an executor's results depend on its inputs only, so the bits are
 *     those of an executor of the client's own), the lowest waiting (round,
 *     exchange, slot) first, the order in which the server adds the reports;
 *     the kernels' stack is then the seats' threads', not every client's;
 *   - the values a task carries: the broadcast values are the same for every
 *     client of an exchange, so one copy of each is kept, counted by reference,
 *     and compared byte for byte before it is shared.
 *
 * So a fleet's memory is the model times the seats (and the reports waiting
 * for the server's go) plus a small part per client. */
#ifndef FEDC_DEPLOY_FLEET_H
#define FEDC_DEPLOY_FLEET_H

#include "deploy/deploy.h"

typedef struct fedc__trainers fedc__trainers;
/* A client's work on a seat's executor of its exchange (every input bound by
 * it: the executor ran another client's work before). */
typedef fedc_status (*fedc__trainer_work)(void *arg, fedc_executor *ex);

/* Seats for clients of form f (seats >= 1, each a thread of its own), each
 * executor on `threads` threads. */
fedc_status fedc__trainers_create(fedc__trainers **out, const fedc_deployment_form *f, int seats, int threads);
void fedc__trainers_destroy(fedc__trainers *t); /* safe on NULL */
/* Runs fn(arg, ex) on a seat once one is free (the lowest key waiting first)
 * and returns its status, with its message. */
fedc_status fedc__trainers_run(fedc__trainers *t, int64_t round, int exchange, int64_t slot, fedc__trainer_work fn,
                               void *arg);

typedef struct fedc__shared fedc__shared;
typedef struct fedc__shared_value fedc__shared_value;

fedc_status fedc__shared_create(fedc__shared **out);
void fedc__shared_destroy(fedc__shared *s); /* safe on NULL; every value released first */
/* A value named `name` of `bytes` bytes equal to `data`: the one kept if there
 * is one, else a copy; released with fedc__shared_release. */
fedc_status fedc__shared_take(fedc__shared *s, const char *name, const void *data, size_t bytes, fedc__shared_value **out);
const void *fedc__shared_data(const fedc__shared_value *v);
void fedc__shared_release(fedc__shared *s, fedc__shared_value *v); /* safe on NULL */

/* What the process's clients share: the trainers' seats (default: the cores,
 * at most a seat a client), the warm start's if the plan has one, and one copy
 * of each broadcast value. */
typedef struct fedc__commons {
    fedc__trainers *trainers, *warm_trainers;
    fedc__shared *shared;
} fedc__commons;

fedc_status fedc__commons_create(fedc__commons *k, const fedc_client_options *o, const fedc_plan *plan, int clients);
void fedc__commons_destroy(fedc__commons *k);

#endif
