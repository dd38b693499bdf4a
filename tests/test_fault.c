/* Tests for the faults tests inject (core/fault.h): FEDC_FAULT read from the
 * environment once, each fault's name and argument, the rounds and clients of
 * train's faults, several faults at once, and malformed values refused with a
 * message naming what is wrong (and turning every fault off). */
#include "core/fault.h"
#include "harness.h"

#include <stdlib.h>

/* Runs first (main's order): the environment is read at the first question, and
 * only then; a value set later is not seen, fedc__fault_set is. */
static void test_environment_read_once(void) {
    setenv("FEDC_FAULT", "slow:2.5", 1);
    CHECK_NEAR(fedc__fault_seconds(FEDC__FAULT_SLOW), 2.5, 0);
    CHECK(fedc__fault_on(FEDC__FAULT_SLOW));
    CHECK(!fedc__fault_on(FEDC__FAULT_REPORT_TWICE));
    setenv("FEDC_FAULT", "report-twice", 1);
    CHECK(!fedc__fault_on(FEDC__FAULT_REPORT_TWICE));
    CHECK_NEAR(fedc__fault_seconds(FEDC__FAULT_SLOW), 2.5, 0);
    unsetenv("FEDC_FAULT");
    CHECK_OK(fedc__fault_set(NULL));
    CHECK(!fedc__fault_on(FEDC__FAULT_SLOW));
    CHECK_NEAR(fedc__fault_seconds(FEDC__FAULT_SLOW), 0, 0);
}

static void test_none(void) {
    CHECK_OK(fedc__fault_set(""));
    for (int i = 0; i < FEDC__FAULT_COUNT; i++) {
        CHECK(!fedc__fault_on((fedc__fault_id)i));
        CHECK(!fedc__fault_at((fedc__fault_id)i, 0, -1));
    }
    CHECK(!fedc__fault_on(FEDC__FAULT_COUNT));
}

/* Each name turns on its fault and no other. */
static void test_names(void) {
    static const struct {
        const char *spec;
        fedc__fault_id id;
    } cases[] = {
        {"metrics:1", FEDC__FAULT_METRICS},
        {"load:1:0", FEDC__FAULT_LOAD},
        {"slow:0.3", FEDC__FAULT_SLOW},
        {"report-twice", FEDC__FAULT_REPORT_TWICE},
        {"report-replay", FEDC__FAULT_REPORT_REPLAY},
        {"exit-after-report:1", FEDC__FAULT_EXIT_AFTER_REPORT},
        {"secagg-exit:2", FEDC__FAULT_SECAGG_EXIT},
        {"secagg-garble:3", FEDC__FAULT_SECAGG_GARBLE},
        {"secagg-forge-unmask", FEDC__FAULT_SECAGG_FORGE_UNMASK},
    };
    for (int c = 0; c < FEDC_COUNT_OF(cases); c++) {
        CHECK_OK(fedc__fault_set(cases[c].spec));
        for (int i = 0; i < FEDC__FAULT_COUNT; i++)
            CHECK_MSG(fedc__fault_on((fedc__fault_id)i) == (i == (int)cases[c].id), "\"%s\": fault %d is %s",
                      cases[c].spec, i, fedc__fault_on((fedc__fault_id)i) ? "on" : "off");
    }
    CHECK_OK(fedc__fault_set(NULL));
}

/* A round fault is on at its round only; the client is not asked. */
static void test_round(void) {
    CHECK_OK(fedc__fault_set("exit-after-report:12"));
    CHECK(fedc__fault_at(FEDC__FAULT_EXIT_AFTER_REPORT, 12, -1));
    CHECK(!fedc__fault_at(FEDC__FAULT_EXIT_AFTER_REPORT, 1, -1));
    CHECK(!fedc__fault_at(FEDC__FAULT_EXIT_AFTER_REPORT, 2, -1));
    CHECK(!fedc__fault_at(FEDC__FAULT_SECAGG_EXIT, 12, -1));
    CHECK_OK(fedc__fault_set("secagg-exit:0"));
    CHECK(fedc__fault_at(FEDC__FAULT_SECAGG_EXIT, 0, -1));
    CHECK(!fedc__fault_at(FEDC__FAULT_SECAGG_EXIT, 1, -1));
    CHECK_OK(fedc__fault_set(NULL));
}

/* Train's rounds: groups by '/', clients after ':' or ',', '*' for every round;
 * a question without a client asks for the round alone. */
