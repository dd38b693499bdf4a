/*
 * fast_pool.c — max and average pooling and their gradients over NHWC images.
 * The reference walks one channel at a time; here every inner loop runs over
 * the contiguous channels of one pixel, so the compiler can vectorise it and
 * each input pixel is touched once per window. Windows are clipped to the image
 * first, so padding costs nothing (pooling ignores padded positions). The order
 * in which elements are combined is fixed, so results are deterministic.
 * Channels of max_pool2d_grad are taken in blocks of MAXG_BLOCK so that the
 * running maxima and their positions live on the stack (kernels never allocate).
 */
#include <math.h>
#include <string.h>

#include "kernels/fast.h"
#include "kernels/fast_math.h"

#define MAXG_BLOCK 64

/* The in-image part [r0, r1) x [c0, c1) of the window of output pixel (i, j). */
typedef struct window {
    int64_t r0, r1, c0, c1;
} window;

static int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

static window window_of(const fedc__pool_geom *g, int64_t i, int64_t j) {
    int64_t top = i * g->sh - g->pad_top, left = j * g->sw - g->pad_left;
    window win = {clamp(top, 0, g->h), clamp(top + g->kh, 0, g->h), clamp(left, 0, g->w),
                  clamp(left + g->kw, 0, g->w)};
    return win;
}

static int64_t window_count(window w) {
    int64_t n = (w.r1 - w.r0) * (w.c1 - w.c0);
    return n > 0 ? n : 0;
}

/* Whether the windows tile the image exactly (no padding, stride = window, every
 * pixel in one window), as the CNN's 2x2 pool does: then max_pool2d_grad writes
 * each dx element once, (T)0 + dy where it picks dy and 0 elsewhere (the same
 * bits as adding into zeros, -0 included), instead of zeroing dx and adding. */
static int tiles(const fedc__pool_geom *g) {
    return g->pad_top == 0 && g->pad_left == 0 && g->sh == g->kh && g->sw == g->kw && g->oh * g->kh == g->h &&
           g->ow * g->kw == g->w;
}

/* The reference's checks, so both tables fail alike: a float dtype, no negative
 * size, strides >= 1. */
static fedc_status check(const char *what, fedc_dtype dt, const fedc__pool_geom *g) {
    if (dt != FEDC_F32 && dt != FEDC_F64)
        return fedc_error(FEDC_EUNSUPPORTED, "%s (fast): dtype %s is not supported", what,
                          fedc_dtype_name(dt));
    if (g->n < 0 || g->h < 0 || g->w < 0 || g->c < 0 || g->kh < 0 || g->kw < 0 || g->oh < 0 ||
        g->ow < 0 || g->sh < 1 || g->sw < 1)
        return fedc_error(FEDC_EINVAL, "%s (fast): bad geometry (a negative size or a stride < 1)",
                          what);
    return FEDC_OK;
}

/* POOL_DEFS(T, S) defines the four pooling passes for element type T, named with
 * suffix S; they all walk output pixels in row-major order and call a per-pixel
 * function whose innermost loop runs over channels. */
