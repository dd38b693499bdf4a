/*
 * fast_rows_gemm_avx2.c — the rows GEMM (fast_rows_gemm.c) on machines with AVX2
 * and FMA but not AVX-512 (AMD EPYC here). The same product, the same epilogues,
 * the same order of operations per element: its initial value (zero or c) plus
 * a[r, k] w[k, j] for k in increasing order, one fused multiply-add at a time,
 * then bias, relu, the SGD step. So the bits are those of the AVX-512 loop and of
 * test_kernels_fast's fmaf loop, whatever the machine: with this file an AVX2
 * machine takes the in-place convolutions and the dense layers' short-side
 * products that AVX-512 machines take, with their bits.
 *
 * 16 vector registers (8 floats each) fit a block of 6 rows x 16 columns: 12
 * accumulators, 2 vectors of w, one broadcast of a, the classic Haswell tile.
 * w streams from cache in slices of DEPTH rows of k; a only costs broadcasts.
 * A k step is 12 FMAs against 2 loads of w, 6 broadcasts, the k_off entry and a
 * pointer bump, 22 instructions: alone on a core the 31 of the first version ran
 * as fast, but inside a training step on a shared VM (AMD EPYC) the leaner loop
 * took 5% less CPU for the whole of workload 1, which with the 31 had run no
 * faster in place than through im2col and OpenBLAS.
 */
#include <stdbool.h>
#include <stdint.h>

#include "kernels/fast.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

enum { ROWS = 6, DEPTH = 128 };

#define AVX2 __attribute__((target("avx2,fma")))
#ifdef __clang__
#define UNROLLED _Pragma("clang loop unroll(full)")
#else
#define UNROLLED _Pragma("GCC unroll 6")
#endif

/* Rows [r0, r0 + R), columns [j0, j0 + 16) (lanes m of each vector of 8), k in
 * [k0, k1); fresh: the sum starts from zero; last: the epilogue applies. */
typedef struct span {
    int64_t r0, j0, k0, k1;
    bool fresh, last;
    __m256i m[2];
} span;

static inline __attribute__((always_inline)) AVX2 __m256 load(bool full, __m256i m, const float *at) {
    return full ? _mm256_loadu_ps(at) : _mm256_maskload_ps(at, m);
}

static inline __attribute__((always_inline)) AVX2 void store(bool full, __m256i m, float *at, __m256 v) {
    if (full) _mm256_storeu_ps(at, v);
    else _mm256_maskstore_ps(at, m, v);
}

/* v + bias, then v > 0 ? v : 0 (+0 for -0 and NaN, as the AVX-512 mask), then
 * minuend - scale * v rounded apart (-ffp-contract=off). */
static inline __attribute__((always_inline)) AVX2 __m256 finish(__m256 v, const fedc__gather_gemm *g, const span *s,
                                                                int r, int vec) {
    if (g->bias) v = _mm256_add_ps(v, _mm256_maskload_ps(g->bias + s->j0 + 8 * vec, s->m[vec]));
    if (g->relu) v = _mm256_and_ps(v, _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GT_OQ));
    if (g->minuend) {
        const float *from = g->minuend + (s->r0 + r) * g->ldc + s->j0 + 8 * vec;
        v = _mm256_sub_ps(_mm256_maskload_ps(from, s->m[vec]), _mm256_mul_ps(_mm256_set1_ps(*g->scale), v));
    }
    return v;
}

/* The R x 16 block of c at s; `gathered` and `full` are constants at every call,
 * so the strided loop has no table load and full blocks no masks. */
