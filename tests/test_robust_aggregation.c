/* Byzantine-robust aggregators (fedc/robust.h, src/kernels/robust*.c): Flower's test
 * values (the flwr/server/strategy tests) and a Bulyan case with f = 1, n = 7 that
 * Flower's aggregate_bulyan gives and the hand computation below agrees with;
 * hand-computed geometric median and centered clipping steps; the refusals, with
 * their numbers; the same result for the clients in any order and on any number
 * of threads; the spec parser. */
#include <math.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "fedc/attack.h"
#include "fedc/robust.h"
#include "harness.h"

enum { D4 = 4, MAXN = 64 };

/* n updates of d numbers each, x[i][k] = v[i] (a constant vector per client). */
typedef struct cohort {
    int n;
    int64_t d;
    float *data;
    const float *rows[MAXN];
} cohort;

static cohort make(int n, int64_t d) {
    cohort c = {.n = n, .d = d, .data = calloc((size_t)n * (size_t)d, sizeof(float))};
    for (int i = 0; i < n; i++) c.rows[i] = c.data + (size_t)i * (size_t)d;
    return c;
}

static cohort constant(int n, const double *v) {
    cohort c = make(n, D4);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < D4; k++) c.data[i * D4 + k] = (float)v[i];
    return c;
}

/* 2-D points, one a client. */
static cohort points(int n, const double (*p)[2]) {
    cohort c = make(n, 2);
    for (int i = 0; i < n; i++) c.data[2 * i] = (float)p[i][0], c.data[2 * i + 1] = (float)p[i][1];
    return c;
}

static fedc_robust spec(const char *s) {
    fedc_robust r = {0};
    CHECK_OK(fedc_robust_parse(s, &r));
    return r;
}

/* Aggregates c by `s` into out (c.d floats); kept and *nkept as the API gives them. */
static fedc_status run(const char *s, const cohort *c, const double *w, float *out, int *kept, int *nkept) {
    fedc_robust r = spec(s);
    return fedc_robust_aggregate_vectors(&r, c->rows, c->n, c->d, w, NULL, out, kept, nkept, NULL);
}

static void check_all(const float *out, int64_t d, float want) {
    for (int64_t k = 0; k < d; k++) CHECK_MSG(out[k] == want, "coordinate %lld: %.9g, want %.9g", (long long)k, out[k], want);
}

/* ------------------------------------------------------- Flower's values -- */

/* fedmedian_test.py: 0.2, 1.0, 0.5 → 0.5. */
static void test_flower_median(void) {
    cohort c = constant(3, (double[]){0.2, 1.0, 0.5});
    float out[D4];
    CHECK_OK(run("median", &c, NULL, out, NULL, NULL));
    check_all(out, D4, 0.5f);
    free(c.data);
}

/* The 0.5/1/2/100 with beta 0.25 (cut 1 from each end) → 1.5, and
 * fedtrimmedavg_test.py's four vectors → 0.5 in every coordinate. */
static void test_flower_trimmed_mean(void) {
    cohort c = constant(4, (double[]){0.5, 1, 2, 100});
    float out[D4];
    CHECK_OK(run("trimmed_mean:beta=0.25", &c, NULL, out, NULL, NULL));
    check_all(out, D4, 1.5f);
    free(c.data);
    const float rows[4][4] = {{0.5f, 0.5f, 0.5f, 0.5f}, {1.0f, 0.2f, 0.5f, 1.0f}, {0.2f, 0.5f, 1.0f, 0.2f}, {0.5f, 1.0f, 0.2f, 0.5f}};
    const float *x[4] = {rows[0], rows[1], rows[2], rows[3]};
    fedc_robust r = spec("trimmed_mean:beta=0.25");
    double w[4] = {1, 5, 2, 9}; /* Flower's example counts: a trimmed mean ignores them */
    CHECK_OK(fedc_robust_aggregate_vectors(&r, x, 4, 4, w, NULL, out, NULL, NULL, NULL));
    check_all(out, D4, 0.5f);
}

/* krum_test.py: 0.2, 0.7, 1.0 → 0.7. Flower runs it with f = 1, which with 3
 * clients leaves no client to outvote (n − f − 2 = 0, which Flower clamps to 1):
 * fedc refuses it, and f = 0 is Flower's computation (one nearest each). Clients
 * 1 and 2 tie (each one's nearest is the other): the lower index wins, as
 * Flower's argmin has it. */
static void test_flower_krum(void) {
    cohort c = constant(3, (double[]){0.2, 0.7, 1.0});
    float out[D4];
    int kept[3], nkept = -1;
    CHECK_OK(run("krum:f=0", &c, NULL, out, kept, &nkept));
    check_all(out, D4, 0.7f);
    CHECK_EQ_INT(nkept, 1);
    CHECK_EQ_INT(kept[0], 1);
    fedc_robust r = spec("krum:f=1");
    CHECK_ERR(fedc_robust_aggregate_vectors(&r, c.rows, 3, D4, NULL, NULL, out, NULL, NULL, NULL), FEDC_EINVAL,
              "krum with f = 1 needs more than 2f + 2 = 4 clients; the round has 3");
    free(c.data);
}

/* multikrum_test.py: 0.2, 0.5, 1.0, keep 2 → 0.35 (the mean of the first two; as
 * for Krum, f = 0 is Flower's f = 1 on three clients). */
