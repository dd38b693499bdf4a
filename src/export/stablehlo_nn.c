/* The network ops in StableHLO, in fedc's layouts (images NHWC, filters HWIO)
 * with fedc's explicit pads [top, bottom, left, right]:
 *  - conv2d is stablehlo.convolution; inside a map every client has its own
 *    filter, so (as JAX batches a convolution over filters) the clients become
 *    feature groups: the image [C, N, H, W, I] is read as [N, H, W, C*I], the
 *    filters [C, KH, KW, I, O] as [KH, KW, I, C*O] with feature_group_count C;
 *  - pools are stablehlo.reduce_window (max pads with -inf, so a padded
 *    position is never the maximum; average divides by the window's positions
 *    inside the image, a reduce_window of ones). */
#include <math.h>
#include <string.h>

#include "export/stablehlo.h"

typedef struct conv_geom {
    int64_t sh, sw, pt, pb, pl, pr;
} conv_geom;

static conv_geom conv_geometry(const lower *l) {
    int count;
    const int64_t *s = fedc__attr_ints(l->n, FEDC_ATTR_STRIDES, &count), *p = fedc__attr_ints(l->n, FEDC_ATTR_PADS, &count);
    return (conv_geom){s[0], s[1], p[0], p[1], p[2], p[3]};
}

/* "x = stablehlo.transpose(in)" then "reshape to `to`", the dims of `perm`. */
static const char *regroup(const lower *l, const char *in, const char *in_t, const int64_t *perm, const fedc_type *mid,
                           const char *to, char *out) {
    char attr[200], list[160], mt[160], t[24];
    fedc__mlir_tensor(l->m, mid, false, mt, sizeof mt);
    snprintf(attr, sizeof attr, "permutation = %s", i64s(perm, mid->rank, list));
    op1(l, fedc__mlir_tmp(l->m, t), "stablehlo.transpose", attr, in, in_t, mt);
    op1(l, fedc__mlir_tmp(l->m, out), "stablehlo.reshape", "", t, mt, to);
    return out;
}

/* A stablehlo.convolution's attributes. */
typedef struct conv_attrs {
    const char *dims;            /* the dimension numbers, e.g. "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]" */
    int64_t features, batches;   /* feature_group_count, batch_group_count */
    int64_t lhs_dilation[2], rhs_dilation[2], strides[2];
    int64_t pads[4];             /* [top, bottom, left, right] (negative crops) */
} conv_attrs;

static void convolve(const lower *l, const conv_attrs *a, const char *x, const char *xt, const char *w, const char *wt,
                     const char *out_t, const char *result) {
    char attr[700];
    snprintf(attr, sizeof attr, "batch_group_count = %lld : i64, dimension_numbers = #stablehlo.conv<%s>, "
             "feature_group_count = %lld : i64, lhs_dilation = array<i64: %lld, %lld>, padding = dense<[[%lld, %lld], "
             "[%lld, %lld]]> : tensor<2x2xi64>, rhs_dilation = array<i64: %lld, %lld>, window_strides = array<i64: %lld, "
             "%lld>", (long long)a->batches, a->dims, (long long)a->features, (long long)a->lhs_dilation[0],
             (long long)a->lhs_dilation[1], (long long)a->pads[0], (long long)a->pads[1], (long long)a->pads[2],
             (long long)a->pads[3], (long long)a->rhs_dilation[0], (long long)a->rhs_dilation[1],
             (long long)a->strides[0], (long long)a->strides[1]);
    fedc__shlo_op(l->m, result, "stablehlo.convolution", attr, 2, (const char *[]){x, w}, (const char *[]){xt, wt}, out_t);
}

static void convolution(const lower *l, const char *x, const char *xt, const char *w, const char *wt, int64_t groups,
                        const char *out_t, const char *result) {
    conv_geom g = conv_geometry(l);
    conv_attrs a = {"[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", groups, 1, {1, 1}, {1, 1}, {g.sh, g.sw},
                    {g.pt, g.pb, g.pl, g.pr}};
    convolve(l, &a, x, xt, w, wt, out_t, result);
}

/* A convolution per client: lhs and rhs (the clients axis first) transposed by
 * their perms and reshaped to 4-d groups (types *m then *g), convolved with a,
 * and the result (yg) reshaped to ym and transposed back to v, clients first. */
