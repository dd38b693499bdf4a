/* The structured Walsh-Hadamard rotation (fedc/aggregate.h, src/fl/rotate.c)
 * against FedJAX's own tests (fedjax/aggregators/walsh_hadamard_test.py and the
 * rotated quantizer of compression_test.py): the transform is H x (the dense
 * Hadamard matrix's product, in double) to their rtol/atol 1e-4 on 2^10 normals,
 * and on sizes whose factors take one, two and three matmuls, on clients and
 * threads alike; a rotation is orthonormal and its inverse gives the tree back
 * (their 5 x 10 normals and two-leaf tree, to 1e-4); FedJAX's rotated quantizer
 * of the three clients at 2 levels averages to [1.5, 3.25, 5] over 2000 rounds
 * (decimal=1) at 67 bits a round. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "harness.h"

static fedc_type placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

static fedc_type key_type(fedc_placement pl) { return placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), pl); }

/* Sylvester's H_n x in double, by butterflies: the oracle. */
static void reference_transform(double *x, int64_t n) {
    for (int64_t h = 1; h < n; h *= 2)
        for (int64_t i = 0; i < n; i += 2 * h)
            for (int64_t j = i; j < i + h; j++) {
                double a = x[j], b = x[j + h];
                x[j] = a + b, x[j + h] = a - b;
            }
}

/* Normals from the stream (seed, 0, client, 0). */
static void normals(uint64_t seed, int clients, int64_t n, float *out) {
    for (int c = 0; c < clients; c++)
        for (int64_t i = 0; i < n; i++)
            out[c * n + i] = (float)fedc_rng_normal(fedc_rng_stream_make(seed, 0, (uint32_t)c, 0), (uint64_t)i);
}

/* Runs p on `clients` clients and `threads` threads with inputs bound by name;
 * output `out` (n floats) copied into got. */
static bool run(const fedc_program *p, int clients, int threads, const char *const *names, const void *const *data,
                int ninputs, const char *out, float *got, size_t n) {
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = clients, .threads = threads}));
    bool ok = ex != NULL;
    for (int i = 0; ok && i < ninputs; i++) ok = !fedc_executor_bind(ex, names[i], data[i]);
    const void *v = NULL;
    ok = ok && !fedc_executor_run(ex) && !fedc_executor_output(ex, out, &v, NULL);
    CHECK_MSG(ok, "%s", fedc_errmsg());
    if (ok) memcpy(got, v, n * sizeof *got);
    fedc_executor_destroy(ex);
    return ok;
}

/* The largest |got - want| beyond atol + rtol |want| (0: all within). */
static double worst_excess(const float *got, const double *want, int64_t n, double rtol, double atol) {
    double worst = 0;
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(got[i] - want[i]) - (atol + rtol * fabs(want[i])));
    return worst;
}

/* test_walsh_hadamard_transform: seeds 0..4 of 2^10 normals against the dense
 * H @ x (FedJAX's rtol = atol = 1e-4). */
static void test_transform_matches_the_dense_product(void) {
    enum { N = 1024 };
    static float x[N], y[N];
    static double want[N];
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_program_output(p, "y", fedc_walsh_hadamard(p, fedc_input(p, "x", fedc_type_make(FEDC_F32, 1, (int64_t[]){N}))));
    CHECK_OK(fedc_program_status(p));
    for (uint64_t seed = 0; seed < 5; seed++) {
        normals(seed, 1, N, x);
        for (int i = 0; i < N; i++) { /* row i of H: (-1)^popcount(i & j) */
            want[i] = 0;
            for (int j = 0; j < N; j++) want[i] += (__builtin_popcount((unsigned)(i & j)) & 1 ? -1.0 : 1.0) * x[j];
        }
        if (run(p, 1, 1, (const char *[]){"x"}, (const void *[]){x}, 1, "y", y, N))
            CHECK_MSG(worst_excess(y, want, N, 1e-4, 1e-4) <= 0, "seed %d: off by %g", (int)seed,
                      worst_excess(y, want, N, 1e-4, 1e-4));
    }
    fedc_program_destroy(p);
}