static void test_flower_multikrum(void) {
    cohort c = constant(3, (double[]){0.2, 0.5, 1.0});
    float out[D4];
    int kept[3], nkept = -1;
    double w[3] = {5, 5, 5};
    CHECK_OK(run("multikrum:f=0,m=2", &c, w, out, kept, &nkept));
    check_all(out, D4, 0.35f);
    CHECK_EQ_INT(nkept, 2);
    CHECK(kept[0] == 0 && kept[1] == 1);
    fedc_robust r = spec("multikrum:f=1,m=2");
    CHECK_ERR(fedc_robust_aggregate_vectors(&r, c.rows, 3, D4, w, NULL, out, NULL, NULL, NULL), FEDC_EINVAL, "2f + 2 = 4");
    free(c.data);
}

/* bulyan_test.py: f = 0 on six clients keeps them all: the plain mean. */
static void test_flower_bulyan(void) {
    cohort c = constant(6, (double[]){0.2, 0.5, 0.7, 12.0, 0.1, 0.1});
    float out[D4];
    int kept[6], nkept = -1;
    CHECK_OK(run("bulyan:f=0", &c, NULL, out, kept, &nkept));
    double sum = 0;
    for (int i = 0; i < 6; i++) sum += c.data[i * D4];
    for (int k = 0; k < D4; k++) CHECK_NEAR(out[k], sum / 6, 1e-6);
    CHECK_EQ_INT(nkept, 6);
    free(c.data);
}

/* Seven clients, two of them far off; f = 1. Krum (4 nearest each) picks client
 * 0; Multi-Krum keeps 0, 1 and 3; Bulyan selects θ = 5 by repeated Krum (the
 * honest five), and each coordinate is the mean of the β = 3 selected values
 * nearest their median: (1.0 + 0.95 + 1.1) / 3 and (2.0 + 2.05 + 1.9) / 3. Flower's
 * aggregate_bulyan gives 1.0166668 and 1.9833335 (float32). */
static const double seven[7][2] = {{1.0, 2.0}, {1.1, 1.9}, {0.7, 2.4}, {1.3, 2.05}, {0.95, 1.5}, {10.0, -10.0}, {1.05, 30.0}};

static void test_seven_clients_f1(void) {
    cohort c = points(7, seven);
    float out[2];
    int kept[7], nkept = -1;
    CHECK_OK(run("krum:f=1", &c, NULL, out, kept, &nkept));
    CHECK(out[0] == 1.0f && out[1] == 2.0f && nkept == 1 && kept[0] == 0);
    CHECK_OK(run("multikrum:f=1,m=3", &c, NULL, out, kept, &nkept));
    CHECK(nkept == 3 && kept[0] == 0 && kept[1] == 1 && kept[2] == 3);
    CHECK_NEAR(out[0], ((double)1.0f + 1.1f + 1.3f) / 3, 1e-7);
    CHECK_NEAR(out[1], ((double)2.0f + 1.9f + 2.05f) / 3, 1e-7);
    CHECK_OK(run("bulyan:f=1", &c, NULL, out, kept, &nkept));
    CHECK_EQ_INT(nkept, 5);
    for (int i = 0; i < 5 && nkept == 5; i++) CHECK_EQ_INT(kept[i], i);
    CHECK(out[0] == (float)(((double)1.0f + 0.95f + 1.1f) / 3));
    CHECK(out[1] == (float)(((double)2.0f + 2.05f + 1.9f) / 3));
    CHECK_NEAR(out[0], 1.0166668, 2e-7); /* Flower's */
    CHECK_NEAR(out[1], 1.9833335, 2e-7);
    /* the mean is where the two attackers put it: (10 + 1.05 + ...) / 7 */
    CHECK_OK(run("mean", &c, NULL, out, NULL, NULL));
    CHECK(out[0] > 2.2f && out[1] > 4.0f);
    fedc_robust r = spec("bulyan:f=1");
    CHECK_ERR(fedc_robust_aggregate_vectors(&r, c.rows, 6, 2, NULL, NULL, out, NULL, NULL, NULL), FEDC_EINVAL,
              "bulyan with f = 1 needs at least 4f + 3 = 7 clients; the round has 6");
    free(c.data);
}

/* ------------------------------------------------------- hand-computed -- */

/* An even count's median is the mean of the middle two; a trimmed mean with
 * beta 0.1 of ten cuts one from each end. */
static void test_median_even_and_trimmed_ten(void) {
    cohort c = constant(4, (double[]){3, -1, 10, 2});
    float out[D4];
    CHECK_OK(run("median", &c, NULL, out, NULL, NULL));
    check_all(out, D4, 2.5f);
    free(c.data);
    c = constant(10, (double[]){-50, 1, 2, 3, 4, 5, 6, 7, 8, 1e6});
    CHECK_OK(run("trimmed_mean:beta=0.1", &c, NULL, out, NULL, NULL));
    check_all(out, D4, 4.5f);
    CHECK_OK(run("trimmed_mean:beta=0.19", &c, NULL, out, NULL, NULL)); /* floor(1.9) = 1 */
    check_all(out, D4, 4.5f);
    CHECK_OK(run("trimmed_mean:beta=0.2", &c, NULL, out, NULL, NULL)); /* 2 from each end: 2..7 */
    check_all(out, D4, 4.5f);
    CHECK_OK(run("trimmed_mean:beta=0", &c, NULL, out, NULL, NULL));
    check_all(out, D4, (float)((-50 + 36 + 1e6) / 10));
    free(c.data);
}

/* Geometric median of 0, 1, 10 (1-D): its first Weiszfeld step from the mean
 * 11/3 is Σ (x/d) / Σ (1/d) with d the distances; many steps reach the median,
 * 1. Weights 1, 1, 5 put it at 10 (5 > 1 + 1). */
