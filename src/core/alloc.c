/* The replaceable allocator and its fault-injection hook.
 *
 * Every allocation in the library comes through fedc_malloc/fedc_realloc, so a
 * test can make the Nth one fail and prove that each failure path returns
 * FEDC_ENOMEM without leaking (see tests/test_alloc_failure.c). */
#define _DEFAULT_SOURCE /* madvise */
#include "core/internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

/* The library's large blocks (an executor's planned memory, a cohort's result
 * slots, a round's batches) are touched page by page the first time they are
 * used, and a page fault is dear in a virtual machine: the EMNIST CNN's round at
 * 2 threads took 53,000 faults, ~0.3 s of system time in a 3 s job. Asked for
 * 2 MB pages (transparent huge pages, which the kernel gives on request in its
 * default "madvise" mode), the same memory takes 1/512 of the faults, and the
 * TLB covers more of it. Only the whole 2 MB pages inside a block are asked for,
 * so no byte is spent on alignment; where the kernel has no such pages the
 * request fails and nothing changes. */
#define HUGE_PAGE ((uintptr_t)2 << 20)

static void *prefer_huge_pages(void *p, size_t size) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p && size >= 2 * HUGE_PAGE) {
        uintptr_t first = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        uintptr_t end = ((uintptr_t)p + size) & ~(HUGE_PAGE - 1);
        (void)madvise((void *)first, end - first, MADV_HUGEPAGE);
    }
#else
    (void)size;
#endif
    return p;
}

static void *libc_malloc(void *ctx, size_t size) { (void)ctx; return prefer_huge_pages(malloc(size), size); }
static void *libc_realloc(void *ctx, void *p, size_t size) { (void)ctx; return prefer_huge_pages(realloc(p, size), size); }
static void libc_free(void *ctx, void *p) { (void)ctx; free(p); }

static fedc_allocator current = {libc_malloc, libc_realloc, libc_free, NULL};

/* Counted with atomics: worker threads allocate too. */
static atomic_uint_fast64_t alloc_count;
static atomic_uint_fast64_t fail_at; /* 0 = never fail */

void fedc_set_allocator(const fedc_allocator *a) {
    static const fedc_allocator libc = {libc_malloc, libc_realloc, libc_free, NULL};
    current = a ? *a : libc;
}

uint64_t fedc__alloc_fail_after(uint64_t n) {
    uint64_t made = atomic_exchange(&alloc_count, 0);
    atomic_store(&fail_at, n);
    return made;
}

/* True when fault injection says this allocation must fail. */
static int injected_failure(void) {
    uint64_t k = atomic_fetch_add(&alloc_count, 1) + 1;
    uint64_t at = atomic_load(&fail_at);
    return at != 0 && k >= at;
}

void *fedc_malloc(size_t size) {
    if (injected_failure()) return NULL;
    return current.malloc(current.ctx, size ? size : 1);
}

void *fedc_calloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return NULL;
    void *p = fedc_malloc(count * size);
    if (p) memset(p, 0, count * size);
    return p;
}

void *fedc_realloc(void *ptr, size_t size) {
    if (injected_failure()) return NULL;
    return current.realloc(current.ctx, ptr, size ? size : 1);
}

void fedc_free(void *ptr) {
    if (ptr) current.free(current.ctx, ptr);
}

void *fedc__list(int n, size_t size) {
    void *list = fedc_calloc((size_t)(n > 0 ? n : 1), size);
    if (!list) fedc_error(FEDC_ENOMEM, "out of memory for a list of %d items of %zu bytes", n, size);
    return list;
}
