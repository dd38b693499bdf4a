/* An asynchronous run's clients in flight in a checkpoint (fedbuff, fedasync:
 * src/fl/train_async.c), so that a resumed run is the uninterrupted one, bit for
 * bit:
 *
 *   async/flights     f64[n, 4]: each client in flight as (client, dispatch,
 *                     version, due): its population index, its dispatch number,
 *                     the model version it trains on, its report's virtual time
 *                     (integers below 2^53, so exact)
 *   async/version<v>  f32[model size]: model version v, one for each version a
 *                     client in flight holds (the current one is the model's own)
 *   async.dispatched  metadata: the dispatches so far (the next client's place in
 *                     the blocks of fedc_sample_clients)
 *   async.in_flight   metadata: n (0: no tensors; a checkpoint holds none empty)
 *
 * The rest of the simulation is the model, the server state and the virtual
 * time the checkpoint already holds: the block of candidates is drawn again
 * from its seed, and where the clients sit in memory changes no result (the
 * next report is the earliest by due time, client, dispatch). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fl/train_async.h"

/* The snapshots a client in flight holds. */
static bool held(const snapshot *s) { return s->refs > 0; }

int fedc__train_async_num_entries(const trainer *t) {
    const struct train_async *a = t->async;
    if (!a || a->nflights == 0) return 0;
    int n = 1;
    for (int i = 0; i <= a->c; i++) n += held(&a->snaps[i]);
    return n;
}

/* Where the flights and versions sit in memory differs between a run and its
 * resume; the checkpoint lists them in an order of their own (flights by
 * dispatch, versions increasing), so that both write the same bytes. */
int fedc__train_async_entries(const trainer *t, fedc_tensor_entry *e) {
    struct train_async *a = t->async;
    if (!a || a->nflights == 0) return 0;
    uint64_t after = 0; /* the flights by dispatch: each time, the lowest above the last */
    for (int i = 0; i < a->nflights; i++) {
        const flight *f = NULL;
        for (int j = 0; j < a->nflights; j++)
            if ((i == 0 || a->flights[j].dispatch > after) && (!f || a->flights[j].dispatch < f->dispatch))
                f = &a->flights[j];
        double *row = a->saved + 4 * i;
        row[0] = (double)f->client, row[1] = (double)f->dispatch, row[2] = f->version, row[3] = f->due;
        after = f->dispatch;
    }
    int n = 0, last = -1;
    e[n++] = (fedc_tensor_entry){"async/flights", fedc_type_make(FEDC_F64, 2, (int64_t[]){a->nflights, 4}), a->saved};
    fedc_type model = fedc_type_make(FEDC_F32, 1, (int64_t[]){fedc_model_size(t->model)});
    for (;;) { /* the held versions, increasing */
        const snapshot *next = NULL;
        for (int i = 0; i <= a->c; i++)
            if (held(&a->snaps[i]) && a->snaps[i].version > last && (!next || a->snaps[i].version < next->version))
                next = &a->snaps[i];
        if (!next) break;
        snprintf(a->names[n], sizeof a->names[n], "async/version%d", next->version);
        e[n] = (fedc_tensor_entry){a->names[n], model, next->params};
        n++;
        last = next->version;
    }
    return n;
}

int fedc__train_async_metadata(const trainer *t, fedc_metadata_entry *e) {
    struct train_async *a = t->async;
    if (!a) return 0;
    snprintf(a->meta[0], sizeof a->meta[0], "%llu", (unsigned long long)a->dispatched);
    snprintf(a->meta[1], sizeof a->meta[1], "%d", a->nflights);
    e[0] = (fedc_metadata_entry){"async.dispatched", a->meta[0]};
    e[1] = (fedc_metadata_entry){"async.in_flight", a->meta[1]};
    return 2;
}

/* ------------------------------------------------------------- restore -- */

static fedc_status count(const char *path, const fedc_safetensors *s, const char *key, unsigned long long max,
                         unsigned long long *out) {
    const char *v = fedc_safetensors_metadata(s, key);
    if (!v)
        return fedc_error(FEDC_EINVAL, "%s: the metadata has no \"%s\": its asynchronous run's clients in flight were "
                          "not kept (a fedc before resuming fedbuff and fedasync wrote it); train afresh", path, key);
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || *end || errno || x > max)
        return fedc_error(FEDC_EPARSE, "%s: \"%s\" is \"%s\", not a count from 0 to %llu", path, key, v, max);
    *out = x;
    return FEDC_OK;
}