/* Sizes of one factor (1, 2, 128), two (2^10 = 8 x 128) and three (2^15 = 2 x
 * 128 x 128: the middle axis is a batched matmul), on 3 clients: each client's H
 * x (to 1e-5 of the outputs' scale, sqrt(n)), and the same bits on 1 and 2
 * threads. */
static void test_transform_sizes_clients_threads(void) {
    const int64_t sizes[] = {1, 2, 128, 1024, 1 << 15};
    enum { K = 3 };
    for (int s = 0; s < FEDC_COUNT_OF(sizes); s++) {
        int64_t n = sizes[s];
        float *x = malloc((size_t)(K * n) * sizeof *x), *a = malloc((size_t)(K * n) * sizeof *a);
        float *b = malloc((size_t)(K * n) * sizeof *b);
        double *want = malloc((size_t)n * sizeof *want);
        normals(7, K, n, x);
        fedc_program *p;
        CHECK_OK(fedc_program_create(&p));
        fedc_value in = fedc_input(p, "x", placed(fedc_type_make(FEDC_F32, 1, &n), FEDC_CLIENTS));
        fedc_program_output(p, "y", fedc_walsh_hadamard(p, in));
        CHECK_OK(fedc_program_status(p));
        bool ok = run(p, K, 1, (const char *[]){"x"}, (const void *[]){x}, 1, "y", a, (size_t)(K * n)) &&
                  run(p, K, 2, (const char *[]){"x"}, (const void *[]){x}, 1, "y", b, (size_t)(K * n));
        for (int c = 0; ok && c < K; c++) {
            for (int64_t i = 0; i < n; i++) want[i] = x[c * n + i];
            reference_transform(want, n);
            double e = worst_excess(a + c * n, want, n, 1e-5, 1e-5 * sqrt((double)n)); /* outputs ~ sqrt(n) */
            CHECK_MSG(e <= 0, "n %lld, client %d: off by %g", (long long)n, c, e);
        }
        CHECK(ok && !memcmp(a, b, (size_t)(K * n) * sizeof *a));
        fedc_program_destroy(p);
        free(x), free(a), free(b), free(want);
    }
}


/* A tree of leaves `names` of types `types` (@clients when `clients`). */
static fedc_tree *leaves(fedc_program *p, const char *const *names, const fedc_type *types, int n, bool clients) {
    fedc_tree *t = fedc_tree_new(p);
    for (int i = 0; i < n; i++)
        fedc_tree_set(p, t, names[i], fedc_input(p, names[i], placed(types[i], clients ? FEDC_CLIENTS : FEDC_LOCAL)));
    return t;
}

/* A transform of a size not a power of two, an inverse to a tree of another size
 * or leaf count, and a rotation of an i32 leaf are refused, naming what is wrong. */
static void test_bad_sizes_refused(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    CHECK(fedc_walsh_hadamard(p, fedc_input(p, "x", fedc_type_make(FEDC_F32, 1, (int64_t[]){12}))) == FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "power of two");
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    fedc_value key = fedc_input(p, "key", key_type(FEDC_LOCAL));
    fedc_tree *rotated = leaves(p, (const char *[]){"w"}, (fedc_type[]){fedc_type_make(FEDC_F32, 1, (int64_t[]){64})}, 1, false);
    fedc_tree *like = leaves(p, (const char *[]){"v"}, (fedc_type[]){fedc_type_make(FEDC_F32, 1, (int64_t[]){100})}, 1, false);
    CHECK(fedc_aggregate_unrotate(p, rotated, key, like) == NULL);
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "leaf 0 has 64 numbers; its rotation has 128");
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    key = fedc_input(p, "key", key_type(FEDC_LOCAL));
    rotated = leaves(p, (const char *[]){"w"}, (fedc_type[]){fedc_type_make(FEDC_F32, 1, (int64_t[]){64})}, 1, false);
    CHECK(fedc_aggregate_unrotate(p, rotated, key, fedc_tree_new(p)) == NULL);
    CHECK_ERR(fedc_program_status(p), FEDC_EINVAL, "1 leaves, but `like` has 0");
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    key = fedc_input(p, "key", key_type(FEDC_LOCAL));
    CHECK(fedc_aggregate_rotate(p, leaves(p, (const char *[]){"n"}, (fedc_type[]){fedc_type_make(FEDC_I32, 1, (int64_t[]){4})}, 1,
                                          false), key) == NULL);
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "leaf \"n\" is not f32");
    fedc_program_destroy(p);
}

