/* HypCluster (src/fl/hypcluster.c): FedJAX's hyp_cluster_test.py ported with
 * its exact values on its tiny problems (scalar cluster models, hand-written
 * losses), the round's pieces built with the test's own objectives
 * (fl/hypcluster.h). Where fedc differs by design:
 *   - FedJAX's per-cluster random streams flip the sign of a center in
 *     test_maximization_step; fedc's objective sees cluster j's stream as key[2]
 *     = 1 + j, so the test's objective reads the flips FedJAX's seeds give from
 *     x[:, 1 + j] (the same losses, the same randomness as data);
 *   - both steps run on the round's batches (FedJAX's maximization step takes
 *     padded batches of 2, its expectation step 5 epochs of 1): the mean losses,
 *     and so the assignments, are the same;
 *   - evaluation picks each client's cluster on the data it evaluates (FedJAX's
 *     on the client's training data); on test_hyp_cluster_evaluator's clients
 *     both pick the same clusters, so its accuracies are FedJAX's;
 *   - kmeans_init is the warm start of `fedc train` (src/fl/hypcluster_kmeans.c):
 *     its first center is drawn by fedc's own streams, so the test gives it the
 *     first centers FedJAX's seeds pick; random_init is not ported: server_init
 *     starts the clusters from one initialisation (docs/algorithms.md).
 * Then training through fedc_train on FEMNIST. */
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "fl/hypcluster.h"
#include "fl_train_case.h"
#include "hand_round.h"

enum { COLS = 4 }; /* x: the value, then the sign each cluster's stream gives it */

/* Inputs w/w, x [batch, COLS], y, mask, key; the batch's value column and the sign of cluster key[2] - 1. */
static fedc_program *objective_start(int64_t batch, fedc_value *w, fedc_value *x, fedc_value *y, fedc_value *mask,
                                     fedc_value *sign) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    *w = fedc_input(p, "w/w", fedc_type_scalar(FEDC_F32));
    fedc_value xs = fedc_input(p, "x", fedc_type_make(FEDC_F32, 2, (int64_t[]){batch, COLS}));
    *y = fedc_input(p, "y", fedc_type_make(FEDC_I32, 1, &batch));
    *mask = fedc_input(p, "mask", fedc_type_make(FEDC_F32, 1, &batch));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_value j = fedc_sub(p, fedc_reshape(p, fedc_slice(p, key, (int64_t[]){2}, (int64_t[]){3}), 0, NULL),
                            fedc_scalar(p, FEDC_I32, 1));
    fedc_value signs = fedc_slice(p, xs, (int64_t[]){0, 1}, (int64_t[]){batch, COLS});
    *sign = fedc_reduce_sum(p, fedc_mul(p, signs, fedc_one_hot(p, j, COLS - 1, FEDC_F32)), (int[]){1}, 1, false);
    *x = hand_column(p, xs, batch, 0);
    return p;
}

static fedc_value abs_value(fedc_program *p, fedc_value v) { return fedc_maximum(p, v, fedc_neg(p, v)); }

/* loss: the masked mean of per-example losses, plus reg; count. */
static void objective_end(fedc_program *p, fedc_value per_example, fedc_value mask, fedc_value reg) {
    fedc_value count = fedc_reduce_sum(p, mask, NULL, -1, false);
    fedc_value mean = fedc_div(p, fedc_reduce_sum(p, fedc_mul(p, per_example, mask), NULL, -1, false),
                               fedc_maximum(p, count, fedc_scalar(p, FEDC_F32, 1)));
    CHECK_OK(fedc_program_output(p, "loss", reg != FEDC_NONE ? fedc_add(p, mean, reg) : mean));
    CHECK_OK(fedc_program_output(p, "count", count));
}

/* test_maximization_step's: |w * sign - x| + 0.01 |w|. */
static fedc_program *l1_objective(int64_t batch) {
    fedc_value w, x, y, mask, sign;
    fedc_program *p = objective_start(batch, &w, &x, &y, &mask, &sign);
    objective_end(p, abs_value(p, fedc_sub(p, fedc_mul(p, w, sign), x)), mask,
                  fedc_mul(p, fedc_scalar(p, FEDC_F32, 0.01), abs_value(p, w)));
    return p;
}

/* test_expectation_step's and test_hyp_cluster's: (w - x)^2. */
static fedc_program *square_objective(int64_t batch) {
    fedc_value w, x, y, mask, sign;
    fedc_program *p = objective_start(batch, &w, &x, &y, &mask, &sign);
    objective_end(p, fedc_square(p, fedc_sub(p, w, x)), mask, FEDC_NONE);
    return p;
}

