/* robust_aggregate's accumulator: where sum, mean and weighted_mean add each
 * client's value into a partial sum as it comes (aggregate.c), a robust
 * aggregator (fedc/robust.h) needs every client's value at once. So each value
 * is kept as it comes, in its client's place, and the node's aggregator runs at
 * the end over the clients that reported, in client order: the result depends on
 * the values alone, not on the threads that computed them or their order.
 *
 * A budgeted store, as the deployment's reorder window is (src/deploy/collect.h):
 * values are held in memory up to the aggregator's memory_mb, and the rest wait
 * in a temporary file (removed when closed), client i's at offset i x its bytes.
 * The aggregators read every update a block of coordinates at a time, from
 * memory or from the file, and carry their sums across blocks in coordinate
 * order (src/kernels/robust_rows.c): the bits are the same whatever the budget.
 * Memory is then the budget plus a block of every client's coordinates per
 * worker (and Krum's n x n distances), whatever the model's size.
 *
 * Over MPI, each rank keeps its own clients' values so, and sends them to rank
 * 0 (src/exec/backend_mpi.c, fedc__agg_robust_each), who adds them to its store
 * in their clients' places: the aggregator then runs over the same values in the
 * same order as in one process, with the same bits. A partial sum pushed here,
 * or an end with clients no rank added, is refused. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "exec/exec.h"
#include "kernels/robust.h"

int64_t fedc__robust_spilled;

typedef struct fedc__robust_rows {
    int64_t clients;
    int64_t seen;    /* the clients added, values or holes */
    float **rows;    /* per client: its value in memory, or NULL */
    uint8_t *filed;  /* per client: its value is in the file */
    double *weight;  /* per client */
    int *client;     /* at the end: the reported clients, in order */
    size_t held;     /* bytes of values in memory */
    FILE *spill;     /* the file, once a value did not fit */
    size_t bytes;    /* of one value */
} fedc__robust_rows;

void fedc__agg_robust_free(fedc__agg *a) {
    fedc__robust_rows *k = a->robust;
    if (!k) return;
    for (int64_t i = 0; k->rows && i < k->clients; i++) fedc_free(k->rows[i]);
    if (k->spill) fclose(k->spill);
    fedc_free(k->rows), fedc_free(k->filed), fedc_free(k->weight), fedc_free(k->client), fedc_free(k);
    a->robust = NULL;
}

/* The store, made at the first value (or at the end, when none came). */
static fedc_status store(fedc__agg *a) {
    if (a->robust) return FEDC_OK;
    fedc__robust_rows *k = a->robust = fedc_calloc(1, sizeof *k);
    size_t n = (size_t)(a->clients ? a->clients : 1);
    if (k) {
        k->clients = a->clients, k->bytes = a->bytes;
        k->rows = fedc_calloc(n, sizeof *k->rows);
        k->filed = fedc_calloc(n, sizeof *k->filed);
        k->weight = fedc_calloc(n, sizeof *k->weight);
        k->client = fedc_calloc(n, sizeof *k->client);
    }
    if (k && k->rows && k->filed && k->weight && k->client) return FEDC_OK;
    fedc__agg_robust_free(a);
    return fedc_error(FEDC_ENOMEM, "robust_aggregate: no memory for %lld clients", (long long)a->clients);
}

/* Client i's value x into the file. */
static fedc_status spill(fedc__robust_rows *k, int64_t i, const void *x) {
    if (!k->spill && !(k->spill = tmpfile()))
        return fedc_error(FEDC_EIO, "robust_aggregate: cannot make a temporary file for the updates beyond the memory "
                          "budget (TMPDIR?)");
    off_t at = (off_t)i * (off_t)k->bytes;
    if (pwrite(fileno(k->spill), x, k->bytes, at) != (ssize_t)k->bytes)
        return fedc_error(FEDC_EIO, "robust_aggregate: cannot write client %lld's update to the temporary file (disk "
                          "full?)", (long long)i);
    k->filed[i] = 1;
    fedc__robust_spilled++;
    return FEDC_OK;
}

