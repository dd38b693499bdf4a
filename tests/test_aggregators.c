/* Aggregators (fedc/aggregate.h, src/fl/aggregators.c) and their noise op: the
 * random_normal op gives fedc_rng_normal's bits for any number of threads and
 * standard normal statistics; clipping bounds each client's norm to the clip (and
 * leaves smaller updates bit for bit); zeroing counts NaN, Inf and over-bound
 * clients and zeroes exactly them; DP-FedAvg's mean with z = 0 is the clipped sum
 * over m bit for bit, and with noise its error has stddev z·C/m; the adaptive clip
 * follows the formula on a hand case and TF Privacy's own trajectory
 * (quantile_adaptive_clip_sum_query_test.py); the noise multipliers are TFF's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data_fixtures.h"
#include "fedc/fedc.h"
#include "harness.h"

enum { K = 4 }; /* clients */

static fedc_type placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

static fedc_executor *executor(const fedc_program *p, int clients, int threads) {
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = clients, .threads = threads};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    return ex;
}

static float output1(const fedc_executor *ex, const char *name) {
    const float *v = NULL;
    return fedc_executor_output(ex, name, (const void **)&v, NULL) ? NAN : v[0];
}

/* ------------------------------------------------------ random_normal -- */

/* Each client's draws (its own key) are fedc_rng_normal's, rounded to f32, and
 * are the same bits on 1 and 3 threads. */
static void test_random_normal_bits_and_threads(void) {
    enum { N = 1000 };
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value key = fedc_input(p, "key", placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS));
    fedc_program_output(p, "n", fedc_random_normal(p, key, fedc_type_make(FEDC_F32, 1, (int64_t[]){N})));
    CHECK_OK(fedc_program_status(p));
    int32_t keys[4 * K];
    for (int c = 0; c < K; c++) {
        fedc_rng_stream s = fedc_rng_stream_make(7, 3, (uint32_t)c, 0);
        keys[4 * c] = (int32_t)s.key.k[0], keys[4 * c + 1] = (int32_t)s.key.k[1];
        keys[4 * c + 2] = (int32_t)s.c2, keys[4 * c + 3] = (int32_t)s.c3;
    }
    float *got[2];
    for (int t = 0; t < 2; t++) {
        fedc_executor *ex = executor(p, K, t ? 3 : 1);
        const float *v = NULL;
        CHECK_OK(fedc_executor_bind(ex, "key", keys));
        CHECK_OK(fedc_executor_run(ex));
        CHECK_OK(fedc_executor_output(ex, "n", (const void **)&v, NULL));
        got[t] = malloc(K * N * sizeof(float));
        memcpy(got[t], v, K * N * sizeof(float));
        fedc_executor_destroy(ex);
    }
    CHECK(!memcmp(got[0], got[1], K * N * sizeof(float)));
    int bad = 0;
    for (int c = 0; c < K; c++)
        for (int i = 0; i < N; i++)
            bad += got[0][c * N + i] != (float)fedc_rng_normal(fedc_rng_stream_make(7, 3, (uint32_t)c, 0), (uint64_t)i);
    CHECK_EQ_INT(bad, 0);
    free(got[0]), free(got[1]);
    fedc_program_destroy(p);
}

/* A server value of 10^6 draws: mean 0 and variance 1 within 5 standard errors
 * (sd of the mean 1e-3; of the variance sqrt(2/n) = 1.4e-3), and about 4.55% of
 * them beyond 2 (binomial sd 2e-4). */
static void test_random_normal_statistics(void) {
    enum { N = 1000000 };
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    fedc_program_output(p, "n", fedc_random_normal(p, key, fedc_type_make(FEDC_F64, 1, (int64_t[]){N})));
    fedc_executor *ex = executor(p, 1, 1);
    int32_t k[4] = {12345, -7, 99, 0};
    const double *v = NULL;
    CHECK_OK(fedc_executor_bind(ex, "key", k));
    CHECK_OK(fedc_executor_run(ex));
    CHECK_OK(fedc_executor_output(ex, "n", (const void **)&v, NULL));
    double s = 0, s2 = 0;
    int64_t tail = 0;
    for (int i = 0; v && i < N; i++) s += v[i], s2 += v[i] * v[i], tail += fabs(v[i]) > 2;
    double mean = s / N, var = s2 / N - mean * mean;
    CHECK_NEAR(mean, 0, 5e-3);
    CHECK_NEAR(var, 1, 7e-3);
    CHECK_NEAR((double)tail / N, 0.0455003, 1e-3);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
}

