/* The fused LSTM for both targets (the kernels are src/kernels/ref_lstm.c:
 * Haiku's cell without the forget bias), a loop over the time steps written in
 * row operations that each target spells (spelling.h: mlir_lstm.c,
 * stablehlo_lstm.c):
 *  - lstm: a_t = xw[t] + h[t-1] @ wh, gates i g f o (tanh for g, sigmoid
 *    1 / (1 + exp(-a)) for the rest), c[t] = f c[t-1] + i g, h[t] = o tanh(c[t]);
 *    each step writes the row [h, c, i, g, f, o] of the trace [T, B, 6H];
 *  - lstm_grad: backpropagation through time, from the last step down,
 *    carrying dxw[t+1] (whose product with wh^T is what h[t] gets through step
 *    t+1) and dc f;
 *  - lstm_tangent: the forward-mode rule, carrying the tangent row of step t-1.
 * The operations stand in the kernels' order, so both targets compute the
 * kernels' values. */
#include "export/spelling.h"

static void lstm_init(const lower *l, fedc_value seq, fedc_value wh, fedc__lstm *s) {
    const fedc_type *t = type_of(l, seq);
    *s = (fedc__lstm){.l = l, .T = t->dims[0], .B = t->dims[1], .H = type_of(l, wh)->dims[0],
                      .c = fedc__mlir_has_clients(l->s, l->v), .dt = t->dtype};
}

static const fedc__lstm_spelling *sp(const fedc__lstm *s) { return s->l->spell->lstm; }

/* The type of a [B, w] row (steps 0) or a [T, B, w] sequence (steps T), with
 * the clients axis first. */
static const char *rtype(const fedc__lstm *s, int64_t w, int64_t steps, char *out) {
    fedc_type t = steps ? fedc_type_make(s->dt, 3, (int64_t[]){steps, s->B, w}) : fedc_type_make(s->dt, 2, (int64_t[]){s->B, w});
    return fedc__mlir_tensor(s->l->m, &t, s->c, out, 160);
}

static const char *zeros(fedc__lstm *s, int64_t w, int64_t steps, char *out) {
    char t[160];
    return sp(s)->splat(s, 0, rtype(s, w, steps, t), out);
}

/* op on [B, H] rows. */
static const char *ew(fedc__lstm *s, fedc__lstm_op op, const char *a, const char *b, char *out) {
    return sp(s)->ew(s, op, a, b, s->H, out);
}

/* Part k (columns k H .. k H + H) of a row of width w. */
static const char *part(fedc__lstm *s, const char *r, int64_t w, int k, char *out) {
    return sp(s)->cols(s, r, w, k * s->H, s->H, out);
}

/* 1 / (1 + exp(-a)), as the LSTM kernels compute the sigmoid. */
static const char *sigmoid(fedc__lstm *s, const char *a, char *out) {
    char n[24], e[24], one[24], d[24], t[160];
    ew(s, FEDC__LSTM_EXP, ew(s, FEDC__LSTM_NEG, a, NULL, n), NULL, e);
    ew(s, FEDC__LSTM_ADD, sp(s)->splat(s, 1, rtype(s, s->H, 0, t), one), e, d);
    return ew(s, FEDC__LSTM_DIV, one, d, out);
}

/* The slope of a gate's activation from its value v: 1 - v^2 (tanh) or
 * v (1 - v) (sigmoid). */
static const char *slope(fedc__lstm *s, const char *v, bool tanh_gate, char *out) {
    char one[24], a[24], t[160];
    sp(s)->splat(s, 1, rtype(s, s->H, 0, t), one);
    if (tanh_gate) return ew(s, FEDC__LSTM_SUB, one, ew(s, FEDC__LSTM_MUL, v, v, a), out);
    return ew(s, FEDC__LSTM_MUL, v, ew(s, FEDC__LSTM_SUB, one, v, a), out);
}

/* Weights on the clients and a sequence on the server: the output would be a
 * client's, which no target writes. */
static bool unsupported_placement(const lower *l, fedc_value wh, const fedc__lstm *s) {
    return fedc__mlir_has_clients(l->s, wh) && !s->c;
}

/* ----------------------------------------------------------- the forward -- */

