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
 * The same loop serves convolutions (fast_conv_in_place.c) with a gathered a,
 * whose rows are patches of an image read in place through offset tables,
 * weight gradients (fast_blas.c) with a transposed a, and input gradients with a
 * transposed w, a panel at a time (fast_rows_gemm_bt.c); it can finish with a
 * convolution's epilogue (bias, relu) or an SGD step while the block is still in
 * registers.
 *
 * Each element of c is its initial value (zero or c) plus a[r, k] w[k, j] for k in
 * increasing order, one fused multiply-add at a time, whatever the block it falls
 * in: the bits depend on the shapes only. Machines with AVX2 and FMA but not
 * AVX-512 run the same loop in 8-wide vectors (fast_rows_gemm_avx2.c), with the
 * same bits; machines with neither get false and use BLAS.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fast.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

enum { ROWS = 12, DEPTH = 128 };
#define STREAM_BYTES (2.0 * 1024 * 1024)

#define AVX512 __attribute__((target("avx512f")))
/* Loops over the block's rows and vectors unrolled, so that acc stays in registers. */
#ifdef __clang__
#define UNROLLED _Pragma("clang loop unroll(full)")
#else
#define UNROLLED _Pragma("GCC unroll 12")
#endif

/* Where a block lies: rows [r0, r0 + R), columns [j0, j0 + 16 V) (masks m for a
 * short last vector), k in [k0, k1); fresh: the sum starts from zero, not from
 * c; last: k1 is the depth, so the epilogue applies; pf (or 0): the address of the
 * block's share of w's next slice, to prefetch a line each pf_step bytes, one a
 * k (an integer: the last share may reach past w, which a prefetch may). */
typedef struct span {
    int64_t r0, j0, k0, k1;
    bool fresh, last;
    __mmask16 m[4];
    uintptr_t pf, pf_step;
} span;

/* The epilogue's operands for one block, read once: its bias, its first row of
 * the minuend and the step's scale. */
typedef struct tail {
    const float *bias, *minuend;
    bool relu;
    __m512 scale;
} tail;

/* 16 floats at `at`, the lanes outside m as zero unless the vector is full. */
static inline __attribute__((always_inline)) AVX512 __m512 load(bool full, __mmask16 m, const float *at) {
    return full ? _mm512_loadu_ps(at) : _mm512_maskz_loadu_ps(m, at);
}

/* The epilogue on vector vec of the row `row` floats past the block's first:
 * v + bias, then v > 0 ? v : 0, then minuend - scale * v, as the unfused ops
 * (this file is built with -ffp-contract=off: the product and the difference
 * are rounded apart). `bias`, `relu` and `step` are constants at each call, so
 * that an SGD step costs three instructions a vector, not a chain of tests and
 * reloads (gcc kept them: a third of a dense layer's weight gradient). */
static inline __attribute__((always_inline)) AVX512 __m512 finish(__m512 v, bool full, __mmask16 m, const tail *t,
                                                                  bool bias, bool relu, bool step, int64_t row, int vec) {
    if (bias) v = _mm512_add_ps(v, load(full, m, t->bias + 16 * vec));
    if (relu) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GT_OQ), v);
    if (step) v = _mm512_sub_ps(load(full, m, t->minuend + row + 16 * vec), _mm512_mul_ps(t->scale, v));
    return v;
}

/* The epilogue on the block's R x V vectors (rows ldc apart). */
static inline __attribute__((always_inline)) AVX512 void finish_block(int R, int V, bool full, const __mmask16 *m,
                                                                      const tail *t, bool bias, bool relu, bool step,
                                                                      int64_t ldc, __m512 acc[][4]) {
UNROLLED
    for (int r = 0; r < R; r++)
UNROLLED
        for (int v = 0; v < V; v++) acc[r][v] = finish(acc[r][v], full, m[v], t, bias, relu, step, r * ldc, v);
}

