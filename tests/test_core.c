/* Tests for the core layer (fedc/core.h): status strings and thread-local error
 * messages, the allocator and its fault injection, arenas, the thread pool and
 * the Philox random number generator with its streams. Leak checks use a
 * counting allocator installed through fedc_set_allocator, so they hold with or
 * without a sanitizer. */
#include "core/internal.h"
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Huge requests must come back as NULL, which is what fedc_malloc promises;
 * the address and thread sanitizers abort on them instead unless told otherwise. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_CORE_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define TEST_CORE_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(TEST_CORE_ASAN)
#define TEST_CORE_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(TEST_CORE_TSAN)
#define TEST_CORE_TSAN 1
#endif
#ifdef TEST_CORE_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#endif
#ifdef TEST_CORE_TSAN
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) { return "allocator_may_return_null=1"; }
#endif

/* ------------------------------------------------------ counting allocator -- */

/* Live-allocation count of everything that went through fedc_*alloc while the
 * counting allocator was installed. Atomic because pool workers may allocate. */
static atomic_long live_allocs;

static void *counting_malloc(void *ctx, size_t size) {
    (void)ctx;
    void *p = malloc(size);
    if (p) atomic_fetch_add(&live_allocs, 1);
    return p;
}

static void *counting_realloc(void *ctx, void *ptr, size_t size) {
    (void)ctx;
    void *p = realloc(ptr, size);
    if (p && !ptr) atomic_fetch_add(&live_allocs, 1);
    return p;
}

static void counting_free(void *ctx, void *ptr) {
    (void)ctx;
    if (ptr) atomic_fetch_sub(&live_allocs, 1);
    free(ptr);
}

static void counting_begin(void) {
    static const fedc_allocator counting = {counting_malloc, counting_realloc, counting_free,
                                            NULL};
    atomic_store(&live_allocs, 0);
    fedc_set_allocator(&counting);
}

/* Restores libc and returns how many allocations are still live. */
static long counting_end(void) {
    fedc_set_allocator(NULL);
    return atomic_load(&live_allocs);
}

/* ------------------------------------------------------------------ status -- */

static void test_status_str(void) {
    static const struct {
        fedc_status status;
        const char *text;
    } want[] = {
        {FEDC_OK, "ok"},
        {FEDC_EINVAL, "invalid argument"},
        {FEDC_ENOMEM, "out of memory"},
        {FEDC_ETYPE, "type error"},
        {FEDC_ESHAPE, "shape error"},
        {FEDC_EPARSE, "parse error"},
        {FEDC_EIO, "input/output error"},
        {FEDC_ENOTFOUND, "not found"},
        {FEDC_EUNSUPPORTED, "unsupported"},
        {FEDC_ERANGE, "value out of range"},
        {FEDC_ENONFINITE, "non-finite value"},
        {FEDC_EINTERNAL, "internal error"},
    };
    /* A new code must get a row here too. */
    CHECK_EQ_INT(FEDC_COUNT_OF(want), FEDC_STATUS_COUNT);
    CHECK_EQ_INT(FEDC_OK, 0);
    for (int i = 0; i < FEDC_COUNT_OF(want); i++) {
        CHECK_EQ_INT(want[i].status, i); /* the values are ABI: append only */
        const char *got = fedc_status_str(want[i].status);
        CHECK_MSG(got && strcmp(got, want[i].text) == 0, "status %d: \"%s\" != \"%s\"", i,
                  got ? got : "(null)", want[i].text);
    }
    const fedc_status bad[] = {FEDC_STATUS_COUNT, (fedc_status)(FEDC_STATUS_COUNT + 100),
                               (fedc_status)-1};
    for (int i = 0; i < FEDC_COUNT_OF(bad); i++) {
        const char *got = fedc_status_str(bad[i]);
        CHECK_MSG(got && strcmp(got, "unknown status") == 0, "status %d: \"%s\"", (int)bad[i],
                  got ? got : "(null)");
    }
}

static void *set_error_on_other_thread(void *arg) {
    (void)arg;
    fedc_error(FEDC_EIO, "from the other thread");
    return NULL;
}

