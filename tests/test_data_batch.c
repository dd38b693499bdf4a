/*
 * Tests of batching (fedc_batch, fedc_padded_batch, fedc_shuffle_repeat_batch), the
 * client samplers and the synthetic datasets (include/fedc/data.h).
 *
 * Batching runs on small hand-made clients whose example e holds x = {e, 100 + e}
 * and y = 10 e, so every row of a batch says which example it is: contents and
 * masks are checked exactly, FedJAX's step counts for every (num_epochs, num_steps,
 * drop_remainder) rule, epochs as permutations, determinism per (seed, round,
 * client), and one pinned permutation so a change of the shuffle is noticed.
 * Samplers are checked for distinct sorted in-range output, determinism and
 * (loosely) uniform frequencies of clients and of whole subsets. Synthetic data is
 * checked for its shapes and ranges, determinism, FedProx's size law, its
 * heterogeneity, and Zipf frequencies. Allocation failures are injected into
 * every batching function and both generators.
 */
#include "core/internal.h"
#include "harness.h"

#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "fedc/data.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define TY(dt, ...) fedc_type_make((dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

/* --------------------------------------------------------------- fixtures -- */

/* A client of n examples: x f32[n, 2] = {e, 100 + e}, y i32[n] = 10 e, and a
 * strings feature "s" that batching must skip. */
static fedc_client_data *make_client(int64_t n) {
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_client_data_create(&c, "alice", n));
    if (!c) return NULL;
    float *x = malloc((size_t)(n ? n : 1) * 2 * sizeof *x);
    int32_t *y = malloc((size_t)(n ? n : 1) * sizeof *y);
    const char **s = malloc((size_t)(n ? n : 1) * sizeof *s);
    for (int64_t e = 0; e < n; e++) x[2 * e] = (float)e, x[2 * e + 1] = 100.0f + (float)e, y[e] = (int32_t)(10 * e);
    for (int64_t e = 0; e < n; e++) s[e] = e % 2 ? "odd" : "even";
    CHECK_OK(fedc_client_add_array(c, "x", TY(FEDC_F32, n, 2), x));
    CHECK_OK(fedc_client_add_strings(c, "s", s, NULL));
    CHECK_OK(fedc_client_add_array(c, "y", TY(FEDC_I32, n), y));
    free(x), free(y), free(s);
    return c;
}

/* The example held by row r (from its y), or -1 for a padding row; checks that
 * the row's x agrees with it and that padding is zero with mask 0. */
static int64_t row_example(const fedc_batches *b, int64_t r) {
    const fedc_feature *x = fedc_batches_feature(b, "x"), *y = fedc_batches_feature(b, "y");
    const float *xd = x->data;
    int32_t yv = ((const int32_t *)y->data)[r];
    if (b->mask[r] == 0.0f) {
        CHECK_MSG(yv == 0 && xd[2 * r] == 0 && xd[2 * r + 1] == 0, "padding row %lld is not zero", (long long)r);
        return -1;
    }
    CHECK_MSG(b->mask[r] == 1.0f, "mask[%lld] = %g", (long long)r, b->mask[r]);
    int64_t e = yv / 10;
    CHECK_MSG(xd[2 * r] == (float)e && xd[2 * r + 1] == 100.0f + (float)e, "row %lld: x does not match y = %d",
              (long long)r, yv);
    return e;
}

/* Checks shapes: x f32[steps, B, 2], y i32[steps, B], no "s". */
static void check_shapes(const fedc_batches *b, int64_t steps, int64_t batch_size) {
    CHECK_EQ_INT(b->steps, steps);
    CHECK_EQ_INT(b->batch_size, batch_size);
    CHECK_EQ_INT(b->num_features, 2);
    CHECK(fedc_batches_feature(b, "s") == NULL);
    const fedc_feature *x = fedc_batches_feature(b, "x"), *y = fedc_batches_feature(b, "y");
    CHECK(x && y);
    if (!x || !y) return;
    fedc_type tx = TY(FEDC_F32, steps, batch_size, 2), ty = TY(FEDC_I32, steps, batch_size);
    CHECK(fedc_type_equal(&x->type, &tx));
    CHECK(fedc_type_equal(&y->type, &ty));
    CHECK(x->kind == FEDC_FEATURE_ARRAY && x->offsets == NULL);
}

/* Checks b holds examples 0..real-1 in order, then padding. */
static void check_sequential(const fedc_batches *b, int64_t real) {
    for (int64_t r = 0; r < b->steps * b->batch_size; r++) {
        int64_t e = row_example(b, r);
        CHECK_MSG(e == (r < real ? r : -1), "row %lld holds %lld", (long long)r, (long long)e);
    }
}

/* ------------------------------------------------------------- in order -- */

/* fedc_batch (buckets < 0) or fedc_padded_batch gives `steps` batches holding
 * examples 0..real-1 in order, then padding. */
static void expect_in_order(const fedc_client_data *c, int64_t batch_size, bool drop, int buckets, int64_t steps,
                            int64_t real) {
    fedc_batches *b = NULL;
    CHECK_OK(buckets < 0 ? fedc_batch(c, batch_size, drop, &b) : fedc_padded_batch(c, batch_size, buckets, &b));
    if (b) check_shapes(b, steps, batch_size), check_sequential(b, real);
    fedc_batches_destroy(b);
}

