/* The ONNX importer's recurrent cells (test_onnx_import.c runs these cases):
 * an LSTM and a GRU (unrolled at import, either linear_before_reset), each
 * written here through protobuf-c, against ONNX's own equations step by step. */
#include "harness.h"

#include <stdlib.h>

#include "onnx_import_case.h"

/* ------------------------------------------------------------ the LSTM -- */

enum { LT = 4, LB = 2, LI = 3, LH = 5 };

typedef struct lstm {
    float x[LT * LB * LI], w[4 * LH * LI], r[4 * LH * LH], b[8 * LH];
} lstm;

static void lstm_init(lstm *m) {
    fedc_test_seed(31);
    onnx_fill(m->x, LT * LB * LI), onnx_fill(m->w, 4 * LH * LI), onnx_fill(m->r, 4 * LH * LH), onnx_fill(m->b, 8 * LH);
}

/* x [T, B, I] -> LSTM (hidden 5, W R B in ONNX's gate order i, o, f, c) -> Y
 * [T, 1, B, H] squeezed to [T, B, H]; and Y_h [1, B, H]. */
static void lstm_write(onnx_writer *w, const void *model) {
    const lstm *m = model;
    ow_init(w);
    ow_input(w, "x", ELEM_FLOAT, 3, (int64_t[]){LT, LB, LI});
    ow_init_f32(w, "W", 3, (int64_t[]){1, 4 * LH, LI}, m->w);
    ow_init_f32(w, "R", 3, (int64_t[]){1, 4 * LH, LH}, m->r);
    ow_init_f32(w, "B", 2, (int64_t[]){1, 8 * LH}, m->b);
    ow_init_i64(w, "axis1", 1, (int64_t[]){1}, (int64_t[]){1});
    ow_node(w, "LSTM", "/lstm/LSTM", "x,W,R,B", "Y,Y_h", 1, ow_int(w, "hidden_size", LH));
    ow_node(w, "Squeeze", "/lstm/Squeeze", "Y,axis1", "ys", 0);
    ow_output(w, "ys");
    ow_output(w, "Y_h");
}

static double sigmoid(double v) { return 1 / (1 + exp(-v)); }

/* ONNX's LSTM equations, step by step: gate block k (i, o, f, c) of row j is
 * x W[k H + j]^T + h R[k H + j]^T + Wb + Rb. ys [T, B, H]. */
static void lstm_reference(const lstm *m, double *ys) {
    double h[LB][LH] = {{0}}, c[LB][LH] = {{0}};
    for (int t = 0; t < LT; t++)
        for (int b = 0; b < LB; b++) {
            double a[4][LH];
            for (int k = 0; k < 4; k++)
                for (int j = 0; j < LH; j++) {
                    int row = k * LH + j;
                    double s = (double)m->b[row] + m->b[4 * LH + row];
                    for (int i = 0; i < LI; i++) s += (double)m->x[(t * LB + b) * LI + i] * m->w[row * LI + i];
                    for (int i = 0; i < LH; i++) s += h[b][i] * m->r[row * LH + i];
                    a[k][j] = s;
                }
            for (int j = 0; j < LH; j++) {
                c[b][j] = sigmoid(a[2][j]) * c[b][j] + sigmoid(a[0][j]) * tanh(a[3][j]);
                h[b][j] = sigmoid(a[1][j]) * tanh(c[b][j]);
                ys[(t * LB + b) * LH + j] = h[b][j];
            }
        }
}

/* The GRU on the LSTM's x (gates z, r, h: W [1, 3H, I], R [1, 3H, H], B [1, 6H]),
 * linear_before_reset as given. */
typedef struct gru {
    const lstm *x;
    int lbr;
} gru;