#define POOL_DEFS(T, S)                                                                         \
    /* y[0..c) = max over the window, starting from its first element (so a NaN there is    \
     * kept, as the reference's strict > does); -inf if the window lies wholly in padding. */   \
    FEDC_FAST_INLINE void max_pixel_##S(const fedc__pool_geom *g, const T *img, window w, T *restrict y) { \
        int64_t c = g->c;                                                                       \
        if (window_count(w) == 0) {                                                             \
            for (int64_t t = 0; t < c; t++) y[t] = -(T)INFINITY;                                \
            return;                                                                             \
        }                                                                                       \
        memcpy(y, img + (w.r0 * g->w + w.c0) * c, (size_t)c * sizeof(T));                       \
        for (int64_t r = w.r0; r < w.r1; r++)                                                   \
            for (int64_t q = w.c0; q < w.c1; q++) {                                             \
                const T *restrict v = img + (r * g->w + q) * c;                                 \
                for (int64_t t = 0; t < c; t++) y[t] = v[t] > y[t] ? v[t] : y[t];               \
            }                                                                                   \
    }                                                                                           \
                                                                                                \
    /* Channels [c0, c0+nc) of one window: dx at the first maximum += dy. Two sweeps     \
     * over the window, both vectorised over channels: the first finds each channel's     \
     * maximum (starting from the window's first element, so a NaN there is the maximum, \
     * as in the reference), the second adds dy at the first element equal to it (the    \
     * first NaN when the maximum is NaN). Under strict >, the reference's first maximum  \
     * is exactly the first element comparing equal to the final maximum. A window        \
     * wholly in padding sends nothing back. */                                           \
    FEDC_FAST_INLINE void max_grad_block_##S(const fedc__pool_geom *g, const T *img, window w,     \
                                   const T *dy, T *dximg, int64_t c0, int64_t nc, int store) {  \
        T best[MAXG_BLOCK];                                                                     \
        unsigned char done[MAXG_BLOCK];                                                         \
        if (window_count(w) == 0) return;                                                       \
        const T *first = img + (w.r0 * g->w + w.c0) * g->c + c0;                                \
        for (int64_t t = 0; t < nc; t++) best[t] = first[t], done[t] = 0;                       \
        for (int64_t r = w.r0; r < w.r1; r++)                                                   \
            for (int64_t q = w.c0; q < w.c1; q++) {                                             \
                const T *v = img + (r * g->w + q) * g->c + c0;                                  \
                for (int64_t t = 0; t < nc; t++) best[t] = v[t] > best[t] ? v[t] : best[t];     \
            }                                                                                   \
        dy += c0;                                                                               \
        for (int64_t r = w.r0; r < w.r1; r++)                                                   \
            for (int64_t q = w.c0; q < w.c1; q++) {                                             \
                const T *v = img + (r * g->w + q) * g->c + c0;                                  \
                T *restrict d = dximg + (r * g->w + q) * g->c + c0;                             \
                for (int64_t t = 0; t < nc; t++) {                                              \
                    T grad = dy[t], x = v[t], m = best[t];                                      \
                    unsigned char hit = (unsigned char)(done[t] == 0) &                         \
                                        (unsigned char)((x == m) | ((x != x) & (m != m)));      \
                    if (store) d[t] = hit ? (T)0 + grad : (T)0;                                 \
                    else d[t] += hit ? grad : (T)0;                                             \
                    done[t] |= hit;                                                             \
                }                                                                               \
            }                                                                                   \
    }                                                                                           \
                                                                                                \
    /* y[0..c) = mean over the in-image part of the window; 0 for a window wholly in        \
     * padding (the reference's convention, rather than 0/0). */                               \
    static void avg_pixel_##S(const fedc__pool_geom *g, const T *img, window w, T *restrict y) { \
        int64_t c = g->c;                                                                       \
        T count = window_count(w) ? (T)window_count(w) : (T)1;                                  \
        for (int64_t t = 0; t < c; t++) y[t] = 0;                                               \
        for (int64_t r = w.r0; r < w.r1; r++)                                                   \
            for (int64_t q = w.c0; q < w.c1; q++) {                                             \
                const T *restrict v = img + (r * g->w + q) * c;                                 \
                for (int64_t t = 0; t < c; t++) y[t] += v[t];                                   \
            }                                                                                   \
        for (int64_t t = 0; t < c; t++) y[t] /= count;                                          \
    }                                                                                           \
                                                                                                \
    /* Each in-image pixel of the window gets dy / count. */                                    \
    static void avg_grad_pixel_##S(const fedc__pool_geom *g, const T *restrict dy, window w,     \
                                   T *dximg) {                                                  \
        int64_t c = g->c;                                                                       \
        T count = (T)window_count(w);                                                           \
        for (int64_t r = w.r0; r < w.r1; r++)                                                   \
            for (int64_t q = w.c0; q < w.c1; q++) {                                             \
                T *restrict d = dximg + (r * g->w + q) * c;                                     \
                for (int64_t t = 0; t < c; t++) d[t] += dy[t] / count;                          \
            }                                                                                   \
    }                                                                                           \
                                                                                                \
    FEDC_FAST_INLINE void max_pool_##S(const fedc__pool_geom *g, const T *x, T *y) {             \
        for (int64_t b = 0; b < g->n; b++) {                                                    \
            const T *img = x + b * g->h * g->w * g->c;                                          \
            for (int64_t i = 0; i < g->oh; i++)                                                 \
                for (int64_t j = 0; j < g->ow; j++, y += g->c)                                  \
                    max_pixel_##S(g, img, window_of(g, i, j), y);                               \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    FEDC_FAST_INLINE void max_grad_##S(const fedc__pool_geom *g, const T *x, const T *dy, T *dx) { \
        int64_t img_size = g->h * g->w * g->c;                                                  \
        int store = tiles(g);                                                                   \
        if (!store) memset(dx, 0, (size_t)(g->n * img_size) * sizeof(T));                       \
        for (int64_t b = 0; b < g->n; b++)                                                      \
            for (int64_t i = 0; i < g->oh; i++)                                                 \
                for (int64_t j = 0; j < g->ow; j++, dy += g->c)                                 \
                    for (int64_t c0 = 0; c0 < g->c; c0 += MAXG_BLOCK)                           \
                        max_grad_block_##S(g, x + b * img_size, window_of(g, i, j), dy,         \
                                           dx + b * img_size, c0,                               \
                                           g->c - c0 < MAXG_BLOCK ? g->c - c0 : MAXG_BLOCK,     \
                                           store);                                              \
    }                                                                                           \
                                                                                                \
    static void avg_pool_##S(const fedc__pool_geom *g, const T *x, T *y) {                       \
        for (int64_t b = 0; b < g->n; b++) {                                                    \
            const T *img = x + b * g->h * g->w * g->c;                                          \
            for (int64_t i = 0; i < g->oh; i++)                                                 \
                for (int64_t j = 0; j < g->ow; j++, y += g->c)                                  \
                    avg_pixel_##S(g, img, window_of(g, i, j), y);                               \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    static void avg_grad_##S(const fedc__pool_geom *g, const T *dy, T *dx) {                     \
        int64_t img_size = g->h * g->w * g->c;                                                  \
        memset(dx, 0, (size_t)(g->n * img_size) * sizeof(T));                                  \
        for (int64_t b = 0; b < g->n; b++)                                                      \
            for (int64_t i = 0; i < g->oh; i++)                                                 \
                for (int64_t j = 0; j < g->ow; j++, dy += g->c)                                 \
                    avg_grad_pixel_##S(g, dy, window_of(g, i, j), dx + b * img_size);           \
    }

