/* The fused LSTM in StableHLO (as mlir_lstm.c lowers it to MLIR; the kernels
 * are src/kernels/ref_lstm.c: Haiku's cell without the forget bias), each a
 * stablehlo.while over the time steps whose loop-carried values are the step t
 * and the state:
 *  - lstm: a_t = xw[t] + h[t-1] @ wh, gates i g f o (tanh for g, sigmoid
 *    1 / (1 + exp(-a)) for the rest), c[t] = f c[t-1] + i g, h[t] = o tanh(c[t]);
 *    each step writes the row [h, c, i, g, f, o] of the trace [T, B, 6H];
 *  - lstm_grad: backpropagation through time, from the last step down,
 *    carrying dxw[t+1] (whose product with wh^T is what h[t] gets through step
 *    t+1) and dc f;
 *  - lstm_tangent: the forward-mode rule, carrying the tangent row of step t-1.
 * Rows of a [T, B, w] sequence are read with dynamic_slice and written with
 * dynamic_update_slice at t; a row's parts (columns k H ..) are slices, put
 * together with concatenate; h @ wh is a dot_general (the clients axis a batch
 * dim when wh has it too). */
#include <string.h>

#include "export/stablehlo.h"

typedef struct slstm {
    const lower *l;
    int64_t T, B, H;
    int c; /* 1 with the clients axis (dim 0) */
    fedc_dtype dt;
    char zero[24]; /* the i32 scalar 0 of the loop body, for the start indices */
} slstm;

static void slstm_init(const lower *l, fedc_value seq, fedc_value wh, slstm *s) {
    const fedc_type *t = type_of(l, seq);
    *s = (slstm){.l = l, .T = t->dims[0], .B = t->dims[1], .H = type_of(l, wh)->dims[0], .c = lead(l, l->v),
                 .dt = t->dtype};
}

/* The type of a [B, w] row, a [1, B, w] step or a [T, B, w] sequence (steps
 * rows: 0, 1 or T), with the clients axis first. */
static const char *rtype(const slstm *s, int64_t w, int64_t steps, char *out) {
    fedc_type t = steps ? fedc_type_make(s->dt, 3, (int64_t[]){steps, s->B, w}) : fedc_type_make(s->dt, 2, (int64_t[]){s->B, w});
    return fedc__mlir_tensor(s->l->m, &t, s->c, out, 160);
}

static const char *splat(const slstm *s, double v, int64_t w, char *out) {
    char t[160];
    return fedc__shlo_splat(s->l->m, s->dt, v, rtype(s, w, 0, t), out);
}

/* out = op(a, b) (or op(a) when b is NULL) on [B, w] rows. */
static const char *ew(const slstm *s, const char *op, const char *a, const char *b, int64_t w, char *out) {
    char t[160];
    rtype(s, w, 0, t);
    if (b) op2(s->l, fedc__mlir_tmp(s->l->m, out), op, "", a, b, t, t);
    else op1(s->l, fedc__mlir_tmp(s->l->m, out), op, "", a, t, t);
    return out;
}

/* The start indices of step t: "%z, %t, %z, %z" (the clients' 0 first), and their types. */
static void starts(const slstm *s, const char *t, char *names, char *types) {
    snprintf(names, 160, "%s%s%s, %s, %s", s->c ? s->zero : "", s->c ? ", " : "", t, s->zero, s->zero);
    snprintf(types, 160, "%stensor<i32>, tensor<i32>, tensor<i32>", s->c ? "tensor<i32>, " : "");
}

/* Row t (a tensor<i32>) of sequence x [T, B, w]. */
static const char *row_at(const slstm *s, const char *x, const char *x_t, const char *t, int64_t w, char *out) {
    fedc__mlir *m = s->l->m;
    char one_t[160], row_t[160], names[160], types[160], d[24];
    starts(s, t, names, types);
    rtype(s, w, 1, one_t), rtype(s, w, 0, row_t);
    fedc__mlir_tmp(m, d);
    fedc__mlir_printf(m, "    %s = \"stablehlo.dynamic_slice\"(%s, %s) {slice_sizes = array<i64: ", d, x, names);
    if (s->c) fedc__mlir_printf(m, "%d, ", m->clients);
    fedc__mlir_printf(m, "1, %lld, %lld>} : (%s, %s) -> %s\n", (long long)s->B, (long long)w, x_t, types, one_t);
    op1(s->l, fedc__mlir_tmp(m, out), "stablehlo.reshape", "", d, one_t, row_t);
    return out;
}

