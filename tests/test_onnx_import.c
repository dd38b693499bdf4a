/* fedc_program_from_onnx (src/formats/onnx_*.c) on ONNX models this test writes
 * itself through protobuf-c (tests/onnx_write.c): an MLP, with the shape
 * arithmetic PyTorch's exporter writes around a Reshape, a small CNN, with each
 * of the padding paths of convolution and pooling, an LSTM and a GRU
 * (tests/onnx_import_rnn.c), a transformer's ops. fedc's outputs on fixed
 * inputs must equal a reference computed here by plain loops in ONNX's own NCHW
 * terms; unsupported ops, wrong opsets and damaged files must be refused with
 * errors that say what and where (and, under ASan, without a crash or a leak).
 *
 * With FEDC_ONNX_WRITE_DIR set, it writes the models, inputs and fedc's outputs
 * there instead (tests/cli_onnx.sh imports them with the CLI; fuzz/corpus/onnx
 * was made so). */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "fedc/exec.h"
#include "fedc/formats.h"
#include "fedc/npy.h"
#include "onnx_import_case.h"

void onnx_fill(float *v, int n) {
    for (int i = 0; i < n; i++) v[i] = (float)fedc_test_uniform(-1, 1);
}

/* ------------------------------------------------------------- the MLP -- */

enum { MB = 3, MI = 4, MH = 8, MO = 3 };

typedef struct mlp {
    float x[MB * MI], w1[MH * MI], b1[MH], w2[MO * MH], b2[MO];
} mlp;

static void mlp_init(mlp *m) {
    fedc_test_seed(11);
    onnx_fill(m->x, MB * MI), onnx_fill(m->w1, MH * MI), onnx_fill(m->b1, MH), onnx_fill(m->w2, MO * MH), onnx_fill(m->b2, MO);
}

/* x [batch, 4] -> Linear(4, 8) -> ReLU -> reshape to Shape(h)[0] x -1 (the
 * exporter's Shape/Gather/Unsqueeze/Concat/Identity) -> Dropout -> Linear(8, 3)
 * -> Softmax. */
static void mlp_write(onnx_writer *w, const mlp *m) {
    ow_init(w);
    ow_input(w, "x", ELEM_FLOAT, 2, (int64_t[]){-1, MI});
    ow_init_f32(w, "fc1.weight", 2, (int64_t[]){MH, MI}, m->w1);
    ow_init_f32(w, "fc1.bias", 1, (int64_t[]){MH}, m->b1);
    ow_init_f32(w, "fc2.weight", 2, (int64_t[]){MO, MH}, m->w2);
    ow_init_f32(w, "fc2.bias", 1, (int64_t[]){MO}, m->b2);
    ow_init_i64(w, "axes0", 1, (int64_t[]){1}, (int64_t[]){0});
    ow_node(w, "Gemm", "/fc1/Gemm", "x,fc1.weight,fc1.bias", "h1", 1, ow_int(w, "transB", 1));
    ow_node(w, "Relu", "/Relu", "h1", "h2", 0);
    ow_node(w, "Shape", "/Shape", "h2", "s", 0);
    ow_node(w, "Constant", "/Constant", "", "zero", 1, ow_tensor_i64(w, "value", 0, NULL, (int64_t[]){0}));
    ow_node(w, "Gather", "/Gather", "s,zero", "b", 1, ow_int(w, "axis", 0));
    ow_node(w, "Unsqueeze", "/Unsqueeze", "b,axes0", "bu", 0);
    ow_node(w, "Constant", "/Constant_1", "", "minus1", 1, ow_tensor_i64(w, "value", 1, (int64_t[]){1}, (int64_t[]){-1}));
    ow_node(w, "Concat", "/Concat", "bu,minus1", "shape0", 1, ow_int(w, "axis", 0));
    ow_node(w, "Identity", "/Identity", "shape0", "shape", 0);
    ow_node(w, "Reshape", "/Reshape", "h2,shape", "h3", 0);
    ow_node(w, "Dropout", "/Dropout", "h3", "h4", 0);
    ow_node(w, "Gemm", "/fc2/Gemm", "h4,fc2.weight,fc2.bias", "logits", 1, ow_int(w, "transB", 1));
    ow_node(w, "Softmax", "/Softmax", "logits", "probs", 1, ow_int(w, "axis", -1));
    ow_output(w, "logits");
    ow_output(w, "probs");
}

static void mlp_reference(const mlp *m, double *logits, double *probs) {
    for (int b = 0; b < MB; b++) {
        double h[MH], max = -1e300, sum = 0;
        for (int j = 0; j < MH; j++) {
            double s = m->b1[j];
            for (int i = 0; i < MI; i++) s += (double)m->x[b * MI + i] * m->w1[j * MI + i];
            h[j] = s > 0 ? s : 0;
        }
        for (int o = 0; o < MO; o++) {
            double s = m->b2[o];
            for (int j = 0; j < MH; j++) s += h[j] * m->w2[o * MH + j];
            logits[b * MO + o] = s;
            max = s > max ? s : max;
        }
        for (int o = 0; o < MO; o++) sum += exp(logits[b * MO + o] - max);
        for (int o = 0; o < MO; o++) probs[b * MO + o] = exp(logits[b * MO + o] - max) / sum;
    }
}

