/* Partitioners: a centralized dataset (one client, e.g. from IDX) split into
 * num_clients clients, as the FL literature simulates federated data.
 *
 *   iid        a uniformly random assignment with sizes that differ by at most 1.
 *   dirichlet  Hsu, Qi and Brown 2019, "Measuring the effects of non-identical
 *              data distribution for federated visual classification": each
 *              client draws label proportions q ~ Dir(alpha * p), p the
 *              dataset's label frequencies, and holds a balanced share of the
 *              examples drawn by q.
 *   shards     McMahan et al. 2017 ("Communication-efficient learning of deep
 *              networks from decentralized data"): sort by label, cut into
 *              num_clients * k shards, k random shards per client.
 *
 * Every random number comes from the counter RNG keyed by (seed, a tag per use),
 * so a partition is a function of its arguments, the same on every machine. An
 * assignment is an array: assignment[i] is the client of example i.
 * fedc_dataset_partition turns one into an in-memory dataset. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"

/* The `step` word of each stream: one per use, so that two partitioners (or two
 * uses in one) given the same seed draw unrelated numbers. */
enum {
    TAG_IID = 0x9a71,
    TAG_DIRICHLET_POOLS,
    TAG_DIRICHLET_UNIFORM,
    TAG_DIRICHLET_NORMAL,
    TAG_DIRICHLET_DEAL,
    TAG_SHARDS,
    TAG_GROUPS_UNIFORM,
    TAG_GROUPS_NORMAL,
    TAG_GROUPS_DEAL
};

static fedc_rng_stream stream(uint64_t seed, uint32_t tag) { return fedc_rng_stream_make(seed, 0, 0, tag); }

/* Uniform in [0, m) from element i of the stream. The clamp guards the one
 * rounding case where u * m for u just below 1 rounds up to m. */
static int64_t uniform_below(fedc_rng_stream s, uint64_t i, int64_t m) {
    int64_t j = (int64_t)(fedc_rng_uniform_f64(s, i) * (double)m);
    return j < m ? j : m - 1;
}

/* Fisher-Yates over a[0, n), drawing stream elements first, first + 1, ... */
static void shuffle(int64_t *a, int64_t n, fedc_rng_stream s, uint64_t first) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = uniform_below(s, first + (uint64_t)i, i + 1);
        int64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* Client c's share of n examples dealt to `clients` clients: n / clients, one
 * more for the first n % clients. */
static int64_t share(int64_t n, int64_t clients, int64_t c) { return n / clients + (c < n % clients); }

static fedc_status check_counts(const char *who, int64_t examples, int64_t num_clients) {
    if (num_clients < 1) return fedc_error(FEDC_EINVAL, "%s: %lld clients", who, (long long)num_clients);
    if (examples < num_clients)
        return fedc_error(FEDC_EINVAL, "%s: %lld examples cannot give each of %lld clients one", who,
                          (long long)examples, (long long)num_clients);
    return FEDC_OK;
}

/* ------------------------------------------------------------------ iid -- */

fedc_status fedc_partition_iid(int64_t examples, int64_t num_clients, uint64_t seed, int64_t *assignment) {
    fedc_status st = check_counts("iid partition", examples, num_clients);
    if (st) return st;
    /* The clients written in order with their shares, then the array itself
     * shuffled: a uniformly random assignment with exactly those sizes, and no
     * scratch memory. */
    int64_t i = 0;
    for (int64_t c = 0; c < num_clients; c++)
        for (int64_t k = share(examples, num_clients, c); k > 0; k--) assignment[i++] = c;
    shuffle(assignment, examples, stream(seed, TAG_IID), 0);
    return FEDC_OK;
}

/* ------------------------------------------------------------ dirichlet -- */

/* Sequential draws from one stream. */
typedef struct draws {
    fedc_rng_stream s;
    uint64_t next;
} draws;

static double next_uniform_open0(draws *d) { return 1.0 - fedc_rng_uniform_f64(d->s, d->next++); } /* (0, 1] */
static double next_normal(draws *d) { return fedc_rng_normal(d->s, d->next++); }

