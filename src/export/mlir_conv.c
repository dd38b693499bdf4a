/* Convolutions and pools in fedc's layouts (images NHWC, filters HWIO), with
 * explicit pads [top, bottom, left, right] and strides [h, w]:
 *  - conv2d and its filter gradient read a padded copy of the image through an
 *    affine map (row oh * sh + kh), so they are one linalg.generic each (sharded,
 *    they read the image itself by tensor.extract, as the pools do);
 *  - the input gradient and the pools' gradients go the other way: each input
 *    position sums the output positions whose windows hold it, found in the body
 *    (oh = (ih + pt - kh) / sh when that divides and lands inside);
 *  - max pooling never picks a padded position (the copy is padded with -inf),
 *    its gradient goes to the first maximum of each window in row-major order,
 *    and average pooling divides by the window's positions inside the image. */
#include <math.h>
#include <string.h>

#include "export/mlir_lower.h"

typedef struct geom {
    int64_t n, h, w, c;    /* the image [n, h, w, c] */
    int64_t kh, kw;        /* the window */
    int64_t sh, sw, pt, pb, pl, pr;
    int64_t oh, ow;        /* the output's rows and columns */
    bool batched;
} geom;

static geom geometry(const lower *l, const fedc_type *x, int64_t kh, int64_t kw, const fedc_type *y) {
    int count;
    const int64_t *s = fedc__attr_ints(l->n, FEDC_ATTR_STRIDES, &count), *p = fedc__attr_ints(l->n, FEDC_ATTR_PADS, &count);
    geom g = {x->dims[0], x->dims[1], x->dims[2], x->dims[3], kh, kw, s[0], s[1], p[0], p[1], p[2], p[3],
              y->dims[1], y->dims[2], clients(l, l->v)};
    return g;
}

static void window(const lower *l, int64_t *kh, int64_t *kw) {
    int count;
    const int64_t *w = fedc__attr_ints(l->n, FEDC_ATTR_WINDOW, &count);
    *kh = w[0], *kw = w[1];
}

/* ------------------------------------------------------- index arithmetic -- */

static const char *idx_const(const lower *l, int64_t v, char *out) {
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.constant %lld : index\n", out, (long long)v);
    return out;
}
static const char *idx_op(const lower *l, const char *op, const char *a, const char *b, char *out) {
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.%s %s, %s : index\n", out, op, a, b);
    return out;
}
static const char *idx_cmp(const lower *l, const char *pred, const char *a, const char *b, char *out) {
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi %s, %s, %s : index\n", out, pred, a, b);
    return out;
}
static const char *both(const lower *l, const char *a, const char *b, char *out) { return emit2(l, "arith.andi", a, b, "i1", out); }

/* The output row (or column) o whose window holds input position i at tap k:
 * o = (i + pad - k) / stride when that divides and 0 <= o < outs. `ok` says
 * whether it does; o is clamped into range either way, so it can be read. */
static const char *source_of(const lower *l, const char *i, const char *k, int64_t pad, int64_t stride, int64_t outs,
                             char *ok, char *o) {
    char p[24], u[24], t[24], zero[24], ge[24], s[24], safe[24], rem[24], z[24], div[24], n[24], lt[24], a[24], top[24];
    idx_op(l, "subi", idx_op(l, "addi", i, idx_const(l, pad, p), u), k, t);
    idx_cmp(l, "sge", t, idx_const(l, 0, zero), ge);
    fedc__mlir_tmp(l->m, safe);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : index\n", safe, ge, t, zero);
    idx_const(l, stride, s);
    idx_op(l, "remui", safe, s, rem);
    idx_cmp(l, "eq", rem, idx_const(l, 0, z), a);
    idx_op(l, "divui", safe, s, div);
    idx_cmp(l, "slt", div, idx_const(l, outs, n), lt);
    both(l, both(l, ge, a, rem), lt, ok);
    idx_op(l, "minui", div, idx_const(l, outs - 1, top), o);
    return o;
}

