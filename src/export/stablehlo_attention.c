/* Causal self-attention on packed qkv [B, T, 3 H D] in StableHLO, as fedc
 * computes it (mlir_attention.c says the same for MLIR): qkv read as
 * [B, T, 3, H, D]; scores q_i . k_j / sqrt(D) by dot_general (batch dims B and
 * H), -inf above the diagonal, softmax over j; y_i = sum_j p_j v_j. The
 * gradient, with dp_j = dy_i . v_j and ds_j = p_j (dp_j - sum_l p_l dp_l) /
 * sqrt(D): dq = ds k, dk = ds^T q, dv = p^T dy, packed back as [B, T, 3 H D]. */
#include <math.h>
#include <string.h>

#include "export/stablehlo.h"

typedef struct sattn {
    const shlo *l;
    int c;
    int64_t b, t, h, d;
    fedc_dtype dt;
    char p[24];                        /* the weights [c?, B, H, T, T] */
    char q[24], k[24], v[24];          /* [c?, B, T, H, D] */
    char pt[160], bthd[160], bhtd[160]; /* the types */
} sattn;

static void dims_type(const sattn *a, int rank, const int64_t *dims, char *out) {
    fedc_type t = fedc_type_make(a->dt, rank, dims);
    fedc__mlir_tensor(a->l->m, &t, a->c, out, 160);
}

/* result = dot_general(x, y) with the batch dims given after the clients axis
 * (which both have, when there) and one contracting dim each. */
static void dot(const sattn *a, const char *x, const char *xt, const char *y, const char *yt, const int *xb, const int *yb,
                int xc, int yc, const char *out_t, char *result) {
    int c = a->c;
    char attr[400];
    snprintf(attr, sizeof attr, "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [%s%d, %d], "
             "rhs_batching_dimensions = [%s%d, %d], lhs_contracting_dimensions = [%d], rhs_contracting_dimensions = [%d]>",
             c ? "0, " : "", c + xb[0], c + xb[1], c ? "0, " : "", c + yb[0], c + yb[1], c + xc, c + yc);
    fedc__shlo_op(a->l->m, fedc__mlir_tmp(a->l->m, result), "stablehlo.dot_general", attr, 2, (const char *[]){x, y},
                  (const char *[]){xt, yt}, out_t);
}

/* [c?, B, H, T, D] -> [c?, B, T, H, D] (or back: the swap is its own inverse). */
static void swap_th(const sattn *a, const char *x, const char *xt, const char *to, char *out) {
    int c = a->c;
    int64_t p[5] = {0};
    for (int i = 0; i < 4; i++) p[c + i] = c + (i == 1 ? 2 : i == 2 ? 1 : i);
    char attr[200], list[160];
    snprintf(attr, sizeof attr, "permutation = %s", i64s(p, 4 + c, list));
    op1(a->l, fedc__mlir_tmp(a->l->m, out), "stablehlo.transpose", attr, x, xt, to);
}

/* The spread of a [c?, B, H, T] row value back over the weights' last dim, or a
 * reduce of the weights' last dim: their attributes. */
static void rows(const sattn *a, char *bcast, char *rt) {
    int64_t map[5];
    char list[160];
    for (int i = 0; i < 3 + a->c; i++) map[i] = i;
    snprintf(bcast, 200, "broadcast_dimensions = %s", i64s(map, 3 + a->c, list));
    dims_type(a, 3, (int64_t[]){a->b, a->h, a->t}, rt);
}

static const char *row_reduce(const sattn *a, const char *x, bool max, const char *rt, char *out) {
    const shlo *l = a->l;
    char st[64], init[24], p[24], q[24], r[24];
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(a->dt));
    fedc__shlo_splat(l->m, a->dt, max ? -INFINITY : 0, st, init);
    fedc__mlir_tmp(l->m, p), fedc__mlir_tmp(l->m, q), fedc__mlir_tmp(l->m, r), fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.reduce\"(%s, %s) ({\n    ^bb0(%s: %s, %s: %s):\n", out, x, init, p, st, q, st);
    op2(l, r, max ? "stablehlo.maximum" : "stablehlo.add", "", p, q, st, st);
    fedc__mlir_printf(l->m, "      \"stablehlo.return\"(%s) : (%s) -> ()\n    }) {dimensions = array<i64: %d>} : (%s, %s) -> %s\n",
                      r, st, a->c + 3, a->pt, st, rt);
    return out;
}

