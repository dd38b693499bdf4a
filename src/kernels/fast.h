/* fast.h — the fast kernels, one per entry of fedc_kernels_fast that has a faster
 * version than the reference (internal). Each has exactly its table field's
 * signature; fast_table.c builds the table from them. */
#ifndef FEDC_KERNELS_FAST_H
#define FEDC_KERNELS_FAST_H

#include "kernels/kernels.h"

fedc_status fedc_fast_unary(fedc_unary_op op, fedc_dtype dt, int64_t n, const void *x, void *y,
                            double param);
fedc_status fedc_fast_binary(fedc_binary_op op, fedc_dtype dt, const fedc_kshape *as, const void *a,
                             const fedc_kshape *bs, const void *b, const fedc_kshape *outs,
                             void *out);
fedc_status fedc_fast_select(fedc_dtype dt, const fedc_kshape *cs, const uint8_t *cond, const fedc_kshape *as,
                             const void *a, const fedc_kshape *bs, const void *b, const fedc_kshape *outs, void *out);
fedc_status fedc_fast_reduce(fedc_reduce_op op, fedc_dtype dt, const fedc_kshape *xs, unsigned axes,
                             const void *x, void *y);
fedc_status fedc_fast_slice(size_t elsize, const fedc_kshape *xs, const int64_t *start, const void *x,
                            const fedc_kshape *ys, void *y);
fedc_status fedc_fast_pad(size_t elsize, const fedc_kshape *xs, const int64_t *lo, const void *x,
                          const fedc_kshape *ys, void *y);
fedc_status fedc_fast_matmul(fedc_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, int ta,
                             int tb, const void *a, int a_batched, const void *b, int b_batched,
                             void *c);
size_t fedc_fast_conv2d_scratch(const fedc_conv_geom *g, fedc_dtype dt);
fedc_status fedc_fast_conv2d(fedc_dtype dt, const fedc_conv_geom *g, const void *x, const void *w,
                             void *y, void *scratch);
fedc_status fedc_fast_conv2d_bias_relu(fedc_dtype dt, const fedc_conv_geom *g, const void *x, const void *w,
                                      const void *bias, int relu, const fedc_pool_geom *pool, void *y,
                                      void *scratch);
/* fast_conv_in_place.c, for fast_conv.c: whether a pass (forward and filter
 * gradient, or the input gradient) can read the image in place (f32, AVX-512,
 * stride 1 for the input gradient), its scratch, and the passes. */
int fedc__conv_in_place_ok(const fedc_conv_geom *g, fedc_dtype dt, int input_grad);
size_t fedc__conv_in_place_scratch(const fedc_conv_geom *g);
fedc_status fedc__conv_forward_in_place(const fedc_conv_geom *g, const float *x, const float *w, const float *bias,
                                       int relu, const fedc_pool_geom *pool, float *y, void *scratch);
void fedc__conv_filter_grad_in_place(const fedc_conv_geom *g, const float *x, const float *dy, float *dw,
                                     void *scratch);
void fedc__conv_input_grad_in_place(const fedc_conv_geom *g, const float *dy, const float *w, float *dx,
                                    void *scratch);
fedc_status fedc_fast_conv2d_input_grad(fedc_dtype dt, const fedc_conv_geom *g, const void *dy,
                                        const void *w, void *dx, void *scratch);
fedc_status fedc_fast_conv2d_filter_grad(fedc_dtype dt, const fedc_conv_geom *g, const void *x,
                                         const void *dy, void *dw, void *scratch);
fedc_status fedc_fast_dropout(fedc_dtype dt, int64_t n, const void *x, fedc_rng_stream stream, double rate,
                              void *y);
fedc_status fedc_fast_max_pool2d(fedc_dtype dt, const fedc_pool_geom *g, const void *x, void *y);
fedc_status fedc_fast_max_pool2d_grad(fedc_dtype dt, const fedc_pool_geom *g, const void *x,
                                      const void *dy, void *dx);
