/* How the robust aggregators read the cohort's updates: a block of coordinates
 * at a time, from memory or through the store's reader (robust.h). Blocks are
 * fixed (FEDC__ROBUST_BLOCK coordinates), so what a kernel sums, and in what
 * order, does not depend on where the updates are or on the threads. */
#include <stdio.h>
#include <string.h>

#include "kernels/robust.h"

int fedc__robust_workers(const fedc__robust_set *s) { return s->pool ? fedc_pool_threads(s->pool) : 1; }

void fedc__robust_block(const fedc__robust_set *s, int64_t block, int64_t *lo, int64_t *hi) {
    *lo = block * FEDC__ROBUST_BLOCK;
    *hi = *lo + FEDC__ROBUST_BLOCK < s->d ? *lo + FEDC__ROBUST_BLOCK : s->d;
}

void fedc__robust_blocks(const fedc__robust_set *s, fedc_pool_task task, void *ctx) {
    fedc_pool_run(s->pool, (s->d + FEDC__ROBUST_BLOCK - 1) / FEDC__ROBUST_BLOCK, task, ctx);
}

static bool all_in_memory(const fedc__robust_set *s) {
    for (int i = 0; i < s->n; i++)
        if (!s->x[i]) return false;
    return true;
}

fedc_status fedc__robust_room(const fedc__robust_set *s, int count, int copies, const float ***rows, float **scratch) {
    size_t nrows = (size_t)copies * (size_t)(count ? count : 1);
    bool spilled = !all_in_memory(s);
    *rows = fedc_malloc(nrows * sizeof **rows);
    *scratch = spilled ? fedc_malloc(nrows * FEDC__ROBUST_BLOCK * sizeof **scratch) : NULL;
    if (*rows && (*scratch || !spilled)) return FEDC_OK;
    fedc_free(*rows), fedc_free(*scratch);
    *rows = NULL, *scratch = NULL;
    return fedc_error(FEDC_ENOMEM, "robust aggregation: no memory for %d blocks of %d clients' coordinates", copies,
                      count);
}

fedc_status fedc__robust_fetch(const fedc__robust_set *s, const int *sel, int count, int64_t lo, int64_t hi,
                               float *scratch, const float **rows) {
    for (int i = 0; i < count; i++) {
        int c = sel ? sel[i] : i;
        if (s->x[c]) {
            rows[i] = s->x[c] + lo;
            continue;
        }
        float *to = scratch + (size_t)i * FEDC__ROBUST_BLOCK;
        fedc_status st = s->read ? s->read(s->read_ctx, c, lo, hi - lo, to)
                                 : fedc_error(FEDC_EINVAL, "robust aggregation: client %d's update is missing", c);
        if (st) return st;
        rows[i] = to;
    }
    return FEDC_OK;
}

const float **fedc__robust_fetch_worker(const fedc__robust_set *s, const int *sel, int count, const float **rows,
                                        float *scratch, int worker, int64_t lo, int64_t hi, fedc__robust_failure *f) {
    rows += (size_t)worker * (size_t)count;
    if (scratch) scratch += (size_t)worker * (size_t)count * FEDC__ROBUST_BLOCK;
    fedc_status st = fedc__robust_fetch(s, sel, count, lo, hi, scratch, rows);
    if (st) fedc__robust_fail(f, st);
    return st ? NULL : rows;
}

void fedc__robust_fail(fedc__robust_failure *f, fedc_status st) {
    int unset = 0;
    if (!atomic_compare_exchange_strong(&f->set, &unset, 1)) return; /* the first one is reported */
    f->status = st;
    snprintf(f->msg, sizeof f->msg, "%s", fedc_errmsg());
}

fedc_status fedc__robust_failed(fedc__robust_failure *f) {
    return atomic_load(&f->set) ? fedc_error(f->status, "%s", f->msg) : FEDC_OK;
}
