/* The fused LSTM (src/kernels/ref_lstm.c: Haiku's cell without the forget bias)
 * as an scf.for over the time steps:
 *  - lstm: a_t = xw[t] + h[t-1] @ wh, gates i g f o (tanh for g, sigmoid for the
 *    rest), c[t] = f c[t-1] + i g, h[t] = o tanh(c[t]); each step writes the row
 *    [h, c, i, g, f, o] of the trace [T, B, 6H];
 *  - lstm_grad: backpropagation through time, from the last step down, carrying
 *    dxw[t+1] (whose product with wh^T is what h[t] gets through step t+1) and
 *    dc f;
 *  - lstm_tangent: the forward-mode rule, carrying the tangent row of step t-1.
 * Rows of a [T, B, w] value are read and written with tensor slices; a step's
 * element formulas are linalg.generic bodies that read the rows' parts through
 * maps with offsets (column q H + j). */
#include <string.h>

#include "export/mlir_lower.h"

typedef struct lstm {
    int64_t T, B, H;
    bool c;
    fedc_dtype dt;
    const char *elem;
    char lead[16], zero_at[8], one_at[8]; /* "N, " / "0, " / "1, " for the clients axis */
} lstm;

static void lstm_init(const lower *l, fedc_value seq, fedc_value wh, lstm *s) {
    const fedc_type *t = type_of(l, seq);
    *s = (lstm){.T = t->dims[0], .B = t->dims[1], .H = type_of(l, wh)->dims[0], .c = clients(l, l->v), .dt = t->dtype,
                .elem = fedc__mlir_elem(t->dtype)};
    if (s->c) snprintf(s->lead, sizeof s->lead, "%d, ", l->m->clients);
    snprintf(s->zero_at, sizeof s->zero_at, "%s", s->c ? "0, " : "");
    snprintf(s->one_at, sizeof s->one_at, "%s", s->c ? "1, " : "");
}

/* The type of a [B, w] row (or [T, B, w] sequence when seq). */
static const char *row_type(const lower *l, const lstm *s, int64_t w, bool seq, char *out) {
    fedc_type t = seq ? fedc_type_make(s->dt, 3, (int64_t[]){s->T, s->B, w}) : fedc_type_make(s->dt, 2, (int64_t[]){s->B, w});
    return fedc__mlir_tensor(l->m, &t, s->c, out, 160);
}

static const char *zeros(const lower *l, const lstm *s, const char *type, char *out) {
    char lit[32];
    fedc__mlir_tensor_const(l->m, out, fedc__mlir_literal(s->dt, 0, lit, sizeof lit), type);
    return out;
}

/* Row t (an index SSA value) of sequence x [T, B, w]. */
static const char *row_at(const lower *l, const lstm *s, const char *x, const char *x_type, const char *t, int64_t w,
                          char *out) {
    char type[160];
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = tensor.extract_slice %s[%s%s, 0, 0] [%s1, %lld, %lld] [%s1, 1, 1] : %s to %s\n", out,
                      x, s->zero_at, t, s->lead, (long long)s->B, (long long)w, s->one_at, x_type,
                      row_type(l, s, w, false, type));
    return out;
}

/* Writes row `r` [B, w] at step t of sequence acc. */
static const char *row_into(const lower *l, const lstm *s, const char *r, const char *acc, const char *acc_type,
                            const char *t, int64_t w, char *out) {
    char type[160];
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = tensor.insert_slice %s into %s[%s%s, 0, 0] [%s1, %lld, %lld] [%s1, 1, 1] : %s into %s\n",
                      out, r, acc, s->zero_at, t, s->lead, (long long)s->B, (long long)w, s->one_at,
                      row_type(l, s, w, false, type), acc_type);
    return out;
}

/* The identity map of a [c?, B, w] row. */
static void row_map(const lstm *s, char *out) { snprintf(out, 160, "%sd%d, d%d", s->c ? "d0, " : "", s->c, s->c + 1); }

