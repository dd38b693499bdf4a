/*
 * kernels.h — the numerical kernels, below the IR: plain functions on contiguous
 * row-major arrays. Nothing here knows about programs or nodes.
 *
 * There are two implementations of this interface, behind one table:
 *   fedc_kernels_ref   plain C loops written for clarity: the oracle;
 *   fedc_kernels_fast  BLAS GEMM, im2col convolution, vectorisable loops; an entry
 *                      that has no faster version points at the reference one.
 * Tests compare the two on odd shapes (tests/test_kernels.c).
 *
 * Conventions
 *  - Float kernels take FEDC_F32 or FEDC_F64; integer-capable ones also FEDC_I32.
 *    Comparisons write FEDC_BOOL (one byte, 0 or 1). Conditions are FEDC_BOOL.
 *  - Index arrays (gather, labels, argmax) are int32.
 *  - Images are NHWC, filters HWIO ([kh, kw, in_channels, out_channels]).
 *  - Kernels that can meet bad data (an index out of range) return a status with a
 *    message; the rest return FEDC_OK. None allocates: scratch comes from the caller,
 *    sized by the matching *_scratch function.
 *  - Kernels run on the calling thread (the runtime parallelises across clients;
 *    BLAS is set to one thread by fedc_kernels_init()), unless the caller lends
 *    them a pool (fedc_kernels_set_pool): then the large fast kernels split their
 *    work into blocks that depend only on the shapes, never on the number of
 *    threads, so the result has the same bits with or without the pool.
 */
#ifndef FEDC_KERNELS_H
#define FEDC_KERNELS_H

#include "fedc/core.h"
#include "fedc/types.h"

typedef struct fedc_kshape {
    int rank;
    int64_t dims[FEDC_MAX_RANK];
} fedc_kshape;

int64_t fedc_kshape_count(const fedc_kshape *s);

typedef enum fedc_unary_op {
    FEDC_U_NEG, FEDC_U_EXP, FEDC_U_LOG, FEDC_U_TANH, FEDC_U_SIGMOID, FEDC_U_RELU,
    FEDC_U_SQRT, FEDC_U_SQUARE, FEDC_U_POW, /* x ** param */
    FEDC_U_COUNT
} fedc_unary_op;

typedef enum fedc_binary_op {
    FEDC_B_ADD, FEDC_B_SUB, FEDC_B_MUL, FEDC_B_DIV, FEDC_B_MAX, FEDC_B_MIN,
    /* comparisons: output dtype bool */
    FEDC_B_EQ, FEDC_B_NE, FEDC_B_LT, FEDC_B_LE, FEDC_B_GT, FEDC_B_GE,
    FEDC_B_COUNT
} fedc_binary_op;

typedef enum fedc_reduce_op { FEDC_R_SUM, FEDC_R_MEAN, FEDC_R_MAX, FEDC_R_COUNT } fedc_reduce_op;

/* Geometry of a 2-D convolution, NHWC input [n,h,w,c], HWIO filter [kh,kw,c,o],
 * output [n,oh,ow,o]. Output pixel (i, j) reads input rows i*sh - pad_top + [0, kh)
 * and columns j*sw - pad_left + [0, kw); reads outside the image are zero. */
typedef struct fedc_conv_geom {
    int64_t n, h, w, c;   /* input */
    int64_t kh, kw, o;    /* filter */
    int64_t sh, sw;       /* strides */
    int64_t pad_top, pad_left;
    int64_t oh, ow;       /* output */
} fedc_conv_geom;

/* Geometry of 2-D pooling over NHWC [n,h,w,c] -> [n,oh,ow,c], windows kh x kw with
 * strides sh, sw. Padded positions are ignored: max pooling never picks them and
 * average pooling divides by the number of in-image elements of each window
 * (TensorFlow's convention). */
typedef struct fedc_pool_geom {
    int64_t n, h, w, c;
    int64_t kh, kw, sh, sw;
    int64_t pad_top, pad_left;
    int64_t oh, ow;
} fedc_pool_geom;

