/* APFL (src/fl/apfl.c) against FedJAX's own tests (fedjax/algorithms/apfl_test.py),
 * with their values: the round is built on FedJAX's test gradient, grad = w /
 * sum(batch x) (here the gradient of sum(w^2) / (2 sum x)), and run on their data.
 *
 * Where fedc differs by design: FedJAX batches a client's examples with its own
 * shuffle (seed 0); the round takes its batches as given, so the test gives it the
 * batches FedJAX's shuffle made: cid0's [2, 4, 6] in batches of 2 are [4, 6] and
 * [2, 2] (the last batch filled with a resampled example), the only order that
 * gives FedJAX's results (and its delta norm 1.4534444). fedc pads cid1's second
 * batch instead of running it (steps 1). The evaluation tests use FedJAX's
 * fake_model; then fedc_train's personalized evaluation on FEMNIST. */
#include <math.h>
#include <string.h>

#include "../src/fl/apfl.h"
#include "fedc/fedc.h"
#include "fl_train_case.h"
#include "harness.h"

static fedc_type typed(fedc_dtype dt, int rank, const int64_t *dims, fedc_placement pl) {
    fedc_type t = fedc_type_make(dt, rank, dims);
    t.placement = pl;
    return t;
}

/* sum(w^2) / (2 sum x) on a batch: its gradient is FedJAX's test gradient w / sum x. */
static fedc_program *test_gradient(int wrank, const int64_t *wdims, int64_t batch) {
    fedc_program *p, *g = NULL;
    if (fedc_program_create(&p)) return NULL;
    fedc_value w = fedc_input(p, "w/w", fedc_type_make(FEDC_F32, wrank, wdims));
    fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 1, &batch));
    fedc_input(p, "y", fedc_type_make(FEDC_I32, 1, &batch));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, &batch));
    fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_value sq = fedc_reduce_sum(p, fedc_square(p, w), NULL, -1, false);
    fedc_value sx = fedc_reduce_sum(p, x, NULL, -1, false);
    fedc_program_output(p, "loss", fedc_div(p, sq, fedc_mul(p, sx, fedc_scalar(p, FEDC_F32, 2))));
    fedc_program_output(p, "count", fedc_reduce_sum(p, mask, NULL, -1, false));
    if (!fedc_program_status(p)) CHECK_OK(fedc_grad_tree(p, "loss", "w", &g));
    fedc_program_destroy(p);
    return g;
}

/* The inputs of APFL's round, or (no key) of its evaluation, on a model of one
 * tensor "w" of shape wdims, batches of `batch` scalar examples, `steps` of them. */
static fedc_round test_inputs(fedc_program *p, const fedc_algorithm *a, int wrank, const int64_t *wdims, int64_t steps,
                              int64_t batch, bool key) {
    fedc_round r = {.alg = a, .p = p, .server = fedc_tree_new(p), .client = fedc_tree_new(p), .data = fedc_tree_new(p)};
    fedc_tree_set(p, r.server, "params/w", fedc_input(p, "server/params/w", typed(FEDC_F32, wrank, wdims, FEDC_SERVER)));
    fedc_tree_set(p, r.client, "params/w", fedc_input(p, "client/params/w", typed(FEDC_F32, wrank, wdims, FEDC_CLIENTS)));
    fedc_tree_set(p, r.client, "alpha/w", fedc_input(p, "client/alpha/w", typed(FEDC_F32, 0, NULL, FEDC_CLIENTS)));
    int64_t sb[2] = {steps, batch};
    fedc_tree_set(p, r.data, "x", fedc_input(p, "x", typed(FEDC_F32, 2, sb, FEDC_CLIENTS)));
    fedc_tree_set(p, r.data, "y", fedc_input(p, "y", typed(FEDC_I32, 2, sb, FEDC_CLIENTS)));
    fedc_tree_set(p, r.data, "mask", fedc_input(p, "mask", typed(FEDC_F32, 2, sb, FEDC_CLIENTS)));
    fedc_tree_set(p, r.data, "steps", fedc_input(p, "steps", typed(FEDC_I32, 0, NULL, FEDC_CLIENTS)));
    if (key) fedc_tree_set(p, r.data, "key", fedc_input(p, "key", typed(FEDC_I32, 1, (int64_t[]){4}, FEDC_CLIENTS)));
    return r;
}

/* A round of `clients` on a model of one tensor "w" of shape wdims, batches of
 * `batch` scalar examples, `steps` of them. */
