/* The training job's data: opening the train and test sets (partitioning
 * centralized data), the task's preprocessing, and filling a cohort's batches
 * into the round program's @clients inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fault.h"
#include "fl/train.h"

/* ------------------------------------------------------------- opening -- */

/* The task (src/fl/task.c): --task, or the one the data are of; its hook, with
 * the options it prepares, preprocesses every client the datasets load. */
static fedc_status set_hooks(trainer *t) {
    fedc_data_format f = fedc_dataset_format(t->train);
    if (f == FEDC_FORMAT_MEMORY) f = t->source_format;
    fedc_status st = fedc__task_resolve(t->c->task, f, t->synthetic, &t->task_def);
    if (st) return st;
    snprintf(t->task, sizeof t->task, "%s", t->task_def->name);
    void *ctx = NULL;
    if (t->task_def->prepare && (st = t->task_def->prepare(t, &ctx))) return st;
    fedc_dataset_set_preprocess(t->train, t->task_def->hook, ctx);
    if (t->test) fedc_dataset_set_preprocess(t->test, t->task_def->hook, ctx);
    return FEDC_OK;
}

/* Splits client 0 of a centralized dataset by c->partition. */
static fedc_status partition(trainer *t, fedc_dataset *central, fedc_dataset **out) {
    const char *spec = t->c->partition ? t->c->partition : "iid";
    int64_t n = fedc_dataset_client_examples(central, 0), clients = t->c->num_clients;
    if (clients < 1) return fedc_error(FEDC_EINVAL, "train: centralized data needs --num-clients >= 1");
    int64_t *assign = fedc_malloc((size_t)(n ? n : 1) * sizeof *assign);
    fedc_client_data *all = NULL;
    fedc_status st = assign ? FEDC_OK : fedc_error(FEDC_ENOMEM, "train: out of memory");
    if (!st) st = fedc_dataset_client(central, 0, &all);
    const fedc_feature *y = st ? NULL : fedc_client_feature(all, "y");
    if (!st && (!y || y->type.dtype != FEDC_I32)) st = fedc_error(FEDC_ETYPE, "train: partitioning needs labels \"y\" i32");
    if (!st) {
        if (!strcmp(spec, "iid")) st = fedc_partition_iid(n, clients, t->c->seed, assign);
        else if (!strncmp(spec, "dirichlet:", 10)) {
            int32_t classes = 0;
            for (int64_t i = 0; i < n; i++)
                if (((const int32_t *)y->data)[i] >= classes) classes = ((const int32_t *)y->data)[i] + 1;
            st = fedc_partition_dirichlet(y->data, n, classes, clients, atof(spec + 10), t->c->seed, assign);
        }
        else if (!strncmp(spec, "shards:", 7)) st = fedc_partition_shards(y->data, n, clients, atoi(spec + 7), t->c->seed, assign);
        else st = fedc_error(FEDC_EINVAL, "unknown partition \"%s\" (use iid, dirichlet:ALPHA or shards:K)", spec);
    }
    fedc_client_data_destroy(all);
    if (!st) st = fedc_dataset_partition(central, assign, clients, out);
    fedc_free(assign);
    return st;
}

/* IDX's test split: the t10k file beside the train file; CIFAR-10's: test_batch
 * in the directory of the training batches. */
static fedc_status default_test_path(const trainer *t, char *buf, size_t size) {
    struct stat sb;
    if (t->source_format == FEDC_FORMAT_CIFAR10 && !t->synthetic_images) {
        bool dir = stat(t->c->data, &sb) == 0 && S_ISDIR(sb.st_mode);
        snprintf(buf, size, "%s/test_batch", t->c->data);
        return dir && stat(buf, &sb) == 0 ? FEDC_OK : FEDC_ENOTFOUND;
    }
    const char *at = strstr(t->c->data, "train");
    if (t->source_format != FEDC_FORMAT_IDX || !at) return FEDC_ENOTFOUND;
    snprintf(buf, size, "%.*st10k%s", (int)(at - t->c->data), t->c->data, at + 5);
    return FEDC_OK;
}

