/*
 * src/nn/recurrent.c — the layers of the language models: Haiku's hk.Embed and
 * hk.LSTM (dm-haiku haiku/_src/embed.py and recurrent.py), declared with Haiku's
 * initialisers and applied with the gather and fused lstm ops.
 *
 * hk.LSTM computes gated = Linear(concat([x, h])) and splits it into i, g, f, o,
 * with f = sigmoid(f + 1) (the forget bias). The single weight matrix of that
 * Linear is the parameter here too ([in + H, 4H], input rows first), so that
 * checkpoints hold what Haiku holds; applying it splits the matrix into its input
 * rows (one GEMM over all steps) and its recurrent rows (the lstm op's wh).
 */
#include "nn/nn.h"

#include <math.h>

fedc_status fedc__nn_declare_embedding(fedc__nn_params *ps, const char *layer, int64_t vocab, int64_t dim) {
    return fedc__nn_declare(ps, layer, "w", 2, (int64_t[]){vocab, dim}, 1.0); /* TruncatedNormal() */
}

fedc_status fedc__nn_declare_lstm(fedc__nn_params *ps, const char *layer, int64_t in, int64_t hidden) {
    fedc_status st = fedc__nn_declare(ps, layer, "w", 2, (int64_t[]){in + hidden, 4 * hidden}, 1.0 / sqrt((double)(in + hidden)));
    if (st) return st;
    return fedc__nn_declare(ps, layer, "b", 1, (int64_t[]){4 * hidden}, 0.0);
}

/* b + [0, 0, 1, 0] per gate block: Haiku's forget bias folded into the bias. */
static fedc_value forget_biased(fedc_program *p, fedc_value b, int64_t hidden) {
    fedc_value lo = fedc_full(p, fedc_type_make(FEDC_F32, 1, (int64_t[]){2 * hidden}), 0.0);
    fedc_value one = fedc_full(p, fedc_type_make(FEDC_F32, 1, (int64_t[]){hidden}), 1.0);
    fedc_value hi = fedc_full(p, fedc_type_make(FEDC_F32, 1, (int64_t[]){hidden}), 0.0);
    return fedc_add(p, b, fedc_concat(p, (fedc_value[]){lo, one, hi}, 3, 0));
}

fedc_value fedc__nn_lstm(fedc_program *p, fedc_value x, fedc_value w, fedc_value b) {
    if (x == FEDC_NONE || w == FEDC_NONE) return FEDC_NONE;
    fedc_type xt = fedc_value_type(p, x), wt = fedc_value_type(p, w);
    int64_t T = xt.dims[0], B = xt.dims[1], in = xt.dims[2], H = wt.dims[1] / 4;
    fedc_value wx = fedc_slice(p, w, (int64_t[]){0, 0}, (int64_t[]){in, 4 * H});
    fedc_value wh = fedc_slice(p, w, (int64_t[]){in, 0}, (int64_t[]){in + H, 4 * H});
    fedc_value flat = fedc_reshape(p, x, 2, (int64_t[]){T * B, in});
    fedc_value xwx = fedc_matmul(p, flat, wx, false, false);
    fedc_value xw = fedc_add(p, xwx, forget_biased(p, b, H));
    fedc_value trace = fedc_lstm(p, fedc_reshape(p, xw, 3, (int64_t[]){T, B, 4 * H}), wh);
    return fedc_slice(p, trace, (int64_t[]){0, 0, 0}, (int64_t[]){T, B, H});
}