static void test_random_normal_rejects_bad_types(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value bad = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){3}));
    CHECK(fedc_random_normal(p, bad, fedc_type_scalar(FEDC_F32)) == FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "i32[4]");
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    fedc_value key = fedc_input(p, "key", fedc_type_make(FEDC_I32, 1, (int64_t[]){4}));
    CHECK(fedc_random_normal(p, key, fedc_type_scalar(FEDC_I32)) == FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "f32 or f64");
    fedc_program_destroy(p);
}

/* ----------------------------------------------------------- the round -- */

/* Client updates u/a f32[3] and u/b f32[2] per client: client 0 of norm 5 (3, 4
 * split over the leaves), 1 of norm 0.5, 2 with a NaN, 3 with an Inf, unless
 * finite: clients 2, 3 of norms 13 and 1. */
static void updates(float *a, float *b, bool finite) {
    const float A[K][3] = {{3, 0, 0}, {0.3f, 0, 0}, {5, NAN, 0}, {INFINITY, 0, 0}};
    const float B[K][2] = {{0, 4}, {0, 0.4f}, {12, 0}, {0, 1}};
    memcpy(a, A, sizeof A), memcpy(b, B, sizeof B);
    if (finite) a[2 * 3 + 1] = 0, a[3 * 3] = 0;
}

typedef struct agg_case {
    fedc_program *p;
    fedc_algorithm alg;
} agg_case;

/* The program mean = fedc_round_aggregate(u, weight) under `a`, with the server
 * state server/aggregator/clip when adaptive. */
static fedc_status build(agg_case *c, fedc_aggregation a, int64_t dim) {
    memset(c, 0, sizeof *c);
    c->alg.aggregation = a;
    fedc_status st = fedc_program_create(&c->p);
    if (st) return st;
    fedc_program *p = c->p;
    fedc_tree *u = fedc_tree_new(p), *server = fedc_tree_new(p);
    fedc_tree_set(p, u, "a", fedc_input(p, "u/a", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){dim ? dim : 3}), FEDC_CLIENTS)));
    if (!dim) fedc_tree_set(p, u, "b", fedc_input(p, "u/b", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){2}), FEDC_CLIENTS)));
    fedc_value w = fedc_input(p, "w", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS));
    if (a.adaptive)
        fedc_tree_set(p, server, FEDC_AGGREGATE_CLIP, fedc_input(p, "server/" FEDC_AGGREGATE_CLIP, placed(fedc_type_scalar(FEDC_F32), FEDC_SERVER)));
    fedc_round r = {.alg = &c->alg, .p = p, .server = server};
    fedc_tree *mean = fedc_round_aggregate(&r, u, w);
    if (mean) fedc_tree_output(p, "mean", mean);
    return fedc_program_status(p);
}

static const float WEIGHTS[K] = {1, 2, 3, 4};

/* Runs c on the updates; `mean` gets mean/a then mean/b (5 floats). */
static fedc_executor *run(const agg_case *c, const float *a, const float *b, const float *clip, const int32_t *key,
                          float *mean) {
    fedc_executor *ex = executor(c->p, K, 1);
    CHECK_OK(fedc_executor_bind(ex, "u/a", a));
    if (b) CHECK_OK(fedc_executor_bind(ex, "u/b", b));
    CHECK_OK(fedc_executor_bind(ex, "w", WEIGHTS));
    if (clip) CHECK_OK(fedc_executor_bind(ex, "server/" FEDC_AGGREGATE_CLIP, clip));
    if (key) CHECK_OK(fedc_executor_bind(ex, FEDC_AGGREGATE_KEY, key));
    CHECK_OK(fedc_executor_run(ex));
    const float *ma = NULL, *mb = NULL;
    if (!fedc_executor_output(ex, "mean/a", (const void **)&ma, NULL) && mean) memcpy(mean, ma, 3 * sizeof *ma);
    if (b && !fedc_executor_output(ex, "mean/b", (const void **)&mb, NULL) && mean) memcpy(mean + 3, mb, 2 * sizeof *mb);
    return ex;
}