/* The log of a Gamma(a, 1) draw: Marsaglia and Tsang, "A simple method for
 * generating gamma variables" (ACM TOMS 2000), with their boost for a < 1,
 * Gamma(a) = Gamma(a + 1) * U^(1/a). The log, because for the small a of a
 * skewed partition (alpha = 0.01 spread over 10 classes) the draw itself is
 * often below the smallest double. */
static double log_gamma_draw(double a, draws *u, draws *z) {
    double boost = 0;
    if (a < 1) {
        boost = log(next_uniform_open0(u)) / a;
        a += 1;
    }
    double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = next_normal(z), v = 1.0 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        if (log(next_uniform_open0(u)) < 0.5 * x * x + d - d * v + d * log(v)) return log(d * v) + boost;
    }
}

/* A class drawn from weights exp(logq[k]) over the classes with examples left;
 * the weights are shifted by their maximum, so the largest is 1 whatever the
 * scale of the logs. (Normalising q is not needed: only ratios matter.) */
static int32_t draw_class(const double *logq, const int64_t *left, int32_t classes, double u) {
    double top = -INFINITY, total = 0;
    for (int32_t k = 0; k < classes; k++)
        if (left[k] && logq[k] > top) top = logq[k];
    for (int32_t k = 0; k < classes; k++) total += left[k] ? exp(logq[k] - top) : 0;
    double target = u * total;
    int32_t last = -1;
    for (int32_t k = 0; k < classes; k++) {
        if (!left[k]) continue;
        last = k;
        target -= exp(logq[k] - top);
        if (target < 0) return k;
    }
    return last; /* rounding left target at or just above 0 */
}

typedef struct dirichlet_work {
    int64_t *start; /* classes + 1: class k's examples are order[start[k], start[k+1]) */
    int64_t *left;  /* classes: how many of class k are not dealt yet */
    int64_t *order; /* examples, grouped by class, shuffled within each class */
    double *logq;   /* clients x classes: the log of each client's (unnormalised) q */
} dirichlet_work;

static void work_free(dirichlet_work *w) {
    fedc_free(w->start), fedc_free(w->left), fedc_free(w->order), fedc_free(w->logq);
}

/* Groups the examples by class (a counting sort) and shuffles each class, so
 * that taking a class's next example takes a uniformly random one. */
static void build_pools(dirichlet_work *w, const int32_t *labels, int64_t n, int32_t classes, uint64_t seed) {
    memset(w->start, 0, (size_t)(classes + 1) * sizeof *w->start);
    for (int64_t i = 0; i < n; i++) w->start[labels[i] + 1]++;
    for (int32_t k = 0; k < classes; k++) w->start[k + 1] += w->start[k];
    for (int32_t k = 0; k < classes; k++) w->left[k] = w->start[k]; /* a fill cursor first */
    for (int64_t i = 0; i < n; i++) w->order[w->left[labels[i]]++] = i;
    for (int32_t k = 0; k < classes; k++) {
        w->left[k] = w->start[k + 1] - w->start[k];
        shuffle(w->order + w->start[k], w->left[k], stream(seed, TAG_DIRICHLET_POOLS), (uint64_t)w->start[k]);
    }
}

/* Each client's q ~ Dir(alpha * p) as logs of Gamma(alpha * p_k) draws; a class
 * without examples gets -inf (it is never drawn anyway). */
static void draw_proportions(dirichlet_work *w, int64_t n, int32_t classes, int64_t clients, double alpha,
                             uint64_t seed) {
    draws u = {stream(seed, TAG_DIRICHLET_UNIFORM), 0}, z = {stream(seed, TAG_DIRICHLET_NORMAL), 0};
    for (int64_t c = 0; c < clients; c++) {
        for (int32_t k = 0; k < classes; k++) {
            double p = (double)(w->start[k + 1] - w->start[k]) / (double)n;
            w->logq[c * classes + k] = p > 0 ? log_gamma_draw(alpha * p, &u, &z) : -INFINITY;
        }
    }
}

/* Deals the examples one round at a time: in round t every client still short
 * of its share draws a class from its q (among the classes with examples left)
 * and takes that class's next example. Round-robin, so that when a popular
 * class runs out no client has had first pick of all of it. */