static void test_error_sets_errmsg(void) {
    CHECK(fedc_errmsg() != NULL);
    CHECK_EQ_INT(fedc_error(FEDC_ESHAPE, "matmul %%%d: %s", 4, "inner dims differ"), FEDC_ESHAPE);
    CHECK(strcmp(fedc_errmsg(), "matmul %4: inner dims differ") == 0);
    CHECK_ERR(fedc_error(FEDC_EPARSE, "line %d", 7), FEDC_EPARSE, "line 7");

    /* A message longer than the buffer is cut, not overrun. */
    char big[4000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    fedc_error(FEDC_EINVAL, "%s", big);
    size_t len = strlen(fedc_errmsg());
    CHECK(len > 0 && len < sizeof big - 1);

    /* The message is per thread: another thread's error leaves ours alone. */
    fedc_error(FEDC_EINVAL, "ours");
    pthread_t t;
    CHECK_EQ_INT(pthread_create(&t, NULL, set_error_on_other_thread, NULL), 0);
    pthread_join(t, NULL);
    CHECK(strcmp(fedc_errmsg(), "ours") == 0);
}

/* -------------------------------------------------------------- allocation -- */

static void test_alloc_fail_after(void) {
    fedc__alloc_fail_after(0);
    void *a = fedc_malloc(8), *b = fedc_calloc(2, 8);
    void *c = fedc_realloc(NULL, 8);
    CHECK(a && b && c);
    CHECK_EQ_INT(fedc__alloc_fail_after(3), 3); /* malloc, calloc and realloc all count */
    void *d = fedc_malloc(8);                  /* 1st: ok */
    void *e = fedc_malloc(8);                  /* 2nd: ok */
    void *f = fedc_malloc(8);                  /* 3rd: fails */
    void *g = fedc_realloc(a, 64);             /* 4th: fails, and a stays valid */
    CHECK(d && e);
    CHECK(f == NULL);
    CHECK(g == NULL);
    CHECK_EQ_INT(fedc__alloc_fail_after(0), 4);
    void *h = fedc_malloc(8); /* injection off again */
    CHECK(h != NULL);
    CHECK_EQ_INT(fedc__alloc_fail_after(0), 1);

    /* n = 1 fails the very next allocation. */
    fedc__alloc_fail_after(1);
    void *i = fedc_malloc(1);
    fedc__alloc_fail_after(0);
    CHECK(i == NULL);

    fedc_free(a), fedc_free(b), fedc_free(c), fedc_free(d), fedc_free(e), fedc_free(h);
    fedc_free(NULL); /* safe */
}

static void test_calloc(void) {
    CHECK(fedc_calloc(SIZE_MAX, 2) == NULL);
    CHECK(fedc_calloc(2, SIZE_MAX) == NULL);
    CHECK(fedc_calloc(SIZE_MAX / 2 + 1, 2) == NULL);
    CHECK(fedc_calloc((size_t)1 << (sizeof(size_t) * 4), (size_t)1 << (sizeof(size_t) * 4)) ==
          NULL);
    unsigned char *p = fedc_calloc(100, 3);
    CHECK(p != NULL);
    int nonzero = 0;
    for (int i = 0; p && i < 300; i++) nonzero += p[i] != 0;
    CHECK_EQ_INT(nonzero, 0);
    fedc_free(p);
    void *z = fedc_malloc(0); /* a zero-byte request still gives a freeable pointer */
    CHECK(z != NULL);
    fedc_free(z);
}

static void test_set_allocator(void) {
    counting_begin();
    void *a = fedc_malloc(10);
    void *b = fedc_calloc(3, 4);
    void *c = fedc_realloc(NULL, 5);
    c = fedc_realloc(c, 500);
    long during = atomic_load(&live_allocs);
    fedc_free(a), fedc_free(b), fedc_free(c);
    CHECK_EQ_INT(during, 3);
    CHECK_EQ_INT(counting_end(), 0);
}

/* ------------------------------------------------------------------- arena -- */

static void test_arena_alignment(void) {
    fedc_arena a;
    fedc_arena_init(&a, 1024);
    CHECK_EQ_INT(fedc_arena_capacity(&a), 0);
    for (int round = 0; round < 3; round++) {
        for (size_t align = 1; align <= 4096; align *= 2) {
            /* Odd sizes in between so the next allocation starts misaligned. */
            unsigned char *odd = fedc_arena_alloc(&a, 3, 1);
            unsigned char *p = fedc_arena_alloc(&a, 40, align);
            CHECK(odd && p);
            if (!p || !odd) break;
            CHECK_MSG((uintptr_t)p % align == 0, "align %zu: %p", align, (void *)p);
            CHECK_MSG((uintptr_t)p % _Alignof(max_align_t) == 0, "align %zu: %p", align,
                      (void *)p);
            memset(p, 0xAB, 40); /* the sanitizer checks that it is ours */
            odd[0] = odd[2] = 1;
        }
    }
    fedc_arena_release(&a);
}

static void test_arena_mark_reset_to(void) {
    fedc_arena a;
    fedc_arena_init(&a, 256);
    /* A mark taken on an empty arena resets it. */
    fedc_arena_mark empty = fedc_arena_mark_get(&a);
    char *x = fedc_arena_alloc(&a, 100, 8);
    fedc_arena_mark m = fedc_arena_mark_get(&a);
    char *y = fedc_arena_alloc(&a, 100, 8);
    char *z = fedc_arena_alloc(&a, 1000, 8); /* spills into another block */
    CHECK(x && y && z);
    CHECK(x != y && y != z);
    size_t cap = fedc_arena_capacity(&a);

    fedc_arena_reset_to(&a, m);
    char *y2 = fedc_arena_alloc(&a, 100, 8);
    char *z2 = fedc_arena_alloc(&a, 1000, 8);
    CHECK(y2 == y); /* the same bytes are handed out again */
    CHECK(z2 == z);
    CHECK_EQ_INT(fedc_arena_capacity(&a), cap);

    fedc_arena_reset_to(&a, empty);
    char *x2 = fedc_arena_alloc(&a, 100, 8);
    CHECK(x2 == x);
    CHECK_EQ_INT(fedc_arena_capacity(&a), cap);
    fedc_arena_release(&a);
}

static void test_arena_reset_reuses_blocks(void) {
    counting_begin();
    fedc_arena a;
    fedc_arena_init(&a, 4096);
    /* Sizes that need several blocks, one of them bigger than the block size. */
    static const size_t sizes[] = {100, 3000, 5000, 100, 2000, 64};
    size_t cap = 0;
    long allocs_after_first = 0;
    for (int iter = 0; iter < 50; iter++) {
        fedc_arena_reset(&a);
        for (int k = 0; k < FEDC_COUNT_OF(sizes); k++) {
            void *p = fedc_arena_alloc(&a, sizes[k], 32);
            CHECK(p != NULL);
            if (p) memset(p, k, sizes[k]);
        }
        if (iter == 0) {
            cap = fedc_arena_capacity(&a);
            allocs_after_first = atomic_load(&live_allocs);
        }
        CHECK_MSG(fedc_arena_capacity(&a) == cap, "iteration %d: capacity %zu, first %zu", iter,
                  fedc_arena_capacity(&a), cap);
    }
    CHECK(cap >= 100 + 3000 + 5000 + 100 + 2000 + 64);
    /* The steady state asks the system for nothing. */
    CHECK_EQ_INT(atomic_load(&live_allocs), allocs_after_first);
    fedc_arena_release(&a);
    CHECK_EQ_INT(fedc_arena_capacity(&a), 0);
    CHECK_EQ_INT(counting_end(), 0);
}

static void test_arena_large(void) {
    fedc_arena a;
    fedc_arena_init(&a, 1024);
    size_t big = 1 << 20;
    unsigned char *p = fedc_arena_alloc(&a, big, 64);
    CHECK(p != NULL);
    if (p) {
        CHECK((uintptr_t)p % 64 == 0);
        memset(p, 0x5A, big);
        CHECK(p[0] == 0x5A && p[big - 1] == 0x5A);
    }
    CHECK(fedc_arena_capacity(&a) >= big);
    /* Small allocations still work around the big one. */
    unsigned char *q = fedc_arena_alloc(&a, 10, 16);
    CHECK(q != NULL);
    /* An impossible size fails cleanly instead of wrapping around. */
    CHECK(fedc_arena_alloc(&a, SIZE_MAX - 8, 16) == NULL);
    CHECK(strstr(fedc_errmsg(), "arena") != NULL);
    fedc_arena_release(&a);
    /* A zero block size picks a default rather than failing. */
    fedc_arena_init(&a, 0);
    CHECK(a.block_size > 0);
    CHECK(fedc_arena_alloc(&a, 1, 1) != NULL);
    fedc_arena_release(&a);
}

/* Sizes whose block, header included, does not fit in a size_t must fail
 * too, not wrap around to a tiny block that claims to hold them. */
static void test_arena_huge_sizes(void) {
    static const size_t huge[] = {SIZE_MAX, SIZE_MAX - 8, SIZE_MAX - 40, SIZE_MAX - 4096,
                                  SIZE_MAX / 2 + 1};
    for (int i = 0; i < FEDC_COUNT_OF(huge); i++) {
        fedc_arena a;
        fedc_arena_init(&a, 1024);
        void *p = fedc_arena_alloc(&a, huge[i], 16);
        CHECK_MSG(p == NULL, "size SIZE_MAX - %zu: got %p", SIZE_MAX - huge[i], p);
        CHECK_MSG(fedc_arena_capacity(&a) < 4096, "size SIZE_MAX - %zu: capacity %zu",
                  SIZE_MAX - huge[i], fedc_arena_capacity(&a));
        fedc_arena_release(&a);
    }
}

static void test_arena_release_and_oom(void) {
    counting_begin();
    fedc_arena a;
    fedc_arena_init(&a, 512);
    for (int i = 0; i < 20; i++) CHECK(fedc_arena_alloc(&a, 300, 16) != NULL);
    CHECK(atomic_load(&live_allocs) > 1);
    fedc_arena_release(&a);
    CHECK_EQ_INT(fedc_arena_capacity(&a), 0);
    CHECK(a.head == NULL && a.first == NULL);
    CHECK_EQ_INT(atomic_load(&live_allocs), 0);
    /* Usable again after release. */
    CHECK(fedc_arena_alloc(&a, 10, 16) != NULL);

    /* When the system says no, alloc returns NULL with an ENOMEM-style message
     * and the arena stays usable. */
    fedc_error(FEDC_OK, "%s", "cleared");
    fedc__alloc_fail_after(1);
    void *p = fedc_arena_alloc(&a, 4096, 16);
    fedc__alloc_fail_after(0);
    CHECK(p == NULL);
    CHECK(strstr(fedc_errmsg(), "arena") != NULL);
    CHECK(fedc_arena_alloc(&a, 4096, 16) != NULL);
    fedc_arena_release(&a);
    CHECK_EQ_INT(counting_end(), 0);
}

/* -------------------------------------------------------------------- pool -- */

#define PROBE_MAX_N 1000
#define PROBE_MAX_WORKERS 64

/* What a pool task saw. Each worker writes only its own `last` slot, so a
 * repeated worker id shows up as a data race under -fsanitize=thread. */
typedef struct pool_probe {
    int nthreads;
    atomic_llong sum;
    atomic_int calls;
    atomic_int bad_worker;
    atomic_int out_of_order;
    atomic_int hits[PROBE_MAX_N];
    int64_t last[PROBE_MAX_WORKERS];
} pool_probe;

static void probe_task(void *ctx, int64_t index, int worker) {
    pool_probe *p = ctx;
    atomic_fetch_add(&p->calls, 1);
    atomic_fetch_add(&p->sum, index);
    if (index >= 0 && index < PROBE_MAX_N) atomic_fetch_add(&p->hits[index], 1);
    if (worker < 0 || worker >= p->nthreads || worker >= PROBE_MAX_WORKERS) {
        atomic_fetch_add(&p->bad_worker, 1);
        return;
    }
    /* Indices are handed out in increasing order, so each worker sees them rise. */
    if (index <= p->last[worker]) atomic_fetch_add(&p->out_of_order, 1);
    p->last[worker] = index;
}

static void probe_reset(pool_probe *p, int nthreads) {
    memset(p, 0, sizeof *p); /* atomics with no padding bits: all-zero is zero */
    p->nthreads = nthreads;
    for (int w = 0; w < PROBE_MAX_WORKERS; w++) p->last[w] = -1;
}

static void check_probe(const pool_probe *p, int64_t n, int nthreads) {
    CHECK_MSG(atomic_load(&p->calls) == n, "%d threads, n %lld: %d calls", nthreads, (long long)n,
              atomic_load(&p->calls));
    CHECK_MSG(atomic_load(&p->sum) == n * (n - 1) / 2, "%d threads, n %lld: sum %lld", nthreads,
              (long long)n, (long long)atomic_load(&p->sum));
    for (int64_t i = 0; i < n; i++) {
        int h = atomic_load(&p->hits[i]);
        CHECK_MSG(h == 1, "%d threads: index %lld ran %d times", nthreads, (long long)i, h);
        if (h != 1) break;
    }
    CHECK_EQ_INT(atomic_load(&p->bad_worker), 0);
    CHECK_EQ_INT(atomic_load(&p->out_of_order), 0);
}

static void test_pool_run(void) {
    static pool_probe probe; /* static: too big for some thread stacks */
    static const int64_t ns[] = {0, 1, 2, 7, PROBE_MAX_N};
    for (int nthreads = 1; nthreads <= 4; nthreads++) {
        fedc_pool *pool = NULL;
        CHECK_OK(fedc_pool_create(&pool, nthreads));
        if (!pool) continue;
        CHECK_EQ_INT(fedc_pool_threads(pool), nthreads);
        for (int k = 0; k < FEDC_COUNT_OF(ns); k++) {
            probe_reset(&probe, nthreads);
            fedc_pool_run(pool, ns[k], probe_task, &probe);
            check_probe(&probe, ns[k], nthreads);
        }
        fedc_pool_destroy(pool);
    }
}

/* Many back-to-back runs on one pool: a lost wake-up or a missed generation
 * shows up here as a hang. */
static void test_pool_many_runs(void) {
    static pool_probe probe;
    const int nthreads = 8;
    fedc_pool *pool = NULL;
    CHECK_OK(fedc_pool_create(&pool, nthreads));
    if (!pool) return;
    for (int iter = 0; iter < 2000; iter++) {
        int64_t n = (iter * 37) % 50;
        probe_reset(&probe, nthreads);
        fedc_pool_run(pool, n, probe_task, &probe);
        check_probe(&probe, n, nthreads);
        if (fedc_test_failures()) break;
    }
    fedc_pool_destroy(pool);
    /* Create and destroy straight away: workers that have not started yet
     * must still be told to stop. */
    for (int iter = 0; iter < 50; iter++) {
        CHECK_OK(fedc_pool_create(&pool, 4));
        fedc_pool_destroy(pool);
    }
}

/* Tasks write results per index, so the output is the same whatever the
 * thread count: the pattern fedc code relies on for reproducibility. */
static void square_task(void *ctx, int64_t index, int worker) {
    (void)worker;
    double *out = ctx;
    out[index] = (double)index * (double)index;
}

static void test_pool_per_index_results(void) {
    enum { N = 777 };
    double out[N];
    for (int nthreads = 1; nthreads <= 6; nthreads++) {
        fedc_pool *pool = NULL;
        CHECK_OK(fedc_pool_create(&pool, nthreads));
        memset(out, 0, sizeof out);
        fedc_pool_run(pool, N, square_task, out);
        int wrong = 0;
        for (int i = 0; i < N; i++) wrong += out[i] != (double)i * i;
        CHECK_EQ_INT(wrong, 0);
        fedc_pool_destroy(pool);
    }
    /* A NULL pool runs inline as a single worker. */
    static pool_probe probe;
    probe_reset(&probe, 1);
    fedc_pool_run(NULL, 100, probe_task, &probe);
    check_probe(&probe, 100, 1);
    CHECK_EQ_INT(fedc_pool_threads(NULL), 1);
}

static void test_pool_invalid(void) {
    fedc_pool *pool = (fedc_pool *)&pool; /* create must clear it on failure */
    CHECK_ERR(fedc_pool_create(&pool, 0), FEDC_EINVAL, "nthreads");
    CHECK(pool == NULL);
    pool = (fedc_pool *)&pool;
    CHECK_ERR(fedc_pool_create(&pool, -3), FEDC_EINVAL, "-3");
    CHECK(pool == NULL);
    fedc_pool_destroy(NULL); /* safe */
}

/* Fails each allocation of pool creation in turn: every one must give ENOMEM,
 * no pool, and no leak. */
static void test_pool_create_enomem(void) {
    static const int counts[] = {1, 2, 4};
    for (int c = 0; c < FEDC_COUNT_OF(counts); c++) {
        int nthreads = counts[c];
        counting_begin();
        fedc_pool *pool = NULL;
        fedc__alloc_fail_after(0);
        CHECK_OK(fedc_pool_create(&pool, nthreads));
        uint64_t total = fedc__alloc_fail_after(0);
        fedc_pool_destroy(pool);
        CHECK(total >= 1);
        for (uint64_t k = 1; k <= total; k++) {
            pool = (fedc_pool *)&pool;
            fedc__alloc_fail_after(k);
            fedc_status st = fedc_pool_create(&pool, nthreads);
            fedc__alloc_fail_after(0);
            CHECK_ERR(st, FEDC_ENOMEM, "pool");
            CHECK(pool == NULL);
            CHECK_MSG(atomic_load(&live_allocs) == 0,
                      "%d threads, failing allocation %llu: %ld leaked", nthreads,
                      (unsigned long long)k, atomic_load(&live_allocs));
            if (st == FEDC_OK) fedc_pool_destroy(pool);
        }
        /* One more than needed succeeds. */
        fedc__alloc_fail_after(total + 1);
        CHECK_OK(fedc_pool_create(&pool, nthreads));
        fedc__alloc_fail_after(0);
        fedc_pool_destroy(pool);
        CHECK_EQ_INT(counting_end(), 0);
    }
}

/* --------------------------------------------------------------------- rng -- */

typedef struct philox_kat {
    uint32_t ctr[4], key[2], want[4];
} philox_kat;

/* philox4x32 10 rows of Random123's examples/kat_vectors (columns: CTR, KEY,
 * EXPECTED). The first three are the standard zero / all-ones / pi-digits
 * vectors; the rest are single-bit and pi-digit rows from the extended,
 * gentests.py-generated version of the same file. */
static const philox_kat kats[] = {
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000}, {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    {{0x00000001, 0x00000000, 0x00000000, 0x00000000}, {0x00000001, 0x00000000},
     {0xac08141b, 0xdfc5ccbe, 0x79c07a47, 0xa7f66093}},
    {{0x00000000, 0x00000000, 0x00000000, 0x00000001}, {0x00000001, 0x00000000},
     {0x127bee41, 0x1e047488, 0x48842b20, 0x0a393496}},
    {{0x00000000, 0x00000000, 0x80000000, 0x00000000}, {0x00000000, 0x00000001},
     {0xd9da65af, 0xeced57ba, 0xc34d2661, 0x91fe931f}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0x00000000, 0xffffffff},
     {0x08f7720c, 0x845ee9e0, 0x502ccd3d, 0xa9a00e27}},
    {{0x452821e6, 0x38d01377, 0xbe5466cf, 0x34e90c6c}, {0x00000000, 0x80000000},
     {0x94ca5566, 0x14924b2f, 0x28214292, 0x59faeaee}},
};

