/* train_state.h — an algorithm's state in the training job (internal): the
 * server state's leaves, the cohort's client state and metadata, and the store
 * that keeps every client's state between rounds (src/fl/train_state.c). */
#ifndef FEDC_FL_TRAIN_STATE_H
#define FEDC_FL_TRAIN_STATE_H

#include "fedc/exec.h"
#include "fedc/safetensors.h"

typedef struct fedc__client_store fedc__client_store;

/* One tensor of a state, by the name of its round input (less "server/" or
 * "client/"), with its memory: the server's one value, or the cohort's values
 * one client after another. */
typedef struct state_leaf {
    char *name;
    char *saved_as;   /* its name in checkpoints (server leaves): the model's own, or server/<leaf> */
    fedc_type type;   /* local */
    size_t bytes;     /* of one value */
    void *data;
} state_leaf;

typedef struct state_set {
    int n;
    state_leaf *leaf;
    void *block;          /* the leaves' memory (the server's params leaves are the model's buffer instead) */
    size_t record_bytes;  /* the sum of the leaves' bytes: one client's record in the store */
} state_set;

#endif