/* Causal multi-head self-attention on packed projections (as GPT-2 and llm.c lay
 * them out): qkv is [batch, seq, 3 * heads * head_dim] holding q, k and v side by
 * side, each [heads, head_dim] per position; the output is [batch, seq, heads *
 * head_dim]. Position i attends to positions j <= i with weights
 * softmax_j(q_i . k_j / sqrt(head_dim)). */
typedef struct fedc_attn_geom {
    int64_t batch, seq, heads, head_dim;
} fedc_attn_geom;

typedef struct fedc_kernels {
    const char *name; /* "ref" or "fast" */

    /* y[i] = op(x[i]) over n elements; `param` is the exponent of FEDC_U_POW. NEG
     * also takes I32. */
    fedc_status (*unary)(fedc_unary_op op, fedc_dtype dt, int64_t n, const void *x, void *y,
                         double param);

    /* out = a op b with numpy broadcasting: a and b are right-aligned against `out`,
     * whose rank is the larger rank; each dim of a or b equals out's or is 1. `dt` is
     * the dtype of a and b (F32, F64 or I32); `out` is dt, or BOOL for comparisons. */
    fedc_status (*binary)(fedc_binary_op op, fedc_dtype dt, const fedc_kshape *as, const void *a,
                          const fedc_kshape *bs, const void *b, const fedc_kshape *outs, void *out);

    /* out = cond ? a : b, all three broadcast to outs as in `binary`; cond is BOOL. */
    fedc_status (*select)(fedc_dtype dt, const fedc_kshape *cs, const uint8_t *cond,
                          const fedc_kshape *as, const void *a, const fedc_kshape *bs,
                          const void *b, const fedc_kshape *outs, void *out);

    /* Optional (NULL in the reference table): elementwise pairs in one pass, with
     * the bits of the two ops run one after the other (fast_pairs.c), F32 and F64.
     * select_gt: out = x > s ? a : b over n elements, x full, s one element, a and b
     * full (step 1) or one element (step 0): select(gt(x, s), a, b), relu's
     * derivative. sub_scaled: out = w - (s * g), s one element: sub(w, mul(s, g)),
     * an SGD step. out may be any of the full operands. The executor runs a pair
     * this way when the inner op's only reader is the outer one. */
    fedc_status (*select_gt)(fedc_dtype dt, int64_t n, const void *x, const void *s, const void *a, int64_t sa,
                             const void *b, int64_t sb, void *out);
    fedc_status (*sub_scaled)(fedc_dtype dt, int64_t n, const void *w, const void *s, const void *g, void *out);
    /* Optional too: out = w - s * (op(a) @ op(b)) for one product [m, n] (matmul's
     * operands, unbatched; w [m, n]; s one element): a weight gradient and its SGD
     * step in one pass, with the bits of matmul, mul and sub. out must not overlap
     * a, b or w. The executor uses it when the product's only reader is the pair. */
    fedc_status (*matmul_sub_scaled)(fedc_dtype dt, int64_t m, int64_t n, int64_t k, int ta, int tb, const void *a,
                                     const void *b, const void *w, const void *s, void *out);

    /* Reduces the axes whose bit is set in `axes` (bit i = axis i of xs). The output
     * holds the remaining axes in order (keepdims only changes the type, not the data).
     * SUM and MAX take F32, F64, I32; MEAN floats. MAX of an empty axis is -inf. */
    fedc_status (*reduce)(fedc_reduce_op op, fedc_dtype dt, const fedc_kshape *xs, unsigned axes,
                          const void *x, void *y);

    /* y = x broadcast to ys (numpy rules, as `binary` does for one operand). Any dtype:
     * elements are copied as `elsize` bytes. */
    fedc_status (*broadcast_to)(size_t elsize, const fedc_kshape *xs, const void *x,
                                const fedc_kshape *ys, void *y);

    /* y = x permuted: y.dims[i] = x.dims[perm[i]]. */
    fedc_status (*transpose)(size_t elsize, const fedc_kshape *xs, const int *perm, const void *x,
                             void *y);

    /* y = x[start[0]:start[0]+ys[0], ...] (unit strides). */
    fedc_status (*slice)(size_t elsize, const fedc_kshape *xs, const int64_t *start, const void *x,
                         const fedc_kshape *ys, void *y);

    /* y = x placed at offset lo[] inside ys, zeros elsewhere. */
    fedc_status (*pad)(size_t elsize, const fedc_kshape *xs, const int64_t *lo, const void *x,
                       const fedc_kshape *ys, void *y);

    /* y = concatenation of the n arrays along `axis` (their other dims agree). */
    fedc_status (*concat)(size_t elsize, int n, const fedc_kshape *xs, const void *const *x,
                          int axis, void *y);

    /* Batched matrix product c[b] = op(a[b]) @ op(b[b]) for b in [0, batch), where
     * op(a) is [m,k] (stored [k,m] when ta), op(b) is [k,n] (stored [n,k] when tb) and
     * c is [m,n]. a_batched / b_batched == 0 means that operand is one matrix shared by
     * every batch. F32 and F64. c is overwritten. */
    fedc_status (*matmul)(fedc_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, int ta,
                          int tb, const void *a, int a_batched, const void *b, int b_batched,
                          void *c);

    /* y[i, :] = table[idx[i], :] for i in [0, nidx); table is [rows, width]. An index
     * outside [0, rows) is an FEDC_ERANGE error naming the index and its position. */
    fedc_status (*gather)(size_t elsize, int64_t rows, int64_t width, const void *table,
                          int64_t nidx, const int32_t *idx, void *y);

    /* y (zeroed first, [rows, width]) += updates[i, :] at row idx[i]: the transpose of
     * gather. F32, F64. Same range check as gather. */
    fedc_status (*scatter_add)(fedc_dtype dt, int64_t rows, int64_t width, int64_t nidx,
                               const int32_t *idx, const void *updates, void *y);

    /* y[i, j] = (idx[i] == j) for j in [0, depth); an index outside [0, depth) gives
     * a row of zeros (as TensorFlow and JAX do). Output dtype any numeric. */
    fedc_status (*one_hot)(fedc_dtype dt, int64_t n, const int32_t *idx, int64_t depth, void *y);

    /* Convolution and its two gradients. Scratch: conv_scratch(g, dt) bytes, shared by
     * all three. input_grad writes dx (overwrites); filter_grad writes dw (overwrites). */
    size_t (*conv2d_scratch)(const fedc_conv_geom *g, fedc_dtype dt);
    fedc_status (*conv2d)(fedc_dtype dt, const fedc_conv_geom *g, const void *x, const void *w,
                          void *y, void *scratch);
    /* Optional (NULL in the reference table): conv2d with an epilogue, conv(x, w) +
     * bias (bias [o], added in that order), then when relu is set v > 0 ? v : 0, then
     * when pool is not NULL max_pool2d with that geometry (pool->n, h, w, c must be
     * g's n, oh, ow, o); y is the last of these. The same bits as conv2d, add, relu
     * and max_pool2d in turn, applied to each chunk of images while its output is in
     * cache. Scratch: conv2d_scratch (which has room for one chunk's output). The
     * executor uses it for conv -> add(bias) [-> relu] [-> max_pool2d] chains whose
     * intermediate values nothing else reads. */
    fedc_status (*conv2d_bias_relu)(fedc_dtype dt, const fedc_conv_geom *g, const void *x, const void *w,
                                    const void *bias, int relu, const fedc_pool_geom *pool, void *y,
                                    void *scratch);
    fedc_status (*conv2d_input_grad)(fedc_dtype dt, const fedc_conv_geom *g, const void *dy,
                                     const void *w, void *dx, void *scratch);
    fedc_status (*conv2d_filter_grad)(fedc_dtype dt, const fedc_conv_geom *g, const void *x,
                                      const void *dy, void *dw, void *scratch);

    /* Pooling and gradients. max_pool2d_grad routes each dy to the first maximum of
     * its window (row-major order) in x, accumulating when windows overlap. */
    fedc_status (*max_pool2d)(fedc_dtype dt, const fedc_pool_geom *g, const void *x, void *y);
    fedc_status (*max_pool2d_grad)(fedc_dtype dt, const fedc_pool_geom *g, const void *x,
                                   const void *dy, void *dx);
    fedc_status (*avg_pool2d)(fedc_dtype dt, const fedc_pool_geom *g, const void *x, void *y);
    fedc_status (*avg_pool2d_grad)(fedc_dtype dt, const fedc_pool_geom *g, const void *dy,
                                   void *dx);

    /* y[r, :] = x[r, :] - logsumexp(x[r, :]) for `rows` rows of `cols`. */
    fedc_status (*log_softmax)(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, void *y);

    /* loss[r] = w[r] * (logsumexp(logits[r, :]) - logits[r, labels[r]]), computed stably;
     * w == NULL means 1. A label outside [0, classes) is FEDC_ERANGE. */
    fedc_status (*softmax_xent)(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                const int32_t *labels, const void *w, void *loss);
    /* dlogits[r, c] = scale[r] * (softmax(logits[r, :])[c] - (c == labels[r])), its
     * gradient. A label outside [0, classes) is FEDC_ERANGE. */
    fedc_status (*softmax_xent_grad)(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                     const int32_t *labels, const void *scale, void *dlogits);

    /* y[o, i] = index of the first maximum of x[o, :, i] (x viewed [outer, len, inner]). */
    fedc_status (*argmax)(fedc_dtype dt, int64_t outer, int64_t len, int64_t inner, const void *x,
                          int32_t *y);

    /* y[i] = keep_i ? x[i] / (1 - rate) : 0 with keep_i = (uniform_i >= rate), where
     * uniform_i = fedc_rng_uniform_f32(stream, i). rate in [0, 1). */
    fedc_status (*dropout)(fedc_dtype dt, int64_t n, const void *x, fedc_rng_stream stream,
                           double rate, void *y);

    /* y = x converted element by element (float -> int truncates toward zero; any ->
     * bool is x != 0). */
    fedc_status (*cast)(fedc_dtype from, fedc_dtype to, int64_t n, const void *x, void *y);

    /* y[idx] = idx[axis] for every index of ys. F32, F64, I32. */
    fedc_status (*iota)(fedc_dtype dt, const fedc_kshape *ys, int axis, void *y);
    /* ---- transformer layers (ref_transformer.c, fast_transformer.c) ---- */

    /* GELU, tanh approximation (GPT-2's, PyTorch's approximate="tanh"):
     * y = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))); gelu_grad writes
     * dx = dy * gelu'(x). y may alias x, dx may alias dy. */
    fedc_status (*gelu)(fedc_dtype dt, int64_t n, const void *x, void *y);
    fedc_status (*gelu_grad)(fedc_dtype dt, int64_t n, const void *x, const void *dy, void *dx);

    /* Layer normalisation of each of `rows` rows of `cols`: y = (x - mean) /
     * sqrt(var + eps) * gamma + beta, var the biased (population) variance.
     * layer_norm_grad writes dx for the cotangent dy; layer_norm_param_grad writes
     * dgb [2, cols]: row 0 d gamma = sum over rows of dy * xhat, row 1 d beta =
     * sum over rows of dy. */
    fedc_status (*layer_norm)(fedc_dtype dt, int64_t rows, int64_t cols, const void *x,
                              const void *gamma, const void *beta, double eps, void *y);
    fedc_status (*layer_norm_grad)(fedc_dtype dt, int64_t rows, int64_t cols, const void *x,
                                   const void *gamma, const void *dy, double eps, void *dx);
    fedc_status (*layer_norm_param_grad)(fedc_dtype dt, int64_t rows, int64_t cols,
                                         const void *x, const void *dy, double eps, void *dgb);

    /* Causal attention (fedc_attn_geom) and its derivative: dqkv (overwritten) is
     * the cotangent of qkv for the output's cotangent dy. The softmax weights are
     * recomputed, not stored. Scratch: attention_scratch(dt, g) bytes. */
    size_t (*attention_scratch)(fedc_dtype dt, const fedc_attn_geom *g);
    fedc_status (*causal_attention)(fedc_dtype dt, const fedc_attn_geom *g, const void *qkv,
                                    void *y, void *scratch);
    fedc_status (*causal_attention_grad)(fedc_dtype dt, const fedc_attn_geom *g, const void *qkv,
                                         const void *dy, void *dqkv, void *scratch);

    /* The LSTM recurrence over T steps of a batch of B, hidden size H (ref_lstm.c
     * states the cell): xw [T, B, 4H] is the input projection (gates i, g, f, o),
     * wh [H, 4H] the recurrent weights; writes trace [T, B, 6H] = per step and row
     * [h, c, i, g, f, o] (gates activated). lstm_grad is backpropagation through
     * time: from the trace and its cotangent dtrace [T, B, 6H] to the cotangent of
     * xw [T, B, 4H] (the preactivations'). lstm_tangent is its transpose in dtrace:
     * from a tangent dxw [T, B, 4H] of xw to the trace's tangent [T, B, 6H]. Scratch:
     * FEDC_LSTM_SCRATCH(B, H) bytes. F32 and F64. */
    fedc_status (*lstm)(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *xw, const void *wh, void *trace);
    fedc_status (*lstm_grad)(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *trace, const void *dtrace,
                             const void *wh, void *dxw, void *scratch);
    fedc_status (*lstm_tangent)(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *trace, const void *dxw,
                                const void *wh, void *dtrace, void *scratch);
} fedc_kernels;

