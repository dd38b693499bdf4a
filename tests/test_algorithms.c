/* The algorithm interface (fedc/fl.h): hyperparameters declared, set and
 * checked; the round's interface by name; FedProx's term (mu = 0 is FedAvg's
 * bits, a large mu keeps the clients at the server); an algorithm registered by a
 * user that wraps a built-in one; the clients' weighting. Rounds run by hand on
 * the heart-disease model with random data. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "harness.h"

enum { CLIENTS = 3, STEPS = 8, BATCH = 4, FEATURES = 13 };

static void test_hyperparameters(void) {
    fedc_algorithm a = {.def = &fedc_algorithm_fedprox};
    CHECK(fedc_algorithm_hparam(&a, "mu") == 0.01); /* the default */
    CHECK_OK(fedc_algorithm_set(&a, "mu", 0.5));
    CHECK(fedc_algorithm_hparam(&a, "mu") == 0.5);
    CHECK_ERR(fedc_algorithm_set(&a, "mu", -1), FEDC_EINVAL, "fedprox: mu must be in [0, 1e+06], not -1");
    CHECK_ERR(fedc_algorithm_set(&a, "nu", 1), FEDC_EINVAL, "fedprox has no hyperparameter \"nu\" (its hyperparameters: mu;");
    CHECK(isnan(fedc_algorithm_hparam(&a, "nu")));
    CHECK_OK(fedc_algorithm_set_text(&a, "mu=2.5e-1"));
    CHECK(fedc_algorithm_hparam(&a, "mu") == 0.25);
    CHECK_ERR(fedc_algorithm_set_text(&a, "mu"), FEDC_EINVAL, "--set takes NAME=VALUE, not \"mu\"");
    CHECK_ERR(fedc_algorithm_set_text(&a, "=1"), FEDC_EINVAL, "NAME=VALUE");
    CHECK_ERR(fedc_algorithm_set_text(&a, "mu=0.1x"), FEDC_EINVAL, "--set mu: \"0.1x\" is not a number");
    CHECK_ERR(fedc_algorithm_set_text(&a, "mu=nan"), FEDC_EINVAL, "is not a number");
    fedc_algorithm plain = {0}; /* FedAvg, which has none */
    CHECK_ERR(fedc_algorithm_set(&plain, "mu", 1), FEDC_EINVAL, "fedavg has no hyperparameter \"mu\" (its hyperparameters: none;");

    static const fedc_hparam_def outside[] = {{"k", 5, 0, 1, "a default outside its range"}};
    static const fedc_hparam_def twice[] = {{"k", 0, 0, 1, ""}, {"k", 0, 0, 1, ""}};
    fedc_algorithm_def bad = fedc_algorithm_fedavg;
    bad.name = "bad_hparams", bad.hparams = outside, bad.nhparams = 1;
    CHECK_ERR(fedc_algorithm_register(&bad), FEDC_EINVAL, "k's default 5 is outside [0, 1]");
    bad.hparams = twice, bad.nhparams = 2;
    CHECK_ERR(fedc_algorithm_register(&bad), FEDC_EINVAL, "two hyperparameters are called k");
    CHECK(fedc_algorithm_find("bad_hparams") == NULL);

    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    fedc_algorithm_print_hparams(&fedc_algorithm_fedprox, f);
    fclose(f);
    CHECK_MSG(text && strstr(text, "--set mu=X") && strstr(text, "default 0.01, in [0, 1e+06]"), "%s", text);
    free(text);
}

/* One round's data: random features and labels; client i has STEPS - i real batches. */
typedef struct round_data {
    float x[CLIENTS * STEPS * BATCH * FEATURES], mask[CLIENTS * STEPS * BATCH], num_examples[CLIENTS];
    int32_t y[CLIENTS * STEPS * BATCH], steps[CLIENTS], key[4 * CLIENTS];
} round_data;