/* ------------------------------------------------------------- the CNN -- */

enum { CN = 2, CC = 2, CS = 8, C1 = 4, C2 = 3, CK = 5 };

typedef struct cnn {
    float x[CN * CC * CS * CS], w1[C1 * CC * 9], b1[C1], w2[C2 * C1 * 4];
    float gamma[C2], beta[C2], mean[C2], var[C2], wf[CK * C2], bf[CK];
} cnn;

static void cnn_init(cnn *m) {
    fedc_test_seed(23);
    onnx_fill(m->x, CN * CC * CS * CS), onnx_fill(m->w1, C1 * CC * 9), onnx_fill(m->b1, C1), onnx_fill(m->w2, C2 * C1 * 4);
    onnx_fill(m->gamma, C2), onnx_fill(m->beta, C2), onnx_fill(m->mean, C2), onnx_fill(m->wf, CK * C2), onnx_fill(m->bf, CK);
    for (int c = 0; c < C2; c++) m->var[c] = (float)fedc_test_uniform(0.5, 2);
}

/* x [2, 2, 8, 8] -> Conv 3x3 pad 1 (fedc's SAME) -> ReLU -> MaxPool 3x3 stride 2
 * pad 1 (neither VALID nor SAME) -> Conv 2x2 stride 2 -> BatchNorm -> AveragePool
 * 2x2 pads top/left (not counted) -> Tanh -> GlobalAveragePool -> Flatten -> Gemm. */
static void cnn_write(onnx_writer *w, const cnn *m) {
    ow_init(w);
    ow_input(w, "x", ELEM_FLOAT, 4, (int64_t[]){CN, CC, CS, CS});
    ow_init_f32(w, "conv1.weight", 4, (int64_t[]){C1, CC, 3, 3}, m->w1);
    ow_init_f32(w, "conv1.bias", 1, (int64_t[]){C1}, m->b1);
    ow_init_f32(w, "conv2.weight", 4, (int64_t[]){C2, C1, 2, 2}, m->w2);
    ow_init_f32(w, "bn.weight", 1, (int64_t[]){C2}, m->gamma);
    ow_init_f32(w, "bn.bias", 1, (int64_t[]){C2}, m->beta);
    ow_init_f32(w, "bn.running_mean", 1, (int64_t[]){C2}, m->mean);
    ow_init_f32(w, "bn.running_var", 1, (int64_t[]){C2}, m->var);
    ow_init_f32(w, "fc.weight", 2, (int64_t[]){CK, C2}, m->wf);
    ow_init_f32(w, "fc.bias", 1, (int64_t[]){CK}, m->bf);
    ow_node(w, "Conv", "/conv1/Conv", "x,conv1.weight,conv1.bias", "c1", 2, ow_ints(w, "pads", 4, (int64_t[]){1, 1, 1, 1}),
            ow_ints(w, "kernel_shape", 2, (int64_t[]){3, 3}));
    ow_node(w, "Relu", "/Relu", "c1", "r1", 0);
    ow_node(w, "MaxPool", "/MaxPool", "r1", "p1", 3, ow_ints(w, "kernel_shape", 2, (int64_t[]){3, 3}),
            ow_ints(w, "strides", 2, (int64_t[]){2, 2}), ow_ints(w, "pads", 4, (int64_t[]){1, 1, 1, 1}));
    ow_node(w, "Conv", "/conv2/Conv", "p1,conv2.weight", "c2", 1, ow_ints(w, "strides", 2, (int64_t[]){2, 2}));
    ow_node(w, "BatchNormalization", "/bn/BatchNormalization", "c2,bn.weight,bn.bias,bn.running_mean,bn.running_var",
            "n2", 1, ow_float(w, "epsilon", 1e-5f));
    ow_node(w, "AveragePool", "/AveragePool", "n2", "a2", 2, ow_ints(w, "kernel_shape", 2, (int64_t[]){2, 2}),
            ow_ints(w, "pads", 4, (int64_t[]){1, 1, 0, 0}));
    ow_node(w, "Tanh", "/Tanh", "a2", "t2", 0);
    ow_node(w, "GlobalAveragePool", "/GlobalAveragePool", "t2", "g", 0);
    ow_node(w, "Flatten", "/Flatten", "g", "f", 0);
    ow_node(w, "Gemm", "/fc/Gemm", "f,fc.weight,fc.bias", "logits", 1, ow_int(w, "transB", 1));
    ow_output(w, "logits");
}