/* x as an integer in [lo, hi], or an error naming the row and column. */
static fedc_status whole(const char *path, int row, const char *what, double x, double lo, double hi) {
    if (x == floor(x) && x >= lo && x <= hi) return FEDC_OK;
    return fedc_error(FEDC_EPARSE, "%s: \"async/flights\" row %d: the %s %g is not an integer from %.17g to %.17g", path,
                      row, what, x, lo, hi);
}

/* Flight i from its row, checked against the run: a client of the population,
 * a dispatch already made, a version before the checkpoint's round. */
static fedc_status read_flight(const trainer *t, const char *path, const double *row, int i, int next_round,
                               flight *f) {
    const struct train_async *a = t->async;
    double clients = (double)fedc_dataset_num_clients(t->train);
    fedc_status st = whole(path, i, "client", row[0], 0, clients - 1);
    if (!st) st = whole(path, i, "dispatch", row[1], 0, (double)a->dispatched - 1);
    if (!st) st = whole(path, i, "version", row[2], 0, next_round - 1);
    if (!st && !(row[3] >= 0 && isfinite(row[3])))
        st = fedc_error(FEDC_EPARSE, "%s: \"async/flights\" row %d: the due time %g is not a virtual time", path, i, row[3]);
    for (int j = 0; !st && j < a->nflights; j++)
        if (a->flights[j].client == (int64_t)row[0] || a->flights[j].dispatch == (uint64_t)row[1])
            st = fedc_error(FEDC_EPARSE, "%s: \"async/flights\" rows %d and %d: the same client or dispatch", path, j, i);
    *f = (flight){(int64_t)row[0], (uint64_t)row[1], (int)row[2], -1, row[3]};
    return st;
}

/* The snapshot of version v: one already read, or the checkpoint's. */
static fedc_status version_snapshot(trainer *t, const char *path, const fedc_safetensors *s, int v, int *out) {
    bool fresh;
    fedc_status st = fedc__train_async_snapshot(t, v, out, &fresh);
    if (st || !fresh) return st;
    char name[32];
    snprintf(name, sizeof name, "async/version%d", v);
    st = fedc__restore_tensor(s, name, t->async->snaps[*out].params,
                              fedc_type_make(FEDC_F32, 1, (int64_t[]){fedc_model_size(t->model)}));
    if (st) {
        char why[512];
        snprintf(why, sizeof why, "%s", fedc_errmsg());
        return fedc_error(st, "%s: the model version %d that a client in flight holds: %s", path, v, why);
    }
    return FEDC_OK;
}

fedc_status fedc__train_async_restore(trainer *t, const char *path, const fedc_safetensors *s) {
    struct train_async *a = t->async;
    unsigned long long dispatched, n;
    int next_round = atoi(fedc_safetensors_metadata(s, "next_round")); /* checked by the caller */
    fedc_status st = count(path, s, "async.dispatched", (1ull << 53) - 1, &dispatched);
    if (!st) st = count(path, s, "async.in_flight", (unsigned long long)a->c, &n);
    if (st) return st;
    a->dispatched = dispatched;
    a->nflights = 0;
    a->block_no = -1;
    for (int i = 0; i <= a->c; i++) a->snaps[i].refs = 0;
    if (n == 0) return FEDC_OK;
    fedc_tensor_entry e;
    if ((st = fedc_safetensors_find(s, "async/flights", &e))) return st;
    fedc_type want = fedc_type_make(FEDC_F64, 2, (int64_t[]){(int64_t)n, 4});
    if (e.type.dtype != FEDC_F64 || !fedc_type_same_shape(&e.type, &want)) {
        char x[64];
        return fedc_error(FEDC_EPARSE, "%s: \"async/flights\" is %s, async.in_flight says f64[%llu,4]", path,
                          fedc_type_str(&e.type, x, sizeof x), n);
    }
    const char *rows = e.data;
    for (int i = 0; !st && i < (int)n; i++) {
        flight f;
        double row[4];
        memcpy(row, rows + sizeof row * (size_t)i, sizeof row); /* the file's bytes need not be aligned */
        st = read_flight(t, path, row, i, next_round, &f);
        if (!st) st = version_snapshot(t, path, s, f.version, &f.snapshot);
        if (!st) a->snaps[f.snapshot].refs++, a->flights[a->nflights++] = f;
    }
    return st;
}
