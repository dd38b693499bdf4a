/* ONNX's layers as fedc ops (onnx_import.h): convolution and pooling on fedc's
 * NHWC ops, normalisation, softmax and reductions.
 *
 * Layouts: ONNX images are NCHW and filters OIHW; fedc's convolution takes NHWC
 * images and HWIO filters. The image is transposed to NHWC once (and stays so
 * through the layout-free ops that follow), the filter parameter keeps PyTorch's
 * OIHW layout and is transposed in the program, so that the parameters are
 * PyTorch's state_dict as it is.
 *
 * Padding: fedc's windows take VALID or SAME (TensorFlow's rule); ONNX's explicit
 * pads that are neither become fedc_pad first: zeros for a convolution, values
 * that lose every max for a max pool, and an average divided by the count of
 * positions inside the image for an average pool that does not count pads. */
#include <float.h>
#include <string.h>

#include "formats/onnx_import.h"

static const int OIHW_TO_HWIO[4] = {2, 3, 1, 0};

/* A 2-D window op's geometry in ONNX's terms; pads as [top, left, bottom, right]. */
typedef struct window {
    int64_t in[2], k[2], s[2], pads[4];
} window;

static fedc_status pair_attr(onnx_import *im, const char *name, int64_t dflt, int64_t out[2]) {
    int64_t v[4];
    int n = fedc__onnx_attr_ints(im, name, v, 4);
    out[0] = out[1] = dflt;
    if (n == -2) return fedc__onnx_error(im);
    if (n < 0) return FEDC_OK;
    if (n != 2) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "%s of %d values (fedc's windows are 2-D)", name, n);
    out[0] = v[0], out[1] = v[1];
    return FEDC_OK;
}

/* The window of the node on image x (kernel k given): strides, pads or auto_pad,
 * and no dilation. */
static fedc_status window_of(onnx_import *im, onnx_entry *x, const int64_t k[2], window *w) {
    int64_t dims[FEDC_MAX_RANK], d[2];
    if (fedc__onnx_dims(im, x, dims) != 4) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "a %d-D window (fedc's are 2-D on NCHW images)", fedc__onnx_rank(im, x) - 2);
    *w = (window){.in = {dims[2], dims[3]}, .k = {k[0], k[1]}};
    fedc_status st = pair_attr(im, "strides", 1, w->s);
    if (!st) st = pair_attr(im, "dilations", 1, d);
    if (st) return st;
    if (d[0] != 1 || d[1] != 1) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "dilations %lld, %lld (fedc's windows are dense)", (long long)d[0], (long long)d[1]);
    for (int i = 0; i < 2; i++)
        if (w->s[i] < 1 || w->k[i] < 1 || w->s[i] > INT32_MAX || w->k[i] > INT32_MAX)
            return fedc__onnx_fail(im, FEDC_EINVAL, "stride %lld, kernel %lld", (long long)w->s[i], (long long)w->k[i]);
    char buf[32];
    const char *mode = fedc__onnx_attr_string(im, "auto_pad", "NOTSET", buf, sizeof buf);
    if (!strcmp(mode, "SAME_UPPER") || !strcmp(mode, "SAME_LOWER")) {
        for (int i = 0; i < 2; i++) {
            int64_t out = (w->in[i] + w->s[i] - 1) / w->s[i], total = (out - 1) * w->s[i] + w->k[i] - w->in[i];
            total = total < 0 ? 0 : total;
            int64_t small = total / 2, big = total - small;
            w->pads[i] = mode[5] == 'U' ? small : big, w->pads[2 + i] = mode[5] == 'U' ? big : small;
        }
        return FEDC_OK;
    }
    if (strcmp(mode, "NOTSET") && strcmp(mode, "VALID")) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "auto_pad %s", mode);
    int n = fedc__onnx_attr_ints(im, "pads", w->pads, 4);
    if (n == -2 || (n >= 0 && n != 4)) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "pads of %d values (fedc's windows are 2-D)", n);
    if (n < 0) memset(w->pads, 0, sizeof w->pads);
    for (int i = 0; i < 4; i++)
        if (w->pads[i] < 0 || w->pads[i] >= w->k[i % 2] + w->in[i % 2]) return fedc__onnx_fail(im, FEDC_EINVAL, "pad %lld", (long long)w->pads[i]);
    return FEDC_OK;
}