static void test_geomed(void) {
    cohort c = constant(3, (double[]){0, 1, 10});
    fedc_robust r = spec("geomed:iterations=1,tolerance=0");
    float out[D4];
    CHECK_OK(fedc_robust_aggregate_vectors(&r, c.rows, 3, D4, NULL, NULL, out, NULL, NULL, NULL));
    double v = 11.0 / 3, d0 = v * 2, d1 = (v - 1) * 2, d2 = (10 - v) * 2; /* 4 coordinates: ‖·‖ = 2 |·| */
    double step = (0 / d0 + 1 / d1 + 10 / d2) / (1 / d0 + 1 / d1 + 1 / d2);
    for (int k = 0; k < D4; k++) CHECK_NEAR(out[k], step, 1e-6);
    r = spec("geomed:iterations=500,tolerance=0");
    CHECK_OK(fedc_robust_aggregate_vectors(&r, c.rows, 3, D4, NULL, NULL, out, NULL, NULL, NULL));
    for (int k = 0; k < D4; k++) CHECK_NEAR(out[k], 1, 1e-4);
    CHECK_OK(fedc_robust_aggregate_vectors(&r, c.rows, 3, D4, (double[]){1, 1, 5}, NULL, out, NULL, NULL, NULL));
    for (int k = 0; k < D4; k++) CHECK_NEAR(out[k], 10, 1e-4);
    /* the default stops early: the honest cluster of `seven` holds it */
    cohort p = points(7, seven);
    CHECK_OK(run("geomed", &p, NULL, out, NULL, NULL));
    CHECK(fabs(out[0] - 1.0) < 0.3 && fabs(out[1] - 2.0) < 0.6);
    free(c.data), free(p.data);
}

/* Centered clipping from 0 with tau 1: (3, 4) (distance 5) is clipped to
 * (0.6, 0.8), (0.3, 0.4) (0.5) is kept: one step gives their mean (0.45, 0.6).
 * From the centre (1, 1) with two steps, each step by the formula. */
static void test_cclip(void) {
    cohort c = points(2, (const double[][2]){{3, 4}, {0.3, 0.4}});
    fedc_robust r = spec("cclip:tau=1");
    float out[2];
    CHECK_OK(fedc_robust_aggregate_vectors(&r, c.rows, 2, 2, NULL, NULL, out, NULL, NULL, NULL));
    CHECK_NEAR(out[0], 0.45, 1e-7);
    CHECK_NEAR(out[1], 0.6, 1e-7);
    r = spec("cclip:tau=0.5,iterations=2");
    float center[2] = {1, 1};
    CHECK_OK(fedc_robust_aggregate_vectors(&r, c.rows, 2, 2, NULL, center, out, NULL, NULL, NULL));
    double v[2] = {1, 1};
    for (int it = 0; it < 2; it++) {
        double step[2] = {0, 0};
        for (int i = 0; i < 2; i++) {
            double dx = c.data[2 * i] - v[0], dy = c.data[2 * i + 1] - v[1], dist = sqrt(dx * dx + dy * dy);
            double s = dist > 0.5 ? 0.5 / dist : 1;
            step[0] += s * dx / 2, step[1] += s * dy / 2;
        }
        v[0] += step[0], v[1] += step[1];
    }
    CHECK_NEAR(out[0], v[0], 1e-6);
    CHECK_NEAR(out[1], v[1], 1e-6);
    free(c.data);
}

/* ------------------------------------------------------ invalid settings -- */

static void test_spec_errors(void) {
    fedc_robust r = fedc_robust_defaults(FEDC_ROBUST_MEDIAN);
    CHECK_ERR(fedc_robust_parse("medain", &r), FEDC_EINVAL, "unknown aggregator 'medain'");
    CHECK_EQ_INT(r.kind, FEDC_ROBUST_MEDIAN); /* unchanged */
    CHECK_ERR(fedc_robust_parse("median:f=1", &r), FEDC_EINVAL, "median has no setting 'f' (it takes memory=MB)");
    CHECK_OK(fedc_robust_parse("median:memory=4", &r)); /* the budget alone */
    CHECK(r.kind == FEDC_ROBUST_MEDIAN && r.memory_mb == 4);
    CHECK_OK(fedc_robust_parse("mean:memory=4", &r)); /* the store's, where ALIE and IPM are made */
    CHECK(r.kind == FEDC_ROBUST_MEAN && r.memory_mb == 4);
    CHECK_ERR(fedc_robust_parse("mean:beta=0.1", &r), FEDC_EINVAL, "mean has no setting 'beta' (it takes memory=MB)");
    CHECK_ERR(fedc_robust_parse("krum:g=1", &r), FEDC_EINVAL, "no setting 'g' (it takes f=F)");
    CHECK_ERR(fedc_robust_parse("krum:f=x", &r), FEDC_EINVAL, "f needs an integer of at most 1e9 in size, not 'x'");
    CHECK_ERR(fedc_robust_parse("krum:f", &r), FEDC_EINVAL, "not name=value");
    CHECK_ERR(fedc_robust_parse("krum:f=-1", &r), FEDC_EINVAL, "f -1");
    CHECK_ERR(fedc_robust_parse("trimmed_mean:beta=0.5", &r), FEDC_EINVAL, "beta 0.5 must be in [0, 0.5)");
    CHECK_ERR(fedc_robust_parse("cclip:tau=0", &r), FEDC_EINVAL, "tau 0 must be > 0");
    CHECK_ERR(fedc_robust_parse("geomed:nu=0", &r), FEDC_EINVAL, "nu 0 must be > 0");
    CHECK_ERR(fedc_robust_parse("multikrum:m=-2", &r), FEDC_EINVAL, "m -2");
    r = spec("multikrum:f=2,m=5");
    CHECK(r.kind == FEDC_ROBUST_MULTIKRUM && r.f == 2 && r.m == 5);
    r = spec("cclip:tau=2.5,iterations=3");
    CHECK(r.kind == FEDC_ROBUST_CCLIP && r.tau == 2.5 && r.iterations == 3);
    r = spec("trimmed_mean");
    CHECK(r.kind == FEDC_ROBUST_TRIMMED_MEAN && r.beta == 0.1);
    CHECK_EQ_INT(spec("geomed").iterations, 3);
    CHECK(!strcmp(fedc_robust_name(FEDC_ROBUST_BULYAN), "bulyan"));
    /* format gives a spec that parses back to the same settings */
    const char *specs[] = {"mean", "median", "trimmed_mean:beta=0.1", "krum:f=2", "multikrum:f=2,m=5", "bulyan:f=1",
                           "geomed:nu=1e-06,iterations=3,tolerance=1e-06", "cclip:tau=0.3,iterations=2"};
    for (int i = 0; i < FEDC_COUNT_OF(specs); i++) {
        char text[160];
        fedc_robust a = spec(specs[i]), b = {0};
        fedc_robust_format(&a, text, sizeof text);
        CHECK_MSG(!strcmp(text, specs[i]), "format gives '%s' for '%s'", text, specs[i]);
        CHECK_OK(fedc_robust_parse(text, &b));
        CHECK(a.kind == b.kind && a.beta == b.beta && a.f == b.f && a.m == b.m && a.nu == b.nu &&
              a.iterations == b.iterations && a.tolerance == b.tolerance && a.tau == b.tau);
    }
}