/* test_structured_rotation: 5 x 10 normals rotated (to 64 numbers, the norm
 * kept) and back: x to 1e-4. The rotation is random: another key, other numbers. */
static void test_rotation_round_trip(void) {
    enum { N = 50 };
    float x[N], y[2][64], z[N];
    normals(100, 1, N, x);
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value key = fedc_input(p, "key", key_type(FEDC_LOCAL));
    fedc_tree *t = leaves(p, (const char *[]){"x"}, (fedc_type[]){fedc_type_make(FEDC_F32, 2, (int64_t[]){5, 10})}, 1, false);
    fedc_tree *r = fedc_aggregate_rotate(p, t, key);
    if (r) fedc_program_output(p, "y", fedc_tree_get(p, r, "x"));
    if (r) fedc_program_output(p, "z", fedc_tree_get(p, fedc_aggregate_unrotate(p, r, key, t), "x"));
    CHECK_OK(fedc_program_status(p));
    const int32_t keys[2][4] = {{10, 0, 0, 0}, {11, 0, 0, 0}};
    for (int k = 0; k < 2; k++) {
        if (!run(p, 1, 1, (const char *[]){"x", "key"}, (const void *[]){x, keys[k]}, 2, "y", y[k], 64)) return;
    }
    run(p, 1, 1, (const char *[]){"x", "key"}, (const void *[]){x, keys[0]}, 2, "z", z, N);
    double nx = 0, ny = 0, worst = 0;
    for (int i = 0; i < N; i++) nx += (double)x[i] * x[i], worst = fmax(worst, fabs(z[i] - x[i]) - 1e-4 * (1 + fabs(x[i])));
    for (int i = 0; i < 64; i++) ny += (double)y[0][i] * y[0][i];
    CHECK_MSG(worst <= 0, "the inverse is off by %g", worst);
    CHECK_NEAR(sqrt(ny), sqrt(nx), 1e-5 * sqrt(nx));
    CHECK(memcmp(y[0], y[1], sizeof y[0]) != 0);
    fedc_program_destroy(p);
}

/* test_structured_rotation_pytree: a [[1, 0, 0], [1, 2, 3]] and b [[1, 0], [1, 2]]
 * back to 1e-4, each leaf with its own signs (leaf k: key + [0, 0, 0, k + 1]). */
static void test_rotation_tree(void) {
    const float a[6] = {1, 0, 0, 1, 2, 3}, b[4] = {1, 0, 1, 2};
    const int32_t key[4] = {10, 0, 0, 0};
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value k = fedc_input(p, "key", key_type(FEDC_LOCAL));
    fedc_type types[2] = {fedc_type_make(FEDC_F32, 2, (int64_t[]){2, 3}), fedc_type_make(FEDC_F32, 2, (int64_t[]){2, 2})};
    fedc_tree *t = leaves(p, (const char *[]){"a", "b"}, types, 2, false);
    fedc_tree *back = fedc_aggregate_unrotate(p, fedc_aggregate_rotate(p, t, k), k, t);
    if (back) CHECK_OK(fedc_tree_output(p, "z", back));
    CHECK_OK(fedc_program_status(p));
    float za[6], zb[4];
    const char *names[3] = {"a", "b", "key"};
    const void *data[3] = {a, b, key};
    if (run(p, 1, 1, names, data, 3, "z/a", za, 6) && run(p, 1, 1, names, data, 3, "z/b", zb, 4)) {
        for (int i = 0; i < 6; i++) CHECK_NEAR(za[i], a[i], 1e-4);
        for (int i = 0; i < 4; i++) CHECK_NEAR(zb[i], b[i], 1e-4);
    }
    fedc_program_destroy(p);
}

