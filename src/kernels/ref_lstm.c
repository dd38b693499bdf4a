/*
 * ref_lstm.c — the reference LSTM kernels: the recurrence of a whole sequence, its
 * backpropagation through time, and its forward-mode tangent. Plain loops in
 * double (one rounding per stored value), the oracle for fast_lstm.c.
 *
 * The cell is Haiku's hk.LSTM without its forget bias (the caller adds it to the
 * input projection): with a_t = xw[t] + h[t-1] @ wh split into gates i, g, f, o,
 *     i = sigmoid(a_i), g = tanh(a_g), f = sigmoid(a_f), o = sigmoid(a_o)
 *     c[t] = f * c[t-1] + i * g,   h[t] = o * tanh(c[t]),   h[-1] = c[-1] = 0.
 * The trace of step t, batch row b is the 6H values [h, c, i, g, f, o]: the hidden
 * state the model reads, and everything the backward pass needs.
 */
#include <math.h>
#include <string.h>

#include "kernels/ref.h"

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* Element (t, b, j) of a [T, B, width] array. */
static int64_t at(int64_t B, int64_t width, int64_t t, int64_t b, int64_t j) { return (t * B + b) * width + j; }

static fedc_status check(const char *kernel, fedc_dtype dt, int64_t T, int64_t B, int64_t H) {
    if (dt != FEDC_F32 && dt != FEDC_F64)
        return fedc_error(FEDC_EUNSUPPORTED, "%s: dtype %s is not supported", kernel, fedc_dtype_name(dt));
    if (T < 0 || B < 0 || H < 0)
        return fedc_error(FEDC_EINVAL, "%s: negative size (steps %lld, batch %lld, hidden %lld)", kernel,
                          (long long)T, (long long)B, (long long)H);
    return FEDC_OK;
}

/* a = xw[t, b, k] + sum_j h[t-1, b, j] * wh[j, k], in double. */
static double preact(fedc_dtype dt, int64_t B, int64_t H, const void *xw, const void *wh, const void *trace, int64_t t,
                     int64_t b, int64_t k) {
    double a = fedc__ref_loadf(dt, xw, at(B, 4 * H, t, b, k));
    for (int64_t j = 0; t > 0 && j < H; j++)
        a += fedc__ref_loadf(dt, trace, at(B, 6 * H, t - 1, b, j)) * fedc__ref_loadf(dt, wh, j * 4 * H + k);
    return a;
}

fedc_status fedc__ref_lstm(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *xw, const void *wh,
                          void *trace) {
    fedc_status st = check("lstm", dt, T, B, H);
    if (st) return st;
    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < B; b++) {
            for (int64_t k = 0; k < 4 * H; k++) { /* the gates, activated */
                double a = preact(dt, B, H, xw, wh, trace, t, b, k);
                fedc__ref_storef(dt, trace, at(B, 6 * H, t, b, 2 * H + k), k / H == 1 ? tanh(a) : sigmoid(a));
            }
            for (int64_t j = 0; j < H; j++) {
                int64_t row = at(B, 6 * H, t, b, 0);
                double i = fedc__ref_loadf(dt, trace, row + 2 * H + j), g = fedc__ref_loadf(dt, trace, row + 3 * H + j);
                double f = fedc__ref_loadf(dt, trace, row + 4 * H + j), o = fedc__ref_loadf(dt, trace, row + 5 * H + j);
                double c_prev = t > 0 ? fedc__ref_loadf(dt, trace, at(B, 6 * H, t - 1, b, H + j)) : 0.0;
                double c = f * c_prev + i * g;
                fedc__ref_storef(dt, trace, row + H + j, c);
                fedc__ref_storef(dt, trace, row + j, o * tanh(fedc__ref_loadf(dt, trace, row + H + j)));
            }
        }
    return FEDC_OK;
}

/* dh_rec[b, j] = sum_k dxw[t+1, b, k] * wh[j, k]: what h[t] gets through step t+1. */
static void recurrent_dh(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *dxw, const void *wh, int64_t t,
                         double *dh_rec) {
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < H; j++) {
            double s = 0;
            for (int64_t k = 0; t + 1 < T && k < 4 * H; k++)
                s += fedc__ref_loadf(dt, dxw, at(B, 4 * H, t + 1, b, k)) * fedc__ref_loadf(dt, wh, j * 4 * H + k);
            dh_rec[b * H + j] = s;
        }
}

