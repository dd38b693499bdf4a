/* Aggregation trees (src/exec/aggregate.c): the order of a sum over clients is a
 * running sum over each of min(clients, 64) leaves of consecutive clients, then a
 * fixed binary tree over the leaves. So summing leaves in separate processes (as
 * the ranks of an MPI run do, whichever leaves each gets: split.c) and pushing
 * their partial sums in leaf order gives the same bits as one stream of every
 * client, with clients left out, for sum, mean and weighted_mean; and the partial
 * sums alive at once are bounded whatever the cohort's size. */
#include <stdlib.h>
#include <string.h>

#include "exec/split.h"
#include "harness.h"

enum { DIM = 5, MAX_RANKS = 8 };

static fedc__node node(fedc__op op) {
    fedc__node n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.type = fedc_type_make(FEDC_F32, 1, (int64_t[]){DIM});
    return n;
}

/* Values of very different sizes, so that the order of additions shows in the bits. */
static void fill(float *x, float *w, int n) {
    uint32_t s = 12345;
    for (int i = 0; i < n * DIM; i++) {
        s = s * 1664525u + 1013904223u;
        float mag = (float)(1u << (s >> 27)); /* 1 .. 2^31 */
        x[i] = ((float)(s >> 8 & 0xffff) / 65536.0f - 0.5f) * mag;
    }
    for (int i = 0; i < n; i++) w[i] = 1.0f + (float)(i % 7) * 0.37f;
}

/* Sums the given clients (increasing) in a fresh accumulator and closes it. */
static fedc_status stream(fedc__agg *a, const fedc__node *n, int clients, float *out, const float *x, const float *w,
                          const bool *dropped, const int *which, int count) {
    fedc__agg_begin(a, n, clients, out);
    fedc_status st = FEDC_OK;
    for (int k = 0; !st && k < count; k++) {
        int i = which[k];
        st = fedc__agg_add(a, i, dropped[i] ? NULL : x + (size_t)i * DIM, w + i);
    }
    return st ? st : fedc__agg_close(a);
}

/* Runs the split as ranks do: each rank streams its clients; rank 0 pushes every
 * rank's blocks in leaf order (its own included) and completes the sum. */
static fedc_status joined(const fedc__node *n, int clients, const fedc__split *s, int ranks, float *out,
                          const float *x, const float *w, const bool *dropped) {
    fedc__agg agg[MAX_RANKS];
    float scratch[MAX_RANKS][DIM];
    int *which = malloc((size_t)clients * sizeof *which), next[MAX_RANKS] = {0};
    memset(agg, 0, sizeof agg);
    fedc_status st = FEDC_OK;
    for (int r = 0; !st && r < ranks; r++)
        st = stream(&agg[r], n, clients, r ? scratch[r] : out, x, w, dropped, which, fedc__split_clients(s, r, which));
    fedc__partial own[FEDC__AGG_MAX_DEPTH];
    int nown = agg[0].depth;
    memcpy(own, agg[0].stack, sizeof own);
    agg[0].depth = 0;
    while (!st) {
        int from = -1;
        for (int r = 0; r < ranks; r++) {
            const fedc__partial *b = r ? agg[r].stack : own;
            if (next[r] < (r ? agg[r].depth : nown) &&
                (from < 0 || b[next[r]].first < (from ? agg[from].stack : own)[next[from]].first))
                from = r;
        }
        if (from < 0) break;
        fedc__partial p = (from ? agg[from].stack : own)[next[from]++];
        if (from && p.data) { /* as rank 0 receives it: into a buffer of its own */
            void *buf = fedc__agg_buffer(&agg[0]);
            memcpy(buf, p.data, sizeof scratch[0]);
            p.data = buf;
        }
        st = fedc__agg_push(&agg[0], p);
    }
    if (!st) st = fedc__agg_end(&agg[0]);
    for (int r = 0; r < ranks; r++) fedc__agg_free(&agg[r]);
    free(which);
    return st;
}