/* "synthetic:cifar10:CLIENTS:EXAMPLES": fedc_synthetic_images of CIFAR-10's shape
 * (32x32x3, 10 classes), where the tarball's files are absent; the test split
 * (`test`) draws from seed + 1. Said on stderr, --quiet or not: the accuracy of
 * such a run says nothing about CIFAR-10. */
static fedc_status open_synthetic_images(trainer *t, const char *path, bool test, fedc_dataset **out) {
    long long clients = 0, examples = 0;
    int used = 0;
    if (sscanf(path, "synthetic:cifar10:%lld:%lld%n", &clients, &examples, &used) != 2 || path[used] != '\0' ||
        clients < 1 || examples < 1)
        return fedc_error(FEDC_EINVAL, "train: bad synthetic data \"%s\" (use synthetic:cifar10:CLIENTS:EXAMPLES, "
                          "both >= 1)", path);
    if (!test) {
        t->synthetic_images = true;
        t->source_format = FEDC_FORMAT_CIFAR10;
    }
    fprintf(stderr, "fedc train: note: %s data are synthetic images of CIFAR-10's shape (%lld clients of %lld "
            "32x32x3 images, 10 classes), not CIFAR-10\n", test ? "test" : "training", clients, examples);
    return fedc_synthetic_images(clients, examples, 32, 32, 3, 10, t->c->seed + (test ? 1 : 0), out);
}

/* "synthetic:zipf:CLIENTS:EXAMPLES[:WORDS[:S]]": fedc_synthetic_zipf's word ranks
 * over the task's vocabulary, WORDS per example (default 20) with exponent S
 * (default 1); the test split (`test`) draws from seed + 1. EXAMPLES is a count,
 * or MIN+lognormal(MU,SIGMA) for heavy-tailed sizes (fedc_synthetic_zipf_lognormal). */
static fedc_status open_synthetic(trainer *t, const char *path, bool test, fedc_dataset **out) {
    const char *spec = path + strlen("synthetic:");
    if (!strncmp(spec, "cifar10:", 8)) return open_synthetic_images(t, path, test, out);
    long long clients = 0, examples = 0, words = FEDC_STACKOVERFLOW_MAX_LENGTH;
    double s = 1.0, mu = 0, sigma = 0;
    int used = 0, sized = 0;
    int got = sscanf(spec, "zipf:%lld:%lld%n", &clients, &examples, &used);
    if (got == 2 && sscanf(spec + used, "+lognormal(%lf,%lf)%n", &mu, &sigma, &sized) == 2 && sized > 0)
        used += sized;
    else sized = 0;
    if (got == 2 && spec[used] == ':') {
        int more = 0;
        got += sscanf(spec + used, ":%lld%n", &words, &more);
        used += more;
        if (got == 3 && spec[used] == ':') got += sscanf(spec + used, ":%lf%n", &s, &more), used += more;
    }
    if (got < 2 || spec[used] != '\0' || clients < 1 || examples < 1 || words < 1 || words > FEDC_TASK_MAX_LENGTH)
        return fedc_error(FEDC_EINVAL, "train: bad synthetic data \"%s\" (use synthetic:zipf:CLIENTS:EXAMPLES[:WORDS[:S]] "
                          "with CLIENTS, EXAMPLES >= 1 and WORDS in [1, %d]; EXAMPLES may be MIN+lognormal(MU,SIGMA))",
                          path, FEDC_TASK_MAX_LENGTH);
    int64_t vocab = t->c->vocab_size > 0 ? t->c->vocab_size : FEDC_STACKOVERFLOW_VOCAB_SIZE;
    if (vocab > FEDC__MAX_VOCAB)
        return fedc_error(FEDC_EINVAL, "train: vocabulary size %lld is above %d", (long long)vocab,
                          FEDC__MAX_VOCAB);
    t->synthetic = true;
    t->source_format = FEDC_FORMAT_MEMORY;
    uint64_t seed = t->c->seed + (test ? 1 : 0);
    if (sized) return fedc_synthetic_zipf_lognormal(clients, examples, mu, sigma, words, (int32_t)vocab, s, seed, out);
    return fedc_synthetic_zipf(clients, examples, words, (int32_t)vocab, s, seed, out);
}