static void test_philox_kat(void) {
    for (int i = 0; i < FEDC_COUNT_OF(kats); i++) {
        fedc_philox_ctr ctr;
        fedc_philox_key key = {{kats[i].key[0], kats[i].key[1]}};
        memcpy(ctr.c, kats[i].ctr, sizeof ctr.c);
        fedc_philox_ctr got = fedc_philox4x32(ctr, key);
        CHECK_MSG(memcmp(got.c, kats[i].want, sizeof got.c) == 0,
                  "kat %d: got %08x %08x %08x %08x, want %08x %08x %08x %08x", i, got.c[0],
                  got.c[1], got.c[2], got.c[3], kats[i].want[0], kats[i].want[1],
                  kats[i].want[2], kats[i].want[3]);
    }
}

static int ctr_eq(fedc_philox_ctr a, fedc_philox_ctr b) {
    return memcmp(a.c, b.c, sizeof a.c) == 0;
}

/* The stream is exactly the documented counter layout over Philox. */
static void test_rng_stream_layout(void) {
    fedc_rng_stream s = fedc_rng_stream_make(0x0123456789ABCDEFull, 5, 17, 99);
    CHECK_EQ_INT(s.key.k[0], 0x89ABCDEFu);
    CHECK_EQ_INT(s.key.k[1], 0x01234567u);
    CHECK_EQ_INT(s.c3, 99);
    static const uint64_t blocks[] = {0, 1, 2, 0xFFFFFFFFull, 0x100000005ull, UINT64_MAX};
    for (int k = 0; k < FEDC_COUNT_OF(blocks); k++) {
        uint64_t b = blocks[k];
        fedc_philox_ctr ctr = {{(uint32_t)b, (uint32_t)(b >> 32), s.c2, s.c3}};
        CHECK_MSG(ctr_eq(fedc_rng_block(s, b), fedc_philox4x32(ctr, s.key)), "block %llu",
                  (unsigned long long)b);
    }
    /* c2 depends on (round, client) only. */
    CHECK_EQ_INT(fedc_rng_stream_make(1, 5, 17, 0).c2, s.c2);
    /* Element i of the f32 view is the top 24 bits of word i % 4 of block i / 4;
     * element i of the f64 view is words (0,1) or (2,3) of block i / 2. */
    for (uint64_t b = 0; b < 16; b++) {
        fedc_philox_ctr w = fedc_rng_block(s, b);
        for (int j = 0; j < 4; j++) {
            float want = (float)(w.c[j] >> 8) / 16777216.0f;
            CHECK(fedc_rng_uniform_f32(s, 4 * b + (uint64_t)j) == want);
        }
        for (int h = 0; h < 2; h++) {
            uint64_t bits = ((uint64_t)w.c[2 * h] << 21) | (w.c[2 * h + 1] >> 11);
            double want = (double)bits / 9007199254740992.0;
            CHECK(fedc_rng_uniform_f64(s, 2 * b + (uint64_t)h) == want);
        }
        /* Box-Muller on the f64 pair (2i, 2i + 1). */
        double u1 = fedc_rng_uniform_f64(s, 2 * b), u2 = fedc_rng_uniform_f64(s, 2 * b + 1);
        double z = sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2);
        CHECK_NEAR(fedc_rng_normal(s, b), z, 1e-12);
    }
}