/* VALID (no pads), SAME (the pads fedc's SAME makes), or neither (-1). */
static int padding_of(const window *w) {
    bool zero = true, same = true;
    for (int i = 0; i < 2; i++) {
        int64_t out = (w->in[i] + w->s[i] - 1) / w->s[i], total = (out - 1) * w->s[i] + w->k[i] - w->in[i];
        total = total < 0 ? 0 : total;
        zero &= w->pads[i] == 0 && w->pads[2 + i] == 0;
        same &= w->pads[i] == total / 2 && w->pads[2 + i] == total - total / 2;
    }
    return zero ? FEDC_PAD_VALID : same ? FEDC_PAD_SAME : -1;
}

/* x (NHWC) padded as w says, with `value` outside the image. */
static fedc_value padded(fedc_program *p, fedc_value x, const window *w, double value) {
    int64_t lo[4] = {0, w->pads[0], w->pads[1], 0}, hi[4] = {0, w->pads[2], w->pads[3], 0};
    fedc_value y = fedc_pad(p, x, lo, hi);
    if (value == 0) return y;
    fedc_type t = fedc_value_type(p, x);
    fedc_value inside = fedc_pad(p, fedc_full(p, t, 1), lo, hi);
    fedc_value half = fedc_scalar_like(p, inside, 0.5);
    fedc_value keep = fedc_gt(p, inside, half);
    fedc_value outside = fedc_full(p, fedc_value_type(p, y), value);
    return fedc_select(p, keep, y, outside);
}

static fedc_status op_conv(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "auto_pad,dilations,group,kernel_shape,pads,strides");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0), *we = x ? fedc__onnx_in(im, 1) : NULL;
    if (!we) return st ? st : fedc__onnx_error(im);
    if (fedc__onnx_attr_int(im, "group", 1) != 1)
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "group %lld (fedc has no grouped or depthwise convolution)", (long long)fedc__onnx_attr_int(im, "group", 1));
    int64_t wd[FEDC_MAX_RANK];
    if (fedc__onnx_dims(im, we, wd) != 4) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "a filter of rank %d (fedc convolves 2-D images)", fedc__onnx_rank(im, we));
    window w;
    int64_t k[2] = {wd[2], wd[3]};
    if ((st = window_of(im, x, k, &w))) return st;
    fedc_program *p = im->p;
    fedc_value xv = fedc__onnx_nhwc(im, x);
    fedc_value filter = fedc_transpose(p, fedc__onnx_value(im, we, xv), OIHW_TO_HWIO);
    int mode = padding_of(&w);
    if (mode < 0) xv = padded(p, xv, &w, 0);
    fedc_value y = fedc_conv2d(p, xv, filter, (int)w.s[0], (int)w.s[1], mode < 0 ? FEDC_PAD_VALID : (fedc_padding)mode);
    if (fedc__onnx_has_in(im, 2)) y = fedc_add(p, y, fedc__onnx_value(im, fedc__onnx_in(im, 2), y)); /* [O], the last axis */
    return fedc__onnx_set_nhwc(im, 0, y);
}

/* MaxPool and AveragePool. ceil_mode adds the windows' overhang as padding at
 * the end, which a max pool ignores; an average pool with it is refused. */
