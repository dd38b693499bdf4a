/*
 * Tests of NumPy's legacy RandomState in C (src/data/rng_numpy.c) and what is built
 * on it: FedJAX's client sampler (fedc_sample_clients_fedjax) and FedJAX's
 * shuffle_repeat_batch order (fedc_shuffle_repeat_batch_numpy).
 *
 * The expected values are NumPy's and FedJAX's own, printed by (numpy 1.26.4,
 * fedjax 0.0.17 in .peers/fedjax):
 *
 *   R = np.random.RandomState
 *   R(5489).randint(0, 2**32, size=5, dtype=np.uint64)            # raw 32-bit draws
 *   R(0).randint(0, 2**32, size=700, dtype=np.uint64)[624:628]    # after a twist
 *   R(np.array([1, 2, 3], np.uint32)).randint(0, 2**32, size=4, dtype=np.uint64)
 *   R(np.arange(700, dtype=np.uint32)).randint(0, 2**32, size=3, dtype=np.uint64)
 *   R(0).permutation(10)
 *   a = np.arange(1000, dtype=np.int32); R(7).shuffle(a)           # a[:6], sum(i * a[i])
 *   [R(s).randint(1, 2**31 - 2) for s in (0, 1, 42)]
 *   R(3).randint(0, 2**40, size=3); R(9).randint(-5, 1000, size=4)
 *   from fedjax.core.client_samplers import get_pseudo_random_state
 *   [get_pseudo_random_state(3, r).get_state()[1][0] for r in (1, 2, 10)]
 *   [get_pseudo_random_state(3, r).choice(np.arange(20), 5, replace=False) for r in (1, 2, 10)]
 *   c = fedjax.ClientDataset({'x': np.arange(5)})
 *   [b['x'] for b in c.shuffle_repeat_batch(batch_size=2, num_epochs=2, seed=7)]
 *   [b['x'] for b in c.shuffle_repeat_batch(batch_size=3, num_steps=5, seed=0)]
 *
 * tests/peers_fedjax.py compares the same against the running FedJAX at more sizes.
 */
#include "core/internal.h"
#include "data/rng_numpy.h"
#include "harness.h"

#include "fedc/data.h"

static void check_raw(fedc__mt19937 *s, const uint32_t *want, int n) {
    for (int i = 0; i < n; i++) CHECK_EQ_INT(fedc__mt19937_next(s), want[i]);
}

static void test_seed(void) {
    fedc__mt19937 s;
    fedc__mt19937_seed(&s, 5489);
    check_raw(&s, (const uint32_t[]){3499211612u, 581869302u, 3890346734u, 3586334585u, 545404204u}, 5);
    fedc__mt19937_seed(&s, 0);
    for (int i = 0; i < 624; i++) fedc__mt19937_next(&s);
    check_raw(&s, (const uint32_t[]){341544762u, 1076416385u, 384842097u, 2909461632u}, 4);
}

static void test_seed_array(void) {
    fedc__mt19937 s;
    fedc__mt19937_seed_array(&s, (const uint32_t[]){1, 2, 3}, 3);
    check_raw(&s, (const uint32_t[]){2619334238u, 1552691353u, 3808334787u, 2540200029u}, 4);
    uint32_t key[700]; /* longer than the state: the first loop runs 700 times */
    for (int i = 0; i < 700; i++) key[i] = (uint32_t)i;
    fedc__mt19937_seed_array(&s, key, 700);
    check_raw(&s, (const uint32_t[]){3727595200u, 1914792892u, 3929396303u}, 3);
}

static void test_shuffle(void) {
    fedc__mt19937 s;
    int64_t a[1000];
    fedc__mt19937_seed(&s, 0);
    for (int i = 0; i < 10; i++) a[i] = i;
    fedc__numpy_shuffle(&s, a, 10);
    const int64_t perm[] = {2, 8, 4, 9, 1, 6, 7, 3, 0, 5};
    for (int i = 0; i < 10; i++) CHECK_EQ_INT(a[i], perm[i]);
    fedc__mt19937_seed(&s, 7);
    for (int i = 0; i < 1000; i++) a[i] = i;
    fedc__numpy_shuffle(&s, a, 1000);
    const int64_t first[] = {778, 334, 271, 802, 216, 408};
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(a[i], first[i]);
    int64_t weighted = 0;
    for (int i = 0; i < 1000; i++) weighted += i * a[i];
    CHECK_EQ_INT(weighted, 246202311);
}

