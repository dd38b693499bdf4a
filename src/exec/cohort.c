/* The cohort runner: runs a map's body for every client of this process (all
 * clients, or its rank's leaves under MPI) on the worker threads, and commits each
 * client's results in client order.
 *
 * Each worker has its own executor for the body, so a client runs with no sharing
 * and no allocation. A finished client's results go to a slot of a small ring
 * (2 slots per worker); whichever thread holds the lock commits ready slots in
 * client order: it copies results that the program keeps per client, and adds the
 * streamed ones into their aggregations, whose trees fix the order of every sum by
 * client index (src/exec/aggregate.c). So results are bitwise identical for any
 * number of threads, and memory is O(workers x results) plus a bounded number of
 * partial sums, not O(clients x results), for the usual map -> mean. Completing
 * the aggregations (and, under MPI, joining the ranks' blocks) is the executor's.
 *
 * Largest first. A round lasts until its last client is done, so a large client
 * started last keeps one worker busy while the others idle. Given each client's
 * work (fedc_executor_balance), the clients are started in chunks of consecutive
 * clients, each chunk's largest first (Graham's LPT rule), and their results wait
 * in the ring until their turn to commit: the ring grows to a chunk plus two slots
 * per worker, the chunk at most 8 clients a worker and fedc__cohort_reorder_bytes
 * of results. The
 * commit order, hence every bit, is unchanged. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "exec/cohort.h"

size_t fedc__cohort_reorder_bytes = (size_t)64 << 20;

/* A chunk of 8 clients a worker is enough to even out the workers' loads at its
 * end, and keeps the ring, like the rest of a round's memory, flat in the cohort. */
#define CHUNK_PER_WORKER 8

struct fedc__cohort {
    const fedc_program *body;
    int workers, ring, capacity, nresults; /* ring: the slots this run uses, of capacity */
    int *order, order_capacity;            /* run index -> position in job->local */
    fedc_executor **exec; /* one per worker */
    size_t *result_bytes, *result_offset, slot_bytes;
    unsigned char *slots;
    int64_t *slot_client;  /* which client a slot holds, -1 when free */
    fedc_status *slot_status;
    char (*slot_msg)[256];
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool sync_ready;
};

void fedc__cohort_destroy(fedc__cohort *c) {
    if (!c) return;
    for (int w = 0; c->exec && w < c->workers; w++) fedc_executor_destroy(c->exec[w]);
    fedc_free(c->exec);
    fedc_free(c->result_bytes);
    fedc_free(c->result_offset);
    fedc_free(c->slots);
    fedc_free(c->slot_client);
    fedc_free(c->slot_status);
    fedc_free(c->slot_msg);
    fedc_free(c->order);
    if (c->sync_ready) {
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->cond);
    }
    fedc_free(c);
}

/* Grows the ring's storage to `ring` slots (it never shrinks). Only between runs,
 * when no slot holds a result: the slots are allocated afresh, not realloc'ed,
 * because copying dead results would touch every page of the old block and of the
 * new one (a first run of the CNN's ring went from 4 to 14 slots of 4.8 MB, and the
 * copy took 95 ms of a 2.4 s job, serially, on a virtual machine where a page's
 * first touch is slow). */
static fedc_status reserve_slots(fedc__cohort *c, int ring) {
    if (ring <= c->capacity) return FEDC_OK;
    void *slots = fedc_malloc((size_t)ring * (c->slot_bytes ? c->slot_bytes : 1));
    if (slots) fedc_free(c->slots), c->slots = slots;
    void *client = fedc_realloc(c->slot_client, (size_t)ring * sizeof *c->slot_client);
    if (client) c->slot_client = client;
    void *status = fedc_realloc(c->slot_status, (size_t)ring * sizeof *c->slot_status);
    if (status) c->slot_status = status;
    void *msg = fedc_realloc(c->slot_msg, (size_t)ring * sizeof *c->slot_msg);
    if (msg) c->slot_msg = msg;
    if (!slots || !client || !status || !msg)
        return fedc_error(FEDC_ENOMEM, "map: out of memory for %d result slots of %zu bytes", ring, c->slot_bytes);
    c->capacity = ring;
    return FEDC_OK;
}