/* Pinned outputs of the stream definition. They are not independent of the
 * code (they were produced by it), but a change here changes every experiment
 * run with fedc, so it must be deliberate. */
static void test_rng_stream_pinned(void) {
    fedc_rng_stream s = fedc_rng_stream_make(42, 3, 7, 11);
    CHECK_EQ_INT(s.c2, 0xFF839133u);
    fedc_philox_ctr b = fedc_rng_block(s, 1000);
    CHECK_EQ_INT(b.c[0], 0x66B3D626u);
    CHECK_EQ_INT(b.c[3], 0x061854A9u);
}

static void test_rng_determinism(void) {
    fedc_rng_stream a = fedc_rng_stream_make(7, 1, 2, 3), b = fedc_rng_stream_make(7, 1, 2, 3);
    for (uint64_t i = 0; i < 1000; i++) {
        CHECK(ctr_eq(fedc_rng_block(a, i), fedc_rng_block(b, i)));
        CHECK(fedc_rng_uniform_f32(a, i) == fedc_rng_uniform_f32(b, i));
        CHECK(fedc_rng_uniform_f64(a, i) == fedc_rng_uniform_f64(b, i));
        CHECK(fedc_rng_normal(a, i) == fedc_rng_normal(b, i));
        if (fedc_test_failures()) return;
    }
    /* Order of evaluation does not matter: backwards gives the same values. */
    float fwd[64];
    for (int i = 0; i < 64; i++) fwd[i] = fedc_rng_uniform_f32(a, (uint64_t)i);
    for (int i = 63; i >= 0; i--) CHECK(fedc_rng_uniform_f32(a, (uint64_t)i) == fwd[i]);
}

