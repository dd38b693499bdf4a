/* The thread pool behind fedc_pool_run: a fixed set of pthreads that wait until
 * the caller publishes a parallel-for, then take indices from a shared atomic
 * counter until none are left. Each run is a "generation": the caller bumps the
 * generation number under the mutex and broadcasts, every worker runs the loop
 * once for that generation and reports back, and the caller, which works as
 * worker 0 meanwhile, returns only after all of them have. Waits spin for up to
 * SPIN_SECONDS before they block on a condvar: kernels borrow the pool for runs of a
 * few tens of microseconds back to back (the LSTM's 80 steps), and a futex wake
 * per run costs as much as the run. After that an idle pool costs no CPU. One
 * fedc_pool_run at a time per pool: a task must not call fedc_pool_run on its
 * own pool, and two threads must not run the same pool concurrently. */
#include "core/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* How long a waiter spins before it sleeps: longer than the gap between two
 * kernels' runs, short enough that an idle pool soon stops using a core. */
#define SPIN_SECONDS 100e-6

typedef struct pool_worker {
    pthread_t thread;
    fedc_pool *pool;
    int id; /* 1..nthreads-1; the caller of fedc_pool_run is worker 0 */
    bool started; /* its start (start_thread) went well */
} pool_worker;

struct fedc_pool {
    int nthreads;
    int started; /* worker threads successfully created, for cleanup */
    pool_worker *workers;

    pthread_mutex_t mu;
    pthread_cond_t wake; /* a new generation was published, or shutdown */
    pthread_cond_t done; /* the last worker finished the current generation */
    _Atomic uint64_t generation; /* bumped under mu; read spinning without it */
    atomic_int pending;          /* workers that have not yet finished this generation */
    atomic_int shutdown; /* set before the generation's bump that announces it */

    /* The current job. Written under mu before the generation is bumped
     * (release) and read by workers after they see the bump (acquire), so
     * plain fields are enough. */
    fedc_pool_task task;
    void *ctx;
    int64_t n;
    atomic_int_fast64_t next;
};

/* Takes indices in increasing order until the job is used up. */
static void work(fedc_pool *p, fedc_pool_task task, void *ctx, int64_t n, int worker) {
    for (;;) {
        int64_t i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= n) return;
        task(ctx, i, worker);
    }
}

/* What a waiter spins on: the generation moving from `seen`, or every worker reporting. */
static bool generation_moved(fedc_pool *p, uint64_t seen) {
    return atomic_load_explicit(&p->generation, memory_order_acquire) != seen;
}

static bool workers_done(fedc_pool *p, uint64_t unused) {
    (void)unused;
    return atomic_load_explicit(&p->pending, memory_order_acquire) == 0;
}

/* Spins until ready(p, arg) (true) or SPIN_SECONDS pass (false). */
static bool spin_until(bool (*ready)(fedc_pool *, uint64_t), fedc_pool *p, uint64_t arg) {
    double start = fedc_seconds();
    for (int i = 1;; i++) {
        if (ready(p, arg)) return true;
        cpu_relax();
        if (i % 64 == 0 && fedc_seconds() - start > SPIN_SECONDS) return false;
    }
}

/* What every thread of a pool, and the thread that creates it, does first
 * (fedc__pool_on_thread_start): the kernels reserve their BLAS's per-thread
 * buffer there (src/kernels/fast_blas.c), which the core does not know of. */
static bool (*thread_start)(void);
static fedc_status (*thread_start_error)(void);

void fedc__pool_on_thread_start(bool (*start)(void), fedc_status (*error)(void)) {
    thread_start = start;
    thread_start_error = error;
}

static bool start_thread(void) { return !thread_start || thread_start(); }

static void nothing(void *ctx, int64_t i, int worker) { (void)ctx, (void)i, (void)worker; }