static fedc_status pool(onnx_import *im, bool max) {
    fedc_status st = fedc__onnx_known_attrs(im, "auto_pad,ceil_mode,count_include_pad,dilations,kernel_shape,pads,storage_order,strides");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0);
    if (!x) return st ? st : fedc__onnx_error(im);
    if (im->node->n_output > 1 && im->node->output[1][0]) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "its Indices output is read");
    int64_t k[2];
    window w;
    if ((st = pair_attr(im, "kernel_shape", 0, k)) || (st = window_of(im, x, k, &w))) return st;
    for (int i = 0; i < 2 && fedc__onnx_attr_int(im, "ceil_mode", 0); i++) {
        int64_t span = w.in[i] + w.pads[i] + w.pads[2 + i] - w.k[i], out = (span + w.s[i] - 1) / w.s[i] + 1;
        int64_t extra = (out - 1) * w.s[i] + w.k[i] - (w.in[i] + w.pads[i] + w.pads[2 + i]);
        if (extra > 0 && !max) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "ceil_mode with windows past the image");
        if (extra > 0) w.pads[2 + i] += extra;
    }
    fedc_program *p = im->p;
    fedc_value xv = fedc__onnx_nhwc(im, x);
    bool count_pads = !max && fedc__onnx_attr_int(im, "count_include_pad", 0);
    int mode = count_pads && padding_of(&w) != FEDC_PAD_VALID ? -1 : padding_of(&w);
    int kh = (int)w.k[0], kw = (int)w.k[1], sh = (int)w.s[0], sw = (int)w.s[1];
    if (mode >= 0) {
        fedc_padding pad = (fedc_padding)mode;
        return fedc__onnx_set_nhwc(im, 0, (max ? fedc_max_pool2d : fedc_avg_pool2d)(p, xv, kh, kw, sh, sw, pad));
    }
    if (max) return fedc__onnx_set_nhwc(im, 0, fedc_max_pool2d(p, padded(p, xv, &w, -FLT_MAX), kh, kw, sh, sw, FEDC_PAD_VALID));
    fedc_value sum = fedc_avg_pool2d(p, padded(p, xv, &w, 0), kh, kw, sh, sw, FEDC_PAD_VALID);
    if (count_pads) return fedc__onnx_set_nhwc(im, 0, sum);
    fedc_value ones = fedc_full(p, fedc_value_type(p, xv), 1);
    fedc_value share = fedc_avg_pool2d(p, padded(p, ones, &w, 0), kh, kw, sh, sw, FEDC_PAD_VALID); /* inside / k */
    return fedc__onnx_set_nhwc(im, 0, fedc_div(p, sum, share));
}

static fedc_status op_maxpool(onnx_import *im) { return pool(im, true); }
static fedc_status op_avgpool(onnx_import *im) { return pool(im, false); }

static fedc_status op_global_avgpool(onnx_import *im) {
    onnx_entry *x = fedc__onnx_in(im, 0);
    if (!x) return fedc__onnx_error(im);
    if (fedc__onnx_rank(im, x) != 4) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "a %d-D pool (fedc's are 2-D)", fedc__onnx_rank(im, x) - 2);
    static const int HW[2] = {1, 2};
    return fedc__onnx_set_nhwc(im, 0, fedc_reduce_mean(im->p, fedc__onnx_nhwc(im, x), HW, 2, true));
}

/* ----------------------------------------------------- normalisation -- */

/* A per-channel vector [C] shaped to broadcast over x's channel axis: the last
 * axis of an NHWC image or of [N, C], [C, 1] for [N, C, L]. */
static fedc_value per_channel(onnx_import *im, int k, fedc_value like, int rank) {
    fedc_value v = fedc__onnx_value(im, fedc__onnx_in(im, k), like);
    if (rank != 3 || v == FEDC_NONE) return v;
    int64_t dims[2] = {fedc_value_type(im->p, v).dims[0], 1};
    return fedc_reshape(im->p, v, 2, dims);
}

/* The axes a BatchNormalization reduces over (all but the channel's) of its
 * input as the translator holds it: NHWC for rank 4, else ONNX's [N, C, ...]. */
static int stat_axes(int rank, int *axes) {
    if (rank == 4) return axes[0] = 0, axes[1] = 1, axes[2] = 2, 3;
    axes[0] = 0;
    if (rank == 3) axes[1] = 2;
    return rank - 1;
}

/* A running statistic (node input k) of a program to train: a parameter, whose
 * new value `next` is the output update/<name>. */
