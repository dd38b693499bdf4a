/* The network ops in StableHLO, in fedc's layouts (images NHWC, filters HWIO)
 * with fedc's explicit pads [top, bottom, left, right]:
 *  - conv2d is stablehlo.convolution; inside a map every client has its own
 *    filter, so (as JAX batches a convolution over filters) the clients become
 *    feature groups: the image [C, N, H, W, I] is read as [N, H, W, C*I], the
 *    filters [C, KH, KW, I, O] as [KH, KW, I, C*O] with feature_group_count C;
 *  - pools are stablehlo.reduce_window (max pads with -inf, so a padded
 *    position is never the maximum; average divides by the window's positions
 *    inside the image, a reduce_window of ones);
 *  - GELU is fedc's tanh form. */
#include <math.h>
#include <string.h>

#include "export/stablehlo.h"

typedef struct conv_geom {
    int64_t sh, sw, pt, pb, pl, pr;
} conv_geom;

static conv_geom conv_geometry(const shlo *l) {
    int count;
    const int64_t *s = fedc__attr_ints(l->n, FEDC_ATTR_STRIDES, &count), *p = fedc__attr_ints(l->n, FEDC_ATTR_PADS, &count);
    return (conv_geom){s[0], s[1], p[0], p[1], p[2], p[3]};
}

/* "x = stablehlo.transpose(in)" then "reshape to `to`", the dims of `perm`. */
static const char *regroup(const shlo *l, const char *in, const char *in_t, const int64_t *perm, const fedc_type *mid,
                           const char *to, char *out) {
    char attr[200], list[160], mt[160], t[24];
    fedc__mlir_tensor(l->m, mid, false, mt, sizeof mt);
    snprintf(attr, sizeof attr, "permutation = %s", i64s(perm, mid->rank, list));
    op1(l, fedc__mlir_tmp(l->m, t), "stablehlo.transpose", attr, in, in_t, mt);
    op1(l, fedc__mlir_tmp(l->m, out), "stablehlo.reshape", "", t, mt, to);
    return out;
}

static void convolution(const shlo *l, const char *x, const char *xt, const char *w, const char *wt, int64_t groups,
                        const char *out_t, const char *result) {
    conv_geom g = conv_geometry(l);
    char attr[600];
    snprintf(attr, sizeof attr, "batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 1, f]x[0, 1, i, "
             "o]->[b, 0, 1, f]>, feature_group_count = %lld : i64, lhs_dilation = array<i64: 1, 1>, padding = "
             "dense<[[%lld, %lld], [%lld, %lld]]> : tensor<2x2xi64>, rhs_dilation = array<i64: 1, 1>, window_strides = "
             "array<i64: %lld, %lld>", (long long)groups, (long long)g.pt, (long long)g.pb, (long long)g.pl,
             (long long)g.pr, (long long)g.sh, (long long)g.sw);
    fedc__shlo_op(l->m, result, "stablehlo.convolution", attr, 2, (const char *[]){x, w}, (const char *[]){xt, wt}, out_t);
}

fedc_status fedc__shlo_conv2d(const shlo *l) {
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
    fedc_type xm = fedc_type_make(xi->dtype, 5, (int64_t[]){n, xi->dims[1], xi->dims[2], c, ci});
    fedc_type xg = fedc_type_make(xi->dtype, 4, (int64_t[]){n, xi->dims[1], xi->dims[2], c * ci});
    fedc_type wm = fedc_type_make(wi->dtype, 5, (int64_t[]){wi->dims[0], wi->dims[1], ci, c, co});
    fedc_type wg = fedc_type_make(wi->dtype, 4, (int64_t[]){wi->dims[0], wi->dims[1], ci, c * co});
    fedc_type yg = fedc_type_make(yi->dtype, 4, (int64_t[]){n, yi->dims[1], yi->dims[2], c * co});
    fedc_type ym = fedc_type_make(yi->dtype, 5, (int64_t[]){n, yi->dims[1], yi->dims[2], c, co});
    char xgt[160], wgt[160], ygt[160], ymt[160], xs[24], ws[24], y[24], yr[24], attr[200], list[160];
    fedc__mlir_tensor(l->m, &xg, false, xgt, sizeof xgt), fedc__mlir_tensor(l->m, &wg, false, wgt, sizeof wgt);
    fedc__mlir_tensor(l->m, &yg, false, ygt, sizeof ygt), fedc__mlir_tensor(l->m, &ym, false, ymt, sizeof ymt);
    static const int64_t to_groups[5] = {1, 2, 3, 0, 4}, back[5] = {3, 0, 1, 2, 4};
    regroup(l, name(l, x), xt, to_groups, &xm, xgt, xs);
    regroup(l, name(l, w), wt, to_groups, &wm, wgt, ws);
    convolution(l, xs, xgt, ws, wgt, c, ygt, fedc__mlir_tmp(l->m, y));
    op1(l, fedc__mlir_tmp(l->m, yr), "stablehlo.reshape", "", y, ygt, ymt);
    snprintf(attr, sizeof attr, "permutation = %s", i64s(back, 5, list));
    op1(l, out_name(l), "stablehlo.transpose", attr, yr, ymt, vt);
    return l->m->st;
}