/* NCHW windows in ONNX's terms: pads [top, left, bottom, right]; kind 'c'
 * convolution (w [o, c, k, k], bias b or NULL), 'm' max, 'a' average over the
 * positions inside the image. y is [n, o or c, oh, ow]; returns oh (= ow). */
static int window_ref(char kind, const double *x, int n, int c, int s, const float *w, const float *b, int o, int k,
                      int stride, const int pads[4], double *y) {
    int out = (s + pads[0] + pads[2] - k) / stride + 1, oc = kind == 'c' ? o : c;
    for (int i = 0; i < n; i++)
        for (int f = 0; f < oc; f++)
            for (int r = 0; r < out; r++)
                for (int q = 0; q < out; q++) {
                    double acc = kind == 'c' && b ? b[f] : kind == 'm' ? -1e300 : 0;
                    int inside = 0;
                    for (int ch = 0; ch < (kind == 'c' ? c : 1); ch++)
                        for (int u = 0; u < k; u++)
                            for (int v = 0; v < k; v++) {
                                int hh = r * stride + u - pads[0], ww = q * stride + v - pads[1];
                                if (hh < 0 || hh >= s || ww < 0 || ww >= s) continue;
                                double xv = x[((i * c + (kind == 'c' ? ch : f)) * s + hh) * s + ww];
                                inside++;
                                if (kind == 'c') acc += xv * w[((f * c + ch) * k + u) * k + v];
                                else if (kind == 'm') acc = xv > acc ? xv : acc;
                                else acc += xv;
                            }
                    y[((i * oc + f) * out + r) * out + q] = kind == 'a' ? acc / inside : acc;
                }
    return out;
}

static void cnn_reference(const cnn *m, double *logits) {
    static double x[CN * CC * CS * CS], a[CN * C1 * CS * CS], b[CN * C1 * 4 * 4], c[CN * C2 * 2 * 2], d[CN * C2 * 2 * 2];
    for (int i = 0; i < CN * CC * CS * CS; i++) x[i] = m->x[i];
    int s = window_ref('c', x, CN, CC, CS, m->w1, m->b1, C1, 3, 1, (int[]){1, 1, 1, 1}, a);
    for (int i = 0; i < CN * C1 * s * s; i++) a[i] = a[i] > 0 ? a[i] : 0;
    s = window_ref('m', a, CN, C1, s, NULL, NULL, 0, 3, 2, (int[]){1, 1, 1, 1}, b);
    s = window_ref('c', b, CN, C1, s, m->w2, NULL, C2, 2, 2, (int[]){0, 0, 0, 0}, c);
    for (int i = 0; i < CN * C2 * s * s; i++) {
        int ch = i / (s * s) % C2;
        c[i] = (c[i] - m->mean[ch]) / sqrt((double)m->var[ch] + 1e-5f) * m->gamma[ch] + m->beta[ch];
    }
    s = window_ref('a', c, CN, C2, s, NULL, NULL, 0, 2, 1, (int[]){1, 1, 0, 0}, d);
    for (int i = 0; i < CN; i++)
        for (int o = 0; o < CK; o++) {
            double acc = m->bf[o];
            for (int ch = 0; ch < C2; ch++) {
                double g = 0;
                for (int k = 0; k < s * s; k++) g += tanh(d[(i * C2 + ch) * s * s + k]);
                acc += g / (s * s) * m->wf[o * C2 + ch];
            }
            logits[i * CK + o] = acc;
        }
}

/* ------------------------------------------------- a transformer's ops -- */

enum { BB = 2, BT = 3, BD = 4 };

typedef struct block {
    float x[BB * BT * BD], wq[BD * BD], bq[BD], gamma[BD], beta[BD];
} block;

static void block_init(block *m) {
    fedc_test_seed(41);
    onnx_fill(m->x, BB * BT * BD), onnx_fill(m->wq, BD * BD), onnx_fill(m->bq, BD), onnx_fill(m->gamma, BD), onnx_fill(m->beta, BD);
}

static void scalar_const(onnx_writer *w, const char *name, float v) {
    ow_init_f32(w, name, 0, NULL, &v); /* a float initializer: a parameter, materialised as an input */
}

/* x [2, 3, 4] -> MatMul + bias -> LayerNormalization -> exact GELU as PyTorch
 * exports it (Div, Erf, Add, Mul, Mul) -> RMS normalisation (Pow, ReduceMean,
 * Add, Sqrt, Div) -> minus the pre-norm value (Sub) -> Transpose [0, 2, 1] ->
 * Slice 1:3 of the last axis -> Gather rows {1, 0, 3} of axis 1 -> Softmax
 * over axis 1. */
