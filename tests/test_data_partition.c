/*
 * Partitioners (iid, Dirichlet label skew, label shards) and
 * fedc_dataset_partition: every example lands on exactly one client, the same
 * seed gives the same partition and another seed another, iid sizes differ by at
 * most one, shards give each client at most k labels when shards do not straddle
 * labels, Dirichlet with a large alpha gives every client about the dataset's
 * label mix and with a small one clients dominated by one label (loose
 * statistical bounds; the draws are fixed by the seed, so the test is
 * deterministic). Partitioning Fashion-MNIST into 100 clients keeps every
 * example, label and pixel. Allocation failure is injected into the partition
 * of a small dataset and into the partitioners that allocate.
 */
#include "core/internal.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/dataset.h"

#define FMNIST_TRAIN "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"

/* Labels 0..classes-1, `per` of each, in a scrambled (but fixed) order. */
static int32_t *make_labels(int32_t classes, int64_t per) {
    int64_t n = classes * per;
    int32_t *labels = malloc((size_t)n * sizeof *labels);
    for (int64_t i = 0; i < n; i++) labels[i] = (int32_t)((i * 7919) % n / per);
    return labels;
}

/* counts[c] = examples of client c; false if some assignment is out of range. */
static bool client_sizes(const int64_t *a, int64_t n, int64_t clients, int64_t *counts) {
    memset(counts, 0, (size_t)clients * sizeof *counts);
    for (int64_t i = 0; i < n; i++) {
        if (a[i] < 0 || a[i] >= clients) return false;
        counts[a[i]]++;
    }
    return true;
}

/* mix[c * classes + k] = examples of label k on client c. */
static int64_t *label_mix(const int64_t *a, const int32_t *labels, int64_t n, int64_t clients, int32_t classes) {
    int64_t *mix = calloc((size_t)(clients * classes), sizeof *mix);
    for (int64_t i = 0; i < n; i++) mix[a[i] * classes + labels[i]]++;
    return mix;
}

static bool same(const int64_t *a, const int64_t *b, int64_t n) { return memcmp(a, b, (size_t)n * sizeof *a) == 0; }

/* ----------------------------------------------------------------- iid -- */

static void test_iid(void) {
    enum { N = 1003, C = 10 };
    int64_t a[N], b[N], d[N], counts[C];
    CHECK_OK(fedc_partition_iid(N, C, 42, a));
    CHECK(client_sizes(a, N, C, counts));
    for (int c = 0; c < C; c++) CHECK(counts[c] == N / C || counts[c] == N / C + 1);
    int64_t sorted_runs = 0;
    for (int i = 1; i < N; i++) sorted_runs += a[i] < a[i - 1];
    CHECK(sorted_runs > 100); /* shuffled, not dealt in blocks */
    CHECK_OK(fedc_partition_iid(N, C, 42, b));
    CHECK(same(a, b, N));
    CHECK_OK(fedc_partition_iid(N, C, 43, d));
    CHECK(!same(a, d, N));
    CHECK_OK(fedc_partition_iid(5, 5, 1, a));
    CHECK(client_sizes(a, 5, 5, counts) && counts[0] == 1 && counts[4] == 1);
    CHECK_ERR(fedc_partition_iid(N, 0, 1, a), FEDC_EINVAL, "0 clients");
    CHECK_ERR(fedc_partition_iid(4, 5, 1, a), FEDC_EINVAL, "4 examples cannot give each of 5 clients one");
}

/* -------------------------------------------------------------- shards -- */

static void test_shards(void) {
    enum { K = 10, PER = 100, N = K * PER, C = 20 };
    int32_t *labels = make_labels(K, PER);
    int64_t a[N], b[N], counts[C];
    /* 40 shards of 25: none straddles two labels, so each client has <= 2. */
    CHECK_OK(fedc_partition_shards(labels, N, C, 2, 7, a));
    CHECK(client_sizes(a, N, C, counts));
    int64_t *mix = label_mix(a, labels, N, C, K);
    for (int c = 0; c < C; c++) {
        int distinct = 0;
        for (int k = 0; k < K; k++) {
            distinct += mix[c * K + k] > 0;
            CHECK(mix[c * K + k] % 25 == 0); /* whole shards */
        }
        CHECK_EQ_INT(counts[c], 50);
        CHECK(distinct >= 1 && distinct <= 2);
    }
    free(mix);
    CHECK_OK(fedc_partition_shards(labels, N, C, 2, 7, b));
    CHECK(same(a, b, N));
    CHECK_OK(fedc_partition_shards(labels, N, C, 2, 8, b));
    CHECK(!same(a, b, N));
    /* Uneven: 1000 examples in 21 shards of 47 or 48. */
    CHECK_OK(fedc_partition_shards(labels, N, 7, 3, 7, a));
    CHECK(client_sizes(a, N, 7, counts));
    for (int c = 0; c < 7; c++) CHECK(counts[c] >= 3 * 47 && counts[c] <= 3 * 48);
    CHECK_ERR(fedc_partition_shards(labels, N, 501, 2, 7, a), FEDC_EINVAL, "501 clients x 2 shards");
    CHECK_ERR(fedc_partition_shards(labels, N, 10, 0, 7, a), FEDC_EINVAL, "0 shards per client");
    free(labels);
}

