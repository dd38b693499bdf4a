/*
 * kernels.h — the numerical kernels, below the IR: plain functions on contiguous
 * row-major arrays. Nothing here knows about programs or nodes.
 *
 * There are two implementations of this interface, behind one table whose entries
 * are listed once, in kernels.def (each one's contract, signature, and which
 * function each table uses; it says how to add one):
 *   fedc__kernels_ref   plain C loops written for clarity: the oracle;
 *   fedc__kernels_fast  BLAS GEMM, im2col convolution, vectorisable loops; an entry
 *                      that has no faster version points at the reference one.
 * The executor runs one of them as its device's table (src/exec/device.h: "cpu" is
 * the fast one, "cpu-reference" the reference one).
 * tests/test_kernels_ref.c checks the reference against known values and checks
 * both tables against kernels.def; tests/test_kernels_fast.c compares the two on
 * odd shapes.
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
 *    BLAS is set to one thread by fedc__kernels_init()), unless the caller lends
 *    them a pool (fedc__kernels_set_pool): then the large fast kernels split their
 *    work into blocks that depend only on the shapes, never on the number of
 *    threads, so the result has the same bits with or without the pool.
 */
#ifndef FEDC_KERNELS_H
#define FEDC_KERNELS_H

#include "fedc/core.h"
#include "fedc/types.h"

typedef struct fedc__kshape {
    int rank;
    int64_t dims[FEDC_MAX_RANK];
} fedc__kshape;

int64_t fedc__kshape_count(const fedc__kshape *s);

typedef enum fedc__unary_op {
    FEDC_U_NEG, FEDC_U_EXP, FEDC_U_LOG, FEDC_U_TANH, FEDC_U_SIGMOID, FEDC_U_RELU,
    FEDC_U_SQRT, FEDC_U_SQUARE, FEDC_U_POW, /* x ** param */
    FEDC_U_COUNT
} fedc__unary_op;

typedef enum fedc__binary_op {
    FEDC_B_ADD, FEDC_B_SUB, FEDC_B_MUL, FEDC_B_DIV, FEDC_B_MAX, FEDC_B_MIN,
    /* comparisons: output dtype bool */
    FEDC_B_EQ, FEDC_B_NE, FEDC_B_LT, FEDC_B_LE, FEDC_B_GT, FEDC_B_GE,
    FEDC_B_COUNT
} fedc__binary_op;

typedef enum fedc_reduce_op { FEDC_R_SUM, FEDC_R_MEAN, FEDC_R_MAX, FEDC_R_COUNT } fedc_reduce_op;

/* Geometry of a 2-D convolution, NHWC input [n,h,w,c], HWIO filter [kh,kw,c,o],
 * output [n,oh,ow,o]. Output pixel (i, j) reads input rows i*sh - pad_top + [0, kh)
 * and columns j*sw - pad_left + [0, kw); reads outside the image are zero. */
typedef struct fedc__conv_geom {
    int64_t n, h, w, c;   /* input */
    int64_t kh, kw, o;    /* filter */
    int64_t sh, sw;       /* strides */
    int64_t pad_top, pad_left;
    int64_t oh, ow;       /* output */
} fedc__conv_geom;

/* Geometry of 2-D pooling over NHWC [n,h,w,c] -> [n,oh,ow,c], windows kh x kw with
 * strides sh, sw. Padded positions are ignored: max pooling never picks them and
 * average pooling divides by the number of in-image elements of each window
 * (TensorFlow's convention). */
typedef struct fedc__pool_geom {
    int64_t n, h, w, c;
    int64_t kh, kw, sh, sw;
    int64_t pad_top, pad_left;
    int64_t oh, ow;
} fedc__pool_geom;

/* Causal multi-head self-attention on packed projections (as GPT-2 and llm.c lay
 * them out): qkv is [batch, seq, 3 * heads * head_dim] holding q, k and v side by
 * side, each [heads, head_dim] per position; the output is [batch, seq, heads *
 * head_dim]. Position i attends to positions j <= i with weights
 * softmax_j(q_i . k_j / sqrt(head_dim)). */
typedef struct fedc__attn_geom {
    int64_t batch, seq, heads, head_dim;
} fedc__attn_geom;

/* The table of kernels: one field per row of kernels.def, which states each
 * kernel's contract, its signature and which implementation each table uses. */
typedef struct fedc__kernels {
    const char *name; /* "ref" or "fast" */
#define FEDC_KERNEL(ret, field, ref, fast, params) ret(*field) params;
#include "kernels/kernels.def"
#undef FEDC_KERNEL
} fedc__kernels;

/* The implementation a column of kernels.def names, for the tables and their test:
 * FEDC__KERNEL_IMPL_##column(field). */
#define FEDC__KERNEL_IMPL_REF(field) fedc__ref_##field
#define FEDC__KERNEL_IMPL_FAST(field) fedc__fast_##field
#define FEDC__KERNEL_IMPL_NONE(field) NULL

/* lstm_grad's and lstm_tangent's scratch: 2 B H doubles for the carried
 * cotangents, then room for a transposed copy of wh (4 H^2 floats, fast_lstm.c). */
#define FEDC_LSTM_SCRATCH(B, H) ((size_t)(2 * (B) * (H)) * sizeof(double) + (size_t)(4 * (H) * (H)) * sizeof(float))

extern const fedc__kernels fedc__kernels_ref;
extern const fedc__kernels fedc__kernels_fast;

/* Once per process (idempotent, thread-safe): pins BLAS to one thread, and
 * moves OpenBLAS off a generic core it fell back to (fast_blas.c). */
void fedc__kernels_init(void);
/* The name of the BLAS kernels in use (OpenBLAS's core), for benchmarks. */
const char *fedc__kernels_blas_core(void);

/* The pool the calling thread's fast kernels may use (NULL: none, the default).
 * Set by the executor around a run when it has threads no client uses. Returns
 * the previous one. */
fedc_pool *fedc__kernels_set_pool(fedc_pool *pool);
/* Runs task(ctx, i, worker) for i in [0, n): on the calling thread's pool when it
 * has one, else in order on the calling thread. Tasks write disjoint results. */
void fedc__kernels_parallel(int64_t n, fedc_pool_task task, void *ctx);
/* fn(ctx, i0, i1) over [0, n) cut into spans of `span` (the last shorter), as
 * tasks of fedc__kernels_parallel; under two spans' worth it is one call. For
 * work whose result does not depend on where the cuts fall (elementwise, copies). */
typedef void (*fedc_span_fn)(const void *ctx, int64_t i0, int64_t i1);
void fedc__kernels_spans(int64_t n, int64_t span, fedc_span_fn fn, const void *ctx);

/* Measures this machine's single-thread sgemm GFLOP/s on n x n x n (for benchmarks). */
double fedc__kernels_sgemm_gflops(int64_t n, int repeats);

#endif /* FEDC_KERNELS_H */
