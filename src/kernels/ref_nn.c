/*
 * Reference neural-network kernels: matmul, conv2d and its input and filter
 * gradients, max and average pooling and their gradients, log_softmax and
 * softmax_xent. Each output element is computed on its own by a direct formula
 * ("gather" form, even for the gradients), summing in double in the plain order of
 * the loop indices and rounding once on store. Nothing here uses scratch: the
 * gradients find, for each input position, the output positions that read it.
 */
#include <math.h>
#include <stdbool.h>

#include "kernels/ref.h"

static fedc_status unsupported(const char *kernel, fedc_dtype dt) {
    return fedc_error(FEDC_EUNSUPPORTED, "%s: dtype %s is not supported", kernel,
                      fedc_dtype_name(dt));
}

/* ---------------------------------------------------------------- matmul -- */

fedc_status fedc__ref_matmul(fedc_dtype dt, int64_t batch, int64_t m, int64_t n, int64_t k, int ta,
                            int tb, const void *a, int a_batched, const void *b, int b_batched,
                            void *c) {
    if (!fedc_dtype_is_float(dt)) return unsupported("matmul", dt);
    for (int64_t bb = 0; bb < batch; bb++) {
        int64_t a0 = a_batched ? bb * m * k : 0, b0 = b_batched ? bb * k * n : 0;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double acc = 0;
                for (int64_t p = 0; p < k; p++) {
                    /* op(a)[i, p] and op(b)[p, j], whichever way each is stored */
                    int64_t ai = ta ? p * m + i : i * k + p;
                    int64_t bi = tb ? j * k + p : p * n + j;
                    acc += fedc__ref_loadf(dt, a, a0 + ai) * fedc__ref_loadf(dt, b, b0 + bi);
                }
                fedc__ref_storef(dt, c, bb * m * n + i * n + j, acc);
            }
    }
    return FEDC_OK;
}

/* ------------------------------------------------------ window geometry -- */

/* Output position `out` (row or column) reads input position out * stride - pad + d. */
static int64_t window_pos(int64_t out, int64_t stride, int64_t pad, int64_t d) {
    return out * stride - pad + d;
}

/* The inverse: the output position whose window offset d reads input position `pos`,
 * if there is one in [0, nout). */
static bool window_source(int64_t pos, int64_t stride, int64_t pad, int64_t d, int64_t nout,
                          int64_t *out) {
    int64_t t = pos + pad - d;
    if (t < 0 || t % stride != 0) return false;
    *out = t / stride;
    return *out < nout;
}

static bool inside(int64_t pos, int64_t size) { return pos >= 0 && pos < size; }

/* ------------------------------------------------------------------ conv -- */

static fedc_status check_conv(const char *kernel, fedc_dtype dt, const fedc__conv_geom *g) {
    if (!fedc_dtype_is_float(dt)) return unsupported(kernel, dt);
    if (g->n < 0 || g->h < 0 || g->w < 0 || g->c < 0 || g->kh < 0 || g->kw < 0 || g->o < 0 ||
        g->oh < 0 || g->ow < 0 || g->sh < 1 || g->sw < 1)
        return fedc_error(FEDC_EINVAL, "%s: bad geometry (a negative size or a stride < 1)",
                          kernel);
    return FEDC_OK;
}

/* Flat indices of x[b, r, s, ci], w[di, dj, ci, oc] and y[b, i, j, oc]. */
static int64_t x_at(const fedc__conv_geom *g, int64_t b, int64_t r, int64_t s, int64_t ci) {
    return ((b * g->h + r) * g->w + s) * g->c + ci;
}
static int64_t w_at(const fedc__conv_geom *g, int64_t di, int64_t dj, int64_t ci, int64_t oc) {
    return ((di * g->kw + dj) * g->c + ci) * g->o + oc;
}
static int64_t y_at(const fedc__conv_geom *g, int64_t b, int64_t i, int64_t j, int64_t oc) {
    return ((b * g->oh + i) * g->ow + j) * g->o + oc;
}

size_t fedc__ref_conv2d_scratch(const fedc__conv_geom *g, fedc_dtype dt) {
    (void)g;
    (void)dt;
    return 0;
}