/* ----------------------------------------------------------- padded copy -- */

/* x in a copy of shape [n, h + pt + pb, w + pl + pr, c] filled with `fill`
 * (0, or -inf for max pooling); its name in `out`, its type in `type`. */
static void padded(const lower *l, fedc_value x, const geom *g, double fill, char *out, char *type) {
    fedc_type t = *type_of(l, x);
    t.dims[1] += g->pt + g->pb, t.dims[2] += g->pl + g->pr;
    char lit[32], base[24], xt[160], lead[16] = "";
    if (g->batched) snprintf(lead, sizeof lead, "%d, ", l->m->clients);
    const char *zero = g->batched ? "0, " : "", *one = g->batched ? "1, " : "";
    fedc__mlir_tensor(l->m, &t, g->batched, type, 160);
    fedc__mlir_tensor_const(l->m, base, fedc__mlir_literal(t.dtype, fill, lit, sizeof lit), type);
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "    %s = tensor.insert_slice %s into %s[%s0, %lld, %lld, 0] [%s%lld, %lld, %lld, %lld] "
                      "[%s1, 1, 1, 1] : %s into %s\n", out, name(l, x), base, zero, (long long)g->pt, (long long)g->pl,
                      lead, (long long)g->n, (long long)g->h, (long long)g->w, (long long)g->c, one,
                      fedc__mlir_type_of(l->m, l->s, x, xt, sizeof xt), type);
}

/* "d<first>, d<first+1>, ..." for `count` loops after the clients loop. */
static void loops_from(char *buf, size_t size, bool c, int first, int count) {
    buf[0] = 0;
    if (c) add_loop(buf, size, 0);
    for (int i = 0; i < count; i++) add_loop(buf, size, c + first + i);
}

/* The padded image read at row oh * sh + kh, column ow * sw + kw. */
static void window_map(char *buf, size_t size, const geom *g, int n, int oh, int ow, int kh, int kw, int ch) {
    int c = g->batched;
    snprintf(buf, size, "%sd%d, d%d * %lld + d%d, d%d * %lld + d%d, d%d", c ? "d0, " : "", c + n, c + oh,
             (long long)g->sh, c + kh, c + ow, (long long)g->sw, c + kw, c + ch);
}

/* The padded image as a generic reads it at window position (n, oh sh + kh,
 * ow sw + kw, ch) of its loops (counted after the clients loop): the generic's
 * first input, the padded copy read through window_map; or, sharded, x read by
 * tensor.extract in the body, `fill` outside it, since LLVM 19's linalg
 * sharding interface takes only maps that are projected permutations (not
 * oh * sh + kh), and no tensor.insert_slice for the padded copy. */
typedef struct image {
    fedc_value x;
    const geom *g;
    double fill;
    int n, oh, ow, kh, kw, ch;
    char xp[24], type[160], map[160];
} image;

/* In the body: the image's element at this iteration (of x's dtype). */
static const char *image_value(const lower *l, const fedc__mlir_generic *gen, const image *im, char *out) {
    if (!l->m->hoisted) return snprintf(out, 24, "%%in0"), out;
    const geom *g = im->g;
    int c = g->batched;
    char idx[10][24], at[5][24], ok[24] = "", pos[2][24], s[24], a[24], v[24], fill[24];
    fedc__mlir_loop_indices(l, gen->rank, idx);
    const int pos_loop[2] = {im->oh, im->ow}, tap_loop[2] = {im->kh, im->kw};
    const int64_t stride[2] = {g->sh, g->sw}, pad[2] = {g->pt, g->pl}, size[2] = {g->h, g->w};
    for (int d = 0; d < 2; d++) {
        fedc__mlir_tmp(l->m, s);
        fedc__mlir_printf(l->m, "      %s = arith.constant %lld : index\n", s, (long long)stride[d]);
        emit2(l, "arith.addi", emit2(l, "arith.muli", idx[c + pos_loop[d]], s, "index", a), idx[c + tap_loop[d]], "index",
              pos[d]);
    }
    int k = 0;
    if (c) snprintf(at[k++], 24, "%s", idx[0]);
    snprintf(at[k++], 24, "%s", idx[c + im->n]);
    for (int d = 0; d < 2; d++) fedc__mlir_place_index(l, pos[d], pad[d], size[d], ok, at[k++]);
    snprintf(at[k++], 24, "%s", idx[c + im->ch]);
    char xt[160];
    fedc__mlir_extract(l, name(l, im->x), fedc__mlir_type_of(l->m, l->s, im->x, xt, sizeof xt), at, k,
                       fedc__mlir_tmp(l->m, v));
    constant(l, im->fill, type_of(l, im->x)->dtype, fill);
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", out, ok, v, fill,
                      fedc__mlir_elem(type_of(l, im->x)->dtype));
    return out;
}

