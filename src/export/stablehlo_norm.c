/* Layer norm over the last axis in StableHLO, as fedc computes it (mlir_norm.c
 * says the same for MLIR): per row, mean = sum(x) / C, var = sum((x - mean)^2)
 * / C, rstd = 1 / sqrt(var + eps), xhat = (x - mean) rstd, y = xhat gamma +
 * beta; the input gradient, with g = dy gamma, is rstd (g - mean(g) - xhat
 * mean(g xhat)); the parameter gradient [sum over rows of dy xhat; sum of dy]. */
#include <string.h>

#include "export/stablehlo.h"

typedef struct lnorm {
    const shlo *l;
    fedc_value x;
    int c, rank;          /* the clients axis (0 or 1); x's rank with it */
    double cols, eps;
    fedc_dtype dt;
    char xt[160], rt[160]; /* x's type, a row value's */
    char rows_b[200];      /* attrs: a row value spread along the last dim */
    char cols_b[200];      /* attrs: a [c?, C] value spread over the rows */
} lnorm;

static void lnorm_init(const shlo *l, lnorm *n) {
    n->l = l, n->x = l->n->in[0];
    const fedc_type *t = type_of(l, n->x);
    n->c = lead(l, n->x), n->rank = t->rank + n->c;
    n->cols = (double)t->dims[t->rank - 1], n->eps = fedc__attr_float(l->n, FEDC_ATTR_EPS, 1e-5), n->dt = t->dtype;
    fedc_type rows = *t;
    rows.rank--;
    type_str(l, n->x, n->xt);
    fedc__mlir_tensor(l->m, &rows, n->c, n->rt, sizeof n->rt);
    int64_t map[FEDC_MAX_RANK + 1];
    char list[160];
    for (int i = 0; i < n->rank - 1; i++) map[i] = i;
    snprintf(n->rows_b, sizeof n->rows_b, "broadcast_dimensions = %s", i64s(map, n->rank - 1, list));
    int64_t cols[2] = {0, n->rank - 1};
    snprintf(n->cols_b, sizeof n->cols_b, "broadcast_dimensions = %s", i64s(cols + 1 - n->c, 1 + n->c, list));
}

/* out = v's row sums (over the last dim), spread back along it when `spread`. */
static const char *row_sum(const lnorm *n, const char *v, bool spread, char *out) {
    const shlo *l = n->l;
    char init[24], st[64], a[24], b[24], r[24], s[24];
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(n->dt));
    fedc__shlo_splat(l->m, n->dt, 0, st, init);
    fedc__mlir_tmp(l->m, a), fedc__mlir_tmp(l->m, b), fedc__mlir_tmp(l->m, r);
    const char *sum = spread ? fedc__mlir_tmp(l->m, s) : fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.reduce\"(%s, %s) ({\n    ^bb0(%s: %s, %s: %s):\n", sum, v, init, a, st, b, st);
    op2(l, r, "stablehlo.add", "", a, b, st, st);
    fedc__mlir_printf(l->m, "      \"stablehlo.return\"(%s) : (%s) -> ()\n    }) {dimensions = array<i64: %d>} : (%s, %s) -> %s\n",
                      r, st, n->rank - 1, n->xt, st, n->rt);
    if (spread) op1(l, fedc__mlir_tmp(l->m, out), "stablehlo.broadcast_in_dim", n->rows_b, s, n->rt, n->xt);
    return out;
}

static const char *x_op(const lnorm *n, const char *op, const char *a, const char *b, char *out) {
    op2(n->l, fedc__mlir_tmp(n->l->m, out), op, "", a, b, n->xt, n->xt);
    return out;
}

static const char *x_const(const lnorm *n, double v, char *out) { return fedc__shlo_splat(n->l->m, n->dt, v, n->xt, out); }

/* xhat, and rstd (spread over x's shape) into rstd. */
static const char *xhat(const lnorm *n, char *rstd, char *out) {
    char s[24], inv[24], mean[24], d[24], dd[24], ss[24], var[24], eps[24], ve[24], sq[24], one[24];
    x_const(n, 1.0 / n->cols, inv);
    x_op(n, "stablehlo.multiply", row_sum(n, name(n->l, n->x), true, s), inv, mean);
    x_op(n, "stablehlo.subtract", name(n->l, n->x), mean, d);
    x_op(n, "stablehlo.multiply", row_sum(n, x_op(n, "stablehlo.multiply", d, d, dd), true, ss), inv, var);
    x_op(n, "stablehlo.add", var, x_const(n, n->eps, eps), ve);
    op1(n->l, fedc__mlir_tmp(n->l->m, sq), "stablehlo.sqrt", "", ve, n->xt, n->xt);
    x_op(n, "stablehlo.divide", x_const(n, 1, one), sq, rstd);
    return x_op(n, "stablehlo.multiply", d, rstd, out);
}