static void test_cohort_errors(void) {
    cohort c = constant(5, (double[]){1, 2, 3, 4, 5});
    float out[D4];
    fedc_robust r = spec("multikrum:f=1,m=6");
    CHECK_ERR(fedc_robust_aggregate_vectors(&r, c.rows, 5, D4, NULL, NULL, out, NULL, NULL, NULL), FEDC_EINVAL,
              "multikrum: m = 6 exceeds the round's 5 clients");
    r = spec("krum:f=2");
    CHECK_ERR(fedc_robust_aggregate_vectors(&r, c.rows, 5, D4, NULL, NULL, out, NULL, NULL, NULL), FEDC_EINVAL,
              "more than 2f + 2 = 6 clients; the round has 5");
    r = spec("bulyan:f=868200169"); /* 4f + 3 past INT_MAX: an error, not an overflow (a fuzz finding) */
    CHECK_ERR(fedc_robust_check(&r, 5), FEDC_EINVAL, "4f + 3 = 3472800679 clients; the round has 5");
    CHECK_ERR(fedc_robust_parse("krum:f=2147483647", &r), FEDC_EINVAL, "f needs an integer of at most 1e9 in size");
    r = spec("median");
    CHECK_ERR(fedc_robust_aggregate_vectors(&r, c.rows, 0, D4, NULL, NULL, out, NULL, NULL, NULL), FEDC_EINVAL,
              "no clients");
    r = spec("geomed");
    CHECK_ERR(fedc_robust_aggregate_vectors(&r, c.rows, 5, D4, (double[]){1, 1, -1, 1, 1}, NULL, out, NULL, NULL, NULL),
              FEDC_EINVAL, "client 2's weight -1");
    CHECK_ERR(fedc_robust_aggregate_vectors(&r, c.rows, 5, D4, (double[]){0, 0, 0, 0, 0}, NULL, out, NULL, NULL, NULL),
              FEDC_EINVAL, "sum to 0");
    free(c.data);
}

/* ------------------------------------------------------------ invariance -- */

static const char *const every[] = {"mean", "median", "trimmed_mean:beta=0.2", "krum:f=2", "multikrum:f=2,m=4",
                                    "bulyan:f=3", "geomed", "cclip:tau=0.5,iterations=2"};

/* n clients of d random numbers: honest in [-1, 1], the last two shifted by 5 and
 * 9 (apart from each other too, so neither is the other's alibi). */
static cohort random_cohort(int n, int64_t d, uint64_t seed) {
    fedc_test_seed(seed);
    cohort c = make(n, d);
    for (int i = 0; i < n; i++)
        for (int64_t k = 0; k < d; k++) c.data[(size_t)i * d + k] = (float)fedc_test_uniform(-1, 1) + (i == n - 2 ? 5.0f : i == n - 1 ? 9.0f : 0);
    return c;
}

/* The clients reversed: the coordinate-wise and selecting aggregators give the
 * same bits (their sums follow sorted values, not client order) and the kept
 * clients mapped; the sums over clients in order (mean, geomed, cclip) agree to
 * rounding. Only ties depend on the order (they go to the lower index); Bulyan
 * with f <= 2 meets one by construction: its last Krum scores the 2f + 1 left by
 * max(1, f - 1) = 1 nearest, and two mutual nearest clients score the same. So
 * f = 3 here, on 15 clients. */