/* The f32 sum of x[0..n) as one stream. */
static float sum_of(const float *x, int n) {
    fedc__node sum = node(FEDC_OP_SUM);
    sum.type = fedc_type_scalar(FEDC_F32);
    float out = -1;
    fedc__agg a = {0};
    fedc__agg_begin(&a, &sum, n, &out);
    for (int i = 0; i < n; i++) CHECK_OK(fedc__agg_add(&a, i, &x[i], NULL));
    CHECK_OK(fedc__agg_end(&a));
    fedc__agg_free(&a);
    return out;
}

static void test_tree_order(void) {
    /* sequentially ((1e8 + 1) - 1e8) + 1 = 1 in f32; the tree: (1e8 + 1) + (-1e8 + 1) = 0 */
    float x[4] = {1e8f, 1, -1e8f, 1};
    CHECK(sum_of(x, 4) == 0.0f);
}

static void test_leaf_sums_in_order(void) {
    /* 256 clients: 64 leaves of 4; leaf 0 holds the four above and sums them in
     * order (1), the other leaves hold zeros */
    float x[256] = {1e8f, 1, -1e8f, 1};
    CHECK(sum_of(x, 256) == 1.0f);
}

static void test_any_split_joins_bitwise(void) {
    static const int sizes[] = {1, 2, 37, 64, 65, 130, 1001};
    const fedc__op ops[3] = {FEDC_OP_SUM, FEDC_OP_MEAN, FEDC_OP_WEIGHTED_MEAN};
    for (size_t c = 0; c < FEDC_COUNT_OF(sizes); c++) {
        int clients = sizes[c];
        float *x = malloc((size_t)clients * DIM * sizeof *x), *w = malloc((size_t)clients * sizeof *w);
        double *work = malloc((size_t)clients * sizeof *work);
        bool *dropped = calloc((size_t)clients, 1);
        fill(x, w, clients);
        for (int i = 0; i < clients; i++) {
            dropped[i] = clients > 8 && (i % 11 == 5 || i == 6 || i == 7); /* holes, a whole leaf too */
            work[i] = 1 + (i * 7919 % 13) * (i % 3 ? 1 : 9);
        }
        for (int o = 0; o < 3; o++) {
            fedc__node n = node(ops[o]);
            float whole[DIM], split[DIM];
            fedc__split s;
            fedc__split_even(&s, clients, 1);
            CHECK_OK(joined(&n, clients, &s, 1, whole, x, w, dropped));
            for (int ranks = 2; ranks <= 6; ranks++) {
                for (int balanced = 0; balanced <= 1; balanced++) {
                    if (balanced) fedc__split_balanced(&s, clients, ranks, work);
                    else fedc__split_even(&s, clients, ranks);
                    CHECK_OK(joined(&n, clients, &s, ranks, split, x, w, dropped));
                    CHECK_MSG(memcmp(whole, split, sizeof whole) == 0, "%s of %d clients over %d ranks (%s) differs",
                              fedc__ops[ops[o]].name, clients, ranks, balanced ? "balanced" : "even");
                }
            }
            for (int j = 0; j < s.leaves; j++) s.owner[j] = (j * 5 + j / 3) % 3; /* scattered leaves */
            CHECK_OK(joined(&n, clients, &s, 3, split, x, w, dropped));
            CHECK(memcmp(whole, split, sizeof whole) == 0);
        }
        free(x), free(w), free(work), free(dropped);
    }
}

/* The split covers every leaf once, and balancing evens the ranks' work out. */
static void test_balanced_split(void) {
    enum { K = 10 };
    double work[K] = {9, 8, 5, 9, 1, 9, 8, 7, 8, 7}; /* a FEMNIST round's batches: 39 vs 32 when cut in half */
    fedc__split s;
    fedc__split_balanced(&s, K, 2, work);
    double load[2] = {0};
    int seen = 0, clients[K];
    for (int r = 0; r < 2; r++) {
        int n = fedc__split_clients(&s, r, clients);
        for (int k = 0; k < n; k++) load[r] += work[clients[k]], seen++;
        for (int k = 1; k < n; k++) CHECK(clients[k] > clients[k - 1]);
    }
    CHECK_EQ_INT(seen, K);
    CHECK_MSG(load[0] <= 36 && load[1] <= 36, "loads %g and %g", load[0], load[1]);
    static double same[1000];
    static int some[1000];
    fedc__split_balanced(&s, 1000, 3, same); /* no work: the even split */
    CHECK_EQ_INT(fedc__split_clients(&s, 0, some), 328);
    for (int i = 0; i < 1000; i++) same[i] = 2;
    fedc__split_balanced(&s, 1000, 3, same); /* equal work: a contiguous cut as even as leaves allow */
    for (int r = 0; r < 3; r++) {
        int n = fedc__split_clients(&s, r, some);
        CHECK_MSG(n >= 312 && n <= 344 && some[n - 1] - some[0] == n - 1, "rank %d: %d clients from %d", r, n, some[0]);
    }
}

