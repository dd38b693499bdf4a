/* Federated learning: the algorithms' round programs (FedAvg by hand on a tiny
 * case, every algorithm and server optimizer lowers the loss), evaluation, and the
 * training job end to end on the heart-disease silos and Fashion-MNIST: the loss
 * falls, accuracy beats chance, results are bitwise identical for 1 and 2 threads,
 * and a run resumed from a checkpoint ends exactly where an uninterrupted one does. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fault.h"
#include "fedc/fedc.h"
#include "fl_train_case.h"
#include "harness.h"

/* The real silos where ../shared/data has them, else the small ones. */
#define HEART fedc_test_data("heart-disease-uci")
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

static const char *checkpoint_path(const char *dir) {
    static char path[512];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", dir);
    return path;
}

/* Whether two checkpoints hold the same tensors, bit for bit (their metadata
 * differ: the run's seconds, its --threads ...). */
static bool same_tensors(const char *dir_a, const char *dir_b) {
    fedc_safetensors *a = NULL, *b = NULL;
    char pa[512];
    snprintf(pa, sizeof pa, "%s", checkpoint_path(dir_a));
    bool same = fedc_safetensors_read(pa, &a) == FEDC_OK && fedc_safetensors_read(checkpoint_path(dir_b), &b) == FEDC_OK &&
                fedc_safetensors_count(a) == fedc_safetensors_count(b) && fedc_safetensors_count(a) > 0;
    for (int i = 0; same && i < fedc_safetensors_count(a); i++) {
        fedc_tensor_entry x = fedc_safetensors_tensor(a, i), y = fedc_safetensors_tensor(b, i);
        size_t n = fedc_type_bytes(&x.type);
        same = !strcmp(x.name, y.name) && fedc_type_same_shape(&x.type, &y.type) && n == fedc_type_bytes(&y.type) &&
               memcmp(x.data, y.data, n) == 0;
    }
    fedc_safetensors_destroy(a);
    fedc_safetensors_destroy(b);
    return same;
}

static const char *dir(const char *name) { return fedc_test_tmp(name); }

/* Fails the current test when neither the real nor the small heart-disease silos are there. */
static bool have_heart(void) {
    if (HEART && exists(HEART)) return true;
    fedc_test_fail(__FILE__, __LINE__, "the heart-disease data are not there");
    return false;
}

/* ------------------------------------------------------------- the job -- */

static void test_heart_loss_falls_and_beats_chance(void) {
    if (!have_heart()) return;
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

/* on_round: called after every round, in order, with the figures so far (no test
 * figures before the first evaluation); its status stops the job. */
typedef struct round_log {
    int calls, evaluated, stop_at;
    bool out_of_order, test_before_eval;
    double last_train_loss;
} round_log;

static fedc_status log_round(void *ctx, int round, bool evaluated, const fedc_train_result *so_far) {
    round_log *log = ctx;
    log->out_of_order |= round != ++log->calls || so_far->rounds_run != round;
    log->evaluated += evaluated;
    log->test_before_eval |= round < 3 && !isnan(so_far->test_loss);
    log->last_train_loss = so_far->train_loss;
    return round == log->stop_at ? fedc_error(FEDC_EINVAL, "stopped at round %d", round) : FEDC_OK;
}

static void test_on_round(void) {
    if (!have_heart()) return;
    fedc_train_config c = heart_config(dir("on-round")); /* 6 rounds, evaluated every 3 */
    round_log log = {0};
    c.on_round = log_round, c.on_round_ctx = &log;
    fedc_train_result r;
    CHECK_OK(fedc_train(&c, &r));
    CHECK_EQ_INT(log.calls, 6);
    CHECK_EQ_INT(log.evaluated, 2);
    CHECK(!log.out_of_order && !log.test_before_eval);
    CHECK(log.last_train_loss == r.train_loss);
    round_log stop = {.stop_at = 2};
    c.on_round_ctx = &stop, c.out_dir = dir("on-round-stop");
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "stopped at round 2");
    CHECK_EQ_INT(stop.calls, 2);
}

