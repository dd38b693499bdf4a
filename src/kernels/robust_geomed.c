/* The geometric median by smoothed Weiszfeld (RFA: Pillutla, Kakade and
 * Harchaoui, "Robust Aggregation for Federated Learning", 2019, Algorithm 2) and
 * centered clipping (Karimireddy, He and Jaggi, "Learning from History for
 * Byzantine Robust Optimization", 2021):
 *
 *     geomed:  α_i = w_i / Σ w,  v⁰ = Σ α_i x_i
 *              β_i = α_i / max(ν, ‖v − x_i‖),  v ← Σ β_i x_i / Σ β_i      (≤ R times)
 *              stop when |g(v) − g(v')| ≤ tol · g(v'),  g(v) = Σ α_i ‖v − x_i‖
 *     cclip:   v⁰ = the centre,  v ← v + (1/n) Σ_i (x_i − v) min(1, τ / ‖x_i − v‖)   (L times)
 *
 * RFA weights the points by the clients' example counts, as the weighted mean
 * does; centered clipping is the paper's unweighted mean. A client at distance
 * NaN or Inf from the centre adds nothing to cclip (its clipped step is
 * undefined). The iterate is kept in double; each client's distance is one
 * running sum over the coordinates (one worker's), each coordinate's step one sum
 * over the clients in index order, so threads do not change the bits. */
#include <math.h>

#include "kernels/robust.h"

typedef struct iterate_job {
    const fedc__robust_set *s;
    double *v;       /* the iterate, d numbers */
    double *dist;    /* per client: ‖x_i − v‖ (while summed: its square so far) */
    const double *c; /* per client: its coefficient in the step */
    double scale;    /* the step's divisor */
    bool relative;   /* cclip: v += Σ c_i (x_i − v) / scale; geomed: v = Σ c_i x_i / scale */
    const float **rows; /* n per worker */
    float *scratch;     /* n blocks per worker, when some update is not in memory */
    int64_t lo, len;    /* the block the distances are summing */
    fedc__robust_failure failed;
} iterate_job;

/* Client i's squared distance carried on over the block [lo, lo + len). */
static void distance_part(void *ctx, int64_t client, int worker) {
    (void)worker;
    iterate_job *job = ctx;
    const float *x = job->rows[client];
    double sum = job->dist[client];
    for (int64_t k = 0; k < job->len; k++) {
        double t = x[k] - job->v[job->lo + k];
        sum += t * t;
    }
    job->dist[client] = sum;
}

static fedc_status distances(iterate_job *job) {
    const fedc__robust_set *s = job->s;
    for (int i = 0; i < s->n; i++) job->dist[i] = 0;
    for (job->lo = 0; job->lo < s->d; job->lo += FEDC__ROBUST_BLOCK) {
        int64_t hi = job->lo + FEDC__ROBUST_BLOCK < s->d ? job->lo + FEDC__ROBUST_BLOCK : s->d;
        fedc_status st = fedc__robust_fetch(s, NULL, s->n, job->lo, hi, job->scratch, job->rows);
        if (st) return st;
        job->len = hi - job->lo;
        fedc_pool_run(s->pool, s->n, distance_part, job);
    }
    for (int i = 0; i < s->n; i++) job->dist[i] = sqrt(job->dist[i]);
    return FEDC_OK;
}

static void step_block(void *ctx, int64_t block, int worker) {
    iterate_job *job = ctx;
    int64_t lo, hi;
    fedc__robust_block(job->s, block, &lo, &hi);
    const float **x = fedc__robust_fetch_worker(job->s, NULL, job->s->n, job->rows, job->scratch, worker, lo, hi,
                                                &job->failed);
    for (int64_t k = lo; x && k < hi; k++) {
        double sum = 0, v = job->v[k];
        for (int i = 0; i < job->s->n; i++)
            if (job->c[i] != 0) sum += job->c[i] * (job->relative ? x[i][k - lo] - v : x[i][k - lo]);
        job->v[k] = job->relative ? v + sum / job->scale : sum / job->scale;
    }
}