static void block_write(onnx_writer *w, const void *model) {
    const block *m = model;
    ow_init(w);
    ow_input(w, "x", ELEM_FLOAT, 3, (int64_t[]){BB, BT, BD});
    ow_init_f32(w, "q.weight", 2, (int64_t[]){BD, BD}, m->wq);
    ow_init_f32(w, "q.bias", 1, (int64_t[]){BD}, m->bq);
    ow_init_f32(w, "ln.weight", 1, (int64_t[]){BD}, m->gamma);
    ow_init_f32(w, "ln.bias", 1, (int64_t[]){BD}, m->beta);
    scalar_const(w, "sqrt2", 1.41421356f), scalar_const(w, "one", 1), scalar_const(w, "half", 0.5f);
    scalar_const(w, "eps", 1e-6f);
    ow_init_i64(w, "two", 0, NULL, (int64_t[]){2});
    ow_init_i64(w, "starts", 1, (int64_t[]){1}, (int64_t[]){1});
    ow_init_i64(w, "ends", 1, (int64_t[]){1}, (int64_t[]){3});
    ow_init_i64(w, "axes", 1, (int64_t[]){1}, (int64_t[]){2});
    ow_init_i64(w, "rows", 1, (int64_t[]){3}, (int64_t[]){1, 0, -1});
    ow_node(w, "MatMul", "mm", "x,q.weight", "m", 0);
    ow_node(w, "Add", "bias", "m,q.bias", "a", 0);
    ow_node(w, "LayerNormalization", "ln", "a,ln.weight,ln.bias", "l", 2, ow_int(w, "axis", -1), ow_float(w, "epsilon", 1e-5f));
    ow_node(w, "Div", "gelu_div", "l,sqrt2", "d", 0);
    ow_node(w, "Erf", "gelu_erf", "d", "e", 0);
    ow_node(w, "Add", "gelu_add", "e,one", "e1", 0);
    ow_node(w, "Mul", "gelu_mul", "l,e1", "g0", 0);
    ow_node(w, "Mul", "gelu_half", "g0,half", "g", 0);
    ow_node(w, "Pow", "rms_pow", "g,two", "sq", 0);
    ow_node(w, "ReduceMean", "rms_mean", "sq", "ms", 2, ow_ints(w, "axes", 1, (int64_t[]){2}), ow_int(w, "keepdims", 1));
    ow_node(w, "Add", "rms_eps", "ms,eps", "mse", 0);
    ow_node(w, "Sqrt", "rms_sqrt", "mse", "rms", 0);
    ow_node(w, "Div", "rms_div", "g,rms", "gn", 0);
    ow_node(w, "Sub", "residual", "gn,a", "sd", 0);
    ow_node(w, "Transpose", "tr", "sd", "st", 1, ow_ints(w, "perm", 3, (int64_t[]){0, 2, 1}));
    ow_node(w, "Slice", "sl", "st,starts,ends,axes", "sl", 0);
    ow_node(w, "Gather", "ga", "sl,rows", "ga", 1, ow_int(w, "axis", 1));
    ow_node(w, "Softmax", "sm", "ga", "out", 1, ow_int(w, "axis", 1));
    ow_output(w, "out");
}

/* out [2, 3, 2] by the definitions, with C's erf. */
static void block_reference(const block *m, double *out) {
    static const int rows[3] = {1, 0, 3};
    for (int b = 0; b < BB; b++) {
        double sd[BT][BD];
        for (int t = 0; t < BT; t++) {
            double a[BD], l[BD], g[BD], mean = 0, var = 0, ms = 0;
            for (int j = 0; j < BD; j++) {
                a[j] = m->bq[j];
                for (int i = 0; i < BD; i++) a[j] += (double)m->x[(b * BT + t) * BD + i] * m->wq[i * BD + j];
                mean += a[j] / BD;
            }
            for (int j = 0; j < BD; j++) var += (a[j] - mean) * (a[j] - mean) / BD;
            for (int j = 0; j < BD; j++) {
                l[j] = (a[j] - mean) / sqrt(var + 1e-5f) * m->gamma[j] + m->beta[j];
                g[j] = l[j] * 0.5 * (1 + erf(l[j] / 1.41421356f));
                ms += g[j] * g[j] / BD;
            }
            for (int j = 0; j < BD; j++) sd[t][j] = g[j] / sqrt(ms + 1e-6f) - a[j];
        }
        /* st[b][j][t] = sd[t][j]; sl keeps t in 1..2; ga[b][r][k] = st[b][rows[r]][1 + k] */
        for (int k = 0; k < 2; k++) {
            double sum = 0;
            for (int r = 0; r < 3; r++) sum += exp(sd[1 + k][rows[r]]);
            for (int r = 0; r < 3; r++) out[(b * 3 + r) * 2 + k] = exp(sd[1 + k][rows[r]]) / sum;
        }
    }
}

/* ------------------------------------------------------------ running -- */
/* onnx_import_case.h's shared helpers. */

