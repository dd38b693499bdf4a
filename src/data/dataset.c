/* Datasets: the client index every reader fills, lookups, slices, preprocessing
 * hooks, and datasets held in memory. */
#include <string.h>

#include "data/dataset.h"

/* --------------------------------------------------------------- index -- */

fedc_status fedc__dataset_create(fedc_dataset **out, const fedc__dataset_ops *ops, fedc_data_format format,
                                 const char *path, void *impl) {
    *out = NULL;
    fedc_dataset *ds = fedc_calloc(1, sizeof *ds);
    if (ds) ds->path = fedc__strdup(path);
    if (!ds || !ds->path) {
        fedc_free(ds);
        if (ops && ops->destroy) ops->destroy(impl);
        return fedc_error(FEDC_ENOMEM, "%s: out of memory", path);
    }
    ds->ops = ops;
    ds->format = format;
    ds->impl = impl;
    *out = ds;
    return FEDC_OK;
}

fedc_status fedc__dataset_add_client(fedc_dataset *ds, const char *id, int64_t examples) {
    if (ds->n == ds->cap) {
        int64_t cap = ds->cap ? 2 * ds->cap : 64;
        char **ids = fedc_realloc(ds->ids, (size_t)cap * sizeof *ids);
        if (ids) ds->ids = ids;
        int64_t *ex = ids ? fedc_realloc(ds->examples, (size_t)cap * sizeof *ex) : NULL;
        if (!ex) return fedc_error(FEDC_ENOMEM, "%s: out of memory for %lld clients", ds->path, (long long)cap);
        ds->examples = ex;
        ds->cap = cap;
    }
    char *copy = fedc__strdup(id);
    if (!copy) return fedc_error(FEDC_ENOMEM, "%s: out of memory", ds->path);
    ds->ids[ds->n] = copy;
    ds->examples[ds->n++] = examples;
    ds->total += examples;
    return FEDC_OK;
}

void fedc_dataset_destroy(fedc_dataset *ds) {
    if (!ds) return;
    if (ds->ops && ds->ops->destroy) ds->ops->destroy(ds->impl);
    for (int64_t i = 0; !ds->parent && i < ds->n; i++) fedc_free(ds->ids[i]);
    if (!ds->parent) {
        fedc_free(ds->ids);
        fedc_free(ds->examples);
    }
    fedc_free(ds->path);
    fedc_free(ds);
}

/* ------------------------------------------------------------ queries -- */

fedc_data_format fedc_dataset_format(const fedc_dataset *ds) { return ds->format; }
int64_t fedc_dataset_num_clients(const fedc_dataset *ds) { return ds->n; }
int64_t fedc_dataset_total_examples(const fedc_dataset *ds) { return ds->total; }

const char *fedc_dataset_client_id(const fedc_dataset *ds, int64_t i) {
    return i >= 0 && i < ds->n ? ds->ids[i] : NULL;
}

int64_t fedc_dataset_client_examples(const fedc_dataset *ds, int64_t i) {
    return i >= 0 && i < ds->n ? ds->examples[i] : -1;
}

fedc_status fedc_dataset_find(const fedc_dataset *ds, const char *id, int64_t *index) {
    for (int64_t i = 0; i < ds->n; i++) {
        if (strcmp(ds->ids[i], id) == 0) {
            *index = i;
            return FEDC_OK;
        }
    }
    return fedc_error(FEDC_ENOTFOUND, "%s: no client \"%s\" (it has %lld clients)", ds->path, id, (long long)ds->n);
}

void fedc_dataset_set_preprocess(fedc_dataset *ds, fedc_client_fn fn, void *ctx) {
    ds->preprocess = fn;
    ds->preprocess_ctx = ctx;
}

