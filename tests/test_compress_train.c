/* Compression in the round and in fedc train (fedc/aggregate.h's compress_bits and
 * compress_rotate, src/fl/compress.c, src/fl/aggregators.c):
 *  - the round quantizes before it clips: fedc_round_aggregate with compression and
 *    DP gives, bit for bit, the pieces composed by hand in that order, with each
 *    client's stream its data key plus [0, 0, 0, 2^31], and aggregator/bits;
 *  - --compress parses and refuses bad specs, naming them;
 *  - fedc train on the heart-disease silos: the same bits on 1 and 2 threads and
 *    after a resume; compression, and the rotation, change the model; a resume that
 *    changes --compress is refused; metrics.jsonl has FedJAX's bits; an algorithm
 *    that averages itself refuses it;
 *  - FEMNIST: 8-bit compression, plain and rotated, ends within 3 points of the
 *    uncompressed test accuracy after 10 rounds, and at 1 bit the rotation brings
 *    the test loss nearer the uncompressed one (the real writers of ../shared/data,
 *    else the small set of data_fixtures.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fl_train_case.h"

enum { K = 3 };

static fedc_type placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

/* Clients' updates a f32[3], b f32[2] and their data keys: (seed 9, round 4, c). */
static const float UA[K * 3] = {3, 0, 0.5f, -1, 2, 7, 0.25f, 0.5f, 0.125f}, UB[K * 2] = {4, -2, 0, 1, 1, 1};
static void data_keys(int32_t *keys) {
    for (int c = 0; c < K; c++) {
        fedc_rng_stream s = fedc_rng_stream_make(9, 4, (uint32_t)c, 0);
        keys[4 * c] = (int32_t)s.key.k[0], keys[4 * c + 1] = (int32_t)s.key.k[1];
        keys[4 * c + 2] = (int32_t)s.c2, keys[4 * c + 3] = 0;
    }
}

static fedc_tree *update_inputs(fedc_program *p) {
    fedc_tree *u = fedc_tree_new(p);
    fedc_tree_set(p, u, "a", fedc_input(p, "u/a", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){3}), FEDC_CLIENTS)));
    fedc_tree_set(p, u, "b", fedc_input(p, "u/b", placed(fedc_type_make(FEDC_F32, 1, (int64_t[]){2}), FEDC_CLIENTS)));
    return u;
}

/* Runs p (inputs u/a, u/b, key, maybe w) on K clients: outputs mean/a, mean/b into
 * got (5 floats), aggregator/bits into *bits when there. */
static bool run(const fedc_program *p, float *got, double *bits) {
    int32_t keys[4 * K];
    const float w[K] = {1, 2, 3};
    data_keys(keys);
    fedc_executor *ex = NULL;
    CHECK_OK(fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = K}));
    const float *a = NULL, *b = NULL;
    const double *n = NULL;
    bool ok = ex && !fedc_executor_bind(ex, "u/a", UA) && !fedc_executor_bind(ex, "u/b", UB) &&
              !fedc_executor_bind(ex, "key", keys) &&
              (fedc_program_find_input(p, "w") == FEDC_NONE || !fedc_executor_bind(ex, "w", w)) &&
              !fedc_executor_run(ex) && !fedc_executor_output(ex, "mean/a", (const void **)&a, NULL) &&
              !fedc_executor_output(ex, "mean/b", (const void **)&b, NULL) &&
              (!bits || !fedc_executor_output(ex, "aggregator/bits", (const void **)&n, NULL));
    CHECK_MSG(ok, "%s", fedc_errmsg());
    if (ok) memcpy(got, a, 3 * sizeof *a), memcpy(got + 3, b, 2 * sizeof *b);
    if (ok && bits) *bits = *n;
    fedc_executor_destroy(ex);
    return ok;
}

/* 4 bits (16 levels), clip 1, m = K: the round's mean is the clip of the
 * quantized updates summed over m, as built from the pieces; and 16 levels of 5
 * numbers in 2 tensors are 4 x 5 + 64 x 2 = 148 bits. */