fedc_onnx_model *onnx_import_bytes(const uint8_t *bytes, size_t size, int64_t batch, bool frozen) {
    fedc_onnx_model *m = NULL;
    fedc_onnx_options o = {.batch = batch, .frozen = frozen};
    CHECK_OK(fedc_program_from_onnx_bytes(bytes, size, "test.onnx", &o, &m));
    return m;
}

void onnx_run(const fedc_onnx_model *m, const float *x, const char *name, float *out, int n) {
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, m->program, NULL));
    if (!ex) return;
    CHECK_OK(fedc_executor_bind(ex, "x", x));
    char input[256];
    for (int i = 0; i < m->num_params; i++) {
        snprintf(input, sizeof input, "params/%s", m->param_values[i].name);
        CHECK_OK(fedc_executor_bind(ex, input, m->param_values[i].data));
    }
    CHECK_OK(fedc_executor_run(ex));
    const void *data = NULL;
    fedc_type t;
    CHECK_OK(fedc_executor_output(ex, name, &data, &t));
    if (data) {
        CHECK_EQ_INT(fedc_type_count(&t), n);
        memcpy(out, data, (size_t)n * sizeof *out);
    }
    fedc_executor_destroy(ex);
}

void onnx_check_close(const float *got, const double *want, int n, const char *what) {
    for (int i = 0; i < n; i++)
        CHECK_MSG(fabs(got[i] - want[i]) <= 2e-5 * (fabs(want[i]) > 1 ? fabs(want[i]) : 1), "%s[%d]: fedc %.9g, reference %.9g",
                  what, i, got[i], want[i]);
}

uint8_t *onnx_packed(void (*write)(onnx_writer *, const void *), const void *model, size_t *size) {
    onnx_writer w;
    write(&w, model);
    uint8_t *bytes = ow_pack(&w, 17, size);
    ow_free(&w);
    return bytes;
}

static void mlp_writer(onnx_writer *w, const void *m) { mlp_write(w, m); }
static void cnn_writer(onnx_writer *w, const void *m) { cnn_write(w, m); }

static uint8_t *mlp_bytes(mlp *m, size_t *size) {
    mlp_init(m);
    return onnx_packed(mlp_writer, m, size);
}

static uint8_t *cnn_bytes(cnn *m, size_t *size) {
    cnn_init(m);
    return onnx_packed(cnn_writer, m, size);
}

/* The MLP's logits and probabilities equal the loops'; its float initializers are
 * the parameters, by name, and the int64 axes are not; the shape arithmetic
 * became constants (no shape op is left in the program). */
static void test_mlp(void) {
    mlp m;
    size_t size;
    uint8_t *bytes = mlp_bytes(&m, &size);
    double logits[MB * MO], probs[MB * MO];
    mlp_reference(&m, logits, probs);
    for (int frozen = 0; frozen < 2; frozen++) {
        fedc_onnx_model *im = onnx_import_bytes(bytes, size, MB, frozen);
        if (!im) continue;
        CHECK_EQ_INT(im->opset, 17);
        CHECK_EQ_INT(im->num_params, frozen ? 0 : 4);
        CHECK_EQ_INT(fedc_tree_size(im->params), frozen ? 0 : 4);
        if (!frozen) {
            CHECK(!strcmp(im->param_values[0].name, "fc1.weight") && !strcmp(im->param_values[3].name, "fc2.bias"));
            CHECK(fedc_tree_has(im->params, "fc2.weight"));
            CHECK_EQ_INT(im->param_values[0].type.dims[0], MH);
            CHECK_EQ_INT(im->param_values[0].type.dims[1], MI);
        }
        CHECK_EQ_INT(fedc_program_num_inputs(im->program), frozen ? 1 : 5);
        CHECK_EQ_INT(fedc_value_type(im->program, fedc_program_find_input(im->program, "x")).dims[0], MB);
        float got[MB * MO];
        onnx_run(im, m.x, "logits", got, MB * MO);
        onnx_check_close(got, logits, MB * MO, "logits");
        onnx_run(im, m.x, "probs", got, MB * MO);
        onnx_check_close(got, probs, MB * MO, "probs");
        fedc_onnx_model_destroy(im);
    }
    free(bytes);
}

int onnx_count_ops(const fedc_program *p, const char *op) {
    int n = 0;
    for (int i = 0; i < fedc_program_size(p); i++) n += !strcmp(fedc_value_op_name(p, i), op);
    return n;
}

/* The CNN's logits equal the NCHW loops'; the image is transposed to NHWC once
 * and back once (for Flatten), the two filters once each: no transposes between
 * the layers. */
static void test_cnn(void) {
    cnn m;
    size_t size;
    uint8_t *bytes = cnn_bytes(&m, &size);
    double want[CN * CK];
    cnn_reference(&m, want);
    fedc_onnx_model *im = onnx_import_bytes(bytes, size, 0, false);
    if (im) {
        CHECK_EQ_INT(im->num_params, 9);
        CHECK_EQ_INT(onnx_count_ops(im->program, "transpose"), 4);
        CHECK_EQ_INT(onnx_count_ops(im->program, "conv2d"), 2);
        float got[CN * CK];
        onnx_run(im, m.x, "logits", got, CN * CK);
        onnx_check_close(got, want, CN * CK, "logits");
    }
    fedc_onnx_model_destroy(im);
    free(bytes);
}

