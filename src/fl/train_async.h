/* train_async.h — the simulation of an asynchronous run's state (internal): what
 * src/fl/train_async.c advances and src/fl/train_async_checkpoint.c saves. */
#ifndef FEDC_FL_TRAIN_ASYNC_H
#define FEDC_FL_TRAIN_ASYNC_H

#include "fl/train.h"

typedef struct flight {
    int64_t client;
    uint64_t dispatch; /* d: its block is d / C */
    int version, snapshot;
    double due;
} flight;

typedef struct snapshot {
    int version, refs; /* refs 0: free */
    float *params;
} snapshot;

struct train_async {
    int k, c;             /* reports a step, clients in flight */
    uint64_t dispatched;
    flight *flights;      /* [c] */
    int nflights;
    snapshot *snaps;      /* [c + 1]: every version a client in flight holds, and the current */
    int64_t *block;       /* [c]: fedc_sample_clients of block_no */
    int64_t block_no;
    float **start;        /* per parameter: k × its size, FEDC_ASYNC_START/<name> */
    float *weight;        /* [k]: s(τ), FEDC_ASYNC_WEIGHT */
    uint32_t *rounds;     /* [k]: each report's round for its batches (its block) */
    /* what a checkpoint writes: the flights as rows (client, dispatch, version,
     * due), the versions' tensor names, the counters as text */
    double *saved;        /* [4c] */
    char (*names)[32];    /* [c + 1] */
    char meta[2][32];
    FILE *arrivals;       /* RUN/arrivals.jsonl, each report as taken (src/fl/train_replay.c) */
    struct arrival *replay; /* --replay: the log's reports, in order (NULL: the clock's) */
    int64_t nreplay, next;
};

/* The snapshot of model version `version`: the one a client in flight holds
 * (*fresh false), or a free one named so, its parameters to be filled (*fresh). */
fedc_status fedc__train_async_snapshot(trainer *t, int version, int *out, bool *fresh);
/* Report f into slot `slot` of step r (src/fl/train_async.c). */
fedc_status fedc__train_async_take(trainer *t, int r, int slot, flight f);

/* The arrival log (src/fl/train_replay.c): each report appended as taken (the
 * file made, or on a resume cut back to the checkpoint's steps, on first use);
 * --replay's log read and checked whole; step r's K reports taken from it. */
fedc_status fedc__train_arrivals_log(trainer *t, int r, const flight *f);
fedc_status fedc__train_replay_load(trainer *t);
fedc_status fedc__train_replay_next(trainer *t, int r);

#endif