fedc_status fedc_fast_avg_pool2d(fedc_dtype dt, const fedc_pool_geom *g, const void *x, void *y);
fedc_status fedc_fast_avg_pool2d_grad(fedc_dtype dt, const fedc_pool_geom *g, const void *dy,
                                      void *dx);
fedc_status fedc_fast_lstm(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *xw, const void *wh,
                           void *trace);
fedc_status fedc_fast_lstm_grad(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *trace, const void *dtrace,
                                const void *wh, void *dxw, void *scratch);

/* c (+)= a @ w for `rows` rows of a, element (r, k) at a[r row_step + k k_step]
 * (dense: lda, 1; dense and transposed: 1, lda), against w [depth, cols] (ldw)
 * into c (ldc), in AVX-512 without packing w (fast_rows_gemm.c); false, doing
 * nothing, where AVX-512 is missing. */
bool fedc_fast_rows_gemm(int64_t rows, int64_t cols, int64_t depth, const float *a, int64_t row_step,
                         int64_t k_step, const float *w, int64_t ldw, float *c, int64_t ldc, bool accumulate);
/* c (+)= a @ w with a gathered a, element (r, k) at a[row_off[r] + k_off[k]], so
 * that a convolution reads its image in place (fast_conv.c), or (row_off and
 * k_off NULL) a strided a, element (r, k) at a[r row_step + k k_step]; then, when
 * set, the epilogue on the finished sums, with the bits of the unfused ops:
 * c = c + bias, c = c > 0 ? c : 0, and c = minuend - scale * c (an SGD step on a
 * weight gradient; minuend [rows, cols] ldc apart, may be c). Each element of c
 * is its initial value plus the products in increasing k, one FMA at a time.
 * False, doing nothing, without AVX-512. */
typedef struct fedc_gather_gemm {
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
} fedc_gather_gemm;
bool fedc_fast_gather_gemm(const fedc_gather_gemm *g);

fedc_status fedc_fast_select_gt(fedc_dtype dt, int64_t n, const void *x, const void *s, const void *a, int64_t sa,
                                const void *b, int64_t sb, void *out);
fedc_status fedc_fast_sub_scaled(fedc_dtype dt, int64_t n, const void *w, const void *s, const void *g, void *out);
/* sub_scaled's loop on the calling thread alone (for work already cut into blocks). */
void fedc_fast_sub_scaled_run(fedc_dtype dt, int64_t n, const void *w, const void *s, const void *g, void *out);
fedc_status fedc_fast_matmul_sub_scaled(fedc_dtype dt, int64_t m, int64_t n, int64_t k, int ta, int tb, const void *a,
                                        const void *b, const void *w, const void *s, void *out);
fedc_status fedc_fast_scatter_add(fedc_dtype dt, int64_t rows, int64_t width, int64_t nidx, const int32_t *idx,
                                  const void *updates, void *y);
fedc_status fedc_fast_softmax_xent(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                   const int32_t *labels, const void *w, void *loss);
fedc_status fedc_fast_softmax_xent_grad(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                        const int32_t *labels, const void *scale, void *dlogits);
fedc_status fedc_fast_gelu(fedc_dtype dt, int64_t n, const void *x, void *y);
fedc_status fedc_fast_gelu_grad(fedc_dtype dt, int64_t n, const void *x, const void *dy, void *dx);
fedc_status fedc_fast_layer_norm(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *gamma,
                                 const void *beta, double eps, void *y);
fedc_status fedc_fast_layer_norm_grad(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *gamma,
                                      const void *dy, double eps, void *dx);
fedc_status fedc_fast_layer_norm_param_grad(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *dy,
                                            double eps, void *dgb);
size_t fedc_fast_attention_scratch(fedc_dtype dt, const fedc_attn_geom *g);
fedc_status fedc_fast_causal_attention(fedc_dtype dt, const fedc_attn_geom *g, const void *qkv, void *y,
                                       void *scratch);
fedc_status fedc_fast_causal_attention_grad(fedc_dtype dt, const fedc_attn_geom *g, const void *qkv, const void *dy,
                                            void *dqkv, void *scratch);

#endif
