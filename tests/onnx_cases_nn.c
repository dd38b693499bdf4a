/*
 * ONNX's layers as fedc programs: convolution, pooling, softmax, the
 * cross-entropy loss, layer normalisation, dropout and the LSTM.
 *
 * Layouts: ONNX images are NCHW and conv filters OIHW; fedc's are NHWC and HWIO,
 * so the builders permute the data of those inputs (and of the expected output)
 * on the host before binding it. Softmax over another axis than the last moves
 * it with fedc_transpose.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"
#include "onnx_case.h"

static const int NCHW_TO_NHWC[4] = {0, 2, 3, 1};
static const int OIHW_TO_HWIO[4] = {2, 3, 1, 0};

/* ----------------------------------------------- convolution, pooling -- */

/* The explicit [top, bottom, left, right] pads of ONNX's attributes for an
 * in_h x in_w image: pads ([t, l, b, r] in ONNX) or auto_pad. */
static void window_pads(onnx_case *c, const int64_t in[2], const int64_t k[2], const int64_t s[2], int64_t pads[4]) {
    memset(pads, 0, 4 * sizeof *pads);
    const onnx_attr *ap = onnx_node_attr(c->node, "auto_pad");
    const char *mode = ap ? ap->s : "NOTSET";
    if (!strcmp(mode, "SAME_UPPER") || !strcmp(mode, "SAME_LOWER")) {
        for (int i = 0; i < 2; i++) {
            int64_t out = (in[i] + s[i] - 1) / s[i], total = (out - 1) * s[i] + k[i] - in[i];
            if (total < 0) total = 0;
            int64_t small = total / 2, big = total - small;
            bool upper = !strcmp(mode, "SAME_UPPER");
            pads[2 * i] = upper ? small : big;
            pads[2 * i + 1] = upper ? big : small;
        }
        return;
    }
    if (strcmp(mode, "NOTSET") && strcmp(mode, "VALID")) {
        onnx_unsupported(c, "auto_pad %s", mode);
        return;
    }
    const onnx_attr *p = onnx_node_attr(c->node, "pads");
    if (!p) return;
    if (p->n != 4) {
        onnx_unsupported(c, "%d pads (fedc pools and convolves 2-D images)", p->n);
        return;
    }
    pads[0] = p->ints[0], pads[1] = p->ints[2], pads[2] = p->ints[1], pads[3] = p->ints[3];
}

static bool ints_pair(onnx_case *c, const char *name, int64_t dflt, int64_t out[2]) {
    const onnx_attr *a = onnx_node_attr(c->node, name);
    out[0] = out[1] = dflt;
    if (!a) return true;
    if (a->n != 2) return onnx_unsupported(c, "%s of %d values (fedc's windows are 2-D)", name, a->n), false;
    out[0] = a->ints[0], out[1] = a->ints[1];
    return true;
}

static fedc_value window_op(onnx_case *c, fedc__op op, const fedc_value *in, int nin, const int64_t *window,
                            const int64_t s[2], const int64_t pads[4]) {
    if (onnx_stop(c)) return FEDC_NONE;
    fedc__attr attrs[3];
    int n = 0;
    if (window) attrs[n++] = fedc__attr_make_ints(FEDC_ATTR_WINDOW, 2, window);
    attrs[n++] = fedc__attr_make_ints(FEDC_ATTR_STRIDES, 2, s);
    attrs[n++] = fedc__attr_make_ints(FEDC_ATTR_PADS, 4, pads);
    return fedc__emit(c->p, op, in, nin, attrs, n, NULL);
}

static void no_dilations(onnx_case *c) {
    int64_t d[2];
    if (ints_pair(c, "dilations", 1, d) && (d[0] != 1 || d[1] != 1)) onnx_unsupported(c, "dilations (fedc has none)");
}

/* What Conv and ConvTranspose need: 2-D, no groups, no dilations, and their
 * image x and filter w (NULL: not applicable, or missing). */
