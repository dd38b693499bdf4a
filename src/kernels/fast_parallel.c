/*
 * fast_parallel.c — the pool a thread's fast kernels may borrow. The executor
 * lends its spare threads (a program without clients, or fewer clients than
 * threads) to the kernels of the step it runs; a kernel cuts its work into blocks
 * fixed by the shapes and hands them out here. Thread-local, so concurrent
 * executors (the cohort's workers) never share one.
 */
#include "kernels/kernels.h"

static _Thread_local fedc_pool *current;

fedc_pool *fedc__kernels_set_pool(fedc_pool *pool) {
    fedc_pool *previous = current;
    current = pool;
    return previous;
}

void fedc__kernels_parallel(int64_t n, fedc_pool_task task, void *ctx) {
    fedc_pool *pool = current;
    if (pool && n > 1) {
        current = NULL; /* a task that calls back here runs its part in order */
        fedc_pool_run(pool, n, task, ctx);
        current = pool;
        return;
    }
    for (int64_t i = 0; i < n; i++) task(ctx, i, 0);
}

typedef struct span_job {
    fedc_span_fn fn;
    const void *ctx;
    int64_t n, span;
} span_job;

static void span_task(void *ctx, int64_t i, int worker) {
    (void)worker;
    const span_job *j = ctx;
    int64_t i0 = i * j->span, i1 = i0 + j->span < j->n ? i0 + j->span : j->n;
    j->fn(j->ctx, i0, i1);
}

void fedc__kernels_spans(int64_t n, int64_t span, fedc_span_fn fn, const void *ctx) {
    if (n < 2 * span) {
        if (n > 0) fn(ctx, 0, n);
        return;
    }
    span_job j = {fn, ctx, n, span};
    fedc__kernels_parallel((n + span - 1) / span, span_task, &j);
}
