/* AgnosticFedAvg (src/fl/agnostic_fedavg.c): FedJAX's agnostic_fed_avg_test.py
 * ported with its exact values, on its tiny problem (per-example loss x * w of a
 * scalar w): fedc's models are fixed, so the round's pieces are built with the
 * test's own statistics program (fl/agnostic_fedavg.h), the one difference by
 * design being where the domain comes from. FedJAX gives every example a domain
 * id; fedc's runner gives a client one (meta/domain), and the model's statistics
 * put each batch in it. The test's statistics read a domain per example from
 * x[:, 1], so FedJAX's mixed-domain clients run as they are. Then training
 * through fedc_train on FEMNIST (LEAF writer ids: FedJAX's two domains) and the
 * runner's --client-domains FILE. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fedc/fedc.h"
#include "fl/agnostic_fedavg.h"
#include "hand_round.h"
#include "fl_train_case.h"

enum { D = 4 };

/* FedJAX's per_example_loss x * w, by the domain in x[:, 1]; mask-weighted. */
static fedc_program *stats_program(int64_t batch) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    fedc_value w = fedc_input(p, "w/w", fedc_type_scalar(FEDC_F32));
    fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 2, (int64_t[]){batch, 2}));
    fedc_input(p, "y", fedc_type_make(FEDC_I32, 1, &batch));
    fedc_value mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, &batch));
    fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_input(p, "domain", fedc_type_scalar(FEDC_I32)); /* the client's: unused, each example has its own */
    fedc_value loss = fedc_mul(p, fedc_mul(p, hand_column(p, x, batch, 0), w), mask);
    fedc_value one_hot = fedc_one_hot(p, fedc_cast(p, hand_column(p, x, batch, 1), FEDC_I32), D, FEDC_F32);
    fedc_value col[2] = {fedc_reshape(p, loss, 2, (int64_t[]){batch, 1}), fedc_reshape(p, mask, 2, (int64_t[]){batch, 1})};
    CHECK_OK(fedc_program_output(p, "domain_loss", fedc_reduce_sum(p, fedc_mul(p, col[0], one_hot), (int[]){0}, 1, false)));
    CHECK_OK(fedc_program_output(p, "domain_num", fedc_reduce_sum(p, fedc_mul(p, col[1], one_hot), (int[]){0}, 1, false)));
    return p;
}

static void set_weights(fedc_algorithm *a, const double *w) {
    char name[32];
    CHECK_OK(fedc_algorithm_set(a, "num_domains", D));
    for (int d = 0; d < D; d++) {
        snprintf(name, sizeof name, "init_domain_weight_%d", d);
        CHECK_OK(fedc_algorithm_set(a, name, w[d]));
    }
}

static const double INIT[D] = {0.1, 0.2, 0.3, 0.4};

/* FedJAX's two clients: x and the domain of each example. */
static const float CID0[] = {1, 1, 2, 0, 4, 0, 3, 0, 6, 2, 1, 2}, CID1[] = {8, 1, 10, 3, 5, 1};

static void near_all(const float *got, const float *want, int n, double tol, const char *what) {
    for (int i = 0; i < n; i++) CHECK_MSG(fabs(got[i] - want[i]) <= tol * fmax(1, fabs(want[i])), "%s[%d] = %.8g, not %.8g", what, i, got[i], want[i]);
}

/* test_update_domain_weights */
static void test_update_domain_weights(void) {
    for (int eg = 1; eg >= 0; eg--) {
        hand h;
        hand_begin(&h, &fedc_algorithm_agnostic_fedavg, 1, 1, 1, 1, false);
        fedc_type t = fedc_type_make(FEDC_F32, 1, (int64_t[]){D});
        fedc_value w = fedc_constant(h.p, t, (float[]){0.1f, 0.2f, 0.3f, 0.4f});
        fedc_value loss = fedc_constant(h.p, t, (float[]){10, 0, 5, 0});
        CHECK_OK(fedc_program_output(h.p, "w", fedc__agnostic_update_weights(h.p, w, loss, 0.1, eg)));
        if (hand_run(&h)) {
            static const float want_eg[D] = {0.198931f, 0.14636526f, 0.36197326f, 0.2927305f}, want_none[D] = {0.1f, 0.2f, 0.3f, 0.4f};
            near_all(hand_out(&h, "w"), eg ? want_eg : want_none, D, 1e-6, eg ? "eg" : "none");
        }
        hand_end(&h);
    }
}

