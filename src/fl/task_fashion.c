/* Fashion-MNIST (IDX): u8 images [n, h, w] -> "x" f32 [n, h, w, 1] / 255, as
 * torchvision's ToTensor and FedJAX's image datasets scale; "y" unchanged. The
 * scaling is fedc__task_scale_images, which CIFAR-10 shares. */
#include "fl/task.h"

fedc_status fedc__task_scale_images(fedc_client_data **client, fedc_type t, const float *shift, const float *scale) {
    fedc_client_data *in = *client, *out;
    const fedc_feature *x = fedc_client_feature(in, "x"), *y = fedc_client_feature(in, "y");
    int64_t n = fedc_type_count(&t), channels = t.dims[t.rank - 1];
    fedc_status st = fedc_client_data_create(&out, in->id, in->num_examples);
    if (st) return st;
    float *f = fedc_malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f) st = fedc_error(FEDC_ENOMEM, "client \"%s\": out of memory", in->id);
    const uint8_t *p = x->data;
    for (int64_t i = 0; !st && i < n; i++) f[i] = ((float)p[i] - shift[i % channels]) / scale[i % channels];
    if (!st) st = fedc_client_add_array(out, "x", t, f);
    if (!st) st = fedc_client_add_array(out, "y", y->type, y->data);
    fedc_free(f);
    if (st) {
        fedc_client_data_destroy(out);
        return st;
    }
    fedc_client_data_destroy(in);
    *client = out;
    return FEDC_OK;
}

fedc_status fedc__fashion_hook(void *ctx, fedc_client_data **client) {
    (void)ctx;
    const fedc_client_data *in = *client;
    const fedc_feature *x = fedc_client_feature(in, "x"), *y = fedc_client_feature(in, "y");
    if (!x || !y || x->kind != FEDC_FEATURE_ARRAY || x->type.dtype != FEDC_U8 || x->type.rank != 3)
        return fedc_error(FEDC_ETYPE, "client \"%s\": the image task wants \"x\" u8[n,h,w] and \"y\"", in->id);
    static const float zero = 0.0f, full = 255.0f; /* (p - 0) / 255: the same bits as p / 255 */
    fedc_type t = fedc_type_make(FEDC_F32, 4, (int64_t[]){x->type.dims[0], x->type.dims[1], x->type.dims[2], 1});
    return fedc__task_scale_images(client, t, &zero, &full);
}