static void make_data(round_data *d) {
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof d->x / sizeof *d->x; i++) {
        s = s * 1664525u + 1013904223u;
        d->x[i] = (float)((s >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    for (int i = 0; i < CLIENTS * STEPS * BATCH; i++) d->y[i] = (int32_t)((i * 7 + i / 5) % 2), d->mask[i] = 1;
    for (int c = 0; c < CLIENTS; c++) d->steps[c] = STEPS - c, d->num_examples[c] = (float)(100 * (c + 1));
    memset(d->key, 0, sizeof d->key);
}

/* Runs one round of `a` from the model's seed-1 initialisation; writes the new
 * model to w (fedc_model_size floats). */
static fedc_status run_round(const fedc_algorithm *a, float *w) {
    static round_data d;
    make_data(&d);
    fedc_model *m = NULL;
    fedc_program *round = NULL;
    fedc_executor *ex = NULL;
    fedc_server_state *s = NULL;
    fedc_status st = fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES});
    if (!st) st = fedc_model_init(m, 1, w);
    if (!st) st = fedc_algorithm_round(m, a, &round);
    if (!st) st = fedc_executor_create(&ex, round, &(fedc_exec_options){.clients = CLIENTS});
    if (!st) st = fedc_server_state_create(&s, m, a, w);
    if (!st) st = fedc_server_state_bind(s, ex);
    const char *names[5] = {"x", "y", "mask", "steps", "key"};
    const void *data[5] = {d.x, d.y, d.mask, d.steps, d.key};
    for (int i = 0; !st && i < 5; i++) st = fedc_executor_bind(ex, names[i], data[i]);
    if (!st && fedc_program_find_input(round, "meta/num_examples") != FEDC_NONE)
        st = fedc_executor_bind(ex, "meta/num_examples", d.num_examples);
    if (!st) st = fedc_executor_run(ex);
    if (!st) st = fedc_server_state_update(s, ex);
    if (!st) st = fedc_server_state_params(s, w);
    fedc_server_state_destroy(s);
    fedc_executor_destroy(ex);
    fedc_program_destroy(round);
    fedc_model_destroy(m);
    return st;
}

enum { SIZE = FEATURES * 2 + 2 }; /* the heart model: dense 13 -> 2 */

static fedc_algorithm algorithm(const fedc_algorithm_def *def) {
    return (fedc_algorithm){.def = def, .client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.5),
                            .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0), .batch_size = BATCH,
                            .max_steps = STEPS};
}

static double distance(const float *a, const float *b) {
    double s = 0;
    for (int i = 0; i < SIZE; i++) s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return sqrt(s);
}

static void test_round_interface(void) {
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES}));
    CHECK_EQ_INT(fedc_model_size(m), SIZE);
    fedc_algorithm a = algorithm(&fedc_algorithm_fedavg);
    a.server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01);
    fedc_program *round = NULL, *init = NULL, *cinit = (fedc_program *)1;
    CHECK_OK(fedc_algorithm_round(m, &a, &round));
    CHECK_OK(fedc_algorithm_server_init(m, &a, &init));
    CHECK_OK(fedc_algorithm_client_init(m, &a, &cinit));
    CHECK(cinit == NULL); /* FedAvg keeps no client state */
    const char *in[] = {"server/params/dense1/w", "server/opt/mu/dense1/w", "server/opt/nu/dense1/b", "server/opt/count",
                        "x", "y", "mask", "steps", "key"};
    for (size_t i = 0; round && i < sizeof in / sizeof *in; i++)
        CHECK_MSG(fedc_program_find_input(round, in[i]) != FEDC_NONE, "the round has no input %s", in[i]);
    const char *out[] = {"server/params/dense1/b", "server/opt/count", "train_loss", "examples"};
    for (size_t i = 0; round && i < sizeof out / sizeof *out; i++)
        CHECK_MSG(fedc_program_find_output(round, out[i]) != FEDC_NONE, "the round has no output %s", out[i]);
    CHECK(round && fedc_program_find_input(round, "meta/num_examples") == FEDC_NONE); /* not asked for */
    CHECK(init && fedc_program_num_outputs(init) == 2 + 2 * 2 + 1);
    fedc_program_destroy(round);
    fedc_program_destroy(init);
    fedc_model_destroy(m);
}

static void test_fedprox(void) {
    float avg[SIZE], prox0[SIZE], prox_small[SIZE], prox_large[SIZE], w0[SIZE];
    fedc_algorithm a = algorithm(&fedc_algorithm_fedavg);
    CHECK_OK(run_round(&a, avg));
    a = algorithm(&fedc_algorithm_fedprox);
    CHECK_OK(fedc_algorithm_set(&a, "mu", 0));
    CHECK_OK(run_round(&a, prox0));
    CHECK_OK(fedc_algorithm_set(&a, "mu", 0.1));
    CHECK_OK(run_round(&a, prox_small));
    CHECK_OK(fedc_algorithm_set(&a, "mu", 1.9)); /* lr * mu < 2: the pull is stable and strong */
    CHECK_OK(run_round(&a, prox_large));
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES}));
    CHECK_OK(fedc_model_init(m, 1, w0));
    fedc_model_destroy(m);
    CHECK_MSG(!memcmp(avg, prox0, sizeof avg), "mu = 0 is not FedAvg's bits");
    double moved = distance(avg, w0), small = distance(prox_small, w0), large = distance(prox_large, w0);
    printf("    distance from the server's model: FedAvg %.5f, mu 0.1 %.5f, mu 1.9 %.5f\n", moved, small, large);
    CHECK_MSG(moved > 1e-3 && small < moved && small > 0.5 * moved, "FedAvg %g, mu 0.1 %g", moved, small);
    CHECK_MSG(large < 0.4 * moved, "a large mu did not keep the clients near the server: %g vs FedAvg's %g", large, moved);
}