static void test_batch_remainder(void) {
    fedc_client_data *c = make_client(7);
    expect_in_order(c, 3, false, -1, 3, 7); /* [0 1 2] [3 4 5] [6 pad pad] */
    expect_in_order(c, 3, true, -1, 2, 6);  /* the short batch is dropped */
    expect_in_order(c, 7, true, -1, 1, 7);  /* exact: nothing to drop */
    expect_in_order(c, 10, false, -1, 1, 7); /* one batch, mostly padding */
    expect_in_order(c, 10, true, -1, 0, 0);  /* all of it dropped */
    expect_in_order(c, 1, false, -1, 7, 7);
    fedc_client_data_destroy(c);
    c = make_client(0); /* no examples, no batches */
    expect_in_order(c, 4, false, -1, 0, 0);
    expect_in_order(c, 4, false, 3, 0, 0);
    fedc_batches *b = NULL;
    CHECK_OK(fedc_shuffle_repeat_batch(c, 4, 2, -1, false, 1, 0, 0, &b));
    if (b) check_shapes(b, 0, 4);
    fedc_batches_destroy(b);
    fedc_client_data_destroy(c);
}

/* With any number of buckets the real rows and their mask are FedJAX's, and the
 * final batch is padded to batch_size (see src/data/batch.c). */
static void test_padded_batch(void) {
    fedc_client_data *c = make_client(9);
    for (int buckets = 1; buckets <= 4; buckets++) {
        expect_in_order(c, 4, false, buckets, 3, 9); /* [0-3] [4-7] [8 pad pad pad] */
        expect_in_order(c, 3, false, buckets, 3, 9); /* exact */
        expect_in_order(c, 16, false, buckets, 1, 9);
    }
    fedc_batches *b = NULL;
    CHECK_ERR(fedc_padded_batch(c, 4, 0, &b), FEDC_EINVAL, "num_batch_size_buckets is 0");
    CHECK(b == NULL);
    CHECK_ERR(fedc_padded_batch(c, 0, 1, &b), FEDC_EINVAL, "batch_size is 0");
    fedc_client_data_destroy(c);
}

static void test_batch_errors(void) {
    fedc_client_data *c = make_client(3);
    fedc_batches *b = (fedc_batches *)&b;
    CHECK_ERR(fedc_batch(c, 0, false, &b), FEDC_EINVAL, "batch_size is 0");
    CHECK(b == NULL);
    CHECK_ERR(fedc_batch(c, -2, true, &b), FEDC_EINVAL, "\"alice\"");
    CHECK_ERR(fedc_shuffle_repeat_batch(c, 0, 1, -1, false, 0, 0, 0, &b), FEDC_EINVAL, "batch_size is 0");
    CHECK_ERR(fedc_shuffle_repeat_batch(c, 2, -1, -1, false, 0, 0, 0, &b), FEDC_EINVAL, "repeat forever");
    CHECK_ERR(fedc_batch(c, INT64_MAX / 2, false, &b), FEDC_ERANGE, "would not fit in memory");
    CHECK_ERR(fedc_shuffle_repeat_batch(c, 1, -1, (int64_t)1 << 34, false, 0, 0, 0, &b), FEDC_ERANGE, "2^32 epochs");
    /* a rank-6 feature has no room for the batch axis */
    fedc_client_data *d = NULL;
    CHECK_OK(fedc_client_data_create(&d, "bob", 1));
    float one = 1;
    CHECK_OK(fedc_client_add_array(d, "deep", TY(FEDC_F32, 1, 1, 1, 1, 1, 1), &one));
    CHECK_ERR(fedc_batch(d, 1, false, &b), FEDC_ESHAPE, "\"deep\" has rank 6");
    CHECK(b == NULL);
    fedc_client_data_destroy(d);
    fedc_client_data_destroy(c);
    c = make_client(0);
    CHECK_ERR(fedc_shuffle_repeat_batch(c, 2, -1, 3, false, 0, 0, 0, &b), FEDC_EINVAL, "without examples");
    fedc_client_data_destroy(c);
    fedc_batches_destroy(NULL);
}

/* Features of other dtypes and ranks are stacked with their trailing dims. */
static void test_batch_shapes(void) {
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_client_data_create(&c, "carol", 3));
    double img[3][2][2] = {{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}, {{9, 10}, {11, 12}}};
    uint8_t flag[3] = {1, 0, 1};
    CHECK_OK(fedc_client_add_array(c, "img", TY(FEDC_F64, 3, 2, 2), img));
    CHECK_OK(fedc_client_add_array(c, "flag", TY(FEDC_BOOL, 3), flag));
    fedc_batches *b = NULL;
    CHECK_OK(fedc_batch(c, 2, false, &b));
    if (b) {
        const fedc_feature *f = fedc_batches_feature(b, "img"), *g = fedc_batches_feature(b, "flag");
        fedc_type ti = TY(FEDC_F64, 2, 2, 2, 2), tf = TY(FEDC_BOOL, 2, 2);
        CHECK(f && fedc_type_equal(&f->type, &ti) && g && fedc_type_equal(&g->type, &tf));
        double want[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 0, 0, 0};
        uint8_t want_flag[4] = {1, 0, 1, 0};
        if (f) CHECK(memcmp(f->data, want, sizeof want) == 0);
        if (g) CHECK(memcmp(g->data, want_flag, sizeof want_flag) == 0);
        CHECK(b->mask[0] == 1 && b->mask[1] == 1 && b->mask[2] == 1 && b->mask[3] == 0);
        CHECK(fedc_batches_feature(b, "nope") == NULL);
    }
    fedc_batches_destroy(b);
    fedc_client_data_destroy(c);
}

/* ------------------------------------------------------------- shuffled -- */

/* The examples rows [first, first + n) hold, checked to be a permutation of 0..n-1;
 * written to perm (may be NULL). */
