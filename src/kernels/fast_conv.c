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
 * On AVX-512 machines f32 convolutions skip cols altogether ("in place" below):
 * fedc_fast_gather_gemm reads each patch where it lies in the image through two
 * offset tables, a pixel's corner and a tap's (kh, kw, c) place from that corner:
 *     forward      rows = output pixels, depth = taps,   b = w  [taps, o]
 *     filter grad  rows = taps,          depth = pixels, b = dy [pixels, o]
 *     input grad   (stride 1) the forward pass over dy padded by the filter's
 *                  reach, with the filter flipped: w' [kh, kw, o, c]
 * im2col wrote and read K = kh kw c floats per output pixel to feed a GEMM that
 * then packed them again; on the EMNIST CNN's second layer that memory traffic
 * was a third of each pass.
 */
#include <cblas.h>
#include <stdbool.h>
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

static int is_direct(const fedc_conv_geom *g) {
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->pad_top == 0 &&
           g->pad_left == 0 && g->oh == g->h && g->ow == g->w;
}

static conv_plan make_plan(const fedc_conv_geom *g, fedc_dtype dt) {
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
static int geom_ok(const fedc_conv_geom *g) {
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
static fedc_status check(const char *what, fedc_dtype dt, const fedc_conv_geom *g) {
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
static void im2col_row(const fedc_conv_geom *g, size_t es, const char *img, int64_t i, int64_t j,
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
static void im2col(const fedc_conv_geom *g, size_t es, int64_t images, const void *x, void *cols) {
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
static void col2im_row(const fedc_conv_geom *g, fedc_dtype dt, char *img, int64_t i, int64_t j,
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
static void col2im(const fedc_conv_geom *g, fedc_dtype dt, int64_t images, const void *dcols,
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

/* -------------------------------------------------------------- in place -- */

/* The image the taps read: the source image itself, or a zero-padded copy when
 * the taps reach outside it. */
typedef struct frame {
    int64_t h, w, c;   /* the frame's size */
    int64_t top, left; /* where the source image [sh_, sw_, c] sits in it */
    int64_t src_h, src_w;
    int copy;
} frame;

static frame make_frame(int64_t src_h, int64_t src_w, int64_t c, int64_t top, int64_t left, int64_t h, int64_t w) {
    frame f = {h, w, c, top, left, src_h, src_w, 0};
    if (f.h < top + src_h) f.h = top + src_h;
    if (f.w < left + src_w) f.w = left + src_w;
    f.copy = top != 0 || left != 0 || f.h != src_h || f.w != src_w;
    return f;
}

/* The frame of the forward and filter-gradient passes: x as its padded taps see it. */
static frame x_frame(const fedc_conv_geom *g) {
    return make_frame(g->h, g->w, g->c, g->pad_top, g->pad_left, (g->oh - 1) * g->sh + g->kh,
                      (g->ow - 1) * g->sw + g->kw);
}

/* The input gradient's frame: dy with kh - 1 - pad_top rows above (and as many
 * as the filter reaches below), so that dx is a valid stride-1 convolution of it. */
static frame dy_frame(const fedc_conv_geom *g) {
    return make_frame(g->oh, g->ow, g->o, g->kh - 1 - g->pad_top, g->kw - 1 - g->pad_left, g->h + g->kh - 1,
                      g->w + g->kw - 1);
}

static int frame_fits(const frame *f) {
    return f->top >= 0 && f->left >= 0 && f->h * f->w * f->c < INT32_MAX;
}

/* Which passes run in place: f32 on AVX-512, not the 1x1 case (already a plain
 * GEMM), offsets within int32; the input gradient only at stride 1 and when no
 * output pixel lies beyond the filter's reach of the image. */
static int in_place_ok(const fedc_conv_geom *g, fedc_dtype dt, int input_grad) {
    static int avx512 = -1;
    if (avx512 < 0) avx512 = fedc_fast_gather_gemm(&(fedc_gather_gemm){0});
    if (!avx512 || dt != FEDC_F32 || is_direct(g) || g->kh * g->kw * (g->c + g->o) >= INT32_MAX) return 0;
    frame f = input_grad ? dy_frame(g) : x_frame(g);
    if (!input_grad) return frame_fits(&f);
    return g->sh == 1 && g->sw == 1 && frame_fits(&f) && f.h == g->h + g->kh - 1 && f.w == g->w + g->kw - 1;
}

/* Scratch of the in-place passes: one image's output (for the pool epilogue),
 * a frame, the flipped filter, the pixel and tap tables. */
typedef struct in_place_scratch {
    float *out, *frame, *flipped;
    int32_t *pixels, *taps, *column; /* column: one column of dx's pixels (input_grad_rect) */
} in_place_scratch;

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

static size_t in_place_layout(const fedc_conv_geom *g, char *base, in_place_scratch *s) {
    frame fx = x_frame(g), fd = dy_frame(g);
    int64_t frame_floats = fx.h * fx.w * fx.c > fd.h * fd.w * fd.c ? fx.h * fx.w * fx.c : fd.h * fd.w * fd.c;
    int64_t pixels = g->oh * g->ow > g->h * g->w ? g->oh * g->ow : g->h * g->w;
    int64_t taps = g->kh * g->kw * (g->c > g->o ? g->c : g->o);
    size_t sizes[6] = {align64((size_t)(g->oh * g->ow * g->o) * 4), align64((size_t)frame_floats * 4),
                       align64((size_t)(g->kh * g->kw * g->c * g->o) * 4), align64((size_t)pixels * 4),
                       align64((size_t)taps * 4), align64((size_t)g->h * 4)};
    char *at[7] = {base};
    for (int i = 0; i < 6; i++) at[i + 1] = at[i] + sizes[i];
    if (base)
        *s = (in_place_scratch){(float *)at[0], (float *)at[1], (float *)at[2], (int32_t *)at[3], (int32_t *)at[4],
                                (int32_t *)at[5]};
    return (size_t)(at[6] - at[0]);
}

/* table[i ow + j] = where output pixel (i, j)'s patch starts in a frame f. */
static void pixel_table(int32_t *table, int64_t oh, int64_t ow, int64_t sh, int64_t sw, const frame *f) {
    for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) *table++ = (int32_t)((i * sh * f->w + j * sw) * f->c);
}

/* table[(p kw + q) c + ch] = where tap (p, q, ch) lies from a patch's start. */
static void tap_table(int32_t *table, int64_t kh, int64_t kw, const frame *f) {
    for (int64_t p = 0; p < kh; p++)
        for (int64_t q = 0; q < kw; q++)
            for (int64_t ch = 0; ch < f->c; ch++) *table++ = (int32_t)((p * f->w + q) * f->c + ch);
}

/* The padding of a frame copied into buf: zero once per call, since each image
 * then only overwrites the interior. */
static void frame_clear(const frame *f, float *buf) {
    if (f->copy) memset(buf, 0, (size_t)(f->h * f->w * f->c) * sizeof(float));
}

/* The frame of one source image: the image itself, or its copy into buf (whose
 * padding frame_clear zeroed). */
static const float *frame_image(const frame *f, const float *img, float *buf) {
    if (!f->copy) return img;
    size_t line = (size_t)(f->src_w * f->c) * sizeof(float);
    for (int64_t r = 0; r < f->src_h; r++)
        memcpy(buf + ((f->top + r) * f->w + f->left) * f->c, img + r * f->src_w * f->c, line);
    return buf;
}

/* y [pix, o] of one image (then, when bias is not NULL, the epilogue): rows =
 * output pixels, depth = taps. */
static void forward_image(const fedc_conv_geom *g, const frame *f, const in_place_scratch *s, const float *img,
                          const float *w, const float *bias, int relu, float *y) {
    fedc_fast_gather_gemm(&(fedc_gather_gemm){.rows = g->oh * g->ow, .cols = g->o, .depth = g->kh * g->kw * g->c,
                                              .a = frame_image(f, img, s->frame), .row_off = s->pixels,
                                              .k_off = s->taps, .w = w, .ldw = g->o, .c = y, .ldc = g->o,
                                              .bias = bias, .relu = bias && relu});
}

/* The tables of the forward and filter-gradient passes, and the frame's padding. */
static void in_place_tables(const fedc_conv_geom *g, const frame *f, const in_place_scratch *s) {
    pixel_table(s->pixels, g->oh, g->ow, g->sh, g->sw, f);
    tap_table(s->taps, g->kh, g->kw, f);
    frame_clear(f, s->frame);
}

/* dw [taps, o] = sum over images and pixels, in that order, of patch x dy. */
static void filter_grad_in_place(const fedc_conv_geom *g, const float *x, const float *dy, float *dw, char *scratch) {
    in_place_scratch s;
    in_place_layout(g, scratch, &s);
    frame f = x_frame(g);
    in_place_tables(g, &f, &s);
    int64_t taps = g->kh * g->kw * g->c, pix = g->oh * g->ow;
    if (g->n == 0) memset(dw, 0, (size_t)(taps * g->o) * sizeof(float));
    for (int64_t b = 0; b < g->n; b++) {
        const float *src = frame_image(&f, x + b * g->h * g->w * g->c, s.frame);
        fedc_fast_gather_gemm(&(fedc_gather_gemm){.rows = taps, .cols = g->o, .depth = pix, .a = src,
                                                  .row_off = s.taps, .k_off = s.pixels, .w = dy + b * pix * g->o,
                                                  .ldw = g->o, .c = dw, .ldc = g->o, .accumulate = b > 0});
    }
}

/* w'[p, q, o, c] = w[kh-1-p, kw-1-q, c, o]: the filter of the input gradient. */
static void flip_filter(const fedc_conv_geom *g, const float *w, float *flipped) {
    for (int64_t p = 0; p < g->kh; p++)
        for (int64_t q = 0; q < g->kw; q++) {
            const float *from = w + ((g->kh - 1 - p) * g->kw + (g->kw - 1 - q)) * g->c * g->o;
            float *to = flipped + (p * g->kw + q) * g->o * g->c;
            for (int64_t ch = 0; ch < g->c; ch++)
                for (int64_t o = 0; o < g->o; o++) to[o * g->c + ch] = from[ch * g->o + o];
        }
}

/* The filter taps [lo, hi) along one axis that reach dy from position a of dx
 * along it (dy's `len` positions start `pad` into the frame): the others only
 * read the frame's zero padding. Returns the end of the run of positions from a
 * on with the same reach (n: dx's extent). */
static int64_t reach(int64_t pad, int64_t len, int64_t k, int64_t n, int64_t a, int64_t *lo, int64_t *hi) {
    int64_t end = a;
    for (; end < n; end++) {
        int64_t l = pad - end > 0 ? pad - end : 0, h = pad + len - end < k ? pad + len - end : k;
        if (h < l) h = l;
        if (end > a && (l != *lo || h != *hi)) break;
        *lo = l, *hi = h;
    }
    return end;
}

/* dx's rows of the product (`rows` pixels at row_off, c rows ldc apart) over the
 * taps of filter rows [p0, p1) and columns [q0, q1): with every filter column,
 * those taps are one run of the tap table; otherwise one run per filter row,
 * summed in order. Either way each element adds its taps in (p, q, o) order, the
 * padding's zeros left out. */
static void reach_product(const fedc_conv_geom *g, const in_place_scratch *s, const float *src, const int32_t *row_off,
                          int64_t rows, float *c, int64_t ldc, int64_t p0, int64_t p1, int64_t q0, int64_t q1) {
    int64_t tap_row = g->kw * g->o;
    bool whole = q0 == 0 && q1 == g->kw;
    int64_t runs = whole || p1 <= p0 || q1 <= q0 ? 1 : p1 - p0;
    int64_t depth = p1 <= p0 || q1 <= q0 ? 0 : whole ? (p1 - p0) * tap_row : (q1 - q0) * g->o;
    for (int64_t i = 0; i < runs; i++) {
        int64_t first = (p0 + i) * tap_row + q0 * g->o;
        fedc_fast_gather_gemm(&(fedc_gather_gemm){.rows = rows, .cols = g->c, .depth = depth, .a = src,
                                                  .row_off = row_off, .k_off = s->taps + first,
                                                  .w = s->flipped + first * g->c, .ldw = g->c, .c = c, .ldc = ldc,
                                                  .accumulate = i > 0});
    }
}

/* dx over rows [a0, a1) x columns [b0, b1), all with the same reach: whole image
 * rows as one product; a wide band one image row at a time; a narrow one (the
 * edge columns) one column at a time, through a table of that column's pixels. */
static void input_grad_rect(const fedc_conv_geom *g, const in_place_scratch *s, const float *src, float *dx,
                            const int64_t rect[4], const int64_t reach_rows[2], const int64_t reach_cols[2]) {
    int64_t a0 = rect[0], a1 = rect[1], b0 = rect[2], b1 = rect[3], W = g->w, C = g->c;
    int64_t p0 = reach_rows[0], p1 = reach_rows[1], q0 = reach_cols[0], q1 = reach_cols[1];
    if (b0 == 0 && b1 == W) {
        reach_product(g, s, src, s->pixels + a0 * W, (a1 - a0) * W, dx + a0 * W * C, C, p0, p1, q0, q1);
    } else if (b1 - b0 >= 8) {
        for (int64_t a = a0; a < a1; a++)
            reach_product(g, s, src, s->pixels + a * W + b0, b1 - b0, dx + (a * W + b0) * C, C, p0, p1, q0, q1);
    } else {
        for (int64_t b = b0; b < b1; b++) {
            for (int64_t a = a0; a < a1; a++) s->column[a - a0] = s->pixels[a * W + b];
            reach_product(g, s, src, s->column, a1 - a0, dx + (a0 * W + b) * C, W * C, p0, p1, q0, q1);
        }
    }
}

/* dx of one image from its dy frame, by rectangles of pixels whose filter taps
 * reach dy alike: the interior with every tap, the rows and columns near the
 * edges with only the taps that reach dy. Products over the padding would add
 * zeros: on the EMNIST CNN's second layer, 24% of the work. */
static void input_grad_image(const fedc_conv_geom *g, const frame *f, const in_place_scratch *s, const float *src,
                             float *dx) {
    int64_t rows[2] = {0, 0}, cols[2] = {0, 0};
    for (int64_t a0 = 0, a1; a0 < g->h; a0 = a1) {
        a1 = reach(f->top, g->oh, g->kh, g->h, a0, &rows[0], &rows[1]);
        for (int64_t b0 = 0, b1; b0 < g->w; b0 = b1) {
            b1 = reach(f->left, g->ow, g->kw, g->w, b0, &cols[0], &cols[1]);
            input_grad_rect(g, s, src, dx, (int64_t[]){a0, a1, b0, b1}, rows, cols);
        }
    }
}

/* dx = the stride-1 valid convolution of the padded dy with the flipped filter. */
static void input_grad_in_place(const fedc_conv_geom *g, const float *dy, const float *w, float *dx, char *scratch) {
    in_place_scratch s;
    in_place_layout(g, scratch, &s);
    frame f = dy_frame(g);
    pixel_table(s.pixels, g->h, g->w, 1, 1, &f);
    tap_table(s.taps, g->kh, g->kw, &f);
    frame_clear(&f, s.frame);
    flip_filter(g, w, s.flipped);
    int64_t pix = g->oh * g->ow, in_pix = g->h * g->w;
    for (int64_t b = 0; b < g->n; b++)
        input_grad_image(g, &f, &s, frame_image(&f, dy + b * pix * g->o, s.frame), dx + b * in_pix * g->c);
}

size_t fedc_fast_conv2d_scratch(const fedc_conv_geom *g, fedc_dtype dt) {
    if ((dt != FEDC_F32 && dt != FEDC_F64) || !geom_ok(g)) return 0;
    conv_plan p = make_plan(g, dt);
    size_t bytes = cols_bytes(&p) + (size_t)(p.chunk * p.pix * g->o) * p.es;
    if (in_place_ok(g, dt, 0) || in_place_ok(g, dt, 1)) {
        size_t in_place = in_place_layout(g, NULL, NULL);
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
static fedc_status finish(fedc_dtype dt, const fedc_conv_geom *g, int64_t images, const void *bias, int relu,
                          const fedc_pool_geom *pool, void *yc, void *pooled) {
    epilogue(dt, images * g->oh * g->ow, g->o, bias, relu, yc);
    if (!pool) return FEDC_OK;
    fedc_pool_geom pc = *pool;
    pc.n = images;
    return fedc_fast_max_pool2d(dt, &pc, yc, pooled);
}

/* conv_forward in place, one image at a time. */
static fedc_status forward_in_place(const fedc_conv_geom *g, const float *x, const float *w, const float *bias,
                                    int relu, const fedc_pool_geom *pool, float *y, char *scratch) {
    in_place_scratch s;
    in_place_layout(g, scratch, &s);
    frame f = x_frame(g);
    in_place_tables(g, &f, &s);
    int64_t y_img = g->oh * g->ow * g->o, pooled_img = pool ? pool->oh * pool->ow * pool->c : 0;
    fedc_status st = FEDC_OK;
    for (int64_t b = 0; !st && b < g->n; b++) {
        float *yc = pool ? s.out : y + b * y_img;
        forward_image(g, &f, &s, x + b * g->h * g->w * g->c, w, bias, relu, yc);
        st = finish(FEDC_F32, g, 1, NULL, 0, pool, yc, y + b * pooled_img);
    }
    return st;
}

/* conv2d, then (when bias is not NULL) the epilogue on each chunk's output right
 * after its GEMM wrote it; with a pool, that output goes to scratch and only its
 * max-pool to y. */
static fedc_status conv_forward(fedc_dtype dt, const fedc_conv_geom *g, const void *x, const void *w,
                                const void *bias, int relu, const fedc_pool_geom *pool, void *y, void *scratch) {
    fedc_status st = check("conv2d", dt, g);
    if (st) return st;
    fedc_kernels_init();
    conv_plan p = make_plan(g, dt);
    if (p.direct && !pool) {
        gemm(dt, 0, 0, g->n * p.pix, g->o, g->c, x, w, 0.0, y);
        epilogue(dt, g->n * p.pix, g->o, bias, relu, y);
        return FEDC_OK;
    }
    if (in_place_ok(g, dt, 0)) return forward_in_place(g, x, w, bias, relu, pool, y, scratch);
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

fedc_status fedc_fast_conv2d(fedc_dtype dt, const fedc_conv_geom *g, const void *x, const void *w,
                             void *y, void *scratch) {
    return conv_forward(dt, g, x, w, NULL, 0, NULL, y, scratch);
}

fedc_status fedc_fast_conv2d_bias_relu(fedc_dtype dt, const fedc_conv_geom *g, const void *x, const void *w,
                                      const void *bias, int relu, const fedc_pool_geom *pool, void *y,
                                      void *scratch) {
    if (!bias) return fedc_error(FEDC_EINVAL, "conv2d_bias_relu (fast): bias is NULL");
    if (pool && (pool->n != g->n || pool->h != g->oh || pool->w != g->ow || pool->c != g->o))
        return fedc_error(FEDC_EINVAL, "conv2d_bias_relu (fast): the pool's input [%lld,%lld,%lld,%lld] is not "
                          "the convolution's output [%lld,%lld,%lld,%lld]", (long long)pool->n, (long long)pool->h,
                          (long long)pool->w, (long long)pool->c, (long long)g->n, (long long)g->oh,
                          (long long)g->ow, (long long)g->o);
    return conv_forward(dt, g, x, w, bias, relu, pool, y, scratch);
}

fedc_status fedc_fast_conv2d_input_grad(fedc_dtype dt, const fedc_conv_geom *g, const void *dy,
                                        const void *w, void *dx, void *scratch) {
    fedc_status st = check("conv2d_input_grad", dt, g);
    if (st) return st;
    fedc_kernels_init();
    conv_plan p = make_plan(g, dt);
    if (p.direct) {
        gemm(dt, 0, 1, g->n * p.pix, g->c, g->o, dy, w, 0.0, dx);
        return FEDC_OK;
    }
    if (in_place_ok(g, dt, 1)) {
        input_grad_in_place(g, dy, w, dx, scratch);
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

fedc_status fedc_fast_conv2d_filter_grad(fedc_dtype dt, const fedc_conv_geom *g, const void *x,
                                         const void *dy, void *dw, void *scratch) {
    fedc_status st = check("conv2d_filter_grad", dt, g);
    if (st) return st;
    fedc_kernels_init();
    conv_plan p = make_plan(g, dt);
    if (p.direct) {
        gemm(dt, 1, 0, g->c, g->o, g->n * p.pix, x, dy, 0.0, dw);
        return FEDC_OK;
    }
    if (in_place_ok(g, dt, 0)) {
        filter_grad_in_place(g, x, dy, dw, scratch);
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
