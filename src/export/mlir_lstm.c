/* The fused LSTM's row operations and loop in MLIR (spelling.h; the algorithm
 * is lstm.c's): the loop an scf.for over the time steps, rows of a [T, B, w]
 * value read and written with tensor slices, an elementwise operation a
 * linalg.generic over the row, h @ wh a linalg.generic that reduces. */
#include <string.h>

#include "export/mlir_lower.h"
#include "export/spelling.h"

/* The type of a [B, w] row. */
static const char *row_type(const fedc__lstm *s, int64_t w, char *out) {
    fedc_type t = fedc_type_make(s->dt, 2, (int64_t[]){s->B, w});
    return fedc__mlir_tensor(s->l->m, &t, s->c, out, 160);
}

/* The slices' parts for the clients axis: its offset, size and stride. */
static const char *at0(const fedc__lstm *s) { return s->c ? "0, " : ""; }
static const char *at1(const fedc__lstm *s) { return s->c ? "1, " : ""; }
static const char *lead_size(const fedc__lstm *s, char *out) {
    if (s->c) snprintf(out, 16, "%d, ", s->l->m->clients);
    else out[0] = 0;
    return out;
}

static const char *splat(fedc__lstm *s, double value, const char *type, char *out) {
    char lit[32];
    return fedc__mlir_tensor_const(s->l->m, out, fedc__mlir_literal(s->dt, value, lit, sizeof lit), type);
}

static const char *const OPS[] = {[FEDC__LSTM_ADD] = "arith.addf", [FEDC__LSTM_SUB] = "arith.subf",
                                  [FEDC__LSTM_MUL] = "arith.mulf", [FEDC__LSTM_DIV] = "arith.divf",
                                  [FEDC__LSTM_NEG] = "arith.negf", [FEDC__LSTM_EXP] = "math.exp",
                                  [FEDC__LSTM_TANH] = "math.tanh"};