static fedc_status running_update(onnx_import *im, int k, fedc_value next) {
    onnx_entry *e = fedc__onnx_in(im, k);
    if (!e) return fedc__onnx_error(im);
    if (e->k)
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "its running %s %s is not a parameter (a float initializer), "
                               "which training updates", k == 4 ? "variance" : "mean", im->node->input[k]);
    return fedc__onnx_add_update(im, im->node->input[k], next == FEDC_NONE ? fedc__onnx_value(im, e, FEDC_NONE) : next);
}

/* The training form, as PyTorch's model.train(): x normalised by the batch's own
 * mean and (biased) variance over the real examples (mask 1) and the positions;
 * the running statistics move towards them, the variance unbiased as in
 * PyTorch: running = momentum * running + (1 - momentum) * batch's (ONNX's
 * momentum is 1 - PyTorch's). A batch of padding alone leaves them as they were. */
static fedc_value batchnorm_training(onnx_import *im, fedc_value xv, int r) {
    fedc_program *p = im->p;
    fedc_type xt = fedc_value_type(p, xv);
    int axes[3], naxes = stat_axes(r, axes);
    int64_t mdims[4] = {xt.dims[0], 1, 1, 1}, channels = xt.dims[r == 4 ? 3 : 1], positions = 1;
    for (int i = 1; i < naxes; i++) positions *= xt.dims[axes[i]];
    fedc_value m = fedc_reshape(p, im->mask, r, mdims);
    fedc_value count = fedc_mul(p, fedc_reduce_sum(p, im->mask, NULL, -1, false), fedc_scalar_like(p, xv, (double)positions));
    fedc_value one = fedc_scalar_like(p, count, 1);
    fedc_value denom = fedc_maximum(p, count, one);
    fedc_value mean = fedc_div(p, fedc_reduce_sum(p, fedc_mul(p, xv, m), axes, naxes, true), denom);
    fedc_value d = fedc_sub(p, xv, mean);
    fedc_value var = fedc_div(p, fedc_reduce_sum(p, fedc_mul(p, fedc_square(p, d), m), axes, naxes, true), denom);
    fedc_value scale = per_channel(im, 1, xv, r), bias = per_channel(im, 2, xv, r);
    fedc_value eps = fedc_scalar_like(p, xv, fedc__onnx_attr_float(im, "epsilon", 1e-5));
    fedc_value y = fedc_add(p, fedc_mul(p, d, fedc_div(p, scale, fedc_sqrt(p, fedc_add(p, var, eps)))), bias);
    /* the updates, of the running statistics' [C] shape */
    double momentum = fedc__onnx_attr_float(im, "momentum", 0.9);
    fedc_value any = fedc_cast(p, fedc_gt(p, count, fedc_scalar_like(p, count, 0)), FEDC_F32);
    fedc_value step = fedc_mul(p, any, fedc_scalar_like(p, count, 1 - momentum)), keep = fedc_sub(p, one, step);
    fedc_value unbias = fedc_div(p, count, fedc_maximum(p, fedc_sub(p, count, one), one));
    fedc_value batch_stats[2] = {fedc_reshape(p, mean, 1, &channels), fedc_mul(p, fedc_reshape(p, var, 1, &channels), unbias)};
    for (int k = 0; k < 2; k++) {
        onnx_entry *e = fedc__onnx_in(im, 3 + k);
        fedc_value run = e && !e->k ? fedc__onnx_value(im, e, xv) : FEDC_NONE;
        fedc_value next = run == FEDC_NONE ? FEDC_NONE : fedc_add(p, fedc_mul(p, keep, run), fedc_mul(p, step, batch_stats[k]));
        if (running_update(im, 3 + k, next)) return FEDC_NONE;
    }
    return y;
}

/* BatchNormalization: the inference form, (x - mean) / sqrt(var + eps) * scale + B
 * with the running statistics as given (they are parameters of the program), or
 * the training form (fedc_onnx_options.batchnorm). */
