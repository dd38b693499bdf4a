/* Task preprocessing: what every task shares (feature lookups, label checks,
 * building the output client) and the cross-silo heart-disease task. The image
 * tasks are in tasks_image.c, the text tasks in tasks_text.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "data/tasks.h"

uint32_t fedc_client_key(const char *id) {
    /* FNV-1a: simple, and stable across machines and versions, which is what a
     * key of a reproducible random stream needs. */
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++) h = (h ^ *p) * 16777619u;
    return h;
}

/* ------------------------------------------------------------- shared -- */

/* "\"a\", \"b\"" for the error messages: what the client does have. */
static void feature_names(const fedc_client_data *c, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < c->num_features && used < size; i++) {
        int n = snprintf(buf + used, size - used, "%s\"%s\"", i ? ", " : "", c->features[i].name);
        if (n < 0) break;
        used += (size_t)n;
    }
    if (!c->num_features) snprintf(buf, size, "none");
}

static const char *kind_name(fedc_feature_kind kind, fedc_dtype dtype) {
    return kind == FEDC_FEATURE_STRINGS ? "strings" : fedc_dtype_name(dtype);
}

fedc_status fedc__task_input(const fedc_client_data *c, const char *task, const char *name, const char *alt,
                             fedc_feature_kind kind, fedc_dtype dtype, const fedc_feature **out) {
    const fedc_feature *f = fedc_client_feature(c, name);
    if (!f && alt) f = fedc_client_feature(c, alt);
    *out = f;
    if (!f) {
        char have[256];
        feature_names(c, have, sizeof have);
        return fedc_error(FEDC_ENOTFOUND, "client \"%s\": %s needs a feature \"%s\"%s%s%s (it has %s)", c->id, task,
                          name, alt ? " or \"" : "", alt ? alt : "", alt ? "\"" : "", have);
    }
    if (f->kind != kind || (kind == FEDC_FEATURE_ARRAY && f->type.dtype != dtype)) {
        char t[64];
        *out = NULL;
        return fedc_error(FEDC_ETYPE, "client \"%s\": %s needs feature \"%s\" to be %s, it is %s", c->id, task,
                          f->name, kind_name(kind, dtype),
                          f->kind == FEDC_FEATURE_STRINGS ? "strings" : fedc_type_str(&f->type, t, sizeof t));
    }
    return FEDC_OK;
}

fedc_status fedc__task_check_labels(const fedc_client_data *c, const char *task, const fedc_feature *labels,
                                    int32_t limit) {
    if (labels->type.rank != 1) {
        char t[64];
        return fedc_error(FEDC_ESHAPE, "client \"%s\": %s needs labels \"%s\" of shape [n], not %s", c->id, task,
                          labels->name, fedc_type_str(&labels->type, t, sizeof t));
    }
    const int32_t *y = labels->data;
    for (int64_t i = 0; i < c->num_examples; i++)
        if (y[i] < 0 || y[i] >= limit)
            return fedc_error(FEDC_ERANGE, "client \"%s\": %s label %d of example %lld (\"%s\") is outside [0, %d)",
                              c->id, task, (int)y[i], (long long)i, labels->name, (int)limit);
    return FEDC_OK;
}

void *fedc__task_alloc(const fedc_client_data *c, int64_t count, size_t size) {
    /* Sizes come from files: refuse what cannot be a size rather than wrap. */
    if (count < 0 || (uint64_t)count > SIZE_MAX / size / 2) {
        fedc_error(FEDC_ENOMEM, "client \"%s\": %lld elements is too many", c->id, (long long)count);
        return NULL;
    }
    void *p = fedc_malloc(count ? (size_t)count * size : 1);
    if (!p) fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory for %lld elements", c->id, (long long)count);
    return p;
}

fedc_status fedc__task_adopt(fedc_client_data *c, const char *name, fedc_type type, void *data) {
    fedc_feature f = {fedc__strdup(name), FEDC_FEATURE_ARRAY, type, data, NULL};
    if (!f.name) {
        fedc_free(data);
        return fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory for feature \"%s\"", c->id, name);
    }
    f.type.placement = FEDC_LOCAL;
    return fedc_client_adopt_feature(c, &f); /* frees f on failure */
}

fedc_status fedc__task_replace(fedc_client_data **client, fedc_status st, fedc_client_data *made) {
    if (st) return st;
    fedc_client_data_destroy(*client);
    *client = made;
    return FEDC_OK;
}

/* ------------------------------------------------------ heart disease -- */

#define HEART "heart disease"
#define NF FEDC_HEART_DISEASE_FEATURES

static fedc_status heart_check_options(const fedc_heart_disease_options *o) {
    if (!o || !o->mean || !o->std) return fedc_error(FEDC_EINVAL, HEART ": needs the mean and std of the features");
    for (int j = 0; j < NF; j++)
        if (!(o->std[j] > 0) || !isfinite(o->std[j]) || !isfinite(o->mean[j]))
            return fedc_error(FEDC_EINVAL, HEART ": feature %d has mean %g and std %g (std must be finite and > 0)",
                              j, (double)o->mean[j], (double)o->std[j]);
    return FEDC_OK;
}

