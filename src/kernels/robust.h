/* Internal pieces of the robust aggregators (fedc/robust.h): the cohort they
 * read, and the families that src/kernels/robust.c dispatches to (kernels: the
 * executor runs them for the robust_aggregate op, and the kernels sit below it). */
#ifndef FEDC_KERNELS_ROBUST_H
#define FEDC_KERNELS_ROBUST_H

#include <stdatomic.h>
#include <stdbool.h>

#include "fedc/robust.h"

/* The cohort: n updates of d floats, their weights (NULL: all 1), a pool (or NULL).
 * An update is in memory (x[i]) or, where x[i] is NULL, read a block at a time by
 * `read` (a store that spilled it to a file): every kernel reads the updates
 * through fedc__robust_fetch, a block of coordinates at a time, and keeps its
 * running sums across blocks in coordinate order, so the bits are the same
 * wherever the updates are. */
typedef struct fedc__robust_set {
    const float *const *x;
    fedc_status (*read)(void *ctx, int client, int64_t lo, int64_t count, float *to);
    void *read_ctx;
    int n;
    int64_t d;
    const double *w;
    fedc_pool *pool;
} fedc__robust_set;

/* fedc_robust_aggregate_vectors over s (whose updates may be read, not in memory). */
fedc_status fedc__robust_aggregate_set(const fedc_robust *r, const fedc__robust_set *s, const float *center,
                                      float *out, int *kept, int *nkept);

/* What a coordinate-wise aggregator takes of each coordinate's sorted values. */
typedef enum fedc__coordinate_rule {
    FEDC__COORD_MEDIAN,  /* the median */
    FEDC__COORD_TRIMMED, /* the mean of all but `k` from each end */
    FEDC__COORD_NEAREST, /* the mean of the `k` nearest the median (Bulyan) */
} fedc__coordinate_rule;

/* out[j] = the rule applied to x[sel[0]][j], ..., x[sel[count-1]][j], for every j. */
fedc_status fedc__robust_coordinate(const fedc__robust_set *s, const int *sel, int count, fedc__coordinate_rule rule,
                                    int k, float *out);
/* out = the weighted mean of the updates sel[0..count), summed in that order. */
fedc_status fedc__robust_mean(const fedc__robust_set *s, const int *sel, int count, float *out);
/* Krum's choice: the `keep` clients of least score (ties: lower index), in
 * increasing index, into kept. */
fedc_status fedc__robust_krum(const fedc__robust_set *s, int f, int keep, int *kept);
/* Bulyan's selection: theta = n - 2f clients by Krum repeated on the rest. */
fedc_status fedc__robust_bulyan_select(const fedc__robust_set *s, int f, int *kept);
fedc_status fedc__robust_geomed(const fedc__robust_set *s, const fedc_robust *r, float *out);
fedc_status fedc__robust_cclip(const fedc__robust_set *s, const fedc_robust *r, const float *center, float *out);

/* The order every sort uses: by value, NaN above everything, ties by client index. */
int fedc__robust_order(double a, int client_a, double b, int client_b);
/* Block `block`'s coordinates, [*lo, *hi) of s's d. */
void fedc__robust_block(const fedc__robust_set *s, int64_t block, int64_t *lo, int64_t *hi);
/* Runs task over s's blocks of coordinates. */
void fedc__robust_blocks(const fedc__robust_set *s, fedc_pool_task task, void *ctx);
/* rows[i] = client sel[i]'s coordinates [lo, hi) (sel NULL: client i, for i < count):
 * in memory where it is, else read into scratch + i x FEDC__ROBUST_BLOCK. */
fedc_status fedc__robust_fetch(const fedc__robust_set *s, const int *sel, int count, int64_t lo, int64_t hi,
                               float *scratch, const float **rows);
/* Room for `copies` fetches of `count` clients: the row pointers, and the
 * scratch (NULL when every update is in memory). fedc_free(*rows) frees both. */
fedc_status fedc__robust_room(const fedc__robust_set *s, int count, int copies, const float ***rows, float **scratch);
/* The first failure of a pool's tasks, with its message (fedc_errmsg is the
 * worker thread's own). */
typedef struct fedc__robust_failure {
    _Atomic int set;
    fedc_status status;
    char msg[512];
} fedc__robust_failure;
void fedc__robust_fail(fedc__robust_failure *f, fedc_status st);
fedc_status fedc__robust_failed(fedc__robust_failure *f); /* FEDC_OK, or the failure again */
/* This worker's part of room (fedc__robust_room's, `count` clients a copy) with
 * the block [lo, hi) fetched into it; NULL, with the failure recorded, if a read
 * fails. */
const float **fedc__robust_fetch_worker(const fedc__robust_set *s, const int *sel, int count, const float **rows,
                                        float *scratch, int worker, int64_t lo, int64_t hi, fedc__robust_failure *f);
/* The pool's worker count (1 without a pool). */
int fedc__robust_workers(const fedc__robust_set *s);
/* Coordinates a block of coordinate-wise work covers: fixed, so the pieces (and
 * with them the bits) do not depend on the threads. */
enum { FEDC__ROBUST_BLOCK = 4096 };

#endif
