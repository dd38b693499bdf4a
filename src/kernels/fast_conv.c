/*
 * fast_conv.c — 2-D convolution and its two gradients as GEMMs over an im2col
 * buffer, in NHWC / HWIO layout. im2col lays out, for every output pixel, the
 * kh x kw x c input patch it reads as one row of cols [n*oh*ow, kh*kw*c]; that
 * row order matches the HWIO filter viewed as w [kh*kw*c, o], so
 *     forward      y  [n*oh*ow, o]      = cols @ w
 *     filter grad  dw [kh*kw*c, o]      = cols^T @ dy
 *     input grad   dcols [n*oh*ow, K]   = dy @ w^T, then col2im adds each row back
 *                                         into the pixels it was copied from.
 * Because NHWC keeps a pixel's channels contiguous and a patch row's kw pixels are
 * adjacent in memory, each (output pixel, filter row) pair is one contiguous copy.
 * The batch is processed in chunks of whole images so that cols stays bounded;
 * the chunk size is a function of the geometry alone, so conv2d_scratch and the
 * kernels agree on it and results do not depend on anything but the inputs.
 * A 1x1, stride-1, unpadded convolution is already a GEMM on x and needs no cols.
 *
 * On AVX-512 and AVX2 + FMA machines f32 convolutions read the image in place
 * instead (fast_conv_in_place.c); this file decides which path runs.
 */
#include <cblas.h>
#include <limits.h>
#include <string.h>

#include "kernels/fast.h"

/* Upper bound on one chunk's cols (at least one image is always taken). Small
 * enough to stay in a core's L2 for the GEMM that reads it right after im2col
 * writes it: on the EMNIST CNN's second layer (batch 20, 26x26x32 -> 24x24x64),
 * one image per chunk (GEMM M = 576) ran the three passes about 7% faster than
 * 4 MiB chunks, and a GEMM over the whole batch was slower still. */
#define COLS_CHUNK_BYTES ((size_t)1 << 20)

typedef struct conv_plan {
    size_t es;           /* element size */
    int64_t k;           /* kh * kw * c: the GEMM inner dimension of the forward pass */
    int64_t pix;         /* oh * ow: output pixels per image */
    int64_t chunk;       /* images per chunk */
    int direct;          /* 1x1, stride 1, unpadded: x is cols */
} conv_plan;

static int is_direct(const fedc__conv_geom *g) {
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pad_top == 0 &&
           g->pad_left == 0 && g->oh == g->h && g->ow == g->w;
}

static conv_plan make_plan(const fedc__conv_geom *g, fedc_dtype dt) {
    conv_plan p;
    p.es = dt == FEDC_F64 ? sizeof(double) : sizeof(float);
    p.k = g->kh * g->kw * g->c;
    p.pix = g->oh * g->ow;
    p.direct = is_direct(g);
    size_t per_image = (size_t)(p.pix * p.k) * p.es;
    p.chunk = g->n;
    if (per_image > 0 && g->n > 0) {
        int64_t fit = (int64_t)(COLS_CHUNK_BYTES / per_image);
        p.chunk = fit < 1 ? 1 : fit > g->n ? g->n : fit;
    }
    return p;
}

/* The reference's geometry checks, so both tables refuse the same inputs. */
static int geom_ok(const fedc__conv_geom *g) {
    return g->n >= 0 && g->h >= 0 && g->w >= 0 && g->c >= 0 && g->kh >= 0 && g->kw >= 0 &&
           g->o >= 0 && g->oh >= 0 && g->ow >= 0 && g->sh >= 1 && g->sw >= 1;
}

/* Bytes of one chunk's cols (none for a direct convolution); then, aligned, room
 * for one chunk's output, where conv2d_bias_relu keeps it when it pools. */
static size_t cols_bytes(const conv_plan *p) {
    return p->direct ? 0 : ((size_t)(p->chunk * p->pix * p->k) * p->es + 63) & ~(size_t)63;
}

