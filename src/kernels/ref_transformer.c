/*
 * ref_transformer.c — reference kernels of the transformer layers: GELU (tanh
 * approximation), layer normalisation and its two gradients, and causal
 * multi-head attention on packed q/k/v with its gradient. Plain loops in double,
 * as every reference kernel (ref.h): the oracle for fast_transformer.c and the
 * f64 path the finite-difference checks run.
 */
#include <math.h>
#include <string.h>

#include "kernels/ref.h"

/* sqrt(2 / pi) and the cubic coefficient of GPT-2's GELU. */
#define GELU_C 0.7978845608028654
#define GELU_A 0.044715

static fedc_status float_only(const char *kernel, fedc_dtype dt) {
    if (dt == FEDC_F32 || dt == FEDC_F64) return FEDC_OK;
    return fedc_error(FEDC_EUNSUPPORTED, "%s: dtype %s is not supported (f32, f64)", kernel, fedc_dtype_name(dt));
}

/* ------------------------------------------------------------------ GELU -- */

static double gelu1(double x) { return 0.5 * x * (1.0 + tanh(GELU_C * (x + GELU_A * x * x * x))); }

/* d/dx of gelu1: 1/2 (1 + t) + 1/2 x (1 - t^2) c (1 + 3 a x^2), t = tanh(c (x + a x^3)). */
static double gelu1_grad(double x) {
    double t = tanh(GELU_C * (x + GELU_A * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * GELU_C * (1.0 + 3.0 * GELU_A * x * x);
}

fedc_status fedc__ref_gelu(fedc_dtype dt, int64_t n, const void *x, void *y) {
    fedc_status st = float_only("gelu", dt);
    for (int64_t i = 0; !st && i < n; i++) fedc__ref_storef(dt, y, i, gelu1(fedc__ref_loadf(dt, x, i)));
    return st;
}

fedc_status fedc__ref_gelu_grad(fedc_dtype dt, int64_t n, const void *x, const void *dy, void *dx) {
    fedc_status st = float_only("gelu_grad", dt);
    for (int64_t i = 0; !st && i < n; i++)
        fedc__ref_storef(dt, dx, i, fedc__ref_loadf(dt, dy, i) * gelu1_grad(fedc__ref_loadf(dt, x, i)));
    return st;
}

/* ------------------------------------------------------------ layer norm -- */

/* Mean and 1 / sqrt(var + eps) of row r. */
static void row_stats(fedc_dtype dt, const void *x, int64_t r, int64_t cols, double eps, double *mean, double *rstd) {
    double s = 0, ss = 0;
    for (int64_t j = 0; j < cols; j++) s += fedc__ref_loadf(dt, x, r * cols + j);
    *mean = cols ? s / (double)cols : 0;
    for (int64_t j = 0; j < cols; j++) {
        double d = fedc__ref_loadf(dt, x, r * cols + j) - *mean;
        ss += d * d;
    }
    *rstd = 1.0 / sqrt((cols ? ss / (double)cols : 0) + eps);
}

fedc_status fedc__ref_layer_norm(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *gamma,
                                const void *beta, double eps, void *y) {
    fedc_status st = float_only("layer_norm", dt);
    for (int64_t r = 0; !st && r < rows; r++) {
        double mean, rstd;
        row_stats(dt, x, r, cols, eps, &mean, &rstd);
        for (int64_t j = 0; j < cols; j++) {
            double xhat = (fedc__ref_loadf(dt, x, r * cols + j) - mean) * rstd;
            fedc__ref_storef(dt, y, r * cols + j, xhat * fedc__ref_loadf(dt, gamma, j) + fedc__ref_loadf(dt, beta, j));
        }
    }
    return st;
}

/* With g = dy * gamma: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)). */
fedc_status fedc__ref_layer_norm_grad(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *gamma,
                                     const void *dy, double eps, void *dx) {
    fedc_status st = float_only("layer_norm_grad", dt);
    for (int64_t r = 0; !st && r < rows; r++) {
        double mean, rstd, mg = 0, mgx = 0;
        row_stats(dt, x, r, cols, eps, &mean, &rstd);
        for (int64_t j = 0; j < cols; j++) {
            double g = fedc__ref_loadf(dt, dy, r * cols + j) * fedc__ref_loadf(dt, gamma, j);
            mg += g;
            mgx += g * (fedc__ref_loadf(dt, x, r * cols + j) - mean) * rstd;
        }
        mg /= (double)cols, mgx /= (double)cols;
        for (int64_t j = 0; j < cols; j++) {
            double g = fedc__ref_loadf(dt, dy, r * cols + j) * fedc__ref_loadf(dt, gamma, j);
            double xhat = (fedc__ref_loadf(dt, x, r * cols + j) - mean) * rstd;
            fedc__ref_storef(dt, dx, r * cols + j, rstd * (g - mg - xhat * mgx));
        }
    }
    return st;
}

fedc_status fedc__ref_layer_norm_param_grad(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *dy,
                                           double eps, void *dgb) {
    fedc_status st = float_only("layer_norm_param_grad", dt);
    for (int64_t j = 0; !st && j < cols; j++) { /* column by column: one double sum each, rows in order */
        double dgamma = 0, dbeta = 0;
        for (int64_t r = 0; r < rows; r++) {
            double mean, rstd;
            row_stats(dt, x, r, cols, eps, &mean, &rstd);
            double d = fedc__ref_loadf(dt, dy, r * cols + j);
            dgamma += d * (fedc__ref_loadf(dt, x, r * cols + j) - mean) * rstd;
            dbeta += d;
        }
        fedc__ref_storef(dt, dgb, j, dgamma);
        fedc__ref_storef(dt, dgb, cols + j, dbeta);
    }
    return st;
}

/* ------------------------------------------------------------- attention -- */

/* Offsets (in elements) of q, k, v of head h at position t of batch b in qkv,
 * and of the output. */
static int64_t qkv_at(const fedc__attn_geom *g, int64_t b, int64_t t, int which, int64_t h) {
    int64_t c = g->heads * g->head_dim;
    return (b * g->seq + t) * 3 * c + which * c + h * g->head_dim;
}
static int64_t out_at(const fedc__attn_geom *g, int64_t b, int64_t t, int64_t h) {
    return (b * g->seq + t) * g->heads * g->head_dim + h * g->head_dim;
}

/* Scratch: a softmax row and its cotangent (seq doubles each) and one head's d qkv (3 seq d doubles). */
size_t fedc__ref_attention_scratch(fedc_dtype dt, const fedc__attn_geom *g) {
    (void)dt;
    return (size_t)(2 * g->seq + 3 * g->seq * g->head_dim) * sizeof(double);
}

/* p[j] = softmax_j(q_i . k_j * scale) for j <= i. */
static void softmax_row(fedc_dtype dt, const fedc__attn_geom *g, const void *qkv, int64_t b, int64_t h, int64_t i,
                        double *p) {
    double scale = 1.0 / sqrt((double)g->head_dim), mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j <= i; j++) {
        double s = 0;
        for (int64_t d = 0; d < g->head_dim; d++)
            s += fedc__ref_loadf(dt, qkv, qkv_at(g, b, i, 0, h) + d) * fedc__ref_loadf(dt, qkv, qkv_at(g, b, j, 1, h) + d);
        p[j] = s * scale;
        if (p[j] > mx) mx = p[j];
    }
    for (int64_t j = 0; j <= i; j++) sum += p[j] = exp(p[j] - mx);
    for (int64_t j = 0; j <= i; j++) p[j] /= sum;
}

fedc_status fedc__ref_causal_attention(fedc_dtype dt, const fedc__attn_geom *g, const void *qkv, void *y,
                                      void *scratch) {
    fedc_status st = float_only("causal_attention", dt);
    double *p = scratch;
    for (int64_t b = 0; !st && b < g->batch; b++)
        for (int64_t h = 0; h < g->heads; h++)
            for (int64_t i = 0; i < g->seq; i++) {
                softmax_row(dt, g, qkv, b, h, i, p);
                for (int64_t d = 0; d < g->head_dim; d++) {
                    double o = 0;
                    for (int64_t j = 0; j <= i; j++) o += p[j] * fedc__ref_loadf(dt, qkv, qkv_at(g, b, j, 2, h) + d);
                    fedc__ref_storef(dt, y, out_at(g, b, i, h) + d, o);
                }
            }
    return st;
}

/* Row i: dp_j = dy_i . v_j, ds_j = p_j (dp_j - sum_l p_l dp_l); then dq_i += scale
 * ds_j k_j, dk_j += scale ds_j q_i, dv_j += p_j dy_i. One head's sums are kept in
 * double (acc: [seq, 3, d]) and stored at the end. */
static void attention_grad_head(fedc_dtype dt, const fedc__attn_geom *g, const void *qkv, const void *dy, int64_t b,
                                int64_t h, double *p, double *dp, double *acc, void *dqkv) {
    int64_t hd = g->head_dim;
    double scale = 1.0 / sqrt((double)hd);
    memset(acc, 0, (size_t)(3 * g->seq * hd) * sizeof *acc);
    for (int64_t i = 0; i < g->seq; i++) {
        softmax_row(dt, g, qkv, b, h, i, p);
        double dot = 0;
        for (int64_t j = 0; j <= i; j++) {
            dp[j] = 0;
            for (int64_t d = 0; d < hd; d++) {
                double dyd = fedc__ref_loadf(dt, dy, out_at(g, b, i, h) + d);
                dp[j] += dyd * fedc__ref_loadf(dt, qkv, qkv_at(g, b, j, 2, h) + d);
                acc[(j * 3 + 2) * hd + d] += p[j] * dyd;
            }
            dot += p[j] * dp[j];
        }
        for (int64_t j = 0; j <= i; j++) {
            double ds = p[j] * (dp[j] - dot) * scale;
            for (int64_t d = 0; d < hd; d++) {
                acc[(i * 3 + 0) * hd + d] += ds * fedc__ref_loadf(dt, qkv, qkv_at(g, b, j, 1, h) + d);
                acc[(j * 3 + 1) * hd + d] += ds * fedc__ref_loadf(dt, qkv, qkv_at(g, b, i, 0, h) + d);
            }
        }
    }
    for (int64_t t = 0; t < g->seq; t++)
        for (int w = 0; w < 3; w++)
            for (int64_t d = 0; d < hd; d++) fedc__ref_storef(dt, dqkv, qkv_at(g, b, t, w, h) + d, acc[(t * 3 + w) * hd + d]);
}

fedc_status fedc__ref_causal_attention_grad(fedc_dtype dt, const fedc__attn_geom *g, const void *qkv, const void *dy,
                                           void *dqkv, void *scratch) {
    fedc_status st = float_only("causal_attention_grad", dt);
    double *p = scratch, *dp = p + g->seq, *acc = dp + g->seq;
    for (int64_t b = 0; !st && b < g->batch; b++)
        for (int64_t h = 0; h < g->heads; h++) attention_grad_head(dt, g, qkv, dy, b, h, p, dp, acc, dqkv);
    return st;
}
