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
#include <string.h>

#include "kernels/fast.h"
#include "kernels/ref.h"

static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

static fedc_status check(const char *kernel, int64_t T, int64_t B, int64_t H) {
    if (T < 0 || B < 0 || H < 0 || B > INT_MAX / 8 || H > INT_MAX / 8)
        return fedc_error(FEDC_EINVAL, "%s (fast): unsupported size (steps %lld, batch %lld, hidden %lld)", kernel,
                          (long long)T, (long long)B, (long long)H);
    return FEDC_OK;
}

/* Gates and states of one step from the preactivations already in `row`'s gate
 * slots; c_prev is NULL at t = 0. */
static void cell_forward(int64_t B, int64_t H, float *rows, const float *prev_rows) {
    for (int64_t b = 0; b < B; b++) {
        float *r = rows + b * 6 * H;
        const float *c_prev = prev_rows ? prev_rows + b * 6 * H + H : NULL;
        float *h = r, *c = r + H, *i = r + 2 * H, *g = r + 3 * H, *f = r + 4 * H, *o = r + 5 * H;
        for (int64_t j = 0; j < H; j++) {
            i[j] = sigmoidf(i[j]);
            g[j] = tanhf(g[j]);
            f[j] = sigmoidf(f[j]);
            o[j] = sigmoidf(o[j]);
            c[j] = (c_prev ? f[j] * c_prev[j] : 0.0f) + i[j] * g[j];
            h[j] = o[j] * tanhf(c[j]);
        }
    }
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
        if (prev && B > 0 && H > 0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)B, (int)(4 * H), (int)H, 1.0f, prev, (int)(6 * H),
                        w, (int)(4 * H), 1.0f, rows + 2 * H, (int)(6 * H));
        cell_forward(B, H, rows, prev);
    }
    return FEDC_OK;
}

/* Step t of BPTT for every batch row: dh (the cotangent of h[t] through step t+1,
 * in), dc (through c[t+1], in and out) -> the preactivation gradients of step t. */
static void cell_backward(int64_t B, int64_t H, const float *rows, const float *prev_rows, const float *drows,
                          const float *dh_rec, float *dc_rec, float *out) {
    for (int64_t b = 0; b < B; b++) {
        const float *r = rows + b * 6 * H, *d = drows + b * 6 * H;
        const float *c_prev = prev_rows ? prev_rows + b * 6 * H + H : NULL;
        const float *c = r + H, *i = r + 2 * H, *g = r + 3 * H, *f = r + 4 * H, *o = r + 5 * H;
        const float *dhr = dh_rec + b * H;
        float *dcr = dc_rec + b * H, *da = out + b * 4 * H;
        for (int64_t j = 0; j < H; j++) {
            float tc = tanhf(c[j]), dh = d[j] + dhr[j];
            float dc = dh * o[j] * (1.0f - tc * tc) + d[H + j] + dcr[j];
            float di = dc * g[j] + d[2 * H + j], dg = dc * i[j] + d[3 * H + j];
            float df = (c_prev ? dc * c_prev[j] : 0.0f) + d[4 * H + j], dout = dh * tc + d[5 * H + j];
            dcr[j] = dc * f[j];
            da[j] = di * i[j] * (1.0f - i[j]);
            da[H + j] = dg * (1.0f - g[j] * g[j]);
            da[2 * H + j] = df * f[j] * (1.0f - f[j]);
            da[3 * H + j] = dout * o[j] * (1.0f - o[j]);
        }
    }
}

fedc_status fedc_fast_lstm_grad(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *trace, const void *dtrace,
                                const void *wh, void *dxw, void *scratch) {
    if (dt != FEDC_F32) return fedc_ref_lstm_grad(dt, T, B, H, trace, dtrace, wh, dxw, scratch);
    fedc_status st = check("lstm_grad", T, B, H);
    if (st) return st;
    const float *tr = trace, *dtr = dtrace, *w = wh;
    float *out = dxw, *dh_rec = scratch, *dc_rec = dh_rec + B * H;
    memset(dc_rec, 0, (size_t)(B * H) * sizeof *dc_rec);
    memset(dh_rec, 0, (size_t)(B * H) * sizeof *dh_rec);
    for (int64_t t = T - 1; t >= 0; t--) {
        if (t + 1 < T && B > 0 && H > 0) /* dh_rec = dxw[t+1] @ wh^T */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)B, (int)H, (int)(4 * H), 1.0f,
                        out + (t + 1) * B * 4 * H, (int)(4 * H), w, (int)(4 * H), 0.0f, dh_rec, (int)H);
        const float *rows = tr + t * B * 6 * H, *prev = t > 0 ? rows - B * 6 * H : NULL;
        cell_backward(B, H, rows, prev, dtr + t * B * 6 * H, dh_rec, dc_rec, out + t * B * 4 * H);
    }
    return FEDC_OK;
}
