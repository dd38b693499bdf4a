/*
 * fast_rows_gemm_bt.c — the rows GEMM (fast_rows_gemm.c) against a transposed w:
 * c (+)= a @ wᵀ with w stored [cols, depth], a dense layer's input gradient
 * dy · Wᵀ. A BLAS GEMM packs all of w at every call; for the EMNIST CNN's first
 * dense layer that is its 4.7 MB W ([9216, 128]) repacked for 20 rows of dy at
 * every step. Here w is transposed PANEL columns x SLICE of depth at a time into
 * a buffer that stays in L1 (16 KB), and the rows GEMM's loop runs every row of a
 * against it: each transposed element serves all the rows, and the panel's block
 * of c stays in cache across the slices of depth.
 *
 * Bits: each element of c is the rows GEMM's, its initial value plus a[r, k]
 * w[j, k] for k in increasing order, one fused multiply-add at a time (a slice
 * after the first adds onto the c the previous one stored, as the rows GEMM's own
 * slices do), then the epilogue on the last slice: whatever the panel, the
 * machine's loop (AVX-512 or AVX2) or the thread count.
 */
#include <stdbool.h>
#include <stdint.h>

#include "kernels/fast.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* 32 columns: two of the AVX-512 loop's vectors, or two AVX2 blocks of 16; 128
 * deep: the rows GEMM's own slice of k. */
enum { PANEL = 32, SLICE = 128 };

#define AVX2 __attribute__((target("avx2,fma")))

/* The 8 x 8 block at src (rows lds apart) into dst transposed (rows ldd apart),
 * in the usual three rounds of shuffles. Only moves: no bit changes. */
static inline __attribute__((always_inline)) AVX2 void transpose8(const float *src, int64_t lds, float *dst,
                                                                  int64_t ldd) {
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * lds);
    for (int i = 0; i < 8; i += 2) t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44), u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44), u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
        _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
}

/* panel[k, j] = w[j, k] for j < width, k < deep (w's rows ldw apart, the
 * panel's PANEL): 8 x 8 blocks, the ragged edges one element at a time. */
static AVX2 void transpose_panel(const float *w, int64_t ldw, int64_t width, int64_t deep, float *panel) {
    int64_t width8 = width / 8 * 8, deep8 = deep / 8 * 8;
    for (int64_t j = 0; j < width8; j += 8)
        for (int64_t k = 0; k < deep8; k += 8) transpose8(w + j * ldw + k, ldw, panel + k * PANEL + j, PANEL);
    for (int64_t j = 0; j < width; j++)
        for (int64_t k = j < width8 ? deep8 : 0; k < deep; k++) panel[k * PANEL + j] = w[j * ldw + k];
}

/* Column panels outermost, so that a panel's block of c stays in cache across
 * its slices of depth. */
void fedc__rows_gemm_bt(const fedc__gather_gemm *g) {
    float panel[SLICE * PANEL] __attribute__((aligned(64)));
    for (int64_t j0 = 0; j0 < g->cols; j0 += PANEL) {
        int64_t width = g->cols - j0 < PANEL ? g->cols - j0 : PANEL;
        for (int64_t k0 = 0; k0 < g->depth; k0 += SLICE) {
            int64_t deep = g->depth - k0 < SLICE ? g->depth - k0 : SLICE;
            bool last = k0 + deep == g->depth;
            transpose_panel(g->w + j0 * g->ldw + k0, g->ldw, width, deep, panel);
            fedc__gather_gemm p = *g;
            p.w = panel, p.ldw = PANEL, p.w_transposed = false;
            p.cols = width, p.depth = deep, p.c = g->c + j0;
            if (g->k_off) p.k_off = g->k_off + k0;
            else p.a = g->a + k0 * g->k_step;
            p.accumulate = g->accumulate || k0 > 0;
            p.bias = last && g->bias ? g->bias + j0 : NULL, p.relu = last && g->relu;
            p.minuend = last && g->minuend ? g->minuend + j0 : NULL;
            fedc__rows_gemm_run(&p);
        }
    }
}
#else
void fedc__rows_gemm_bt(const fedc__gather_gemm *g) { (void)g; }
#endif