/* A generic over [c?, B, width] reading `n` operands, each (name, type, map). */
static void row_generic(const lower *l, const lstm *s, fedc__mlir_generic *g, int64_t width, int n, const char *const *names,
                        const char *const *types, const char *const *maps, char *out_map, char *out_type, char *init,
                        const char *result) {
    snprintf(out_map, 160, "%sd%d, d%d", s->c ? "d0, " : "", s->c, s->c + 1);
    row_type(l, s, width, false, out_type);
    zeros(l, s, out_type, init);
    *g = (fedc__mlir_generic){.rank = 2 + s->c, .iters = "ppp", .nin = n, .out_map = out_map, .out_type = out_type,
                              .out_elem = s->elem, .init = init, .result_name = result};
    for (int i = 0; i < n; i++) g->in[i] = names[i], g->in_type[i] = types[i], g->in_elem[i] = s->elem, g->maps[i] = maps[i];
    fedc__mlir_generic_begin(l->m, g);
}

/* acc[b, k] += sum_j h[b, j] wh[j, k] (transposed: wh[k, j]), acc starting as `init`. */
static const char *times_wh(const lower *l, const lstm *s, const char *h, const char *h_type, const char *wh,
                            const char *wh_type, bool wh_clients, bool transposed, const char *init, const char *init_type,
                            char *out) {
    char hmap[160], wmap[160], omap[160], p[24], r[24];
    const char *c = s->c ? "d0, " : "", *wc = s->c && wh_clients ? "d0, " : "";
    int b = s->c, k = s->c + 1, j = s->c + 2;
    snprintf(hmap, sizeof hmap, "%sd%d, d%d", c, b, j);
    if (transposed) snprintf(wmap, sizeof wmap, "%sd%d, d%d", wc, k, j);
    else snprintf(wmap, sizeof wmap, "%sd%d, d%d", wc, j, k);
    snprintf(omap, sizeof omap, "%sd%d, d%d", c, b, k);
    fedc__mlir_generic g = {.rank = 3 + s->c, .iters = s->c ? "pppr" : "ppr", .nin = 2, .in = {h, wh},
                            .in_type = {h_type, wh_type}, .in_elem = {s->elem, s->elem}, .maps = {hmap, wmap},
                            .out_map = omap, .out_type = init_type, .out_elem = s->elem, .init = init,
                            .result_name = fedc__mlir_tmp(l->m, out)};
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, "arith.addf", "%out", emit2(l, "arith.mulf", "%in0", "%in1", s->elem, p), s->elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return out;
}

/* sigmoid(a) = 1 / (1 + exp(-a)), as the LSTM kernels compute it. */
static const char *sigmoid(const lower *l, const lstm *s, const char *a, char *out) {
    char n[24], e[24], one[24], d[24];
    emit1(l, "math.exp", emit1(l, "arith.negf", a, s->elem, n), s->elem, e);
    emit2(l, "arith.addf", constant(l, 1, s->dt, one), e, s->elem, d);
    return emit2(l, "arith.divf", one, d, s->elem, out);
}

/* In a body over [c?, B, 4H]: whether column k is a tanh gate (g: H <= k < 2H). */
static const char *is_g(const lower *l, const lstm *s, char *out) {
    char k[24], lo[24], hi[24], a[24], b[24];
    loop_index_i32(l, s->c + 1, k);
    fedc__mlir_tmp(l->m, a);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi sge, %s, %s : i32\n", a, k, constant(l, (double)s->H, FEDC_I32, lo));
    fedc__mlir_tmp(l->m, b);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi slt, %s, %s : i32\n", b, k, constant(l, (double)(2 * s->H), FEDC_I32, hi));
    return emit2(l, "arith.andi", a, b, "i1", out);
}

/* Columns [off, off + w) of row r (of width rw), as a [B, w] row. */
static const char *cols_of(const lower *l, const lstm *s, const char *r, int64_t rw, int64_t off, int64_t w, char *out) {
    char from[160], to[160];
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = tensor.extract_slice %s[%s0, %lld] [%s%lld, %lld] [%s1, 1] : %s to %s\n", out, r,
                      s->zero_at, (long long)off, s->lead, (long long)s->B, (long long)w, s->one_at,
                      row_type(l, s, rw, false, from), row_type(l, s, w, false, to));
    return out;
}

