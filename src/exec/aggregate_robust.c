/* robust_aggregate's accumulator: where sum, mean and weighted_mean add each
 * client's value into a partial sum as it comes (aggregate.c), a robust
 * aggregator (fedc/robust.h) needs every client's value at once. So each value
 * is copied as it comes, in its client's place, and the node's aggregator runs at
 * the end over the clients that reported, in client order: the result depends on
 * the values alone, not on the threads that computed them or their order.
 *
 * The values are held in memory: a cohort's updates, n x d floats. Over MPI, a
 * rank's clients would have to come to rank 0 whole; that is not done: a partial
 * sum pushed here, or an end with clients that never came, is refused. */
#include <string.h>

#include "exec/exec.h"

typedef struct fedc__robust_rows {
    int64_t clients;
    int64_t seen;   /* the clients added, values or holes */
    float **rows;   /* per client: its value, or NULL (left out, or not yet) */
    double *weight; /* per client */
} fedc__robust_rows;

void fedc__agg_robust_free(fedc__agg *a) {
    fedc__robust_rows *k = a->robust;
    if (!k) return;
    for (int64_t i = 0; k->rows && i < k->clients; i++) fedc_free(k->rows[i]);
    fedc_free(k->rows), fedc_free(k->weight), fedc_free(k);
    a->robust = NULL;
}

/* The rows, made at the first value (or at the end, when none came). */
static fedc_status rows(fedc__agg *a) {
    if (a->robust) return FEDC_OK;
    fedc__robust_rows *k = a->robust = fedc_calloc(1, sizeof *k);
    if (k) {
        k->clients = a->clients;
        k->rows = fedc_calloc((size_t)(a->clients ? a->clients : 1), sizeof *k->rows);
        k->weight = fedc_calloc((size_t)(a->clients ? a->clients : 1), sizeof *k->weight);
    }
    if (k && k->rows && k->weight) return FEDC_OK;
    fedc__agg_robust_free(a);
    return fedc_error(FEDC_ENOMEM, "robust_aggregate: no memory for %lld clients", (long long)a->clients);
}

fedc_status fedc__agg_robust_add(fedc__agg *a, int64_t i, const void *x, const void *w) {
    fedc_status st = rows(a);
    if (st) return st;
    fedc__robust_rows *k = a->robust;
    if (i < 0 || i >= k->clients)
        return fedc_error(FEDC_EINTERNAL, "robust_aggregate: client %lld of %lld", (long long)i, (long long)k->clients);
    k->seen++;
    if (!x) return FEDC_OK; /* left out */
    if (!k->rows[i] && !(k->rows[i] = fedc_malloc(a->bytes ? a->bytes : 1)))
        return fedc_error(FEDC_ENOMEM, "robust_aggregate: no memory for client %lld's %zu bytes", (long long)i, a->bytes);
    memcpy(k->rows[i], x, a->bytes);
    k->weight[i] = *(const float *)w;
    return FEDC_OK;
}

fedc_status fedc__agg_robust_end(fedc__agg *a) {
    fedc_status st = rows(a);
    if (st) return st;
    fedc__robust_rows *k = a->robust;
    if (k->seen != k->clients) { /* another rank ran the rest: the values are not all here */
        fedc__agg_robust_free(a);
        return fedc_error(FEDC_EUNSUPPORTED, "robust_aggregate: a robust aggregator needs every client's value in one "
                          "process; it does not run over MPI ranks yet");
    }
    int n = 0;
    for (int64_t i = 0; i < k->clients; i++) { /* the reported clients, packed in client order */
        float *row = k->rows[i];
        double w = k->weight[i];
        if (!row) continue;
        k->rows[i] = NULL;
        k->rows[n] = row, k->weight[n++] = w;
    }
    st = fedc_robust_aggregate_vectors(&a->robust_settings, (const float *const *)k->rows, n, a->count, k->weight, NULL,
                                                   a->out, NULL, NULL, NULL);
    fedc__agg_robust_free(a);
    return st; /* its message names the aggregator */
}
