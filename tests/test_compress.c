/* Compression (fedc/aggregate.h, src/fl/compress.c): the random_uniform op gives
 * fedc_rng_uniform_f32's bits on any number of threads; FedJAX's uniform
 * stochastic quantization against FedJAX's own tests
 * (fedjax/aggregators/compression_test.py), with their values where they do not
 * depend on JAX's random bits: a vector of as many evenly spaced values as levels
 * and one of equal values come back unchanged; over 500 draws the mean is the
 * vector (their tolerances); the quantizing aggregator's weighted mean of their
 * three clients is [1.5, 3.25, 5] at 68.75489 bits a client. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "harness.h"

static fedc_type placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

/* Client c's key: the stream (seed 11, round 2, client c). */
static void keys_of(int clients, int32_t *keys) {
    for (int c = 0; c < clients; c++) {
        fedc_rng_stream s = fedc_rng_stream_make(11, 2, (uint32_t)c, 0);
        keys[4 * c] = (int32_t)s.key.k[0], keys[4 * c + 1] = (int32_t)s.key.k[1];
        keys[4 * c + 2] = (int32_t)s.c2, keys[4 * c + 3] = (int32_t)s.c3;
    }
}

/* Runs p on `clients` clients and `threads` threads with v (clients x n) and
 * their keys bound; out's clients x n values copied into got. */
static bool run(const fedc_program *p, int clients, int threads, const float *v, const char *out, float *got, size_t n) {
    fedc_executor *ex = NULL;
    int32_t *keys = malloc((size_t)clients * 4 * sizeof *keys);
    keys_of(clients, keys);
    CHECK_OK(fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = clients, .threads = threads}));
    const void *data = NULL;
    bool ok = ex && !fedc_executor_bind(ex, "key", keys) && (!v || !fedc_executor_bind(ex, "v", v)) &&
              !fedc_executor_run(ex) && !fedc_executor_output(ex, out, &data, NULL);
    CHECK_MSG(ok, "%s", fedc_errmsg());
    if (ok) memcpy(got, data, n * sizeof *got);
    fedc_executor_destroy(ex);
    free(keys);
    return ok;
}

static void test_random_uniform_bits_and_threads(void) {
    enum { N = 1000, K = 3 };
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value key = fedc_input(p, "key", placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS));
    fedc_program_output(p, "u", fedc_random_uniform(p, key, fedc_type_make(FEDC_F32, 1, (int64_t[]){N})));
    CHECK_OK(fedc_program_status(p));
    static float a[K * N], b[K * N];
    if (run(p, K, 1, NULL, "u", a, K * N) && run(p, K, 3, NULL, "u", b, K * N)) {
        CHECK(!memcmp(a, b, sizeof a));
        int bad = 0;
        for (int c = 0; c < K; c++)
            for (int i = 0; i < N; i++)
                bad += a[c * N + i] != fedc_rng_uniform_f32(fedc_rng_stream_make(11, 2, (uint32_t)c, 0), (uint64_t)i) ||
                       !(a[c * N + i] >= 0 && a[c * N + i] < 1);
        CHECK_EQ_INT(bad, 0);
    }
    fedc_program_destroy(p);
}

/* The quantization of v@clients (f32 [rows, cols]) to `levels` levels. */
static fedc_program *quantizer(int64_t rows, int64_t cols, int levels) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_type t = rows > 1 ? fedc_type_make(FEDC_F32, 2, (int64_t[]){rows, cols}) : fedc_type_make(FEDC_F32, 1, &cols);
    fedc_value key = fedc_input(p, "key", placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS));
    fedc_tree *v = fedc_tree_new(p);
    fedc_tree_set(p, v, "w", fedc_input(p, "v", placed(t, FEDC_CLIENTS)));
    fedc_tree *q = fedc_aggregate_quantize(p, v, key, levels);
    if (q) CHECK_OK(fedc_tree_output(p, "q", q));
    CHECK_OK(fedc_program_status(p));
    return p;
}

/* test_uniform_stochastic_quantize_identity and _all_equal: unchanged, bit for bit. */
static void test_quantize_identity(void) {
    const float spaced[4] = {0, 2, 2, 4}, equal[4] = {4, 4, 4, 4};
    const float *v[2] = {spaced, equal};
    const int levels[2] = {3, 4};
    for (int k = 0; k < 2; k++) {
        fedc_program *p = quantizer(1, 4, levels[k]);
        float got[4];
        if (run(p, 1, 1, v[k], "q/w", got, 4)) CHECK(!memcmp(got, v[k], sizeof got));
        fedc_program_destroy(p);
    }
}

