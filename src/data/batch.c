/* Batching a client's examples for a fold, with FedJAX's semantics
 * (google/fedjax, fedjax/core/client_datasets.py: ClientDataset.batch, padded_batch
 * and shuffle_repeat_batch, implemented there by BatchView, PaddedBatchView and
 * ShuffleRepeatBatchView).
 *
 * FedJAX yields batches one at a time; fedc stacks them, because a fold consumes
 * sequences (docs/federated.md): every array feature f[n, ...] becomes
 * f[steps, batch_size, ...], and one f32 mask [steps, batch_size] says which rows are
 * real (1) and which are padding (0, with every padded feature row zero). The mask
 * plays the part of FedJAX's EXAMPLE_MASK_KEY ('__mask__') feature, which is bool
 * and attached by padded_batch; here it is kept beside the features, for every kind
 * of batching, so nothing can collide with a feature's name.
 *
 * Strings features are skipped: a batch is a dense array, and text must be turned
 * into arrays (tokens) by a preprocessing hook first. */
#include <string.h>

#include "data/dataset.h"
#include "data/rng_numpy.h"


/* The high byte of the element indices the example shuffles draw, so that they
 * never reuse the uniforms a kernel (dropout) draws from the same
 * (seed, round, client, step) stream, which start at index 0. */
#define SHUFFLE_TAG ((uint64_t)0x42 << 56)

/* ------------------------------------------------------------- storage -- */

void fedc_batches_destroy(fedc_batches *b) {
    if (!b) return;
    for (int i = 0; i < b->num_features; i++) {
        fedc_free(b->features[i].name);
        fedc_free(b->features[i].data);
    }
    fedc_free(b->features);
    fedc_free(b->mask);
    fedc_free(b);
}

const fedc_feature *fedc_batches_feature(const fedc_batches *b, const char *name) {
    for (int i = 0; i < b->num_features; i++)
        if (strcmp(b->features[i].name, name) == 0) return &b->features[i];
    return NULL;
}

/* Bytes of one example of an array feature (its dims after the first). */
static size_t example_bytes(const fedc_feature *f) {
    size_t bytes = fedc_dtype_size(f->type.dtype);
    for (int d = 1; d < f->type.rank; d++) bytes *= (size_t)f->type.dims[d];
    return bytes;
}

/* Checks that [steps, batch_size] rows of every array feature can be stacked: the
 * added axis fits FEDC_MAX_RANK and no size overflows. */
static fedc_status check_shapes(const fedc_client_data *c, int64_t steps, int64_t batch_size, const char *what) {
    if (steps > INT64_MAX / batch_size)
        return fedc_error(FEDC_ERANGE, "client \"%s\": %s: %lld steps of %lld rows overflow", c->id, what,
                          (long long)steps, (long long)batch_size);
    size_t rows = (size_t)(steps * batch_size);
    for (int i = 0; i < c->num_features; i++) {
        const fedc_feature *f = &c->features[i];
        if (f->kind != FEDC_FEATURE_ARRAY) continue;
        if (f->type.rank + 1 > FEDC_MAX_RANK)
            return fedc_error(FEDC_ESHAPE, "client \"%s\": %s: feature \"%s\" has rank %d; batching adds an axis and "
                              "ranks stop at %d", c->id, what, f->name, f->type.rank, FEDC_MAX_RANK);
        size_t row = example_bytes(f);
        if (row && rows > SIZE_MAX / row)
            return fedc_error(FEDC_ERANGE, "client \"%s\": %s: feature \"%s\" would not fit in memory", c->id, what,
                              f->name);
    }
    return FEDC_OK;
}

