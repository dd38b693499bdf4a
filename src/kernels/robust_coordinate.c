/* Coordinate-wise robust aggregators: the median, the trimmed mean and Bulyan's
 * mean of the values nearest the median, and the weighted mean of a subset.
 *
 * Each coordinate's values are sorted with their client index, NaN above +Inf and
 * ties by index, so the order, and the sum that follows it in double, depend on
 * the values alone. The coordinates are cut into fixed blocks that workers take
 * whole (each with its own scratch): any number of threads gives the same bits. */
#include <math.h>
#include <stdlib.h>

#include "kernels/robust.h"

typedef struct entry {
    double v;   /* the value; for NEAREST, its distance to the median first */
    float x;    /* the value itself */
    int client; /* the tie-break */
} entry;

int fedc__robust_order(double a, int client_a, double b, int client_b) {
    bool na = isnan(a), nb = isnan(b);
    if (na != nb) return na ? 1 : -1; /* NaN above everything */
    if (!na && a != b) return a < b ? -1 : 1;
    return (client_a > client_b) - (client_a < client_b);
}

static int entry_cmp(const void *pa, const void *pb) {
    const entry *a = pa, *b = pb;
    return fedc__robust_order(a->v, a->client, b->v, b->client);
}

/* The median of e[0..k), sorted: the middle value, or the mean of the middle two. */
static double sorted_median(const entry *e, int k) {
    return k % 2 ? e[k / 2].v : (e[k / 2 - 1].v + e[k / 2].v) / 2;
}

typedef struct coordinate_job {
    const fedc__robust_set *s;
    const int *sel;
    int count, k;
    fedc__coordinate_rule rule;
    entry *scratch; /* count entries per worker */
    float *out;
} coordinate_job;

static float one_coordinate(const coordinate_job *job, entry *e, int64_t j) {
    int n = job->count, k = job->k;
    for (int i = 0; i < n; i++) {
        float x = job->s->x[job->sel[i]][j];
        e[i] = (entry){.v = x, .x = x, .client = job->sel[i]};
    }
    qsort(e, (size_t)n, sizeof *e, entry_cmp);
    double median = sorted_median(e, n), sum = 0;
    if (job->rule == FEDC__COORD_MEDIAN) return (float)median;
    if (job->rule == FEDC__COORD_TRIMMED) {
        for (int i = k; i < n - k; i++) sum += e[i].v;
        return (float)(sum / (n - 2 * k));
    }
    for (int i = 0; i < n; i++) e[i].v = fabs((double)e[i].x - median); /* NEAREST: by distance */
    qsort(e, (size_t)n, sizeof *e, entry_cmp);
    for (int i = 0; i < k; i++) sum += e[i].x;
    return (float)(sum / k);
}

static void coordinate_block(void *ctx, int64_t block, int worker) {
    const coordinate_job *job = ctx;
    entry *e = job->scratch + (size_t)worker * (size_t)job->count;
    int64_t lo, hi;
    fedc__robust_block(job->s, block, &lo, &hi);
    for (int64_t j = lo; j < hi; j++) job->out[j] = one_coordinate(job, e, j);
}

int fedc__robust_workers(const fedc__robust_set *s) { return s->pool ? fedc_pool_threads(s->pool) : 1; }

void fedc__robust_block(const fedc__robust_set *s, int64_t block, int64_t *lo, int64_t *hi) {
    *lo = block * FEDC__ROBUST_BLOCK;
    *hi = *lo + FEDC__ROBUST_BLOCK < s->d ? *lo + FEDC__ROBUST_BLOCK : s->d;
}

void fedc__robust_blocks(const fedc__robust_set *s, fedc_pool_task task, void *ctx) {
    fedc_pool_run(s->pool, (s->d + FEDC__ROBUST_BLOCK - 1) / FEDC__ROBUST_BLOCK, task, ctx);
}

fedc_status fedc__robust_coordinate(const fedc__robust_set *s, const int *sel, int count, fedc__coordinate_rule rule,
                                    int k, float *out) {
    coordinate_job job = {.s = s, .sel = sel, .count = count, .k = k, .rule = rule, .out = out};
    job.scratch = fedc_malloc((size_t)fedc__robust_workers(s) * (size_t)count * sizeof *job.scratch);
    if (!job.scratch) return fedc_error(FEDC_ENOMEM, "robust aggregation: no memory for %d clients' values", count);
    fedc__robust_blocks(s, coordinate_block, &job);
    fedc_free(job.scratch);
    return FEDC_OK;
}

/* ------------------------------------------------------------------ mean -- */

typedef struct mean_job {
    const fedc__robust_set *s;
    const int *sel;
    int count;
    double total;
    float *out;
} mean_job;

static void mean_block(void *ctx, int64_t block, int worker) {
    (void)worker;
    const mean_job *job = ctx;
    int64_t lo, hi;
    fedc__robust_block(job->s, block, &lo, &hi);
    for (int64_t j = lo; j < hi; j++) {
        double sum = 0;
        for (int i = 0; i < job->count; i++) {
            int c = job->sel[i];
            sum += (job->s->w ? job->s->w[c] : 1.0) * job->s->x[c][j];
        }
        job->out[j] = (float)(sum / job->total);
    }
}

fedc_status fedc__robust_mean(const fedc__robust_set *s, const int *sel, int count, float *out) {
    mean_job job = {.s = s, .sel = sel, .count = count, .out = out};
    for (int i = 0; i < count; i++) job.total += s->w ? s->w[sel[i]] : 1.0;
    if (!(job.total > 0))
        return fedc_error(FEDC_EINVAL, "robust aggregation: the %d clients to average have total weight %g; it must be "
                          "> 0", count, job.total);
    fedc__robust_blocks(s, mean_block, &job);
    return FEDC_OK;
}
