/* ONNX's recurrent layers (onnx_import.h): one forward layer each, as
 * torch.onnx.export writes nn.LSTM's and nn.GRU's layers.
 *
 * LSTM becomes fedc's lstm op.
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

/* A recurrent node's common inputs: X [T, B, I] (or [B, T, I] with layout 1)
 * as xs [T, B, I], W [1, G H, I] for G gate blocks, R, hidden_size H. */
typedef struct rnn_layer {
    onnx_entry *w, *r;
    fedc_value xs;
    int64_t t, b, in, h;
    bool batch_first;
} rnn_layer;

static const int SWAP01[3] = {1, 0, 2};

/* Reads the layer and checks what fedc's layers share: one forward direction,
 * only the attributes `known`, zero initial state, every sequence all T steps. */
static fedc_status rnn_read(onnx_import *im, const char *op, int gates, const char *known, rnn_layer *l) {
    onnx_entry *x = fedc__onnx_in(im, 0);
    l->w = x ? fedc__onnx_in(im, 1) : NULL, l->r = l->w ? fedc__onnx_in(im, 2) : NULL;
    if (!l->r) return fedc__onnx_error(im);
    int64_t xd[FEDC_MAX_RANK], wd[FEDC_MAX_RANK];
    l->h = fedc__onnx_attr_int(im, "hidden_size", 0);
    l->batch_first = fedc__onnx_attr_int(im, "layout", 0) != 0;
    if (fedc__onnx_dims(im, x, xd) != 3 || fedc__onnx_dims(im, l->w, wd) != 3 || wd[0] != 1 || l->h < 1 ||
        wd[1] != gates * l->h)
        return fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "shapes other than X [T, B, I], W [1, %dH, I] with hidden_size H",
                               gates);
    l->t = xd[l->batch_first], l->b = xd[!l->batch_first], l->in = xd[2];
    fedc_status st = fedc__onnx_known_attrs(im, known);
    char dir[32];
    if (!st && strcmp(fedc__onnx_attr_string(im, "direction", "forward", dir, sizeof dir), "forward"))
        st = fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "direction %s (fedc's %s runs forward)", dir, op);
    if (!st) st = absent_or(im, 4, "sequence_lens", (double)l->t);
    if (!st) st = absent_or(im, 5, "initial_h", 0);
    if (st) return st;
    l->xs = fedc__onnx_value(im, x, FEDC_NONE);
    if (l->batch_first) l->xs = fedc_transpose(im->p, l->xs, SWAP01);
    return fedc_program_status(im->p);
}

/* Output 0, Y [T, 1, B, H] (or [B, T, 1, H]), from hs [T, B, H]. */
static fedc_status rnn_set_y(onnx_import *im, const rnn_layer *l, fedc_value hs) {
    int64_t yd[4] = {l->t, 1, l->b, l->h}, yb[4] = {l->b, l->t, 1, l->h};
    fedc_value y = l->batch_first ? fedc_transpose(im->p, hs, SWAP01) : hs;
    return fedc__onnx_set(im, 0, fedc_reshape(im->p, y, 4, l->batch_first ? yb : yd));
}

/* Output k (Y_h, Y_c) from the last step's [B, H], when the node names it. */
static fedc_status rnn_set_last(onnx_import *im, const rnn_layer *l, int k, fedc_value last) {
    if (k >= (int)im->node->n_output || !im->node->output[k][0]) return FEDC_OK;
    int64_t dims[3] = {l->batch_first ? l->b : 1, l->batch_first ? 1 : l->b, l->h};
    return fedc__onnx_set(im, k, fedc_reshape(im->p, last, 3, dims));
}

/* ----------------------------------------------------------------- LSTM -- */