static fedc_status op_batchnorm(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "epsilon,momentum,training_mode");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0);
    if (!x) return st ? st : fedc__onnx_error(im);
    if (fedc__onnx_attr_int(im, "training_mode", 0) || (im->node->n_output > 1 && im->node->output[1][0]))
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "its training form in the file (export the model in eval mode; "
                               "fedc trains it in the training form itself, docs/onnx.md)");
    int r = fedc__onnx_rank(im, x);
    if (r < 2 || r > 4) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "an input of rank %d", r);
    fedc_program *p = im->p;
    fedc_value xv = r == 4 ? fedc__onnx_nhwc(im, x) : fedc__onnx_value(im, x, FEDC_NONE);
    fedc_value y;
    if (im->batchnorm == FEDC_ONNX_BATCHNORM_TRAINING) {
        if ((y = batchnorm_training(im, xv, r)) == FEDC_NONE) return fedc__onnx_error(im);
    } else {
        fedc_value scale = per_channel(im, 1, xv, r), bias = per_channel(im, 2, xv, r);
        fedc_value mean = per_channel(im, 3, xv, r), var = per_channel(im, 4, xv, r);
        fedc_value eps = fedc_scalar_like(p, xv, fedc__onnx_attr_float(im, "epsilon", 1e-5));
        fedc_value inv = fedc_div(p, scale, fedc_sqrt(p, fedc_add(p, var, eps)));
        y = fedc_add(p, fedc_mul(p, fedc_sub(p, xv, mean), inv), bias);
        /* frozen: the running statistics stay as they are, not moved by their gradients */
        if (im->batchnorm == FEDC_ONNX_BATCHNORM_FROZEN &&
            ((st = running_update(im, 3, FEDC_NONE)) || (st = running_update(im, 4, FEDC_NONE))))
            return st;
    }
    return r == 4 ? fedc__onnx_set_nhwc(im, 0, y) : fedc__onnx_set(im, 0, y);
}

/* LayerNormalization over the axes from `axis` on: fedc's layer_norm is over the
 * last axis, so x is seen as [outer, inner] when axis is not the last. */
static fedc_status op_layernorm(onnx_import *im) {
    fedc_status st = fedc__onnx_known_attrs(im, "axis,epsilon,stash_type");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0);
    if (!x) return st ? st : fedc__onnx_error(im);
    if (im->node->n_output > 1) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "its Mean and InvStdDev outputs are read");
    int64_t dims[FEDC_MAX_RANK], outer = 1, inner = 1;
    int r = fedc__onnx_dims(im, x, dims), axis;
    if ((st = fedc__onnx_axis(im, fedc__onnx_attr_int(im, "axis", -1), r, &axis))) return st;
    for (int i = 0; i < r; i++) *(i < axis ? &outer : &inner) *= dims[i];
    fedc_program *p = im->p;
    fedc_value xv = fedc__onnx_value(im, x, FEDC_NONE);
    fedc_value gamma = fedc_reshape(p, fedc__onnx_value(im, fedc__onnx_in(im, 1), xv), 1, &inner);
    fedc_value beta = fedc__onnx_has_in(im, 2) ? fedc_reshape(p, fedc__onnx_value(im, fedc__onnx_in(im, 2), xv), 1, &inner)
                                               : fedc_full(p, fedc_type_make(fedc_value_type(p, xv).dtype, 1, &inner), 0);
    double eps = fedc__onnx_attr_float(im, "epsilon", 1e-5);
    if (axis == r - 1) return fedc__onnx_set(im, 0, fedc_layer_norm(p, xv, gamma, beta, eps));
    int64_t flat[2] = {outer, inner};
    fedc_value y = fedc_layer_norm(p, fedc_reshape(p, xv, 2, flat), gamma, beta, eps);
    return fedc__onnx_set(im, 0, fedc_reshape(p, y, r, dims));
}

/* --------------------------------------------------- softmax, reductions -- */

/* (Log)Softmax over `axis` (opset 13's meaning: that axis alone): fedc's
 * log_softmax is over the last axis, so another axis is moved last and back. */
