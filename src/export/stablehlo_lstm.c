/* The fused LSTM's row operations and loop in StableHLO (spelling.h; the
 * algorithm is lstm.c's): the loop a stablehlo.while over the time steps whose
 * loop-carried values are the step t and the state. Rows of a [T, B, w]
 * sequence are read with dynamic_slice and written with dynamic_update_slice
 * at t; a row's parts (columns k H ..) are slices, put together with
 * concatenate; h @ wh is a dot_general (the clients axis a batch dim when wh
 * has it too). */
#include <string.h>

#include "export/spelling.h"
#include "export/stablehlo.h"

/* The type of a [B, w] row, a [1, B, w] step or a [T, B, w] sequence (steps
 * rows: 0, 1 or T), with the clients axis first. */
static const char *rtype(const fedc__lstm *s, int64_t w, int64_t steps, char *out) {
    fedc_type t = steps ? fedc_type_make(s->dt, 3, (int64_t[]){steps, s->B, w}) : fedc_type_make(s->dt, 2, (int64_t[]){s->B, w});
    return fedc__mlir_tensor(s->l->m, &t, s->c, out, 160);
}

static const char *splat(fedc__lstm *s, double value, const char *type, char *out) {
    return fedc__shlo_splat(s->l->m, s->dt, value, type, out);
}

static const char *const OPS[] = {[FEDC__LSTM_ADD] = "stablehlo.add", [FEDC__LSTM_SUB] = "stablehlo.subtract",
                                  [FEDC__LSTM_MUL] = "stablehlo.multiply", [FEDC__LSTM_DIV] = "stablehlo.divide",
                                  [FEDC__LSTM_NEG] = "stablehlo.negate", [FEDC__LSTM_EXP] = "stablehlo.exponential",
                                  [FEDC__LSTM_TANH] = "stablehlo.tanh"};

static const char *ew(fedc__lstm *s, fedc__lstm_op op, const char *a, const char *b, int64_t w, char *out) {
    char t[160];
    rtype(s, w, 0, t);
    if (b) op2(s->l, fedc__mlir_tmp(s->l->m, out), OPS[op], "", a, b, t, t);
    else op1(s->l, fedc__mlir_tmp(s->l->m, out), OPS[op], "", a, t, t);
    return out;
}

/* The start indices of step t: "%z, %t, %z, %z" (the clients' 0 first), and their types. */
static void starts(const fedc__lstm *s, const char *t, char *names, char *types) {
    snprintf(names, 160, "%s%s%s, %s, %s", s->c ? s->zero : "", s->c ? ", " : "", t, s->zero, s->zero);
    snprintf(types, 160, "%stensor<i32>, tensor<i32>, tensor<i32>", s->c ? "tensor<i32>, " : "");
}