/* test_hyp_cluster_evaluator's: train loss |2y - 1 - w x|, and correct from the
 * logits [-w x, w x]. */
static fedc_program *evaluator_objective(int64_t batch) {
    fedc_value w, x, y, mask, sign;
    fedc_program *p = objective_start(batch, &w, &x, &y, &mask, &sign);
    fedc_value score = fedc_mul(p, w, x), target = fedc_sub(p, fedc_mul(p, fedc_cast(p, y, FEDC_F32), fedc_scalar(p, FEDC_F32, 2)),
                                                            fedc_scalar(p, FEDC_F32, 1));
    objective_end(p, abs_value(p, fedc_sub(p, target, score)), mask, FEDC_NONE);
    fedc_value predicted = fedc_cast(p, fedc_gt(p, score, fedc_scalar(p, FEDC_F32, 0)), FEDC_I32); /* argmax, first of equals */
    fedc_value right = fedc_cast(p, fedc_eq(p, predicted, y), FEDC_F32);
    CHECK_OK(fedc_program_output(p, "correct", fedc_reduce_sum(p, fedc_mul(p, right, mask), NULL, -1, false)));
    return p;
}

/* A round on scalar clusters w_j = centers[j] (server SGD server_lr). */
static void begin(hand *h, int clients, int64_t steps, int64_t batch, const float *centers, int k, bool key) {
    hand_begin(h, &fedc_algorithm_hypcluster, clients, steps, batch, COLS, key);
    CHECK_OK(fedc_algorithm_set(&h->a, "num_clusters", k));
    for (int j = 0; j < k; j++) {
        char leaf[64];
        fedc__hypcluster_prefix(j, "params/w", leaf, sizeof leaf);
        hand_server(h, leaf, 0, NULL, &centers[j]);
    }
}

/* rows of x with the same sign for every cluster */
static void rows(float *out, const float *x, int n, float sign) {
    for (int i = 0; i < n; i++) out[i * COLS] = x[i], out[i * COLS + 1] = out[i * COLS + 2] = out[i * COLS + 3] = sign;
}

static void near_all(const float *got, const float *want, int n, double tol, const char *what) {
    for (int i = 0; i < n; i++)
        CHECK_MSG(fabs(got[i] - want[i]) <= tol * fmax(1, fabs(want[i])), "%s[%d] = %.8g, not %.8g", what, i, got[i], want[i]);
}

/* test_maximization_step: _cluster_losses and the assignment. */
static void test_maximization_step(void) {
    static const float centers[3] = {0, -1, 2};
    hand h;
    begin(&h, 4, 2, 2, centers, 3, true);
    float near0[COLS], minus1[3 * COLS], near2[3 * COLS], near1[3 * COLS];
    rows(near0, (float[]){0.1f}, 1, 1);                        /* seed 0: no flip */
    rows(minus1, (float[]){0.9f, 1.1f, 1.3f}, 3, -1);          /* seed 16: every center flipped */
    rows(near2, (float[]){1.9f, 2.1f}, 2, 1);                  /* seed 68: no flip, then flip all */
    rows(near2 + 2 * COLS, (float[]){-2.1f}, 1, -1);
    rows(near1, (float[]){0.9f, 1.1f, 1.3f}, 3, 1);            /* seed 106: only cluster 1 flipped */
    for (int i = 0; i < 3; i++) near1[i * COLS + 2] = -1;
    hand_client(&h, 0, near0, NULL, 1, 1);
    hand_client(&h, 1, minus1, NULL, 3, 1);
    hand_client(&h, 2, near2, NULL, 3, 1);
    hand_client(&h, 3, near1, NULL, 3, 1);
    fedc_program *objective = l1_objective(2);
    CHECK_OK(fedc_tree_output(h.p, "a", fedc__hypcluster_assign(&h.r, objective, 3)));
    if (hand_run(&h)) {
        static const float want[12] = {0.1f, 1.1f + 0.01f, 1.9f + 0.02f,          1.1f, 0.5f / 3 + 0.01f, 3.1f + 0.02f,
                                       6.1f / 3, 9.1f / 3 + 0.01f, 0.1f + 0.02f, 1.1f, 0.5f / 3 + 0.01f, 0.9f + 0.02f};
        near_all(hand_out(&h, "a/losses"), want, 12, 1e-6, "cluster losses");
        const int32_t *id = (const int32_t *)(const void *)hand_out(&h, "a/cluster");
        CHECK(id[0] == 0 && id[1] == 1 && id[2] == 2 && id[3] == 1);
    }
    fedc_program_destroy(objective);
    hand_end(&h);
}

