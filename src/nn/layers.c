/*
 * src/nn/layers.c — the layers the models are made of: declarations that append a
 * layer's parameters to the table (with Haiku's default initialisers), and the
 * ops each layer adds to a program. The ops are plain builder calls, so a model
 * is differentiable by fedc_grad with no rules of its own, and errors are the
 * builder's sticky ones.
 */
#include "nn/nn.h"

#include <math.h>
#include <stdio.h>

fedc_status fedc__nn_declare(fedc__nn_params *ps, const char *layer, const char *suffix, int rank, const int64_t *dims,
                            double init_stddev) {
    if (ps->count >= FEDC_NN_MAX_PARAMS)
        return fedc_error(FEDC_EINTERNAL, "model: more than %d parameters", FEDC_NN_MAX_PARAMS);
    fedc__nn_param *q = &ps->items[ps->count];
    int len = snprintf(q->name, sizeof q->name, "%s/%s", layer, suffix);
    if (len < 0 || (size_t)len >= sizeof q->name)
        return fedc_error(FEDC_EINTERNAL, "model: parameter name %s/%s is too long", layer, suffix);
    q->type = fedc_type_make(FEDC_F32, rank, dims);
    q->size = fedc_type_count(&q->type);
    q->offset = ps->size;
    q->init_stddev = init_stddev;
    q->init_uniform = 0;
    ps->size += q->size;
    ps->count++;
    return FEDC_OK;
}

/* hk.Linear: w_init = TruncatedNormal(stddev = 1 / sqrt(input_size)), b_init = zeros
 * (dm-haiku haiku/_src/basic.py, Linear.__call__). */
fedc_status fedc__nn_declare_dense(fedc__nn_params *ps, const char *layer, int64_t in, int64_t out) {
    fedc_status st = fedc__nn_declare(ps, layer, "w", 2, (int64_t[]){in, out}, 1.0 / sqrt((double)in));
    if (st) return st;
    return fedc__nn_declare(ps, layer, "b", 1, (int64_t[]){out}, 0.0);
}

/* hk.Conv2D: fan_in = prod(w_shape[:-1]) = kh * kw * cin, w_init =
 * TruncatedNormal(stddev = 1 / sqrt(fan_in)), b_init = zeros (dm-haiku
 * haiku/_src/conv.py, ConvND.__call__). */
fedc_status fedc__nn_declare_conv(fedc__nn_params *ps, const char *layer, int kh, int kw, int64_t cin,
                                 int64_t cout) {
    double fan_in = (double)kh * kw * (double)cin;
    fedc_status st = fedc__nn_declare(ps, layer, "w", 4, (int64_t[]){kh, kw, cin, cout}, 1.0 / sqrt(fan_in));
    if (st) return st;
    return fedc__nn_declare(ps, layer, "b", 1, (int64_t[]){cout}, 0.0);
}

/* A PyTorch layer's w and b (see nn.h): fan_in and fan_out count the kernel's
 * window too, as torch.nn.init._calculate_fan_in_and_fan_out does. */
static fedc_status declare_xavier(fedc__nn_params *ps, const char *layer, int rank, const int64_t *dims, int64_t out,
                                  double fan_in, double fan_out) {
    fedc_status st = fedc__nn_declare(ps, layer, "w", rank, dims, 0.0);
    if (!st) ps->items[ps->count - 1].init_uniform = sqrt(6.0 / (fan_in + fan_out));
    if (!st) st = fedc__nn_declare(ps, layer, "b", 1, (int64_t[]){out}, 0.0);
    if (!st) ps->items[ps->count - 1].init_uniform = 1.0 / sqrt(fan_in);
    return st;
}

fedc_status fedc__nn_declare_dense_xavier(fedc__nn_params *ps, const char *layer, int64_t in, int64_t out) {
    return declare_xavier(ps, layer, 2, (int64_t[]){in, out}, out, (double)in, (double)out);
}

fedc_status fedc__nn_declare_conv_xavier(fedc__nn_params *ps, const char *layer, int kh, int kw, int64_t cin,
                                        int64_t cout) {
    double window = (double)kh * kw;
    return declare_xavier(ps, layer, 4, (int64_t[]){kh, kw, cin, cout}, cout, window * (double)cin,
                          window * (double)cout);
}

fedc_value fedc__nn_dense(fedc_program *p, fedc_value x, fedc_value w, fedc_value b) {
    return fedc_add(p, fedc_matmul(p, x, w, false, false), b);
}

/* The bias [cout] broadcasts over [batch, h, w, cout] as numpy does. */
fedc_value fedc__nn_conv(fedc_program *p, fedc_value x, fedc_value w, fedc_value b) {
    return fedc_add(p, fedc_conv2d(p, x, w, 1, 1, FEDC_PAD_VALID), b);
}

fedc_value fedc__nn_max_pool(fedc_program *p, fedc_value x, int window) {
    return fedc_max_pool2d(p, x, window, window, window, window, FEDC_PAD_VALID);
}

fedc_value fedc__nn_flatten(fedc_program *p, fedc_value x) {
    if (x == FEDC_NONE) return FEDC_NONE;
    fedc_type t = fedc_value_type(p, x);
    return fedc_reshape(p, x, 2, (int64_t[]){t.dims[0], -1});
}

/* The i32 whose bits are u, without relying on an implementation-defined conversion. */
static int32_t bits_i32(uint32_t u) {
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

/* Adds layer * FEDC_NN_DROPOUT_KEY_STEP to key[3]; i32 addition wraps (mod 2^32),
 * so the derived key is defined for every given key. */
static fedc_value layer_key(fedc_program *p, fedc_value key, int layer) {
    if (layer == 0) return key;
    int32_t offset[4] = {0, 0, 0, bits_i32((uint32_t)layer * FEDC_NN_DROPOUT_KEY_STEP)};
    fedc_value c = fedc_constant(p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), offset);
    return fedc_add(p, key, c);
}

fedc_value fedc__nn_dropout(fedc_program *p, fedc_value x, fedc_value key, int layer, double rate) {
    if (key == FEDC_NONE) return x;
    return fedc_dropout(p, x, layer_key(p, key, layer), rate);
}

fedc_status fedc__nn_declare_param(fedc__nn_params *ps, const char *layer, const char *suffix, int rank,
                                  const int64_t *dims, double init_stddev, double init_const) {
    fedc_status st = fedc__nn_declare(ps, layer, suffix, rank, dims, init_stddev);
    if (!st) ps->items[ps->count - 1].init_const = init_const;
    return st;
}