/* Zeroing at 2: clients 0 (norm 5), 2 (NaN) and 3 (Inf) are zeroed, client 1
 * kept with its weight; the weighted mean keeps the zeroed clients' weights. */
static void test_zeroing_counts_and_zeroes(void) {
    agg_case c;
    CHECK_OK(build(&c, (fedc_aggregation){.zero_norm = 2}, 0));
    float a[K * 3], b[K * 2], mean[5];
    updates(a, b, false);
    fedc_executor *ex = run(&c, a, b, NULL, NULL, mean);
    CHECK_EQ_INT((int)output1(ex, "aggregator/zeroed"), 3);
    CHECK_EQ_INT((int)output1(ex, FEDC_AGGREGATE_DONE), K);
    const float want[5] = {0.3f * 2 / 10, 0, 0, 0, 0.4f * 2 / 10};
    for (int i = 0; i < 5; i++) CHECK_NEAR(mean[i], want[i], 1e-7);
    fedc_executor_destroy(ex);
    fedc_program_destroy(c.p);
}

/* Clip 1 with z = 0: clients' norms 5, 0.5, 13, 1 become 1, 0.5, 1, 1; client 1's
 * update is kept bit for bit (scale C / max(norm, C) = 1); the mean is the
 * unweighted sum over m = 8 (not the cohort). */
static void test_clipping_bounds_the_norm(void) {
    agg_case c;
    CHECK_OK(build(&c, (fedc_aggregation){.clip = 1, .expected_clients = 8}, 0));
    float a[K * 3], b[K * 2], mean[5];
    updates(a, b, true);
    fedc_executor *ex = run(&c, a, b, NULL, NULL, mean);
    /* by hand: client 0 (0.6, 0.8 on a[0], b[1]), 1 (0.3, 0.4), 2 (5/13 on a[0],
     * 12/13 on b[0]), 3 (1 on b[1]) */
    const double want[5] = {(0.6 + 0.3 + 5.0 / 13) / 8, 0, 0, 12.0 / 13 / 8, (0.8 + 0.4 + 1) / 8};
    for (int i = 0; i < 5; i++) CHECK_NEAR(mean[i], want[i], 2e-7);
    CHECK_NEAR(output1(ex, "aggregator/clip"), 1, 0);
    CHECK_NEAR(output1(ex, "aggregator/noise_stddev"), 0, 0);
    fedc_executor_destroy(ex);
    fedc_program_destroy(c.p);
    /* each client alone: its clipped norm is min(norm, C) to f32 rounding */
    const double norms[K] = {5, 0.5, 13, 1};
    for (int k = 0; k < K; k++) {
        fedc_program *p;
        CHECK_OK(fedc_program_create(&p));
        fedc_tree *u = fedc_tree_new(p);
        fedc_tree_set(p, u, "a", fedc_input(p, "a", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){3}), FEDC_CLIENTS)));
        fedc_tree_set(p, u, "b", fedc_input(p, "b", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){2}), FEDC_CLIENTS)));
        fedc_value norm = fedc_aggregate_norm(p, u);
        fedc_program_output(p, "n", fedc_aggregate_norm(p, fedc_aggregate_clip(p, u, norm, fedc_scalar(p, FEDC_F32, 1))));
        fedc_program_output(p, "b_out", fedc_tree_get(p, fedc_aggregate_clip(p, u, norm, fedc_scalar(p, FEDC_F32, 1)), "b"));
        fedc_executor *e = executor(p, K, 1);
        CHECK_OK(fedc_executor_bind(e, "a", a));
        CHECK_OK(fedc_executor_bind(e, "b", b));
        CHECK_OK(fedc_executor_run(e));
        const float *n = NULL, *bo = NULL;
        CHECK_OK(fedc_executor_output(e, "n", (const void **)&n, NULL));
        CHECK_OK(fedc_executor_output(e, "b_out", (const void **)&bo, NULL));
        if (n) CHECK_NEAR(n[k], fmin(norms[k], 1), 1.2e-7);
        if (bo && k == 1) CHECK(!memcmp(bo + 2, b + 2, 2 * sizeof *b));
        fedc_executor_destroy(e);
        fedc_program_destroy(p);
    }
}