/* q, k, v from qkv, and the weights p. */
static void weights(const shlo *l, sattn *a) {
    fedc_value qkv = l->n->in[0];
    const fedc_type *t = type_of(l, qkv);
    a->l = l, a->c = lead(l, qkv), a->dt = t->dtype;
    a->h = fedc__attr_int(l->n, FEDC_ATTR_HEADS, 1);
    a->b = t->dims[0], a->t = t->dims[1], a->d = t->dims[2] / (3 * a->h);
    int c = a->c;
    char qt[160], five[160], one[160], r5[24], attr[600], lo[160], hi[160], st[160];
    dims_type(a, 5, (int64_t[]){a->b, a->t, 3, a->h, a->d}, five);
    dims_type(a, 5, (int64_t[]){a->b, a->t, 1, a->h, a->d}, one);
    dims_type(a, 4, (int64_t[]){a->b, a->t, a->h, a->d}, a->bthd);
    dims_type(a, 4, (int64_t[]){a->b, a->h, a->t, a->d}, a->bhtd);
    dims_type(a, 4, (int64_t[]){a->b, a->h, a->t, a->t}, a->pt);
    op1(l, fedc__mlir_tmp(l->m, r5), "stablehlo.reshape", "", name(l, qkv), type_str(l, qkv, qt), five);
    char *parts[3] = {a->q, a->k, a->v};
    for (int w = 0; w < 3; w++) {
        int64_t s0[6] = {0, 0, 0, w, 0, 0}, s1[6] = {l->m->clients, a->b, a->t, w + 1, a->h, a->d}, one_s[6] = {1, 1, 1, 1, 1, 1};
        char sl[24];
        snprintf(attr, sizeof attr, "start_indices = %s, limit_indices = %s, strides = %s", i64s(s0 + 1 - c, 5 + c, lo),
                 i64s(s1 + 1 - c, 5 + c, hi), i64s(one_s, 5 + c, st));
        op1(l, fedc__mlir_tmp(l->m, sl), "stablehlo.slice", attr, r5, five, one);
        op1(l, fedc__mlir_tmp(l->m, parts[w]), "stablehlo.reshape", "", sl, one, a->bthd);
    }
    char s[24], k[24], ss[24], io_i[24], io_j[24], le[24], ninf[24], m[24], bc[200], rt[160], mx[24], mxb[24], d[24],
        e[24], sum[24], sb[24], it[160], bt[160];
    int qb[2] = {0, 2};
    dot(a, a->q, a->bthd, a->k, a->bthd, qb, qb, 3, 3, a->pt, s);
    fedc__shlo_splat(l->m, a->dt, 1.0 / sqrt((double)a->d), a->pt, k);
    op2(l, fedc__mlir_tmp(l->m, ss), "stablehlo.multiply", "", s, k, a->pt, a->pt);
    fedc_type ti = fedc_type_make(FEDC_I32, 4, (int64_t[]){a->b, a->h, a->t, a->t}), tb = ti;
    tb.dtype = FEDC_BOOL;
    fedc__mlir_tensor(l->m, &ti, c, it, sizeof it), fedc__mlir_tensor(l->m, &tb, c, bt, sizeof bt);
    snprintf(attr, sizeof attr, "iota_dimension = %d : i64", c + 2);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, io_i), "stablehlo.iota", attr, 0, NULL, NULL, it);
    snprintf(attr, sizeof attr, "iota_dimension = %d : i64", c + 3);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, io_j), "stablehlo.iota", attr, 0, NULL, NULL, it);
    fedc__mlir_tmp(l->m, le);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.compare\"(%s, %s) {comparison_direction = #stablehlo<comparison_direction LE>, "
                      "compare_type = #stablehlo<comparison_type SIGNED>} : (%s, %s) -> %s\n", le, io_j, io_i, it, it, bt);
    fedc__shlo_splat(l->m, a->dt, -INFINITY, a->pt, ninf);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, m), "stablehlo.select", "", 3, (const char *[]){le, ss, ninf},
                  (const char *[]){bt, a->pt, a->pt}, a->pt);
    rows(a, bc, rt);
    row_reduce(a, m, true, rt, mx);
    op1(l, fedc__mlir_tmp(l->m, mxb), "stablehlo.broadcast_in_dim", bc, mx, rt, a->pt);
    op2(l, fedc__mlir_tmp(l->m, d), "stablehlo.subtract", "", m, mxb, a->pt, a->pt);
    op1(l, fedc__mlir_tmp(l->m, e), "stablehlo.exponential", "", d, a->pt, a->pt);
    row_reduce(a, e, false, rt, sum);
    op1(l, fedc__mlir_tmp(l->m, sb), "stablehlo.broadcast_in_dim", bc, sum, rt, a->pt);
    op2(l, fedc__mlir_tmp(l->m, a->p), "stablehlo.divide", "", e, sb, a->pt, a->pt);
}