static void test_rounds_and_clients(void) {
    CHECK_OK(fedc__fault_set("load:1:3,4/2:0/7"));
    CHECK(fedc__fault_at(FEDC__FAULT_LOAD, 1, 3));
    CHECK(fedc__fault_at(FEDC__FAULT_LOAD, 1, 4));
    CHECK(!fedc__fault_at(FEDC__FAULT_LOAD, 1, 0));
    CHECK(fedc__fault_at(FEDC__FAULT_LOAD, 2, 0));
    CHECK(!fedc__fault_at(FEDC__FAULT_LOAD, 2, 3));
    CHECK(!fedc__fault_at(FEDC__FAULT_LOAD, 3, 3));
    CHECK(fedc__fault_at(FEDC__FAULT_LOAD, 7, -1));
    CHECK(!fedc__fault_at(FEDC__FAULT_LOAD, 7, 0)); /* round 7 names no client */
    CHECK(fedc__fault_at(FEDC__FAULT_LOAD, 2, -1));
    CHECK(!fedc__fault_at(FEDC__FAULT_LOAD, 5, -1));
    CHECK(!fedc__fault_at(FEDC__FAULT_METRICS, 1, -1));
    CHECK_OK(fedc__fault_set("load:2:1:5"));
    CHECK(fedc__fault_at(FEDC__FAULT_LOAD, 2, 1) && fedc__fault_at(FEDC__FAULT_LOAD, 2, 5));
    CHECK(!fedc__fault_at(FEDC__FAULT_LOAD, 2, 2));
    CHECK_OK(fedc__fault_set("load:*:2"));
    for (int r = 0; r < 5; r++) CHECK(fedc__fault_at(FEDC__FAULT_LOAD, r, 2) && !fedc__fault_at(FEDC__FAULT_LOAD, r, 1));
    CHECK_OK(fedc__fault_set("metrics:4"));
    CHECK(fedc__fault_at(FEDC__FAULT_METRICS, 4, -1));
    CHECK(!fedc__fault_at(FEDC__FAULT_METRICS, 3, -1));
    CHECK_OK(fedc__fault_set(NULL));
}

static void test_several(void) {
    CHECK_OK(fedc__fault_set("slow:1;report-twice;exit-after-report:2"));
    CHECK_NEAR(fedc__fault_seconds(FEDC__FAULT_SLOW), 1.0, 0);
    CHECK(fedc__fault_on(FEDC__FAULT_REPORT_TWICE));
    CHECK(fedc__fault_at(FEDC__FAULT_EXIT_AFTER_REPORT, 2, -1));
    CHECK(!fedc__fault_on(FEDC__FAULT_SECAGG_EXIT));
    CHECK_OK(fedc__fault_set(NULL));
}

/* Each malformed value is refused with what is wrong, and leaves no fault on,
 * not even one it named well before. */
static void test_malformed(void) {
    static const struct {
        const char *spec, *says;
    } cases[] = {
        {"slo:3", "no fault \"slo\""},
        {"slow", "slow takes seconds"},
        {"slow:", "slow takes seconds (0 or more), not \"\""},
        {"slow:-1", "not \"-1\""},
        {"slow:inf", "not \"inf\""},
        {"slow:2s", "not \"2s\""},
        {"report-twice:1", "report-twice takes nothing"},
        {"exit-after-report", "exit-after-report takes a round"},
        {"exit-after-report:x", "not \"x\""},
        {"secagg-exit:-1", "secagg-exit takes a round"},
        {"secagg-garble:1.5", "not \"1.5\""},
        {"load:2:", "load takes rounds"},
        {"load:2:1,", "not \"2:1,\""},
        {"load:2:1//3:1", "not \"2:1//3:1\""},
        {"load:a:1", "load takes rounds"},
        {"metrics:99999999999999999999", "metrics takes rounds"},
        {"report-twice;slow:1;report-twice", "report-twice is named twice"},
        {"report-twice;", "no fault \"\""},
    };
    for (int c = 0; c < FEDC_COUNT_OF(cases); c++) {
        CHECK_OK(fedc__fault_set("report-twice"));
        CHECK_ERR(fedc__fault_set(cases[c].spec), FEDC_EINVAL, cases[c].says);
        for (int i = 0; i < FEDC__FAULT_COUNT; i++)
            CHECK_MSG(!fedc__fault_on((fedc__fault_id)i), "\"%s\" left fault %d on", cases[c].spec, i);
    }
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"environment_read_once", test_environment_read_once},
        {"none", test_none},
        {"names", test_names},
        {"round", test_round},
        {"rounds_and_clients", test_rounds_and_clients},
        {"several", test_several},
        {"malformed", test_malformed},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