static void deal(dirichlet_work *w, int64_t n, int32_t classes, int64_t clients, uint64_t seed, int64_t *assignment) {
    fedc_rng_stream s = stream(seed, TAG_DIRICHLET_DEAL);
    uint64_t next = 0;
    for (int64_t t = 0; t < share(n, clients, 0); t++) {
        for (int64_t c = 0; c < clients && t < share(n, clients, c); c++) {
            int32_t k = draw_class(w->logq + c * classes, w->left, classes, fedc_rng_uniform_f64(s, next++));
            int64_t dealt = w->start[k + 1] - w->start[k] - w->left[k]; /* of class k so far */
            assignment[w->order[w->start[k] + dealt]] = c;
            w->left[k]--;
        }
    }
}

static fedc_status check_dirichlet(const int32_t *labels, int64_t examples, int32_t num_classes,
                                   int64_t num_clients, double alpha) {
    fedc_status st = check_counts("dirichlet partition", examples, num_clients);
    if (st) return st;
    if (!(alpha > 0) || isinf(alpha))
        return fedc_error(FEDC_EINVAL, "dirichlet partition: alpha = %g; it must be positive and finite", alpha);
    if (num_classes < 1) return fedc_error(FEDC_EINVAL, "dirichlet partition: %d classes", (int)num_classes);
    for (int64_t i = 0; i < examples; i++)
        if (labels[i] < 0 || labels[i] >= num_classes)
            return fedc_error(FEDC_ERANGE, "dirichlet partition: example %lld has label %d, outside [0, %d)",
                              (long long)i, (int)labels[i], (int)num_classes);
    return FEDC_OK;
}

fedc_status fedc_partition_dirichlet(const int32_t *labels, int64_t examples, int32_t num_classes,
                                     int64_t num_clients, double alpha, uint64_t seed, int64_t *assignment) {
    fedc_status st = check_dirichlet(labels, examples, num_classes, num_clients, alpha);
    if (st) return st;
    dirichlet_work w = {fedc_malloc((size_t)(num_classes + 1) * sizeof *w.start),
                        fedc_malloc((size_t)num_classes * sizeof *w.left),
                        fedc_malloc((size_t)examples * sizeof *w.order),
                        fedc_malloc((size_t)num_clients * (size_t)num_classes * sizeof *w.logq)};
    if (!w.start || !w.left || !w.order || !w.logq) {
        work_free(&w);
        return fedc_error(FEDC_ENOMEM, "dirichlet partition: out of memory for %lld clients x %d classes",
                          (long long)num_clients, (int)num_classes);
    }
    build_pools(&w, labels, examples, num_classes, seed);
    draw_proportions(&w, examples, num_classes, num_clients, alpha, seed);
    deal(&w, examples, num_classes, num_clients, seed, assignment);
    work_free(&w);
    return FEDC_OK;
}

/* ---------------------------------------------------- groups of clients -- */

/* The groups' shares p ~ Dir(alpha, ..., alpha) as Gamma(alpha) draws over their
 * sum (in logs, shifted by the largest: a small alpha's draws underflow), then
 * each group's size: floor(n p_g), the clients left over one each to the groups
 * of the largest remainders (the lower group first on a tie), so that the sizes
 * sum to n. */
static void group_sizes(int64_t n, int groups, double alpha, uint64_t seed, double *logg, int64_t *size) {
    draws u = {stream(seed, TAG_GROUPS_UNIFORM), 0}, z = {stream(seed, TAG_GROUPS_NORMAL), 0};
    double top = -INFINITY, total = 0;
    for (int g = 0; g < groups; g++) {
        logg[g] = log_gamma_draw(alpha, &u, &z);
        if (logg[g] > top) top = logg[g];
    }
    for (int g = 0; g < groups; g++) total += exp(logg[g] - top);
    int64_t left = n;
    for (int g = 0; g < groups; g++) { /* logg becomes each group's remainder */
        double want = (double)n * exp(logg[g] - top) / total;
        size[g] = (int64_t)floor(want);
        if (size[g] > left) size[g] = left;
        left -= size[g];
        logg[g] = want - (double)size[g];
    }
    for (; left > 0; left--) {
        int best = 0;
        for (int g = 1; g < groups; g++)
            if (logg[g] > logg[best]) best = g;
        size[best]++;
        logg[best] = -1;
    }
}