POOL_DEFS(float, f32)
POOL_DEFS(double, f64)

/* Max pooling and its gradient in f32 also in an AVX2 and an AVX-512 copy (8 or
 * 16 channels a vector instead of 4): only comparisons and copies, so the same
 * bits. The CNN's pool gradient: 0.62 -> 0.53 ms per training step (AVX-512). */
static void max_pool_f32_base(const fedc__pool_geom *g, const float *x, float *y) { max_pool_f32(g, x, y); }
FEDC_FAST_AVX2 static void max_pool_f32_avx2(const fedc__pool_geom *g, const float *x, float *y) {
    max_pool_f32(g, x, y);
}
FEDC_FAST_AVX512 static void max_pool_f32_avx512(const fedc__pool_geom *g, const float *x, float *y) {
    max_pool_f32(g, x, y);
}
static void max_grad_f32_base(const fedc__pool_geom *g, const float *x, const float *dy, float *dx) {
    max_grad_f32(g, x, dy, dx);
}
FEDC_FAST_AVX2 static void max_grad_f32_avx2(const fedc__pool_geom *g, const float *x, const float *dy, float *dx) {
    max_grad_f32(g, x, dy, dx);
}
FEDC_FAST_AVX512 static void max_grad_f32_avx512(const fedc__pool_geom *g, const float *x, const float *dy, float *dx) {
    max_grad_f32(g, x, dy, dx);
}

fedc_status fedc__fast_max_pool2d(fedc_dtype dt, const fedc__pool_geom *g, const void *x, void *y) {
    fedc_status st = check("max_pool2d", dt, g);
    if (st) return st;
    if (dt == FEDC_F32) FEDC_FAST_PICK(max_pool_f32)(g, x, y);
    else max_pool_f64(g, x, y);
    return FEDC_OK;
}