static fedc_status layout(fedc__cohort *c) {
    c->nresults = fedc_program_num_outputs(c->body);
    c->result_bytes = fedc_calloc((size_t)c->nresults, sizeof *c->result_bytes);
    c->result_offset = fedc_calloc((size_t)c->nresults, sizeof *c->result_offset);
    if (!c->result_bytes || !c->result_offset) return fedc_error(FEDC_ENOMEM, "map: out of memory");
    for (int k = 0; k < c->nresults; k++) {
        fedc_type t = fedc_value_type(c->body, fedc_program_output_value(c->body, k));
        c->result_bytes[k] = fedc_type_bytes(&t);
        c->result_offset[k] = c->slot_bytes;
        c->slot_bytes += (c->result_bytes[k] + 63) & ~(size_t)63;
    }
    return reserve_slots(c, 2 * c->workers);
}

fedc_status fedc__cohort_create(fedc__cohort **out, const fedc_program *body, int workers,
                                const fedc_exec_options *options) {
    *out = NULL;
    fedc__cohort *c = fedc_calloc(1, sizeof *c);
    if (!c) return fedc_error(FEDC_ENOMEM, "map: out of memory");
    c->body = body;
    c->workers = workers;
    c->exec = fedc_calloc((size_t)workers, sizeof *c->exec);
    fedc_status st = c->exec ? layout(c) : fedc_error(FEDC_ENOMEM, "map: out of memory");
    /* threads beyond one per worker go to the clients' kernels (same bits) */
    int spare = options && options->threads > workers ? options->threads / workers : 0;
    fedc_exec_options body_options = {.device = options ? options->device : NULL, .threads = spare,
                                      .profile = options && options->profile};
    for (int w = 0; !st && w < workers; w++) st = fedc_executor_create(&c->exec[w], body, &body_options);
    if (!st) {
        if (pthread_mutex_init(&c->lock, NULL)) st = fedc_error(FEDC_ENOMEM, "map: cannot create a mutex");
        else if (pthread_cond_init(&c->cond, NULL)) {
            pthread_mutex_destroy(&c->lock);
            st = fedc_error(FEDC_ENOMEM, "map: cannot create a condition variable");
        } else c->sync_ready = true;
    }
    if (st) {
        fedc__cohort_destroy(c);
        return st;
    }
    *out = c;
    return FEDC_OK;
}

fedc_executor *const *fedc__cohort_executors(const fedc__cohort *c, int *n) {
    *n = c->workers;
    return c->exec;
}

/* ------------------------------------------------------------------ run -- */

typedef struct run_ctx {
    fedc__cohort *c;
    const fedc__map_job *job;
    int64_t next_commit;  /* an index into job->local */
    bool ordered;         /* clients start in c->order, not in client order */
    bool stop;            /* FAIL_ROUND after a failure: skip the remaining clients */
    int64_t failed_client;
    fedc_status failed_status;
    char failed_msg[512];
} run_ctx;

/* The first non-finite element of a float result, or -1. */
static int64_t first_nonfinite(const fedc_type *t, const void *data) {
    int64_t n = fedc_type_count(t);
    if (t->dtype == FEDC_F32) {
        for (int64_t i = 0; i < n; i++)
            if (!isfinite(((const float *)data)[i])) return i;
    } else if (t->dtype == FEDC_F64) {
        for (int64_t i = 0; i < n; i++)
            if (!isfinite(((const double *)data)[i])) return i;
    }
    return -1;
}