fedc_status fedc__agg_robust_add(fedc__agg *a, int64_t i, const void *x, const void *w) {
    fedc_status st = store(a);
    if (st) return st;
    fedc__robust_rows *k = a->robust;
    if (i < 0 || i >= k->clients)
        return fedc_error(FEDC_EINTERNAL, "robust_aggregate: client %lld of %lld", (long long)i, (long long)k->clients);
    k->seen++;
    if (!x) return FEDC_OK; /* left out */
    k->weight[i] = *(const float *)w;
    size_t budget = (size_t)a->robust_settings.memory_mb << 20;
    if (!k->rows[i] && budget && k->held + k->bytes > budget) return spill(k, i, x);
    if (!k->rows[i] && !(k->rows[i] = fedc_malloc(k->bytes ? k->bytes : 1)))
        return fedc_error(FEDC_ENOMEM, "robust_aggregate: no memory for client %lld's %zu bytes", (long long)i, k->bytes);
    k->held += k->bytes;
    memcpy(k->rows[i], x, k->bytes);
    return FEDC_OK;
}

fedc_status fedc__agg_robust_each(fedc__agg *a, int64_t *seen, int64_t *values,
                                  fedc_status (*give)(void *ctx, int64_t i, const void *x, double w), void *ctx) {
    fedc_status st = store(a);
    if (st) return st;
    fedc__robust_rows *k = a->robust;
    *seen = k->seen, *values = 0;
    for (int64_t i = 0; i < k->clients; i++) *values += k->rows[i] || k->filed[i];
    void *row = give && *values ? fedc_malloc(k->bytes ? k->bytes : 1) : NULL; /* a filed value, read back */
    if (give && *values && !row) return fedc_error(FEDC_ENOMEM, "robust_aggregate: no memory for a client's %zu bytes", k->bytes);
    for (int64_t i = 0; give && !st && i < k->clients; i++) {
        const void *x = k->rows[i];
        if (!x && k->filed[i]) {
            if (pread(fileno(k->spill), row, k->bytes, (off_t)i * (off_t)k->bytes) != (ssize_t)k->bytes)
                st = fedc_error(FEDC_EIO, "robust_aggregate: cannot read client %lld's update back from the temporary "
                                "file", (long long)i);
            x = row;
        }
        if (x && !st) st = give(ctx, i, x, k->weight[i]);
    }
    fedc_free(row);
    return st;
}

fedc_status fedc__agg_robust_holes(fedc__agg *a, int64_t holes) {
    fedc_status st = store(a);
    if (!st) a->robust->seen += holes;
    return st;
}

void fedc__agg_robust_attackers(fedc__agg *a, const fedc_program *p, const fedc__node *n, const void *const *in,
                                const size_t *stride) {
    fedc__robust_operands o = {-1, -1, -1, -1};
    if (n->op == FEDC_OP_ROBUST_AGGREGATE) o = fedc__robust_operands_of(n);
    a->robust_flags = o.flags >= 0 ? in[o.flags] : NULL;
    a->robust_flags_stride = o.flags >= 0 ? stride[o.flags] : 0;
    a->robust_center = o.center >= 0 ? in[o.center] : NULL;
    a->robust_zero_bound = o.bound >= 0 ? in[o.bound] : NULL;
    a->robust_zero_sizes = o.sizes >= 0 ? in[o.sizes] : NULL;
    a->robust_zero_leaves = o.sizes >= 0 ? p->nodes[n->in[o.sizes]].type.dims[0] : 0;
}

/* Writes coordinates [lo, lo + count) of the reported client j (an attack's, fedc__robust_attack_rows). */
static fedc_status write_back(void *ctx, int j, int64_t lo, int64_t count, const float *from) {
    const fedc__robust_rows *k = ctx;
    if (k->rows[j]) {
        memcpy(k->rows[j] + lo, from, (size_t)count * sizeof(float));
        return FEDC_OK;
    }
    off_t at = (off_t)k->client[j] * (off_t)k->bytes + (off_t)lo * (off_t)sizeof(float);
    size_t want = (size_t)count * sizeof(float);
    if (pwrite(fileno(k->spill), from, want, at) != (ssize_t)want)
        return fedc_error(FEDC_EIO, "robust_aggregate: cannot write client %d's attacked update to the temporary file "
                          "(disk full?)", k->client[j]);
    return FEDC_OK;
}

