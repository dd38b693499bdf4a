/* The transformer language model: parameter counts (by hand and by formula) for
 * every preset, the options and their errors, initial values, the forward pass's
 * shapes and PAD masking, and FedAvg on a learnable token task: the loss falls. */
#include <stdlib.h>
#include <string.h>

#include "fedc/fl.h"
#include "fedc/exec.h"
#include "nn/nn.h"
#include "harness.h"

static int64_t model_size(const char *name, const fedc_model_options *o) {
    fedc_model *m = NULL;
    CHECK_MSG(fedc_model_create(&m, name, o) == FEDC_OK, "%s: %s", name, fedc_errmsg());
    int64_t n = fedc_model_size(m);
    fedc_model_destroy(m);
    return n;
}

/* Counted by hand: wte V C + wpe T C + L (12 C^2 + 13 C) + lnf 2 C + head C V. */
static void test_parameter_counts(void) {
    CHECK_EQ_INT(model_size("transformer:tiny", NULL), 2880 + 512 + 2 * 12704 + 64 + 2880);        /* 31,744 */
    CHECK_EQ_INT(model_size("transformer", NULL), 9893888);                                        /* small */
    CHECK_EQ_INT(model_size("transformer:small", NULL), 2561024 + 32768 + 6 * 789760 + 512 + 2561024);
    CHECK_EQ_INT(model_size("transformer:base", NULL), 100815360);
    fedc_model_options tied = {.tied_embeddings = true};
    CHECK_EQ_INT(model_size("transformer:base", &tied), 93132288);
    fedc_model_options sin = {.sinusoidal_positions = true, .tied_embeddings = true};
    CHECK_EQ_INT(model_size("transformer:tiny", &sin), 2880 + 2 * 12704 + 64);
    fedc_model_options custom = {.layers = 3, .width = 48, .heads = 3, .context = 10, .num_classes = 7};
    CHECK_EQ_INT(model_size("transformer:tiny", &custom), 7 * 48 + 10 * 48 + 3 * (12 * 48 * 48 + 13 * 48) + 96 + 48 * 7);
    /* the formula agrees with the table for every preset and variant */
    const char *presets[] = {"tiny", "small", "medium", "base"};
    for (int i = 0; i < 4; i++)
        for (int v = 0; v < 4; v++) {
            char name[32];
            snprintf(name, sizeof name, "transformer:%s", presets[i]);
            fedc_model_options o = {.tied_embeddings = v & 1, .sinusoidal_positions = v & 2};
            fedc__nn_transformer c;
            CHECK_OK(fedc__nn_transformer_config(name, &o, &c));
            CHECK_EQ_INT(model_size(name, &o), fedc__nn_transformer_param_count(&c));
        }
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "transformer:tiny", NULL));
    CHECK_EQ_INT(fedc_model_num_params(m), 2 + 2 * 12 + 3);
    CHECK(!strcmp(fedc_model_param_name(m, 2), "h0/ln1/g"));
    CHECK(!strcmp(fedc_model_param_name(m, 14 + 8), "h1/fc/w"));
    CHECK(!strcmp(fedc_model_param_name(m, 28), "head/w"));
    fedc_type it = fedc_model_input_type(m, 3), lt = fedc_model_label_type(m, 3);
    CHECK(it.dtype == FEDC_I32 && it.rank == 2 && it.dims[0] == 3 && it.dims[1] == 16);
    CHECK(lt.dtype == FEDC_I32 && lt.rank == 2 && lt.dims[1] == 16);
    CHECK_EQ_INT(fedc_model_num_classes(m), 90);
    fedc_model_destroy(m);
}

static void test_bad_options(void) {
    fedc_model *m = NULL;
    CHECK_ERR(fedc_model_create(&m, "transformer:huge", NULL), FEDC_EINVAL, "unknown preset \"huge\"");
    fedc_model_options o = {.width = 30, .heads = 4};
    CHECK_ERR(fedc_model_create(&m, "transformer:tiny", &o), FEDC_EINVAL, "not a multiple of heads");
    fedc_model_options img = {.input_height = 28};
    CHECK_ERR(fedc_model_create(&m, "transformer", &img), FEDC_EINVAL, "token sequences");
    fedc_model_options lay = {.layers = 2};
    CHECK_ERR(fedc_model_create(&m, "cnn", &lay), FEDC_EINVAL, "transformer models");
    CHECK_ERR(fedc_model_create(&m, "transformers", NULL), FEDC_EINVAL, "transformer[:tiny");
    fedc_model_options deep = {.layers = 21};
    CHECK_ERR(fedc_model_create(&m, "transformer", &deep), FEDC_EINVAL, "layers = 21");
    CHECK(m == NULL);
}