/* A splat of `value` of type t (clients axis when c), named `out`. */
static const char *splat(const lower *l, const fedc_type *t, bool c, double value, char *type, char *out) {
    char lit[32];
    fedc__mlir_tensor(l->m, t, c, type, 160);
    fedc__mlir_tensor_const(l->m, out, fedc__mlir_literal(t->dtype, value, lit, sizeof lit), type);
    return out;
}

/* The generic's head for loops over t's shape (with the clients loop, as v has
 * it) and then `reductions` more loops, starting from a splat of init_value;
 * writes `result`. */
static void conv_generic(const lower *l, fedc__mlir_generic *g, const fedc_type *t, int reductions, char *iters,
                         char *out_map, char *out_type, char *init, double init_value, const char *result) {
    bool c = clients(l, l->v);
    int loops = c + t->rank + reductions;
    for (int i = 0; i < loops; i++) iters[i] = i < c + t->rank ? 'p' : 'r';
    iters[loops] = 0;
    loops_from(out_map, 160, c, 0, t->rank);
    splat(l, t, c, init_value, out_type, init);
    *g = (fedc__mlir_generic){.rank = loops, .iters = iters, .out_map = out_map, .out_type = out_type,
                              .out_elem = fedc__mlir_elem(t->dtype), .init = init, .result_name = result};
}

static void add_input(fedc__mlir_generic *g, const char *nm, const char *type, const char *elem, const char *map) {
    g->in[g->nin] = nm, g->in_type[g->nin] = type, g->in_elem[g->nin] = elem, g->maps[g->nin] = map;
    g->nin++;
}

/* A window-shaped operand [kh, kw] read at loops (kh, kw), added last: linalg
 * finds each loop's range from an operand that indexes by it alone, and a window's
 * loops otherwise appear only in sums like oh * sh + kh (as linalg's own pooling
 * ops take a window operand). The body never reads it. */
static void add_window(const lower *l, fedc__mlir_generic *gen, const geom *g, int kh, int kw, char *name_out,
                       char *type_out, char *map_out) {
    fedc_type t = fedc_type_make(FEDC_F32, 2, (int64_t[]){g->kh, g->kw});
    splat(l, &t, false, 0, type_out, name_out);
    snprintf(map_out, 160, "d%d, d%d", g->batched + kh, g->batched + kw);
    add_input(gen, name_out, type_out, "f32", map_out);
}

/* Before the generic's head: the padded copy (none when sharded). */
static void image_copy(const lower *l, image *im) {
    if (l->m->hoisted) return; /* read in the body */
    padded(l, im->x, im->g, im->fill, im->xp, im->type);
    window_map(im->map, sizeof im->map, im->g, im->n, im->oh, im->ow, im->kh, im->kw, im->ch);
}

/* The copy as the generic's first input. */
static void image_operand(const lower *l, fedc__mlir_generic *gen, const image *im) {
    if (!l->m->hoisted) add_input(gen, im->xp, im->type, fedc__mlir_elem(type_of(l, im->x)->dtype), im->map);
}