typedef struct grouping {
    const int64_t *perm;
    fedc_type m, g;
} grouping;

/* Sharded over the clients, value x (of 4-d type t) whose dim `dim` is the
 * clients' groups (C times the features) annotated as tiled along it over the
 * devices, as its clients are: XLA's partitioner then convolves each device's
 * groups where they are. Without it, propagation loses the clients' tiling
 * through the transpose and reshape that make the groups, and the partitioner
 * gathers every client's activations and filters onto every device. x itself
 * when not sharded. */
static const char *tiled_groups(const lower *l, const char *x, const char *t, int dim, char *out) {
    int d = l->m->shard_devices;
    if (d < 2 || l->m->clients != l->m->cohort) return x; /* the groups level: not tiled over every device */
    char attr[600];
    int n = snprintf(attr, sizeof attr, "call_target_name = \"Sharding\", mhlo.sharding = \"{devices=[");
    for (int i = 0; i < 4; i++) n += snprintf(attr + n, sizeof attr - (size_t)n, "%s%d", i ? "," : "", i == dim ? d : 1);
    n += snprintf(attr + n, sizeof attr - (size_t)n, "]");
    for (int k = 0; k < d && n < (int)sizeof attr; k++) n += snprintf(attr + n, sizeof attr - (size_t)n, "%s%d", k ? "," : "", k);
    snprintf(attr + n, sizeof attr - (size_t)n, "}\"");
    op1(l, fedc__mlir_tmp(l->m, out), "stablehlo.custom_call", attr, x, t, t);
    return out;
}

/* The dim of a grouping's 4-d type that holds the clients (merged with the dim after it). */
static int clients_dim(const grouping *g) {
    int j = 0;
    while (j < 4 && g->perm[j] != 0) j++;
    return j;
}

static fedc_status grouped(const lower *l, const conv_attrs *a, fedc_value x, const grouping *gx, fedc_value w, const char *wname,
                           const grouping *gw, const fedc_type *yg, const fedc_type *ym) {
    static const int64_t back[5] = {3, 0, 1, 2, 4};
    char xt[160], wt[160], vt[160], xgt[160], wgt[160], ygt[160], ymt[160], xs[24], ws[24], y[24], yr[24], attr[200],
        list[160];
    type_str(l, x, xt), type_str(l, w, wt), type_str(l, l->v, vt);
    fedc__mlir_tensor(l->m, &gx->g, false, xgt, sizeof xgt), fedc__mlir_tensor(l->m, &gw->g, false, wgt, sizeof wgt);
    fedc__mlir_tensor(l->m, yg, false, ygt, sizeof ygt), fedc__mlir_tensor(l->m, ym, false, ymt, sizeof ymt);
    char xa[24], wa[24], ya[24];
    const char *xin = tiled_groups(l, regroup(l, name(l, x), xt, gx->perm, &gx->m, xgt, xs), xgt, clients_dim(gx), xa);
    const char *win = tiled_groups(l, regroup(l, wname, wt, gw->perm, &gw->m, wgt, ws), wgt, clients_dim(gw), wa);
    convolve(l, a, xin, xgt, win, wgt, ygt, fedc__mlir_tmp(l->m, y));
    op1(l, fedc__mlir_tmp(l->m, yr), "stablehlo.reshape", "", tiled_groups(l, y, ygt, 3, ya), ygt, ymt);
    snprintf(attr, sizeof attr, "permutation = %s", i64s(back, 5, list));
    op1(l, out_name(l), "stablehlo.transpose", attr, yr, ymt, vt);
    return l->m->st;
}

static const int64_t TO_GROUPS[5] = {1, 2, 3, 0, 4}; /* [C, A, B, D, E] -> [A, B, D, C, E] */
static const int64_t AS_BATCHES[5] = {0, 1, 2, 3, 4}; /* [C, N, H, W, F] read as [C*N, H, W, F] */

/* Sharded over the clients: a convolution per client has the clients as batch
 * groups (batch_group_count C, the images [C*N, H, W, F], the clients major in
 * the batch) rather than as feature groups. XLA's partitioner convolves batch
 * groups tiled over the devices where they are, but gathers every client's
 * images and filters for feature groups of more than one feature each. The
 * same sums; kept to the sharded export, whose values are compared within a
 * tolerance, so that the unsharded module stays as it was. */
