/* Task preprocessing for the image tasks, as FedJAX defines them:
 * EMNIST (fedjax/datasets/emnist.py: preprocess_batch, domain_id) and CIFAR-100
 * (fedjax/datasets/cifar100.py: preprocess_client, preprocess_image and
 * preprocess_image_tff). */
#include <math.h>
#include <string.h>

#include "data/tasks.h"

/* A new client with the id and examples of `in`, or the error. */
static fedc_status new_client(const fedc_client_data *in, int64_t n, fedc_client_data **out) {
    return fedc_client_data_create(out, in->id, n);
}

static fedc_status fail(fedc_client_data **out, fedc_status st) {
    fedc_client_data_destroy(*out);
    *out = NULL;
    return st;
}

/* Copies i32 labels (already checked) into a new feature "y" of `out`. */
static fedc_status copy_labels(const fedc_client_data *in, const fedc_feature *labels, fedc_client_data *out) {
    int32_t *y = fedc__task_alloc(in, in->num_examples, sizeof *y);
    if (!y) return FEDC_ENOMEM;
    if (in->num_examples) memcpy(y, labels->data, (size_t)in->num_examples * sizeof *y);
    return fedc__task_adopt(out, "y", fedc_type_make(FEDC_I32, 1, &in->num_examples), y);
}

/* ------------------------------------------------------------- EMNIST -- */

#define EMNIST "EMNIST"
#define EMNIST_PIXELS 784

/* *px = the client's 28x28 f32 images: TFF's and FedJAX's "pixels" [n,28,28] or
 * LEAF's "x" [n,784] (any shape of 784 values per example is taken). */
static fedc_status emnist_pixels(const fedc_client_data *c, const fedc_feature **px) {
    fedc_status st = fedc__task_input(c, EMNIST, "pixels", "x", FEDC_FEATURE_ARRAY, FEDC_F32, px);
    if (st) return st;
    int64_t per = 1;
    for (int d = 1; d < (*px)->type.rank; d++) per *= (*px)->type.dims[d];
    if (per == EMNIST_PIXELS && (*px)->type.rank >= 2) return FEDC_OK;
    char t[64];
    return fedc_error(FEDC_ESHAPE, "client \"%s\": " EMNIST " needs \"%s\" of 784 pixels per example ([n,784] or "
                      "[n,28,28]), not %s", c->id, (*px)->name, fedc_type_str(&(*px)->type, t, sizeof t));
}

/* FedJAX's emnist.domain_id: ids are "f####_##" (8 characters) or
 * "<16 hex>:f####_##" (25); writers 2100-2599 are Bethesda high-school students
 * (domain 0), the others Census Bureau employees (domain 1). */
static fedc_status emnist_domain(const char *id, int32_t *domain) {
    size_t len = strlen(id), at = len == 25 ? 18 : len == 8 ? 1 : 0;
    int writer = 0;
    bool ok = at != 0;
    for (size_t k = at; ok && k < at + 4; k++) {
        ok = id[k] >= '0' && id[k] <= '9';
        writer = 10 * writer + (id[k] - '0');
    }
    if (!ok)
        return fedc_error(FEDC_EINVAL, "client \"%s\": " EMNIST " domain_id needs an id \"f####_##\" or "
                          "\"<16 hex>:f####_##\"", id);
    *domain = writer >= 2100 && writer <= 2599 ? 0 : 1;
    return FEDC_OK;
}

static fedc_status emnist_add_domain(const fedc_client_data *in, fedc_client_data *out) {
    int32_t domain = 0;
    fedc_status st = emnist_domain(in->id, &domain);
    int32_t *d = st ? NULL : fedc__task_alloc(in, in->num_examples, sizeof *d);
    if (st || !d) return st ? st : FEDC_ENOMEM;
    for (int64_t i = 0; i < in->num_examples; i++) d[i] = domain;
    return fedc__task_adopt(out, "domain_id", fedc_type_make(FEDC_I32, 1, &in->num_examples), d);
}