/* ----------------------------------------------------------- dirichlet -- */

/* The share of client c's examples that its most common label has. */
static double top_share(const int64_t *mix, int64_t c, int32_t classes) {
    int64_t top = 0, total = 0;
    for (int k = 0; k < classes; k++) {
        total += mix[c * classes + k];
        if (mix[c * classes + k] > top) top = mix[c * classes + k];
    }
    return total ? (double)top / (double)total : 0;
}

static void test_dirichlet_uniform(void) {
    enum { K = 10, PER = 6000, N = K * PER, C = 100 };
    int32_t *labels = make_labels(K, PER);
    int64_t *a = malloc(N * sizeof *a), counts[C];
    CHECK_OK(fedc_partition_dirichlet(labels, N, K, C, 1e3, 1, a));
    CHECK(client_sizes(a, N, C, counts));
    int64_t *mix = label_mix(a, labels, N, C, K);
    double lo = 1, hi = 0;
    for (int c = 0; c < C; c++) {
        CHECK_EQ_INT(counts[c], N / C); /* balanced, as Hsu et al. */
        for (int k = 0; k < K; k++) {
            double share = (double)mix[c * K + k] / (double)counts[c];
            lo = share < lo ? share : lo;
            hi = share > hi ? share : hi;
        }
    }
    fprintf(stderr, "    alpha 1e3: label shares in [%.3f, %.3f]\n", lo, hi);
    CHECK(lo > 0.03 && hi < 0.2);
    free(mix), free(a), free(labels);
}

static void test_dirichlet_skewed(void) {
    enum { K = 10, PER = 6000, N = K * PER, C = 100 };
    int32_t *labels = make_labels(K, PER);
    int64_t *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), counts[C];
    CHECK_OK(fedc_partition_dirichlet(labels, N, K, C, 0.01, 1, a));
    CHECK(client_sizes(a, N, C, counts));
    int64_t *mix = label_mix(a, labels, N, C, K);
    double mean = 0;
    int dominated = 0;
    for (int c = 0; c < C; c++) {
        CHECK_EQ_INT(counts[c], N / C);
        mean += top_share(mix, c, K) / C;
        dominated += top_share(mix, c, K) > 0.5;
    }
    fprintf(stderr, "    alpha 0.01: mean top-label share %.3f, %d of %d clients above one half\n", mean,
            dominated, C);
    CHECK(mean > 0.7);
    CHECK(dominated >= 70);
    CHECK_OK(fedc_partition_dirichlet(labels, N, K, C, 0.01, 1, b));
    CHECK(same(a, b, N));
    CHECK_OK(fedc_partition_dirichlet(labels, N, K, C, 0.01, 2, b));
    CHECK(!same(a, b, N));
    free(mix), free(a), free(b), free(labels);
}

/* q ~ Dir(alpha * p): with a large alpha every client has the dataset's mix,
 * here 80% label 0, not a uniform one. */
static void test_dirichlet_prior(void) {
    enum { N = 10000, C = 20 };
    int32_t labels[N];
    int64_t a[N];
    for (int i = 0; i < N; i++) labels[i] = i % 5 == 4;
    CHECK_OK(fedc_partition_dirichlet(labels, N, 3, C, 1e4, 3, a)); /* class 2 has no examples */
    int64_t *mix = label_mix(a, labels, N, C, 3);
    for (int c = 0; c < C; c++) {
        double zero = (double)mix[c * 3] / (N / C);
        CHECK_MSG(zero > 0.7 && zero < 0.9, "client %d: label 0 share %.3f", c, zero);
    }
    free(mix);
}

