/* fedc_program_from_onnx on files torch.onnx.export wrote (tests/onnx/, made by
 * tests/onnx/make_fixtures.py at reduced widths): an MLP, FedJAX's EMNIST CNN,
 * pfl's CIFAR CNN, a ResNet block with BatchNorm, a char LSTM and a 2-layer
 * transformer encoder. For each, fedc's logits on the batch the file came with
 * equal torch's, and the gradients of the mean softmax cross-entropy that fedc's
 * AD derives from the imported program equal autograd's, parameter by parameter,
 * under PyTorch's state_dict names (the initializers' names). The files are kept
 * in the tree, so this runs without torch; tests/peers_onnx_torch.sh makes them
 * again at full width with the installed torch and runs this on them
 * (FEDC_ONNX_TORCH_DIR names the directory). fedc_onnx_write_params writes
 * parameters back into a copy of such a file.
 *
 * Tolerances: logits |fedc - torch| <= 1e-5 max(|torch|, 1) (float32 sums in
 * another order); gradients |fedc - torch| <= 1e-5 max(max |torch's gradient of
 * that tensor|, 1e-3) elementwise, since a gradient sums over the batch and the
 * positions in yet other orders, and the exact GELU goes through an erf
 * approximated to 1.5e-7. On the reduced fixtures the largest differences are
 * 2e-7 (logits) and 2e-6 (gradients) of these scales. */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/ad.h"
#include "fedc/exec.h"
#include "fedc/formats.h"
#include "fedc/safetensors.h"

static const double LOGIT_TOL = 1e-5, GRAD_TOL = 1e-5;

static const char *fixture_dir(void) {
    const char *dir = getenv("FEDC_ONNX_TORCH_DIR");
    return dir && *dir ? dir : fedc_test_path("tests/onnx");
}

/* A tensor of the reference file, copied out (its bytes need not be aligned). */
static void *tensor(const fedc_safetensors *s, const char *name, fedc_type *type) {
    fedc_tensor_entry e;
    if (fedc_safetensors_find(s, name, &e)) return NULL;
    size_t bytes = fedc_type_bytes(&e.type);
    void *data = malloc(bytes ? bytes : 1);
    if (data) memcpy(data, e.data, bytes);
    *type = e.type;
    return data;
}

/* loss = mean(softmax_cross_entropy(logits, labels)) on the imported forward,
 * with the parameters as inputs "params/<name>", differentiated with respect to
 * every parameter. */
static fedc_program *loss_grad_program(const fedc_onnx_model *m, fedc_type label_type) {
    const fedc_program *f = m->program;
    fedc_program *p = NULL, *g = NULL;
    CHECK_OK(fedc_program_create(&p));
    int n = fedc_program_num_inputs(f);
    fedc_value *args = calloc((size_t)n, sizeof *args), *outs = calloc((size_t)fedc_program_num_outputs(f), sizeof *outs);
    const char **wrt = calloc((size_t)n, sizeof *wrt);
    int nwrt = 0;
    for (int i = 0; i < n; i++) {
        const char *name = fedc_program_input_name(f, i);
        args[i] = fedc_input(p, name, fedc_value_type(f, fedc_program_input(f, i)));
        if (!strncmp(name, "params/", 7)) wrt[nwrt++] = name;
    }
    fedc_value labels = fedc_input(p, "labels", label_type);
    CHECK_OK(fedc_program_inline(p, f, args, outs));
    fedc_value ce = fedc_softmax_cross_entropy(p, outs[0], labels, FEDC_NONE);
    CHECK_OK(fedc_program_output(p, "logits", outs[0]));
    CHECK_OK(fedc_program_output(p, "loss", fedc_reduce_mean(p, ce, NULL, -1, false)));
    for (int i = 1; i < fedc_program_num_outputs(f); i++) /* the training form's updates */
        if (!strncmp(fedc_program_output_name(f, i), "update/", 7))
            CHECK_OK(fedc_program_output(p, fedc_program_output_name(f, i), outs[i]));
    CHECK_OK(fedc_grad(p, "loss", wrt, nwrt, &g));
    CHECK_EQ_INT(nwrt, m->num_params);
    free(args), free(outs), free(wrt);
    fedc_program_destroy(p);
    return g;
}

