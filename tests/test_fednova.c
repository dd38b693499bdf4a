/* FedNova (src/fl/fednova.c): rounds by hand on the heart model with fixed data,
 * against the same round computed in plain C from the clients' models (each
 * client's local SGD, its normaliser a_i and the server's tau_eff-scaled mean); with
 * equal steps it is FedAvg; SGD with momentum uses the reference's a_i; other
 * client optimizers are refused; and it trains Fashion-MNIST through fedc_train
 * and resumes bitwise (with momentum, and clients of unequal steps). */
#include "fl_round_case.h"
#include "fl_train_case.h"

static const int UNEQUAL[CLIENTS] = {6, 3, 1};

/* Client c's local training in plain C (SGD, or heavy-ball momentum rho as optax's
 * trace: m = g + rho m): its delta w0 - w_c. */
static void ref_delta(const round_data *d, int c, const float *w0, double lr, double rho, double *delta) {
    double w[SIZE], g[SIZE], m[SIZE] = {0};
    for (int i = 0; i < SIZE; i++) w[i] = w0[i];
    for (int t = 0; t < d->steps[c]; t++) {
        ref_grad(d, c, t, w, g);
        for (int i = 0; i < SIZE; i++) m[i] = g[i] + rho * m[i], w[i] -= lr * m[i];
    }
    for (int i = 0; i < SIZE; i++) delta[i] = w0[i] - w[i];
}

/* The reference's local_normalizing_vec after tau steps (distoptim/FedNova.py). */
static double ref_normaliser(int tau, double rho) {
    double counter = 0, a = 0;
    for (int k = 0; k < tau; k++) {
        if (rho != 0) counter = counter * rho + 1, a += counter;
        else a += 1;
    }
    return a;
}

/* The FedNova round in plain C: w0 - sum_i p_i (tau_eff / a_i) delta_i, p_i = weight_i / sum weight. */
static void ref_round(const round_data *d, const float *w0, double lr, double rho, const double *weight, double *w) {
    double delta[CLIENTS][SIZE], a[CLIENTS], total = 0, tau_eff = 0;
    for (int c = 0; c < CLIENTS; c++) {
        ref_delta(d, c, w0, lr, rho, delta[c]);
        a[c] = ref_normaliser(d->steps[c], rho);
        total += weight[c];
    }
    for (int c = 0; c < CLIENTS; c++) tau_eff += weight[c] / total * a[c];
    for (int i = 0; i < SIZE; i++) {
        double u = 0;
        for (int c = 0; c < CLIENTS; c++) u += weight[c] / total * tau_eff / a[c] * delta[c][i];
        w[i] = w0[i] - u;
    }
}

static void test_equal_steps_is_fedavg(void) {
    static round_data d;
    make_data(&d, 7, (int[]){STEPS, STEPS, STEPS});
    float nova[SIZE], avg[SIZE];
    fedc_algorithm a = heart_algorithm(&fedc_algorithm_fednova, fedc_optimizer_defaults(FEDC_OPT_SGD, 0.5));
    CHECK_OK(run_one_round(&a, &d, nova));
    a.def = &fedc_algorithm_fedavg;
    CHECK_OK(run_one_round(&a, &d, avg));
    /* every scale tau_eff / a_i is exactly 1 */
    CHECK_MSG(!memcmp(nova, avg, sizeof nova), "FedNova with equal steps is not FedAvg's bits");
}

static void test_unequal_steps(void) {
    static round_data d;
    make_data(&d, 11, UNEQUAL);
    static const fedc_weighting weightings[] = {FEDC_WEIGHT_EXAMPLES, FEDC_WEIGHT_DATASET};
    for (int k = 0; k < 2; k++) {
        fedc_algorithm a = heart_algorithm(&fedc_algorithm_fednova, fedc_optimizer_defaults(FEDC_OPT_SGD, 0.5));
        a.weighting = weightings[k];
        float got[SIZE], avg[SIZE], w0[SIZE];
        double want[SIZE], weight[CLIENTS], fedavg[SIZE];
        for (int c = 0; c < CLIENTS; c++) weight[c] = k ? d.num_examples[c] : d.steps[c] * BATCH;
        CHECK_OK(run_one_round(&a, &d, got));
        fedc_model *m;
        CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES}));
        CHECK_OK(fedc_model_init(m, 1, w0));
        fedc_model_destroy(m);
        ref_round(&d, w0, 0.5, 0, weight, want);
        double err = max_abs_diff(got, want, SIZE);
        CHECK_MSG(err < 2e-6, "%s weighting: FedNova's model differs from the plain C round by %g",
                  fedc_weighting_name(a.weighting), err);
        /* and it is not FedAvg, whose mean is skewed towards client 0's 6 steps */
        a.def = &fedc_algorithm_fedavg;
        CHECK_OK(run_one_round(&a, &d, avg));
        for (int i = 0; i < SIZE; i++) fedavg[i] = avg[i];
        double apart = max_abs_diff(got, fedavg, SIZE);
        printf("    %s weighting: |FedNova - plain C| %.2g, |FedNova - FedAvg| %.3g\n",
               fedc_weighting_name(a.weighting), err, apart);
        CHECK_MSG(apart > 1e-3, "FedNova and FedAvg agree (%g) though the clients ran 6, 3 and 1 steps", apart);
    }
}

