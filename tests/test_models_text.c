/*
 * Tests of the language models (src/nn/models_text.c, src/nn/recurrent.c):
 * FedJAX's parameter counts and layout, the forward pass against Haiku's
 * equations written out here in double (embedding, LSTM cells with the forget bias
 * and gate order i, g, f, o, tanh after each layer, dense layers, tied output), the
 * masked sequence loss, accuracy and counts (PAD, EOS, OOV, padded examples), one
 * SGD step lowering the loss, and option errors.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "fedc/nn.h"

static void test_counts_and_names(void) {
    struct {
        const char *name;
        fedc_model_options o;
        int64_t size;
        const char *names;
    } cases[] = {
        /* 90*8 + (8+256)*1024+1024 + (256+256)*1024+1024 + 256*90+90 */
        {"shakespeare_lstm", {0}, 820522, "embed/w lstm1/w lstm1/b lstm2/w lstm2/b output/w output/b"},
        /* 10004*96 + (96+670)*2680+2680 + 670*96+96 + 96*10004+10004 */
        {"stackoverflow_lstm", {0}, 4050748, "embed/w lstm1/w lstm1/b project/w project/b output/w output/b"},
        {"stackoverflow_lstm", {.tied_embeddings = true}, 4050748 - 96 * 10004, "embed/w lstm1/w lstm1/b project/w project/b output/b"},
    };
    for (int k = 0; k < FEDC_COUNT_OF(cases); k++) {
        fedc_model *m = NULL;
        CHECK_OK(fedc_model_create(&m, cases[k].name, &cases[k].o));
        if (!m) continue;
        CHECK_EQ_INT(fedc_model_size(m), cases[k].size);
        char names[256] = "";
        for (int i = 0; i < fedc_model_num_params(m); i++) {
            if (i) strcat(names, " ");
            strcat(names, fedc_model_param_name(m, i));
        }
        CHECK_MSG(strcmp(names, cases[k].names) == 0, "%s: names \"%s\"", cases[k].name, names);
        fedc_model_destroy(m);
    }
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, "shakespeare_lstm", NULL));
    fedc_type x = fedc_model_input_type(m, 4), y = fedc_model_label_type(m, 4), w = fedc_model_param_type(m, 3);
    CHECK(x.dtype == FEDC_I32 && x.rank == 2 && x.dims[0] == 4 && x.dims[1] == 80);
    CHECK(y.dtype == FEDC_I32 && y.rank == 2 && y.dims[1] == 80);
    CHECK(w.rank == 2 && w.dims[0] == 512 && w.dims[1] == 1024);
    CHECK_EQ_INT(fedc_model_num_classes(m), 90);
    fedc_model_destroy(m);
    CHECK_OK(fedc_model_create(&m, "stackoverflow_lstm", NULL));
    CHECK_EQ_INT(fedc_model_input_type(m, 2).dims[1], 20);
    fedc_model_destroy(m);
}

static void test_option_errors(void) {
    fedc_model *m = NULL;
    CHECK_ERR(fedc_model_create(&m, "shakespeare_lstm", &(fedc_model_options){.tied_embeddings = true}), FEDC_EINVAL,
              "no tied embeddings");
    CHECK_ERR(fedc_model_create(&m, "shakespeare_lstm", &(fedc_model_options){.input_dim = 3}), FEDC_EINVAL,
              "takes token ids");
    CHECK_ERR(fedc_model_create(&m, "cnn", &(fedc_model_options){.sequence_length = 3}), FEDC_EINVAL,
              "not a language model");
    CHECK_ERR(fedc_model_create(&m, "stackoverflow_lstm", &(fedc_model_options){.sequence_length = -1}), FEDC_EINVAL,
              "sequence_length = -1");
    CHECK(m == NULL);
}

/* ------------------------------------------------- the forward pass by hand -- */

enum { B = 3, L = 5, V = 11, HID = 4 };

static double sigm(double x) { return 1 / (1 + exp(-x)); }

/* One hk.LSTM layer over in[L][B][nin] -> out[L][B][HID] (tanh applied, as the
 * models' DeepRNN does after each LSTM). */
static void lstm_layer(const float *w, const float *b, int nin, const double *in, double *out) {
    double h[B][HID] = {{0}}, c[B][HID] = {{0}};
    for (int t = 0; t < L; t++)
        for (int r = 0; r < B; r++) {
            double a[4 * HID];
            for (int k = 0; k < 4 * HID; k++) {
                a[k] = b[k];
                for (int j = 0; j < nin; j++) a[k] += in[(t * B + r) * nin + j] * w[j * 4 * HID + k];
                for (int j = 0; j < HID; j++) a[k] += h[r][j] * w[(nin + j) * 4 * HID + k];
            }
            for (int j = 0; j < HID; j++) {
                double i = sigm(a[j]), g = tanh(a[HID + j]), f = sigm(a[2 * HID + j] + 1), o = sigm(a[3 * HID + j]);
                c[r][j] = f * c[r][j] + i * g;
                h[r][j] = o * tanh(c[r][j]);
            }
            for (int j = 0; j < HID; j++) out[(t * B + r) * HID + j] = tanh(h[r][j]);
        }
}

