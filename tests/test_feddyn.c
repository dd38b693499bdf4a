/* FedDyn (src/fl/feddyn.c): two rounds by hand on the heart model with fixed data
 * and the client state carried, against the same rounds in plain C (each client's
 * SGD on loss - <grad_i, w> + alpha/2 ||w - w_server||^2, its new grad_i, the
 * server's h and corrected mean); the first round's clients are FedProx's with
 * mu = alpha; and through fedc_train it trains, and a resumed run ends bitwise
 * where an uninterrupted one does (the client state store). */
#include "fl_round_case.h"
#include "fl_train_case.h"

enum { POPULATION = 10 }; /* make_data's meta/population */
static const double ALPHA = 0.1, LR = 0.5;

typedef struct ref_state {
    double w[SIZE], h[SIZE], grad[CLIENTS][SIZE];
} ref_state;

/* One FedDyn round in plain C, as the paper's Algorithm 1 writes it. */
static void ref_round(const round_data *d, ref_state *s) {
    double wi[CLIENTS][SIZE], g[SIZE];
    for (int c = 0; c < CLIENTS; c++) {
        memcpy(wi[c], s->w, sizeof s->w);
        for (int t = 0; t < d->steps[c]; t++) {
            ref_grad(d, c, t, wi[c], g);
            for (int i = 0; i < SIZE; i++) wi[c][i] -= LR * (g[i] - s->grad[c][i] + ALPHA * (wi[c][i] - s->w[i]));
        }
    }
    for (int i = 0; i < SIZE; i++) {
        double sum = 0, mean = 0;
        for (int c = 0; c < CLIENTS; c++) {
            s->grad[c][i] -= ALPHA * (wi[c][i] - s->w[i]);
            sum += wi[c][i] - s->w[i], mean += wi[c][i] / CLIENTS;
        }
        s->h[i] -= ALPHA / POPULATION * sum;
        s->w[i] = mean - s->h[i] / ALPHA;
    }
}

/* Client c's grad_i from the round case's leaves, in the model's order. */
static void client_grad(const round_case *k, int c, double *g) {
    const float *w = case_leaf(k, "grad/dense1/w", c), *b = case_leaf(k, "grad/dense1/b", c);
    for (int i = 0; i < FEATURES * CLASSES; i++) g[i] = w ? w[i] : NAN;
    for (int i = 0; i < CLASSES; i++) g[FEATURES * CLASSES + i] = b ? b[i] : NAN;
}

static void test_two_rounds_by_hand(void) {
    fedc_algorithm a = heart_algorithm(&fedc_algorithm_feddyn, fedc_optimizer_defaults(FEDC_OPT_SGD, LR));
    CHECK(fedc_algorithm_hparam(&a, "alpha") == 0.01); /* the paper's and the authors' example's */
    CHECK_OK(fedc_algorithm_set(&a, "alpha", ALPHA));
    CHECK_ERR(fedc_algorithm_set(&a, "alpha", 0), FEDC_EINVAL, "alpha must be in");
    round_case k;
    CHECK_OK(case_open(&k, &a));
    if (fedc_test_failures()) return case_close(&k);
    static ref_state ref;
    memset(&ref, 0, sizeof ref);
    for (int i = 0; i < SIZE; i++) ref.w[i] = k.w0[i];
    CHECK(fedc_program_find_input(k.round, "meta/population") != FEDC_NONE);
    CHECK(fedc_program_find_input(k.round, "server/h/dense1/w") != FEDC_NONE);
    for (int r = 0; r < 3; r++) {
        static round_data d;
        make_data(&d, 100 + (uint32_t)r, (int[]){6, 3 + r, 1});
        float w[SIZE];
        CHECK_OK(case_run(&k, &d, w));
        ref_round(&d, &ref);
        double err = max_abs_diff(w, ref.w, SIZE), gerr = 0, gmax = 0;
        for (int c = 0; c < CLIENTS; c++) {
            double g[SIZE];
            client_grad(&k, c, g);
            for (int i = 0; i < SIZE; i++) gerr = fmax(gerr, fabs(g[i] - ref.grad[c][i])), gmax = fmax(gmax, fabs(ref.grad[c][i]));
        }
        printf("    round %d: |w - plain C| %.2g, |grad_i - plain C| %.2g (|grad_i| up to %.3g)\n", r + 1, err, gerr, gmax);
        CHECK_MSG(err < 1e-5, "round %d: the model differs from the plain C round by %g", r + 1, err);
        CHECK_MSG(gerr < 1e-6 && gmax > 1e-3, "round %d: grad_i differs by %g (largest %g)", r + 1, gerr, gmax);
    }
    case_close(&k);
}