static void test_round_quantizes_then_clips(void) {
    fedc_algorithm alg = {.aggregation = {.clip = 1, .expected_clients = K, .compress_bits = 4}};
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_tree *u = update_inputs(p);
    fedc_round r = {.alg = &alg, .p = p, .server = fedc_tree_new(p)};
    fedc_tree *mean = fedc_round_aggregate(&r, u, fedc_input(p, "w", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS)));
    if (mean) CHECK_OK(fedc_tree_output(p, "mean", mean));
    CHECK_OK(fedc_program_status(p));
    fedc_program *hand;
    CHECK_OK(fedc_program_create(&hand));
    fedc_tree *hu = update_inputs(hand);
    fedc_value key = fedc_input(hand, "key", placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS));
    fedc_value salt = fedc_constant(hand, fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), (int32_t[]){0, 0, 0, INT32_MIN});
    fedc_tree *q = fedc_aggregate_quantize(hand, hu, fedc_add(hand, key, salt), 16);
    fedc_value one = fedc_full(hand, placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS), 1);
    fedc_tree *sum = fedc_tree_sum(hand, fedc_aggregate_clip(hand, q, fedc_aggregate_norm(hand, q), one));
    fedc_value m = fedc_full(hand, placed(fedc_type_scalar(FEDC_F32), FEDC_SERVER), K);
    fedc_program_output(hand, "mean/a", fedc_div(hand, fedc_tree_get(hand, sum, "a"), m));
    fedc_program_output(hand, "mean/b", fedc_div(hand, fedc_tree_get(hand, sum, "b"), m));
    CHECK_OK(fedc_program_status(hand));
    float got[5], want[5], plain[5];
    double bits = 0;
    if (run(p, got, &bits) && run(hand, want, NULL)) {
        CHECK(!memcmp(got, want, sizeof got));
        CHECK_NEAR(bits, 148, 0);
    }
    fedc_program_destroy(p);
    fedc_program_destroy(hand);
    /* without compression the same round gives other numbers: the quantizer ran */
    alg.aggregation.compress_bits = 0;
    CHECK_OK(fedc_program_create(&p));
    r = (fedc_round){.alg = &alg, .p = p, .server = fedc_tree_new(p)};
    mean = fedc_round_aggregate(&r, update_inputs(p), fedc_input(p, "w", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS)));
    if (mean) CHECK_OK(fedc_tree_output(p, "mean", mean));
    fedc_input(p, "key", placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS));
    if (run(p, plain, NULL)) CHECK(memcmp(plain, got, sizeof got) != 0);
    fedc_program_destroy(p);
}

static void test_parse_compress(void) {
    fedc_aggregation a = {0};
    CHECK_OK(fedc_aggregation_parse_compress("uniform:8", &a));
    CHECK(a.compress_bits == 8 && !a.compress_rotate);
    CHECK_OK(fedc_aggregation_parse_compress("uniform:24,rotate", &a));
    CHECK(a.compress_bits == 24 && a.compress_rotate);
    CHECK_ERR(fedc_aggregation_parse_compress("uniform:0", &a), FEDC_EINVAL, "from 1 to 24");
    CHECK_ERR(fedc_aggregation_parse_compress("uniform:40", &a), FEDC_EINVAL, "not '40'");
    CHECK_ERR(fedc_aggregation_parse_compress("uniform:-3", &a), FEDC_EINVAL, "not '-3'");
    CHECK_ERR(fedc_aggregation_parse_compress("uniform:", &a), FEDC_EINVAL, "not ''");
    CHECK_ERR(fedc_aggregation_parse_compress("uniform", &a), FEDC_EINVAL, "needs its bits: uniform:BITS");
    CHECK_ERR(fedc_aggregation_parse_compress("uni:8", &a), FEDC_EINVAL, "unknown method 'uni'");
    CHECK_ERR(fedc_aggregation_parse_compress("foo:8", &a), FEDC_EINVAL, "unknown method 'foo'");
    CHECK_ERR(fedc_aggregation_parse_compress("uniform:8,bogus", &a), FEDC_EINVAL, "unknown setting 'bogus'");
    CHECK_ERR(fedc_aggregation_parse_compress("uniform:8,", &a), FEDC_EINVAL, "unknown setting ''");
    CHECK(a.compress_bits == 24 && a.compress_rotate); /* unchanged by the refusals */
    CHECK_OK(fedc_aggregation_parse_compress("off", &a));
    CHECK(a.compress_bits == 0 && !a.compress_rotate);
    CHECK_ERR(fedc_aggregation_check(&(fedc_aggregation){.compress_bits = 25}), FEDC_EINVAL, "from 1 to 24");
    CHECK_ERR(fedc_aggregation_check(&(fedc_aggregation){.compress_rotate = true}), FEDC_EINVAL, "set its bits");
}