static inline __attribute__((always_inline)) AVX2 void block(int R, bool gathered, bool full,
                                                             const fedc__gather_gemm *g, const span *s) {
    __m256 acc[ROWS][2];
    const float *ar[ROWS];
    const int32_t *k_off = g->k_off;
    int64_t ldw = g->ldw, ldc = g->ldc, k1 = s->k1, k_step = g->k_step;
    float *c = g->c + s->r0 * ldc + s->j0;
    const float *w = g->w + s->j0;
    __m256i m0 = s->m[0], m1 = s->m[1];
    /* Each row's own pointer, hidden from the optimiser: otherwise gcc keeps one
     * base and adds every row's offset to k's with a lea before each broadcast (31
     * instructions a k step instead of 22); held opaque, each broadcast addresses
     * [row + at * 4] by itself. */
UNROLLED
    for (int r = 0; r < R; r++) {
        ar[r] = g->a + (gathered ? g->row_off[s->r0 + r] : (s->r0 + r) * g->row_step);
        __asm__("" : "+r"(ar[r]));
    }
UNROLLED
    for (int r = 0; r < R; r++) {
        acc[r][0] = s->fresh ? _mm256_setzero_ps() : load(full, m0, c + r * ldc);
        acc[r][1] = s->fresh ? _mm256_setzero_ps() : load(full, m1, c + r * ldc + 8);
    }
#pragma GCC unroll 4
    for (int64_t k = s->k0; k < k1; k++) {
        int64_t at = gathered ? k_off[k] : k * k_step;
        __m256 w0 = load(full, m0, w + k * ldw), w1 = load(full, m1, w + k * ldw + 8);
UNROLLED
        for (int r = 0; r < R; r++) {
            __m256 x = _mm256_broadcast_ss(ar[r] + at);
            acc[r][0] = _mm256_fmadd_ps(x, w0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(x, w1, acc[r][1]);
        }
    }
    if (s->last && (g->bias || g->relu || g->minuend))
UNROLLED
        for (int r = 0; r < R; r++) acc[r][0] = finish(acc[r][0], g, s, r, 0), acc[r][1] = finish(acc[r][1], g, s, r, 1);
UNROLLED
    for (int r = 0; r < R; r++) store(full, m0, c + r * ldc, acc[r][0]), store(full, m1, c + r * ldc + 8, acc[r][1]);
}

#define CASE(n, gathered)                                                   \
    case n:                                                                 \
        if (full) block(n, gathered, true, g, s);                           \
        else block(n, gathered, false, g, s);                               \
        break;
#define BLOCKS(name, G)                                                                                 \
    static AVX2 void name(int R, bool full, const fedc__gather_gemm *g, const span *s) {                 \
        switch (R) { CASE(1, G) CASE(2, G) CASE(3, G) CASE(4, G) CASE(5, G) CASE(6, G) default: break; } \
    }
BLOCKS(strided_blocks, false)
BLOCKS(gathered_blocks, true)
#undef BLOCKS
#undef CASE

/* The lanes of vector v of the block at column j0 that lie below cols. */
static AVX2 __m256i lanes(int64_t cols, int64_t j0, int v) {
    int64_t left = cols - j0 - 8 * v;
    int n = left >= 8 ? 8 : left <= 0 ? 0 : (int)left;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Within a slice of k, one column block at a time down all the rows: the slice
 * of w it reads (DEPTH x 16 floats, 8 KB) stays in L1 while a streams past it.
 * Rows outermost (the AVX-512 loop's order) would cycle through the slice's
 * whole width of w, 32 KB at 64 columns, all of this core's L1. Neither order
 * changes a bit: each element still adds its k in increasing order. */
AVX2 void fedc__rows_gemm_avx2(const fedc__gather_gemm *g) {
    for (int64_t k0 = 0; k0 < g->depth; k0 += DEPTH) {
        span s = {.k0 = k0, .k1 = g->depth - k0 < DEPTH ? g->depth : k0 + DEPTH};
        s.fresh = k0 == 0 && !g->accumulate, s.last = s.k1 == g->depth;
        for (s.j0 = 0; s.j0 < g->cols; s.j0 += 16) {
            s.m[0] = lanes(g->cols, s.j0, 0), s.m[1] = lanes(g->cols, s.j0, 1);
            bool full = g->cols - s.j0 >= 16;
            for (s.r0 = 0; s.r0 < g->rows; s.r0 += ROWS) {
                int R = g->rows - s.r0 < ROWS ? (int)(g->rows - s.r0) : ROWS;
                if (g->k_off) gathered_blocks(R, full, g, &s);
                else strided_blocks(R, full, g, &s);
            }
        }
    }
}
#else
void fedc__rows_gemm_avx2(const fedc__gather_gemm *g) { (void)g; }
#endif