/* The partial sums alive at once: the leaf being summed and a stack of at most
 * log2(64) + 1 blocks, the first of them in `out` itself. */
static void test_bounded_memory(void) {
    static const int sizes[] = {10, 1000, 10000};
    int buffers[3];
    for (int c = 0; c < 3; c++) {
        int clients = sizes[c];
        float *x = malloc((size_t)clients * DIM * sizeof *x), *w = malloc((size_t)clients * sizeof *w), out[DIM];
        fill(x, w, clients);
        fedc__node n = node(FEDC_OP_WEIGHTED_MEAN);
        fedc__agg a = {0};
        fedc__agg_begin(&a, &n, clients, out);
        for (int i = 0; i < clients; i++) CHECK_OK(fedc__agg_add(&a, i, x + (size_t)i * DIM, w + i));
        CHECK_OK(fedc__agg_end(&a));
        buffers[c] = a.nspare; /* every buffer ever allocated is back, or on the stack */
        for (int k = 0; k < a.depth; k++) buffers[c] += a.stack[k].data && a.stack[k].data != out;
        fedc__agg_free(&a);
        free(x), free(w);
    }
    CHECK_MSG(buffers[0] <= 3 && buffers[1] <= 6 && buffers[2] == buffers[1], "%d, %d and %d buffers", buffers[0],
              buffers[1], buffers[2]);
}

static void test_every_client_dropped(void) {
    enum { N = 37 };
    static float x[N * DIM], w[N];
    fill(x, w, N);
    bool dropped[N];
    for (int i = 0; i < N; i++) dropped[i] = true;
    fedc__node sum = node(FEDC_OP_SUM), mean = node(FEDC_OP_MEAN);
    float out[DIM] = {1, 1, 1, 1, 1};
    fedc__split s;
    fedc__split_even(&s, N, 2);
    CHECK_OK(joined(&sum, N, &s, 2, out, x, w, dropped));
    CHECK(out[0] == 0 && out[DIM - 1] == 0);
    CHECK_ERR(joined(&mean, N, &s, 2, out, x, w, dropped), FEDC_ERANGE, "no clients to average");
}

static void test_partial_leaf_is_an_error(void) {
    fedc__node n = node(FEDC_OP_SUM);
    float x[DIM] = {1, 2, 3, 4, 5}, out[DIM];
    fedc__agg a = {0};
    fedc__agg_begin(&a, &n, 200, out); /* leaves of 3 or 4 clients */
    CHECK_OK(fedc__agg_add(&a, 0, x, NULL));
    CHECK_ERR(fedc__agg_add(&a, 2, x, NULL), FEDC_EINTERNAL, "not whole");
    fedc__agg_free(&a);
    fedc__agg_begin(&a, &n, 200, out);
    CHECK_ERR(fedc__agg_add(&a, 1, x, NULL), FEDC_EINTERNAL, "not whole");
    fedc__agg_free(&a);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"the tree fixes the order", test_tree_order},
        {"a leaf sums its clients in order", test_leaf_sums_in_order},
        {"any split joins bitwise", test_any_split_joins_bitwise},
        {"a balanced split", test_balanced_split},
        {"bounded memory", test_bounded_memory},
        {"every client dropped", test_every_client_dropped},
        {"a partial leaf is an error", test_partial_leaf_is_an_error},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