static void check_epoch(const fedc_batches *b, int64_t first, int64_t n, int64_t *perm) {
    int seen[64] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t e = row_example(b, first + i);
        CHECK_MSG(e >= 0 && e < n && !seen[e], "rows from %lld are not a permutation (%lld)", (long long)first,
                  (long long)e);
        if (e >= 0 && e < n) seen[e] = 1;
        if (perm) perm[i] = e;
    }
}

static void test_shuffle_steps(void) {
    fedc_client_data *c = make_client(5);
    struct {
        int epochs;
        int64_t steps;
        bool drop;
        int64_t want;
    } cases[] = {
        {1, -1, false, 3}, /* ceil(5 / 2) */
        {1, -1, true, 2},  /* floor(5 / 2) */
        {3, -1, false, 8}, /* ceil(15 / 2) */
        {3, -1, true, 7},
        {3, 4, false, 4},   /* num_steps cuts */
        {1, 100, false, 3}, /* num_epochs cuts */
        {1, 100, true, 2},
        {-1, 9, false, 9}, /* num_steps alone: exactly that many */
        {-1, 9, true, 9},  /* drop_remainder has no effect then */
        {0, -1, false, 0},
        {2, 0, false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fedc_batches *b = NULL;
        CHECK_OK(fedc_shuffle_repeat_batch(c, 2, cases[i].epochs, cases[i].steps, cases[i].drop, 7, 1, 2, &b));
        if (!b) continue;
        CHECK_MSG(b->steps == cases[i].want, "case %zu: %lld steps, want %lld", i, (long long)b->steps,
                  (long long)cases[i].want);
        check_shapes(b, cases[i].want, 2);
        /* every row is real: FedJAX fills the final batch from the next epoch */
        for (int64_t r = 0; r < b->steps * 2; r++) CHECK(row_example(b, r) >= 0);
        fedc_batches_destroy(b);
    }
    fedc_client_data_destroy(c);
}

/* Epochs are permutations; a partial last epoch starts the next permutation;
 * different epochs are shuffled differently. */
static void test_shuffle_epochs(void) {
    enum { N = 10, E = 3 };
    fedc_client_data *c = make_client(N);
    fedc_batches *b = NULL, *more = NULL;
    CHECK_OK(fedc_shuffle_repeat_batch(c, 4, E, -1, false, 2026, 3, 5, &b)); /* 30 rows -> 8 steps, 32 rows */
    CHECK_OK(fedc_shuffle_repeat_batch(c, 4, E + 1, -1, false, 2026, 3, 5, &more));
    if (b && more) {
        CHECK_EQ_INT(b->steps, 8);
        int64_t perm[E + 1][N];
        for (int e = 0; e < E; e++) check_epoch(b, e * N, N, perm[e]);
        check_epoch(more, E * N, N, perm[E]);
        /* the two filler rows are the start of epoch E's permutation */
        CHECK_EQ_INT(row_example(b, 30), perm[E][0]);
        CHECK_EQ_INT(row_example(b, 31), perm[E][1]);
        for (int e = 0; e < E; e++) CHECK(memcmp(perm[e], perm[e + 1], sizeof perm[e]) != 0);
        int identity = 1;
        for (int i = 0; i < N; i++) identity &= perm[0][i] == i;
        CHECK(!identity);
        /* the same stream, cut to fewer steps, is a prefix */
        fedc_batches *cut = NULL;
        CHECK_OK(fedc_shuffle_repeat_batch(c, 4, -1, 5, true, 2026, 3, 5, &cut));
        if (cut) CHECK(memcmp(cut->features[0].data, b->features[0].data, 5 * 4 * 2 * sizeof(float)) == 0);
        fedc_batches_destroy(cut);
    }
    fedc_batches_destroy(b);
    fedc_batches_destroy(more);
    fedc_client_data_destroy(c);
}

/* The first epoch's order for a key. */
static void first_epoch(const fedc_client_data *c, uint64_t seed, uint32_t round, uint32_t client, int64_t *perm) {
    fedc_batches *b = NULL;
    CHECK_OK(fedc_shuffle_repeat_batch(c, 1, 1, -1, false, seed, round, client, &b));
    if (b) check_epoch(b, 0, c->num_examples, perm);
    fedc_batches_destroy(b);
}

static void test_shuffle_determinism(void) {
    enum { N = 16 };
    fedc_client_data *c = make_client(N);
    int64_t base[N], again[N], other[N];
    first_epoch(c, 42, 7, 3, base);
    first_epoch(c, 42, 7, 3, again);
    CHECK(memcmp(base, again, sizeof base) == 0);
    first_epoch(c, 43, 7, 3, other);
    CHECK(memcmp(base, other, sizeof base) != 0);
    first_epoch(c, 42, 8, 3, other);
    CHECK(memcmp(base, other, sizeof base) != 0);
    first_epoch(c, 42, 7, 4, other);
    CHECK(memcmp(base, other, sizeof base) != 0);
    /* Pinned: Fisher-Yates over stream (42, 7, 3, epoch 0). A change here changes
     * every experiment's data order; make it on purpose or not at all. */
    static const int64_t pinned[N] = {7, 11, 4, 3, 8, 6, 15, 0, 13, 2, 1, 5, 12, 9, 10, 14};
    CHECK_MSG(memcmp(base, pinned, sizeof base) == 0, "the shuffle of (42, 7, 3) changed: starts %lld %lld %lld",
              (long long)base[0], (long long)base[1], (long long)base[2]);
    fedc_client_data_destroy(c);
}

/* Every example is equally likely at every position, over many clients' first
 * epochs. */
static void test_shuffle_uniform(void) {
    enum { N = 5, TRIALS = 5000 };
    fedc_client_data *c = make_client(N);
    int counts[N][N] = {{0}};
    for (uint32_t t = 0; t < TRIALS; t++) {
        fedc_batches *b = NULL;
        CHECK_OK(fedc_shuffle_repeat_batch(c, N, 1, -1, false, 9, 0, t, &b));
        if (!b) break;
        for (int64_t i = 0; i < N; i++) {
            int64_t e = row_example(b, i);
            if (e >= 0) counts[i][e]++;
        }
        fedc_batches_destroy(b);
    }
    for (int i = 0; i < N; i++) /* expect 1000, sd 28 */
        for (int e = 0; e < N; e++) CHECK_MSG(abs(counts[i][e] - TRIALS / N) < 150, "position %d, example %d: %d", i, e,
                                              counts[i][e]);
    fedc_client_data_destroy(c);
}

/* ------------------------------------------------------------- samplers -- */

/* out[0..k) is strictly increasing in [0, n). */
static int sorted_distinct(const int64_t *out, int64_t k, int64_t n) {
    for (int64_t i = 0; i < k; i++)
        if (out[i] < 0 || out[i] >= n || (i > 0 && out[i] <= out[i - 1])) return 0;
    return 1;
}

static void test_sample_clients(void) {
    int64_t a[10], b[10];
    for (uint32_t r = 0; r < 50; r++) {
        CHECK_OK(fedc_sample_clients(100, 10, 5, r, a));
        CHECK(sorted_distinct(a, 10, 100));
        CHECK_OK(fedc_sample_clients(100, 10, 5, r, b));
        CHECK(memcmp(a, b, sizeof a) == 0); /* a function of (seed, round) */
    }
    CHECK_OK(fedc_sample_clients(100, 10, 5, 0, a));
    CHECK_OK(fedc_sample_clients(100, 10, 5, 1, b));
    CHECK(memcmp(a, b, sizeof a) != 0);
    CHECK_OK(fedc_sample_clients(100, 10, 6, 0, b));
    CHECK(memcmp(a, b, sizeof a) != 0);
    CHECK_OK(fedc_sample_clients(10, 10, 5, 3, a)); /* everyone */
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(a[i], i);
    CHECK_OK(fedc_sample_clients(10, 0, 5, 3, NULL));
    CHECK_ERR(fedc_sample_clients(5, 6, 0, 0, a), FEDC_EINVAL, "6 distinct clients out of 5");
    CHECK_ERR(fedc_sample_clients(5, -1, 0, 0, a), FEDC_EINVAL, NULL);
    CHECK_ERR(fedc_sample_clients_epochs(5, 6, 0, 0, a), FEDC_EINVAL, "out of 5");
}

/* Floyd's algorithm (small cohorts): each client in k/n of rounds and each of the
 * C(6, 3) = 20 subsets equally often. */
static void test_sample_uniform_small(void) {
    enum { ROUNDS = 20000 };
    int per_client[6] = {0}, per_subset[64] = {0};
    for (uint32_t r = 0; r < ROUNDS; r++) {
        int64_t out[3];
        CHECK_OK(fedc_sample_clients(6, 3, 11, r, out));
        per_subset[(1 << out[0]) | (1 << out[1]) | (1 << out[2])]++;
        for (int i = 0; i < 3; i++) per_client[out[i]]++;
    }
    for (int c = 0; c < 6; c++) CHECK_MSG(abs(per_client[c] - ROUNDS / 2) < 400, "client %d: %d", c, per_client[c]);
    int subsets = 0;
    for (int m = 0; m < 64; m++) {
        if (!per_subset[m]) continue;
        subsets++; /* expect 1000, sd 31 */
        CHECK_MSG(abs(per_subset[m] - ROUNDS / 20) < 200, "subset %#x: %d", m, per_subset[m]);
    }
    CHECK_EQ_INT(subsets, 20);
}

/* Selection sampling (cohorts above 4096): the same properties, loosely. */
static void test_sample_uniform_large(void) {
    enum { N = 10000, K = 5000, ROUNDS = 100 };
    int64_t *out = malloc(K * sizeof *out), *again = malloc(K * sizeof *again);
    int *count = calloc(N, sizeof *count);
    for (uint32_t r = 0; r < ROUNDS; r++) {
        CHECK_OK(fedc_sample_clients(N, K, 3, r, out));
        CHECK(sorted_distinct(out, K, N));
        for (int i = 0; i < K; i++) count[out[i]]++;
    }
    CHECK_OK(fedc_sample_clients(N, K, 3, 0, out));
    CHECK_OK(fedc_sample_clients(N, K, 3, 0, again));
    CHECK(memcmp(out, again, K * sizeof *out) == 0);
    int64_t low_half = 0;
    for (int c = 0; c < N; c++) { /* expect 50, sd 5 */
        CHECK_MSG(count[c] > 20 && count[c] < 80, "client %d: %d", c, count[c]);
        if (c < N / 2) low_half += count[c];
    }
    CHECK(llabs(low_half - (int64_t)K * ROUNDS / 2) < 5000);
    free(out), free(again), free(count);
}

/* Rounds walk epochs: positions [e n, (e + 1) n) of the rounds' concatenation are
 * permutation e, and epochs differ. */
static void test_sample_epochs(void) {
    enum { N = 10, K = 3, ROUNDS = 10 };
    int64_t stream[ROUNDS * K], again[K];
    for (uint32_t r = 0; r < ROUNDS; r++) {
        CHECK_OK(fedc_sample_clients_epochs(N, K, 77, r, stream + r * K));
        CHECK_OK(fedc_sample_clients_epochs(N, K, 77, r, again));
        CHECK(memcmp(stream + r * K, again, sizeof again) == 0);
    }
    for (int e = 0; e < ROUNDS * K / N; e++) {
        int seen[N] = {0};
        for (int i = 0; i < N; i++) {
            int64_t c = stream[e * N + i];
            CHECK(c >= 0 && c < N && !seen[c]);
            if (c >= 0 && c < N) seen[c] = 1;
        }
        if (e > 0) CHECK(memcmp(stream + e * N, stream + (e - 1) * N, N * sizeof *stream) != 0);
    }
    int64_t other[K];
    CHECK_OK(fedc_sample_clients_epochs(N, K, 78, 0, other));
    CHECK(memcmp(other, stream, sizeof other) != 0);
    int64_t all[N]; /* per_round = num_clients: each round is an epoch */
    CHECK_OK(fedc_sample_clients_epochs(N, N, 77, 1, all));
    CHECK(memcmp(all, stream + N, sizeof all) == 0);
    CHECK_OK(fedc_sample_clients_epochs(N, 0, 77, 1, NULL));
}

/* ------------------------------------------------------------ synthetic -- */

/* Client i's feature `name` (the caller destroys *c). */
static const fedc_feature *load(fedc_dataset *ds, int64_t i, const char *name, fedc_client_data **c) {
    CHECK_OK(fedc_dataset_client(ds, i, c));
    return *c ? fedc_client_feature(*c, name) : NULL;
}

/* Checks column j of client data x (n rows of 60) has variance near (j + 1)^-1.2. */
static void check_variance(const float *x, int64_t n, int j) {
    double sum = 0, sq = 0;
    for (int64_t e = 0; e < n; e++) sum += x[e * 60 + j];
    for (int64_t e = 0; e < n; e++) sq += (x[e * 60 + j] - sum / (double)n) * (x[e * 60 + j] - sum / (double)n);
    double ratio = sq / (double)(n - 1) / pow(j + 1.0, -1.2);
    CHECK_MSG(fabs(ratio - 1) < 0.25, "column %d: variance %.3g times (j + 1)^-1.2", j, ratio);
}

/* Shapes, ids, FedProx's size law, determinism (also across num_clients), and
 * within a client x[:, j] varies by (j + 1)^-1.2 around the client's mean v_k. */
static void test_fedprox_shapes(void) {
    fedc_dataset *ds = NULL, *again = NULL, *other = NULL;
    CHECK_OK(fedc_synthetic_fedprox(1, 1, 100, 1234, &ds));
    CHECK_OK(fedc_synthetic_fedprox(1, 1, 5, 1234, &again));
    CHECK_OK(fedc_synthetic_fedprox(1, 1, 5, 1235, &other));
    if (!ds || !again || !other) goto done;
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), 100);
    CHECK(fedc_dataset_format(ds) == FEDC_FORMAT_MEMORY);
    CHECK(strcmp(fedc_dataset_client_id(ds, 17), "17") == 0);
    int64_t total = 0, above = 0, big = 0;
    for (int64_t i = 0; i < 100; i++) {
        int64_t n = fedc_dataset_client_examples(ds, i);
        CHECK(n >= 50);
        total += n;
        above += n - 50 > 55; /* int(lognormal(4, 2)) has median int(e^4) = 54 */
        if (n > fedc_dataset_client_examples(ds, big)) big = i;
    }
    CHECK_EQ_INT(fedc_dataset_total_examples(ds), total);
    CHECK_MSG(above > 30 && above < 70, "%lld of 100 clients above the median size", (long long)above);
    fedc_client_data *c = NULL, *d = NULL, *e = NULL;
    const fedc_feature *x = load(ds, 3, "x", &c), *x2 = load(again, 3, "x", &d), *x3 = load(other, 3, "x", &e);
    if (x && x2 && x3) {
        int64_t n = c->num_examples;
        fedc_type want = TY(FEDC_F32, n, 60), wy = TY(FEDC_I32, n);
        const fedc_feature *y = fedc_client_feature(c, "y");
        CHECK(fedc_type_equal(&x->type, &want) && y && fedc_type_equal(&y->type, &wy));
        CHECK(memcmp(x->data, x2->data, (size_t)n * 60 * sizeof(float)) == 0); /* same seed, same data */
        CHECK(memcmp(x->data, x3->data, 60 * sizeof(float)) != 0);             /* another seed, other data */
    }
    fedc_client_data_destroy(c), fedc_client_data_destroy(d), fedc_client_data_destroy(e);
    x = load(ds, big, "x", &c);
    CHECK(c && c->num_examples > 1000);
    if (x) check_variance(x->data, c->num_examples, 0), check_variance(x->data, c->num_examples, 59);
    fedc_client_data_destroy(c);