fedc_status fedc__ref_lstm_grad(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *trace, const void *dtrace,
                               const void *wh, void *dxw, void *scratch) {
    fedc_status st = check("lstm_grad", dt, T, B, H);
    if (st) return st;
    double *dh_rec = scratch, *dc_rec = dh_rec + B * H; /* carried from step t+1 */
    memset(dc_rec, 0, (size_t)(B * H) * sizeof *dc_rec);
    for (int64_t t = T - 1; t >= 0; t--) {
        recurrent_dh(dt, T, B, H, dxw, wh, t, dh_rec);
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++) {
                int64_t row = at(B, 6 * H, t, b, 0), out = at(B, 4 * H, t, b, 0);
#define TR(k) fedc__ref_loadf(dt, trace, row + (k) * H + j)
#define DT(k) fedc__ref_loadf(dt, dtrace, row + (k) * H + j)
                double c = TR(1), i = TR(2), g = TR(3), f = TR(4), o = TR(5);
                double c_prev = t > 0 ? fedc__ref_loadf(dt, trace, at(B, 6 * H, t - 1, b, H + j)) : 0.0;
                double tc = tanh(c), dh = DT(0) + dh_rec[b * H + j];
                double dc = dh * o * (1 - tc * tc) + DT(1) + dc_rec[b * H + j];
                double di = dc * g + DT(2), dg = dc * i + DT(3), df = dc * c_prev + DT(4), d_o = dh * tc + DT(5);
#undef TR
#undef DT
                dc_rec[b * H + j] = dc * f;
                fedc__ref_storef(dt, dxw, out + j, di * i * (1 - i));
                fedc__ref_storef(dt, dxw, out + H + j, dg * (1 - g * g));
                fedc__ref_storef(dt, dxw, out + 2 * H + j, df * f * (1 - f));
                fedc__ref_storef(dt, dxw, out + 3 * H + j, d_o * o * (1 - o));
            }
    }
    return FEDC_OK;
}

fedc_status fedc__ref_lstm_tangent(fedc_dtype dt, int64_t T, int64_t B, int64_t H, const void *trace, const void *dxw,
                                  const void *wh, void *dtrace, void *scratch) {
    fedc_status st = check("lstm_tangent", dt, T, B, H);
    if (st) return st;
    (void)scratch;
    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < B; b++)
            for (int64_t j = 0; j < H; j++) {
                int64_t row = at(B, 6 * H, t, b, 0);
                double c = fedc__ref_loadf(dt, trace, row + H + j);
                double gate[4], dgate[4];
                for (int q = 0; q < 4; q++) {
                    gate[q] = fedc__ref_loadf(dt, trace, row + (2 + q) * H + j);
                    /* da = dxw[t] + dh[t-1] @ wh: the preactivation's rule on the tangents */
                    double da = preact(dt, B, H, dxw, wh, dtrace, t, b, q * H + j);
                    dgate[q] = da * (q == 1 ? 1 - gate[q] * gate[q] : gate[q] * (1 - gate[q]));
                }
                double c_prev = t > 0 ? fedc__ref_loadf(dt, trace, at(B, 6 * H, t - 1, b, H + j)) : 0.0;
                double dc_prev = t > 0 ? fedc__ref_loadf(dt, dtrace, at(B, 6 * H, t - 1, b, H + j)) : 0.0;
                double dc = dgate[2] * c_prev + gate[2] * dc_prev + dgate[0] * gate[1] + gate[0] * dgate[1];
                double tc = tanh(c), dh = dgate[3] * tc + gate[3] * (1 - tc * tc) * dc;
                /* h of step t is read by step t+1's preactivation only after this row is done */
                fedc__ref_storef(dt, dtrace, row + j, dh);
                fedc__ref_storef(dt, dtrace, row + H + j, dc);
                for (int q = 0; q < 4; q++) fedc__ref_storef(dt, dtrace, row + (2 + q) * H + j, dgate[q]);
            }
    return FEDC_OK;
}