/* y[b, i, j, oc] = sum over di, dj, ci of x[b, i*sh - pt + di, j*sw - pl + dj, ci] *
 * w[di, dj, ci, oc], skipping reads outside the image (they are zero). */
static double conv_out(fedc_dtype dt, const fedc__conv_geom *g, const void *x, const void *w,
                       int64_t b, int64_t i, int64_t j, int64_t oc) {
    double acc = 0;
    for (int64_t di = 0; di < g->kh; di++) {
        int64_t r = window_pos(i, g->sh, g->pad_top, di);
        if (!inside(r, g->h)) continue;
        for (int64_t dj = 0; dj < g->kw; dj++) {
            int64_t s = window_pos(j, g->sw, g->pad_left, dj);
            if (!inside(s, g->w)) continue;
            for (int64_t ci = 0; ci < g->c; ci++)
                acc += fedc__ref_loadf(dt, x, x_at(g, b, r, s, ci)) *
                       fedc__ref_loadf(dt, w, w_at(g, di, dj, ci, oc));
        }
    }
    return acc;
}

fedc_status fedc__ref_conv2d(fedc_dtype dt, const fedc__conv_geom *g, const void *x, const void *w,
                            void *y, void *scratch) {
    (void)scratch;
    fedc_status st = check_conv("conv2d", dt, g);
    if (st) return st;
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t i = 0; i < g->oh; i++)
            for (int64_t j = 0; j < g->ow; j++)
                for (int64_t oc = 0; oc < g->o; oc++)
                    fedc__ref_storef(dt, y, y_at(g, b, i, j, oc),
                                    conv_out(dt, g, x, w, b, i, j, oc));
    return FEDC_OK;
}

/* dx[b, r, s, ci] = sum over the (di, dj) and output (i, j) with
 * i*sh - pt + di == r and j*sw - pl + dj == s of sum over oc of
 * dy[b, i, j, oc] * w[di, dj, ci, oc]: the transpose of conv_out. */
static double conv_dx(fedc_dtype dt, const fedc__conv_geom *g, const void *dy, const void *w,
                      int64_t b, int64_t r, int64_t s, int64_t ci) {
    double acc = 0;
    int64_t i, j;
    for (int64_t di = 0; di < g->kh; di++) {
        if (!window_source(r, g->sh, g->pad_top, di, g->oh, &i)) continue;
        for (int64_t dj = 0; dj < g->kw; dj++) {
            if (!window_source(s, g->sw, g->pad_left, dj, g->ow, &j)) continue;
            for (int64_t oc = 0; oc < g->o; oc++)
                acc += fedc__ref_loadf(dt, dy, y_at(g, b, i, j, oc)) *
                       fedc__ref_loadf(dt, w, w_at(g, di, dj, ci, oc));
        }
    }
    return acc;
}

fedc_status fedc__ref_conv2d_input_grad(fedc_dtype dt, const fedc__conv_geom *g, const void *dy,
                                       const void *w, void *dx, void *scratch) {
    (void)scratch;
    fedc_status st = check_conv("conv2d_input_grad", dt, g);
    if (st) return st;
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t r = 0; r < g->h; r++)
            for (int64_t s = 0; s < g->w; s++)
                for (int64_t ci = 0; ci < g->c; ci++)
                    fedc__ref_storef(dt, dx, x_at(g, b, r, s, ci),
                                    conv_dx(dt, g, dy, w, b, r, s, ci));
    return FEDC_OK;
}

/* dw[di, dj, ci, oc] = sum over b, i, j of x[b, i*sh - pt + di, j*sw - pl + dj, ci] *
 * dy[b, i, j, oc], skipping reads outside the image. */
static double conv_dw(fedc_dtype dt, const fedc__conv_geom *g, const void *x, const void *dy,
                      int64_t di, int64_t dj, int64_t ci, int64_t oc) {
    double acc = 0;
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t i = 0; i < g->oh; i++) {
            int64_t r = window_pos(i, g->sh, g->pad_top, di);
            if (!inside(r, g->h)) continue;
            for (int64_t j = 0; j < g->ow; j++) {
                int64_t s = window_pos(j, g->sw, g->pad_left, dj);
                if (!inside(s, g->w)) continue;
                acc += fedc__ref_loadf(dt, x, x_at(g, b, r, s, ci)) *
                       fedc__ref_loadf(dt, dy, y_at(g, b, i, j, oc));
            }
        }
    return acc;
}