/* Adds the stacked, zeroed [steps, batch_size, ...] version of array feature f. */
static fedc_status add_stacked(fedc_batches *b, const fedc_feature *f) {
    size_t rows = (size_t)(b->steps * b->batch_size);
    fedc_feature *g = &b->features[b->num_features];
    g->name = fedc__strdup(f->name);
    g->data = g->name ? fedc_calloc(rows ? rows : 1, example_bytes(f) ? example_bytes(f) : 1) : NULL;
    if (!g->data) {
        fedc_free(g->name);
        return FEDC_ENOMEM;
    }
    g->kind = FEDC_FEATURE_ARRAY;
    g->offsets = NULL;
    g->type = f->type;
    g->type.rank = f->type.rank + 1;
    g->type.dims[0] = b->steps;
    g->type.dims[1] = b->batch_size;
    for (int d = 1; d < f->type.rank; d++) g->type.dims[d + 1] = f->type.dims[d];
    g->type.placement = FEDC_LOCAL;
    b->num_features++;
    return FEDC_OK;
}

/* New batches for c: its array features stacked to [steps, batch_size, ...] and a
 * mask, all zero (so rows left unfilled are padding). */
static fedc_status batches_create(const fedc_client_data *c, int64_t steps, int64_t batch_size, const char *what,
                                  fedc_batches **out) {
    *out = NULL;
    fedc_status st = check_shapes(c, steps, batch_size, what);
    if (st) return st;
    fedc_batches *b = fedc_calloc(1, sizeof *b);
    if (b) {
        b->steps = steps;
        b->batch_size = batch_size;
        b->features = fedc_calloc(c->num_features ? (size_t)c->num_features : 1, sizeof *b->features);
        b->mask = fedc_calloc(steps ? (size_t)(steps * batch_size) : 1, sizeof *b->mask);
    }
    st = b && b->features && b->mask ? FEDC_OK : FEDC_ENOMEM;
    for (int i = 0; !st && i < c->num_features; i++)
        if (c->features[i].kind == FEDC_FEATURE_ARRAY) st = add_stacked(b, &c->features[i]);
    if (st) {
        fedc_batches_destroy(b);
        return fedc_error(FEDC_ENOMEM, "client \"%s\": %s: out of memory for %lld batches of %lld", c->id, what,
                          (long long)steps, (long long)batch_size);
    }
    *out = b;
    return FEDC_OK;
}

/* Row `row` of every stacked feature := example `example` of the client. Stacked
 * features are c's array features in c's order. */
static void copy_example(fedc_batches *b, const fedc_client_data *c, int64_t row, int64_t example) {
    int j = 0;
    for (int i = 0; i < c->num_features; i++) {
        const fedc_feature *f = &c->features[i];
        if (f->kind != FEDC_FEATURE_ARRAY) continue;
        size_t bytes = example_bytes(f);
        memcpy((char *)b->features[j++].data + (size_t)row * bytes, (const char *)f->data + (size_t)example * bytes,
               bytes);
    }
    b->mask[row] = 1.0f;
}

/* Batches of the first `real` examples in order: FedJAX's BatchView and
 * PaddedBatchView, which slice [start, start + batch_size) for start = 0,
 * batch_size, ... */
static fedc_status sequential(const fedc_client_data *c, int64_t steps, int64_t batch_size, int64_t real,
                              const char *what, fedc_batches **out) {
    fedc_status st = batches_create(c, steps, batch_size, what, out);
    if (st) return st;
    for (int64_t r = 0; r < real; r++) copy_example(*out, c, r, r);
    return FEDC_OK;
}

/* --------------------------------------------------------- in order -- */

/* FedJAX's batch(): consecutive slices; the final, smaller one is yielded unless
 * drop_remainder ("drop the final batch when it contains fewer than batch_size
 * examples"). FedJAX leaves that batch short; fedc pads it to batch_size and masks
 * the padding, which is what a fixed-shape fold needs. */
fedc_status fedc_batch(const fedc_client_data *c, int64_t batch_size, bool drop_remainder, fedc_batches **out) {
    *out = NULL;
    if (batch_size < 1)
        return fedc_error(FEDC_EINVAL, "client \"%s\": batch: batch_size is %lld; it must be at least 1", c->id,
                          (long long)batch_size);
    int64_t n = c->num_examples;
    int64_t steps = n / batch_size + (!drop_remainder && n % batch_size != 0);
    int64_t real = drop_remainder ? steps * batch_size : n;
    return sequential(c, steps, batch_size, real, "batch", out);
}