static void test_dirichlet_errors(void) {
    int32_t labels[8] = {0, 1, 2, 0, 1, 5, 0, 1};
    int64_t a[8];
    CHECK_ERR(fedc_partition_dirichlet(labels, 8, 3, 2, 0.0, 1, a), FEDC_EINVAL, "alpha = 0");
    CHECK_ERR(fedc_partition_dirichlet(labels, 8, 3, 2, -1.0, 1, a), FEDC_EINVAL, "positive");
    CHECK_ERR(fedc_partition_dirichlet(labels, 8, 3, 2, NAN, 1, a), FEDC_EINVAL, "positive");
    CHECK_ERR(fedc_partition_dirichlet(labels, 8, 3, 2, INFINITY, 1, a), FEDC_EINVAL, "finite");
    CHECK_ERR(fedc_partition_dirichlet(labels, 8, 3, 2, 1.0, 1, a), FEDC_ERANGE, "example 5 has label 5");
    CHECK_ERR(fedc_partition_dirichlet(labels, 8, 0, 2, 1.0, 1, a), FEDC_EINVAL, "0 classes");
    CHECK_ERR(fedc_partition_dirichlet(labels, 8, 6, 9, 1.0, 1, a), FEDC_EINVAL, "9 clients");
    CHECK_OK(fedc_partition_dirichlet(labels, 8, 6, 8, 1.0, 1, a)); /* one example each */
}

/* --------------------------------------------------- dataset partition -- */

/* A central dataset of 6 examples: x f32[6, 2] = {10i, 10i+1}, y i32[6] = i,
 * text = "s<i>" repeated i times. */
static fedc_dataset *small_central(void) {
    float x[12];
    int32_t y[6];
    char buf[6][16];
    const char *text[6];
    for (int i = 0; i < 6; i++) {
        x[2 * i] = 10.0f * i, x[2 * i + 1] = 10.0f * i + 1, y[i] = i;
        buf[i][0] = '\0';
        for (int r = 0; r < i; r++) snprintf(buf[i] + 2 * r, 3, "s%d", i);
        text[i] = buf[i];
    }
    fedc_client_data **clients = fedc_malloc(sizeof *clients);
    fedc_dataset *ds = NULL;
    if (!clients) return NULL;
    fedc_status st = fedc_client_data_create(&clients[0], "all", 6);
    if (!st) st = fedc_client_add_array(clients[0], "x", fedc_type_make(FEDC_F32, 2, (int64_t[]){6, 2}), x);
    if (!st) st = fedc_client_add_array(clients[0], "y", fedc_type_make(FEDC_I32, 1, (int64_t[]){6}), y);
    if (!st) st = fedc_client_add_strings(clients[0], "text", text, NULL);
    if (st) {
        fedc_client_data_destroy(clients[0]);
        fedc_free(clients);
        return NULL;
    }
    return fedc_dataset_from_clients(clients, 1, &ds) ? NULL : ds;
}

static const int64_t small_assignment[6] = {2, 0, 2, 1, 0, 2};

static void check_small_client(fedc_dataset *ds, int64_t j, int64_t n, const int *examples) {
    fedc_client_data *c;
    char id[8];
    snprintf(id, sizeof id, "%d", (int)j);
    CHECK(strcmp(fedc_dataset_client_id(ds, j), id) == 0);
    CHECK_OK(fedc_dataset_client(ds, j, &c));
    if (!c) return;
    CHECK_EQ_INT(c->num_examples, n);
    const fedc_feature *x = fedc_client_feature(c, "x"), *y = fedc_client_feature(c, "y");
    const fedc_feature *t = fedc_client_feature(c, "text");
    CHECK(x && x->type.rank == 2 && x->type.dims[0] == n && x->type.dims[1] == 2 && y && t);
    CHECK(t && t->kind == FEDC_FEATURE_STRINGS && t->offsets[0] == 0);
    for (int64_t e = 0; x && y && t && e < n; e++) {
        int i = examples[e];
        CHECK(((const float *)x->data)[2 * e] == 10.0f * i && ((const float *)x->data)[2 * e + 1] == 10.0f * i + 1);
        CHECK_EQ_INT(((const int32_t *)y->data)[e], i);
        CHECK_EQ_INT(t->offsets[e + 1] - t->offsets[e], 2 * i);
        if (i) CHECK(((const char *)t->data)[t->offsets[e] + 1] == '0' + i);
    }
    fedc_client_data_destroy(c);
}

/* Dirichlet groups of clients (fedc train --groups dirichlet:N:ALPHA): every client
 * in a group, the same groups from the same seed, and the sizes' known answers:
 * a huge alpha gives equal shares (12 clients in 4 groups of 3), a tiny one puts
 * every client in one group, and with 2 groups and alpha 1 group 0's share is
 * Beta(1, 1), uniform on [0, 1]: its mean 1/2 and a quarter of draws below 1/4. */