/* Sequence acc [T, B, w] with row t replaced by r. */
static const char *row_into(const slstm *s, const char *r, const char *acc, const char *acc_t, const char *t, int64_t w,
                            char *out) {
    fedc__mlir *m = s->l->m;
    char one_t[160], row_t[160], names[160], types[160], u[24];
    starts(s, t, names, types);
    op1(s->l, fedc__mlir_tmp(m, u), "stablehlo.reshape", "", r, rtype(s, w, 0, row_t), rtype(s, w, 1, one_t));
    fedc__mlir_tmp(m, out);
    fedc__mlir_printf(m, "    %s = \"stablehlo.dynamic_update_slice\"(%s, %s, %s) : (%s, %s, %s) -> %s\n", out, acc, u, names,
                      acc_t, one_t, types, acc_t);
    return out;
}

/* Columns [off, off + w) of row r (of width rw). */
static const char *cols(const slstm *s, const char *r, int64_t rw, int64_t off, int64_t w, char *out) {
    int64_t start[3] = {0, 0, off}, limit[3] = {s->l->m->clients, s->B, off + w}, step[3] = {1, 1, 1};
    char a[160], b[160], c[160], attr[600], from[160], to[160];
    snprintf(attr, sizeof attr, "start_indices = %s, limit_indices = %s, strides = %s", i64s(start + 1 - s->c, 2 + s->c, a),
             i64s(limit + 1 - s->c, 2 + s->c, b), i64s(step, 2 + s->c, c));
    op1(s->l, fedc__mlir_tmp(s->l->m, out), "stablehlo.slice", attr, r, rtype(s, rw, 0, from), rtype(s, w, 0, to));
    return out;
}
static const char *part(const slstm *s, const char *r, int64_t rw, int k, char *out) { return cols(s, r, rw, k * s->H, s->H, out); }

/* The n rows (widths w[i]) side by side. */
static const char *concat(const slstm *s, int n, char parts[][24], const int64_t *w, char *out) {
    const char *ins[6], *types[6];
    char t[6][160], attr[40], total_t[160];
    int64_t total = 0;
    for (int i = 0; i < n; i++) ins[i] = parts[i], types[i] = rtype(s, w[i], 0, t[i]), total += w[i];
    snprintf(attr, sizeof attr, "dimension = %d : i64", s->c + 1);
    fedc__shlo_op(s->l->m, fedc__mlir_tmp(s->l->m, out), "stablehlo.concatenate", attr, n, ins, types,
                  rtype(s, total, 0, total_t));
    return out;
}

/* x [B, K] @ wh [H, 4H] (transposed: @ wh^T, K = 4H), as dot_general. */
static const char *times_wh(const slstm *s, const char *x, fedc_value wh, bool transposed, char *out) {
    int cw = lead(s->l, wh);
    int64_t k = transposed ? 4 * s->H : s->H, n = transposed ? s->H : 4 * s->H;
    char attr[400], xt[160], wt[160], ot[160];
    snprintf(attr, sizeof attr, "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [%s], "
             "rhs_batching_dimensions = [%s], lhs_contracting_dimensions = [%d], rhs_contracting_dimensions = [%d]>",
             s->c && cw ? "0" : "", s->c && cw ? "0" : "", s->c + 1, cw + (transposed ? 1 : 0));
    fedc__shlo_op(s->l->m, fedc__mlir_tmp(s->l->m, out), "stablehlo.dot_general", attr, 2, (const char *[]){x, name(s->l, wh)},
                  (const char *[]){rtype(s, k, 0, xt), type_str(s->l, wh, wt)}, rtype(s, n, 0, ot));
    return out;
}

