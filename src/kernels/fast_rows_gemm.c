/*
 * fast_rows_gemm.c — c = a @ w (+ c) for a few rows of a (the LSTM's batch) against
 * a weight matrix used in place, in AVX-512. A BLAS GEMM packs the weights into
 * its own layout at every call; for the LSTM's per-step products (32 rows against
 * [256, 1024] at batch 32) that packing costs as much as the arithmetic, at every
 * one of the sequence's steps. Here the weights are read where they lie: a block
 * of 12 rows x 32 columns of c is held in 24 registers while k runs over a slice
 * of DEPTH rows of w (16 KB of w: it stays in L1 for the next rows), so w streams
 * from cache and a only costs broadcasts (4 rows x 64 columns for a few rows).
 *
 * Each element of c is its initial value (zero or c) plus a[r, k] w[k, j] for k in
 * increasing order, one fused multiply-add at a time, whatever the block it falls
 * in: the bits depend on the shapes only. Machines without AVX-512 get false and
 * use BLAS.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fast.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

enum { ROWS = 12, DEPTH = 128 };

#define AVX512 __attribute__((target("avx512f")))
/* Loops over the block's rows and vectors unrolled, so that acc stays in registers. */
#ifdef __clang__
#define UNROLLED _Pragma("clang loop unroll(full)")
#else
#define UNROLLED _Pragma("GCC unroll 12")
#endif

/* Rows [0, R) x columns [0, 16 V) of c (masks m for a short last block) over k in
 * [k0, k1): from zero when fresh, else from c. R V accumulators: 12 x 2, or for
 * a few rows 4 x 4, enough independent sums to keep both FMA units busy. */
static inline __attribute__((always_inline)) AVX512 void block(int R, int V, int64_t k0, int64_t k1, const float *a,
                                                               int64_t lda, const float *w, int64_t ldw, float *c,
                                                               int64_t ldc, const __mmask16 *m, bool fresh) {
    __m512 acc[ROWS][4], wv[4];
UNROLLED
    for (int r = 0; r < R; r++)
UNROLLED
        for (int v = 0; v < V; v++)
            acc[r][v] = fresh ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m[v], c + r * ldc + 16 * v);
    for (int64_t k = k0; k < k1; k++) {
UNROLLED
        for (int v = 0; v < V; v++) wv[v] = _mm512_maskz_loadu_ps(m[v], w + k * ldw + 16 * v);
UNROLLED
        for (int r = 0; r < R; r++) {
            __m512 x = _mm512_set1_ps(a[r * lda + k]);
UNROLLED
            for (int v = 0; v < V; v++) acc[r][v] = _mm512_fmadd_ps(x, wv[v], acc[r][v]);
        }
    }
UNROLLED
    for (int r = 0; r < R; r++)
UNROLLED
        for (int v = 0; v < V; v++) _mm512_mask_storeu_ps(c + r * ldc + 16 * v, m[v], acc[r][v]);
}

/* The row count as a constant, so that the accumulators stay in registers. */
static AVX512 void block_rows(int R, int64_t k0, int64_t k1, const float *a, int64_t lda, const float *w, int64_t ldw,
                              float *c, int64_t ldc, const __mmask16 *m, bool fresh) {
    switch (R) {
#define CASE(n, v) \
    case n: block(n, v, k0, k1, a, lda, w, ldw, c, ldc, m, fresh); break;
        CASE(1, 4) CASE(2, 4) CASE(3, 4) CASE(4, 4) CASE(5, 2) CASE(6, 2) CASE(7, 2) CASE(8, 2) CASE(9, 2)
        CASE(10, 2) CASE(11, 2) CASE(12, 2)
#undef CASE
    default: break;
    }
}

static AVX512 void rows_gemm(int64_t rows, int64_t cols, int64_t depth, const float *a, int64_t lda, const float *w,
                             int64_t ldw, float *c, int64_t ldc, bool accumulate) {
    for (int64_t k0 = 0; k0 < depth; k0 += DEPTH) {
        int64_t k1 = depth - k0 < DEPTH ? depth : k0 + DEPTH;
        bool fresh = k0 == 0 && !accumulate;
        for (int64_t r0 = 0; r0 < rows; r0 += ROWS) {
            int R = rows - r0 < ROWS ? (int)(rows - r0) : ROWS, width = R <= 4 ? 64 : 32;
            for (int64_t j0 = 0; j0 < cols; j0 += width) {
                __mmask16 m[4];
                for (int v = 0; v < 4; v++) {
                    int64_t left = cols - j0 - 16 * v;
                    m[v] = left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
                }
                block_rows(R, k0, k1, a + r0 * lda, lda, w + j0, ldw, c + r0 * ldc + j0, ldc, m, fresh);
            }
        }
    }
}

/* AVX-512 and not switched off (FEDC_ROWS_GEMM=0, for benchmarks' comparisons). */
static bool enabled(void) {
    static int on = -1;
    if (on < 0) {
        const char *env = getenv("FEDC_ROWS_GEMM");
        on = __builtin_cpu_supports("avx512f") && !(env && !strcmp(env, "0"));
    }
    return on == 1;
}

bool fedc_fast_rows_gemm(int64_t rows, int64_t cols, int64_t depth, const float *a, int64_t lda, const float *w,
                         int64_t ldw, float *c, int64_t ldc, bool accumulate) {
    if (!enabled()) return false;
    if (rows > 0 && cols > 0) {
        if (depth > 0) rows_gemm(rows, cols, depth, a, lda, w, ldw, c, ldc, accumulate);
        else if (!accumulate)
            for (int64_t r = 0; r < rows; r++)
                for (int64_t j = 0; j < cols; j++) c[r * ldc + j] = 0.0f;
    }
    return true;
}
#else
bool fedc_fast_rows_gemm(int64_t rows, int64_t cols, int64_t depth, const float *a, int64_t lda, const float *w,
                         int64_t ldw, float *c, int64_t ldc, bool accumulate) {
    (void)rows, (void)cols, (void)depth, (void)a, (void)lda, (void)w, (void)ldw, (void)c, (void)ldc, (void)accumulate;
    return false;
}
#endif