fedc_status fedc__ref_conv2d_filter_grad(fedc_dtype dt, const fedc__conv_geom *g, const void *x,
                                        const void *dy, void *dw, void *scratch) {
    (void)scratch;
    fedc_status st = check_conv("conv2d_filter_grad", dt, g);
    if (st) return st;
    for (int64_t di = 0; di < g->kh; di++)
        for (int64_t dj = 0; dj < g->kw; dj++)
            for (int64_t ci = 0; ci < g->c; ci++)
                for (int64_t oc = 0; oc < g->o; oc++)
                    fedc__ref_storef(dt, dw, w_at(g, di, dj, ci, oc),
                                    conv_dw(dt, g, x, dy, di, dj, ci, oc));
    return FEDC_OK;
}

/* --------------------------------------------------------------- pooling -- */

static fedc_status check_pool(const char *kernel, fedc_dtype dt, const fedc__pool_geom *g) {
    if (!fedc_dtype_is_float(dt)) return unsupported(kernel, dt);
    if (g->n < 0 || g->h < 0 || g->w < 0 || g->c < 0 || g->kh < 0 || g->kw < 0 || g->oh < 0 ||
        g->ow < 0 || g->sh < 1 || g->sw < 1)
        return fedc_error(FEDC_EINVAL, "%s: bad geometry (a negative size or a stride < 1)",
                          kernel);
    return FEDC_OK;
}

/* Flat indices of x[b, r, s, ci] and y[b, i, j, ci] (NHWC, same channels). */
static int64_t px_at(const fedc__pool_geom *g, int64_t b, int64_t r, int64_t s, int64_t ci) {
    return ((b * g->h + r) * g->w + s) * g->c + ci;
}
static int64_t py_at(const fedc__pool_geom *g, int64_t b, int64_t i, int64_t j, int64_t ci) {
    return ((b * g->oh + i) * g->ow + j) * g->c + ci;
}

/* The first maximum, in row-major window order, of window (i, j) of channel ci of
 * image b: its input row and column. False when no element of the window is in the
 * image (padding is never picked). */
static bool window_argmax(fedc_dtype dt, const fedc__pool_geom *g, const void *x, int64_t b,
                          int64_t i, int64_t j, int64_t ci, int64_t *best_r, int64_t *best_s) {
    bool found = false;
    double best = 0;
    for (int64_t di = 0; di < g->kh; di++) {
        int64_t r = window_pos(i, g->sh, g->pad_top, di);
        if (!inside(r, g->h)) continue;
        for (int64_t dj = 0; dj < g->kw; dj++) {
            int64_t s = window_pos(j, g->sw, g->pad_left, dj);
            if (!inside(s, g->w)) continue;
            double v = fedc__ref_loadf(dt, x, px_at(g, b, r, s, ci));
            if (!found || v > best) { /* strict >: ties keep the earlier one */
                found = true;
                best = v;
                *best_r = r;
                *best_s = s;
            }
        }
    }
    return found;
}

/* Number of elements of window (i, j) that are inside the image. */
static int64_t window_count(const fedc__pool_geom *g, int64_t i, int64_t j) {
    int64_t rows = 0, cols = 0;
    for (int64_t di = 0; di < g->kh; di++)
        rows += inside(window_pos(i, g->sh, g->pad_top, di), g->h);
    for (int64_t dj = 0; dj < g->kw; dj++)
        cols += inside(window_pos(j, g->sw, g->pad_left, dj), g->w);
    return rows * cols;
}

fedc_status fedc__ref_max_pool2d(fedc_dtype dt, const fedc__pool_geom *g, const void *x, void *y) {
    fedc_status st = check_pool("max_pool2d", dt, g);
    if (st) return st;
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t i = 0; i < g->oh; i++)
            for (int64_t j = 0; j < g->ow; j++)
                for (int64_t ci = 0; ci < g->c; ci++) {
                    int64_t r, s;
                    double v = window_argmax(dt, g, x, b, i, j, ci, &r, &s)
                                   ? fedc__ref_loadf(dt, x, px_at(g, b, r, s, ci))
                                   : -INFINITY;
                    fedc__ref_storef(dt, y, py_at(g, b, i, j, ci), v);
                }
    return FEDC_OK;
}

