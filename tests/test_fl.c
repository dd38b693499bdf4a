/* Federated learning: the algorithms' round programs (FedAvg by hand on a tiny
 * case, every algorithm and server optimizer lowers the loss), evaluation, and the
 * training job end to end on the heart-disease silos and Fashion-MNIST: the loss
 * falls, accuracy beats chance, results are bitwise identical for 1 and 2 threads,
 * and a run resumed from a checkpoint ends exactly where an uninterrupted one does. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fedc/fedc.h"
#include "harness.h"

#define HEART "../shared/data/heart-disease-uci"
#define FASHION "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"

static bool exists(const char *path) {
    struct stat s;
    return stat(path, &s) == 0;
}

static fedc_train_config heart_config(const char *out) {
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = HEART;
    c.model = "heart";
    c.rounds = 6;
    c.clients_per_round = 4;
    c.algorithm.batch_size = 16;
    c.algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.1);
    c.eval_every = 3;
    c.out_dir = out;
    c.quiet = true;
    c.threads = 1;
    return c;
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*n ? *n : 1);
    if (b && fread(b, 1, *n, f) != *n) *n = 0;
    fclose(f);
    return b;
}

/* The model in a checkpoint, as bytes, for bitwise comparisons. */
static char *checkpoint(const char *dir, size_t *n) {
    char path[512];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    return slurp(path, n);
}

static const char *dir(const char *name) { return fedc_test_tmp(name); }

/* ------------------------------------------------------------- the job -- */

static void test_heart_loss_falls_and_beats_chance(void) {
    if (!exists(HEART)) {
        printf("    (no %s: skipped)\n", HEART);
        return;
    }
    fedc_train_config c = heart_config(dir("heart"));
    c.rounds = 20;
    c.eval_every = 20;
    fedc_train_result r;
    CHECK_OK(fedc_train(&c, &r));
    CHECK_EQ_INT(r.rounds_run, 20);
    CHECK_MSG(r.test_accuracy > 0.70, "heart accuracy %.3f after 20 rounds", r.test_accuracy);
    CHECK(r.test_loss < 0.693); /* below chance: log 2 */
    size_t n;
    char path[512];
    snprintf(path, sizeof path, "%s/metrics.jsonl", c.out_dir);
    char *m = slurp(path, &n);
    CHECK(m && strstr(m, "\"round\": 20") && strstr(m, "\"test_accuracy\"") && strstr(m, "\"examples_per_s\""));
    free(m);
    snprintf(path, sizeof path, "%s/curves.svg", c.out_dir);
    CHECK(exists(path));
}

static void test_bitwise_identical_for_1_and_2_threads(void) {
    if (!exists(HEART)) return;
    fedc_train_config a = heart_config(dir("t1")), b = heart_config(dir("t2"));
    a.checkpoint_every = b.checkpoint_every = 6;
    b.threads = 2;
    fedc_train_result r;
    CHECK_OK(fedc_train(&a, &r));
    CHECK_OK(fedc_train(&b, &r));
    size_t na = 0, nb = 0;
    char *ca = checkpoint(a.out_dir, &na), *cb = checkpoint(b.out_dir, &nb);
    CHECK(ca && cb && na == nb && na > 0 && memcmp(ca, cb, na) == 0);
    free(ca), free(cb);
}

static void test_resume_is_bitwise_identical(void) {
    if (!exists(HEART)) return;
    fedc_train_config whole = heart_config(dir("whole")), part = heart_config(dir("part"));
    whole.algorithm.server_opt = part.algorithm.server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01);
    whole.checkpoint_every = part.checkpoint_every = 3;
    fedc_train_result r;
    CHECK_OK(fedc_train(&whole, &r));
    part.rounds = 3; /* stop after 3 ... */
    CHECK_OK(fedc_train(&part, &r));
    part.rounds = 6; /* ... and resume to 6 */
    part.resume = true;
    CHECK_OK(fedc_train(&part, &r));
    CHECK_EQ_INT(r.rounds_run, 3);
    size_t na = 0, nb = 0;
    char *ca = checkpoint(whole.out_dir, &na), *cb = checkpoint(part.out_dir, &nb);
    CHECK(ca && cb && na == nb && na > 0 && memcmp(ca, cb, na) == 0);
    free(ca), free(cb);
    /* evaluating the checkpoint gives the run's last evaluation */
    fedc_train_result again;
    char path[600];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", whole.out_dir);
    fedc_train_result last;
    CHECK_OK(fedc_train(&whole, &last)); /* the whole run again, for its figures */
    CHECK_OK(fedc_evaluate_checkpoint(&whole, path, &again));
    CHECK_NEAR(again.test_accuracy, last.test_accuracy, 0);
    CHECK_NEAR(again.test_loss, last.test_loss, 1e-12);
    CHECK(again.accuracy_quantiles[0] <= again.accuracy_quantiles[1] &&
          again.accuracy_quantiles[1] <= again.accuracy_quantiles[2]);
    /* a checkpoint of another run is refused */
    fedc_train_config other = heart_config(dir("part"));
    other.resume = true;
    other.algorithm.batch_size = 8;
    CHECK_ERR(fedc_train(&other, &r), FEDC_EINVAL, "written by another run");
}