/* Row `into` (width iw) with columns [off, off + w) replaced by part. */
static const char *cols_into(const lower *l, const lstm *s, const char *part, int64_t w, const char *into, int64_t iw,
                             int64_t off, char *out) {
    char from[160], to[160];
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = tensor.insert_slice %s into %s[%s0, %lld] [%s%lld, %lld] [%s1, 1] : %s into %s\n", out,
                      part, into, s->zero_at, (long long)off, s->lead, (long long)s->B, (long long)w, s->one_at,
                      row_type(l, s, w, false, from), row_type(l, s, iw, false, to));
    return out;
}

/* Concatenates `n` rows (widths w[i]) into one of width total. */
static const char *concat_cols(const lower *l, const lstm *s, int n, char parts[][24], const int64_t *w, int64_t total,
                               char *out) {
    char type[160], acc[24], next[24];
    zeros(l, s, row_type(l, s, total, false, type), acc);
    for (int i = 0, off = 0; i < n; off += (int)w[i], i++) {
        cols_into(l, s, parts[i], w[i], acc, total, off, next);
        snprintf(acc, sizeof acc, "%s", next);
    }
    snprintf(out, 24, "%s", acc);
    return out;
}

/* The loop head: %R:n = scf.for %t = 0 to T iter_args(...); the caller writes
 * the body and the yield. `down` counts t from T-1 to 0 (tname is the step). */
static void loop_begin(const lower *l, const lstm *s, int n, char iters[][24], const char *const *inits,
                       const char *const *types, char *result, char *t, bool down) {
    char c0[24], c1[24], cT[24], i[24];
    fedc__mlir_tmp(l->m, c0), fedc__mlir_tmp(l->m, c1), fedc__mlir_tmp(l->m, cT);
    fedc__mlir_printf(l->m, "    %s = arith.constant 0 : index\n    %s = arith.constant 1 : index\n    %s = arith.constant %lld : index\n",
                      c0, c1, cT, (long long)s->T);
    fedc__mlir_tmp(l->m, result), fedc__mlir_tmp(l->m, i);
    fedc__mlir_printf(l->m, "    %s:%d = scf.for %s = %s to %s step %s iter_args(", result, n, i, c0, cT, c1);
    for (int k = 0; k < n; k++) {
        fedc__mlir_tmp(l->m, iters[k]);
        fedc__mlir_printf(l->m, "%s%s = %s", k ? ", " : "", iters[k], inits[k]);
    }
    fedc__mlir_printf(l->m, ") -> (");
    for (int k = 0; k < n; k++) fedc__mlir_printf(l->m, "%s%s", k ? ", " : "", types[k]);
    fedc__mlir_printf(l->m, ") {\n");
    if (!down) {
        snprintf(t, 24, "%s", i);
        return;
    }
    char last[24];
    fedc__mlir_tmp(l->m, last);
    fedc__mlir_printf(l->m, "      %s = arith.constant %lld : index\n", last, (long long)(s->T - 1));
    fedc__mlir_tmp(l->m, t);
    fedc__mlir_printf(l->m, "      %s = arith.subi %s, %s : index\n", t, last, i);
}

static void loop_end(const lower *l, int n, char values[][24], const char *const *types) {
    fedc__mlir_printf(l->m, "      scf.yield");
    for (int k = 0; k < n; k++) fedc__mlir_printf(l->m, "%s %s", k ? "," : "", values[k]);
    fedc__mlir_printf(l->m, " : ");
    for (int k = 0; k < n; k++) fedc__mlir_printf(l->m, "%s%s", k ? ", " : "", types[k]);
    fedc__mlir_printf(l->m, "\n    }\n");
}