/* *x = "x" f32[n, 13] of the client. */
static fedc_status heart_x(const fedc_client_data *c, const fedc_feature **x) {
    fedc_status st = fedc__task_input(c, HEART, "x", NULL, FEDC_FEATURE_ARRAY, FEDC_F32, x);
    if (!st && ((*x)->type.rank != 2 || (*x)->type.dims[1] != NF)) {
        char t[64];
        st = fedc_error(FEDC_ESHAPE, "client \"%s\": " HEART " needs \"x\" of shape [n,%d], not %s", c->id, NF,
                        fedc_type_str(&(*x)->type, t, sizeof t));
    }
    return st;
}

static fedc_status heart_labels(const fedc_client_data *c, fedc_client_data *out) {
    const fedc_feature *y;
    fedc_status st = fedc__task_input(c, HEART, "y", NULL, FEDC_FEATURE_ARRAY, FEDC_I32, &y);
    if (!st) st = fedc__task_check_labels(c, HEART, y, 5);
    int32_t *b = st ? NULL : fedc__task_alloc(c, c->num_examples, sizeof *b);
    if (st || !b) return st ? st : FEDC_ENOMEM;
    const int32_t *v = y->data;
    for (int64_t i = 0; i < c->num_examples; i++) b[i] = v[i] > 0;
    return fedc__task_adopt(out, "y", fedc_type_make(FEDC_I32, 1, &c->num_examples), b);
}

/* *mask = the CSV reader's "missing" u8 [n, 13] (1 where the file had '?'), or NULL. */
static fedc_status heart_missing(const fedc_client_data *c, const uint8_t **mask) {
    const fedc_feature *m = fedc_client_feature(c, "missing");
    *mask = NULL;
    if (!m) return FEDC_OK;
    if (m->kind != FEDC_FEATURE_ARRAY || m->type.dtype != FEDC_U8 || m->type.rank != 2 || m->type.dims[1] != NF)
        return fedc_error(FEDC_ETYPE, "client \"%s\": " HEART " needs \"missing\" to be u8[n,%d]", c->id, NF);
    *mask = m->data;
    return FEDC_OK;
}

static bool is_missing(const float *x, const uint8_t *mask, int64_t i) { return isnan(x[i]) || (mask && mask[i]); }

fedc_status fedc_heart_disease_preprocess(const fedc_client_data *in, const fedc_heart_disease_options *o,
                                          fedc_client_data **out) {
    *out = NULL;
    const fedc_feature *x = NULL;
    const uint8_t *mask = NULL;
    fedc_status st = heart_check_options(o);
    if (!st) st = heart_x(in, &x);
    if (!st) st = heart_missing(in, &mask);
    if (st) return st;
    int64_t n = in->num_examples;
    float *z = fedc__task_alloc(in, n * NF, sizeof *z);
    if (!z) return FEDC_ENOMEM;
    const float *v = x->data;
    for (int64_t i = 0; i < n * NF; i++) {
        int j = (int)(i % NF);
        /* The reader fills a missing value with its own silo's mean; imputing
         * puts the caller's (training) mean there instead. */
        float value = o->impute_missing && is_missing(v, mask, i) ? o->mean[j] : v[i];
        z[i] = (value - o->mean[j]) / o->std[j];
    }
    st = fedc_client_data_create(out, in->id, n);
    if (st) fedc_free(z);
    if (!st) st = fedc__task_adopt(*out, "x", fedc_type_make(FEDC_F32, 2, (int64_t[]){n, NF}), z);
    if (!st) st = heart_labels(in, *out);
    if (st) {
        fedc_client_data_destroy(*out);
        *out = NULL;
    }
    return st;
}

fedc_status fedc_heart_disease_hook(void *ctx, fedc_client_data **client) {
    fedc_client_data *made;
    fedc_status st = fedc_heart_disease_preprocess(*client, ctx, &made);
    return fedc__task_replace(client, st, made);
}

fedc_status fedc_heart_disease_stats(const fedc_client_data *const *clients, int64_t n, float *mean, float *std) {
    /* Two passes in double: the columns have values in the hundreds (cholesterol)
     * and a one-pass variance would lose digits to cancellation. */
    double sum[NF] = {0}, sq[NF] = {0};
    int64_t count[NF] = {0};
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t k = 0; k < n; k++) {
            const fedc_feature *x;
            const uint8_t *mask;
            fedc_status st = heart_x(clients[k], &x);
            if (!st) st = heart_missing(clients[k], &mask);
            if (st) return st;
            const float *v = x->data;
            for (int64_t i = 0; i < clients[k]->num_examples * NF; i++) {
                int j = (int)(i % NF);
                if (is_missing(v, mask, i)) continue; /* an imputed value would shrink the std */
                if (pass == 0) sum[j] += v[i], count[j]++;
                else sq[j] += (v[i] - sum[j]) * (v[i] - sum[j]);
            }
        }
        for (int j = 0; pass == 0 && j < NF; j++) sum[j] = count[j] ? sum[j] / (double)count[j] : 0;
    }
    for (int j = 0; j < NF; j++) {
        double sd = count[j] ? sqrt(sq[j] / (double)count[j]) : 0;
        mean[j] = (float)sum[j];
        std[j] = sd > 0 ? (float)sd : 1.0f;
    }
    return FEDC_OK;
}