static bool clients_as_batches(const lower *l) {
    return l->m->shard_devices > 1 && l->m->clients == l->m->cohort;
}

/* The images x [C, N, H, W, F] of a convolution per client as its lhs, grouped
 * as feature groups [N, H, W, C*F] or (clients_as_batches) batch groups. */
static grouping lhs_groups(const lower *l, const fedc_type *x, int64_t c) {
    const int64_t *d = x->dims;
    if (clients_as_batches(l))
        return (grouping){AS_BATCHES, fedc_type_make(x->dtype, 5, (int64_t[]){c, d[0], d[1], d[2], d[3]}),
                          fedc_type_make(x->dtype, 4, (int64_t[]){c * d[0], d[1], d[2], d[3]})};
    return (grouping){TO_GROUPS, fedc_type_make(x->dtype, 5, (int64_t[]){d[0], d[1], d[2], c, d[3]}),
                      fedc_type_make(x->dtype, 4, (int64_t[]){d[0], d[1], d[2], c * d[3]})};
}

fedc_status fedc__shlo_conv2d(const lower *l) {
    fedc_value x = l->n->in[0], w = l->n->in[1];
    char xt[160], wt[160], vt[160];
    type_str(l, x, xt), type_str(l, w, wt), type_str(l, l->v, vt);
    if (!lead(l, x)) {
        convolution(l, name(l, x), xt, name(l, w), wt, 1, vt, out_name(l));
        return l->m->st;
    }
    if (!lead(l, w)) return unsupported(l, "a conv2d of clients' images with one server filter has no StableHLO lowering yet");
    const fedc_type *xi = type_of(l, x), *wi = type_of(l, w), *yi = type_of(l, l->v);
    int64_t c = l->m->clients, n = xi->dims[0], ci = xi->dims[3], co = wi->dims[3];
    conv_geom g = conv_geometry(l);
    bool batches = clients_as_batches(l);
    conv_attrs a = {"[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", batches ? 1 : c, batches ? c : 1, {1, 1}, {1, 1},
                    {g.sh, g.sw}, {g.pt, g.pb, g.pl, g.pr}};
    grouping gx = lhs_groups(l, xi, c);
    grouping gw = {TO_GROUPS, fedc_type_make(wi->dtype, 5, (int64_t[]){wi->dims[0], wi->dims[1], ci, c, co}),
                   fedc_type_make(wi->dtype, 4, (int64_t[]){wi->dims[0], wi->dims[1], ci, c * co})};
    fedc_type yg = fedc_type_make(yi->dtype, 4, (int64_t[]){n, yi->dims[1], yi->dims[2], c * co});
    fedc_type ym = fedc_type_make(yi->dtype, 5, (int64_t[]){n, yi->dims[1], yi->dims[2], c, co});
    return grouped(l, &a, x, &gx, w, name(l, w), &gw, &yg, &ym);
}

/* dx = the transposed convolution of dy: dy dilated by the strides, padded so
 * that dx has x's size, convolved with the filter reversed in space and read
 * with its in and out features swapped; per client (in a map), the clients are
 * feature groups as for conv2d. */