/* How a is read: through the offset tables, in rows row_step apart, or in
 * adjacent rows (row_step 1: a transposed a, a weight gradient's x^T), where
 * one pointer serves every row of the block: with a pointer a row, gcc ran out
 * of general registers on 6 x 64 blocks and parked them in vector registers,
 * and a dense layer's weight gradient ran at half the FMA rate. */
enum { GATHERED, STRIDED, ADJACENT, STREAMED /* strided, prefetching w's next slice (streams) */ };

/* The R x 16 V block of c at s. R V accumulators: 12 x 2, 6 x 4, or for a few
 * rows 4 x 4, enough independent sums to keep both FMA units busy. `mode`
 * and `full` (no vector is short) are constants at every call, so the strided
 * loop has no table load and full blocks no masks (gcc reloaded the masks from
 * the stack at every k: 10% of a convolution). */

static inline __attribute__((always_inline)) AVX512 void block(int R, int V, int mode, bool full,
                                                               const fedc__gather_gemm *g, const span *s) {
    bool gathered = mode == GATHERED;
    __m512 acc[ROWS][4], wv[4];
    const float *ar[ROWS];
    const int32_t *k_off = g->k_off;
    int64_t ldw = g->ldw, ldc = g->ldc, k1 = s->k1, k_step = g->k_step;
    float *c = g->c + s->r0 * ldc + s->j0;
    const float *w = g->w + s->j0;
    __mmask16 m[4] = {s->m[0], s->m[1], s->m[2], s->m[3]};
UNROLLED
    for (int r = 0; r < R; r++)
        ar[r] = g->a + (gathered ? g->row_off[s->r0 + r] : mode == ADJACENT ? s->r0 : (s->r0 + r) * g->row_step);
UNROLLED
    for (int r = 0; r < R; r++)
UNROLLED
        for (int v = 0; v < V; v++)
            acc[r][v] = s->fresh ? _mm512_setzero_ps() : load(full, m[v], c + r * ldc + 16 * v);
    for (int64_t k = s->k0; k < k1; k++) {
        int64_t at = gathered ? k_off[k] : k * k_step;
        if (mode == STREAMED) _mm_prefetch((const char *)(s->pf + (uintptr_t)(k - s->k0) * s->pf_step), _MM_HINT_T0);
UNROLLED
        for (int v = 0; v < V; v++) wv[v] = load(full, m[v], w + k * ldw + 16 * v);
UNROLLED
        for (int r = 0; r < R; r++) {
            __m512 x = _mm512_set1_ps(mode == ADJACENT ? ar[0][at + r] : ar[r][at]);
UNROLLED
            for (int v = 0; v < V; v++) acc[r][v] = _mm512_fmadd_ps(x, wv[v], acc[r][v]);
        }
    }
    if (s->last && (g->bias || g->relu || g->minuend)) {
        tail t = {g->bias ? g->bias + s->j0 : NULL, g->minuend ? g->minuend + s->r0 * ldc + s->j0 : NULL, g->relu,
                  _mm512_set1_ps(g->minuend ? *g->scale : 0.0f)};
        bool b = t.bias, step = t.minuend;
        if (step && !b && !t.relu) finish_block(R, V, full, m, &t, false, false, true, ldc, acc); /* an SGD step */
        else if (b && t.relu && !step) finish_block(R, V, full, m, &t, true, true, false, ldc, acc); /* a conv's */
        else finish_block(R, V, full, m, &t, b, t.relu, step, ldc, acc);
    }
UNROLLED
    for (int r = 0; r < R; r++)
UNROLLED
        for (int v = 0; v < V; v++)
            if (full) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
            else _mm512_mask_storeu_ps(c + r * ldc + 16 * v, m[v], acc[r][v]);
}

/* The block's shape as constants, so that the accumulators stay in registers. */
#define CASE(n, v, mode)                                                          \
    case (n) * 8 + (v):                                                           \
        if (s->m[(v) - 1] == 0xFFFF) block(n, v, mode, true, g, s);               \
        else block(n, v, mode, false, g, s);                                      \
        break;
