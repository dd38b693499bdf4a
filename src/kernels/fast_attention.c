/*
 * fast_attention.c — fused causal multi-head attention for f32, as GEMMs per
 * (batch, head) read straight out of the packed qkv rows (leading dimension 3C,
 * so q, k and v are never copied out) and written straight into the output's
 * rows (leading dimension C, heads side by side).
 *
 * Forward, per head:  S = scale Q K^T (T x T), P = causal softmax of S's rows,
 *                     O = P V.
 * Backward, per head: P recomputed (not stored: T x T per head would be the
 *                     largest activation of the model), dP = dO V^T,
 *                     dS = P o (dP - rowsum(P o dP)), dV = P^T dO,
 *                     dQ = scale dS K, dK = scale dS^T Q.
 * The products go by blocks of query rows (BLOCK, below), each against the keys
 * up to its last row, so the masked upper triangle is skipped but for the
 * diagonal blocks, whose entries above the diagonal are zeroed (exact: they add
 * zeros). f64 goes to the reference kernels.
 *
 * The forward can keep every head's P for the backward, which then skips its
 * first product and softmax (causal_attention_save, causal_attention_grad_apply:
 * 2 MB a layer at the transformer's default shape).
 *
 * The (batch, head) pairs fall into GROUPS fixed groups, each with its own scratch,
 * which run on the kernels' pool when there is one: a head is computed the same
 * way in any group, so the bits do not depend on threads. The softmax loops are
 * compiled for the baseline, AVX2 and AVX-512 (fast_math.h).
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "kernels/fast.h"
#include "kernels/fast_math.h"
#include "kernels/ref.h"

enum { GROUPS = 4 };

/* Scratch: per group, P and dP/dS [T, T] each. */
size_t fedc__fast_attention_scratch(fedc_dtype dt, const fedc__attn_geom *g) {
    size_t fast = (size_t)GROUPS * (size_t)(2 * g->seq * g->seq) * sizeof(float), ref = fedc__ref_attention_scratch(dt, g);
    return dt == FEDC_F32 ? fast : ref;
}

/* BLAS takes int sizes; the type rules bound shapes far below, but say so. */
static fedc_status check_geom(const char *kernel, const fedc__attn_geom *g) {
    int64_t c3 = 3 * g->heads * g->head_dim;
    if (g->seq > (1 << 20) || c3 > (1 << 28))
        return fedc_error(FEDC_EUNSUPPORTED, "%s: seq %lld, width %lld exceed the fast kernel's range", kernel,
                          (long long)g->seq, (long long)c3);
    return FEDC_OK;
}

/* Sum of x[0..n) in 8 interleaved partial sums (vectorisable, fixed order). */
FEDC_FAST_INLINE float sum8(const float *x, int n) {
    float acc[8] = {0}, s = 0;
    int j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++) acc[l] += x[j + l];
    for (; j < n; j++) s += x[j];
    for (int l = 0; l < 8; l++) s += acc[l];
    return s;
}

/* Rows [i0, i1) of the causal softmax of p (ld t), in place; entries past the
 * diagonal up to column i1 zeroed (the block's products read no further). */
FEDC_FAST_INLINE void softmax_rows(int t, int i0, int i1, float *p) {
    for (int i = i0; i < i1; i++) {
        float *row = p + (size_t)i * t, mx = row[0];
        for (int j = 1; j <= i; j++) mx = row[j] > mx ? row[j] : mx;
        for (int j = 0; j <= i; j++) row[j] = fedc__fast_expf(row[j] - mx);
        float inv = 1.0f / sum8(row, i + 1);
        for (int j = 0; j <= i; j++) row[j] *= inv;
        for (int j = i + 1; j < i1; j++) row[j] = 0.0f;
    }
}

/* dP -> dS in place on rows [i0, i1): dS_ij = P_ij (dP_ij - sum_l P_il dP_il),
 * zero past the diagonal up to column i1. */
FEDC_FAST_INLINE void softmax_backward(int t, int i0, int i1, const float *p, float *dp) {
    for (int i = i0; i < i1; i++) {
        const float *pr = p + (size_t)i * t;
        float *dr = dp + (size_t)i * t, acc[8] = {0}, dot = 0;
        int j = 0;
        for (; j + 8 <= i + 1; j += 8)
            for (int l = 0; l < 8; l++) acc[l] += pr[j + l] * dr[j + l];
        for (; j <= i; j++) dot += pr[j] * dr[j];
        for (int l = 0; l < 8; l++) dot += acc[l];
        for (j = 0; j <= i; j++) dr[j] = pr[j] * (dr[j] - dot);
        for (j = i + 1; j < i1; j++) dr[j] = 0.0f;
    }
}

