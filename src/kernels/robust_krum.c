/* Krum, Multi-Krum (Blanchard et al. 2017) and Bulyan's selection (El Mhamdi et
 * al. 2018), as Flower computes them (flwr/server/strategy/aggregate.py's
 * aggregate_krum and aggregate_bulyan):
 *
 *     D_ij     = ‖x_i − x_j‖²
 *     score_i  = Σ of the c smallest D_ij, j ≠ i, c = n − f − 2
 *     Krum     = x_i of least score; Multi-Krum: the m of least score
 *     Bulyan   = Krum applied θ = n − 2f times, each time to the clients not yet
 *                chosen (with Flower's c = max(1, n' − f − 2) on the n' left)
 *
 * Each D_ij is one running sum over the coordinates in order, in double, computed
 * whole by one worker (row i's task computes D_ij for j > i); scores sum a
 * client's sorted distances smallest first; ties, in the distances and in the
 * scores, go to the lower client index (where numpy's argsort leaves it open). */
#include <math.h>
#include <stdlib.h>

#include "kernels/robust.h"

typedef struct distance_job {
    const fedc__robust_set *s;
    const float **rows; /* the block's rows, every client's */
    int64_t len;        /* the block's coordinates */
    double *d;          /* n x n, row i's j > i summed so far */
} distance_job;

/* Row i's D_ij, j > i, carried on over the block: the same running sums, term
 * for term, as over all coordinates at once. */
static void distance_row(void *ctx, int64_t row, int worker) {
    (void)worker;
    const distance_job *job = ctx;
    int n = job->s->n, i = (int)row;
    const float *xi = job->rows[i];
    for (int j = i + 1; j < n; j++) {
        const float *xj = job->rows[j];
        double sum = job->d[(size_t)i * n + j];
        for (int64_t k = 0; k < job->len; k++) {
            double t = (double)xi[k] - xj[k];
            sum += t * t;
        }
        job->d[(size_t)i * n + j] = sum;
    }
}

typedef struct ranked {
    double v;
    int client;
} ranked;

static int ranked_cmp(const void *pa, const void *pb) {
    const ranked *a = pa, *b = pb;
    return fedc__robust_order(a->v, a->client, b->v, b->client);
}

static int int_cmp(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

/* The scores of the clients live[0..count) among themselves, c nearest each. */
static void scores(const double *d, int n, const int *live, int count, int c, ranked *tmp, ranked *out) {
    for (int a = 0; a < count; a++) {
        int i = live[a], t = 0;
        for (int b = 0; b < count; b++)
            if (b != a) tmp[t++] = (ranked){.v = d[(size_t)i * n + live[b]], .client = live[b]};
        qsort(tmp, (size_t)t, sizeof *tmp, ranked_cmp);
        double sum = 0;
        for (int k = 0; k < c && k < t; k++) sum += tmp[k].v;
        out[a] = (ranked){.v = sum, .client = i};
    }
}

/* The n x n squared distances, a block of coordinates at a time, and scratch
 * for the scores. */
static fedc_status distances(const fedc__robust_set *s, double **d, ranked **tmp) {
    int n = s->n;
    distance_job job = {.s = s};
    float *scratch = NULL;
    *d = fedc_calloc((size_t)n * (size_t)n, sizeof **d);
    *tmp = fedc_malloc(2 * (size_t)n * sizeof **tmp);
    fedc_status st = *d && *tmp ? fedc__robust_room(s, n, 1, &job.rows, &scratch)
                                : fedc_error(FEDC_ENOMEM, "krum: no memory for the %d x %d distances", n, n);
    job.d = *d;
    for (int64_t lo = 0; !st && lo < s->d; lo += FEDC__ROBUST_BLOCK) {
        int64_t hi = lo + FEDC__ROBUST_BLOCK < s->d ? lo + FEDC__ROBUST_BLOCK : s->d;
        st = fedc__robust_fetch(s, NULL, n, lo, hi, scratch, job.rows);
        job.len = hi - lo;
        if (!st) fedc_pool_run(s->pool, n, distance_row, &job);
    }
    fedc_free(job.rows), fedc_free(scratch);
    if (st) {
        fedc_free(*d), fedc_free(*tmp);
        return st;
    }
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) job.d[(size_t)j * n + i] = job.d[(size_t)i * n + j];
    return FEDC_OK;
}

fedc_status fedc__robust_krum(const fedc__robust_set *s, int f, int keep, int *kept) {
    double *d;
    ranked *tmp;
    fedc_status st = distances(s, &d, &tmp);
    if (st) return st;
    int n = s->n, *live = fedc_malloc((size_t)n * sizeof *live);
    if (!live) return fedc_free(d), fedc_free(tmp), fedc_error(FEDC_ENOMEM, "krum: no memory");
    for (int i = 0; i < n; i++) live[i] = i;
    scores(d, n, live, n, n - f - 2, tmp, tmp + n);
    qsort(tmp + n, (size_t)n, sizeof *tmp, ranked_cmp);
    for (int k = 0; k < keep; k++) kept[k] = tmp[n + k].client;
    qsort(kept, (size_t)keep, sizeof *kept, int_cmp);
    fedc_free(live), fedc_free(d), fedc_free(tmp);
    return FEDC_OK;
}

fedc_status fedc__robust_bulyan_select(const fedc__robust_set *s, int f, int *kept) {
    double *d;
    ranked *tmp;
    fedc_status st = distances(s, &d, &tmp);
    if (st) return st;
    int n = s->n, theta = n - 2 * f, *live = fedc_malloc((size_t)n * sizeof *live);
    if (!live) return fedc_free(d), fedc_free(tmp), fedc_error(FEDC_ENOMEM, "bulyan: no memory");
    for (int i = 0; i < n; i++) live[i] = i;
    for (int round = 0, count = n; round < theta; round++, count--) {
        int c = count - f - 2 > 1 ? count - f - 2 : 1; /* Flower's max(1, n' - f - 2) */
        scores(d, n, live, count, c, tmp, tmp + n);
        int best = 0; /* the least score; the first (lowest index) of equals */
        for (int a = 1; a < count; a++)
            if (ranked_cmp(&tmp[n + a], &tmp[n + best]) < 0) best = a;
        kept[round] = live[best];
        for (int a = best; a + 1 < count; a++) live[a] = live[a + 1]; /* the rest stay in index order */
    }
    qsort(kept, (size_t)theta, sizeof *kept, int_cmp);
    fedc_free(live), fedc_free(d), fedc_free(tmp);
    return FEDC_OK;
}