static bool conv_inputs(onnx_case *c, const char *known, const onnx_tensor **x, const onnx_tensor **w) {
    onnx_known_attrs(c, known);
    no_dilations(c);
    if (onnx_attr_int(c->node, "group", 1) != 1) onnx_unsupported(c, "grouped convolution");
    *w = onnx_need(c, 1), *x = onnx_need(c, 0);
    if (!onnx_stop(c) && (*x)->rank != 4) onnx_unsupported(c, "a %d-D convolution (fedc's is 2-D)", (*x)->rank - 2);
    return !onnx_stop(c);
}

/* fedc's conv2d takes explicit pads ([t, b, l, r]), so every ONNX padding is
 * expressed; programs built with the public API get VALID or SAME. */
static void b_conv(onnx_case *c) {
    const onnx_tensor *x, *w;
    if (!conv_inputs(c, "auto_pad,dilations,group,kernel_shape,pads,strides", &x, &w)) return;
    int64_t s[2], k[2] = {w->dims[2], w->dims[3]}, pads[4], in[2] = {x->dims[2], x->dims[3]};
    ints_pair(c, "strides", 1, s);
    window_pads(c, in, k, s, pads);
    fedc_value v[2] = {onnx_arg_perm(c, 0, NCHW_TO_NHWC), onnx_arg_perm(c, 1, OIHW_TO_HWIO)};
    fedc_value y = window_op(c, FEDC_OP_CONV2D, v, 2, NULL, s, pads);
    if (c->node->ninputs > 2 && c->in[2]) y = fedc_add(c->p, y, onnx_arg(c, 2)); /* [O] bias, last axis */
    onnx_expect_perm(c, 0, y, NCHW_TO_NHWC);
}

/* ConvTranspose is the adjoint of a convolution in its input: fedc's
 * conv2d_input_grad, with the filter [C_in, C_out, kh, kw] read as the forward
 * convolution's HWIO filter [kh, kw, C_out, C_in]. */
static void b_convtranspose(onnx_case *c) {
    const onnx_tensor *x, *w;
    if (!conv_inputs(c, "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,strides", &x, &w))
        return;
    int64_t s[2], op[2], k[2] = {w->dims[2], w->dims[3]}, pads[4] = {0}, out[2];
    ints_pair(c, "strides", 1, s);
    ints_pair(c, "output_padding", 0, op);
    const onnx_attr *shape = onnx_node_attr(c->node, "output_shape"), *ap = onnx_node_attr(c->node, "auto_pad");
    const onnx_attr *p = onnx_node_attr(c->node, "pads");
    for (int i = 0; i < 2; i++) {
        int64_t full = s[i] * (x->dims[2 + i] - 1) + op[i] + k[i];
        int64_t want = shape ? shape->ints[shape->n - 2 + i] : ap && !strncmp(ap->s, "SAME", 4) ? x->dims[2 + i] * s[i] : -1;
        if (want >= 0) {
            /* ONNX: the padding that gives the output shape, its larger half at
             * the start unless SAME_UPPER; a shape larger than the full output
             * adds rows and columns at the end that no window reaches (zeros) */
            int64_t total = full - want;
            bool upper = ap && !strcmp(ap->s, "SAME_UPPER");
            pads[2 * i] = total < 0 ? 0 : upper ? total / 2 : total - total / 2;
            pads[2 * i + 1] = total < 0 ? 0 : total - pads[2 * i];
            out[i] = want;
        } else {
            if (p) pads[2 * i] = p->ints[i], pads[2 * i + 1] = p->ints[2 + i];
            out[i] = full - pads[2 * i] - pads[2 * i + 1];
        }
    }
    /* [C_in, C_out, kh, kw] -> [kh, kw, C_out, C_in]: the same permutation as OIHW -> HWIO */
    fedc_value v[2] = {onnx_arg_perm(c, 0, NCHW_TO_NHWC), onnx_arg_perm(c, 1, OIHW_TO_HWIO)};
    if (onnx_stop(c)) return;
    int64_t xdims[4] = {x->dims[0], out[0], out[1], w->dims[1]};
    fedc__attr attrs[3] = {fedc__attr_make_ints(FEDC_ATTR_SHAPE, 4, xdims), fedc__attr_make_ints(FEDC_ATTR_STRIDES, 2, s),
                           fedc__attr_make_ints(FEDC_ATTR_PADS, 4, pads)};
    fedc_value y = fedc__emit(c->p, FEDC_OP_CONV2D_INPUT_GRAD, v, 2, attrs, 3, NULL);
    if (op[0] || op[1]) onnx_note(c, "output_padding: rows and columns no window reaches, zeros in both");
    if (c->node->ninputs > 2 && c->in[2]) y = fedc_add(c->p, y, onnx_arg(c, 2));
    onnx_expect_perm(c, 0, y, NCHW_TO_NHWC);
}