/* 1 / (1 + exp(-a)), as the LSTM kernels compute the sigmoid. */
static const char *sigmoid(const slstm *s, const char *a, char *out) {
    char n[24], e[24], one[24], d[24];
    ew(s, "stablehlo.exponential", ew(s, "stablehlo.negate", a, NULL, s->H, n), NULL, s->H, e);
    ew(s, "stablehlo.add", splat(s, 1, s->H, one), e, s->H, d);
    return ew(s, "stablehlo.divide", one, d, s->H, out);
}

/* The slope of a gate's activation from its value v: 1 - v^2 (tanh) or
 * v (1 - v) (sigmoid). */
static const char *slope(const slstm *s, const char *v, bool tanh_gate, char *out) {
    char one[24], a[24];
    splat(s, 1, s->H, one);
    if (tanh_gate) return ew(s, "stablehlo.subtract", one, ew(s, "stablehlo.multiply", v, v, s->H, a), s->H, out);
    return ew(s, "stablehlo.multiply", v, ew(s, "stablehlo.subtract", one, v, s->H, a), s->H, out);
}

/* Row t - 1's c (columns H..2H of the trace), zeros at t = 0. */
static const char *previous_c(const slstm *s, const char *trace, const char *trace_t, const char *t, char *out) {
    fedc__mlir *m = s->l->m;
    char one[24], pos[24], tp[24], safe[24], prow[24], c[24], z[24], ht[160];
    fedc__mlir_tmp(m, pos);
    fedc__mlir_printf(m, "    %s = \"stablehlo.compare\"(%s, %s) {comparison_direction = #stablehlo<comparison_direction GT>, "
                      "compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<i32>, tensor<i32>) -> tensor<i1>\n",
                      pos, t, s->zero);
    fedc__shlo_splat(m, FEDC_I32, 1, "tensor<i32>", one);
    op2(s->l, fedc__mlir_tmp(m, tp), "stablehlo.subtract", "", t, one, "tensor<i32>", "tensor<i32>");
    fedc__shlo_op(m, fedc__mlir_tmp(m, safe), "stablehlo.select", "", 3, (const char *[]){pos, tp, s->zero},
                  (const char *[]){"tensor<i1>", "tensor<i32>", "tensor<i32>"}, "tensor<i32>");
    row_at(s, trace, trace_t, safe, 6 * s->H, prow);
    cols(s, prow, 6 * s->H, s->H, s->H, c);
    splat(s, 0, s->H, z);
    rtype(s, s->H, 0, ht);
    fedc__shlo_op(m, fedc__mlir_tmp(m, out), "stablehlo.select", "", 3, (const char *[]){pos, c, z},
                  (const char *[]){"tensor<i1>", ht, ht}, ht);
    return out;
}

/* ------------------------------------------------------------ the loop -- */

/* The while's head: t from 0, the n state values starting at inits, the
 * condition t < T; then the body's block, whose arguments are %w<id>_0 (t) and
 * %w<id>_1.. (the state). The body's step is *t: t, or T - 1 - t when down. */
static int loop_begin(slstm *s, int n, const char *const *inits, const char *const *types, char *result, char *t, bool down) {
    fedc__mlir *m = s->l->m;
    int id = m->tmp++;
    char t0[24], k[24], lt[24];
    fedc__shlo_splat(m, FEDC_I32, 0, "tensor<i32>", t0);
    fedc__mlir_tmp(m, result);
    fedc__mlir_printf(m, "    %s:%d = \"stablehlo.while\"(%s", result, n + 1, t0);
    for (int i = 0; i < n; i++) fedc__mlir_printf(m, ", %s", inits[i]);
    fedc__mlir_printf(m, ") ({\n");
    for (int pass = 0; pass < 2; pass++) { /* the condition's region, then the body's: the same block arguments */
        fedc__mlir_printf(m, "    ^bb0(%%w%d_0: tensor<i32>", id);
        for (int i = 0; i < n; i++) fedc__mlir_printf(m, ", %%w%d_%d: %s", id, i + 1, types[i]);
        fedc__mlir_printf(m, "):\n");
        if (pass == 1) break;
        fedc__shlo_splat(m, FEDC_I32, (double)s->T, "tensor<i32>", k);
        fedc__mlir_tmp(m, lt);
        fedc__mlir_printf(m, "    %s = \"stablehlo.compare\"(%%w%d_0, %s) {comparison_direction = "
                          "#stablehlo<comparison_direction LT>, compare_type = #stablehlo<comparison_type SIGNED>} : "
                          "(tensor<i32>, tensor<i32>) -> tensor<i1>\n    \"stablehlo.return\"(%s) : (tensor<i1>) -> ()\n"
                          "    }, {\n", lt, id, k, lt);
    }
    fedc__shlo_splat(m, FEDC_I32, 0, "tensor<i32>", s->zero);
    snprintf(t, 24, "%%w%d_0", id);
    if (down) {
        char last[24], r[24];
        fedc__shlo_splat(m, FEDC_I32, (double)(s->T - 1), "tensor<i32>", last);
        op2(s->l, fedc__mlir_tmp(m, r), "stablehlo.subtract", "", last, t, "tensor<i32>", "tensor<i32>");
        snprintf(t, 24, "%s", r);
    }
    return id;
}