static fedc_status step(iterate_job *job) {
    fedc__robust_blocks(job->s, step_block, job);
    return fedc__robust_failed(&job->failed);
}

/* v, the distances and the coefficients (d + 2n doubles), and room to read. */
static fedc_status iterate_begin(iterate_job *job, const fedc__robust_set *s, const char *who) {
    *job = (iterate_job){.s = s};
    job->v = fedc_malloc(((size_t)s->d + 2 * (size_t)s->n) * sizeof *job->v);
    if (!job->v) return fedc_error(FEDC_ENOMEM, "%s: no memory for %lld numbers", who, (long long)s->d);
    job->dist = job->v + s->d;
    job->c = job->dist + s->n;
    fedc_status st = fedc__robust_room(s, s->n, fedc__robust_workers(s), &job->rows, &job->scratch);
    if (st) fedc_free(job->v);
    return st;
}

static fedc_status iterate_end(iterate_job *job, fedc_status st, float *out) {
    for (int64_t k = 0; !st && k < job->s->d; k++) out[k] = (float)job->v[k];
    fedc_free(job->v), fedc_free(job->rows), fedc_free(job->scratch);
    return st;
}

static double objective(const iterate_job *job, const double *alpha) {
    double g = 0;
    for (int i = 0; i < job->s->n; i++) g += alpha[i] * job->dist[i];
    return g;
}

fedc_status fedc__robust_geomed(const fedc__robust_set *s, const fedc_robust *r, float *out) {
    iterate_job job;
    fedc_status st = iterate_begin(&job, s, "geomed");
    if (st) return st;
    double total = 0, *alpha = (double *)job.c, *beta = fedc_malloc((size_t)s->n * sizeof *beta);
    for (int i = 0; i < s->n; i++) total += s->w ? s->w[i] : 1.0;
    if (!beta) st = fedc_error(FEDC_ENOMEM, "geomed: no memory");
    else if (!(total > 0)) st = fedc_error(FEDC_EINVAL, "geomed: the clients' weights sum to %g; it must be > 0", total);
    for (int i = 0; !st && i < s->n; i++) alpha[i] = (s->w ? s->w[i] : 1.0) / total;
    for (int64_t k = 0; !st && k < s->d; k++) job.v[k] = 0;
    job.scale = 1; /* v⁰: the weighted mean */
    if (!st) st = step(&job);
    if (!st) st = distances(&job);
    double g = st ? 0 : objective(&job, alpha);
    for (int it = 0; !st && it < r->iterations; it++) {
        double sum = 0;
        for (int i = 0; i < s->n; i++) sum += beta[i] = alpha[i] / fmax(r->nu, job.dist[i]);
        job.c = beta, job.scale = sum;
        st = step(&job);
        job.c = alpha;
        if (!st) st = distances(&job);
        double next = st ? g : objective(&job, alpha);
        bool done = fabs(g - next) <= r->tolerance * next;
        g = next;
        if (done) break;
    }
    fedc_free(beta);
    return iterate_end(&job, st, out);
}

fedc_status fedc__robust_cclip(const fedc__robust_set *s, const fedc_robust *r, const float *center, float *out) {
    iterate_job job;
    fedc_status st = iterate_begin(&job, s, "cclip");
    if (st) return st;
    double *c = (double *)job.c;
    for (int64_t k = 0; k < s->d; k++) job.v[k] = center ? center[k] : 0;
    job.relative = true, job.scale = s->n;
    for (int it = 0; !st && it < r->iterations; it++) {
        st = distances(&job);
        for (int i = 0; !st && i < s->n; i++) {
            double dist = job.dist[i];
            c[i] = !isfinite(dist) ? 0 : dist > r->tau ? r->tau / dist : 1;
        }
        if (!st) st = step(&job);
    }
    return iterate_end(&job, st, out);
}