/* MaxPool, AveragePool, and their global forms. A 1-D pool runs as a 2-D one of
 * height 1. ceil_mode becomes extra padding at the end: fedc's pools never count
 * padded positions (max never picks one, average divides by the in-image count),
 * which is also what ONNX's ceil_mode windows do. count_include_pad pads with
 * fedc_pad's zeros first, which then count. */
static void pool(onnx_case *c, fedc__op op, bool global) {
    onnx_known_attrs(c, "auto_pad,ceil_mode,count_include_pad,dilations,kernel_shape,pads,storage_order,strides");
    no_dilations(c);
    const onnx_tensor *x = onnx_need(c, 0);
    if (onnx_stop(c)) return;
    if (x->rank != 4 && x->rank != 3) {
        onnx_unsupported(c, "a %d-D pool (fedc's are 2-D)", x->rank - 2);
        return;
    }
    if (x->data_type != ONNX_FLOAT && x->data_type != ONNX_DOUBLE) {
        onnx_unsupported(c, "integer images (fedc pools floats)");
        return;
    }
    onnx_tensor img = *x; /* a 1-D pool's [N, C, W] as [N, C, 1, W] */
    if (x->rank == 3) {
        img.rank = 4, img.dims[3] = x->dims[2], img.dims[2] = 1;
        onnx_note(c, "1-D, as a 2-D pool of height 1");
    }
    int64_t in[2] = {img.dims[2], img.dims[3]}, k[2] = {in[0], in[1]}, s[2] = {1, 1}, pads[4] = {0};
    const onnx_attr *ks = onnx_node_attr(c->node, "kernel_shape"), *st = onnx_node_attr(c->node, "strides");
    if (!global) {
        if (!ks || ks->n != x->rank - 2) {
            onnx_bad_data(c, "kernel_shape");
            return;
        }
        k[0] = x->rank == 4 ? ks->ints[0] : 1, k[1] = ks->ints[ks->n - 1];
        if (st) s[0] = x->rank == 4 ? st->ints[0] : 1, s[1] = st->ints[st->n - 1];
        const onnx_attr *p = onnx_node_attr(c->node, "pads");
        if (p && x->rank == 3) pads[2] = p->ints[0], pads[3] = p->ints[1];
        else window_pads(c, in, k, s, pads);
    }
    for (int i = 0; i < 2 && onnx_attr_int(c->node, "ceil_mode", 0); i++) {
        int64_t span = in[i] + pads[2 * i] + pads[2 * i + 1] - k[i], out = (span + s[i] - 1) / s[i] + 1;
        int64_t extra = (out - 1) * s[i] + k[i] - (in[i] + pads[2 * i] + pads[2 * i + 1]);
        if (extra > 0) pads[2 * i + 1] += extra;
        if (i == 0) onnx_note(c, "ceil_mode as extra padding at the end");
    }
    const onnx_tensor *saved = c->in[0];
    c->in[0] = &img;
    fedc_value v = onnx_arg_perm(c, 0, NCHW_TO_NHWC);
    c->in[0] = saved;
    if (onnx_attr_int(c->node, "count_include_pad", 0)) {
        int64_t lo[4] = {0, pads[0], pads[2], 0}, hi[4] = {0, pads[1], pads[3], 0};
        v = fedc_pad(c->p, v, lo, hi);
        memset(pads, 0, sizeof pads);
        onnx_note(c, "count_include_pad: fedc_pad's zeros, then an unpadded pool");
    }
    fedc_value y = window_op(c, op, &v, 1, k, s, pads);
    if (c->node->noutputs > 1 && c->out[1]) onnx_note(c, "the Indices output is not checked (fedc has no argmax pool)");
    if (onnx_stop(c)) return;
    if (x->rank == 3) { /* back to [N, C, W]: NHWC [N, 1, W, C] -> [N, W, C] vs the output as [N, W, C] */
        fedc_type t = onnx_type_of(c, y);
        int64_t dims[3] = {t.dims[0], t.dims[2], t.dims[3]};
        static const int NCW_TO_NWC[3] = {0, 2, 1};
        onnx_expect_perm(c, 0, fedc_reshape(c->p, y, 3, dims), NCW_TO_NWC);
        return;
    }
    onnx_expect_perm(c, 0, y, NCHW_TO_NHWC);
}