/* dx[b, r, s, ci] = sum of dy over the windows that contain (r, s) and whose first
 * maximum is (r, s). */
static double max_pool_dx(fedc_dtype dt, const fedc__pool_geom *g, const void *x, const void *dy,
                          int64_t b, int64_t r, int64_t s, int64_t ci) {
    double acc = 0;
    int64_t i, j, ar = -1, as = -1;
    for (int64_t di = 0; di < g->kh; di++) {
        if (!window_source(r, g->sh, g->pad_top, di, g->oh, &i)) continue;
        for (int64_t dj = 0; dj < g->kw; dj++) {
            if (!window_source(s, g->sw, g->pad_left, dj, g->ow, &j)) continue;
            if (window_argmax(dt, g, x, b, i, j, ci, &ar, &as) && ar == r && as == s)
                acc += fedc__ref_loadf(dt, dy, py_at(g, b, i, j, ci));
        }
    }
    return acc;
}

fedc_status fedc__ref_max_pool2d_grad(fedc_dtype dt, const fedc__pool_geom *g, const void *x,
                                     const void *dy, void *dx) {
    fedc_status st = check_pool("max_pool2d_grad", dt, g);
    if (st) return st;
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t r = 0; r < g->h; r++)
            for (int64_t s = 0; s < g->w; s++)
                for (int64_t ci = 0; ci < g->c; ci++)
                    fedc__ref_storef(dt, dx, px_at(g, b, r, s, ci),
                                    max_pool_dx(dt, g, x, dy, b, r, s, ci));
    return FEDC_OK;
}

/* Mean of the in-image elements of window (i, j); 0 for a window with none. */
static double avg_pool_out(fedc_dtype dt, const fedc__pool_geom *g, const void *x, int64_t b,
                           int64_t i, int64_t j, int64_t ci) {
    int64_t count = window_count(g, i, j);
    if (count == 0) return 0;
    double acc = 0;
    for (int64_t di = 0; di < g->kh; di++) {
        int64_t r = window_pos(i, g->sh, g->pad_top, di);
        if (!inside(r, g->h)) continue;
        for (int64_t dj = 0; dj < g->kw; dj++) {
            int64_t s = window_pos(j, g->sw, g->pad_left, dj);
            if (inside(s, g->w)) acc += fedc__ref_loadf(dt, x, px_at(g, b, r, s, ci));
        }
    }
    return acc / (double)count;
}

fedc_status fedc__ref_avg_pool2d(fedc_dtype dt, const fedc__pool_geom *g, const void *x, void *y) {
    fedc_status st = check_pool("avg_pool2d", dt, g);
    if (st) return st;
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t i = 0; i < g->oh; i++)
            for (int64_t j = 0; j < g->ow; j++)
                for (int64_t ci = 0; ci < g->c; ci++)
                    fedc__ref_storef(dt, y, py_at(g, b, i, j, ci),
                                    avg_pool_out(dt, g, x, b, i, j, ci));
    return FEDC_OK;
}

/* dx[b, r, s, ci] = sum over the windows (i, j) containing (r, s) of
 * dy[b, i, j, ci] / count(i, j): the transpose of avg_pool_out. */
static double avg_pool_dx(fedc_dtype dt, const fedc__pool_geom *g, const void *dy, int64_t b,
                          int64_t r, int64_t s, int64_t ci) {
    double acc = 0;
    int64_t i, j;
    for (int64_t di = 0; di < g->kh; di++) {
        if (!window_source(r, g->sh, g->pad_top, di, g->oh, &i)) continue;
        for (int64_t dj = 0; dj < g->kw; dj++) {
            if (!window_source(s, g->sw, g->pad_left, dj, g->ow, &j)) continue;
            /* (r, s) is in the image and in the window, so the count is >= 1 */
            acc += fedc__ref_loadf(dt, dy, py_at(g, b, i, j, ci)) / (double)window_count(g, i, j);
        }
    }
    return acc;
}

