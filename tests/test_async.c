/* Asynchronous aggregation (src/fl/fedbuff.c): the staleness weights as FLSim's
 * tests check them (flsim/utils/tests/test_async_staleness_weights.py: constant,
 * polynomial against its formula over random staleness, exponent and average
 * staleness; exponent 0 is 1 everywhere; an exponent outside [0, 1] is refused)
 * and FedAsync's hinge; FedBuff's buffer divided by the sum of the weights
 * e_i s(τ_i) (normalize=0, FLSim's) or of the example weights e_i (normalize=1,
 * the paper's 1/K), on its round program with equal and unequal staleness
 * weights; and FedAsync's step w - α s (w - w_client) exactly, its clients not
 * moving (learning rate 0). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "fl/fedbuff.h"
#include "harness.h"

static double poly(double staleness, double a) { return 1 / pow(1 + staleness, a); }

static void test_staleness_weights_flsim(void) {
    fedc_test_seed(37);
    const double avgs[] = {0, 1, 2, 10, 1000}; /* FLSim's AVG_TEST_STALENESS are a few such */
    for (int k = 0; k < FEDC_COUNT_OF(avgs); k++)
        for (int i = 0; i < 10; i++) {
            double avg = avgs[k], staleness = floor(fedc_test_uniform(1, 10000));
            CHECK(fedc__staleness_weight(FEDC_STALENESS_CONSTANT, 0, 0, avg, staleness) == 1);
            double a = fedc_test_uniform(0, 1), want = poly(staleness, a) / poly(avg, a);
            CHECK_NEAR(fedc__staleness_weight(FEDC_STALENESS_POLYNOMIAL, a, 0, avg, staleness), want, 1e-12 * want);
            CHECK(fedc__staleness_weight(FEDC_STALENESS_POLYNOMIAL, 0, 0, avg, staleness) == 1);
        }
    CHECK(fedc__staleness_weight(FEDC_STALENESS_POLYNOMIAL, 0.5, 0, 0, 0) == 1); /* fedc's default: fresh is 1 */
    CHECK_NEAR(fedc__staleness_weight(FEDC_STALENESS_POLYNOMIAL, 0.5, 0, 0, 3), 0.5, 1e-15);
    CHECK_NEAR(fedc__staleness_weight(FEDC_STALENESS_POLYNOMIAL, 0.5, 0, 1, 0), sqrt(2), 1e-15); /* FLSim's default */
    CHECK(isnan(fedc__staleness_weight(FEDC_STALENESS_POLYNOMIAL, 0.5, 0, 0, -1)));
    /* FedAsync's hinge, a = 10, b = 4: 1 up to 4, then 1 / (10 (τ - 4) + 1) */
    CHECK(fedc__staleness_weight(FEDC_STALENESS_HINGE, 10, 4, 0, 4) == 1);
    CHECK_NEAR(fedc__staleness_weight(FEDC_STALENESS_HINGE, 10, 4, 0, 6), 1.0 / 21, 1e-15);
    CHECK_NEAR(fedc__staleness_weight(FEDC_STALENESS_HINGE, 10, 4, 6, 4), 21, 1e-12);
    /* FLSim asserts 0 <= exponent <= 1 */
    fedc_algorithm a = {.def = &fedc_algorithm_fedbuff};
    CHECK_ERR(fedc_algorithm_set(&a, "exponent", -0.1), FEDC_EINVAL, "exponent must be in [0, 1]");
    CHECK_ERR(fedc_algorithm_set(&a, "exponent", 1.1), FEDC_EINVAL, "exponent must be in [0, 1]");
    CHECK_OK(fedc_algorithm_set(&a, "exponent", 0));
    CHECK_OK(fedc_algorithm_set(&a, "exponent", 1));
    CHECK_OK(fedc_algorithm_set(&a, "staleness", FEDC_STALENESS_HINGE));
    CHECK_NEAR(fedc__staleness_of(&a, 5), 1.0 / 11, 1e-15); /* the defaults a = 10, b = 4 */
}

enum { CLIENTS = 2, FEATURES = 13, BATCH = 4 };

/* One step of alg's round on the heart model, 2 clients of one batch each: the
 * model w0, the clients' start models (start0 for client 0, start1 for client
 * 1), their staleness weights s; the new model into w1. */
