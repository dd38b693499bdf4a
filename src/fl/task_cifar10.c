/* CIFAR-10 (the tarball's python batches, or synthetic:cifar10 images): "x" u8
 * [n, h, w, 3] becomes f32 standardised per channel with the training clients'
 * mean and standard deviation, as pfl-research's benchmark does
 * (benchmarks/dataset/cifar10/numpy.py, load_and_preprocess: (x - mean) / std
 * over every training pixel of the channel, numpy's std with ddof 0, the test
 * set scaled by the training set's); "y" unchanged. */
#include <math.h>

#include "fl/train.h"

/* *x = client c's images, u8 [n, h, w, 3]. */
static fedc_status images(const fedc_client_data *c, const fedc_feature **x) {
    *x = fedc_client_feature(c, "x");
    const fedc_type *t = *x ? &(*x)->type : NULL;
    if (!t || (*x)->kind != FEDC_FEATURE_ARRAY || t->dtype != FEDC_U8 || t->rank != 4 || t->dims[3] != 3)
        return fedc_error(FEDC_ETYPE, "client \"%s\": the cifar10 task wants \"x\" u8[n,h,w,3]", c->id);
    return FEDC_OK;
}

/* Adds client c's pixels to the per-channel sums. Bytes, so the sums are exact
 * integers in double up to 2^53 (about 10^9 CIFAR-10 datasets). */
static fedc_status add_pixels(const fedc_client_data *c, double sum[3], double sq[3], double *count) {
    const fedc_feature *x;
    fedc_status st = images(c, &x);
    if (st) return st;
    const uint8_t *p = x->data;
    int64_t n = fedc_type_count(&x->type);
    for (int64_t i = 0; i < n; i++) sum[i % 3] += p[i], sq[i % 3] += (double)p[i] * p[i];
    *count += (double)(n / 3);
    return FEDC_OK;
}

fedc_status fedc__cifar10_prepare(trainer *t, void **ctx) {
    double sum[3] = {0}, sq[3] = {0}, count = 0;
    fedc_status st = FEDC_OK;
    for (int64_t i = 0; !st && i < fedc_dataset_num_clients(t->train); i++) {
        fedc_client_data *c = NULL;
        st = fedc_dataset_client(t->train, i, &c);
        if (!st) st = add_pixels(c, sum, sq, &count);
        fedc_client_data_destroy(c);
    }
    if (!st && count == 0) st = fedc_error(FEDC_EINVAL, "train: cifar10: the training clients hold no images");
    for (int ch = 0; !st && ch < 3; ch++) {
        double mean = sum[ch] / count, var = sq[ch] / count - mean * mean;
        t->cifar10.mean[ch] = (float)mean;
        t->cifar10.std[ch] = var > 1e-12 ? (float)sqrt(var) : 1.0f; /* a constant channel is only centred */
    }
    *ctx = &t->cifar10;
    return st;
}

fedc_status fedc__cifar10_hook(void *ctx, fedc_client_data **client) {
    const fedc__cifar10_stats *s = ctx;
    const fedc_client_data *in = *client;
    const fedc_feature *x, *y = fedc_client_feature(in, "y");
    fedc_status st = images(in, &x);
    if (!st && (!y || y->type.dtype != FEDC_I32))
        st = fedc_error(FEDC_ETYPE, "client \"%s\": the cifar10 task wants labels \"y\" i32[n]", in->id);
    if (st) return st;
    return fedc__task_scale_images(client, fedc_type_make(FEDC_F32, 4, x->type.dims), s->mean, s->std);
}

void fedc__cifar10_model_options(const trainer *t, fedc_model_options *o) {
    (void)t;
    o->input_height = o->input_width = 32;
    o->input_channels = 3;
}