fedc_status fedc__shlo_conv2d_input_grad(const lower *l) {
    fedc_value dy = l->n->in[0], w = l->n->in[1];
    const fedc_type *dyi = type_of(l, dy), *wi = type_of(l, w), *xi = type_of(l, l->v);
    conv_geom g = conv_geometry(l);
    int64_t kh = wi->dims[0], kw = wi->dims[1], ci = wi->dims[2], co = wi->dims[3], c = l->m->clients;
    int64_t dh = (dyi->dims[1] - 1) * g.sh + 1, dw = (dyi->dims[2] - 1) * g.sw + 1;
    int64_t top = kh - 1 - g.pt, left = kw - 1 - g.pl;
    conv_attrs a = {"[b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f]", 1, 1, {g.sh, g.sw}, {1, 1}, {1, 1},
                    {top, xi->dims[1] - dh - top + kh - 1, left, xi->dims[2] - dw - left + kw - 1}};
    char dyt[160], wt[160], vt[160], rev[24], attr[200], list[160];
    type_str(l, dy, dyt), type_str(l, w, wt), type_str(l, l->v, vt);
    int lw = lead(l, w);
    int64_t spatial[2] = {lw, lw + 1};
    snprintf(attr, sizeof attr, "dimensions = %s", i64s(spatial, 2, list));
    op1(l, fedc__mlir_tmp(l->m, rev), "stablehlo.reverse", attr, name(l, w), wt, wt);
    if (!lead(l, dy)) {
        convolve(l, &a, name(l, dy), dyt, rev, wt, vt, out_name(l));
        return l->m->st;
    }
    if (!lw) return unsupported(l, "clients' gradients through one server filter have no StableHLO lowering yet");
    static const int64_t filters[5] = {1, 2, 0, 3, 4}; /* [C, KH, KW, I, O] -> [KH, KW, C, I, O] */
    int64_t n = dyi->dims[0];
    grouping gd = lhs_groups(l, dyi, c);
    grouping gw = {filters, fedc_type_make(wi->dtype, 5, (int64_t[]){kh, kw, c, ci, co}),
                   fedc_type_make(wi->dtype, 4, (int64_t[]){kh, kw, c * ci, co})};
    fedc_type xg = fedc_type_make(xi->dtype, 4, (int64_t[]){n, xi->dims[1], xi->dims[2], c * ci});
    fedc_type xm = fedc_type_make(xi->dtype, 5, (int64_t[]){n, xi->dims[1], xi->dims[2], c, ci});
    if (clients_as_batches(l)) a.batches = c;
    else a.features = c;
    return grouped(l, &a, dy, &gd, w, rev, &gw, &xg, &xm);
}

/* dw[kh, kw, i, o] = sum over n, oh, ow of x[n, oh sh + kh - pt, ow sw + kw - pl, i]
 * dy[n, oh, ow, o]: a convolution of x (its batch the features, its features
 * the batch) by dy dilated by the strides; per client, the clients are batch
 * groups (batch_group_count), as JAX batches a filter gradient. */
fedc_status fedc__shlo_conv2d_filter_grad(const lower *l) {
    fedc_value x = l->n->in[0], dy = l->n->in[1];
    const fedc_type *xi = type_of(l, x), *dyi = type_of(l, dy), *wi = type_of(l, l->v);
    conv_geom g = conv_geometry(l);
    int64_t kh = wi->dims[0], kw = wi->dims[1], ci = wi->dims[2], co = wi->dims[3], c = l->m->clients;
    conv_attrs a = {"[f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f]", 1, 1, {1, 1}, {g.sh, g.sw}, {1, 1},
                    {g.pt, kh + (dyi->dims[1] - 1) * g.sh - xi->dims[1] - g.pt, g.pl,
                     kw + (dyi->dims[2] - 1) * g.sw - xi->dims[2] - g.pl}};
    char xt[160], dyt[160], vt[160];
    type_str(l, x, xt), type_str(l, dy, dyt), type_str(l, l->v, vt);
    if (!lead(l, x)) {
        convolve(l, &a, name(l, x), xt, name(l, dy), dyt, vt, out_name(l));
        return l->m->st;
    }
    int64_t n = xi->dims[0];
    grouping gx = {TO_GROUPS, fedc_type_make(xi->dtype, 5, (int64_t[]){n, xi->dims[1], xi->dims[2], c, ci}),
                   fedc_type_make(xi->dtype, 4, (int64_t[]){n, xi->dims[1], xi->dims[2], c * ci})};
    grouping gd = {TO_GROUPS, fedc_type_make(dyi->dtype, 5, (int64_t[]){n, dyi->dims[1], dyi->dims[2], c, co}),
                   fedc_type_make(dyi->dtype, 4, (int64_t[]){n, dyi->dims[1], dyi->dims[2], c * co})};
    fedc_type wg = fedc_type_make(wi->dtype, 4, (int64_t[]){kh, kw, ci, c * co});
    fedc_type wm = fedc_type_make(wi->dtype, 5, (int64_t[]){kh, kw, ci, c, co});
    a.batches = c;
    return grouped(l, &a, x, &gx, dy, name(l, dy), &gd, &wg, &wm);
}

/* --------------------------------------------------------------- pools -- */

/* result = reduce_window(x) (of type out_t) of window win, strides and pads
 * [top, bottom, left, right] (a dim of 1 for the clients axis and the batch and
 * channel dims), summing or taking the maximum, from `init`. */
