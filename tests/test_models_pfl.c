/*
 * Tests of pfl_cnn (src/nn/models.c), pfl-research's CIFAR-10 simple_cnn: its
 * parameter count (1,626,442) and layout; PyTorch's initialisers under
 * xavier_uniform_ (the bounds, the spread, the documented stream); and a
 * known-answer check on 8 x 8 x 3 images: the logits and loss against the network
 * computed here in double with plain loops, and every parameter tensor's gradient
 * from fedc_grad against central differences of that double computation.
 */
#include "harness.h"

#include <math.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "fedc/nn.h"

/* conv1 3*3*3*32+32, conv2 3*3*32*64+64, dense1 (14*14*64 = 12,544)*128+128, dense2 128*10+10. */
static void test_count_and_layout(void) {
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, "pfl_cnn", NULL));
    if (!m) return;
    CHECK_EQ_INT(fedc_model_size(m), 1626442);
    CHECK_EQ_INT(fedc_model_num_params(m), 8);
    CHECK_EQ_INT(fedc_model_num_classes(m), 10);
    static const int64_t want[8][4] = {{3, 3, 3, 32}, {32}, {3, 3, 32, 64}, {64}, {12544, 128}, {128}, {128, 10}, {10}};
    static const char *names[8] = {"conv1/w", "conv1/b", "conv2/w", "conv2/b", "dense1/w", "dense1/b", "dense2/w", "dense2/b"};
    for (int i = 0; i < 8; i++) {
        fedc_type t = fedc_model_param_type(m, i);
        CHECK_MSG(!strcmp(fedc_model_param_name(m, i), names[i]), "param %d is %s", i, fedc_model_param_name(m, i));
        for (int d = 0; d < t.rank; d++) CHECK_EQ_INT(t.dims[d], want[i][d]);
    }
    fedc_type x = fedc_model_input_type(m, 10);
    CHECK(x.rank == 4 && x.dims[0] == 10 && x.dims[1] == 32 && x.dims[2] == 32 && x.dims[3] == 3);
    fedc_model_destroy(m);
    CHECK_ERR(fedc_model_create(&m, "pfl_cnn", &(fedc_model_options){.input_height = 5}), FEDC_EINVAL,
              "model pfl_cnn: images of 5 x 32");
}

/* w: U(-a, a), a = sqrt(6 / (fan_in + fan_out)), so |w| <= a and variance a^2 / 3;
 * b: U(-1/sqrt(fan_in), 1/sqrt(fan_in)). Element j is (2u - 1) * bound, u the
 * uniform double j of the parameter's init stream (seed, UINT32_MAX, i, "init"). */
static void test_init(void) {
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, "pfl_cnn", NULL));
    float *w = m ? fedc_malloc((size_t)fedc_model_size(m) * sizeof *w) : NULL;
    float *again = m ? fedc_malloc((size_t)fedc_model_size(m) * sizeof *w) : NULL;
    if (!w || !again) goto done;
    CHECK_OK(fedc_model_init(m, 5, w));
    CHECK_OK(fedc_model_init(m, 5, again));
    CHECK(memcmp(w, again, (size_t)fedc_model_size(m) * sizeof *w) == 0);
    static const double fan_in[4] = {27, 288, 12544, 128}, fan_out[4] = {288, 576, 128, 10};
    for (int i = 0; i < 8; i++) {
        const float *v = w + fedc_model_param_offset(m, i);
        int64_t n = fedc_model_param_size(m, i);
        double bound = i % 2 ? 1 / sqrt(fan_in[i / 2]) : sqrt(6 / (fan_in[i / 2] + fan_out[i / 2]));
        double sq = 0, max = 0;
        for (int64_t j = 0; j < n; j++) sq += (double)v[j] * v[j], max = fmax(max, fabs(v[j]));
        CHECK_MSG(max <= bound && max > 0.8 * bound, "%s: max |w| %g, bound %g", fedc_model_param_name(m, i), max,
                  bound);
        if (n >= 10000)
            CHECK_MSG(fabs(sq / (double)n / (bound * bound / 3) - 1) < 0.02, "%s: variance %g, expected %g",
                      fedc_model_param_name(m, i), sq / (double)n, bound * bound / 3);
        fedc_rng_stream s = fedc_rng_stream_make(5, UINT32_MAX, (uint32_t)i, 0x696E6974u);
        for (uint64_t j = 0; j < 4; j++)
            CHECK_EQ_INT(v[j] == (float)((2 * fedc_rng_uniform_f64(s, j) - 1) * bound), 1);
    }