static void b_maxpool(onnx_case *c) { pool(c, FEDC_OP_MAX_POOL2D, false); }
static void b_avgpool(onnx_case *c) { pool(c, FEDC_OP_AVG_POOL2D, false); }
static void b_global_maxpool(onnx_case *c) { pool(c, FEDC_OP_MAX_POOL2D, true); }
static void b_global_avgpool(onnx_case *c) { pool(c, FEDC_OP_AVG_POOL2D, true); }

/* ------------------------------------------------------------ losses -- */

/* fedc's log_softmax is over the last axis; another axis is moved last and back. */
static void softmax(onnx_case *c, bool log) {
    onnx_known_attrs(c, "axis");
    fedc_value x = onnx_arg(c, 0);
    if (onnx_stop(c)) return;
    if (c->model->opset < 13) {
        onnx_unsupported(c, "opset %lld softmax (over flattened trailing axes)", (long long)c->model->opset);
        return;
    }
    int r = c->in[0]->rank, a = onnx_axis_of(c, onnx_attr_int(c->node, "axis", -1), r), perm[FEDC_MAX_RANK], inv[FEDC_MAX_RANK];
    if (a != r - 1) {
        onnx_axis_last(a, r, perm, inv);
        x = fedc_transpose(c->p, x, perm);
    }
    fedc_value y = fedc_log_softmax(c->p, x);
    if (!log) y = fedc_exp(c->p, y);
    if (a != r - 1) y = fedc_transpose(c->p, y, inv);
    onnx_expect(c, 0, y);
}

static void b_logsoftmax(onnx_case *c) { softmax(c, true); }
static void b_softmax(onnx_case *c) { softmax(c, false); }

/* SoftmaxCrossEntropyLoss on scores [N, C, d...]: the scores are permuted on the
 * host to [N, d..., C] and seen as [M, C] rows (the rank-7 tests exceed fedc's
 * rank 6). Class weights and ignore_index become fedc's per-example weight:
 * w[label] * (label != ignore_index), with ignored labels replaced by 0 so
 * they are in range; the mean is sum(w l) / sum(w), as ONNX defines it. */