static fedc_status softmax(onnx_import *im, bool log) {
    fedc_status st = fedc__onnx_known_attrs(im, "axis");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0);
    if (!x) return st ? st : fedc__onnx_error(im);
    int r = fedc__onnx_rank(im, x), axis, perm[FEDC_MAX_RANK];
    if ((st = fedc__onnx_axis(im, fedc__onnx_attr_int(im, "axis", -1), r, &axis))) return st;
    for (int i = 0, k = 0; i < r; i++) /* axis last, the others in order; its own inverse is below */
        if (i != axis) perm[k++] = i;
    perm[r - 1] = axis;
    fedc_program *p = im->p;
    fedc_value y = fedc__onnx_value(im, x, FEDC_NONE);
    if (axis != r - 1) y = fedc_transpose(p, y, perm);
    y = fedc_log_softmax(p, y);
    if (!log) y = fedc_exp(p, y);
    if (axis != r - 1) {
        int inverse[FEDC_MAX_RANK];
        for (int i = 0; i < r; i++) inverse[perm[i]] = i;
        y = fedc_transpose(p, y, inverse);
    }
    return fedc__onnx_set(im, 0, y);
}

static fedc_status op_softmax(onnx_import *im) { return softmax(im, false); }
static fedc_status op_logsoftmax(onnx_import *im) { return softmax(im, true); }

typedef fedc_value (*reduce_fn)(fedc_program *p, fedc_value x, const int *axes, int naxes, bool keepdims);

/* ReduceMean, ReduceSum, ReduceMax: axes from the input (ReduceSum from opset 13,
 * the others from 18) or the attribute; none means all, unless
 * noop_with_empty_axes. */
static fedc_status reduce(onnx_import *im, reduce_fn f) {
    fedc_status st = fedc__onnx_known_attrs(im, "axes,keepdims,noop_with_empty_axes");
    onnx_entry *x = st ? NULL : fedc__onnx_in(im, 0);
    if (!x) return st ? st : fedc__onnx_error(im);
    int64_t given[FEDC_MAX_RANK];
    int n;
    if (fedc__onnx_has_in(im, 1)) {
        const onnx_const *c = fedc__onnx_const_in(im, 1, "axes");
        if (!c) return fedc__onnx_error(im);
        if (c->count > FEDC_MAX_RANK) return fedc__onnx_fail(im, FEDC_EINVAL, "%lld axes", (long long)c->count);
        n = (int)c->count;
        for (int i = 0; i < n; i++) given[i] = fedc__onnx_i64(c->data[i]);
    } else if ((n = fedc__onnx_attr_ints(im, "axes", given, FEDC_MAX_RANK)) == -2) {
        return fedc__onnx_error(im);
    }
    fedc_value v = fedc__onnx_value(im, x, FEDC_NONE);
    if (n <= 0 && fedc__onnx_attr_int(im, "noop_with_empty_axes", 0)) return fedc__onnx_set(im, 0, v);
    int r = fedc__onnx_rank(im, x), axes[FEDC_MAX_RANK];
    for (int i = 0; i < n; i++)
        if ((st = fedc__onnx_axis(im, given[i], r, &axes[i]))) return st;
    bool keep = fedc__onnx_attr_int(im, "keepdims", 1) != 0;
    return fedc__onnx_set(im, 0, f(im->p, v, n > 0 ? axes : NULL, n > 0 ? n : -1, keep));
}

static fedc_status op_reduce_mean(onnx_import *im) { return reduce(im, fedc_reduce_mean); }
static fedc_status op_reduce_sum(onnx_import *im) { return reduce(im, fedc_reduce_sum); }
static fedc_status op_reduce_max(onnx_import *im) { return reduce(im, fedc_reduce_max); }

const onnx_op_entry fedc__onnx_ops_nn[] = {
    {"Conv", op_conv}, {"MaxPool", op_maxpool}, {"AveragePool", op_avgpool}, {"GlobalAveragePool", op_global_avgpool},
    {"BatchNormalization", op_batchnorm}, {"LayerNormalization", op_layernorm}, {"Softmax", op_softmax},
    {"LogSoftmax", op_logsoftmax}, {"ReduceMean", op_reduce_mean}, {"ReduceSum", op_reduce_sum},
    {"ReduceMax", op_reduce_max}, {NULL, NULL},
};