static void test_permutation(void) {
    enum { N = 15, D = 300 };
    cohort c = random_cohort(N, D, 11);
    const float *rev[N];
    double w[N], wrev[N];
    for (int i = 0; i < N; i++) rev[i] = c.rows[N - 1 - i], w[i] = 1 + i % 3, wrev[N - 1 - i] = w[i];
    for (int a = 0; a < FEDC_COUNT_OF(every); a++) {
        fedc_robust r = spec(every[a]);
        float x[D], y[D];
        int kx[N], ky[N], nx = 0, ny = 0;
        CHECK_OK(fedc_robust_aggregate_vectors(&r, c.rows, N, D, w, NULL, x, kx, &nx, NULL));
        CHECK_OK(fedc_robust_aggregate_vectors(&r, rev, N, D, wrev, NULL, y, ky, &ny, NULL));
        bool exact = r.kind != FEDC_ROBUST_MEAN && r.kind != FEDC_ROBUST_GEOMED && r.kind != FEDC_ROBUST_CCLIP &&
                     r.kind != FEDC_ROBUST_MULTIKRUM;
        for (int k = 0; k < D; k++)
            if (exact) CHECK_MSG(x[k] == y[k], "%s: coordinate %d: %.9g vs %.9g", every[a], k, x[k], y[k]);
            else CHECK_NEAR(x[k], y[k], 1e-5);
        CHECK_EQ_INT(nx, ny);
        for (int i = 0; i < nx && nx == ny; i++) CHECK_EQ_INT(kx[i], N - 1 - ky[nx - 1 - i]);
        for (int i = 0; i < nx; i++) CHECK_MSG(kx[i] < N - 2, "%s kept attacker %d", every[a], kx[i]);
    }
    free(c.data);
}

/* Three threads give the bits of one, for d over several blocks. */
static void test_threads(void) {
    enum { N = 15, D = 10000 };
    cohort c = random_cohort(N, D, 5);
    fedc_pool *pool = NULL;
    CHECK_OK(fedc_pool_create(&pool, 3));
    float *x = malloc(D * sizeof *x), *y = malloc(D * sizeof *y);
    for (int a = 0; a < FEDC_COUNT_OF(every); a++) {
        fedc_robust r = spec(every[a]);
        int kx[N], ky[N], nx = 0, ny = 0;
        CHECK_OK(fedc_robust_aggregate_vectors(&r, c.rows, N, D, NULL, NULL, x, kx, &nx, NULL));
        CHECK_OK(fedc_robust_aggregate_vectors(&r, c.rows, N, D, NULL, NULL, y, ky, &ny, pool));
        CHECK_MSG(!memcmp(x, y, D * sizeof *x), "%s: 1 and 3 threads differ", every[a]);
        CHECK(nx == ny && !memcmp(kx, ky, (size_t)nx * sizeof *kx));
    }
    free(x), free(y), free(c.data);
    fedc_pool_destroy(pool);
}

/* ------------------------------------------------------ the program op -- */

static fedc_type placed(fedc_type t, fedc_placement pl) {
    t.placement = pl;
    return t;
}

/* agg = robust_aggregate(2 x, w) for x f32[d]@clients, w f32[]@clients: 2 x by a
 * map body (mapped) or by an op on the materialised @clients value. */
static fedc_program *op_program(int mapped, int64_t d, const fedc_robust *r) {
    fedc_program *p, *body;
    CHECK_OK(fedc_program_create(&p));
    fedc_type vec = fedc_type_make(FEDC_F32, 1, (int64_t[]){d});
    fedc_value x = fedc_input(p, "x", placed(vec, FEDC_CLIENTS));
    fedc_value wv = fedc_input(p, "w", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS));
    if (mapped) { /* the body doubles each client's x */
        CHECK_OK(fedc_program_create(&body));
        fedc_value bx = fedc_input(body, "x", vec);
        fedc_program_output(body, "y", fedc_add(body, bx, bx));
        fedc_value doubled = FEDC_NONE;
        CHECK_OK(fedc_map(p, body, &x, 1, &doubled));
        x = doubled;
        fedc_program_destroy(body);
    } else {
        x = fedc_add(p, x, x);
    }
    fedc_program_output(p, "agg", fedc_robust_aggregate(p, x, wv, r));
    CHECK_OK(fedc_program_status(p));
    return p;
}

/* robust_aggregate(2 x, w) with x_i computed by a map body (the cohort runner's
 * streamed path) and without one (a materialised @clients value): the executor
 * gives fedc_robust_aggregate_vectors' bits, on 1 thread with every update in
 * memory and on 3 with all but 2 spilled to the file; an absent client (with the
 * last budget) is left out. */