#define BLOCKS(name, G)                                                                                       \
    static AVX512 void name(int R, int V, const fedc__gather_gemm *g, const span *s) {                         \
        switch (R * 8 + V) {                                                                                  \
            CASE(1, 4, G) CASE(2, 4, G) CASE(3, 4, G) CASE(4, 4, G) CASE(5, 4, G) CASE(6, 4, G)               \
            CASE(1, 2, G) CASE(2, 2, G) CASE(3, 2, G) CASE(4, 2, G) CASE(5, 2, G) CASE(6, 2, G)               \
            CASE(7, 2, G) CASE(8, 2, G) CASE(9, 2, G) CASE(10, 2, G) CASE(11, 2, G) CASE(12, 2, G)            \
        default: break;                                                                                       \
        }                                                                                                     \
    }
BLOCKS(strided_blocks, STRIDED)
BLOCKS(adjacent_blocks, ADJACENT)
BLOCKS(streamed_blocks, STREAMED)
BLOCKS(gathered_blocks, GATHERED)
#undef BLOCKS
#undef CASE

/* Whether w streams from memory, slice after slice: a few rows of a (not a
 * transposed a, not gathered) against a w larger than L2, a dense layer's
 * forward pass ([20, 9216] @ [9216, 128]: 4.7 MB). Each slice's lines then come
 * from L3 in the blocks' strided order, a line of each row of 512 bytes, which
 * the hardware's prefetchers follow poorly; each block prefetches its share of
 * the next slice in memory order instead, one line a k. */
static bool streams(const fedc__gather_gemm *g) {
    return !g->k_off && g->row_step != 1 && (double)g->depth * (double)g->ldw * 4.0 > STREAM_BYTES;
}

/* s.pf and s.pf_step of a streaming product's block (rows tile, columns 16 V):
 * the next slice of w (whole rows of ldw floats) cut in as many shares as the
 * slice has blocks, the block's share by its place in the slice. */
static void prefetch_share(const fedc__gather_gemm *g, int tile, int V, span *s) {
    int64_t next_depth = g->depth - s->k1 < DEPTH ? g->depth - s->k1 : DEPTH;
    int64_t per_row = (g->cols + 16 * V - 1) / (16 * V), blocks = (g->rows + tile - 1) / tile * per_row;
    int64_t share = (next_depth * g->ldw * 4 + blocks - 1) / blocks, index = s->r0 / tile * per_row + s->j0 / (16 * V);
    s->pf = (uintptr_t)(g->w + s->k1 * g->ldw) + (uintptr_t)(index * share);
    s->pf_step = (uintptr_t)((share + s->k1 - s->k0 - 1) / (s->k1 - s->k0) + 63) / 64 * 64;
}

/* Blocks of 12 rows x 32 columns (a few rows: 4 x 64); products with more than
 * 32 rows and columns (convolutions, weight gradients) in 6 x 64, which
 * broadcasts each element of a once for 64 columns: 6% faster on the EMNIST
 * CNN's convolutions, 15% on its dense layer's weight gradient. */
static AVX512 void rows_gemm(const fedc__gather_gemm *g) {
    bool wide = g->rows > 32 && g->cols > 32;
    int tile = wide ? 6 : ROWS;
    bool stream = streams(g);
    for (int64_t k0 = 0; k0 < g->depth; k0 += DEPTH) {
        span s = {.k0 = k0, .k1 = g->depth - k0 < DEPTH ? g->depth : k0 + DEPTH};
        s.fresh = k0 == 0 && !g->accumulate, s.last = s.k1 == g->depth;
        for (s.r0 = 0; s.r0 < g->rows; s.r0 += tile) {
            int R = g->rows - s.r0 < tile ? (int)(g->rows - s.r0) : tile, V = wide || R <= 4 ? 4 : 2;
            for (s.j0 = 0; s.j0 < g->cols; s.j0 += 16 * V) {
                for (int v = 0; v < 4; v++) {
                    int64_t left = g->cols - s.j0 - 16 * v;
                    s.m[v] = left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
                }
                if (stream && !s.last) prefetch_share(g, tile, V, &s);
                if (g->k_off) gathered_blocks(R, V, g, &s);
                else if (g->row_step == 1) adjacent_blocks(R, V, g, &s);
                else if (s.pf) streamed_blocks(R, V, g, &s);
                else strided_blocks(R, V, g, &s);
            }
        }
    }
}