static fedc_status op_lstm(onnx_import *im) {
    rnn_layer l;
    fedc_status st = rnn_read(im, "LSTM", 4, "direction,hidden_size,layout,input_forget", &l);
    if (!st && fedc__onnx_attr_int(im, "input_forget", 0))
        st = fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "coupled input and forget gates");
    if (!st) st = absent_or(im, 6, "initial_c", 0);
    if (!st) st = absent_or(im, 7, "peephole", 0);
    if (st) return st;
    fedc_program *p = im->p;
    int64_t t = l.t, b = l.b, h = l.h;
    fedc_value wx = gate_columns(p, fedc__onnx_value(im, l.w, l.xs), h);
    fedc_value wh = gate_columns(p, fedc__onnx_value(im, l.r, l.xs), h);
    int64_t flat[2] = {t * b, l.in}, seq[3] = {t, b, 4 * h};
    fedc_value xw = fedc_matmul(p, fedc_reshape(p, l.xs, 2, flat), wx, false, false);
    if (fedc__onnx_has_in(im, 3)) xw = fedc_add(p, xw, gate_bias(p, fedc__onnx_value(im, fedc__onnx_in(im, 3), l.xs), h));
    fedc_value trace = fedc_lstm(p, fedc_reshape(p, xw, 3, seq), wh); /* [T, B, 6H]: h, c, gates */
    st = rnn_set_y(im, &l, fedc_slice(p, trace, (int64_t[]){0, 0, 0}, (int64_t[]){t, b, h}));
    for (int k = 1; k < 3 && !st; k++) { /* Y_h, Y_c: the last step's h and c */
        fedc_value last = fedc_slice(p, trace, (int64_t[]){t - 1, 0, (k - 1) * h}, (int64_t[]){t, b, k * h});
        int64_t bh[2] = {b, h};
        st = rnn_set_last(im, &l, k, fedc_reshape(p, last, 2, bh));
    }
    return st;
}

/* ------------------------------------------------------------------ GRU -- */

/* GRU has no op of its own in fedc: it is unrolled over its steps (fedc's
 * shapes are static, so T is known) into matmuls and elementwise ops, whose
 * derivatives fedc's AD already has. ONNX's gates are z (update), r (reset) and
 * h, in that order in W [1, 3H, I], R [1, 3H, H] and B [1, 6H] (Wb, then Rb):
 *
 *     z = σ(x W_z + h R_z + b_z),  r = σ(x W_r + h R_r + b_r)
 *     n = tanh(x W_h + Wb_h + r ⊙ (h R_h + Rb_h))      linear_before_reset = 1 (PyTorch)
 *     n = tanh(x W_h + Wb_h + (r ⊙ h) R_h + Rb_h)      linear_before_reset = 0
 *     h' = (1 - z) ⊙ n + z ⊙ h */
/* The unrolled program grows with the steps: a bound, far above a model's
 * sequence, far below what a hostile file could make it build. */
enum { MAX_GRU_STEPS = 4096 };

typedef struct gru_weights {
    fedc_value r_zr, r_h;   /* R's z and r blocks as [H, 2H], its h block as [H, H] */
    fedc_value rb_zr, rb_h; /* Rb's blocks, or FEDC_NONE without B */
    bool linear_before_reset;
} gru_weights;

/* Rows [first, first + n) of R [1, 3H, H] as the columns of an [H, n] matrix. */
static fedc_value gru_columns(fedc_program *p, fedc_value r, int64_t h, int64_t first, int64_t n) {
    int64_t flat[2] = {3 * h, h};
    static const int T[2] = {1, 0};
    return fedc_transpose(p, rows(p, fedc_reshape(p, r, 2, flat), first, n), T);
}

