/*
 * fast_transformer.c — fast GELU and layer normalisation for f32: flat loops the
 * compiler vectorises, with fedc__fast_tanhf for GELU (built with
 * -fno-trapping-math, see fast_softmax_xent.c). f64 goes to the reference
 * kernels (it is the precision of tests, not of training).
 */
#include <math.h>
#include <string.h>

#include "kernels/fast.h"
#include "kernels/fast_math.h"
#include "kernels/ref.h"

#define GELU_C 0.7978845608028654f
#define GELU_A 0.044715f

/* GELU and its gradient over blocks of BLOCK elements (for the kernels' pool),
 * each loop compiled for the baseline and for AVX2 (fast_math.h). */
enum { BLOCK = 1 << 15 };

typedef struct gelu_job {
    int64_t n;
    const float *x, *dy; /* dy NULL: the forward */
    float *out;
} gelu_job;

FEDC_FAST_INLINE void gelu_span(const gelu_job *j, int64_t i0, int64_t i1) {
    const float *xs = j->x, *dys = j->dy;
    float *out = j->out;
    if (!dys) {
        for (int64_t i = i0; i < i1; i++) {
            float v = xs[i], t = fedc__fast_tanhf(GELU_C * (v + GELU_A * v * v * v));
            out[i] = 0.5f * v * (1.0f + t);
        }
        return;
    }
    for (int64_t i = i0; i < i1; i++) {
        float v = xs[i], t = fedc__fast_tanhf(GELU_C * (v + GELU_A * v * v * v));
        float d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_C * (1.0f + 3.0f * GELU_A * v * v);
        out[i] = dys[i] * d;
    }
}

static void gelu_plain(const gelu_job *j, int64_t i0, int64_t i1) { gelu_span(j, i0, i1); }
FEDC_FAST_AVX2 static void gelu_avx2(const gelu_job *j, int64_t i0, int64_t i1) { gelu_span(j, i0, i1); }
FEDC_FAST_AVX512 static void gelu_avx512(const gelu_job *j, int64_t i0, int64_t i1) { gelu_span(j, i0, i1); }

static void gelu_task(void *ctx, int64_t b, int worker) {
    (void)worker;
    const gelu_job *j = ctx;
    int64_t i0 = b * BLOCK, i1 = i0 + BLOCK < j->n ? i0 + BLOCK : j->n;
    if (FEDC_FAST_HAS_AVX512()) gelu_avx512(j, i0, i1);
    else if (FEDC_FAST_HAS_AVX2()) gelu_avx2(j, i0, i1);
    else gelu_plain(j, i0, i1);
}

static void run_gelu(gelu_job *j) { fedc__kernels_parallel((j->n + BLOCK - 1) / BLOCK, gelu_task, j); }

/* c[j] += b[j] over a row, in the widest vectors the CPU has (an add: the same
 * bits in any of them). */
FEDC_FAST_INLINE void bias_span(int64_t n, const float *b, float *c) {
    for (int64_t j = 0; j < n; j++) c[j] = c[j] + b[j];
}
static void bias_plain(int64_t n, const float *b, float *c) { bias_span(n, b, c); }
FEDC_FAST_AVX2 static void bias_avx2(int64_t n, const float *b, float *c) { bias_span(n, b, c); }
FEDC_FAST_AVX512 static void bias_avx512(int64_t n, const float *b, float *c) { bias_span(n, b, c); }

/* Elementwise, so a row at a time gives the bits of the blocks above. */
void fedc__fast_bias_gelu_rows(fedc_dtype dt, int64_t rows, int64_t cols, int64_t ld, const void *bias, void *c,
                               void *act) {
    for (int64_t r = 0; r < rows; r++) {
        if (dt == FEDC_F32) {
            float *cr = (float *)c + r * ld;
            if (FEDC_FAST_HAS_AVX512()) bias_avx512(cols, bias, cr);
            else if (FEDC_FAST_HAS_AVX2()) bias_avx2(cols, bias, cr);
            else bias_plain(cols, bias, cr);
            if (!act) continue;
            gelu_job job = {cols, cr, NULL, (float *)act + r * ld};
            for (int64_t blk = 0; blk * BLOCK < cols; blk++) gelu_task(&job, blk, 0);
            continue;
        }
        double *cr = (double *)c + r * ld;
        const double *b = bias;
        for (int64_t j = 0; j < cols; j++) cr[j] = cr[j] + b[j];
        if (act) fedc__ref_gelu(dt, cols, cr, (double *)act + r * ld);
    }
}

