/*
 * fedc/data.h — federated datasets: clients, their examples, the readers for the
 * formats people have, partitioners, batching and client sampling.
 *
 * A federated dataset is a list of clients, each with an id and a number of
 * examples. A client's data is a set of named features, each an array whose leading
 * axis is the example (strings — text snippets, tokens — are a feature of kind
 * FEDC_FEATURE_STRINGS). Readers keep only what is asked for in memory: a client is
 * loaded when fedc_dataset_client() asks for it (HDF5 and SQLite read it from disk
 * then), and the caller frees it when done, so memory is O(cohort data).
 *
 *     fedc_dataset *ds;
 *     fedc_dataset_open(&ds, "../shared/data/femnist-leaf/train", FEDC_FORMAT_AUTO);
 *     for (int64_t i = 0; i < fedc_dataset_num_clients(ds); i++) {
 *         fedc_client_data *c;
 *         fedc_dataset_client(ds, i, &c);
 *         const fedc_feature *x = fedc_client_feature(c, "x");   // f32[n, 784]
 *         ...
 *         fedc_client_data_destroy(c);
 *     }
 *     fedc_dataset_destroy(ds);
 *
 * Errors name the file, the client and, where it applies, the byte offset.
 */
#ifndef FEDC_DATA_H
#define FEDC_DATA_H

#include "fedc/core.h"
#include "fedc/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- client data -- */

typedef enum fedc_feature_kind {
    FEDC_FEATURE_ARRAY,  /* `type` with dims[0] = examples; `data` row-major */
    FEDC_FEATURE_STRINGS /* one byte string per example: example i is
                          * data[offsets[i] .. offsets[i+1]); type is u8[examples] */
} fedc_feature_kind;

typedef struct fedc_feature {
    char *name;
    fedc_feature_kind kind;
    fedc_type type;
    void *data;
    int64_t *offsets; /* STRINGS: examples + 1 offsets into data */
} fedc_feature;

typedef struct fedc_client_data {
    char *id;
    int64_t num_examples;
    int num_features;
    fedc_feature *features;
} fedc_client_data;

FEDC_API fedc_status fedc_client_data_create(fedc_client_data **out, const char *id, int64_t num_examples);
FEDC_API void fedc_client_data_destroy(fedc_client_data *c); /* safe on NULL */
/* Adds a copy of an array feature; type.dims[0] must be the client's num_examples. */
FEDC_API fedc_status fedc_client_add_array(fedc_client_data *c, const char *name, fedc_type type, const void *data);
/* Adds a strings feature: example i is strings[i][0 .. lengths[i]) (lengths NULL:
 * NUL-terminated). */
FEDC_API fedc_status fedc_client_add_strings(fedc_client_data *c, const char *name, const char *const *strings,
                                    const size_t *lengths);
/* Takes ownership of an already built feature (name, data and offsets allocated with
 * fedc_malloc), for readers that fill arrays in place. */
FEDC_API fedc_status fedc_client_adopt_feature(fedc_client_data *c, fedc_feature *feature);
/* The feature named `name`, or NULL. */
FEDC_API const fedc_feature *fedc_client_feature(const fedc_client_data *c, const char *name);

/* ---------------------------------------------------------------- datasets -- */

typedef enum fedc_data_format {
    FEDC_FORMAT_AUTO,   /* detected from the path */
    FEDC_FORMAT_LEAF,   /* LEAF JSON (.json or .json.gz), a file or a directory of them */
    FEDC_FORMAT_TFF,    /* TensorFlow Federated HDF5: /examples/<client>/<feature> */
    FEDC_FORMAT_FEDJAX, /* FedJAX SQLite: federated_data(client_id, data, num_examples) */
    FEDC_FORMAT_IDX,    /* IDX images + labels (MNIST, Fashion-MNIST): one centralized client */
    FEDC_FORMAT_CSV,    /* a directory of CSV files, one client per file */
    FEDC_FORMAT_TEXT,   /* a directory of text files, one client per file */
    FEDC_FORMAT_MEMORY, /* clients built in memory (synthetic data, partitions) */
    FEDC_FORMAT_CIFAR10, /* the CIFAR-10 python tarball's pickled batches: one centralized client */
    FEDC_FORMAT_COUNT
} fedc_data_format;

