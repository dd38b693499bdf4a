/* core/internal.h — what the library's own layers share from core and users do
 * not see (internal). */
#ifndef FEDC_CORE_INTERNAL_H
#define FEDC_CORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "fedc/core.h"

/* A zeroed list of n items of `size` bytes (at least one item) on the heap: the
 * programs of large models have thousands of operands, outputs and parameters, so
 * no such list lives on the stack. NULL, with the message set, when out of memory.
 * Free with fedc_free. */
void *fedc__list(int n, size_t size);

/* A list of n program values (fedc_value is int32_t, fedc/program.h). */
static inline int32_t *fedc__values(int n) { return (int32_t *)fedc__list(n, sizeof(int32_t)); }

#endif