/* State value i of loop id, into out (of 24). */
static const char *state(int id, int i, char *out) {
    snprintf(out, 24, "%%w%d_%d", id, i + 1);
    return out;
}

/* The body's return of t + 1 and the new state, and the while's types. */
static void loop_end(const slstm *s, int id, int n, char values[][24], const char *const *types) {
    fedc__mlir *m = s->l->m;
    char one[24], t1[24], t[24];
    snprintf(t, sizeof t, "%%w%d_0", id);
    fedc__shlo_splat(m, FEDC_I32, 1, "tensor<i32>", one);
    op2(s->l, fedc__mlir_tmp(m, t1), "stablehlo.add", "", t, one, "tensor<i32>", "tensor<i32>");
    fedc__mlir_printf(m, "    \"stablehlo.return\"(%s", t1);
    for (int i = 0; i < n; i++) fedc__mlir_printf(m, ", %s", values[i]);
    for (int pass = 0; pass < 3; pass++) { /* the return's operand types, the while's operands' and results' */
        fedc__mlir_printf(m, pass == 0 ? ") : (tensor<i32>" : pass == 1 ? ") -> ()\n    }) : (tensor<i32>" : ") -> (tensor<i32>");
        for (int i = 0; i < n; i++) fedc__mlir_printf(m, ", %s", types[i]);
    }
    fedc__mlir_printf(m, ")\n");
}

/* ----------------------------------------------------------- the forward -- */

fedc_status fedc__shlo_lstm(const lower *l) {
    fedc_value xw = l->n->in[0], wh = l->n->in[1];
    slstm s;
    slstm_init(l, xw, wh, &s);
    int64_t H = s.H;
    if (lead(l, wh) && !s.c) return unsupported(l, "an lstm with clients' weights and a server sequence");
    char tr_t[160], h_t[160], xw_t[160], z[3][24], R[24], t[24], h[24], c[24], tr[24];
    rtype(&s, 6 * H, s.T, tr_t), rtype(&s, H, 0, h_t), type_str(l, xw, xw_t);
    splat(&s, 0, H, z[0]), splat(&s, 0, H, z[1]);
    fedc__shlo_splat(l->m, s.dt, 0, tr_t, z[2]);
    const char *types[3] = {h_t, h_t, tr_t};
    int id = loop_begin(&s, 3, (const char *[]){z[0], z[1], z[2]}, types, R, t, false);
    state(id, 0, h), state(id, 1, c), state(id, 2, tr);
    char x[24], hw[24], a[24], pre[4][24], gates[6][24], fc[24], ig[24], th[24], out[3][24];
    row_at(&s, name(l, xw), xw_t, t, 4 * H, x);
    ew(&s, "stablehlo.add", x, times_wh(&s, h, wh, false, hw), 4 * H, a);
    for (int k = 0; k < 4; k++) part(&s, a, 4 * H, k, pre[k]);
    sigmoid(&s, pre[0], gates[2]), ew(&s, "stablehlo.tanh", pre[1], NULL, H, gates[3]); /* i, g */
    sigmoid(&s, pre[2], gates[4]), sigmoid(&s, pre[3], gates[5]);                     /* f, o */
    /* c = f c_prev + i g; h = o tanh(c) */
    ew(&s, "stablehlo.multiply", gates[4], c, H, fc);
    ew(&s, "stablehlo.multiply", gates[2], gates[3], H, ig);
    ew(&s, "stablehlo.add", fc, ig, H, gates[1]);
    ew(&s, "stablehlo.multiply", gates[5], ew(&s, "stablehlo.tanh", gates[1], NULL, H, th), H, gates[0]);
    char row[24];
    concat(&s, 6, gates, (int64_t[]){H, H, H, H, H, H}, row);
    snprintf(out[0], 24, "%s", gates[0]), snprintf(out[1], 24, "%s", gates[1]);
    row_into(&s, row, tr, tr_t, t, 6 * H, out[2]);
    loop_end(&s, id, 3, out, types);
    snprintf(l->s->name[l->v], sizeof l->s->name[l->v], "%.30s#3", R);
    return l->m->st;
}