static void test_init(void) {
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "transformer:tiny", NULL));
    float *w = malloc((size_t)fedc_model_size(m) * sizeof *w);
    CHECK_OK(fedc_model_init(m, 7, w));
    const float *g = w + fedc_model_param_offset(m, 2), *b = w + fedc_model_param_offset(m, 3);
    const float *wte = w + fedc_model_param_offset(m, 0);
    double ss = 0;
    for (int i = 0; i < 32; i++) CHECK(g[i] == 1.0f && b[i] == 0.0f);
    for (int i = 0; i < 2880; i++) ss += (double)wte[i] * wte[i];
    double sd = sqrt(ss / 2880); /* 0.02 * 0.88 (truncated at 2 sigma) */
    CHECK_MSG(sd > 0.016 && sd < 0.019, "wte stddev %g", sd);
    free(w);
    fedc_model_destroy(m);
}

/* A token task a model can learn: y[t] = (x[t] + 1) mod V, except PAD (0) labels
 * at the end of odd rows, which the loss must ignore. */
static void fill_tokens(int32_t *x, int32_t *y, int64_t rows, int64_t t, int vocab, uint32_t seed) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < t; i++) {
            seed = seed * 1664525u + 1013904223u;
            int32_t tok = 1 + (int32_t)((seed >> 8) % (uint32_t)(vocab - 2));
            x[r * t + i] = tok;
            y[r * t + i] = (r % 2 && i >= t - 3) ? 0 : tok + 1;
        }
}

/* The loss over real tokens only: changing the input at positions whose labels
 * are PAD, after the last real label, changes nothing (causality), and the
 * count is the number of non-PAD labels. */
static void test_forward_masks_pad(void) {
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "transformer:tiny", NULL));
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    int n = fedc_model_num_params(m);
    fedc_value w[64];
    for (int i = 0; i < n; i++) w[i] = fedc_input(p, fedc_model_param_name(m, i), fedc_model_param_type(m, i));
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, 2)), y = fedc_input(p, "y", fedc_model_label_type(m, 2));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, (int64_t[]){2}));
    fedc_model_outputs o;
    CHECK_OK(fedc_model_apply(m, p, w, x, y, mask, FEDC_NONE, &o));
    CHECK_OK(fedc_program_output(p, "loss", o.loss));
    CHECK_OK(fedc_program_output(p, "count", o.count));
    fedc_type lt = fedc_value_type(p, o.logits);
    CHECK(lt.rank == 3 && lt.dims[0] == 2 && lt.dims[1] == 16 && lt.dims[2] == 90);
    float *wv = malloc((size_t)fedc_model_size(m) * sizeof *wv), mk[2] = {1, 1};
    CHECK_OK(fedc_model_init(m, 1, wv));
    int32_t xs[32], ys[32];
    fill_tokens(xs, ys, 2, 16, 90, 5);
    fedc_executor *ex;
    CHECK_OK(fedc_executor_create(&ex, p, NULL));
    for (int i = 0; i < n; i++) CHECK_OK(fedc_executor_bind(ex, fedc_model_param_name(m, i), wv + fedc_model_param_offset(m, i)));
    CHECK_OK(fedc_executor_bind(ex, "x", xs));
    CHECK_OK(fedc_executor_bind(ex, "y", ys));
    CHECK_OK(fedc_executor_bind(ex, "mask", mk));
    const float *loss, *count;
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_output(ex, "loss", (const void **)&loss, NULL));
    CHECK_OK(fedc_executor_output(ex, "count", (const void **)&count, NULL));
    float l0 = *loss;
    CHECK_EQ_INT((int)*count, 32 - 3);
    CHECK_MSG(fabsf(l0 - logf(90)) < 0.3f, "initial loss %g, log(90) = %g", l0, logf(90));
    xs[31] = xs[31] % 80 + 3; /* the last input of row 1: its label is PAD */
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_output(ex, "loss", (const void **)&loss, NULL));
    CHECK(*loss == l0);
    xs[16] = xs[16] % 80 + 4; /* the first input of row 1 changes every later position */
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_output(ex, "loss", (const void **)&loss, NULL));
    CHECK(*loss != l0);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    free(wv);
    fedc_model_destroy(m);
}