static void softmax_plain(int t, int i0, int i1, float *p) { softmax_rows(t, i0, i1, p); }
FEDC_FAST_AVX2 static void softmax_avx2(int t, int i0, int i1, float *p) { softmax_rows(t, i0, i1, p); }
FEDC_FAST_AVX512 static void softmax_avx512(int t, int i0, int i1, float *p) { softmax_rows(t, i0, i1, p); }
static void backward_plain(int t, int i0, int i1, const float *p, float *dp) { softmax_backward(t, i0, i1, p, dp); }
FEDC_FAST_AVX2 static void backward_avx2(int t, int i0, int i1, const float *p, float *dp) {
    softmax_backward(t, i0, i1, p, dp);
}
FEDC_FAST_AVX512 static void backward_avx512(int t, int i0, int i1, const float *p, float *dp) {
    softmax_backward(t, i0, i1, p, dp);
}

/* c [m, n] (ld ldc) = alpha op(a) op(b), zeroing c by rows and asking BLAS for
 * beta = 1: OpenBLAS's beta = 0 pass is a scalar loop over c (18% of the kernel's
 * time here), and after it BLAS accumulates into c just the same, so the bits
 * are those of beta = 0. */
static void gemm(enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m, int n, int k, float alpha, const float *a,
                 int lda, const float *b, int ldb, float *c, int ldc) {
    for (int i = 0; i < m; i++) memset(c + (size_t)i * ldc, 0, (size_t)n * sizeof *c);
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, 1.0f, c, ldc);
}

/* The causal products go by blocks of BLOCK query rows: block [i0, i1) needs
 * keys [0, i1) only, so the products skip the masked upper triangle but for the
 * diagonal blocks' (at T = 128, 10/16 of the full products' work). 32 rows keep
 * each GEMM large enough for BLAS's kernels (16: 9/16 of the work, slower). */
enum { BLOCK = 32 };

static int block_end(int t, int i0) { return i0 + BLOCK < t ? i0 + BLOCK : t; }

/* P = causal softmax(scale Q K^T) of one head into p [T, T], by row blocks; only
 * each block's columns [0, i1) are written. */
static void head_probs(const fedc__attn_geom *g, const float *q, const float *k, float *p) {
    int t = (int)g->seq, hd = (int)g->head_dim, ld = (int)(3 * g->heads * g->head_dim);
    float scale = (float)(1.0 / sqrt((double)hd));
    for (int i0 = 0; i0 < t; i0 += BLOCK) {
        int i1 = block_end(t, i0);
        gemm(CblasNoTrans, CblasTrans, i1 - i0, i1, hd, scale, q + (size_t)i0 * ld, ld, k, ld, p + (size_t)i0 * t, t);
        if (FEDC_FAST_HAS_AVX512()) softmax_avx512(t, i0, i1, p);
        else if (FEDC_FAST_HAS_AVX2()) softmax_avx2(t, i0, i1, p);
        else softmax_plain(t, i0, i1, p);
    }
}

/* One run over the heads: forward (dy NULL) or backward; with probs, the forward
 * keeps each head's P there and the backward reads it. */
typedef struct attn_job {
    const fedc__attn_geom *g;
    const float *qkv, *dy;
    float *out; /* y, or dqkv */
    float *scratch, *probs;
} attn_job;

/* Head (b, h)'s saved P. */
static float *saved_probs(const attn_job *j, int64_t b, int64_t h) {
    return j->probs + (size_t)(b * j->g->heads + h) * (size_t)(j->g->seq * j->g->seq);
}

static void head_forward(const attn_job *j, int64_t b, int64_t h, float *p) {
    const fedc__attn_geom *g = j->g;
    int t = (int)g->seq, hd = (int)g->head_dim;
    int64_t c = g->heads * g->head_dim;
    const float *q = j->qkv + b * g->seq * 3 * c + h * hd;
    float *o = j->out + b * g->seq * c + h * hd;
    if (j->probs) p = saved_probs(j, b, h);
    head_probs(g, q, q + c, p);
    for (int i0 = 0; i0 < t; i0 += BLOCK) { /* O[i0:i1] = P[i0:i1, 0:i1] V[0:i1] */
        int i1 = block_end(t, i0);
        gemm(CblasNoTrans, CblasNoTrans, i1 - i0, hd, i1, 1.0f, p + (size_t)i0 * t, t, q + 2 * c, (int)(3 * c),
             o + (size_t)i0 * c, (int)c);
    }
}

/* Backward by blocks: rows of dS and dQ need keys [0, i1); dV and dK of keys
 * [j0, j1) need the query rows [j0, T), whose blocks all hold columns [j0, j1). */