static fedc_program *test_round(const fedc_algorithm *a, int wrank, const int64_t *wdims, int64_t steps, int64_t batch) {
    fedc_program *p, *grad = test_gradient(wrank, wdims, batch);
    if (!grad || fedc_program_create(&p)) return NULL;
    fedc_round r = test_inputs(p, a, wrank, wdims, steps, batch, true);
    CHECK_OK(fedc__apfl_round_with(&r, grad));
    fedc_program_destroy(grad);
    return p;
}

/* FedJAX's test model, fake_model(): a batch's predictions are
 * argmax(one_hot(x * w % 3)) = (x * w) mod 3, elementwise (w has the batch's
 * length); here v mod 3 = v - 3 trunc(v / 3) for v >= 0. Its loss is 0. */
static fedc_program *fake_model(int64_t batch) {
    fedc_program *p;
    if (fedc_program_create(&p)) return NULL;
    fedc_value w = fedc_input(p, "w/w", fedc_type_make(FEDC_F32, 1, &batch));
    fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 1, &batch));
    fedc_value y = fedc_input(p, "y", fedc_type_make(FEDC_I32, 1, &batch));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, &batch));
    fedc_value v = fedc_mul(p, x, w), three = fedc_scalar(p, FEDC_F32, 3);
    fedc_value whole = fedc_cast(p, fedc_cast(p, fedc_div(p, v, three), FEDC_I32), FEDC_F32);
    fedc_value predicted = fedc_sub(p, v, fedc_mul(p, three, whole));
    fedc_value right = fedc_cast(p, fedc_eq(p, predicted, fedc_cast(p, y, FEDC_F32)), FEDC_F32);
    fedc_program_output(p, "loss", fedc_scalar(p, FEDC_F32, 0));
    fedc_program_output(p, "count", fedc_reduce_sum(p, mask, NULL, -1, false));
    fedc_program_output(p, "correct", fedc_reduce_sum(p, fedc_mul(p, right, mask), NULL, -1, false));
    if (fedc_program_status(p)) {
        CHECK_OK(fedc_program_status(p));
        fedc_program_destroy(p);
        return NULL;
    }
    return p;
}

/* APFL's evaluation of `clients` on fake_model, batches of 3, `steps` of them. */
static fedc_program *test_evaluation(const fedc_algorithm *a, int64_t steps) {
    fedc_program *p, *model = fake_model(3);
    if (!model || fedc_program_create(&p)) return NULL;
    fedc_round r = test_inputs(p, a, 1, (int64_t[]){3}, steps, 3, false);
    CHECK_OK(fedc__apfl_evaluation_with(&r, model));
    fedc_program_destroy(model);
    return p;
}

static fedc_algorithm sgd_apfl(void) {
    return (fedc_algorithm){.def = &fedc_algorithm_apfl, .client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0),
                            .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0), .weighting = FEDC_WEIGHT_DATASET};
}

static const float *out(fedc_executor *ex, const char *name) {
    const void *v = NULL;
    CHECK_OK(fedc_executor_output(ex, name, &v, NULL));
    return v;
}

/* apfl_test.py, test_adaptive_personalized_federated_learning ("apply"). */
static void test_apply(void) {
    fedc_algorithm a = sgd_apfl();
    fedc_program *round = test_round(&a, 1, (int64_t[]){3}, 2, 2);
    fedc_executor *ex = NULL;
    if (round) CHECK_OK(fedc_executor_create(&ex, round, &(fedc_exec_options){.clients = 2}));
    if (!ex) return;
    float w[3] = {0, 2, 4}, kept[6] = {9, 9, 9, 9, 9, 9}, alpha[2] = {0.5f, 0.5f};
    float x[8] = {4, 6, 2, 2, 8, 10, 0, 0}, mask[8] = {1, 1, 1, 1, 1, 1, 0, 0}, seen[2] = {0, 0}, examples[2] = {3, 2};
    int32_t y[8] = {0}, steps[2] = {2, 1}, key[8] = {0};
    const char *names[] = {"server/params/w", "client/params/w", "client/alpha/w", "x", "y", "mask", "steps", "key",
                           "meta/seen", "meta/num_examples"};
    const void *data[] = {w, kept, alpha, x, y, mask, steps, key, seen, examples};
    for (int i = 0; i < 10; i++) CHECK_OK(fedc_executor_bind(ex, names[i], data[i]));
    CHECK_OK(fedc_executor_run(ex));
    const float *nw = out(ex, "server/params/w"), *v = out(ex, "client/params/w"), *na = out(ex, "client/alpha/w");
    const float want_w[3] = {0, 1.5655555f, 3.131111f}, want_v[6] = {0, 1.35f, 2.7f, 0, 1.888889f, 3.777778f};
    for (int i = 0; nw && i < 3; i++) CHECK_NEAR(nw[i], want_w[i], 1e-6);
    for (int i = 0; v && i < 6; i++) CHECK_NEAR(v[i], want_v[i], 1e-6); /* a new client starts from the server's model */
    if (na) CHECK(na[0] == 0.5f && na[1] == 0.5f);
    fedc_executor_destroy(ex);
    fedc_program_destroy(round);
}

