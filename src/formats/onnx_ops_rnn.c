/* ONNX's LSTM as fedc's (onnx_import.h): one forward layer, as
 * torch.onnx.export writes nn.LSTM's layers.
 *
 * fedc's lstm takes xw [T, B, 4H] (the input projection of every step, one GEMM
 * beforehand) and wh [H, 4H], with the gate blocks in the order i, g, f, o as
 * columns; ONNX's W [1, 4H, I] and R [1, 4H, H] hold them in the order i, o, f, c
 * as rows, and B [1, 8H] is Wb then Rb. The weights stay ONNX's parameters as
 * they are; the program reorders and transposes them (a few small copies a step),
 * so that the parameter tree is the file's. */
#include <string.h>

#include "formats/onnx_import.h"

/* fedc's gate block g is ONNX's block ONNX_BLOCK[g]. */
static const int ONNX_BLOCK[4] = {0, 3, 2, 1};

/* Rows [first, first + n) of a [rows, cols] value. */
static fedc_value rows(fedc_program *p, fedc_value m, int64_t first, int64_t n) {
    int64_t cols = fedc_value_type(p, m).dims[1];
    return fedc_slice(p, m, (int64_t[]){first, 0}, (int64_t[]){first + n, cols});
}

/* W [1, 4H, K] (ONNX's order, rows) as [K, 4H] in fedc's order (columns). */
static fedc_value gate_columns(fedc_program *p, fedc_value w, int64_t h) {
    fedc_type t = fedc_value_type(p, w);
    int64_t flat[2] = {4 * h, t.dims[2]};
    fedc_value m = fedc_reshape(p, w, 2, flat), blocks[4];
    for (int g = 0; g < 4; g++) blocks[g] = rows(p, m, ONNX_BLOCK[g] * h, h);
    static const int T[2] = {1, 0};
    return fedc_transpose(p, fedc_concat(p, blocks, 4, 0), T);
}

/* B [1, 8H] as Wb + Rb [4H] in fedc's order. */
static fedc_value gate_bias(fedc_program *p, fedc_value b, int64_t h) {
    int64_t flat[2] = {8 * h, 1}, out = 4 * h;
    fedc_value m = fedc_reshape(p, b, 2, flat), blocks[4];
    for (int g = 0; g < 4; g++) {
        fedc_value wb = rows(p, m, ONNX_BLOCK[g] * h, h);
        blocks[g] = fedc_add(p, wb, rows(p, m, (4 + ONNX_BLOCK[g]) * h, h));
    }
    return fedc_reshape(p, fedc_concat(p, blocks, 4, 0), 1, &out);
}

/* An optional input that must be absent or a constant of zeros (fedc's LSTM
 * starts from zero state and has no peepholes), or all `steps` (sequence_lens). */
static fedc_status absent_or(onnx_import *im, int k, const char *what, double value) {
    if (!fedc__onnx_has_in(im, k)) return FEDC_OK;
    const onnx_const *c = fedc__onnx_const_in(im, k, what);
    if (!c) return fedc__onnx_error(im);
    for (int64_t i = 0; i < c->count; i++)
        if (c->data[i] != value) return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "a %s other than %g", what, value);
    return FEDC_OK;
}

static fedc_status lstm_supported(onnx_import *im, int64_t steps) {
    fedc_status st = fedc__onnx_known_attrs(im, "direction,hidden_size,layout,input_forget");
    char dir[32];
    if (!st && strcmp(fedc__onnx_attr_string(im, "direction", "forward", dir, sizeof dir), "forward"))
        st = fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "direction %s (fedc's LSTM runs forward)", dir);
    if (!st && fedc__onnx_attr_int(im, "input_forget", 0)) st = fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "coupled input and forget gates");
    if (!st) st = absent_or(im, 4, "sequence_lens", (double)steps);
    if (!st) st = absent_or(im, 5, "initial_h", 0);
    if (!st) st = absent_or(im, 6, "initial_c", 0);
    if (!st) st = absent_or(im, 7, "peephole", 0);
    return st;
}

static fedc_status op_lstm(onnx_import *im) {
    onnx_entry *x = fedc__onnx_in(im, 0), *w = x ? fedc__onnx_in(im, 1) : NULL, *r = w ? fedc__onnx_in(im, 2) : NULL;
    if (!r) return fedc__onnx_error(im);
    int64_t xd[FEDC_MAX_RANK], wd[FEDC_MAX_RANK], h = fedc__onnx_attr_int(im, "hidden_size", 0);
    bool batch_first = fedc__onnx_attr_int(im, "layout", 0) != 0;
    if (fedc__onnx_dims(im, x, xd) != 3 || fedc__onnx_dims(im, w, wd) != 3 || wd[0] != 1 || h < 1 || wd[1] != 4 * h)
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "shapes other than X [T, B, I], W [1, 4H, I] with hidden_size H");
    int64_t t = xd[batch_first], b = xd[!batch_first], in = xd[2];
    fedc_status st = lstm_supported(im, t);
    if (st) return st;
    fedc_program *p = im->p;
    static const int SWAP01[3] = {1, 0, 2};
    fedc_value xs = fedc__onnx_value(im, x, FEDC_NONE);
    if (batch_first) xs = fedc_transpose(p, xs, SWAP01); /* [T, B, I] */
    fedc_value wx = gate_columns(p, fedc__onnx_value(im, w, xs), h);
    fedc_value wh = gate_columns(p, fedc__onnx_value(im, r, xs), h);
    int64_t flat[2] = {t * b, in}, seq[3] = {t, b, 4 * h};
    fedc_value xw = fedc_matmul(p, fedc_reshape(p, xs, 2, flat), wx, false, false);
    if (fedc__onnx_has_in(im, 3)) xw = fedc_add(p, xw, gate_bias(p, fedc__onnx_value(im, fedc__onnx_in(im, 3), xs), h));
    fedc_value trace = fedc_lstm(p, fedc_reshape(p, xw, 3, seq), wh); /* [T, B, 6H]: h, c, gates */
    fedc_value hs = fedc_slice(p, trace, (int64_t[]){0, 0, 0}, (int64_t[]){t, b, h});
    int64_t yd[4] = {t, 1, b, h}, yb[4] = {b, t, 1, h}, last[3] = {batch_first ? b : 1, batch_first ? 1 : b, h};
    fedc_value y = batch_first ? fedc_transpose(p, hs, SWAP01) : hs;
    if ((st = fedc__onnx_set(im, 0, fedc_reshape(p, y, 4, batch_first ? yb : yd)))) return st;
    for (int k = 1; k < 3 && !st; k++) { /* Y_h, Y_c: the last step's h and c */
        if (k >= (int)im->node->n_output || !im->node->output[k][0]) continue;
        fedc_value s = fedc_slice(p, trace, (int64_t[]){t - 1, 0, (k - 1) * h}, (int64_t[]){t, b, k * h});
        st = fedc__onnx_set(im, k, fedc_reshape(p, s, 3, last));
    }
    return st;
}

const onnx_op_entry fedc__onnx_ops_rnn[] = {{"LSTM", op_lstm}, {NULL, NULL}};
