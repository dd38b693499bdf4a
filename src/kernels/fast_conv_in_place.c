/*
 * fast_conv_in_place.c — f32 convolutions that read the image in place, on
 * AVX-512 machines and AVX2 + FMA ones (fast_conv.c runs them instead of
 * im2col + BLAS). The rows
 * GEMM's gathered form (fedc__fast_gather_gemm) reads each patch where it lies in
 * the image through two offset tables, a pixel's corner and a tap's (kh, kw, c)
 * place from that corner:
 *     forward      rows = output pixels, depth = taps,   b = w  [taps, o]
 *     filter grad  rows = taps,          depth = pixels, b = dy [pixels, o]
 *     input grad   (stride 1) the forward pass over dy padded by the filter's
 *                  reach, with the filter flipped: w' [kh, kw, o, c]
 * im2col wrote and read K = kh kw c floats per output pixel to feed a GEMM that
 * then packed them again; on the EMNIST CNN's second layer that memory traffic
 * was a third of each pass. Each element is its initial value plus its products
 * in tap (or pixel) order, one FMA at a time, so the bits depend on the shapes
 * only.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels/fast.h"

/* The image the taps read: the source image itself, or a zero-padded copy when
 * the taps reach outside it. */
typedef struct frame {
    int64_t h, w, c;   /* the frame's size */
    int64_t top, left; /* where the source image [src_h, src_w, c] sits in it */
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
static frame x_frame(const fedc__conv_geom *g) {
    return make_frame(g->h, g->w, g->c, g->pad_top, g->pad_left, (g->oh - 1) * g->sh + g->kh,
                      (g->ow - 1) * g->sw + g->kw);
}

/* The input gradient's frame: dy with kh - 1 - pad_top rows above (and as many
 * as the filter reaches below), so that dx is a valid stride-1 convolution of it. */
static frame dy_frame(const fedc__conv_geom *g) {
    return make_frame(g->oh, g->ow, g->o, g->kh - 1 - g->pad_top, g->kw - 1 - g->pad_left, g->h + g->kh - 1,
                      g->w + g->kw - 1);
}

static int frame_fits(const frame *f) {
    return f->top >= 0 && f->left >= 0 && f->h * f->w * f->c < INT32_MAX;
}

/* Which passes run in place: f32 with the rows GEMM (AVX-512, or AVX2 + FMA),
 * offsets within int32; the input gradient only at stride 1 and when no output
 * pixel lies beyond the filter's reach of the image. On AVX2 machines the
 * second layer of the EMNIST CNN (depth 288) ran no faster in place until the
 * AVX2 loop was trimmed to 22 instructions a k step (fast_rows_gemm_avx2.c):
 * since then it runs in place there too, skipping im2col, OpenBLAS's packing
 * and beta pass, and col2im (docs/history/2026-12-02.md, profiles of workload 1). */
int fedc__conv_in_place_ok(const fedc__conv_geom *g, fedc_dtype dt, int input_grad) {
    int level = fedc__rows_gemm_level();
    if (!level || dt != FEDC_F32 || g->kh * g->kw * (g->c + g->o) >= INT32_MAX) return 0;
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

static size_t in_place_layout(const fedc__conv_geom *g, char *base, in_place_scratch *s) {
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
static void forward_image(const fedc__conv_geom *g, const frame *f, const in_place_scratch *s, const float *img,
                          const float *w, const float *bias, int relu, float *y) {
    fedc__fast_gather_gemm(&(fedc__gather_gemm){.rows = g->oh * g->ow, .cols = g->o, .depth = g->kh * g->kw * g->c,
                                              .a = frame_image(f, img, s->frame), .row_off = s->pixels,
                                              .k_off = s->taps, .w = w, .ldw = g->o, .c = y, .ldc = g->o,
                                              .bias = bias, .relu = bias && relu});
}

/* The tables of the forward and filter-gradient passes, and the frame's padding. */
static void in_place_tables(const fedc__conv_geom *g, const frame *f, const in_place_scratch *s) {
    pixel_table(s->pixels, g->oh, g->ow, g->sh, g->sw, f);
    tap_table(s->taps, g->kh, g->kw, f);
    frame_clear(f, s->frame);
}

/* dw [taps, o] = sum over images and pixels, in that order, of patch x dy. */
void fedc__conv_filter_grad_in_place(const fedc__conv_geom *g, const float *x, const float *dy, float *dw, void *scratch) {
    in_place_scratch s;
    in_place_layout(g, scratch, &s);
    frame f = x_frame(g);
    in_place_tables(g, &f, &s);
    int64_t taps = g->kh * g->kw * g->c, pix = g->oh * g->ow;
    if (g->n == 0) memset(dw, 0, (size_t)(taps * g->o) * sizeof(float));
    for (int64_t b = 0; b < g->n; b++) {
        const float *src = frame_image(&f, x + b * g->h * g->w * g->c, s.frame);
        fedc__fast_gather_gemm(&(fedc__gather_gemm){.rows = taps, .cols = g->o, .depth = pix, .a = src,
                                                  .row_off = s.taps, .k_off = s.pixels, .w = dy + b * pix * g->o,
                                                  .ldw = g->o, .c = dw, .ldc = g->o, .accumulate = b > 0});
    }
}

/* w'[p, q, o, c] = w[kh-1-p, kw-1-q, c, o]: the filter of the input gradient. */
static void flip_filter(const fedc__conv_geom *g, const float *w, float *flipped) {
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
static void reach_product(const fedc__conv_geom *g, const in_place_scratch *s, const float *src, const int32_t *row_off,
                          int64_t rows, float *c, int64_t ldc, int64_t p0, int64_t p1, int64_t q0, int64_t q1) {
    int64_t tap_row = g->kw * g->o;
    bool whole = q0 == 0 && q1 == g->kw;
    int64_t runs = whole || p1 <= p0 || q1 <= q0 ? 1 : p1 - p0;
    int64_t depth = p1 <= p0 || q1 <= q0 ? 0 : whole ? (p1 - p0) * tap_row : (q1 - q0) * g->o;
    for (int64_t i = 0; i < runs; i++) {
        int64_t first = (p0 + i) * tap_row + q0 * g->o;
        fedc__fast_gather_gemm(&(fedc__gather_gemm){.rows = rows, .cols = g->c, .depth = depth, .a = src,
                                                  .row_off = row_off, .k_off = s->taps + first,
                                                  .w = s->flipped + first * g->c, .ldw = g->c, .c = c, .ldc = ldc,
                                                  .accumulate = i > 0});
    }
}

/* dx over rows [a0, a1) x columns [b0, b1), all with the same reach: whole image
 * rows as one product; a wide band one image row at a time; a narrow one (the
 * edge columns) one column at a time, through a table of that column's pixels. */
static void input_grad_rect(const fedc__conv_geom *g, const in_place_scratch *s, const float *src, float *dx,
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
static void input_grad_image(const fedc__conv_geom *g, const frame *f, const in_place_scratch *s, const float *src,
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
void fedc__conv_input_grad_in_place(const fedc__conv_geom *g, const float *dy, const float *w, float *dx, void *scratch) {
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

fedc_status fedc__conv_forward_in_place(const fedc__conv_geom *g, const float *x, const float *w, const float *bias,
                                       int relu, const fedc__pool_geom *pool, float *y, void *scratch) {
    in_place_scratch s;
    in_place_layout(g, scratch, &s);
    frame f = x_frame(g);
    in_place_tables(g, &f, &s);
    int64_t y_img = g->oh * g->ow * g->o, pooled_img = pool ? pool->oh * pool->ow * pool->c : 0;
    fedc_status st = FEDC_OK;
    for (int64_t b = 0; !st && b < g->n; b++) {
        float *yc = pool ? s.out : y + b * y_img;
        forward_image(g, &f, &s, x + b * g->h * g->w * g->c, w, bias, relu, yc);
        if (!pool) continue;
        fedc__pool_geom one = *pool;
        one.n = 1;
        st = fedc__fast_max_pool2d(FEDC_F32, &one, yc, y + b * pooled_img);
    }
    return st;
}

size_t fedc__conv_in_place_scratch(const fedc__conv_geom *g) { return in_place_layout(g, NULL, NULL); }
