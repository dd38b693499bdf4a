/* The test runner behind harness.h. Ends with the line "N passed, N failed". */
#define _XOPEN_SOURCE 700 /* nftw */
#include "harness.h"

#include <ftw.h>
#include <unistd.h>

#include "fedc/formats.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int current_failures;

void fedc_test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    current_failures++;
}

int fedc_test_failures(void) { return current_failures; }

void fedc_test_check_err(fedc_status got, fedc_status want, const char *needle, const char *expr,
                         const char *file, int line) {
    if (got != want) {
        fedc_test_fail(file, line, "%s: expected %s, got %s (%s)", expr, fedc_status_str(want),
                       fedc_status_str(got), fedc_errmsg());
    } else if (needle && !strstr(fedc_errmsg(), needle)) {
        fedc_test_fail(file, line, "%s: message \"%s\" lacks \"%s\"", expr, fedc_errmsg(), needle);
    }
}

const char *fedc_test_path(const char *relative) {
    static _Thread_local char buf[4096];
    const char *root = getenv("FEDC_SOURCE_DIR");
    snprintf(buf, sizeof buf, "%s/%s", root ? root : ".", relative);
    return buf;
}

static bool current_skipped;

void fedc_test_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "  SKIP: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    current_skipped = true;
}

int fedc_test_main(int argc, char **argv, const fedc_test *tests, int count) {
#ifdef FEDC_HAVE_FORMATS
    fedc_formats_register(); /* the TFF and FedJAX readers, as the CLI has them */
#endif
    const char *filter = argc > 1 ? argv[1] : NULL;
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < count; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        current_failures = 0;
        current_skipped = false;
        fprintf(stderr, "  %s ...\n", tests[i].name);
        tests[i].fn();
        if (current_failures) {
            fprintf(stderr, "  FAIL %s (%d)\n", tests[i].name, current_failures);
            failed++;
        } else if (current_skipped) {
            skipped++;
        } else {
            passed++;
        }
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : skipped ? FEDC_TEST_SKIPPED : 0;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

void fedc_test_seed(uint64_t state) { rng_state = state ? state : 0x9E3779B97F4A7C15ull; }

double fedc_test_uniform(double lo, double hi) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

fedc_program *fedc_test_loss_program(const fedc_type *types, int n, fedc_test_build_fn build, fedc_value *y_out) {
    fedc_program *p;
    if (fedc_program_create(&p)) return NULL;
    fedc_value x[64];
    for (int i = 0; i < n && i < 64; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        x[i] = fedc_input(p, name, types[i]);
    }
    fedc_value y = build(p, x);
    if (y_out) *y_out = y;
    fedc_type yt = fedc_value_type(p, y);
    int64_t count = fedc_type_count(&yt);
    double *r = malloc((size_t)(count ? count : 1) * sizeof *r);
    if (!r) return p;
    for (int64_t i = 0; i < count; i++) r[i] = fedc_test_uniform(-1, 1);
    fedc_program_output(p, "loss", fedc_reduce_sum(p, fedc_mul(p, y, fedc_constant(p, yt, r)), NULL, -1, false));
    free(r);
    return p;
}

static char tmpdir[64];

const char *fedc_test_tmpdir(const char *what) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/fedc-%s-XXXXXX", what);
    if (mkdtemp(tmpdir)) return tmpdir;
    perror("mkdtemp");
    return NULL;
}

const char *fedc_test_tmp(const char *name) {
    static char bufs[4][400]; /* tmpdir, "/" and a d_name of up to 255 bytes */
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
    return b;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

void fedc_test_tmpdir_remove(void) {
    if (tmpdir[0]) nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); /* children first */
}