static void test_program_op(void) {
    enum { N = 15, D = 100000 }; /* 400 kB a client: a 1 MiB budget holds 2, the file the rest */
    cohort c = random_cohort(N, D, 21);
    float w[N];
    double wd[N];
    for (int i = 0; i < N; i++) w[i] = (float)(1 + i % 4), wd[i] = w[i];
    for (int a = 0; a < FEDC_COUNT_OF(every); a++) {
        fedc_robust r = spec(every[a]);
        for (int mapped = 0; mapped < 2; mapped++) {
            fedc_program *p = op_program(mapped, D, &r);
            float *twice = malloc((size_t)N * D * sizeof *twice), *want = malloc(D * sizeof *want);
            const float *rows[N];
            for (int i = 0; i < N; i++) rows[i] = twice + (size_t)i * D;
            for (size_t k = 0; k < (size_t)N * D; k++) twice[k] = c.data[k] + c.data[k];
            int kept[N], nkept = 0;
            CHECK_OK(fedc_robust_aggregate_vectors(&r, rows, N, D, wd, NULL, want, kept, &nkept, NULL));
            for (int threads = 1; threads <= 3; threads += 2) {
                /* with 3 threads, the values beyond a budget of 1 MiB spill to a file */
                fedc_robust budgeted = r;
                budgeted.memory_mb = threads == 3;
                if (threads == 3) {
                    fedc_program_destroy(p);
                    p = op_program(mapped, D, &budgeted);
                }
                fedc_executor *ex = NULL;
                fedc_exec_options o = {.clients = N, .threads = threads};
                CHECK_OK(fedc_executor_create(&ex, p, &o));
                const float *got = NULL;
                CHECK_OK(fedc_executor_bind(ex, "x", c.data));
                CHECK_OK(fedc_executor_bind(ex, "w", w));
                CHECK_OK(fedc_executor_run(ex));
                CHECK_OK(fedc_executor_output(ex, "agg", (const void **)&got, NULL));
                CHECK_MSG(got && !memcmp(got, want, D * sizeof *want), "%s (%s, %d threads, memory %d MiB): not the "
                          "C function's bits", every[a], mapped ? "map" : "materialised", threads, budgeted.memory_mb);
                int ekept[N], enkept = fedc_executor_robust_kept(ex, ekept, N); /* Krum's choice, as the C function's */
                CHECK_MSG(enkept == nkept && !memcmp(ekept, kept, (size_t)nkept * sizeof *kept), "%s: kept %d clients, "
                          "the C function %d", every[a], enkept, nkept);
                fedc_executor_destroy(ex);
            }
            /* client 3 absent: the aggregate of the other 14 */
            uint8_t absent[N] = {[3] = 1};
            const float *rest[N - 1];
            double wrest[N - 1];
            for (int i = 0, j = 0; i < N; i++)
                if (i != 3) rest[j] = rows[i], wrest[j++] = wd[i];
            bool fits = r.kind != FEDC_ROBUST_BULYAN; /* 14 < 4f + 3 = 15: refused, when run as alone */
            if (fits) CHECK_OK(fedc_robust_aggregate_vectors(&r, rest, N - 1, D, wrest, NULL, want, NULL, NULL, NULL));
            fedc_executor *ex = NULL;
            fedc_exec_options o = {.clients = N, .threads = 2};
            const float *got = NULL;
            CHECK_OK(fedc_executor_create(&ex, p, &o));
            CHECK_OK(fedc_executor_set_absent(ex, absent));
            CHECK_OK(fedc_executor_bind(ex, "x", c.data));
            CHECK_OK(fedc_executor_bind(ex, "w", w));
            if (fits) {
                CHECK_OK(fedc_executor_run(ex));
                CHECK_OK(fedc_executor_output(ex, "agg", (const void **)&got, NULL));
                CHECK_MSG(got && !memcmp(got, want, D * sizeof *want), "%s (%s): client 3 absent", every[a],
                          mapped ? "map" : "materialised");
            } else {
                CHECK_ERR(fedc_executor_run(ex), FEDC_EINVAL, "4f + 3 = 15 clients; the round has 14");
            }
            fedc_executor_destroy(ex);
            free(twice), free(want);
            fedc_program_destroy(p);
        }
    }
    free(c.data);
}

/* AddressSanitizer holds freed memory back and shadows it: the process's peak
 * says nothing of the store's budget there. */
#if defined(__SANITIZE_ADDRESS__)
#define PEAK_MEANS_NOTHING 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PEAK_MEANS_NOTHING 1
#endif
#endif
#ifndef PEAK_MEANS_NOTHING
#define PEAK_MEANS_NOTHING 0
#endif

static long peak_kb(void) {
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) ? 0 : u.ru_maxrss;
}

/* A cohort of 1000 clients whose updates (100 MB together) a budget of 8 MiB
 * keeps mostly in the file: the process's peak memory grows by far less than
 * the updates, and the median is the bits of a run that holds them all. Each
 * client's update, s_i (base + 1), is made by its map body from its s_i. */
static void test_thousand_clients_bounded(void) {
    enum { N = 1000, D = 25000 };
    float *base = malloc(D * sizeof *base), s_i[N], w[N], *got = malloc(D * sizeof *got);
    fedc_test_seed(3);
    for (int k = 0; k < D; k++) base[k] = (float)fedc_test_uniform(-1, 1);
    for (int i = 0; i < N; i++) s_i[i] = (float)fedc_test_uniform(-2, 2), w[i] = 1;
    for (int budget = 8; budget >= 0; budget -= 8) { /* 8 MiB, then none: all in memory */
        fedc_program *p, *body;
        CHECK_OK(fedc_program_create(&p));
        CHECK_OK(fedc_program_create(&body));
        fedc_type vec = fedc_type_make(FEDC_F32, 1, (int64_t[]){D}), one = fedc_type_scalar(FEDC_F32);
        fedc_value bb = fedc_input(body, "base", vec), bs = fedc_input(body, "s", one);
        fedc_program_output(body, "y", fedc_mul(body, fedc_add(body, bb, fedc_scalar(body, FEDC_F32, 1)), bs));
        fedc_value wv = fedc_input(p, "w", placed(one, FEDC_CLIENTS)); /* before the map: its result streams */
        fedc_value args[2] = {fedc_broadcast(p, fedc_input(p, "base", placed(vec, FEDC_SERVER))),
                              fedc_input(p, "s", placed(one, FEDC_CLIENTS))}, y = FEDC_NONE;
        CHECK_OK(fedc_map(p, body, args, 2, &y));
        fedc_program_destroy(body);
        fedc_robust r = spec("median");
        r.memory_mb = budget;
        fedc_program_output(p, "agg", fedc_robust_aggregate(p, y, wv, &r));
        fedc_executor *ex = NULL;
        fedc_exec_options o = {.clients = N, .threads = 2};
        CHECK_OK(fedc_executor_create(&ex, p, &o));
        CHECK_OK(fedc_executor_bind(ex, "base", base));
        CHECK_OK(fedc_executor_bind(ex, "s", s_i));
        CHECK_OK(fedc_executor_bind(ex, "w", w));
        long before = peak_kb();
        CHECK_OK(fedc_executor_run(ex));
        long grew_mb = (peak_kb() - before) / 1024;
        const float *agg = NULL;
        CHECK_OK(fedc_executor_output(ex, "agg", (const void **)&agg, NULL));
        if (PEAK_MEANS_NOTHING && budget) {
            fprintf(stderr, "    (AddressSanitizer: the peak memory is not checked, only the bits)\n");
        } else if (budget) {
            CHECK_MSG(grew_mb < 60, "1000 updates of 100 kB with 8 MiB of memory: the peak grew by %ld MB", grew_mb);
        } else if (!PEAK_MEANS_NOTHING) {
            CHECK_MSG(grew_mb >= 60, "all 1000 updates held: the peak grew by only %ld MB (is the check blind?)", grew_mb);
        }
        if (budget && agg) memcpy(got, agg, D * sizeof *got);
        if (!budget) CHECK_MSG(agg && !memcmp(agg, got, D * sizeof *got), "the median with 8 MiB is not the in-memory one's bits");
        fedc_executor_destroy(ex);
        fedc_program_destroy(p);
    }
    free(base), free(got);
}

