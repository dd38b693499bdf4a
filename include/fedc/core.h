/*
 * fedc/core.h — status codes, error messages, allocation, arenas, the thread pool
 * and the counter-based random number generator.
 *
 * Every fallible function returns a fedc_status. FEDC_OK is zero, so
 *
 *     fedc_status st = fedc_something(...);
 *     if (st) fprintf(stderr, "%s: %s\n", fedc_status_str(st), fedc_errmsg());
 *
 * is the whole error-handling idiom. fedc_errmsg() is thread-local and says what
 * failed and where ("matmul %4: inner dimensions differ: a is f32[3,5], b is f32[4,2]").
 *
 * Where a function hands back a new object, the out-parameter stands first in a
 * constructor (fedc_*_create, fedc_*_open: `fedc_executor_create(&ex, p, &o)`)
 * and last everywhere else, readers, parsers and transforms
 * (`fedc_program_parse(text, &p)`, `fedc_vjp(p, wrt, n, &g)`). The caller owns what
 * it gets back, and frees it with the matching fedc_*_destroy.
 */
#ifndef FEDC_CORE_H
#define FEDC_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "fedc/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- status -- */

/* X(name, text). Append only: the numeric values are part of the ABI. */
#define FEDC_STATUS_TABLE(X)                                         \
    X(OK, "ok")                                                      \
    X(EINVAL, "invalid argument")                                    \
    X(ENOMEM, "out of memory")                                       \
    X(ETYPE, "type error")                                           \
    X(ESHAPE, "shape error")                                         \
    X(EPARSE, "parse error")                                         \
    X(EIO, "input/output error")                                     \
    X(ENOTFOUND, "not found")                                        \
    X(EUNSUPPORTED, "unsupported")                                   \
    X(ERANGE, "value out of range")                                  \
    X(ENONFINITE, "non-finite value")                                \
    X(EINTERNAL, "internal error")

typedef enum fedc_status {
#define FEDC__STATUS_ENUM(name, text) FEDC_##name,
    FEDC_STATUS_TABLE(FEDC__STATUS_ENUM)
#undef FEDC__STATUS_ENUM
    FEDC_STATUS_COUNT
} fedc_status;

/* A short static description of a status code ("out of memory"). */
FEDC_API const char *fedc_status_str(fedc_status status);

/* The detail message of the last error set on this thread: what failed and where.
 * Valid until the next fedc call on this thread that fails. Never NULL. */
FEDC_API const char *fedc_errmsg(void);

/* Sets this thread's detail message (printf-style) and returns `status`.
 * Library code uses it as `return fedc_error(FEDC_EINVAL, "...", ...);`. */