/* The body's name of input k after the image (%in<k+1>; sharded, %in<k>). */
static const char *after_image(const lower *l, int k, char *out) {
    snprintf(out, 24, "%%in%d", k + !l->m->hoisted);
    return out;
}

/* out += image * (the input after it) in the body. */
static void multiply_add(const lower *l, const fedc__mlir_generic *g, const image *im) {
    char p[24], r[24], x[24], other[24];
    image_value(l, g, im, x);
    emit2(l, "arith.addf", "%out", emit2(l, "arith.mulf", x, after_image(l, 0, other), g->out_elem, p), g->out_elem, r);
    fedc__mlir_generic_end(l->m, g, r);
}

/* v = the sum over the last 3 loops of the image times `other`, read at loops
 * (4, 5, 6, 3) after the clients loop (and through it when other_clients):
 * conv2d's w[kh, kw, ci, co] and its filter gradient's dy[n, oh, ow, co]. */
static fedc_status image_times(const lower *l, image *im, fedc_value other, bool other_clients) {
    char type[160], map[160], iters[16], out_map[160], out_type[160], init[24];
    fedc__mlir_generic gen;
    int b = im->g->batched;
    image_copy(l, im);
    conv_generic(l, &gen, type_of(l, l->v), 3, iters, out_map, out_type, init, 0, name(l, l->v));
    image_operand(l, &gen, im);
    snprintf(map, sizeof map, "%sd%d, d%d, d%d, d%d", other_clients ? "d0, " : "", b + 4, b + 5, b + 6, b + 3);
    add_input(&gen, name(l, other), fedc__mlir_type_of(l->m, l->s, other, type, sizeof type), gen.out_elem, map);
    fedc__mlir_generic_begin(l->m, &gen);
    multiply_add(l, &gen, im);
    return l->m->st;
}

/* y[n, oh, ow, co] = sum_{kh, kw, ci} xpad[n, oh sh + kh, ow sw + kw, ci] w[kh, kw, ci, co]. */
fedc_status fedc__lower_conv2d(const lower *l) {
    fedc_value x = l->n->in[0], w = l->n->in[1];
    const fedc_type *wt = type_of(l, w);
    geom g = geometry(l, type_of(l, x), wt->dims[0], wt->dims[1], type_of(l, l->v));
    image im = {.x = x, .g = &g, .fill = 0, .n = 0, .oh = 1, .ow = 2, .kh = 4, .kw = 5, .ch = 6}; /* n oh ow co | kh kw ci */
    return image_times(l, &im, w, clients(l, w));
}

/* dw[kh, kw, ci, co] = sum_{n, oh, ow} xpad[n, oh sh + kh, ow sw + kw, ci] dy[n, oh, ow, co]. */
fedc_status fedc__lower_conv2d_filter_grad(const lower *l) {
    fedc_value x = l->n->in[0], dy = l->n->in[1];
    const fedc_type *t = type_of(l, l->v);
    geom g = geometry(l, type_of(l, x), t->dims[0], t->dims[1], type_of(l, dy));
    image im = {.x = x, .g = &g, .fill = 0, .n = 4, .oh = 5, .ow = 6, .kh = 0, .kw = 1, .ch = 2}; /* kh kw ci co | n oh ow */
    return image_times(l, &im, dy, g.batched);
}

