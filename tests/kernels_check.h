/* kernels_check.h — what the fast-kernel tests share (test_kernels_fast.c,
 * test_kernels_fast_elementwise.c): deterministic data, poisoned buffers, and
 * comparisons of the fast table's results with the reference's. */
#ifndef FEDC_TESTS_KERNELS_CHECK_H
#define FEDC_TESTS_KERNELS_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "fedc/types.h"
#include "kernels/kernels.h"

#define F (&fedc__kernels_fast)
#define R (&fedc__kernels_ref)

/* How a mismatch is measured: against each element's own magnitude (elementwise
 * results), or against the largest magnitude in the expected array (sums of many
 * products, where cancellation can make one element small but not its error). */
enum { PER_ELEMENT, ARRAY_SCALE };

double uniform(void); /* [-1, 1), xorshift64*: not the library's RNG */
void *alloc_bytes(size_t bytes);
/* All-ones bytes: a NaN in f32 and f64, so an element a kernel forgets to write
 * shows up as a mismatch. */
void *alloc_poison(size_t bytes);
void store(fedc_dtype dt, void *p, int64_t i, double v);
double load(fedc_dtype dt, const void *p, int64_t i);
/* n elements uniform in [-scale, scale); with `quantum` > 0 rounded to multiples
 * of it, so that ties and equal operands occur. */
void *random_array(fedc_dtype dt, int64_t n, double scale, double quantum);
double tolerance(fedc_dtype dt); /* 1e-5 for f32, 1e-12 for f64 */
/* Reports the first element that differs (NaNs and equal infinities match). */
void check_close(fedc_dtype dt, int64_t n, const void *got, const void *want, int mode, const char *what);
void check_same_bits(const void *a, const void *b, size_t bytes, const char *what);
const char *dt_name(fedc_dtype dt);

#endif
