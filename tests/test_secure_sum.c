/* Secure sum's arithmetic (fedc/secure_sum.h, src/fl/secure_sum.c): the sum of
 * the clients' words is the exact integer sum of their quantized values, and its
 * decoding that sum over the scale; clipping, rounding and NaN/Inf as documented;
 * a sum past 2^31 wraps modulo 2^32 as documented; the round program's words and
 * sum are the C functions' bits, on 1 and 2 threads; --secure-sum's mean through
 * fedc_round_aggregate, with and without DP's clip; fedc train with it is
 * reproducible across thread counts and resumes refuse a changed setting. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "fl_train_case.h"
#include "harness.h"

static fedc_type placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

/* The word's two's complement value. */
static int64_t signed_word(uint32_t w) { return w <= INT32_MAX ? (int64_t)w : (int64_t)w - ((int64_t)1 << 32); }

/* Uniform values in [-2 bound, 2 bound): a quarter of them clipped. */
static void random_values(float *x, int64_t n, double bound, uint32_t client) {
    fedc_rng_stream s = fedc_rng_stream_make(11, 0, client, 0);
    for (int64_t i = 0; i < n; i++) x[i] = (float)((4 * fedc_rng_uniform_f64(s, (uint64_t)i) - 2) * bound);
}

/* n clients' words summed mod 2^32 equal Σ q as integers, and decode to
 * f32(Σ q) / s bit for bit; the decoded sum is within n / (2 s) of the sum of
 * the clipped values (half a level a client), plus f32 rounding. */
static void test_sum_is_the_exact_integer_sum(void) {
    enum { N = 1000, CLIENTS = 7 };
    const int bits[] = {2, 8, 16, 24};
    for (int b = 0; b < 4; b++) {
        double bound = 0.5;
        float x[N], dec[N], s = fedc_secure_sum_scale(bits[b], bound);
        uint32_t w[N], acc[N] = {0};
        int64_t exact[N] = {0};
        double clipped[N] = {0};
        for (int c = 0; c < CLIENTS; c++) {
            random_values(x, N, bound, (uint32_t)c);
            CHECK_OK(fedc_secure_sum_encode(bits[b], bound, x, N, w));
            fedc_secure_sum_add(acc, w, N);
            for (int i = 0; i < N; i++) {
                int64_t q = signed_word(w[i]);
                CHECK_MSG(llabs(q) <= fedc_secure_sum_levels(bits[b]), "q %lld beyond the levels", (long long)q);
                exact[i] += q;
                clipped[i] += fmin(fmax(x[i], -bound), bound);
            }
        }
        CHECK_OK(fedc_secure_sum_decode(bits[b], bound, acc, N, dec));
        int wrong_sum = 0, wrong_bits = 0, far = 0;
        for (int i = 0; i < N; i++) {
            wrong_sum += signed_word(acc[i]) != exact[i];
            wrong_bits += dec[i] != (float)exact[i] / s;
            far += fabs(dec[i] - clipped[i]) > CLIENTS * (0.5 / s) * (1 + 1e-6) + 1e-6 * CLIENTS * bound;
        }
        CHECK_EQ_INT(wrong_sum, 0);
        CHECK_EQ_INT(wrong_bits, 0);
        CHECK_EQ_INT(far, 0);
    }
}

/* Bound 127 at 8 bits: s = 1, so q is x clipped to [-127, 127] and rounded half
 * away from zero; NaN is 0, the infinities the bounds. */
static void test_clip_round_and_specials(void) {
    const float x[] = {2.5f, -2.5f, 2.4f, -2.6f, 0.5f, -0.5f, 0, -0.0f, 500, -500, NAN, INFINITY, -INFINITY, 126.7f};
    const int64_t want[] = {3, -3, 2, -3, 1, -1, 0, 0, 127, -127, 0, 127, -127, 127};
    enum { N = sizeof x / sizeof *x };
    uint32_t w[N];
    CHECK_NEAR(fedc_secure_sum_scale(8, 127), 1, 0);
    CHECK_OK(fedc_secure_sum_encode(8, 127, x, N, w));
    for (int i = 0; i < N; i++) CHECK_MSG(signed_word(w[i]) == want[i], "x %g: q %lld, want %lld", x[i],
                                          (long long)signed_word(w[i]), (long long)want[i]);
    CHECK_EQ_INT(w[1], 0xFFFFFFFDu); /* -3, two's complement */
}