static void b_sce(onnx_case *c) {
    onnx_known_attrs(c, "ignore_index,reduction");
    const onnx_tensor *x = onnx_need(c, 0), *lab = onnx_need(c, 1);
    if (onnx_stop(c)) return;
    int r = x->rank, perm[ONNX_MAX_RANK], inv[ONNX_MAX_RANK];
    onnx_axis_last(1, r, perm, inv);
    int64_t classes = x->dims[1], rows = lab->count;
    onnx_tensor xt;
    onnx_permute(x, perm, &xt);
    int64_t mc[2] = {rows, classes};
    fedc_value logits = xt.data ? onnx_input_data(c, FEDC_F32, 2, mc, xt.data) : FEDC_NONE;
    free(xt.data);
    if (x->data_type != ONNX_FLOAT) onnx_unsupported(c, "data_type %d scores", x->data_type);
    fedc_value labels = onnx_input_data(c, FEDC_I32, 1, &rows, lab->data);
    if (onnx_stop(c)) return;
    fedc_program *p = c->p;
    fedc_value weight = FEDC_NONE, safe = labels;
    const onnx_attr *ii = onnx_node_attr(c->node, "ignore_index");
    if (ii) {
        fedc_value keep = fedc_ne(p, labels, fedc_scalar(p, FEDC_I32, (double)ii->i));
        safe = fedc_select(p, keep, labels, fedc_scalar(p, FEDC_I32, 0));
        weight = fedc_cast(p, keep, FEDC_F32);
    }
    if (c->node->ninputs > 2 && c->in[2]) {
        fedc_value w = fedc_gather(p, onnx_arg(c, 2), safe);
        weight = weight == FEDC_NONE ? w : fedc_mul(p, weight, w);
    }
    fedc_value loss = fedc_softmax_cross_entropy(p, logits, safe, weight);
    const onnx_attr *red = onnx_node_attr(c->node, "reduction");
    const char *mode = red ? red->s : "mean";
    if (!strcmp(mode, "none")) {
        loss = fedc_reshape(p, loss, lab->rank, lab->dims);
    } else {
        loss = fedc_reduce_sum(p, loss, NULL, -1, false);
        if (!strcmp(mode, "mean"))
            loss = fedc_div(p, loss, weight == FEDC_NONE ? fedc_scalar(p, FEDC_F32, (double)rows)
                                                         : fedc_reduce_sum(p, weight, NULL, -1, false));
        else if (strcmp(mode, "sum")) {
            onnx_unsupported(c, "reduction %s", mode);
            return;
        }
    }
    onnx_expect(c, 0, loss);
    if (c->node->noutputs > 1 && c->out[1]) { /* log_prob, compared in the [M, C] rows */
        onnx_tensor want;
        onnx_permute(c->out[1], perm, &want);
        want.rank = 2, want.dims[0] = rows, want.dims[1] = classes;
        if (c->nexpect == ONNX_CASE_MAX_EXPECT) {
            free(want.data);
            onnx_bad_data(c, "too many outputs");
            return;
        }
        c->expect[c->nexpect++] = (onnx_expected){fedc_log_softmax(p, logits), want};
    }
}

/* LayerNormalization over the axes from `axis` on: fedc's layer_norm is over
 * the last axis, so x is seen as [outer, inner] with gamma and beta [inner]. Mean
 * and InvStdDev, which fedc's op does not return, are checked as fedc_reduce_mean
 * and 1 / sqrt(mean((x - mean)^2) + eps) when the test has them. */
static void b_layernorm(onnx_case *c) {
    onnx_known_attrs(c, "axis,epsilon,stash_type");
    const onnx_tensor *x = onnx_need(c, 0);
    if (onnx_stop(c)) return;
    int r = x->rank, a = onnx_axis_of(c, onnx_attr_int(c->node, "axis", -1), r);
    double eps = onnx_attr_float(c->node, "epsilon", 1e-5);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < r; i++) *(i < a ? &outer : &inner) *= x->dims[i];
    int64_t flat[2] = {outer, inner};
    fedc_program *p = c->p;
    fedc_value xv = fedc_reshape(p, onnx_arg(c, 0), 2, flat);
    fedc_value gamma = fedc_reshape(p, onnx_arg(c, 1), 1, &inner);
    fedc_value beta = c->node->ninputs > 2 && c->in[2] ? fedc_reshape(p, onnx_arg(c, 2), 1, &inner)
                                                       : fedc_full(p, fedc_type_make(FEDC_F32, 1, &inner), 0);
    if (onnx_stop(c)) return;
    onnx_expect(c, 0, fedc_reshape(p, fedc_layer_norm(p, xv, gamma, beta, eps), r, x->dims));
    int64_t stat_dims[ONNX_MAX_RANK];
    for (int i = 0; i < r; i++) stat_dims[i] = i < a ? x->dims[i] : 1;
    int one = 1;
    fedc_value mean = fedc_reduce_mean(p, xv, &one, 1, true);
    if (c->node->noutputs > 1 && c->out[1]) onnx_expect(c, 1, fedc_reshape(p, mean, r, stat_dims));
    if (c->node->noutputs > 2 && c->out[2]) {
        fedc_value var = fedc_reduce_mean(p, fedc_square(p, fedc_sub(p, xv, mean)), &one, 1, true);
        fedc_value inv = fedc_div(p, fedc_scalar(p, FEDC_F32, 1),
                                  fedc_sqrt(p, fedc_add(p, var, fedc_scalar(p, FEDC_F32, eps))));
        onnx_expect(c, 2, fedc_reshape(p, inv, r, stat_dims));
    }
}