/* Reads y[c?, n, oh, ow, ch] where `ok`, else 0 (of dtype elem), in the body. */
static const char *read_output(const lower *l, fedc_value y, char idx[][24], const char *oh, const char *ow, int ch,
                               const char *ok, const char *elem, char *out) {
    char at[6][24], type[160], v[24], zero[24];
    int n = 0, c = clients(l, l->v);
    if (c) snprintf(at[n++], 24, "%s", idx[0]);
    snprintf(at[n++], 24, "%s", idx[c]);
    snprintf(at[n++], 24, "%s", oh), snprintf(at[n++], 24, "%s", ow);
    snprintf(at[n++], 24, "%s", idx[c + ch]);
    fedc__mlir_extract(l, name(l, y), fedc__mlir_type_of(l->m, l->s, y, type, sizeof type), at, n, fedc__mlir_tmp(l->m, v));
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", out, ok, v,
                      constant(l, 0, fedc_dtype_is_float(type_of(l, y)->dtype) ? type_of(l, y)->dtype : FEDC_I32, zero),
                      elem);
    return out;
}

/* The output position (oh, ow) whose window holds this input position at tap
 * (kh, kw) of the loop nest n ih iw ch kh kw (or ... | kh kw co). */
static void window_source(const lower *l, const geom *g, char idx[][24], int kh, int kw, char *ok, char *oh, char *ow) {
    int c = g->batched;
    char okh[24], okw[24];
    source_of(l, idx[c + 1], idx[c + kh], g->pt, g->sh, g->oh, okh, oh);
    source_of(l, idx[c + 2], idx[c + kw], g->pl, g->sw, g->ow, okw, ow);
    both(l, okh, okw, ok);
}

/* dx[n, ih, iw, ci] = sum_{kh, kw, co} dy[n, oh, ow, co] w[kh, kw, ci, co] over the
 * (oh, ow) whose windows hold (ih, iw) at (kh, kw). */
fedc_status fedc__lower_conv2d_input_grad(const lower *l) {
    fedc_value dy = l->n->in[0], w = l->n->in[1];
    const fedc_type *wt = type_of(l, w);
    geom g = geometry(l, type_of(l, l->v), wt->dims[0], wt->dims[1], type_of(l, dy));
    char wtype[160], wmap[160], iters[16], out_map[160], out_type[160], init[24], idx[10][24], ok[24], oh[24], ow[24], v[24];
    fedc__mlir_generic gen;
    conv_generic(l, &gen, type_of(l, l->v), 3, iters, out_map, out_type, init, 0, name(l, l->v)); /* n ih iw ci | kh kw co */
    snprintf(wmap, sizeof wmap, "%sd%d, d%d, d%d, d%d", clients(l, w) ? "d0, " : "", g.batched + 4, g.batched + 5,
             g.batched + 3, g.batched + 6);
    add_input(&gen, name(l, w), fedc__mlir_type_of(l->m, l->s, w, wtype, sizeof wtype), gen.out_elem, wmap);
    fedc__mlir_generic_begin(l->m, &gen);
    fedc__mlir_loop_indices(l, gen.rank, idx);
    window_source(l, &g, idx, 4, 5, ok, oh, ow);
    read_output(l, dy, idx, oh, ow, 6, ok, gen.out_elem, v);
    char p[24], r[24];
    emit2(l, "arith.addf", "%out", emit2(l, "arith.mulf", v, "%in0", gen.out_elem, p), gen.out_elem, r);
    fedc__mlir_generic_end(l->m, &gen, r);
    return l->m->st;
}

/* ---------------------------------------------------------------- pools -- */

/* The window reduction y[n, oh, ow, ch] = max (or sum) over the window of the padded
 * image (padded with -inf for a max), into result (v's name or a temporary). */