done:
    fedc_dataset_destroy(ds), fedc_dataset_destroy(again), fedc_dataset_destroy(other);
}

/* Client i's label histogram, as shares. */
static void label_shares(fedc_dataset *ds, int64_t i, double share[10]) {
    fedc_client_data *c = NULL;
    const fedc_feature *y = load(ds, i, "y", &c);
    for (int k = 0; k < 10; k++) share[k] = 0;
    for (int64_t e = 0; y && e < c->num_examples; e++) {
        int32_t label = ((const int32_t *)y->data)[e];
        CHECK(label >= 0 && label < 10);
        if (label >= 0 && label < 10) share[label] += 1.0 / (double)c->num_examples;
    }
    fedc_client_data_destroy(c);
}

/* Non-IID: each client's labels are far (total variation) from the pooled ones,
 * at alpha = beta = 0 too, since W_k, b_k and v_k still differ per client
 * (FedProx's Synthetic(0, 0) is not IID; its synthetic_iid is another generator).
 * beta spreads the clients' means v_k, making the labels more lopsided (the share
 * of each client's majority class grows). alpha moves every logit by the same
 * u_k * sum(x) + u_k, which argmax ignores: it changes the models, not the data. */
static void test_fedprox_heterogeneity(void) {
    enum { N = 150 };
    static double shares[N][10];
    double majority[2] = {0, 0};
    for (int setting = 0; setting < 2; setting++) {
        fedc_dataset *ds = NULL;
        CHECK_OK(fedc_synthetic_fedprox(setting, setting, N, 5, &ds));
        if (!ds) return;
        double pooled[10] = {0}, tv = 0;
        for (int64_t i = 0; i < N; i++) {
            label_shares(ds, i, shares[i]);
            double top = 0;
            for (int k = 0; k < 10; k++) pooled[k] += shares[i][k] / N, top = fmax(top, shares[i][k]);
            majority[setting] += top / N;
        }
        for (int64_t i = 0; i < N; i++)
            for (int k = 0; k < 10; k++) tv += fabs(shares[i][k] - pooled[k]) / 2 / N;
        CHECK_MSG(tv > 0.6, "alpha = beta = %d: mean TV distance to the pooled labels %.3f", setting, tv);
        fedc_dataset_destroy(ds);
    }
    CHECK_MSG(majority[1] > majority[0] + 0.015, "majority shares %.3f (0, 0), %.3f (1, 1)", majority[0],
              majority[1]);
    fedc_dataset *a = NULL, *b = NULL; /* alpha alone: the same examples */
    CHECK_OK(fedc_synthetic_fedprox(0, 0.5, 3, 8, &a));
    CHECK_OK(fedc_synthetic_fedprox(1, 0.5, 3, 8, &b));
    fedc_client_data *ca = NULL, *cb = NULL;
    const fedc_feature *ya = a ? load(a, 2, "y", &ca) : NULL, *yb = b ? load(b, 2, "y", &cb) : NULL;
    if (ya && yb) {
        CHECK(memcmp(fedc_client_feature(ca, "x")->data, fedc_client_feature(cb, "x")->data,
                     (size_t)ca->num_examples * 60 * sizeof(float)) == 0);
        CHECK(memcmp(ya->data, yb->data, (size_t)ca->num_examples * sizeof(int32_t)) == 0);
    }
    fedc_client_data_destroy(ca), fedc_client_data_destroy(cb);
    fedc_dataset_destroy(a), fedc_dataset_destroy(b);
}

