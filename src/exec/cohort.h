/* cohort.h — running a map's body over the cohort (internal). */
#ifndef FEDC_EXEC_COHORT_H
#define FEDC_EXEC_COHORT_H

#include "exec/backend.h"
#include "exec/exec.h"

typedef struct fedc__cohort fedc__cohort;

/* Where an aggregation reads one client's value: a result of the map (result >= 0),
 * or memory outside it (client i at base + i * stride). base NULL and result < 0:
 * no value (the weight of sum and mean). */
typedef struct fedc__source {
    int result;
    const void *base;
    size_t stride;
} fedc__source;

/* One run of a map over the cohort. */
typedef struct fedc__map_job {
    int clients;
    int nlocal;               /* the clients this process runs, in increasing order */
    const int *local;
    int nargs;
    const void *const *args;  /* client i's argument j at args[j] + i * arg_stride[j] */
    const size_t *arg_stride;
    void *const *dest;        /* per result: where client i's copy goes (dest + i * bytes), or NULL */
    int naggs;                /* aggregations fed by this map */
    fedc__agg *const *aggs;
    const fedc__node *const *agg_nodes;
    void *const *agg_out;
    const fedc__source *x_src, *w_src;
    bool check_finite;
    bool drop_failed;         /* FEDC_DROP_CLIENT */
    uint8_t *dropped;         /* set for the clients left out */
    const char *const *client_ids;
    const uint8_t *absent;    /* per client: not in the cohort (not run, left out; dropped[] has it set) */
    const double *work;       /* per client: how long its body runs (largest first), or NULL: client order */
    const uint8_t *arg_by_group; /* per argument: client i reads its group's copy, client_group[i] (NULL: none) */
    const int *client_group;
} fedc__map_job;

/* At most this many bytes of results wait for their turn to commit beyond the two
 * slots per worker, when clients start largest first (64 MiB: for the EMNIST CNN's
 * 4.8 MB of results, chunks of 13 clients). A variable so tests can shrink it. */
extern size_t fedc__cohort_reorder_bytes;

fedc_status fedc__cohort_create(fedc__cohort **out, const fedc_program *body, int workers,
                                const fedc_exec_options *options);
void fedc__cohort_destroy(fedc__cohort *c);
/* The body executors of the workers (for profiles). */
fedc_executor *const *fedc__cohort_executors(const fedc__cohort *c, int *n);
/* Runs the job's local clients, adding into its aggregations (begun here, their
 * last leaves closed, left for the caller to complete); on a client's failure
 * (FAIL_ROUND) the message names the client. */
fedc_status fedc__cohort_run(fedc__cohort *c, fedc__backend *backend, const fedc__map_job *job);

#endif
