/* A client's data: named features, each with a leading example axis. */
#include <string.h>

#include "data/dataset.h"

char *fedc__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = fedc_malloc(n);
    if (copy) memcpy(copy, s, n);
    return copy;
}

fedc_status fedc_client_data_create(fedc_client_data **out, const char *id, int64_t num_examples) {
    *out = NULL;
    if (num_examples < 0) return fedc_error(FEDC_EINVAL, "client \"%s\": negative number of examples", id);
    fedc_client_data *c = fedc_calloc(1, sizeof *c);
    if (c) c->id = fedc__strdup(id);
    if (!c || !c->id) {
        fedc_free(c);
        return fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory", id);
    }
    c->num_examples = num_examples;
    *out = c;
    return FEDC_OK;
}

static void feature_free(fedc_feature *f) {
    fedc_free(f->name);
    fedc_free(f->data);
    fedc_free(f->offsets);
}

void fedc_client_data_destroy(fedc_client_data *c) {
    if (!c) return;
    for (int i = 0; i < c->num_features; i++) feature_free(&c->features[i]);
    fedc_free(c->features);
    fedc_free(c->id);
    fedc_free(c);
}

const fedc_feature *fedc_client_feature(const fedc_client_data *c, const char *name) {
    for (int i = 0; i < c->num_features; i++)
        if (strcmp(c->features[i].name, name) == 0) return &c->features[i];
    return NULL;
}

fedc_status fedc_client_adopt_feature(fedc_client_data *c, fedc_feature *f) {
    fedc_status st = FEDC_OK;
    if (fedc_client_feature(c, f->name))
        st = fedc_error(FEDC_EINVAL, "client \"%s\": two features are named \"%s\"", c->id, f->name);
    else if (f->type.rank < 1 || f->type.dims[0] != c->num_examples)
        st = fedc_error(FEDC_ESHAPE, "client \"%s\": feature \"%s\" has %lld examples, the client %lld", c->id, f->name,
                        (long long)(f->type.rank ? f->type.dims[0] : 0), (long long)c->num_examples);
    fedc_feature *grown = st ? NULL : fedc_realloc(c->features, (size_t)(c->num_features + 1) * sizeof *grown);
    if (!st && !grown) st = fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory", c->id);
    if (st) {
        feature_free(f);
        return st;
    }
    c->features = grown;
    c->features[c->num_features++] = *f;
    return FEDC_OK;
}

fedc_status fedc__client_adopt_array(fedc_client_data *c, const char *name, fedc_type type, void *data) {
    fedc_feature f = {fedc__strdup(name), FEDC_FEATURE_ARRAY, type, data, NULL};
    if (!f.name) {
        fedc_free(data);
        return fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory for feature \"%s\"", c->id, name);
    }
    return fedc_client_adopt_feature(c, &f);
}

fedc_status fedc_client_add_array(fedc_client_data *c, const char *name, fedc_type type, const void *data) {
    size_t bytes = fedc_type_bytes(&type);
    fedc_feature f = {fedc__strdup(name), FEDC_FEATURE_ARRAY, type, fedc_malloc(bytes ? bytes : 1), NULL};
    if (!f.name || !f.data) {
        feature_free(&f);
        return fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory for feature \"%s\"", c->id, name);
    }
    if (bytes) memcpy(f.data, data, bytes);
    f.type.placement = FEDC_LOCAL;
    return fedc_client_adopt_feature(c, &f);
}

fedc_status fedc_client_add_strings(fedc_client_data *c, const char *name, const char *const *strings,
                                    const size_t *lengths) {
    int64_t n = c->num_examples;
    size_t total = 0;
    for (int64_t i = 0; i < n; i++) total += lengths ? lengths[i] : strlen(strings[i]);
    fedc_feature f = {fedc__strdup(name), FEDC_FEATURE_STRINGS, fedc_type_make(FEDC_U8, 1, &n),
                      fedc_malloc(total ? total : 1), fedc_malloc((size_t)(n + 1) * sizeof(int64_t))};
    if (!f.name || !f.data || !f.offsets) {
        feature_free(&f);
        return fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory for feature \"%s\"", c->id, name);
    }
    f.offsets[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        size_t len = lengths ? lengths[i] : strlen(strings[i]);
        memcpy((char *)f.data + f.offsets[i], strings[i], len);
        f.offsets[i + 1] = f.offsets[i] + (int64_t)len;
    }
    return fedc_client_adopt_feature(c, &f);
}