/* A user's algorithm that wraps FedProx's round: with FedProx's hyperparameters
 * it is FedProx (it used to build plain FedAvg, silently); without them, the
 * round fails, naming mu. */
static fedc_status wrapped_round(fedc_round *r) { return fedc_algorithm_fedprox.round(r); }

static void test_wrapped_fedprox(void) {
    static fedc_algorithm_def with = {.name = "my_prox", .summary = "FedProx, wrapped", .round = wrapped_round};
    with.hparams = fedc_algorithm_fedprox.hparams, with.nhparams = fedc_algorithm_fedprox.nhparams;
    static const fedc_algorithm_def without = {.name = "my_prox_bare", .summary = "", .round = wrapped_round};
    CHECK_OK(fedc_algorithm_register(&with));
    CHECK_OK(fedc_algorithm_register(&without));
    float prox[SIZE], mine[SIZE], avg[SIZE];
    fedc_algorithm a = algorithm(&fedc_algorithm_fedprox);
    CHECK_OK(fedc_algorithm_set(&a, "mu", 1));
    CHECK_OK(run_round(&a, prox));
    a = algorithm(fedc_algorithm_find("my_prox"));
    CHECK_OK(fedc_algorithm_set(&a, "mu", 1));
    CHECK_OK(run_round(&a, mine));
    a = algorithm(&fedc_algorithm_fedavg);
    CHECK_OK(run_round(&a, avg));
    CHECK_MSG(!memcmp(prox, mine, sizeof prox), "the wrapper is not FedProx");
    CHECK(memcmp(avg, mine, sizeof avg) != 0);
    a = algorithm(fedc_algorithm_find("my_prox_bare"));
    CHECK_ERR(run_round(&a, mine), FEDC_EINVAL, "my_prox_bare has no hyperparameter \"mu\"");
}

static void test_weighting(void) {
    float ex[SIZE], data[SIZE], uni[SIZE];
    fedc_algorithm a = algorithm(&fedc_algorithm_fedavg);
    CHECK_OK(run_round(&a, ex));
    a.weighting = FEDC_WEIGHT_DATASET;
    CHECK_OK(run_round(&a, data));
    a.weighting = FEDC_WEIGHT_UNIFORM;
    CHECK_OK(run_round(&a, uni));
    CHECK(memcmp(ex, data, sizeof ex) && memcmp(ex, uni, sizeof ex) && memcmp(data, uni, sizeof ex));
    /* uniform: the plain mean of the three clients' models; by examples, 12:8:4 */
    fedc_weighting w;
    CHECK_OK(fedc_weighting_parse("dataset", &w));
    CHECK(w == FEDC_WEIGHT_DATASET && !strcmp(fedc_weighting_name(FEDC_WEIGHT_UNIFORM), "uniform"));
    CHECK_ERR(fedc_weighting_parse("steps", &w), FEDC_EINVAL, "unknown client weighting \"steps\"");
}


/* SCAFFOLD's round by hand, two rounds with the client state carried:
 * from zero control variates its first round is FedAvg's, to the bit; the
 * clients' new c_i are (x - y_i) / (K_i lr), so their example-weighted mean times
 * K_i lr is FedAvg's mean delta; the server's c is sum c_i / N; the second round,
 * corrected, differs from FedAvg's. */