static void gru_write(onnx_writer *w, const void *model) {
    const gru *m = model;
    ow_init(w);
    ow_input(w, "x", ELEM_FLOAT, 3, (int64_t[]){LT, LB, LI});
    ow_init_f32(w, "W", 3, (int64_t[]){1, 3 * LH, LI}, m->x->w);
    ow_init_f32(w, "R", 3, (int64_t[]){1, 3 * LH, LH}, m->x->r);
    ow_init_f32(w, "B", 2, (int64_t[]){1, 6 * LH}, m->x->b);
    ow_init_i64(w, "axis1", 1, (int64_t[]){1}, (int64_t[]){1});
    ow_node(w, "GRU", "/gru/GRU", "x,W,R,B", "Y,Y_h", 2, ow_int(w, "hidden_size", LH),
            ow_int(w, "linear_before_reset", m->lbr));
    ow_node(w, "Squeeze", "/gru/Squeeze", "Y,axis1", "ys", 0);
    ow_output(w, "ys");
    ow_output(w, "Y_h");
}

/* ONNX's GRU equations, step by step. ys [T, B, H]. */
static void gru_reference(const gru *g, double *ys) {
    const lstm *m = g->x;
    double h[LB][LH] = {{0}};
    for (int t = 0; t < LT; t++)
        for (int b = 0; b < LB; b++) {
            double xa[3][LH], ha[3][LH], hn[LH];
            for (int k = 0; k < 3; k++)
                for (int j = 0; j < LH; j++) {
                    int row = k * LH + j;
                    double sx = m->b[row], sh = m->b[3 * LH + row];
                    for (int i = 0; i < LI; i++) sx += (double)m->x[(t * LB + b) * LI + i] * m->w[row * LI + i];
                    for (int i = 0; i < LH; i++) sh += h[b][i] * m->r[row * LH + i];
                    xa[k][j] = sx, ha[k][j] = sh;
                }
            for (int j = 0; j < LH; j++) {
                double r = sigmoid(xa[1][j] + ha[1][j]), rh = 0;
                if (!g->lbr) { /* (r ⊙ h) R_h + Rb_h */
                    rh = m->b[5 * LH + j];
                    for (int i = 0; i < LH; i++) rh += sigmoid(xa[1][i] + ha[1][i]) * h[b][i] * m->r[(2 * LH + j) * LH + i];
                }
                hn[j] = tanh(xa[2][j] + (g->lbr ? r * ha[2][j] : rh));
            }
            for (int j = 0; j < LH; j++) {
                double z = sigmoid(xa[0][j] + ha[0][j]);
                h[b][j] = (1 - z) * hn[j] + z * h[b][j];
                ys[(t * LB + b) * LH + j] = h[b][j];
            }
        }
}

/* Imports the cell `write` makes of `model` and checks its three parameters and
 * its outputs on x against want (ys [T, B, H]; Y_h its last step); with `op`,
 * that the program runs the cell as that one op. */
static void check_cell(void (*write)(onnx_writer *, const void *), const void *model, const float *x,
                       const double *want, const char *op, const char *what) {
    size_t size;
    uint8_t *bytes = onnx_packed(write, model, &size);
    fedc_onnx_model *im = onnx_import_bytes(bytes, size, 0, false);
    if (im) {
        CHECK_EQ_INT(im->num_params, 3);
        if (op) CHECK_EQ_INT(onnx_count_ops(im->program, op), 1);
        float got[LT * LB * LH];
        onnx_run(im, x, "ys", got, LT * LB * LH);
        onnx_check_close(got, want, LT * LB * LH, what);
        onnx_run(im, x, "Y_h", got, LB * LH);
        onnx_check_close(got, want + (LT - 1) * LB * LH, LB * LH, "Y_h");
    }
    fedc_onnx_model_destroy(im);
    free(bytes);
}

/* The LSTM's outputs equal ONNX's equations; its weights are the file's three
 * parameters as they are (the program reorders the gates). */
void test_onnx_lstm(void) {
    lstm m;
    lstm_init(&m);
    double want[LT * LB * LH];
    lstm_reference(&m, want);
    check_cell(lstm_write, &m, m.x, want, "lstm", "ys");
}

/* The GRU, unrolled at import, equals ONNX's equations with either
 * linear_before_reset (PyTorch writes 1); its weights are the file's three
 * parameters. */
void test_onnx_gru(void) {
    lstm x;
    lstm_init(&x);
    for (int lbr = 0; lbr < 2; lbr++) {
        gru g = {&x, lbr};
        double want[LT * LB * LH];
        gru_reference(&g, want);
        check_cell(gru_write, &g, x.x, want, NULL, lbr ? "ys (linear_before_reset)" : "ys");
    }
}
