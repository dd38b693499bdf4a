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
    double *dist;    /* per client: ‖x_i − v‖ */
    const double *c; /* per client: its coefficient in the step */
    double scale;    /* the step's divisor */
    bool relative;   /* cclip: v += Σ c_i (x_i − v) / scale; geomed: v = Σ c_i x_i / scale */
} iterate_job;

static void distance_one(void *ctx, int64_t client, int worker) {
    (void)worker;
    const iterate_job *job = ctx;
    const float *x = job->s->x[client];
    double sum = 0;
    for (int64_t k = 0; k < job->s->d; k++) {
        double t = x[k] - job->v[k];
        sum += t * t;
    }
    job->dist[client] = sqrt(sum);
}

static void step_block(void *ctx, int64_t block, int worker) {
    (void)worker;
    const iterate_job *job = ctx;
    int64_t lo, hi;
    fedc__robust_block(job->s, block, &lo, &hi);
    for (int64_t k = lo; k < hi; k++) {
        double sum = 0, v = job->v[k];
        for (int i = 0; i < job->s->n; i++)
            if (job->c[i] != 0) sum += job->c[i] * (job->relative ? job->s->x[i][k] - v : job->s->x[i][k]);
        job->v[k] = job->relative ? v + sum / job->scale : sum / job->scale;
    }
}

static void distances(iterate_job *job) { fedc_pool_run(job->s->pool, job->s->n, distance_one, job); }
static void step(iterate_job *job) { fedc__robust_blocks(job->s, step_block, job); }

/* v, the distances and the coefficients: d + 2n doubles. */
static fedc_status iterate_begin(iterate_job *job, const fedc__robust_set *s, const char *who) {
    *job = (iterate_job){.s = s};
    job->v = fedc_malloc(((size_t)s->d + 2 * (size_t)s->n) * sizeof *job->v);
    if (!job->v) return fedc_error(FEDC_ENOMEM, "%s: no memory for %lld numbers", who, (long long)s->d);
    job->dist = job->v + s->d;
    job->c = job->dist + s->n;
    return FEDC_OK;
}

static void iterate_end(iterate_job *job, float *out) {
    for (int64_t k = 0; k < job->s->d; k++) out[k] = (float)job->v[k];
    fedc_free(job->v);
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
    if (!beta) return fedc_free(job.v), fedc_error(FEDC_ENOMEM, "geomed: no memory");
    for (int i = 0; i < s->n; i++) total += s->w ? s->w[i] : 1.0;
    if (!(total > 0)) {
        fedc_free(job.v), fedc_free(beta);
        return fedc_error(FEDC_EINVAL, "geomed: the clients' weights sum to %g; it must be > 0", total);
    }
    for (int i = 0; i < s->n; i++) alpha[i] = (s->w ? s->w[i] : 1.0) / total;
    for (int64_t k = 0; k < s->d; k++) job.v[k] = 0;
    job.scale = 1; /* v⁰: the weighted mean */
    step(&job);
    distances(&job);
    double g = objective(&job, alpha);
    for (int it = 0; it < r->iterations; it++) {
        double sum = 0;
        for (int i = 0; i < s->n; i++) sum += beta[i] = alpha[i] / fmax(r->nu, job.dist[i]);
        job.c = beta, job.scale = sum;
        step(&job);
        job.c = alpha;
        distances(&job);
        double next = objective(&job, alpha);
        bool done = fabs(g - next) <= r->tolerance * next;
        g = next;
        if (done) break;
    }
    iterate_end(&job, out);
    fedc_free(beta);
    return FEDC_OK;
}

fedc_status fedc__robust_cclip(const fedc__robust_set *s, const fedc_robust *r, const float *center, float *out) {
    iterate_job job;
    fedc_status st = iterate_begin(&job, s, "cclip");
    if (st) return st;
    double *c = (double *)job.c;
    for (int64_t k = 0; k < s->d; k++) job.v[k] = center ? center[k] : 0;
    job.relative = true, job.scale = s->n;
    for (int it = 0; it < r->iterations; it++) {
        distances(&job);
        for (int i = 0; i < s->n; i++) {
            double dist = job.dist[i];
            c[i] = !isfinite(dist) ? 0 : dist > r->tau ? r->tau / dist : 1;
        }
        step(&job);
    }
    iterate_end(&job, out);
    return FEDC_OK;
}