static void run_step(const fedc_algorithm *alg, const float *w0, const float *start0, const float *start1,
                     const float s[CLIENTS], float *w1) {
    fedc_model *m = NULL;
    fedc_program *p = NULL;
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_model_create(&m, "heart", &(fedc_model_options){.num_classes = 2, .input_dim = FEATURES}));
    if (m) CHECK_OK(fedc_algorithm_round(m, alg, &p));
    if (p) CHECK_OK(fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = CLIENTS, .threads = 1}));
    if (!ex) {
        fedc_program_destroy(p), fedc_model_destroy(m);
        return;
    }
    void *bufs[64] = {0};
    fedc_test_seed(5);
    int n = fedc_program_num_inputs(p);
    for (int i = 0; i < n && i < 64; i++) {
        const char *name = fedc_program_input_name(p, i);
        fedc_type t = fedc_value_type(p, fedc_program_input(p, i));
        size_t one = fedc_type_bytes(&t), count = t.placement == FEDC_CLIENTS ? CLIENTS : 1;
        char *b = bufs[i] = calloc(count, one);
        for (size_t c = 0; c < count; c++) {
            char *at = b + c * one;
            size_t elems = one / 4;
            for (int k = 0; k < fedc_model_num_params(m); k++) {
                char want[160];
                int64_t off = fedc_model_param_offset(m, k);
                const float *from = !strncmp(name, "server/params/", 14) ? w0 : c == 0 ? start0 : start1;
                snprintf(want, sizeof want, "%s/%s", strncmp(name, "server/params/", 14) ? FEDC_ASYNC_START : "server/params",
                         fedc_model_param_name(m, k));
                if (!strcmp(name, want)) memcpy(at, from + off, one);
            }
            if (!strcmp(name, "x"))
                for (size_t e = 0; e < elems; e++) ((float *)at)[e] = (float)fedc_test_uniform(-1, 1);
            if (!strcmp(name, "y"))
                for (size_t e = 0; e < elems; e++) ((int32_t *)at)[e] = fedc_test_uniform(0, 1) < 0.5;
            if (!strcmp(name, "mask"))
                for (size_t e = 0; e < elems; e++) ((float *)at)[e] = 1;
            if (!strcmp(name, "steps")) *(int32_t *)at = 1;
            if (!strcmp(name, FEDC_ASYNC_WEIGHT)) *(float *)at = s[c];
        }
        CHECK_OK(fedc_executor_bind(ex, name, b));
    }
    CHECK_OK(fedc_executor_run(ex));
    for (int k = 0; k < fedc_model_num_params(m); k++) {
        char name[160];
        const void *out = NULL;
        fedc_type t;
        snprintf(name, sizeof name, "server/params/%s", fedc_model_param_name(m, k));
        if (!fedc_executor_output(ex, name, &out, &t)) memcpy(w1 + fedc_model_param_offset(m, k), out, fedc_type_bytes(&t));
        else CHECK_MSG(false, "%s: %s", name, fedc_errmsg());
    }
    for (int i = 0; i < n && i < 64; i++) free(bufs[i]);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
    fedc_model_destroy(m);
}

enum { SIZE = FEATURES * 2 + 2 }; /* the heart model: w [13, 2], b [2] */

static void model(float *w, double lo, double hi) {
    for (int i = 0; i < SIZE; i++) w[i] = (float)fedc_test_uniform(lo, hi);
}

/* The largest |a_i - f b_i| over the model. */
static double off_by(const float *w0, const float *a, const float *b, double f) {
    double worst = 0;
    for (int i = 0; i < SIZE; i++) worst = fmax(worst, fabs((w0[i] - a[i]) - f * (w0[i] - b[i])));
    return worst;
}

static void test_fedbuff_normalization(void) {
    fedc_algorithm a = {.def = &fedc_algorithm_fedbuff, .batch_size = BATCH, .max_steps = 1};
    a.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.5);
    a.server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 1.0);
    a.weighting = FEDC_WEIGHT_UNIFORM;
    float w0[SIZE], ones[SIZE], half_sum[SIZE], half_k[SIZE], only0_sum[SIZE], only0_k[SIZE];
    fedc_test_seed(11);
    model(w0, -0.5, 0.5);
    run_step(&a, w0, w0, w0, (float[]){1, 1}, ones);
    double moved = off_by(w0, ones, w0, 0); /* the plain mean moved the model */
    CHECK_MSG(moved > 1e-3, "the step moved the model by %g", moved);
    run_step(&a, w0, w0, w0, (float[]){0.5f, 0.5f}, half_sum); /* Σ s Δ / Σ s: the same mean */
    CHECK_MSG(off_by(w0, half_sum, ones, 1) < 1e-6, "normalize=0, s = 0.5: off by %g", off_by(w0, half_sum, ones, 1));
    run_step(&a, w0, w0, w0, (float[]){1, 0}, only0_sum); /* client 0's delta alone */
    CHECK_OK(fedc_algorithm_set(&a, "normalize", 1));
    run_step(&a, w0, w0, w0, (float[]){0.5f, 0.5f}, half_k); /* Σ s Δ / K: half the mean */
    CHECK_MSG(off_by(w0, half_k, ones, 0.5) < 1e-6, "normalize=1, s = 0.5: off by %g", off_by(w0, half_k, ones, 0.5));
    run_step(&a, w0, w0, w0, (float[]){1, 0}, only0_k); /* client 0's delta over K = 2 */
    CHECK_MSG(off_by(w0, only0_sum, only0_k, 2) < 1e-6, "s = [1, 0]: off by %g", off_by(w0, only0_sum, only0_k, 2));
    CHECK(off_by(w0, only0_sum, ones, 1) > 1e-4); /* client 1's delta is another */
}

static void test_fedasync_step(void) {
    fedc_algorithm a = {.def = &fedc_algorithm_fedasync, .batch_size = BATCH, .max_steps = 1};
    a.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0); /* the client's model is where it started */
    a.server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 1.0); /* not FedAsync's: unused */
    CHECK_OK(fedc_algorithm_set(&a, "alpha", 0.75));
    float w0[SIZE], start[SIZE], w1[SIZE];
    fedc_test_seed(3);
    model(w0, -1, 1);
    model(start, -1, 1);
    fedc_algorithm one = a; /* FedAsync takes one report a step: a cohort of one */
    float s = 0.4f;
    run_step(&one, w0, start, start, (float[]){s, s}, w1);
    double worst = 0;
    for (int i = 0; i < SIZE; i++) /* the mean of two equal reports is the report */
        worst = fmax(worst, fabs(w1[i] - (w0[i] - 0.75 * s * (w0[i] - start[i]))));
    CHECK_MSG(worst < 1e-6, "w - alpha s (w - w_client): off by %g", worst);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"async: staleness weights (FLSim's tests, FedAsync's hinge)", test_staleness_weights_flsim},
        {"async: FedBuff's buffer over the weights or over K", test_fedbuff_normalization},
        {"async: FedAsync's step toward the client", test_fedasync_step},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