FEDC_API const char *fedc_data_format_name(fedc_data_format f); /* "leaf", "tff", ... */
/* The formats fedc_dataset_open reads, as --format takes them: "leaf|tff|...". */
FEDC_API const char *fedc_data_formats(void);
/* Parses a name as the CLI takes it ("leaf", "tff", "fedjax", "idx", "csv", "text");
 * FEDC_EINVAL naming the accepted names otherwise. */
FEDC_API fedc_status fedc_data_format_parse(const char *name, fedc_data_format *out);

typedef struct fedc_dataset fedc_dataset;

/* Opens a dataset; FEDC_FORMAT_AUTO detects the format from the path (the error
 * says what was looked for when it cannot). */
FEDC_API fedc_status fedc_dataset_open(fedc_dataset **out, const char *path, fedc_data_format format);
FEDC_API void fedc_dataset_destroy(fedc_dataset *ds); /* safe on NULL */

FEDC_API fedc_data_format fedc_dataset_format(const fedc_dataset *ds);
FEDC_API int64_t fedc_dataset_num_clients(const fedc_dataset *ds);
FEDC_API int64_t fedc_dataset_total_examples(const fedc_dataset *ds);
/* Client i's id and number of examples, for i in [0, num_clients), in the order the
 * source lists them. */
FEDC_API const char *fedc_dataset_client_id(const fedc_dataset *ds, int64_t i);
FEDC_API int64_t fedc_dataset_client_examples(const fedc_dataset *ds, int64_t i);
/* The index of the client with this id; FEDC_ENOTFOUND naming the id otherwise. */
FEDC_API fedc_status fedc_dataset_find(const fedc_dataset *ds, const char *id, int64_t *index);
/* Loads client i (the caller destroys it). Runs the preprocessing hook if set. */
FEDC_API fedc_status fedc_dataset_client(fedc_dataset *ds, int64_t i, fedc_client_data **out);
/* A dataset of clients [begin, end) of `ds`, sharing its source: `ds` must outlive it. */
FEDC_API fedc_status fedc_dataset_slice(fedc_dataset *ds, int64_t begin, int64_t end, fedc_dataset **out);

/* Splits every client by example order, as LEAF splits Shakespeare: a client of
 * n >= 1 examples trains on its first max(1, floor((1 - fraction) n)) and holds
 * out the rest, so with text in order the test part (a role's last lines) was
 * never seen in training. `test` lists only the clients with a held-out example;
 * fraction must be in (0, 1). Both read through `ds`, which must outlive them;
 * set preprocessing on the splits (it runs after the split), not on `ds`. */
FEDC_API fedc_status fedc_dataset_holdout(fedc_dataset *ds, double fraction, fedc_dataset **train, fedc_dataset **test);

/* Preprocessing applied to each client as it is loaded, e.g. EMNIST's x = 1 - x.
 * It may replace *client (destroying the old one) and returns a status. */
typedef fedc_status (*fedc_client_fn)(void *ctx, fedc_client_data **client);
FEDC_API void fedc_dataset_set_preprocess(fedc_dataset *ds, fedc_client_fn fn, void *ctx);

/* A dataset held in memory: takes ownership of `clients` (an array of n client
 * data allocated with fedc_malloc, and the array itself). */
FEDC_API fedc_status fedc_dataset_from_clients(fedc_client_data **clients, int64_t n, fedc_dataset **out);

/* ---------------------------------------------------------------- batching -- */

/* A client's examples cut into batches and stacked for a fold: each array feature
 * becomes [steps, batch_size, ...], and mask [steps, batch_size] (f32, 1 for a real
 * example, 0 for padding) says which rows are real. `steps` is the number of
 * batches; fold over them with length = steps. A strings feature is not batched
 * (preprocess it into arrays first). */
typedef struct fedc_batches {
    int64_t steps, batch_size;
    int num_features;
    fedc_feature *features; /* ARRAY features, [steps, batch_size, ...] */
    float *mask;            /* [steps * batch_size] */
} fedc_batches;