/* ------------------------------------------------------------ fedc train -- */

/* The heart job in dir (kept: fedc_test_tmp's buffers rotate) with --compress spec. */
static fedc_train_config compress_job(const char *dir, const char *spec) {
    static char dirs[8][512];
    static int next;
    fedc_train_config c = heart_job(NULL, dir);
    c.out_dir = strcpy(dirs[next++ % 8], c.out_dir);
    CHECK_OK(fedc_aggregation_parse_compress(spec, &c.algorithm.aggregation));
    return c;
}

/* "compress_bits": N of the last line of dir/metrics.jsonl; NAN if none. */
static double last_bits(const char *dir) {
    char path[700], line[4096], last[4096] = "";
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) memcpy(last, line, sizeof last);
    if (f) fclose(f);
    const char *b = strstr(last, "\"compress_bits\": ");
    return b ? strtod(b + strlen("\"compress_bits\": "), NULL) : NAN;
}

static void test_train_bitwise_threads_resume(void) {
    if (!have_data(HEART_DATA)) return;
    fedc_train_result r;
    fedc_train_config one = compress_job("one", "uniform:8,rotate"), two = compress_job("two", "uniform:8,rotate");
    one.checkpoint_every = two.checkpoint_every = 6;
    two.threads = 2;
    CHECK_OK(fedc_train(&one, &r));
    CHECK_OK(fedc_train(&two, &r));
    CHECK_MSG(same_checkpoints(one.out_dir, two.out_dir), "1 and 2 threads differ");
    CHECK_MSG(resume_matches(compress_job("resume", "uniform:8,rotate"), "resume"), "the resumed run differs");
    /* the heart model: 13 x 2 weights and 2 biases in 2 tensors, 8 bits each */
    CHECK_NEAR(last_bits(one.out_dir), 8 * 28 + 64 * 2, 0);
    /* compression changes the model, and the rotation changes the compression */
    const char *specs[2] = {"off", "uniform:8"};
    for (int i = 0; i < 2; i++) {
        fedc_train_config other = compress_job(i ? "plain8" : "off", specs[i]);
        other.checkpoint_every = 6;
        CHECK_OK(fedc_train(&other, &r));
        CHECK_MSG(!same_checkpoints(one.out_dir, other.out_dir), "--compress uniform:8,rotate trains as %s", specs[i]);
    }
    /* a resume that changes the compression is refused, naming both */
    fedc_train_config changed = compress_job("one", "uniform:4");
    changed.resume = true, changed.rounds = 8, changed.checkpoint_every = 6, changed.out_dir = one.out_dir;
    CHECK_ERR(fedc_train(&changed, &r), FEDC_EINVAL, "--compress uniform:4 (the checkpoint's: uniform:8,rotate)");
}