/* ------------------------------------------------------------- attacks -- */

/* Ten clients send 1 + U(-0.1, 0.1) in every coordinate; clients 3 and 7 are
 * malicious. Each attack moves the mean, while the median, Krum (f = 2) and the
 * trimmed mean (beta 0.2) stay within the honest values' range; sign_flip and
 * scale give their formula at the malicious clients exactly. */
static void test_attacks(void) {
    enum { N = 10, D = 64 };
    cohort c = make(N, D);
    fedc_test_seed(9);
    for (int k = 0; k < N * D; k++) c.data[k] = (float)(1 + fedc_test_uniform(-0.1, 0.1));
    float bad[N] = {[3] = 1, [7] = 1}, ones[N];
    int32_t keys[4 * N];
    for (int i = 0; i < N; i++) ones[i] = 1, keys[4 * i] = i, keys[4 * i + 1] = 7, keys[4 * i + 2] = keys[4 * i + 3] = 0;
    const char *attacks[] = {"sign_flip", "scale:s=-10", "gaussian:sigma=30", "alie:z=20", "ipm:eps=5"};
    const char *defences[] = {"median", "krum:f=2", "trimmed_mean:beta=0.2"};
    for (int a = 0; a < FEDC_COUNT_OF(attacks); a++) {
        fedc_attack at = {.fraction = 0.2};
        CHECK_OK(fedc_attack_parse(attacks[a], &at));
        fedc_program *p;
        CHECK_OK(fedc_program_create(&p));
        fedc_type vec = fedc_type_make(FEDC_F32, 1, (int64_t[]){D}), one = fedc_type_scalar(FEDC_F32);
        fedc_tree *u = fedc_tree_new(p);
        fedc_tree_set(p, u, "u", fedc_input(p, "x", placed(vec, FEDC_CLIENTS)));
        fedc_value m = fedc_input(p, FEDC_ATTACK_MALICIOUS, placed(one, FEDC_CLIENTS));
        fedc_value w = fedc_input(p, "w", placed(one, FEDC_CLIENTS));
        fedc_value key = fedc_input(p, "key", placed(fedc_type_make(FEDC_I32, 1, (int64_t[]){4}), FEDC_CLIENTS));
        fedc_value sent = fedc_tree_value(fedc_attack_update(p, &at, u, m, key), 0);
        fedc_program_output(p, "sent", sent);
        fedc_program_output(p, "mean", fedc_mean(p, sent));
        for (int d = 0; d < FEDC_COUNT_OF(defences); d++) {
            fedc_robust r = spec(defences[d]);
            fedc_program_output(p, defences[d], fedc_robust_aggregate(p, sent, w, &r));
        }
        CHECK_OK(fedc_program_status(p));
        fedc_executor *ex = NULL;
        CHECK_OK(fedc_executor_create(&ex, p, &(fedc_exec_options){.clients = N, .threads = 2}));
        CHECK_OK(fedc_executor_bind(ex, "x", c.data));
        CHECK_OK(fedc_executor_bind(ex, FEDC_ATTACK_MALICIOUS, bad));
        CHECK_OK(fedc_executor_bind(ex, "w", ones));
        CHECK_OK(fedc_executor_bind(ex, "key", keys));
        CHECK_OK(fedc_executor_run(ex));
        const float *v = NULL;
        CHECK_OK(fedc_executor_output(ex, "sent", (const void **)&v, NULL));
        for (int i = 0; v && i < N; i++) { /* the honest send theirs; sign_flip and scale their formula */
            double f = at.kind == FEDC_ATTACK_SIGN_FLIP ? -1 : at.kind == FEDC_ATTACK_SCALE ? -10 : NAN;
            for (int k = 0; k < D; k++)
                if (!bad[i]) CHECK(v[i * D + k] == c.data[i * D + k]);
                else if (!isnan(f)) CHECK(v[i * D + k] == (float)(f * c.data[i * D + k]));
        }
        double moved = 0;
        CHECK_OK(fedc_executor_output(ex, "mean", (const void **)&v, NULL));
        for (int k = 0; v && k < D; k++) moved = fmax(moved, fabs(v[k] - 1));
        CHECK_MSG(moved > 0.3, "%s: the mean moved by only %g", attacks[a], moved);
        for (int d = 0; d < FEDC_COUNT_OF(defences); d++) {
            CHECK_OK(fedc_executor_output(ex, defences[d], (const void **)&v, NULL));
            for (int k = 0; v && k < D; k++)
                CHECK_MSG(fabs(v[k] - 1) <= 0.1 + 1e-6, "%s against %s: coordinate %d is %g", defences[d], attacks[a], k,
                          v[k]);
        }
        fedc_executor_destroy(ex);
        fedc_program_destroy(p);
    }
    free(c.data);
}

/* The malicious draw is a seeded fraction of the population, by client id;
 * specs parse or are refused by name. */