static void group_sizes_of(const int32_t *group_of, int64_t n, int groups, int64_t *size) {
    for (int g = 0; g < groups; g++) size[g] = 0;
    for (int64_t i = 0; i < n; i++) {
        CHECK(group_of[i] >= 0 && group_of[i] < groups);
        if (group_of[i] >= 0 && group_of[i] < groups) size[group_of[i]]++;
    }
}

static void test_groups_dirichlet(void) {
    int32_t a[100], b[100];
    int64_t size[4];
    CHECK_OK(fedc_partition_groups_dirichlet(100, 4, 0.5, 7, a));
    CHECK_OK(fedc_partition_groups_dirichlet(100, 4, 0.5, 7, b));
    CHECK(!memcmp(a, b, sizeof a));
    CHECK_OK(fedc_partition_groups_dirichlet(100, 4, 0.5, 8, b));
    CHECK(memcmp(a, b, sizeof a) != 0);
    group_sizes_of(a, 100, 4, size);
    CHECK_EQ_INT(size[0] + size[1] + size[2] + size[3], 100);

    CHECK_OK(fedc_partition_groups_dirichlet(12, 4, 1e6, 3, a));
    group_sizes_of(a, 12, 4, size);
    for (int g = 0; g < 4; g++) CHECK_MSG(size[g] == 3, "alpha 1e6: group %d has %lld of 12 clients", g, (long long)size[g]);
    CHECK_OK(fedc_partition_groups_dirichlet(12, 4, 1e-3, 3, a));
    group_sizes_of(a, 12, 4, size);
    int64_t largest = 0;
    for (int g = 0; g < 4; g++) largest = size[g] > largest ? size[g] : largest;
    CHECK_EQ_INT(largest, 12);

    double mean = 0;
    int below = 0, draws = 400;
    for (int seed = 0; seed < draws; seed++) {
        CHECK_OK(fedc_partition_groups_dirichlet(100, 2, 1, (uint64_t)seed, a));
        group_sizes_of(a, 100, 2, size);
        mean += (double)size[0] / 100 / draws;
        below += size[0] < 25;
    }
    /* standard errors: sqrt(1/12/400) = 0.014 for the mean, sqrt(3/16/400) = 0.022 for the fraction */
    CHECK_NEAR(mean, 0.5, 0.06);
    CHECK_NEAR((double)below / draws, 0.25, 0.09);

    CHECK_ERR(fedc_partition_groups_dirichlet(10, 2, 0, 1, a), FEDC_EINVAL, "alpha = 0");
    CHECK_ERR(fedc_partition_groups_dirichlet(10, 0, 1, 1, a), FEDC_EINVAL, "10 clients in 0 groups");
}

static void test_dataset_partition(void) {
    fedc_dataset *central = small_central(), *ds;
    CHECK(central != NULL);
    if (!central) return;
    CHECK_OK(fedc_dataset_partition(central, small_assignment, 4, &ds));
    if (ds) {
        CHECK_EQ_INT(fedc_dataset_num_clients(ds), 4);
        CHECK_EQ_INT(fedc_dataset_total_examples(ds), 6);
        check_small_client(ds, 0, 2, (const int[]){1, 4});
        check_small_client(ds, 1, 1, (const int[]){3});
        check_small_client(ds, 2, 3, (const int[]){0, 2, 5});
        check_small_client(ds, 3, 0, NULL); /* nobody assigned: an empty client */
        fedc_dataset_destroy(ds);
    }
    CHECK_ERR(fedc_dataset_partition(central, small_assignment, 2, &ds), FEDC_ERANGE,
              "example 0 is assigned to client 2, outside [0, 2)");
    CHECK_ERR(fedc_dataset_partition(central, small_assignment, 0, &ds), FEDC_EINVAL, "0 clients");
    CHECK(ds == NULL);
    fedc_dataset_destroy(central);
}

/* Partitions Fashion-MNIST's 60,000 training images three ways into 100 clients
 * and checks that every image, label and pixel is still there. */
static void check_fmnist_partition(fedc_dataset *central, const int64_t *assignment) {
    fedc_dataset *ds;
    CHECK_OK(fedc_dataset_partition(central, assignment, 100, &ds));
    if (!ds) return;
    CHECK_EQ_INT(fedc_dataset_num_clients(ds), 100);
    CHECK_EQ_INT(fedc_dataset_total_examples(ds), 60000);
    int64_t labels[10] = {0}, pixels = 0;
    for (int64_t j = 0; j < 100; j++) {
        fedc_client_data *c;
        CHECK_OK(fedc_dataset_client(ds, j, &c));
        if (!c) continue;
        const fedc_feature *x = fedc_client_feature(c, "x"), *y = fedc_client_feature(c, "y");
        CHECK(x->type.dims[0] == c->num_examples && x->type.dims[1] == 28 && x->type.dims[2] == 28);
        for (int64_t i = 0; i < c->num_examples; i++) labels[((const int32_t *)y->data)[i]]++;
        for (int64_t i = 0; i < c->num_examples * 784; i++) pixels += ((const uint8_t *)x->data)[i];
        fedc_client_data_destroy(c);
    }
    for (int k = 0; k < 10; k++) CHECK_EQ_INT(labels[k], 6000);
    CHECK_EQ_INT(pixels, 3431114169LL); /* python3: sum of every byte after the header */
    fedc_dataset_destroy(ds);
}

