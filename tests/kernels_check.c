/* kernels_check.c — the fast-kernel tests' shared helpers (kernels_check.h). */
#include "kernels_check.h"

#include <math.h>
#include <string.h>

#include "harness.h"

/* xorshift64*: deterministic test data without depending on the library's RNG. */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;

double uniform(void) { /* [-1, 1) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t r = rng_state * 0x2545F4914F6CDD1Du;
    return (double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

void *alloc_bytes(size_t bytes) {
    void *p = fedc_malloc(bytes ? bytes : 1);
    CHECK(p != NULL);
    return p;
}

/* All-ones bytes: a NaN in f32 and f64, so an element a kernel forgets to write
 * shows up as a mismatch. */
void *alloc_poison(size_t bytes) {
    void *p = alloc_bytes(bytes);
    if (p) memset(p, 0xFF, bytes ? bytes : 1);
    return p;
}

void store(fedc_dtype dt, void *p, int64_t i, double v) {
    if (dt == FEDC_F32) ((float *)p)[i] = (float)v;
    else if (dt == FEDC_F64) ((double *)p)[i] = v;
    else ((int32_t *)p)[i] = (int32_t)v;
}

double load(fedc_dtype dt, const void *p, int64_t i) {
    if (dt == FEDC_F32) return ((const float *)p)[i];
    if (dt == FEDC_F64) return ((const double *)p)[i];
    return ((const int32_t *)p)[i];
}

/* n elements uniform in [-scale, scale); with `quantum` > 0 rounded to multiples
 * of it, so that ties and equal operands occur. */
void *random_array(fedc_dtype dt, int64_t n, double scale, double quantum) {
    void *p = alloc_bytes((size_t)n * fedc_dtype_size(dt));
    for (int64_t i = 0; p && i < n; i++) {
        double v = scale * uniform();
        store(dt, p, i, quantum > 0 ? quantum * nearbyint(v / quantum) : v);
    }
    return p;
}

double tolerance(fedc_dtype dt) { return dt == FEDC_F32 ? 1e-5 : 1e-12; }

/* How a mismatch is measured: against each element's own magnitude (elementwise
 * results), or against the largest magnitude in the expected array (sums of many
 * products, where cancellation can make one element small but not its error). */

double array_scale(fedc_dtype dt, int64_t n, const void *want) {
    double s = 1;
    for (int64_t i = 0; i < n; i++) {
        double v = fabs(load(dt, want, i));
        if (isfinite(v) && v > s) s = v;
    }
    return s;
}

/* Reports the first element that differs (NaNs and equal infinities match). */
void check_close(fedc_dtype dt, int64_t n, const void *got, const void *want, int mode,
                        const char *what) {
    double tol = tolerance(dt), big = array_scale(dt, n, want);
    for (int64_t i = 0; i < n; i++) {
        double g = load(dt, got, i), w = load(dt, want, i);
        if (g == w || (isnan(g) && isnan(w))) continue;
        double s = mode == ARRAY_SCALE ? big : fabs(w) > 1 ? fabs(w) : 1;
        if (fabs(g - w) <= tol * s) continue;
        fedc_test_fail(__FILE__, __LINE__, "%s: element %lld: fast %.9g, ref %.9g", what,
                       (long long)i, g, w);
        return;
    }
}

void check_same_bits(const void *a, const void *b, size_t bytes, const char *what) {
    CHECK_MSG(memcmp(a, b, bytes) == 0, "%s: two fast runs differ", what);
}

const char *dt_name(fedc_dtype dt) { return fedc_dtype_name(dt); }