/* test_rotated_uniform_stochastic_quantizer through fedc_round_aggregate: clients
 * w [1, 2, 3], [2, 4, 6], [1, 3, 5] with weights 2, 4, 2, 2 levels (1 bit) and
 * the rotation: over 2000 rounds (each its own server and client keys) the mean is
 * [1.5, 3.25, 5] to decimal=1, at log2(2) x 3 + 64 = 67 bits a client a round. */
static void test_rotated_quantizer_fedjax(void) {
    enum { ROUNDS = 2000, K = 3 };
    fedc_algorithm alg = {.aggregation = {.compress_bits = 1, .compress_rotate = true}};
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_tree *u = leaves(p, (const char *[]){"w"}, (fedc_type[]){fedc_type_make(FEDC_F32, 1, (int64_t[]){3})}, 1, true);
    fedc_value weight = fedc_input(p, "weight", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS));
    fedc_round r = {.alg = &alg, .p = p, .server = fedc_tree_new(p)};
    fedc_tree *mean = fedc_round_aggregate(&r, u, weight);
    if (mean) CHECK_OK(fedc_tree_output(p, "mean", mean));
    CHECK_OK(fedc_program_status(p));
    const float w[K * 3] = {1, 2, 3, 2, 4, 6, 1, 3, 5}, weights[K] = {2, 4, 2};
    int32_t keys[K * 4], server[4] = {0};
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = K}));
    if (!ex) return fedc_program_destroy(p);
    CHECK_OK(fedc_executor_bind(ex, "w", w));
    CHECK_OK(fedc_executor_bind(ex, "weight", weights));
    CHECK_OK(fedc_executor_bind(ex, "key", keys));
    CHECK_OK(fedc_executor_bind(ex, FEDC_AGGREGATE_KEY, server));
    double sum[3] = {0, 0, 0}, bits = 0;
    for (int t = 0; t < ROUNDS; t++) {
        fedc_rng_stream s = fedc_rng_stream_make(5, (uint32_t)t, 0, 0);
        server[0] = (int32_t)s.key.k[0] ^ 0x5a5a, server[2] = (int32_t)s.c2;
        for (int c = 0; c < K; c++) {
            s = fedc_rng_stream_make(5, (uint32_t)t, (uint32_t)c, 0);
            keys[4 * c] = (int32_t)s.key.k[0], keys[4 * c + 1] = (int32_t)s.key.k[1], keys[4 * c + 2] = (int32_t)s.c2;
            keys[4 * c + 3] = 0;
        }
        const float *m = NULL;
        const double *b = NULL;
        if (fedc_executor_run(ex) || fedc_executor_output(ex, "mean/w", (const void **)&m, NULL) ||
            fedc_executor_output(ex, "aggregator/bits", (const void **)&b, NULL)) {
            CHECK_MSG(false, "round %d: %s", t, fedc_errmsg());
            break;
        }
        for (int i = 0; i < 3; i++) sum[i] += m[i];
        bits += *b;
    }
    const double want[3] = {1.5, 3.25, 5};
    for (int i = 0; i < 3; i++) CHECK_MSG(fabs(sum[i] / ROUNDS - want[i]) < 0.15, "w[%d]: %g", i, sum[i] / ROUNDS);
    CHECK_NEAR(bits, 67.0 * ROUNDS, 0);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"walsh_hadamard: the dense product (FedJAX's)", test_transform_matches_the_dense_product},
        {"walsh_hadamard: 1 to 3 factors, clients, threads", test_transform_sizes_clients_threads},
        {"bad sizes and dtypes refused", test_bad_sizes_refused},
        {"rotation: orthonormal, inverted (FedJAX's)", test_rotation_round_trip},
        {"rotation: a tree back (FedJAX's)", test_rotation_tree},
        {"rotated quantizer: FedJAX's mean and bits", test_rotated_quantizer_fedjax},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
