/* The virtual clock (fedc/clock.h, src/fl/clock.c): specs parse, print and
 * parse back, and bad ones are refused naming the item; a client's log-normal
 * speed depends on the seed and the client alone, and 4000 clients' speeds have
 * the median exp(MU) and the log-spread SIGMA; task times are steps × speed +
 * bytes / bandwidth; Bernoulli availability checks in the fraction P; diurnal
 * windows are online the fraction ON of a period; trace files give exact speeds
 * and windows, and a missing or unknown client is an error naming it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fedc/fedc.h"
#include "fl/clock.h"
#include "harness.h"

static fedc_dataset *clients(int64_t n) {
    fedc_dataset *ds = NULL;
    if (fedc_synthetic_zipf(n, 1, 4, 10, 1.1, 7, &ds)) CHECK_MSG(false, "synthetic data: %s", fedc_errmsg());
    return ds;
}

static void test_spec_round_trip(void) {
    const char *specs[] = {
        "speed=lognormal:-2:0.5",
        "speed=0.25,bandwidth=1e6,availability=bernoulli:0.8",
        "bandwidth=lognormal:13.8:1,availability=diurnal:86400:0.3",
        "availability=trace:/tmp/a b.csv,speed=trace:x.csv",
        "bandwidth=inf,availability=always",
    };
    for (int i = 0; i < FEDC_COUNT_OF(specs); i++) {
        fedc_clock_spec s, back;
        char once[1400], twice[1400];
        CHECK_OK(fedc_clock_parse(specs[i], &s));
        fedc_clock_format(&s, once, sizeof once);
        CHECK_OK(fedc_clock_parse(once, &back));
        fedc_clock_format(&back, twice, sizeof twice);
        CHECK_MSG(!strcmp(once, twice), "%s: %s then %s", specs[i], once, twice);
    }
    fedc_clock_spec s;
    CHECK_OK(fedc_clock_parse("speed=lognormal:-2:0.5,availability=diurnal:100:0.25", &s));
    CHECK(s.speed == FEDC_CLOCK_LOGNORMAL && s.speed_a == -2 && s.speed_b == 0.5);
    CHECK(s.bandwidth == FEDC_CLOCK_FIXED && isinf(s.bandwidth_a)); /* unset: no network time */
    CHECK(s.availability == FEDC_AVAILABLE_DIURNAL && s.availability_a == 100 && s.availability_b == 0.25);
}