static void test_zipf(void) {
    fedc_dataset *ds = NULL, *again = NULL;
    CHECK_OK(fedc_synthetic_zipf(4, 100, 50, 1000, 1.0, 8, &ds));
    CHECK_OK(fedc_synthetic_zipf(4, 100, 50, 1000, 1.0, 8, &again));
    if (!ds || !again) goto done;
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), 4);
    CHECK_EQ_INT(fedc_dataset_total_examples(ds), 400);
    int64_t count[1000] = {0};
    for (int64_t i = 0; i < 4; i++) {
        fedc_client_data *c = NULL, *d = NULL;
        const fedc_feature *t = load(ds, i, "tokens", &c), *t2 = load(again, i, "tokens", &d);
        fedc_type want = TY(FEDC_I32, 100, 50);
        CHECK(t && fedc_type_equal(&t->type, &want));
        for (int64_t k = 0; t && k < 5000; k++) {
            int32_t id = ((const int32_t *)t->data)[k];
            CHECK(id >= 0 && id < 1000);
            if (id >= 0 && id < 1000) count[id]++;
        }
        if (t && t2) CHECK(memcmp(t->data, t2->data, 5000 * sizeof(int32_t)) == 0);
        fedc_client_data_destroy(c), fedc_client_data_destroy(d);
    }
    /* P(id) = (id + 1)^-1 / H_1000, H_1000 = 7.485: 2672, 1336 and 243 of 20000 */
    CHECK_NEAR(count[0], 20000 / 7.4855, 0.08);
    CHECK_NEAR((double)count[0] / (double)count[1], 2.0, 0.15);
    CHECK_NEAR((double)count[0] / (double)count[10], 11.0, 0.25);
    CHECK(count[0] > count[1] && count[1] > count[10]);