/* The five clients of test_expectation_step (the first four: test_hyp_cluster's), 5 epochs of batches of 1. */
static void expectation_clients(hand *h, int n) {
    static const float x[5][3] = {{1.1f}, {0.9f, 0.9f}, {-1.1f}, {-0.9f, -0.9f, -0.9f}, {-0.1f}};
    static const int count[5] = {1, 2, 1, 3, 1};
    for (int c = 0; c < n; c++) {
        float r[3 * COLS];
        rows(r, x[c], count[c], 1);
        hand_client(h, c, r, NULL, count[c], 5);
    }
    h->a.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.5);
}

/* test_expectation_step: the given assignment, each cluster's weighted mean delta
 * (cluster 2 has no clients: FedJAX's None, weight 0 here). */
static void test_expectation_step(void) {
    static const float centers[3] = {1, -1, 3.14f};
    static const int32_t ids[5] = {0, 0, 1, 1, 0};
    hand h;
    begin(&h, 5, 15, 1, centers, 3, true);
    expectation_clients(&h, 5);
    fedc_value cluster = fedc_input(h.p, "cluster", hand_type(FEDC_I32, 0, NULL, FEDC_CLIENTS));
    hand_bind(&h, "cluster", ids);
    fedc_program *objective = square_objective(1), *grad = NULL;
    CHECK_OK(fedc_grad_tree(objective, "loss", "w", &grad));
    CHECK_OK(fedc_tree_output(h.p, "e", fedc__hypcluster_expectation(&h.r, grad, cluster, 3)));
    if (hand_run(&h)) {
        near_all(hand_out(&h, "e/delta/0/w"), (float[]){(-0.1f + 0.1f * 2 + 1.1f) / 4}, 1, 1e-6, "cluster 0");
        near_all(hand_out(&h, "e/delta/1/w"), (float[]){(0.1f - 0.1f * 3) / 4}, 1, 1e-6, "cluster 1");
        near_all(hand_out(&h, "e/weight/2"), (float[]){0}, 1, 0, "cluster 2's weight");
    }
    fedc_program_destroy(objective);
    fedc_program_destroy(grad);
    hand_end(&h);
}

/* test_hyp_cluster: one whole round, client SGD 0.5, server SGD 0.25. */
static void test_round(void) {
    static const float centers[2] = {1, -1};
    hand h;
    begin(&h, 4, 15, 1, centers, 2, true);
    h.a.server_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.25);
    expectation_clients(&h, 4);
    fedc_program *objective = square_objective(1);
    CHECK_OK(fedc__hypcluster_round_with(&h.r, objective));
    if (hand_run(&h)) {
        near_all(hand_out(&h, "server/params/w"), (float[]){1.f - 0.25f * 0.1f / 3}, 1, 1e-6, "cluster 0");
        near_all(hand_out(&h, "server/clusters/1/params/w"), (float[]){-1.f + 0.25f * 0.2f / 4}, 1, 1e-6, "cluster 1");
    }
    fedc_program_destroy(objective);
    hand_end(&h);
}

/* test_hyp_cluster_evaluator, with batch sizes 1, 2 and 4: accuracies 4/5 and 2/3. */
static void test_evaluator(void) {
    static const float centers[2] = {1, -1};
    for (int64_t batch = 1; batch <= 4; batch *= 2) {
        hand h;
        begin(&h, 2, 5, batch, centers, 2, false);
        float a[5 * COLS], b[3 * COLS];
        rows(a, (float[]){0.9f, -0.9f, 0.8f, -0.8f, -0.3f}, 5, 1);
        rows(b, (float[]){3, 2, 1}, 3, 1);
        hand_client(&h, 0, a, (int32_t[]){1, 0, 1, 0, 1}, 5, 1);
        hand_client(&h, 1, b, (int32_t[]){0, 0, 1}, 3, 1);
        fedc_program *objective = evaluator_objective(batch);
        CHECK_OK(fedc__hypcluster_evaluation_with(&h.r, objective));
        if (hand_run(&h)) {
            const float *correct = hand_out(&h, "client_correct"), *count = hand_out(&h, "client_count");
            CHECK_MSG(correct[0] == 4 && count[0] == 5 && correct[1] == 2 && count[1] == 3,
                      "batch %lld: %g/%g, %g/%g", (long long)batch, correct[0], count[0], correct[1], count[1]);
            near_all(hand_out(&h, "correct"), (float[]){6}, 1, 0, "correct");
        }
        fedc_program_destroy(objective);
        hand_end(&h);
    }
}

/* server_init: k clusters; cluster j >= 1 is the initialisation with random
 * signs on its weight matrices, its biases as they are. */