/* 24 bits: L = 2^23 - 1 and at most 256 clients never wrap (256 L < 2^31). 300
 * clients at +bound sum to 300 L = 2,516,582,100, past 2^31: the words' sum is
 * that modulo 2^32, read as i32: 300 L - 2^32; the decoded sum is its value over s. */
static void test_overflow_wraps_modulo_2_32(void) {
    CHECK_EQ_INT(fedc_secure_sum_levels(24), 8388607);
    CHECK_EQ_INT(fedc_secure_sum_max_clients(24), 256);
    CHECK_EQ_INT(fedc_secure_sum_max_clients(16), 65538);
    float x = 1, dec;
    uint32_t w, acc = 0;
    CHECK_OK(fedc_secure_sum_encode(24, 1, &x, 1, &w));
    for (int c = 0; c < 256; c++) fedc_secure_sum_add(&acc, &w, 1);
    CHECK_EQ_INT(signed_word(acc), 256LL * 8388607);
    for (int c = 256; c < 300; c++) fedc_secure_sum_add(&acc, &w, 1);
    int64_t exact = 300LL * 8388607;
    CHECK_EQ_INT(acc, (uint32_t)(exact % ((int64_t)1 << 32)));
    CHECK_EQ_INT(signed_word(acc), exact - ((int64_t)1 << 32));
    CHECK_OK(fedc_secure_sum_decode(24, 1, &acc, 1, &dec));
    CHECK(dec == (float)(exact - ((int64_t)1 << 32)) / fedc_secure_sum_scale(24, 1));
    CHECK(dec < 0);
}

static void test_bad_settings_refused(void) {
    float x = 0;
    uint32_t w;
    CHECK_ERR(fedc_secure_sum_encode(1, 1, &x, 1, &w), FEDC_EINVAL, "1 bits; it takes 2 to 24");
    CHECK_ERR(fedc_secure_sum_encode(25, 1, &x, 1, &w), FEDC_EINVAL, "25 bits");
    CHECK_ERR(fedc_secure_sum_decode(8, 0, &w, 1, &x), FEDC_EINVAL, "bound 0 must be finite and > 0");
    CHECK_ERR(fedc_secure_sum_check(8, NAN), FEDC_EINVAL, "bound nan");
    CHECK_ERR(fedc_secure_sum_check(8, INFINITY), FEDC_EINVAL, "bound inf");
    CHECK_ERR(fedc_secure_sum_check(24, 1e-40), FEDC_EINVAL, "too small or too large");
    CHECK_OK(fedc_secure_sum_check(24, 1e-3));
    CHECK_EQ_INT(fedc_secure_sum_levels(40), 0);
    CHECK_EQ_INT(fedc_secure_sum_max_clients(1), 0);
    fedc_aggregation a = {.secure_sum_bits = 8};
    CHECK_ERR(fedc_aggregation_check(&a), FEDC_EINVAL, "needs a bound on each element (--secure-bound B");
    a = fedc_aggregation_adaptive_defaults(0);
    a.secure_sum_bits = 8;
    CHECK_ERR(fedc_aggregation_check(&a), FEDC_EINVAL, "an adaptive clip changes every round");
    a.secure_sum_bound = 2;
    CHECK_OK(fedc_aggregation_check(&a));
    a = (fedc_aggregation){.secure_sum_bits = 30, .secure_sum_bound = 1};
    CHECK_ERR(fedc_aggregation_check(&a), FEDC_EINVAL, "30 bits");
    a = (fedc_aggregation){.secure_sum_bits = 8, .secure_sum_bound = -1};
    CHECK_ERR(fedc_aggregation_check(&a), FEDC_EINVAL, "secure sum's bound -1");
    a = (fedc_aggregation){.clip = 0.5, .secure_sum_bits = 8};
    CHECK_OK(fedc_aggregation_check(&a));
    CHECK(fedc_aggregation_active(&a));
}

/* ------------------------------------------------------------ program -- */

enum { K = 5, DA = 300, DB = 7 };

/* Client values of leaves a (random, clipped in part) and b (the specials). */
static void client_values(float *a, float *b) {
    for (int c = 0; c < K; c++) random_values(a + c * DA, DA, 1, (uint32_t)c + 100);
    const float specials[DB] = {NAN, INFINITY, -INFINITY, 0.5f, -0.25f, 3, -1};
    for (int c = 0; c < K; c++)
        for (int i = 0; i < DB; i++) b[c * DB + i] = specials[i] * (float)(c + 1) / 4;
}