fedc_status fedc__fast_gelu(fedc_dtype dt, int64_t n, const void *x, void *y) {
    if (dt != FEDC_F32) return fedc__ref_gelu(dt, n, x, y);
    gelu_job j = {n, x, NULL, y};
    run_gelu(&j);
    return FEDC_OK;
}

fedc_status fedc__fast_gelu_grad(fedc_dtype dt, int64_t n, const void *x, const void *dy, void *dx) {
    if (dt != FEDC_F32) return fedc__ref_gelu_grad(dt, n, x, dy, dx);
    gelu_job j = {n, x, dy, dx};
    run_gelu(&j);
    return FEDC_OK;
}

/* Sum of n floats in 8 interleaved partial sums (vectorisable, fixed order). */
static float sum8(const float *x, int64_t n) {
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) acc[l] += x[i + l];
    float s = 0;
    for (; i < n; i++) s += x[i];
    for (int l = 0; l < 8; l++) s += acc[l];
    return s;
}

/* Mean and 1 / sqrt(var + eps) of a row; tmp holds cols floats. */
static void row_stats(const float *x, int64_t cols, double eps, float *tmp, float *mean, float *rstd) {
    float m = sum8(x, cols) / (float)cols;
    for (int64_t j = 0; j < cols; j++) tmp[j] = (x[j] - m) * (x[j] - m);
    *mean = m;
    *rstd = (float)(1.0 / sqrt((double)(sum8(tmp, cols) / (float)cols) + eps));
}

/* The layer-norm kernels over spans of rows of about BLOCK elements (for the
 * kernels' pool): every row is computed alone, so any split gives its bits. The
 * parameter gradient sums over rows, so it goes in two passes: each row's mean
 * and 1 / std (rows apart), then spans of columns, each summing its rows in order. */
typedef struct norm_job {
    int64_t rows, cols;
    double eps;
    const float *x, *gamma, *beta, *dy;
    float *out;
    float *stats; /* param grad: mean and rstd of each row */
} norm_job;

static int64_t row_span(int64_t cols) { return cols > 0 && cols < BLOCK ? BLOCK / cols : 1; }

/* y, row by row; the output row is row_stats's scratch row (overwritten after). */
static void norm_rows(const void *ctx, int64_t r0, int64_t r1) {
    const norm_job *j = ctx;
    int64_t cols = j->cols;
    const float *g = j->gamma, *b = j->beta;
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = j->x + r * cols;
        float *yr = j->out + r * cols, mean, rstd;
        row_stats(xr, cols, j->eps, yr, &mean, &rstd);
        for (int64_t c = 0; c < cols; c++) yr[c] = (xr[c] - mean) * rstd * g[c] + b[c];
    }
}

fedc_status fedc__fast_layer_norm(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *gamma,
                                 const void *beta, double eps, void *y) {
    if (dt != FEDC_F32 || cols == 0) return fedc__ref_layer_norm(dt, rows, cols, x, gamma, beta, eps, y);
    norm_job j = {rows, cols, eps, x, gamma, beta, NULL, y, NULL};
    fedc__kernels_spans(rows, row_span(cols), norm_rows, &j);
    return FEDC_OK;
}

