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
    entry *entries;      /* count per worker */
    const float **rows;  /* count per worker */
    float *scratch;      /* count blocks per worker, when some update is not in memory */
    fedc__robust_failure failed;
    float *out;
} coordinate_job;

static float one_coordinate(const coordinate_job *job, entry *e, const float **rows, int64_t j) {
    int n = job->count, k = job->k;
    for (int i = 0; i < n; i++) {
        float x = rows[i][j];
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
    coordinate_job *job = ctx;
    entry *e = job->entries + (size_t)worker * (size_t)job->count;
    int64_t lo, hi;
    fedc__robust_block(job->s, block, &lo, &hi);
    const float **rows = fedc__robust_fetch_worker(job->s, job->sel, job->count, job->rows, job->scratch, worker, lo, hi,
                                                   &job->failed);
    for (int64_t j = lo; rows && j < hi; j++) job->out[j] = one_coordinate(job, e, rows, j - lo);
}

fedc_status fedc__robust_coordinate(const fedc__robust_set *s, const int *sel, int count, fedc__coordinate_rule rule,
                                    int k, float *out) {
    coordinate_job job = {.s = s, .sel = sel, .count = count, .k = k, .rule = rule, .out = out};
    int workers = fedc__robust_workers(s);
    fedc_status st = fedc__robust_room(s, count, workers, &job.rows, &job.scratch);
    if (st) return st;
    job.entries = fedc_malloc((size_t)workers * (size_t)count * sizeof *job.entries);
    if (!job.entries) st = fedc_error(FEDC_ENOMEM, "robust aggregation: no memory for %d clients' values", count);
    if (!st) fedc__robust_blocks(s, coordinate_block, &job);
    fedc_free(job.entries), fedc_free(job.rows), fedc_free(job.scratch);
    return st ? st : fedc__robust_failed(&job.failed);
}

/* ------------------------------------------------------------------ mean -- */

typedef struct mean_job {
    const fedc__robust_set *s;
    const int *sel;
    int count;
    double total;
    const float **rows;
    float *scratch;
    fedc__robust_failure failed;
    float *out;
} mean_job;

static void mean_block(void *ctx, int64_t block, int worker) {
    mean_job *job = ctx;
    int64_t lo, hi;
    fedc__robust_block(job->s, block, &lo, &hi);
    const float **rows = fedc__robust_fetch_worker(job->s, job->sel, job->count, job->rows, job->scratch, worker, lo, hi,
                                                   &job->failed);
    for (int64_t j = lo; rows && j < hi; j++) {
        double sum = 0;
        for (int i = 0; i < job->count; i++) sum += (job->s->w ? job->s->w[job->sel[i]] : 1.0) * rows[i][j - lo];
        job->out[j] = (float)(sum / job->total);
    }
}

fedc_status fedc__robust_mean(const fedc__robust_set *s, const int *sel, int count, float *out) {
    mean_job job = {.s = s, .sel = sel, .count = count, .out = out};
    for (int i = 0; i < count; i++) job.total += s->w ? s->w[sel[i]] : 1.0;
    if (!(job.total > 0))
        return fedc_error(FEDC_EINVAL, "robust aggregation: the %d clients to average have total weight %g; it must be "
                          "> 0", count, job.total);
    fedc_status st = fedc__robust_room(s, count, fedc__robust_workers(s), &job.rows, &job.scratch);
    if (st) return st;
    fedc__robust_blocks(s, mean_block, &job);
    fedc_free(job.rows), fedc_free(job.scratch);
    return fedc__robust_failed(&job.failed);
}