/* ---------------------------------------------------------- dropout -- */

/* ONNX's inference mode (and ratio 0 in training) is the identity. fedc has no
 * inference mode (evaluation leaves dropout out), and its dropout at rate 0 is
 * the identity: that is what is checked. Training at a ratio > 0 draws from
 * numpy's generator, which fedc's Philox streams cannot reproduce. */
static void b_dropout(onnx_case *c) {
    onnx_known_attrs(c, "seed,ratio,is_test");
    double ratio = c->node->ninputs > 1 && c->in[1] ? onnx_const_scalar(c, 1, 0.5) : onnx_attr_float(c->node, "ratio", 0.5);
    bool training = c->node->ninputs > 2 && c->in[2] ? onnx_const_scalar(c, 2, 0) != 0
                                                     : onnx_attr_int(c->node, "is_test", 1) == 0; /* opset < 7 */
    if (training && ratio != 0) {
        onnx_unsupported(c, "random masks (numpy's generator)");
        return;
    }
    fedc_value x = onnx_arg(c, 0);
    int32_t key[4] = {1, 2, 3, 4};
    fedc_value k = fedc_constant(c->p, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), key);
    onnx_note(c, "%s: fedc's dropout at rate 0", training ? "ratio 0" : "inference mode");
    if (c->node->noutputs > 1 && c->out[1]) onnx_note(c, "the mask output is not checked (fedc's dropout has none)");
    onnx_expect(c, 0, fedc_dropout(c->p, x, k, 0));
}

/* ------------------------------------------------------------- LSTM -- */

/* ONNX's W [1, 4H, I] and R [1, 4H, H] hold the gates in the order i, o, f, c
 * (rows); fedc's w_x [I, 4H] and wh [H, 4H] in the order i, g (= c), f, o
 * (columns). So fedc gate block g takes ONNX block ONNX_BLOCK[g], transposed;
 * the bias is Wb + Rb, reordered the same way. */
static const int ONNX_BLOCK[4] = {0, 3, 2, 1};

static double *lstm_weights(const onnx_tensor *w, int64_t h) {
    int64_t in = w->dims[2];
    double *out = malloc((size_t)(in * 4 * h) * sizeof *out);
    if (!out) return NULL;
    for (int g = 0; g < 4; g++)
        for (int64_t j = 0; j < h; j++)
            for (int64_t k = 0; k < in; k++) out[k * 4 * h + g * h + j] = w->data[(ONNX_BLOCK[g] * h + j) * in + k];
    return out;
}

static bool all_zero(const onnx_tensor *t) {
    for (int64_t i = 0; i < t->count; i++)
        if (t->data[i] != 0) return false;
    return true;
}

static void lstm_inputs_supported(onnx_case *c, int64_t steps) {
    const char *direction = onnx_node_attr(c->node, "direction") ? onnx_node_attr(c->node, "direction")->s : "forward";
    if (strcmp(direction, "forward")) onnx_unsupported(c, "direction %s (fedc's LSTM runs forward)", direction);
    if (onnx_attr_int(c->node, "input_forget", 0)) onnx_unsupported(c, "coupled input and forget gates");
    if (c->node->ninputs > 4 && c->in[4])
        for (int64_t i = 0; i < c->in[4]->count; i++)
            if (c->in[4]->data[i] != steps) onnx_unsupported(c, "sequence_lens shorter than the sequence");
    for (int k = 5; k < 7 && k < c->node->ninputs; k++)
        if (c->in[k] && !all_zero(c->in[k])) onnx_unsupported(c, "a nonzero initial state (fedc's starts at zero)");
    if (c->node->ninputs > 7 && c->in[7] && !all_zero(c->in[7])) onnx_unsupported(c, "peepholes (fedc's cell has none)");
}