static fedc_status open_one(trainer *t, const char *path, fedc_dataset **out, fedc_dataset **central) {
    if (!strncmp(path, "synthetic:", 10)) return open_synthetic(t, path, false, out);
    fedc_dataset *ds;
    fedc_status st = fedc_dataset_open(&ds, path, t->c->format);
    if (st) return st;
    t->source_format = fedc_dataset_format(ds);
    bool centralized = t->source_format == FEDC_FORMAT_IDX || t->source_format == FEDC_FORMAT_CIFAR10 || t->c->partition;
    if (!centralized || !central) {
        *out = ds;
        return FEDC_OK;
    }
    *central = ds;
    return partition(t, ds, out);
}

/* --holdout: train and test are the two parts of every training client. */
static fedc_status hold_out(trainer *t, const char *test) {
    if (test)
        return fedc_error(FEDC_EINVAL, "train: --holdout and --test-data (%s) both give a test split; use one", test);
    t->holdout_source = t->train;
    t->train = NULL;
    return fedc_dataset_holdout(t->holdout_source, t->c->holdout, &t->train, &t->test);
}

fedc_status fedc__train_open_data(trainer *t) {
    fedc_status st = open_one(t, t->c->data, &t->train, &t->train_central);
    char path[4096];
    const char *test = t->c->test_data;
    if (!st && !test && t->c->holdout == 0.0 && default_test_path(t, path, sizeof path) == FEDC_OK) test = path;
    if (!st && t->c->holdout != 0.0) st = hold_out(t, test);
    else if (!st && test && !strncmp(test, "synthetic:", 10)) st = open_synthetic(t, test, true, &t->test);
    else if (!st && test) { /* a test split is evaluated as it comes: one client per writer, or all */
        st = fedc_dataset_open(&t->test, test, t->c->format);
    }
    if (!st) st = set_hooks(t);
    return st;
}

/* ------------------------------------------------------------- filling -- */

/* Copies feature `name` of b ([steps, batch, ...]) into dst (max_steps rows), zeros
 * after; checks its per-example shape against `want` elements and dtype. */
static fedc_status copy_rows(const fedc_batches *b, const char *name, fedc_dtype dt, int64_t per_step, int64_t max_steps,
                             void *dst, const char *client) {
    const fedc_feature *f = fedc_batches_feature(b, name);
    size_t es = fedc_dtype_size(dt), row = (size_t)per_step * es;
    if (!f || f->type.dtype != dt || fedc_type_count(&f->type) != b->steps * per_step)
        return fedc_error(FEDC_ETYPE, "client \"%s\": feature \"%s\" does not fit the model (%lld values per batch of "
                          "%s expected)", client, name, (long long)per_step, fedc_dtype_name(dt));
    int64_t steps = b->steps < max_steps ? b->steps : max_steps;
    memcpy(dst, f->data, (size_t)steps * row);
    memset((char *)dst + (size_t)steps * row, 0, (size_t)(max_steps - steps) * row);
    return FEDC_OK;
}