done:
    fedc_free(w), fedc_free(again);
    fedc_model_destroy(m);
}

/* ------------------------------------------------ the network by hand -- */

enum { B = 2, S = 8, C = 3, S1 = 6, O1 = 32, S2 = 4, O2 = 64, P = 2, FLAT = P * P * O2, H = 128, K = 10 };

/* One VALID 3x3 convolution + ReLU of NHWC x [B, s, s, c] with HWIO w, in double. */
static void conv_relu(const double *x, int s, int c, const double *w, const double *b, int o, double *y) {
    int t = s - 2;
    for (int n = 0; n < B; n++)
        for (int h = 0; h < t; h++)
            for (int v = 0; v < t; v++)
                for (int k = 0; k < o; k++) {
                    double acc = b[k];
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 3; j++)
                            for (int q = 0; q < c; q++)
                                acc += x[((n * s + h + i) * s + v + j) * c + q] * w[((i * 3 + j) * c + q) * o + k];
                    y[((n * t + h) * t + v) * o + k] = acc > 0 ? acc : 0;
                }
}

/* The mean cross-entropy of the network with parameters p (the model's flat
 * layout, offsets off[]) on x and y; logits into `logits` when not NULL. */
static double hand_loss(const double *p, const int64_t *off, const double *x, const int32_t *y, double *logits) {
    static double a1[B * S1 * S1 * O1], a2[B * S2 * S2 * O2], f[B * FLAT], h[B * H];
    double out[B * K], loss = 0;
    conv_relu(x, S, C, p + off[0], p + off[1], O1, a1);
    conv_relu(a1, S1, O1, p + off[2], p + off[3], O2, a2);
    for (int n = 0; n < B; n++) /* 2x2 max pool, flattened (h, w, c) */
        for (int r = 0; r < P; r++)
            for (int c = 0; c < P; c++)
                for (int k = 0; k < O2; k++) {
                    double m = -INFINITY;
                    for (int i = 0; i < 2; i++)
                        for (int j = 0; j < 2; j++) m = fmax(m, a2[((n * S2 + 2 * r + i) * S2 + 2 * c + j) * O2 + k]);
                    f[n * FLAT + (r * P + c) * O2 + k] = m;
                }
    for (int n = 0; n < B; n++) {
        for (int u = 0; u < H; u++) {
            double acc = p[off[5] + u];
            for (int i = 0; i < FLAT; i++) acc += f[n * FLAT + i] * p[off[4] + i * H + u];
            h[n * H + u] = acc > 0 ? acc : 0;
        }
        double max = -INFINITY, z = 0;
        for (int k = 0; k < K; k++) {
            double acc = p[off[7] + k];
            for (int u = 0; u < H; u++) acc += h[n * H + u] * p[off[6] + u * K + k];
            out[n * K + k] = acc, max = fmax(max, acc);
        }
        for (int k = 0; k < K; k++) z += exp(out[n * K + k] - max);
        loss += max + log(z) - out[n * K + y[n]];
    }
    if (logits) memcpy(logits, out, sizeof out);
    return loss / B;
}

/* ------------------------------------------------- the program's side -- */

/* pfl_cnn on 8x8x3 with its loss's gradient for every parameter: inputs the
 * parameters, "x", "y", "mask"; outputs "loss", "logits", "grad_<param>". */
static fedc_status grad_program(const fedc_model *m, fedc_program **out) {
    fedc_program *p = NULL;
    fedc_status st = fedc_program_create(&p);
    if (st) return st;
    fedc_value params[8];
    const char *wrt[8];
    for (int i = 0; i < 8; i++) {
        wrt[i] = fedc_model_param_name(m, i);
        params[i] = fedc_input(p, wrt[i], fedc_model_param_type(m, i));
    }
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, B));
    fedc_value y = fedc_input(p, "y", fedc_model_label_type(m, B));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, (int64_t[]){B}));
    fedc_model_outputs o;
    if (!(st = fedc_model_apply(m, p, params, x, y, mask, FEDC_NONE, &o)) && !(st = fedc_program_output(p, "loss", o.loss)))
        st = fedc_program_output(p, "logits", o.logits);
    fedc_program *g = NULL;
    if (!st) st = fedc_grad(p, "loss", wrt, 8, &g);
    fedc_program_destroy(p);
    *out = g;
    return st;
}

