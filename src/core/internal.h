/* core/internal.h — what the library's own layers share from core and users do
 * not see (internal). */
#ifndef FEDC_CORE_INTERNAL_H
#define FEDC_CORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fedc/core.h"

/* A zeroed list of n items of `size` bytes (at least one item) on the heap: the
 * programs of large models have thousands of operands, outputs and parameters, so
 * no such list lives on the stack. NULL, with the message set, when out of memory.
 * Free with fedc_free. */
void *fedc__list(int n, size_t size);

/* Fault injection for tests: the `n`th allocation from now (1-based) and every
 * one after it fails; 0 turns injection off. Returns how many allocations have
 * been made since the last call, so a test can count a whole operation's
 * allocations and then fail each of them in turn. */
uint64_t fedc__alloc_fail_after(uint64_t n);

/* A list of n program values (fedc_value is int32_t, fedc/program.h). */
static inline int32_t *fedc__values(int n) { return (int32_t *)fedc__list(n, sizeof(int32_t)); }

/* What every thread of a pool does first, and the thread that creates a pool
 * (src/core/pool.c): `start` returns false when the thread cannot run the pool's
 * work, and the pool then fails with error()'s status and message. Set once,
 * before main, by the kernels (src/kernels/fast_blas.c reserves OpenBLAS's
 * per-thread buffer); unset, a thread starts with nothing. */
void fedc__pool_on_thread_start(bool (*start)(void), fedc_status (*error)(void));

#endif