/* A FedAvg run of `rounds` rounds on the token task: CLIENTS clients of STEPS
 * batches of BATCH sequences (context at most 64), with `threads` workers: the
 * training loss of the first and the last round, and the final model (malloc'd). */
enum { CLIENTS = 4, STEPS = 4, BATCH = 4 };
typedef struct fedavg_run {
    double first, last;
    float *w;
    int64_t size;
} fedavg_run;

static void bind_round(fedc_executor *ex, int64_t t, int vocab) {
    static int32_t x[CLIENTS * STEPS * BATCH * 64], y[CLIENTS * STEPS * BATCH * 64];
    static float mask[CLIENTS * STEPS * BATCH];
    static int32_t steps[CLIENTS], key[4 * CLIENTS];
    fill_tokens(x, y, CLIENTS * STEPS * BATCH, t, vocab, 11);
    for (int i = 0; i < CLIENTS * STEPS * BATCH; i++) mask[i] = 1;
    for (int i = 0; i < CLIENTS; i++) steps[i] = STEPS;
    CHECK_OK(fedc_executor_bind(ex, "x", x));
    CHECK_OK(fedc_executor_bind(ex, "y", y));
    CHECK_OK(fedc_executor_bind(ex, "mask", mask));
    CHECK_OK(fedc_executor_bind(ex, "steps", steps));
    CHECK_OK(fedc_executor_bind(ex, "key", key));
}

static fedavg_run fedavg_rounds(const char *model, const fedc_model_options *mo, const fedc_algorithm *a, int rounds,
                                int threads) {
    fedavg_run run = {0, 0, NULL, 0};
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, model, mo));
    fedc_program *round = NULL;
    CHECK_OK(fedc_algorithm_round(m, a, &round));
    fedc_exec_options eo = {.clients = CLIENTS, .threads = threads};
    fedc_executor *ex = NULL;
    if (round) CHECK_OK(fedc_executor_create(&ex, round, &eo));
    int64_t t = fedc_model_input_type(m, 1).dims[1];
    int vocab = mo && mo->num_classes ? mo->num_classes : 90; /* tiny's */
    run.size = fedc_model_size(m);
    run.w = malloc((size_t)run.size * sizeof *run.w);
    CHECK_OK(fedc_model_init(m, 3, run.w));
    fedc_server_state *state = NULL; /* the model and the server optimizer's state, round to round */
    CHECK_OK(fedc_server_state_create(&state, m, a, run.w));
    if (ex && state) {
        bind_round(ex, t, vocab);
        CHECK_OK(fedc_server_state_bind(state, ex));
    }
    for (int r = 0; ex && state && r < rounds; r++) {
        CHECK_OK(fedc_executor_run(ex));
        const float *loss;
        CHECK_OK(fedc_executor_output(ex, "train_loss", (const void **)&loss, NULL));
        if (r == 0) run.first = *loss;
        run.last = *loss;
        CHECK_OK(fedc_server_state_update(state, ex));
    }
    if (state) CHECK_OK(fedc_server_state_params(state, run.w));
    fedc_server_state_destroy(state);
    fedc_executor_destroy(ex);
    fedc_program_destroy(round);
    fedc_model_destroy(m);
    return run;
}

/* FedAvg rounds of the tiny model on 4 clients: the training loss falls well
 * below its start (log 90 = 4.5). */
static void test_fedavg_loss_falls(void) {
    fedc_algorithm a = {.def = &fedc_algorithm_fedavg, .client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.5),
                        .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0), .batch_size = BATCH, .max_steps = STEPS};
    fedavg_run run = fedavg_rounds("transformer:tiny", NULL, &a, 25, 2);
    CHECK_MSG(run.first > 4.0 && run.last < 0.5 * run.first, "train loss %g -> %g", run.first, run.last);
    fprintf(stderr, "    train loss %.3f -> %.3f after 25 rounds\n", run.first, run.last);
    free(run.w);
}