/* ---------------------------------------------------------- the backward -- */

fedc_status fedc__shlo_lstm_grad(const lower *l) {
    fedc_value trace = l->n->in[0], dtrace = l->n->in[1], wh = l->n->in[2];
    slstm s;
    slstm_init(l, trace, wh, &s);
    int64_t H = s.H;
    if (lead(l, wh) && !s.c) return unsupported(l, "an lstm_grad with clients' weights and a server trace");
    char tr_t[160], dx_t[160], h_t[160], g_t[160], z[3][24], R[24], t[24], dnext[24], dcrec[24], dx[24];
    type_str(l, trace, tr_t), rtype(&s, 4 * H, s.T, dx_t), rtype(&s, H, 0, h_t), rtype(&s, 4 * H, 0, g_t);
    splat(&s, 0, 4 * H, z[0]), splat(&s, 0, H, z[1]);
    fedc__shlo_splat(l->m, s.dt, 0, dx_t, z[2]);
    const char *types[3] = {g_t, h_t, dx_t};
    int id = loop_begin(&s, 3, (const char *[]){z[0], z[1], z[2]}, types, R, t, true);
    state(id, 0, dnext), state(id, 1, dcrec), state(id, 2, dx);
    char row[24], drow[24], cprev[24], dhr[24], dh[24], tr[6][24], dt[6][24];
    row_at(&s, name(l, trace), tr_t, t, 6 * H, row);
    row_at(&s, name(l, dtrace), tr_t, t, 6 * H, drow);
    for (int k = 0; k < 6; k++) part(&s, row, 6 * H, k, tr[k]), part(&s, drow, 6 * H, k, dt[k]); /* h c i g f o */
    previous_c(&s, name(l, trace), tr_t, t, cprev);
    ew(&s, "stablehlo.add", dt[0], times_wh(&s, dnext, wh, true, dhr), H, dh); /* dh = dtrace_h + dh_rec */
    /* dc = dh o (1 - tanh(c)^2) + dtrace_c + dc_rec */
    char tc[24], sl[24], a[24], b[24], e[24], dc[24];
    slope(&s, ew(&s, "stablehlo.tanh", tr[1], NULL, H, tc), true, sl);
    ew(&s, "stablehlo.multiply", ew(&s, "stablehlo.multiply", dh, tr[5], H, a), sl, H, b);
    ew(&s, "stablehlo.add", ew(&s, "stablehlo.add", b, dt[1], H, e), dcrec, H, dc);
    /* each gate's preactivation gradient: (by x + dtrace_gate) * slope(gate):
     * di = dc g, dg = dc i, df = dc c_prev, do = dh tanh(c) */
    const char *by[4] = {dc, dc, dc, dh}, *x[4] = {tr[3], tr[2], cprev, tc};
    char grads[4][24];
    for (int k = 0; k < 4; k++) {
        char p[24], q[24], g[24];
        ew(&s, "stablehlo.add", ew(&s, "stablehlo.multiply", by[k], x[k], H, p), dt[2 + k], H, q);
        ew(&s, "stablehlo.multiply", q, slope(&s, tr[2 + k], k == 1, g), H, grads[k]);
    }
    char dxw[24], out[3][24];
    concat(&s, 4, grads, (int64_t[]){H, H, H, H}, dxw);
    snprintf(out[0], 24, "%s", dxw);
    ew(&s, "stablehlo.multiply", dc, tr[4], H, out[1]); /* for step t-1: dc f */
    row_into(&s, dxw, dx, dx_t, t, 4 * H, out[2]);
    loop_end(&s, id, 3, out, types);
    snprintf(l->s->name[l->v], sizeof l->s->name[l->v], "%.30s#3", R);
    return l->m->st;
}