fedc_status fedc__fast_max_pool2d_grad(fedc_dtype dt, const fedc__pool_geom *g, const void *x,
                                      const void *dy, void *dx) {
    fedc_status st = check("max_pool2d_grad", dt, g);
    if (st) return st;
    if (dt == FEDC_F32) FEDC_FAST_PICK(max_grad_f32)(g, x, dy, dx);
    else max_grad_f64(g, x, dy, dx);
    return FEDC_OK;
}

fedc_status fedc__fast_avg_pool2d(fedc_dtype dt, const fedc__pool_geom *g, const void *x, void *y) {
    fedc_status st = check("avg_pool2d", dt, g);
    if (st) return st;
    if (dt == FEDC_F32) avg_pool_f32(g, x, y);
    else avg_pool_f64(g, x, y);
    return FEDC_OK;
}

fedc_status fedc__fast_avg_pool2d_grad(fedc_dtype dt, const fedc__pool_geom *g, const void *dy,
                                      void *dx) {
    fedc_status st = check("avg_pool2d_grad", dt, g);
    if (st) return st;
    if (dt == FEDC_F32) avg_grad_f32(g, dy, dx);
    else avg_grad_f64(g, dy, dx);
    return FEDC_OK;
}

/* ------------------------------------------------------ kept argmax -- */

/* Max pooling that keeps, per output element, the position in its window that the
 * gradient routes dy to (max_pool2d_save, max_pool2d_grad_apply): the gradient then
 * reads a byte per output instead of the window's inputs again. The position is
 * found with max_grad_block's rule (the first element equal to the maximum, or the
 * first NaN when it is NaN) and the gradient's writes are max_grad_block's, so the
 * bits are max_pool2d_grad's. */

/* Channels [c0, c0 + nc) of one window: y = the maximum as max_pixel computes it
 * (from the first element, under strict >) and arg = where it last rose. That is
 * max_grad_block's position: before the first element equal to the final maximum
 * the running maximum is below it, so it rises there and never after; a NaN first
 * element is never exceeded (position 0, the first NaN), and a later NaN never
 * raises it (nor is it the maximum). Masks, not branches: float-sized lanes. */
FEDC_FAST_INLINE void argmax_block(const fedc__pool_geom *g, const float *img, window w, float *y, uint8_t *arg,
                                   int64_t c0, int64_t nc) {
    float best[MAXG_BLOCK];
    uint32_t at[MAXG_BLOCK];
    const float *first = img + (w.r0 * g->w + w.c0) * g->c + c0;
    for (int64_t t = 0; t < nc; t++) best[t] = first[t], at[t] = 0;
    uint32_t pos = 0;
    for (int64_t r = w.r0; r < w.r1; r++)
        for (int64_t q = w.c0; q < w.c1; q++, pos++) {
            const float *v = img + (r * g->w + q) * g->c + c0;
            for (int64_t t = 0; t < nc; t++) {
                uint32_t rise = 0u - (uint32_t)(v[t] > best[t]);
                best[t] = v[t] > best[t] ? v[t] : best[t];
                at[t] = (rise & pos) | (~rise & at[t]);
            }
        }
    for (int64_t t = 0; t < nc; t++) y[c0 + t] = best[t], arg[c0 + t] = (uint8_t)at[t];
}

FEDC_FAST_INLINE void max_pool_save(const fedc__pool_geom *g, const float *x, float *y, uint8_t *arg) {
    for (int64_t b = 0; b < g->n; b++) {
        const float *img = x + b * g->h * g->w * g->c;
        for (int64_t i = 0; i < g->oh; i++)
            for (int64_t j = 0; j < g->ow; j++, y += g->c, arg += g->c) {
                window w = window_of(g, i, j);
                if (window_count(w) == 0) {
                    max_pixel_f32(g, img, w, y); /* -inf; the gradient sends nothing back */
                    continue;
                }
                for (int64_t c0 = 0; c0 < g->c; c0 += MAXG_BLOCK)
                    argmax_block(g, img, w, y, arg, c0, g->c - c0 < MAXG_BLOCK ? g->c - c0 : MAXG_BLOCK);
            }
    }
}