static fedc_executor *executor(const fedc_program *p, int threads) {
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = K, .threads = threads};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    return ex;
}

static const void *output(const fedc_executor *ex, const char *name) {
    const void *v = NULL;
    CHECK_OK(fedc_executor_output(ex, name, &v, NULL));
    return v;
}

/* The program's words (fedc_aggregate_secure_encode, each client's) are
 * fedc_secure_sum_encode's; its sum is fedc_secure_sum_decode of the C sum,
 * bit for bit, the same on 1 and 2 threads. */
static void test_program_matches_the_c_functions(void) {
    const int bits = 12;
    const double bound = 0.75;
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_tree *t = fedc_tree_new(p);
    fedc_tree_set(p, t, "a", fedc_input(p, "a", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){DA}), FEDC_CLIENTS)));
    fedc_tree_set(p, t, "b", fedc_input(p, "b", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){DB}), FEDC_CLIENTS)));
    fedc_tree_output(p, "words", fedc_aggregate_secure_encode(p, t, bits, bound));
    fedc_tree_output(p, "sum", fedc_aggregate_secure_sum(p, t, bits, bound));
    CHECK_OK(fedc_program_status(p));
    float a[K * DA], b[K * DB], want_a[DA], want_b[DB];
    uint32_t wa[K * DA], wb[K * DB], acc_a[DA] = {0}, acc_b[DB] = {0};
    client_values(a, b);
    for (int c = 0; c < K; c++) {
        CHECK_OK(fedc_secure_sum_encode(bits, bound, a + c * DA, DA, wa + c * DA));
        CHECK_OK(fedc_secure_sum_encode(bits, bound, b + c * DB, DB, wb + c * DB));
        fedc_secure_sum_add(acc_a, wa + c * DA, DA);
        fedc_secure_sum_add(acc_b, wb + c * DB, DB);
    }
    CHECK_OK(fedc_secure_sum_decode(bits, bound, acc_a, DA, want_a));
    CHECK_OK(fedc_secure_sum_decode(bits, bound, acc_b, DB, want_b));
    for (int threads = 1; threads <= 2; threads++) {
        fedc_executor *ex = executor(p, threads);
        CHECK_OK(fedc_executor_bind(ex, "a", a));
        CHECK_OK(fedc_executor_bind(ex, "b", b));
        CHECK_OK(fedc_executor_run(ex));
        const void *ga = output(ex, "words/a"), *gb = output(ex, "words/b");
        const void *sa = output(ex, "sum/a"), *sb = output(ex, "sum/b");
        CHECK_MSG(ga && !memcmp(ga, wa, sizeof wa), "%d threads: the words of a differ from the C encoder's", threads);
        CHECK_MSG(gb && !memcmp(gb, wb, sizeof wb), "%d threads: the words of b differ from the C encoder's", threads);
        CHECK_MSG(sa && !memcmp(sa, want_a, sizeof want_a), "%d threads: the sum of a differs", threads);
        CHECK_MSG(sb && !memcmp(sb, want_b, sizeof want_b), "%d threads: the sum of b differs", threads);
        fedc_executor_destroy(ex);
    }
    fedc_program_destroy(p);
}

static const float WEIGHTS[K] = {1, 2, 3, 4, 6};

/* The program mean = fedc_round_aggregate(u, w) under a: u/a, u/b and w @clients. */
static fedc_program *round_program(fedc_aggregation a) {
    fedc_algorithm alg = {.aggregation = a};
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_tree *u = fedc_tree_new(p);
    fedc_tree_set(p, u, "a", fedc_input(p, "u/a", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){DA}), FEDC_CLIENTS)));
    fedc_tree_set(p, u, "b", fedc_input(p, "u/b", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){DB}), FEDC_CLIENTS)));
    fedc_value w = fedc_input(p, "w", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS));
    fedc_round r = {.alg = &alg, .p = p, .server = fedc_tree_new(p)};
    fedc_tree *mean = fedc_round_aggregate(&r, u, w);
    if (mean) fedc_tree_output(p, "mean", mean);
    CHECK_OK(fedc_program_status(p));
    return p;
}