/* In the first round every grad_i is 0, so the clients train as FedProx's with
 * mu = alpha: FedDyn's new grad_i is alpha times FedProx's one-client delta. */
static void test_first_round_is_fedprox_clients(void) {
    static round_data d;
    make_data(&d, 5, (int[]){6, 4, 2});
    fedc_algorithm a = heart_algorithm(&fedc_algorithm_feddyn, fedc_optimizer_defaults(FEDC_OPT_SGD, LR));
    CHECK_OK(fedc_algorithm_set(&a, "alpha", ALPHA));
    round_case k;
    float w[SIZE];
    CHECK_OK(case_open(&k, &a));
    if (!fedc_test_failures()) CHECK_OK(case_run(&k, &d, w));
    fedc_algorithm prox = heart_algorithm(&fedc_algorithm_fedprox, fedc_optimizer_defaults(FEDC_OPT_SGD, LR));
    CHECK_OK(fedc_algorithm_set(&prox, "mu", ALPHA));
    prox.weighting = FEDC_WEIGHT_UNIFORM;
    for (int c = 0; c < CLIENTS && !fedc_test_failures(); c++) {
        static round_data one; /* client c alone: FedProx's model is its w_c */
        make_data(&one, 5, (int[]){6, 4, 2});
        for (int j = 0; j < CLIENTS; j++) one.steps[j] = j == 0 ? d.steps[c] : 0;
        memcpy(one.x, d.x + (size_t)c * STEPS * BATCH * FEATURES, sizeof(float) * STEPS * BATCH * FEATURES);
        memcpy(one.y, d.y + (size_t)c * STEPS * BATCH, sizeof(int32_t) * STEPS * BATCH);
        float wc[SIZE];
        /* the other two clients run no step and have weight 1: the mean is (delta_c + 0 + 0) / 3 */
        CHECK_OK(run_one_round(&prox, &one, wc));
        double g[SIZE], want[SIZE];
        client_grad(&k, c, g);
        for (int i = 0; i < SIZE; i++) want[i] = ALPHA * 3 * ((double)k.w0[i] - wc[i]);
        double err = 0;
        for (int i = 0; i < SIZE; i++) err = fmax(err, fabs(g[i] - want[i]));
        CHECK_MSG(err < 1e-6, "client %d: grad_i differs from alpha (w - w_c) of FedProx's client by %g", c, err);
    }
    case_close(&k);
}

static void test_trains_and_resumes(void) {
    if (have_data(FASHION_DATA)) {
        fedc_train_config c = fashion_job(&fedc_algorithm_feddyn, "fashion");
        fedc_algorithm_set(&c.algorithm, "alpha", 0.01);
        fedc_train_result r;
        CHECK_OK(fedc_train(&c, &r));
        printf("    feddyn, Fashion-MNIST Dirichlet 0.1: train loss %.3f, test accuracy %.3f after %d rounds\n",
               r.train_loss, r.test_accuracy, r.rounds_run);
        CHECK_MSG(r.test_accuracy > 0.3, "accuracy %.3f (chance 0.1)", r.test_accuracy);
    }
    if (!have_data(HEART_DATA)) return;
    fedc_train_config c = heart_job(&fedc_algorithm_feddyn, "heart");
    CHECK_OK(fedc_algorithm_set(&c.algorithm, "alpha", 0.1));
    check_resume_is_bitwise(c, "feddyn");
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"two rounds by hand", test_two_rounds_by_hand},
        {"first round is fedprox's clients", test_first_round_is_fedprox_clients},
        {"trains and resumes", test_trains_and_resumes},
    };
    if (!fedc_test_tmpdir("test-feddyn")) return 1;
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