/* The 'init' subtest (on the heart model's parameters; the window starts as
 * FedJAX's default ones: init_domain_window is not a hyperparameter), and its
 * argument checks. */
static void test_init(void) {
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = 13}));
    fedc_algorithm a = {.def = &fedc_algorithm_agnostic_fedavg, .server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.1)};
    set_weights(&a, INIT);
    CHECK_OK(fedc_algorithm_set(&a, "domain_window_size", 2));
    fedc_program *init = NULL;
    fedc_executor *ex = NULL;
    float *params = calloc((size_t)fedc_model_size(m), sizeof *params);
    CHECK_OK(fedc_algorithm_server_init(m, &a, &init));
    CHECK_OK(fedc_executor_create(&ex, init, &(fedc_exec_options){.clients = 1}));
    for (int i = 0; i < fedc_model_num_params(m); i++) {
        char name[128];
        snprintf(name, sizeof name, "params/%s", fedc_model_param_name(m, i));
        CHECK_OK(fedc_executor_bind(ex, name, params + fedc_model_param_offset(m, i)));
    }
    CHECK_OK(fedc_executor_run(ex));
    const void *w = NULL, *win = NULL;
    fedc_type wt;
    CHECK_OK(fedc_executor_output(ex, "server/domain_weights", &w, NULL));
    CHECK_OK(fedc_executor_output(ex, "server/domain_window", &win, &wt));
    if (w && win) {
        near_all(w, (float[]){0.1f, 0.2f, 0.3f, 0.4f}, D, 0, "domain_weights");
        near_all(win, (float[]){1, 1, 1, 1, 1, 1, 1, 1}, 2 * D, 0, "domain_window");
        CHECK(wt.rank == 2 && wt.dims[0] == 2 && wt.dims[1] == D);
    }
    fedc_executor_destroy(ex);
    fedc_program_destroy(init);
    init = NULL;
    fedc_algorithm bad = a;
    set_weights(&bad, (double[]){0.5, 0, 0, 0}); /* FedJAX's [50, 0, 0, 0], within our range */
    CHECK_ERR(fedc_algorithm_server_init(m, &bad, &init), FEDC_EINVAL, "init_domain_weights must sum to approximately 1");
    bad = a;
    CHECK_OK(fedc_algorithm_set(&bad, "num_domains", 2)); /* FedJAX's unequal lengths */
    CHECK_ERR(fedc_algorithm_server_init(m, &bad, &init), FEDC_EINVAL, "init_domain_weight_2 is 0.3, but num_domains is 2");
    bad = (fedc_algorithm){.def = &fedc_algorithm_agnostic_fedavg}; /* all unset: uniform */
    CHECK_OK(fedc_algorithm_set(&bad, "num_domains", 3.5));
    CHECK_ERR(fedc_algorithm_server_init(m, &bad, &init), FEDC_EINVAL, "num_domains must be a whole number, not 3.5");
    fedc_program_destroy(init);
    free(params);
    fedc_model_destroy(m);
}

/* A round's pieces on FedJAX's two clients, in batches of 3. */
static void begin(hand *h, float *w) {
    hand_begin(h, &fedc_algorithm_agnostic_fedavg, 2, 2, 3, 2, true);
    set_weights(&h->a, INIT);
    hand_server(h, "params/w", 0, NULL, w);
}

/* test_create_domain_metrics_for_each_client: its padded batches, masks and alpha. */
static void test_domain_metrics(void) {
    hand h;
    float w = 4, alpha[D] = {0.1f, 0.2f, 0.3f, 0.4f}, zero[2] = {0};
    begin(&h, &w);
    hand_client(&h, 0, CID0, NULL, 5, 1); /* the 6th example is masked out, as FedJAX's */
    hand_client(&h, 1, CID1, NULL, 2, 1);
    h.nsteps[0] = 2;
    fedc_value a = fedc_input(h.p, "alpha", hand_type(FEDC_F32, 1, (int64_t[]){D}, FEDC_SERVER));
    hand_bind(&h, "alpha", alpha);
    hand_bind(&h, "domain", zero);
    fedc_value domain = fedc_input(h.p, "domain", hand_type(FEDC_I32, 0, NULL, FEDC_CLIENTS));
    fedc_program *stats = stats_program(3);
    CHECK_OK(fedc_tree_output(h.p, "m", fedc__agnostic_metrics(&h.r, stats, a, domain)));
    if (hand_run(&h)) {
        near_all(hand_out(&h, "m/beta"), (float[]){0.8f, 0.6f}, 2, 1e-6, "beta");
        near_all(hand_out(&h, "m/domain_loss"), (float[]){36, 4, 24, 0, 0, 32, 0, 40}, 2 * D, 1e-6, "domain_loss");
        near_all(hand_out(&h, "m/domain_num"), (float[]){3, 1, 1, 0, 0, 1, 0, 1}, 2 * D, 0, "domain_num");
    }
    fedc_program_destroy(stats);
    hand_end(&h);
}

