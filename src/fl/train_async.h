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
};

/* The snapshot of model version `version`: the one a client in flight holds
 * (*fresh false), or a free one named so, its parameters to be filled (*fresh). */
fedc_status fedc__train_async_snapshot(trainer *t, int version, int *out, bool *fresh);

#endif