/* The largest |got - want| over tol * scale(want), which must stay <= 1. */
static double worst(const float *got, const float *want, int64_t n, double tol, bool per_tensor) {
    double scale = 1e-3, w = 0;
    for (int64_t i = 0; per_tensor && i < n; i++) scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
    for (int64_t i = 0; i < n; i++) {
        double s = per_tensor ? scale : (fabs(want[i]) > 1 ? fabs(want[i]) : 1);
        double r = fabs((double)got[i] - want[i]) / (tol * s);
        w = r > w ? r : w;
    }
    return w;
}

static void check_output(const fedc_executor *ex, const char *out, const fedc_safetensors *ref, const char *name,
                         const char *model, double tol, bool per_tensor) {
    fedc_type rt, gt;
    const void *got = NULL;
    float *want = tensor(ref, name, &rt);
    CHECK_MSG(want != NULL, "%s: the reference has no %s", model, name);
    CHECK_OK(fedc_executor_output(ex, out, &got, &gt));
    if (want && got) {
        CHECK_MSG(fedc_type_same_shape(&rt, &gt), "%s: %s's shape differs from torch's", model, name);
        double w = fedc_type_same_shape(&rt, &gt) ? worst(got, want, fedc_type_count(&rt), tol, per_tensor) : 0;
        CHECK_MSG(w <= 1, "%s: %s is %.3g tolerances from torch's", model, name, w);
    }
    free(want);
}

/* Every parameter fedc imported is a torch parameter (its gradient checked) or a
 * BatchNorm running statistic (a buffer: torch has no gradient for it). */
static bool is_buffer(const char *name) {
    size_t n = strlen(name);
    return (n > 13 && !strcmp(name + n - 13, ".running_mean")) || (n > 12 && !strcmp(name + n - 12, ".running_var"));
}

/* How a model file is checked against torch. */
typedef enum {
    EVAL,     /* PyTorch's eval mode; every parameter under its state_dict name */
    TRAINING, /* train mode: the import's FEDC_ONNX_BATCHNORM_TRAINING, every example
               * real; the running statistics' updates checked too */
    RENAMED,  /* eval mode, from the torch.export-based exporter, which folds some
               * parameters into new initializers (an LSTM's gates reordered, a
               * BatchNorm into its convolution): the logits, and the gradients of
               * the parameters that kept their names */
    FOLDED,   /* as RENAMED, but the exporter folded each BatchNorm into the
               * convolution before it and kept the convolution's name on the
               * folded weight: the logits only */
} check_mode;

/* fedc's gradient of every parameter against autograd's, by the parameter's name
 * (and in training the running statistics' updates). */
static void check_gradients(const fedc_executor *ex, const fedc_onnx_model *m, const fedc_safetensors *ref,
                            const char *model, check_mode mode) {
    bool training = mode == TRAINING;
    int torch_params = 0, checked = 0, updates = 0, renamed = 0;
    for (int i = 0; i < fedc_safetensors_count(ref); i++) torch_params += !strncmp(fedc_safetensors_tensor(ref, i).name, "grad/", 5);
    for (int i = 0; i < m->num_params; i++) {
        const char *name = m->param_values[i].name;
        char want[300], got[310];
        snprintf(want, sizeof want, "grad/%s", name);
        snprintf(got, sizeof got, "grad_params/%s", name);
        fedc_tensor_entry e;
        bool torch_name = fedc_safetensors_find(ref, want, &e) == FEDC_OK;
        if (!torch_name && mode == RENAMED) {
            renamed++;
            continue;
        }
        if (!torch_name) {
            CHECK_MSG(is_buffer(name), "%s: fedc's parameter %s is not a torch parameter", model, name);
            snprintf(want, sizeof want, "update/%s", name);
            if (training) check_output(ex, want, ref, want, model, LOGIT_TOL, false), updates++;
            continue;
        }
        check_output(ex, got, ref, want, model, GRAD_TOL, true);
        checked++;
    }
    if (mode == RENAMED)
        CHECK_MSG(checked >= 1 && checked + renamed == m->num_params,
                  "%s: %d of %d parameters under torch's names, %d renamed", model, checked, m->num_params, renamed);
    else
        CHECK_MSG(checked == torch_params, "%s: %d of torch's %d parameters were imported under their names",
                  model, checked, torch_params);
    if (training) CHECK_MSG(updates == 6, "%s: %d running statistics updated, not 6", model, updates);
}