/* A [c?, C] parameter spread over x's shape. */
static const char *per_column(const lnorm *n, fedc_value u, char *out) {
    char t[160];
    op1(n->l, fedc__mlir_tmp(n->l->m, out), "stablehlo.broadcast_in_dim", n->cols_b, name(n->l, u), type_str(n->l, u, t),
        n->xt);
    return out;
}

fedc_status fedc__shlo_layer_norm(const shlo *l) {
    lnorm n;
    lnorm_init(l, &n);
    char rstd[24], xh[24], g[24], b[24], a[24];
    xhat(&n, rstd, xh);
    x_op(&n, "stablehlo.multiply", xh, per_column(&n, l->n->in[1], g), a);
    op2(l, out_name(l), "stablehlo.add", "", a, per_column(&n, l->n->in[2], b), n.xt, n.xt);
    return l->m->st;
}

fedc_status fedc__shlo_layer_norm_grad(const shlo *l) {
    lnorm n;
    lnorm_init(l, &n);
    char rstd[24], xh[24], gm[24], g[24], gx[24], mg[24], mgx[24], inv[24], m1[24], m2[24], t[24], u[24], v[24];
    xhat(&n, rstd, xh);
    x_op(&n, "stablehlo.multiply", name(l, l->n->in[2]), per_column(&n, l->n->in[1], gm), g);
    row_sum(&n, g, true, mg);
    row_sum(&n, x_op(&n, "stablehlo.multiply", g, xh, gx), true, mgx);
    x_const(&n, 1.0 / n.cols, inv);
    x_op(&n, "stablehlo.multiply", mg, inv, m1), x_op(&n, "stablehlo.multiply", mgx, inv, m2);
    x_op(&n, "stablehlo.subtract", g, m1, t);
    x_op(&n, "stablehlo.subtract", t, x_op(&n, "stablehlo.multiply", xh, m2, u), v);
    op2(l, out_name(l), "stablehlo.multiply", "", rstd, v, n.xt, n.xt);
    return l->m->st;
}

/* [c?, 2, C]: the column sums (over every row dim) of dy xhat and of dy, each
 * reshaped to one row and concatenated. */
fedc_status fedc__shlo_layer_norm_param_grad(const shlo *l) {
    lnorm n;
    lnorm_init(l, &n);
    char rstd[24], xh[24], dx[24], st[64], ct[160], rt[160], vt[160], init[24], a[24], b[24], r[24], sums[2][24],
        rows[2][24], attr[200], list[160];
    xhat(&n, rstd, xh);
    x_op(&n, "stablehlo.multiply", name(l, l->n->in[1]), xh, dx);
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(n.dt));
    const fedc_type *y = type_of(l, l->v);
    fedc_type col = *y, row = *y;
    col.rank = 1, col.dims[0] = y->dims[1];
    row.dims[0] = 1;
    fedc__mlir_tensor(l->m, &col, n.c, ct, sizeof ct), fedc__mlir_tensor(l->m, &row, n.c, rt, sizeof rt);
    int64_t dims[FEDC_MAX_RANK + 1];
    for (int i = 0; i < n.rank - 1 - n.c; i++) dims[i] = n.c + i;
    snprintf(attr, sizeof attr, "dimensions = %s", i64s(dims, n.rank - 1 - n.c, list));
    for (int k = 0; k < 2; k++) {
        fedc__shlo_splat(l->m, n.dt, 0, st, init);
        fedc__mlir_tmp(l->m, a), fedc__mlir_tmp(l->m, b), fedc__mlir_tmp(l->m, r), fedc__mlir_tmp(l->m, sums[k]);
        fedc__mlir_printf(l->m, "    %s = \"stablehlo.reduce\"(%s, %s) ({\n    ^bb0(%s: %s, %s: %s):\n", sums[k],
                          k ? name(l, l->n->in[1]) : dx, init, a, st, b, st);
        op2(l, r, "stablehlo.add", "", a, b, st, st);
        fedc__mlir_printf(l->m, "      \"stablehlo.return\"(%s) : (%s) -> ()\n    }) {%s} : (%s, %s) -> %s\n", r, st, attr,
                          n.xt, st, ct);
        op1(l, fedc__mlir_tmp(l->m, rows[k]), "stablehlo.reshape", "", sums[k], ct, rt);
    }
    char cat[64];
    snprintf(cat, sizeof cat, "dimension = %d : i64", n.c);
    fedc__shlo_op(l->m, out_name(l), "stablehlo.concatenate", cat, 2, (const char *[]){rows[0], rows[1]},
                  (const char *[]){rt, rt}, type_str(l, l->v, vt));
    return l->m->st;
}