static void dense(const float *w, const float *b, int nin, int nout, const double *in, double *out) {
    for (int r = 0; r < L * B; r++)
        for (int k = 0; k < nout; k++) {
            out[r * nout + k] = b ? b[k] : 0;
            for (int j = 0; j < nin; j++) out[r * nout + k] += in[r * nin + j] * w[j * nout + k];
        }
}

/* Logits [L][B][V] of x [B][L] (time-major, as the models compute them). */
static void reference_logits(const fedc_model *m, bool word, bool tied, const float *w, const int32_t *x, double *logits) {
    const float *P[8];
    for (int i = 0; i < fedc_model_num_params(m); i++) P[i] = w + fedc_model_param_offset(m, i);
    int E = word ? 96 : 8;
    double *emb = calloc((size_t)(L * B * E), sizeof *emb), h1[L * B * HID], h2[L * B * HID], proj[L * B * 96];
    for (int t = 0; t < L; t++)
        for (int r = 0; r < B; r++)
            for (int j = 0; j < E; j++) emb[(t * B + r) * E + j] = P[0][x[r * L + t] * E + j];
    lstm_layer(P[1], P[2], E, emb, h1);
    if (!word) {
        lstm_layer(P[3], P[4], HID, h1, h2);
        dense(P[5], P[6], HID, V, h2, logits);
    } else {
        dense(P[3], P[4], HID, E, h1, proj);
        if (!tied) {
            dense(P[5], P[6], E, V, proj, logits);
        } else {
            for (int r = 0; r < L * B; r++)
                for (int k = 0; k < V; k++) {
                    logits[r * V + k] = P[5][k];
                    for (int j = 0; j < E; j++) logits[r * V + k] += proj[r * E + j] * P[0][k * E + j];
                }
        }
    }
    free(emb);
}

static fedc_program *model_program(const fedc_model *m, fedc_model_outputs *o) {
    fedc_program *p;
    if (fedc_program_create(&p)) return NULL;
    fedc_value params[8];
    for (int i = 0; i < fedc_model_num_params(m); i++)
        params[i] = fedc_input(p, fedc_model_param_name(m, i), fedc_model_param_type(m, i));
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, B)), y = fedc_input(p, "y", fedc_model_label_type(m, B));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, (int64_t[]){B}));
    CHECK_OK(fedc_model_apply(m, p, params, x, y, mask, FEDC_NONE, o));
    fedc_program_output(p, "loss", o->loss);
    fedc_program_output(p, "logits", o->logits);
    fedc_program_output(p, "correct", o->correct);
    fedc_program_output(p, "count", o->count);
    return p;
}

static void check_model(const char *name, fedc_model_options opt, bool word) {
    opt.hidden = HID, opt.sequence_length = L, opt.num_classes = V;
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, name, &opt));
    if (!m) return;
    float *w = malloc((size_t)fedc_model_size(m) * sizeof *w);
    CHECK_OK(fedc_model_init(m, 7, w));
    /* nonzero biases, so that a missing or misplaced bias shows */
    for (int i = 0; i < fedc_model_num_params(m); i++)
        if (fedc_model_param_type(m, i).rank == 1)
            for (int64_t j = 0; j < fedc_model_param_size(m, i); j++) w[fedc_model_param_offset(m, i) + j] = 0.1f * (float)((j % 5) - 2);
    int32_t x[B * L], y[B * L];
    for (int i = 0; i < B * L; i++) x[i] = (i * 5 + 1) % V, y[i] = (i * 3 + 2) % V;
    y[1] = 0, y[7] = 0;          /* PAD targets */
    y[3] = 2, y[4] = V - 1;      /* EOS and OOV */
    float mask[B] = {1, 1, 0};   /* the last example is padding */
    fedc_model_outputs o;
    fedc_program *p = model_program(m, &o);
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    if (!ex) goto done;
    for (int i = 0; i < fedc_model_num_params(m); i++)
        CHECK_OK(fedc_executor_bind(ex, fedc_model_param_name(m, i), w + fedc_model_param_offset(m, i)));
    CHECK_OK(fedc_executor_bind(ex, "x", x));
    CHECK_OK(fedc_executor_bind(ex, "y", y));
    CHECK_OK(fedc_executor_bind(ex, "mask", mask));
    CHECK_OK(fedc_executor_run(ex));
    const float *loss, *logits, *correct, *count;
    CHECK_OK(fedc_executor_output(ex, "loss", (const void **)&loss, NULL));
    CHECK_OK(fedc_executor_output(ex, "logits", (const void **)&logits, NULL));
    CHECK_OK(fedc_executor_output(ex, "correct", (const void **)&correct, NULL));
    CHECK_OK(fedc_executor_output(ex, "count", (const void **)&count, NULL));
    double want[L * B * V], sum = 0, hits = 0, n = 0;
    reference_logits(m, word, opt.tied_embeddings, w, x, want);
    for (int r = 0; r < B; r++)
        for (int t = 0; t < L; t++) {
            const double *z = want + (t * B + r) * V;
            for (int k = 0; k < V; k++)
                CHECK_MSG(fabs(logits[(r * L + t) * V + k] - z[k]) <= 1e-5 * (1 + fabs(z[k])), "%s: logit [%d,%d,%d]: %.7g, want %.7g",
                          name, r, t, k, logits[(r * L + t) * V + k], z[k]);
            int target = y[r * L + t];
            bool counted = mask[r] != 0 && target != 0 && !(opt.mask_eos && target == 2) && !(opt.mask_oov && target == V - 1);
            if (!counted) continue;
            double max = z[0], s = 0;
            int best = 0;
            for (int k = 1; k < V; k++)
                if (z[k] > z[best]) best = k;
            max = z[best];
            for (int k = 0; k < V; k++) s += exp(z[k] - max);
            sum += max + log(s) - z[target], hits += best == target, n++;
        }
    CHECK_NEAR(*count, n, 0);
    CHECK_NEAR(*correct, hits, 0);
    CHECK_NEAR(*loss, sum / n, 1e-5);
    fedc_executor_destroy(ex);