/* The model's file checked against the reference `ref` (a file of the fixture
 * directory). */
static void check_model_against(const char *model, const char *ref_name, check_mode mode) {
    bool training = mode == TRAINING;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.safetensors", fixture_dir(), ref_name);
    fedc_safetensors *ref = NULL;
    CHECK_OK(fedc_safetensors_read(path, &ref));
    fedc_type xt, lt;
    void *x = ref ? tensor(ref, "x", &xt) : NULL, *labels = ref ? tensor(ref, "labels", &lt) : NULL;
    fedc_onnx_model *m = NULL;
    snprintf(path, sizeof path, "%s/%s.onnx", fixture_dir(), model);
    fedc_onnx_options o = {.batch = x ? xt.dims[0] : 1, .batchnorm = training ? FEDC_ONNX_BATCHNORM_TRAINING : FEDC_ONNX_BATCHNORM_INFERENCE};
    if (x && labels) CHECK_OK(fedc_program_from_onnx(path, &o, &m));
    float *mask = calloc((size_t)o.batch, sizeof *mask);
    for (int64_t i = 0; i < o.batch; i++) mask[i] = 1;
    fedc_program *g = m ? loss_grad_program(m, lt) : NULL;
    fedc_executor *ex = NULL;
    if (g) CHECK_OK(fedc_executor_create(&ex, g, NULL));
    if (ex) {
        CHECK_OK(fedc_executor_bind(ex, fedc_program_input_name(m->program, 0), x));
        CHECK_OK(fedc_executor_bind(ex, "labels", labels));
        if (training) CHECK_OK(fedc_executor_bind(ex, "mask", mask));
        char input[300];
        for (int i = 0; i < m->num_params; i++) {
            snprintf(input, sizeof input, "params/%s", m->param_values[i].name);
            CHECK_OK(fedc_executor_bind(ex, input, m->param_values[i].data));
        }
        CHECK_OK(fedc_executor_run(ex));
        check_output(ex, "logits", ref, "logits", model, LOGIT_TOL, false);
        if (mode != FOLDED) check_gradients(ex, m, ref, model, mode);
    }
    free(mask);
    fedc_executor_destroy(ex);
    fedc_program_destroy(g);
    fedc_onnx_model_destroy(m);
    free(x), free(labels);
    fedc_safetensors_destroy(ref);
}

static void check_model(const char *model) { check_model_against(model, model, EVAL); }

/* NAME_dynamo.onnx: the module of NAME.onnx through torch.onnx.export(dynamo=True)
 * with a dynamic batch, checked against the same reference. */
static void check_dynamo(const char *model) {
    char file[64];
    snprintf(file, sizeof file, "%s_dynamo", model);
    check_model_against(file, model, strcmp(model, "resnet_block") ? RENAMED : FOLDED);
}

static void test_mlp(void) { check_model("mlp"); }
static void test_emnist_cnn(void) { check_model("emnist_cnn"); }
static void test_cifar_cnn(void) { check_model("cifar_cnn"); }
static void test_resnet_block(void) { check_model("resnet_block"); }
/* BatchNormalization's training form: PyTorch's model.train() logits, gradients
 * (through the batch's statistics) and running statistics after one step. */