/* test_create_train_for_each_client: the given betas, SGD with learning rate 1. */
static void test_train_for_each_client(void) {
    hand h;
    float w = 4, alpha[D] = {0.1f, 0.2f, 0.3f, 0.4f}, beta[2] = {0.5f, 0.2f}, zero[2] = {0};
    begin(&h, &w);
    hand_client(&h, 0, CID0, NULL, 6, 1);
    hand_client(&h, 1, CID1, NULL, 3, 1);
    fedc_value a = fedc_input(h.p, "alpha", hand_type(FEDC_F32, 1, (int64_t[]){D}, FEDC_SERVER));
    fedc_value b = fedc_input(h.p, "beta", hand_type(FEDC_F32, 0, NULL, FEDC_CLIENTS));
    fedc_value domain = fedc_input(h.p, "domain", hand_type(FEDC_I32, 0, NULL, FEDC_CLIENTS));
    hand_bind(&h, "alpha", alpha), hand_bind(&h, "beta", beta), hand_bind(&h, "domain", zero);
    fedc_program *stats = stats_program(3);
    fedc_tree *out = NULL;
    CHECK_OK(fedc__agnostic_train(&h.r, stats, a, b, domain, &out));
    CHECK_OK(fedc_tree_output(h.p, "t", out));
    if (hand_run(&h)) near_all(hand_out(&h, "t/delta/w"), (float[]){6.4f, 33}, 2, 1e-6, "delta");
    fedc_program_destroy(stats);
    hand_end(&h);
}

/* test_agnostic_federated_averaging's 'apply': one whole round (client SGD 1,
 * server SGD 0.1, domain learning rate 0.01, eg, a window of 2 starting as
 * FedJAX's init_domain_window [1, 2, 3, 4], bound as the state). */
static void test_round(void) {
    hand h;
    float w = 4, weights[D] = {0.1f, 0.2f, 0.3f, 0.4f}, window[2 * D] = {1, 2, 3, 4, 1, 2, 3, 4}, zero[2] = {0};
    begin(&h, &w);
    h.a.server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.1);
    CHECK_OK(fedc_algorithm_set(&h.a, "domain_window_size", 2));
    CHECK_OK(fedc_algorithm_set(&h.a, "domain_learning_rate", 0.01));
    hand_server(&h, "domain_weights", 1, (int64_t[]){D}, weights);
    hand_server(&h, "domain_window", 2, (int64_t[]){2, D}, window);
    hand_bind(&h, "meta/domain", zero);
    hand_client(&h, 0, CID0, NULL, 6, 1);
    hand_client(&h, 1, CID1, NULL, 3, 1);
    fedc_program *stats = stats_program(3);
    CHECK_OK(fedc__agnostic_round_with(&h.r, stats));
    if (hand_run(&h)) {
        near_all(hand_out(&h, "server/params/w"), (float[]){3.5555556f}, 1, 1e-6, "w");
        near_all(hand_out(&h, "server/domain_weights"), (float[]){0.08702461f, 0.18604803f, 0.2663479f, 0.46057943f}, D,
                 1e-6, "domain_weights");
        near_all(hand_out(&h, "server/domain_window"), (float[]){1, 2, 3, 4, 3, 3, 2, 1}, 2 * D, 0, "domain_window");
        /* fedc's train loss: the mean loss at w before training, (36 + 4 + 28 + 52 + 40) / 9 */
        near_all(hand_out(&h, "train_loss"), (float[]){160.0f / 9}, 1, 1e-6, "train_loss");
    }
    fedc_program_destroy(stats);
    hand_end(&h);
}

/* ------------------------------------------------------------ training -- */