/* Loads client j of the cohort (ds's client `id`) into its slots. */
static fedc_status fill_one(trainer *t, fedc_dataset *ds, int64_t id, int j, cohort_buffers *cb, bool shuffle,
                            uint32_t round) {
    int64_t batch = cb->batch, per_x = cb->x_elems / (cb->max_steps * batch), per_y = cb->y_elems / (cb->max_steps * batch);
    fedc_client_data *c = NULL;
    fedc_batches *b = NULL;
    fedc_status st = fedc_dataset_client(ds, id, &c);
    if (!st && shuffle && fedc__fault_at(FEDC__FAULT_LOAD, (int)round + 1, id))
        st = fedc_error(FEDC_EIO, "client \"%s\": cannot load its data (FEDC_FAULT)", c->id);
    if (!st && shuffle && t->c->rng == FEDC_RNG_FEDJAX) /* FedJAX's: the same seed every client and round */
        st = fedc_shuffle_repeat_batch_numpy(c, batch, t->c->epochs, cb->max_steps, false, (uint32_t)t->c->seed, &b);
    else if (!st && shuffle)
        st = fedc_shuffle_repeat_batch(c, batch, t->c->epochs, cb->max_steps, false, t->c->seed, round, (uint32_t)id, &b);
    else if (!st)
        st = fedc_batch(c, batch, false, &b);
    if (!st) st = copy_rows(b, "x", cb->x_dtype, batch * per_x, cb->max_steps, cb->x + (size_t)j * (size_t)(cb->x_elems), c->id);
    if (!st) st = copy_rows(b, "y", FEDC_I32, batch * per_y, cb->max_steps, cb->y + (size_t)j * (size_t)(cb->y_elems), c->id);
    const fedc_attack *attack = &t->alg.aggregation.attack;
    if (!st && shuffle && fedc_attack_malicious(attack, t->c->seed, id)) /* label_flip: its training labels */
        fedc_attack_labels(attack, fedc_model_num_classes(t->model), cb->y + (size_t)j * (size_t)cb->y_elems, cb->y_elems);
    if (!st) {
        int64_t steps = b->steps < cb->max_steps ? b->steps : cb->max_steps;
        float *mask = cb->mask + (size_t)j * (size_t)(cb->max_steps * batch);
        memcpy(mask, b->mask, (size_t)(steps * batch) * sizeof *mask);
        memset(mask + steps * batch, 0, (size_t)((cb->max_steps - steps) * batch) * sizeof *mask);
        cb->steps[j] = (int32_t)steps;
        fedc__train_client_key(t, round, id, cb->key + 4 * j);
    }
    fedc_batches_destroy(b);
    fedc_client_data_destroy(c);
    return st;
}

void fedc__train_client_key(const trainer *t, uint32_t round, int64_t id, int32_t key[4]) {
    fedc_rng_stream s = fedc_rng_stream_make(t->c->seed, round, (uint32_t)id, 0);
    key[0] = (int32_t)s.key.k[0], key[1] = (int32_t)s.key.k[1], key[2] = (int32_t)s.c2, key[3] = 0;
}

/* A training client whose data cannot be loaded is dropped from its round
 * (docs/federated.md's failing-client policy): it runs one step of zeros under a
 * mask of NaN, so its update is not finite and the executor leaves it out of the
 * round as it does any failing client, on every rank alike. */
static void drop_unloadable(fedc_dataset *ds, int64_t id, int j, cohort_buffers *cb, uint32_t round) {
    size_t rows = (size_t)(cb->max_steps * cb->batch);
    fprintf(stderr, "fedc train: warning: round %u: client %lld (\"%s\") dropped: %s\n", round + 1, (long long)id,
            fedc_dataset_client_id(ds, id), fedc_errmsg());
    memset(cb->x + (size_t)j * (size_t)cb->x_elems, 0, (size_t)cb->x_elems * sizeof *cb->x);
    memset(cb->y + (size_t)j * (size_t)cb->y_elems, 0, (size_t)cb->y_elems * sizeof *cb->y);
    for (size_t i = 0; i < rows; i++) cb->mask[(size_t)j * rows + i] = i < (size_t)cb->batch ? NAN : 0;
    cb->steps[j] = 1;
    memset(cb->key + 4 * j, 0, 4 * sizeof *cb->key);
    cb->failed[j] = 1;
}