/* MatMul, LayerNormalization, the exact GELU through Erf, Pow, ReduceMean, Sqrt,
 * Sub, Transpose, Slice, Gather on an inner axis with a negative index, Softmax
 * over an inner axis: fedc's outputs equal the definitions' (Erf's
 * approximation within the tolerance). */
static void test_block(void) {
    block m;
    size_t size;
    block_init(&m);
    uint8_t *bytes = onnx_packed(block_write, &m, &size);
    double want[BB * 3 * 2];
    block_reference(&m, want);
    fedc_onnx_model *im = onnx_import_bytes(bytes, size, 0, false);
    if (im) {
        CHECK_EQ_INT(im->num_params, 8);
        float got[BB * 3 * 2];
        onnx_run(im, m.x, "out", got, BB * 3 * 2);
        onnx_check_close(got, want, BB * 3 * 2, "out");
    }
    fedc_onnx_model_destroy(im);
    free(bytes);
}

/* Expand of a program value (broadcast both ways) and of a constant, and Mod in
 * both of its modes (fmod 0: the divisor's sign, as Python's %; 1: C's fmod), as
 * the exporters write them: the outputs equal the definitions'. */
static void test_expand_mod(void) {
    onnx_writer w;
    ow_init(&w);
    ow_input(&w, "x", ELEM_FLOAT, 3, (int64_t[]){2, 1, 3});
    ow_init_i64(&w, "shape", 1, (int64_t[]){2}, (int64_t[]){4, 3}); /* two-way: [2,1,3] with [4,3] */
    ow_init_i64(&w, "two", 1, (int64_t[]){1}, (int64_t[]){2});
    ow_node(&w, "Constant", "a", "", "a", 1, ow_tensor_i64(&w, "value", 1, (int64_t[]){2}, (int64_t[]){7, -7}));
    ow_node(&w, "Constant", "b", "", "b", 1, ow_tensor_i64(&w, "value", 1, (int64_t[]){1}, (int64_t[]){-3}));
    ow_node(&w, "Expand", "expand", "x,shape", "y", 0);
    ow_node(&w, "Expand", "expand_const", "b,two", "e", 0);
    ow_node(&w, "Mod", "mod", "a,b", "m", 0);
    ow_node(&w, "Mod", "fmod", "a,b", "f", 1, ow_int(&w, "fmod", 1));
    ow_output(&w, "y"), ow_output(&w, "e"), ow_output(&w, "m"), ow_output(&w, "f");
    size_t size;
    uint8_t *bytes = ow_pack(&w, 17, &size);
    ow_free(&w);
    fedc_onnx_model *m = onnx_import_bytes(bytes, size, 0, false);
    float x[6] = {1, 2, 3, 4, 5, 6};
    fedc_executor *ex = NULL;
    if (m) CHECK_OK(fedc_executor_create(&ex, m->program, NULL));
    if (ex) {
        CHECK_OK(fedc_executor_bind(ex, "x", x));
        CHECK_OK(fedc_executor_run(ex));
        const void *data = NULL;
        fedc_type t;
        CHECK_OK(fedc_executor_output(ex, "y", &data, &t));
        CHECK(t.rank == 3 && t.dims[0] == 2 && t.dims[1] == 4 && t.dims[2] == 3);
        for (int i = 0; data && i < 24; i++) CHECK_NEAR(((const float *)data)[i], x[(i / 12) * 3 + i % 3], 0);
        static const char *names[3] = {"e", "m", "f"};
        static const int32_t want[3][2] = {{-3, -3}, {-2, -1}, {1, -1}};
        for (int k = 0; k < 3; k++) {
            CHECK_OK(fedc_executor_output(ex, names[k], &data, &t));
            CHECK(t.dtype == FEDC_I32 && fedc_type_count(&t) == 2);
            for (int i = 0; data && i < 2; i++) CHECK_EQ_INT(((const int32_t *)data)[i], want[k][i]);
        }
    }
    fedc_executor_destroy(ex);
    fedc_onnx_model_destroy(m);
    free(bytes);
}

/* -------------------------------------------------------------- refusals -- */

static fedc_status import_status(onnx_writer *w, int64_t opset) {
    size_t size;
    uint8_t *bytes = ow_pack(w, opset, &size);
    fedc_onnx_model *m = NULL;
    fedc_status st = fedc_program_from_onnx_bytes(bytes, size, "bad.onnx", NULL, &m);
    CHECK(st != FEDC_OK || m != NULL);
    fedc_onnx_model_destroy(m);
    free(bytes);
    ow_free(w);
    return st;
}

