/* backend.h — how the runtime gets clients run in parallel (internal).
 *
 * Every process of a run executes the whole program; a map's clients are split
 * among the processes (ranks) by leaves of the aggregations' tree (split.h), and
 * each process runs its clients on its own worker threads. The cohort runner
 * (src/exec/cohort.c) commits its clients' results in client order into the
 * aggregations' trees; the backend then joins the ranks' work: it agrees on
 * failures, gives every rank the other ranks' clients' stored results, and
 * completes the aggregations from the ranks' partial sums.
 *
 * Backends: threads (one process: nothing to join; backend_threads.c) and MPI
 * (backend_mpi.c, when fedc is built with MPI). Results are the same bits with
 * either, for any number of threads and ranks, because the aggregations' trees fix
 * the order of every sum by client index alone. */
#ifndef FEDC_EXEC_BACKEND_H
#define FEDC_EXEC_BACKEND_H

#include "exec/exec.h"
#include "exec/split.h"

typedef struct fedc__backend fedc__backend;

struct fedc__backend {
    const char *name;
    int workers; /* tasks may use per-worker state indexed by the worker argument */
    int rank, ranks;
    /* Runs task(ctx, i, worker) for every i in [0, n) on this process's workers;
     * returns when all are done. Indices are started in increasing order. */
    void (*run)(fedc__backend *b, int64_t n, fedc_pool_task task, void *ctx);
    /* Every rank passes its status; every rank gets the lowest failing rank's
     * status and message (FEDC_OK when none failed). */
    fedc_status (*agree)(fedc__backend *b, fedc_status st);
    /* data holds s->clients items of `bytes` each, this rank's clients' filled in
     * (split s); fills in the other ranks' clients'. */
    fedc_status (*allgather)(fedc__backend *b, void *data, size_t bytes, const fedc__split *s);
    /* Completes aggregations into which each rank added its block (split s):
     * the same result, bitwise, on every rank. An aggregation up to the groups
     * under a split by group is ended by each group's rank, and sent on. */
    fedc_status (*combine)(fedc__backend *b, fedc__agg *const *aggs, int n, const fedc__split *s);
    void (*destroy)(fedc__backend *b);
};

/* The threads backend with `workers` threads (the calling thread is one of them). */
fedc_status fedc__backend_threads(fedc__backend **out, int workers);
/* The MPI backend over every rank of the job (fedc_mpi_init), `workers` threads
 * each; FEDC_EUNSUPPORTED when fedc is built without MPI. */
fedc_status fedc__backend_mpi(fedc__backend **out, int workers);

static inline void fedc__backend_destroy(fedc__backend *b) {
    if (b) b->destroy(b);
}

#endif