/* test_uniform_stochastic_quantize_unbiasedness_one_dim and _two_dim: the mean of
 * 500 quantizations (500 clients, each its own stream) at 125 levels is v, to
 * numpy's decimal=2 (one dim) and decimal=1 (two dims): |mean - v| < 1.5 · 10^-d.
 * Each quantization is v to within a level ((max - min) / 124) everywhere. */
static void test_quantize_unbiased(void) {
    enum { DRAWS = 500 };
    const float one[3] = {0, 1, 100}, two[6] = {0, 1, 100, 0.3f, 2.3f, 45};
    const float *v[2] = {one, two};
    const int rows[2] = {1, 2};
    const double tol[2] = {1.5e-2, 1.5e-1};
    for (int k = 0; k < 2; k++) {
        int n = 3 * rows[k];
        float *in = malloc((size_t)(DRAWS * n) * sizeof *in), *got = malloc((size_t)(DRAWS * n) * sizeof *got);
        for (int d = 0; d < DRAWS; d++) memcpy(in + d * n, v[k], (size_t)n * sizeof *in);
        fedc_program *p = quantizer(rows[k], 3, 125);
        if (run(p, DRAWS, 2, in, "q/w", got, (size_t)(DRAWS * n))) {
            double worst = 0, step = 100.0 / 124;
            for (int i = 0; i < n; i++) {
                double sum = 0;
                for (int d = 0; d < DRAWS; d++) {
                    sum += got[d * n + i];
                    CHECK_MSG(fabs(got[d * n + i] - v[k][i]) <= step * (1 + 1e-5), "draw %d, element %d: %g from %g", d, i,
                              got[d * n + i], v[k][i]);
                }
                worst = fmax(worst, fabs(sum / DRAWS - v[k][i]));
            }
            CHECK_MSG(worst < tol[k], "%d dim(s): the mean is off by %g", rows[k], worst);
        }
        fedc_program_destroy(p);
        free(in), free(got);
    }
}

/* test_uniform_stochastic_quantizer: clients a, b, c with w [1, 2, 3], [2, 4, 6],
 * [1, 3, 5] and weights 2, 4, 2, 3 levels: each w is its own quantization, so the
 * weighted mean is [1.5, 3.25, 5] exactly; FedJAX's num_bits 68.75489 per client. */
static void test_quantizer_aggregate(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    int64_t three = 3;
    fedc_value key = fedc_input(p, "key", placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS));
    fedc_value weight = fedc_input(p, "weight", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS));
    fedc_tree *v = fedc_tree_new(p);
    fedc_tree_set(p, v, "w", fedc_input(p, "v", placed(fedc_type_make(FEDC_F32, 1, &three), FEDC_CLIENTS)));
    fedc_tree *mean = fedc_tree_weighted_mean(p, fedc_aggregate_quantize(p, v, key, 3), weight);
    if (mean) CHECK_OK(fedc_tree_output(p, "mean", mean));
    CHECK_OK(fedc_program_status(p));
    const float w[9] = {1, 2, 3, 2, 4, 6, 1, 3, 5}, weights[3] = {2, 4, 2};
    fedc_executor *ex = NULL;
    int32_t keys[12];
    keys_of(3, keys);
    CHECK_OK(fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = 3}));
    const float *got = NULL;
    if (ex && !fedc_executor_bind(ex, "key", keys) && !fedc_executor_bind(ex, "v", w) &&
        !fedc_executor_bind(ex, "weight", weights) && !fedc_executor_run(ex) &&
        !fedc_executor_output(ex, "mean/w", (const void **)&got, NULL))
        CHECK(got[0] == 1.5f && got[1] == 3.25f && got[2] == 5.0f);
    else CHECK_MSG(false, "%s", fedc_errmsg());
    CHECK_NEAR(fedc_aggregate_quantized_bits(3, 3, 1), 68.75489, 1e-5);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
}

static void test_quantize_refuses_one_level(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value key = fedc_input(p, "key", placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS));
    fedc_tree *v = fedc_tree_new(p);
    fedc_tree_set(p, v, "w", fedc_input(p, "v", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS)));
    CHECK(fedc_aggregate_quantize(p, v, key, 1) == NULL);
    CHECK_ERR(fedc_program_status(p), FEDC_EINVAL, "at least 2");
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"random_uniform: fedc_rng_uniform_f32's bits, any threads", test_random_uniform_bits_and_threads},
        {"quantize: spaced and equal vectors unchanged (FedJAX's)", test_quantize_identity},
        {"quantize: unbiased over 500 draws (FedJAX's)", test_quantize_unbiased},
        {"quantizer: FedJAX's weighted mean and bits", test_quantizer_aggregate},
        {"quantize: one level refused", test_quantize_refuses_one_level},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
