/*
 * The fast kernel table, fedc_kernels_fast: GEMM-based matmul and convolution
 * (fast_blas.c, fast_conv.c), channel-vectorised pooling (fast_pool.c), flat
 * elementwise loops (fast_elementwise.c), slice and pad by contiguous runs
 * (fast_shape.c); every other entry is the reference
 * kernel of the same name, which is already as fast as it needs to be or not on a
 * hot path. The fast functions are declared in fast.h, which every fast_*.c
 * includes, so the compiler checks each definition against the table's field.
 */
#include "kernels/fast.h"
#include "kernels/ref.h"

const fedc_kernels fedc_kernels_fast = {
    .name = "fast",
    .unary = fedc_fast_unary,
    .binary = fedc_fast_binary,
    .select = fedc_fast_select,
    .reduce = fedc_fast_reduce,
    .broadcast_to = fedc_ref_broadcast_to,
    .select_gt = fedc_fast_select_gt,
    .sub_scaled = fedc_fast_sub_scaled,
    .matmul_sub_scaled = fedc_fast_matmul_sub_scaled,
    .transpose = fedc_ref_transpose,
    .slice = fedc_fast_slice,
    .pad = fedc_fast_pad,
    .concat = fedc_ref_concat,
    .matmul = fedc_fast_matmul,
    .gather = fedc_ref_gather,
    .scatter_add = fedc_fast_scatter_add,
    .one_hot = fedc_ref_one_hot,
    .conv2d_scratch = fedc_fast_conv2d_scratch,
    .conv2d = fedc_fast_conv2d,
    .conv2d_bias_relu = fedc_fast_conv2d_bias_relu,
    .conv2d_input_grad = fedc_fast_conv2d_input_grad,
    .conv2d_filter_grad = fedc_fast_conv2d_filter_grad,
    .max_pool2d = fedc_fast_max_pool2d,
    .max_pool2d_grad = fedc_fast_max_pool2d_grad,
    .avg_pool2d = fedc_fast_avg_pool2d,
    .avg_pool2d_grad = fedc_fast_avg_pool2d_grad,
    .log_softmax = fedc_ref_log_softmax,
    .softmax_xent = fedc_fast_softmax_xent,
    .softmax_xent_grad = fedc_fast_softmax_xent_grad,
    .argmax = fedc_ref_argmax,
    .dropout = fedc_fast_dropout,
    .cast = fedc_ref_cast,
    .iota = fedc_ref_iota,
    .gelu = fedc_fast_gelu,
    .gelu_grad = fedc_fast_gelu_grad,
    .layer_norm = fedc_fast_layer_norm,
    .layer_norm_grad = fedc_fast_layer_norm_grad,
    .layer_norm_param_grad = fedc_fast_layer_norm_param_grad,
    .attention_scratch = fedc_fast_attention_scratch,
    .causal_attention = fedc_fast_causal_attention,
    .causal_attention_grad = fedc_fast_causal_attention_grad,
    .lstm = fedc_fast_lstm,
    .lstm_grad = fedc_fast_lstm_grad,
    .lstm_tangent = fedc_ref_lstm_tangent,
};