static fedc_status pool_reduce(const lower *l, fedc_value x, const geom *g, bool max, const char *result) {
    char iters[16], out_map[160], out_type[160], init[24], r[24], xv[24], own[24];
    const char *to = l->m->hoisted ? fedc__mlir_tmp(l->m, own) : result; /* sharded: annotated below */
    fedc_type pooled = *type_of(l, x);
    pooled.dims[1] = g->oh, pooled.dims[2] = g->ow;
    fedc__mlir_generic gen;
    image im = {.x = x, .g = g, .fill = max ? -INFINITY : 0, .n = 0, .oh = 1, .ow = 2, .kh = 4, .kw = 5, .ch = 3};
    image_copy(l, &im);
    conv_generic(l, &gen, &pooled, 2, iters, out_map, out_type, init, max ? -INFINITY : 0, to); /* n oh ow ch | kh kw */
    image_operand(l, &gen, &im);
    char wn[24], wt[160], wm[160];
    add_window(l, &gen, g, 4, 5, wn, wt, wm);
    fedc__mlir_generic_begin(l->m, &gen);
    emit2(l, max ? "arith.maximumf" : "arith.addf", image_value(l, &gen, &im, xv), "%out", gen.out_elem, r);
    fedc__mlir_generic_end(l->m, &gen, r);
    /* its only operand a splat (x read by tensor.extract), as a pool's gradient */
    if (l->m->hoisted) fedc__mlir_annotate_result(l, to, result, out_type, g->batched);
    return l->m->st;
}

static geom pool_geometry(const lower *l, const fedc_type *x, const fedc_type *y) {
    int64_t kh, kw;
    window(l, &kh, &kw);
    return geometry(l, x, kh, kw, y);
}

fedc_status fedc__lower_max_pool2d(const lower *l) {
    geom g = pool_geometry(l, type_of(l, l->n->in[0]), type_of(l, l->v));
    return pool_reduce(l, l->n->in[0], &g, true, name(l, l->v));
}

/* How many positions of output (oh, ow)'s window lie inside the image, as a float
 * of dtype dt: what average pooling divides by. */
static const char *window_count(const lower *l, const geom *g, const char *oh, const char *ow, fedc_dtype dt, char *out) {
    const char *pos[2] = {oh, ow};
    int64_t stride[2] = {g->sh, g->sw}, pad[2] = {g->pt, g->pl}, k[2] = {g->kh, g->kw}, size[2] = {g->h, g->w};
    char span[2][24];
    for (int d = 0; d < 2; d++) {
        char s[24], p[24], a[24], start[24], z[24], lo[24], kk[24], e[24], n[24], hi[24];
        idx_op(l, "muli", pos[d], idx_const(l, stride[d], s), a);
        idx_op(l, "subi", a, idx_const(l, pad[d], p), start);
        idx_op(l, "maxsi", start, idx_const(l, 0, z), lo);
        idx_op(l, "addi", start, idx_const(l, k[d], kk), e);
        idx_op(l, "minsi", e, idx_const(l, size[d], n), hi);
        idx_op(l, "subi", hi, lo, span[d]);
    }
    char cnt[24], ci[24];
    idx_op(l, "muli", span[0], span[1], cnt);
    fedc__mlir_tmp(l->m, ci);
    fedc__mlir_printf(l->m, "      %s = arith.index_cast %s : index to i32\n", ci, cnt);
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.sitofp %s : i32 to %s\n", out, ci, fedc__mlir_elem(dt));
    return out;
}

/* y = (window sums) / (positions inside the image). */
fedc_status fedc__lower_avg_pool2d(const lower *l) {
    geom g = pool_geometry(l, type_of(l, l->n->in[0]), type_of(l, l->v));
    char sum[24], type[160], map[160], init[24], idx[8][24], cnt[24], r[24];
    if (pool_reduce(l, l->n->in[0], &g, false, fedc__mlir_tmp(l->m, sum))) return l->m->st;
    fedc__mlir_type_of(l->m, l->s, l->v, type, sizeof type);
    int c = g.batched, loops = c + 4;
    identity_map(loops, map, sizeof map);
    fedc__mlir_generic gen = {.rank = loops, .iters = "ppppp", .nin = 1, .in = {sum}, .in_type = {type},
                              .in_elem = {fedc__mlir_elem(type_of(l, l->v)->dtype)}, .maps = {map}, .out_map = map,
                              .out_type = type, .out_elem = fedc__mlir_elem(type_of(l, l->v)->dtype),
                              .result_name = name(l, l->v)};
    gen.init = fedc__mlir_splat(l->m, l->s, l->v, 0, init);
    fedc__mlir_generic_begin(l->m, &gen);
    fedc__mlir_loop_indices(l, loops, idx);
    window_count(l, &g, idx[c + 1], idx[c + 2], type_of(l, l->v)->dtype, cnt);
    emit2(l, "arith.divf", "%in0", cnt, gen.out_elem, r);
    fedc__mlir_generic_end(l->m, &gen, r);
    return l->m->st;
}