/* The real writers where ../shared/data has them, else the small set's. */
static const char *femnist(const char *split) {
    return fedc_test_data(split[1] == 'e' ? "femnist-leaf/test" : "femnist-leaf/train");
}

static fedc_train_config femnist_config(const char *dir) {
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = femnist("train"), c.test_data = femnist("test");
    c.model = "logistic";
    c.algorithm.def = &fedc_algorithm_agnostic_fedavg;
    /* the scaled loss is a client's loss sum over its weight beta: a step of lr
     * moves by about lr * batch / examples times the mean gradient */
    c.algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0);
    c.rounds = 15, c.clients_per_round = 10, c.eval_every = 0, c.threads = 2, c.quiet = true;
    c.out_dir = fedc_test_tmp(dir);
    return c;
}

/* FEMNIST's writers are FedJAX's two domains (emnist.domain_id); the loss falls. */
static void test_trains_on_femnist(void) {
    fedc_train_config c = femnist_config("agnostic_femnist");
    CHECK_MSG(c.data && c.test_data, "the FEMNIST sets are not there");
    if (!c.data || !c.test_data) return;
    fedc_train_result first, r;
    c.rounds = 1;
    CHECK_OK(fedc_train(&c, &first));
    c.rounds = 15;
    CHECK_OK(fedc_train(&c, &r));
    CHECK_MSG(r.train_loss < first.train_loss - 0.5 && r.test_loss < 3.0 && r.test_accuracy > 0.3,
              "train loss %.3f -> %.3f, test loss %.3f, accuracy %.3f", first.train_loss, r.train_loss, r.test_loss,
              r.test_accuracy);
    CHECK_OK(fedc_algorithm_set(&c.algorithm, "num_domains", 1)); /* the census writers' domain is 1 */
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "is in domain 1, but agnostic_fedavg has num_domains 1");
}

/* A resumed run ends with the uninterrupted one's bits, domain weights and
 * window included. */
static void test_resume(void) {
    fedc_train_config c = femnist_config("agnostic_resume");
    if (!c.data || !c.test_data) return;
    c.rounds = 4, c.clients_per_round = 4;
    CHECK(resume_matches(c, "agnostic_resume"));
    char path[600];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", fedc_test_tmp("agnostic_resume"));
    fedc_safetensors *s = NULL;
    fedc_tensor_entry e;
    CHECK_OK(fedc_safetensors_read(path, &s));
    CHECK_OK(fedc_safetensors_find(s, "server/domain_window", &e));
    fedc_safetensors_destroy(s);
}

/* --client-domains FILE: every client needs a line; a malformed one is named. */
static void test_client_domains_file(void) {
    fedc_train_config c = femnist_config("agnostic_domains");
    if (!c.data || !c.test_data) return;
    c.rounds = 2;
    char path[600];
    snprintf(path, sizeof path, "%s.csv", c.out_dir);
    fedc_dataset *ds = NULL;
    CHECK_OK(fedc_dataset_open(&ds, c.data, FEDC_FORMAT_AUTO));
    FILE *f = fopen(path, "w");
    fprintf(f, "client_id,domain\n");
    for (int64_t i = 0; ds && i < fedc_dataset_num_clients(ds); i++) fprintf(f, "%s,%d\n", fedc_dataset_client_id(ds, i), (int)(i % 2));
    fclose(f);
    c.client_domains = path;
    fedc_train_result r;
    CHECK_OK(fedc_train(&c, &r));
    CHECK(isfinite(r.test_loss));
    f = fopen(path, "w");
    fprintf(f, "%s,1\n", ds ? fedc_dataset_client_id(ds, 0) : "x");
    fclose(f);
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "no domain for client");
    f = fopen(path, "w");
    fprintf(f, "# a comment\nf0001_01,census\n");
    fclose(f);
    CHECK_ERR(fedc_train(&c, &r), FEDC_EPARSE, ".csv:2: client \"f0001_01\": the domain \"census\" is not a whole number");
    fedc_dataset_destroy(ds);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"update_domain_weights", test_update_domain_weights},
        {"init", test_init},
        {"domain_metrics", test_domain_metrics},
        {"train_for_each_client", test_train_for_each_client},
        {"round", test_round},
        {"trains_on_femnist", test_trains_on_femnist},
        {"client_domains_file", test_client_domains_file},
        {"resume", test_resume},
    };
    if (!fedc_test_tmpdir("agnostic")) return 1;
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