static const float *output(const fedc_executor *ex, const char *name) {
    const void *data = NULL;
    CHECK_OK(fedc_executor_output(ex, name, &data, NULL));
    return data;
}

/* Compares fedc's gradient of tensor i with central differences of hand_loss
 * at 6 of its elements (spread over the tensor). */
static void check_grad(const fedc_model *m, int i, const float *grad, double *p, const int64_t *off, const double *x,
                       const int32_t *y) {
    int64_t n = fedc_model_param_size(m, i);
    for (int e = 0; e < 6; e++) {
        int64_t j = off[i] + (int64_t)e * (n - 1) / 5;
        double keep = p[j], eps = 1e-7; /* small: a step across a ReLU or pool kink would bend it */
        p[j] = keep + eps;
        double up = hand_loss(p, off, x, y, NULL);
        p[j] = keep - eps;
        double down = hand_loss(p, off, x, y, NULL);
        p[j] = keep;
        double want = (up - down) / (2 * eps), got = grad[j - off[i]];
        CHECK_MSG(fabs(got - want) <= 1e-5 + 1e-3 * fabs(want), "d loss / d %s[%lld] = %.7g, finite differences %.7g",
                  fedc_model_param_name(m, i), (long long)(j - off[i]), got, want);
    }
}

static void test_forward_and_gradient_by_hand(void) {
    fedc_model *m = NULL;
    fedc_program *g = NULL;
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_model_create(&m, "pfl_cnn", &(fedc_model_options){.input_height = S, .input_width = S}));
    if (!m) return;
    CHECK_EQ_INT(fedc_model_size(m), 896 + 18496 + FLAT * H + H + H * K + K);
    int64_t size = fedc_model_size(m), off[8];
    for (int i = 0; i < 8; i++) off[i] = fedc_model_param_offset(m, i);
    float *w = fedc_malloc((size_t)size * sizeof *w);
    double *pd = fedc_malloc((size_t)size * sizeof *pd);
    float xf[B * S * S * C];
    double xd[B * S * S * C], logits[B * K];
    const int32_t y[B] = {3, 8};
    const float mask[B] = {1, 1};
    if (!w || !pd) goto done;
    CHECK_OK(fedc_model_init(m, 11, w));
    for (int64_t j = 0; j < size; j++) pd[j] = w[j];
    fedc_rng_stream s = fedc_rng_stream_make(3, 0, 0, 0);
    for (int j = 0; j < B * S * S * C; j++) xf[j] = fedc_rng_uniform_f32(s, (uint64_t)j) * 2 - 1, xd[j] = xf[j];
    CHECK_OK(grad_program(m, &g));
    if (g) CHECK_OK(fedc_executor_create(&ex, g, NULL));
    if (!ex) goto done;
    for (int i = 0; i < 8; i++) CHECK_OK(fedc_executor_bind(ex, fedc_model_param_name(m, i), w + off[i]));
    CHECK_OK(fedc_executor_bind(ex, "x", xf));
    CHECK_OK(fedc_executor_bind(ex, "y", y));
    CHECK_OK(fedc_executor_bind(ex, "mask", mask));
    CHECK_OK(fedc_executor_run(ex));
    double want = hand_loss(pd, off, xd, y, logits);
    const float *loss = output(ex, "loss"), *got = output(ex, "logits");
    if (!loss || !got) goto done;
    CHECK_MSG(fabs(*loss - want) < 1e-5 * fmax(1, fabs(want)), "loss %.7g, by hand %.7g", *loss, want);
    for (int j = 0; j < B * K; j++) CHECK_MSG(fabs(got[j] - logits[j]) < 1e-5, "logit %d: %.7g, by hand %.7g", j, got[j], logits[j]);
    for (int i = 0; i < 8; i++) {
        char name[64];
        snprintf(name, sizeof name, "grad_%s", fedc_model_param_name(m, i));
        const float *gr = output(ex, name);
        if (gr) check_grad(m, i, gr, pd, off, xd, y);
    }
done:
    fedc_executor_destroy(ex);
    fedc_program_destroy(g);
    fedc_free(w), fedc_free(pd);
    fedc_model_destroy(m);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"count_and_layout", test_count_and_layout},
        {"init", test_init},
        {"forward_and_gradient_by_hand", test_forward_and_gradient_by_hand},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