static void test_server_init(void) {
    fedc_model *m = NULL;
    CHECK_OK(fedc_model_create(&m, "dense", &(fedc_model_options){.num_classes = 10, .input_dim = 20, .hidden = 8}));
    int64_t n = fedc_model_size(m);
    float *w = malloc((size_t)n * sizeof *w);
    CHECK_OK(fedc_model_init(m, 3, w));
    fedc_algorithm a = {.def = &fedc_algorithm_hypcluster, .server_opt = fedc_optimizer_defaults(FEDC_OPT_ADAM, 0.01)};
    CHECK_OK(fedc_algorithm_set(&a, "num_clusters", 3));
    fedc_program *init = NULL;
    CHECK_OK(fedc_algorithm_server_init(m, &a, &init));
    CHECK(init && fedc_program_find_output(init, "server/clusters/2/opt/count") != FEDC_NONE);
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, init, &(fedc_exec_options){.clients = 1}));
    for (int i = 0; i < fedc_model_num_params(m); i++) {
        char name[128];
        snprintf(name, sizeof name, "params/%s", fedc_model_param_name(m, i));
        CHECK_OK(fedc_executor_bind(ex, name, w + fedc_model_param_offset(m, i)));
    }
    CHECK_OK(fedc_executor_run(ex));
    for (int i = 0; i < fedc_model_num_params(m); i++) {
        char name[3][128];
        const void *v[3] = {NULL};
        fedc_type t = fedc_model_param_type(m, i);
        for (int j = 0; j < 3; j++) {
            char leaf[96];
            snprintf(leaf, sizeof leaf, "params/%s", fedc_model_param_name(m, i));
            fedc__hypcluster_prefix(j, leaf, name[j], sizeof name[j]);
            char full[140];
            snprintf(full, sizeof full, "server/%s", name[j]);
            CHECK_OK(fedc_executor_output(ex, full, &v[j], NULL));
        }
        if (!v[0] || !v[1] || !v[2]) continue;
        const float *c0 = v[0], *c1 = v[1], *c2 = v[2];
        int64_t size = (int64_t)(fedc_type_bytes(&t) / sizeof(float)), flipped[2] = {0, 0}, same = 0;
        for (int64_t e = 0; e < size; e++) {
            CHECK(fabsf(c1[e]) == fabsf(c0[e]) && fabsf(c2[e]) == fabsf(c0[e]));
            flipped[0] += c1[e] != c0[e], flipped[1] += c2[e] != c0[e], same += c1[e] == c2[e];
        }
        if (t.rank >= 2) /* about half flipped, independently for each cluster */
            CHECK_MSG(flipped[0] > size / 4 && flipped[0] < 3 * size / 4 && flipped[1] > size / 4 && same < size,
                      "%s: %lld, %lld of %lld flipped", fedc_model_param_name(m, i), (long long)flipped[0],
                      (long long)flipped[1], (long long)size);
        else CHECK(flipped[0] == 0 && flipped[1] == 0);
    }
    fedc_executor_destroy(ex);
    fedc_program_destroy(init);
    free(w);
    fedc_model_destroy(m);
}

/* test_kmeans_init's objective: (w - x)^2 + bias, bias in x[:, 1]; correct 0. */
static fedc_program *kmeans_objective(int64_t batch) {
    fedc_value w, x, y, mask, sign;
    fedc_program *p = objective_start(batch, &w, &x, &y, &mask, &sign);
    fedc_value xs = fedc_program_input(p, 1); /* x [batch, COLS] */
    objective_end(p, fedc_add(p, fedc_square(p, fedc_sub(p, w, x)), hand_column(p, xs, batch, 1)), mask, FEDC_NONE);
    CHECK_OK(fedc_program_output(p, "correct", fedc_scalar(p, FEDC_F32, 0)));
    return p;
}

/* k-means on test_kmeans_init's four clients of one example (x, bias), trained
 * 5 epochs of batches of 1 by SGD 0.5 from w = 0.3 (each reaches w = x): the
 * centers from first center `first` (-1: drawn), into centers[3]. */