/* Row t (a tensor<i32>) of sequence x [T, B, w]. */
static const char *row_at(fedc__lstm *s, const char *x, const char *x_t, const char *t, int64_t w, char *out) {
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
static const char *row_into(fedc__lstm *s, const char *r, const char *acc, const char *acc_t, const char *t, int64_t w,
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

static const char *cols(fedc__lstm *s, const char *r, int64_t rw, int64_t off, int64_t w, char *out) {
    int64_t start[3] = {0, 0, off}, limit[3] = {s->l->m->clients, s->B, off + w}, step[3] = {1, 1, 1};
    char a[160], b[160], c[160], attr[600], from[160], to[160];
    snprintf(attr, sizeof attr, "start_indices = %s, limit_indices = %s, strides = %s", i64s(start + 1 - s->c, 2 + s->c, a),
             i64s(limit + 1 - s->c, 2 + s->c, b), i64s(step, 2 + s->c, c));
    op1(s->l, fedc__mlir_tmp(s->l->m, out), "stablehlo.slice", attr, r, rtype(s, rw, 0, from), rtype(s, w, 0, to));
    return out;
}

static const char *concat(fedc__lstm *s, int n, char parts[][24], const int64_t *w, char *out) {
    const char *ins[6], *types[6];
    char t[6][160], attr[40], total_t[160];
    int64_t total = 0;
    for (int i = 0; i < n; i++) ins[i] = parts[i], types[i] = rtype(s, w[i], 0, t[i]), total += w[i];
    snprintf(attr, sizeof attr, "dimension = %d : i64", s->c + 1);
    fedc__shlo_op(s->l->m, fedc__mlir_tmp(s->l->m, out), "stablehlo.concatenate", attr, n, ins, types,
                  rtype(s, total, 0, total_t));
    return out;
}

/* x [B, K] @ wh [H, 4H] (transposed: @ wh^T, K = 4H) as dot_general, then plus added. */
static const char *times_wh(fedc__lstm *s, const char *x, fedc_value wh, bool transposed, const char *plus, char *out) {
    int cw = lead(s->l, wh);
    int64_t k = transposed ? 4 * s->H : s->H, n = transposed ? s->H : 4 * s->H;
    char attr[400], xt[160], wt[160], ot[160], p[24];
    snprintf(attr, sizeof attr, "dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [%s], "
             "rhs_batching_dimensions = [%s], lhs_contracting_dimensions = [%d], rhs_contracting_dimensions = [%d]>",
             s->c && cw ? "0" : "", s->c && cw ? "0" : "", s->c + 1, cw + (transposed ? 1 : 0));
    fedc__shlo_op(s->l->m, fedc__mlir_tmp(s->l->m, plus ? p : out), "stablehlo.dot_general", attr, 2,
                  (const char *[]){x, name(s->l, wh)}, (const char *[]){rtype(s, k, 0, xt), type_str(s->l, wh, wt)},
                  rtype(s, n, 0, ot));
    return plus ? ew(s, FEDC__LSTM_ADD, plus, p, n, out) : out;
}

static const char *previous_c(fedc__lstm *s, const char *trace, const char *trace_t, const char *t, char *out) {
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
    splat(s, 0, rtype(s, s->H, 0, ht), z);
    fedc__shlo_op(m, fedc__mlir_tmp(m, out), "stablehlo.select", "", 3, (const char *[]){pos, c, z},
                  (const char *[]){"tensor<i1>", ht, ht}, ht);
    return out;
}

/* The while over the steps; the body's step is t, or T - 1 - t when down. */
static void loop_begin(fedc__lstm *s, int n, const char *const *inits, const char *const *types, char iter[][24], char *t,
                       bool down) {
    fedc__mlir *m = s->l->m;
    int id = s->id = fedc__shlo_while_begin(m, s->T, n, inits, types, s->result);
    for (int i = 0; i < n; i++) snprintf(iter[i], 24, "%%w%d_%d", id, i + 1);
    fedc__shlo_splat(m, FEDC_I32, 0, "tensor<i32>", s->zero);
    snprintf(t, 24, "%%w%d_0", id);
    if (down) {
        char last[24], r[24];
        fedc__shlo_splat(m, FEDC_I32, (double)(s->T - 1), "tensor<i32>", last);
        op2(s->l, fedc__mlir_tmp(m, r), "stablehlo.subtract", "", last, t, "tensor<i32>", "tensor<i32>");
        snprintf(t, 24, "%s", r);
    }
}

static void loop_end(fedc__lstm *s, int n, char values[][24], const char *const *types) {
    fedc__shlo_while_end(s->l->m, s->id, n, values, types);
}

/* Result k of the loop: the while's k + 1 (its first is t). */
static void loop_result(const fedc__lstm *s, int k, char *name, size_t size) {
    snprintf(name, size, "%.30s#%d", s->result, k + 1);
}

const fedc__lstm_spelling fedc__shlo_lstm_spelling = {
    .splat = splat, .ew = ew, .times_wh = times_wh, .row_at = row_at, .row_into = row_into, .cols = cols,
    .concat = concat, .previous_c = previous_c, .loop_begin = loop_begin, .loop_end = loop_end,
    .loop_result = loop_result,
};
