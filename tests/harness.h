/*
 * A minimal test harness: each test is a function; CHECK macros record failures
 * with file and line and carry on, so one run reports every broken assertion.
 *
 *     static void test_add(void) { CHECK_EQ_INT(1 + 1, 2); }
 *     int main(int argc, char **argv) {
 *         static const fedc_test tests[] = {{"add", test_add}};
 *         return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
 *     }
 *
 * A test binary takes an optional substring filter as its first argument.
 */
#ifndef FEDC_TEST_HARNESS_H
#define FEDC_TEST_HARNESS_H

#include <math.h>
#include <stdio.h>

#include "fedc/core.h"
#include "fedc/program.h"

typedef struct fedc_test {
    const char *name;
    void (*fn)(void);
} fedc_test;

#define FEDC_COUNT_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

int fedc_test_main(int argc, char **argv, const fedc_test *tests, int count);
void fedc_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int fedc_test_failures(void); /* failures so far in the current test */

/* Marks the current test as not run (e.g. its data set is absent), with the reason.
 * A binary with skipped tests and no failures exits FEDC_TEST_SKIPPED, which ctest
 * reports as "Not Run" (SKIP_RETURN_CODE), so a test never passes without running. */
#define FEDC_TEST_SKIPPED 77
void fedc_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) fedc_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);            \
    } while (0)

#define CHECK_MSG(cond, ...)                                                            \
    do {                                                                                \
        if (!(cond)) fedc_test_fail(__FILE__, __LINE__, __VA_ARGS__);                   \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                              \
    do {                                                                                \
        long long fedc__a = (long long)(a), fedc__b = (long long)(b);                   \
        if (fedc__a != fedc__b)                                                         \
            fedc_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b,        \
                           fedc__a, fedc__b);                                           \
    } while (0)

/* |a - b| <= tol * max(1, |b|) */
#define CHECK_NEAR(a, b, tol)                                                           \
    do {                                                                                \
        double fedc__a = (double)(a), fedc__b = (double)(b);                            \
        double fedc__s = fabs(fedc__b) > 1 ? fabs(fedc__b) : 1;                         \
        if (!(fabs(fedc__a - fedc__b) <= (tol) * fedc__s))                              \
            fedc_test_fail(__FILE__, __LINE__, "%s ~= %s: %.9g vs %.9g (tol %g)", #a,   \
                           #b, fedc__a, fedc__b, (double)(tol));                        \
    } while (0)

#define CHECK_OK(expr)                                                                  \
    do {                                                                                \
        fedc_status fedc__st = (expr);                                                  \
        if (fedc__st != FEDC_OK)                                                        \
            fedc_test_fail(__FILE__, __LINE__, "%s: %s: %s", #expr,                     \
                           fedc_status_str(fedc__st), fedc_errmsg());                   \
    } while (0)

/* The call fails with `status` and its message contains `needle`. */
#define CHECK_ERR(expr, status, needle) fedc_test_check_err((expr), (status), (needle), #expr, __FILE__, __LINE__)
void fedc_test_check_err(fedc_status got, fedc_status want, const char *needle, const char *expr,
                         const char *file, int line);

/* Path of a file under the source tree (FEDC_SOURCE_DIR, else the working directory). */
const char *fedc_test_path(const char *relative);

/* A fresh directory /tmp/fedc-<what>-XXXXXX for a test binary's files (NULL, with
 * a message, if it cannot be made); fedc_test_tmp(name) is a path in it (one of a few
 * rotating buffers); fedc_test_tmpdir_remove() deletes it and everything in it. */
const char *fedc_test_tmpdir(const char *what);
const char *fedc_test_tmp(const char *name);
void fedc_test_tmpdir_remove(void);

/* Reproducible uniform doubles in [lo, hi): one xorshift64 stream per test binary,
 * reset by fedc_test_seed, so a test's random inputs are the same every run. */
void fedc_test_seed(uint64_t state);
double fedc_test_uniform(double lo, double hi);

/* For gradient checks: a program with inputs x0, x1, ... of `types`, y = build(p, x)
 * (its value in *y if y is not NULL) and the output "loss" = sum(y * r) for a fixed
 * random r from fedc_test_uniform(-1, 1), so that the gradient of the loss, r^T J,
 * involves every entry of the Jacobian. NULL if the program cannot be created. */
typedef fedc_value (*fedc_test_build_fn)(fedc_program *p, const fedc_value *x);
fedc_program *fedc_test_loss_program(const fedc_type *types, int n, fedc_test_build_fn build, fedc_value *y);

#endif
