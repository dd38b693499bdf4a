/* backend.h — how the runtime gets clients run in parallel (internal).
 *
 * The cohort runner asks a backend to run a task for every client index; the task
 * itself commits results in client order (src/exec/cohort.c), so a backend only
 * decides where clients run, never the order results are combined in. The threads
 * backend runs clients on a pool of worker threads of this process. An MPI backend
 * (a later issue) will run a contiguous block of clients on each rank and combine
 * the ranks' partial aggregates in rank order, which is client order. */
#ifndef FEDC_EXEC_BACKEND_H
#define FEDC_EXEC_BACKEND_H

#include "fedc/core.h"

typedef struct fedc__backend fedc__backend;

struct fedc__backend {
    const char *name;
    int workers; /* tasks may use per-worker state indexed by the worker argument */
    /* Runs task(ctx, i, worker) for every i in [0, n); returns when all are done.
     * Indices are started in increasing order. */
    void (*run)(fedc__backend *b, int64_t n, fedc_pool_task task, void *ctx);
    void (*destroy)(fedc__backend *b);
};

/* The threads backend with `workers` threads (the calling thread is one of them). */
fedc_status fedc__backend_threads(fedc__backend **out, int workers);

static inline void fedc__backend_destroy(fedc__backend *b) {
    if (b) b->destroy(b);
}

#endif