static void test_bitwise_identical_for_1_and_2_threads(void) {
    if (!have_heart()) return;
    fedc_train_config a = heart_config(dir("t1")), b = heart_config(dir("t2"));
    a.checkpoint_every = b.checkpoint_every = 6;
    b.threads = 2;
    fedc_train_result r;
    CHECK_OK(fedc_train(&a, &r));
    CHECK_OK(fedc_train(&b, &r));
    CHECK(same_tensors(a.out_dir, b.out_dir));
}

static void test_resume_is_bitwise_identical(void) {
    if (!have_heart()) return;
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
    CHECK(same_tensors(whole.out_dir, part.out_dir));
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
    CHECK_ERR(fedc_train(&other, &r), FEDC_EINVAL, "--batch-size 8 (the checkpoint's: 16)");
}

static bool put_file(const char *path, const char *data, size_t n) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, n, f) == n;
    return f && fclose(f) == 0 && ok;
}

/* Writes `bytes` (a checkpoint) to `path` with a piece `from` of its JSON header
 * replaced by `to` (the header padded to 8 bytes again) and, if nan_at >= 0, a NaN
 * over element nan_at of its first tensor. */
static bool edited_checkpoint(const char *path, const char *bytes, size_t n, const char *from, const char *to,
                              long nan_at) {
    uint64_t len = 0;
    for (int i = 0; i < 8; i++) len |= (uint64_t)(unsigned char)bytes[i] << (8 * i);
    const char *head = bytes + 8, *at = from ? strstr(head, from) : NULL;
    if (len > n - 8 || (from && (!at || at >= head + len))) return false;
    size_t keep = at ? (size_t)(at - head) : len, skip = at ? strlen(from) : 0;
    char *out = malloc(n + 64 + (to ? strlen(to) : 0));
    size_t h = 0;
    memcpy(out + 8, head, keep), h += keep;
    if (at) memcpy(out + 8 + h, to, strlen(to)), h += strlen(to);
    memcpy(out + 8 + h, head + keep + skip, len - keep - skip), h += len - keep - skip;
    while (h > 0 && out[8 + h - 1] == ' ') h--;
    while (h % 8) out[8 + h++] = ' ';
    for (int i = 0; i < 8; i++) out[i] = (char)(h >> (8 * i));
    memcpy(out + 8 + h, head + len, n - 8 - len);
    if (nan_at >= 0) {
        float nan = NAN;
        memcpy(out + 8 + h + 4 * nan_at, &nan, 4);
    }
    bool ok = put_file(path, out, 8 + h + (n - 8 - len));
    free(out);
    return ok;
}

/* A resume is refused when the checkpoint's job differs in what changes the
 * model, or when the checkpoint itself is not sound; what may differ does. */