/* The state of a pool's gradient: a loop nest n ih iw ch | kh kw over dx, in
 * whose body (oh, ow) is the window that holds (ih, iw) at (kh, kw), ok says it
 * exists, and v is dy there (0 where not ok). */
typedef struct pool_grad {
    fedc__mlir_generic gen;
    char iters[16], out_map[160], out_type[160], init[24], window[24], window_type[160], window_map[160];
    char idx[10][24], ok[24], oh[24], ow[24], v[24], result[24];
} pool_grad;

/* Sharded, the generic's only operands are splats (it reads dy by
 * tensor.extract), so its result is annotated: unannotated, propagation leaves
 * the op unsharded and mesh-spmdization crashes on its arguments. */
static void pool_grad_end(const lower *l, pool_grad *pg, const char *r) {
    fedc__mlir_generic_end(l->m, &pg->gen, r);
    if (l->m->hoisted) fedc__mlir_annotate_result(l, pg->result, name(l, l->v), pg->out_type, clients(l, l->v));
}

static void pool_grad_begin(const lower *l, const geom *g, fedc_value dy, pool_grad *pg) {
    snprintf(pg->result, sizeof pg->result, "%s", name(l, l->v));
    if (l->m->hoisted) fedc__mlir_tmp(l->m, pg->result);
    conv_generic(l, &pg->gen, type_of(l, l->v), 2, pg->iters, pg->out_map, pg->out_type, pg->init, 0, pg->result);
    add_window(l, &pg->gen, g, 4, 5, pg->window, pg->window_type, pg->window_map);
    fedc__mlir_generic_begin(l->m, &pg->gen);
    fedc__mlir_loop_indices(l, pg->gen.rank, pg->idx);
    window_source(l, g, pg->idx, 4, 5, pg->ok, pg->oh, pg->ow);
    read_output(l, dy, pg->idx, pg->oh, pg->ow, 3, pg->ok, pg->gen.out_elem, pg->v);
}

/* dx[n, ih, iw, ch] = sum over the windows holding (ih, iw) of dy / their count. */
fedc_status fedc__lower_avg_pool2d_grad(const lower *l) {
    fedc_value dy = l->n->in[0];
    geom g = pool_geometry(l, type_of(l, l->v), type_of(l, dy));
    pool_grad pg;
    char cnt[24], q[24], r[24];
    pool_grad_begin(l, &g, dy, &pg);
    const char *elem = pg.gen.out_elem;
    window_count(l, &g, pg.oh, pg.ow, type_of(l, l->v)->dtype, cnt);
    emit2(l, "arith.addf", "%out", emit2(l, "arith.divf", pg.v, cnt, elem, q), elem, r);
    pool_grad_end(l, &pg, r);
    return l->m->st;
}

/* The tap kh * kw_size + kw of loops kh, kw as an i32 in the body. */
static const char *tap(const lower *l, const geom *g, char idx[][24], int kh, int kw, char *out) {
    char a[24], b[24], k[24];
    int c = g->batched;
    idx_op(l, "addi", idx_op(l, "muli", idx[c + kh], idx_const(l, g->kw, k), a), idx[c + kw], b);
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.index_cast %s : index to i32\n", out, b);
    return out;
}

/* first[n, oh, ow, ch]: the first tap (row-major) of each window that holds its
 * maximum max[n, oh, ow, ch]. */