/* Every algorithm and server optimizer trains Fashion-MNIST's logistic model past
 * chance (10%) in a few rounds. */
static void test_algorithms_on_fashion_mnist(void) {
    if (!exists(FASHION)) {
        printf("    (no %s: skipped)\n", FASHION);
        return;
    }
    static const struct {
        const fedc_algorithm_def *def;
        fedc_optimizer_kind server;
        double server_lr;
    } runs[] = {
        {&fedc_algorithm_fedavg, FEDC_OPT_SGD, 1.0},    {&fedc_algorithm_fedsgd, FEDC_OPT_SGD, 0.1},
        {&fedc_algorithm_fedprox, FEDC_OPT_SGD, 1.0},   {&fedc_algorithm_fedavg, FEDC_OPT_ADAM, 0.01},
        {&fedc_algorithm_fedavg, FEDC_OPT_YOGI, 0.03},  {&fedc_algorithm_fedavg, FEDC_OPT_ADAGRAD, 0.1},
        {&fedc_algorithm_fedavg, FEDC_OPT_MOMENTUM, 0.5},
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        fedc_train_config c;
        fedc_train_defaults(&c);
        c.data = FASHION;
        c.partition = "dirichlet:0.5";
        c.num_clients = 50;
        c.model = "logistic";
        c.algorithm.def = runs[i].def;
        c.algorithm.prox_mu = 0.01;
        c.algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.05);
        c.algorithm.server_opt = fedc_optimizer_defaults(runs[i].server, runs[i].server_lr);
        c.rounds = 4;
        c.clients_per_round = 5;
        c.steps = 10;
        c.eval_every = 4;
        c.out_dir = dir("fashion");
        c.quiet = true;
        fedc_train_result r;
        CHECK_OK(fedc_train(&c, &r));
        printf("    %s, server %s: test accuracy %.3f after 4 rounds\n", runs[i].def->name,
               fedc_optimizer_name(runs[i].server), r.test_accuracy);
        CHECK_MSG(r.test_accuracy > 0.2, "%s with server %s: accuracy %.3f (chance 0.1)", runs[i].def->name,
                  fedc_optimizer_name(runs[i].server), r.test_accuracy);
    }
}

/* An algorithm defined outside the library, over the public API, and found by
 * name once registered: FedAvg whose server takes half steps (a damped server). */
static fedc_status halfstep_round(const fedc_model *m, const fedc_algorithm *a, fedc_program **out) {
    fedc_algorithm damped = *a;
    damped.server_opt.learning_rate = a->server_opt.learning_rate / 2;
    return fedc_algorithm_fedavg.round(m, &damped, out);
}

static const fedc_algorithm_def halfstep = {"fedavg_halfstep", "FedAvg with half server steps", false, halfstep_round};

static fedc_train_result train_briefly(const fedc_algorithm_def *def, double server_lr) {
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = FASHION;
    c.partition = "iid";
    c.num_clients = 20;
    c.model = "logistic";
    c.algorithm.def = def;
    c.algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.05);
    c.algorithm.server_opt = fedc_optimizer_defaults(FEDC_OPT_MOMENTUM, server_lr);
    c.rounds = 3;
    c.clients_per_round = 4;
    c.steps = 5;
    c.eval_every = 3;
    c.eval_clients = 4;
    c.out_dir = dir("registered");
    c.quiet = true;
    fedc_train_result r = {0};
    CHECK_OK(fedc_train(&c, &r));
    return r;
}

static void test_registered_algorithm(void) {
    CHECK(fedc_algorithm_find("fedavg_halfstep") == NULL);
    CHECK(strstr(fedc_errmsg(), "unknown algorithm \"fedavg_halfstep\"") && strstr(fedc_errmsg(), "fedprox"));
    CHECK_OK(fedc_algorithm_register(&halfstep));
    CHECK_ERR(fedc_algorithm_register(&halfstep), FEDC_EINVAL, "\"fedavg_halfstep\" is already an algorithm");
    CHECK_ERR(fedc_algorithm_register(&(fedc_algorithm_def){"no_round", "", false, NULL}), FEDC_EINVAL,
              "needs a name and a round builder");
    CHECK(fedc_algorithm_find("fedavg_halfstep") == &halfstep);
    CHECK(fedc_algorithm_at(fedc_algorithm_count() - 1) == &halfstep);
    if (!exists(FASHION)) {
        printf("    (no %s: training skipped)\n", FASHION);
        return;
    }
    /* found by name, it trains exactly as FedAvg with half the server learning rate */
    fedc_train_result mine = train_briefly(fedc_algorithm_find("fedavg_halfstep"), 0.5);
    fedc_train_result builtin = train_briefly(&fedc_algorithm_fedavg, 0.25);
    fedc_train_result plain = train_briefly(&fedc_algorithm_fedavg, 0.5);
    CHECK(mine.rounds_run == 3 && mine.train_loss == builtin.train_loss && mine.test_loss == builtin.test_loss);
    CHECK_MSG(mine.test_loss != plain.test_loss, "half steps changed nothing (test loss %g)", mine.test_loss);
}

