/*
 * ref.h — the reference kernels, one function per entry of struct fedc_kernels
 * (fedc_ref_<field>, with that field's exact signature), so a fast implementation
 * can point at a reference entry where it has no faster version. The table itself
 * is fedc_kernels_ref (ref_table.c).
 *
 * The reference kernels are the oracle: plain loops and index arithmetic, no BLAS,
 * no allocation, no threads. Choices a faster implementation must match (up to
 * rounding) or knowingly differ from:
 *
 *  - Floating-point work on f32 is done in double and rounded once when stored:
 *    every sum (reduce, matmul, conv and its gradients, pooling, scatter_add,
 *    log_softmax, softmax_xent) accumulates in a double, in the plain row-major order
 *    of the summed indices, and unary functions are evaluated in double. Results are
 *    therefore at least as accurate as a float-accumulating implementation; compare
 *    against them with a relative tolerance, not bit equality.
 *  - i32 ADD/SUB/MUL/NEG and i32 SUM wrap modulo 2^32 (no undefined overflow). i32 DIV
 *    truncates toward zero; x / 0 is 0 and INT32_MIN / -1 is INT32_MIN.
 *  - MAX/MIN (binary) propagate NaN. MAX reduce of an empty axis is -inf (INT32_MIN for
 *    i32); MEAN of an empty axis is NaN (0/0).
 *  - max_pool2d of a window with no in-image element gives -inf; avg_pool2d of such
 *    a window gives 0, and its gradient sends nothing back.
 *  - argmax takes the first maximum (strict >, so a NaN is never chosen unless it is
 *    element 0); argmax over an empty axis writes 0.
 *  - cast: float -> i32/u8 truncates toward zero and saturates to the target's range,
 *    NaN -> 0; integer -> u8 wraps modulo 256 (C's conversion, as numpy does); any ->
 *    bool is x != 0 (so NaN -> 1).
 *  - dropout scales kept values as x / (1 - rate), computed in double.
 *  - conv2d_scratch is 0: the reference needs no scratch and ignores the pointer.
 *  - Shapes are checked where it is cheap (rank, broadcast compatibility, permutation,
 *    slice/pad bounds): a bad one is FEDC_ESHAPE or FEDC_EINVAL with a message.
 *  - Only the purely elementwise kernels (unary, binary and select without
 *    broadcasting of the aliased operand, cast between same-size types, dropout) may
 *    be called with y aliasing x; the rest need distinct buffers.
 */
#ifndef FEDC_KERNELS_REF_H
#define FEDC_KERNELS_REF_H

#include "kernels/kernels.h"

fedc_status fedc_ref_unary(fedc_unary_op op, fedc_dtype dt, int64_t n, const void *x, void *y,
                           double param);
fedc_status fedc_ref_binary(fedc_binary_op op, fedc_dtype dt, const fedc_kshape *as, const void *a,
                            const fedc_kshape *bs, const void *b, const fedc_kshape *outs,
                            void *out);
fedc_status fedc_ref_select(fedc_dtype dt, const fedc_kshape *cs, const uint8_t *cond,
                            const fedc_kshape *as, const void *a, const fedc_kshape *bs,
                            const void *b, const fedc_kshape *outs, void *out);
fedc_status fedc_ref_reduce(fedc_reduce_op op, fedc_dtype dt, const fedc_kshape *xs, unsigned axes,
                            const void *x, void *y);
fedc_status fedc_ref_broadcast_to(size_t elsize, const fedc_kshape *xs, const void *x,
                                  const fedc_kshape *ys, void *y);
fedc_status fedc_ref_transpose(size_t elsize, const fedc_kshape *xs, const int *perm, const void *x,
                               void *y);
fedc_status fedc_ref_slice(size_t elsize, const fedc_kshape *xs, const int64_t *start,
                           const void *x, const fedc_kshape *ys, void *y);
fedc_status fedc_ref_pad(size_t elsize, const fedc_kshape *xs, const int64_t *lo, const void *x,
                         const fedc_kshape *ys, void *y);
fedc_status fedc_ref_concat(size_t elsize, int n, const fedc_kshape *xs, const void *const *x,
                            int axis, void *y);
fedc_status fedc_ref_matmul(fedc_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, int ta,
                            int tb, const void *a, int a_batched, const void *b, int b_batched,
                            void *c);
fedc_status fedc_ref_gather(size_t elsize, int64_t rows, int64_t width, const void *table,
                            int64_t nidx, const int32_t *idx, void *y);
fedc_status fedc_ref_scatter_add(fedc_dtype dt, int64_t rows, int64_t width, int64_t nidx,
                                 const int32_t *idx, const void *updates, void *y);
fedc_status fedc_ref_one_hot(fedc_dtype dt, int64_t n, const int32_t *idx, int64_t depth, void *y);
size_t fedc_ref_conv2d_scratch(const fedc_conv_geom *g, fedc_dtype dt);
fedc_status fedc_ref_conv2d(fedc_dtype dt, const fedc_conv_geom *g, const void *x, const void *w,
                            void *y, void *scratch);
fedc_status fedc_ref_conv2d_input_grad(fedc_dtype dt, const fedc_conv_geom *g, const void *dy,
                                       const void *w, void *dx, void *scratch);