/* v where mask is all ones, +0 where it is zero: a select without a branch (the
 * compiler makes `hit ? v : 0` a branch here, mispredicted at random positions). */
FEDC_FAST_INLINE float masked(float v, uint32_t mask) {
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    b &= mask;
    memcpy(&v, &b, sizeof v);
    return v;
}

/* One window: dx at the kept position += dy, written as max_grad_block writes it
 * (hit ? (T)0 + dy : 0, or dx += hit ? dy : 0). */
FEDC_FAST_INLINE void grad_apply_pixel(const fedc__pool_geom *g, window w, const uint8_t *arg, const float *dy,
                                       float *dximg, int store) {
    if (window_count(w) == 0) return;
    uint32_t pos = 0;
    for (int64_t r = w.r0; r < w.r1; r++)
        for (int64_t q = w.c0; q < w.c1; q++, pos++) {
            float *restrict d = dximg + (r * g->w + q) * g->c;
            if (store)
                for (int64_t t = 0; t < g->c; t++) d[t] = masked(0.0f + dy[t], 0u - (uint32_t)(arg[t] == pos));
            else
                for (int64_t t = 0; t < g->c; t++) d[t] += masked(dy[t], 0u - (uint32_t)(arg[t] == pos));
        }
}

FEDC_FAST_INLINE void max_grad_apply(const fedc__pool_geom *g, const uint8_t *arg, const float *dy, float *dx) {
    int64_t img_size = g->h * g->w * g->c;
    int store = tiles(g);
    if (!store) memset(dx, 0, (size_t)(g->n * img_size) * sizeof(float));
    for (int64_t b = 0; b < g->n; b++)
        for (int64_t i = 0; i < g->oh; i++)
            for (int64_t j = 0; j < g->ow; j++, dy += g->c, arg += g->c)
                grad_apply_pixel(g, window_of(g, i, j), arg, dy, dx + b * img_size, store);
}

static void max_pool_save_base(const fedc__pool_geom *g, const float *x, float *y, uint8_t *arg) {
    max_pool_save(g, x, y, arg);
}
FEDC_FAST_AVX2 static void max_pool_save_avx2(const fedc__pool_geom *g, const float *x, float *y, uint8_t *arg) {
    max_pool_save(g, x, y, arg);
}
FEDC_FAST_AVX512 static void max_pool_save_avx512(const fedc__pool_geom *g, const float *x, float *y, uint8_t *arg) {
    max_pool_save(g, x, y, arg);
}
static void max_grad_apply_base(const fedc__pool_geom *g, const uint8_t *arg, const float *dy, float *dx) {
    max_grad_apply(g, arg, dy, dx);
}
FEDC_FAST_AVX2 static void max_grad_apply_avx2(const fedc__pool_geom *g, const uint8_t *arg, const float *dy,
                                               float *dx) {
    max_grad_apply(g, arg, dy, dx);
}
FEDC_FAST_AVX512 static void max_grad_apply_avx512(const fedc__pool_geom *g, const uint8_t *arg, const float *dy,
                                                   float *dx) {
    max_grad_apply(g, arg, dy, dx);
}

static fedc_status check_argmax(const char *what, fedc_dtype dt, const fedc__pool_geom *g) {
    fedc_status st = check(what, dt, g);
    if (st) return st;
    if (dt != FEDC_F32) return fedc_error(FEDC_EINVAL, "%s: dtype %s, only f32 keeps an argmax", what, fedc_dtype_name(dt));
    if (g->kh * g->kw > 255)
        return fedc_error(FEDC_EINVAL, "%s: window of %lld elements, at most 255 for a kept argmax", what,
                          (long long)(g->kh * g->kw));
    return FEDC_OK;
}

fedc_status fedc__fast_max_pool2d_save(fedc_dtype dt, const fedc__pool_geom *g, const void *x, void *y,
                                      uint8_t *arg) {
    fedc_status st = check_argmax("max_pool2d_save", dt, g);
    if (!st) FEDC_FAST_PICK(max_pool_save)(g, x, y, arg);
    return st;
}