static fedc_status first_max(const lower *l, fedc_value x, const geom *g, const char *max, const char *max_type,
                             char *out, char *out_type) {
    fedc_type pooled = *type_of(l, x);
    pooled.dims[1] = g->oh, pooled.dims[2] = g->ow, pooled.dtype = FEDC_I32;
    char mmap[160], iters[16], out_map[160], init[24], idx[10][24], k[24], eq[24], lt[24], hit[24], r[24], xv[24],
        mv[24];
    fedc__mlir_generic gen;
    image im = {.x = x, .g = g, .fill = -INFINITY, .n = 0, .oh = 1, .ow = 2, .kh = 4, .kw = 5, .ch = 3};
    image_copy(l, &im);
    conv_generic(l, &gen, &pooled, 2, iters, out_map, out_type, init, (double)(g->kh * g->kw), fedc__mlir_tmp(l->m, out));
    loops_from(mmap, sizeof mmap, g->batched, 0, 4);
    const char *elem = fedc__mlir_elem(type_of(l, x)->dtype);
    image_operand(l, &gen, &im);
    add_input(&gen, max, max_type, elem, mmap);
    char wn[24], wt[160], wm[160];
    add_window(l, &gen, g, 4, 5, wn, wt, wm);
    fedc__mlir_generic_begin(l->m, &gen);
    fedc__mlir_loop_indices(l, gen.rank, idx);
    tap(l, g, idx, 4, 5, k);
    image_value(l, &gen, &im, xv);
    after_image(l, 0, mv);
    fedc__mlir_tmp(l->m, eq);
    fedc__mlir_printf(l->m, "      %s = arith.cmpf oeq, %s, %s : %s\n", eq, xv, mv, elem);
    fedc__mlir_tmp(l->m, lt);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi slt, %s, %%out : i32\n", lt, k);
    both(l, eq, lt, hit);
    fedc__mlir_tmp(l->m, r);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %%out : i32\n", r, hit, k);
    fedc__mlir_generic_end(l->m, &gen, r);
    return l->m->st;
}

/* dx[n, ih, iw, ch] = sum of dy over the windows whose first maximum is (ih, iw). */
fedc_status fedc__lower_max_pool2d_grad(const lower *l) {
    fedc_value x = l->n->in[0], dy = l->n->in[1];
    geom g = pool_geometry(l, type_of(l, x), type_of(l, dy));
    char max[24], max_type[160], first[24], first_type[160];
    fedc__mlir_type_of(l->m, l->s, dy, max_type, sizeof max_type);
    if (pool_reduce(l, x, &g, true, fedc__mlir_tmp(l->m, max))) return l->m->st;
    if (first_max(l, x, &g, max, max_type, first, first_type)) return l->m->st;
    pool_grad pg;
    char f[24], k[24], hit[24], sel[24], r[24], zero[24], at[6][24], fv[24];
    pool_grad_begin(l, &g, dy, &pg);
    char(*idx)[24] = pg.idx;
    int n = 0, c = g.batched;
    if (c) snprintf(at[n++], 24, "%s", idx[0]);
    snprintf(at[n++], 24, "%s", idx[c]), snprintf(at[n++], 24, "%s", pg.oh), snprintf(at[n++], 24, "%s", pg.ow);
    snprintf(at[n++], 24, "%s", idx[c + 3]);
    fedc__mlir_extract(l, first, first_type, at, n, fedc__mlir_tmp(l->m, fv));
    tap(l, &g, idx, 4, 5, k);
    fedc__mlir_tmp(l->m, f);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi eq, %s, %s : i32\n", f, fv, k);
    both(l, pg.ok, f, hit);
    fedc__mlir_tmp(l->m, sel);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", sel, hit, pg.v,
                      constant(l, 0, type_of(l, l->v)->dtype, zero), pg.gen.out_elem);
    emit2(l, "arith.addf", "%out", sel, pg.gen.out_elem, r);
    pool_grad_end(l, &pg, r);
    return l->m->st;
}