static void b_lstm(onnx_case *c) {
    onnx_known_attrs(c, "hidden_size,layout,direction,input_forget");
    const onnx_tensor *x = onnx_need(c, 0), *w = onnx_need(c, 1), *rw = onnx_need(c, 2);
    if (onnx_stop(c)) return;
    bool batch_first = onnx_attr_int(c->node, "layout", 0) != 0;
    int64_t h = onnx_attr_int(c->node, "hidden_size", 0), in = x->dims[2];
    int64_t t = x->dims[batch_first], b = x->dims[!batch_first];
    lstm_inputs_supported(c, t);
    if (onnx_stop(c)) return;
    fedc_program *p = c->p;
    static const int SWAP01[3] = {1, 0, 2};
    fedc_value xs = batch_first ? onnx_arg_perm(c, 0, SWAP01) : onnx_arg(c, 0); /* [T, B, I] */
    double *wx = lstm_weights(w, h), *wh = lstm_weights(rw, h), *bias = calloc((size_t)(4 * h), sizeof *bias);
    if (wx && wh && bias && c->node->ninputs > 3 && c->in[3])
        for (int g = 0; g < 4; g++)
            for (int64_t j = 0; j < h; j++)
                bias[g * h + j] = c->in[3]->data[ONNX_BLOCK[g] * h + j] + c->in[3]->data[(4 + ONNX_BLOCK[g]) * h + j];
    int64_t wxd[2] = {in, 4 * h}, whd[2] = {h, 4 * h}, bd = 4 * h;
    fedc_value vwx = wx ? onnx_input_data(c, FEDC_F32, 2, wxd, wx) : FEDC_NONE;
    fedc_value vwh = wh ? onnx_input_data(c, FEDC_F32, 2, whd, wh) : FEDC_NONE;
    fedc_value vb = bias ? onnx_input_data(c, FEDC_F32, 1, &bd, bias) : FEDC_NONE;
    free(wx), free(wh), free(bias);
    if (onnx_stop(c)) return;
    int64_t rows[2] = {t * b, in}, seq[3] = {t, b, 4 * h};
    fedc_value xw = fedc_add(p, fedc_matmul(p, fedc_reshape(p, xs, 2, rows), vwx, false, false), vb);
    fedc_value trace = fedc_lstm(p, fedc_reshape(p, xw, 3, seq), vwh); /* [T, B, 6H]: h, c, gates */
    fedc_value hs = fedc_slice(p, trace, (int64_t[]){0, 0, 0}, (int64_t[]){t, b, h});
    if (c->node->noutputs > 0 && c->out[0]) { /* Y: [T, 1, B, H], or [B, T, 1, H] batch first */
        fedc_value y = batch_first ? fedc_transpose(p, hs, SWAP01) : hs;
        int64_t yd[4] = {t, 1, b, h}, yb[4] = {b, t, 1, h};
        onnx_expect(c, 0, fedc_reshape(p, y, 4, batch_first ? yb : yd));
    }
    int64_t last[3] = {batch_first ? b : 1, batch_first ? 1 : b, h};
    for (int k = 1; k < 3; k++) { /* Y_h, Y_c: the last step's h and c */
        if (c->node->noutputs <= k || !c->out[k]) continue;
        fedc_value s = fedc_slice(p, trace, (int64_t[]){t - 1, 0, (k - 1) * h}, (int64_t[]){t, b, k * h});
        onnx_expect(c, k, fedc_reshape(p, s, 3, last));
    }
}

const onnx_builder_entry onnx_builders_nn[] = {
    {"Conv", b_conv}, {"ConvTranspose", b_convtranspose}, {"MaxPool", b_maxpool}, {"AveragePool", b_avgpool},
    {"GlobalMaxPool", b_global_maxpool}, {"GlobalAveragePool", b_global_avgpool}, {"LogSoftmax", b_logsoftmax},
    {"Softmax", b_softmax}, {"SoftmaxCrossEntropyLoss", b_sce}, {"LayerNormalization", b_layernorm},
    {"Dropout", b_dropout}, {"LSTM", b_lstm}, {NULL, NULL},
};