/* Runs the body for client i on worker w and copies its results into `slot`. */
static fedc_status run_client(run_ctx *r, int64_t i, int w, unsigned char *slot) {
    fedc__cohort *c = r->c;
    const fedc__map_job *job = r->job;
    fedc_executor *ex = c->exec[w];
    for (int j = 0; j < job->nargs; j++) {
        int64_t at = job->arg_by_group && job->arg_by_group[j] ? job->client_group[i] : i; /* its group's copy */
        fedc_status st = fedc_executor_bind(ex, fedc_program_input_name(c->body, j),
                                            (const char *)job->args[j] + (size_t)at * job->arg_stride[j]);
        if (st) return st;
    }
    for (int k = 0; k < c->nresults; k++) fedc__executor_compute_into(ex, k, slot + c->result_offset[k]);
    fedc_status st = fedc_executor_run(ex);
    for (int k = 0; !st && k < c->nresults; k++) {
        const void *data;
        fedc_type t;
        st = fedc_executor_output(ex, fedc_program_output_name(c->body, k), &data, &t);
        if (st) break;
        int64_t bad = job->check_finite ? first_nonfinite(&t, data) : -1;
        if (bad >= 0)
            st = fedc_error(FEDC_ENONFINITE, "result \"%s\" has a non-finite value at element %lld",
                            fedc_program_output_name(c->body, k), (long long)bad);
        if (data != slot + c->result_offset[k]) memcpy(slot + c->result_offset[k], data, c->result_bytes[k]);
    }
    return st;
}

static const void *source_at(const fedc__source *s, const unsigned char *slot, const size_t *offset, int64_t i) {
    if (s->result >= 0) return slot + offset[s->result];
    return (const char *)s->base + (size_t)i * s->stride;
}

/* Records the first failure (lock held): the lowest failing client here. */
static void fail(run_ctx *r, int64_t i, fedc_status st, const char *msg) {
    if (r->stop) return;
    r->stop = true;
    r->failed_client = i;
    r->failed_status = st;
    snprintf(r->failed_msg, sizeof r->failed_msg, "%s", msg);
}

/* Commits client i from slot s (lock held): in client order, always. */
static void commit(run_ctx *r, int64_t i, int s) {
    fedc__cohort *c = r->c;
    const fedc__map_job *job = r->job;
    fedc_status st = c->slot_status[s];
    bool absent = job->absent[i];
    if (st == FEDC_OK && !r->stop && !absent) {
        const unsigned char *slot = c->slots + (size_t)s * c->slot_bytes;
        for (int k = 0; k < c->nresults; k++)
            if (job->dest[k]) memcpy((char *)job->dest[k] + (size_t)i * c->result_bytes[k], slot + c->result_offset[k], c->result_bytes[k]);
        for (int a = 0; a < job->naggs && !st; a++) {
            const void *w = job->w_src[a].result >= 0 || job->w_src[a].base ? source_at(&job->w_src[a], slot, c->result_offset, i) : NULL;
            st = fedc__agg_add(job->aggs[a], i, source_at(&job->x_src[a], slot, c->result_offset, i), w);
        }
        if (st) fail(r, i, st, fedc_errmsg());
    } else if ((st != FEDC_OK && job->drop_failed) || (absent && !r->stop)) {
        job->dropped[i] = 1; /* zeros where the program keeps its results, not stale bytes */
        for (int k = 0; k < c->nresults; k++)
            if (job->dest[k]) memset((char *)job->dest[k] + (size_t)i * c->result_bytes[k], 0, c->result_bytes[k]);
        st = FEDC_OK;
        for (int a = 0; a < job->naggs && !st; a++) st = fedc__agg_add(job->aggs[a], i, NULL, NULL); /* a hole */
        if (st) fail(r, i, st, fedc_errmsg());
    } else if (st != FEDC_OK) {
        fail(r, i, st, c->slot_msg[s]);
    }
    c->slot_client[s] = -1;
}

/* Runs the k-th local client (client job->local[k]) on worker w, k the position
 * the run_index-th start takes. */