static void reduce_window_of(const lower *l, const char *x, const char *xt, const char *out_t, double init, bool max,
                             const int64_t *win, const int64_t *step, const int64_t *pads, const char *result) {
    int c = lead(l, l->v);
    fedc_dtype dt = type_of(l, l->v)->dtype;
    char st[64], z[24], a[24], b[24], r[24], attr[800], wd[160], ws[160];
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(dt));
    fedc__shlo_splat(l->m, dt, init, st, z);
    int64_t dims[5] = {1, 1, win[0], win[1], 1}, strides[5] = {1, 1, step[0], step[1], 1};
    fedc__mlir_tmp(l->m, a), fedc__mlir_tmp(l->m, b), fedc__mlir_tmp(l->m, r);
    snprintf(attr, sizeof attr, "padding = dense<[%s[0, 0], [%lld, %lld], [%lld, %lld], [0, 0]]> : tensor<%dx2xi64>, "
             "window_dimensions = %s, window_strides = %s", c ? "[0, 0], " : "", (long long)pads[0], (long long)pads[1],
             (long long)pads[2], (long long)pads[3], 4 + c, i64s(dims + 1 - c, 4 + c, wd), i64s(strides + 1 - c, 4 + c, ws));
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.reduce_window\"(%s, %s) ({\n    ^bb0(%s: %s, %s: %s):\n", result, x, z, a,
                      st, b, st);
    op2(l, r, max ? "stablehlo.maximum" : "stablehlo.add", "", a, b, st, st);
    fedc__mlir_printf(l->m, "      \"stablehlo.return\"(%s) : (%s) -> ()\n    }) {%s} : (%s, %s) -> %s\n", r, st, attr, xt,
                      st, out_t);
}

/* The node's pooling window, strides and pads into win[2], step[2], pads[4]. */
static void pool_attrs(const lower *l, int64_t *win, int64_t *step, int64_t *pads) {
    int count;
    const int64_t *w = fedc__attr_ints(l->n, FEDC_ATTR_WINDOW, &count);
    conv_geom g = conv_geometry(l);
    win[0] = w[0], win[1] = w[1], step[0] = g.sh, step[1] = g.sw;
    pads[0] = g.pt, pads[1] = g.pb, pads[2] = g.pl, pads[3] = g.pr;
}

static void reduce_window(const lower *l, const char *x, const char *xt, double init, bool max, const char *result) {
    int64_t win[2], step[2], pads[4];
    char vt[160];
    pool_attrs(l, win, step, pads);
    reduce_window_of(l, x, xt, type_str(l, l->v, vt), init, max, win, step, pads, result);
}

fedc_status fedc__shlo_max_pool2d(const lower *l) {
    char xt[160];
    reduce_window(l, name(l, l->n->in[0]), type_str(l, l->n->in[0], xt), -INFINITY, true, out_name(l));
    return l->m->st;
}

/* dx: each window's dy goes to the first maximum of its window of x in
 * row-major order (select GE keeps the earlier of two equal), summed. */
fedc_status fedc__shlo_max_pool2d_grad(const lower *l) {
    fedc_value x = l->n->in[0], dy = l->n->in[1];
    int count, c = lead(l, l->v);
    const int64_t *w = fedc__attr_ints(l->n, FEDC_ATTR_WINDOW, &count);
    conv_geom g = conv_geometry(l);
    fedc_dtype dt = type_of(l, l->v)->dtype;
    char st[64], bt[] = "tensor<i1>", xt[160], dyt[160], vt[160], z[24], a[24], b[24], ge[24], p[24], q[24], r[24],
        attr[800], wd[160], ws[160];
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(dt));
    type_str(l, x, xt), type_str(l, dy, dyt), type_str(l, l->v, vt);
    fedc__shlo_splat(l->m, dt, 0, st, z);
    int64_t dims[5] = {1, 1, w[0], w[1], 1}, strides[5] = {1, 1, g.sh, g.sw, 1};
    snprintf(attr, sizeof attr, "padding = dense<[%s[0, 0], [%lld, %lld], [%lld, %lld], [0, 0]]> : tensor<%dx2xi64>, "
             "window_dimensions = %s, window_strides = %s", c ? "[0, 0], " : "", (long long)g.pt, (long long)g.pb,
             (long long)g.pl, (long long)g.pr, 4 + c, i64s(dims + 1 - c, 4 + c, wd), i64s(strides + 1 - c, 4 + c, ws));
    fedc__mlir_tmp(l->m, a), fedc__mlir_tmp(l->m, b), fedc__mlir_tmp(l->m, ge), fedc__mlir_tmp(l->m, p),
        fedc__mlir_tmp(l->m, q), fedc__mlir_tmp(l->m, r);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.select_and_scatter\"(%s, %s, %s) ({\n    ^bb0(%s: %s, %s: %s):\n"
                      "      %s = \"stablehlo.compare\"(%s, %s) {comparison_direction = #stablehlo<comparison_direction GE>, "
                      "compare_type = #stablehlo<comparison_type FLOAT>} : (%s, %s) -> %s\n"
                      "      \"stablehlo.return\"(%s) : (%s) -> ()\n    }, {\n    ^bb0(%s: %s, %s: %s):\n",
                      out_name(l), name(l, x), name(l, dy), z, a, st, b, st, ge, a, b, st, st, bt, ge, bt, p, st, q, st);
    op2(l, r, "stablehlo.add", "", p, q, st, st);
    fedc__mlir_printf(l->m, "      \"stablehlo.return\"(%s) : (%s) -> ()\n    }) {%s} : (%s, %s, %s) -> %s\n", r, st, attr,
                      xt, dyt, st, vt);
    return l->m->st;
}