/* FedJAX's padded_batch(): the same slices as batch() without drop_remainder, with
 * a mask on every batch and the final one zero-padded. FedJAX pads that final batch
 * only up to one of num_batch_size_buckets sizes (_pick_final_batch_size: halve
 * batch_size up to num_batch_size_buckets - 1 times while the half still holds the
 * final batch's examples), so a jitted step sees few shapes. In fedc every step of
 * a fold has batch_size rows, so the final batch is padded to batch_size: FedJAX's
 * default of one bucket. With more buckets the real rows and their mask are still
 * exactly FedJAX's; FedJAX's final batch would merely stop earlier, and the rows
 * fedc adds past it are zero with mask 0, so a masked loss is the same. */
fedc_status fedc_padded_batch(const fedc_client_data *c, int64_t batch_size, int num_batch_size_buckets,
                              fedc_batches **out) {
    *out = NULL;
    if (num_batch_size_buckets < 1)
        return fedc_error(FEDC_EINVAL, "client \"%s\": padded_batch: num_batch_size_buckets is %d; it must be at "
                          "least 1", c->id, num_batch_size_buckets);
    if (batch_size < 1)
        return fedc_error(FEDC_EINVAL, "client \"%s\": padded_batch: batch_size is %lld; it must be at least 1", c->id,
                          (long long)batch_size);
    int64_t n = c->num_examples;
    return sequential(c, n / batch_size + (n % batch_size != 0), batch_size, n, "padded_batch", out);
}

/* --------------------------------------------------------- shuffled -- */

/* The number of batches FedJAX's ShuffleRepeatBatchView produces: with num_epochs,
 * ceil(n * num_epochs / batch_size) (floor with drop_remainder), cut to num_steps
 * when that is given too; with num_steps alone, num_steps (drop_remainder has no
 * effect); with neither, FedJAX repeats forever, which cannot be stacked. */
static fedc_status shuffle_steps(const fedc_client_data *c, int64_t batch_size, int num_epochs, int64_t num_steps,
                                 bool drop_remainder, int64_t *steps) {
    int64_t n = c->num_examples;
    if (num_epochs < 0 && num_steps < 0)
        return fedc_error(FEDC_EINVAL, "client \"%s\": shuffle_repeat_batch: neither num_epochs nor num_steps is "
                          "set, so it would repeat forever", c->id);
    if (num_epochs < 0) {
        *steps = num_steps;
    } else {
        if (n > 0 && num_epochs > INT64_MAX / n)
            return fedc_error(FEDC_ERANGE, "client \"%s\": shuffle_repeat_batch: %d epochs of %lld examples overflow",
                              c->id, num_epochs, (long long)n);
        int64_t total = n * num_epochs;
        *steps = total / batch_size + (!drop_remainder && total % batch_size != 0);
        if (num_steps >= 0 && num_steps < *steps) *steps = num_steps;
    }
    if (*steps > 0 && n == 0)
        return fedc_error(FEDC_EINVAL, "client \"%s\": shuffle_repeat_batch: %lld steps asked of a client without "
                          "examples", c->id, (long long)*steps);
    return FEDC_OK;
}

/* The next epoch's order of the n examples into perm (which holds the last one's,
 * the identity before the first): the counter RNG's or NumPy's. */
typedef struct epoch_order {
    bool numpy;
    fedc__mt19937 mt; /* numpy: RandomState(seed), as FedJAX makes it */
    uint64_t seed;    /* counter: epoch e is stream (seed, round, client, e) */
    uint32_t round, client;
} epoch_order;

static void next_epoch(epoch_order *o, int64_t *perm, int64_t n, int64_t epoch) {
    if (o->numpy) fedc__numpy_shuffle(&o->mt, perm, n);
    else fedc__permutation(perm, n, fedc_rng_stream_make(o->seed, o->round, o->client, (uint32_t)epoch), SHUFFLE_TAG);
}

/* FedJAX's shuffle_repeat_batch(): example indices come from a stream of epochs,
 * each a shuffle of all n examples without replacement, and every batch takes the
 * next batch_size of them, so each batch is full (the mask is all ones: FedJAX:
 * "batches from shuffle_repeat_batch() always contain exactly batch_size examples",
 * even without drop_remainder) and a final partial epoch is filled from the next
 * shuffle. */
