/* The fold's loop and steps in StableHLO (spelling.h; the algorithm is
 * control.c's): a stablehlo.while whose loop-carried values are the step t,
 * the carries and the stacked outputs. A row is read as a one-hot select summed
 * over the steps (exact: one term is not zero), so every client may read its
 * own; a carry is kept and a row written by a select on the running flag. */
#include <string.h>

#include "export/spelling.h"
#include "export/stablehlo.h"

/* The type of stacked output j, [clients?, steps, ...y]; into buf (of 160). */
static const char *stacked(const lower *l, const fedc__fold_loop *f, int j, char *buf) {
    return fedc__mlir_stacked_type(l->m, f->body, f->k + j, f->steps, f->c, buf);
}

/* (s == row) along dim f->c of a tensor of type `type` (rank dims), and'ed with
 * the running flag when `running`: an i1 tensor, its type into bt. */
static const char *at_row(const lower *l, const fedc__fold_loop *f, const fedc_type *t, bool running, char *bt, char *out) {
    fedc_type it = *t, b = *t;
    it.dtype = FEDC_I32, b.dtype = FEDC_BOOL;
    char its[160], io[24], rb[24], eq[24], fb[24], attr[200];
    fedc__mlir_tensor(l->m, &it, f->c, its, sizeof its), fedc__mlir_tensor(l->m, &b, f->c, bt, 160);
    snprintf(attr, sizeof attr, "iota_dimension = %d : i64", f->c);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, io), "stablehlo.iota", attr, 0, NULL, NULL, its);
    snprintf(attr, sizeof attr, "broadcast_dimensions = array<i64%s>", f->c ? ": 0" : "");
    op1(l, fedc__mlir_tmp(l->m, rb), "stablehlo.broadcast_in_dim", attr, f->row, f->len_type, its);
    fedc__mlir_tmp(l->m, running ? eq : out);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.compare\"(%s, %s) {comparison_direction = #stablehlo<comparison_direction EQ>, "
                      "compare_type = #stablehlo<comparison_type SIGNED>} : (%s, %s) -> %s\n", running ? eq : out, io, rb,
                      its, its, bt);
    if (!running) return out;
    op1(l, fedc__mlir_tmp(l->m, fb), "stablehlo.broadcast_in_dim", attr, f->flag, f->flag_type, bt);
    op2(l, fedc__mlir_tmp(l->m, out), "stablehlo.and", "", eq, fb, bt, bt);
    return out;
}

/* x_t = sum over the steps of (s == row ? xs : 0): this step's row of xs. */
static void read_row(const lower *l, const fedc__fold_loop *f, const char *xs, const fedc_type *seq, const char *out_t, char *out) {
    char xt[160], bt[160], eq[24], z[24], sel[24], init[24], a[24], b[24], r[24], st[64];
    fedc__mlir_tensor(l->m, seq, f->c, xt, sizeof xt);
    at_row(l, f, seq, false, bt, eq);
    fedc__shlo_splat(l->m, seq->dtype, 0, xt, z);
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, sel), "stablehlo.select", "", 3, (const char *[]){eq, xs, z},
                  (const char *[]){bt, xt, xt}, xt);
    snprintf(st, sizeof st, "tensor<%s>", fedc__mlir_elem(seq->dtype));
    fedc__shlo_splat(l->m, seq->dtype, 0, st, init);
    fedc__mlir_tmp(l->m, a), fedc__mlir_tmp(l->m, b), fedc__mlir_tmp(l->m, r), fedc__mlir_tmp(l->m, out);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.reduce\"(%s, %s) ({\n    ^bb0(%s: %s, %s: %s):\n", out, sel, init, a, st, b, st);
    op2(l, r, "stablehlo.add", "", a, b, st, st);
    fedc__mlir_printf(l->m, "      \"stablehlo.return\"(%s) : (%s) -> ()\n    }) {dimensions = array<i64: %d>} : (%s, %s) -> %s\n",
                      r, st, f->c, xt, st, out_t);
}

/* The step's row and flag from t and the lengths. */
static void row_and_flag(const lower *l, fedc__fold_loop *f, bool want_flag, bool want_row) {
    (void)want_flag, (void)want_row; /* StableHLO lowers every value: both are always wanted */
    const char *t = f->t, *len = f->len;
    char tb[24], one[24], lm[24], r[24], z[24], attr[200], ft[160];
    snprintf(attr, sizeof attr, "broadcast_dimensions = array<i64>");
    op1(l, fedc__mlir_tmp(l->m, tb), "stablehlo.broadcast_in_dim", attr, t, "tensor<i32>", f->len_type);
    fedc__mlir_tmp(l->m, f->flag);
    fedc__mlir_printf(l->m, "    %s = \"stablehlo.compare\"(%s, %s) {comparison_direction = #stablehlo<comparison_direction LT>, "
                      "compare_type = #stablehlo<comparison_type SIGNED>} : (%s, %s) -> %s\n", f->flag, tb, len, f->len_type,
                      f->len_type, f->flag_type);
    const char *row = tb;
    if (f->reverse) { /* length - 1 - t */
        fedc__shlo_splat(l->m, FEDC_I32, 1, f->len_type, one);
        op2(l, fedc__mlir_tmp(l->m, lm), "stablehlo.subtract", "", len, one, f->len_type, f->len_type);
        op2(l, row = fedc__mlir_tmp(l->m, r), "stablehlo.subtract", "", lm, tb, f->len_type, f->len_type);
    }
    fedc__shlo_splat(l->m, FEDC_I32, 0, f->len_type, z); /* a client past its length reads row 0, as fedc's index */
    snprintf(ft, sizeof ft, "%s", f->flag_type);
    fedc__mlir_tmp(l->m, f->row);
    fedc__shlo_op(l->m, f->row, "stablehlo.select", "", 3, (const char *[]){f->flag, row, z},
                  (const char *[]){ft, f->len_type, f->len_type}, f->len_type);
}

