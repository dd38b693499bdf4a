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
 * Entries above the diagonal of P and dS are zero, so the full GEMMs are exact;
 * they do up to twice the needed work on the T x T products (a blocked causal
 * GEMM is a later optimisation). f64 goes to the reference kernels.
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

/* Row i of the causal softmax, in place (entries past the diagonal zeroed). */
FEDC_FAST_INLINE void softmax_rows(int t, float *p) {
    for (int i = 0; i < t; i++) {
        float *row = p + (size_t)i * t, mx = row[0];
        for (int j = 1; j <= i; j++) mx = row[j] > mx ? row[j] : mx;
        for (int j = 0; j <= i; j++) row[j] = fedc__fast_expf(row[j] - mx);
        float inv = 1.0f / sum8(row, i + 1);
        for (int j = 0; j <= i; j++) row[j] *= inv;
        for (int j = i + 1; j < t; j++) row[j] = 0.0f;
    }
}

/* dP -> dS in place: dS_ij = P_ij (dP_ij - sum_l P_il dP_il), zero above the diagonal. */
FEDC_FAST_INLINE void softmax_backward(int t, const float *p, float *dp) {
    for (int i = 0; i < t; i++) {
        const float *pr = p + (size_t)i * t;
        float *dr = dp + (size_t)i * t, acc[8] = {0}, dot = 0;
        int j = 0;
        for (; j + 8 <= i + 1; j += 8)
            for (int l = 0; l < 8; l++) acc[l] += pr[j + l] * dr[j + l];
        for (; j <= i; j++) dot += pr[j] * dr[j];
        for (int l = 0; l < 8; l++) dot += acc[l];
        for (j = 0; j <= i; j++) dr[j] = pr[j] * (dr[j] - dot);
        for (j = i + 1; j < t; j++) dr[j] = 0.0f;
    }
}

static void softmax_plain(int t, float *p) { softmax_rows(t, p); }
FEDC_FAST_AVX2 static void softmax_avx2(int t, float *p) { softmax_rows(t, p); }
static void backward_plain(int t, const float *p, float *dp) { softmax_backward(t, p, dp); }
FEDC_FAST_AVX2 static void backward_avx2(int t, const float *p, float *dp) { softmax_backward(t, p, dp); }
FEDC_FAST_AVX512 static void softmax_avx512(int t, float *p) { softmax_rows(t, p); }
FEDC_FAST_AVX512 static void backward_avx512(int t, const float *p, float *dp) { softmax_backward(t, p, dp); }

/* P = causal softmax(scale Q K^T) of one head into p [T, T]. */
static void head_probs(const fedc__attn_geom *g, const float *q, const float *k, float *p) {
    int t = (int)g->seq, hd = (int)g->head_dim, ld = (int)(3 * g->heads * g->head_dim);
    float scale = (float)(1.0 / sqrt((double)hd));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, hd, scale, q, ld, k, ld, 0.0f, p, t);
    if (FEDC_FAST_HAS_AVX512()) softmax_avx512(t, p);
    else if (FEDC_FAST_HAS_AVX2()) softmax_avx2(t, p);
    else softmax_plain(t, p);
}

/* One run over the heads: forward (dy NULL) or backward. */
typedef struct attn_job {
    const fedc__attn_geom *g;
    const float *qkv, *dy;
    float *out; /* y, or dqkv */
    float *scratch;
} attn_job;

static void head_forward(const attn_job *j, int64_t b, int64_t h, float *p) {
    const fedc__attn_geom *g = j->g;
    int t = (int)g->seq, hd = (int)g->head_dim;
    int64_t c = g->heads * g->head_dim;
    const float *q = j->qkv + b * g->seq * 3 * c + h * hd;
    head_probs(g, q, q + c, p);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, hd, t, 1.0f, p, t, q + 2 * c, (int)(3 * c), 0.0f,
                j->out + b * g->seq * c + h * hd, (int)c);
}

static void head_backward(const attn_job *j, int64_t b, int64_t h, float *p) {
    const fedc__attn_geom *g = j->g;
    int t = (int)g->seq, hd = (int)g->head_dim;
    int64_t c = g->heads * g->head_dim;
    int ld = (int)(3 * c);
    float scale = (float)(1.0 / sqrt((double)hd)), *ds = p + (size_t)t * t;
    const float *q = j->qkv + b * g->seq * 3 * c + h * hd, *k = q + c, *v = q + 2 * c;
    const float *dout = j->dy + b * g->seq * c + h * hd;
    float *dq = j->out + b * g->seq * 3 * c + h * hd, *dk = dq + c, *dv = dq + 2 * c;
    head_probs(g, q, k, p);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, hd, 1.0f, dout, (int)c, v, ld, 0.0f, ds, t);
    if (FEDC_FAST_HAS_AVX512()) backward_avx512(t, p, ds);
    else if (FEDC_FAST_HAS_AVX2()) backward_avx2(t, p, ds);
    else backward_plain(t, p, ds);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, hd, t, 1.0f, p, t, dout, (int)c, 0.0f, dv, ld);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, hd, t, scale, ds, t, k, ld, 0.0f, dq, ld);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, hd, t, scale, ds, t, q, ld, 0.0f, dk, ld);
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
    attn_job j = {g, qkv, NULL, y, scratch};
    fedc__kernels_parallel(GROUPS, group_task, &j);
    return FEDC_OK;
}

fedc_status fedc__fast_causal_attention_grad(fedc_dtype dt, const fedc__attn_geom *g, const void *qkv, const void *dy,
                                            void *dqkv, void *scratch) {
    if (dt != FEDC_F32) return fedc__ref_causal_attention_grad(dt, g, qkv, dy, dqkv, scratch);
    fedc_status st = check_geom("causal_attention_grad (fast)", g);
    if (st || g->seq == 0 || g->head_dim == 0) return st;
    fedc__kernels_init();
    attn_job j = {g, qkv, dy, dqkv, scratch};
    fedc__kernels_parallel(GROUPS, group_task, &j);
    return FEDC_OK;
}