static fedc_status shuffle_repeat(const fedc_client_data *c, int64_t batch_size, int num_epochs, int64_t num_steps,
                                  bool drop_remainder, epoch_order *order, fedc_batches **out) {
    *out = NULL;
    if (batch_size < 1)
        return fedc_error(FEDC_EINVAL, "client \"%s\": shuffle_repeat_batch: batch_size is %lld; it must be at least 1",
                          c->id, (long long)batch_size);
    int64_t steps = 0, n = c->num_examples;
    fedc_status st = shuffle_steps(c, batch_size, num_epochs, num_steps, drop_remainder, &steps);
    if (!st && steps > 0 && (steps > INT64_MAX / batch_size || (steps * batch_size - 1) / n > UINT32_MAX))
        st = fedc_error(FEDC_ERANGE, "client \"%s\": shuffle_repeat_batch: %lld steps of %lld need more than 2^32 "
                        "epochs", c->id, (long long)steps, (long long)batch_size);
    if (st) return st;
    int64_t *perm = fedc_malloc((size_t)(n ? n : 1) * sizeof *perm);
    if (!perm)
        return fedc_error(FEDC_ENOMEM, "client \"%s\": shuffle_repeat_batch: out of memory for %lld examples", c->id,
                          (long long)n);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    st = batches_create(c, steps, batch_size, "shuffle_repeat_batch", out);
    for (int64_t r = 0; !st && r < steps * batch_size; r++) {
        if (r % n == 0) next_epoch(order, perm, n, r / n);
        copy_example(*out, c, r, perm[r % n]);
    }
    fedc_free(perm);
    return st;
}

/* Epoch e is a Fisher-Yates permutation of 0..n-1 drawn from the counter stream
 * (seed, round, client, step = e), so every epoch is the same on any machine and
 * thread count, and can be computed on its own. */
fedc_status fedc_shuffle_repeat_batch(const fedc_client_data *c, int64_t batch_size, int num_epochs,
                                      int64_t num_steps, bool drop_remainder, uint64_t seed, uint32_t round,
                                      uint32_t client, fedc_batches **out) {
    epoch_order order = {.numpy = false, .seed = seed, .round = round, .client = client};
    return shuffle_repeat(c, batch_size, num_epochs, num_steps, drop_remainder, &order, out);
}

/* FedJAX's own order: ShuffleRepeatBatchView makes np.random.RandomState(seed) and
 * shuffles one buffer, arange(n) at first, in place at the start of every epoch. */
fedc_status fedc_shuffle_repeat_batch_numpy(const fedc_client_data *c, int64_t batch_size, int num_epochs,
                                            int64_t num_steps, bool drop_remainder, uint32_t seed,
                                            fedc_batches **out) {
    epoch_order order = {.numpy = true};
    fedc__mt19937_seed(&order.mt, seed);
    return shuffle_repeat(c, batch_size, num_epochs, num_steps, drop_remainder, &order, out);
}

fedc_status fedc_batches_map(fedc_batches *b, fedc_batch_fn fn, void *ctx) {
    fedc_feature views[64];
    if (b->num_features > 64) return fedc_error(FEDC_EUNSUPPORTED, "batches: more than 64 features");
    for (int64_t t = 0; t < b->steps; t++) {
        for (int i = 0; i < b->num_features; i++) { /* row t of feature i, as a [batch, ...] view */
            const fedc_feature *f = &b->features[i];
            fedc_feature *v = &views[i];
            *v = *f;
            v->offsets = NULL;
            v->type.rank = f->type.rank - 1;
            for (int d = 0; d < v->type.rank; d++) v->type.dims[d] = f->type.dims[d + 1];
            v->data = (char *)f->data + (size_t)t * fedc_type_bytes(&v->type);
        }
        fedc_status st = fn(ctx, t, views, b->num_features, b->mask + t * b->batch_size, b->batch_size);
        if (st) return st;
    }
    return FEDC_OK;
}