/* With DP (clip, noise, zeroing) and compression: threads agree bitwise. */
static void test_train_with_dp(void) {
    if (!have_data(HEART_DATA)) return;
    fedc_train_result r;
    fedc_train_config a = compress_job("dp1", "uniform:6,rotate"), b = compress_job("dp2", "uniform:6,rotate");
    for (fedc_train_config *c = &a; c; c = c == &a ? &b : NULL) {
        c->algorithm.aggregation.clip = 0.5, c->algorithm.aggregation.noise_multiplier = 0.3;
        c->algorithm.aggregation.zero_norm = 100, c->checkpoint_every = 6;
    }
    b.threads = 2;
    CHECK_OK(fedc_train(&a, &r));
    CHECK(isfinite(r.test_loss));
    CHECK_OK(fedc_train(&b, &r));
    CHECK_MSG(same_checkpoints(a.out_dir, b.out_dir), "DP with compression: 1 and 2 threads differ");
}

static void test_train_refuses_self_averaging(void) {
    if (!have_data(HEART_DATA)) return;
    fedc_train_config c = compress_job("mime", "uniform:8");
    c.algorithm.def = &fedc_algorithm_mime;
    fedc_train_result r;
    CHECK_ERR(fedc_train(&c, &r), FEDC_EINVAL, "mime aggregates its clients' updates itself");
}

/* FEMNIST's logistic model, 10 rounds of 10 writers at client rate 0.5: 8 bits,
 * plain and rotated, end within 3 points of the uncompressed test accuracy and are
 * not the same run (the quantizer changed the updates); at 1 bit the rotation's
 * point (Suresh et al. 2017) shows: the rotated run's test loss is nearer the
 * uncompressed one than the plain run's. */
static void test_femnist_accuracy(void) {
    char train[512], test[512];
    fedc_train_config c;
    if (!femnist_job(NULL, "femnist", train, test, &c)) return;
    c.rounds = 10;
    c.algorithm.client_opt = fedc_optimizer_defaults(FEDC_OPT_SGD, 0.5);
    const char *specs[5] = {"off", "uniform:8", "uniform:8,rotate", "uniform:1", "uniform:1,rotate"};
    fedc_train_result r[5];
    for (int i = 0; i < 5; i++) {
        CHECK_OK(fedc_aggregation_parse_compress(specs[i], &c.algorithm.aggregation));
        CHECK_OK(fedc_train(&c, &r[i]));
    }
    for (int i = 1; i < 3; i++) {
        CHECK_MSG(fabs(r[i].test_accuracy - r[0].test_accuracy) <= 0.03, "%s: accuracy %.2f%%, uncompressed %.2f%%",
                  specs[i], 100 * r[i].test_accuracy, 100 * r[0].test_accuracy);
        CHECK(r[i].train_loss != r[0].train_loss);
    }
    CHECK_MSG(r[0].test_accuracy > 0.5, "uncompressed accuracy %.2f%%: the job did not learn", 100 * r[0].test_accuracy);
    CHECK_MSG(fabs(r[4].test_loss - r[0].test_loss) < fabs(r[3].test_loss - r[0].test_loss),
              "1 bit: test loss %.4f rotated, %.4f plain, %.4f uncompressed", r[4].test_loss, r[3].test_loss,
              r[0].test_loss);
}

int main(int argc, char **argv) {
    if (!fedc_test_tmpdir("compress-train")) return 1;
    static const fedc_test tests[] = {
        {"round: quantize, then clip (the pieces' bits)", test_round_quantizes_then_clips},
        {"--compress specs parsed and refused", test_parse_compress},
        {"fedc train: threads, resume, changes, metrics", test_train_bitwise_threads_resume},
        {"fedc train: with DP, threads agree", test_train_with_dp},
        {"fedc train: self-averaging algorithms refuse", test_train_refuses_self_averaging},
        {"fedc train: FEMNIST 8-bit accuracy near uncompressed", test_femnist_accuracy},
    };
    int rc = fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
    fedc_test_tmpdir_remove();
    return rc;
}