static void test_resume_checks(void) {
    if (!have_heart()) return;
    fedc_train_config c = heart_config(dir("checks"));
    c.rounds = 3, c.checkpoint_every = 3;
    fedc_train_result r, again;
    CHECK_OK(fedc_train(&c, &r));
    c.resume = true;
    fedc_train_config changed = c;
    changed.algorithm.client_opt.learning_rate = 0.05;
    CHECK_ERR(fedc_train(&changed, &again), FEDC_EINVAL, "--client-lr 0.05 (the checkpoint's: 0.1)");
    changed = c;
    changed.algorithm.server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 1.0);
    CHECK_ERR(fedc_train(&changed, &again), FEDC_EINVAL, "--server-opt adam momentum=0 nesterov=0 b1=0.9");
    changed = c;
    char link[600];
    snprintf(link, sizeof link, "%s", dir("heart-link"));
    char real[4096];
    CHECK(realpath(HEART, real) != NULL);
    CHECK(symlink(real, link) == 0);
    changed.data = link; /* data are compared by the path given */
    CHECK_ERR(fedc_train(&changed, &again), FEDC_EINVAL, "--data");
    CHECK(strstr(fedc_errmsg(), HEART) && strstr(fedc_errmsg(), "what changes the result"));
    /* the number of rounds (to extend the run), threads and evaluation may change */
    changed = c;
    changed.rounds = 5, changed.threads = 2, changed.eval_every = 1;
    CHECK_OK(fedc_train(&changed, &again));
    CHECK_EQ_INT(again.rounds_run, 2);
    CHECK(!again.already_complete);
    /* resumed once more, the finished run has nothing to do and says so */
    fedc_train_result done;
    CHECK_OK(fedc_train(&changed, &done));
    CHECK(done.already_complete);
    CHECK_EQ_INT(done.rounds_run, 0);
    CHECK_NEAR(done.test_accuracy, again.test_accuracy, 1e-5); /* its metrics' last row, 6 digits */
    CHECK_NEAR(done.train_loss, again.train_loss, 1e-5);
    changed.rounds = 4;
    CHECK_ERR(fedc_train(&changed, &done), FEDC_EINVAL, "is after round 5, beyond --rounds 4");
    /* broken checkpoints: next_round missing, not a round, a NaN in the model */
    size_t n;
    char *good = slurp(checkpoint_path(c.out_dir), &n);
    CHECK(good && n > 8);
    if (!good) return;
    changed.rounds = 6;
    static const struct {
        const char *to;
        fedc_status st;
        const char *needle;
    } bad[] = {{"\"next_round\":\"abc\"", FEDC_EPARSE, "\"next_round\" is \"abc\", not a round number"},
               {"\"next_round\":\"-1\"", FEDC_EPARSE, "\"next_round\" is \"-1\""},
               {"\"next_round\":\"0\"", FEDC_EPARSE, "\"next_round\" is \"0\""},
               {"\"next_round\":\"2147483648\"", FEDC_EPARSE, "\"next_round\" is \"2147483648\""},
               {"\"nxet_round\":\"5\"", FEDC_EINVAL, "the metadata has no \"next_round\""}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(edited_checkpoint(checkpoint_path(c.out_dir), good, n, "\"next_round\":\"5\"", bad[i].to, -1));
        CHECK_ERR(fedc_train(&changed, &done), bad[i].st, bad[i].needle);
    }
    CHECK(edited_checkpoint(checkpoint_path(c.out_dir), good, n, NULL, NULL, 3));
    CHECK_ERR(fedc_train(&changed, &done), FEDC_ENONFINITE, "\"dense1/w\" holds a non-finite value (element 3)");
    CHECK(put_file(checkpoint_path(c.out_dir), good, n)); /* and the intact one still resumes */
    CHECK_OK(fedc_train(&changed, &done));
    CHECK_EQ_INT(done.rounds_run, 1);
    free(good);
}

/* A diverging run stops at the round that diverged, counted as the metrics
 * count, and leaves the last good checkpoint as it was. */
static void test_divergence_keeps_the_last_checkpoint(void) {
    if (!have_heart()) return;
    fedc_train_config c = heart_config(dir("diverge"));
    c.rounds = 4, c.checkpoint_every = 1;
    /* finite after round 1, not 2 (where the first update's hidden units overflow
     * the output: at 3e36 on the real silos, at 3e37 on the small ones) */
    double lr = fedc_test_data_is_real("heart-disease-uci") ? 3e36 : 3e37;
    c.algorithm.server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, lr);
    fedc_train_result r;
    CHECK_ERR(fedc_train(&c, &r), FEDC_ENONFINITE, "round 2: ");
    fedc_safetensors *s = NULL;
    CHECK_OK(fedc_safetensors_read(checkpoint_path(c.out_dir), &s));
    if (!s) return;
    const char *next = fedc_safetensors_metadata(s, "next_round");
    CHECK(next && !strcmp(next, "1")); /* rounds done: round 1 */
    int64_t values = 0, finite = 0;
    for (int i = 0; i < fedc_safetensors_count(s); i++) {
        fedc_tensor_entry e = fedc_safetensors_tensor(s, i);
        for (int64_t j = 0; j < fedc_type_count(&e.type); j++) finite += isfinite(((const float *)e.data)[j]), values++;
    }
    CHECK(values > 0 && finite == values);
    fedc_safetensors_destroy(s);
}

