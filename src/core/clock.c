/* The one clock fedc measures with: monotonic (never set back), so that the
 * difference of two readings is elapsed time even if the wall clock changes. */
#include <time.h>

#include "fedc/core.h"

double fedc_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