/* The node's aggregator over s, into out: when it has an attack, ALIE's or
 * IPM's value into the flagged clients' places first, then its zeroing (the
 * count of the clients zeroed after the aggregate) and cclip's centre off every
 * value; a mean after an attack is the weighted_mean op's. */
static fedc_status aggregate(fedc__agg *a, const fedc__robust_set *s) {
    const fedc__robust_rows *k = a->robust;
    bool attacked = a->robust_attack != FEDC__ROBUST_ATTACK_NONE;
    if (attacked && !a->robust_flags)
        return fedc_error(FEDC_EUNSUPPORTED, "robust_aggregate: its attack's flags are not known here (an attack runs "
                          "in a simulation's round, before the clients run)");
    const int32_t *sizes = attacked ? a->robust_zero_sizes : NULL;
    fedc__robust_attack_job job = {.set = s, .client = k->client, .clients = k->clients, .attack = a->robust_attack,
                                   .value = a->robust_attack_value, .flags = a->robust_flags,
                                   .flags_stride = a->robust_flags_stride, .center = a->robust_center,
                                   .bound = sizes ? *a->robust_zero_bound : 0, .sizes = sizes,
                                   .leaves = a->robust_zero_leaves, .write = write_back, .write_ctx = a->robust};
    int zeroed = 0;
    float *out = a->out;
    fedc_status st = attacked ? fedc__robust_attack_rows(&job, &zeroed) : FEDC_OK;
    if (!st && attacked && a->robust_settings.kind == FEDC_ROBUST_MEAN) st = fedc__robust_mean_rows(&job, out);
    else if (!st) st = fedc__robust_aggregate_set(&a->robust_settings, s, NULL, out, a->robust_kept, &a->robust_nkept);
    if (sizes) out[s->d] = (float)zeroed;
    return st;
}

/* Reads coordinates [lo, lo + count) of the reported client j (fedc__robust_set's read). */
static fedc_status read_back(void *ctx, int j, int64_t lo, int64_t count, float *to) {
    const fedc__robust_rows *k = ctx;
    off_t at = (off_t)k->client[j] * (off_t)k->bytes + (off_t)lo * (off_t)sizeof(float);
    size_t want = (size_t)count * sizeof(float);
    if (pread(fileno(k->spill), to, want, at) != (ssize_t)want)
        return fedc_error(FEDC_EIO, "robust_aggregate: cannot read client %d's update back from the temporary file",
                          k->client[j]);
    return FEDC_OK;
}

fedc_status fedc__agg_robust_end(fedc__agg *a) {
    a->robust_nkept = 0;
    fedc_status st = store(a);
    if (st) return st;
    fedc__robust_rows *k = a->robust;
    if (k->seen != k->clients) { /* another rank ran the rest: the values are not all here */
        fedc__agg_robust_free(a);
        return fedc_error(FEDC_EUNSUPPORTED, "robust_aggregate: a robust aggregator needs every client's value in one "
                          "process; it does not run over MPI ranks yet");
    }
    int n = 0;
    for (int64_t i = 0; i < k->clients; i++) { /* the reported clients, packed in client order */
        if (!k->rows[i] && !k->filed[i]) continue;
        float *row = k->rows[i];
        k->rows[i] = NULL;
        k->rows[n] = row, k->weight[n] = k->weight[i], k->client[n++] = (int)i;
    }
    bool zeroing = a->robust_attack != FEDC__ROBUST_ATTACK_NONE && a->robust_zero_sizes; /* its flags: the last number */
    fedc__robust_set s = {.x = (const float *const *)k->rows, .read = read_back, .read_ctx = k, .n = n,
                          .d = a->count - zeroing, .w = k->weight};
    if (!a->robust_kept && !(a->robust_kept = fedc_malloc((size_t)(k->clients ? k->clients : 1) * sizeof *a->robust_kept)))
        st = fedc_error(FEDC_ENOMEM, "robust_aggregate: no memory for %lld clients", (long long)k->clients);
    if (!st) st = aggregate(a, &s);
    for (int j = 0; !st && j < a->robust_nkept; j++) a->robust_kept[j] = k->client[a->robust_kept[j]]; /* cohort places */
    fedc__agg_robust_free(a);
    return st; /* its message names the aggregator */
}