/* An evaluated client whose data cannot be loaded is left out of the evaluation:
 * with no steps it adds nothing to the sums. */
static void skip_unloadable(fedc_dataset *ds, int64_t id, int j, cohort_buffers *cb) {
    fprintf(stderr, "fedc train: warning: evaluation: client %lld (\"%s\") left out: %s\n", (long long)id,
            fedc_dataset_client_id(ds, id), fedc_errmsg());
    cb->steps[j] = 0;
    cb->failed[j] = 1;
}

fedc_status fedc__train_fill(trainer *t, fedc_dataset *ds, const int64_t *clients, int k, cohort_buffers *cb,
                             bool shuffle, uint32_t round) {
    for (int j = 0; j < k; j++) {
        cb->failed[j] = 0;
        fedc_status st = fill_one(t, ds, clients[j], j, cb, shuffle, round);
        if (st == FEDC_ENOMEM || (st && t->c->strict)) return st;
        if (st && shuffle) drop_unloadable(ds, clients[j], j, cb, round);
        else if (st) skip_unloadable(ds, clients[j], j, cb);
    }
    return FEDC_OK;
}

/* ------------------------------------------------------ packed filling -- */

/* Appends the real rows of client `id`'s batches b (n of them, in order) to slot
 * j's rows [at, at + n), tagged `segment`. */
static fedc_status append_rows(const fedc_batches *b, int64_t n, cohort_buffers *cb, int j, int64_t at, int32_t segment,
                               const char *id) {
    int64_t rows = cb->max_steps * cb->batch, per_x = cb->x_elems / rows, per_y = cb->y_elems / rows;
    const fedc_feature *x = fedc_batches_feature(b, "x"), *y = fedc_batches_feature(b, "y");
    if (!x || x->type.dtype != cb->x_dtype || fedc_type_count(&x->type) != b->steps * b->batch_size * per_x || !y ||
        y->type.dtype != FEDC_I32 || fedc_type_count(&y->type) != b->steps * b->batch_size * per_y)
        return fedc_error(FEDC_ETYPE, "client \"%s\": its features do not fit the model", id);
    if (at + n > rows)
        return fedc_error(FEDC_EINVAL, "client \"%s\": %lld examples do not fit the %lld rows left", id, (long long)n,
                          (long long)(rows - at));
    memcpy(cb->x + (size_t)j * (size_t)cb->x_elems + (size_t)(at * per_x), x->data, (size_t)(n * per_x) * sizeof *cb->x);
    memcpy(cb->y + (size_t)j * (size_t)cb->y_elems + (size_t)(at * per_y), y->data, (size_t)(n * per_y) * sizeof *cb->y);
    for (int64_t r = at; r < at + n; r++) cb->mask[(size_t)j * (size_t)rows + (size_t)r] = 1, cb->segment[(size_t)j * (size_t)rows + (size_t)r] = segment;
    return FEDC_OK;
}

/* Clears slot j from row `at` on, and sets its steps to the batches rows [0, at) need. */
static void end_slot(cohort_buffers *cb, int j, int64_t at) {
    int64_t rows = cb->max_steps * cb->batch, per_x = cb->x_elems / rows, per_y = cb->y_elems / rows;
    size_t r0 = (size_t)j * (size_t)rows + (size_t)at, left = (size_t)(rows - at);
    memset(cb->x + (size_t)j * (size_t)cb->x_elems + (size_t)(at * per_x), 0, left * (size_t)per_x * sizeof *cb->x);
    memset(cb->y + (size_t)j * (size_t)cb->y_elems + (size_t)(at * per_y), 0, left * (size_t)per_y * sizeof *cb->y);
    memset(cb->mask + r0, 0, left * sizeof *cb->mask);
    memset(cb->segment + r0, 0, left * sizeof *cb->segment);
    cb->steps[j] = (int32_t)((at + cb->batch - 1) / cb->batch);
}

