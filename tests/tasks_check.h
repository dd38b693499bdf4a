/*
 * tests/tasks_check.h — the checks the task preprocessing tests share
 * (test_data_tasks.c, test_data_tasks_files.c): clients built by hand, and a
 * client's feature checked to be an array of a dtype and shape.
 */
#ifndef FEDC_TEST_TASKS_CHECK_H
#define FEDC_TEST_TASKS_CHECK_H

#include "harness.h"

#include "fedc/data.h"
#include "fedc/types.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
#define TY(dt, ...) fedc_type_make((dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

static inline fedc_client_data *new_client(const char *id, int64_t n) {
    fedc_client_data *c = NULL;
    CHECK_OK(fedc_client_data_create(&c, id, n));
    return c;
}

/* The feature `name` of c, checked to be an array of this dtype and shape. */
static inline const void *array(const fedc_client_data *c, const char *name, fedc_type want) {
    const fedc_feature *f = c ? fedc_client_feature(c, name) : NULL;
    CHECK_MSG(f != NULL, "no feature \"%s\"", name);
    if (!f) return NULL;
    char a[64], b[64];
    bool ok = f->kind == FEDC_FEATURE_ARRAY && f->type.dtype == want.dtype && fedc_type_same_shape(&f->type, &want);
    CHECK_MSG(ok, "feature \"%s\" is %s, expected %s", name, fedc_type_str(&f->type, a, sizeof a),
              fedc_type_str(&want, b, sizeof b));
    return ok ? f->data : NULL;
}

static inline void check_ints(const int32_t *got, const int32_t *want, int64_t n, const char *what) {
    for (int64_t i = 0; got && i < n; i++)
        if (got[i] != want[i]) {
            fedc_test_fail(__FILE__, __LINE__, "%s[%lld] = %d, expected %d", what, (long long)i, got[i], want[i]);
            return;
        }
}

#endif