/* The failing-client policy: a client whose data cannot be loaded (simulated
 * with the load fault, core/fault.h) is dropped from its round and counted; --strict stops there. */
static void test_failing_client_is_dropped(void) {
    if (!have_heart()) return;
    fedc_train_config c = heart_config(dir("drop"));
    c.rounds = 3;
    fedc_train_result plain, r;
    CHECK_OK(fedc_train(&c, &plain));
    CHECK_OK(fedc__fault_set("load:2:1"));
    CHECK_OK(fedc_train(&c, &r));
    CHECK_EQ_INT(r.dropped, 1);
    CHECK_EQ_INT(r.rounds_run, 3);
    CHECK_MSG(r.train_loss != plain.train_loss, "dropping a client changed nothing (train loss %g)", r.train_loss);
    size_t n;
    char path[600];
    snprintf(path, sizeof path, "%s/metrics.jsonl", c.out_dir);
    char *m = slurp(path, &n);
    CHECK(m && strstr(m, "\"round\": 3, ") && strstr(m, "\"dropped\": 1, "));
    free(m);
    c.strict = true;
    CHECK_ERR(fedc_train(&c, &r), FEDC_EIO, "round 2: client \"hungarian\": cannot load its data");
    CHECK_OK(fedc__fault_set(NULL));
}

/* Every algorithm and server optimizer trains Fashion-MNIST's logistic model past
 * chance (10%) in a few rounds. */
static void test_algorithms_on_fashion_mnist(void) {
    if (!exists(FASHION)) {
        fedc_test_skip("%s is absent", FASHION);
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
        {&fedc_algorithm_fedavg, FEDC_OPT_MOMENTUM, 0.5}, {&fedc_algorithm_scaffold, FEDC_OPT_SGD, 1.0},
        {&fedc_algorithm_apfl, FEDC_OPT_SGD, 1.0},
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        fedc_train_config c;
        fedc_train_defaults(&c);
        c.data = FASHION;
        c.partition = "dirichlet:0.5";
        c.num_clients = 50;
        c.model = "logistic";
        c.algorithm.def = runs[i].def;
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
static fedc_status halfstep_round(fedc_round *r) {
    fedc_algorithm damped = *r->alg;
    damped.server_opt.learning_rate = r->alg->server_opt.learning_rate / 2;
    fedc_round half = *r;
    half.alg = &damped;
    return fedc_algorithm_fedavg.round(&half);
}

static const fedc_algorithm_def halfstep = {.name = "fedavg_halfstep", .summary = "FedAvg with half server steps",
                                            .round = halfstep_round};

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
    CHECK_ERR(fedc_algorithm_register(&(fedc_algorithm_def){.name = "no_round"}), FEDC_EINVAL,
              "needs a name and a round builder");
    CHECK(fedc_algorithm_find("fedavg_halfstep") == &halfstep);
    CHECK(fedc_algorithm_at(fedc_algorithm_count() - 1) == &halfstep);
    if (!exists(FASHION)) {
        fedc_test_skip("%s is absent: the training half is not run", FASHION);
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
    if (!have_heart()) return;
    c = heart_config(dir("bad"));
    c.clients_per_round = 9;
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "9 clients per round, but the data has 4 clients");
    c = heart_config(dir("bad"));
    c.model = "cnn";
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "model \"cnn\" does not fit the heart task");
    c = heart_config(dir("bad"));
    c.task = "nonsense";
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "unknown task");
    c = heart_config(dir("bad"));
    c.model = "shakespeare_lstm"; /* a text model says what the heart task does take */
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "does not fit the heart task (13 features per example); use --model "
              "heart or logistic");
}

/* The task table (src/fl/task.c) on synthetic data, which need no files: its
 * names, the task data default to, and the messages of a name or model that
 * does not fit. */