/* --------------------------------------------------------------- pools -- */

/* result = reduce_window(x) of the node's window, strides and pads (a dim of
 * 1 for the clients axis and the batch and channel dims), summing or taking
 * the maximum, from `init` (a scalar of x's dtype). */
static void reduce_window(const shlo *l, const char *x, const char *xt, double init, bool max, const char *result) {
    int count, c = lead(l, l->v);
    const int64_t *w = fedc__attr_ints(l->n, FEDC_ATTR_WINDOW, &count);
    conv_geom g = conv_geometry(l);
    fedc_dtype dt = type_of(l, l->v)->dtype;
    char st[64], vt[160], z[24], a[24], b[24], r[24], attr[800], wd[160], ws[160];
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(dt));
    fedc__shlo_splat(l->m, dt, init, st, z);
    int64_t dims[5] = {1, 1, w[0], w[1], 1}, strides[5] = {1, 1, g.sh, g.sw, 1};
    fedc__mlir_tmp(l->m, a), fedc__mlir_tmp(l->m, b), fedc__mlir_tmp(l->m, r);
    snprintf(attr, sizeof attr, "padding = dense<[%s[0, 0], [%lld, %lld], [%lld, %lld], [0, 0]]> : tensor<%dx2xi64>, "
             "window_dimensions = %s, window_strides = %s", c ? "[0, 0], " : "", (long long)g.pt, (long long)g.pb,
             (long long)g.pl, (long long)g.pr, 4 + c, i64s(dims + 1 - c, 4 + c, wd), i64s(strides + 1 - c, 4 + c, ws));
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.reduce_window\"(%s, %s) ({\n    ^bb0(%s: %s, %s: %s):\n", result, x, z, a,
                      st, b, st);
    op2(l, r, max ? "stablehlo.maximum" : "stablehlo.add", "", a, b, st, st);
    fedc__mlir_printf(l->m, "      \"stablehlo.return\"(%s) : (%s) -> ()\n    }) {%s} : (%s, %s) -> %s\n", r, st, attr, xt,
                      st, type_str(l, l->v, vt));
}

fedc_status fedc__shlo_max_pool2d(const shlo *l) {
    char xt[160];
    reduce_window(l, name(l, l->n->in[0]), type_str(l, l->n->in[0], xt), -INFINITY, true, out_name(l));
    return l->m->st;
}

fedc_status fedc__shlo_avg_pool2d(const shlo *l) {
    char xt[160], vt[160], ones[24], sum[24], count[24];
    type_str(l, l->n->in[0], xt), type_str(l, l->v, vt);
    reduce_window(l, name(l, l->n->in[0]), xt, 0, false, fedc__mlir_tmp(l->m, sum));
    fedc__shlo_splat(l->m, type_of(l, l->v)->dtype, 1, xt, ones);
    reduce_window(l, ones, xt, 0, false, fedc__mlir_tmp(l->m, count)); /* the window's positions in the image */
    op2(l, out_name(l), "stablehlo.divide", "", sum, count, vt, vt);
    return l->m->st;
}

/* ---------------------------------------------------------------- gelu -- */

/* gelu(x) = 1/2 x (1 + tanh(c (x + a x^3))), c = sqrt(2 / pi), a = 0.044715. */
fedc_status fedc__shlo_gelu(const shlo *l) {
    const char *x = name(l, l->n->in[0]);
    fedc_dtype dt = type_of(l, l->v)->dtype;
    char t[160], a[24], c[24], half[24], one[24], x2[24], x3[24], ax3[24], s[24], cs[24], th[24], u[24], hx[24];
    type_str(l, l->v, t);
    fedc__shlo_splat(l->m, dt, 0.044715, t, a), fedc__shlo_splat(l->m, dt, 0.7978845608028654, t, c);
    fedc__shlo_splat(l->m, dt, 0.5, t, half), fedc__shlo_splat(l->m, dt, 1, t, one);
    op2(l, fedc__mlir_tmp(l->m, x2), "stablehlo.multiply", "", x, x, t, t);
    op2(l, fedc__mlir_tmp(l->m, x3), "stablehlo.multiply", "", x2, x, t, t);
    op2(l, fedc__mlir_tmp(l->m, ax3), "stablehlo.multiply", "", a, x3, t, t);
    op2(l, fedc__mlir_tmp(l->m, s), "stablehlo.add", "", x, ax3, t, t);
    op2(l, fedc__mlir_tmp(l->m, cs), "stablehlo.multiply", "", c, s, t, t);
    op1(l, fedc__mlir_tmp(l->m, th), "stablehlo.tanh", "", cs, t, t);
    op2(l, fedc__mlir_tmp(l->m, u), "stablehlo.add", "", one, th, t, t);
    op2(l, fedc__mlir_tmp(l->m, hx), "stablehlo.multiply", "", half, x, t, t);
    op2(l, out_name(l), "stablehlo.multiply", "", hx, u, t, t);
    return l->m->st;
}
