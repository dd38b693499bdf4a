/* exec.h — what the executor, the cohort runner and the per-op dispatch share
 * (internal). */
#ifndef FEDC_EXEC_INTERNAL_H
#define FEDC_EXEC_INTERNAL_H

#include "fedc/exec.h"
#include "ir/ir.h"
#include "kernels/kernels.h"

/* One step of a run: a node with its operand and result memory, for one client
 * when the node computes on clients values. */
typedef struct fedc__step {
    const fedc_program *p;
    fedc_value v;
    const fedc__node *n;
    const fedc_kernels *k;
    void *out;
    const void *const *in; /* n->nin operand pointers */
    void *scratch;         /* fedc__step_scratch(...) bytes */
    int clients;           /* the cohort's size */
    const size_t *in_stride; /* per operand: bytes from one client's value to the next (0: shared) */
    const uint8_t *dropped;  /* per client: left out of aggregates in this run */
} fedc__step;

/* Runs one node's kernel. */
fedc_status fedc__step_run(const fedc__step *s);

/* Scratch bytes the node's kernel needs (0 for most ops). */
size_t fedc__step_scratch(const fedc_kernels *k, const fedc_program *p, const fedc__node *n);

fedc_kshape fedc__kshape(const fedc_type *t);

/* An aggregation in progress (sum, mean or weighted_mean of one node). */
typedef struct fedc__agg {
    fedc__op op;
    fedc_dtype dtype;
    int64_t count; /* elements of the value */
    void *out;     /* the server value being accumulated */
    int clients;   /* clients added so far */
    double weight; /* weighted_mean: sum of the weights added */
} fedc__agg;

void fedc__agg_begin(fedc__agg *a, const fedc__node *n, void *out);
/* Adds one client's value x (and its weight w, for weighted_mean). */
void fedc__agg_add(fedc__agg *a, const void *x, const void *w);
fedc_status fedc__agg_end(fedc__agg *a);

#endif