/* z = 0 draws nothing: the mean is the clipped sum over m, the same bits as the
 * same program built by hand from the pieces. */
static void test_zero_noise_gives_the_unnoised_bits(void) {
    agg_case c;
    CHECK_OK(build(&c, (fedc_aggregation){.clip = 1, .noise_multiplier = 0, .expected_clients = 4}, 0));
    float a[K * 3], b[K * 2], mean[5];
    updates(a, b, true);
    fedc_executor_destroy(run(&c, a, b, NULL, NULL, mean));
    fedc_program_destroy(c.p);
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_tree *u = fedc_tree_new(p);
    fedc_tree_set(p, u, "a", fedc_input(p, "u/a", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){3}), FEDC_CLIENTS)));
    fedc_tree_set(p, u, "b", fedc_input(p, "u/b", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){2}), FEDC_CLIENTS)));
    fedc_input(p, "w", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS));
    fedc_value one = fedc_full(p, placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), 1);
    fedc_tree *sum = fedc_tree_sum(p, fedc_aggregate_clip(p, u, fedc_aggregate_norm(p, u), one));
    fedc_value m = fedc_full(p, placed(fedc_type_scalar(FEDC_F32), FEDC_SERVER), 4);
    fedc_program_output(p, "mean/a", fedc_div(p, fedc_tree_get(p, sum, "a"), m));
    fedc_program_output(p, "mean/b", fedc_div(p, fedc_tree_get(p, sum, "b"), m));
    CHECK_OK(fedc_program_status(p));
    agg_case hand = {.p = p};
    float want[5];
    fedc_executor_destroy(run(&hand, a, b, NULL, NULL, want));
    CHECK(!memcmp(mean, want, sizeof want));
    fedc_program_destroy(p);
}

/* All-zero updates of 200,000 elements, clip 2, z = 1.5, m = 2: the mean is the
 * noise over m, stddev 1.5 x 2 / 2 = 1.5 (within 1%; the sd of a sample sd is
 * 0.16%), mean 0; another key gives other noise, the same key the same bits. */
static void test_noise_stddev(void) {
    enum { N = 200000 };
    agg_case c;
    CHECK_OK(build(&c, (fedc_aggregation){.clip = 2, .noise_multiplier = 1.5, .expected_clients = 2}, N));
    float *zeros = calloc(K * N, sizeof *zeros);
    int32_t key[4] = {1, 2, 3, 0};
    fedc_executor *ex = executor(c.p, K, 1);
    CHECK_OK(fedc_executor_bind(ex, "u/a", zeros));
    CHECK_OK(fedc_executor_bind(ex, "w", WEIGHTS));
    CHECK_OK(fedc_executor_bind(ex, FEDC_AGGREGATE_KEY, key));
    CHECK_OK(fedc_executor_run(ex));
    const float *v = NULL;
    CHECK_OK(fedc_executor_output(ex, "mean/a", (const void **)&v, NULL));
    double s = 0, s2 = 0;
    for (int i = 0; v && i < N; i++) s += v[i], s2 += (double)v[i] * v[i];
    CHECK_NEAR(s / N, 0, 0.02);
    CHECK_NEAR(sqrt(s2 / N - (s / N) * (s / N)), 1.5, 0.015);
    CHECK_NEAR(output1(ex, "aggregator/noise_stddev"), 3, 0);
    float first = v ? v[0] : 0;
    CHECK_OK(fedc_executor_run(ex));
    CHECK(v && v[0] == first);
    key[0] = 2;
    CHECK_OK(fedc_executor_run(ex));
    CHECK(v && v[0] != first);
    fedc_executor_destroy(ex);
    free(zeros);
    fedc_program_destroy(c.p);
}

/* ------------------------------------------------------ adaptive clip -- */

/* Norms 5, 0.5, 13, 1 at clip 0.8, γ 0.5, η 0.2, no noise, m 4: one client is
 * unclipped, so b̄ = (1 - 3)/2 / 4 + 1/2 = 0.25 and C' = 0.8 exp(-0.2 (0.25 - 0.5)). */