/* Row t - 1 of trace (its c at columns H..2H), zeros at t = 0. */
static const char *previous_c(const lower *l, const lstm *s, const char *trace, const char *trace_type, const char *t,
                              char *out) {
    char zero[24], one[24], pos[24], tp[24], safe[24], prow[24], c[24], z[24], type[160];
    fedc__mlir_tmp(l->m, zero), fedc__mlir_tmp(l->m, one);
    fedc__mlir_printf(l->m, "      %s = arith.constant 0 : index\n      %s = arith.constant 1 : index\n", zero, one);
    fedc__mlir_tmp(l->m, pos);
    fedc__mlir_printf(l->m, "      %s = arith.cmpi sgt, %s, %s : index\n", pos, t, zero);
    fedc__mlir_tmp(l->m, tp);
    fedc__mlir_printf(l->m, "      %s = arith.subi %s, %s : index\n", tp, t, one);
    fedc__mlir_tmp(l->m, safe);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : index\n", safe, pos, tp, zero);
    row_at(l, s, trace, trace_type, safe, 6 * s->H, prow);
    cols_of(l, s, prow, 6 * s->H, s->H, s->H, c);
    zeros(l, s, row_type(l, s, s->H, false, type), z);
    fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", out, pos, c, z, type);
    return out;
}

/* Part k (columns k H .. k H + H) of a row of width w, as a [B, H] row: every
 * pass then reads [B, H] operands through one map (linalg infers a loop's range
 * from the first operand that indexes by it). */
static const char *part(const lower *l, const lstm *s, const char *r, int64_t w, int k, char *out) {
    return cols_of(l, s, r, w, k * s->H, s->H, out);
}

/* A [B, H] pass on n [B, H] operands; the body is the caller's. */
static void h_pass(const lower *l, const lstm *s, fedc__mlir_generic *g, int n, const char *const *names, char *omap,
                   char *ot, char *init, char *result) {
    const char *types[8], *maps[8]; /* read by the head only, which row_generic writes now */
    char h_t[160], map[160];
    row_type(l, s, s->H, false, h_t);
    row_map(s, map);
    for (int i = 0; i < n; i++) types[i] = h_t, maps[i] = map;
    row_generic(l, s, g, s->H, n, names, types, maps, omap, ot, init, fedc__mlir_tmp(l->m, result));
}

/* The derivative of a gate's activation from its value v: 1 - v^2 (tanh) or
 * v (1 - v) (sigmoid). */
static const char *activation_slope(const lower *l, const lstm *s, const char *v, bool tanh_gate, char *out) {
    char one[24], a[24], b[24];
    constant(l, 1, s->dt, one);
    if (tanh_gate) return emit2(l, "arith.subf", one, emit2(l, "arith.mulf", v, v, s->elem, a), s->elem, out);
    return emit2(l, "arith.mulf", v, emit2(l, "arith.subf", one, v, s->elem, b), s->elem, out);
}

/* The gates' activations from the preactivation a [B, 4H]: tanh for g, sigmoid
 * for i, f and o. */
static const char *activate(const lower *l, const lstm *s, const char *a, char *out) {
    fedc__mlir_generic gen;
    char g_t[160], map[160], omap[160], ot[160], init[24], th[24], sg[24], ig[24], sel[24];
    row_type(l, s, 4 * s->H, false, g_t);
    row_map(s, map);
    row_generic(l, s, &gen, 4 * s->H, 1, (const char *[]){a}, (const char *[]){g_t}, (const char *[]){map}, omap, ot, init,
                fedc__mlir_tmp(l->m, out));
    emit1(l, "math.tanh", "%in0", s->elem, th);
    sigmoid(l, s, "%in0", sg);
    fedc__mlir_tmp(l->m, sel);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", sel, is_g(l, s, ig), th, sg, s->elem);
    fedc__mlir_generic_end(l->m, &gen, sel);
    return out;
}

/* ----------------------------------------------------------- the forward -- */

