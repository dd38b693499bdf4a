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
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "kernels/fast.h"
#include "kernels/fast_math.h"
#include "kernels/ref.h"

size_t fedc_fast_attention_scratch(fedc_dtype dt, const fedc_attn_geom *g) {
    size_t fast = (size_t)(2 * g->seq * g->seq) * sizeof(float), ref = fedc_ref_attention_scratch(dt, g);
    return dt == FEDC_F32 ? fast : ref;
}

/* BLAS takes int sizes; the type rules bound shapes far below, but say so. */
static fedc_status check_geom(const char *kernel, const fedc_attn_geom *g) {
    int64_t c3 = 3 * g->heads * g->head_dim;
    if (g->seq > (1 << 20) || c3 > (1 << 28))
        return fedc_error(FEDC_EUNSUPPORTED, "%s: seq %lld, width %lld exceed the fast kernel's range", kernel,
                          (long long)g->seq, (long long)c3);
    return FEDC_OK;
}

/* P = causal softmax(scale Q K^T) of one head into p [T, T] (rows beyond the
 * diagonal zeroed). */
static void head_probs(const fedc_attn_geom *g, const float *q, const float *k, float *p) {
    int t = (int)g->seq, hd = (int)g->head_dim, ld = (int)(3 * g->heads * g->head_dim);
    float scale = (float)(1.0 / sqrt((double)hd));
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, hd, scale, q, ld, k, ld, 0.0f, p, t);
    for (int i = 0; i < t; i++) {
        float *row = p + (size_t)i * t, mx = row[0], sum = 0;
        for (int j = 1; j <= i; j++) mx = row[j] > mx ? row[j] : mx;
        for (int j = 0; j <= i; j++) {
            row[j] = fedc_fast_expf(row[j] - mx);
            sum += row[j];
        }
        float inv = 1.0f / sum;
        for (int j = 0; j <= i; j++) row[j] *= inv;
        for (int j = i + 1; j < t; j++) row[j] = 0.0f;
    }
}

fedc_status fedc_fast_causal_attention(fedc_dtype dt, const fedc_attn_geom *g, const void *qkv, void *y,
                                       void *scratch) {
    if (dt != FEDC_F32) return fedc_ref_causal_attention(dt, g, qkv, y, scratch);
    fedc_status st = check_geom("causal_attention (fast)", g);
    if (st || g->seq == 0 || g->head_dim == 0) return st;
    fedc_kernels_init();
    int t = (int)g->seq, hd = (int)g->head_dim;
    int64_t c = g->heads * g->head_dim;
    float *p = scratch;
    for (int64_t b = 0; b < g->batch; b++)
        for (int64_t h = 0; h < g->heads; h++) {
            const float *q = (const float *)qkv + b * g->seq * 3 * c + h * hd;
            head_probs(g, q, q + c, p);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, hd, t, 1.0f, p, t, q + 2 * c, (int)(3 * c),
                        0.0f, (float *)y + b * g->seq * c + h * hd, (int)c);
        }
    return FEDC_OK;
}

/* dP -> dS in place: dS_ij = P_ij (dP_ij - sum_l P_il dP_il), zero above the diagonal. */
static void softmax_backward(int t, const float *p, float *dp) {
    for (int i = 0; i < t; i++) {
        const float *pr = p + (size_t)i * t;
        float *dr = dp + (size_t)i * t, dot = 0;
        for (int j = 0; j <= i; j++) dot += pr[j] * dr[j];
        for (int j = 0; j <= i; j++) dr[j] = pr[j] * (dr[j] - dot);
        for (int j = i + 1; j < t; j++) dr[j] = 0.0f;
    }
}

fedc_status fedc_fast_causal_attention_grad(fedc_dtype dt, const fedc_attn_geom *g, const void *qkv, const void *dy,
                                            void *dqkv, void *scratch) {
    if (dt != FEDC_F32) return fedc_ref_causal_attention_grad(dt, g, qkv, dy, dqkv, scratch);
    fedc_status st = check_geom("causal_attention_grad (fast)", g);
    if (st || g->seq == 0 || g->head_dim == 0) return st;
    fedc_kernels_init();
    int t = (int)g->seq, hd = (int)g->head_dim;
    int64_t c = g->heads * g->head_dim;
    int ld = (int)(3 * c);
    float scale = (float)(1.0 / sqrt((double)hd));
    float *p = scratch, *ds = p + (size_t)t * t;
    for (int64_t b = 0; b < g->batch; b++)
        for (int64_t h = 0; h < g->heads; h++) {
            const float *q = (const float *)qkv + b * g->seq * 3 * c + h * hd, *k = q + c, *v = q + 2 * c;
            const float *dout = (const float *)dy + b * g->seq * c + h * hd;
            float *dq = (float *)dqkv + b * g->seq * 3 * c + h * hd, *dk = dq + c, *dv = dq + 2 * c;
            head_probs(g, q, k, p);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, hd, 1.0f, dout, (int)c, v, ld, 0.0f, ds, t);
            softmax_backward(t, p, ds);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, hd, t, 1.0f, p, t, dout, (int)c, 0.0f, dv, ld);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, hd, t, scale, ds, t, k, ld, 0.0f, dq, ld);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, hd, t, scale, ds, t, q, ld, 0.0f, dk, ld);
        }
    return FEDC_OK;
}