static void test_adaptive_clip_hand_case(void) {
    fedc_aggregation a = fedc_aggregation_adaptive_defaults(0);
    a.expected_clients = 4;
    agg_case c;
    CHECK_OK(build(&c, a, 0));
    float ua[K * 3], ub[K * 2], clip = 0.8f;
    updates(ua, ub, true);
    fedc_executor *ex = run(&c, ua, ub, &clip, NULL, NULL);
    CHECK_NEAR(output1(ex, "aggregator/unclipped_fraction"), 0.25, 0);
    CHECK_NEAR(output1(ex, "server/" FEDC_AGGREGATE_CLIP), 0.8 * exp(0.05), 1e-7);
    CHECK_NEAR(output1(ex, "aggregator/clip"), 0.8f, 0);
    fedc_executor_destroy(ex);
    fedc_program_destroy(c.p);
}

/* TF Privacy's test_adaptation_target_zero_geometric: records 5 and -2.5, clip 16,
 * γ 0, η log 2, no noise, m 2: the clips 8, 4, 4/√2, 2, 2 and the sums 2.5, 2.5,
 * 1.5, 4/√2 - 2.5, 0 (our mean is the sum over m). */
static void test_adaptive_clip_tf_privacy_trajectory(void) {
    fedc_aggregation a = fedc_aggregation_adaptive_defaults(0);
    a.clip = 16, a.target_quantile = 0, a.clip_learning_rate = log(2.0), a.count_stddev = 0, a.expected_clients = 2;
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    agg_case c = {.alg.aggregation = a, .p = p};
    fedc_tree *u = fedc_tree_new(p), *server = fedc_tree_new(p);
    fedc_tree_set(p, u, "r", fedc_input(p, "r", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){1}), FEDC_CLIENTS)));
    fedc_tree_set(p, server, FEDC_AGGREGATE_CLIP, fedc_input(p, "clip", placed(fedc_type_scalar(FEDC_F32), FEDC_SERVER)));
    fedc_round r = {.alg = &c.alg, .p = p, .server = server};
    fedc_tree_output(p, "mean", fedc_round_aggregate(&r, u, fedc_full(p, placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), 1)));
    CHECK_OK(fedc_program_status(p));
    fedc_executor *ex = executor(p, 2, 1);
    const float rec[2] = {5, -2.5f};
    float clip = 16;
    const double root = 4 / sqrt(2.0), sums[5] = {2.5, 2.5, 1.5, root - 2.5, 0}, clips[5] = {8, 4, root, 2, 2};
    CHECK_OK(fedc_executor_bind(ex, "r", rec));
    CHECK_OK(fedc_executor_bind(ex, "clip", &clip));
    for (int t = 0; t < 5; t++) {
        CHECK_OK(fedc_executor_run(ex));
        CHECK_NEAR(output1(ex, "mean/r") * 2, sums[t], 1e-6);
        clip = output1(ex, "server/" FEDC_AGGREGATE_CLIP);
        CHECK_NEAR(clip, clips[t], 1e-6 * clips[t]);
    }
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
}

/* TFF's adaptive_clip_noise_params: z_Δ = (z⁻² − (2σ_b)⁻²)^(−1/2), σ_b = 0.05 m;
 * z >= 2σ_b refused; z = 0 gives no noise at all. */
static void test_adaptive_noise_multipliers(void) {
    fedc_aggregation a = fedc_aggregation_adaptive_defaults(1.0);
    double zu, sb;
    CHECK_OK(fedc_aggregation_noise(&a, 100, &zu, &sb));
    CHECK_NEAR(sb, 5, 1e-15);
    CHECK_NEAR(zu, 1 / sqrt(1 - 1 / 100.0), 1e-15);
    CHECK_ERR(fedc_aggregation_noise(&a, 10, &zu, &sb), FEDC_EINVAL, "too low");
    a.noise_multiplier = 0;
    CHECK_OK(fedc_aggregation_noise(&a, 10, &zu, &sb));
    CHECK(zu == 0 && sb == 0);
    a = (fedc_aggregation){.clip = 1, .noise_multiplier = 0.7};
    CHECK_OK(fedc_aggregation_noise(&a, 10, &zu, &sb));
    CHECK(zu == 0.7 && sb == 0);
}