static void test_bad_configurations(void) {
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.quiet = true;
    c.out_dir = dir("bad");
    fedc_train_result r;
    c.data = "/nonexistent/data";
    CHECK_ERR(fedc_train(&c, &r), FEDC_EIO, "/nonexistent/data");
    if (!exists(HEART)) return;
    c = heart_config(dir("bad"));
    c.clients_per_round = 9;
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "9 clients per round, but the data has 4 clients");
    c = heart_config(dir("bad"));
    c.model = "cnn";
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "model \"cnn\" does not fit the heart task");
    c = heart_config(dir("bad"));
    c.task = "nonsense";
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "unknown task");
}

/* ---------------------------------------------------------- programs -- */

/* The evaluation program's sums against a direct computation with the model. */
static void test_evaluation_program(void) {
    fedc_model *m;
    fedc_model_options o = {.num_classes = 2, .input_dim = 13};
    CHECK_OK(fedc_model_create(&m, "heart", &o));
    fedc_program *p;
    CHECK_OK(fedc_evaluation_program(m, 4, 2, &p));
    float w[28];
    CHECK_OK(fedc_model_init(m, 3, w));
    /* 2 clients x 2 steps x 4 examples; client 1 has one real step of 3 examples */
    float x[2 * 2 * 4 * 13], mask[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0};
    int32_t y[16], steps[2] = {2, 1};
    for (int i = 0; i < 2 * 2 * 4 * 13; i++) x[i] = (float)((i * 7) % 11) / 11 - 0.5f;
    for (int i = 0; i < 16; i++) y[i] = i % 2;
    fedc_executor *ex;
    fedc_exec_options eo = {.clients = 2};
    CHECK_OK(fedc_executor_create(&ex, p, &eo));
    for (int i = 0; i < fedc_model_num_params(m); i++)
        CHECK_OK(fedc_executor_bind(ex, fedc_model_param_name(m, i), w + fedc_model_param_offset(m, i)));
    CHECK_OK(fedc_executor_bind(ex, "x", x));
    CHECK_OK(fedc_executor_bind(ex, "y", y));
    CHECK_OK(fedc_executor_bind(ex, "mask", mask));
    CHECK_OK(fedc_executor_bind(ex, "steps", steps));
    CHECK_OK(fedc_executor_run(ex));
    const float *loss, *correct, *count;
    CHECK_OK(fedc_executor_output(ex, "loss_sum", (const void **)&loss, NULL));
    CHECK_OK(fedc_executor_output(ex, "correct", (const void **)&correct, NULL));
    CHECK_OK(fedc_executor_output(ex, "count", (const void **)&count, NULL));
    /* by hand: logits = x W + b for the 11 real examples */
    const float *W = w + fedc_model_param_offset(m, 0), *b = w + fedc_model_param_offset(m, 1);
    double want_loss = 0, want_correct = 0;
    for (int e = 0; e < 16; e++) {
        if (!mask[e] || (e >= 8 && e >= 8 + 4 * steps[1])) continue;
        double z[2];
        for (int k = 0; k < 2; k++) {
            z[k] = b[k];
            for (int j = 0; j < 13; j++) z[k] += (double)x[e * 13 + j] * W[j * 2 + k];
        }
        double mx = z[0] > z[1] ? z[0] : z[1], lse = mx + log(exp(z[0] - mx) + exp(z[1] - mx));
        want_loss += lse - z[y[e]];
        want_correct += (z[1] > z[0] ? 1 : 0) == y[e];
    }
    CHECK_NEAR(*count, 11, 0);
    CHECK_NEAR(*loss, want_loss, 1e-5);
    CHECK_NEAR(*correct, want_correct, 0);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    fedc_model_destroy(m);
}

int main(int argc, char **argv) {
    if (!fedc_test_tmpdir("test-fl")) return 1;
    static const fedc_test tests[] = {
        {"evaluation program", test_evaluation_program},
        {"heart: loss falls and beats chance", test_heart_loss_falls_and_beats_chance},
        {"bitwise identical for 1 and 2 threads", test_bitwise_identical_for_1_and_2_threads},
        {"resume is bitwise identical", test_resume_is_bitwise_identical},
        {"algorithms on fashion-mnist", test_algorithms_on_fashion_mnist},
        {"registered algorithm", test_registered_algorithm},
        {"bad configurations", test_bad_configurations},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