/* ----------------------------------------------------------- the tangent -- */

fedc_status fedc__shlo_lstm_tangent(const lower *l) {
    fedc_value trace = l->n->in[0], dxw = l->n->in[1], wh = l->n->in[2];
    slstm s;
    slstm_init(l, trace, wh, &s);
    int64_t H = s.H;
    if (lead(l, wh) && !s.c) return unsupported(l, "an lstm_tangent with clients' weights and a server trace");
    char tr_t[160], dx_t[160], r6_t[160], z[2][24], R[24], t[24], prev[24], acc[24];
    type_str(l, trace, tr_t), type_str(l, dxw, dx_t), rtype(&s, 6 * H, 0, r6_t);
    splat(&s, 0, 6 * H, z[0]);
    fedc__shlo_splat(l->m, s.dt, 0, tr_t, z[1]);
    const char *types[2] = {r6_t, tr_t};
    int id = loop_begin(&s, 2, (const char *[]){z[0], z[1]}, types, R, t, false);
    state(id, 0, prev), state(id, 1, acc);
    char row[24], cprev[24], x[24], dhp[24], dcp[24], hw[24], da[24], tr[6][24], d[6][24];
    row_at(&s, name(l, trace), tr_t, t, 6 * H, row);
    for (int k = 0; k < 6; k++) part(&s, row, 6 * H, k, tr[k]);
    previous_c(&s, name(l, trace), tr_t, t, cprev);
    row_at(&s, name(l, dxw), dx_t, t, 4 * H, x);
    part(&s, prev, 6 * H, 0, dhp), part(&s, prev, 6 * H, 1, dcp);
    ew(&s, "stablehlo.add", x, times_wh(&s, dhp, wh, false, hw), 4 * H, da);
    for (int k = 0; k < 4; k++) { /* dgate = da * slope(gate) */
        char p[24], sl[24];
        part(&s, da, 4 * H, k, p);
        ew(&s, "stablehlo.multiply", p, slope(&s, tr[2 + k], k == 1, sl), H, d[2 + k]);
    }
    /* dc = df c_prev + f dc_prev + di g + i dg */
    char a[24], b[24], c[24], e[24], f[24], g[24];
    ew(&s, "stablehlo.multiply", d[4], cprev, H, a), ew(&s, "stablehlo.multiply", tr[4], dcp, H, b);
    ew(&s, "stablehlo.add", a, b, H, c);
    ew(&s, "stablehlo.multiply", d[2], tr[3], H, e), ew(&s, "stablehlo.multiply", tr[2], d[3], H, f);
    ew(&s, "stablehlo.add", e, f, H, g);
    ew(&s, "stablehlo.add", c, g, H, d[1]);
    /* dh = do tanh(c) + o (1 - tanh(c)^2) dc */
    char tc[24], sl[24], p[24], q[24], r[24];
    slope(&s, ew(&s, "stablehlo.tanh", tr[1], NULL, H, tc), true, sl);
    ew(&s, "stablehlo.multiply", ew(&s, "stablehlo.multiply", tr[5], sl, H, p), d[1], H, q);
    ew(&s, "stablehlo.add", ew(&s, "stablehlo.multiply", d[5], tc, H, r), q, H, d[0]);
    char out[2][24];
    concat(&s, 6, d, (int64_t[]){H, H, H, H, H, H}, out[0]);
    row_into(&s, out[0], acc, tr_t, t, 6 * H, out[1]);
    loop_end(&s, id, 2, out, types);
    snprintf(l->s->name[l->v], sizeof l->s->name[l->v], "%.30s#2", R);
    return l->m->st;
}
