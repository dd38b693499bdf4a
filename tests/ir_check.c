/* ir_check.c — the program tests' shared checks (ir_check.h). */
#include "ir_check.h"

#include <string.h>

fedc_program *newp(void) {
    fedc_program *p = NULL;
    CHECK_OK(fedc_program_create(&p));
    return p;
}

void check_type(const fedc_program *p, fedc_value v, const char *want, const char *file, int line) {
    if (v == FEDC_NONE) {
        fedc_status st = fedc_program_status(p);
        fedc_test_fail(file, line, "value is FEDC_NONE, want %s (%s: %s)", want, fedc_status_str(st),
                       st ? fedc_errmsg() : "no error recorded");
        return;
    }
    char buf[64];
    fedc_type t = fedc_value_type(p, v);
    fedc_type_str(&t, buf, sizeof buf);
    if (strcmp(buf, want) != 0) fedc_test_fail(file, line, "type is %s, want %s", buf, want);
}

void check_build_fails(const fedc_program *p, fedc_value v, fedc_status want, const char *const *needles,
                       const char *expr, const char *file, int line) {
    if (v != FEDC_NONE) fedc_test_fail(file, line, "%s: expected FEDC_NONE, got %%%d", expr, v);
    fedc_status st = fedc_program_status(p);
    if (st != want) {
        fedc_test_fail(file, line, "%s: expected %s, got %s (%s)", expr, fedc_status_str(want), fedc_status_str(st),
                       st ? fedc_errmsg() : "");
        return;
    }
    for (int i = 0; needles[i]; i++)
        if (!strstr(fedc_errmsg(), needles[i]))
            fedc_test_fail(file, line, "%s: message \"%s\" lacks \"%s\"", expr, fedc_errmsg(), needles[i]);
}

const void *checked_output(const fedc_executor *ex, const char *name, fedc_dtype dt, int64_t count) {
    const void *data = NULL;
    fedc_type t;
    fedc_status st = fedc_executor_output(ex, name, &data, &t);
    CHECK_OK(st);
    if (st) return NULL;
    CHECK_MSG(t.dtype == dt && fedc_type_count(&t) == count, "output %s: dtype %d count %lld, want %d and %lld", name,
              (int)t.dtype, (long long)fedc_type_count(&t), (int)dt, (long long)count);
    return t.dtype == dt && fedc_type_count(&t) == count ? data : NULL;
}

void run_f32(const fedc_program *p, int nin, const char *const *names, const void *const *data, const char *out,
             float *result, int64_t count) {
    fedc_executor *ex = NULL;
    fedc_status st = fedc_executor_create(&ex, p, NULL);
    CHECK_OK(st);
    if (st) return;
    for (int i = 0; i < nin; i++) CHECK_OK(fedc_executor_bind(ex, names[i], data[i]));
    CHECK_OK(fedc_executor_run(ex));
    const float *y = checked_output(ex, out, FEDC_F32, count);
    if (y) memcpy(result, y, (size_t)count * sizeof(float));
    fedc_executor_destroy(ex);
}
