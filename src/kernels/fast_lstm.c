/*
 * fast_lstm.c — the LSTM recurrence and its backpropagation through time in f32
 * with BLAS: per step one GEMM of the batch's hidden states against the recurrent
 * weights ([B, H] @ [H, 4H]), written straight into the trace's gate slots (the
 * input projection of every step is one GEMM the caller already did), then one
 * pass of elementwise gate arithmetic. The backward pass mirrors it: one GEMM per
 * step ([B, 4H] @ [H, 4H]^T) carries dh back through time. Weight gradients are
 * not computed here: they are single large GEMMs over all steps the derivative
 * rule builds (src/ad/vjp_rules.c). f64 goes to the reference kernels.
 */
#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fast.h"
#include "kernels/fast_math.h"
#include "kernels/ref.h"

static inline float sigmoidf(float x) { return 1.0f / (1.0f + fedc_fast_expf(-x)); }

static fedc_status check(const char *kernel, int64_t T, int64_t B, int64_t H) {
    if (T < 0 || B < 0 || H < 0 || B > INT_MAX / 8 || H > INT_MAX / 8)
        return fedc_error(FEDC_EINVAL, "%s (fast): unsupported size (steps %lld, batch %lld, hidden %lld)", kernel,
                          (long long)T, (long long)B, (long long)H);
    return FEDC_OK;
}

/* Batches up to this size take the recurrent product row by row as GEMVs: a GEMM
 * with a few rows spends most of its time packing the [H, 4H] weights again at
 * every step, while a GEMV streams them from cache once per row. FEDC_LSTM_GEMV_ROWS
 * in the environment overrides it (for bench_lstm_step's comparisons). */
static int64_t gemv_rows(void) {
    static int64_t rows = -1;
    if (rows < 0) {
        const char *env = getenv("FEDC_LSTM_GEMV_ROWS");
        rows = env ? atoll(env) : 8;
    }
    return rows;
}

/* out[b] += a[b] @ w for the B rows of a ([B, k] with leading dimension lda) into
 * out ([B, n], ldo); w is [k, n] (or [n, k] with trans_w: out[b] += a[b] @ w^T). */