static void test_bad_specs(void) {
    fedc_clock_spec s;
    CHECK_ERR(fedc_clock_parse("", &s), FEDC_EINVAL, "needs a spec");
    CHECK_ERR(fedc_clock_parse("sped=1", &s), FEDC_EINVAL, "unknown item 'sped=1'");
    CHECK_ERR(fedc_clock_parse("speed=fast", &s), FEDC_EINVAL, "--clock speed takes");
    CHECK_ERR(fedc_clock_parse("speed=-1", &s), FEDC_EINVAL, "--clock speed takes");
    CHECK_ERR(fedc_clock_parse("speed=lognormal:1", &s), FEDC_EINVAL, "lognormal:MU:SIGMA");
    CHECK_ERR(fedc_clock_parse("speed=lognormal:1:-1", &s), FEDC_EINVAL, "SIGMA >= 0");
    CHECK_ERR(fedc_clock_parse("bandwidth=0", &s), FEDC_EINVAL, "B > 0");
    CHECK_ERR(fedc_clock_parse("bandwidth=trace:x", &s), FEDC_EINVAL, "--clock bandwidth takes");
    CHECK_ERR(fedc_clock_parse("availability=bernoulli:1.5", &s), FEDC_EINVAL, "P in (0, 1]");
    CHECK_ERR(fedc_clock_parse("availability=diurnal:10", &s), FEDC_EINVAL, "PERIOD > 0");
    CHECK_ERR(fedc_clock_parse("availability=sometimes", &s), FEDC_EINVAL, "not 'sometimes'");
    CHECK_ERR(fedc_clock_parse("speed=trace:", &s), FEDC_EINVAL, "needs a file name");
    CHECK_ERR(fedc_clock_parse("speed=1,", &s), FEDC_EINVAL, "unknown item ''");
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_lognormal_speeds(void) {
    enum { N = 4000 };
    fedc_dataset *ds = clients(N);
    fedc_clock_spec s;
    fedc__clock *a = NULL, *b = NULL, *other = NULL;
    CHECK_OK(fedc_clock_parse("speed=lognormal:-1:0.5,bandwidth=lognormal:10:2", &s));
    CHECK_OK(fedc__clock_create(&s, 42, ds, &a));
    CHECK_OK(fedc__clock_create(&s, 42, ds, &b));
    CHECK_OK(fedc__clock_create(&s, 43, ds, &other));
    if (!a || !b || !other) return;
    static double logs[N];
    double sum = 0, sum2 = 0;
    int differ = 0;
    for (int64_t i = 0; i < N; i++) {
        double v = fedc__clock_seconds_per_step(a, i);
        CHECK(v == fedc__clock_seconds_per_step(b, i)); /* the seed and the client alone */
        differ += v != fedc__clock_seconds_per_step(other, i);
        logs[i] = log(v), sum += logs[i], sum2 += logs[i] * logs[i];
    }
    CHECK_EQ_INT(differ, N);
    double mean = sum / N, sd = sqrt(sum2 / N - mean * mean);
    qsort(logs, N, sizeof *logs, cmp_double);
    CHECK_NEAR(mean, -1, 0.05); /* 4.7 standard errors of 0.5 / sqrt(4000) */
    CHECK_NEAR(logs[N / 2], -1, 0.05);
    CHECK_NEAR(sd, 0.5, 0.03);
    double spd = fedc__clock_seconds_per_step(a, 17), bw = fedc__clock_bandwidth(a, 17);
    CHECK(fedc__clock_task_seconds(a, 17, 5, 3e6) == 5 * spd + 3e6 / bw);
    fedc__clock_destroy(a), fedc__clock_destroy(b), fedc__clock_destroy(other);
    fedc_dataset_destroy(ds);
}

static void test_availability(void) {
    enum { N = 4000 };
    fedc_dataset *ds = clients(N);
    fedc_clock_spec s;
    fedc__clock *c = NULL;
    CHECK_OK(fedc_clock_parse("availability=bernoulli:0.3", &s));
    CHECK_OK(fedc__clock_create(&s, 1, ds, &c));
    int on = 0, same = 0;
    for (int64_t i = 0; c && i < N; i++) {
        bool r0 = fedc__clock_available(c, i, 0, 0);
        on += r0, same += r0 == fedc__clock_available(c, i, 1, 0);
    }
    CHECK_MSG(fabs(on / (double)N - 0.3) < 0.035, "%d of %d online", on, N); /* 4.9 standard errors */
    CHECK_MSG(same < N - 100, "round 1 draws the same as round 0 for %d clients", same);
    fedc__clock_destroy(c);
    CHECK_OK(fedc_clock_parse("availability=diurnal:100:0.25", &s));
    CHECK_OK(fedc__clock_create(&s, 1, ds, &c));
    int per_client_ok = 0;
    for (int64_t i = 0; c && i < 50; i++) { /* each client: 25 of 100 whole seconds online */
        int online = 0;
        for (int t = 0; t < 100; t++) online += fedc__clock_available(c, i, 0, t + 0.5);
        per_client_ok += online >= 24 && online <= 26;
    }
    CHECK_EQ_INT(per_client_ok, 50);
    fedc__clock_destroy(c);
    fedc_dataset_destroy(ds);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void test_traces(void) {
    fedc_dataset *ds = clients(3); /* ids "0", "1", "2" */
    if (!fedc_test_tmpdir("clock")) return;
    char speeds[256], windows[256], spec[600];
    snprintf(speeds, sizeof speeds, "%s", fedc_test_tmp("speeds.csv"));
    snprintf(windows, sizeof windows, "%s", fedc_test_tmp("windows.csv"));
    write_file(speeds, "client_id,seconds_per_step\n# a comment\n2,0.5\n0,3\n1,0.125\n");
    write_file(windows, "client_id,start,end\n0,10,20\n2,0,5\n0,30,40\n");
    snprintf(spec, sizeof spec, "speed=trace:%s,bandwidth=1000,availability=trace:%s", speeds, windows);
    fedc_clock_spec s;
    fedc__clock *c = NULL;
    CHECK_OK(fedc_clock_parse(spec, &s));
    CHECK_OK(fedc__clock_create(&s, 9, ds, &c));
    if (c) {
        CHECK(fedc__clock_seconds_per_step(c, 0) == 3 && fedc__clock_seconds_per_step(c, 1) == 0.125);
        CHECK(fedc__clock_task_seconds(c, 2, 4, 500) == 2.5); /* 4 × 0.5 + 500 / 1000 */
        CHECK(!fedc__clock_available(c, 0, 0, 9.9) && fedc__clock_available(c, 0, 0, 10));
        CHECK(!fedc__clock_available(c, 0, 0, 20) && fedc__clock_available(c, 0, 0, 35));
        CHECK(!fedc__clock_available(c, 1, 0, 0)); /* no line: never online */
        CHECK(fedc__clock_available(c, 2, 0, 4.5) && !fedc__clock_available(c, 2, 0, 5));
    }
    fedc__clock_destroy(c);
    write_file(speeds, "0,1\n2,1\n");
    CHECK_ERR(fedc__clock_create(&s, 9, ds, &c), FEDC_EINVAL, "no line for client \"1\"");
    write_file(speeds, "0,1\n1,1\n2,1\n7,1\n");
    CHECK_ERR(fedc__clock_create(&s, 9, ds, &c), FEDC_EINVAL, ":4: client \"7\" is not in the training data");
    write_file(speeds, "0,1\n1,x\n");
    CHECK_ERR(fedc__clock_create(&s, 9, ds, &c), FEDC_EPARSE, ":2: expected \"client_id,seconds_per_step\"");
    write_file(speeds, "0,1\n1,1\n2,1\n");
    write_file(windows, "0,5,4\n");
    CHECK_ERR(fedc__clock_create(&s, 9, ds, &c), FEDC_EPARSE, ":1: a window's end 4 is before its start 5");
    fedc_test_tmpdir_remove();
    fedc_dataset_destroy(ds);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"clock specs: parse, print, parse back", test_spec_round_trip},
        {"clock specs: bad ones named", test_bad_specs},
        {"clock: log-normal speeds per client and seed", test_lognormal_speeds},
        {"clock: Bernoulli and diurnal availability", test_availability},
        {"clock: trace files", test_traces},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