/* apfl_test.py, test_create_train_for_each_client: six clients with kept states
 * (seen), one batch [2, 4, 6], the server's w = 4. */
static void test_train_for_each_client(void) {
    fedc_algorithm a = sgd_apfl();
    a.weighting = FEDC_WEIGHT_UNIFORM;
    fedc_program *round = test_round(&a, 0, NULL, 1, 3);
    fedc_executor *ex = NULL;
    if (round) CHECK_OK(fedc_executor_create(&ex, round, &(fedc_exec_options){.clients = 6}));
    if (!ex) return;
    float w = 4, kept[6] = {2, 2, 2, 8, 8, 8}, alpha[6] = {0, 0.5f, 1, 0, 0.5f, 1}, seen[6] = {1, 1, 1, 1, 1, 1};
    float x[18], mask[18];
    int32_t y[18] = {0}, steps[6] = {1, 1, 1, 1, 1, 1}, key[24] = {0};
    for (int i = 0; i < 18; i++) x[i] = (float)(2 * (i % 3 + 1)), mask[i] = 1;
    const char *names[] = {"server/params/w", "client/params/w", "client/alpha/w", "x", "y", "mask", "steps", "key",
                           "meta/seen"};
    const void *data[] = {&w, kept, alpha, x, y, mask, steps, key, seen};
    for (int i = 0; i < 9; i++) CHECK_OK(fedc_executor_bind(ex, names[i], data[i]));
    CHECK_OK(fedc_executor_run(ex));
    const float *nw = out(ex, "server/params/w"), *v = out(ex, "client/params/w"), *na = out(ex, "client/alpha/w");
    const float want_v[6] = {1.6666666f, 1.75f, 1.8333334f, 7.6666665f, 7.5f, 7.3333335f};
    const float want_alpha[6] = {0.6666667f, 1, 1, 0, 0, 0};
    for (int i = 0; v && na && i < 6; i++) {
        CHECK_NEAR(v[i], want_v[i], 1e-6);
        CHECK_NEAR(na[i], want_alpha[i], 1e-6);
    }
    if (nw) CHECK_NEAR(4 - *nw, 0.33333325, 1e-6); /* every client's delta, so their mean */
    fedc_executor_destroy(ex);
    fedc_program_destroy(round);
}

/* Each client's accuracy from an evaluation's per-client sums. */
static void check_accuracies(fedc_executor *ex, int n, const float *want) {
    const float *correct = out(ex, "client_correct"), *count = out(ex, "client_count");
    for (int i = 0; correct && count && i < n; i++) CHECK_NEAR(correct[i] / count[i], want[i], 1e-6);
}

/* apfl_test.py, test_eval_adaptive_personalized_federated_learning: clients with
 * alpha 0, 0.5 and 1 over personal models [0, 1, 2], and cid3, never trained, at
 * the server's model [0, 2, 4]; one batch x [0, 2, 4], y [0, 2, 2]. */
static void test_eval(void) {
    fedc_algorithm a = sgd_apfl();
    fedc_program *eval = test_evaluation(&a, 1);
    fedc_executor *ex = NULL;
    if (eval) CHECK_OK(fedc_executor_create(&ex, eval, &(fedc_exec_options){.clients = 4}));
    if (!ex) return;
    float w[3] = {0, 2, 4}, kept[12] = {0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 0, 0}, alpha[4] = {0, 0.5f, 1, 0.5f};
    float seen[4] = {1, 1, 1, 0}, x[12], mask[12];
    int32_t y[12], steps[4] = {1, 1, 1, 1};
    for (int i = 0; i < 12; i++) x[i] = (float)(2 * (i % 3)), y[i] = i % 3 ? 2 : 0, mask[i] = 1;
    const char *names[] = {"server/params/w", "client/params/w", "client/alpha/w", "x", "y", "mask", "steps", "meta/seen"};
    const void *data[] = {w, kept, alpha, x, y, mask, steps, seen};
    for (int i = 0; i < 8; i++) CHECK_OK(fedc_executor_bind(ex, names[i], data[i]));
    CHECK_OK(fedc_executor_run(ex));
    check_accuracies(ex, 4, (const float[]){0.33333334f, 0.33333334f, 1, 0.33333334f});
    const float *count = out(ex, "count"), *correct = out(ex, "correct");
    if (count && correct) CHECK(*count == 12 && *correct == 6); /* the server's sums */
    fedc_executor_destroy(ex);
    fedc_program_destroy(eval);
}