FEDC_API fedc_status fedc_error(fedc_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
FEDC_API fedc_status fedc_verror(fedc_status status, const char *fmt, va_list ap);

/* ------------------------------------------------------------ allocation -- */

/* Every allocation the library makes goes through these three functions.
 * A program may replace them (before creating any fedc object) with its own. */
typedef struct fedc_allocator {
    void *(*malloc)(void *ctx, size_t size);
    void *(*realloc)(void *ctx, void *ptr, size_t size);
    void (*free)(void *ctx, void *ptr);
    void *ctx;
} fedc_allocator;

/* Installs `a` (NULL restores the C library's malloc/realloc/free). */
FEDC_API void fedc_set_allocator(const fedc_allocator *a);

FEDC_API void *fedc_malloc(size_t size);              /* NULL on failure, never aborts */
FEDC_API void *fedc_calloc(size_t count, size_t size); /* zeroed; NULL on overflow too */
FEDC_API void *fedc_realloc(void *ptr, size_t size);
FEDC_API void fedc_free(void *ptr);                    /* safe on NULL */

/* ----------------------------------------------------------------- arena -- */

/* A bump allocator: allocations are freed all at once by reset (or back to a
 * mark). Blocks are kept across resets, so a loop that allocates the same
 * amounts every iteration allocates from the system only in its first one. */
typedef struct fedc_arena_block fedc_arena_block;
typedef struct fedc_arena {
    fedc_arena_block *head;  /* block being filled */
    fedc_arena_block *first; /* chain of all blocks, oldest first */
    size_t block_size;       /* minimum size of a new block */
} fedc_arena;

typedef struct fedc_arena_mark {
    fedc_arena_block *block;
    size_t used;
} fedc_arena_mark;

FEDC_API void fedc_arena_init(fedc_arena *a, size_t block_size); /* caller-owned struct */
FEDC_API void fedc_arena_release(fedc_arena *a);                 /* frees every block */
/* `align` is a power of two; returns NULL (with FEDC_ENOMEM's message) on failure. */
FEDC_API void *fedc_arena_alloc(fedc_arena *a, size_t size, size_t align);
FEDC_API fedc_arena_mark fedc_arena_mark_get(const fedc_arena *a);
FEDC_API void fedc_arena_reset_to(fedc_arena *a, fedc_arena_mark mark);
FEDC_API void fedc_arena_reset(fedc_arena *a);
FEDC_API size_t fedc_arena_capacity(const fedc_arena *a); /* bytes held from the system */

/* ----------------------------------------------------------------- files -- */

/* Creates `dir` and every missing directory above it, as mkdir -p does; FEDC_OK if
 * it is a directory already. FEDC_EIO names the directory that cannot be made (or
 * a file standing in its place). */
FEDC_API fedc_status fedc_make_dirs(const char *dir);

/* ----------------------------------------------------------------- clock -- */

/* Seconds on a monotonic clock: only differences of two readings mean anything. */
FEDC_API double fedc_seconds(void);

/* ----------------------------------------------------------- thread pool -- */

typedef struct fedc_pool fedc_pool;

/* A task of a parallel-for: called once for each index in [0, n), on some
 * worker. `worker` in [0, nthreads) identifies the calling thread, so a task can
 * use per-worker scratch without locks. */
typedef void (*fedc_pool_task)(void *ctx, int64_t index, int worker);

/* nthreads >= 1; the calling thread is worker 0 and nthreads-1 threads are started. */
FEDC_API fedc_status fedc_pool_create(fedc_pool **out, int nthreads);
FEDC_API void fedc_pool_destroy(fedc_pool *pool); /* safe on NULL */
FEDC_API int fedc_pool_threads(const fedc_pool *pool);
/* Runs task(ctx, i, worker) for every i in [0, n) and returns when all are done.
 * Indices are handed out in increasing order; which worker runs which index is
 * not fixed, so results that must be deterministic are written per index. */
FEDC_API void fedc_pool_run(fedc_pool *pool, int64_t n, fedc_pool_task task, void *ctx);

/* ------------------------------------------------------------------- rng -- */

/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
 * SC 2011): a counter-based generator. The same (key, counter) always gives the
 * same four words, so random streams are functions of what they are for, not of
 * which thread draws them. */
typedef struct fedc_philox_key {
    uint32_t k[2];
} fedc_philox_key;
typedef struct fedc_philox_ctr {
    uint32_t c[4];
} fedc_philox_ctr;

FEDC_API fedc_philox_ctr fedc_philox4x32(fedc_philox_ctr ctr, fedc_philox_key key);

/* A random stream keyed by what it is for. Streams with different (seed, round,
 * client, step) are independent; the stream's i-th block of four words is
 * philox(counter = {i_lo, i_hi, mix(round, client), step}, key = seed). */
typedef struct fedc_rng_stream {
    fedc_philox_key key;
    uint32_t c2, c3; /* upper counter words fixed by the stream */
} fedc_rng_stream;

FEDC_API fedc_rng_stream fedc_rng_stream_make(uint64_t seed, uint32_t round, uint32_t client,
                                     uint32_t step);
/* The 4 words of block `block` of the stream. */
FEDC_API fedc_philox_ctr fedc_rng_block(fedc_rng_stream s, uint64_t block);
/* Uniform floats in [0, 1) with 24 bits of randomness: element i of the stream. */
FEDC_API float fedc_rng_uniform_f32(fedc_rng_stream s, uint64_t i);
/* Uniform doubles in [0, 1) with 53 bits: uses two words, element i of the stream. */
FEDC_API double fedc_rng_uniform_f64(fedc_rng_stream s, uint64_t i);
/* Standard normal (Box-Muller on the stream's element pair i). */
FEDC_API double fedc_rng_normal(fedc_rng_stream s, uint64_t i);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_CORE_H */