static void norm_grad_rows(const void *ctx, int64_t r0, int64_t r1) {
    const norm_job *j = ctx;
    int64_t cols = j->cols;
    const float *gm = j->gamma;
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = j->x + r * cols, *dyr = j->dy + r * cols;
        float *dxr = j->out + r * cols, mean, rstd;
        row_stats(xr, cols, j->eps, dxr, &mean, &rstd);
        for (int64_t c = 0; c < cols; c++) dxr[c] = dyr[c] * gm[c];
        float mg = sum8(dxr, cols) / (float)cols, mgx = 0;
        float acc[8] = {0};
        int64_t c = 0;
        for (; c + 8 <= cols; c += 8)
            for (int l = 0; l < 8; l++) acc[l] += dxr[c + l] * (xr[c + l] - mean);
        for (; c < cols; c++) mgx += dxr[c] * (xr[c] - mean);
        for (int l = 0; l < 8; l++) mgx += acc[l];
        mgx *= rstd / (float)cols;
        for (c = 0; c < cols; c++) dxr[c] = rstd * (dxr[c] - mg - (xr[c] - mean) * rstd * mgx);
    }
}

fedc_status fedc__fast_layer_norm_grad(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *gamma,
                                      const void *dy, double eps, void *dx) {
    if (dt != FEDC_F32 || cols == 0) return fedc__ref_layer_norm_grad(dt, rows, cols, x, gamma, dy, eps, dx);
    norm_job j = {rows, cols, eps, x, gamma, NULL, dy, dx, NULL};
    fedc__kernels_spans(rows, row_span(cols), norm_grad_rows, &j);
    return FEDC_OK;
}

static void param_stats_rows(const void *ctx, int64_t r0, int64_t r1) {
    const norm_job *j = ctx;
    int64_t cols = j->cols;
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = j->x + r * cols;
        float m = sum8(xr, cols) / (float)cols, ss = 0, acc[8] = {0};
        int64_t c = 0; /* 8 interleaved sums, as sum8: one serial chain would cost cols adds' latency */
        for (; c + 8 <= cols; c += 8)
            for (int l = 0; l < 8; l++) acc[l] += (xr[c + l] - m) * (xr[c + l] - m);
        for (; c < cols; c++) ss += (xr[c] - m) * (xr[c] - m);
        for (int l = 0; l < 8; l++) ss += acc[l];
        j->stats[2 * r] = m;
        j->stats[2 * r + 1] = (float)(1.0 / sqrt((double)(ss / (float)cols) + j->eps));
    }
}

/* Columns [c0, c1) of dgamma (out) and dbeta (out + cols). */
static void param_grad_cols(const void *ctx, int64_t c0, int64_t c1) {
    const norm_job *j = ctx;
    int64_t cols = j->cols;
    float *dg = j->out, *db = dg + cols;
    for (int64_t c = c0; c < c1; c++) dg[c] = db[c] = 0;
    for (int64_t r = 0; r < j->rows; r++) {
        const float *xr = j->x + r * cols, *dyr = j->dy + r * cols;
        float m = j->stats[2 * r], rstd = j->stats[2 * r + 1];
        for (int64_t c = c0; c < c1; c++) {
            dg[c] += dyr[c] * (xr[c] - m) * rstd;
            db[c] += dyr[c];
        }
    }
}

fedc_status fedc__fast_layer_norm_param_grad(fedc_dtype dt, int64_t rows, int64_t cols, const void *x, const void *dy,
                                            double eps, void *dgb) {
    if (dt != FEDC_F32 || cols == 0) return fedc__ref_layer_norm_param_grad(dt, rows, cols, x, dy, eps, dgb);
    float *stats = rows > 0 ? fedc_malloc((size_t)rows * 2 * sizeof *stats) : NULL;
    if (rows > 0 && !stats)
        return fedc_error(FEDC_ENOMEM, "layer_norm_param_grad (fast): cannot allocate %lld rows' statistics",
                          (long long)rows);
    norm_job j = {rows, cols, eps, x, NULL, NULL, dy, dgb, stats};
    fedc__kernels_spans(rows, row_span(cols), param_stats_rows, &j);
    /* columns in multiples of 16, about BLOCK elements per span, at least 64
     * columns (each span reads all rows; shorter pieces of them waste the lines) */
    int64_t span = rows > 0 ? (BLOCK / rows + 15) / 16 * 16 : cols;
    fedc__kernels_spans(cols, span > 64 ? span : 64, param_grad_cols, &j);
    fedc_free(stats);
    return FEDC_OK;
}