fedc_status fedc_emnist_preprocess(const fedc_client_data *in, const fedc_emnist_options *o, fedc_client_data **out) {
    *out = NULL;
    const fedc_feature *px = NULL, *labels = NULL;
    fedc_status st = emnist_pixels(in, &px);
    if (!st) st = fedc__task_input(in, EMNIST, "label", "y", FEDC_FEATURE_ARRAY, FEDC_I32, &labels);
    if (!st) st = fedc__task_check_labels(in, EMNIST, labels, FEDC_EMNIST_CLASSES);
    if (st) return st;
    int64_t n = in->num_examples;
    float *x = fedc__task_alloc(in, n * EMNIST_PIXELS, sizeof *x);
    if (!x) return FEDC_ENOMEM;
    /* FedJAX feeds 1 - pixels: the stored images are dark strokes on a white (1)
     * background, and 1 - x gives MNIST's look, a zero background with bright
     * strokes, which the standard models were tuned on. */
    const float *v = px->data;
    for (int64_t i = 0; i < n * EMNIST_PIXELS; i++) x[i] = 1.0f - v[i];
    st = new_client(in, n, out);
    if (st) {
        fedc_free(x);
        return st;
    }
    st = fedc__task_adopt(*out, "x", fedc_type_make(FEDC_F32, 4, (int64_t[]){n, 28, 28, 1}), x);
    if (!st) st = copy_labels(in, labels, *out);
    if (!st && o && o->domain_id) st = emnist_add_domain(in, *out);
    return st ? fail(out, st) : FEDC_OK;
}

fedc_status fedc_emnist_hook(void *ctx, fedc_client_data **client) {
    fedc_client_data *made;
    fedc_status st = fedc_emnist_preprocess(*client, ctx, &made);
    return fedc__task_replace(client, st, made);
}

/* ---------------------------------------------------------- CIFAR-100 -- */

#define CIFAR "CIFAR-100"
#define SIDE 32
#define CHANNELS 3

/* FedJAX's CIFAR100_PIXELS_MEAN and the standard deviations it inverts, both
 * from kuangliu/pytorch-cifar, on pixels scaled to [0, 1]. */
const float fedc_cifar100_mean[3] = {0.4914f, 0.4822f, 0.4465f};
const float fedc_cifar100_std[3] = {0.2023f, 0.1994f, 0.2010f};

/* What is done to one image: take rows [i, i + h) and columns [j, j + w) of the
 * image padded with `pad` zeros on every side, and maybe mirror the columns. */
typedef struct crop {
    int h, w, pad;
    int i, j;
    bool flip;
} crop;

/* A uniform integer in [0, range) from a 32-bit word (multiply-shift; its bias
 * is below range / 2^32). */
static int uniform_below(uint32_t word, int range) { return (int)(((uint64_t)word * (uint64_t)range) >> 32); }

/* The crop of example e: fixed for evaluation, else draw e / examples_per_draw. */
static crop example_crop(const fedc_cifar100_options *o, fedc_rng_stream s, crop base, int64_t e) {
    if (!o->train) return base;
    int64_t per = o->examples_per_draw > 1 ? o->examples_per_draw : 1;
    fedc_philox_ctr b = fedc_rng_block(s, (uint64_t)(e / per));
    /* FedJAX: randint(2 * pad) for both offsets, so [0, 8) of a 40-pixel padded
     * image; TFF style: random_crop's offset in [0, 32 - size]. */
    int range_i = o->style == FEDC_CIFAR100_FEDJAX ? 2 * base.pad : SIDE - base.h + 1;
    int range_j = o->style == FEDC_CIFAR100_FEDJAX ? 2 * base.pad : SIDE - base.w + 1;
    base.i = uniform_below(b.c[0], range_i);
    base.j = uniform_below(b.c[1], range_j);
    base.flip = b.c[2] >> 31;
    return base;
}

/* Writes the h*w*3 pixels of the crop of `image` (u8 [32,32,3]) as floats 0..255. */
static void crop_image(const uint8_t *image, crop k, float *dst) {
    for (int r = 0; r < k.h; r++) {
        for (int c = 0; c < k.w; c++) {
            /* FedJAX crops then flips: column c of the result is column w-1-c of the crop. */
            int sr = r + k.i - k.pad, sc = (k.flip ? k.w - 1 - c : c) + k.j - k.pad;
            bool inside = sr >= 0 && sr < SIDE && sc >= 0 && sc < SIDE;
            for (int ch = 0; ch < CHANNELS; ch++)
                dst[(r * k.w + c) * CHANNELS + ch] = inside ? (float)image[(sr * SIDE + sc) * CHANNELS + ch] : 0.0f;
        }
    }
}

/* preprocess_image: (x / 255 - mean) * (1 / std), each step in f32 as numpy does
 * it, so the values are bit for bit FedJAX's. */
static void normalize_fedjax(float *px, int64_t count) {
    float inv[3];
    for (int ch = 0; ch < CHANNELS; ch++) inv[ch] = 1.0f / fedc_cifar100_std[ch];
    for (int64_t k = 0; k < count; k++) {
        int ch = (int)(k % CHANNELS);
        px[k] = (px[k] / 255.0f - fedc_cifar100_mean[ch]) * inv[ch];
    }
}

/* preprocess_image_tff: (x - mean) / max(std, sqrt(count)) over one image, with
 * FedJAX's bound (see fedc/tasks.h). Sums are in double: the order of numpy's
 * float32 sums is not reproducible anyway, and double loses nothing here. */