fedc_status fedc__lower_lstm(const lower *l) {
    fedc_value xw = l->n->in[0], wh = l->n->in[1];
    fedc__lstm s;
    lstm_init(l, xw, wh, &s);
    int64_t H = s.H;
    if (unsupported_placement(l, wh, &s)) return unsupported(l, "an lstm with clients' weights and a server sequence");
    char tr_t[160], h_t[160], xw_t[160], z[3][24], it[3][24], t[24];
    rtype(&s, 6 * H, s.T, tr_t), rtype(&s, H, 0, h_t), fedc__mlir_type_of(l->m, l->s, xw, xw_t, sizeof xw_t);
    zeros(&s, H, 0, z[0]), zeros(&s, H, 0, z[1]), zeros(&s, 6 * H, s.T, z[2]);
    const char *types[3] = {h_t, h_t, tr_t};
    sp(&s)->loop_begin(&s, 3, (const char *[]){z[0], z[1], z[2]}, types, it, t, false);
    char x[24], a[24], pre[4][24], gates[6][24], fc[24], ig[24], th[24], row[24], out[3][24];
    sp(&s)->row_at(&s, name(l, xw), xw_t, t, 4 * H, x);
    sp(&s)->times_wh(&s, it[0], wh, false, x, a);
    for (int k = 0; k < 4; k++) part(&s, a, 4 * H, k, pre[k]);
    sigmoid(&s, pre[0], gates[2]), ew(&s, FEDC__LSTM_TANH, pre[1], NULL, gates[3]); /* i, g */
    sigmoid(&s, pre[2], gates[4]), sigmoid(&s, pre[3], gates[5]);                   /* f, o */
    /* c = f c_prev + i g; h = o tanh(c) */
    ew(&s, FEDC__LSTM_MUL, gates[4], it[1], fc);
    ew(&s, FEDC__LSTM_MUL, gates[2], gates[3], ig);
    ew(&s, FEDC__LSTM_ADD, fc, ig, gates[1]);
    ew(&s, FEDC__LSTM_MUL, gates[5], ew(&s, FEDC__LSTM_TANH, gates[1], NULL, th), gates[0]);
    sp(&s)->concat(&s, 6, gates, (int64_t[]){H, H, H, H, H, H}, row);
    snprintf(out[0], 24, "%s", gates[0]), snprintf(out[1], 24, "%s", gates[1]);
    sp(&s)->row_into(&s, row, it[2], tr_t, t, 6 * H, out[2]);
    sp(&s)->loop_end(&s, 3, out, types);
    sp(&s)->loop_result(&s, 2, l->s->name[l->v], sizeof l->s->name[l->v]);
    return l->m->st;
}

/* ---------------------------------------------------------- the backward -- */

fedc_status fedc__lower_lstm_grad(const lower *l) {
    fedc_value trace = l->n->in[0], dtrace = l->n->in[1], wh = l->n->in[2];
    fedc__lstm s;
    lstm_init(l, trace, wh, &s);
    int64_t H = s.H;
    if (unsupported_placement(l, wh, &s)) return unsupported(l, "an lstm_grad with clients' weights and a server trace");
    char tr_t[160], dx_t[160], h_t[160], g_t[160], z[3][24], it[3][24], t[24];
    fedc__mlir_type_of(l->m, l->s, trace, tr_t, sizeof tr_t);
    rtype(&s, 4 * H, s.T, dx_t), rtype(&s, H, 0, h_t), rtype(&s, 4 * H, 0, g_t);
    zeros(&s, 4 * H, 0, z[0]), zeros(&s, H, 0, z[1]), zeros(&s, 4 * H, s.T, z[2]);
    const char *types[3] = {g_t, h_t, dx_t};
    sp(&s)->loop_begin(&s, 3, (const char *[]){z[0], z[1], z[2]}, types, it, t, true); /* dxw[t+1], dc f, dxw */
    char row[24], drow[24], cprev[24], dhr[24], dh[24], tr[6][24], dt[6][24];
    sp(&s)->row_at(&s, name(l, trace), tr_t, t, 6 * H, row);
    sp(&s)->row_at(&s, name(l, dtrace), tr_t, t, 6 * H, drow);
    for (int k = 0; k < 6; k++) part(&s, row, 6 * H, k, tr[k]), part(&s, drow, 6 * H, k, dt[k]); /* h c i g f o */
    sp(&s)->previous_c(&s, name(l, trace), tr_t, t, cprev);
    ew(&s, FEDC__LSTM_ADD, dt[0], sp(&s)->times_wh(&s, it[0], wh, true, NULL, dhr), dh); /* dh = dtrace_h + dh_rec */
    /* dc = dh o (1 - tanh(c)^2) + dtrace_c + dc_rec */
    char tc[24], sl[24], a[24], b[24], e[24], dc[24];
    slope(&s, ew(&s, FEDC__LSTM_TANH, tr[1], NULL, tc), true, sl);
    ew(&s, FEDC__LSTM_MUL, ew(&s, FEDC__LSTM_MUL, dh, tr[5], a), sl, b);
    ew(&s, FEDC__LSTM_ADD, ew(&s, FEDC__LSTM_ADD, b, dt[1], e), it[1], dc);
    /* each gate's preactivation gradient: (by x + dtrace_gate) * slope(gate):
     * di = dc g, dg = dc i, df = dc c_prev, do = dh tanh(c) */
    const char *by[4] = {dc, dc, dc, dh}, *x[4] = {tr[3], tr[2], cprev, tc};
    char grads[4][24];
    for (int k = 0; k < 4; k++) {
        char p[24], q[24], g[24];
        ew(&s, FEDC__LSTM_ADD, ew(&s, FEDC__LSTM_MUL, by[k], x[k], p), dt[2 + k], q);
        ew(&s, FEDC__LSTM_MUL, q, slope(&s, tr[2 + k], k == 1, g), grads[k]);
    }
    char out[3][24];
    sp(&s)->concat(&s, 4, grads, (int64_t[]){H, H, H, H}, out[0]);
    ew(&s, FEDC__LSTM_MUL, dc, tr[4], out[1]); /* for step t-1: dc f */
    sp(&s)->row_into(&s, out[0], it[2], dx_t, t, 4 * H, out[2]);
    sp(&s)->loop_end(&s, 3, out, types);
    sp(&s)->loop_result(&s, 2, l->s->name[l->v], sizeof l->s->name[l->v]);
    return l->m->st;
}

