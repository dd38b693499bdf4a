/*
 * The reference kernel table, fedc_kernels_ref: every entry is the plain-C
 * fedc_ref_<field> function of the same name (ref_elementwise.c, ref_shape.c,
 * ref_nn.c). It is the oracle the fast table is tested against, so it is filled
 * with designated initialisers: a missing entry would be a NULL the tests catch.
 */
#include "kernels/ref.h"

const fedc_kernels fedc_kernels_ref = {
    .name = "ref",
    .unary = fedc_ref_unary,
    .binary = fedc_ref_binary,
    .select = fedc_ref_select,
    .reduce = fedc_ref_reduce,
    .broadcast_to = fedc_ref_broadcast_to,
    .transpose = fedc_ref_transpose,
    .slice = fedc_ref_slice,
    .pad = fedc_ref_pad,
    .concat = fedc_ref_concat,
    .matmul = fedc_ref_matmul,
    .gather = fedc_ref_gather,
    .scatter_add = fedc_ref_scatter_add,
    .one_hot = fedc_ref_one_hot,
    .conv2d_scratch = fedc_ref_conv2d_scratch,
    .conv2d = fedc_ref_conv2d,
    .conv2d_input_grad = fedc_ref_conv2d_input_grad,
    .conv2d_filter_grad = fedc_ref_conv2d_filter_grad,
    .max_pool2d = fedc_ref_max_pool2d,
    .max_pool2d_grad = fedc_ref_max_pool2d_grad,
    .avg_pool2d = fedc_ref_avg_pool2d,
    .avg_pool2d_grad = fedc_ref_avg_pool2d_grad,
    .log_softmax = fedc_ref_log_softmax,
    .softmax_xent = fedc_ref_softmax_xent,
    .softmax_xent_grad = fedc_ref_softmax_xent_grad,
    .argmax = fedc_ref_argmax,
    .dropout = fedc_ref_dropout,
    .cast = fedc_ref_cast,
    .iota = fedc_ref_iota,
    .gelu = fedc_ref_gelu,
    .gelu_grad = fedc_ref_gelu_grad,
    .layer_norm = fedc_ref_layer_norm,
    .layer_norm_grad = fedc_ref_layer_norm_grad,
    .layer_norm_param_grad = fedc_ref_layer_norm_param_grad,
    .attention_scratch = fedc_ref_attention_scratch,
    .causal_attention = fedc_ref_causal_attention,
    .causal_attention_grad = fedc_ref_causal_attention_grad,
};