/* Which loop runs here: 2 the AVX-512 one, 1 the AVX2 one (fast_rows_gemm_avx2.c,
 * the same bits), 0 none (callers use BLAS). FEDC_ROWS_GEMM=0 switches it off and
 * FEDC_ROWS_GEMM=avx2 takes the AVX2 loop on an AVX-512 machine (benchmarks'
 * comparisons, tests). */
static int level(void) {
    static int on = -1;
    if (on < 0) {
        const char *env = getenv("FEDC_ROWS_GEMM");
        bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        on = __builtin_cpu_supports("avx512f") ? 2 : avx2 ? 1 : 0;
        if (env && !strcmp(env, "0")) on = 0;
        if (env && !strcmp(env, "avx2")) on = avx2 ? 1 : 0;
    }
    return on;
}

/* An empty depth: c = 0 (or left alone when accumulating), then the epilogue. */
static void empty_depth(const fedc__gather_gemm *g) {
    for (int64_t r = 0; r < g->rows; r++)
        for (int64_t j = 0; j < g->cols; j++) {
            float v = g->accumulate ? g->c[r * g->ldc + j] : 0.0f;
            if (g->bias) v = v + g->bias[j];
            if (g->relu) v = v > 0 ? v : 0;
            if (g->minuend) v = g->minuend[r * g->ldc + j] - *g->scale * v;
            g->c[r * g->ldc + j] = v;
        }
}

int fedc__rows_gemm_level(void) { return level(); }

void fedc__rows_gemm_run(const fedc__gather_gemm *g) {
    if (level() == 2) rows_gemm(g);
    else fedc__rows_gemm_avx2(g);
}

bool fedc__fast_gather_gemm(const fedc__gather_gemm *g) {
    if (!level()) return false;
    if (g->rows > 0 && g->cols > 0) {
        if (g->depth <= 0) empty_depth(g);
        else if (g->w_transposed) fedc__rows_gemm_bt(g);
        else fedc__rows_gemm_run(g);
    }
    return true;
}

bool fedc__fast_rows_gemm(int64_t rows, int64_t cols, int64_t depth, const float *a, int64_t row_step,
                         int64_t k_step, const float *w, int64_t ldw, float *c, int64_t ldc, bool accumulate) {
    return fedc__fast_gather_gemm(&(fedc__gather_gemm){.rows = rows, .cols = cols, .depth = depth, .a = a, .w = w,
                                                     .ldw = ldw, .c = c, .ldc = ldc, .accumulate = accumulate,
                                                     .row_step = row_step, .k_step = k_step});
}
#else
bool fedc__fast_rows_gemm(int64_t rows, int64_t cols, int64_t depth, const float *a, int64_t row_step,
                         int64_t k_step, const float *w, int64_t ldw, float *c, int64_t ldc, bool accumulate) {
    (void)rows, (void)cols, (void)depth, (void)a, (void)row_step, (void)k_step, (void)w, (void)ldw, (void)c, (void)ldc;
    (void)accumulate;
    return false;
}

bool fedc__fast_gather_gemm(const fedc__gather_gemm *g) {
    (void)g;
    return false;
}

int fedc__rows_gemm_level(void) { return 0; }

void fedc__rows_gemm_run(const fedc__gather_gemm *g) { (void)g; }
#endif