static void client_task(void *ctx, int64_t run_index, int w) {
    run_ctx *r = ctx;
    fedc__cohort *c = r->c;
    int64_t k = r->ordered ? c->order[run_index] : run_index;
    int s = (int)(k % c->ring);
    pthread_mutex_lock(&c->lock);
    while (k - r->next_commit >= c->ring) pthread_cond_wait(&c->cond, &c->lock);
    bool skip = r->stop || r->job->absent[r->job->local[k]];
    pthread_mutex_unlock(&c->lock);

    fedc_status st = FEDC_OK;
    if (!skip) st = run_client(r, r->job->local[k], w, c->slots + (size_t)s * c->slot_bytes);
    c->slot_status[s] = st;
    if (st) snprintf(c->slot_msg[s], sizeof c->slot_msg[s], "%s", fedc_errmsg());

    pthread_mutex_lock(&c->lock);
    c->slot_client[s] = k;
    for (int t = (int)(r->next_commit % c->ring); c->slot_client[t] == r->next_commit; t = (int)(r->next_commit % c->ring)) {
        commit(r, r->job->local[r->next_commit], t);
        r->next_commit++;
    }
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
}

/* The chunk's positions [first, end) by decreasing work (ties: client order). */
static void sort_largest_first(int *order, int first, int end, const double *work, const int *local) {
    for (int i = first + 1; i < end; i++) { /* insertion sort: a chunk is small */
        int p = order[i], j = i;
        for (; j > first && work[local[order[j - 1]]] < work[local[p]]; j--) order[j] = order[j - 1];
        order[j] = p;
    }
}

/* Plans the order in which this run starts its clients, and the ring it needs.
 * Client order takes two slots per worker; largest first, a chunk more, so that
 * no start waits on a client of its own chunk (which may start after it). */
static fedc_status plan_order(fedc__cohort *c, const fedc__map_job *job, bool *ordered) {
    *ordered = false;
    c->ring = 2 * c->workers;
    size_t fit = fedc__cohort_reorder_bytes / (c->slot_bytes ? c->slot_bytes : 1);
    int chunk = job->nlocal < CHUNK_PER_WORKER * c->workers ? job->nlocal : CHUNK_PER_WORKER * c->workers;
    if ((size_t)chunk > fit) chunk = (int)fit;
    if (!job->work || c->workers < 2 || chunk < 2) return FEDC_OK;
    if (job->nlocal > c->order_capacity) {
        int *order = fedc_realloc(c->order, (size_t)job->nlocal * sizeof *order);
        if (!order) return fedc_error(FEDC_ENOMEM, "map: out of memory for the order of %d clients", job->nlocal);
        c->order = order;
        c->order_capacity = job->nlocal;
    }
    fedc_status st = reserve_slots(c, chunk + 2 * c->workers);
    if (st) return st;
    for (int k = 0; k < job->nlocal; k++) c->order[k] = k;
    for (int first = 0; first < job->nlocal; first += chunk)
        sort_largest_first(c->order, first, first + chunk < job->nlocal ? first + chunk : job->nlocal, job->work,
                           job->local);
    c->ring = chunk + 2 * c->workers;
    *ordered = true;
    return FEDC_OK;
}

fedc_status fedc__cohort_run(fedc__cohort *c, fedc__backend *backend, const fedc__map_job *job) {
    run_ctx r = {.c = c, .job = job, .failed_client = -1};
    fedc_status planned = plan_order(c, job, &r.ordered);
    if (planned) return planned;
    for (int s = 0; s < c->ring; s++) c->slot_client[s] = -1;
    for (int a = 0; a < job->naggs; a++) fedc__agg_begin(job->aggs[a], job->agg_nodes[a], job->clients, job->agg_out[a]);
    backend->run(backend, job->nlocal, client_task, &r);
    for (int a = 0; a < job->naggs && !r.stop; a++) {
        fedc_status st = fedc__agg_close(job->aggs[a]);
        if (st) fail(&r, job->local[job->nlocal - 1], st, fedc_errmsg());
    }
    if (r.stop) {
        const char *id = job->client_ids ? job->client_ids[r.failed_client] : NULL;
        return fedc_error(r.failed_status, "client %lld%s%s%s: %s", (long long)r.failed_client, id ? " (\"" : "",
                          id ? id : "", id ? "\")" : "", r.failed_msg);
    }
    return FEDC_OK;
}