fedc_status fedc_dataset_client(fedc_dataset *ds, int64_t i, fedc_client_data **out) {
    *out = NULL;
    if (i < 0 || i >= ds->n)
        return fedc_error(FEDC_ERANGE, "%s: client index %lld is outside [0, %lld)", ds->path, (long long)i,
                          (long long)ds->n);
    fedc_dataset *source = ds->parent ? ds->parent : ds;
    fedc_status st = source->ops->load(source, i + ds->offset, out);
    if (!st && (*out)->num_examples != ds->examples[i])
        st = fedc_error(FEDC_EPARSE, "%s: client \"%s\" has %lld examples, its index says %lld", ds->path, ds->ids[i],
                        (long long)(*out)->num_examples, (long long)ds->examples[i]);
    if (!st && ds->preprocess) st = ds->preprocess(ds->preprocess_ctx, out);
    if (st) {
        fedc_client_data_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* ------------------------------------------------------------- slices -- */

fedc_status fedc_dataset_slice(fedc_dataset *ds, int64_t begin, int64_t end, fedc_dataset **out) {
    *out = NULL;
    if (begin < 0 || end < begin || end > ds->n)
        return fedc_error(FEDC_ERANGE, "%s: slice [%lld, %lld) is outside [0, %lld]", ds->path, (long long)begin,
                          (long long)end, (long long)ds->n);
    fedc_dataset *root = ds->parent ? ds->parent : ds;
    fedc_dataset *s;
    fedc_status st = fedc__dataset_create(&s, NULL, ds->format, ds->path, NULL);
    if (st) return st;
    s->parent = root;
    s->offset = ds->offset + begin;
    s->ids = ds->ids + begin; /* views into the parent's index */
    s->examples = ds->examples + begin;
    s->n = s->cap = end - begin;
    for (int64_t i = 0; i < s->n; i++) s->total += s->examples[i];
    s->preprocess = ds->preprocess;
    s->preprocess_ctx = ds->preprocess_ctx;
    *out = s;
    return FEDC_OK;
}

/* -------------------------------------------------------------- memory -- */

typedef struct memory_source {
    fedc_client_data **clients;
    int64_t n;
} memory_source;

/* A deep copy, so the caller owns what it gets and the dataset keeps its own. */
static fedc_status copy_client(const fedc_client_data *c, fedc_client_data **out) {
    fedc_status st = fedc_client_data_create(out, c->id, c->num_examples);
    for (int i = 0; !st && i < c->num_features; i++) {
        const fedc_feature *f = &c->features[i];
        if (f->kind == FEDC_FEATURE_ARRAY) {
            st = fedc_client_add_array(*out, f->name, f->type, f->data);
            continue;
        }
        size_t bytes = (size_t)f->offsets[c->num_examples];
        fedc_feature g = {fedc__strdup(f->name), f->kind, f->type, fedc_malloc(bytes ? bytes : 1),
                          fedc_malloc((size_t)(c->num_examples + 1) * sizeof(int64_t))};
        if (g.name && g.data && g.offsets) {
            memcpy(g.data, f->data, bytes);
            memcpy(g.offsets, f->offsets, (size_t)(c->num_examples + 1) * sizeof(int64_t));
            st = fedc_client_adopt_feature(*out, &g);
        } else {
            fedc_free(g.name), fedc_free(g.data), fedc_free(g.offsets);
            st = fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory", c->id);
        }
    }
    if (st) {
        fedc_client_data_destroy(*out);
        *out = NULL;
    }
    return st;
}

static fedc_status memory_load(fedc_dataset *ds, int64_t i, fedc_client_data **out) {
    const memory_source *m = ds->impl;
    return copy_client(m->clients[i], out);
}

static void memory_destroy(void *impl) {
    memory_source *m = impl;
    if (!m) return;
    for (int64_t i = 0; i < m->n; i++) fedc_client_data_destroy(m->clients[i]);
    fedc_free(m->clients);
    fedc_free(m);
}

static const fedc__dataset_ops memory_ops = {memory_load, memory_destroy};

fedc_status fedc_dataset_from_clients(fedc_client_data **clients, int64_t n, fedc_dataset **out) {
    *out = NULL;
    memory_source *m = fedc_malloc(sizeof *m);
    if (!m) {
        for (int64_t i = 0; i < n; i++) fedc_client_data_destroy(clients[i]);
        fedc_free(clients);
        return fedc_error(FEDC_ENOMEM, "dataset: out of memory");
    }
    m->clients = clients;
    m->n = n;
    fedc_status st = fedc__dataset_create(out, &memory_ops, FEDC_FORMAT_MEMORY, "(memory)", m);
    for (int64_t i = 0; !st && i < n; i++) st = fedc__dataset_add_client(*out, clients[i]->id, clients[i]->num_examples);
    if (st) {
        fedc_dataset_destroy(*out);
        *out = NULL;
    }
    return st;
}