/* Every GEMM below has dimensions bounded by one chunk (or, for the direct case,
 * the whole batch's pixels); CBLAS needs them to fit an int. */
static fedc_status check(const char *what, fedc_dtype dt, const fedc__conv_geom *g) {
    if (dt != FEDC_F32 && dt != FEDC_F64)
        return fedc_error(FEDC_EUNSUPPORTED, "%s (fast): dtype %s is not supported", what,
                          fedc_dtype_name(dt));
    if (!geom_ok(g))
        return fedc_error(FEDC_EINVAL, "%s (fast): bad geometry (a negative size or a stride < 1)",
                          what);
    conv_plan p = make_plan(g, dt);
    int64_t rows = (p.direct ? g->n : p.chunk) * p.pix;
    if (rows > INT_MAX || p.k > INT_MAX || g->o > INT_MAX)
        return fedc_error(FEDC_EUNSUPPORTED, "%s (fast): geometry exceeds BLAS's int range",
                          what);
    return FEDC_OK;
}

/* c [m,n] = beta * c + op(a) @ op(b), dense row-major operands. */
static void gemm(fedc_dtype dt, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *a,
                 const void *b, double beta, void *c) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
        if (beta == 0.0) memset(c, 0, (size_t)(m * n) * (dt == FEDC_F64 ? 8 : 4));
        return;
    }
    enum CBLAS_TRANSPOSE opa = ta ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE opb = tb ? CblasTrans : CblasNoTrans;
    int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n);
    if (dt == FEDC_F32)
        cblas_sgemm(CblasRowMajor, opa, opb, (int)m, (int)n, (int)k, 1.0f, a, lda, b, ldb,
                    (float)beta, c, (int)n);
    else
        cblas_dgemm(CblasRowMajor, opa, opb, (int)m, (int)n, (int)k, 1.0, a, lda, b, ldb, beta,
                    c, (int)n);
}

/* --------------------------------------------------------- im2col/col2im -- */

/* The filter columns [q0, q1) of a patch whose left edge is input column x0 fall
 * inside the image; the rest are padding. */
typedef struct tap_span {
    int64_t q0, q1;
} tap_span;

static tap_span span(int64_t x0, int64_t kw, int64_t w) {
    tap_span s = {x0 < 0 ? -x0 : 0, w - x0 < kw ? w - x0 : kw};
    if (s.q1 < s.q0) s.q1 = s.q0;
    if (s.q0 > kw) s.q0 = s.q1 = kw;
    return s;
}

/* memcpy for runs of a few elements, which first layers (one channel) are made
 * of: a call to the library's memcpy would cost more than the copy, while
 * fixed-size memcpys compile to plain moves. Runs of up to 32 bytes are copied
 * as two possibly overlapping fixed-size pieces. `bytes` is a multiple of 4. */
static void copy_run(char *dst, const char *src, size_t bytes) {
    if (bytes > 32) {
        memcpy(dst, src, bytes);
    } else if (bytes >= 16) {
        memcpy(dst, src, 16);
        memcpy(dst + bytes - 16, src + bytes - 16, 16);
    } else if (bytes >= 8) {
        memcpy(dst, src, 8);
        memcpy(dst + bytes - 8, src + bytes - 8, 8);
    } else if (bytes == 4) {
        memcpy(dst, src, 4);
    }
}

/* One cols row: the patch of output pixel (i, j) of `img` (one image, [h,w,c]).
 * Each filter row is a run of in-image taps between runs of padding. */
