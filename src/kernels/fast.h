/* fast.h — the fast kernels, one per entry of fedc__kernels_fast that has a faster
 * version than the reference (internal): declared from kernels.def, each with
 * exactly its table field's signature; fast_table.c builds the table from them.
 * Below them, what the fast_*.c files share. */
#ifndef FEDC_KERNELS_FAST_H
#define FEDC_KERNELS_FAST_H

#include "kernels/kernels.h"

/* fedc__fast_<field> for every row of kernels.def whose fast column is FAST. */
#define FEDC__FAST_DECL_FAST(ret, fn, params) ret fn params;
#define FEDC__FAST_DECL_REF(ret, fn, params)
#define FEDC_KERNEL(ret, field, ref, fast, params) FEDC__FAST_DECL_##fast(ret, fedc__fast_##field, params)
#include "kernels/kernels.def"
#undef FEDC_KERNEL
#undef FEDC__FAST_DECL_FAST
#undef FEDC__FAST_DECL_REF

/* fast_conv_in_place.c, for fast_conv.c: whether a pass (forward and filter
 * gradient, or the input gradient) can read the image in place (f32, AVX-512 or
 * AVX2 + FMA, stride 1 for the input gradient), its scratch, and the passes. */
int fedc__conv_in_place_ok(const fedc__conv_geom *g, fedc_dtype dt, int input_grad);
size_t fedc__conv_in_place_scratch(const fedc__conv_geom *g);
fedc_status fedc__conv_forward_in_place(const fedc__conv_geom *g, const float *x, const float *w, const float *bias,
                                       int relu, const fedc__pool_geom *pool, float *y, void *scratch);
void fedc__conv_filter_grad_in_place(const fedc__conv_geom *g, const float *x, const float *dy, float *dw,
                                     void *scratch);
void fedc__conv_input_grad_in_place(const fedc__conv_geom *g, const float *dy, const float *w, float *dx,
                                    void *scratch);

/* c (+)= a @ w for `rows` rows of a, element (r, k) at a[r row_step + k k_step]
 * (dense: lda, 1; dense and transposed: 1, lda), against w [depth, cols] (ldw)
 * into c (ldc), in AVX-512 or AVX2 without packing w (fast_rows_gemm.c); false,
 * doing nothing, where both are missing. */
bool fedc__fast_rows_gemm(int64_t rows, int64_t cols, int64_t depth, const float *a, int64_t row_step,
                         int64_t k_step, const float *w, int64_t ldw, float *c, int64_t ldc, bool accumulate);
/* c (+)= a @ w with a gathered a, element (r, k) at a[row_off[r] + k_off[k]], so
 * that a convolution reads its image in place (fast_conv.c), or (row_off and
 * k_off NULL) a strided a, element (r, k) at a[r row_step + k k_step]; then, when
 * set, the epilogue on the finished sums, with the bits of the unfused ops:
 * c = c + bias, c = c > 0 ? c : 0, and c = minuend - scale * c (an SGD step on a
 * weight gradient; minuend [rows, cols] ldc apart, may be c). Each element of c
 * is its initial value plus the products in increasing k, one FMA at a time.
 * False, doing nothing, without AVX-512 or AVX2 + FMA. */
typedef struct fedc__gather_gemm {
    int64_t rows, cols, depth;
    const float *a;
    const int32_t *row_off, *k_off;
    const float *w; /* [depth, cols], rows ldw apart */
    int64_t ldw;
    float *c; /* [rows, cols], rows ldc apart */
    int64_t ldc;
    bool accumulate; /* c += (else c =) */
    const float *bias; /* [cols] or NULL */
    bool relu;
    int64_t row_step, k_step; /* a strided a */
    const float *minuend, *scale;
    bool w_transposed; /* w stored [cols, depth]: element (k, j) at w[j ldw + k] (fast_rows_gemm_bt.c) */
} fedc__gather_gemm;
bool fedc__fast_gather_gemm(const fedc__gather_gemm *g);
/* Which loop fedc__fast_gather_gemm runs here: 2 AVX-512, 1 AVX2 + FMA, 0 none.
 * Callers whose choice of it was measured on AVX-512 only take it at 2. */
int fedc__rows_gemm_level(void);
/* The loop of fedc__fast_gather_gemm on AVX2 + FMA (a depth above 0). */
void fedc__rows_gemm_avx2(const fedc__gather_gemm *g);
/* This machine's loop (level 1 or 2) on g, a depth above 0 and w not transposed. */
void fedc__rows_gemm_run(const fedc__gather_gemm *g);
/* g with w transposed (a depth above 0, level 1 or 2): w transposed a panel at a
 * time, each panel run by fedc__rows_gemm_run (fast_rows_gemm_bt.c). */
void fedc__rows_gemm_bt(const fedc__gather_gemm *g);

/* sub_scaled's loop on the calling thread alone (for work already cut into blocks). */
/* fast_transformer.c, for fast_blas.c's matmul_bias: rows [rows, cols] of c (ld
 * apart) get bias [cols] added, then (act not NULL, ld apart too) act = gelu(c),
 * with the bits of the fast add and gelu, on the calling thread. */
void fedc__fast_bias_gelu_rows(fedc_dtype dt, int64_t rows, int64_t cols, int64_t ld, const void *bias, void *c,
                               void *act);
void fedc__fast_sub_scaled_run(fedc_dtype dt, int64_t n, const void *w, const void *s, const void *g, void *out);

#endif