static void rows_times(int64_t B, int64_t k, int64_t n, const float *a, int64_t lda, const float *w, bool trans_w,
                       float beta, float *out, int64_t ldo) {
    if (B <= 0 || k <= 0 || n <= 0) return;
    int64_t ldw = trans_w ? k : n;
    if (B <= gemv_rows()) {
        for (int64_t b = 0; b < B; b++) /* out[b] = op(w)^T a[b]: row-major w [k, n] is Trans */
            cblas_sgemv(CblasRowMajor, trans_w ? CblasNoTrans : CblasTrans, trans_w ? (int)n : (int)k,
                        trans_w ? (int)k : (int)n, 1.0f, w, (int)ldw, a + b * lda, 1, beta, out + b * ldo, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_w ? CblasTrans : CblasNoTrans, (int)B, (int)n, (int)k, 1.0f, a,
                (int)lda, w, (int)ldw, beta, out, (int)ldo);
}

/* Gates and states of one batch row from the preactivations already in the
 * gate slots of r = [h, c, i, g, f, o]; c_prev is c[t-1], NULL at t = 0.
 * Restrict parameters and fast_math's inlined exp let the compiler vectorise. */
static void row_forward(int64_t H, float *restrict r, const float *restrict c_prev) {
    float *h = r, *c = r + H, *i = r + 2 * H, *g = r + 3 * H, *f = r + 4 * H, *o = r + 5 * H;
    for (int64_t j = 0; j < H; j++) {
        i[j] = sigmoidf(i[j]);
        g[j] = fedc_fast_tanhf(g[j]);
        f[j] = sigmoidf(f[j]);
        o[j] = sigmoidf(o[j]);
    }
    if (c_prev)
        for (int64_t j = 0; j < H; j++) c[j] = f[j] * c_prev[j] + i[j] * g[j];
    else
        for (int64_t j = 0; j < H; j++) c[j] = i[j] * g[j];
    for (int64_t j = 0; j < H; j++) h[j] = o[j] * fedc_fast_tanhf(c[j]);
}

static void cell_forward(int64_t B, int64_t H, float *rows, const float *prev_rows) {
    for (int64_t b = 0; b < B; b++) row_forward(H, rows + b * 6 * H, prev_rows ? prev_rows + b * 6 * H + H : NULL);
}

fedc_status fedc_fast_lstm(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *xw, const void *wh,
                           void *trace) {
    if (dt != FEDC_F32) return fedc_ref_lstm(dt, T, B, H, xw, wh, trace);
    fedc_status st = check("lstm", T, B, H);
    if (st) return st;
    const float *x = xw, *w = wh;
    float *tr = trace;
    for (int64_t t = 0; t < T; t++) {
        float *rows = tr + t * B * 6 * H;
        for (int64_t b = 0; b < B; b++) memcpy(rows + b * 6 * H + 2 * H, x + (t * B + b) * 4 * H, (size_t)(4 * H) * sizeof *x);
        const float *prev = t > 0 ? rows - B * 6 * H : NULL;
        if (prev) rows_times(B, H, 4 * H, prev, 6 * H, w, false, 1.0f, rows + 2 * H, 6 * H);
        cell_forward(B, H, rows, prev);
    }
    return FEDC_OK;
}

/* One batch row of a BPTT step: r the row's trace [h, c, i, g, f, o], c_prev its
 * c[t-1] (zeros at t = 0), d the trace's cotangent, dhr / dcr the cotangents of h
 * and c carried from step t+1 (dcr is updated), da the preactivations' gradient.
 * Separate restrict parameters, so that the compiler vectorises over j without
 * run-time alias checks. */
static void row_backward(int64_t H, const float *restrict r, const float *restrict c_prev, const float *restrict d,
                         const float *restrict dhr, float *restrict dcr, float *restrict da) {
    const float *c = r + H, *i = r + 2 * H, *g = r + 3 * H, *f = r + 4 * H, *o = r + 5 * H;
    for (int64_t j = 0; j < H; j++) {
        float tc = fedc_fast_tanhf(c[j]), dh = d[j] + dhr[j];
        float dc = dh * o[j] * (1.0f - tc * tc) + d[H + j] + dcr[j];
        float di = dc * g[j] + d[2 * H + j], dg = dc * i[j] + d[3 * H + j];
        float df = dc * c_prev[j] + d[4 * H + j], dout = dh * tc + d[5 * H + j];
        dcr[j] = dc * f[j];
        da[j] = di * i[j] * (1.0f - i[j]);
        da[H + j] = dg * (1.0f - g[j] * g[j]);
        da[2 * H + j] = df * f[j] * (1.0f - f[j]);
        da[3 * H + j] = dout * o[j] * (1.0f - o[j]);
    }
}

/* Step t of BPTT for every batch row: dh (the cotangent of h[t] through step t+1,
 * in), dc (through c[t+1], in and out) -> the preactivation gradients of step t.
 * At t = 0 there is no c[t-1]: c_prev reads a row of zeros instead (so the loop
 * has no branch). */
static void cell_backward(int64_t B, int64_t H, const float *rows, const float *prev_rows, const float *zeros,
                          const float *drows, const float *dh_rec, float *dc_rec, float *out) {
    for (int64_t b = 0; b < B; b++)
        row_backward(H, rows + b * 6 * H, prev_rows ? prev_rows + b * 6 * H + H : zeros, drows + b * 6 * H,
                     dh_rec + b * H, dc_rec + b * H, out + b * 4 * H);
}

fedc_status fedc_fast_lstm_grad(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *trace, const void *dtrace,
                                const void *wh, void *dxw, void *scratch) {
    if (dt != FEDC_F32) return fedc_ref_lstm_grad(dt, T, B, H, trace, dtrace, wh, dxw, scratch);
    fedc_status st = check("lstm_grad", T, B, H);
    if (st) return st;
    const float *tr = trace, *dtr = dtrace, *w = wh;
    /* scratch holds 2 B H doubles = 4 B H floats: dh_rec, dc_rec and H zeros */
    float *out = dxw, *dh_rec = scratch, *dc_rec = dh_rec + B * H, *zeros = dc_rec + B * H;
    memset(dh_rec, 0, (size_t)(2 * B * H + (B > 0 ? H : 0)) * sizeof *dh_rec);
    for (int64_t t = T - 1; t >= 0; t--) {
        if (t + 1 < T) rows_times(B, 4 * H, H, out + (t + 1) * B * 4 * H, 4 * H, w, true, 0.0f, dh_rec, H); /* dxw[t+1] wh^T */
        const float *rows = tr + t * B * 6 * H, *prev = t > 0 ? rows - B * 6 * H : NULL;
        cell_backward(B, H, rows, prev, zeros, dtr + t * B * 6 * H, dh_rec, dc_rec, out + t * B * 4 * H);
    }
    return FEDC_OK;
}