static void im2col_row(const fedc__conv_geom *g, size_t es, const char *img, int64_t i, int64_t j,
                       char *row) {
    size_t tap = (size_t)g->c * es, line = (size_t)g->kw * tap;
    tap_span s = span(j * g->sw - g->pad_left, g->kw, g->w);
    size_t lead = (size_t)s.q0 * tap, run = (size_t)(s.q1 - s.q0) * tap, tail = line - lead - run;
    for (int64_t p = 0; p < g->kh; p++, row += line) {
        int64_t r = i * g->sh - g->pad_top + p;
        if (r < 0 || r >= g->h || run == 0) {
            memset(row, 0, line);
            continue;
        }
        const char *src = img + (size_t)((r * g->w + j * g->sw - g->pad_left + s.q0) * g->c) * es;
        if (lead) memset(row, 0, lead);
        copy_run(row + lead, src, run);
        if (tail) memset(row + lead + run, 0, tail);
    }
}

/* cols [images*oh*ow, K] from `images` consecutive images starting at x. */
static void im2col(const fedc__conv_geom *g, size_t es, int64_t images, const void *x, void *cols) {
    size_t img_bytes = (size_t)(g->h * g->w * g->c) * es;
    size_t row_bytes = (size_t)(g->kh * g->kw * g->c) * es;
    char *row = cols;
    for (int64_t b = 0; b < images; b++) {
        const char *img = (const char *)x + (size_t)b * img_bytes;
        for (int64_t i = 0; i < g->oh; i++)
            for (int64_t j = 0; j < g->ow; j++, row += row_bytes) im2col_row(g, es, img, i, j, row);
    }
}

static void add_f32(int64_t n, float *restrict dst, const float *restrict src) {
    for (int64_t t = 0; t < n; t++) dst[t] += src[t];
}

static void add_f64(int64_t n, double *restrict dst, const double *restrict src) {
    for (int64_t t = 0; t < n; t++) dst[t] += src[t];
}

/* Adds one dcols row back into the pixels of image `img` that im2col_row read. */
static void col2im_row(const fedc__conv_geom *g, fedc_dtype dt, char *img, int64_t i, int64_t j,
                       const char *row) {
    size_t es = dt == FEDC_F64 ? sizeof(double) : sizeof(float);
    size_t line = (size_t)(g->kw * g->c) * es;
    tap_span s = span(j * g->sw - g->pad_left, g->kw, g->w);
    int64_t len = (s.q1 - s.q0) * g->c;
    for (int64_t p = 0; p < g->kh; p++, row += line) {
        int64_t r = i * g->sh - g->pad_top + p;
        if (r < 0 || r >= g->h || len == 0) continue;
        char *dst = img + (size_t)((r * g->w + j * g->sw - g->pad_left + s.q0) * g->c) * es;
        const char *src = row + (size_t)(s.q0 * g->c) * es;
        if (dt == FEDC_F32) add_f32(len, (float *)dst, (const float *)src);
        else add_f64(len, (double *)dst, (const double *)src);
    }
}

/* dx (already zero) += col2im(dcols) for `images` images starting at dx. The
 * order of additions is fixed, so overlapping patches sum deterministically. */
static void col2im(const fedc__conv_geom *g, fedc_dtype dt, int64_t images, const void *dcols,
                   void *dx) {
    size_t es = dt == FEDC_F64 ? sizeof(double) : sizeof(float);
    size_t img_bytes = (size_t)(g->h * g->w * g->c) * es;
    size_t row_bytes = (size_t)(g->kh * g->kw * g->c) * es;
    const char *row = dcols;
    for (int64_t b = 0; b < images; b++) {
        char *img = (char *)dx + (size_t)b * img_bytes;
        for (int64_t i = 0; i < g->oh; i++)
            for (int64_t j = 0; j < g->ow; j++, row += row_bytes) col2im_row(g, dt, img, i, j, row);
    }
}

size_t fedc__fast_conv2d_scratch(const fedc__conv_geom *g, fedc_dtype dt) {
    if ((dt != FEDC_F32 && dt != FEDC_F64) || !geom_ok(g)) return 0;
    conv_plan p = make_plan(g, dt);
    size_t bytes = cols_bytes(&p) + (size_t)(p.chunk * p.pix * g->o) * p.es;
    if (fedc__conv_in_place_ok(g, dt, 0) || fedc__conv_in_place_ok(g, dt, 1)) {
        size_t in_place = fedc__conv_in_place_scratch(g);
        if (in_place > bytes) bytes = in_place;
    }
    return bytes;
}

