/* DiLoCo (src/fl/diloco.c, MaxText's trainers/diloco): rounds by hand on the heart
 * model with fixed data, against the same rounds in plain C: each client's AdamW
 * steps (optax.adamw: decoupled weight decay) from the state it kept, the outer
 * Nesterov SGD on the plain mean delta; a client's second round starts from its
 * saved AdamW state, not a fresh one; SGD (no state to keep) is refused; and
 * through fedc_train it trains, and a resumed run ends bitwise where an
 * uninterrupted one does. */
#include "fl_round_case.h"
#include "fl_train_case.h"

static const double LR = 0.01, WD = 0.1, OUTER_LR = 0.7, OUTER_MOMENTUM = 0.9;

typedef struct ref_state {
    double w[SIZE], trace[SIZE];                     /* the server's model, outer momentum */
    double mu[CLIENTS][SIZE], nu[CLIENTS][SIZE], count[CLIENTS]; /* each client's AdamW */
} ref_state;

/* One DiLoCo round in plain C; fresh: the clients forget their AdamW state first. */
static void ref_round(const round_data *d, ref_state *s, bool fresh) {
    double delta[SIZE] = {0}, g[SIZE];
    for (int c = 0; c < CLIENTS; c++) {
        double w[SIZE];
        memcpy(w, s->w, sizeof w);
        if (fresh) memset(s->mu[c], 0, sizeof s->mu[c]), memset(s->nu[c], 0, sizeof s->nu[c]), s->count[c] = 0;
        for (int t = 0; t < d->steps[c]; t++) {
            ref_grad(d, c, t, w, g);
            double n = ++s->count[c];
            for (int i = 0; i < SIZE; i++) {
                s->mu[c][i] = 0.1 * g[i] + 0.9 * s->mu[c][i];
                s->nu[c][i] = 0.001 * g[i] * g[i] + 0.999 * s->nu[c][i];
                double u = s->mu[c][i] / (1 - pow(0.9, n)) / (sqrt(s->nu[c][i] / (1 - pow(0.999, n))) + 1e-8);
                w[i] -= LR * (u + WD * w[i]);
            }
        }
        for (int i = 0; i < SIZE; i++) delta[i] += (s->w[i] - w[i]) / CLIENTS;
    }
    for (int i = 0; i < SIZE; i++) { /* optax.sgd(nesterov=True): trace' = g + m trace; u = g + m trace' */
        s->trace[i] = delta[i] + OUTER_MOMENTUM * s->trace[i];
        s->w[i] -= OUTER_LR * (delta[i] + OUTER_MOMENTUM * s->trace[i]);
    }
}

static fedc_algorithm diloco(void) {
    return heart_algorithm(&fedc_algorithm_diloco, fedc_optimizer_defaults(FEDC_OPT_ADAM, LR));
}

static void test_hyperparameters(void) {
    fedc_algorithm a = diloco();
    CHECK(fedc_algorithm_hparam(&a, "outer_lr") == 0.7 && fedc_algorithm_hparam(&a, "outer_momentum") == 0.9 &&
          fedc_algorithm_hparam(&a, "weight_decay") == 0.1);
    CHECK_ERR(fedc_algorithm_set(&a, "outer_momentum", 1.5), FEDC_EINVAL, "outer_momentum must be in [0, 1]");
    fedc_model *m;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES}));
    a.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.1);
    fedc_program *round = NULL;
    CHECK_ERR(fedc_algorithm_round(m, &a, &round), FEDC_EINVAL, "diloco: the client optimizer sgd keeps no state");
    a = diloco();
    CHECK_OK(fedc_algorithm_round(m, &a, &round));
    const char *in[] = {"server/opt/trace/dense1/w", "client/opt/mu/dense1/w", "client/opt/nu/dense1/b", "client/opt/count"};
    for (int i = 0; round && i < 4; i++)
        CHECK_MSG(fedc_program_find_input(round, in[i]) != FEDC_NONE, "the round has no input %s", in[i]);
    fedc_program_destroy(round);
    fedc_model_destroy(m);
}

static void test_rounds_by_hand(void) {
    fedc_algorithm a = diloco();
    round_case k;
    CHECK_OK(case_open(&k, &a));
    if (fedc_test_failures()) return case_close(&k);
    static ref_state ref, fresh;
    memset(&ref, 0, sizeof ref);
    for (int i = 0; i < SIZE; i++) ref.w[i] = k.w0[i];
    for (int r = 0; r < 3; r++) {
        static round_data d;
        make_data(&d, 200 + (uint32_t)r, (int[]){6, 4, 2 + r});
        fresh = ref;
        float w[SIZE];
        CHECK_OK(case_run(&k, &d, w));
        ref_round(&d, &ref, false);
        ref_round(&d, &fresh, true);
        double err = max_abs_diff(w, ref.w, SIZE), apart = max_abs_diff(w, fresh.w, SIZE);
        printf("    round %d: |w - plain C| %.2g; a fresh AdamW state would be %.3g away\n", r + 1, err, apart);
        CHECK_MSG(err < 1e-5, "round %d: the model differs from the plain C round by %g", r + 1, err);
        if (r > 0) CHECK_MSG(apart > 1e-3, "round %d: a fresh AdamW state gives the same model (%g)", r + 1, apart);
        for (int c = 0; c < CLIENTS; c++) {
            const float *count = case_leaf(&k, "opt/count", c), *mu = case_leaf(&k, "opt/mu/dense1/b", c);
            CHECK_MSG(count && *count == (float)ref.count[c], "round %d, client %d: AdamW's count %g, not %g", r + 1, c,
                      count ? *count : -1, ref.count[c]);
            CHECK(mu && fabs(mu[1] - ref.mu[c][FEATURES * CLASSES + 1]) < 1e-6);
        }
    }
    CHECK(ref.count[0] == 18 && ref.count[2] == 9); /* the state ran on: 6 + 6 + 6, 2 + 3 + 4 */
    case_close(&k);
}

static void test_trains_and_resumes(void) {
    if (have_data(FASHION_DATA)) {
        fedc_train_config c = fashion_job(&fedc_algorithm_diloco, "fashion");
        c.algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01);
        c.rounds = c.eval_every = 12; /* the outer momentum needs a few rounds under this drift */
        fedc_train_result r;
        CHECK_OK(fedc_train(&c, &r));
        printf("    diloco, Fashion-MNIST Dirichlet 0.1: train loss %.3f, test accuracy %.3f after %d rounds\n",
               r.train_loss, r.test_accuracy, r.rounds_run);
        CHECK_MSG(r.test_accuracy > 0.35, "accuracy %.3f (chance 0.1)", r.test_accuracy);
    }
    if (!have_data(HEART_DATA)) return;
    fedc_train_config c = heart_job(&fedc_algorithm_diloco, "heart");
    c.algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01);
    check_resume_is_bitwise(c, "diloco");
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"hyperparameters", test_hyperparameters},
        {"rounds by hand", test_rounds_by_hand},
        {"trains and resumes", test_trains_and_resumes},
    };
    if (!fedc_test_tmpdir("test-diloco")) return 1;
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