/* ----------------------------------------------------------- the tangent -- */

fedc_status fedc__lower_lstm_tangent(const lower *l) {
    fedc_value trace = l->n->in[0], dxw = l->n->in[1], wh = l->n->in[2];
    fedc__lstm s;
    lstm_init(l, trace, wh, &s);
    int64_t H = s.H;
    if (unsupported_placement(l, wh, &s)) return unsupported(l, "an lstm_tangent with clients' weights and a server trace");
    char tr_t[160], dx_t[160], r6_t[160], z[2][24], it[2][24], t[24];
    fedc__mlir_type_of(l->m, l->s, trace, tr_t, sizeof tr_t), fedc__mlir_type_of(l->m, l->s, dxw, dx_t, sizeof dx_t);
    rtype(&s, 6 * H, 0, r6_t);
    zeros(&s, 6 * H, 0, z[0]), zeros(&s, 6 * H, s.T, z[1]);
    const char *types[2] = {r6_t, tr_t};
    sp(&s)->loop_begin(&s, 2, (const char *[]){z[0], z[1]}, types, it, t, false); /* the previous row, the rows */
    char row[24], cprev[24], x[24], dhp[24], dcp[24], da[24], tr[6][24], d[6][24];
    sp(&s)->row_at(&s, name(l, trace), tr_t, t, 6 * H, row);
    for (int k = 0; k < 6; k++) part(&s, row, 6 * H, k, tr[k]);
    sp(&s)->previous_c(&s, name(l, trace), tr_t, t, cprev);
    sp(&s)->row_at(&s, name(l, dxw), dx_t, t, 4 * H, x);
    part(&s, it[0], 6 * H, 0, dhp), part(&s, it[0], 6 * H, 1, dcp);
    sp(&s)->times_wh(&s, dhp, wh, false, x, da);
    for (int k = 0; k < 4; k++) { /* dgate = da * slope(gate) */
        char p[24], sl[24];
        part(&s, da, 4 * H, k, p);
        ew(&s, FEDC__LSTM_MUL, p, slope(&s, tr[2 + k], k == 1, sl), d[2 + k]);
    }
    /* dc = df c_prev + f dc_prev + di g + i dg */
    char a[24], b[24], c[24], e[24], f[24], g[24];
    ew(&s, FEDC__LSTM_MUL, d[4], cprev, a), ew(&s, FEDC__LSTM_MUL, tr[4], dcp, b);
    ew(&s, FEDC__LSTM_ADD, a, b, c);
    ew(&s, FEDC__LSTM_MUL, d[2], tr[3], e), ew(&s, FEDC__LSTM_MUL, tr[2], d[3], f);
    ew(&s, FEDC__LSTM_ADD, e, f, g);
    ew(&s, FEDC__LSTM_ADD, c, g, d[1]);
    /* dh = do tanh(c) + o (1 - tanh(c)^2) dc */
    char tc[24], sl[24], p[24], q[24], r[24];
    slope(&s, ew(&s, FEDC__LSTM_TANH, tr[1], NULL, tc), true, sl);
    ew(&s, FEDC__LSTM_MUL, ew(&s, FEDC__LSTM_MUL, tr[5], sl, p), d[1], q);
    ew(&s, FEDC__LSTM_ADD, ew(&s, FEDC__LSTM_MUL, d[5], tc, r), q, d[0]);
    char out[2][24];
    sp(&s)->concat(&s, 6, d, (int64_t[]){H, H, H, H, H, H}, out[0]);
    sp(&s)->row_into(&s, out[0], it[1], tr_t, t, 6 * H, out[1]);
    sp(&s)->loop_end(&s, 2, out, types);
    sp(&s)->loop_result(&s, 1, l->s->name[l->v], sizeof l->s->name[l->v]);
    return l->m->st;
}
