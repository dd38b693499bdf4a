/* The public API's conventions that users build on: failing a program from a
 * builder of one's own (sticky errors, the first one kept). */
#include <string.h>

#include "fedc/program.h"
#include "harness.h"

/* A user's layer that refuses a width of zero, as the library's builders do. */
static fedc_value my_layer(fedc_program *p, fedc_value x, int width) {
    if (width <= 0) return fedc_program_fail(p, FEDC_EINVAL, "my_layer: width is %d; use 1 or more", width);
    return fedc_relu(p, x);
}

static void test_program_fail_is_sticky(void) {
    fedc_program *p;
    CHECK_OK(fedc_program_create(&p));
    fedc_value x = fedc_input(p, "x", fedc_type_make(FEDC_F32, 1, (int64_t[]){4}));
    CHECK(my_layer(p, x, 0) == FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_EINVAL, "my_layer: width is 0; use 1 or more");
    /* Later calls build nothing and keep the first error. */
    CHECK(fedc_relu(p, x) == FEDC_NONE);
    CHECK(my_layer(p, x, -1) == FEDC_NONE);
    CHECK_ERR(fedc_program_status(p), FEDC_EINVAL, "width is 0");
    CHECK(fedc_program_output(p, "y", x) != FEDC_OK);
    fedc_program_destroy(p);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"program_fail is sticky", test_program_fail_is_sticky},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