static void test_check_refuses_bad_settings(void) {
    CHECK_ERR(fedc_aggregation_check(&(fedc_aggregation){.clip = -1}), FEDC_EINVAL, "clip");
    CHECK_ERR(fedc_aggregation_check(&(fedc_aggregation){.zero_norm = INFINITY}), FEDC_EINVAL, "zeroing");
    CHECK_ERR(fedc_aggregation_check(&(fedc_aggregation){.noise_multiplier = 1}), FEDC_EINVAL, "needs a clip");
    fedc_aggregation a = fedc_aggregation_adaptive_defaults(0);
    a.target_quantile = 1.5;
    CHECK_ERR(fedc_aggregation_check(&a), FEDC_EINVAL, "quantile");
    CHECK_OK(fedc_aggregation_check(&(fedc_aggregation){.clip = 1, .noise_multiplier = 1}));
}

/* ---------------------------------------------------- Poisson sampling -- */

/* Each of 10,000 clients at q = 0.03: the count is Binomial (mean 300, sd 17),
 * the same for the same (seed, round), in increasing order; more than max refused. */
static void test_poisson_sampling(void) {
    enum { N = 10000 };
    static int64_t a[N], b[N];
    int64_t na, nb, total = 0;
    for (uint32_t r = 0; r < 20; r++) {
        CHECK_OK(fedc_sample_clients_poisson(N, 0.03, 5, r, N, a, &na));
        CHECK_OK(fedc_sample_clients_poisson(N, 0.03, 5, r, N, b, &nb));
        CHECK(na == nb && !memcmp(a, b, (size_t)na * sizeof *a));
        for (int64_t i = 1; i < na; i++) CHECK(a[i - 1] < a[i]);
        CHECK_NEAR((double)na, 300, 6 * 17.1);
        total += na;
    }
    CHECK_NEAR(total / 20.0, 300, 5 * 17.1 / sqrt(20));
    CHECK_ERR(fedc_sample_clients_poisson(N, 0.03, 5, 0, 100, a, &na), FEDC_ERANGE, "more than 100");
    CHECK_ERR(fedc_sample_clients_poisson(N, 1.5, 5, 0, N, a, &na), FEDC_EINVAL, "rate");
}

/* Absent clients (fedc_executor_set_absent) are not run (client 2's bad index
 * would fail the round) and are left out of the sum; dropped lists none of them. */
static void test_absent_clients(void) {
    fedc_program *body, *p;
    CHECK_OK(fedc_program_create(&body));
    fedc_value table = fedc_input(body, "t", fedc_type_make(FEDC_F32, 1, (int64_t[]){3}));
    fedc_value idx = fedc_input(body, "i", fedc_type_make(FEDC_I32, 1, (int64_t[]){1}));
    fedc_program_output(body, "y", fedc_gather(body, table, idx));
    CHECK_OK(fedc_program_create(&p));
    fedc_value args[2] = {fedc_input(p, "t", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){3}), FEDC_CLIENTS)),
                          fedc_input(p, "i", placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){1}), FEDC_CLIENTS))}, y;
    CHECK_OK(fedc_map(p, body, args, 2, &y));
    fedc_program_output(p, "sum", fedc_sum(p, y));
    fedc_program_output(p, "doubled", fedc_add(p, y, y));
    const float t[K * 3] = {1, 2, 3, 10, 20, 30, 100, 200, 300, 1000, 2000, 3000};
    const int32_t i[K] = {0, 1, 7, 2};
    const uint8_t absent[K] = {0, 0, 1, 0};
    for (int threads = 1; threads <= 2; threads++) {
        fedc_executor *ex = executor(p, K, threads);
        CHECK_OK(fedc_executor_bind(ex, "t", t));
        CHECK_OK(fedc_executor_bind(ex, "i", i));
        CHECK_ERR(fedc_executor_run(ex), FEDC_ERANGE, "client 2");
        CHECK_OK(fedc_executor_set_absent(ex, absent));
        CHECK_OK(fedc_executor_run(ex));
        CHECK_NEAR(output1(ex, "sum"), 1 + 20 + 3000, 0);
        const float *d = NULL;
        CHECK_OK(fedc_executor_output(ex, "doubled", (const void **)&d, NULL));
        CHECK(d && d[2] == 0 && d[3] == 6000);
        int which[K];
        CHECK_EQ_INT(fedc_executor_dropped(ex, which, K), 0);
        fedc_executor_destroy(ex);
    }
    fedc_program_destroy(body);
    fedc_program_destroy(p);
}

