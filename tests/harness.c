/* The test runner behind harness.h. Ends with the line "N passed, N failed". */
#include "harness.h"

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

int fedc_test_main(int argc, char **argv, const fedc_test *tests, int count) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    int passed = 0, failed = 0;
    for (int i = 0; i < count; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        current_failures = 0;
        fprintf(stderr, "  %s ...\n", tests[i].name);
        tests[i].fn();
        if (current_failures) {
            fprintf(stderr, "  FAIL %s (%d)\n", tests[i].name, current_failures);
            failed++;
        } else {
            passed++;
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