fedc_status fedc__ref_avg_pool2d_grad(fedc_dtype dt, const fedc__pool_geom *g, const void *dy,
                                     void *dx) {
    fedc_status st = check_pool("avg_pool2d_grad", dt, g);
    if (st) return st;
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t r = 0; r < g->h; r++)
            for (int64_t s = 0; s < g->w; s++)
                for (int64_t ci = 0; ci < g->c; ci++)
                    fedc__ref_storef(dt, dx, px_at(g, b, r, s, ci),
                                    avg_pool_dx(dt, g, dy, b, r, s, ci));
    return FEDC_OK;
}

/* --------------------------------------------------------------- softmax -- */

/* log(sum(exp(x[base + c]))) over c in [0, cols), shifted by the row's maximum so
 * that no exp overflows (logits of 1000 are fine). -inf for an empty row. */
static double row_logsumexp(fedc_dtype dt, const void *x, int64_t base, int64_t cols) {
    double max = -INFINITY;
    for (int64_t c = 0; c < cols; c++) {
        double v = fedc__ref_loadf(dt, x, base + c);
        if (v > max) max = v;
    }
    if (isinf(max)) return max; /* empty, all -inf, or a +inf: no finite shift exists */
    double sum = 0;
    for (int64_t c = 0; c < cols; c++) sum += exp(fedc__ref_loadf(dt, x, base + c) - max);
    return max + log(sum);
}

fedc_status fedc__ref_log_softmax(fedc_dtype dt, int64_t rows, int64_t cols, const void *x,
                                 void *y) {
    if (!fedc_dtype_is_float(dt)) return unsupported("log_softmax", dt);
    for (int64_t r = 0; r < rows; r++) {
        double lse = row_logsumexp(dt, x, r * cols, cols);
        for (int64_t c = 0; c < cols; c++)
            fedc__ref_storef(dt, y, r * cols + c, fedc__ref_loadf(dt, x, r * cols + c) - lse);
    }
    return FEDC_OK;
}

fedc_status fedc__ref_check_labels(const char *kernel, int64_t rows, int64_t classes, const int32_t *labels) {
    for (int64_t r = 0; r < rows; r++)
        if (labels[r] < 0 || labels[r] >= classes)
            return fedc_error(FEDC_ERANGE, "%s: label %d at row %lld is outside [0, %lld)", kernel, labels[r],
                              (long long)r, (long long)classes);
    return FEDC_OK;
}

fedc_status fedc__ref_softmax_xent(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                  const int32_t *labels, const void *w, void *loss) {
    if (!fedc_dtype_is_float(dt)) return unsupported("softmax_xent", dt);
    fedc_status st = fedc__ref_check_labels("softmax_xent", rows, classes, labels);
    if (st) return st;
    for (int64_t r = 0; r < rows; r++) {
        double lse = row_logsumexp(dt, logits, r * classes, classes);
        double nll = lse - fedc__ref_loadf(dt, logits, r * classes + labels[r]);
        double weight = w ? fedc__ref_loadf(dt, w, r) : 1.0;
        fedc__ref_storef(dt, loss, r, weight * nll);
    }
    return FEDC_OK;
}

fedc_status fedc__ref_softmax_xent_grad(fedc_dtype dt, int64_t rows, int64_t classes, const void *logits,
                                       const int32_t *labels, const void *scale, void *dlogits) {
    if (!fedc_dtype_is_float(dt)) return unsupported("softmax_xent_grad", dt);
    fedc_status st = fedc__ref_check_labels("softmax_xent_grad", rows, classes, labels);
    if (st) return st;
    for (int64_t r = 0; r < rows; r++) {
        double lse = row_logsumexp(dt, logits, r * classes, classes), s = fedc__ref_loadf(dt, scale, r);
        for (int64_t c = 0; c < classes; c++) {
            double p = exp(fedc__ref_loadf(dt, logits, r * classes + c) - lse);
            fedc__ref_storef(dt, dlogits, r * classes + c, s * (p - (c == labels[r])));
        }
    }
    return FEDC_OK;
}