static void standardize_tff(float *px, int64_t count) {
    double sum = 0, sq = 0;
    for (int64_t k = 0; k < count; k++) sum += px[k];
    double mean = sum / (double)count;
    for (int64_t k = 0; k < count; k++) sq += (px[k] - mean) * (px[k] - mean);
    double sd = sqrt(sq / (double)count), bound = sqrt((double)count);
    float m = (float)mean, adjusted = (float)(sd > bound ? sd : bound);
    for (int64_t k = 0; k < count; k++) px[k] = (px[k] - m) / adjusted;
}

static fedc_status cifar_check_options(const fedc_client_data *in, const fedc_cifar100_options *o, crop *base) {
    if (!o) return fedc_error(FEDC_EINVAL, "client \"%s\": " CIFAR " needs its options", in->id);
    if (o->style == FEDC_CIFAR100_FEDJAX) {
        *base = (crop){SIDE, SIDE, o->train ? 4 : 0, 0, 0, false};
        return FEDC_OK;
    }
    if (o->style != FEDC_CIFAR100_TFF) return fedc_error(FEDC_EINVAL, CIFAR ": unknown style %d", (int)o->style);
    int h = o->crop_height ? o->crop_height : 24, w = o->crop_width ? o->crop_width : 24;
    if (h < 1 || h > SIDE || w < 1 || w > SIDE)
        return fedc_error(FEDC_EINVAL, CIFAR ": the crop is %dx%d; its sides must be from 1 to 32", h, w);
    /* tf.image.resize_with_crop_or_pad's centre crop, when not training. */
    *base = (crop){h, w, 0, (SIDE - h) / 2, (SIDE - w) / 2, false};
    return FEDC_OK;
}

/* *image = the client's u8 [n,32,32,3] images, *labels its i32 [n] labels. */
static fedc_status cifar_inputs(const fedc_client_data *in, const fedc_feature **image, const fedc_feature **labels) {
    fedc_status st = fedc__task_input(in, CIFAR, "image", "x", FEDC_FEATURE_ARRAY, FEDC_U8, image);
    const fedc_type *t = st ? NULL : &(*image)->type;
    if (t && (t->rank != 4 || t->dims[1] != SIDE || t->dims[2] != SIDE || t->dims[3] != CHANNELS)) {
        char s[64];
        st = fedc_error(FEDC_ESHAPE, "client \"%s\": " CIFAR " needs \"%s\" of shape [n,32,32,3], not %s", in->id,
                        (*image)->name, fedc_type_str(t, s, sizeof s));
    }
    if (!st) st = fedc__task_input(in, CIFAR, "label", "y", FEDC_FEATURE_ARRAY, FEDC_I32, labels);
    if (!st) st = fedc__task_check_labels(in, CIFAR, *labels, FEDC_CIFAR100_CLASSES);
    return st;
}

fedc_status fedc_cifar100_preprocess(const fedc_client_data *in, const fedc_cifar100_options *o,
                                     fedc_client_data **out) {
    *out = NULL;
    crop base = {0};
    const fedc_feature *image = NULL, *labels = NULL;
    fedc_status st = cifar_check_options(in, o, &base);
    if (!st) st = cifar_inputs(in, &image, &labels);
    if (st) return st;
    int64_t n = in->num_examples, per = (int64_t)base.h * base.w * CHANNELS;
    float *x = fedc__task_alloc(in, n * per, sizeof *x);
    if (!x) return FEDC_ENOMEM;
    uint32_t client = o->client_from_id ? fedc_client_key(in->id) : o->client;
    fedc_rng_stream s = fedc_rng_stream_make(o->seed, o->round, client, FEDC_CIFAR100_STEP);
    const uint8_t *pixels = image->data;
    for (int64_t e = 0; e < n; e++) {
        crop_image(pixels + e * SIDE * SIDE * CHANNELS, example_crop(o, s, base, e), x + e * per);
        if (o->style == FEDC_CIFAR100_TFF) standardize_tff(x + e * per, per);
    }
    if (o->style == FEDC_CIFAR100_FEDJAX) normalize_fedjax(x, n * per);
    st = new_client(in, n, out);
    if (st) {
        fedc_free(x);
        return st;
    }
    st = fedc__task_adopt(*out, "x", fedc_type_make(FEDC_F32, 4, (int64_t[]){n, base.h, base.w, CHANNELS}), x);
    if (!st) st = copy_labels(in, labels, *out);
    return st ? fail(out, st) : FEDC_OK;
}

fedc_status fedc_cifar100_hook(void *ctx, fedc_client_data **client) {
    fedc_client_data *made;
    fedc_status st = fedc_cifar100_preprocess(*client, ctx, &made);
    return fedc__task_replace(client, st, made);
}