fedc_status fedc__train_fill_packed(fedc_dataset *ds, const int64_t *clients, int n, cohort_buffers *cb, int j) {
    int64_t at = 0;
    cb->failed[j] = 0;
    for (int s = 0; s < n; s++) {
        fedc_client_data *c = NULL;
        fedc_batches *b = NULL;
        fedc_status st = fedc_dataset_client(ds, clients[s], &c);
        if (!st) st = fedc_batch(c, cb->batch, false, &b);
        int64_t real = 0;
        for (int64_t r = 0; b && r < b->steps * b->batch_size; r++) real += b->mask[r] > 0;
        if (!st) st = append_rows(b, real, cb, j, at, s, c->id);
        if (!st) at += real;
        fedc_batches_destroy(b);
        fedc_client_data_destroy(c);
        if (st == FEDC_ENOMEM) return st;
        if (st) /* left out, as an unloadable client is when evaluated alone */
            fprintf(stderr, "fedc train: warning: evaluation: client %lld (\"%s\") left out: %s\n", (long long)clients[s],
                    fedc_dataset_client_id(ds, clients[s]), fedc_errmsg());
    }
    end_slot(cb, j, at);
    return FEDC_OK;
}

fedc_status fedc__cohort_buffers_init(cohort_buffers *cb, const fedc_model *m, int clients, int64_t batch,
                                      int64_t max_steps, bool packed) {
    fedc_type xt = fedc_model_input_type(m, batch), yt = fedc_model_label_type(m, batch);
    cb->clients = clients;
    cb->batch = batch;
    cb->max_steps = max_steps;
    cb->x_elems = fedc_type_count(&xt) * max_steps;
    cb->y_elems = fedc_type_count(&yt) * max_steps;
    cb->x_dtype = xt.dtype;
    size_t n = (size_t)clients;
    cb->x = fedc_calloc(n * (size_t)cb->x_elems, sizeof *cb->x);
    cb->y = fedc_calloc(n * (size_t)cb->y_elems, sizeof *cb->y);
    cb->mask = fedc_calloc(n * (size_t)(max_steps * batch), sizeof *cb->mask);
    cb->steps = fedc_calloc(n, sizeof *cb->steps);
    cb->key = fedc_calloc(4 * n, sizeof *cb->key);
    cb->failed = fedc_calloc(n, sizeof *cb->failed);
    cb->segment = packed ? fedc_calloc(n * (size_t)(max_steps * batch), sizeof *cb->segment) : NULL;
    if (!cb->x || !cb->y || !cb->mask || !cb->steps || !cb->key || !cb->failed || (packed && !cb->segment))
        return fedc_error(FEDC_ENOMEM, "train: out of memory for %d clients' batches (%lld steps of %lld)", clients,
                          (long long)max_steps, (long long)batch);
    return FEDC_OK;
}

void fedc__cohort_buffers_free(cohort_buffers *cb) {
    fedc_free(cb->x), fedc_free(cb->y), fedc_free(cb->mask), fedc_free(cb->steps), fedc_free(cb->key);
    fedc_free(cb->failed), fedc_free(cb->segment);
    memset(cb, 0, sizeof *cb);
}

fedc_status fedc__cohort_buffers_bind(const cohort_buffers *cb, fedc_executor *ex, bool with_key) {
    fedc_status st = fedc_executor_bind(ex, "x", cb->x);
    if (!st) st = fedc_executor_bind(ex, "y", cb->y);
    if (!st) st = fedc_executor_bind(ex, "mask", cb->mask);
    if (!st) st = fedc_executor_bind(ex, "steps", cb->steps);
    if (!st && with_key) st = fedc_executor_bind(ex, "key", cb->key);
    return st;
}
