/*
 * fast_blas.c — the fast matrix product, through OpenBLAS's CBLAS, plus the
 * process-wide BLAS setup and a single-thread sgemm throughput probe for
 * benchmarks. BLAS is pinned to one thread because the runtime already runs one
 * client per core; a second level of threads would only oversubscribe the
 * machine. With one thread, GEMM on the same operands gives the same bits every
 * time, which is what makes the fast kernels deterministic. When the executor lends
 * the kernels spare threads (fedc__kernels_set_pool), a large product is cut into
 * blocks of rows or columns fixed by its shape, each a one-thread GEMM: the same
 * blocks, so the same bits, whether they run in parallel or one after another.
 */
#include <cblas.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "kernels/fast.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels from the CPU's
 * family and model numbers, and a model it does not know falls back to a generic
 * core: 0.3.21 on Emerald Rapids (family 6, model 207) takes Prescott's SSE3
 * kernels, a fifth of the speed of the AVX-512 ones the CPU runs (30 against 148
 * GFLOP/s on 1024^3 here). When the core it picked lacks the vector units the
 * CPU has, fedc asks OpenBLAS to choose again by name, through its own
 * OPENBLAS_CORETYPE and the (exported) functions that read it at load time. A
 * user's OPENBLAS_CORETYPE is left alone; a BLAS without these functions (not
 * DYNAMIC_ARCH, or not OpenBLAS) is too. */
extern void gotoblas_dynamic_init(void) __attribute__((weak));
extern void gotoblas_dynamic_quit(void) __attribute__((weak));

static int core_is(const char *core, const char *const *names) {
    for (; *names; names++)
        if (!strcmp(core, *names)) return 1;
    return 0;
}