fedc_status fedc__lower_lstm(const lower *l) {
    fedc_value xw = l->n->in[0], wh = l->n->in[1];
    lstm s;
    lstm_init(l, xw, wh, &s);
    int64_t H = s.H;
    char tr_t[160], h_t[160], g_t[160], xw_t[160], wh_t[160], z[3][24], it[3][24], R[24], t[24];
    row_type(l, &s, 6 * H, true, tr_t), row_type(l, &s, H, false, h_t), row_type(l, &s, 4 * H, false, g_t);
    fedc__mlir_type_of(l->m, l->s, xw, xw_t, sizeof xw_t), fedc__mlir_type_of(l->m, l->s, wh, wh_t, sizeof wh_t);
    zeros(l, &s, h_t, z[0]), zeros(l, &s, h_t, z[1]), zeros(l, &s, tr_t, z[2]);
    const char *types[3] = {h_t, h_t, tr_t};
    loop_begin(l, &s, 3, it, (const char *[]){z[0], z[1], z[2]}, types, R, t, false);
    char x[24], a[24], gates[24], gi[24], gg[24], gf[24], go[24], cnew[24], hnew[24], p[24], q[24], r[24];
    row_at(l, &s, name(l, xw), xw_t, t, 4 * H, x);
    times_wh(l, &s, it[0], h_t, name(l, wh), wh_t, clients(l, wh), false, x, g_t, a);
    activate(l, &s, a, gates);
    part(l, &s, gates, 4 * H, 0, gi), part(l, &s, gates, 4 * H, 1, gg);
    part(l, &s, gates, 4 * H, 2, gf), part(l, &s, gates, 4 * H, 3, go);
    fedc__mlir_generic g;
    char omap[160], ot[160], init[24];
    h_pass(l, &s, &g, 4, (const char *[]){gi, gg, gf, it[1]}, omap, ot, init, cnew); /* c = f c_prev + i g */
    emit2(l, "arith.mulf", "%in2", "%in3", s.elem, p);
    emit2(l, "arith.mulf", "%in0", "%in1", s.elem, q);
    emit2(l, "arith.addf", p, q, s.elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    h_pass(l, &s, &g, 2, (const char *[]){go, cnew}, omap, ot, init, hnew); /* h = o tanh(c) */
    emit2(l, "arith.mulf", "%in0", emit1(l, "math.tanh", "%in1", s.elem, p), s.elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    char parts[3][24], row[24], out[3][24];
    snprintf(parts[0], 24, "%s", hnew), snprintf(parts[1], 24, "%s", cnew), snprintf(parts[2], 24, "%s", gates);
    concat_cols(l, &s, 3, parts, (int64_t[]){H, H, 4 * H}, 6 * H, row);
    snprintf(out[0], 24, "%s", hnew), snprintf(out[1], 24, "%s", cnew);
    row_into(l, &s, row, it[2], tr_t, t, 6 * H, out[2]);
    loop_end(l, 3, out, types);
    snprintf(l->s->name[l->v], sizeof l->s->name[l->v], "%s#2", R);
    return l->m->st;
}

/* ---------------------------------------------------------- the backward -- */

fedc_status fedc__lower_lstm_grad(const lower *l) {
    fedc_value trace = l->n->in[0], dtrace = l->n->in[1], wh = l->n->in[2];
    lstm s;
    lstm_init(l, trace, wh, &s);
    int64_t H = s.H;
    char tr_t[160], dx_t[160], h_t[160], g_t[160], wh_t[160], z[3][24], it[3][24], R[24], t[24];
    fedc__mlir_type_of(l->m, l->s, trace, tr_t, sizeof tr_t), fedc__mlir_type_of(l->m, l->s, wh, wh_t, sizeof wh_t);
    row_type(l, &s, 4 * H, true, dx_t), row_type(l, &s, H, false, h_t), row_type(l, &s, 4 * H, false, g_t);
    zeros(l, &s, g_t, z[0]), zeros(l, &s, h_t, z[1]), zeros(l, &s, dx_t, z[2]);
    const char *types[3] = {g_t, h_t, dx_t};
    loop_begin(l, &s, 3, it, (const char *[]){z[0], z[1], z[2]}, types, R, t, true);
    char row[24], drow[24], cprev[24], hz[24], dhr[24], dh[24], dc[24], tr[6][24], dt[6][24];
    row_at(l, &s, name(l, trace), tr_t, t, 6 * H, row);
    row_at(l, &s, name(l, dtrace), tr_t, t, 6 * H, drow);
    for (int k = 0; k < 6; k++) part(l, &s, row, 6 * H, k, tr[k]), part(l, &s, drow, 6 * H, k, dt[k]); /* h c i g f o */
    previous_c(l, &s, name(l, trace), tr_t, t, cprev);
    times_wh(l, &s, it[0], g_t, name(l, wh), wh_t, clients(l, wh), true, zeros(l, &s, h_t, hz), h_t, dhr);
    fedc__mlir_generic g;
    char omap[160], ot[160], init[24], a[24], b[24], c[24], d[24], e[24], f[24];
    h_pass(l, &s, &g, 2, (const char *[]){dt[0], dhr}, omap, ot, init, dh); /* dh = dtrace_h + dh_rec */
    fedc__mlir_generic_end(l->m, &g, emit2(l, "arith.addf", "%in0", "%in1", s.elem, a));
    /* dc = dh o (1 - tanh(c)^2) + dtrace_c + dc_rec */
    h_pass(l, &s, &g, 5, (const char *[]){dh, tr[5], tr[1], dt[1], it[1]}, omap, ot, init, dc);
    emit1(l, "math.tanh", "%in2", s.elem, a);
    activation_slope(l, &s, a, true, b);
    emit2(l, "arith.mulf", emit2(l, "arith.mulf", "%in0", "%in1", s.elem, c), b, s.elem, d);
    emit2(l, "arith.addf", emit2(l, "arith.addf", d, "%in3", s.elem, e), "%in4", s.elem, f);
    fedc__mlir_generic_end(l->m, &g, f);
    /* each gate's preactivation gradient: (by x + dtrace_gate) * slope(gate) */
    const char *by[4] = {dc, dc, dc, dh}, *x[4] = {tr[3], tr[2], cprev, tr[1]};
    char gate_grad[4][24];
    for (int k = 0; k < 4; k++) { /* di = dc g, dg = dc i, df = dc c_prev, do = dh tanh(c) */
        h_pass(l, &s, &g, 4, (const char *[]){by[k], x[k], dt[2 + k], tr[2 + k]}, omap, ot, init, gate_grad[k]);
        const char *xv = k == 3 ? emit1(l, "math.tanh", "%in1", s.elem, a) : "%in1";
        emit2(l, "arith.addf", emit2(l, "arith.mulf", "%in0", xv, s.elem, b), "%in2", s.elem, c);
        activation_slope(l, &s, "%in3", k == 1, d);
        fedc__mlir_generic_end(l->m, &g, emit2(l, "arith.mulf", c, d, s.elem, e));
    }
    char dxw[24], dcr[24], out[3][24];
    concat_cols(l, &s, 4, gate_grad, (int64_t[]){H, H, H, H}, 4 * H, dxw);
    h_pass(l, &s, &g, 2, (const char *[]){dc, tr[4]}, omap, ot, init, dcr); /* for step t-1: dc f */
    fedc__mlir_generic_end(l->m, &g, emit2(l, "arith.mulf", "%in0", "%in1", s.elem, a));
    snprintf(out[0], 24, "%s", dxw), snprintf(out[1], 24, "%s", dcr);
    row_into(l, &s, dxw, it[2], dx_t, t, 4 * H, out[2]);
    loop_end(l, 3, out, types);
    snprintf(l->s->name[l->v], sizeof l->s->name[l->v], "%s#2", R);
    return l->m->st;
}

/* ----------------------------------------------------------- the tangent -- */

fedc_status fedc__lower_lstm_tangent(const lower *l) {
    fedc_value trace = l->n->in[0], dxw = l->n->in[1], wh = l->n->in[2];
    lstm s;
    lstm_init(l, trace, wh, &s);
    int64_t H = s.H;
    char tr_t[160], dx_t[160], h_t[160], g_t[160], r6_t[160], wh_t[160], z[2][24], it[2][24], R[24], t[24];
    fedc__mlir_type_of(l->m, l->s, trace, tr_t, sizeof tr_t), fedc__mlir_type_of(l->m, l->s, wh, wh_t, sizeof wh_t);
    fedc__mlir_type_of(l->m, l->s, dxw, dx_t, sizeof dx_t);
    row_type(l, &s, H, false, h_t), row_type(l, &s, 4 * H, false, g_t), row_type(l, &s, 6 * H, false, r6_t);
    zeros(l, &s, r6_t, z[0]), zeros(l, &s, tr_t, z[1]);
    const char *types[2] = {r6_t, tr_t};
    loop_begin(l, &s, 2, it, (const char *[]){z[0], z[1]}, types, R, t, false);
    char row[24], cprev[24], x[24], dhp[24], dcp[24], da[24], dgates[24], dc[24], dh[24], tr[6][24], dg[4][24];
    row_at(l, &s, name(l, trace), tr_t, t, 6 * H, row);
    for (int k = 0; k < 6; k++) part(l, &s, row, 6 * H, k, tr[k]);
    previous_c(l, &s, name(l, trace), tr_t, t, cprev);
    row_at(l, &s, name(l, dxw), dx_t, t, 4 * H, x);
    part(l, &s, it[0], 6 * H, 0, dhp), part(l, &s, it[0], 6 * H, 1, dcp);
    times_wh(l, &s, dhp, h_t, name(l, wh), wh_t, clients(l, wh), false, x, g_t, da);
    /* dgate = da * slope(gate), the gates being columns 2H.. of the row */
    char gates[24], map[160], omap[160], ot[160], init[24], th[24], sg[24], ig[24], sel[24];
    cols_of(l, &s, row, 6 * H, 2 * H, 4 * H, gates);
    row_map(&s, map);
    fedc__mlir_generic g;
    row_generic(l, &s, &g, 4 * H, 2, (const char *[]){da, gates}, (const char *[]){g_t, g_t}, (const char *[]){map, map}, omap,
                ot, init, fedc__mlir_tmp(l->m, dgates));
    activation_slope(l, &s, "%in1", true, th);
    activation_slope(l, &s, "%in1", false, sg);
    fedc__mlir_tmp(l->m, sel);
    fedc__mlir_printf(l->m, "      %s = arith.select %s, %s, %s : %s\n", sel, is_g(l, &s, ig), th, sg, s.elem);
    char a[24], b[24], c[24], d[24], e[24], f[24];
    fedc__mlir_generic_end(l->m, &g, emit2(l, "arith.mulf", "%in0", sel, s.elem, a));
    for (int k = 0; k < 4; k++) part(l, &s, dgates, 4 * H, k, dg[k]);
    /* dc = df c_prev + f dc_prev + di g + i dg */
    h_pass(l, &s, &g, 8, (const char *[]){dg[2], cprev, tr[4], dcp, dg[0], tr[3], tr[2], dg[1]}, omap, ot, init, dc);
    emit2(l, "arith.mulf", "%in0", "%in1", s.elem, a);
    emit2(l, "arith.mulf", "%in2", "%in3", s.elem, b);
    emit2(l, "arith.addf", a, b, s.elem, c);
    emit2(l, "arith.mulf", "%in4", "%in5", s.elem, d);
    emit2(l, "arith.mulf", "%in6", "%in7", s.elem, e);
    emit2(l, "arith.addf", d, e, s.elem, f);
    fedc__mlir_generic_end(l->m, &g, emit2(l, "arith.addf", c, f, s.elem, a));
    /* dh = do tanh(c) + o (1 - tanh(c)^2) dc */
    h_pass(l, &s, &g, 4, (const char *[]){dg[3], tr[1], tr[5], dc}, omap, ot, init, dh);
    emit1(l, "math.tanh", "%in1", s.elem, a);
    activation_slope(l, &s, a, true, b);
    emit2(l, "arith.mulf", emit2(l, "arith.mulf", "%in2", b, s.elem, c), "%in3", s.elem, d);
    fedc__mlir_generic_end(l->m, &g, emit2(l, "arith.addf", emit2(l, "arith.mulf", "%in0", a, s.elem, e), d, s.elem, f));
    char parts[3][24], drow[24], out[2][24];
    snprintf(parts[0], 24, "%s", dh), snprintf(parts[1], 24, "%s", dc), snprintf(parts[2], 24, "%s", dgates);
    concat_cols(l, &s, 3, parts, (int64_t[]){H, H, 4 * H}, 6 * H, drow);
    snprintf(out[0], 24, "%s", drow);
    row_into(l, &s, drow, it[1], tr_t, t, 6 * H, out[1]);
    loop_end(l, 2, out, types);
    snprintf(l->s->name[l->v], sizeof l->s->name[l->v], "%s#1", R);
    return l->m->st;
}
