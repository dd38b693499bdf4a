/* Aggregation trees (src/exec/aggregate.c): the order of a sum over clients is a
 * fixed binary tree over client indices, so summing contiguous blocks of clients
 * separately (as the ranks of an MPI run do) and pushing the blocks' partial sums
 * in order gives the same bits as one stream of every client, for any cut points,
 * with clients left out, and for sum, mean and weighted_mean. */
#include <string.h>

#include "exec/exec.h"
#include "harness.h"

enum { N = 37, DIM = 5 };

static fedc__node node(fedc__op op) {
    fedc__node n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.type = fedc_type_make(FEDC_F32, 1, (int64_t[]){DIM});
    return n;
}

/* Values of very different sizes, so that the order of additions shows in the bits. */
static void fill(float *x, float *w) {
    uint32_t s = 12345;
    for (int i = 0; i < N * DIM; i++) {
        s = s * 1664525u + 1013904223u;
        float mag = (float)(1u << (s >> 27)); /* 1 .. 2^31 */
        x[i] = ((float)(s >> 8 & 0xffff) / 65536.0f - 0.5f) * mag;
    }
    for (int i = 0; i < N; i++) w[i] = 1.0f + (float)(i % 7) * 0.37f;
}

/* Sums clients [first, end) in a fresh accumulator; dropped[i] leaves client i out. */
static fedc_status block(fedc__agg *a, const fedc__node *n, float *out, const float *x, const float *w,
                         const bool *dropped, int first, int end) {
    fedc__agg_begin(a, n, out);
    fedc_status st = FEDC_OK;
    for (int i = first; !st && i < end; i++) st = fedc__agg_add(a, i, dropped[i] ? NULL : x + i * DIM, w + i);
    return st;
}

/* Joins the blocks cut at cuts[0] = 0 < cuts[1] < ... < cuts[k] = N as ranks do:
 * the first block's accumulator receives the others' partial sums in order. */
static fedc_status joined(const fedc__node *n, float *out, const float *x, const float *w, const bool *dropped,
                          const int *cuts, int k) {
    fedc__agg root = {0}, other = {0};
    fedc_status st = block(&root, n, out, x, w, dropped, cuts[0], cuts[1]);
    for (int b = 1; !st && b < k; b++) {
        float scratch[DIM];
        st = block(&other, n, scratch, x, w, dropped, cuts[b], cuts[b + 1]);
        for (int j = 0; !st && j < other.depth; j++) {
            fedc__partial p = other.stack[j];
            if (p.data) { /* as a rank receives it: into a buffer of the root's */
                void *buf = fedc__agg_buffer(&root);
                memcpy(buf, p.data, sizeof scratch);
                p.data = buf;
            }
            st = fedc__agg_push(&root, p);
        }
    }
    if (!st) st = fedc__agg_end(&root);
    fedc__agg_free(&root);
    fedc__agg_free(&other);
    return st;
}

static void test_tree_order(void) {
    /* sequentially ((1e8 + 1) - 1e8) + 1 = 1 in f32; the tree: (1e8 + 1) + (-1e8 + 1) = 0 */
    fedc__node n = node(FEDC_OP_SUM);
    n.type = fedc_type_scalar(FEDC_F32);
    float x[4] = {1e8f, 1, -1e8f, 1}, out = -1;
    fedc__agg a = {0};
    fedc__agg_begin(&a, &n, &out);
    for (int i = 0; i < 4; i++) CHECK_OK(fedc__agg_add(&a, i, &x[i], NULL));
    CHECK_OK(fedc__agg_end(&a));
    CHECK(out == 0.0f);
    fedc__agg_free(&a);
}

static void test_blocks_join_bitwise(void) {
    static float x[N * DIM], w[N];
    fill(x, w);
    bool dropped[N] = {0};
    dropped[5] = dropped[6] = dropped[7] = dropped[20] = true;
    const fedc__op ops[3] = {FEDC_OP_SUM, FEDC_OP_MEAN, FEDC_OP_WEIGHTED_MEAN};
    for (int o = 0; o < 3; o++) {
        fedc__node n = node(ops[o]);
        float whole[DIM];
        int one[2] = {0, N};
        CHECK_OK(joined(&n, whole, x, w, dropped, one, 1));
        for (int ranks = 2; ranks <= 6; ranks++) { /* the blocks fedc__backend_block gives */
            int cuts[8];
            for (int r = 0; r <= ranks; r++) cuts[r] = N * r / ranks;
            float split[DIM];
            CHECK_OK(joined(&n, split, x, w, dropped, cuts, ranks));
            CHECK_MSG(memcmp(whole, split, sizeof whole) == 0, "%s over %d blocks differs from one stream",
                      fedc__ops[ops[o]].name, ranks);
        }
        int odd[5] = {0, 1, 8, 9, N}; /* blocks of one and cuts at every kind of boundary */
        float split[DIM];
        CHECK_OK(joined(&n, split, x, w, dropped, odd, 4));
        CHECK(memcmp(whole, split, sizeof whole) == 0);
    }
}

static void test_every_client_dropped(void) {
    static float x[N * DIM], w[N];
    fill(x, w);
    bool dropped[N];
    for (int i = 0; i < N; i++) dropped[i] = true;
    fedc__node sum = node(FEDC_OP_SUM), mean = node(FEDC_OP_MEAN);
    float out[DIM] = {1, 1, 1, 1, 1};
    int cuts[3] = {0, 10, N};
    CHECK_OK(joined(&sum, out, x, w, dropped, cuts, 2));
    CHECK(out[0] == 0 && out[DIM - 1] == 0);
    CHECK_ERR(joined(&mean, out, x, w, dropped, cuts, 2), FEDC_ERANGE, "no clients to average");
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"the tree fixes the order", test_tree_order},
        {"blocks join bitwise", test_blocks_join_bitwise},
        {"every client dropped", test_every_client_dropped},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
