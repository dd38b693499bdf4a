/*
 * Tests of models whose forward is a program (fedc_model_create_program,
 * src/nn/program_model.c; the fedc CLI makes its onnx: models so, and
 * tests/cli_onnx_train.sh trains them): NHWC examples fed to an NCHW input by a
 * transpose, the logits against a loop done here, the initial values copied,
 * the parameters named by the spec; an output of other classes, an input of
 * another size and a parameter count that does not match the program refused
 * by name; the context freed once, on failure too; the loaders by prefix.
 */
#include "harness.h"

#include <string.h>

#include "fedc/exec.h"
#include "fedc/nn.h"

enum { C = 2, H = 3, W = 3, K = 4, IN = C * H * W, B = 3 };

static int destroyed;
static void count_destroy(void *ctx) { (void)ctx, destroyed++; }

/* x [batch, C, H, W] -> reshape [batch, IN] -> matmul fc.weight [IN, K]. */
static fedc_status forward(void *ctx, int64_t batch, fedc_program **out) {
    (void)ctx;
    fedc_status st = fedc_program_create(out);
    if (st) return st;
    fedc_program *p = *out;
    fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 4, (int64_t[]){batch, C, H, W}));
    fedc_value w = fedc_input(p, "params/fc.weight", fedc_type_make(FEDC_F32, 2, (int64_t[]){IN, K}));
    fedc_value flat = fedc_reshape(p, x, 2, (int64_t[]){batch, IN});
    return fedc_program_output(p, "logits", fedc_matmul(p, flat, w, false, false));
}

static float weight[IN * K];
static const char *const NAMES[] = {"fc.weight"};
static const float *const VALUES[] = {weight};

static fedc_model_program spec(int num_params) {
    return (fedc_model_program){.name = "test:mlp", .forward = forward, .destroy_ctx = count_destroy,
                                .num_params = num_params, .param_names = NAMES, .param_values = VALUES};
}

static const fedc_model_options IMAGES = {.num_classes = K, .input_height = H, .input_width = W, .input_channels = C};

static void test_shape_and_init(void) {
    for (int i = 0; i < IN * K; i++) weight[i] = (float)fedc_test_uniform(-1, 1);
    destroyed = 0;
    fedc_model *m = NULL;
    fedc_model_program s = spec(1);
    CHECK_OK(fedc_model_create_program(&m, &s, &IMAGES));
    if (!m) return;
    CHECK(!strcmp(fedc_model_name(m), "test:mlp"));
    CHECK_EQ_INT(fedc_model_num_params(m), 1);
    CHECK(!strcmp(fedc_model_param_name(m, 0), "fc.weight"));
    CHECK_EQ_INT(fedc_model_num_classes(m), K);
    fedc_type xt = fedc_model_input_type(m, B), want = fedc_type_make(FEDC_F32, 4, (int64_t[]){B, H, W, C});
    CHECK(fedc_type_same_shape(&xt, &want));
    float got[IN * K];
    CHECK_OK(fedc_model_init(m, 99, got));
    CHECK(!memcmp(got, weight, sizeof got));
    fedc_model_destroy(m);
    CHECK_EQ_INT(destroyed, 1);
}