/* The round program under a, run on a and b. */
static void round_mean(fedc_aggregation a, const float *ua, const float *ub, float *ma, float *mb) {
    fedc_program *p = round_program(a);
    fedc_executor *ex = executor(p, 2);
    CHECK_OK(fedc_executor_bind(ex, "u/a", ua));
    CHECK_OK(fedc_executor_bind(ex, "u/b", ub));
    CHECK_OK(fedc_executor_bind(ex, "w", WEIGHTS));
    CHECK_OK(fedc_executor_run(ex));
    const void *oa = output(ex, "mean/a"), *ob = output(ex, "mean/b");
    if (oa) memcpy(ma, oa, DA * sizeof *ma);
    if (ob) memcpy(mb, ob, DB * sizeof *mb);
    fedc_executor_destroy(ex);
    fedc_program_destroy(p);
}

/* The mean of `n` elements a client as the C functions make it: decode(Σ enc(f32(w_i
 * x_i))) / Σ w (clipped: each x_i already clipped, w_i 1, divided by m). */
static void c_mean(int bits, double bound, const float *x, int64_t n, const float *w, float divisor, float *out) {
    uint32_t *acc = calloc((size_t)n, sizeof *acc), *words = malloc((size_t)n * sizeof *words);
    float *wx = malloc((size_t)n * sizeof *wx);
    for (int c = 0; c < K; c++) {
        for (int64_t i = 0; i < n; i++) wx[i] = w ? w[c] * x[c * n + i] : x[c * n + i];
        CHECK_OK(fedc_secure_sum_encode(bits, bound, wx, n, words));
        fedc_secure_sum_add(acc, words, n);
    }
    CHECK_OK(fedc_secure_sum_decode(bits, bound, acc, n, out));
    for (int64_t i = 0; i < n; i++) out[i] /= divisor;
    free(acc), free(words), free(wx);
}

/* --secure-sum's weighted mean is decode(Σ enc(w_i Δ_i)) / Σ w_i bit for bit,
 * and within half a level a client of the exact weighted mean. */
static void test_round_weighted_mean(void) {
    float a[K * DA], b[K * DB], ma[DA], mb[DB], wa[DA];
    client_values(a, b);
    for (int i = 0; i < K * DB; i++) b[i] = isfinite(b[i]) ? b[i] : 0;
    const double bound = 32; /* w Δ: up to 6 x 3.75, unclipped */
    round_mean((fedc_aggregation){.secure_sum_bits = 16, .secure_sum_bound = bound}, a, b, ma, mb);
    c_mean(16, bound, a, DA, WEIGHTS, 16, wa);
    CHECK(!memcmp(ma, wa, sizeof wa));
    double half_level = 0.5 * bound / fedc_secure_sum_levels(16);
    int far = 0;
    for (int i = 0; i < DB; i++) {
        double exact = 0;
        for (int c = 0; c < K; c++) exact += (double)WEIGHTS[c] * b[c * DB + i];
        far += fabs(mb[i] - exact / 16) > K * half_level / 16 + 1e-6;
    }
    CHECK_EQ_INT(far, 0);
}

/* Deployed (fedc/deploy.h), the round's client work sends up the update only as
 * the i32 words: no f32 value of the update's shapes leaves a client. The words
 * are what SecAgg masks. */
static void test_deployed_clients_send_words(void) {
    fedc_program *p = round_program((fedc_aggregation){.secure_sum_bits = 16, .secure_sum_bound = 32});
    fedc_deployment_form *f = NULL;
    CHECK_OK(fedc_program_deployment_form(p, &f));
    const fedc_program *work = f ? fedc_deployment_form_phase(f, 0, FEDC_PHASE_CLIENT_WORK) : NULL;
    int words = 0, floats = 0;
    for (int i = 0; work && i < fedc_program_num_outputs(work); i++) {
        fedc_type t = fedc_value_type(work, fedc_program_output_value(work, i));
        bool update = t.rank == 1 && (t.dims[0] == DA || t.dims[0] == DB);
        words += update && t.dtype == FEDC_I32;
        floats += update && t.dtype != FEDC_I32;
    }
    CHECK_EQ_INT(words, 2);
    CHECK_EQ_INT(floats, 0);
    fedc_deployment_form_destroy(f);
    fedc_program_destroy(p);
}

/* With DP's clip (z = 0), the clipped updates are summed securely with B = C:
 * the same bits as the C functions on the clipped updates, and near the plain
 * DP mean. */