/* ---------------------------------------------------------------- passes -- */

/* The epilogue of conv2d_bias_relu on `rows` output pixels of o channels: the
 * bias add and the relu of the unfused ops, element by element in their order. */
#define EPILOGUE(T)                                                                            \
    static void epilogue_##T(int64_t rows, int64_t o, const T *bias, int relu, T *y) {         \
        for (int64_t r = 0; r < rows; r++, y += o) {                                           \
            for (int64_t c = 0; c < o; c++) y[c] = y[c] + bias[c];                             \
            if (relu)                                                                          \
                for (int64_t c = 0; c < o; c++) y[c] = y[c] > 0 ? y[c] : 0;                    \
        }                                                                                      \
    }
EPILOGUE(float)
EPILOGUE(double)

static void epilogue(fedc_dtype dt, int64_t rows, int64_t o, const void *bias, int relu, void *y) {
    if (!bias) return;
    if (dt == FEDC_F32) epilogue_float(rows, o, bias, relu, y);
    else epilogue_double(rows, o, bias, relu, y);
}

/* The epilogue on `images` images' conv output yc, then (with a pool) their
 * max-pool into pooled. */
static fedc_status finish(fedc_dtype dt, const fedc__conv_geom *g, int64_t images, const void *bias, int relu,
                          const fedc__pool_geom *pool, void *yc, void *pooled) {
    epilogue(dt, images * g->oh * g->ow, g->o, bias, relu, yc);
    if (!pool) return FEDC_OK;
    fedc__pool_geom pc = *pool;
    pc.n = images;
    return fedc__fast_max_pool2d(dt, &pc, yc, pooled);
}

/* conv2d, then (when bias is not NULL) the epilogue on each chunk's output right
 * after its GEMM wrote it; with a pool, that output goes to scratch and only its
 * max-pool to y. */
static fedc_status conv_forward(fedc_dtype dt, const fedc__conv_geom *g, const void *x, const void *w,
                                const void *bias, int relu, const fedc__pool_geom *pool, void *y, void *scratch) {
    fedc_status st = check("conv2d", dt, g);
    if (st) return st;
    fedc__kernels_init();
    conv_plan p = make_plan(g, dt);
    if (p.direct && !pool) {
        gemm(dt, 0, 0, g->n * p.pix, g->o, g->c, x, w, 0.0, y);
        epilogue(dt, g->n * p.pix, g->o, bias, relu, y);
        return FEDC_OK;
    }
    if (fedc__conv_in_place_ok(g, dt, 0)) return fedc__conv_forward_in_place(g, x, w, bias, relu, pool, y, scratch);
    size_t x_img = (size_t)(g->h * g->w * g->c) * p.es, y_img = (size_t)(p.pix * g->o) * p.es;
    size_t pooled_img = pool ? (size_t)(pool->oh * pool->ow * pool->c) * p.es : 0;
    char *out = pool ? (char *)scratch + cols_bytes(&p) : NULL;
    for (int64_t b = 0; !st && b < g->n; b += p.chunk) {
        int64_t cn = g->n - b < p.chunk ? g->n - b : p.chunk;
        const char *xc = (const char *)x + (size_t)b * x_img;
        char *yc = pool ? out : (char *)y + (size_t)b * y_img;
        if (!p.direct) im2col(g, p.es, cn, xc, scratch);
        gemm(dt, 0, 0, cn * p.pix, g->o, p.k, p.direct ? xc : scratch, w, 0.0, yc);
        st = finish(dt, g, cn, bias, relu, pool, yc, (char *)y + (size_t)b * pooled_img);
    }
    return st;
}

fedc_status fedc__fast_conv2d(fedc_dtype dt, const fedc__conv_geom *g, const void *x, const void *w,
                             void *y, void *scratch) {
    return conv_forward(dt, g, x, w, NULL, 0, NULL, y, scratch);
}