fedc_status fedc__shlo_avg_pool2d(const lower *l) {
    char xt[160], vt[160], ones[24], sum[24], count[24];
    type_str(l, l->n->in[0], xt), type_str(l, l->v, vt);
    reduce_window(l, name(l, l->n->in[0]), xt, 0, false, fedc__mlir_tmp(l->m, sum));
    fedc__shlo_splat(l->m, type_of(l, l->v)->dtype, 1, xt, ones);
    reduce_window(l, ones, xt, 0, false, fedc__mlir_tmp(l->m, count)); /* the window's positions in the image */
    op2(l, out_name(l), "stablehlo.divide", "", sum, count, vt, vt);
    return l->m->st;
}

/* dx[i] = the sum, over the windows holding i, of dy / (the window's positions
 * inside the image): dy / count, dilated by the strides and padded so that a
 * stride-1 sum over the window gives x's size. */
fedc_status fedc__shlo_avg_pool2d_grad(const lower *l) {
    fedc_value dy = l->n->in[0];
    const fedc_type *dyi = type_of(l, dy), *xi = type_of(l, l->v);
    int c = lead(l, l->v);
    int64_t win[2], step[2], pads[4], one[2] = {1, 1}, none[4] = {0, 0, 0, 0};
    pool_attrs(l, win, step, pads);
    char vt[160], dyt[160], st[64], ones[24], count[24], q[24], z[24], padded[24], pt[160], attr[800], lo[160], hi[160],
        in[160];
    type_str(l, l->v, vt), type_str(l, dy, dyt);
    fedc__shlo_splat(l->m, xi->dtype, 1, vt, ones);
    reduce_window_of(l, ones, vt, dyt, 0, false, win, step, pads, fedc__mlir_tmp(l->m, count));
    op2(l, fedc__mlir_tmp(l->m, q), "stablehlo.divide", "", name(l, dy), count, dyt, dyt);
    int64_t low[5] = {0}, high[5] = {0}, inner[5] = {0};
    fedc_type pad_type = *xi;
    for (int d = 0; d < 2; d++) {
        int64_t dilated = (dyi->dims[1 + d] - 1) * step[d] + 1, top = win[d] - 1 - pads[2 * d];
        low[c + 1 + d] = top, high[c + 1 + d] = xi->dims[1 + d] - dilated - top + win[d] - 1;
        inner[c + 1 + d] = step[d] - 1;
        pad_type.dims[1 + d] = xi->dims[1 + d] + win[d] - 1;
    }
    fedc__mlir_tensor(l->m, &pad_type, c, pt, sizeof pt);
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(xi->dtype));
    fedc__shlo_splat(l->m, xi->dtype, 0, st, z);
    snprintf(attr, sizeof attr, "edge_padding_low = %s, edge_padding_high = %s, interior_padding = %s",
             i64s(low, 4 + c, lo), i64s(high, 4 + c, hi), i64s(inner, 4 + c, in));
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, padded), "stablehlo.pad", attr, 2, (const char *[]){q, z},
                  (const char *[]){dyt, st}, pt);
    reduce_window_of(l, padded, pt, vt, 0, false, win, one, none, out_name(l));
    return l->m->st;
}