static void one_node(onnx_writer *w, const char *op, const char *name) {
    ow_init(w);
    ow_input(w, "x", ELEM_FLOAT, 2, (int64_t[]){2, 3});
    ow_node(w, op, name, "x", "y", 0);
    ow_output(w, "y");
}

static void test_refusals(void) {
    onnx_writer w;
    one_node(&w, "Hardmax", "odd_one");
    CHECK_ERR(import_status(&w, 17), FEDC_EUNSUPPORTED, "node 'odd_one' (Hardmax, opset 17): fedc does not import the op Hardmax");
    one_node(&w, "Relu", "r");
    CHECK_ERR(import_status(&w, 11), FEDC_EUNSUPPORTED, "opset 11 of the default domain");
    one_node(&w, "Relu", "r");
    CHECK_OK(import_status(&w, 18));
    ow_init(&w);
    ow_input(&w, "x", ELEM_FLOAT, 4, (int64_t[]){1, 4, 5, 5});
    ow_init_f32(&w, "w", 4, (int64_t[]){4, 2, 3, 3}, (float[72]){0});
    ow_node(&w, "Conv", "grouped", "x,w", "y", 1, ow_int(&w, "group", 2));
    ow_output(&w, "y");
    CHECK_ERR(import_status(&w, 17), FEDC_EUNSUPPORTED, "node 'grouped' (Conv, opset 17): group 2");
    one_node(&w, "Add", "adder"); /* Add's second input is missing */
    CHECK_ERR(import_status(&w, 17), FEDC_EINVAL, "node 'adder' (Add, opset 17): input 1 is missing");
    ow_init(&w);
    ow_input(&w, "x", ELEM_FLOAT, 2, (int64_t[]){2, 3});
    ow_node(&w, "Relu", "r", "nowhere", "y", 0);
    ow_output(&w, "y");
    CHECK_ERR(import_status(&w, 17), FEDC_EINVAL, "input 'nowhere' is not defined before the node");
    ow_init(&w);
    ow_input(&w, "x", ELEM_FLOAT, 2, (int64_t[]){2, 3});
    ow_init_f32(&w, "shape", 1, (int64_t[]){1}, (float[]){6});
    ow_node(&w, "Reshape", "reshape_by_float", "x,shape", "y", 0);
    ow_output(&w, "y");
    CHECK_ERR(import_status(&w, 17), FEDC_EINVAL, "its shape ('shape') is a float tensor");
    ow_init(&w);
    ow_input(&w, "x", ELEM_FLOAT, 2, (int64_t[]){2, 3});
    ow_input(&w, "shape", ELEM_INT64, 1, (int64_t[]){1});
    ow_node(&w, "Reshape", "reshape_by_input", "x,shape", "y", 0); /* a graph input is not known at import */
    ow_output(&w, "y");
    CHECK_ERR(import_status(&w, 17), FEDC_EUNSUPPORTED, "its shape ('shape') must be known at import");
    ow_init(&w);
    ow_input(&w, "x", ELEM_FLOAT, 2, (int64_t[]){2, 3});
    ow_node(&w, "Relu", "r", "x", "y", 0);
    ow_output(&w, "z");
    CHECK_ERR(import_status(&w, 17), FEDC_EINVAL, "graph output 'z' is computed by no node");
}

/* Bytes that are no model, every truncation of a real one and seeded damage to
 * it: each an error naming the file (or, rarely, a model that still imports),
 * never a crash. */
static void test_damaged(void) {
    fedc_onnx_model *m = NULL;
    CHECK_ERR(fedc_program_from_onnx_bytes("not a model at all", 18, "junk.onnx", NULL, &m), FEDC_EPARSE, "junk.onnx");
    CHECK_ERR(fedc_program_from_onnx(fedc_test_tmp("absent.onnx"), NULL, &m), FEDC_EIO, "absent.onnx");
    CHECK_ERR(fedc_program_from_onnx_bytes("", 0, "empty.onnx", NULL, &m), FEDC_EPARSE, "the model has no graph");
    cnn c;
    size_t size;
    uint8_t *bytes = cnn_bytes(&c, &size), *copy = malloc(size);
    int failed = 0;
    for (size_t n = 0; n < size; n++) {
        fedc_status st = fedc_program_from_onnx_bytes(bytes, n, "cut.onnx", NULL, &m);
        if (st) {
            failed++;
            CHECK_MSG(strstr(fedc_errmsg(), "cut.onnx") != NULL, "error without the file's name: %s", fedc_errmsg());
        }
        fedc_onnx_model_destroy(m), m = NULL;
    }
    CHECK_MSG(failed > (int)size * 9 / 10, "%d of %zu truncations failed", failed, size);
    fedc_test_seed(5);
    for (int k = 0; k < 300 && copy; k++) {
        memcpy(copy, bytes, size);
        for (int f = 0; f < 1 + k % 4; f++) copy[(size_t)fedc_test_uniform(0, (double)size)] ^= (uint8_t)(1 + fedc_test_uniform(0, 255));
        if (fedc_program_from_onnx_bytes(copy, size, "flipped.onnx", NULL, &m))
            CHECK_MSG(strstr(fedc_errmsg(), "flipped.onnx") != NULL, "error without the file's name: %s", fedc_errmsg());
        fedc_onnx_model_destroy(m), m = NULL;
    }
    free(copy);
    free(bytes);
}