fedc_status fedc_ref_conv2d_filter_grad(fedc_dtype dt, const fedc_conv_geom *g, const void *x,
                                        const void *dy, void *dw, void *scratch);
fedc_status fedc_ref_max_pool2d(fedc_dtype dt, const fedc_pool_geom *g, const void *x, void *y);
fedc_status fedc_ref_max_pool2d_grad(fedc_dtype dt, const fedc_pool_geom *g, const void *x,
                                     const void *dy, void *dx);
fedc_status fedc_ref_avg_pool2d(fedc_dtype dt, const fedc_pool_geom *g, const void *x, void *y);
fedc_status fedc_ref_avg_pool2d_grad(fedc_dtype dt, const fedc_pool_geom *g, const void *dy,
                                     void *dx);
fedc_status fedc_ref_log_softmax(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, void *y);
fedc_status fedc_ref_softmax_xent(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                  const int32_t *labels, const void *w, void *loss);
fedc_status fedc_ref_softmax_xent_grad(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                       const int32_t *labels, const void *scale, void *dlogits);
/* FEDC_ERANGE naming `kernel` and the row when a label is outside [0, classes). */
fedc_status fedc_ref_check_labels(const char *kernel, int64_t rows, int64_t classes, const int32_t *labels);
fedc_status fedc_ref_argmax(fedc_dtype dt, int64_t outer, int64_t len, int64_t inner,
                            const void *x, int32_t *y);
fedc_status fedc_ref_dropout(fedc_dtype dt, int64_t n, const void *x, fedc_rng_stream stream,
                             double rate, void *y);
fedc_status fedc_ref_cast(fedc_dtype from, fedc_dtype to, int64_t n, const void *x, void *y);
fedc_status fedc_ref_iota(fedc_dtype dt, const fedc_kshape *ys, int axis, void *y);
fedc_status fedc_ref_lstm(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *xw, const void *wh,
                          void *trace);
fedc_status fedc_ref_lstm_grad(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *trace, const void *dtrace,
                               const void *wh, void *dxw, void *scratch);
fedc_status fedc_ref_lstm_tangent(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *trace, const void *dxw,
                                  const void *wh, void *dtrace, void *scratch);

fedc_status fedc_ref_gelu(fedc_dtype dt, int64_t n, const void *x, void *y);
fedc_status fedc_ref_gelu_grad(fedc_dtype dt, int64_t n, const void *x, const void *dy, void *dx);
fedc_status fedc_ref_layer_norm(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *gamma,
                                const void *beta, double eps, void *y);
fedc_status fedc_ref_layer_norm_grad(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *gamma,
                                     const void *dy, double eps, void *dx);
fedc_status fedc_ref_layer_norm_param_grad(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *dy,
                                           double eps, void *dgb);
size_t fedc_ref_attention_scratch(fedc_dtype dt, const fedc_attn_geom *g);
fedc_status fedc_ref_causal_attention(fedc_dtype dt, const fedc_attn_geom *g, const void *qkv, void *y,
                                      void *scratch);
fedc_status fedc_ref_causal_attention_grad(fedc_dtype dt, const fedc_attn_geom *g, const void *qkv, const void *dy,
                                           void *dqkv, void *scratch);

/* ---- helpers shared by the ref_*.c files (defined in ref_shape.c) ------------ */

/* FEDC_EINVAL naming `kernel` unless 0 <= s->rank <= FEDC_MAX_RANK and no dim is
 * negative. */
fedc_status fedc_ref_check_shape(const char *kernel, const fedc_kshape *s);

/* FEDC_ESHAPE naming `kernel` unless `inner` (same rank) placed at offset `at` lies
 * inside `outer` (slice's and pad's window). */
fedc_status fedc_ref_check_window(const char *kernel, const fedc_kshape *outer, const int64_t *at,
                                  const fedc_kshape *inner);

/* Element strides of `in` seen through out's indices under numpy broadcasting: in is
 * right-aligned against out, and a missing or size-1 dim gets stride 0. FEDC_ESHAPE
 * naming `kernel` and both shapes when in does not broadcast to out. */
fedc_status fedc_ref_bcast_strides(const char *kernel, const fedc_kshape *in,
                                   const fedc_kshape *out, int64_t strides[FEDC_MAX_RANK]);

/* The offset, under `strides`, of the element whose row-major flat index in shape s
 * is `flat`. */
int64_t fedc_ref_offset(const fedc_kshape *s, const int64_t *strides, int64_t flat);

/* The int32 whose bits are u: arithmetic modulo 2^32 without relying on the
 * implementation-defined conversion of out-of-range values. */
static inline int32_t fedc_ref_wrap_i32(uint32_t u) {
    return u <= (uint32_t)INT32_MAX ? (int32_t)u : -(int32_t)(~u) - 1;
}

/* Float elements read as double and written with one rounding (dt is F32 or F64). */
static inline double fedc_ref_loadf(fedc_dtype dt, const void *p, int64_t i) {
    return dt == FEDC_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static inline void fedc_ref_storef(fedc_dtype dt, void *p, int64_t i, double v) {
    if (dt == FEDC_F32)
        ((float *)p)[i] = (float)v;
    else
        ((double *)p)[i] = v;
}

#endif /* FEDC_KERNELS_REF_H */