done:
    fedc_dataset_destroy(ds), fedc_dataset_destroy(again);
    /* s = 0 is uniform */
    CHECK_OK(fedc_synthetic_zipf(1, 1000, 4, 4, 0.0, 1, &ds));
    fedc_client_data *c = NULL;
    const fedc_feature *t = ds ? load(ds, 0, "tokens", &c) : NULL;
    int uniform[4] = {0};
    for (int k = 0; t && k < 4000; k++) uniform[((const int32_t *)t->data)[k]]++;
    for (int k = 0; t && k < 4; k++) CHECK_MSG(abs(uniform[k] - 1000) < 150, "id %d: %d", k, uniform[k]);
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(ds);
}

/* Heavy-tailed sizes: each client min + floor(exp(mu + sigma z)), the same for a
 * seed and an index whatever the cohort, tokens shaped by each size, bad sizes
 * refused. Over 4,000 clients the sample median of exp(mu + sigma z) is e^mu and
 * its mean e^(mu + sigma^2 / 2), within the sampling error. */
static void test_zipf_lognormal(void) {
    fedc_dataset *ds = NULL, *few = NULL;
    const double mu = 4.57, sigma = 1.5;
    CHECK_OK(fedc_synthetic_zipf_lognormal(4000, 100, mu, sigma, 1, 50, 1.0, 3, &ds));
    CHECK_OK(fedc_synthetic_zipf_lognormal(3, 100, mu, sigma, 4, 50, 1.0, 3, &few));
    if (!ds || !few) goto done;
    static double extra[4000];
    double sum = 0;
    for (int64_t k = 0; k < 4000; k++) {
        int64_t n = fedc_dataset_client_examples(ds, k);
        CHECK(n >= 100);
        extra[k] = (double)(n - 100);
        sum += extra[k];
    }
    for (int64_t k = 0; k < 3; k++) {
        CHECK_EQ_INT(fedc_dataset_client_examples(few, k), fedc_dataset_client_examples(ds, k));
        fedc_client_data *c = NULL;
        const fedc_feature *t = load(few, k, "tokens", &c);
        fedc_type want = TY(FEDC_I32, fedc_dataset_client_examples(ds, k), 4);
        CHECK(t && fedc_type_equal(&t->type, &want));
        fedc_client_data_destroy(c);
    }
    int64_t below = 0;
    for (int k = 0; k < 4000; k++) below += extra[k] < exp(mu);
    CHECK_NEAR((double)below / 4000, 0.5, 0.03);                 /* 3.8 standard errors */
    CHECK_NEAR(sum / 4000 / exp(mu + sigma * sigma / 2), 1.0, 0.25); /* a heavy tail: a loose mean */
done:
    fedc_dataset_destroy(ds), fedc_dataset_destroy(few);
    CHECK_ERR(fedc_synthetic_zipf_lognormal(3, 100, mu, -1, 4, 50, 1.0, 3, &ds), FEDC_EINVAL, "sigma >= 0");
    CHECK(ds == NULL);
    CHECK_ERR(fedc_synthetic_zipf_lognormal(3, 100, NAN, 1, 4, 50, 1.0, 3, &ds), FEDC_EINVAL, "finite mu");
    CHECK_ERR(fedc_synthetic_zipf_lognormal(3, 2000000, mu, 1, 4, 50, 1.0, 3, &ds), FEDC_EINVAL, "above the");
    CHECK_ERR(fedc_synthetic_zipf_lognormal(-1, 100, mu, 1, 4, 50, 1.0, 3, &ds), FEDC_EINVAL, "clients");
}