static void test_logits_nchw(void) {
    fedc_model *m = NULL;
    fedc_model_program s = spec(1);
    CHECK_OK(fedc_model_create_program(&m, &s, &IMAGES));
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    if (!m || !p) return fedc_model_destroy(m), fedc_program_destroy(p);
    fedc_value w = fedc_input(p, "fc.weight", fedc_model_param_type(m, 0));
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, B));
    fedc_value y = fedc_input(p, "y", fedc_model_label_type(m, B));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, (int64_t[]){B}));
    fedc_model_outputs o;
    CHECK_OK(fedc_model_apply(m, p, &w, x, y, mask, FEDC_NONE, &o));
    CHECK_OK(fedc_program_output(p, "logits", o.logits));
    CHECK_OK(fedc_program_output(p, "loss", o.loss));
    float xs[B * H * W * C], ones[B] = {1, 1, 1};
    int32_t ys[B] = {0, 1, 3};
    for (int i = 0; i < B * H * W * C; i++) xs[i] = (float)fedc_test_uniform(-1, 1);
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    if (ex) {
        CHECK_OK(fedc_executor_bind(ex, "fc.weight", weight));
        CHECK_OK(fedc_executor_bind(ex, "x", xs));
        CHECK_OK(fedc_executor_bind(ex, "y", ys));
        CHECK_OK(fedc_executor_bind(ex, "mask", ones));
        CHECK_OK(fedc_executor_run(ex));
        const void *data = NULL;
        fedc_type t;
        CHECK_OK(fedc_executor_output(ex, "logits", &data, &t));
        const float *logits = data;
        /* the program reads x as NCHW: element (c, h, w) of example b is NHWC's (h, w, c) */
        for (int b = 0; logits && b < B; b++)
            for (int k = 0; k < K; k++) {
                double sum = 0;
                for (int c = 0; c < C; c++)
                    for (int h = 0; h < H; h++)
                        for (int v = 0; v < W; v++)
                            sum += (double)xs[((b * H + h) * W + v) * C + c] * weight[((c * H + h) * W + v) * K + k];
                CHECK_NEAR(logits[b * K + k], sum, 1e-5);
            }
    }
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    fedc_model_destroy(m);
}

static void test_refusals(void) {
    fedc_model *m = NULL;
    destroyed = 0;
    fedc_model_program s = spec(1);
    fedc_model_options o = IMAGES;
    o.num_classes = 62;
    CHECK_ERR(fedc_model_create_program(&m, &s, &o), FEDC_ESHAPE, "has 4 classes, but the task's labels have 62");
    o = IMAGES;
    o.input_height = 4;
    CHECK_ERR(fedc_model_create_program(&m, &s, &o), FEDC_ESHAPE,
              "its input x (f32[1,2,3,3]) does not take the task's examples f32[1,4,3,2]");
    s = spec(0);
    CHECK_ERR(fedc_model_create_program(&m, &s, &IMAGES), FEDC_EINVAL, "x and 0 parameters make 1");
    o = IMAGES;
    o.hidden = 10;
    s = spec(1);
    CHECK_ERR(fedc_model_create_program(&m, &s, &o), FEDC_EINVAL, "its sizes are the program's");
    CHECK(m == NULL);
    CHECK_EQ_INT(destroyed, 4);
}

static const char *loaded_rest;
static fedc_status load(const char *rest, const fedc_model_options *o, fedc_model **out) {
    loaded_rest = rest;
    fedc_model_program s = spec(1);
    return fedc_model_create_program(out, &s, o);
}

static void test_loaders(void) {
    fedc_model *m = NULL;
    CHECK_ERR(fedc_model_create(&m, "onnx:model.onnx", NULL), FEDC_EUNSUPPORTED, "no loader of \"onnx:\" models");
    CHECK(fedc_model_name_is_loaded("onnx:model.onnx"));
    CHECK(!fedc_model_name_is_loaded("transformer:tiny"));
    CHECK(!fedc_model_name_is_loaded("test:x"));
    CHECK_ERR(fedc_model_register_loader("a:b", load), FEDC_EINVAL, "without ':'");
    CHECK_OK(fedc_model_register_loader("test", load));
    CHECK(fedc_model_name_is_loaded("test:x"));
    CHECK_OK(fedc_model_create(&m, "test:some/file", &IMAGES));
    CHECK(loaded_rest && !strcmp(loaded_rest, "some/file"));
    CHECK(m && fedc_model_num_classes(m) == K);
    fedc_model_destroy(m);
    m = NULL;
    CHECK_OK(fedc_model_create(&m, "transformer:tiny", NULL)); /* a built-in name with a colon is still one */
    fedc_model_destroy(m);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"shape_and_init", test_shape_and_init},
        {"logits_nchw", test_logits_nchw},
        {"refusals", test_refusals},
        {"loaders", test_loaders},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