/* apfl_test.py, test_create_eval_for_each_client: two batches each, alpha 0.5. */
static void test_eval_for_each_client(void) {
    fedc_algorithm a = sgd_apfl();
    fedc_program *eval = test_evaluation(&a, 2);
    fedc_executor *ex = NULL;
    if (eval) CHECK_OK(fedc_executor_create(&ex, eval, &(fedc_exec_options){.clients = 2}));
    if (!ex) return;
    float w[3] = {0, 2, 4}, kept[6] = {0, 1, 2, 0, 4, 16}, alpha[2] = {0.5f, 0.5f}, seen[2] = {1, 1};
    float x[12] = {2, 4, 6, 8, 10, 12, 1, 3, 5, 7, 9, 11}, mask[12];
    int32_t y[12] = {0, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 1}, steps[2] = {2, 2};
    for (int i = 0; i < 12; i++) mask[i] = 1;
    const char *names[] = {"server/params/w", "client/params/w", "client/alpha/w", "x", "y", "mask", "steps", "meta/seen"};
    const void *data[] = {w, kept, alpha, x, y, mask, steps, seen};
    for (int i = 0; i < 8; i++) CHECK_OK(fedc_executor_bind(ex, names[i], data[i]));
    CHECK_OK(fedc_executor_run(ex));
    check_accuracies(ex, 2, (const float[]){0.6666667f, 0});
    fedc_executor_destroy(ex);
    fedc_program_destroy(eval);
}

/* ------------------------------------------------------------ training -- */

/* fedc train evaluates APFL's personalized models: each test client at the
 * state kept for the training client of its id (FEMNIST's test writers are its
 * training writers), not at the global model that `fedc eval` reads; the same
 * bits on 2 threads and after a resume (which reads the stored states back). */
static void test_personalized_on_femnist(void) {
    char train[512], test[512];
    fedc_train_config c;
    if (!femnist_job(&fedc_algorithm_apfl, "apfl", train, test, &c)) return;
    c.rounds = 6, c.checkpoint_every = 6;
    fedc_train_result personal, global, threads, resumed;
    CHECK_OK(fedc_train(&c, &personal));
    char checkpoint[600];
    snprintf(checkpoint, sizeof checkpoint, "%s/checkpoint.safetensors", c.out_dir);
    CHECK_OK(fedc_evaluate_checkpoint(&c, checkpoint, &global));
    CHECK_MSG(personal.clients_evaluated == global.clients_evaluated && personal.test_loss != global.test_loss,
              "personalized: loss %.6f on %lld clients; global: %.6f on %lld", personal.test_loss,
              (long long)personal.clients_evaluated, global.test_loss, (long long)global.clients_evaluated);
    c.threads = 2, c.out_dir = fedc_test_tmp("apfl-threads");
    CHECK_OK(fedc_train(&c, &threads));
    CHECK(threads.test_loss == personal.test_loss && threads.test_accuracy == personal.test_accuracy);
    c.threads = 1, c.out_dir = fedc_test_tmp("apfl-resumed"), c.rounds = 3, c.checkpoint_every = 3;
    CHECK_OK(fedc_train(&c, &resumed));
    c.rounds = 6, c.resume = true;
    CHECK_OK(fedc_train(&c, &resumed));
    CHECK_MSG(resumed.test_loss == personal.test_loss && resumed.test_accuracy == personal.test_accuracy,
              "resumed: loss %.9g, uninterrupted %.9g", resumed.test_loss, personal.test_loss);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"apply (FedJAX's values)", test_apply},
        {"train for each client (FedJAX's values)", test_train_for_each_client},
        {"personalized evaluation (FedJAX's values)", test_eval},
        {"evaluation for each client (FedJAX's values)", test_eval_for_each_client},
        {"personalized evaluation on FEMNIST", test_personalized_on_femnist},
    };
    if (!fedc_test_tmpdir("apfl")) return 1;
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
