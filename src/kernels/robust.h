/* Internal pieces of the robust aggregators (fedc/robust.h): the cohort they
 * read, and the families that src/kernels/robust.c dispatches to (kernels: the
 * executor runs them for the robust_aggregate op, and the kernels sit below it). */
#ifndef FEDC_KERNELS_ROBUST_H
#define FEDC_KERNELS_ROBUST_H

#include <stdbool.h>

#include "fedc/robust.h"

/* The cohort: n updates of d floats, their weights (NULL: all 1), a pool (or NULL). */
typedef struct fedc__robust_set {
    const float *const *x;
    int n;
    int64_t d;
    const double *w;
    fedc_pool *pool;
} fedc__robust_set;

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
/* The pool's worker count (1 without a pool). */
int fedc__robust_workers(const fedc__robust_set *s);
/* Coordinates a block of coordinate-wise work covers: fixed, so the pieces (and
 * with them the bits) do not depend on the threads. */
enum { FEDC__ROBUST_BLOCK = 4096 };

#endif