/* A deeper model, past the old limit of 64 operands per map and fold: 4 blocks
 * (53 tensors) with Adam on the clients and on the server, whose round folds 164
 * carries. The loss falls. */
static void test_fedavg_adam_4_blocks(void) {
    fedc_model_options mo = {.layers = 4};
    fedc_algorithm a = {.def = &fedc_algorithm_fedavg, .client_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 3e-3),
                        .server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 3e-2), .batch_size = BATCH, .max_steps = STEPS};
    fedavg_run run = fedavg_rounds("transformer:tiny", &mo, &a, 12, 2);
    CHECK_MSG(run.first > 4.0 && run.last < 0.6 * run.first, "train loss %g -> %g", run.first, run.last);
    fprintf(stderr, "    4 blocks, Adam/Adam: train loss %.3f -> %.3f after 12 rounds\n", run.first, run.last);
    free(run.w);
}

/* The deep presets' rounds build and run with client and server Adam (small: 6
 * blocks, 77 tensors; base: 12 blocks, 149), at a small width, context and
 * vocabulary so the test is quick: the loss starts at log(vocab), the model
 * moves and stays finite, and the result is bitwise the same on 1, 2 and 8 threads. */
static void test_deep_presets_round(void) {
    const char *presets[] = {"transformer:small", "transformer:base"};
    for (int i = 0; i < 2; i++) {
        fedc_model_options mo = {.width = 16, .heads = 4, .context = 8, .num_classes = 40};
        fedc_algorithm a = {.def = &fedc_algorithm_fedavg, .client_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 1e-3),
                        .server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 1e-2), .batch_size = BATCH, .max_steps = STEPS};
        /* 8 threads for 4 clients: each client's kernels get 2 (the cohort's spare threads) */
        fedavg_run one = fedavg_rounds(presets[i], &mo, &a, 2, 1), two = fedavg_rounds(presets[i], &mo, &a, 2, 2),
                   eight = fedavg_rounds(presets[i], &mo, &a, 2, 8);
        CHECK_MSG(fabs(one.first - log(40.0)) < 0.5, "%s: first loss %g, log(40) = %g", presets[i], one.first, log(40.0));
        fedc_model *m;
        CHECK_OK(fedc_model_create(&m, presets[i], &mo));
        float *w0 = malloc((size_t)one.size * sizeof *w0);
        CHECK_OK(fedc_model_init(m, 3, w0));
        int64_t moved = 0, finite = 0;
        for (int64_t j = 0; j < one.size; j++) {
            moved += one.w[j] != w0[j];
            finite += isfinite(one.w[j]);
        }
        CHECK_MSG(finite == one.size && moved > one.size / 2, "%s: %lld of %lld moved, %lld finite", presets[i],
                  (long long)moved, (long long)one.size, (long long)finite);
        CHECK(one.size == two.size && memcmp(one.w, two.w, (size_t)one.size * sizeof *one.w) == 0);
        CHECK(one.last == two.last);
        CHECK(memcmp(one.w, eight.w, (size_t)one.size * sizeof *one.w) == 0 && one.last == eight.last);
        fprintf(stderr, "    %s (%d tensors): loss %.3f -> %.3f\n", presets[i], fedc_model_num_params(m), one.first,
                one.last);
        free(w0);
        free(one.w);
        free(two.w);
        free(eight.w);
        fedc_model_destroy(m);
    }
}

/* The text format takes the wide maps and folds of a deep round: printed, parsed
 * and printed again, the text is the same. */
static void test_deep_round_text(void) {
    fedc_model *m;
    fedc_model_options mo = {.width = 16, .heads = 4, .context = 8, .num_classes = 40};
    CHECK_OK(fedc_model_create(&m, "transformer:small", &mo));
    fedc_algorithm a = {.def = &fedc_algorithm_fedavg, .client_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 1e-3),
                        .server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 1e-2), .batch_size = 2, .max_steps = 2};
    fedc_program *round = NULL, *parsed = NULL;
    char *text = NULL, *again = NULL;
    CHECK_OK(fedc_algorithm_round(m, &a, &round));
    if (round) CHECK_OK(fedc_program_to_string(round, &text));
    if (text) CHECK_OK(fedc_program_parse(text, &parsed));
    if (parsed) CHECK_OK(fedc_program_to_string(parsed, &again));
    CHECK(text && again && strcmp(text, again) == 0);
    fedc_free(text);
    fedc_free(again);
    fedc_program_destroy(parsed);
    fedc_program_destroy(round);
    fedc_model_destroy(m);
}