static void head_backward(const attn_job *j, int64_t b, int64_t h, float *p) {
    const fedc__attn_geom *g = j->g;
    int t = (int)g->seq, hd = (int)g->head_dim;
    int64_t c = g->heads * g->head_dim;
    int ld = (int)(3 * c);
    float scale = (float)(1.0 / sqrt((double)hd)), *ds = p + (size_t)t * t;
    const float *q = j->qkv + b * g->seq * 3 * c + h * hd, *k = q + c, *v = q + 2 * c;
    const float *dout = j->dy + b * g->seq * c + h * hd;
    float *dq = j->out + b * g->seq * 3 * c + h * hd, *dk = dq + c, *dv = dq + 2 * c;
    if (j->probs) p = saved_probs(j, b, h); /* the forward's P: written where head_probs writes, read only there */
    else head_probs(g, q, k, p);
    for (int i0 = 0; i0 < t; i0 += BLOCK) {
        int i1 = block_end(t, i0);
        gemm(CblasNoTrans, CblasTrans, i1 - i0, i1, hd, 1.0f, dout + (size_t)i0 * c, (int)c, v, ld,
             ds + (size_t)i0 * t, t);
        if (FEDC_FAST_HAS_AVX512()) backward_avx512(t, i0, i1, p, ds);
        else if (FEDC_FAST_HAS_AVX2()) backward_avx2(t, i0, i1, p, ds);
        else backward_plain(t, i0, i1, p, ds);
        gemm(CblasNoTrans, CblasNoTrans, i1 - i0, hd, i1, scale, ds + (size_t)i0 * t, t, k, ld, dq + (size_t)i0 * ld,
             ld);
    }
    for (int j0 = 0; j0 < t; j0 += BLOCK) {
        int j1 = block_end(t, j0);
        size_t at = (size_t)j0 * t + (size_t)j0;
        gemm(CblasTrans, CblasNoTrans, j1 - j0, hd, t - j0, 1.0f, p + at, t, dout + (size_t)j0 * c, (int)c,
             dv + (size_t)j0 * ld, ld);
        gemm(CblasTrans, CblasNoTrans, j1 - j0, hd, t - j0, scale, ds + at, t, q + (size_t)j0 * ld, ld,
             dk + (size_t)j0 * ld, ld);
    }
}

/* Group w takes the heads w, w + GROUPS, ... of the batch x heads pairs, with
 * scratch slot w. */
static void group_task(void *ctx, int64_t w, int worker) {
    (void)worker;
    const attn_job *j = ctx;
    int64_t pairs = j->g->batch * j->g->heads;
    float *p = j->scratch + (size_t)w * (size_t)(2 * j->g->seq * j->g->seq);
    for (int64_t i = w; i < pairs; i += GROUPS) {
        if (j->dy) head_backward(j, i / j->g->heads, i % j->g->heads, p);
        else head_forward(j, i / j->g->heads, i % j->g->heads, p);
    }
}

fedc_status fedc__fast_causal_attention(fedc_dtype dt, const fedc__attn_geom *g, const void *qkv, void *y,
                                       void *scratch) {
    if (dt != FEDC_F32) return fedc__ref_causal_attention(dt, g, qkv, y, scratch);
    fedc_status st = check_geom("causal_attention (fast)", g);
    if (st || g->seq == 0 || g->head_dim == 0) return st;
    fedc__kernels_init();
    attn_job j = {g, qkv, NULL, y, scratch, NULL};
    fedc__kernels_parallel(GROUPS, group_task, &j);
    return FEDC_OK;
}

fedc_status fedc__fast_causal_attention_grad(fedc_dtype dt, const fedc__attn_geom *g, const void *qkv, const void *dy,
                                            void *dqkv, void *scratch) {
    if (dt != FEDC_F32) return fedc__ref_causal_attention_grad(dt, g, qkv, dy, dqkv, scratch);
    fedc_status st = check_geom("causal_attention_grad (fast)", g);
    if (st || g->seq == 0 || g->head_dim == 0) return st;
    fedc__kernels_init();
    attn_job j = {g, qkv, dy, dqkv, scratch, NULL};
    fedc__kernels_parallel(GROUPS, group_task, &j);
    return FEDC_OK;
}

/* ------------------------------------------------------- saved weights -- */

static fedc_status saved_args(const char *kernel, fedc_dtype dt, const fedc__attn_geom *g) {
    if (dt != FEDC_F32)
        return fedc_error(FEDC_EINVAL, "%s (fast): takes f32, not %s", kernel, fedc_dtype_name(dt));
    return check_geom(kernel, g);
}

fedc_status fedc__fast_causal_attention_save(fedc_dtype dt, const fedc__attn_geom *g, const void *qkv, void *y,
                                            void *scratch, float *probs) {
    fedc_status st = saved_args("causal_attention_save", dt, g);
    if (st || g->seq == 0 || g->head_dim == 0) return st;
    fedc__kernels_init();
    attn_job j = {g, qkv, NULL, y, scratch, probs};
    fedc__kernels_parallel(GROUPS, group_task, &j);
    return FEDC_OK;
}

fedc_status fedc__fast_causal_attention_grad_apply(fedc_dtype dt, const fedc__attn_geom *g, const void *qkv,
                                                  const void *dy, void *dqkv, void *scratch, const float *probs) {
    fedc_status st = saved_args("causal_attention_grad_apply", dt, g);
    if (st || g->seq == 0 || g->head_dim == 0) return st;
    fedc__kernels_init();
    attn_job j = {g, qkv, dy, dqkv, scratch, (float *)probs};
    fedc__kernels_parallel(GROUPS, group_task, &j);
    return FEDC_OK;
}