FEDC_API void fedc_batches_destroy(fedc_batches *b); /* safe on NULL */
FEDC_API const fedc_feature *fedc_batches_feature(const fedc_batches *b, const char *name);

/* FedJAX's batch(): consecutive batches in example order; the last, smaller one is
 * kept (padded, with its mask) unless drop_remainder. */
FEDC_API fedc_status fedc_batch(const fedc_client_data *c, int64_t batch_size, bool drop_remainder, fedc_batches **out);
/* FedJAX's padded_batch(): as batch() without drop_remainder. Every batch, the last
 * included, is padded to batch_size (FedJAX's single bucket), so
 * num_batch_size_buckets (>= 1) changes nothing here: the real rows and their mask
 * are FedJAX's for any bucket count. */
FEDC_API fedc_status fedc_padded_batch(const fedc_client_data *c, int64_t batch_size, int num_batch_size_buckets,
                              fedc_batches **out);
/* FedJAX's shuffle_repeat_batch(): the examples shuffled, repeated num_epochs times
 * (each epoch a new permutation), cut into batches; at most num_steps batches
 * (num_steps < 0: no limit; num_epochs < 0 with num_steps: repeat until num_steps).
 * Shuffles come from the counter RNG keyed by (seed, round, client), so they are the
 * same on any machine. */
FEDC_API fedc_status fedc_shuffle_repeat_batch(const fedc_client_data *c, int64_t batch_size, int num_epochs,
                                      int64_t num_steps, bool drop_remainder, uint64_t seed, uint32_t round,
                                      uint32_t client, fedc_batches **out);
/* The same batches in FedJAX's own order (`fedc train --rng fedjax`): its
 * ShuffleRepeatBatchHParams(seed=seed), NumPy's RandomState(seed) reshuffling one
 * buffer each epoch, so the batches are FedJAX's to the example. */
FEDC_API fedc_status fedc_shuffle_repeat_batch_numpy(const fedc_client_data *c, int64_t batch_size, int num_epochs,
                                                     int64_t num_steps, bool drop_remainder, uint32_t seed,
                                                     fedc_batches **out);

/* A per-batch preprocessing hook: called for each step t of b in order, with the
 * step's rows of every feature as views (type [batch_size, ...], data pointing into
 * b) and its mask; it may change values in place (augmentation, normalisation). */
typedef fedc_status (*fedc_batch_fn)(void *ctx, int64_t step, fedc_feature *features, int num_features,
                                     float *mask, int64_t batch_size);
/* Runs fn over every batch of b; stops at the first error. */
FEDC_API fedc_status fedc_batches_map(fedc_batches *b, fedc_batch_fn fn, void *ctx);

/* ---------------------------------------------------------------- sampling -- */

/* `per_round` distinct client indices out of num_clients, uniformly without
 * replacement, as a function of (seed, round) only; written in increasing order. */
FEDC_API fedc_status fedc_sample_clients(int64_t num_clients, int64_t per_round, uint64_t seed, uint32_t round,
                                int64_t *out);
/* Poisson sampling: each client joins round `round` independently with probability
 * q, as a function of (seed, round) only; the *n joined, in increasing order, to
 * out (at most max: ERANGE, naming the round, if more join). */
FEDC_API fedc_status fedc_sample_clients_poisson(int64_t num_clients, double q, uint64_t seed, uint32_t round,
                                                 int64_t max, int64_t *out, int64_t *n);
/* Shuffled epochs: each epoch is a permutation of the clients keyed by (seed,
 * epoch); round r takes the next per_round clients, wrapping into the next epoch. */
FEDC_API fedc_status fedc_sample_clients_epochs(int64_t num_clients, int64_t per_round, uint64_t seed, uint32_t round,
                                       int64_t *out);
/* FedJAX's UniformGetClientSampler(fd, per_round, seed) at round_num (FedJAX's
 * training loop counts rounds from 1): NumPy's RandomState of
 * get_pseudo_random_state(seed, round_num) draws choice(clients, per_round,
 * replace=False); the clients' indices in the order it draws them (not sorted).
 * num_clients below 2^32. */
FEDC_API fedc_status fedc_sample_clients_fedjax(int64_t num_clients, int64_t per_round, uint32_t seed,
                                                uint32_t round_num, int64_t *out);