static void test_round_dp_mean(void) {
    float a[K * DA], b[K * DB], ma[DA], mb[DB], pa[DA], pb[DB];
    client_values(a, b);
    for (int i = 0; i < K * DB; i++) b[i] = isfinite(b[i]) ? b[i] : 0;
    fedc_aggregation plain = {.clip = 4, .expected_clients = 10}, secure = plain;
    secure.secure_sum_bits = 20;
    round_mean(plain, a, b, pa, pb);
    round_mean(secure, a, b, ma, mb);
    double half_level = 0.5 * 4.0 / fedc_secure_sum_levels(20);
    int far = 0;
    for (int i = 0; i < DA; i++) far += fabs(ma[i] - pa[i]) > K * half_level / 10 + 1e-6;
    for (int i = 0; i < DB; i++) far += fabs(mb[i] - pb[i]) > K * half_level / 10 + 1e-6;
    CHECK_EQ_INT(far, 0);
    CHECK(memcmp(ma, pa, sizeof ma)); /* quantized: not the plain bits */
}

/* ------------------------------------------------------------ fedc train -- */

static fedc_train_config heart(const char *name, int threads) {
    fedc_train_config c = heart_job(fedc_algorithm_find("fedavg"), name);
    c.rounds = 4, c.clients_per_round = 3, c.eval_every = 4, c.checkpoint_every = 2, c.threads = threads;
    c.algorithm.aggregation = (fedc_aggregation){.secure_sum_bits = 16, .secure_sum_bound = 40};
    return c;
}

/* 1 and 2 threads give the same model; it differs from the plain run's (the sum
 * is quantized); a resume with other bits is refused. */
static void test_train_threads_agree(void) {
    if (!have_data(HEART_DATA)) return;
    fedc_train_config one = heart("ss-one", 1), two = heart("ss-two", 2), plain = heart("ss-plain", 1);
    plain.algorithm.aggregation = (fedc_aggregation){0};
    fedc_train_result r;
    CHECK_OK(fedc_train(&one, &r));
    CHECK(isfinite(r.train_loss));
    CHECK_OK(fedc_train(&two, &r));
    CHECK_OK(fedc_train(&plain, &r));
    CHECK(same_checkpoints(one.out_dir, two.out_dir));
    CHECK(!same_checkpoints(one.out_dir, plain.out_dir));
    fedc_train_config changed = heart("ss-one", 1);
    changed.rounds = 6, changed.resume = true, changed.algorithm.aggregation.secure_sum_bits = 12;
    CHECK_ERR(fedc_train(&changed, &r), FEDC_EINVAL, "--secure-sum 12 (the checkpoint's: 16)");
}

/* A cohort whose sum could pass 2^31 is refused before any round: 24 bits sum
 * at most 256 clients, and Poisson sampling counts its slots (the mean plus 8
 * standard deviations), not its mean. */
static void test_train_refuses_a_cohort_that_could_wrap(void) {
    if (!have_data(FASHION_DATA)) return;
    fedc_train_config c = fashion_job(fedc_algorithm_find("fedavg"), "ss-wrap");
    c.num_clients = 300, c.clients_per_round = 257, c.rounds = 1;
    c.algorithm.aggregation = (fedc_aggregation){.secure_sum_bits = 24, .secure_sum_bound = 1};
    fedc_train_result r;
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "--secure-sum 24 sums at most 256 clients without wrapping modulo 2^32, "
              "but a round has up to 257; use");
    c.poisson = true, c.sampling_rate = 0.7; /* mean 210, slots 300 */
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "a round has up to 300 (Poisson");
    c.poisson = false, c.clients_per_round = 256, c.steps = 1;
    CHECK_OK(fedc_train(&c, &r));
}

int main(int argc, char **argv) {
    if (!fedc_test_tmpdir("test-secure-sum")) return 1;
    static const fedc_test tests[] = {
        {"the words' sum is the exact sum of the quantized values", test_sum_is_the_exact_integer_sum},
        {"clipping, rounding half away from zero, NaN and Inf", test_clip_round_and_specials},
        {"a sum past 2^31 wraps modulo 2^32", test_overflow_wraps_modulo_2_32},
        {"bad settings refused", test_bad_settings_refused},
        {"the round program's words and sum are the C functions' bits", test_program_matches_the_c_functions},
        {"fedc_round_aggregate: the secure weighted mean", test_round_weighted_mean},
        {"fedc_round_aggregate: the secure DP sum", test_round_dp_mean},
        {"deployed, a client sends up only the words", test_deployed_clients_send_words},
        {"fedc train --secure-sum: 1 and 2 threads agree", test_train_threads_agree},
        {"fedc train --secure-sum: a cohort that could wrap is refused", test_train_refuses_a_cohort_that_could_wrap},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