static void test_bn_training(void) { check_model_against("resnet_block", "resnet_block_train", TRAINING); }
static void test_char_lstm(void) { check_model("char_lstm"); }
/* GRU, unrolled at import (onnx_ops_rnn.c), with PyTorch's linear_before_reset. */
static void test_char_gru(void) { check_model("char_gru"); }
static void test_transformer(void) { check_model("transformer"); }
/* Its LSTM's zero initial state is a float initializer Expanded to the batch
 * (known at import, so a constant: onnx_known.c). */
static void test_dynamo(void) {
    static const char *const models[] = {"mlp",       "emnist_cnn",  "cifar_cnn", "resnet_block",
                                         "char_lstm", "transformer", "char_gru"};
    for (size_t i = 0; i < FEDC_COUNT_OF(models); i++) check_dynamo(models[i]);
}

/* fedc_onnx_write_params: the MLP's parameters, changed, written into a copy of
 * the file come back from it bit for bit, under the same names, and the rest of
 * the model is the same (it imports to a program of the same ops); a parameter
 * missing, of another shape, or one the model does not have is refused. */
static void test_write_params(void) {
    char path[4096], out[4096];
    snprintf(path, sizeof path, "%s/mlp.onnx", fixture_dir());
    snprintf(out, sizeof out, "%s", fedc_test_tmp("trained.onnx"));
    fedc_onnx_model *m = NULL, *back = NULL;
    CHECK_OK(fedc_program_from_onnx(path, NULL, &m));
    if (!m) return;
    int n = m->num_params;
    fedc_tensor_entry *e = calloc((size_t)n + 1, sizeof *e);
    float **values = calloc((size_t)n, sizeof *values);
    for (int i = 0; i < n; i++) {
        int64_t count = fedc_type_count(&m->param_values[i].type);
        values[i] = malloc((size_t)count * sizeof **values);
        for (int64_t k = 0; k < count; k++) values[i][k] = ((const float *)m->param_values[i].data)[k] * 0.5f + (float)k;
        e[i] = (fedc_tensor_entry){.name = m->param_values[i].name, .type = m->param_values[i].type, .data = values[i]};
    }
    CHECK_OK(fedc_onnx_write_params(path, out, e, n));
    CHECK_OK(fedc_program_from_onnx(out, NULL, &back));
    if (back) {
        CHECK_EQ_INT(back->num_params, n);
        CHECK_EQ_INT(fedc_program_size(back->program), fedc_program_size(m->program));
        for (int i = 0; i < n && i < back->num_params; i++) {
            CHECK(!strcmp(back->param_values[i].name, e[i].name));
            CHECK(!memcmp(back->param_values[i].data, values[i], fedc_type_bytes(&e[i].type)));
        }
    }
    CHECK_ERR(fedc_onnx_write_params(path, out, e, n - 1), FEDC_ENOTFOUND, "no value is given for the model's parameter fc3.bias");
    e[n] = e[0];
    e[n].name = "fc9.weight";
    CHECK_ERR(fedc_onnx_write_params(path, out, e, n + 1), FEDC_ENOTFOUND, "has no float initializer fc9.weight");
    e[0].type.dims[0]++;
    CHECK_ERR(fedc_onnx_write_params(path, out, e, n), FEDC_ESHAPE, "parameter fc1.weight is f32");
    for (int i = 0; i < n; i++) free(values[i]);
    free(values), free(e);
    fedc_onnx_model_destroy(back);
    fedc_onnx_model_destroy(m);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"mlp", test_mlp}, {"emnist_cnn", test_emnist_cnn}, {"cifar_cnn", test_cifar_cnn},
        {"resnet_block", test_resnet_block},
        {"bn_training", test_bn_training}, {"char_lstm", test_char_lstm}, {"char_gru", test_char_gru},
        {"transformer", test_transformer},
        {"dynamo", test_dynamo},
        {"write_params", test_write_params},
    };
    fedc_test_tmpdir("onnx_torch");
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
