/* The threads backend: clients run on a fedc_pool of this process's threads, and
 * this process is the only rank: there is nothing to join. */
#include "exec/backend.h"

typedef struct threads_backend {
    fedc__backend base; /* first, so a fedc__backend * is a threads_backend * */
    fedc_pool *pool;
} threads_backend;

static void run_on_pool(fedc__backend *b, int64_t n, fedc_pool_task task, void *ctx) {
    fedc_pool_run(((threads_backend *)b)->pool, n, task, ctx);
}

static fedc_status agree_alone(fedc__backend *b, fedc_status st) {
    (void)b;
    return st;
}

static fedc_status allgather_alone(fedc__backend *b, void *data, size_t bytes, const fedc__split *s) {
    (void)b, (void)data, (void)bytes, (void)s;
    return FEDC_OK;
}

static fedc_status combine_alone(fedc__backend *b, fedc__agg *const *aggs, int n, const fedc__split *s) {
    (void)b, (void)s;
    for (int a = 0; a < n; a++) {
        fedc_status st = fedc__agg_end(aggs[a]);
        if (st) return st;
    }
    return FEDC_OK;
}

static void destroy_threads(fedc__backend *b) {
    fedc_pool_destroy(((threads_backend *)b)->pool);
    fedc_free(b);
}

fedc_status fedc__backend_threads(fedc__backend **out, int workers) {
    *out = NULL;
    threads_backend *t = fedc_calloc(1, sizeof *t);
    if (!t) return fedc_error(FEDC_ENOMEM, "backend: out of memory");
    fedc_status st = fedc_pool_create(&t->pool, workers);
    if (st) {
        fedc_free(t);
        return st;
    }
    t->base = (fedc__backend){"threads", workers, 0, 1, run_on_pool, agree_alone, allgather_alone, combine_alone,
                              destroy_threads};
    *out = &t->base;
    return FEDC_OK;
}