/* A generic over the row [c?, B, w], reading a (and b) through the identity. */
static const char *ew(fedc__lstm *s, fedc__lstm_op op, const char *a, const char *b, int64_t w, char *out) {
    const lower *l = s->l;
    const char *elem = fedc__mlir_elem(s->dt);
    char type[160], map[160], init[24], r[24];
    row_type(s, w, type);
    snprintf(map, sizeof map, "%sd%d, d%d", s->c ? "d0, " : "", s->c, s->c + 1);
    splat(s, 0, type, init);
    fedc__mlir_generic g = {.rank = 2 + s->c, .iters = "ppp", .nin = b ? 2 : 1, .in = {a, b}, .in_type = {type, type},
                            .in_elem = {elem, elem}, .maps = {map, map}, .out_map = map, .out_type = type,
                            .out_elem = elem, .init = init, .result_name = fedc__mlir_tmp(l->m, out)};
    fedc__mlir_generic_begin(l->m, &g);
    if (b) emit2(l, OPS[op], "%in0", "%in1", elem, r);
    else emit1(l, OPS[op], "%in0", elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return out;
}

/* out[b, k] = plus[b, k] + sum_j x[b, j] wh[j, k] (transposed: wh[k, j]),
 * summed into plus (or zeros) in j's order. */
static const char *times_wh(fedc__lstm *s, const char *x, fedc_value wh, bool transposed, const char *plus, char *out) {
    const lower *l = s->l;
    int64_t kw = transposed ? 4 * s->H : s->H, nw = transposed ? s->H : 4 * s->H;
    char xmap[160], wmap[160], omap[160], x_t[160], wh_t[160], o_t[160], z[24], p[24], r[24];
    const char *c = s->c ? "d0, " : "", *wc = s->c && fedc__mlir_has_clients(l->s, wh) ? "d0, " : "";
    const char *elem = fedc__mlir_elem(s->dt);
    int b = s->c, k = s->c + 1, j = s->c + 2;
    snprintf(xmap, sizeof xmap, "%sd%d, d%d", c, b, j);
    if (transposed) snprintf(wmap, sizeof wmap, "%sd%d, d%d", wc, k, j);
    else snprintf(wmap, sizeof wmap, "%sd%d, d%d", wc, j, k);
    snprintf(omap, sizeof omap, "%sd%d, d%d", c, b, k);
    row_type(s, nw, o_t);
    if (!plus) plus = splat(s, 0, o_t, z);
    fedc__mlir_generic g = {.rank = 3 + s->c, .iters = s->c ? "pppr" : "ppr", .nin = 2, .in = {x, name(l, wh)},
                            .in_type = {row_type(s, kw, x_t), fedc__mlir_type_of(l->m, l->s, wh, wh_t, sizeof wh_t)},
                            .in_elem = {elem, elem}, .maps = {xmap, wmap}, .out_map = omap, .out_type = o_t,
                            .out_elem = elem, .init = plus, .result_name = fedc__mlir_tmp(l->m, out)};
    fedc__mlir_generic_begin(l->m, &g);
    emit2(l, "arith.addf", "%out", emit2(l, "arith.mulf", "%in0", "%in1", elem, p), elem, r);
    fedc__mlir_generic_end(l->m, &g, r);
    return out;
}

/* Row t (an index) of sequence x [T, B, w]. */
static const char *row_at(fedc__lstm *s, const char *x, const char *x_type, const char *t, int64_t w, char *out) {
    char type[160], lead[16];
    fedc__mlir_tmp(s->l->m, out);
    fedc__mlir_printf(s->l->m, "      %s = tensor.extract_slice %s[%s%s, 0, 0] [%s1, %lld, %lld] [%s1, 1, 1] : %s to %s\n",
                      out, x, at0(s), t, lead_size(s, lead), (long long)s->B, (long long)w, at1(s), x_type,
                      row_type(s, w, type));
    return out;
}

static const char *row_into(fedc__lstm *s, const char *r, const char *acc, const char *acc_type, const char *t, int64_t w,
                            char *out) {
    char type[160], lead[16];
    fedc__mlir_tmp(s->l->m, out);
    fedc__mlir_printf(s->l->m,
                      "      %s = tensor.insert_slice %s into %s[%s%s, 0, 0] [%s1, %lld, %lld] [%s1, 1, 1] : %s into %s\n",
                      out, r, acc, at0(s), t, lead_size(s, lead), (long long)s->B, (long long)w, at1(s),
                      row_type(s, w, type), acc_type);
    return out;
}

static const char *cols(fedc__lstm *s, const char *r, int64_t rw, int64_t off, int64_t w, char *out) {
    char from[160], to[160], lead[16];
    fedc__mlir_tmp(s->l->m, out);
    fedc__mlir_printf(s->l->m, "      %s = tensor.extract_slice %s[%s0, %lld] [%s%lld, %lld] [%s1, 1] : %s to %s\n", out, r,
                      at0(s), (long long)off, lead_size(s, lead), (long long)s->B, (long long)w, at1(s),
                      row_type(s, rw, from), row_type(s, w, to));
    return out;
}

/* Row `into` (width iw) with columns [off, off + w) replaced by part. */
static const char *cols_into(fedc__lstm *s, const char *part, int64_t w, const char *into, int64_t iw, int64_t off,
                             char *out) {
    char from[160], to[160], lead[16];
    fedc__mlir_tmp(s->l->m, out);
    fedc__mlir_printf(s->l->m, "      %s = tensor.insert_slice %s into %s[%s0, %lld] [%s%lld, %lld] [%s1, 1] : %s into %s\n",
                      out, part, into, at0(s), (long long)off, lead_size(s, lead), (long long)s->B, (long long)w, at1(s),
                      row_type(s, w, from), row_type(s, iw, to));
    return out;
}

/* The rows put into zeros one after another. */
static const char *concat(fedc__lstm *s, int n, char parts[][24], const int64_t *w, char *out) {
    char type[160], acc[24], next[24];
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += w[i];
    splat(s, 0, row_type(s, total, type), acc);
    for (int64_t i = 0, off = 0; i < n; off += w[i], i++) {
        cols_into(s, parts[i], w[i], acc, total, off, next);
        snprintf(acc, sizeof acc, "%s", next);
    }
    snprintf(out, 24, "%s", acc);
    return out;
}

static const char *previous_c(fedc__lstm *s, const char *trace, const char *trace_type, const char *t, char *out) {
    fedc__mlir *m = s->l->m;
    char zero[24], one[24], pos[24], tp[24], safe[24], prow[24], c[24], z[24], type[160];
    fedc__mlir_tmp(m, zero), fedc__mlir_tmp(m, one);
    fedc__mlir_printf(m, "      %s = arith.constant 0 : index\n      %s = arith.constant 1 : index\n", zero, one);
    fedc__mlir_tmp(m, pos);
    fedc__mlir_printf(m, "      %s = arith.cmpi sgt, %s, %s : index\n", pos, t, zero);
    fedc__mlir_tmp(m, tp);
    fedc__mlir_printf(m, "      %s = arith.subi %s, %s : index\n", tp, t, one);
    fedc__mlir_tmp(m, safe);
    fedc__mlir_printf(m, "      %s = arith.select %s, %s, %s : index\n", safe, pos, tp, zero);
    row_at(s, trace, trace_type, safe, 6 * s->H, prow);
    cols(s, prow, 6 * s->H, s->H, s->H, c);
    splat(s, 0, row_type(s, s->H, type), z);
    fedc__mlir_tmp(m, out);
    fedc__mlir_printf(m, "      %s = arith.select %s, %s, %s : %s\n", out, pos, c, z, type);
    return out;
}

/* The scf.for over the steps; down, the step is T - 1 - %i. */
static void loop_begin(fedc__lstm *s, int n, const char *const *inits, const char *const *types, char iter[][24], char *t,
                       bool down) {
    fedc__mlir *m = s->l->m;
    char i[24], last[24];
    fedc__mlir_for_begin(m, s->T, n, inits, types, s->result, i, NULL, iter);
    if (!down) {
        snprintf(t, 24, "%s", i);
        return;
    }
    fedc__mlir_tmp(m, last);
    fedc__mlir_printf(m, "      %s = arith.constant %lld : index\n", last, (long long)(s->T - 1));
    fedc__mlir_tmp(m, t);
    fedc__mlir_printf(m, "      %s = arith.subi %s, %s : index\n", t, last, i);
}

static void loop_end(fedc__lstm *s, int n, char values[][24], const char *const *types) {
    fedc__mlir_for_end(s->l->m, n, values, types);
}

static void loop_result(const fedc__lstm *s, int k, char *name, size_t size) { snprintf(name, size, "%s#%d", s->result, k); }

const fedc__lstm_spelling fedc__mlir_lstm_spelling = {
    .splat = splat, .ew = ew, .times_wh = times_wh, .row_at = row_at, .row_into = row_into, .cols = cols,
    .concat = concat, .previous_c = previous_c, .loop_begin = loop_begin, .loop_end = loop_end,
    .loop_result = loop_result,
};