fedc_status fedc_partition_groups_dirichlet(int64_t num_clients, int groups, double alpha, uint64_t seed,
                                            int32_t *group_of) {
    if (num_clients < 1 || groups < 1)
        return fedc_error(FEDC_EINVAL, "dirichlet groups: %lld clients in %d groups; use 1 or more of each",
                          (long long)num_clients, groups);
    if (!(alpha > 0) || isinf(alpha))
        return fedc_error(FEDC_EINVAL, "dirichlet groups: alpha = %g; it must be positive and finite", alpha);
    double *logg = fedc_malloc((size_t)groups * sizeof *logg);
    int64_t *size = fedc_malloc((size_t)groups * sizeof *size);
    int64_t *order = fedc_malloc((size_t)num_clients * sizeof *order);
    if (!logg || !size || !order) {
        fedc_free(logg), fedc_free(size), fedc_free(order);
        return fedc_error(FEDC_ENOMEM, "dirichlet groups: out of memory for %lld clients", (long long)num_clients);
    }
    group_sizes(num_clients, groups, alpha, seed, logg, size);
    /* which clients: a uniformly random order cut into the groups' sizes */
    for (int64_t i = 0; i < num_clients; i++) order[i] = i;
    shuffle(order, num_clients, stream(seed, TAG_GROUPS_DEAL), 0);
    for (int g = 0, i = 0; g < groups; g++)
        for (int64_t k = 0; k < size[g]; k++) group_of[order[i++]] = g;
    fedc_free(logg), fedc_free(size), fedc_free(order);
    return FEDC_OK;
}

/* --------------------------------------------------------------- shards -- */

typedef struct labelled {
    int32_t label;
    int64_t index;
} labelled;