static void test_randint(void) {
    fedc__mt19937 s;
    const uint32_t seeds[] = {0, 1, 42};
    const int64_t want[] = {209652397, 1791095846, 1608637543};
    for (int i = 0; i < 3; i++) {
        fedc__mt19937_seed(&s, seeds[i]);
        CHECK_EQ_INT(fedc__numpy_randint(&s, 1, 2147483646), want[i]);
    }
    fedc__mt19937_seed(&s, 3); /* above 2^32: two draws a value, the first high */
    const int64_t wide[] = {455570294424, 1073054410371, 790795084744};
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(fedc__numpy_randint(&s, 0, (int64_t)1 << 40), wide[i]);
    fedc__mt19937_seed(&s, 9);
    const int64_t low[] = {377, 343, 633, 496};
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(fedc__numpy_randint(&s, -5, 1000), low[i]);
}

static void test_sample_clients_fedjax(void) {
    const uint32_t rounds[] = {1, 2, 10}, seeds[] = {1118337144u, 1115500664u, 929391818u};
    const int64_t want[3][5] = {{14, 13, 19, 5, 6}, {16, 18, 5, 4, 12}, {6, 18, 7, 17, 15}};
    for (int r = 0; r < 3; r++) {
        CHECK_EQ_INT(fedc__fedjax_round_seed(3, rounds[r]), seeds[r]);
        int64_t out[5];
        CHECK_OK(fedc_sample_clients_fedjax(20, 5, 3, rounds[r], out));
        for (int i = 0; i < 5; i++) CHECK_EQ_INT(out[i], want[r][i]);
    }
    int64_t out[1];
    CHECK_ERR(fedc_sample_clients_fedjax(4, 5, 0, 1, out), FEDC_EINVAL, "5 distinct clients out of 4");
    CHECK_OK(fedc_sample_clients_fedjax(0, 0, 0, 1, out));
}

/* The examples' x values batch by batch against FedJAX's. */
static void check_batches(int64_t batch, int epochs, int64_t steps, uint32_t seed, const int32_t *want, int64_t count) {
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_client_data_create(&c, "five", 5));
    const int32_t x[5] = {0, 1, 2, 3, 4};
    CHECK_OK(fedc_client_add_array(c, "x", fedc_type_make(FEDC_I32, 1, (int64_t[]){5}), x));
    fedc_batches *b = NULL;
    CHECK_OK(fedc_shuffle_repeat_batch_numpy(c, batch, epochs, steps, false, seed, &b));
    if (b) {
        CHECK_EQ_INT(b->steps * b->batch_size, count);
        const int32_t *got = fedc_batches_feature(b, "x")->data;
        for (int64_t i = 0; i < count && i < b->steps * b->batch_size; i++) CHECK_EQ_INT(got[i], want[i]);
        for (int64_t i = 0; i < count; i++) CHECK(b->mask[i] == 1.0f);
    }
    fedc_batches_destroy(b);
    fedc_client_data_destroy(c);
}

static void test_shuffle_repeat_batch_numpy(void) {
    check_batches(2, 2, -1, 7, (const int32_t[]){0, 3, 2, 1, 4, 2, 3, 0, 4, 1}, 10);
    check_batches(3, 1, 5, 0, (const int32_t[]){2, 0, 1, 3, 4, 2}, 6);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"seed", test_seed},
        {"seed_array", test_seed_array},
        {"shuffle", test_shuffle},
        {"randint", test_randint},
        {"sample_clients_fedjax", test_sample_clients_fedjax},
        {"shuffle_repeat_batch_numpy", test_shuffle_repeat_batch_numpy},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