/* One training step's gradient (a program without maps: its threads go to the
 * kernels, which cut the GEMMs and the loss into blocks by shape) has the same
 * bits on 1, 2 and 3 threads. Big enough that every GEMM is cut. */
static void test_step_threads_bitwise(void) {
    fedc_model *m;
    fedc_model_options mo = {.layers = 2, .width = 64, .heads = 2, .context = 64, .num_classes = 2048};
    CHECK_OK(fedc_model_create(&m, "transformer", &mo));
    int n = fedc_model_num_params(m);
    int64_t batch = 3, size = fedc_model_size(m);
    fedc_program *p, *g = NULL;
    CHECK_OK(fedc_program_create(&p));
    fedc_value *w = calloc((size_t)n, sizeof *w);
    const char **wrt = calloc((size_t)n, sizeof *wrt);
    for (int i = 0; i < n; i++) {
        wrt[i] = fedc_model_param_name(m, i);
        w[i] = fedc_input(p, wrt[i], fedc_model_param_type(m, i));
    }
    fedc_value x = fedc_input(p, "x", fedc_model_input_type(m, batch)), y = fedc_input(p, "y", fedc_model_label_type(m, batch));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, &batch));
    fedc_model_outputs out;
    CHECK_OK(fedc_model_apply(m, p, w, x, y, mask, FEDC_NONE, &out));
    CHECK_OK(fedc_program_output(p, "loss", out.loss));
    CHECK_OK(fedc_grad(p, "loss", wrt, n, &g));
    float *params = malloc((size_t)size * sizeof *params), mk[3] = {1, 1, 0.5f};
    float *first = malloc((size_t)size * sizeof *first);
    static int32_t xs[3 * 64], ys[3 * 64];
    fill_tokens(xs, ys, batch, 64, 2048, 17);
    CHECK_OK(fedc_model_init(m, 5, params));
    for (int threads = 1; g && threads <= 3; threads++) {
        fedc_exec_options eo = {.threads = threads};
        fedc_executor *ex = NULL;
        CHECK_OK(fedc_executor_create(&ex, g, &eo));
        for (int i = 0; ex && i < n; i++) CHECK_OK(fedc_executor_bind(ex, wrt[i], params + fedc_model_param_offset(m, i)));
        if (ex) {
            CHECK_OK(fedc_executor_bind(ex, "x", xs));
            CHECK_OK(fedc_executor_bind(ex, "y", ys));
            CHECK_OK(fedc_executor_bind(ex, "mask", mk));
            CHECK_OK(fedc_executor_run(ex));
        }
        int64_t differ = 0;
        for (int i = 0; ex && i < n; i++) {
            char name[64];
            const float *gr = NULL;
            snprintf(name, sizeof name, "grad_%s", wrt[i]);
            CHECK_OK(fedc_executor_output(ex, name, (const void **)&gr, NULL));
            float *at = first + fedc_model_param_offset(m, i);
            int64_t len = fedc_model_param_size(m, i);
            if (threads == 1) memcpy(at, gr, (size_t)len * sizeof *at);
            else differ += memcmp(at, gr, (size_t)len * sizeof *at) != 0;
        }
        CHECK_MSG(differ == 0, "%d threads: %lld gradients differ from 1 thread's", threads, (long long)differ);
        fedc_executor_destroy(ex);
    }
    free(params), free(first), free(w), free(wrt);
    fedc_program_destroy(g);
    fedc_program_destroy(p);
    fedc_model_destroy(m);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"parameter_counts", test_parameter_counts},
        {"bad_options", test_bad_options},
        {"init", test_init},
        {"forward_masks_pad", test_forward_masks_pad},
        {"fedavg_loss_falls", test_fedavg_loss_falls},
        {"fedavg_adam_4_blocks", test_fedavg_adam_4_blocks},
        {"deep_presets_round", test_deep_presets_round},
        {"deep_round_text", test_deep_round_text},
        {"step_threads_bitwise", test_step_threads_bitwise},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