/* One step: xt [B, 3H] (x W + Wb, all three gates) and the state h [B, H]. */
static fedc_value gru_step(fedc_program *p, const gru_weights *g, fedc_value xt, fedc_value hp, int64_t b, int64_t h) {
    fedc_value hr = fedc_matmul(p, hp, g->r_zr, false, false);
    if (g->rb_zr != FEDC_NONE) hr = fedc_add(p, hr, g->rb_zr);
    fedc_value zr = fedc_sigmoid(p, fedc_add(p, fedc_slice(p, xt, (int64_t[]){0, 0}, (int64_t[]){b, 2 * h}), hr));
    fedc_value z = fedc_slice(p, zr, (int64_t[]){0, 0}, (int64_t[]){b, h});
    fedc_value r = fedc_slice(p, zr, (int64_t[]){0, h}, (int64_t[]){b, 2 * h});
    fedc_value xn = fedc_slice(p, xt, (int64_t[]){0, 2 * h}, (int64_t[]){b, 3 * h}), rn;
    if (g->linear_before_reset) {
        rn = fedc_matmul(p, hp, g->r_h, false, false);
        if (g->rb_h != FEDC_NONE) rn = fedc_add(p, rn, g->rb_h);
        rn = fedc_mul(p, r, rn);
    } else {
        rn = fedc_matmul(p, fedc_mul(p, r, hp), g->r_h, false, false);
        if (g->rb_h != FEDC_NONE) rn = fedc_add(p, rn, g->rb_h);
    }
    fedc_value n = fedc_tanh(p, fedc_add(p, xn, rn));
    return fedc_add(p, n, fedc_mul(p, z, fedc_sub(p, hp, n))); /* (1 - z) n + z h */
}

static fedc_status op_gru(onnx_import *im) {
    rnn_layer l;
    fedc_status st = rnn_read(im, "GRU", 3, "direction,hidden_size,layout,linear_before_reset", &l);
    if (!st && (l.t < 1 || l.t > MAX_GRU_STEPS))
        st = fedc__onnx_fail(im, FEDC_EUNSUPPORTED, "%lld steps (fedc unrolls a GRU: 1 to %d)", (long long)l.t,
                             MAX_GRU_STEPS);
    if (st) return st;
    fedc_program *p = im->p;
    int64_t t = l.t, b = l.b, h = l.h;
    static const int T2[2] = {1, 0};
    fedc_value rv = fedc__onnx_value(im, l.r, l.xs);
    gru_weights g = {gru_columns(p, rv, h, 0, 2 * h), gru_columns(p, rv, h, 2 * h, h), FEDC_NONE, FEDC_NONE,
                     fedc__onnx_attr_int(im, "linear_before_reset", 0) != 0};
    int64_t flat[2] = {t * b, l.in}, wflat[2] = {3 * h, l.in};
    fedc_value wx = fedc_transpose(p, fedc_reshape(p, fedc__onnx_value(im, l.w, l.xs), 2, wflat), T2); /* [I, 3H] */
    fedc_value xw = fedc_matmul(p, fedc_reshape(p, l.xs, 2, flat), wx, false, false);         /* [T B, 3H] */
    if (fedc__onnx_has_in(im, 3)) {
        int64_t bflat[2] = {6 * h, 1}, wb = 3 * h, zr = 2 * h;
        fedc_value bias = fedc_reshape(p, fedc__onnx_value(im, fedc__onnx_in(im, 3), l.xs), 2, bflat);
        xw = fedc_add(p, xw, fedc_reshape(p, rows(p, bias, 0, 3 * h), 1, &wb));
        g.rb_zr = fedc_reshape(p, rows(p, bias, 3 * h, 2 * h), 1, &zr);
        g.rb_h = fedc_reshape(p, rows(p, bias, 5 * h, h), 1, &h);
    }
    fedc_value *hs = fedc_malloc((size_t)t * sizeof *hs);
    if (!hs) return fedc__onnx_fail(im, FEDC_ENOMEM, "out of memory");
    int64_t state[2] = {b, h}, step[3] = {1, b, h};
    fedc_value hp = fedc_full(p, fedc_type_make(fedc_value_type(p, l.xs).dtype, 2, state), 0.0);
    for (int64_t k = 0; k < t; k++) {
        fedc_value xt = fedc_slice(p, xw, (int64_t[]){k * b, 0}, (int64_t[]){(k + 1) * b, 3 * h});
        hp = gru_step(p, &g, xt, hp, b, h);
        hs[k] = fedc_reshape(p, hp, 3, step);
    }
    fedc_value y = fedc_concat(p, hs, (int)t, 0); /* [T, B, H] */
    fedc_free(hs);
    st = rnn_set_y(im, &l, y);
    return st ? st : rnn_set_last(im, &l, 1, hp);
}

const onnx_op_entry fedc__onnx_ops_rnn[] = {{"LSTM", op_lstm}, {"GRU", op_gru}, {NULL, NULL}};