/* ------------------------------------------------------------- partitioning -- */

/* Split a centralized dataset (one client holding everything, e.g. from IDX) into
 * num_clients clients. assignment[i] = the client of example i. */
FEDC_API fedc_status fedc_partition_iid(int64_t examples, int64_t num_clients, uint64_t seed, int64_t *assignment);
/* Each client draws its label proportions from Dirichlet(alpha * p), p the dataset's
 * label frequencies (Hsu et al. 2019); client sizes stay balanced (docs/data.md). */
FEDC_API fedc_status fedc_partition_dirichlet(const int32_t *labels, int64_t examples, int32_t num_classes,
                                     int64_t num_clients, double alpha, uint64_t seed, int64_t *assignment);
/* Clients into groups (fedc train --groups dirichlet:N:ALPHA; docs/training.md,
 * "Groups"): the groups' shares of the clients p ~ Dirichlet(alpha, ..., alpha),
 * group g's size floor(num_clients p_g) with the clients left over one each to the
 * largest remainders, and the clients of each group drawn uniformly (a shuffle
 * cut into the sizes). group_of[i] = the group of client i; a small alpha can
 * leave groups empty. A function of its arguments, the same on every machine. */
FEDC_API fedc_status fedc_partition_groups_dirichlet(int64_t num_clients, int groups, double alpha, uint64_t seed,
                                                     int32_t *group_of);
/* Sort by label, cut into num_clients * k shards, give each client k shards
 * (McMahan et al. 2017). */
FEDC_API fedc_status fedc_partition_shards(const int32_t *labels, int64_t examples, int64_t num_clients, int k,
                                  uint64_t seed, int64_t *assignment);
/* A federated dataset from client 0 of `central` (its every feature) split by
 * `assignment`; clients are named "0", "1", ... in order. */
FEDC_API fedc_status fedc_dataset_partition(fedc_dataset *central, const int64_t *assignment, int64_t num_clients,
                                   fedc_dataset **out);

/* --------------------------------------------------------------- synthetic -- */

/* FedProx's Synthetic(alpha, beta) (Li et al. 2020): num_clients clients of
 * dimension 60 and 10 classes, client sizes log-normal, features "x" f32[n, 60] and
 * "y" i32[n]. */
FEDC_API fedc_status fedc_synthetic_fedprox(double alpha, double beta, int64_t num_clients, uint64_t seed, fedc_dataset **out);
/* Token sequences with Zipfian word frequencies (exponent s) over `vocab` ids,
 * feature "tokens" i32[n, length], for language-model benchmarks. */
FEDC_API fedc_status fedc_synthetic_zipf(int64_t num_clients, int64_t examples_per_client, int64_t length, int32_t vocab,
                                double s, uint64_t seed, fedc_dataset **out);
/* The same with heavy-tailed client sizes, as real text data has: client k holds
 * min_examples + floor(exp(mu + sigma z_k)) examples (at most 1,000,000), z_k a
 * standard normal of the counter RNG (seed, 0, k, 1), so a client's size, like its
 * tokens, depends on the seed and its index alone. docs/benchmarks.md's Stack
 * Overflow round uses min 100, mu 4.57, sigma 1.5 (a mean of about 397, as TFF's
 * Stack Overflow train split has). */
FEDC_API fedc_status fedc_synthetic_zipf_lognormal(int64_t num_clients, int64_t min_examples, double mu, double sigma,
                                          int64_t length, int32_t vocab, double s, uint64_t seed, fedc_dataset **out);
/* Images of one shape as a vision benchmark's stand-in where its files are absent
 * (fedc train --data synthetic:cifar10:CLIENTS:EXAMPLES): features "x" u8[n,
 * height, width, channels] and "y" i32[n], labels uniform in [0, classes) (at
 * most 10), pixels uniform in [0, 135] plus 12 times the label (so that the data
 * are a little learnable), all from the counter RNG (seed, 0, client, 2 and 3). */
FEDC_API fedc_status fedc_synthetic_images(int64_t num_clients, int64_t examples_per_client, int64_t height,
                                           int64_t width, int64_t channels, int32_t classes, uint64_t seed,
                                           fedc_dataset **out);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_DATA_H */
