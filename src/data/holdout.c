/* Held-out splits: every client's examples cut by order into a train part and a
 * test part, the way LEAF splits Shakespeare (split_data.py keeps the first
 * int(train_frac * n) samples of each role for training, at least one). Text
 * in example order has no overlap between the parts, so the test part is truly
 * unseen: a role's last lines. Both splits are views that load a client of the
 * source and keep their rows of it. */
#include <math.h>

#include "data/dataset.h"

typedef struct holdout_view {
    fedc_dataset *source; /* borrowed: outlives the view */
    int64_t *map;         /* view client -> source client */
    double fraction;      /* held out */
    bool held_out;        /* the test part, else the train part */
} holdout_view;

/* Examples of an n-example client that train: LEAF's max(1, int((1 - f) n)). */
static int64_t train_rows(int64_t n, double fraction) {
    if (n == 0) return 0;
    int64_t keep = (int64_t)floor((1.0 - fraction) * (double)n);
    return keep < 1 ? 1 : keep;
}

static fedc_status holdout_load(fedc_dataset *ds, int64_t i, fedc_client_data **out) {
    const holdout_view *v = ds->impl;
    fedc_client_data *all;
    fedc_status st = fedc_dataset_client(v->source, v->map[i], &all);
    if (st) return st;
    int64_t keep = train_rows(all->num_examples, v->fraction);
    st = v->held_out ? fedc__client_rows(all, keep, all->num_examples, out) : fedc__client_rows(all, 0, keep, out);
    fedc_client_data_destroy(all);
    return st;
}

static void holdout_destroy(void *impl) {
    holdout_view *v = impl;
    if (!v) return;
    fedc_free(v->map);
    fedc_free(v);
}

static const fedc__dataset_ops holdout_ops = {holdout_load, holdout_destroy};

/* One side of the split: the source's clients that have rows on that side. */
static fedc_status make_view(fedc_dataset *source, double fraction, bool held_out, fedc_dataset **out) {
    holdout_view *v = fedc_calloc(1, sizeof *v);
    int64_t n = source->n;
    if (v) v->map = fedc_malloc((size_t)(n ? n : 1) * sizeof *v->map);
    if (!v || !v->map) {
        holdout_destroy(v);
        return fedc_error(FEDC_ENOMEM, "%s: out of memory for a held-out split", source->path);
    }
    v->source = source;
    v->fraction = fraction;
    v->held_out = held_out;
    fedc_status st = fedc__dataset_create(out, &holdout_ops, source->format, source->path, v);
    for (int64_t i = 0; !st && i < n; i++) {
        int64_t total = source->examples[i], keep = train_rows(total, fraction);
        int64_t rows = held_out ? total - keep : keep;
        if (rows == 0) continue;
        v->map[(*out)->n] = i;
        st = fedc__dataset_add_client(*out, source->ids[i], rows);
    }
    if (st) {
        fedc_dataset_destroy(*out);
        *out = NULL;
    }
    return st;
}

fedc_status fedc_dataset_holdout(fedc_dataset *ds, double fraction, fedc_dataset **train, fedc_dataset **test) {
    *train = *test = NULL;
    if (!(fraction > 0.0 && fraction < 1.0))
        return fedc_error(FEDC_EINVAL, "%s: the held-out fraction %g is not in (0, 1)", ds->path, fraction);
    fedc_status st = make_view(ds, fraction, false, train);
    if (!st) st = make_view(ds, fraction, true, test);
    if (!st && (*test)->n == 0)
        st = fedc_error(FEDC_EINVAL, "%s: holding out %g of each client's examples leaves no test example (every "
                        "client has too few)", ds->path, fraction);
    if (st) {
        fedc_dataset_destroy(*train), fedc_dataset_destroy(*test);
        *train = *test = NULL;
    }
    return st;
}