/* ------------------------------------------------------ fedc train -- */

/* The real silos where ../shared/data has them, else the small ones. */
#define HEART fedc_test_data("heart-disease-uci")

static bool have_heart(void) {
    CHECK_MSG(HEART != NULL, "the heart-disease data could not be written");
    return HEART != NULL;
}

/* DP-FedAvg with an adaptive clip, noise and zeroing on the heart-disease silos. */
static fedc_train_config dp_config(const char *name) {
    static char dirs[8][512];
    static int next;
    char *dir = dirs[next++ % 8];
    snprintf(dir, sizeof dirs[0], "%s", fedc_test_tmp(name));
    fedc_train_config c;
    fedc_train_defaults(&c);
    c.data = HEART, c.model = "heart", c.rounds = 6, c.clients_per_round = 3, c.eval_every = 3;
    c.algorithm.batch_size = 16;
    c.algorithm.aggregation = fedc_aggregation_adaptive_defaults(0.5);
    c.algorithm.aggregation.zero_norm = 50;
    c.algorithm.aggregation.count_stddev = 1; /* 0.05 x 3 would be too little for z = 0.5 */
    c.checkpoint_every = 3, c.out_dir = dir, c.quiet = true, c.threads = 1;
    return c;
}

/* The checkpoints' tensors (the model, the server state with its adaptive clip)
 * bit for bit. */
static bool same_checkpoints(const char *a, const char *b) {
    char pa[600], pb[600];
    snprintf(pa, sizeof pa, "%s/checkpoint.safetensors", a), snprintf(pb, sizeof pb, "%s/checkpoint.safetensors", b);
    fedc_safetensors *x = NULL, *y = NULL;
    bool same = !fedc_safetensors_read(pa, &x) && !fedc_safetensors_read(pb, &y) &&
                fedc_safetensors_count(x) == fedc_safetensors_count(y), clip = false, same_bits = same;
    for (int i = 0; same && i < fedc_safetensors_count(x); i++) {
        fedc_tensor_entry u = fedc_safetensors_tensor(x, i), v = fedc_safetensors_tensor(y, i);
        same = !strcmp(u.name, v.name) && fedc_type_bytes(&u.type) == fedc_type_bytes(&v.type);
        same_bits &= same && !memcmp(u.data, v.data, fedc_type_bytes(&u.type));
        clip |= strstr(u.name, FEDC_AGGREGATE_CLIP) != NULL;
    }
    CHECK_MSG(clip, "the checkpoint holds no adaptive clip");
    fedc_safetensors_destroy(x), fedc_safetensors_destroy(y);
    return same && same_bits;
}

/* With the fixed-size sampler, or Poisson's at q = 0.5 (rounds of 0 to 4 clients). */
static void dp_run_resumes(bool poisson) {
    fedc_train_config whole = dp_config("dp-whole"), part = dp_config("dp-part"), two = dp_config("dp-two");
    whole.poisson = part.poisson = two.poisson = poisson;
    two.threads = 2;
    fedc_train_result r;
    CHECK_OK(fedc_train(&whole, &r));
    CHECK_OK(fedc_train(&two, &r));
    CHECK(same_checkpoints(whole.out_dir, two.out_dir));
    part.rounds = 3;
    CHECK_OK(fedc_train(&part, &r));
    part.rounds = 6, part.resume = true;
    CHECK_OK(fedc_train(&part, &r));
    CHECK_EQ_INT(r.rounds_run, 3);
    CHECK(same_checkpoints(whole.out_dir, part.out_dir));
    /* the noise is drawn: without it (and nothing else changed) the model differs */
    fedc_train_config other = dp_config("dp-other");
    other.poisson = poisson;
    other.algorithm.aggregation.noise_multiplier = 0;
    CHECK_OK(fedc_train(&other, &r));
    CHECK(!same_checkpoints(whole.out_dir, other.out_dir));
    /* a resume that changes the noise is refused */
    fedc_train_config changed = dp_config("dp-part");
    changed.resume = true, changed.rounds = 8, changed.poisson = poisson;
    changed.algorithm.aggregation.noise_multiplier = 0.6;
    CHECK_ERR(fedc_train(&changed, &r), FEDC_EINVAL, "--dp-noise 0.6 (the checkpoint's: 0.5)");
    changed.algorithm.aggregation.noise_multiplier = 0.5, changed.poisson = !poisson;
    CHECK_ERR(fedc_train(&changed, &r), FEDC_EINVAL, poisson ? "--sampling fixed" : "--sampling poisson:0");
}