/* Pinned outputs for one seed: a change here changes every experiment on this
 * data, so make it on purpose (x compared loosely: it passes through libm). */
static void test_synthetic_pinned(void) {
    static const int64_t sizes[] = {90, 63, 113, 242, 84};
    static const int32_t labels[] = {4, 4, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4};
    static const int32_t tokens[] = {1, 0, 17, 34, 2, 42, 42, 0, 0, 3, 4, 9};
    fedc_dataset *ds = NULL, *z = NULL;
    CHECK_OK(fedc_synthetic_fedprox(1, 1, 5, 2020, &ds));
    CHECK_OK(fedc_synthetic_zipf(1, 1, 12, 100, 1.2, 2020, &z));
    for (int64_t i = 0; ds && i < 5; i++) CHECK_EQ_INT(fedc_dataset_client_examples(ds, i), sizes[i]);
    fedc_client_data *c = NULL, *d = NULL;
    const fedc_feature *y = ds ? load(ds, 0, "y", &c) : NULL, *t = z ? load(z, 0, "tokens", &d) : NULL;
    if (y) {
        CHECK(memcmp(y->data, labels, sizeof labels) == 0);
        const float *x = fedc_client_feature(c, "x")->data;
        CHECK_NEAR(x[0], -1.35283327, 1e-6);
        CHECK_NEAR(x[61], -0.645330608, 1e-6);
    }
    if (t) CHECK(memcmp(t->data, tokens, sizeof tokens) == 0);
    fedc_client_data_destroy(c), fedc_client_data_destroy(d);
    fedc_dataset_destroy(ds), fedc_dataset_destroy(z);
}

static void test_synthetic_errors(void) {
    fedc_dataset *ds = (fedc_dataset *)&ds;
    CHECK_ERR(fedc_synthetic_fedprox(-1, 0, 3, 0, &ds), FEDC_EINVAL, "alpha = -1");
    CHECK(ds == NULL);
    CHECK_ERR(fedc_synthetic_fedprox(0, NAN, 3, 0, &ds), FEDC_EINVAL, "beta");
    CHECK_ERR(fedc_synthetic_fedprox(0, 0, -3, 0, &ds), FEDC_EINVAL, "-3 clients");
    CHECK_ERR(fedc_synthetic_zipf(2, 3, 0, 10, 1, 0, &ds), FEDC_EINVAL, "length 0");
    CHECK_ERR(fedc_synthetic_zipf(2, 3, 4, 0, 1, 0, &ds), FEDC_EINVAL, "over 0 ids");
    CHECK_ERR(fedc_synthetic_zipf(2, 3, 4, 10, -1, 0, &ds), FEDC_EINVAL, "s = -1");
    CHECK_ERR(fedc_synthetic_zipf(2, INT64_MAX / 2, 4, 10, 1, 0, &ds), FEDC_ERANGE, "overflow");
    CHECK_OK(fedc_synthetic_zipf(0, 3, 4, 10, 1, 0, &ds)); /* no clients is a dataset too */
    if (ds) CHECK_EQ_INT(fedc_dataset_num_clients(ds), 0);
    fedc_dataset_destroy(ds);
}

/* ------------------------------------------------------ allocation failure -- */

