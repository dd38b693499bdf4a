/* dataset.h — what every reader shares (internal): a dataset is an index of its
 * clients (ids and example counts, built when it is opened) plus a reader that
 * loads one client on demand. */
#ifndef FEDC_DATA_DATASET_H
#define FEDC_DATA_DATASET_H

#include "fedc/data.h"

typedef struct fedc__dataset_ops {
    /* Loads client i (an index of this dataset) into a new client data. */
    fedc_status (*load)(fedc_dataset *ds, int64_t i, fedc_client_data **out);
    /* Frees the reader's state (ds->impl); the base frees the rest. */
    void (*destroy)(void *impl);
} fedc__dataset_ops;

struct fedc_dataset {
    const fedc__dataset_ops *ops;
    fedc_data_format format;
    char *path;
    int64_t n, cap;
    char **ids;
    int64_t *examples;
    int64_t total;
    fedc_client_fn preprocess;
    void *preprocess_ctx;
    fedc_dataset *parent; /* a slice reads through its parent */
    int64_t offset;       /* a slice's first client in the parent */
    void *impl;           /* the reader's state */
};

/* A new empty dataset for a reader (takes `impl`; on failure calls ops->destroy). */
FEDC_INTERNAL_API fedc_status fedc__dataset_create(fedc_dataset **out, const fedc__dataset_ops *ops, fedc_data_format format,
                                 const char *path, void *impl);
/* Appends a client to the index. */
FEDC_INTERNAL_API fedc_status fedc__dataset_add_client(fedc_dataset *ds, const char *id, int64_t examples);

/* Adds an array feature whose data (from fedc_malloc) the client takes over,
 * whatever happens (src/data/client.c). */
FEDC_INTERNAL_API fedc_status fedc__client_adopt_array(fedc_client_data *c, const char *name, fedc_type type, void *data);

/* Readers (src/data/read_*.c); each opens `path` as its format. Those of formats
 * that need libraries of their own are libfedc_formats's (src/formats/formats.h). */
fedc_status fedc__open_leaf(fedc_dataset **out, const char *path);
fedc_status fedc__open_idx(fedc_dataset **out, const char *path);
fedc_status fedc__open_csv(fedc_dataset **out, const char *path);
fedc_status fedc__open_text(fedc_dataset **out, const char *path);
FEDC_INTERNAL_API fedc_status fedc__open_cifar10(fedc_dataset **out, const char *path);

/* Gives the table's row of `format` (src/data/open.c) its reader: how
 * libfedc_formats adds the formats whose rows have none in libfedc. */
FEDC_INTERNAL_API void fedc__data_set_reader(fedc_data_format format,
                                             fedc_status (*open)(fedc_dataset **out, const char *path));

/* Files (src/data/files.c). fedc__path_join: "dir/name" (fedc_malloc'd, NULL on out
 * of memory). fedc__read_file: the whole file, NUL-terminated. fedc__dir_files: the
 * names of the regular files in dir ending in one of `suffixes` (NULL-terminated),
 * sorted bytewise; FEDC_ENOTFOUND naming `what` when there are none. */
char *fedc__path_join(const char *dir, const char *name);
fedc_status fedc__read_file(const char *path, char **data, size_t *len);
fedc_status fedc__dir_files(const char *dir, const char *const *suffixes, const char *what, char ***names,
                            int64_t *count);
void fedc__free_names(char **names, int64_t count);

/* perm := a uniform permutation of 0..n-1 (Fisher-Yates from the identity, swap i
 * drawing element tag + i of s), a function of (s, tag) alone (src/data/sample.c). */
void fedc__permutation(int64_t *perm, int64_t n, fedc_rng_stream s, uint64_t tag);
/* k of [0, n) drawn uniformly without replacement from stream s, sorted: the
 * draw fedc_sample_clients makes from its (seed, round) stream, from any stream
 * (fedc train's per-group sampling keys one per group; src/data/sample.c). */
void fedc__sample_stream(int64_t n, int64_t k, fedc_rng_stream s, int64_t *out);

/* A new client with examples [begin, end) of c, in order, and c's id (src/data/partition.c). */
fedc_status fedc__client_rows(const fedc_client_data *c, int64_t begin, int64_t end, fedc_client_data **out);

/* strdup through fedc_malloc (NULL on out of memory). */
FEDC_INTERNAL_API char *fedc__strdup(const char *s);

#endif