static void *worker_main(void *arg) {
    pool_worker *w = arg;
    fedc_pool *p = w->pool;
    w->started = start_thread();
    /* Generation 0 means "no job yet". Not p->generation: this thread may
     * first run after create has returned and a job has been published. */
    uint64_t seen = 0;
    for (;;) {
        if (!spin_until(generation_moved, p, seen)) {
            pthread_mutex_lock(&p->mu);
            while (atomic_load_explicit(&p->generation, memory_order_acquire) == seen)
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        /* shutdown bumps the generation too, so a spinning worker sees it */
        if (atomic_load_explicit(&p->shutdown, memory_order_acquire)) break;
        seen = atomic_load_explicit(&p->generation, memory_order_acquire);
        work(p, p->task, p->ctx, p->n, w->id);
        /* The release publishes this worker's writes to the caller, which
         * reads pending with acquire. The last one wakes a caller that has
         * stopped spinning; under mu, so that the wake cannot slip in between
         * the caller's check of pending and its wait. */
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

/* pthread errors that mean "out of resources" become FEDC_ENOMEM. */
static fedc_status pthread_status(int err) {
    return (err == EAGAIN || err == ENOMEM) ? FEDC_ENOMEM : FEDC_EINTERNAL;
}

/* Stops and joins the started workers, then frees everything. */
static void pool_teardown(fedc_pool *p) {
    pthread_mutex_lock(&p->mu);
    atomic_store_explicit(&p->shutdown, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) pthread_join(p->workers[i].thread, NULL);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    fedc_free(p->workers);
    fedc_free(p);
}

/* Initializes the mutex and both condvars, undoing partial work on failure. */
static fedc_status init_sync(fedc_pool *p) {
    int err = pthread_mutex_init(&p->mu, NULL);
    if (err) goto fail;
    err = pthread_cond_init(&p->wake, NULL);
    if (err) goto fail_mu;
    err = pthread_cond_init(&p->done, NULL);
    if (err) goto fail_wake;
    return FEDC_OK;
fail_wake:
    pthread_cond_destroy(&p->wake);
fail_mu:
    pthread_mutex_destroy(&p->mu);
fail:
    return fedc_error(pthread_status(err),
                      "pool: cannot initialize a mutex or condition (error %d)", err);
}

/* Starts workers 1..nthreads-1; on failure the caller tears down the ones started. */
static fedc_status start_workers(fedc_pool *p) {
    for (int i = 0; i < p->nthreads - 1; i++) {
        pool_worker *w = &p->workers[i];
        w->pool = p;
        w->id = i + 1;
        int err = pthread_create(&w->thread, NULL, worker_main, w);
        if (err) {
            return fedc_error(pthread_status(err),
                              "pool: cannot start worker thread %d of %d (error %d)", i + 1,
                              p->nthreads - 1, err);
        }
        p->started++;
    }
    return FEDC_OK;
}

fedc_status fedc_pool_create(fedc_pool **out, int nthreads) {
    *out = NULL;
    if (nthreads < 1)
        return fedc_error(FEDC_EINVAL, "pool: nthreads is %d, must be >= 1", nthreads);
    fedc_pool *p = fedc_calloc(1, sizeof *p);
    if (!p) return fedc_error(FEDC_ENOMEM, "pool: cannot allocate the pool");
    p->nthreads = nthreads;
    /* At least one element, so nthreads == 1 needs no special case in teardown. */
    p->workers = fedc_calloc((size_t)nthreads, sizeof *p->workers);
    if (!p->workers) {
        fedc_free(p);
        return fedc_error(FEDC_ENOMEM, "pool: cannot allocate %d workers", nthreads);
    }
    fedc_status st = init_sync(p);
    if (st) {
        fedc_free(p->workers);
        fedc_free(p);
        return st;
    }
    atomic_init(&p->next, 0);
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->shutdown, 0);
    st = start_thread() ? start_workers(p) : thread_start_error();
    /* a first job, which every worker runs after its start */
    if (!st) fedc_pool_run(p, nthreads, nothing, NULL);
    for (int i = 0; !st && i < nthreads - 1; i++)
        if (!p->workers[i].started) st = thread_start_error();
    if (st) {
        pool_teardown(p);
        return st;
    }
    *out = p;
    return FEDC_OK;
}

void fedc_pool_destroy(fedc_pool *pool) {
    if (pool) pool_teardown(pool);
}

int fedc_pool_threads(const fedc_pool *pool) { return pool ? pool->nthreads : 1; }

/* A NULL pool, a one-thread pool or a one-index job runs inline on the caller:
 * waking workers would only add latency. */
void fedc_pool_run(fedc_pool *pool, int64_t n, fedc_pool_task task, void *ctx) {
    if (n <= 0) return;
    if (!pool || pool->nthreads == 1 || n == 1) {
        for (int64_t i = 0; i < n; i++) task(ctx, i, 0);
        return;
    }
    pthread_mutex_lock(&pool->mu);
    pool->task = task;
    pool->ctx = ctx;
    pool->n = n;
    atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
    atomic_store_explicit(&pool->pending, pool->nthreads - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);

    work(pool, task, ctx, n, 0);

    if (spin_until(workers_done, pool, 0)) return;
    pthread_mutex_lock(&pool->mu);
    while (atomic_load_explicit(&pool->pending, memory_order_acquire) > 0) pthread_cond_wait(&pool->done, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
}