/* Runs op with its k-th allocation failing, for k = 1, 2, ... until it succeeds:
 * each failure must be FEDC_ENOMEM (LeakSanitizer checks nothing leaks). */
static void fail_each(const char *what, fedc_status (*op)(const fedc_client_data *c), const fedc_client_data *c) {
    uint64_t k;
    for (k = 1; k < 10000; k++) {
        fedc__alloc_fail_after(k);
        fedc_status st = op(c);
        fedc__alloc_fail_after(0);
        if (!st) break;
        CHECK_MSG(st == FEDC_ENOMEM, "%s, allocation %llu: %s (%s)", what, (unsigned long long)k, fedc_status_str(st),
                  fedc_errmsg());
        if (st != FEDC_ENOMEM) break;
    }
    CHECK_MSG(k > 1 && k < 10000, "%s: %llu allocation points", what, (unsigned long long)k);
}

/* Each batching function in turn (the k-th failure lands in one of them). */
static fedc_status run_batching(const fedc_client_data *c) {
    fedc_batches *b[3] = {NULL, NULL, NULL};
    fedc_status st = fedc_batch(c, 3, false, &b[0]);
    if (!st) st = fedc_padded_batch(c, 4, 2, &b[1]);
    if (!st) st = fedc_shuffle_repeat_batch(c, 3, 2, -1, false, 1, 2, 3, &b[2]);
    for (int i = 0; i < 3; i++) fedc_batches_destroy(b[i]);
    return st;
}

/* Both generators, a load, and the epoch sampler (the one that allocates). */
static fedc_status run_generators(const fedc_client_data *c) {
    (void)c;
    fedc_dataset *ds = NULL, *tokens = NULL;
    fedc_client_data *one = NULL;
    int64_t out[4];
    fedc_status st = fedc_synthetic_fedprox(0.5, 0.5, 4, 1, &ds);
    CHECK(st ? ds == NULL : ds != NULL);
    if (!st) st = fedc_dataset_client(ds, 3, &one);
    if (!st) st = fedc_synthetic_zipf(3, 5, 4, 50, 1.1, 1, &tokens);
    if (!st) st = fedc_sample_clients_epochs(10, 4, 1, 2, out);
    fedc_client_data_destroy(one);
    fedc_dataset_destroy(ds), fedc_dataset_destroy(tokens);
    return st;
}

static void test_alloc_failure(void) {
    fedc_client_data *c = make_client(7);
    fail_each("batching", run_batching, c);
    fail_each("generators", run_generators, c);
    fedc_client_data_destroy(c);
}

/* A per-batch hook sees each step's rows as [batch, ...] views, in order, and its
 * changes land in the batches. */
static fedc_status add_step(void *ctx, int64_t step, fedc_feature *f, int nf, float *mask, int64_t batch) {
    int *calls = ctx;
    CHECK_EQ_INT(step, *calls);
    (*calls)++;
    for (int i = 0; i < nf; i++) {
        if (strcmp(f[i].name, "x")) continue;
        CHECK_EQ_INT(f[i].type.rank, 2);
        CHECK_EQ_INT(f[i].type.dims[0], batch);
        for (int64_t r = 0; r < batch; r++)
            if (mask[r]) ((float *)f[i].data)[2 * r] += 1000.0f * (float)step;
    }
    return step == 99 ? FEDC_EINVAL : FEDC_OK;
}

static fedc_status fail_at_one(void *ctx, int64_t step, fedc_feature *f, int nf, float *mask, int64_t batch) {
    (void)ctx, (void)f, (void)nf, (void)mask, (void)batch;
    return step == 1 ? fedc_error(FEDC_EINVAL, "hook: step 1 refused") : FEDC_OK;
}

static void test_batches_map(void) {
    fedc_client_data *c = make_client(7);
    fedc_batches *b = NULL;
    CHECK_OK(fedc_batch(c, 3, false, &b));
    int calls = 0;
    CHECK_OK(fedc_batches_map(b, add_step, &calls));
    CHECK_EQ_INT(calls, 3);
    const float *x = fedc_batches_feature(b, "x")->data;
    for (int64_t e = 0; e < 7; e++) CHECK_NEAR(x[2 * e], (double)e + 1000.0 * (double)(e / 3), 0);
    CHECK_NEAR(x[2 * 7], 0, 0); /* padding untouched */
    CHECK_ERR(fedc_batches_map(b, fail_at_one, NULL), FEDC_EINVAL, "step 1 refused");
    fedc_batches_destroy(b);
    fedc_client_data_destroy(c);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"batch_remainder", test_batch_remainder},
        {"batches_map", test_batches_map},
        {"padded_batch", test_padded_batch},
        {"batch_errors", test_batch_errors},
        {"batch_shapes", test_batch_shapes},
        {"shuffle_steps", test_shuffle_steps},
        {"shuffle_epochs", test_shuffle_epochs},
        {"shuffle_determinism", test_shuffle_determinism},
        {"shuffle_uniform", test_shuffle_uniform},
        {"sample_clients", test_sample_clients},
        {"sample_uniform_small", test_sample_uniform_small},
        {"sample_uniform_large", test_sample_uniform_large},
        {"sample_epochs", test_sample_epochs},
        {"fedprox_shapes", test_fedprox_shapes},
        {"fedprox_heterogeneity", test_fedprox_heterogeneity},
        {"zipf", test_zipf},
        {"zipf lognormal", test_zipf_lognormal},
        {"synthetic_pinned", test_synthetic_pinned},
        {"synthetic_errors", test_synthetic_errors},
        {"alloc_failure", test_alloc_failure},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