static void test_rng_streams_differ(void) {
    /* Changing any one of (seed, round, client, step), or the block, changes
     * the block's words. */
    static const struct {
        uint64_t seed;
        uint32_t round, client, step;
    } v[] = {
        {1, 0, 0, 0}, {2, 0, 0, 0}, {1ull << 32, 0, 0, 0}, {1, 1, 0, 0}, {1, 0, 1, 0},
        {1, 0, 0, 1}, {1, 1, 1, 1}, {1, 0, 1, 1},          {1, 1, 0, 1}, {1, 1, 1, 0},
        {1, 2, 1, 0}, {1, 1, 2, 0}, {0, 0, 0, 0},
        {UINT64_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX},
    };
    enum { NV = sizeof v / sizeof v[0], NB = 4 };
    fedc_philox_ctr out[NV * NB];
    for (int i = 0; i < NV; i++) {
        fedc_rng_stream s = fedc_rng_stream_make(v[i].seed, v[i].round, v[i].client, v[i].step);
        for (int b = 0; b < NB; b++) out[i * NB + b] = fedc_rng_block(s, (uint64_t)b);
    }
    for (int i = 0; i < NV * NB; i++) {
        for (int j = i + 1; j < NV * NB; j++) {
            CHECK_MSG(!ctr_eq(out[i], out[j]), "stream %d block %d == stream %d block %d",
                      i / NB, i % NB, j / NB, j % NB);
        }
    }
    /* Swapping round and client gives a different stream. */
    CHECK(fedc_rng_stream_make(1, 3, 5, 0).c2 != fedc_rng_stream_make(1, 5, 3, 0).c2);
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Counts equal neighbours in c2 over a rounds x clients grid. */
static int c2_collisions(uint32_t rounds, uint32_t clients) {
    size_t n = (size_t)rounds * clients;
    uint32_t *c2 = malloc(n * sizeof *c2);
    if (!c2) return -1;
    for (uint32_t r = 0; r < rounds; r++)
        for (uint32_t c = 0; c < clients; c++)
            c2[(size_t)r * clients + c] = fedc_rng_stream_make(0, r, c, 0).c2;
    qsort(c2, n, sizeof *c2, cmp_u32);
    int dup = 0;
    for (size_t i = 1; i < n; i++) dup += c2[i] == c2[i - 1];
    free(c2);
    return dup;
}

/* c2 has only 32 bits for (round, client), so it cannot be injective, but it
 * must be over the ranges federated training uses. */
static void test_rng_c2_distinct(void) {
    CHECK_EQ_INT(c2_collisions(1024, 1024), 0);
    CHECK_EQ_INT(c2_collisions(4096, 256), 0);
    CHECK_EQ_INT(c2_collisions(8, 1 << 17), 0);
}

static void test_rng_uniform(void) {
    fedc_rng_stream s = fedc_rng_stream_make(12345, 2, 9, 0);
    const int n = 100000;
    double sum32 = 0, sum64 = 0;
    int out32 = 0, out64 = 0, coarse32 = 0, coarse64 = 0;
    for (int i = 0; i < n; i++) {
        float f = fedc_rng_uniform_f32(s, (uint64_t)i);
        double d = fedc_rng_uniform_f64(s, (uint64_t)i);
        out32 += !(f >= 0.0f && f < 1.0f);
        out64 += !(d >= 0.0 && d < 1.0);
        /* Exactly 24 and 53 bits: scaling up gives a whole number. */
        double sf = (double)f * 16777216.0, sd = d * 9007199254740992.0;
        coarse32 += sf != floor(sf);
        coarse64 += sd != floor(sd);
        sum32 += f;
        sum64 += d;
    }
    CHECK_EQ_INT(out32, 0);
    CHECK_EQ_INT(out64, 0);
    CHECK_EQ_INT(coarse32, 0);
    CHECK_EQ_INT(coarse64, 0);
    CHECK_MSG(fabs(sum32 / n - 0.5) < 0.01, "f32 mean %g", sum32 / n);
    CHECK_MSG(fabs(sum64 / n - 0.5) < 0.01, "f64 mean %g", sum64 / n);
}

static void test_rng_normal(void) {
    fedc_rng_stream s = fedc_rng_stream_make(2024, 0, 3, 1);
    const int n = 100000;
    double sum = 0, sumsq = 0;
    int nonfinite = 0;
    for (int i = 0; i < n; i++) {
        double z = fedc_rng_normal(s, (uint64_t)i);
        nonfinite += !isfinite(z);
        sum += z;
        sumsq += z * z;
    }
    double mean = sum / n, var = sumsq / n - mean * mean;
    CHECK_EQ_INT(nonfinite, 0);
    CHECK_MSG(fabs(mean) < 0.02, "normal mean %g", mean);
    CHECK_MSG(fabs(var - 1) < 0.02, "normal variance %g", var);
}

/* Types read from files: counts that do not exist are -1 (and SIZE_MAX bytes),
 * never a signed overflow. */
static void test_type_count_overflow(void) {
    fedc_type t = fedc_type_make(FEDC_F32, 2, (int64_t[]){3, 4});
    CHECK_EQ_INT(fedc_type_count(&t), 12);
    CHECK_EQ_INT(fedc_type_bytes(&t), 48);
    t = fedc_type_make(FEDC_F32, 3, (int64_t[]){INT64_C(1) << 32, INT64_C(1) << 32, 2});
    CHECK_EQ_INT(fedc_type_count(&t), -1);
    CHECK(fedc_type_bytes(&t) == SIZE_MAX);
    t = fedc_type_make(FEDC_F64, 2, (int64_t[]){INT64_C(1) << 31, INT64_C(1) << 31}); /* 2^62 elements */
    CHECK_EQ_INT(fedc_type_count(&t), INT64_C(1) << 62);
    CHECK(fedc_type_bytes(&t) == SIZE_MAX); /* 2^65 bytes */
    t = fedc_type_make(FEDC_U8, 3, (int64_t[]){INT64_MAX, INT64_MAX, 0});
    CHECK_EQ_INT(fedc_type_count(&t), 0);
    CHECK_EQ_INT(fedc_type_bytes(&t), 0);
    t = fedc_type_make(FEDC_U8, 2, (int64_t[]){-1, 5});
    CHECK_EQ_INT(fedc_type_count(&t), -1);
    t = fedc_type_make(FEDC_U8, 1, (int64_t[]){7});
    t.rank = FEDC_MAX_RANK + 1;
    CHECK_EQ_INT(fedc_type_count(&t), -1);
    t = fedc_type_scalar(FEDC_I32);
    CHECK_EQ_INT(fedc_type_count(&t), 1);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"status_str", test_status_str},
        {"type_count_overflow", test_type_count_overflow},
        {"error_sets_errmsg", test_error_sets_errmsg},
        {"alloc_fail_after", test_alloc_fail_after},
        {"calloc", test_calloc},
        {"set_allocator", test_set_allocator},
        {"arena_alignment", test_arena_alignment},
        {"arena_mark_reset_to", test_arena_mark_reset_to},
        {"arena_reset_reuses_blocks", test_arena_reset_reuses_blocks},
        {"arena_large", test_arena_large},
        {"arena_huge_sizes", test_arena_huge_sizes},
        {"arena_release_and_oom", test_arena_release_and_oom},
        {"pool_run", test_pool_run},
        {"pool_many_runs", test_pool_many_runs},
        {"pool_per_index_results", test_pool_per_index_results},
        {"pool_invalid", test_pool_invalid},
        {"pool_create_enomem", test_pool_create_enomem},
        {"philox_kat", test_philox_kat},
        {"rng_stream_layout", test_rng_stream_layout},
        {"rng_stream_pinned", test_rng_stream_pinned},
        {"rng_determinism", test_rng_determinism},
        {"rng_streams_differ", test_rng_streams_differ},
        {"rng_c2_distinct", test_rng_c2_distinct},
        {"rng_uniform", test_rng_uniform},
        {"rng_normal", test_rng_normal},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