static void test_fashion_mnist(void) {
    struct stat sb;
    if (stat(FMNIST_TRAIN, &sb) != 0) {
        fedc_test_skip("%s is not here", FMNIST_TRAIN);
        return;
    }
    fedc_dataset *central;
    fedc_client_data *c;
    CHECK_OK(fedc__open_idx(&central, FMNIST_TRAIN));
    if (!central) return;
    CHECK_OK(fedc_dataset_client(central, 0, &c));
    int64_t *a = malloc(60000 * sizeof *a);
    const int32_t *labels = c ? fedc_client_feature(c, "y")->data : NULL;
    CHECK_OK(fedc_partition_iid(60000, 100, 5, a));
    check_fmnist_partition(central, a);
    CHECK_OK(fedc_partition_dirichlet(labels, 60000, 10, 100, 0.5, 5, a));
    check_fmnist_partition(central, a);
    CHECK_OK(fedc_partition_shards(labels, 60000, 100, 2, 5, a));
    int64_t *mix = label_mix(a, labels, 60000, 100, 10);
    for (int j = 0; j < 100; j++) CHECK(top_share(mix, j, 10) >= 0.5); /* 2 shards of 300, one label each */
    check_fmnist_partition(central, a);
    free(mix), free(a);
    fedc_client_data_destroy(c);
    fedc_dataset_destroy(central);
}

/* ---------------------------------------------------- allocation failure -- */

typedef fedc_status (*operation)(void *ctx);

/* Runs `op` with the k-th allocation failing for each k until it succeeds; each
 * failure must be FEDC_ENOMEM (and LeakSanitizer sees any leak). */
static void alloc_failures(const char *name, operation op, void *ctx) {
    int points = 0;
    for (uint64_t k = 1; k < 10000; k++) {
        fedc__alloc_fail_after(k);
        fedc_status st = op(ctx);
        fedc__alloc_fail_after(0);
        if (st == FEDC_OK) break;
        CHECK_ERR(st, FEDC_ENOMEM, NULL);
        points++;
    }
    CHECK(points > 0);
    fprintf(stderr, "    %s: %d allocation points\n", name, points);
}

static fedc_status partition_op(void *ctx) {
    fedc_dataset *ds;
    fedc_status st = fedc_dataset_partition(ctx, small_assignment, 4, &ds);
    for (int64_t j = 0; !st && j < 4; j++) {
        fedc_client_data *c;
        st = fedc_dataset_client(ds, j, &c);
        fedc_client_data_destroy(c);
    }
    fedc_dataset_destroy(ds);
    return st;
}

static fedc_status dirichlet_op(void *ctx) {
    (void)ctx;
    int32_t labels[6] = {0, 1, 1, 0, 2, 2};
    int64_t a[6];
    return fedc_partition_dirichlet(labels, 6, 3, 2, 0.3, 9, a);
}

static fedc_status shards_op(void *ctx) {
    (void)ctx;
    int32_t labels[6] = {0, 1, 1, 0, 2, 2};
    int64_t a[6];
    return fedc_partition_shards(labels, 6, 3, 2, 9, a);
}

static void test_alloc_failure(void) {
    fedc_dataset *central = small_central();
    if (central) alloc_failures("dataset_partition", partition_op, central);
    fedc_dataset_destroy(central);
    alloc_failures("dirichlet", dirichlet_op, NULL);
    alloc_failures("shards", shards_op, NULL);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"iid", test_iid},
        {"shards", test_shards},
        {"dirichlet_uniform", test_dirichlet_uniform},
        {"dirichlet_skewed", test_dirichlet_skewed},
        {"dirichlet_prior", test_dirichlet_prior},
        {"dirichlet_errors", test_dirichlet_errors},
        {"groups_dirichlet", test_groups_dirichlet},
        {"dataset_partition", test_dataset_partition},
        {"fashion_mnist", test_fashion_mnist},
        {"alloc_failure", test_alloc_failure},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