static bool kmeans_centers(int first, float *centers) {
    static const float x[4] = {1.01f, 3.02f, 3.03f, 1.04f}, bias[4] = {-2, -1, 1, 2}, start[3] = {0.3f, 0.3f, 0.3f};
    static const float index[4] = {0, 1, 2, 3};
    hand h;
    begin(&h, 4, 5, 1, start, 3, true);
    h.a.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.5);
    h.r.cohort = 4;
    for (int c = 0; c < 4; c++) hand_client(&h, c, (float[]){x[c], bias[c], 0, 0}, NULL, 1, 5);
    fedc_value at = FEDC_NONE;
    int32_t first32 = first;
    if (first >= 0) {
        at = fedc_input(h.p, "first", hand_type(FEDC_I32, 0, NULL, FEDC_SERVER));
        hand_bind(&h, "first", &first32);
    }
    fedc_program *objective = kmeans_objective(1);
    CHECK_OK(fedc__hypcluster_kmeans_with(&h.r, objective, 3, at));
    hand_bind(&h, "meta/index", index);
    bool ran = hand_run(&h);
    const char *names[3] = {"server/params/w", "server/clusters/1/params/w", "server/clusters/2/params/w"};
    for (int j = 0; ran && j < 3; j++) centers[j] = *hand_out(&h, names[j]);
    fedc_program_destroy(objective);
    hand_end(&h);
    return ran;
}

/* test_kmeans_init: from client 0, centers [1.01, 3.03, 1.04]; from client 2,
 * [3.03, 1.04, 1.04] (FedJAX picks those first by its seeds); a drawn first
 * center is followed as the rule says (the table worked out by hand). */
static void test_kmeans_init(void) {
    static const float after[4][3] = {{1.01f, 3.03f, 1.04f}, {3.02f, 1.04f, 1.04f}, {3.03f, 1.04f, 1.04f},
                                      {1.04f, 3.03f, 1.04f}};
    float c[3];
    if (kmeans_centers(0, c)) near_all(c, after[0], 3, 1e-6, "centers from client 0");
    if (kmeans_centers(2, c)) near_all(c, after[2], 3, 1e-6, "centers from client 2");
    if (!kmeans_centers(-1, c)) return;
    int first = -1;
    for (int i = 0; i < 4; i++)
        if (fabsf(c[0] - after[i][0]) < 1e-6f) first = i;
    CHECK_MSG(first >= 0, "the drawn first center %g is no client's", c[0]);
    if (first >= 0) near_all(c, after[first], 3, 1e-6, "centers from the drawn client");
}

/* ------------------------------------------------------------ training -- */

/* Two clusters on FEMNIST: the loss falls, and evaluation (the algorithm's own
 * program) serves each test client its best cluster: no worse than cluster 0
 * alone (fedc_evaluate_checkpoint, which reads only the model). */
static void test_trains_on_femnist(void) {
    char train[512], test[512];
    fedc_train_config c;
    if (!femnist_job(&fedc_algorithm_hypcluster, "femnist", train, test, &c)) return;
    fedc_train_result first, r;
    c.rounds = 1;
    CHECK_OK(fedc_train(&c, &first));
    c.rounds = 12;
    CHECK_OK(fedc_train(&c, &r));
    CHECK_MSG(r.train_loss < first.train_loss - 0.5 && r.test_accuracy > 0.3 && r.clients_evaluated > 10,
              "train loss %.3f -> %.3f, test loss %.3f, accuracy %.3f", first.train_loss, r.train_loss, r.test_loss,
              r.test_accuracy);
    /* the same model alone (cluster 0), evaluated without the clusters, does no better */
    fedc_train_result alone;
    char checkpoint[600];
    c.checkpoint_every = 12;
    CHECK_OK(fedc_train(&c, &r));
    snprintf(checkpoint, sizeof checkpoint, "%s/checkpoint.safetensors", c.out_dir);
    CHECK_OK(fedc_evaluate_checkpoint(&c, checkpoint, &alone));
    CHECK_MSG(alone.test_loss >= r.test_loss - 1e-6, "cluster 0 alone: %.4f, the clusters: %.4f", alone.test_loss, r.test_loss);
    fedc_safetensors *s = NULL;
    fedc_tensor_entry e;
    CHECK_OK(fedc_safetensors_read(checkpoint, &s));
    CHECK_OK(fedc_safetensors_find(s, "server/clusters/1/params/dense1/w", &e)); /* the other cluster is kept */
    fedc_safetensors_destroy(s);
    /* a resumed run ends with the uninterrupted one's bits, every cluster's */
    c.rounds = 4, c.checkpoint_every = 0;
    CHECK(resume_matches(c, "hypcluster_resume"));
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"maximization_step", test_maximization_step},
        {"expectation_step", test_expectation_step},
        {"round", test_round},
        {"evaluator", test_evaluator},
        {"server_init", test_server_init},
        {"kmeans_init (FedJAX's values)", test_kmeans_init},
        {"trains_on_femnist", test_trains_on_femnist},
    };
    if (!fedc_test_tmpdir("hypcluster")) return 1;
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