/* lstm_grad's and lstm_tangent's scratch: 2 B H doubles for the carried
 * cotangents, then room for a transposed copy of wh (4 H^2 floats, fast_lstm.c). */
#define FEDC_LSTM_SCRATCH(B, H) ((size_t)(2 * (B) * (H)) * sizeof(double) + (size_t)(4 * (H) * (H)) * sizeof(float))

extern const fedc_kernels fedc_kernels_ref;
extern const fedc_kernels fedc_kernels_fast;

/* Once per process (idempotent, thread-safe): pins BLAS to one thread, and
 * moves OpenBLAS off a generic core it fell back to (fast_blas.c). */
void fedc_kernels_init(void);
/* The name of the BLAS kernels in use (OpenBLAS's core), for benchmarks. */
const char *fedc_kernels_blas_core(void);

/* The pool the calling thread's fast kernels may use (NULL: none, the default).
 * Set by the executor around a run when it has threads no client uses. Returns
 * the previous one. */
fedc_pool *fedc_kernels_set_pool(fedc_pool *pool);
/* Runs task(ctx, i, worker) for i in [0, n): on the calling thread's pool when it
 * has one, else in order on the calling thread. Tasks write disjoint results. */
void fedc_kernels_parallel(int64_t n, fedc_pool_task task, void *ctx);
/* fn(ctx, i0, i1) over [0, n) cut into spans of `span` (the last shorter), as
 * tasks of fedc_kernels_parallel; under two spans' worth it is one call. For
 * work whose result does not depend on where the cuts fall (elementwise, copies). */
typedef void (*fedc_span_fn)(const void *ctx, int64_t i0, int64_t i1);
void fedc_kernels_spans(int64_t n, int64_t span, fedc_span_fn fn, const void *ctx);

/* Measures this machine's single-thread sgemm GFLOP/s on n x n x n (for benchmarks). */
double fedc_kernels_sgemm_gflops(int64_t n, int repeats);

#endif /* FEDC_KERNELS_H */