static void test_task_table(void) {
    CHECK(!strcmp(fedc_train_tasks(), "emnist|fashion|heart|shakespeare|stackoverflow|cifar10|none"));
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = "synthetic:zipf:3:8";
    c.out_dir = dir("tasks");
    c.quiet = true;
    fedc_train_result r;
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, /* the default model, cnn, on the default task */
              "model \"cnn\" does not fit the stackoverflow task (word sequences); use --model stackoverflow_lstm or "
              "transformer[:PRESET]");
    c.model = "shakespeare_lstm";
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "use --model stackoverflow_lstm or transformer[:PRESET]");
    c.task = "nonsense";
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL,
              "unknown task \"nonsense\" (use emnist, fashion, heart, shakespeare, stackoverflow, cifar10 or none)");
    c.task = "shakespeare";
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "synthetic Zipf data are word sequences: use --task stackoverflow, "
              "not shakespeare");
    c.task = "stackoverflow";
    c.model = "transformer:tiny";
    c.vocab_size = 50;
    c.rounds = 1;
    c.clients_per_round = 2;
    c.steps = 1;
    c.eval_every = 1;
    CHECK_OK(fedc_train(&c, &r));
    CHECK(isfinite(r.train_loss) && r.train_loss > 0);
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

/* Packed: the same 11 examples, the two clients one after another in one slot
 * (segments 0 and 1, batches of 4 across them), beside an empty slot: each
 * client's sums as the by-hand model gives them. */
static void test_packed_evaluation_program(void) {
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = 13}));
    fedc_program *p;
    CHECK_OK(fedc_evaluation_program_packed(m, 4, 3, 4, &p));
    float w[28], x[2 * 12 * 13] = {0}, mask[24] = {0};
    int32_t y[24] = {0}, segment[24] = {0}, steps[2] = {3, 0};
    CHECK_OK(fedc_model_init(m, 3, w));
    for (int e = 0; e < 11; e++) {
        for (int j = 0; j < 13; j++) x[e * 13 + j] = (float)((e * 13 + j) * 7 % 11) / 11 - 0.5f;
        y[e] = e % 2, mask[e] = 1, segment[e] = e < 8 ? 0 : 1;
    }
    fedc_executor *ex;
    CHECK_OK(fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = 2}));
    for (int i = 0; i < fedc_model_num_params(m); i++)
        CHECK_OK(fedc_executor_bind(ex, fedc_model_param_name(m, i), w + fedc_model_param_offset(m, i)));
    const char *names[5] = {"x", "y", "mask", "segment", "steps"};
    const void *data[5] = {x, y, mask, segment, steps};
    for (int i = 0; i < 5; i++) CHECK_OK(fedc_executor_bind(ex, names[i], data[i]));
    CHECK_OK(fedc_executor_run(ex));
    const float *loss, *correct, *count, *total;
    CHECK_OK(fedc_executor_output(ex, "client_loss_sum", (const void **)&loss, NULL));
    CHECK_OK(fedc_executor_output(ex, "client_correct", (const void **)&correct, NULL));
    CHECK_OK(fedc_executor_output(ex, "client_count", (const void **)&count, NULL));
    CHECK_OK(fedc_executor_output(ex, "count", (const void **)&total, NULL));
    const float *W = w + fedc_model_param_offset(m, 0), *b = w + fedc_model_param_offset(m, 1);
    double want_loss[2] = {0, 0}, want_correct[2] = {0, 0};
    for (int e = 0; e < 11; e++) {
        double z[2];
        for (int k = 0; k < 2; k++) {
            z[k] = b[k];
            for (int j = 0; j < 13; j++) z[k] += (double)x[e * 13 + j] * W[j * 2 + k];
        }
        double mx = z[0] > z[1] ? z[0] : z[1], lse = mx + log(exp(z[0] - mx) + exp(z[1] - mx));
        want_loss[e >= 8] += lse - z[y[e]];
        want_correct[e >= 8] += (z[1] > z[0] ? 1 : 0) == y[e];
    }
    for (int c = 0; c < 2; c++) {
        CHECK_NEAR(count[c], c ? 3 : 8, 0);
        CHECK_NEAR(loss[c], want_loss[c], 1e-5);
        CHECK_NEAR(correct[c], want_correct[c], 0);
    }
    for (int i = 2; i < 8; i++) CHECK(count[i] == 0 && loss[i] == 0); /* unused places, the empty slot */
    CHECK_NEAR(*total, 11, 0);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    fedc_model_destroy(m);
}