static void read_row_of(const lower *l, const fedc__fold_loop *f, int i, char *out) {
    fedc_type seq = *type_of(l, l->n->in[f->k + i]);
    seq.placement = FEDC_LOCAL;
    char xt[160];
    fedc_value x = fedc_program_input(f->body, f->k + i);
    read_row(l, f, name(l, l->n->in[f->k + i]), &seq,
             fedc__mlir_tensor(l->m, fedc__fold_body_type(f, x), f->c, xt, sizeof xt), out);
}

/* old where the client has stopped, else value: carry i (carry) or stacked
 * output i - k with this step's row replaced (its mask the row's and the flag). */
static void select_running(const lower *l, const fedc__fold_loop *f, int i, const char *value, const char *old, char *out) {
    char vt[160], bt[160], mask[24], yb[24], attr[200];
    bool carry = i < f->k;
    const fedc_type *bt_src = fedc__fold_body_type(f, f->body->outputs[i].value);
    if (carry) fedc__mlir_tensor(l->m, bt_src, f->c, vt, sizeof vt);
    else stacked(l, f, i - f->k, vt);
    fedc_type shape = *bt_src;
    if (!carry) { /* the stacked output's shape, for the mask */
        memmove(shape.dims + 1, shape.dims, sizeof shape.dims - sizeof shape.dims[0]);
        shape.dims[0] = f->steps, shape.rank++;
    }
    if (carry) {
        fedc_type fb = shape;
        fb.dtype = FEDC_BOOL;
        fedc__mlir_tensor(l->m, &fb, f->c, bt, sizeof bt);
        snprintf(attr, sizeof attr, "broadcast_dimensions = array<i64%s>", f->c ? ": 0" : "");
        op1(l, fedc__mlir_tmp(l->m, mask), "stablehlo.broadcast_in_dim", attr, f->flag, f->flag_type, bt);
    } else {
        at_row(l, f, &shape, true, bt, mask);
        int64_t map[FEDC_MAX_RANK + 1];
        int n = 0;
        char list[160], yt[160];
        if (f->c) map[n++] = 0;
        for (int d = 0; d < bt_src->rank; d++) map[n++] = f->c + 1 + d;
        snprintf(attr, sizeof attr, "broadcast_dimensions = %s", i64s(map, n, list));
        op1(l, fedc__mlir_tmp(l->m, yb), "stablehlo.broadcast_in_dim", attr, value,
            fedc__mlir_tensor(l->m, bt_src, f->c, yt, sizeof yt), vt);
        value = yb;
    }
    fedc__shlo_op(l->m, fedc__mlir_tmp(l->m, out), "stablehlo.select", "", 3, (const char *[]){mask, value, old},
                  (const char *[]){bt, vt, vt}, vt);
}

static void keep_step(const lower *l, const fedc__fold_loop *f, int i, const char *value, const char *old, char *out) {
    select_running(l, f, i, value, old, out);
}
static void write_step(const lower *l, const fedc__fold_loop *f, int j, const char *value, const char *old, char *out) {
    select_running(l, f, f->k + j, value, old, out);
}

static void zeros(const lower *l, const fedc__fold_loop *f, int j, char *out) {
    char type[160];
    fedc__shlo_splat(l->m, fedc__fold_body_type(f, f->body->outputs[f->k + j].value)->dtype, 0, stacked(l, f, j, type), out);
}

static void loop_begin(const lower *l, fedc__fold_loop *f, int n, const char *const *inits, const char *const *types,
                       char (*iter)[24]) {
    f->id = fedc__shlo_while_begin(l->m, f->steps, n, inits, types, f->result);
    snprintf(f->t, sizeof f->t, "%%w%d_0", f->id);
    for (int i = 0; i < n; i++) snprintf(iter[i], 24, "%%w%d_%d", f->id, 1 + i);
}

static void loop_end(const lower *l, const fedc__fold_loop *f, int n, char (*next)[24], const char *const *types) {
    fedc__shlo_while_end(l->m, f->id, n, next, types);
}

static void result(const fedc__fold_loop *f, int k, char *name, size_t size) { snprintf(name, size, "%.23s#%d", f->result, 1 + k); }

const fedc__fold_spelling fedc__shlo_fold_spelling = {
    .loop_begin = loop_begin, .zeros = zeros, .row_and_flag = row_and_flag, .read_row = read_row_of, .keep = keep_step,
    .write = write_step, .loop_end = loop_end, .result = result,
};
