/*
 * fast_parallel.c — the pool a thread's fast kernels may borrow. The executor
 * lends its spare threads (a program without clients, or fewer clients than
 * threads) to the kernels of the step it runs; a kernel cuts its work into blocks
 * fixed by the shapes and hands them out here. Thread-local, so concurrent
 * executors (the cohort's workers) never share one.
 */
#include "kernels/kernels.h"

static _Thread_local fedc_pool *current;

fedc_pool *fedc_kernels_set_pool(fedc_pool *pool) {
    fedc_pool *previous = current;
    current = pool;
    return previous;
}

void fedc_kernels_parallel(int64_t n, fedc_pool_task task, void *ctx) {
    fedc_pool *pool = current;
    if (pool && n > 1) {
        current = NULL; /* a task that calls back here runs its part in order */
        fedc_pool_run(pool, n, task, ctx);
        current = pool;
        return;
    }
    for (int64_t i = 0; i < n; i++) task(ctx, i, 0);
}