/* fedc_train's packed evaluation against one client a slot, on FEMNIST's test
 * writers (56 real ones, or the small set's): the same counts, accuracies and quantiles exactly, the loss to
 * rounding; with batches of 16 (clients across batches) and of 100, all
 * clients or 20 sampled, on 2 threads. */
static void test_packed_matches_unpacked(void) {
    char train[512], test[512], checkpoint[600];
    fedc_train_config c;
    if (!femnist_job(NULL, "packed", train, test, &c)) return;
    int64_t writers = fedc_test_data_is_real("femnist-leaf/test") ? 56 : fedc_test_fixture_facts_of("femnist-leaf/test").clients;
    c.rounds = 2, c.checkpoint_every = 2, c.threads = 2;
    fedc_train_result r;
    CHECK_OK(fedc_train(&c, &r));
    snprintf(checkpoint, sizeof checkpoint, "%s/checkpoint.safetensors", c.out_dir);
    for (int k = 0; k < 4; k++) {
        c.eval_batch_size = k % 2 ? 100 : 16, c.eval_clients = k < 2 ? 0 : 20;
        fedc_train_result packed, alone;
        c.eval_unpacked = false;
        CHECK_OK(fedc_evaluate_checkpoint(&c, checkpoint, &packed));
        c.eval_unpacked = true;
        CHECK_OK(fedc_evaluate_checkpoint(&c, checkpoint, &alone));
        CHECK_MSG(packed.test_accuracy == alone.test_accuracy && packed.clients_evaluated == alone.clients_evaluated &&
                      packed.accuracy_quantiles[0] == alone.accuracy_quantiles[0] &&
                      packed.accuracy_quantiles[1] == alone.accuracy_quantiles[1] &&
                      packed.accuracy_quantiles[2] == alone.accuracy_quantiles[2],
                  "batch %lld, %lld clients: packed %.6f on %lld, alone %.6f on %lld", (long long)c.eval_batch_size,
                  (long long)c.eval_clients, packed.test_accuracy, (long long)packed.clients_evaluated,
                  alone.test_accuracy, (long long)alone.clients_evaluated);
        CHECK_NEAR(packed.test_loss, alone.test_loss, 1e-5 * fabs(alone.test_loss));
        CHECK(c.eval_clients || packed.clients_evaluated == writers);
    }
}

int main(int argc, char **argv) {
    if (!fedc_test_tmpdir("test-fl")) return 1;
    static const fedc_test tests[] = {
        {"evaluation program", test_evaluation_program},
        {"packed evaluation program", test_packed_evaluation_program},
        {"packed evaluation matches one client a slot", test_packed_matches_unpacked},
        {"heart: loss falls and beats chance", test_heart_loss_falls_and_beats_chance},
        {"on_round reports every round", test_on_round},
        {"bitwise identical for 1 and 2 threads", test_bitwise_identical_for_1_and_2_threads},
        {"resume is bitwise identical", test_resume_is_bitwise_identical},
        {"resume checks", test_resume_checks},
        {"divergence keeps the last checkpoint", test_divergence_keeps_the_last_checkpoint},
        {"failing client is dropped", test_failing_client_is_dropped},
        {"algorithms on fashion-mnist", test_algorithms_on_fashion_mnist},
        {"registered algorithm", test_registered_algorithm},
        {"bad configurations", test_bad_configurations},
        {"task table", test_task_table},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