static void test_scaffold(void) {
    static round_data d;
    make_data(&d);
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES}));
    fedc_algorithm a = algorithm(&fedc_algorithm_scaffold);
    fedc_program *round = NULL;
    fedc_executor *ex = NULL;
    fedc_server_state *s = NULL;
    float w[SIZE], x0[SIZE], avg[SIZE], avg2[SIZE], cs[CLIENTS * SIZE] = {0}, population = 10;
    CHECK_OK(fedc_model_init(m, 1, w));
    memcpy(x0, w, sizeof w);
    CHECK_OK(fedc_algorithm_round(m, &a, &round));
    CHECK_OK(fedc_executor_create(&ex, round, &(fedc_exec_options){.clients = CLIENTS}));
    CHECK_OK(fedc_server_state_create(&s, m, &a, w));
    if (!ex || !s) goto done;
    CHECK_OK(fedc_server_state_bind(s, ex));
    const char *names[7] = {"x", "y", "mask", "steps", "key", "client/c/dense1/w", "client/c/dense1/b"};
    const void *data[7] = {d.x, d.y, d.mask, d.steps, d.key, cs, cs + CLIENTS * 2 * FEATURES};
    for (int i = 0; i < 7; i++) CHECK_OK(fedc_executor_bind(ex, names[i], data[i]));
    CHECK_OK(fedc_executor_bind(ex, "meta/population", &population));
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_server_state_update(s, ex));
    CHECK_OK(fedc_server_state_params(s, w));
    fedc_algorithm fa = algorithm(&fedc_algorithm_fedavg);
    CHECK_OK(run_round(&fa, avg));
    CHECK_MSG(!memcmp(w, avg, sizeof w), "SCAFFOLD's first round is not FedAvg's");
    const float *ci_w = NULL, *c_w = NULL;
    CHECK_OK(fedc_executor_output(ex, "client/c/dense1/w", (const void **)&ci_w, NULL));
    CHECK_OK(fedc_executor_output(ex, "server/c/dense1/w", (const void **)&c_w, NULL));
    if (!ci_w || !c_w) goto done;
    for (int j = 0; j < 2 * FEATURES; j++) {
        double sum = 0, weighted = 0, weights = 0;
        for (int i = 0; i < CLIENTS; i++) {
            double k = d.steps[i], ci = ci_w[i * 2 * FEATURES + j];
            sum += ci, weighted += k * BATCH * (ci * k * 0.5), weights += k * BATCH;
        }
        CHECK_NEAR(c_w[j], sum / population, 1e-6);
        CHECK_NEAR(weighted / weights, x0[j] - avg[j], 1e-5);
    }
    /* round 2: the new c_i in, the corrected steps differ from FedAvg's second round */
    memcpy(cs, ci_w, CLIENTS * 2 * FEATURES * sizeof(float));
    const float *ci_b = NULL;
    CHECK_OK(fedc_executor_output(ex, "client/c/dense1/b", (const void **)&ci_b, NULL));
    if (ci_b) memcpy(cs + CLIENTS * 2 * FEATURES, ci_b, CLIENTS * 2 * sizeof(float));
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_server_state_update(s, ex));
    CHECK_OK(fedc_server_state_params(s, w));
    fedc_server_state *fs = NULL;
    fedc_program *fround = NULL;
    fedc_executor *fex = NULL;
    CHECK_OK(fedc_algorithm_round(m, &fa, &fround));
    CHECK_OK(fedc_executor_create(&fex, fround, &(fedc_exec_options){.clients = CLIENTS}));
    CHECK_OK(fedc_server_state_create(&fs, m, &fa, avg));
    if (fex && fs) {
        CHECK_OK(fedc_server_state_bind(fs, fex));
        for (int i = 0; i < 5; i++) CHECK_OK(fedc_executor_bind(fex, names[i], data[i]));
        CHECK_OK(fedc_executor_run(fex));
        CHECK_OK(fedc_server_state_update(fs, fex));
        CHECK_OK(fedc_server_state_params(fs, avg2));
        CHECK(memcmp(w, avg2, sizeof w) != 0);
        printf("    round 2: SCAFFOLD moved %.5f from FedAvg's model\n", distance(w, avg2));
    }
    fedc_server_state_destroy(fs);
    fedc_executor_destroy(fex);
    fedc_program_destroy(fround);
    /* option II assumes SGD steps */
    a.client_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01);
    fedc_program *bad = NULL;
    CHECK_ERR(fedc_algorithm_round(m, &a, &bad), FEDC_EINVAL, "scaffold: the client optimizer must be sgd");
done:
    fedc_server_state_destroy(s);
    fedc_executor_destroy(ex);
    fedc_program_destroy(round);
    fedc_model_destroy(m);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"hyperparameters", test_hyperparameters}, {"round interface", test_round_interface},
        {"fedprox", test_fedprox},                 {"wrapped fedprox", test_wrapped_fedprox},
        {"weighting", test_weighting},             {"scaffold", test_scaffold},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