static void test_dp_run_resumes_bitwise_and_threads_agree(void) {
    if (!have_heart()) return;
    dp_run_resumes(false);
    dp_run_resumes(true);
}

/* metrics.jsonl: the clip, the noise's stddev, the zeroed count and ε in every
 * round's row; ε grows with the rounds and is what the accountant says for
 * (q, z_Δ) and (q, 2σ_b). */
static void test_dp_metrics(void) {
    if (!have_heart()) return;
    fedc_train_config c = dp_config("dp-metrics");
    fedc_train_result r;
    CHECK_OK(fedc_train(&c, &r));
    char path[600], line[6][2048];
    snprintf(path, sizeof path, "%s/metrics.jsonl", c.out_dir);
    FILE *f = fopen(path, "r");
    int rows = 0;
    while (f && rows < 6 && fgets(line[rows], sizeof line[rows], f)) rows++;
    if (f) fclose(f);
    CHECK_EQ_INT(rows, 6);
    if (rows < 6) return;
    double eps[6] = {0};
    for (int i = 0; i < 6; i++) {
        CHECK(strstr(line[i], "\"dp_clip\": ") && strstr(line[i], "\"dp_noise_stddev\": ") && strstr(line[i], "\"zeroed\": 0"));
        const char *e = strstr(line[i], "\"epsilon\": ");
        CHECK(e != NULL);
        if (e) eps[i] = strtod(e + strlen("\"epsilon\": "), NULL);
        CHECK(i == 0 || eps[i - 1] < eps[i]);
    }
    double zu, sb;
    CHECK_OK(fedc_aggregation_noise(&c.algorithm.aggregation, 3, &zu, &sb));
    fedc_privacy_accountant *acc;
    CHECK_OK(fedc_privacy_accountant_create(&acc, NULL, 0));
    CHECK_OK(fedc_privacy_accountant_add(acc, 3.0 / 4, zu, 6));
    CHECK_OK(fedc_privacy_accountant_add(acc, 3.0 / 4, 2 * sb, 6));
    double want, order;
    CHECK_OK(fedc_privacy_accountant_epsilon(acc, 1.0 / 4, FEDC_RDP_IMPROVED, &want, &order));
    fedc_privacy_accountant_destroy(acc);
    CHECK(eps[0] > 0);
    CHECK_NEAR(eps[5], want, 1e-8 * want); /* round 6's */
}

int main(int argc, char **argv) {
    if (!fedc_test_tmpdir("test-aggregators")) return 1;
    static const fedc_test tests[] = {
        {"random_normal: fedc_rng_normal's bits, any threads", test_random_normal_bits_and_threads},
        {"random_normal: standard normal statistics", test_random_normal_statistics},
        {"random_normal: bad key and dtype refused", test_random_normal_rejects_bad_types},
        {"zeroing counts NaN, Inf and over-bound clients", test_zeroing_counts_and_zeroes},
        {"clipping bounds each client's norm", test_clipping_bounds_the_norm},
        {"z = 0 gives the unnoised bits", test_zero_noise_gives_the_unnoised_bits},
        {"the noise's stddev is z C / m", test_noise_stddev},
        {"adaptive clip: the formula on a hand case", test_adaptive_clip_hand_case},
        {"adaptive clip: TF Privacy's geometric trajectory", test_adaptive_clip_tf_privacy_trajectory},
        {"adaptive clip: TFF's noise multipliers", test_adaptive_noise_multipliers},
        {"bad settings refused", test_check_refuses_bad_settings},
        {"Poisson sampling", test_poisson_sampling},
        {"absent clients are not run and left out", test_absent_clients},
        {"fedc train: DP resumes bitwise, 1 and 2 threads agree", test_dp_run_resumes_bitwise_and_threads_agree},
        {"fedc train: DP metrics and epsilon", test_dp_metrics},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