done:
    fedc_program_destroy(p);
    free(w);
    fedc_model_destroy(m);
}

static void test_forward_against_haiku_equations(void) {
    check_model("shakespeare_lstm", (fedc_model_options){0}, false);
    check_model("shakespeare_lstm", (fedc_model_options){.mask_eos = true, .mask_oov = true}, false);
    check_model("stackoverflow_lstm", (fedc_model_options){0}, true);
    check_model("stackoverflow_lstm", (fedc_model_options){.tied_embeddings = true, .mask_eos = true}, true);
}

/* The gradient of every parameter is used: twenty SGD steps on one batch lower its loss. */
static void test_sgd_lowers_the_loss(void) {
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, "shakespeare_lstm", &(fedc_model_options){.hidden = 16, .sequence_length = L, .num_classes = V}));
    if (!m) return;
    fedc_model_outputs o;
    fedc_program *p = model_program(m, &o), *g = NULL;
    const char *wrt[8];
    for (int i = 0; i < fedc_model_num_params(m); i++) wrt[i] = fedc_model_param_name(m, i);
    CHECK_OK(fedc_grad(p, "loss", wrt, fedc_model_num_params(m), &g));
    fedc_executor *ex = NULL;
    if (g) CHECK_OK(fedc_executor_create(&ex, g, NULL));
    float *w = malloc((size_t)fedc_model_size(m) * sizeof *w), mask[B] = {1, 1, 1};
    int32_t x[B * L], y[B * L];
    for (int i = 0; i < B * L; i++) x[i] = (i * 5 + 1) % V, y[i] = (i * 3 + 2) % V;
    CHECK_OK(fedc_model_init(m, 3, w));
    double first = 0, last = 0;
    for (int step = 0; ex && step < 20; step++) {
        for (int i = 0; i < fedc_model_num_params(m); i++)
            CHECK_OK(fedc_executor_bind(ex, wrt[i], w + fedc_model_param_offset(m, i)));
        CHECK_OK(fedc_executor_bind(ex, "x", x));
        CHECK_OK(fedc_executor_bind(ex, "y", y));
        CHECK_OK(fedc_executor_bind(ex, "mask", mask));
        CHECK_OK(fedc_executor_run(ex));
        const float *loss;
        CHECK_OK(fedc_executor_output(ex, "loss", (const void **)&loss, NULL));
        if (step == 0) first = *loss;
        last = *loss;
        for (int i = 0; i < fedc_model_num_params(m); i++) {
            char name[40];
            snprintf(name, sizeof name, "grad_%s", wrt[i]);
            const float *grad;
            CHECK_OK(fedc_executor_output(ex, name, (const void **)&grad, NULL));
            double norm = 0;
            for (int64_t j = 0; j < fedc_model_param_size(m, i); j++) {
                w[fedc_model_param_offset(m, i) + j] -= 2.0f * grad[j];
                norm += grad[j] * (double)grad[j];
            }
            if (step == 0) CHECK_MSG(norm > 0, "the gradient of %s is zero", wrt[i]);
        }
    }
    CHECK_MSG(last < 0.8 * first, "loss %g -> %g after 20 steps", first, last);
    fedc_executor_destroy(ex);
    fedc_program_destroy(g), fedc_program_destroy(p);
    free(w);
    fedc_model_destroy(m);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"counts_and_names", test_counts_and_names},
        {"option_errors", test_option_errors},
        {"forward_against_haiku_equations", test_forward_against_haiku_equations},
        {"sgd_lowers_the_loss", test_sgd_lowers_the_loss},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