fedc_status fedc__fast_conv2d_bias_relu(fedc_dtype dt, const fedc__conv_geom *g, const void *x, const void *w,
                                      const void *bias, int relu, const fedc__pool_geom *pool, void *y,
                                      void *scratch) {
    if (!bias) return fedc_error(FEDC_EINVAL, "conv2d_bias_relu (fast): bias is NULL");
    if (pool && (pool->n != g->n || pool->h != g->oh || pool->w != g->ow || pool->c != g->o))
        return fedc_error(FEDC_EINVAL, "conv2d_bias_relu (fast): the pool's input [%lld,%lld,%lld,%lld] is not "
                          "the convolution's output [%lld,%lld,%lld,%lld]", (long long)pool->n, (long long)pool->h,
                          (long long)pool->w, (long long)pool->c, (long long)g->n, (long long)g->oh,
                          (long long)g->ow, (long long)g->o);
    return conv_forward(dt, g, x, w, bias, relu, pool, y, scratch);
}

fedc_status fedc__fast_conv2d_input_grad(fedc_dtype dt, const fedc__conv_geom *g, const void *dy,
                                        const void *w, void *dx, void *scratch) {
    fedc_status st = check("conv2d_input_grad", dt, g);
    if (st) return st;
    fedc__kernels_init();
    conv_plan p = make_plan(g, dt);
    if (p.direct) {
        gemm(dt, 0, 1, g->n * p.pix, g->c, g->o, dy, w, 0.0, dx);
        return FEDC_OK;
    }
    if (fedc__conv_in_place_ok(g, dt, 1)) {
        fedc__conv_input_grad_in_place(g, dy, w, dx, scratch);
        return FEDC_OK;
    }
    size_t x_img = (size_t)(g->h * g->w * g->c) * p.es, y_img = (size_t)(p.pix * g->o) * p.es;
    memset(dx, 0, (size_t)g->n * x_img);
    for (int64_t b = 0; b < g->n; b += p.chunk) {
        int64_t cn = g->n - b < p.chunk ? g->n - b : p.chunk;
        gemm(dt, 0, 1, cn * p.pix, p.k, g->o, (const char *)dy + (size_t)b * y_img, w, 0.0,
             scratch);
        col2im(g, dt, cn, scratch, (char *)dx + (size_t)b * x_img);
    }
    return FEDC_OK;
}

fedc_status fedc__fast_conv2d_filter_grad(fedc_dtype dt, const fedc__conv_geom *g, const void *x,
                                         const void *dy, void *dw, void *scratch) {
    fedc_status st = check("conv2d_filter_grad", dt, g);
    if (st) return st;
    fedc__kernels_init();
    conv_plan p = make_plan(g, dt);
    if (p.direct) {
        gemm(dt, 1, 0, g->c, g->o, g->n * p.pix, x, dy, 0.0, dw);
        return FEDC_OK;
    }
    if (fedc__conv_in_place_ok(g, dt, 0)) {
        fedc__conv_filter_grad_in_place(g, x, dy, dw, scratch);
        return FEDC_OK;
    }
    /* An empty batch still defines dw: zero. */
    if (g->n == 0) memset(dw, 0, (size_t)(p.k * g->o) * p.es);
    size_t x_img = (size_t)(g->h * g->w * g->c) * p.es, y_img = (size_t)(p.pix * g->o) * p.es;
    for (int64_t b = 0; b < g->n; b += p.chunk) {
        int64_t cn = g->n - b < p.chunk ? g->n - b : p.chunk;
        im2col(g, p.es, cn, (const char *)x + (size_t)b * x_img, scratch);
        gemm(dt, 1, 0, p.k, g->o, cn * p.pix, scratch, (const char *)dy + (size_t)b * y_img,
             b == 0 ? 0.0 : 1.0, dw);
    }
    return FEDC_OK;
}