/* The core to ask for, or NULL to keep the one OpenBLAS picked. */
static const char *better_core(const char *core) {
    static const char *const sse[] = {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Unknown", NULL};
    static const char *const avx[] = {"Sandybridge", "Haswell", NULL};
    int sse_only = core_is(core, sse), below_avx512 = sse_only || core_is(core, avx);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (below_avx512 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return "SkylakeX";
    if ((sse_only || !strcmp(core, "Sandybridge")) && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
#else
    (void)below_avx512;
#endif
    return NULL;
}

/* Runs before main, while the process has one thread (OpenBLAS, a dependency, is
 * initialised before us), so that setenv races with nothing. */
__attribute__((constructor)) static void choose_core(void) {
    if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || getenv("OPENBLAS_CORETYPE")) return;
    const char *core = better_core(openblas_get_corename());
    if (!core) return;
    /* Set only for OpenBLAS's one read, before any kernel runs. */
    if (setenv("OPENBLAS_CORETYPE", core, 1)) return;
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");
}

/* OpenBLAS gives every thread that calls it a buffer of about 128 MB of address
 * space, taken at the thread's first call and kept; when that allocation fails it
 * retries forever, so a thread of a run under a memory limit (ulimit -v) would hang
 * there, silently. Every thread of a pool, and the thread that creates it, takes
 * its buffer first, when it starts (fedc__pool_on_thread_start): one at a time,
 * each after checking that enough address space is free (BLAS_PROBE: the buffer,
 * 128 MB in Debian's x86-64 builds, and a margin), with a product large enough
 * to go through the buffer. Once a thread holds its buffer, OpenBLAS allocates
 * nothing more for it. */
enum { BLAS_PROBE = 136 << 20, BLAS_N = 128 };
static pthread_mutex_t reserve_mu = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local bool blas_reserved;

static bool reserve_blas(void) {
    if (blas_reserved) return true;
    pthread_mutex_lock(&reserve_mu);
    void *probe = malloc(BLAS_PROBE); /* not fedc_malloc: no failure injection here */
    /* the pointer escapes, or the compiler may drop a malloc whose memory is never used (clang does) */
    __asm__ volatile("" : : "g"(probe) : "memory");
    float *m = probe ? malloc(3 * BLAS_N * BLAS_N * sizeof *m) : NULL;
    free(probe);
    if (m) {
        memset(m, 0, 3 * BLAS_N * BLAS_N * sizeof *m);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, BLAS_N, BLAS_N, BLAS_N, 1.0f, m, BLAS_N,
                    m + BLAS_N * BLAS_N, BLAS_N, 0.0f, m + 2 * BLAS_N * BLAS_N, BLAS_N);
        blas_reserved = true;
    }
    free(m);
    pthread_mutex_unlock(&reserve_mu);
    return blas_reserved;
}

static fedc_status reserve_error(void) {
    return fedc_error(FEDC_ENOMEM, "out of memory: a thread cannot reserve the %d MB of address space that OpenBLAS's "
                      "buffer needs (fewer --threads, or a higher memory limit: ulimit -v)", BLAS_PROBE >> 20);
}

/* Before main, as choose_core: every pool made after it reserves the buffers. */
__attribute__((constructor)) static void reserve_in_pools(void) { fedc__pool_on_thread_start(reserve_blas, reserve_error); }

static void init_blas(void) { openblas_set_num_threads(1); }

const char *fedc__kernels_blas_core(void) {
    fedc__kernels_init();
    return openblas_get_corename();
}

void fedc__kernels_init(void) { pthread_once(&init_once, init_blas); }

/* CBLAS takes int dimensions; larger ones are refused rather than truncated. */
static int fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* Leading dimensions must be at least 1 even for empty matrices. */
static int ld(int64_t v) { return v > 0 ? (int)v : 1; }

/* One product c = op(a) @ op(b), where op(a) is [m, k], op(b) [k, n] and c
 * [m, n], all stored densely; with a minuend, then c = minuend - scale * c (an
 * SGD step on a weight gradient: matmul_sub_scaled); with a bias, c = c + bias
 * and, with act, act = gelu(c) (matmul_bias). */
typedef struct gemm_args {
    fedc_dtype dt;
    int64_t m, n, k;
    int ta, tb;
    const void *a, *b;
    void *c;
    const void *minuend, *scale;
    const void *bias;
    void *act;
} gemm_args;

/* Products with a short side against an untransposed b run in
 * fedc__fast_rows_gemm, which reads b in place where a BLAS packs all of it
 * first: a few rows of a (a dense layer's batch: [20, 9216] @ [9216, 128] 0.86 ->
 * 0.62 ms), or a transposed a of short depth (its weight gradient, [9216, 20] @
 * [20, 128]: 0.62 -> 0.52 ms). AVX-512 only: on an AVX2 machine (AMD EPYC)
 * the AVX2 loop ran the weight gradient slower than OpenBLAS's Zen kernel and the
 * dense forward no faster. */
enum { SHORT_SIDE = 32 };

/* A few rows against a transposed b (a dense layer's input gradient dy @ W^T,
 * [20, 128] @ [9216, 128]^T) run in fedc__rows_gemm_bt, which transposes b a
 * panel at a time in L1 where a BLAS packs all of it: 0.29-0.31 ms against
 * OpenBLAS's 0.60-0.69 on AMD EPYC (Zen 5), and on AVX2 too, whose loop took
 * 0.52-0.53 ms there (bench_kernels, FEDC_ROWS_GEMM=avx2). */
static int rows_gemm_bt_ok(const gemm_args *g) { return g->tb && !g->ta && g->m <= SHORT_SIDE; }

/* The block [rows, cols] at c (and the minuend's at `minuend`) in the rows GEMM. */
static int rows_gemm_block(const gemm_args *g, int64_t rows, int64_t cols, const float *a, const float *b, float *c,
                           const float *minuend) {
    if (g->dt != FEDC_F32) return 0;
    int bt = rows_gemm_bt_ok(g);
    if (!bt && (g->tb || (g->ta ? g->k : g->m) > SHORT_SIDE || fedc__rows_gemm_level() < 2)) return 0;
    return fedc__fast_gather_gemm(&(fedc__gather_gemm){.rows = rows, .cols = cols, .depth = g->k, .a = a, .w = b,
                                                     .ldw = bt ? g->k : g->n, .w_transposed = bt, .c = c,
                                                     .ldc = g->n, .row_step = g->ta ? 1 : g->k,
                                                     .k_step = g->ta ? g->m : 1, .minuend = minuend,
                                                     .scale = g->scale});
}

/* OpenBLAS 0.3's bound (sgemm_direct_performant) on the multiply-adds of a
 * product it may compute directly, without packing. */
#define DIRECT_MNK (28.0 * 512 * 512)

/* The block through BLAS: rows_gemm_block took no part of it. */
static void blas_block(const gemm_args *g, int64_t rows, int64_t cols, const char *a, const char *b, char *c,
                       const char *minuend) {
    size_t es = g->dt == FEDC_F32 ? sizeof(float) : sizeof(double);
    enum CBLAS_TRANSPOSE opa = g->ta ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE opb = g->tb ? CblasTrans : CblasNoTrans;
    int lda = ld(g->ta ? g->m : g->k), ldb = ld(g->tb ? g->k : g->n), ldc = ld(g->n);
    /* A large block's c is zeroed here and BLAS asked for beta = 1: OpenBLAS's own
     * beta = 0 pass is a scalar loop over c on its AVX2 kernels (3% of a
     * transformer step, most of it the logits), and after it BLAS accumulates
     * into c just the same, so the bits are those of beta = 0. Small products keep
     * beta = 0, which OpenBLAS may send down its direct (unpacked) path. */
    int zeroed = (double)rows * (double)cols * (double)g->k >= DIRECT_MNK;
    for (int64_t r = 0; zeroed && r < rows; r++) memset(c + (size_t)(r * g->n) * es, 0, (size_t)cols * es);
    if (g->dt == FEDC_F32)
        cblas_sgemm(CblasRowMajor, opa, opb, (int)rows, (int)cols, (int)g->k, 1.0f, (const float *)a, lda,
                    (const float *)b, ldb, zeroed ? 1.0f : 0.0f, (float *)c, ldc);
    else
        cblas_dgemm(CblasRowMajor, opa, opb, (int)rows, (int)cols, (int)g->k, 1.0, (const double *)a, lda,
                    (const double *)b, ldb, zeroed ? 1.0 : 0.0, (double *)c, ldc);
    for (int64_t r = 0; minuend && r < rows; r++) /* the SGD step on the block's rows, in place */
        fedc__fast_sub_scaled_run(g->dt, cols, minuend + (size_t)(r * g->n) * es, g->scale,
                                 c + (size_t)(r * g->n) * es, c + (size_t)(r * g->n) * es);
}

static void gemm_block(const gemm_args *g, int64_t r0, int64_t rows, int64_t c0, int64_t cols) {
    size_t es = g->dt == FEDC_F32 ? sizeof(float) : sizeof(double), at = (size_t)(r0 * g->n + c0) * es;
    const char *a = (const char *)g->a + (size_t)(g->ta ? r0 : r0 * g->k) * es;
    const char *b = (const char *)g->b + (size_t)(g->tb ? c0 * g->k : c0) * es;
    char *c = (char *)g->c + at;
    const char *minuend = g->minuend ? (const char *)g->minuend + at : NULL;
    if (!rows_gemm_block(g, rows, cols, (const float *)a, (const float *)b, (float *)c, (const float *)minuend))
        blas_block(g, rows, cols, a, b, c, minuend);
    if (g->bias) /* the block's rows while they are in cache */
        fedc__fast_bias_gelu_rows(g->dt, rows, cols, g->n, (const char *)g->bias + (size_t)c0 * es, c,
                                  g->act ? (char *)g->act + at : NULL);
}

/* The blocks of a product: a product of at least BLOCK_FLOPS is cut along its
 * longer side (rows or columns of c) into up to MAX_BLOCKS pieces of at least
 * MIN_SIDE, a multiple of 16. A function of the shape only. Each block packs the
 * operand the blocks share again, which one thread pays for: MIN_SIDE 256 keeps
 * that near 5% of a 512^3 product (128 cost 13%); an odd count of blocks is made
 * even where they stay at least 128 (below). */
enum { MAX_BLOCKS = 4, MIN_SIDE = 256, BLOCK_FLOPS = 1 << 24 };

typedef struct gemm_split {
    gemm_args g;
    int by_rows;
    int64_t side; /* the block's extent along the cut side (the last may be shorter) */
} gemm_split;

static void gemm_task(void *ctx, int64_t i, int worker) {
    (void)worker;
    const gemm_split *s = ctx;
    int64_t extent = s->by_rows ? s->g.m : s->g.n, at = i * s->side;
    int64_t len = extent - at < s->side ? extent - at : s->side;
    if (s->by_rows) gemm_block(&s->g, at, len, 0, s->g.n);
    else gemm_block(&s->g, 0, s->g.m, at, len);
}

static void gemm_args_run(const gemm_args *g) {
    size_t es = g->dt == FEDC_F32 ? sizeof(float) : sizeof(double);
    int64_t m = g->m, n = g->n, k = g->k;
    if (m == 0 || n == 0) return;
    if (k == 0) {
        memset(g->c, 0, (size_t)(m * n) * es);
        if (g->minuend) fedc__fast_sub_scaled_run(g->dt, m * n, g->minuend, g->scale, g->c, g->c);
        if (g->bias) fedc__fast_bias_gelu_rows(g->dt, m, n, n, g->bias, g->c, g->act);
        return;
    }
    gemm_split s = {*g, m > n, 0};
    int64_t extent = s.by_rows ? m : n, blocks = 1;
    int large = 2.0 * (double)m * (double)n * (double)k >= BLOCK_FLOPS;
    if (large) blocks = extent / MIN_SIDE;
    /* an odd count leaves one of two threads idle for a block's time: 768 goes in
     * 4 blocks of 192 rather than 3, 256 in 2 of 128 (a transformer's weight
     * gradients), where the blocks stay at least MIN_SIDE / 2 */
    if (large && blocks % 2 && blocks < MAX_BLOCKS && extent / (blocks + 1) >= MIN_SIDE / 2) blocks++;
    blocks = blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : blocks;
    s.side = ((extent + blocks - 1) / blocks + 15) / 16 * 16;
    blocks = (extent + s.side - 1) / s.side;
    fedc__kernels_parallel(blocks, gemm_task, &s);
}

static void gemm1(fedc_dtype dt, int64_t m, int64_t n, int64_t k, int ta, int tb, const void *a,
                  const void *b, void *c) {
    gemm_args_run(&(gemm_args){dt, m, n, k, ta, tb, a, b, c, NULL, NULL, NULL, NULL});
}

static fedc_status check_matmul(fedc_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k) {
    if (dt != FEDC_F32 && dt != FEDC_F64)
        return fedc_error(FEDC_EUNSUPPORTED, "matmul (fast): dtype %s is not supported",
                          fedc_dtype_name(dt));
    if (batch < 0 || m < 0 || n < 0 || k < 0)
        return fedc_error(FEDC_EINVAL, "matmul (fast): negative dimension (batch %lld, m %lld, "
                          "n %lld, k %lld)",
                          (long long)batch, (long long)m, (long long)n, (long long)k);
    if (!fits_int(m) || !fits_int(n) || !fits_int(k))
        return fedc_error(FEDC_EUNSUPPORTED,
                          "matmul (fast): dimensions batch %lld, m %lld, n %lld, k %lld exceed "
                          "BLAS's int range",
                          (long long)batch, (long long)m, (long long)n, (long long)k);
    return FEDC_OK;
}

fedc_status fedc__fast_matmul(fedc_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, int ta,
                             int tb, const void *a, int a_batched, const void *b, int b_batched,
                             void *c) {
    fedc_status st = check_matmul(dt, batch, m, n, k);
    if (st) return st;
    fedc__kernels_init();
    size_t es = dt == FEDC_F32 ? sizeof(float) : sizeof(double);
    size_t astep = a_batched ? (size_t)(m * k) * es : 0;
    size_t bstep = b_batched ? (size_t)(k * n) * es : 0;
    size_t cstep = (size_t)(m * n) * es;
    if (batch == 0) return FEDC_OK;
    /* A batched, untransposed a against one shared b is a single tall GEMM: the
     * stacked a is [batch*m, k] and the stacked c is [batch*m, n]. */
    if (a_batched && !b_batched && !ta && fits_int(batch * m)) {
        gemm1(dt, batch * m, n, k, 0, tb, a, b, c);
        return FEDC_OK;
    }
    /* Both operands shared: every batch is the same product, so compute it once. */
    if (!a_batched && !b_batched) {
        gemm1(dt, m, n, k, ta, tb, a, b, c);
        for (int64_t i = 1; i < batch; i++) memcpy((char *)c + (size_t)i * cstep, c, cstep);
        return FEDC_OK;
    }
    for (int64_t i = 0; i < batch; i++)
        gemm1(dt, m, n, k, ta, tb, (const char *)a + (size_t)i * astep,
              (const char *)b + (size_t)i * bstep, (char *)c + (size_t)i * cstep);
    return FEDC_OK;
}

/* out = w - s * (op(a) @ op(b)): a weight gradient and its SGD step in one pass
 * where the rows GEMM takes the product (the step runs on each block of the
 * product in registers, so the gradient is never stored), else the product and
 * then the step on each block while it is in cache. Bits: matmul's, then
 * sub_scaled's. out must not overlap a, b or w. */
fedc_status fedc__fast_matmul_sub_scaled(fedc_dtype dt, int64_t m, int64_t n, int64_t k, int ta, int tb, const void *a,
                                        const void *b, const void *w, const void *s, void *out) {
    fedc_status st = check_matmul(dt, 1, m, n, k);
    if (st) return st;
    fedc__kernels_init();
    gemm_args_run(&(gemm_args){dt, m, n, k, ta, tb, a, b, out, w, s, NULL, NULL});
    return FEDC_OK;
}

/* c = op(a) @ op(b) + bias [, act = gelu(c)]: each block of the product gets its
 * bias (and activation) as soon as BLAS has written it. Bits: matmul's, then add's
 * and gelu's. */
fedc_status fedc__fast_matmul_bias(fedc_dtype dt, int64_t m, int64_t n, int64_t k, int ta, int tb, const void *a,
                                  const void *b, const void *bias, void *c, void *act) {
    fedc_status st = check_matmul(dt, 1, m, n, k);
    if (st) return st;
    fedc__kernels_init();
    gemm_args_run(&(gemm_args){dt, m, n, k, ta, tb, a, b, c, NULL, NULL, bias, act});
    return FEDC_OK;
}

/* ------------------------------------------------------------ benchmark -- */

/* Deterministic, well-scaled operands: the values do not matter for speed, but
 * denormals or NaNs would. */
static void fill(float *p, int64_t count, float scale) {
    for (int64_t i = 0; i < count; i++) p[i] = scale * (float)((i * 7919) % 1013 - 506) / 506.0f;
}

double fedc__kernels_sgemm_gflops(int64_t n, int repeats) {
    if (n <= 0 || !fits_int(n) || repeats < 1) return 0.0;
    fedc__kernels_init();
    size_t count = (size_t)(n * n);
    float *a = fedc_malloc(3 * count * sizeof(float));
    if (!a) return 0.0;
    float *b = a + count, *c = b + count;
    fill(a, n * n, 1.0f);
    fill(b, n * n, 0.5f);
    gemm_args g = {FEDC_F32, n, n, n, 0, 0, a, b, c, NULL, NULL, NULL, NULL}; /* one GEMM, uncut: the one-thread peak */
    gemm_block(&g, 0, n, 0, n); /* warm caches and BLAS's buffers */
    double best = 0.0;
    for (int r = 0; r < repeats; r++) {
        double t0 = fedc_seconds();
        gemm_block(&g, 0, n, 0, n);
        double t = fedc_seconds() - t0;
        if (best == 0.0 || t < best) best = t;
    }
    fedc_free(a);
    return best > 0.0 ? 2.0 * (double)n * (double)n * (double)n / best * 1e-9 : 0.0;
}