/* Messages nested deeper than any model (graph -> node -> attribute -> graph ...):
 * refused before protobuf-c's recursive decoder runs. */
static void test_deep_nesting(void) {
    enum { LEVELS = 3000 };
    size_t cap = 16 * LEVELS, len = 0;
    uint8_t *buf = malloc(cap), *tmp = malloc(cap);
    /* inside out: GraphProto.node (1) -> NodeProto.attribute (5) -> AttributeProto.g (6) -> GraphProto */
    static const uint8_t fields[3] = {1 << 3 | 2, 5 << 3 | 2, 6 << 3 | 2};
    for (int i = 0; buf && tmp && i < LEVELS; i++) {
        size_t n = 0, l = len;
        tmp[n++] = fields[(LEVELS - 1 - i) % 3]; /* the outermost is a GraphProto's node */
        do { tmp[n++] = (uint8_t)(l & 0x7f) | (l > 0x7f ? 0x80 : 0); l >>= 7; } while (l);
        memcpy(tmp + n, buf, len);
        len += n;
        memcpy(buf, tmp, len);
    }
    if (buf && tmp) { /* ModelProto.graph (7) around it all */
        size_t n = 0, l = len;
        tmp[n++] = 7 << 3 | 2;
        do { tmp[n++] = (uint8_t)(l & 0x7f) | (l > 0x7f ? 0x80 : 0); l >>= 7; } while (l);
        memcpy(tmp + n, buf, len);
        fedc_onnx_model *m = NULL;
        CHECK_ERR(fedc_program_from_onnx_bytes(tmp, len + n, "deep.onnx", NULL, &m), FEDC_EPARSE, "nested more than");
    }
    free(buf), free(tmp);
}

/* ------------------------------------------- files for the CLI and fuzzing -- */

static void write_bytes(const char *dir, const char *name, const uint8_t *bytes, size_t size) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (f) fwrite(bytes, 1, size, f), fclose(f);
}

/* model.onnx, its input x.npy and fedc's output (frozen import) as NAME.npy. */
static int write_case(const char *dir, const char *stem, const uint8_t *bytes, size_t size, const float *x,
                      const char *output) {
    char path[1024];
    snprintf(path, sizeof path, "%s.onnx", stem);
    write_bytes(dir, path, bytes, size);
    fedc_onnx_model *m = onnx_import_bytes(bytes, size, MB, true);
    if (!m) return 1;
    fedc_type xt = fedc_value_type(m->program, fedc_program_find_input(m->program, "x"));
    fedc_type yt = fedc_value_type(m->program, fedc_program_find_output(m->program, output));
    float *y = malloc(fedc_type_bytes(&yt));
    onnx_run(m, x, output, y, (int)fedc_type_count(&yt));
    snprintf(path, sizeof path, "%s/%s_x.npy", dir, stem);
    fedc_status st = fedc_npy_write(path, &xt, x);
    snprintf(path, sizeof path, "%s/%s_%s.npy", dir, stem, output);
    if (!st) st = fedc_npy_write(path, &yt, y);
    free(y);
    fedc_onnx_model_destroy(m);
    return st || fedc_test_failures();
}

static int write_files(const char *dir) {
    mlp m;
    cnn c;
    size_t size;
    uint8_t *bytes = mlp_bytes(&m, &size);
    int rc = write_case(dir, "mlp", bytes, size, m.x, "probs");
    free(bytes);
    bytes = cnn_bytes(&c, &size);
    rc |= write_case(dir, "cnn", bytes, size, c.x, "logits");
    free(bytes);
    onnx_writer w;
    one_node(&w, "Hardmax", "odd_one");
    bytes = ow_pack(&w, 17, &size);
    write_bytes(dir, "hardmax.onnx", bytes, size);
    free(bytes);
    ow_free(&w);
    return rc;
}

int main(int argc, char **argv) {
    const char *dir = getenv("FEDC_ONNX_WRITE_DIR");
    if (dir && *dir) return write_files(dir);
    static const fedc_test tests[] = {
        {"mlp", test_mlp}, {"cnn", test_cnn}, {"lstm", test_onnx_lstm}, {"gru", test_onnx_gru}, {"block", test_block},
        {"expand_mod", test_expand_mod},
        {"refusals", test_refusals}, {"damaged", test_damaged},
        {"deep_nesting", test_deep_nesting},
    };
    fedc_test_tmpdir("onnx_import");
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
