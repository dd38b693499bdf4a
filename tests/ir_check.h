/* ir_check.h — what the program and executor tests (test_ir.c, test_ir_passes.c,
 * test_exec.c, test_exec_ops.c) share: type literals, a fresh program, checks of
 * a value's type and of a builder's error, an executor's output checked, and
 * running a program on the executor for one f32 output. */
#ifndef FEDC_TESTS_IR_CHECK_H
#define FEDC_TESTS_IR_CHECK_H

#include "harness.h"

#include "fedc/exec.h"
#include "fedc/program.h"

#define DIMS(...) ((int64_t[]){__VA_ARGS__})
#define NDIMS(...) ((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))
/* TY(FEDC_F32, 3, 4) is f32[3,4]. */
#define TY(dt, ...) fedc_type_make((dt), NDIMS(__VA_ARGS__), DIMS(__VA_ARGS__))

/* A new empty program (NULL, with a failed check, if it cannot be made). */
fedc_program *newp(void);

/* The value exists and its type prints as `want` ("f32[3,4]"). */
#define CHECK_TYPE(p, v, want) check_type((p), (v), (want), __FILE__, __LINE__)
void check_type(const fedc_program *p, fedc_value v, const char *want, const char *file, int line);

/* The builder call gave FEDC_NONE and the program records `st` with a message
 * containing every one of the NULL-terminated needles. */
#define CHECK_BUILD_FAILS(p, v, st, ...)                                                                  \
    check_build_fails((p), (v), (st), (const char *const[]){__VA_ARGS__, NULL}, #v, __FILE__, __LINE__)
void check_build_fails(const fedc_program *p, fedc_value v, fedc_status want, const char *const *needles,
                       const char *expr, const char *file, int line);

/* Builds a fresh program, runs `body` on it, and destroys it. */
#define WITH_PROGRAM(p, ...)                                                                              \
    do {                                                                                                  \
        fedc_program *p = newp();                                                                         \
        if (p) {                                                                                          \
            __VA_ARGS__;                                                                                  \
            fedc_program_destroy(p);                                                                      \
        }                                                                                                 \
    } while (0)

/* Output `name` of `ex`, checked to exist with `count` elements of dtype dt
 * (NULL, with a failed check, if not). */
const void *checked_output(const fedc_executor *ex, const char *name, fedc_dtype dt, int64_t count);

/* Runs `p` with inputs bound in order and copies output `out` (f32, `count`
 * elements) to `result`. */
void run_f32(const fedc_program *p, int nin, const char *const *names, const void *const *data, const char *out,
             float *result, int64_t count);

#endif