fedc_status fedc__fast_max_pool2d_grad_apply(fedc_dtype dt, const fedc__pool_geom *g, const uint8_t *arg,
                                            const void *dy, void *dx) {
    fedc_status st = check_argmax("max_pool2d_grad_apply", dt, g);
    if (!st) FEDC_FAST_PICK(max_grad_apply)(g, arg, dy, dx);
    return st;
}

/* ------------------------------------------- relu's derivative folded in -- */

/* dx = select(gt(x, s), max_pool2d_grad_apply(arg, dy), b): relu's derivative
 * (vjp_RELU: select(gt(y, 0), ct, 0)) on the pool's gradient. Where the windows
 * tile the image each element of dx is written once, from its window's dy and its
 * x, where the two kernels wrote the gradient, read it back with x and wrote dx
 * again (the EMNIST CNN's 2x2 pool: 2.9 MB a batch of 20, each way). Otherwise the
 * gradient, then the select in place. The same bits: the gradient's values, then
 * select_gt's masks. */

/* a where mask is all ones, b where it is zero, bit for bit (select_gt's blend). */
FEDC_FAST_INLINE float blend(float a, float b, uint32_t mask) {
    uint32_t ua, ub;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    ua = (ua & mask) | (ub & ~mask);
    memcpy(&a, &ua, sizeof a);
    return a;
}

/* One window of a tiling pool: each element of dx written once, as
 * grad_apply_pixel's store and then select_gt would. */
FEDC_FAST_INLINE void grad_select_pixel(const fedc__pool_geom *g, window w, const uint8_t *arg, const float *dy,
                                        const float *ximg, float s, float b, float *dximg) {
    uint32_t pos = 0;
    for (int64_t r = w.r0; r < w.r1; r++)
        for (int64_t q = w.c0; q < w.c1; q++, pos++) {
            int64_t at = (r * g->w + q) * g->c;
            float *restrict d = dximg + at;
            const float *xv = ximg + at;
            for (int64_t t = 0; t < g->c; t++)
                d[t] = blend(masked(0.0f + dy[t], 0u - (uint32_t)(arg[t] == pos)), b, 0u - (uint32_t)(xv[t] > s));
        }
}

FEDC_FAST_INLINE void max_grad_select(const fedc__pool_geom *g, const uint8_t *arg, const float *dy, const float *x,
                                      float s, float b, float *dx) {
    int64_t img_size = g->h * g->w * g->c;
    if (!tiles(g)) {
        max_grad_apply(g, arg, dy, dx);
        for (int64_t i = 0; i < g->n * img_size; i++) dx[i] = blend(dx[i], b, 0u - (uint32_t)(x[i] > s));
        return;
    }
    for (int64_t n = 0; n < g->n; n++)
        for (int64_t i = 0; i < g->oh; i++)
            for (int64_t j = 0; j < g->ow; j++, dy += g->c, arg += g->c)
                grad_select_pixel(g, window_of(g, i, j), arg, dy, x + n * img_size, s, b, dx + n * img_size);
}

static void max_grad_select_base(const fedc__pool_geom *g, const uint8_t *arg, const float *dy, const float *x,
                                 float s, float b, float *dx) {
    max_grad_select(g, arg, dy, x, s, b, dx);
}
FEDC_FAST_AVX2 static void max_grad_select_avx2(const fedc__pool_geom *g, const uint8_t *arg, const float *dy,
                                                const float *x, float s, float b, float *dx) {
    max_grad_select(g, arg, dy, x, s, b, dx);
}
FEDC_FAST_AVX512 static void max_grad_select_avx512(const fedc__pool_geom *g, const uint8_t *arg, const float *dy,
                                                    const float *x, float s, float b, float *dx) {
    max_grad_select(g, arg, dy, x, s, b, dx);
}

fedc_status fedc__fast_max_pool2d_grad_select_gt(fedc_dtype dt, const fedc__pool_geom *g, const uint8_t *arg,
                                                const void *dy, const void *x, const void *s, const void *b,
                                                void *dx) {
    fedc_status st = check_argmax("max_pool2d_grad_select_gt", dt, g);
    if (!st) FEDC_FAST_PICK(max_grad_select)(g, arg, dy, x, *(const float *)s, *(const float *)b, dx);
    return st;
}