static void test_attack_draw_and_spec(void) {
    fedc_attack a = {.fraction = 0.2};
    CHECK_OK(fedc_attack_parse("scale:s=-3.5", &a));
    CHECK(a.kind == FEDC_ATTACK_SCALE && a.value == -3.5 && a.fraction == 0.2);
    int count = 0, again = 0;
    for (int64_t id = 0; id < 20000; id++) {
        count += fedc_attack_malicious(&a, 42, id);
        again += fedc_attack_malicious(&a, 42, id) == fedc_attack_malicious(&a, 42, id);
    }
    CHECK_EQ_INT(again, 20000);
    CHECK_MSG(fabs(count / 20000.0 - 0.2) < 0.01, "%d of 20000 malicious at 0.2", count);
    int other = 0;
    for (int64_t id = 0; id < 1000; id++) other += fedc_attack_malicious(&a, 42, id) != fedc_attack_malicious(&a, 43, id);
    CHECK_MSG(other > 100, "seeds 42 and 43 differ on only %d of 1000 clients", other);
    CHECK_ERR(fedc_attack_parse("signflip", &a), FEDC_EINVAL, "unknown attack 'signflip'");
    CHECK_ERR(fedc_attack_parse("scale:t=2", &a), FEDC_EINVAL, "attack scale takes s=X, not 't=2'");
    CHECK_ERR(fedc_attack_parse("gaussian:sigma=-1", &a), FEDC_EINVAL, "sigma -1 must be >= 0");
    CHECK_ERR(fedc_attack_parse("sign_flip:s=2", &a), FEDC_EINVAL, "takes no settings");
    CHECK(!strcmp(fedc_attack_name(FEDC_ATTACK_ALIE), "alie"));
    /* label_flip: y -> C - 1 - y for the labels in [0, C), others (padding) as they are */
    CHECK_OK(fedc_attack_parse("label_flip", &a));
    CHECK(a.kind == FEDC_ATTACK_LABEL_FLIP && a.fraction == 0.2);
    int32_t y[] = {0, 3, 9, -1, 10, 5}, want[] = {9, 6, 0, -1, 10, 4};
    fedc_attack_labels(&a, 10, y, 6);
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(y[i], want[i]);
    CHECK_ERR(fedc_attack_parse("label_flip:c=3", &a), FEDC_EINVAL, "attack label_flip takes no settings");
    CHECK_OK(fedc_attack_parse("sign_flip", &a));
    fedc_attack_labels(&a, 10, y, 6); /* an attack on the update leaves the labels */
    for (int i = 0; i < 6; i++) CHECK_EQ_INT(y[i], want[i]);
}

/* The op refuses a bad input type and a bad setting when built, and a cohort the
 * aggregator cannot take when run. */
static void test_program_op_errors(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_type vec = fedc_type_make(FEDC_F32, 1, (int64_t[]){3});
    fedc_value x = fedc_input(p, "x", placed(vec, FEDC_CLIENTS));
    fedc_value w = fedc_input(p, "w", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS));
    fedc_robust r = spec("krum:f=1");
    fedc_program_output(p, "agg", fedc_robust_aggregate(p, x, w, &r));
    CHECK_OK(fedc_program_status(p));
    fedc_executor *ex = NULL;
    fedc_exec_options o = {.clients = 4, .threads = 1};
    CHECK_OK(fedc_executor_create(&ex, p, &o));
    float xs[12] = {0}, ws[4] = {1, 1, 1, 1};
    CHECK_OK(fedc_executor_bind(ex, "x", xs));
    CHECK_OK(fedc_executor_bind(ex, "w", ws));
    CHECK_ERR(fedc_executor_run(ex), FEDC_EINVAL, "krum with f = 1 needs more than 2f + 2 = 4 clients; the round has 4");
    fedc_executor_destroy(ex);
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_robust_aggregate(p, x, w, &r), (int[]){0}, 1, false));
    fedc_program *g = NULL;
    CHECK_ERR(fedc_grad(p, "loss", (const char *[]){"x"}, 1, &g), FEDC_EUNSUPPORTED,
              "robust_aggregate has no derivative rule");
    fedc_program_destroy(g);
    r.f = -1;
    fedc_robust_aggregate(p, x, w, &r);
    CHECK_ERR(fedc_program_status(p), FEDC_EINVAL, "f -1");
    fedc_program_destroy(p);
    CHECK_OK(fedc_program_create(&p));
    x = fedc_input(p, "x", vec); /* not @clients */
    w = fedc_input(p, "w", placed(fedc_type_scalar(FEDC_F32), FEDC_CLIENTS));
    r = spec("median");
    fedc_robust_aggregate(p, x, w, &r);
    CHECK_ERR(fedc_program_status(p), FEDC_ETYPE, "f32[d]@clients");
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"thousand_clients_bounded", test_thousand_clients_bounded}, /* first: the peak memory before it is low */
        {"flower_median", test_flower_median},
        {"flower_trimmed_mean", test_flower_trimmed_mean},
        {"flower_krum", test_flower_krum},
        {"flower_multikrum", test_flower_multikrum},
        {"flower_bulyan", test_flower_bulyan},
        {"seven_clients_f1", test_seven_clients_f1},
        {"median_even_and_trimmed_ten", test_median_even_and_trimmed_ten},
        {"geomed", test_geomed},
        {"cclip", test_cclip},
        {"spec_errors", test_spec_errors},
        {"cohort_errors", test_cohort_errors},
        {"permutation", test_permutation},
        {"threads", test_threads},
        {"program_op", test_program_op},
        {"attacks", test_attacks},
        {"attack_draw_and_spec", test_attack_draw_and_spec},
        {"program_op_errors", test_program_op_errors},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