static void test_momentum_normaliser(void) {
    CHECK_NEAR(ref_normaliser(3, 0.5), 1 + 1.5 + 1.75, 1e-15); /* c_k = 1, 1.5, 1.75 */
    static round_data d;
    make_data(&d, 13, UNEQUAL);
    fedc_optimizer o = fedc_optimizer_defaults(FEDC_OPT_MOMENTUM, 0.2); /* rho 0.9 */
    float got[SIZE], w0[SIZE];
    double want[SIZE], weight[CLIENTS];
    for (int c = 0; c < CLIENTS; c++) weight[c] = d.steps[c] * BATCH;
    fedc_algorithm a = heart_algorithm(&fedc_algorithm_fednova, o);
    CHECK_OK(run_one_round(&a, &d, got));
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES}));
    CHECK_OK(fedc_model_init(m, 1, w0));
    fedc_model_destroy(m);
    ref_round(&d, w0, 0.2, 0.9, weight, want);
    double err = max_abs_diff(got, want, SIZE);
    CHECK_MSG(err < 2e-6, "momentum: FedNova's model differs from the plain C round by %g", err);
    /* a_i = tau_i instead would give another model */
    double wrong[SIZE];
    ref_round(&d, w0, 0.2, 0, weight, wrong);
    CHECK(max_abs_diff(got, wrong, SIZE) > 1e-3);
}

static void test_refuses_other_optimizers(void) {
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES}));
    fedc_algorithm a = heart_algorithm(&fedc_algorithm_fednova, fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01));
    fedc_program *round = NULL;
    CHECK_ERR(fedc_algorithm_round(m, &a, &round), FEDC_EINVAL, "fednova: the client optimizer is adam");
    CHECK(round == NULL);
    CHECK(fedc_algorithm_find("fednova") == &fedc_algorithm_fednova);
    fedc_model_destroy(m);
}

static void test_trains_fashion_mnist(void) {
    if (!have_data(FASHION_DATA)) return;
    fedc_train_config c = fashion_job(&fedc_algorithm_fednova, "fashion");
    c.steps = 0; /* whole epochs: the clients' steps differ with their data */
    c.epochs = 1;
    c.rounds = 4, c.eval_every = 4;
    fedc_train_result r;
    CHECK_OK(fedc_train(&c, &r));
    printf("    fednova, Fashion-MNIST Dirichlet 0.1: train loss %.3f, test accuracy %.3f after 4 rounds\n",
           r.train_loss, r.test_accuracy);
    CHECK_MSG(r.test_accuracy > 0.3, "accuracy %.3f (chance 0.1)", r.test_accuracy);
    CHECK(isfinite(r.test_loss) && isfinite(r.train_loss));
}

static void test_resumes_bitwise(void) {
    if (!have_data(HEART_DATA)) return;
    fedc_train_config c = heart_job(&fedc_algorithm_fednova, "heart");
    c.algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_MOMENTUM, 0.05);
    c.algorithm.server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01); /* server state beyond the model */
    c.steps = 0, c.epochs = 1; /* each client's own number of steps */
    CHECK(resume_matches(c, "fednova-resume"));
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"equal steps is fedavg", test_equal_steps_is_fedavg},
        {"unequal steps", test_unequal_steps},
        {"momentum normaliser", test_momentum_normaliser},
        {"refuses other optimizers", test_refuses_other_optimizers},
        {"trains fashion-mnist", test_trains_fashion_mnist},
        {"resumes bitwise", test_resumes_bitwise},
    };
    if (!fedc_test_tmpdir("test-fednova")) return 1;
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