/* By label, then by index: qsort is not stable, the index makes the order so. */
static int compare_labelled(const void *pa, const void *pb) {
    const labelled *a = pa, *b = pb;
    if (a->label != b->label) return a->label < b->label ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

fedc_status fedc_partition_shards(const int32_t *labels, int64_t examples, int64_t num_clients, int k,
                                  uint64_t seed, int64_t *assignment) {
    fedc_status st = check_counts("shards partition", examples, num_clients);
    if (st) return st;
    if (k < 1) return fedc_error(FEDC_EINVAL, "shards partition: %d shards per client", k);
    if (num_clients > examples / k)
        return fedc_error(FEDC_EINVAL, "shards partition: %lld clients x %d shards is more shards than the %lld examples",
                          (long long)num_clients, k, (long long)examples);
    int64_t shards = num_clients * k;
    labelled *sorted = fedc_malloc((size_t)examples * sizeof *sorted);
    int64_t *perm = fedc_malloc((size_t)shards * sizeof *perm);
    if (!sorted || !perm) {
        fedc_free(sorted), fedc_free(perm);
        return fedc_error(FEDC_ENOMEM, "shards partition: out of memory for %lld examples", (long long)examples);
    }
    for (int64_t i = 0; i < examples; i++) sorted[i] = (labelled){labels[i], i};
    qsort(sorted, (size_t)examples, sizeof *sorted, compare_labelled);
    for (int64_t s = 0; s < shards; s++) perm[s] = s;
    shuffle(perm, shards, stream(seed, TAG_SHARDS), 0);
    /* Shard s is sorted[first(s), first(s + 1)), shares as even as n allows. */
    int64_t base = examples / shards, extra = examples % shards;
    for (int64_t p = 0; p < shards; p++) {
        int64_t s = perm[p], first = s * base + (s < extra ? s : extra);
        for (int64_t j = first; j < first + share(examples, shards, s); j++) assignment[sorted[j].index] = p / k;
    }
    fedc_free(sorted);
    fedc_free(perm);
    return FEDC_OK;
}

/* ------------------------------------------------------ feature splits -- */

static void parts_free(fedc_feature *parts, int64_t from, int64_t to) {
    for (int64_t j = from; j < to; j++) fedc_free(parts[j].name), fedc_free(parts[j].data), fedc_free(parts[j].offsets);
}

/* Bytes of example i of a feature (its row for an array, its string otherwise). */
static size_t example_bytes(const fedc_feature *f, int64_t i, size_t row) {
    return f->kind == FEDC_FEATURE_ARRAY ? row : (size_t)(f->offsets[i + 1] - f->offsets[i]);
}

/* Allocates each client's part of the feature: its name, data, and offsets for
 * a strings feature (offsets[0] = 0; the rest are written as examples land). */
static fedc_status alloc_parts(const fedc_feature *f, int64_t n, const int64_t *assignment, size_t row,
                               fedc_client_data **clients, int64_t num_clients, fedc_feature *parts) {
    size_t *bytes = fedc_calloc((size_t)num_clients, sizeof *bytes);
    if (!bytes) return fedc_error(FEDC_ENOMEM, "partition: out of memory");
    for (int64_t i = 0; i < n; i++) bytes[assignment[i]] += example_bytes(f, i, row);
    bool strings = f->kind == FEDC_FEATURE_STRINGS, ok = true;
    for (int64_t j = 0; j < num_clients; j++) {
        int64_t m = clients[j]->num_examples;
        fedc_type t = f->type;
        t.dims[0] = m;
        parts[j] = (fedc_feature){fedc__strdup(f->name), f->kind, t, fedc_malloc(bytes[j] ? bytes[j] : 1),
                                  strings ? fedc_malloc((size_t)(m + 1) * sizeof(int64_t)) : NULL};
        ok = ok && parts[j].name && parts[j].data && (!strings || parts[j].offsets);
        if (parts[j].offsets) parts[j].offsets[0] = 0;
    }
    fedc_free(bytes);
    if (ok) return FEDC_OK;
    parts_free(parts, 0, num_clients);
    return fedc_error(FEDC_ENOMEM, "partition: out of memory for feature \"%s\"", f->name);
}

/* Copies each example to its client's part, in example order. */
static fedc_status scatter(const fedc_feature *f, int64_t n, const int64_t *assignment, size_t row,
                           int64_t num_clients, fedc_feature *parts) {
    int64_t *filled = fedc_calloc((size_t)num_clients, sizeof *filled);     /* examples so far */
    size_t *used = fedc_calloc((size_t)num_clients, sizeof *used);          /* bytes so far */
    if (!filled || !used) {
        fedc_free(filled), fedc_free(used);
        return fedc_error(FEDC_ENOMEM, "partition: out of memory");
    }
    const char *src = f->data;
    for (int64_t i = 0; i < n; i++) {
        int64_t j = assignment[i];
        size_t len = example_bytes(f, i, row);
        const char *from = f->kind == FEDC_FEATURE_ARRAY ? src + (size_t)i * row : src + f->offsets[i];
        memcpy((char *)parts[j].data + used[j], from, len);
        used[j] += len;
        if (parts[j].offsets) parts[j].offsets[filled[j] + 1] = (int64_t)used[j];
        filled[j]++;
    }
    fedc_free(filled);
    fedc_free(used);
    return FEDC_OK;
}

/* One feature cut into num_clients parts by the assignment, each adopted by its client. */
static fedc_status split_feature(const fedc_feature *f, int64_t n, const int64_t *assignment,
                                 fedc_client_data **clients, int64_t num_clients) {
    size_t row = fedc_dtype_size(f->type.dtype);
    for (int d = 1; f->kind == FEDC_FEATURE_ARRAY && d < f->type.rank; d++) row *= (size_t)f->type.dims[d];
    fedc_feature *parts = fedc_malloc((size_t)num_clients * sizeof *parts);
    if (!parts) return fedc_error(FEDC_ENOMEM, "partition: out of memory for feature \"%s\"", f->name);
    fedc_status st = alloc_parts(f, n, assignment, row, clients, num_clients, parts);
    if (!st) {
        st = scatter(f, n, assignment, row, num_clients, parts);
        if (st) parts_free(parts, 0, num_clients);
    }
    /* Adoption frees the part it refuses; the parts after it are freed here. */
    for (int64_t j = 0; !st && j < num_clients; j++) {
        st = fedc_client_adopt_feature(clients[j], &parts[j]);
        if (st) parts_free(parts, j + 1, num_clients);
    }
    fedc_free(parts);
    return st;
}

/* ------------------------------------------------- partitioned dataset -- */

static fedc_status check_assignment(const int64_t *assignment, int64_t n, int64_t num_clients, int64_t *counts) {
    for (int64_t i = 0; i < n; i++) {
        if (assignment[i] < 0 || assignment[i] >= num_clients)
            return fedc_error(FEDC_ERANGE, "partition: example %lld is assigned to client %lld, outside [0, %lld)",
                              (long long)i, (long long)assignment[i], (long long)num_clients);
        counts[assignment[i]]++;
    }
    return FEDC_OK;
}

/* Empty clients "0", "1", ... with the counts' numbers of examples. */
static fedc_status make_clients(fedc_client_data **clients, const int64_t *counts, int64_t num_clients) {
    fedc_status st = FEDC_OK;
    for (int64_t j = 0; !st && j < num_clients; j++) {
        char id[24];
        snprintf(id, sizeof id, "%lld", (long long)j);
        st = fedc_client_data_create(&clients[j], id, counts[j]);
    }
    return st;
}

static fedc_status split_all(const fedc_client_data *src, const int64_t *assignment, int64_t num_clients,
                             fedc_client_data **clients) {
    int64_t *counts = fedc_calloc((size_t)num_clients, sizeof *counts);
    if (!counts) return fedc_error(FEDC_ENOMEM, "partition: out of memory for %lld clients", (long long)num_clients);
    fedc_status st = check_assignment(assignment, src->num_examples, num_clients, counts);
    if (!st) st = make_clients(clients, counts, num_clients);
    fedc_free(counts);
    for (int i = 0; !st && i < src->num_features; i++)
        st = split_feature(&src->features[i], src->num_examples, assignment, clients, num_clients);
    return st;
}

fedc_status fedc__client_rows(const fedc_client_data *c, int64_t begin, int64_t end, fedc_client_data **out) {
    *out = NULL;
    int64_t n = c->num_examples;
    if (begin < 0 || end < begin || end > n)
        return fedc_error(FEDC_ERANGE, "client \"%s\": rows [%lld, %lld) are outside [0, %lld]", c->id,
                          (long long)begin, (long long)end, (long long)n);
    /* Part 0 is the rows wanted, part 1 the rest; the split keeps example order. */
    int64_t *assignment = fedc_malloc((size_t)(n ? n : 1) * sizeof *assignment);
    fedc_client_data *parts[2] = {NULL, NULL};
    char *id = fedc__strdup(c->id);
    if (!assignment || !id) {
        fedc_free(assignment), fedc_free(id);
        return fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory", c->id);
    }
    for (int64_t i = 0; i < n; i++) assignment[i] = i >= begin && i < end ? 0 : 1;
    fedc_status st = split_all(c, assignment, 2, parts);
    fedc_free(assignment);
    fedc_client_data_destroy(parts[1]);
    if (st) {
        fedc_client_data_destroy(parts[0]);
        fedc_free(id);
        return st;
    }
    fedc_free(parts[0]->id);
    parts[0]->id = id;
    *out = parts[0];
    return FEDC_OK;
}

fedc_status fedc_dataset_partition(fedc_dataset *central, const int64_t *assignment, int64_t num_clients,
                                   fedc_dataset **out) {
    *out = NULL;
    if (num_clients < 1) return fedc_error(FEDC_EINVAL, "partition: %lld clients", (long long)num_clients);
    if (fedc_dataset_num_clients(central) < 1) return fedc_error(FEDC_EINVAL, "%s: no client to partition", central->path);
    fedc_client_data *src;
    fedc_status st = fedc_dataset_client(central, 0, &src);
    if (st) return st;
    fedc_client_data **clients = fedc_calloc((size_t)num_clients, sizeof *clients);
    st = clients ? split_all(src, assignment, num_clients, clients)
                 : fedc_error(FEDC_ENOMEM, "partition: out of memory for %lld clients", (long long)num_clients);
    fedc_client_data_destroy(src);
    if (st) {
        for (int64_t j = 0; clients && j < num_clients; j++) fedc_client_data_destroy(clients[j]);
        fedc_free(clients);
        return st;
    }
    return fedc_dataset_from_clients(clients, num_clients, out);
}