/* [c?, B, T, H, D] values reshaped to [c?, B, T, H D]. */
static void pack(const sattn *a, const char *x, const char *result) {
    char vt[160];
    op1(a->l, result, "stablehlo.reshape", "", x, a->bthd, type_str(a->l, a->l->v, vt));
}

fedc_status fedc__shlo_causal_attention(const shlo *l) {
    sattn a;
    weights(l, &a);
    char y[24], yt[24];
    int pb[2] = {0, 1}, vb[2] = {0, 2};
    dot(&a, a.p, a.pt, a.v, a.bthd, pb, vb, 3, 1, a.bhtd, y);
    swap_th(&a, y, a.bhtd, a.bthd, yt);
    pack(&a, yt, out_name(l));
    return l->m->st;
}

fedc_status fedc__shlo_causal_attention_grad(const shlo *l) {
    sattn a;
    weights(l, &a);
    int c = a.c;
    char dyt[160], dy[24], dv[24], dvt[24], dp[24], pdp[24], bc[200], rt[160], sum[24], sb[24], diff[24], ds0[24], k[24],
        ds[24], dq[24], dqt[24], dk[24], dkt[24], one[160], parts[3][24], cat[24], attr[64];
    op1(l, fedc__mlir_tmp(l->m, dy), "stablehlo.reshape", "", name(l, l->n->in[1]), type_str(l, l->n->in[1], dyt), a.bthd);
    int pb[2] = {0, 1}, tb[2] = {0, 2};
    dot(&a, a.p, a.pt, dy, a.bthd, pb, tb, 2, 1, a.bhtd, dv); /* dv_j = sum_i p_ij dy_i */
    swap_th(&a, dv, a.bhtd, a.bthd, dvt);
    dot(&a, dy, a.bthd, a.v, a.bthd, tb, tb, 3, 3, a.pt, dp); /* dp_ij = dy_i . v_j */
    op2(l, fedc__mlir_tmp(l->m, pdp), "stablehlo.multiply", "", a.p, dp, a.pt, a.pt);
    rows(&a, bc, rt);
    row_reduce(&a, pdp, false, rt, sum);
    op1(l, fedc__mlir_tmp(l->m, sb), "stablehlo.broadcast_in_dim", bc, sum, rt, a.pt);
    op2(l, fedc__mlir_tmp(l->m, diff), "stablehlo.subtract", "", dp, sb, a.pt, a.pt);
    op2(l, fedc__mlir_tmp(l->m, ds0), "stablehlo.multiply", "", a.p, diff, a.pt, a.pt);
    fedc__shlo_splat(l->m, a.dt, 1.0 / sqrt((double)a.d), a.pt, k);
    op2(l, fedc__mlir_tmp(l->m, ds), "stablehlo.multiply", "", ds0, k, a.pt, a.pt);
    dot(&a, ds, a.pt, a.k, a.bthd, pb, tb, 3, 1, a.bhtd, dq); /* dq_i = sum_j ds_ij k_j */
    swap_th(&a, dq, a.bhtd, a.bthd, dqt);
    dot(&a, ds, a.pt, a.q, a.bthd, pb, tb, 2, 1, a.bhtd, dk); /* dk_j = sum_i ds_ij q_i */
    swap_th(&a, dk, a.bhtd, a.bthd, dkt);
    dims_type(&a, 5, (int64_t[]){a.b, a.t, 1, a.h, a.d}, one);
    const char *grads[3] = {dqt, dkt, dvt};
    for (int w = 0; w < 3; w++) op1(l, fedc__mlir_tmp(l->m, parts[w]), "stablehlo.reshape", "", grads[w], a.bthd, one);
    char five[160];
    dims_type(&a, 5, (int64_t[]){a.b, a.t, 3, a.h, a.d}, five);
    snprintf(attr, sizeof attr, "dimension = %d : i64", c + 2);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, cat), "stablehlo.concatenate", attr, 3,
                  (const char *[]){parts[0], parts[1], parts[2]}, (const char *[]){one, one, one}, five);
    char vt[160];
    op1(l, out_name(l), "stablehlo.reshape", "", cat, five, type_str(l, l->v, vt));
    return l->m->st;
}
